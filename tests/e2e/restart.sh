#!/bin/sh
# egressd end to end: crashes, reloads and stops. kill -9 with live tunnels and a torn last
# receipt line: the next start appends a repair record chained to the last intact line and
# a close "daemon-restart" for every open, once. SIGHUP adds and removes principals of the
# file (a removed one's tunnels close with shutdown), keeps a live principal's policy when
# its file changed, and keeps everything when the new file is invalid. SIGTERM with
# shutdown-grace 1: a request completed during the drain gets 503 shutdown, the live
# tunnel is closed with a shutdown receipt, egressd exits 0 after the grace (within 5 s).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'q.e2e.test A 127.0.0.1\nr.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
cp open.policy r.policy
conf_begin
principal r r.policy
principal r2 open.policy
egressd_start
S=$RUN/r.sock

# hold NAME PROTO SOCK HOST: a tunnel held open in the background until NAME.hold goes.
hold() {
	touch "$WORK/$1.hold"
	rm -f "$WORK/$1.status"
	spawn "$1" "$E2E_PY" "$HELPER" tunnel "$2" "$3" "$4" "$ECHO" --mode hold \
	    --hold-file "$WORK/$1.hold" --status-file "$WORK/$1.status"
	eval "${1}_PID=\$SPAWNED"
	wait_for -s "$WORK/$1.status"
}

# --- kill -9 with live tunnels, then a torn line ---------------------------------------
py raw "$S" --http --data "CONNECT nope.example.org:443 HTTP/1.1\r\nHost: nope.example.org:443\r\n\r\n" >/dev/null
hold t1 socks5 "$S" q.e2e.test
hold t2 connect "$S" q.e2e.test
hold t3 socks4a "$RUN/r2.sock" r.e2e.test
expect_eq "three tunnels are open" "00 200 90" "$(cat t1.status t2.status t3.status | tr '\n' ' ' | sed 's/ $//')"
expect_eq "three open receipts" 3 "$(rcpt --where event=open --count)"
kill -KILL "$EGRESSD_PID"
wait "$EGRESSD_PID" 2>/dev/null
for t in t1 t2 t3; do
	eval "wait \$${t}_PID"
	expect_match "$t: the client saw its tunnel end with egressd" "^(eof|reset) " "$(sed -n 2p "$t.out")"
done
intact=$(tail -n 1 "$RCPT" | tr -d '\n' | sha256sum | cut -d' ' -f1)
lines_before=$(rcpt_mark)
torn='{"seq":99,"prev":"sha256:0123'
printf '%s' "$torn" >> "$RCPT"          # a write cut by the crash
egressd_start
m=$lines_before
expect_eq "the torn line is followed by a repair record" "repair torn-line bytes=${#torn}" \
    "$(rcpt --skip "$m" --where event=repair --fields event,detail)"
expect_eq "the repair record chains to the last intact line" "sha256:$intact" \
    "$(rcpt --skip "$m" --where event=repair --fields prev)"
expect_eq "one close daemon-restart per open" 3 \
    "$(rcpt --skip "$m" --where event=close --where close=daemon-restart --count)"
for id in $(grep '"event":"open"' "$RCPT" | sed 's/.*"id":"\([^"]*\)".*/\1/'); do
	expect_eq "open $id: closed once, by the restart" "1 close daemon-restart allowed" \
	    "$(rcpt --where id="$id" --where event=close --count) $(rcpt --skip "$m" --where event=close --where id="$id" --fields event,close,reason)"
done
expect_eq "the restart closes name the destination" "q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --where event=close --where principal=r --fields host,port)"
check_receipts "after kill -9 and a torn line"
expect_eq "after the restart a tunnel works again" "00
echo-ok" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO" --mode echo)"
egressd_stop
m=$(rcpt_mark)
egressd_start
expect_eq "a clean restart repairs and closes nothing" "0 0" \
    "$(rcpt --skip "$m" --where event=repair --count) $(rcpt --skip "$m" --where event=close --count)"

# --- SIGHUP ----------------------------------------------------------------------------------
hold h2 socks5 "$RUN/r2.sock" q.e2e.test
expect_eq "a tunnel on r2 is open" "00" "$(cat h2.status)"
"$EGRESSCTL" -s "$CTL" principal add viactl --policy "$WORK/open.policy" >/dev/null
printf 'allow other.example 443\n' > r.policy       # r's file changes under it
conf_begin
principal r r.policy
principal late open.policy
m=$(rcpt_mark)
lm=$(log_mark)
kill -HUP "$EGRESSD_PID"
expect_eq "SIGHUP: an added principal's socket appears" 1 "$(wait_for -S "$RUN/late.sock" && echo 1)"
# The reload is whole once egressd logs its result (the warning below comes before it).
wait_log "event=reload result=" "$lm"
expect_eq "SIGHUP: a removed principal's socket disappears" 1 "$(wait_gone "$RUN/r2.sock" && echo 1)"
wait "$h2_PID"
expect_match "SIGHUP: the removed principal's tunnel was closed" "^(eof|reset) " "$(sed -n 2p h2.out)"
expect_eq "SIGHUP: its close receipt says shutdown" "close shutdown shutdown r2" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,principal)"
list=$("$EGRESSCTL" -s "$CTL" principal list)
expect_match "SIGHUP: egressctl lists the new principal" "^late " "$list"
expect_match "SIGHUP: a control-socket principal is untouched" "^viactl " "$list"
expect_eq "SIGHUP: ... and still serves" "00" "$(py tunnel socks5 "$RUN/viactl.sock" q.e2e.test "$ECHO")"
expect_eq "SIGHUP: egressctl no longer lists the removed one" "" "$(echo "$list" | grep '^r2 ')"
expect_eq "SIGHUP: the new principal serves" "00
echo-ok" "$(py tunnel socks5 "$RUN/late.sock" q.e2e.test "$ECHO" --mode echo)"
expect_eq "SIGHUP: a live principal keeps its sealed policy when its file changed" "00" \
    "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"
expect_match "SIGHUP: ... and egressd warns about it" "level=warn .*principal=r .*policy changed" \
    "$(cat egressd.err)"
echo "principal broken policy relative/path" >> "$WORK/egressd.conf"
lm=$(log_mark)
kill -HUP "$EGRESSD_PID"
wait_log "event=reload result=" "$lm"
expect_match "SIGHUP with an invalid file: refused and logged" "event=reload result=failed" "$(cat egressd.err)"
expect_eq "SIGHUP with an invalid file: principals unchanged" "late r viactl" \
    "$("$EGRESSCTL" -s "$CTL" principal list | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')"

# --- SIGTERM with a live tunnel, shutdown-grace 1 -----------------------------------------------
hold g1 socks5 "$RUN/late.sock" q.e2e.test
expect_eq "a tunnel is open before SIGTERM" "00" "$(cat g1.status)"
# A request begun before SIGTERM and completed during the drain: the first half now, the
# rest only once egressd has taken the connection up (it counts 2) and says it is stopping
# (late.go), so that the rest lands in the 1 s drain however slow the machine is.
rm -f late.go
spawn late "$E2E_PY" "$HELPER" raw "$RUN/late.sock" --http --go-file "$WORK/late.go" --sent-file "$WORK/late.sent" \
    --data "CONNECT q.e2e.test:$ECHO HTTP/1.1\r\n" --data2 "Host: q.e2e.test:$ECHO\r\n\r\n"
LATE=$SPAWNED
wait_for -s late.sent
two_conns() { "$EGRESSCTL" -s "$CTL" status | grep -Eq "^connections: +2$"; }
wait_until two_conns || echo "# egressd status: $("$EGRESSCTL" -s "$CTL" status | tr '\n' ' ')"
m=$(rcpt_mark)
lm=$(log_mark)
t0=$(date +%s%N)
kill -TERM "$EGRESSD_PID"
wait_log "event=stopping" "$lm"
touch late.go
wait "$EGRESSD_PID"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# egressd stopped ${ms} ms after SIGTERM"
expect_eq "SIGTERM: egressd exits 0" 0 "$rc"
# At least the grace (the drain waited), and not much more: the rest is the monitor's
# last records and their fsync, which a disk busy with a parallel make can slow by seconds.
expect_eq "SIGTERM: after the 1 s grace, and within 5 s" 1 "$([ "$ms" -ge 900 ] && [ "$ms" -le 5000 ] && echo 1)"
wait "$g1_PID"
expect_match "SIGTERM: the live tunnel was closed" "^(eof|reset) " "$(sed -n 2p g1.out)"
expect_eq "SIGTERM: its close receipt says shutdown" "close shutdown shutdown q.e2e.test" \
    "$(rcpt --skip "$m" --where event=close --fields event,reason,close,host)"
wait "$LATE"
expect_eq "SIGTERM: a request completed during the drain gets 503 shutdown" "503 shutdown closed" \
    "$(cat late.out)"
expect_eq "SIGTERM: ... with a deny receipt" "deny shutdown http-connect" \
    "$(rcpt --skip "$m" --where event=deny --fields event,reason,frontend)"
expect_eq "SIGTERM: the principal sockets are gone" "" "$(ls "$RUN" | grep -v control.sock)"
check_receipts "after SIGTERM"

# --- a signal during start-up waits for the handlers instead of killing egressd -----------
# The configuration is a FIFO, so egressd sits in start-up (opening it) until the test
# writes it: SIGUSR1 (say, logrotate's) sent then is handled once egressd runs.
rm -f "$RUN/control.sock"
conf_begin
mkfifo conf.fifo
spawn fifo "$EGRESSD" -c "$WORK/conf.fifo"
FIFO_PID=$SPAWNED
i=0
while [ "$(awk '$1 == "SigBlk:" { print $2 }' "/proc/$FIFO_PID/status" 2>/dev/null)" = 0000000000000000 ] ||
    ! grep -q fifo "/proc/$FIFO_PID/wchan" 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -USR1 "$FIFO_PID"
kill -USR1 "$FIFO_PID"
# (bounded: without a reader, that is an egressd already dead, the write would block)
timeout 10 sh -c 'cat "$1" > "$2"' sh "$WORK/egressd.conf" conf.fifo
wait_for -S "$CTL" || kill -0 "$FIFO_PID" 2>/dev/null
expect_eq "SIGUSR1 during start-up: egressd is alive and serving" 1 \
    "$(kill -0 "$FIFO_PID" 2>/dev/null && "$EGRESSCTL" -s "$CTL" status >/dev/null && echo 1)"
kill -TERM "$FIFO_PID"
wait "$FIFO_PID"
expect_eq "SIGUSR1 during start-up: ... and stops normally (exit 0)" 0 "$?"
finish
