#!/bin/sh
# egressd end to end: `syslog` sends each receipt line, exactly as written to the file
# (chain and MAC included), to syslog(3). egressd runs in a mount namespace of the test's
# own where /dev/log is a datagram socket the test listens on (bind-mounted over the
# host's, or on a private /dev when the host has none): nothing reaches the host's logger.
# `log syslog` sends egressd's own logfmt lines there instead of stderr (-d adds the debug
# ones, at priority debug); `log` with another value is refused.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need unshare mount
cd "$WORK" || exit 1
if ! unshare -m true 2>/dev/null; then
	echo "SKIP: cannot make a mount namespace"
	exit 77
fi

# The listener: every datagram on $WORK/devlog, one per line, to syslog.out.
"$E2E_PY" - "$WORK/devlog" "$WORK/syslog.out" > /dev/null 2>&1 <<'PYEOF2' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(65536).rstrip(b"\n") + b"\n")
PYEOF2
LISTENER=$!
E2E_PIDS="$E2E_PIDS $LISTENER"
wait_for -S "$WORK/devlog"

start_server echo echo
ECHO=$PORT
printf 's.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.1/32\n' > s.policy
conf_begin "syslog"
principal sl s.policy
# egressd in its own mount namespace with /dev/log -> the listener.
EGRESSD_REAL=$EGRESSD
cat > egressd-ns.sh <<EOF2
#!/bin/sh
if [ -e /dev/log ] || [ -L /dev/log ]; then
	[ -S /dev/log ] || [ -f /dev/log ] || rm -f /dev/log 2>/dev/null
fi
if [ ! -e /dev/log ]; then
	mount -t tmpfs none /dev || exit 99
	touch /dev/log
fi
mount --bind "$WORK/devlog" /dev/log || exit 99
exec "$EGRESSD_REAL" "\$@"
EOF2
chmod +x egressd-ns.sh
spawn egressd unshare -m ./egressd-ns.sh -d -c "$WORK/egressd.conf"
EGRESSD_PID=$SPAWNED
wait_for -S "$RUN/sl.sock" || { echo "Bail out! egressd did not start: $(cat "$WORK/egressd.err")"; exit 99; }
wait_log "event=started " || { echo "Bail out! egressd did not start: $(cat "$WORK/egressd.err")"; exit 99; }

py tunnel socks5 "$RUN/sl.sock" s.e2e.test "$ECHO" --mode echo --size 100 >/dev/null
py tunnel connect "$RUN/sl.sock" nope.example.org 443 >/dev/null
# The tunnel's close is written when egressd has seen the client go.
rcpt --where event=close --wait 10 >/dev/null
kill -TERM "$EGRESSD_PID"
wait "$EGRESSD_PID" 2>/dev/null
# Every line egressd wrote is on its way to the listener: wait until it has written them.
syslog_has_all() {
	_n=$(grep -c '"seq"' syslog.out 2>/dev/null)
	[ "${_n:-0}" -ge "$(grep -c . "$RCPT")" ]
}
wait_until syslog_has_all

n=$(grep -c . "$RCPT")
expect_eq "three receipts in the file (open, close, deny)" 3 "$n"
# Each syslog message is "<PRI>TIMESTAMP egressd[PID]: " followed by the receipt line.
sed -n 's/^<30>.* egressd\[[0-9]*\]: //p' syslog.out | grep '^{"seq"' > from-syslog.txt
expect_eq "syslog got every receipt line, byte for byte, in order" "" \
    "$(diff "$RCPT" from-syslog.txt)"
expect_match "facility daemon, priority info (<30>)" '^<30>' "$(grep '"seq":1,' syslog.out)"
expect_match "without log syslog, egressd's own lines go to stderr" "level=info event=started " \
    "$(cat egressd.err)"
expect_eq "... and none to syslog" "" "$(grep 'level=' syslog.out)"

# --- log syslog: egressd's own lines to syslog, the receipts to their file only -------------
"$EGRESSD" -t -c /dev/stdin <<EOF2 >/dev/null 2>conf.err
runtime-dir $RUN
control $CTL
receipts $RCPT
log journal
EOF2
expect_eq "log with another value: configuration refused (exit 2)" 2 "$?"
expect_match "... at its line and column" "^/dev/stdin:4:5: .*log stderr\|syslog" "$(cat conf.err)"
mv "$RCPT" first.jsonl
: > syslog.out
conf_begin "log syslog"
principal sl s.policy
CLOSED=$(freeport)
spawn egressd unshare -m ./egressd-ns.sh -d -c "$WORK/egressd.conf"
EGRESSD_PID=$SPAWNED
syslog_has() { grep -q -- "$1" syslog.out 2>/dev/null; }
wait_until syslog_has "level=info event=started " ||
    { echo "Bail out! egressd did not log to syslog: $(cat "$WORK/egressd.err")"; exit 99; }
expect_match "log syslog: egressd's start-up line, priority info (<30>)" \
    '^<30>.* egressd\[[0-9]+\]: level=info event=started ' "$(grep 'event=started' syslog.out)"
py tunnel connect "$RUN/sl.sock" nope.example.org 443 >/dev/null
py tunnel socks5 "$RUN/sl.sock" s.e2e.test "$CLOSED" >/dev/null
wait_until syslog_has "event=connect-failed"
expect_match "log syslog: a deny, logged at info" \
    '^<30>.*: level=info event=deny principal=sl .*host=nope.example.org' "$(grep 'event=deny' syslog.out)"
expect_match "log syslog with -d: debug lines too, priority debug (<31>)" \
    '^<31>.*: level=debug event=connect-failed ' "$(grep 'event=connect-failed' syslog.out | head -n 1)"
kill -TERM "$EGRESSD_PID"
wait "$EGRESSD_PID" 2>/dev/null
expect_eq "log syslog: no log line on stderr" "" "$(grep 'level=' egressd.err)"
expect_eq "log syslog: no receipt in syslog (that is the syslog directive's)" "" \
    "$(grep '{"seq"' syslog.out)"
expect_eq "log syslog: the receipts are still in their file" 1 \
    "$(grep -c '"host":"nope.example.org"' "$RCPT")"
finish
