#!/bin/sh
# egressd end to end: every refusal a request can provoke, on each frontend, with exact
# bytes (HTTP status + Egress-Reason + Connection: close + close; SOCKS5 REP; SOCKS4 CD)
# and the deny receipt it leaves: not-allowlisted, denied-by-rule, malformed-request
# (bad request line, obs-fold, bare CR, space before colon, duplicate Host, no Host in
# HTTP/1.1, CONNECT without port, 431 past 100 header lines or 16 KiB, SOCKS5 RSV, empty
# name, no acceptable method, undefined ATYP), unsupported (BIND, UDP ASSOCIATE, origin-
# form), the request target deciding rather than Host, private-address for a principal
# without permit-range (loopback literal and loopback answer; nothing connects),
# connect-refused, connect-timeout (a loopback listener with a full accept queue), the
# next address family after a refusal or 250 ms (RFC 8305), handshake-timeout, peer-uid.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo --conn-log "$WORK/echo.conns"
ECHO=$PORT
: > echo.conns
DEAD=$(freeport)                       # nothing listens there
cat > zone <<EOF
ok.e2e.test    A 127.0.0.1
evil.e2e.test  A 127.0.0.1
he.e2e.test    AAAA ::1
he.e2e.test    A 127.0.0.1
EOF
dns_start zone

cat > open.policy <<EOF
allow *.e2e.test 1024-65535
allow 127.0.0.1 1024-65535
deny evil.e2e.test
permit-range 127.0.0.0/8
permit-range ::1/128
EOF
cat > strict.policy <<EOF
allow *.e2e.test 1024-65535
allow 127.0.0.1 1024-65535
EOF
{ cat open.policy; echo "timeout handshake 1s"; } > hs.policy
{ cat open.policy; echo "timeout connect 1s"; } > ct.policy
conf_begin
principal open open.policy
principal strict strict.policy
principal hs hs.policy
principal ct ct.policy
principal peer open.policy owner 12345:12345 peer-uid 12345
egressd_start
OPEN=$RUN/open.sock

conns() { wc -l < echo.conns | tr -d ' '; }
# rebase N: N allowed connections were made since the last base; waits until the upstream
# has logged them (it logs on accept, which may come after the client is done), then
# counts from there. The checks that nothing else reached the upstream compare with it.
base=0
_conns_at_least() { [ "$(conns)" -ge "$1" ]; }
rebase() {
	wait_until _conns_at_least $((base + $1)) ||
	    echo "# the upstream logged $(conns) connections, expected $((base + $1))"
	base=$(conns)
}
# http_case WHAT DATA EXPECTED RECEIPT: a raw HTTP request, its verdict and its receipt.
http_case() {
	_what=$1 _data=$2 _want=$3 _rc=$4
	_m=$(rcpt_mark)
	expect_eq "$_what: answer" "$_want" "$(py raw "${SOCK:-$OPEN}" --http --data "$_data")"
	expect_eq "$_what: receipt" "$_rc" "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend,host,port)"
}
# socks_case WHAT PROTO HOST PORT EXPECTED RECEIPT [tunnel args]
socks_case() {
	_what=$1 _proto=$2 _h=$3 _p=$4 _want=$5 _rc=$6
	shift 6
	_m=$(rcpt_mark)
	expect_eq "$_what: reply" "$_want" "$(py tunnel "$_proto" "${SOCK:-$OPEN}" "$_h" "$_p" "$@")"
	expect_eq "$_what: receipt" "$_rc" "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend,host,port)"
}

# --- a baseline: allowed ------------------------------------------------------------
expect_eq "allowed baseline through SOCKS5" "00
echo-ok" "$(py tunnel socks5 "$OPEN" ok.e2e.test "$ECHO" --mode echo)"
expect_eq "HTTP/1.0 CONNECT without Host is accepted" "200 - open" \
    "$(py raw "$OPEN" --http --timeout 10 --until-len 39 --data "CONNECT ok.e2e.test:$ECHO HTTP/1.0\r\n\r\n")"
rebase 2

# --- not-allowlisted ------------------------------------------------------------------
http_case "not-allowlisted CONNECT" "CONNECT nope.example.org:443 HTTP/1.1\r\nHost: nope.example.org:443\r\n\r\n" \
    "403 not-allowlisted closed" "deny not-allowlisted http-connect nope.example.org 443"
http_case "not-allowlisted forward" "GET http://nope.example.org/x HTTP/1.1\r\nHost: nope.example.org\r\n\r\n" \
    "403 not-allowlisted closed" "deny not-allowlisted http-forward nope.example.org 80"
http_case "allowed name on a port no rule allows" "CONNECT ok.e2e.test:80 HTTP/1.1\r\nHost: ok.e2e.test:80\r\n\r\n" \
    "403 not-allowlisted closed" "deny not-allowlisted http-connect ok.e2e.test 80"
socks_case "not-allowlisted SOCKS5" socks5 nope.example.org 443 "02 closed" \
    "deny not-allowlisted socks5 nope.example.org 443"
socks_case "not-allowlisted SOCKS4a" socks4a nope.example.org 443 "91 closed" \
    "deny not-allowlisted socks4 nope.example.org 443"
socks_case "not-allowlisted SOCKS4 address" socks4 127.0.0.3 443 "91 closed" \
    "deny not-allowlisted socks4 127.0.0.3 443"
expect_eq "not-allowlisted names are never resolved" "" "$(grep nope "$DNSLOG")"
body=$(py raw "$OPEN" --http --body --data "CONNECT nope.example.org:443 HTTP/1.1\r\nHost: nope.example.org:443\r\n\r\n" | sed -n 2p)
expect_eq "an error body names the reason" "not-allowlisted" "$body"
resp=$(py raw "$OPEN" --data "CONNECT nope.example.org:443 HTTP/1.1\r\nHost: nope.example.org:443\r\n\r\n")
expect_match "an error response carries Connection: close" \
    "$(printf 'Connection: close\r\n' | od -An -tx1 | tr -d ' \n')" "$resp"

# --- denied-by-rule -------------------------------------------------------------------
http_case "denied-by-rule CONNECT" "CONNECT evil.e2e.test:$ECHO HTTP/1.1\r\nHost: evil.e2e.test:$ECHO\r\n\r\n" \
    "403 denied-by-rule closed" "deny denied-by-rule http-connect evil.e2e.test $ECHO"
http_case "denied-by-rule forward" "GET http://EVIL.e2e.test.:$ECHO/ HTTP/1.1\r\nHost: EVIL.e2e.test.:$ECHO\r\n\r\n" \
    "403 denied-by-rule closed" "deny denied-by-rule http-forward evil.e2e.test $ECHO"
socks_case "denied-by-rule SOCKS5" socks5 evil.e2e.test "$ECHO" "02 closed" \
    "deny denied-by-rule socks5 evil.e2e.test $ECHO"
socks_case "denied-by-rule SOCKS4a" socks4a evil.e2e.test "$ECHO" "91 closed" \
    "deny denied-by-rule socks4 evil.e2e.test $ECHO"

# --- malformed-request ------------------------------------------------------------------
C="CONNECT ok.e2e.test:$ECHO HTTP/1.1"
for case in \
    "request line without version|CONNECT ok.e2e.test:$ECHO\r\n\r\n" \
    "request line with two spaces|CONNECT  ok.e2e.test:$ECHO HTTP/1.1\r\n\r\n" \
    "obs-fold|$C\r\nX-A: a\r\n folded\r\n\r\n" \
    "bare CR in a header|$C\r\nX-A: a\rb\r\n\r\n" \
    "space before the colon|$C\r\nX-A : a\r\n\r\n" \
    "duplicate Host|$C\r\nHost: ok.e2e.test:$ECHO\r\nHost: evil.e2e.test:$ECHO\r\n\r\n" \
    "duplicate Host on a forward|GET http://ok.e2e.test:$ECHO/ HTTP/1.1\r\nHost: a.e2e.test\r\nhost: b.e2e.test\r\n\r\n" \
    "CONNECT without port|CONNECT ok.e2e.test HTTP/1.1\r\nHost: ok.e2e.test\r\n\r\n" \
    "CONNECT with an empty port|CONNECT ok.e2e.test: HTTP/1.1\r\nHost: ok.e2e.test\r\n\r\n" \
    "HTTP/1.1 without Host|CONNECT ok.e2e.test:$ECHO HTTP/1.1\r\n\r\n"; do
	what=${case%%|*}
	m=$(rcpt_mark)
	expect_eq "malformed ($what): 400" "400 malformed-request closed" \
	    "$(py raw "$OPEN" --http --data "${case#*|}")"
	expect_eq "malformed ($what): receipt" "deny malformed-request" \
	    "$(rcpt --skip "$m" --wait 10 --fields event,reason)"
done
hdrs=$("$E2E_PY" -c 'print("".join("X-H%d: v\\r\\n" % i for i in range(100)), end="")')
m=$(rcpt_mark)
expect_eq "101 header lines: 431" "431 malformed-request closed" \
    "$(py raw "$OPEN" --http --data "$C\r\nHost: ok.e2e.test:$ECHO\r\n$hdrs\r\n")"
expect_eq "101 header lines: receipt" "deny malformed-request" "$(rcpt --skip "$m" --wait 10 --fields event,reason)"
expect_eq "100 header lines are fine" "200 - open" \
    "$(py raw "$OPEN" --http --timeout 10 --until-len 39 --data "$C\r\n$("$E2E_PY" -c 'print("".join("X-H%d: v\\r\\n" % i for i in range(99)), end="")')Host: ok.e2e.test:$ECHO\r\n\r\n")"
rebase 1
big=$("$E2E_PY" -c 'print("X-Big: " + "b" * 16400 + "\\r\\n", end="")')
expect_eq "a request head over 16 KiB: 431" "431 malformed-request closed" \
    "$(py raw "$OPEN" --http --data "$C\r\nHost: ok.e2e.test:$ECHO\r\n$big\r\n")"
expect_eq "CONNECT with userinfo: 400" 1 \
    "$(py raw "$OPEN" --http --data "CONNECT user@ok.e2e.test:$ECHO HTTP/1.1\r\nHost: ok.e2e.test:$ECHO\r\n\r\n" |
      grep -Eq '^400 (malformed-request|bad-host) closed$' && echo 1)"
m=$(rcpt_mark)
expect_eq "SOCKS5 RSV != 0: REP 01" "01 closed" \
    "$(py tunnel socks5 "$OPEN" ok.e2e.test "$ECHO" --rsv 1)"
expect_eq "SOCKS5 RSV != 0: receipt" "deny malformed-request socks5" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend)"
m=$(rcpt_mark)
expect_eq "SOCKS5 ATYP 3 with length 0: REP 01" "050005010001000000000000 closed" \
    "$(py raw "$OPEN" --hex 05010005010003000050)"
expect_eq "SOCKS5 empty name: receipt" "deny malformed-request socks5" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend)"
expect_eq "SOCKS5 without an acceptable method: 05 FF, close" "05ff closed" "$(py raw "$OPEN" --hex 050101)"
expect_eq "SOCKS5 NMETHODS 0: 05 FF or close" 1 \
    "$(py raw "$OPEN" --hex 0500 | grep -Eq '^(05ff|none) closed$' && echo 1)"
m=$(rcpt_mark)
expect_eq "SOCKS5 ATYP 2 (undefined): REP 08" "050005080001000000000000 closed" \
    "$(py raw "$OPEN" --hex 05010005010002000000000050)"
expect_eq "SOCKS5 ATYP 2: receipt" "deny socks5" "$(rcpt --skip "$m" --wait 10 --fields event,frontend)"
expect_eq "SOCKS4 to 0.0.0.0 (not the 4a marker): CD 91" "91 closed" \
    "$(py tunnel socks4 "$OPEN" 0.0.0.0 "$ECHO")"
expect_eq "no malformed request reached the upstream" "$base" "$(conns)"

# --- the request target decides, never Host -------------------------------------------------
out=$(py raw "$OPEN" --http --timeout 10 --until-len 39 --data "CONNECT ok.e2e.test:$ECHO HTTP/1.1\r\nHost: evil.e2e.test:$ECHO\r\n\r\n")
expect_eq "CONNECT to an allowed target with a denied Host: target decides (200) or 400" 1 \
    "$(echo "$out" | grep -Eq '^(200 - open|400 malformed-request closed)$' && echo 1)"
case $out in 200*) rebase 1 ;; *) rebase 0 ;; esac
http_case "CONNECT to a denied target with an allowed Host" \
    "CONNECT evil.e2e.test:$ECHO HTTP/1.1\r\nHost: ok.e2e.test:$ECHO\r\n\r\n" \
    "403 denied-by-rule closed" "deny denied-by-rule http-connect evil.e2e.test $ECHO"
http_case "a wildcard never allows its apex" "CONNECT e2e.test:$ECHO HTTP/1.1\r\nHost: e2e.test:$ECHO\r\n\r\n" \
    "403 not-allowlisted closed" "deny not-allowlisted http-connect e2e.test $ECHO"

# --- unsupported ------------------------------------------------------------------------
socks_case "SOCKS5 BIND" socks5 ok.e2e.test "$ECHO" "07 closed" "deny unsupported socks5 - -" --cmd 2
socks_case "SOCKS5 UDP ASSOCIATE" socks5 0.0.0.0 0 "07 closed" "deny unsupported socks5 - -" --cmd 3
m=$(rcpt_mark)
out=$(py tunnel socks4a "$OPEN" ok.e2e.test "$ECHO" --cmd 2)
expect_eq "SOCKS4 BIND: CD 91" "91 closed" "$out"
expect_eq "SOCKS4 BIND: receipt" "deny unsupported socks4" "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend)"
m=$(rcpt_mark)
expect_eq "origin-form GET: 405" "405 unsupported closed" \
    "$(py raw "$OPEN" --http --data "GET /index.html HTTP/1.1\r\nHost: ok.e2e.test:$ECHO\r\n\r\n")"
expect_eq "origin-form GET: receipt" "deny unsupported" "$(rcpt --skip "$m" --wait 10 --fields event,reason)"
expect_match "a 405 says Allow" "$(printf 'Allow: CONNECT\r\n' | od -An -tx1 | tr -d ' \n')" \
    "$(py raw "$OPEN" --data "GET /index.html HTTP/1.1\r\nHost: ok.e2e.test\r\n\r\n")"
expect_eq "nothing unsupported reached the upstream" "$base" "$(conns)"

# --- private-address: a principal without permit-range -----------------------------------
SOCK=$RUN/strict.sock
http_case "strict: loopback literal by CONNECT" "CONNECT 127.0.0.1:$ECHO HTTP/1.1\r\nHost: 127.0.0.1:$ECHO\r\n\r\n" \
    "403 private-address closed" "deny private-address http-connect 127.0.0.1 $ECHO"
http_case "strict: loopback answer by CONNECT" "CONNECT ok.e2e.test:$ECHO HTTP/1.1\r\nHost: ok.e2e.test:$ECHO\r\n\r\n" \
    "403 private-address closed" "deny private-address http-connect ok.e2e.test $ECHO"
http_case "strict: loopback answer by forward" "GET http://ok.e2e.test:$ECHO/ HTTP/1.1\r\nHost: ok.e2e.test:$ECHO\r\n\r\n" \
    "403 private-address closed" "deny private-address http-forward ok.e2e.test $ECHO"
socks_case "strict: loopback literal by SOCKS5" socks5 127.0.0.1 "$ECHO" "02 closed" \
    "deny private-address socks5 127.0.0.1 $ECHO"
socks_case "strict: loopback answer by SOCKS5" socks5 ok.e2e.test "$ECHO" "02 closed" \
    "deny private-address socks5 ok.e2e.test $ECHO"
socks_case "strict: loopback literal by SOCKS4" socks4 127.0.0.1 "$ECHO" "91 closed" \
    "deny private-address socks4 127.0.0.1 $ECHO"
socks_case "strict: loopback answer by SOCKS4a" socks4a ok.e2e.test "$ECHO" "91 closed" \
    "deny private-address socks4 ok.e2e.test $ECHO"
expect_eq "strict: the receipt names the refused address" "127.0.0.1" \
    "$(rcpt --where principal=strict --where host=ok.e2e.test --fields addr)"
expect_eq "strict: nothing connected to the listening loopback upstream" "$base" "$(conns)"
unset SOCK

# --- connect-refused ---------------------------------------------------------------------
http_case "connect-refused CONNECT" "CONNECT ok.e2e.test:$DEAD HTTP/1.1\r\nHost: ok.e2e.test:$DEAD\r\n\r\n" \
    "502 connect-refused closed" "deny connect-refused http-connect ok.e2e.test $DEAD"
http_case "connect-refused forward" "GET http://ok.e2e.test:$DEAD/ HTTP/1.1\r\nHost: ok.e2e.test:$DEAD\r\n\r\n" \
    "502 connect-refused closed" "deny connect-refused http-forward ok.e2e.test $DEAD"
socks_case "connect-refused SOCKS5" socks5 ok.e2e.test "$DEAD" "05 closed" \
    "deny connect-refused socks5 ok.e2e.test $DEAD"
socks_case "connect-refused SOCKS4" socks4 127.0.0.1 "$DEAD" "91 closed" \
    "deny connect-refused socks4 127.0.0.1 $DEAD"

# --- connect-timeout: a loopback listener whose accept queue is full drops the SYN ------
spawn backlog0 "$E2E_PY" "$HELPER" backlog0 --port-file "$WORK/full.port"
wait_for -s "$WORK/full.port"
FULL=$(cat "$WORK/full.port")
SOCK=$RUN/ct.sock
m=$(rcpt_mark)
out=$(py raw "$SOCK" --http --elapsed --data "CONNECT ok.e2e.test:$FULL HTTP/1.1\r\nHost: ok.e2e.test:$FULL\r\n\r\n")
if [ "$(echo "$out" | head -n 1)" = "504 connect-timeout closed" ]; then
	ok "connect-timeout CONNECT: 504"
	expect_match "connect-timeout after about timeout connect (1s)" "^elapsed (0\.9|[123]\.)" \
	    "$(echo "$out" | sed -n 2p)"
	expect_eq "connect-timeout: receipt" "deny connect-timeout http-connect ok.e2e.test $FULL" \
	    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
	socks_case "connect-timeout SOCKS5" socks5 ok.e2e.test "$FULL" "06 closed" \
	    "deny connect-timeout socks5 ok.e2e.test $FULL"
	socks_case "connect-timeout SOCKS4a" socks4a ok.e2e.test "$FULL" "91 closed" \
	    "deny connect-timeout socks4 ok.e2e.test $FULL"
elif echo "$out" | grep -q "^200 "; then
	skip "connect-timeout" "this kernel completed a connection to a full accept queue"
else
	not_ok "connect-timeout CONNECT: 504"
	echo "  got: $out"
fi
unset SOCK

# --- several pinned addresses: IPv6 first, the next family after a refusal or 250 ms ------
m=$(rcpt_mark)
expect_eq "AAAA refused, A listening: the A answer is used" "00
echo-ok" "$(py tunnel socks5 "$OPEN" he.e2e.test "$ECHO" --mode echo)"
expect_eq "... and the receipt names it" "open 127.0.0.1" "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,addr)"
start_server echo2 echo
ECHO2=$PORT
spawn backlog6 "$E2E_PY" "$HELPER" backlog0 --addr ::1 --port "$ECHO2" --port-file "$WORK/full6.port"
if wait_for -s "$WORK/full6.port"; then
	m=$(rcpt_mark)
	t0=$(date +%s%N)
	out=$(py tunnel connect "$OPEN" he.e2e.test "$ECHO2" --mode echo)
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "# AAAA silent, A listening: tunnel after ${ms} ms"
	expect_eq "AAAA silent, A listening: the A answer is tried without waiting for timeout connect" "200
echo-ok" "$out"
	expect_eq "... quickly (well under timeout connect, 10 s)" 1 "$([ "$ms" -lt 4000 ] && echo 1)"
	expect_eq "... and the receipt names the A answer" "open 127.0.0.1" \
	    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,addr)"
else
	skip "AAAA silent, A listening" "could not listen on [::1]:$ECHO2"
fi

# --- handshake-timeout (timeout handshake 1s) -----------------------------------------------
SOCK=$RUN/hs.sock
m=$(rcpt_mark)
out=$(py raw "$SOCK" --http --elapsed --data "CONNECT ok.e2e.test:$ECHO HTTP/1.1\r\nHost: ok")
expect_eq "half an HTTP request: 408" "408 handshake-timeout closed" "$(echo "$out" | head -n 1)"
expect_match "408 after about timeout handshake (1s)" "^elapsed (0\.9|[123]\.)" "$(echo "$out" | sed -n 2p)"
expect_eq "half an HTTP request: receipt" "deny handshake-timeout" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason)"
m=$(rcpt_mark)
expect_eq "SOCKS5 greeting only: answered, then closed without a reply" "0500 closed" \
    "$(py raw "$SOCK" --hex 050100)"
expect_eq "SOCKS5 greeting only: receipt" "deny handshake-timeout socks5" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend)"
m=$(rcpt_mark)
expect_eq "half a SOCKS4a request: closed without a reply" "none closed" \
    "$(py raw "$SOCK" --hex 0401005000000001653265)"
expect_eq "half a SOCKS4a request: receipt" "deny handshake-timeout socks4" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend)"
m=$(rcpt_mark)
expect_match "silence: closed (at most with a 408)" "^(none|408 handshake-timeout) - closed$|^(none|408 handshake-timeout) closed$" \
    "$(py raw "$SOCK" --http --data "")"
expect_eq "silence: receipt" "deny handshake-timeout" "$(rcpt --skip "$m" --wait 10 --fields event,reason)"
unset SOCK

# --- peer-uid ----------------------------------------------------------------------------------
expect_eq "peer-uid principal socket: owner and mode" "12345:12345 600" \
    "$(stat -c '%u:%g %a' "$RUN/peer.sock")"
m=$(rcpt_mark)
expect_eq "peer-uid: root is refused by closing" "none closed" \
    "$(py raw "$RUN/peer.sock" --hex 050100)"
expect_eq "peer-uid: receipt" "deny peer-uid peer" "$(rcpt --skip "$m" --wait 10 --fields event,reason,principal)"
expect_eq "peer-uid: the right uid gets through" "00
echo-ok" "$(py tunnel socks5 "$RUN/peer.sock" ok.e2e.test "$ECHO" --uid 12345 --mode echo)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts reasons
finish
