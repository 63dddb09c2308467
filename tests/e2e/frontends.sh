#!/bin/sh
# egressd end to end: the frontends with real clients. curl through HTTP CONNECT (https to
# openssl s_server, proxytunnel to http, HTTP/1.0, IPv6 literal), absolute-form GET and
# POST (Content-Length and chunked bodies, also sent in pieces and a byte per write with a
# smuggled request behind them, exactly one request forwarded, a broken chunked body closing
# the forward, hop-by-hop and Proxy-* headers removed), SOCKS5 (TCP bridge and curl's unix-socket form, RFC 1929
# credentials), SOCKS4a and SOCKS4; requests split byte by byte or coalesced with their
# payload; and the receipt of each.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need curl socat openssl
cd "$WORK" || exit 1

# --- upstreams, DNS, egressd ----------------------------------------------------------
start_server web http --name web --log "$WORK/web.log"
WEB=$PORT
start_server web6 http --addr ::1 --name web6 --log "$WORK/web6.log"
WEB6=$PORT
start_server echo echo --conn-log "$WORK/echo.conns"
ECHO=$PORT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout tls.key -out tls.crt -subj /CN=tls.e2e.test \
    -addext subjectAltName=DNS:tls.e2e.test >/dev/null 2>&1
TLS=$(freeport)
spawn s_server openssl s_server -accept "127.0.0.1:$TLS" -cert tls.crt -key tls.key -www -quiet
wait_tcp "$TLS" || { echo "Bail out! openssl s_server did not start"; exit 99; }

cat > zone <<EOF
web.e2e.test   A    127.0.0.1
tls.e2e.test   A    127.0.0.1
echo.e2e.test  A    127.0.0.1
v6.e2e.test    AAAA ::1
EOF
dns_start zone

cat > open.policy <<EOF
allow *.e2e.test 1024-65535
allow 127.0.0.1 1024-65535
allow ::1 1024-65535
permit-range 127.0.0.0/8
permit-range ::1/128
EOF
conf_begin
principal front open.policy
egressd_start
SOCK=$RUN/front.sock
bridge "$SOCK"
PROXY=127.0.0.1:$BRIDGE_PORT
CURL="curl -sS --max-time 10"

# --- HTTP CONNECT ----------------------------------------------------------------------
m=$(rcpt_mark)
out=$($CURL -p -x "http://$PROXY" --cacert tls.crt -D h.txt "https://tls.e2e.test:$TLS/" 2>err)
expect_eq "curl https through CONNECT exits 0" 0 $?
expect_match "s_server answered through the tunnel" "s_server" "$out"
expect_eq "CONNECT answer is 200" 200 "$(head_status h.txt)"
expect_eq "open receipt of the https tunnel" "open allowed http-connect tls.e2e.test $TLS 127.0.0.1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,reason,frontend,host,port,addr)"
expect_eq "close receipt of the https tunnel" "close allowed http-connect tls.e2e.test $TLS" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,frontend,host,port)"

: > web.log
out=$($CURL -p -x "http://$PROXY" "http://web.e2e.test:$WEB/tunnelled?x=1")
expect_eq "proxytunnel to http: upstream answers" "web GET /tunnelled?x=1 0" "$out"
# The upstream logs a request when its connection has ended, which may be after curl is done.
wait_for -s web.log
expect_eq "inside a tunnel the request is the client's own" "/tunnelled?x=1" \
    "$(tail -n 1 web.log | py_field target)"

out=$($CURL --proxy1.0 "$PROXY" -p "http://web.e2e.test:$WEB/ten")
expect_eq "HTTP/1.0 CONNECT works" "web GET /ten 0" "$out"

m=$(rcpt_mark)
out=$($CURL -p -x "http://$PROXY" "http://[::1]:$WEB6/v6literal")
expect_eq "CONNECT to a bracketed IPv6 literal" "web6 GET /v6literal 0" "$out"
expect_eq "its receipt names the canonical literal" "open allowed http-connect ::1 $WEB6 ::1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,reason,frontend,host,port,addr)"
out=$($CURL -p -x "http://$PROXY" "http://v6.e2e.test:$WEB6/v6name")
expect_eq "CONNECT to a name with only an AAAA answer" "web6 GET /v6name 0" "$out"

# Early payload: bytes sent right after the CONNECT head are tunnel data. (Up to 10 s for the
# 50 bytes of answer and echo to arrive, then 1 s more in which the tunnel must stay open.)
out=$(py raw "$SOCK" --data "CONNECT echo.e2e.test:$ECHO HTTP/1.1\r\nHost: echo.e2e.test:$ECHO\r\n\r\nearly-bytes" \
    --timeout 10 --until-len 50)
expect_eq "payload coalesced with the CONNECT head reaches the upstream" \
    "$(printf 'HTTP/1.1 200 Connection established\r\n\r\nearly-bytes' | od -An -tx1 | tr -d ' \n') open" "$out"

out=$(py tunnel connect "$SOCK" echo.e2e.test "$ECHO" --split --mode echo --size 5000)
expect_eq "CONNECT head split byte by byte" "200
echo-ok" "$out"

# --- absolute-form forwarding ------------------------------------------------------------
m=$(rcpt_mark)
lm=$(log_mark)
: > web.log
out=$($CURL -x "http://$PROXY" --proxy-user 'e2euser:s3cret-proxy-pw' -H 'X-Test: kept' \
    -H 'Keep-Alive: timeout=5' -H 'Connection: keep-alive, X-Drop' -H 'X-Drop: gone' \
    -D h.txt "http://web.e2e.test:$WEB/path/a?q=1")
expect_eq "absolute-form GET answered by the upstream" "web GET /path/a?q=1 0" "$out"
expect_eq "the upstream's status reaches the client" 200 "$(head_status h.txt)"
wait_for -s web.log
rec=$(tail -n 1 web.log)
expect_eq "forwarded in origin form" "/path/a?q=1" "$(echo "$rec" | py_field target)"
expect_eq "Host is the target" "web.e2e.test:$WEB" "$(echo "$rec" | py_header host)"
expect_eq "Connection: close towards the upstream" "close" "$(echo "$rec" | py_header connection)"
expect_eq "Proxy-Authorization is not forwarded" "" "$(echo "$rec" | py_header proxy-authorization)"
expect_eq "Proxy-Connection is not forwarded" "" "$(echo "$rec" | py_header proxy-connection)"
expect_eq "Keep-Alive is not forwarded" "" "$(echo "$rec" | py_header keep-alive)"
expect_eq "a header named in Connection is not forwarded" "" "$(echo "$rec" | py_header x-drop)"
expect_eq "an end-to-end header is forwarded" "kept" "$(echo "$rec" | py_header x-test)"
expect_eq "exactly one request, nothing after it" 0 "$(echo "$rec" | py_field extra)"
expect_eq "open receipt of the forward" "open allowed http-forward web.e2e.test $WEB" \
    "$(rcpt --skip "$m" --where event=open)"
# Log lines wait up to LOG_HOLD_MS before they are written (common/log.h): the forward's
# own line first, then nothing in the log may hold the password.
wait_log "event=open principal=front .*frontend=http-forward host=web.e2e.test" "$lm" || true
expect_eq "the proxy password is never logged" "" "$(grep -l 's3cret-proxy-pw' egressd.err "$RCPT")"

out=$($CURL -x "http://$PROXY" "http://web.e2e.test:$WEB")
expect_eq "an empty path is forwarded as /" "web GET / 0" "$out"

head -c 300000 /dev/urandom > body.bin
sum=$(sha256sum body.bin | cut -d' ' -f1)
: > web.log
out=$($CURL -x "http://$PROXY" -H 'Expect:' --data-binary @body.bin "http://web.e2e.test:$WEB/post-length")
expect_eq "POST with Content-Length answered" "web POST /post-length 300000" "$out"
wait_for -s web.log
rec=$(tail -n 1 web.log)
expect_eq "Content-Length body arrives intact" "length 300000 $sum 0" \
    "$(echo "$rec" | py_field framing body_len body_sha256 extra)"
expect_eq "one request for one POST" 1 "$(wc -l < web.log | tr -d ' ')"

: > web.log
out=$($CURL -x "http://$PROXY" -H 'Expect:' -H 'Transfer-Encoding: chunked' --data-binary @body.bin \
    "http://web.e2e.test:$WEB/post-chunked")
expect_eq "chunked POST answered" "web POST /post-chunked 300000" "$out"
wait_for -s web.log
rec=$(tail -n 1 web.log)
expect_eq "chunked body arrives intact" "chunked 300000 $sum 0" \
    "$(echo "$rec" | py_field framing body_len body_sha256 extra)"

# A second request pipelined after the body is never forwarded.
: > web.log
out=$(py raw "$SOCK" --http --body --timeout 5 --data "POST http://web.e2e.test:$WEB/one HTTP/1.1\r\nHost: web.e2e.test:$WEB\r\nContent-Length: 5\r\n\r\nhelloGET http://web.e2e.test:$WEB/two HTTP/1.1\r\nHost: web.e2e.test:$WEB\r\n\r\n")
expect_eq "pipelined: the first request is answered and the connection closes" "200 - closed
web POST /one 5" "$out"
wait_for -s web.log
expect_eq "pipelined: the upstream saw one request with its body only" "/one 5 0" \
    "$(tail -n 1 web.log | py_field target body_len extra)"
expect_eq "pipelined: no second request reached the upstream" 1 "$(wc -l < web.log | tr -d ' ')"

: > web.log
out=$(py raw "$SOCK" --http --body --timeout 5 --data "POST http://web.e2e.test:$WEB/ch HTTP/1.1\r\nHost: web.e2e.test:$WEB\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: t\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n")
expect_eq "chunked with extension and trailer, then junk: one request" "200 - closed
web POST /ch 5" "$out"
wait_for -s web.log
expect_eq "chunked: the upstream got the body and nothing after it" \
    "5 $(printf abcde | sha256sum | cut -d' ' -f1) 0" "$(tail -n 1 web.log | py_field body_len body_sha256 extra)"

# A body that arrives over several reads ends where its framing says, and the request
# smuggled behind it never reaches the upstream. The first write is the head and the body's
# first bytes; the rest is sent only once egressd relays (its open receipt is written):
# in one write with the smuggled request (one-write); a byte per write, the last body byte
# in one write with the smuggled request (bytewise); or all of it a byte per write
# (all-bytewise).
SMUGGLED='GET /admin HTTP/1.1\r\nHost: admin.internal\r\n\r\n'
# smuggle NAME MODE HEAD+FIRST REST LAST: sets out (the client's verdict and body).
smuggle() {
	m=$(rcpt_mark)
	: > web.log
	rm -f "$1.go"
	case $2 in
	one-write) set -- "$1" "$3" "$4$5$SMUGGLED" ;;
	bytewise) set -- "$1" "$3" "$4" --split2 --data3 "$5$SMUGGLED" ;;
	all-bytewise) set -- "$1" "$3" "$4$5$SMUGGLED" --split2 ;;
	esac
	_n=$1
	_d=$2
	shift 2
	spawn "$_n" "$E2E_PY" "$HELPER" raw "$SOCK" --http --body --timeout 10 \
	    --go-file "$WORK/$_n.go" --data "$_d" --data2 "$@"
	_pid=$SPAWNED
	rcpt --skip "$m" --where event=open --wait 10 >/dev/null
	touch "$_n.go"
	wait "$_pid"
	out=$(cat "$_n.out")
	wait_for -s web.log
}
clhead="POST http://web.e2e.test:$WEB/cl HTTP/1.1\r\nHost: web.e2e.test:$WEB\r\nContent-Length: 11\r\n\r\n"
clsum=$(printf 'hello world' | sha256sum | cut -d' ' -f1)
chhead="POST http://web.e2e.test:$WEB/ch2 HTTP/1.1\r\nHost: web.e2e.test:$WEB\r\nTransfer-Encoding: chunked\r\n\r\n"
chsum=$(printf 'Wikipedia' | sha256sum | cut -d' ' -f1)
for mode in one-write bytewise all-bytewise; do
	smuggle "smug-cl-$mode" $mode "${clhead}he" "llo worl" "d"
	expect_eq "Content-Length body in pieces ($mode): answered, then closed" "200 - closed
web POST /cl 11" "$out"
	expect_eq "Content-Length body in pieces ($mode): the upstream got the body, no smuggled byte" \
	    "/cl 11 $clsum 0 " "$(tail -n 1 web.log | py_field target body_len body_sha256 extra extra_text)"
	expect_eq "Content-Length body in pieces ($mode): one request upstream" 1 "$(wc -l < web.log | tr -d ' ')"

	smuggle "smug-ch-$mode" $mode "${chhead}4\r\nWi" "ki\r\n5;e=1\r\npedia\r\n0\r\nX-Trailer: t\r\n\r" "\n"
	expect_eq "chunked body in pieces ($mode): answered, then closed" "200 - closed
web POST /ch2 9" "$out"
	expect_eq "chunked body in pieces ($mode): the upstream got the body, no smuggled byte" \
	    "/ch2 chunked 9 $chsum 0 " "$(tail -n 1 web.log | py_field target framing body_len body_sha256 extra extra_text)"
	expect_eq "chunked body in pieces ($mode): one request upstream" 1 "$(wc -l < web.log | tr -d ' ')"
done

# A chunked body whose framing breaks ends the forward: closed, nothing more upstream.
m=$(rcpt_mark)
: > web.log
out=$(py raw "$SOCK" --http --timeout 10 --data "${chhead}5\r\nhelloX\r\n0\r\n\r\n$SMUGGLED")
expect_eq "broken chunked framing: the connection closes without an answer" "none - closed" "$out"
expect_eq "broken chunked framing: close receipt says malformed-request" "close malformed-request http-forward" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,frontend)"
wait_for -s web.log
# (the head may not even have left egressd yet: it is cut with the body)
expect_match "broken chunked framing: the upstream never saw a complete request" "^eof in (head|body)$" \
    "$(tail -n 1 web.log | py_field error)"

# --- SOCKS ----------------------------------------------------------------------------------
m=$(rcpt_mark)
out=$($CURL --socks5-hostname "$PROXY" "http://web.e2e.test:$WEB/s5h")
expect_eq "curl --socks5-hostname" "web GET /s5h 0" "$out"
expect_eq "SOCKS5 receipt" "open allowed socks5 web.e2e.test $WEB" "$(rcpt --skip "$m" --where event=open)"
out=$($CURL -x "socks5h://localhost$SOCK" "http://web.e2e.test:$WEB/s5unix")
expect_eq "curl socks5h:// over the principal's unix socket" "web GET /s5unix 0" "$out"
out=$($CURL -x "socks5h://anyone:anything@$PROXY" "http://web.e2e.test:$WEB/s5auth")
expect_eq "SOCKS5 with RFC 1929 credentials (any accepted)" "web GET /s5auth 0" "$out"
out=$($CURL --socks5 "$PROXY" "http://127.0.0.1:$WEB/s5ip")
expect_eq "SOCKS5 with an IPv4 address (ATYP 1)" "web GET /s5ip 0" "$out"
out=$($CURL -x "socks5h://$PROXY" --cacert tls.crt "https://tls.e2e.test:$TLS/")
expect_match "https over SOCKS5" "s_server" "$out"

m=$(rcpt_mark)
out=$($CURL --socks4a "$PROXY" "http://web.e2e.test:$WEB/s4a")
expect_eq "curl --socks4a" "web GET /s4a 0" "$out"
expect_eq "SOCKS4a receipt" "open allowed socks4 web.e2e.test $WEB" "$(rcpt --skip "$m" --where event=open)"
m=$(rcpt_mark)
out=$($CURL --socks4 "$PROXY" "http://127.0.0.1:$WEB/s4")
expect_eq "curl --socks4 to an IPv4 literal" "web GET /s4 0" "$out"
expect_eq "SOCKS4 receipt" "open allowed socks4 127.0.0.1 $WEB" "$(rcpt --skip "$m" --where event=open)"

# RFC 1929 only: greeting offering 02, credentials, request, payload, all in one write.
user=$(printf e2euser | od -An -tx1 | tr -d ' \n')
pass=$(printf 'sock5-s3cret' | od -An -tx1 | tr -d ' \n')
name=$(printf echo.e2e.test | od -An -tx1 | tr -d ' \n')
port=$(printf '%04x' "$ECHO")
lm=$(log_mark)
out=$(py raw "$SOCK" --timeout 10 --until-len 18 --hex "05010201""07$user""0c$pass""050100030d$name$port""70696e67")
expect_eq "SOCKS5 username/password: 05 02, 01 00, 00 and the payload echoed" \
    "0502010005000001000000000000$(printf ping | od -An -tx1 | tr -d ' \n') open" "$out"
wait_log "event=open principal=front .*frontend=socks5 host=echo.e2e.test" "$lm" || true
expect_eq "the SOCKS5 password is never logged" "" "$(grep -l 'sock5-s3cret' egressd.err "$RCPT")"

out=$(py tunnel socks5 "$SOCK" echo.e2e.test "$ECHO" --split --mode echo --size 3000)
expect_eq "SOCKS5 split byte by byte" "00
echo-ok" "$out"
out=$(py tunnel socks5 "$SOCK" echo.e2e.test "$ECHO" --coalesce --mode echo --size 3000)
expect_eq "SOCKS5 greeting and request coalesced" "00
echo-ok" "$out"
out=$(py tunnel socks5 "$SOCK" ::1 "$WEB6" --mode none)
expect_eq "SOCKS5 with an IPv6 address (ATYP 4)" "00" "$out"
out=$(py tunnel socks4a "$SOCK" echo.e2e.test "$ECHO" --split --mode echo --size 3000)
expect_eq "SOCKS4a split byte by byte" "90
echo-ok" "$out"

# --- the end -------------------------------------------------------------------------
pat="event=open principal=front .*frontend=socks4 host=echo.e2e.test port=$ECHO .*reason=allowed"
wait_log "$pat" || true
expect_match "the log line of an open names what the receipt does" "$pat" "$(cat egressd.err)"
egressd_stop
expect_eq "egressd exits 0 on SIGTERM" 0 "$EGRESSD_RC"
check_receipts frontends
finish
