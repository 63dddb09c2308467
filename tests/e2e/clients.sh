#!/bin/sh
# clients.sh: real clients inside egress-run with no proxy setting (SPEC "Names and connections
# inside the sandbox", "egress-run for real work"; docs/sandbox.md), in real bubblewrap,
# loopback only. Each client gets a run of its own with only its upstream allowed
# (--allow NAME:PORT), every upstream is a real server the test starts on 127.0.0.1 under a
# name of the test's DNS zone, and no client is given a proxy:
# - "direct" (a script in $BOX) unsets every proxy variable egress-launch sets (HTTP(S)_PROXY,
#   http(s)_proxy, NO_PROXY, no_proxy, npm_config_*proxy, NODE_USE_ENV_PROXY,
#   JAVA_TOOL_OPTIONS) and checks that no variable named *proxy* is left before it runs the
#   client, so that a client that would use one cannot; aiohttp's default ClientSession
#   (trust_env False) and httpx run once with the variables as egress-launch sets them, httpx
#   once more under "direct"; curl gets --noproxy '*' (and one curl run is proxied, as before).
#   So what carries the connection is the DNS stub (a synthetic address) and the transparent
#   path (nft redirect -> egress-relay -> egressd), and the receipts say so: frontend
#   transparent, host the name, addr the real address (127.0.0.1).
# - Clients: node fetch() and https.get (HTTPS, the test CA through NODE_EXTRA_CA_CERTS),
#   psql against a PostgreSQL server the test starts, redis-cli against redis-server, nc to an
#   echo server, ssh -p PORT host against an sshd the test starts (key and known_hosts given
#   explicitly), git clone over ssh with --setenv GIT_SSH_COMMAND (the documented way),
#   aiohttp, httpx, getent hosts, python's socket.getaddrinfo, curl, wget; and pip download,
#   npm pack and git clone over https against a static HTTPS server the test starts (a PEP 503
#   simple index, an npm registry, a dumb-HTTP git repository), each once "direct" and once
#   with the proxy variables (curl and wget: --noproxy/--no-proxy, and once proxied), so that
#   both paths are proven: frontend transparent and frontend http-connect.
# - Each denied counterpart fails fast (well under any resolver or connect timeout), in the
#   same run: a name no rule allows (denied.e2e.test, which testdns would answer) does not
#   resolve (the client's own "could not resolve" error), the summary names it denied and
#   testdns was never asked about it; the allowed name on a port the policy does not allow
#   (where a real server listens) is reset, the summary names NAME:PORT not-allowlisted, its
#   receipt is a transparent deny.
# - One transparent run by an unprivileged invoker (nobody), the non-root path.
# A client that is not installed is skipped, said as such (tools/deps installs them all).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need curl openssl getent

have() { command -v "$1" >/dev/null 2>&1; }

# --- upstreams ------------------------------------------------------------------------------
# One HTTPS server (openssl s_server, a test CA's certificate for web.e2e.test), one echo
# server (helper.py), and, when installed, PostgreSQL, redis-server and sshd.
if ! openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=web.e2e.test -days 1 \
    -addext "subjectAltName=DNS:web.e2e.test" \
    -keyout web.key -out "$BOX/ca.crt" >openssl.log 2>&1; then
	echo "Bail out! openssl req: $(cat openssl.log)"
	exit 99
fi
WEB=$(freeport)
spawn web openssl s_server -quiet -accept "127.0.0.1:$WEB" -cert "$BOX/ca.crt" -key web.key -www
wait_tcp "$WEB" || { echo "Bail out! openssl s_server did not start: $(cat web.err)"; exit 99; }
start_server echo echo
ECHO=$PORT
# a second one: where a port not allowed must stop nc (its bytes would come back)
start_server echo2 echo
ECHO2=$PORT
{
	for n in web pkgs pg redis echo ssh denied; do echo "$n.e2e.test A 127.0.0.1"; done
} > zone
dns_start zone
mkdir -m 700 "$WORK/rcpt"
RCPT=$WORK/rcpt/r.jsonl
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"

# direct CMD...: CMD without any proxy variable (see above).
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
# cases.sh: one LABEL CMD... runs CMD (stdin /dev/null, stdout and stderr together, for at
# most 20 s: rc 124 then) and prints "LABEL rc=RC ms=MS OUTPUT" on one line (MS: how long it
# took).
cat > "$BOX/cases.sh" <<'EOF'
now() { date +%s%3N; }
one() {
	_l=$1
	shift
	_t=$(now)
	_o=$(timeout -k 2 20 "$@" </dev/null 2>&1)
	_r=$?
	printf '%s rc=%s ms=%s %s\n' "$_l" "$_r" "$(($(now) - _t))" "$(printf '%s' "$_o" | tr '\n' ' ')"
}
EOF
chmod 755 "$BOX/direct"

# crun NAME:PORT SCRIPT [egress-run options]: SCRIPT (sh, cases.sh sourced) in a run with
# only NAME:PORT allowed; sets rc, out, err (lib's erun) and M (the receipts' mark before).
crun() {
	_a=$1
	_s=$2
	shift 2
	M=$(rcpt_mark)
	# shellcheck disable=SC2086
	erun --allow "$_a" $DNSARGS --receipts "$RCPT" "$@" -- sh -c ". ./cases.sh; $_s"
	printf '%s\n' "$out" | cut -c1-300 | sed 's/^/# /'    # what each client said, for the log
}
# case_of LABEL: that case's line of the last run, without its label.
case_of() { printf '%s\n' "$out" | sed -n "s/^$1 //p" | head -n 1; }
# fast LABEL: "fast" when the case took less than 5 s (resolvers retry after 5 s, connect
# timeouts are longer), else its time.
fast() {
	_ms=$(case_of "$1" | sed -n 's/^rc=[0-9]* ms=\([0-9]*\) .*/\1/p')
	if [ -n "$_ms" ] && [ "$_ms" -lt 5000 ]; then echo fast; else echo "slow: ${_ms:-?} ms"; fi
}
# expect_case WHAT LABEL RC-RE OUTPUT-RE: the case's rc matches RC-RE, its output OUTPUT-RE.
expect_case() {
	expect_match "$1" "^rc=$3 ms=[0-9]+ .*$4" "$(case_of "$2")"
}
# expect_denials CLIENT NAME PORT: the usual checks of a run whose cases "name" (denied.e2e.test)
# and "port" (NAME on PORT, not allowed) failed: fast, the summary, the receipts.
expect_denials() {
	expect_eq "$1: the name no rule allows fails fast" fast "$(fast name)"
	expect_eq "$1: the port not allowed fails fast" fast "$(fast port)"
	expect_match "$1: the summary names denied.e2e.test denied" \
	    "denied +denied\\.e2e\\.test .*not-allowlisted" "$err"
	expect_match "$1: the summary names $2:$3 denied" \
	    "denied +$(printf '%s' "$2" | sed 's/\./\\./g'):$3 .*not-allowlisted" "$err"
	expect_eq "$1: receipt of the name: a dns deny" "deny dns denied.e2e.test not-allowlisted" \
	    "$(rcpt --skip "$M" --where event=deny --where host=denied.e2e.test --wait 5 \
	    --fields event,frontend,host,reason)"
	expect_eq "$1: receipt of the port: a transparent deny of the name" \
	    "deny transparent $2 $3 not-allowlisted" \
	    "$(rcpt --skip "$M" --where event=deny --where "port=$3" --wait 5 \
	    --fields event,frontend,host,port,reason)"
}
# expect_open CLIENT NAME PORT [FRONTEND]: the run's open receipt for NAME:PORT.
expect_open() {
	expect_eq "$1: receipt: frontend ${4:-transparent}, host the name, addr the real one" \
	    "open ${4:-transparent} $2 $3 127.0.0.1" \
	    "$(rcpt --skip "$M" --where event=open --where "host=$2" --where "frontend=${4:-transparent}" --wait 5 \
	    --fields event,frontend,host,port,addr)"
}

WEBURL=https://web.e2e.test:$WEB/
# The port-not-allowed case of web.e2e.test goes to the echo server's port, where a real
# server listens: only the policy stops it.
WEBBAD=https://web.e2e.test:$ECHO/

# --- getent hosts, getaddrinfo ----------------------------------------------------------------
crun "web.e2e.test:$WEB" "one ok getent hosts web.e2e.test;
	one gai $SBX_PY -c 'import socket; print(socket.getaddrinfo(\"web.e2e.test\", $WEB, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])';
	one name getent hosts denied.e2e.test"
expect_case "getent hosts web.e2e.test: a synthetic address" ok 0 '198\.1[89]\.[0-9]+\.[0-9]+ +web\.e2e\.test'
expect_case "getaddrinfo web.e2e.test: a synthetic address" gai 0 '198\.1[89]\.[0-9]+\.[0-9]+'
expect_case "getent hosts denied.e2e.test: not found (exit 2)" name 2 ''
expect_eq "getent: the name no rule allows fails fast" fast "$(fast name)"
expect_match "getent: the summary names denied.e2e.test denied" \
    "denied +denied\\.e2e\\.test .*not-allowlisted" "$err"

# --- curl ---------------------------------------------------------------------------------------
CURL="curl -sS --max-time 10 --cacert ca.crt -o /dev/null -w %{http_code}"
crun "web.e2e.test:$WEB" "one ok $CURL --noproxy '*' $WEBURL; one name $CURL --noproxy '*' https://denied.e2e.test:$WEB/;
	one port $CURL --noproxy '*' $WEBBAD; one proxied $CURL $WEBURL"
expect_case "curl --noproxy '*': 200" ok 0 '200$'
expect_case "curl --noproxy '*', a name no rule allows: could not resolve" name 6 'Could not resolve host: denied\.e2e\.test'
# (the relay accepted the connection, egressd refused it, the relay reset it: curl sees the
# reset in its TLS handshake, 35, or already as its connect's result, 7)
expect_case "curl --noproxy '*', a port not allowed: reset" port '(7|35)' "(reset by peer|Couldn't connect to server)"
expect_case "curl through the proxy (HTTPS_PROXY as set inside): 200" proxied 0 '200$'
expect_denials curl web.e2e.test "$ECHO"
expect_open "curl --noproxy" web.e2e.test "$WEB"
expect_eq "curl through the proxy: receipt frontend http-connect" "open http-connect web.e2e.test" \
    "$(rcpt --skip "$M" --where event=open --where frontend=http-connect --wait 5 --fields event,frontend,host)"

# --- wget ---------------------------------------------------------------------------------------
# --tries=1: wget retries a reset connection 20 times by default, with waits between.
if have wget; then
	WGET="wget -nv --tries=1 --timeout=10 --ca-certificate=ca.crt -O /dev/null"
	crun "web.e2e.test:$WEB" "one ok $WGET --no-proxy $WEBURL;
	    one name $WGET --no-proxy https://denied.e2e.test:$WEB/; one port $WGET --no-proxy $WEBBAD; one proxied $WGET $WEBURL"
	expect_case "wget --no-proxy: fetched" ok 0 "URL:$WEBURL .*-> \"/dev/null\""
	expect_case "wget --no-proxy, a name no rule allows: could not resolve" name 4 \
	    "unable to resolve host address .denied\\.e2e\\.test."
	expect_case "wget --no-proxy, a port not allowed: reset" port 4 \
	    '(Unable to establish SSL connection|reset by peer)'
	expect_case "wget through the proxy (https_proxy as set inside): fetched" proxied 0 \
	    "URL:$WEBURL .*-> \"/dev/null\""
	expect_denials wget web.e2e.test "$ECHO"
	expect_open "wget --no-proxy" web.e2e.test "$WEB"
	expect_open "wget through the proxy" web.e2e.test "$WEB" http-connect
else
	skip "wget" "wget is not installed (tools/deps installs it)"
fi

# --- pip, npm and git over https: a static HTTPS server of packages ------------------------
# pkgs.e2e.test (a certificate of its own, $BOX/pkgs.crt) serves, from $WORK/pub: a PEP 503
# simple index with one wheel the test builds (egress-probe 1.0), an npm registry of one
# package (its packument at /egress-probe, the tarball it names, with its integrity), and a
# git repository for the dumb HTTP protocol (a bare repository after update-server-info).
# Each client runs once with no proxy variable ("direct", frontend transparent) and once
# with them as egress-launch sets them (frontend http-connect); its denied counterparts run
# "direct". Every request the server answers is in pkgs.err.
if ! openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=pkgs.e2e.test -days 1 \
    -addext "subjectAltName=DNS:pkgs.e2e.test" \
    -keyout pkgs.key -out "$BOX/pkgs.crt" >openssl.log 2>&1; then
	echo "Bail out! openssl req: $(cat openssl.log)"
	exit 99
fi
PKGS=$(freeport)
PKGURL=https://pkgs.e2e.test:$PKGS
cat > pkgs.py <<'EOF'
# pkgs.py PORT DIR CERT KEY: a static HTTPS server of DIR on 127.0.0.1:PORT (the handshake in
# the request's thread, so that a probe that never shakes hands holds nothing up).
import functools, http.server, ssl, sys
port, folder, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class Handler(http.server.SimpleHTTPRequestHandler):
    def setup(self):
        self.request.settimeout(10)
        self.request.do_handshake()
        super().setup()
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Handler, directory=folder))
srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
srv.serve_forever()
EOF
cat > pub.py <<'EOF'
# pub.py DIR URL: the packages pkgs.py serves, under DIR (URL: the server's, for the
# packument's tarball address).
import base64, hashlib, io, json, os, sys, tarfile, zipfile
top, url = sys.argv[1], sys.argv[2]
os.makedirs(top + "/simple/egress-probe")
os.makedirs(top + "/tarballs")
whl = "egress_probe-1.0-py3-none-any.whl"
with zipfile.ZipFile(top + "/tarballs/" + whl, "w") as z:
    z.writestr("egress_probe/__init__.py", "")
    z.writestr("egress_probe-1.0.dist-info/METADATA",
               "Metadata-Version: 2.1\nName: egress-probe\nVersion: 1.0\n")
    z.writestr("egress_probe-1.0.dist-info/WHEEL",
               "Wheel-Version: 1.0\nGenerator: clients.sh\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("egress_probe-1.0.dist-info/RECORD", "")
sha = hashlib.sha256(open(top + "/tarballs/" + whl, "rb").read()).hexdigest()
with open(top + "/simple/index.html", "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="egress-probe/">egress-probe</a></body></html>\n')
with open(top + "/simple/egress-probe/index.html", "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="../../tarballs/%s#sha256=%s">%s</a></body></html>\n'
            % (whl, sha, whl))
pj = json.dumps({"name": "egress-probe", "version": "1.0.0"}).encode()
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    ti = tarfile.TarInfo("package/package.json")
    ti.size = len(pj)
    ti.mode = 0o644
    t.addfile(ti, io.BytesIO(pj))
tgz = buf.getvalue()
with open(top + "/tarballs/egress-probe-1.0.0.tgz", "wb") as f:
    f.write(tgz)
dist = {"tarball": url + "/tarballs/egress-probe-1.0.0.tgz",
        "shasum": hashlib.sha1(tgz).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}
with open(top + "/egress-probe", "w") as f:
    json.dump({"name": "egress-probe", "dist-tags": {"latest": "1.0.0"},
               "versions": {"1.0.0": {"name": "egress-probe", "version": "1.0.0", "dist": dist}}}, f)
EOF
"$E2E_PY" pub.py "$WORK/pub" "$PKGURL" || { echo "Bail out! pub.py failed"; exit 99; }
if have git; then
	git init -q --bare --initial-branch=main pub/repo.git
	git init -q hsrc && (cd hsrc && git -c user.name=t -c user.email=t@e2e.test commit -q \
	    --allow-empty -m "over dumb https" && git push -q "$WORK/pub/repo.git" HEAD:refs/heads/main)
	git -C pub/repo.git update-server-info
fi
spawn pkgs "$E2E_PY" pkgs.py "$PKGS" "$WORK/pub" "$BOX/pkgs.crt" pkgs.key
wait_tcp "$PKGS" || { echo "Bail out! pkgs.py did not start: $(cat pkgs.err)"; exit 99; }
# pkgs_got PATH: 1 when the server answered a GET of PATH with 200 since mark $PM, else 0.
pkgs_got() {
	if tail -n "+$((PM + 1))" pkgs.err | grep -Fq "\"GET $1 HTTP/1.1\" 200"; then echo 1; else echo 0; fi
}
pkgs_mark() { wc -l < pkgs.err | tr -d ' '; }

# pip: Debian's /usr/bin/pip (python3-pip). --retries 1 (5 by default, with waits between
# them): the one retry is what shows the connection's error at pip's default verbosity.
if [ -x /usr/bin/pip ] && /usr/bin/pip --version >/dev/null 2>&1; then
	PIP="/usr/bin/pip download --no-deps --disable-pip-version-check --no-cache-dir --retries 1 --timeout 10"
	PM=$(pkgs_mark)
	crun "pkgs.e2e.test:$PKGS" "one ok ./direct $PIP -d pip-out --index-url $PKGURL/simple/ egress-probe;
	    one name ./direct $PIP -d pip-out --index-url https://denied.e2e.test:$PKGS/simple/ egress-probe;
	    one port ./direct $PIP -d pip-out --index-url https://pkgs.e2e.test:$ECHO/simple/ egress-probe;
	    one proxied $PIP -d pip-proxied --index-url $PKGURL/simple/ egress-probe" \
	    --setenv "PIP_CERT=$BOX/pkgs.crt"
	expect_case "pip download, no proxy variable: the wheel saved" ok 0 \
	    'Saved \./pip-out/egress_probe-1\.0-py3-none-any\.whl.*Successfully downloaded egress-probe'
	expect_case "pip download, a name no rule allows: could not resolve" name 1 \
	    "NewConnectionError.*Name or service not known.*No matching distribution found for egress-probe"
	expect_case "pip download, a port not allowed: reset" port 1 \
	    "(reset by peer|EOF occurred in violation of protocol|UNEXPECTED_EOF).*No matching distribution found"
	expect_case "pip download through the proxy (HTTPS_PROXY as set inside): the wheel saved" proxied 0 \
	    'Saved \./pip-proxied/egress_probe-1\.0-py3-none-any\.whl'
	expect_eq "pip: the server gave the index and the wheel" 11 \
	    "$(pkgs_got /simple/egress-probe/)$(pkgs_got /tarballs/egress_probe-1.0-py3-none-any.whl)"
	expect_denials pip pkgs.e2e.test "$ECHO"
	expect_open "pip, no proxy variable" pkgs.e2e.test "$PKGS"
	expect_open "pip through the proxy" pkgs.e2e.test "$PKGS" http-connect
else
	skip "pip" "/usr/bin/pip is not installed (tools/deps installs python3-pip)"
fi

# npm: npm pack fetches the packument, then the tarball, and checks its integrity.
# --fetch-retries=0: npm retries a reset connection twice by default, 10 s apart (a name
# that does not resolve it never retries). --cafile, not NODE_EXTRA_CA_CERTS: a global
# npmrc may set cafile (nodesource's /usr/etc/npmrc does), which replaces Node's own list.
if have npm && have node; then
	NPM="npm pack --no-update-notifier --fetch-retries=0 --cafile=$BOX/pkgs.crt --pack-destination npm-out"
	mkdir -p "$BOX/npm-out"
	PM=$(pkgs_mark)
	crun "pkgs.e2e.test:$PKGS" "one ok ./direct $NPM --registry $PKGURL/ egress-probe;
	    one name ./direct $NPM --registry https://denied.e2e.test:$PKGS/ egress-probe;
	    one port ./direct $NPM --registry https://pkgs.e2e.test:$ECHO/ egress-probe;
	    one proxied sh -c 'rm -f npm-out/*.tgz && $NPM --registry $PKGURL/ egress-probe && ls npm-out'"
	expect_case "npm pack, no proxy variable: the tarball fetched" ok 0 'egress-probe-1\.0\.0\.tgz$'
	expect_case "npm pack, a name no rule allows: could not resolve" name 1 \
	    'ENOTFOUND.*denied\.e2e\.test'
	expect_case "npm pack, a port not allowed: reset" port 1 'ECONNRESET'
	expect_case "npm pack through the proxy (npm_config_https_proxy as set inside): the tarball fetched" \
	    proxied 0 'egress-probe-1\.0\.0\.tgz egress-probe-1\.0\.0\.tgz$'
	expect_eq "npm: the server gave the packument and the tarball" 11 \
	    "$(pkgs_got /egress-probe)$(pkgs_got /tarballs/egress-probe-1.0.0.tgz)"
	expect_denials npm pkgs.e2e.test "$ECHO"
	expect_open "npm, no proxy variable" pkgs.e2e.test "$PKGS"
	expect_open "npm through the proxy" pkgs.e2e.test "$PKGS" http-connect
else
	skip "npm" "npm is not installed (tools/deps installs Debian's npm where nodejs has none)"
fi

# git clone over https, the dumb HTTP protocol.
if have git; then
	PM=$(pkgs_mark)
	crun "pkgs.e2e.test:$PKGS" \
	    "one ok sh -c './direct git clone -q $PKGURL/repo.git hclone && git -C hclone log --format=%s';
	    one name ./direct git clone -q https://denied.e2e.test:$PKGS/repo.git hclone2;
	    one port ./direct git clone -q https://pkgs.e2e.test:$ECHO/repo.git hclone3;
	    one proxied sh -c 'git clone -q $PKGURL/repo.git hclone4 && git -C hclone4 log --format=%s'" \
	    --setenv "GIT_SSL_CAINFO=$BOX/pkgs.crt"
	expect_case "git clone over https, no proxy variable" ok 0 'over dumb https$'
	expect_case "git clone over https, a name no rule allows: could not resolve" name 128 \
	    'Could not resolve host: denied\.e2e\.test'
	expect_case "git clone over https, a port not allowed: reset" port 128 \
	    "(reset by peer|Couldn't connect to server)"
	expect_case "git clone over https through the proxy (https_proxy as set inside)" proxied 0 'over dumb https$'
	expect_eq "git: the server gave info/refs and HEAD" 11 \
	    "$(pkgs_got /repo.git/info/refs?service=git-upload-pack)$(pkgs_got /repo.git/HEAD)"
	expect_denials "git over https" pkgs.e2e.test "$ECHO"
	expect_open "git over https, no proxy variable" pkgs.e2e.test "$PKGS"
	expect_open "git over https through the proxy" pkgs.e2e.test "$PKGS" http-connect
else
	skip "git over https" "git is not installed (tools/deps installs it)"
fi

# --- node: fetch() and https.get ------------------------------------------------------------
# Node 20 uses no proxy variable by itself (NODE_USE_ENV_PROXY is for later versions); they
# are unset anyway ("direct"). The test CA through NODE_EXTRA_CA_CERTS.
cat > "$BOX/get.js" <<'EOF'
const https = require('https');
const [how, url] = process.argv.slice(2);
const fail = (e) => { console.log('error ' + ((e.cause && e.cause.code) || e.code || e.message)); process.exit(1); };
if (how === 'fetch') {
	fetch(url, { signal: AbortSignal.timeout(10000) })
		.then(async (r) => { await r.text(); console.log('status ' + r.status); }, fail);
} else {
	const req = https.get(url, { timeout: 10000 }, (r) => {
		r.resume();
		r.on('end', () => console.log('status ' + r.statusCode));
	});
	req.on('error', fail);
	req.on('timeout', () => req.destroy(new Error('timeout')));
}
EOF
if have node; then
	for how in fetch https.get; do
		crun "web.e2e.test:$WEB" "one ok ./direct node get.js $how $WEBURL;
		    one name ./direct node get.js $how https://denied.e2e.test:$WEB/;
		    one port ./direct node get.js $how $WEBBAD" --setenv NODE_EXTRA_CA_CERTS=ca.crt
		expect_case "node $how: 200" ok 0 'status 200$'
		expect_case "node $how, a name no rule allows: could not resolve" name 1 'error ENOTFOUND$'
		expect_case "node $how, a port not allowed: reset" port 1 'error ECONNRESET$'
		expect_denials "node $how" web.e2e.test "$ECHO"
		expect_open "node $how" web.e2e.test "$WEB"
	done
else
	skip "node fetch() and https.get" "node is not installed (tools/deps installs nodejs)"
fi

# --- python: aiohttp's default ClientSession, httpx -------------------------------------------
cat > "$BOX/get.py" <<'EOF'
import asyncio, ssl, sys
how, url = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile="ca.crt")
try:
    if how == "aiohttp":
        import aiohttp
        async def get():
            # the default session: trust_env False, no proxy, its own resolver (getaddrinfo)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as s:
                async with s.get(url, ssl=ctx) as r:
                    await r.read()
                    return r.status
        print("status", asyncio.run(get()))
    else:
        import httpx
        # the default client: trust_env True, the proxy variables used when set
        print("status", httpx.get(url, verify=ctx, timeout=10).status_code)
except Exception as e:
    print("error %s: %s" % (type(e).__name__, e))
    sys.exit(1)
EOF
if "$SBX_PY" -c 'import aiohttp' 2>/dev/null; then
	# With the proxy variables as egress-launch sets them: the default session ignores them.
	crun "web.e2e.test:$WEB" "one ok $SBX_PY get.py aiohttp $WEBURL;
	    one name $SBX_PY get.py aiohttp https://denied.e2e.test:$WEB/; one port $SBX_PY get.py aiohttp $WEBBAD"
	expect_case "aiohttp ClientSession(): 200" ok 0 'status 200$'
	expect_case "aiohttp, a name no rule allows: could not resolve" name 1 \
	    'error ClientConnectorError: Cannot connect to host denied\.e2e\.test.*Name or service not known'
	expect_case "aiohttp, a port not allowed: reset" port 1 '(reset by peer|Connection lost|Connect call failed)'
	expect_denials aiohttp web.e2e.test "$ECHO"
	expect_open aiohttp web.e2e.test "$WEB"
else
	skip "aiohttp" "python3-aiohttp is not installed for $SBX_PY (tools/deps installs it)"
fi
if "$SBX_PY" -c 'import httpx' 2>/dev/null; then
	# As egress-launch sets the environment (HTTP(S)_PROXY, no ALL_PROXY): httpx uses the
	# proxy, and nothing in the default environment makes it fail.
	crun "web.e2e.test:$WEB" "one ok $SBX_PY get.py httpx $WEBURL"
	expect_case "httpx, the environment as egress-launch sets it: 200 (through the proxy)" ok 0 'status 200$'
	expect_open "httpx with the proxy variables" web.e2e.test "$WEB" http-connect
	crun "web.e2e.test:$WEB" "one ok ./direct $SBX_PY get.py httpx $WEBURL;
	    one name ./direct $SBX_PY get.py httpx https://denied.e2e.test:$WEB/; one port ./direct $SBX_PY get.py httpx $WEBBAD"
	expect_case "httpx, no proxy variable: 200" ok 0 'status 200$'
	expect_case "httpx, a name no rule allows: could not resolve" name 1 \
	    'error ConnectError: .*Name or service not known'
	expect_case "httpx, a port not allowed: reset" port 1 'reset by peer'
	expect_denials httpx web.e2e.test "$ECHO"
	expect_open httpx web.e2e.test "$WEB"
else
	skip "httpx" "python3-httpx is not installed for $SBX_PY (tools/deps installs it)"
fi

# --- nc ---------------------------------------------------------------------------------------
# netcat-openbsd uses a proxy only when told (-x); "direct" all the same. -N: shut down the
# sending side at the end of stdin, so that the echo server ends the connection.
if have nc && nc -h 2>&1 | grep -q 'OpenBSD netcat'; then
	crun "echo.e2e.test:$ECHO" "one ok sh -c 'printf hello-nc | ./direct nc -N -w 10 echo.e2e.test $ECHO';
	    one name ./direct nc -N -w 10 denied.e2e.test $ECHO;
	    one port sh -c 'printf hello-nc | ./direct nc -N -w 10 echo.e2e.test $ECHO2'"
	expect_case "nc to the echo server: its bytes come back" ok 0 'hello-nc$'
	expect_case "nc, a name no rule allows: could not resolve" name 1 \
	    'nc: getaddrinfo for host "denied\.e2e\.test" port [0-9]+: Name or service not known'
	# (nc takes a reset for an end of the stream: it says nothing and exits 0, or 1 when
	# its connect's result was already the reset, said only with -v; what shows is that
	# nothing comes back from the other echo server)
	expect_match "nc, a port not allowed: reset, nothing comes back" '^rc=[01] ms=[0-9]+ $' "$(case_of port)"
	expect_denials nc echo.e2e.test "$ECHO2"
	expect_open nc echo.e2e.test "$ECHO"
else
	skip "nc" "netcat-openbsd is not installed (tools/deps installs it)"
fi

# --- redis-cli against redis-server -----------------------------------------------------------
if have redis-cli && have redis-server; then
	RDP=$(freeport)
	spawn redis redis-server --port "$RDP" --bind 127.0.0.1 --save '' --daemonize no
	wait_tcp "$RDP" || { echo "Bail out! redis-server did not start: $(cat redis.err redis.out)"; exit 99; }
	crun "redis.e2e.test:$RDP" "one ok sh -c './direct redis-cli -h redis.e2e.test -p $RDP set egress through &&
	    ./direct redis-cli -h redis.e2e.test -p $RDP get egress';
	    one name ./direct redis-cli -h denied.e2e.test -p $RDP ping;
	    one port ./direct redis-cli -h redis.e2e.test -p $ECHO ping"
	expect_case "redis-cli set and get" ok 0 'OK through$'
	expect_case "redis-cli, a name no rule allows: could not resolve" name 1 \
	    "Could not connect to Redis at denied\\.e2e\\.test:$RDP: Name or service not known"
	expect_case "redis-cli, a port not allowed: reset" port '[0-9]+' 'reset by peer'
	expect_denials redis-cli redis.e2e.test "$ECHO"
	expect_open redis-cli redis.e2e.test "$RDP"
else
	skip "redis-cli" "redis-server or redis-tools is not installed (tools/deps installs redis-server)"
fi

# --- psql against PostgreSQL ------------------------------------------------------------------
# initdb and postgres refuse to run as root: nobody runs them, in a data folder of its own.
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if have psql && [ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] && id nobody >/dev/null 2>&1 && have setpriv; then
	NOBODY="setpriv --reuid nobody --regid $(id -g nobody) --clear-groups"
	mkdir pg && chown nobody pg
	# shellcheck disable=SC2086
	if ! $NOBODY "$PGBIN/initdb" -D "$WORK/pg/data" -A trust -U postgres --no-sync >pg-init.log 2>&1; then
		echo "Bail out! initdb: $(cat pg-init.log)"
		exit 99
	fi
	PGP=$(freeport)
	# shellcheck disable=SC2086
	spawn pg $NOBODY "$PGBIN/postgres" -D "$WORK/pg/data" -h 127.0.0.1 -p "$PGP" -k "$WORK/pg" \
	    -c fsync=off
	wait_tcp "$PGP" || { echo "Bail out! postgres did not start: $(cat pg.err)"; exit 99; }
	PSQL="./direct psql -w -U postgres -d postgres -Atc"
	crun "pg.e2e.test:$PGP" "one ok $PSQL 'select 6 * 7' -h pg.e2e.test -p $PGP;
	    one name $PSQL 'select 1' -h denied.e2e.test -p $PGP; one port $PSQL 'select 1' -h pg.e2e.test -p $ECHO"
	expect_case "psql: a query answered" ok 0 '42$'
	expect_case "psql, a name no rule allows: could not resolve" name 2 \
	    'could not translate host name "denied\.e2e\.test" to address: Name or service not known'
	expect_case "psql, a port not allowed: reset" port 2 \
	    "connection to server at \"pg\\.e2e\\.test\" \\(198\\.1[89]\\.[0-9.]+\\), port $ECHO failed: .*(reset by peer|closed the connection)"
	expect_denials psql pg.e2e.test "$ECHO"
	expect_open psql pg.e2e.test "$PGP"
else
	skip "psql" "postgresql (initdb, postgres, psql), user nobody or setpriv missing (tools/deps installs postgresql)"
fi

# --- ssh and git over ssh ---------------------------------------------------------------------
# Plain ssh, no ProxyCommand: the key and the known_hosts file given explicitly (no ~/.ssh of
# the user's inside); git through --setenv GIT_SSH_COMMAND, which egress-launch keeps.
if have ssh && have ssh-keygen && have git && [ -x /usr/sbin/sshd ]; then
	SSHP=$(freeport)
	mkdir -p /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f hostkey
	ssh-keygen -q -t ed25519 -N '' -f "$BOX/id"
	cp "$BOX/id.pub" authorized_keys
	chmod 600 authorized_keys "$BOX/id"
	echo "[ssh.e2e.test]:$SSHP $(cut -d' ' -f1,2 hostkey.pub)" > "$BOX/known_hosts"
	cat > sshd_config <<EOF
Port $SSHP
ListenAddress 127.0.0.1
HostKey $WORK/hostkey
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $WORK/sshd.pid
EOF
	spawn sshd /usr/sbin/sshd -D -e -f "$WORK/sshd_config"
	wait_tcp "$SSHP" || { echo "Bail out! sshd did not start: $(cat sshd.err)"; exit 99; }
	git init -q --bare --initial-branch=main repo.git
	git init -q src && (cd src && git -c user.name=t -c user.email=t@e2e.test commit -q \
	    --allow-empty -m "over plain ssh" && git push -q "$WORK/repo.git" HEAD:refs/heads/main)
	SSH="./direct ssh -i $BOX/id -o UserKnownHostsFile=$BOX/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes"
	crun "ssh.e2e.test:$SSHP" "one ok $SSH -p $SSHP root@ssh.e2e.test echo logged in;
	    one name $SSH -p $SSHP root@denied.e2e.test true; one port $SSH -p $ECHO root@ssh.e2e.test true"
	expect_case "ssh -p PORT host: logs in, the host key checked against known_hosts" ok 0 'logged in$'
	expect_case "ssh, a name no rule allows: could not resolve" name 255 \
	    'ssh: Could not resolve hostname denied\.e2e\.test: Name or service not known'
	expect_case "ssh, a port not allowed: reset" port 255 'reset by'
	expect_denials ssh ssh.e2e.test "$ECHO"
	expect_open ssh ssh.e2e.test "$SSHP"

	crun "ssh.e2e.test:$SSHP" \
	    "one ok sh -c './direct git clone -q ssh://root@ssh.e2e.test:$SSHP$WORK/repo.git clone && git -C clone log --format=%s';
	    one name ./direct git clone -q ssh://root@denied.e2e.test:$SSHP$WORK/repo.git clone2;
	    one port ./direct git clone -q ssh://root@ssh.e2e.test:$ECHO$WORK/repo.git clone3" \
	    --setenv "GIT_SSH_COMMAND=ssh -i $BOX/id -o UserKnownHostsFile=$BOX/known_hosts"
	expect_case "git clone over ssh (GIT_SSH_COMMAND from --setenv)" ok 0 'over plain ssh$'
	expect_case "git clone, a name no rule allows: could not resolve" name 128 \
	    'ssh: Could not resolve hostname denied\.e2e\.test: Name or service not known'
	expect_case "git clone, a port not allowed: reset" port 128 'reset by'
	expect_denials "git over ssh" ssh.e2e.test "$ECHO"
	expect_open "git over ssh" ssh.e2e.test "$SSHP"
else
	skip "ssh and git over ssh" "ssh, ssh-keygen, git or sshd is not installed (tools/deps installs them)"
fi

# --- an unprivileged invoker ------------------------------------------------------------------
if id nobody >/dev/null 2>&1 && have setpriv; then
	NB=$WORK/nb
	mkdir -p "$NB" "$WORK/nbr" && chmod 777 "$NB" && chown nobody "$WORK/nbr" &&
	    cp "$BOX/ca.crt" "$BOX/direct" "$NB/"
	# shellcheck disable=SC2086
	(cd "$NB" && setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups \
	    env HOME="$NB" XDG_RUNTIME_DIR="$NB" "$ERUN" --allow "web.e2e.test:$WEB" $DNSARGS \
	    --receipts "$WORK/nbr/r.jsonl" -- sh -c "./direct $CURL $WEBURL; echo; ./direct $CURL $WEBBAD" \
	    >"$NB/out" 2>"$NB/err")
	expect_match "as nobody: curl with no proxy reaches the upstream, the other port is reset" \
	    '^200
000$' "$(cat "$NB/out")"
	expect_eq "as nobody: receipt: frontend transparent, host the name, addr the real one" \
	    "open transparent web.e2e.test $WEB 127.0.0.1" \
	    "$(py rcpt "$WORK/nbr/r.jsonl" --where event=open --wait 5 --fields event,frontend,host,port,addr)"
	expect_match "as nobody: the summary names the port not allowed" \
	    "denied +web\\.e2e\\.test:$ECHO .*not-allowlisted" "$(cat "$NB/err")"
else
	skip "an unprivileged invoker" "no user nobody or no setpriv"
fi

expect_eq "testdns was never asked about denied.e2e.test" 0 "$(grep -c 'denied.e2e.test' "$DNSLOG")"
expect_clean "client runs"

finish
