#!/bin/sh
# egressd end to end: receipt fields that depend on how far a request got.
# - frontend: an HTTP request cut short (handshake-timeout, a close mid-request) still
#   names its frontend: http-connect once it begins with "CONNECT " (after any empty
#   lines), http-forward otherwise; "E" followed only by a prefix of EGR1 has chosen none.
# - port: a bad-host refusal names the port the request carried (CONNECT, absolute-form
#   with its default 80, SOCKS5, SOCKS4a, native).
# - bytes_up and the byte quota count the head egressd forwards for an absolute-form
#   request, not only its body.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server web http --log "$WORK/web.log" --name web
WEB=$PORT
printf 'f.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
timeout handshake 1s
EOF
cat > tight.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
quota bytes 40
EOF
conf_begin
principal fl open.policy
principal tight tight.policy
egressd_start
S=$RUN/fl.sock

# --- frontend of a partial HTTP request ------------------------------------------------------
# half LABEL DATA EXPECTED-ANSWER EXPECTED-RECEIPT [raw options]
half() {
	_l=$1 _d=$2 _a=$3 _r=$4
	shift 4
	_m=$(rcpt_mark)
	expect_eq "$_l: answer" "$_a" "$(py raw "$S" --http --data "$_d" "$@")"
	expect_eq "$_l: receipt" "$_r" "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend)"
}
half "half a CONNECT, timeout" "CONNECT f.e2e.test:$WEB HTTP/1.1\r\nHost: f" \
    "408 handshake-timeout closed" "deny handshake-timeout http-connect"
half "half an absolute-form GET, timeout" "GET http://f.e2e.test:$WEB/ HTTP/1.1\r\nHost: f" \
    "408 handshake-timeout closed" "deny handshake-timeout http-forward"
half "a CONNECT line without its blank line, closed" "CONNECT f.e2e.test:$WEB HTTP/1.1\r\n" \
    "400 malformed-request closed" "deny malformed-request http-connect" --shut
half "'CONNECT ' alone, closed" "CONNECT " "400 malformed-request closed" \
    "deny malformed-request http-connect" --shut
half "an empty line, then half a CONNECT, closed" "\r\nCONNECT f.e2e" \
    "400 malformed-request closed" "deny malformed-request http-connect" --shut
half "half an absolute URL, closed" "GET http://f.e2e" "400 malformed-request closed" \
    "deny malformed-request http-forward" --shut
half "a method not yet complete ('CONN'), closed" "CONN" "400 malformed-request closed" \
    "deny malformed-request http-forward" --shut
half "one byte ('P'), timeout" "P" "408 handshake-timeout closed" \
    "deny handshake-timeout http-forward"
half "'EX' (not EGR1), closed" "EX" "400 malformed-request closed" \
    "deny malformed-request http-forward" --shut
# A prefix of EGR1 is not yet HTTP nor native: no frontend.
m=$(rcpt_mark)
py raw "$S" --data "EG" --shut >/dev/null
expect_eq "\"EG\", closed: receipt without frontend" "deny malformed-request -" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend)"

# --- port of a bad-host refusal ----------------------------------------------------------------
m=$(rcpt_mark)
expect_eq "bad-host by CONNECT: 400" "400 bad-host closed" \
    "$(py raw "$S" --http --data "CONNECT 127.1:$WEB HTTP/1.1\r\nHost: 127.1:$WEB\r\n\r\n")"
expect_eq "bad-host by CONNECT: the receipt names the port" "deny bad-host http-connect - $WEB" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
m=$(rcpt_mark)
expect_eq "bad-host by forward, explicit port: 400" "400 bad-host closed" \
    "$(py raw "$S" --http --data "GET http://0x7f.1:$WEB/ HTTP/1.1\r\nHost: x\r\n\r\n")"
expect_eq "bad-host by forward, explicit port: the receipt names it" \
    "deny bad-host http-forward - $WEB" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
m=$(rcpt_mark)
py raw "$S" --http --data "GET http://2130706433/ HTTP/1.1\r\nHost: x\r\n\r\n" >/dev/null
expect_eq "bad-host by forward, no port: the receipt names 80" "deny bad-host http-forward - 80" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
m=$(rcpt_mark)
expect_eq "bad-host by SOCKS5 (name): REP 02" "02 closed" \
    "$(py tunnel socks5 "$S" 127.1 "$WEB" --atyp 3)"
expect_eq "bad-host by SOCKS5: the receipt names the port" "deny bad-host socks5 - $WEB" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
m=$(rcpt_mark)
expect_eq "bad-host by SOCKS4a: 91" "91 closed" "$(py tunnel socks4a "$S" 127.1 "$WEB")"
expect_eq "bad-host by SOCKS4a: the receipt names the port" "deny bad-host socks4 - $WEB" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
m=$(rcpt_mark)
"$E2E_PY" - "$S" "$WEB" <<'PYEOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
h = b"127.1"
s.sendall(b"EGR1\x01\x00" + struct.pack(">H", int(sys.argv[2])) + bytes([len(h)]) + h)
s.recv(8)
PYEOF
expect_eq "bad-host by the native connector: the receipt names the port" \
    "deny bad-host native - $WEB" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"

# --- bytes of a forwarded request ----------------------------------------------------------------
# What the upstream received, head and body: the web server logs the head's parts.
upstream_bytes() {
	"$E2E_PY" - "$WORK/web.log" <<'PYEOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
head = "%s %s %s\r\n" % (r["method"], r["target"], r["version"])
head += "".join("%s: %s\r\n" % (k, v) for k, v in r["headers"]) + "\r\n"
print(len(head.encode("latin-1")) + r["body_len"])
PYEOF
}
principal_bytes() {
	py raw "$CTL" --text --data '{"verb":"principal-list"}\n' --until-text '}]' --linger 0 |
	    "$E2E_PY" -c '
import json, sys
t = sys.stdin.read().rsplit(" ", 1)[0]
for p in json.loads(t)["principals"]:
    if p["name"] == sys.argv[1]:
        print(p["bytes"])' "$1"
}
before=$(principal_bytes fl)
m=$(rcpt_mark)
expect_eq "forward with a body: 200 from the upstream" "200 - closed" \
    "$(py raw "$S" --http --data "POST http://f.e2e.test:$WEB/up?x=1 HTTP/1.1\r\nHost: f\r\nContent-Length: 5\r\nUser-Agent: fields\r\n\r\nhello")"
close=$(rcpt --skip "$m" --where event=close --wait 10 --fields bytes_up,bytes_down)
wait_until test -s "$WORK/web.log"
up=$(upstream_bytes)
expect_eq "forward: bytes_up is the forwarded head and the body" "$up" "${close% *}"
expect_eq "forward: the principal's byte count (the quota's) has head, body and answer" \
    "$((before + up + ${close#* }))" "$(principal_bytes fl)"

# A head over the whole byte budget (40) is refused by the quota as soon as it is counted:
# the upstream never gets the request.
: > "$WORK/web.log"
m=$(rcpt_mark)
py raw "$RUN/tight.sock" --http --data "GET http://f.e2e.test:$WEB/ HTTP/1.1\r\nHost: f\r\n\r\n" >/dev/null
expect_eq "forward over the byte quota: closed by quota-bytes" "close quota-bytes quota-bytes" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close)"
wait_until test -s "$WORK/web.log"
expect_eq "... before the request reached the upstream" "eof in head" \
    "$("$E2E_PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline()).get("error", "received"))' "$WORK/web.log")"

check_receipts fields
egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
finish
