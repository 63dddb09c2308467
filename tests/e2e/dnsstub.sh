#!/bin/sh
# dnsstub.sh: the stub resolver inside the sandbox (SPEC "Names and connections inside the
# sandbox"; docs/sandbox.md), in real bubblewrap, loopback only, with only ok.e2e.test
# allowed.
# - /etc/resolv.conf inside names 127.0.0.53 only (no search list, no edns0 trust-ad).
# - getent hosts ok.e2e.test and python's socket.getaddrinfo give one address in
#   198.18.0.0/15 (the synthetic range), the same one.
# - getent hosts other.e2e.test fails; the summary names it as denied; testdns was asked
#   nothing about it (nothing about a refused name reaches a resolver).
# - raw queries from python inside: A over UDP with the question echoed (case kept) and
#   TTL 1, AAAA is NOERROR with no answer, NXDOMAIN for other.e2e.test, FORMERR for a
#   malformed query (a compression pointer in the question), NOTIMP for opcode NOTIFY; a
#   length-prefixed query over TCP, twice on one connection; A and AAAA sent at once from
#   one UDP port (as glibc does) both answered without a retry.
# - no capability is left inside (the workload's sets and bounding set, and the stub's).
# - --no-dns: no stub (getent fails, nothing listens on 127.0.0.53:53), /etc/resolv.conf is
#   the host's.
# - curl through the proxy still works.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need curl getent

printf 'ok.e2e.test A 127.0.0.1\nother.e2e.test A 127.0.0.1\n' > zone
dns_start zone
UP=$(freeport)
spawn up "$E2E_PY" -m http.server --bind 127.0.0.1 "$UP" --directory "$WORK"
wait_tcp "$UP" || { echo "Bail out! http.server did not start: $(cat up.err)"; exit 99; }
R=$WORK/rcpt/r.jsonl
mkdir -m 700 "$WORK/rcpt"
A="--allow ok.e2e.test:$UP --resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8 --receipts $R"

# A DNS client for inside: q PROTO NAME TYPE [raw HEX] prints "rcode=N an=N ttl=N addr=A qsame=B".
cat > "$BOX/dnsq.py" <<'PY'
import socket, struct, sys
proto, name, qtype = sys.argv[1], sys.argv[2], int(sys.argv[3])
def query(qid):
    if name == "-":
        return bytes.fromhex(sys.argv[4])
    wire = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + wire + struct.pack(">HH", qtype, 1)
def show(q, r):
    rid, flags, qd, an = struct.unpack(">HHHH", r[:8])
    out = "rcode=%d an=%d id=%s" % (flags & 15, an, "same" if r[:2] == q[:2] else "other")
    if qd == 1:
        qlen = len(q) - 12
        out += " qsame=%s" % (r[12:12 + qlen] == q[12:])
    if an == 1:
        ttl, rdlen = struct.unpack(">IH", r[-10:-4])
        out += " ttl=%d addr=%s" % (ttl, socket.inet_ntoa(r[-4:]))
    print(out)
if proto == "pair":
    # A and AAAA at once from one socket, as glibc and c-ares ask: both answered, no
    # retransmission needed (2 s is far below the resolvers' 5 s retry).
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    qs = {}
    for qid, t in ((0x5151, 1), (0x5252, 28)):
        qtype = t
        q = query(qid)
        qs[q[:2]] = q
        s.sendto(q, ("127.0.0.53", 53))
    got = {}
    try:
        while len(got) < 2:
            r = s.recv(1500)
            got[r[:2]] = r
    except socket.timeout:
        print("timeout after %d answers" % len(got))
    for qid in sorted(got):
        show(qs[qid], got[qid])
elif proto == "udp":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    q = query(0x4242)
    s.sendto(q, ("127.0.0.53", 53))
    show(q, s.recv(1500))
else:
    s = socket.create_connection(("127.0.0.53", 53), timeout=5)
    for qid in (0x1111, 0x2222):
        q = query(qid)
        s.sendall(struct.pack(">H", len(q)) + q)
        n = b""
        while len(n) < 2:
            n += s.recv(2 - len(n))
        r = b""
        while len(r) < struct.unpack(">H", n)[0]:
            r += s.recv(struct.unpack(">H", n)[0] - len(r))
        show(q, r)
PY
cat > "$BOX/gai.py" <<'PY'
import socket, sys
print(sorted({a[4][0] for a in socket.getaddrinfo(sys.argv[1], 443, socket.AF_INET, socket.SOCK_STREAM)})[0])
PY
in_synth() {
	case $1 in 198.18.*|198.19.*) echo synthetic ;; *) echo "not synthetic: $1" ;; esac
}

# --- resolv.conf, getent, getaddrinfo -------------------------------------------------------
# shellcheck disable=SC2086
erun $A -- sh -c 'grep -v "^#" /etc/resolv.conf; echo "--"; getent hosts ok.e2e.test;
	echo "--"; '"$SBX_PY"' gai.py ok.e2e.test; echo "--"; getent hosts other.e2e.test;
	echo "other=$?"; grep -E "^Cap(Prm|Eff|Bnd)" /proc/self/status | tr "\n" " "; echo;
	for p in /proc/[0-9]*; do
		[ "$(cat $p/comm)" = egress-launch ] && [ $p != /proc/1 ] &&
			grep -E "^(CapPrm|CapEff|CapBnd|Seccomp):" $p/status | tr "\n" " "
	done; echo'
expect_eq "the run exits 0" 0 "$rc"
expect_eq "resolv.conf inside names the stub only" "nameserver 127.0.0.53" \
    "$(printf '%s\n' "$out" | sed -n '1,/^--$/p' | grep -v '^--$')"
G=$(printf '%s\n' "$out" | sed -n '/^--$/,$p' | sed -n 2p)
GNAME=$(printf '%s\n' "$G" | awk '{print $2}')
GADDR=$(printf '%s\n' "$G" | awk '{print $1}')
expect_eq "getent hosts ok.e2e.test: the name" "ok.e2e.test" "$GNAME"
expect_eq "getent hosts ok.e2e.test: a synthetic address" synthetic "$(in_synth "$GADDR")"
PADDR=$(printf '%s\n' "$out" | sed -n '/^--$/,$p' | sed -n 4p)
expect_eq "getaddrinfo gives the same synthetic address" "synthetic $GADDR" "$(in_synth "$PADDR") $PADDR"
expect_eq "getent hosts other.e2e.test fails (NXDOMAIN: exit 2)" "other=2" \
    "$(printf '%s\n' "$out" | grep '^other=')"
expect_eq "the workload holds no capability" \
    "CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000" \
    "$(words "$(printf '%s\n' "$out" | grep '^CapPrm' | head -n 1)")"
expect_eq "the stub holds none and runs under a filter" \
    "CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 Seccomp: 2" \
    "$(words "$(printf '%s\n' "$out" | tail -n 1)")"
expect_match "the summary names other.e2e.test as denied" "denied +other\\.e2e\\.test .*not-allowlisted" "$err"
expect_eq "testdns was asked about ok.e2e.test by nobody, other.e2e.test neither" "0 0" \
    "$(grep -c 'ok.e2e.test' "$DNSLOG") $(grep -c 'other.e2e.test' "$DNSLOG")"

# --- raw queries ------------------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A --quiet -- sh -c "$SBX_PY dnsq.py udp Ok.E2E.test 1; $SBX_PY dnsq.py udp ok.e2e.test 28;
	$SBX_PY dnsq.py udp other.e2e.test 1;
	$SBX_PY dnsq.py udp - 0 424201000001000000000000026f6bc00c00010001;
	$SBX_PY dnsq.py udp - 0 4242200000010000000000000000010001;
	$SBX_PY dnsq.py tcp ok.e2e.test 1; $SBX_PY dnsq.py pair ok.e2e.test 1"
expect_eq "raw queries: the run exits 0" 0 "$rc"
L() { printf '%s\n' "$out" | sed -n "${1}p" | sed 's/addr=198\.1[89]\.[0-9]*\.[0-9]*/addr=SYNTH/'; }
expect_eq "UDP A, mixed case: the question echoed as sent, TTL 1, a synthetic address" \
    "rcode=0 an=1 id=same qsame=True ttl=1 addr=SYNTH" "$(L 1)"
expect_eq "UDP AAAA: NOERROR, no data" "rcode=0 an=0 id=same qsame=True" "$(L 2)"
expect_eq "UDP A of a name no rule allows: NXDOMAIN" "rcode=3 an=0 id=same qsame=True" "$(L 3)"
expect_eq "a compression pointer in the question: FORMERR" "rcode=1 an=0 id=same" "$(L 4)"
expect_eq "opcode NOTIFY: NOTIMP" "rcode=4 an=0 id=same" "$(L 5)"
expect_eq "TCP, length-prefixed, two questions on one connection" \
    "rcode=0 an=1 id=same qsame=True ttl=1 addr=SYNTH|rcode=0 an=1 id=same qsame=True ttl=1 addr=SYNTH" \
    "$(L 6)|$(L 7)"
expect_eq "UDP, A and AAAA at once from one port: both answered at once" \
    "rcode=0 an=1 id=same qsame=True ttl=1 addr=SYNTH|rcode=0 an=0 id=same qsame=True" \
    "$(L 8)|$(L 9)"

# --- the proxy still works ------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A --quiet -- curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://ok.e2e.test:$UP/"
expect_eq "curl through the proxy still works" "0 200" "$rc $out"

# --- --no-dns -------------------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A --quiet --no-dns -- sh -c "cat /etc/resolv.conf; echo --; getent hosts ok.e2e.test;
	echo getent=\$?; $SBX_PY dnsq.py udp ok.e2e.test 1 2>&1 | tail -n 1"
expect_eq "--no-dns: /etc/resolv.conf is the host's" "$(cat /etc/resolv.conf)" \
    "$(printf '%s\n' "$out" | sed -n '1,/^--$/p' | sed '$d')"
expect_match "--no-dns: getent fails" "^getent=[1-9]" "$(printf '%s\n' "$out" | grep '^getent=')"
expect_match "--no-dns: nothing answers on 127.0.0.53:53" "timed out|refused|Errno" \
    "$(printf '%s\n' "$out" | tail -n 1)"
# shellcheck disable=SC2086
erun $A --quiet --no-dns -- curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://ok.e2e.test:$UP/"
expect_eq "--no-dns: curl through the proxy works" "0 200" "$rc $out"

expect_clean "dnsstub runs"

finish
