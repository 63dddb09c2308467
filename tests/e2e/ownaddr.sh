#!/bin/sh
# egressd end to end: egressd never carries a tunnel to its own listener (metrics-listen),
# whatever the policy permits (every address here is inside a permit-range and allowed).
# Refused as private-address, with a deny receipt naming the address: the listening
# address itself, its IPv4-mapped form (::ffff:127.0.0.1), a name resolving to it the
# first time and again once pinned (also a pin made on another port), through HTTP
# CONNECT, SOCKS5 and the native connector; with a wildcard listener (0.0.0.0:P, [::]:P)
# every address of the host on that port: 127.0.0.1, ::1, and an address added to lo
# after egressd started. The same addresses on another port still work.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
cat > zone <<EOF
own.e2e.test     A     127.0.0.1
pinned.e2e.test  A     127.0.0.1
mapped.e2e.test  AAAA  ::ffff:127.0.0.1
lo2.e2e.test     A     11.22.33.44
EOF
dns_start zone
cat > own.policy <<EOF
allow *.e2e.test 1024-65535
allow 127.0.0.1 1024-65535
allow 127.0.0.9 1024-65535
allow ::ffff:127.0.0.1 1024-65535
allow ::1 1024-65535
allow 11.22.33.44 1024-65535
allow fd00:e2e::1 1024-65535
permit-range 127.0.0.0/8
permit-range ::1/128
permit-range 11.22.33.44/32
permit-range fd00:e2e::1/128
EOF

cat > native.py <<'PYEOF'
import socket, struct, sys
sock, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sock)
h = host.encode("latin-1")
s.sendall(b"EGR1\x01\x00" + struct.pack(">H", port) + bytes([len(h)]) + h)
r = b""
while len(r) < 8:
    b = s.recv(8 - len(r))
    if not b:
        break
    r += b
print(struct.unpack(">i", r[4:])[0] if len(r) == 8 and r[:4] == b"EGR1" else "noreply")
PYEOF

S=$RUN/own.sock
# connect HOST PORT: an HTTP CONNECT; "STATUS REASON STATE".
connect() {
	case $1 in *:*) _h="[$1]" ;; *) _h=$1 ;; esac
	py raw "$S" --http --timeout 5 --data "CONNECT $_h:$2 HTTP/1.1\r\nHost: x\r\n\r\n"
}
# own WHAT HOST PORT ADDR: refused by CONNECT, SOCKS5 and native, each with a deny receipt.
own() {
	_m=$(rcpt_mark)
	expect_eq "$1: CONNECT refused" "403 private-address closed" "$(connect "$2" "$3")"
	expect_eq "$1: CONNECT receipt" "deny private-address http-connect $4 $3" \
	    "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend,addr,port)"
	_m=$(rcpt_mark)
	expect_eq "$1: SOCKS5 refused" "02 closed" "$(py tunnel socks5 "$S" "$2" "$3")"
	expect_eq "$1: SOCKS5 receipt" "deny private-address socks5 $4" \
	    "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend,addr)"
	_m=$(rcpt_mark)
	expect_eq "$1: native refused (-1005)" -1005 "$("$E2E_PY" native.py "$S" "$2" "$3")"
	expect_eq "$1: native receipt" "deny private-address native $4" \
	    "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend,addr)"
}
# start LISTEN: egressd with metrics-listen LISTEN:$MPORT, until the listener accepts.
start() {
	MPORT=$(freeport)
	conf_begin "metrics-listen $1:$MPORT"
	principal own own.policy
	egressd_start
	wait_tcp "$MPORT" "$2" || { echo "Bail out! metrics-listen did not listen"; exit 99; }
}
stop_egressd() {
	egressd_stop
	expect_eq "$1: egressd exits 0" 0 "$EGRESSD_RC"
}

# --- metrics-listen 127.0.0.1:P ------------------------------------------------------------
start 127.0.0.1 127.0.0.1
expect_eq "another port of the same address works" 200 "$(py tunnel connect "$S" 127.0.0.1 "$ECHO")"
own "the listening address" 127.0.0.1 "$MPORT" 127.0.0.1
own "its IPv4-mapped form" ::ffff:127.0.0.1 "$MPORT" ::ffff:127.0.0.1
own "an IPv4-mapped answer for a name" mapped.e2e.test "$MPORT" ::ffff:127.0.0.1
# A name: refused the first time, and every time its pin is used.
own "a name resolving to it" own.e2e.test "$MPORT" 127.0.0.1
n=$(grep -c '^own.e2e.test A$' "$DNSLOG")
own "the same name again" own.e2e.test "$MPORT" 127.0.0.1
expect_eq "... the name was pinned (not asked again)" "$n" "$(grep -c '^own.e2e.test A$' "$DNSLOG")"
expect_eq "a name pinned by a tunnel to another port" 200 \
    "$(py tunnel connect "$S" pinned.e2e.test "$ECHO")"
n=$(grep -c '^pinned.e2e.test A$' "$DNSLOG")
own "... is refused on the listener's port" pinned.e2e.test "$MPORT" 127.0.0.1
expect_eq "... where only its pin was used" "$n" "$(grep -c '^pinned.e2e.test A$' "$DNSLOG")"
wait_log "reason=private-address" || true
expect_match "the refusal is logged with the listener as the range" \
    "why=\"127.0.0.1 is in metrics-listen" "$(grep 'reason=private-address' "$WORK/egressd.err" | head -n 1)"
stop_egressd "127.0.0.1"

# --- metrics-listen 0.0.0.0:P: every address of this host ------------------------------------
if [ "$E2E_ISOLATED" = 1 ] && command -v ip >/dev/null 2>&1; then
	start 0.0.0.0 127.0.0.1
	own "wildcard: 127.0.0.1" 127.0.0.1 "$MPORT" 127.0.0.1
	own "wildcard: another loopback address" 127.0.0.9 "$MPORT" 127.0.0.9
	own "wildcard: ::ffff:127.0.0.1" ::ffff:127.0.0.1 "$MPORT" ::ffff:127.0.0.1
	expect_eq "wildcard: 11.22.33.44 is not this host's yet: nothing listens there" \
	    "502 connect-refused closed" "$(connect 11.22.33.44 "$MPORT")"
	ip addr add 11.22.33.44/32 dev lo
	wait_tcp "$MPORT" 11.22.33.44 || echo "# 11.22.33.44 does not reach the listener"
	own "wildcard: an address added to lo after start" 11.22.33.44 "$MPORT" 11.22.33.44
	own "wildcard: a name resolving to it" lo2.e2e.test "$MPORT" 11.22.33.44
	expect_eq "wildcard: the same address on another port works" "502 connect-refused closed" \
	    "$(connect 11.22.33.44 "$(freeport)")"
	stop_egressd "0.0.0.0"

	# libevent resolves the listener with AI_ADDRCONFIG: [::] needs an IPv6 address
	# besides ::1 on some interface, as a host with IPv6 has.
	ip addr add fd00:e2e::1/128 dev lo nodad
	start "[::]" ::1
	own "[::] wildcard: ::1" ::1 "$MPORT" ::1
	own "[::] wildcard: 127.0.0.1 (dual-stack)" 127.0.0.1 "$MPORT" 127.0.0.1
	own "[::] wildcard: 11.22.33.44" 11.22.33.44 "$MPORT" 11.22.33.44
	own "[::] wildcard: the host's IPv6 address" fd00:e2e::1 "$MPORT" fd00:e2e::1
	stop_egressd "[::]"
else
	skip "wildcard metrics-listen" "adds an address to lo: runs only in a network namespace (root, ip)"
fi

check_receipts ownaddr
finish
