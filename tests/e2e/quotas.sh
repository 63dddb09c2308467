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
printf 'q.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
{ cat open.policy; echo "quota connections 1"; } > conn1.policy
{ cat open.policy; echo "quota rate 1/s"; } > rate.policy
{ cat open.policy; echo "quota bytes 1K"; } > bytes.policy
conf_begin
principal conn1 conn1.policy
principal rate rate.policy
principal bytes bytes.policy
principal free open.policy
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
    "$(rcpt --skip "$m" --wait 2)"
expect_eq "second request by forward: 429" "429 quota-connections closed" \
    "$(py raw "$S" --http --data "GET http://q.e2e.test:$ECHO/ HTTP/1.1\r\nHost: q.e2e.test\r\n\r\n")"
m=$(rcpt_mark)
expect_eq "second tunnel by SOCKS5: REP 02" "02 closed" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"
expect_eq "second tunnel by SOCKS5: receipt" "deny quota-connections socks5 q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --wait 2)"
expect_eq "second tunnel by SOCKS4a: CD 91" "91 closed" "$(py tunnel socks4a "$S" q.e2e.test "$ECHO")"
expect_eq "another principal is not limited by it" "00
echo-ok" "$(py tunnel socks5 "$RUN/free.sock" q.e2e.test "$ECHO" --mode echo)"
rm -f hold1
wait "$HOLDER"
expect_match "the held tunnel ended when its client let go" "^released " "$(sed -n 2p holder.out)"
ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	out=$(py tunnel socks5 "$S" q.e2e.test "$ECHO" --mode echo)
	[ "$out" = "00
echo-ok" ] && { ok=1; break; }
	sleep 0.1
done
expect_eq "once it closed, the slot is free again" 1 "$ok"

# --- quota rate 1/s ---------------------------------------------------------------------------
S=$RUN/rate.sock
# One process sends the requests back to back: four within well under two seconds.
name=$(printf q.e2e.test | od -An -tx1 | tr -d ' \n')
m=$(rcpt_mark)
out=$(py burst "$S" 4 --shut --hex "050100""050100030a$name$(printf '%04x' "$ECHO")")
echo "# rate 1/s, four SOCKS5 requests at once: $(echo "$out" | tr '\n' ' ')"
expect_match "a burst beyond 1/s is refused with REP 02" "^[23] x 05000502$" "$out"
expect_match "the first of the burst is allowed" "^[12] x 05000500$" "$out"
expect_eq "quota-rate receipt" "deny quota-rate socks5 q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --where reason=quota-rate --wait 2)"
sleep 1.1
out=$(py burst "$S" 3 --shut --data "CONNECT q.e2e.test:$ECHO HTTP/1.1\r\nHost: q.e2e.test:$ECHO\r\n\r\n")
expect_match "quota-rate by CONNECT: 429" "^[12] x 429 quota-rate" "$out"
sleep 1.1
expect_eq "a second later a new tunnel is allowed" "00" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"

# --- quota bytes 1K --------------------------------------------------------------------------------
S=$RUN/bytes.sock
m=$(rcpt_mark)
out=$(py tunnel socks5 "$S" q.e2e.test "$ECHO" --mode flood --size 65536 --timeout 5)
expect_eq "quota bytes: the tunnel opened" "00" "$(echo "$out" | head -n 1)"
expect_match "quota bytes: egressd closed the tunnel that crossed 1 KiB" "^(eof|reset) " "$(echo "$out" | sed -n 2p)"
expect_eq "quota bytes: close receipt" "close quota-bytes quota-bytes socks5 q.e2e.test" \
    "$(rcpt --skip "$m" --where event=close --wait 3 --fields event,reason,close,frontend,host)"
sum=$(rcpt --skip "$m" --where event=close --fields bytes_up,bytes_down | awk '{ print $1 + $2 }')
expect_eq "quota bytes: the tunnel moved more than 0 and at most about the budget" 1 \
    "$([ "$sum" -gt 0 ] && [ "$sum" -le 70000 ] && echo 1)"
m=$(rcpt_mark)
expect_eq "quota bytes spent: CONNECT gets 429" "429 quota-bytes closed" \
    "$(py raw "$S" --http --data "CONNECT q.e2e.test:$ECHO HTTP/1.1\r\nHost: q.e2e.test:$ECHO\r\n\r\n")"
expect_eq "quota bytes spent: deny receipt" "deny quota-bytes http-connect q.e2e.test $ECHO" \
    "$(rcpt --skip "$m" --wait 2)"
expect_eq "quota bytes spent: SOCKS5 gets REP 02" "02 closed" "$(py tunnel socks5 "$S" q.e2e.test "$ECHO")"
expect_eq "quota bytes spent: SOCKS4a gets CD 91" "91 closed" "$(py tunnel socks4a "$S" q.e2e.test "$ECHO")"
expect_eq "quota bytes spent: another principal still works" "00
echo-ok" "$(py tunnel socks5 "$RUN/free.sock" q.e2e.test "$ECHO" --mode echo --size 100000)"

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
sleep 0.5
ms=$(py cpu "$EGRESSD_PID" --secs 2)
echo "# egressd used ${ms} ms of CPU in 2 s with 100 idle clients and 64 descriptors"
expect_match "out of descriptors: egressd says it paused accepting" "event=accept-paused" "$(cat egressd.err)"
expect_eq "out of descriptors: egressd does not spin (< 300 ms CPU in 2 s)" 1 "$([ "$ms" -lt 300 ] && echo 1)"
rm -f many.hold
wait "$MANY"
ok=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
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
