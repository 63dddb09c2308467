#!/bin/sh
# template-clients.sh: the real clients through egress-run --allow @TEMPLATE (SPEC "Writing a
# policy without guessing"), in real bubblewrap, loopback only. The test's DNS server answers
# the templates' REAL registry names (pypi.org, files.pythonhosted.org, registry.npmjs.org,
# proxy.golang.org, sum.golang.org, index.crates.io, crates.io, static.crates.io, github.com,
# ...) with 127.0.0.1 inside the test's own network namespace (lib.sh made it; only lo), where
# one static HTTPS server the test starts listens on 443 with a certificate of the test's CA
# for all of them and serves, by Host, what each client fetches:
# - pip download (Debian's /usr/bin/pip, its default index): a PEP 503 simple index on pypi.org
#   whose link is a wheel on files.pythonhosted.org (--allow @pypi);
# - npm pack (its default registry): the packument and the tarball on registry.npmjs.org
#   (--allow @npm);
# - go mod download (GOPROXY and the sumdb name as the Go distribution ships them): the module
#   proxy protocol on proxy.golang.org (/M/@v/list, .info, .mod, .zip; 404 for
#   /sumdb/sum.golang.org/supported, so that go asks the checksum database itself), and a
#   checksum database on sum.golang.org (/lookup/M@V and the tile, a tree of one record signed
#   by a note key the test makes; GOSUMDB="sum.golang.org+KEY" is the only setting: go checks
#   the module's hashes against it; with a decoy key of the same name go refuses the tree,
#   so the check is real) (--allow @go);
# - cargo fetch (the sparse index protocol): index.crates.io/config.json (dl as the Cargo
#   book gives crates.io's: https://crates.io/api/v1/crates), the index file, crates.io
#   redirecting the download to static.crates.io as crates.io does, the .crate there
#   (--allow @crates);
# - gem install (its default source, https://rubygems.org/): the compact index and the .gem
#   on index.rubygems.org, where RubyGems reads rubygems.org's (--allow @rubygems);
# - git clone https://github.com/OWNER/REPO.git, the dumb HTTP protocol (--allow @github).
# Each client runs with only its template allowed, once with no proxy variable ("direct":
# the DNS stub and the transparent path carry it, receipts frontend transparent) and once
# with the proxy variables egress-launch sets (frontend http-connect); each must succeed, and
# the server must have answered the requests that prove it (the client really fetched from
# those names). In the same run the client is pointed at a name of another template, which
# the test's DNS would answer and the certificate covers: it is refused, the summary and the
# receipt say not-allowlisted.
# A client that is not installed is skipped, said as such (tools/deps installs python3-pip,
# npm, git, golang-go, cargo and ruby).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl

have() { command -v "$1" >/dev/null 2>&1; }

EGRESS_TEMPLATE_DIR=$top_srcdir/templates
export EGRESS_TEMPLATE_DIR

NAMES="pypi.org files.pythonhosted.org registry.npmjs.org proxy.golang.org sum.golang.org
 index.crates.io crates.io static.crates.io github.com api.github.com codeload.github.com
 rubygems.org index.rubygems.org"

# --- the upstream: 127.0.0.1:443, every name ---------------------------------------------------
SAN=
for n in $NAMES; do SAN="${SAN:+$SAN,}DNS:$n"; done
if ! openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=pypi.org -days 1 \
    -addext "subjectAltName=$SAN" -keyout up.key -out "$BOX/up.crt" >openssl.log 2>&1; then
	echo "Bail out! openssl req: $(cat openssl.log)"
	exit 99
fi
if [ "$(listening 443)" = 1 ]; then
	echo "Bail out! port 443 is taken in the test's namespace"
	exit 99
fi
cat > reg.py <<'EOF'
# reg.py DIR CERT KEY: a static HTTPS server on 127.0.0.1:443 of DIR/HOST/PATH, HOST the
# request's Host (without a port). A folder is answered with its index.html or _doc.json;
# crates.io's download API redirects (302) to static.crates.io as crates.io does. Every
# request is logged on stderr as "HOST METHOD PATH STATUS".
import http.server, mimetypes, os, re, ssl, sys, urllib.parse
top, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        self.request.settimeout(10)
        self.request.do_handshake()
        super().setup()
    def log_message(self, fmt, *args):
        pass
    def answer(self, code, body=b"", ctype="text/plain", extra=()):
        host = (self.headers.get("Host") or "-").split(":")[0]
        sys.stderr.write("%s %s %s %d\n" % (host, self.command, self.path, code))
        sys.stderr.flush()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        m = re.fullmatch(r"/api/v1/crates/([^/]+)/([^/]+)/download", path)
        if host == "crates.io" and m:
            loc = "https://static.crates.io/crates/%s/%s-%s.crate" % (m[1], m[1], m[2])
            return self.answer(302, extra=[("Location", loc)])
        parts = [p for p in path.split("/") if p]
        if not re.fullmatch(r"[a-z0-9.-]+", host) or any(p in (".", "..") for p in parts):
            return self.answer(404)
        f = os.path.join(top, host, *parts)
        if os.path.isdir(f):
            for d in ("index.html", "_doc.json"):
                if os.path.isfile(os.path.join(f, d)):
                    f = os.path.join(f, d)
                    break
        if not os.path.isfile(f):
            return self.answer(404)
        ctype = mimetypes.guess_type(f)[0] or "application/octet-stream"
        with open(f, "rb") as fh:
            self.answer(200, fh.read(), ctype)
    do_HEAD = do_GET
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 443), Handler)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
srv.serve_forever()
EOF
cat > pub.py <<'EOF'
# pub.py DIR: what each registry serves, under DIR/HOST; prints GOSUMDB's key.
import base64, hashlib, io, json, os, sys, tarfile, zipfile
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization
top = sys.argv[1]
def put(host, path, data):
    f = os.path.join(top, host, path)
    os.makedirs(os.path.dirname(f), exist_ok=True)
    with open(f, "wb") as fh:
        fh.write(data if isinstance(data, bytes) else data.encode())
def b64(b):
    return base64.b64encode(b).decode()
def tgz(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o644
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()

# pypi.org: the simple index (PEP 503); files.pythonhosted.org: the wheel it links to.
whl = "egress_probe-1.0-py3-none-any.whl"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("egress_probe/__init__.py", "")
    z.writestr("egress_probe-1.0.dist-info/METADATA",
               "Metadata-Version: 2.1\nName: egress-probe\nVersion: 1.0\n")
    z.writestr("egress_probe-1.0.dist-info/WHEEL",
               "Wheel-Version: 1.0\nGenerator: template-clients.sh\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("egress_probe-1.0.dist-info/RECORD", "")
put("files.pythonhosted.org", "packages/ep/" + whl, buf.getvalue())
put("pypi.org", "simple/egress-probe/index.html",
    '<!DOCTYPE html><html><body><a href="https://files.pythonhosted.org/packages/ep/%s#sha256=%s">%s</a></body></html>\n'
    % (whl, hashlib.sha256(buf.getvalue()).hexdigest(), whl))

# registry.npmjs.org: the packument at /egress-probe, the tarball at /egress-probe/-/NAME.
pkg = tgz([("package/package.json", json.dumps({"name": "egress-probe", "version": "1.0.0"}).encode())])
put("registry.npmjs.org", "egress-probe/-/egress-probe-1.0.0.tgz", pkg)
dist = {"tarball": "https://registry.npmjs.org/egress-probe/-/egress-probe-1.0.0.tgz",
        "shasum": hashlib.sha1(pkg).hexdigest(),
        "integrity": "sha512-" + b64(hashlib.sha512(pkg).digest())}
put("registry.npmjs.org", "egress-probe/_doc.json", json.dumps(
    {"name": "egress-probe", "dist-tags": {"latest": "1.0.0"},
     "versions": {"1.0.0": {"name": "egress-probe", "version": "1.0.0", "dist": dist}}}))

# proxy.golang.org: the GOPROXY protocol for egress.example/probe v1.0.0.
mod, ver = "egress.example/probe", "v1.0.0"
gomod = b"module egress.example/probe\n\ngo 1.19\n"
files = [(mod + "@" + ver + "/go.mod", gomod),
         (mod + "@" + ver + "/probe.go", b"package probe\n\nconst Fetched = true\n")]
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    for name, data in files:
        z.writestr(name, data)
put("proxy.golang.org", mod + "/@v/list", ver + "\n")
put("proxy.golang.org", mod + "/@v/" + ver + ".info", json.dumps({"Version": ver, "Time": "2026-01-01T00:00:00Z"}))
put("proxy.golang.org", mod + "/@v/" + ver + ".mod", gomod)
put("proxy.golang.org", mod + "/@v/" + ver + ".zip", buf.getvalue())
# h1: golang.org/x/mod/sumdb/dirhash.Hash1: SHA-256 of "HEX(SHA-256(file))  NAME\n" sorted.
def h1(fl):
    s = "".join("%s  %s\n" % (hashlib.sha256(d).hexdigest(), n) for n, d in sorted(fl))
    return "h1:" + b64(hashlib.sha256(s.encode()).digest())
record = "%s %s %s\n%s %s/go.mod %s\n" % (mod, ver, h1(files), mod, ver, h1([("go.mod", gomod)]))
# sum.golang.org: a tree of one record (golang.org/x/mod/sumdb/tlog: the record hash is
# SHA-256(0x00 || record), the tree hash of a one-record tree), signed as a note
# (golang.org/x/mod/sumdb/note, Ed25519) by a key of the test's.
leaf = hashlib.sha256(b"\x00" + record.encode()).digest()
sk = Ed25519PrivateKey.generate()
pub = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
name = "sum.golang.org"
kd = b"\x01" + pub
kh = hashlib.sha256(name.encode() + b"\n" + kd).digest()[:4]
tree = "go.sum database tree\n1\n%s\n" % b64(leaf)
sig = "\u2014 %s %s\n" % (name, b64(kh + sk.sign(tree.encode())))
put(name, "lookup/" + mod + "@" + ver, "0\n" + record + "\n" + tree + "\n" + sig)
put(name, "tile/8/0/000.p/1", leaf)
put(name, "latest", tree + "\n" + sig)

# index.crates.io (sparse): config.json as the Cargo book gives crates.io's, the index file
# of egress-probe (eg/re/), the .crate on static.crates.io (crates.io redirects there).
crate = tgz([("egress-probe-0.1.0/Cargo.toml",
              b'[package]\nname = "egress-probe"\nversion = "0.1.0"\nedition = "2018"\n'),
             ("egress-probe-0.1.0/src/lib.rs", b"")])
put("static.crates.io", "crates/egress-probe/egress-probe-0.1.0.crate", crate)
put("index.crates.io", "config.json", json.dumps({"dl": "https://crates.io/api/v1/crates", "api": "https://crates.io"}))
put("index.crates.io", "eg/re/egress-probe", json.dumps(
    {"name": "egress-probe", "vers": "0.1.0", "deps": [], "cksum": hashlib.sha256(crate).hexdigest(),
     "features": {}, "yanked": False}) + "\n")
print("%s+%s+%s" % (name, kh.hex(), b64(kd)))
# A decoy: another key of the same name, which did not sign the tree.
kd2 = b"\x01" + Ed25519PrivateKey.generate().public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
print("%s+%s+%s" % (name, hashlib.sha256(name.encode() + b"\n" + kd2).digest()[:4].hex(), b64(kd2)))
EOF
if ! "$E2E_PY" pub.py "$WORK/pub" >gosumkeys 2>pub.err; then
	echo "Bail out! pub.py failed: $(cat pub.err)"
	exit 99
fi
GOSUMKEY=$(sed -n 1p gosumkeys)
GOSUMDECOY=$(sed -n 2p gosumkeys)
# github.com: a bare repository for the dumb HTTP protocol.
if have git; then
	mkdir -p pub/github.com/egress
	git init -q --bare --initial-branch=main pub/github.com/egress/probe.git
	git init -q gsrc && (cd gsrc && git -c user.name=t -c user.email=t@e2e.test commit -q \
	    --allow-empty -m "from github.com" && git push -q "$WORK/pub/github.com/egress/probe.git" HEAD:refs/heads/main)
	git -C pub/github.com/egress/probe.git update-server-info
fi
spawn reg "$E2E_PY" reg.py "$WORK/pub" "$BOX/up.crt" up.key
wait_tcp 443 || { echo "Bail out! reg.py did not start: $(cat reg.err)"; exit 99; }
for n in $NAMES; do echo "$n A 127.0.0.1"; done > zone
dns_start zone
mkdir -m 700 "$WORK/rcpt"
RCPT=$WORK/rcpt/r.jsonl
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"

# direct CMD...: CMD without any proxy variable egress-launch sets (as in clients.sh).
cat > "$BOX/direct" <<'EOF'
#!/bin/sh
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy NO_PROXY no_proxy \
    npm_config_proxy npm_config_https_proxy NODE_USE_ENV_PROXY JAVA_TOOL_OPTIONS
left=$(env | cut -d= -f1 | grep -i proxy)
if [ -n "$left" ]; then
	echo "direct: a proxy variable is left: $left" >&2
	exit 99
fi
exec "$@"
EOF
chmod 755 "$BOX/direct"
# cases.sh: one LABEL CMD... runs CMD (stdin /dev/null, output together, at most 60 s) and
# prints "LABEL rc=RC OUTPUT" on one line.
cat > "$BOX/cases.sh" <<'EOF'
one() {
	_l=$1
	shift
	_o=$(timeout -k 2 60 "$@" </dev/null 2>&1)
	_r=$?
	printf '%s rc=%s %s\n' "$_l" "$_r" "$(printf '%s' "$_o" | tr '\n' ' ')"
}
EOF

# trun TEMPLATE SCRIPT [egress-run options]: SCRIPT (sh, cases.sh sourced) in a run with only
# --allow @TEMPLATE; sets rc, out, err (erun), M (the receipts' mark) and RM (reg.err's).
trun() {
	_t=$1
	_s=$2
	shift 2
	M=$(if [ -f "$RCPT" ]; then wc -l < "$RCPT" | tr -d ' '; else echo 0; fi)
	RM=$(wc -l < reg.err | tr -d ' ')
	# shellcheck disable=SC2086
	erun --allow "@$_t" $DNSARGS --receipts "$RCPT" "$@" -- sh -c ". ./cases.sh; $_s"
	printf '%s\n' "$out" | cut -c1-400 | sed 's/^/# /'
	printf '%s\n' "$err" | grep -E 'denied|allowed' | sed 's/^/# /'
}
case_of() { printf '%s\n' "$out" | sed -n "s/^$1 //p" | head -n 1; }
expect_case() { expect_match "$1" "^rc=$3 .*$4" "$(case_of "$2")"; }
# got HOST PATH: how many times the server answered GET HOST PATH with 200 since $RM.
got() { tail -n "+$((RM + 1))" reg.err | grep -Fxc "$1 GET $2 200"; }
expect_got() {
	_n=$(got "$2" "$3")
	if [ "$_n" -ge "${4:-1}" ]; then ok "$1"; else not_ok "$1 (served $_n times, wanted ${4:-1})"; fi
}
# expect_opens CLIENT HOST: the run's receipts hold an open of HOST:443 through the
# transparent path and one through the HTTP proxy, each with the real address.
expect_opens() {
	for _f in transparent http-connect; do
		expect_eq "$1: receipt: open $_f $2 443 127.0.0.1" "open $_f $2 443 127.0.0.1" \
		    "$(py rcpt "$RCPT" --skip "$M" --where event=open --where "host=$2" --where "frontend=$_f" \
		    --wait 5 --fields event,frontend,host,port,addr)"
	done
}
# expect_refused CLIENT HOST: HOST (another template's) was refused, said so.
expect_refused() {
	expect_match "$1: the summary names $2 not-allowlisted" \
	    "denied +$(printf '%s' "$2" | sed 's/\./\\./g')(:443)? .*not-allowlisted" "$err"
	expect_eq "$1: receipt: $2 denied not-allowlisted" "deny $2 not-allowlisted" \
	    "$(py rcpt "$RCPT" --skip "$M" --where event=deny --where "host=$2" --wait 5 \
	    --fields event,host,reason)"
}

# --- pip, --allow @pypi -----------------------------------------------------------------------
if [ -x /usr/bin/pip ] && /usr/bin/pip --version >/dev/null 2>&1; then
	PIP="/usr/bin/pip download --no-deps --disable-pip-version-check --no-cache-dir --retries 0 --timeout 10"
	trun pypi "one ok ./direct $PIP -d pip-direct egress-probe;
	    one proxied $PIP -d pip-proxied egress-probe;
	    one other ./direct $PIP -d pip-other --index-url https://registry.npmjs.org/simple/ egress-probe" \
	    --setenv "PIP_CERT=$BOX/up.crt"
	expect_eq "pip: the run ends" 0 "$rc"
	expect_case "pip download (default index), no proxy variable: the wheel saved" ok 0 \
	    'Saved \./pip-direct/egress_probe-1\.0-py3-none-any\.whl'
	expect_case "pip download through the proxy: the wheel saved" proxied 0 \
	    'Saved \./pip-proxied/egress_probe-1\.0-py3-none-any\.whl'
	expect_case "pip download from registry.npmjs.org (not in @pypi): fails" other 1 \
	    'No matching distribution found for egress-probe'
	expect_got "pip: pypi.org served the simple index, twice" pypi.org /simple/egress-probe/ 2
	expect_got "pip: files.pythonhosted.org served the wheel, twice" files.pythonhosted.org \
	    /packages/ep/egress_probe-1.0-py3-none-any.whl 2
	expect_opens pip pypi.org
	expect_opens pip files.pythonhosted.org
	expect_refused pip registry.npmjs.org
else
	skip "pip through @pypi" "/usr/bin/pip is not installed (tools/deps installs python3-pip)"
fi

# --- npm, --allow @npm ------------------------------------------------------------------------
# --cafile (a global npmrc may set one, which replaces NODE_EXTRA_CA_CERTS' list); --cache of
# each case's own, so that the second fetches again.
if have npm && have node; then
	NPM="npm pack --no-update-notifier --fetch-retries=0 --cafile=$BOX/up.crt"
	mkdir -p "$BOX/npm-direct" "$BOX/npm-proxied" "$BOX/npm-other"
	trun npm "one ok ./direct $NPM --cache npm-c1 --pack-destination npm-direct egress-probe;
	    one proxied $NPM --cache npm-c2 --pack-destination npm-proxied egress-probe;
	    one other ./direct $NPM --cache npm-c3 --pack-destination npm-other --registry https://pypi.org/ egress-probe"
	expect_eq "npm: the run ends" 0 "$rc"
	expect_case "npm pack (default registry), no proxy variable: the tarball fetched" ok 0 'egress-probe-1\.0\.0\.tgz$'
	expect_case "npm pack through the proxy: the tarball fetched" proxied 0 'egress-probe-1\.0\.0\.tgz$'
	expect_case "npm pack from pypi.org (not in @npm): fails" other 1 ''
	expect_got "npm: registry.npmjs.org served the packument, twice" registry.npmjs.org /egress-probe 2
	expect_got "npm: registry.npmjs.org served the tarball, twice" registry.npmjs.org \
	    /egress-probe/-/egress-probe-1.0.0.tgz 2
	expect_opens npm registry.npmjs.org
	expect_refused npm pypi.org
else
	skip "npm through @npm" "npm is not installed (tools/deps installs it)"
fi

# --- go, --allow @go ----------------------------------------------------------------------------
# GOPROXY and GOSUMDB's name as go.env ships them; GOSUMDB carries the test's key for
# sum.golang.org (the one setting; go then checks the module against that database).
# GOFLAGS=-modcacherw: the module cache removable afterwards.
if have go; then
	GOENV="GOPROXY= GOFLAGS=-modcacherw GOENV=off GOTOOLCHAIN=local"
	trun go "one ok ./direct env $GOENV GOPATH=\$PWD/go1 GOCACHE=\$PWD/gc1 go mod download -json egress.example/probe@v1.0.0;
	    one proxied env $GOENV GOPATH=\$PWD/go2 GOCACHE=\$PWD/gc2 go mod download -json egress.example/probe@v1.0.0;
	    one decoy ./direct env $GOENV GOSUMDB=$GOSUMDECOY GOPATH=\$PWD/go4 GOCACHE=\$PWD/gc4 go mod download -json egress.example/probe@v1.0.0;
	    one other ./direct env $GOENV GOPROXY=https://registry.npmjs.org GOPATH=\$PWD/go3 GOCACHE=\$PWD/gc3 go mod download -json egress.example/probe@v1.0.0" \
	    --setenv "SSL_CERT_FILE=$BOX/up.crt" --setenv "GOSUMDB=$GOSUMKEY"
	expect_eq "go: the run ends" 0 "$rc"
	expect_case "go mod download (default GOPROXY, GOSUMDB sum.golang.org), no proxy variable: downloaded and verified" \
	    ok 0 '"Sum": "h1:[A-Za-z0-9+/=]+".*"GoModSum": "h1:'
	expect_case "go mod download through the proxy: downloaded and verified" \
	    proxied 0 '"Sum": "h1:[A-Za-z0-9+/=]+".*"GoModSum": "h1:'
	expect_case "go mod download, GOSUMDB a key that did not sign the tree: refused (so go checked)" \
	    decoy 1 'verifying .*egress\.example/probe@v1\.0\.0.*(signature|verif)'
	expect_case "go mod download from registry.npmjs.org (not in @go): fails" other 1 ''
	expect_got "go: proxy.golang.org served the .zip, twice" proxy.golang.org \
	    /egress.example/probe/@v/v1.0.0.zip 2
	expect_got "go: sum.golang.org served the lookup, three times (the decoy's too)" sum.golang.org \
	    /lookup/egress.example/probe@v1.0.0 3
	expect_got "go: sum.golang.org served the tile, twice" sum.golang.org /tile/8/0/000.p/1 2
	expect_opens go proxy.golang.org
	expect_opens go sum.golang.org
	expect_refused go registry.npmjs.org
else
	skip "go through @go" "go is not installed (tools/deps installs golang-go)"
fi

# --- cargo, --allow @crates ------------------------------------------------------------------
# Debian 12's cargo (1.65) predates the sparse protocol as crates.io's default (1.70): under
# -Z sparse-registry (RUSTC_BOOTSTRAP=1 lets a stable cargo take -Z) it reads crates.io's
# index from sparse+https://index.crates.io/, the URL later cargo uses by default. The
# refused case's CARGO_HOME replaces crates-io with a sparse index on registry.npmjs.org.
# /usr/bin/cargo: the sandbox sees /usr, not a rustup toolchain in the invoker's home.
CARGO=/usr/bin/cargo
if [ -x "$CARGO" ]; then
	for h in ch1 ch2 ch3; do
		mkdir -p "$BOX/$h" "$BOX/$h-p/src"
		printf '[http]\ncainfo = "%s"\n[net]\nretry = 0\n' "$BOX/up.crt" > "$BOX/$h/config.toml"
		printf '[package]\nname = "p"\nversion = "0.1.0"\nedition = "2018"\n[dependencies]\negress-probe = "0.1.0"\n' \
		    > "$BOX/$h-p/Cargo.toml"
		: > "$BOX/$h-p/src/lib.rs"
	done
	printf '[source.crates-io]\nreplace-with = "elsewhere"\n[source.elsewhere]\nregistry = "sparse+https://registry.npmjs.org/"\n' \
	    >> "$BOX/ch3/config.toml"
	CF="env RUSTC_BOOTSTRAP=1 $CARGO -Z sparse-registry fetch"
	trun crates "one ok ./direct env CARGO_HOME=\$PWD/ch1 $CF --manifest-path ch1-p/Cargo.toml;
	    one proxied env CARGO_HOME=\$PWD/ch2 $CF --manifest-path ch2-p/Cargo.toml;
	    one other ./direct env CARGO_HOME=\$PWD/ch3 $CF --manifest-path ch3-p/Cargo.toml;
	    one got sh -c 'ls ch1/registry/cache/*/ ch2/registry/cache/*/'"
	expect_eq "cargo: the run ends" 0 "$rc"
	expect_case "cargo fetch (sparse index.crates.io), no proxy variable: fetched" ok 0 'Downloaded egress-probe v0\.1\.0'
	expect_case "cargo fetch through the proxy: fetched" proxied 0 'Downloaded egress-probe v0\.1\.0'
	expect_case "cargo: both .crate files in the caches" got 0 'egress-probe-0\.1\.0\.crate .*egress-probe-0\.1\.0\.crate'
	expect_case "cargo fetch from registry.npmjs.org (not in @crates): fails" other 101 ''
	expect_got "cargo: index.crates.io served config.json, twice" index.crates.io /config.json 2
	expect_got "cargo: index.crates.io served the index file, twice" index.crates.io /eg/re/egress-probe 2
	expect_got "cargo: static.crates.io served the .crate, twice" static.crates.io \
	    /crates/egress-probe/egress-probe-0.1.0.crate 2
	expect_opens cargo index.crates.io
	expect_opens cargo crates.io
	expect_opens cargo static.crates.io
	expect_refused cargo registry.npmjs.org
else
	skip "cargo through @crates" "Debian's cargo is not installed (tools/deps installs cargo)"
fi

# --- gem install, --allow @rubygems --------------------------------------------------------
# RubyGems with its default source (https://rubygems.org/): Gem::Source reads the compact
# index of rubygems.org at index.rubygems.org (a HEAD of /, then /info/NAME) and fetches the
# gemspec (quick/Marshal.4.8/) and the .gem from there too. The test builds the .gem with gem build on the host.
if have gem && have ruby; then
	mkdir -p gemsrc/lib && (cd gemsrc && : > lib/egress_probe.rb &&
	    printf 'Gem::Specification.new do |s|\n  s.name = "egress-probe"\n  s.version = "0.1.0"\n  s.summary = "probe"\n  s.authors = ["t"]\n  s.files = ["lib/egress_probe.rb"]\nend\n' \
	    > egress-probe.gemspec && HOME=$WORK gem build -q egress-probe.gemspec >gem-build.log 2>&1) ||
	    { echo "Bail out! gem build: $(cat gemsrc/gem-build.log)"; exit 99; }
	# The gemspec as RubyGems' quick index serves it (Marshal, deflated): gem install
	# fetches it beside the compact index's entry.
	HOME=$WORK ruby -e 'require "rubygems/package"
	    File.binwrite(ARGV[1], Gem.deflate(Marshal.dump(Gem::Package.new(ARGV[0]).spec)))' \
	    gemsrc/egress-probe-0.1.0.gem gemsrc/egress-probe-0.1.0.gemspec.rz ||
	    { echo "Bail out! the gemspec for the quick index"; exit 99; }
	for h in rubygems.org index.rubygems.org; do
		mkdir -p "pub/$h/gems" "pub/$h/info" "pub/$h/quick/Marshal.4.8"
		cp gemsrc/egress-probe-0.1.0.gemspec.rz "pub/$h/quick/Marshal.4.8/"
		: > "pub/$h/index.html"
		cp gemsrc/egress-probe-0.1.0.gem "pub/$h/gems/"
		printf -- '---\n0.1.0 |checksum:%s\n' "$(sha256sum gemsrc/egress-probe-0.1.0.gem | cut -d' ' -f1)" \
		    > "pub/$h/info/egress-probe"
	done
	GEM="gem install --no-document --no-user-install"
	trun rubygems "one ok ./direct env HOME=\$PWD/gh1 GEM_HOME=\$PWD/gems1 $GEM --install-dir gems1 egress-probe;
	    one proxied env HOME=\$PWD/gh2 GEM_HOME=\$PWD/gems2 $GEM --install-dir gems2 egress-probe;
	    one other ./direct env HOME=\$PWD/gh3 GEM_HOME=\$PWD/gems3 $GEM --install-dir gems3 --clear-sources --source https://pypi.org/ egress-probe" \
	    --setenv "SSL_CERT_FILE=$BOX/up.crt"
	expect_eq "gem: the run ends" 0 "$rc"
	expect_case "gem install (default source), no proxy variable: installed" ok 0 'Successfully installed egress-probe-0\.1\.0'
	expect_case "gem install through the proxy: installed" proxied 0 'Successfully installed egress-probe-0\.1\.0'
	expect_case "gem install from pypi.org (not in @rubygems): fails" other '[1-9][0-9]*' ''
	expect_got "gem: index.rubygems.org served the compact index file, twice" index.rubygems.org /info/egress-probe 2
	expect_got "gem: index.rubygems.org served the .gem, twice" index.rubygems.org /gems/egress-probe-0.1.0.gem 2
	expect_opens gem index.rubygems.org
	expect_refused gem pypi.org
else
	skip "gem through @rubygems" "ruby is not installed (tools/deps installs it)"
fi

# --- git clone over https, --allow @github -----------------------------------------------------
if have git; then
	trun github "one ok sh -c './direct git clone -q https://github.com/egress/probe.git g1 && git -C g1 log --format=%s';
	    one proxied sh -c 'git clone -q https://github.com/egress/probe.git g2 && git -C g2 log --format=%s';
	    one other ./direct git clone -q https://registry.npmjs.org/egress/probe.git g3" \
	    --setenv "GIT_SSL_CAINFO=$BOX/up.crt"
	expect_eq "git: the run ends" 0 "$rc"
	expect_case "git clone https://github.com/..., no proxy variable" ok 0 'from github\.com$'
	expect_case "git clone https://github.com/... through the proxy" proxied 0 'from github\.com$'
	expect_case "git clone from registry.npmjs.org (not in @github): fails" other 128 ''
	expect_got "git: github.com served info/refs, twice" github.com \
	    "/egress/probe.git/info/refs?service=git-upload-pack" 2
	expect_opens git github.com
	expect_refused git registry.npmjs.org
else
	skip "git through @github" "git is not installed (tools/deps installs it)"
fi

# Nothing was looked up but the test's names (and testdns answers only those, with 127.0.0.1).
expect_eq "testdns was asked about the test's names only" "" \
    "$(cut -d' ' -f1 "$DNSLOG" | sort -u | grep -vxF "$(printf '%s\n' $NAMES)")"
expect_clean "template client runs"

finish
