#!/bin/sh
# egressd end to end: the native connector (EGR1, docs/native.md). An allowed host gets
# code 0 and the connection becomes the tunnel; refusals get libegress's codes and a deny
# receipt with frontend "native"; a bad magic, version or verb byte is refused at once;
# names are still resolved by egressd and classified.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'n.e2e.test A 127.0.0.1\npriv.e2e.test A 10.0.0.1\n' > zone
dns_start zone
printf 'allow n.e2e.test %s\nallow priv.e2e.test %s\ndeny bad.e2e.test\npermit-range 127.0.0.0/8\n' \
    "$ECHO" "$ECHO" > n.policy
conf_begin
principal nat n.policy
egressd_start
S=$RUN/nat.sock

cat > native.py <<'PYEOF2'
import socket, struct, sys
sock, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
head = sys.argv[4] if len(sys.argv) > 4 else "EGR1\x01\x00"
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sock)
h = host.encode("latin-1")
s.sendall(head.encode("latin-1") + struct.pack(">H", port) + bytes([len(h)]) + h)
r = b""
while len(r) < 8:
    b = s.recv(8 - len(r))
    if not b:
        break
    r += b
if len(r) < 8 or r[:4] != b"EGR1":
    print("noreply %d" % len(r))
    sys.exit(0)
code = struct.unpack(">i", r[4:])[0]
if code != 0:
    print(code)
    sys.exit(0)
s.sendall(b"ping through the tunnel")
got = b""
while len(got) < 23:
    b = s.recv(64)
    if not b:
        break
    got += b
print("0 " + got.decode())
PYEOF2
nat() { "$E2E_PY" native.py "$S" "$@"; }

m=$(rcpt_mark)
expect_eq "allowed: code 0, then the tunnel echoes" "0 ping through the tunnel" \
    "$(nat n.e2e.test "$ECHO")"
expect_eq "... open receipt, frontend native" "open native n.e2e.test" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,frontend,host)"
expect_eq "not allowlisted: -1001" -1001 "$(nat other.e2e.test "$ECHO")"
expect_eq "denied by rule: -1002" -1002 "$(nat bad.e2e.test "$ECHO")"
expect_eq "bad host (2130706433): -1004" -1004 "$(nat 2130706433 "$ECHO")"
expect_eq "private answer: -1005" -1005 "$(nat priv.e2e.test "$ECHO")"
expect_eq "unknown version: -1003" -1003 "$(nat n.e2e.test "$ECHO" "EGR1\002\000")"
expect_eq "unknown verb: -1003" -1003 "$(nat n.e2e.test "$ECHO" "EGR1\001\003")"
m=$(rcpt_mark)
nat other.e2e.test "$ECHO" >/dev/null
expect_eq "refusal: deny receipt with frontend native and its reason" \
    "deny native other.e2e.test not-allowlisted" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,reason)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts native
finish
