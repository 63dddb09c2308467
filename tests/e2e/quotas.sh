#!/bin/sh
# egressd end to end: quotas per principal. quota connections 1 (a second tunnel while one
# is open gets 429 / SOCKS5 0x02 / SOCKS4 91; the slot frees when the first closes),
# quota rate 1/s, quota bytes 1K (the tunnel that crosses it is closed with quota-bytes,
# later requests get 429), with the receipts of each; quotas of one principal do not touch
# another. Out of descriptors (ulimit -n 64, 100 clients), accepting pauses instead of
# spinning, and resumes.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
start_server sink eofreply
SINK=$PORT
printf 'q.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
{ cat open.policy; echo "quota connections 1"; } > conn1.policy
{ cat open.policy; echo "quota rate 1/s"; } > rate.policy
{ cat open.policy; echo "quota bytes 1K"; } > bytes.policy
cp bytes.policy guarded.policy
conf_begin
principal conn1 conn1.policy
principal rate rate.policy
principal bytes bytes.policy
principal free open.policy
principal guarded guarded.policy
egressd_start

# --- quota connections 1 ------------------------------------------------------------------
S=$RUN/conn1.sock
touch hold1
spawn holder "$E2E_PY" "$HELPER" tunnel connect "$S" q.e2e.test "$ECHO" --mode hold \
    --hold-file "$WORK/hold1" --status-file "$WORK/hold1.status"
HOLDER=$SPAWNED
wait_for -s hold1.status
expect_eq "the first tunnel is open" 200 "$(cat hold1.status)"
expect_match "egressctl lists one live tunnel" "^conn1 .* 1 +no " "$("$EGRESSCTL" -s "$CTL" principal list)"
m=$(rcpt_mark)
expect_eq "second tunnel by CONNECT: 429" "429 quota-connections closed" \
    "$(py raw "$S" --http --data "CONNECT q.e2e.test:$ECHO HTTP/1.1\r\nHost: q.e2e.test:$ECHO\r\n\r\n")"
expect_eq "second tunnel by CONNECT: receipt" "deny quota-connections http-connect q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --wait 10)"
expect_eq "second request by forward: 429" "429 quota-connections closed" \
    "$(py raw "$S" --http --data "GET http://q.e2e.test:$ECHO/ HTTP/1.1\r\nHost: q.e2e.test\r\n\r\n")"
m=$(rcpt_mark)
expect_eq "second tunnel by SOCKS5: REP 02" "02 closed" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"
expect_eq "second tunnel by SOCKS5: receipt" "deny quota-connections socks5 q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --wait 10)"
expect_eq "second tunnel by SOCKS4a: CD 91" "91 closed" "$(py tunnel socks4a "$S" q.e2e.test "$ECHO")"
expect_eq "another principal is not limited by it" "00
echo-ok" "$(py tunnel socks5 "$RUN/free.sock" q.e2e.test "$ECHO" --mode echo)"
rm -f hold1
wait "$HOLDER"
expect_match "the held tunnel ended when its client let go" "^released " "$(sed -n 2p holder.out)"
# egressd frees the slot when it has seen the client go: wait for that (the list shows no
# live tunnel), then one attempt must pass.
conn1_idle() { "$EGRESSCTL" -s "$CTL" principal list | grep -Eq "^conn1 .* 0 +no "; }
wait_until conn1_idle
expect_eq "once it closed, the slot is free again" "00
echo-ok" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO" --mode echo)"

# --- quota rate 1/s ---------------------------------------------------------------------------
S=$RUN/rate.sock
# One process sends N requests back to back. egressd counts new tunnels per wall-clock
# second, so a burst that took E s (E from the burst itself, however slow this machine is)
# touched at most int(E) + 2 seconds and may have at most that many allowed: the rest
# must be refused, and at least one is, as N is well above what a burst of a few seconds
# can spread over.
# rate_check WHAT OUT N OKPAT DENYPAT: the counts of a burst against that bound.
rate_check() {
	_ok=$(echo "$2" | sed -n "s/^\([0-9]*\) x $4\$/\1/p")
	_deny=$(echo "$2" | sed -n "s/^\([0-9]*\) x $5\$/\1/p")
	_secs=$(echo "$2" | sed -n 's/^elapsed \([0-9]*\)\..*/\1/p')
	expect_eq "$1: every request answered, allowed or refused" "$3" "$((${_ok:-0} + ${_deny:-0}))"
	expect_eq "$1: the first is allowed, at most one per second touched ($((${_secs:-0} + 2)))" 1 \
	    "$([ "${_ok:-0}" -ge 1 ] && [ "${_ok:-0}" -le $((${_secs:-0} + 2)) ] && echo 1)"
	expect_eq "$1: the rest is refused" 1 "$([ "${_deny:-0}" -ge 1 ] && echo 1)"
}
name=$(printf q.e2e.test | od -An -tx1 | tr -d ' \n')
m=$(rcpt_mark)
out=$(py burst "$S" 8 --shut --hex "050100""050100030a$name$(printf '%04x' "$ECHO")")
echo "# rate 1/s, eight SOCKS5 requests at once: $(echo "$out" | tr '\n' ' ')"
rate_check "a burst beyond 1/s (SOCKS5: REP 02)" "$out" 8 05000500 05000502
expect_eq "quota-rate receipt" "deny quota-rate socks5 q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --where reason=quota-rate --wait 10)"
sleep 1.1
out=$(py burst "$S" 6 --shut --data "CONNECT q.e2e.test:$ECHO HTTP/1.1\r\nHost: q.e2e.test:$ECHO\r\n\r\n")
echo "# rate 1/s, six CONNECT requests at once: $(echo "$out" | tr '\n' ' ')"
rate_check "quota-rate by CONNECT (429)" "$out" 6 "200 -" "429 quota-rate"
sleep 1.1
expect_eq "a second later a new tunnel is allowed" "00" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"

# --- quota bytes 1K --------------------------------------------------------------------------------
S=$RUN/bytes.sock
m=$(rcpt_mark)
out=$(py tunnel socks5 "$S" q.e2e.test "$ECHO" --mode flood --size 65536 --timeout 10)
expect_eq "quota bytes: the tunnel opened" "00" "$(echo "$out" | head -n 1)"
expect_match "quota bytes: egressd closed the tunnel that crossed 1 KiB" "^(eof|reset) " "$(echo "$out" | sed -n 2p)"
expect_eq "quota bytes: close receipt" "close quota-bytes quota-bytes socks5 q.e2e.test" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,frontend,host)"
sum=$(rcpt --skip "$m" --where event=close --fields bytes_up,bytes_down | awk '{ print $1 + $2 }')
expect_eq "quota bytes: the tunnel moved more than 0 and at most about the budget" 1 \
    "$([ "$sum" -gt 0 ] && [ "$sum" -le 70000 ] && echo 1)"
m=$(rcpt_mark)
expect_eq "quota bytes spent: CONNECT gets 429" "429 quota-bytes closed" \
    "$(py raw "$S" --http --data "CONNECT q.e2e.test:$ECHO HTTP/1.1\r\nHost: q.e2e.test:$ECHO\r\n\r\n")"
expect_eq "quota bytes spent: deny receipt" "deny quota-bytes http-connect q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --wait 10)"
expect_eq "quota bytes spent: SOCKS5 gets REP 02" "02 closed" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"
expect_eq "quota bytes spent: SOCKS4a gets CD 91" "91 closed" "$(py tunnel socks4a "$S" q.e2e.test "$ECHO")"
expect_eq "quota bytes spent: another principal still works" "00
echo-ok" "$(py tunnel socks5 "$RUN/free.sock" q.e2e.test "$ECHO" --mode echo --size 100000)"

# The bytes the SNI guard releases count against the budget like any other: a ClientHello
# behind 1.2 KiB of ChangeCipherSpec records crosses 1 KiB on its own, and the tunnel closes
# at once with quota-bytes (the upstream, silent until its client's EOF, sends nothing).
S=$RUN/guarded.sock
m=$(rcpt_mark)
expect_eq "quota bytes under the SNI guard: the hello that crosses 1 KiB closes the tunnel" \
    "closed after 0" "$(py tunnel connect "$S" q.e2e.test "$SINK" --mode hello --openssl-hello \
    --sni q.e2e.test --timeout 2 --before "$("$E2E_PY" -c "print('140303000101' * 200)")" | sed -n 2p)"
expect_eq "quota bytes under the SNI guard: close receipt" \
    "close quota-bytes quota-bytes http-connect q.e2e.test q.e2e.test" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,frontend,host,sni)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts quotas

# --- out of descriptors: accepting pauses instead of spinning ---------------------------------
{ cat open.policy; echo "timeout handshake 30s"; } > patient.policy
conf_begin
principal patient patient.policy
egressd_start 64
S=$RUN/patient.sock
touch many.hold
rm -f many.ready
spawn many "$E2E_PY" "$HELPER" hold-many "$S" 100 --hold-file "$WORK/many.hold" --ready-file "$WORK/many.ready"
MANY=$SPAWNED
wait_for -s many.ready
# Measure once egressd has run out and paused (it logs that), not after a guessed delay.
wait_log "event=accept-paused"
ms=$(py cpu "$EGRESSD_PID" --secs 2)
echo "# egressd used ${ms} ms of CPU in 2 s with 100 idle clients and 64 descriptors"
expect_match "out of descriptors: egressd says it paused accepting" "event=accept-paused" "$(cat egressd.err)"
expect_eq "out of descriptors: egressd does not spin (< 300 ms CPU in 2 s)" 1 "$([ "$ms" -lt 300 ] && echo 1)"
rm -f many.hold
wait "$MANY"
# egressd resumes accepting on a timer of its own: retry for up to 20 s (by the clock,
# however long each attempt takes).
ok=0
end=$(($(date +%s) + 20))
while [ "$(date +%s)" -lt "$end" ]; do
	out=$(py tunnel socks5 "$S" q.e2e.test "$ECHO" --mode echo --timeout 3)
	[ "$out" = "00
echo-ok" ] && { ok=1; break; }
	sleep 0.2
done
expect_eq "out of descriptors: once they are back, a tunnel works again" 1 "$ok"
egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts "after descriptor exhaustion"
finish
