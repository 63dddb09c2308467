#!/bin/sh
# egressd end to end: the SNI guard. Under `sni match` (the default) a ClientHello must
# name the requested host exactly once and carry no ECH (else sni-mismatch, sni-missing,
# sni-malformed, sni-ech: the tunnel closes, a deny receipt, and not one byte reaches the
# upstream); a request by IP literal may omit it; a hello split over records or segments
# is reassembled; a ChangeCipherSpec before the hello does not hide it, an alert or
# application data before it is refused; inspection ends at application data after the
# hello; other protocols pass. `sni required` refuses what is not TLS (not-tls); `sni off`
# inspects nothing. Real clients: curl to openssl s_server passes, curl with --connect-to
# (SNI of another name) is refused, OpenSSL's hello (Python ssl) behind a CCS is inspected.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need curl socat openssl
cd "$WORK" || exit 1

start_server echo echo --log "$WORK/echo.bytes"
ECHO=$PORT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout tls.key -out tls.crt -subj /CN=tls.e2e.test \
    -addext subjectAltName=DNS:tls.e2e.test >/dev/null 2>&1
TLS=$(freeport)
spawn s_server openssl s_server -accept "127.0.0.1:$TLS" -cert tls.crt -key tls.key -www -quiet
wait_tcp "$TLS" || { echo "Bail out! openssl s_server did not start"; exit 99; }
cat > zone <<EOF
tls.e2e.test    A 127.0.0.1
other.e2e.test  A 127.0.0.1
s.e2e.test      A 127.0.0.1
EOF
dns_start zone
cat > match.policy <<EOF
allow *.e2e.test 1024-65535
allow 127.0.0.1 1024-65535
permit-range 127.0.0.0/8
EOF
{ cat match.policy; echo "sni required"; } > required.policy
{ cat match.policy; echo "sni off"; } > off.policy
conf_begin
principal match match.policy
principal required required.policy
principal off off.policy
egressd_start
M=$RUN/match.sock
bridge "$M"

# bytes_mark, then last_bytes MARK: what the upstream got on the one connection since MARK
# (the echo logs a line when a connection ends, which may be after the client is done; wait
# for that line instead of reading an older one).
bytes_mark() { if [ -f echo.bytes ]; then wc -l < echo.bytes | tr -d ' '; else echo 0; fi; }
_bytes_after() { [ "$(bytes_mark)" -gt "$1" ]; }
last_bytes() {
	wait_until _bytes_after "$1" || { echo "no-connection-logged"; return; }
	tail -n 1 echo.bytes | py_field bytes
}
# hello WHAT SOCK HOST EXPECT RECEIPT [tunnel args]: a crafted ClientHello to the echo.
hello() {
	_what=$1 _s=$2 _h=$3 _want=$4 _rc=$5
	shift 5
	_m=$(rcpt_mark)
	_b=$(bytes_mark)
	expect_eq "$_what" "$_want" "$(py tunnel connect "$_s" "$_h" "$ECHO" --mode hello "$@" | sed -n 2p)"
	case $_rc in
	open*) expect_eq "$_what: receipt" "$_rc" "$(rcpt --skip "$_m" --where event=open --fields event,host,sni)" ;;
	*)
		expect_eq "$_what: receipt" "$_rc" "$(rcpt --skip "$_m" --where event=deny --wait 10 --fields event,reason,host,sni)"
		expect_eq "$_what: not a byte reached the upstream" 0 "$(last_bytes "$_b")"
		;;
	esac
}

# --- sni match ------------------------------------------------------------------------------
hello "the requested name: passes" "$M" s.e2e.test echoed "open s.e2e.test s.e2e.test" --sni s.e2e.test
hello "another name: sni-mismatch" "$M" s.e2e.test "closed after 0" \
    "deny sni-mismatch s.e2e.test other.e2e.test" --sni other.e2e.test
hello "no server_name for a name: sni-missing" "$M" s.e2e.test "closed after 0" \
    "deny sni-missing s.e2e.test -"
hello "no server_name for an IP literal: passes" "$M" 127.0.0.1 echoed "open 127.0.0.1 -"
m=$(rcpt_mark)
b=$(bytes_mark)
expect_eq "an ECH extension: sni-ech" "closed after 0" \
    "$(py tunnel connect "$M" s.e2e.test "$ECHO" --mode hello --sni s.e2e.test --ech | sed -n 2p)"
expect_eq "an ECH extension: receipt" "deny sni-ech s.e2e.test" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,host)"
expect_eq "an ECH extension: not a byte reached the upstream" 0 "$(last_bytes "$b")"
hello "two server_names: sni-malformed" "$M" s.e2e.test "closed after 0" \
    "deny sni-malformed s.e2e.test -" --sni s.e2e.test --sni s.e2e.test
hello "a truncated ClientHello: sni-malformed" "$M" s.e2e.test "closed after 0" \
    "deny sni-malformed s.e2e.test -" --malformed
hello "a hello over three records: reassembled, passes" "$M" s.e2e.test echoed \
    "open s.e2e.test s.e2e.test" --sni s.e2e.test --records 3
hello "a hello over three records naming another host: sni-mismatch" "$M" s.e2e.test \
    "closed after 0" "deny sni-mismatch s.e2e.test other.e2e.test" --sni other.e2e.test --records 3
hello "a hello sent byte by byte: passes" "$M" s.e2e.test echoed "open s.e2e.test s.e2e.test" \
    --sni s.e2e.test --split-hello
hello "the hello and application data: inspection ends, both pass" "$M" s.e2e.test echoed \
    "open s.e2e.test s.e2e.test" --sni s.e2e.test --appdata
# 96 KiB of application data right behind the hello: the guard holds the client's bytes
# until the server's first ones say whether a second hello may come, at most CONN_GUARD_HOLD
# (33 KiB); at that bound egressd stops reading the client and goes on once they passed.
hello "the hello and 96 KiB of application data at once: held at the bound, all pass" "$M" \
    s.e2e.test echoed "open s.e2e.test s.e2e.test" --sni s.e2e.test --appdata \
    --appdata-bytes 98304
# A ChangeCipherSpec record before the first ClientHello makes the stream TLS, not "other
# traffic": the hello behind it (a real one, written by OpenSSL through Python's ssl) is
# inspected and must still name the host. Other records before it are refused.
CCS=140303000101
hello "a CCS, then OpenSSL's hello for the host: passes" "$M" s.e2e.test echoed \
    "open s.e2e.test s.e2e.test" --openssl-hello --sni s.e2e.test --before $CCS
hello "a CCS, then OpenSSL's hello for another name: sni-mismatch" "$M" s.e2e.test \
    "closed after 0" "deny sni-mismatch s.e2e.test other.e2e.test" --openssl-hello \
    --sni other.e2e.test --before $CCS
hello "three CCS, then a hello for another name: sni-mismatch" "$M" s.e2e.test \
    "closed after 0" "deny sni-mismatch s.e2e.test other.e2e.test" --openssl-hello \
    --sni other.e2e.test --before $CCS --before $CCS --before $CCS
hello "a CCS, then a hello for another name, byte by byte: sni-mismatch" "$M" s.e2e.test \
    "closed after 0" "deny sni-mismatch s.e2e.test other.e2e.test" --openssl-hello \
    --sni other.e2e.test --before $CCS --split-hello
# CCS records count against what the guard holds (CONN_GUARD_HOLD, 33 KiB): 34 KiB of
# them, then a hello, is refused without a byte upstream.
hello "34 KiB of CCS before the hello: beyond what the guard holds, sni-malformed" "$M" \
    s.e2e.test "closed after 0" "deny sni-malformed s.e2e.test -" --openssl-hello --sni s.e2e.test \
    --before "$("$E2E_PY" -c "print('$CCS' * 5800)")"
hello "an alert before the hello: sni-malformed" "$M" s.e2e.test "closed after 0" \
    "deny sni-malformed s.e2e.test -" --openssl-hello --sni s.e2e.test --before 15030300020100
hello "application data before the hello: sni-malformed" "$M" s.e2e.test "closed after 0" \
    "deny sni-malformed s.e2e.test -" --openssl-hello --sni s.e2e.test --before 170303000100
expect_eq "sni match: a protocol that is not TLS passes" "00
echo-ok" "$(py tunnel socks5 "$M" s.e2e.test "$ECHO" --mode echo)"

out=$(curl -sS --max-time 10 -p -x "http://127.0.0.1:$BRIDGE_PORT" --cacert tls.crt "https://tls.e2e.test:$TLS/")
expect_match "curl https with the right SNI passes the guard" "s_server" "$out"
expect_eq "... its open receipt carries the SNI" "tls.e2e.test" "$(rcpt --where event=open --where port="$TLS" --fields sni)"
m=$(rcpt_mark)
curl -sS --max-time 10 -p -x "http://127.0.0.1:$BRIDGE_PORT" --cacert tls.crt \
    --connect-to "tls.e2e.test:$TLS:other.e2e.test:$TLS" "https://tls.e2e.test:$TLS/" >/dev/null 2>&1
expect_eq "curl to one name with the SNI of another fails" 1 "$([ $? -ne 0 ] && echo 1)"
expect_eq "... as sni-mismatch" "deny sni-mismatch other.e2e.test tls.e2e.test" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,host,sni)"

# --- sni required, sni off ------------------------------------------------------------------------
hello "sni required: TLS with the right name passes" "$RUN/required.sock" s.e2e.test echoed \
    "open s.e2e.test s.e2e.test" --sni s.e2e.test
m=$(rcpt_mark)
b=$(bytes_mark)
ok200=$(printf 'HTTP/1.1 200 Connection established\r\n\r\n' | od -An -tx1 | tr -d ' \n')
expect_match "sni required: plain text is refused (closed, nothing echoed)" "^($ok200|none) closed$" \
    "$(py raw "$RUN/required.sock" --timeout 3 --data "CONNECT s.e2e.test:$ECHO HTTP/1.1\r\nHost: s.e2e.test:$ECHO\r\n\r\nSSH-2.0-client\r\n")"
expect_eq "sni required: ... as not-tls" "deny not-tls s.e2e.test" \
    "$(rcpt --skip "$m" --where reason=not-tls --wait 10 --fields event,reason,host)"
expect_eq "sni required: ... and nothing reached the upstream" 0 "$(last_bytes "$b")"
hello "sni off: another name passes" "$RUN/off.sock" s.e2e.test echoed "open s.e2e.test -" \
    --sni other.e2e.test

# --- openssl s_client through the HTTP proxy (the issue's fronting example) ---------------
_m=$(rcpt_mark)
b=$(bytes_mark)
out=$(echo Q | timeout 10 openssl s_client -proxy "127.0.0.1:$BRIDGE_PORT" \
    -connect "s.e2e.test:$ECHO" -servername other.e2e.test 2>&1)
expect_match "s_client -servername other.e2e.test: the tunnel opened (CONNECT answered)" \
    "CONNECTED" "$out"
expect_eq "s_client -servername other.e2e.test: sni-mismatch, with the name seen" \
    "deny sni-mismatch s.e2e.test other.e2e.test" \
    "$(rcpt --skip "$_m" --where event=deny --wait 10 --fields event,reason,host,sni)"
expect_eq "s_client -servername other.e2e.test: not one byte reached the upstream" 0 \
    "$(last_bytes "$b")"
_m=$(rcpt_mark)
out=$(echo Q | timeout 10 openssl s_client -proxy "127.0.0.1:$BRIDGE_PORT" \
    -connect "tls.e2e.test:$TLS" -servername tls.e2e.test 2>&1)
expect_match "s_client -servername tls.e2e.test: the handshake completes" "CN ?= ?tls.e2e.test" \
    "$out"
expect_eq "s_client -servername tls.e2e.test: open receipt with its sni" \
    "open tls.e2e.test tls.e2e.test" \
    "$(rcpt --skip "$_m" --where event=open --wait 10 --fields event,host,sni)"


egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts sni
finish
