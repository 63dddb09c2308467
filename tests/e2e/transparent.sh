#!/bin/sh
# egressd end to end: the native connector's transparent verb (EGR1 verb 2, docs/native.md),
# what egress-relay's transparent listener sends for a connection the workload made to an
# address directly. The same decision as a native connect: a synthetic address this
# principal was given is its name again (rules, resolution, SNI guard on the name, receipt
# host the name, addr the real one); one never given is bad-host; another port is refused.
# Only the receipts' frontend differs: transparent.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'ok.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow ok.e2e.test %s\npermit-range 127.0.0.0/8\n' "$ECHO" > a.policy
conf_begin
principal a a.policy
principal b a.policy
egressd_start
A=$RUN/a.sock
B=$RUN/b.sock

SYN=$(py dnsq "$A" A ok.e2e.test | awk '{ print $5 }')
expect_match "the name has a synthetic address" '^198\.1[89]\.[0-9]+\.[0-9]+$' "$SYN"

m=$(rcpt_mark)
expect_eq "transparent connect to the synthetic address reaches the upstream" "0
echo-ok" "$(py tunnel transparent "$A" "$SYN" "$ECHO" --mode echo --size 100)"
expect_eq "... receipt: frontend transparent, host the name, addr the real one" \
    "open transparent ok.e2e.test $ECHO 127.0.0.1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,frontend,host,port,addr)"
expect_eq "... and its close" "close transparent ok.e2e.test client-eof" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,frontend,host,close)"

m=$(rcpt_mark)
expect_match "another port of the name is refused" '^-1001 closed' \
    "$(py tunnel transparent "$A" "$SYN" 9 --mode none)"
expect_eq "... receipt names the name, frontend transparent" \
    "deny transparent ok.e2e.test 9 not-allowlisted" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,port,reason)"

m=$(rcpt_mark)
NEVER=198.18.200.9
[ "$NEVER" = "$SYN" ] && NEVER=198.18.200.10
expect_match "a synthetic address never given is bad-host" '^-1004 closed' \
    "$(py tunnel transparent "$A" "$NEVER" "$ECHO" --mode none)"
expect_eq "... deny receipt with the address as host" \
    "deny transparent $NEVER bad-host" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,reason)"
expect_match "another principal's synthetic address is bad-host" '^-1004 closed' \
    "$(py tunnel transparent "$B" "$SYN" "$ECHO" --mode none)"

expect_match "a literal the policy does not name is refused" '^-1001 closed' \
    "$(py tunnel transparent "$A" 127.0.0.1 "$ECHO" --mode none)"

# --- egress-relay's transparent listener ----------------------------------------------
# The sandbox's set-up (docs/sandbox.md), made here in the test's own network namespace:
# the synthetic range is local, and nft redirects TCP to it to the relay's transparent
# listener. A client then connects to the address directly, with no proxy at all.
if [ "$E2E_ISOLATED" != 1 ] || ! command -v nft >/dev/null 2>&1; then
	echo "# SKIP relay part: needs an isolated network namespace and nft"
	finish
fi
RELAY="$top_builddir/egress-relay"
RPORT=$(freeport)
TPORT=$(freeport)
ip route add local 198.18.0.0/15 dev lo
printf 'table ip egress_test {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ip daddr 198.18.0.0/15 meta l4proto tcp redirect to :%s\n }\n}\n' \
    "$TPORT" | nft -f -
spawn relayt "$RELAY" --listen "127.0.0.1:$RPORT" --transparent "127.0.0.1:$TPORT" \
    --egress "$A" --verbose
if ! wait_tcp "$TPORT"; then
	echo "Bail out! egress-relay did not listen: $(cat "$WORK/relayt.err")"
	exit 99
fi
# direct ADDR PORT: a plain TCP client, no proxy; prints the echo or the connection's fate.
direct() {
	env -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy -u HTTP_PROXY -u http_proxy \
	    "$E2E_PY" -c '
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
    s.sendall(b"hello through the relay")
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
    print(got.decode() if got else "eof")
except ConnectionResetError:
    print("reset")
except OSError as e:
    print("error", e.errno)
' "$1" "$2"
}
m=$(rcpt_mark)
expect_eq "a direct connect to the synthetic address is relayed, bytes both ways" \
    "hello through the relay" "$(direct "$SYN" "$ECHO")"
expect_eq "... receipt: frontend transparent, host the name, addr the real one" \
    "open transparent ok.e2e.test $ECHO 127.0.0.1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,frontend,host,port,addr)"
m=$(rcpt_mark)
expect_match "another port: the client's connection is reset" '^(reset|error 107)$' "$(direct "$SYN" 9)"
expect_eq "... deny receipt, transparent, the name" "deny transparent ok.e2e.test 9 not-allowlisted" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,port,reason)"
m=$(rcpt_mark)
# Reset by the relay once egressd refused: the client sees it on its read, or as ENOTCONN
# (107) on its shutdown() when the reset came first (seen under a full suite's load).
expect_match "a synthetic address never given: reset" '^(reset|error 107)$' \
    "$(direct "$NEVER" "$ECHO")"
expect_eq "... deny receipt bad-host" "deny transparent $NEVER bad-host" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,reason)"
# Closed at once: the client sees EOF, a reset, or ENOTCONN (107) when the reset came
# before its own shutdown().
expect_match "a connection made to the transparent listener itself is closed unanswered" \
    '^(eof|reset|error 107)$' "$(direct 127.0.0.1 "$TPORT")"
expect_match "... the relay says why (no original destination)" 'no original destination' \
    "$(cat "$WORK/relayt.err")"

finish
