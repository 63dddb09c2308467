#!/bin/sh
# egressd end to end: the relay. 100 MiB each way through one SOCKS5 tunnel and one HTTP
# CONNECT tunnel, checksummed, with exact byte counts in the close receipt; half-close
# both ways (a client that shuts its write side still gets the whole answer; a server-first
# upstream that half-closes still hears the client, and its tunnel has an open receipt
# before the client speaks); a slow reader does not make egressd buffer without bound
# (VmRSS) and then gets every byte; a reset from either side is the close receipt's
# client-reset or upstream-reset (while the SNI guard still holds the client, and in the
# fast relay); idle-timeout closes a silent tunnel and spares active ones (also one whose
# last byte was 0.4 s ago, in the previous wall-clock second).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

MIB100=104857600
{ printf 'bulk'; head -c $((MIB100 - 4)) /dev/urandom; } > up.bin   # not TLS-looking
head -c $MIB100 /dev/urandom > down.bin
UPSUM=$(sha256sum up.bin | cut -d' ' -f1)
DOWNSUM=$(sha256sum down.bin | cut -d' ' -f1)

start_server bulk bulk --send "$WORK/down.bin" --report "$WORK/bulk.report"
BULK=$PORT
start_server eofreply eofreply --reply-bytes 2000000
EOFR=$PORT
start_server banner bannerfirst --report "$WORK/banner.report"
BANNER=$PORT
FLOOD_BYTES=268435456
start_server flood flood --bytes $FLOOD_BYTES --report "$WORK/flood.report"
FLOOD=$PORT
start_server echo echo
ECHO=$PORT
start_server rbanner reset --reply-bytes 21
RBANNER=$PORT
start_server rread reset --bytes 5
RREAD=$PORT

cat > zone <<EOF
bulk.e2e.test    A 127.0.0.1
bulk2.e2e.test   A 127.0.0.1
half.e2e.test    A 127.0.0.1
half4.e2e.test   A 127.0.0.1
banner.e2e.test  A 127.0.0.1
slow.e2e.test    A 127.0.0.1
idle.e2e.test    A 127.0.0.1
busy.e2e.test    A 127.0.0.1
reset.e2e.test   A 127.0.0.1
EOF
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
{ cat open.policy; echo "timeout idle 1s"; } > idle.policy
conf_begin
principal relay open.policy
principal idle idle.policy
egressd_start
SOCK=$RUN/relay.sock

# --- 100 MiB each way --------------------------------------------------------------------
bulk_case() {
	_proto=$1 _host=$2
	rm -f bulk.report
	_m=$(rcpt_mark)
	_t0=$(date +%s)
	_out=$(py tunnel "$_proto" "$SOCK" "$_host" "$BULK" --mode bulk --send "$WORK/up.bin" --timeout 120)
	expect_eq "$_proto bulk: 100 MiB down arrive intact" "00 recv $MIB100 $DOWNSUM" \
	    "$(echo $_out | sed 's/^200 /00 /')"
	wait_for -s bulk.report
	expect_eq "$_proto bulk: 100 MiB up arrive intact" "recv $MIB100 $UPSUM sent $MIB100" "$(cat bulk.report)"
	expect_eq "$_proto bulk: the close receipt counts every byte, exactly" \
	    "close allowed $MIB100 $MIB100" \
	    "$(rcpt --skip "$_m" --where event=close --where host="$_host" --wait 10 --fields event,reason,bytes_up,bytes_down)"
	echo "# $_proto bulk took $(($(date +%s) - _t0))s"
}
bulk_case socks5 bulk.e2e.test
bulk_case connect bulk2.e2e.test
rm -f up.bin down.bin

# --- half-close -------------------------------------------------------------------------------
for proto in connect socks4a; do
	m=$(rcpt_mark)
	out=$(py tunnel "$proto" "$SOCK" half.e2e.test "$EOFR" --mode halfclose --data "sent then shut")
	n=$(printf 'sent then shut' | sha256sum | cut -d' ' -f1)
	reply=$(( $(printf 'got 14 %s\n' "$n" | wc -c) + 2000000 ))
	expect_eq "$proto half-close: the client still gets the whole answer" "recv $reply" \
	    "$(echo "$out" | sed -n 2p | cut -d' ' -f1,2)"
	expect_eq "$proto half-close: the upstream saw the client's EOF after its data" "first got 14 $n" \
	    "$(echo "$out" | sed -n 3p)"
	expect_eq "$proto half-close: receipt" "close allowed client-eof 14 $reply" \
	    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,bytes_up,bytes_down)"
done

m=$(rcpt_mark)
rm -f banner.report
out=$(py tunnel socks5 "$SOCK" banner.e2e.test "$BANNER" --mode reverse --data "client speaks after the banner")
expect_eq "upstream half-close: the client got the banner and EOF, then the upstream heard it" \
    "00
banner banner from upstream
after 0" "$out"
wait_for -s banner.report
expect_eq "upstream half-close: the upstream got the client's bytes after its own EOF" \
    "recv 30 $(printf 'client speaks after the banner' | sha256sum | cut -d' ' -f1)" "$(cat banner.report)"
expect_eq "upstream half-close: receipt" "close upstream-eof 30 21" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,close,bytes_up,bytes_down)"

# A server-first upstream talks at once: its bytes flow before the client says anything
# (the SNI guard holds only the client's bytes), so the open receipt must already exist.
rm -f banner.report sf.status
touch sf.hold
m=$(rcpt_mark)
spawn serverfirst "$E2E_PY" "$HELPER" tunnel socks5 "$SOCK" banner.e2e.test "$BANNER" --mode hold \
    --hello "" --wait-bytes 21 --hold-file "$WORK/sf.hold" --status-file "$WORK/sf.status"
SF=$SPAWNED
wait_for -s sf.status
expect_eq "server-first: the banner reached a silent client, and its open receipt exists" \
    "open banner.e2e.test" "$(rcpt --skip "$m" --where event=open --fields event,host)"
rm -f sf.hold
wait "$SF"
expect_eq "server-first: the tunnel's close counts the banner" "close 0 21" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,bytes_up,bytes_down)"

# --- resets --------------------------------------------------------------------------------
# A server-first upstream that resets while the client is silent (the guard holds it):
# the tunnel ends, and its close says who reset.
m=$(rcpt_mark)
out=$(py tunnel socks5 "$SOCK" reset.e2e.test "$RBANNER" --mode hold --hello "" \
    --wait-bytes 21 --hold-secs 10)
expect_match "upstream reset under the guard: the client sees the tunnel end" \
    "^(eof|reset) [0-9.]+ [0-9]+$" "$(echo "$out" | sed -n 2p)"
expect_eq "... and its close receipt says upstream-reset" "close allowed upstream-reset" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close)"
# The client's bytes (not TLS: the guard lets go, the fast relay copies), then a reset.
m=$(rcpt_mark)
out=$(py tunnel connect "$SOCK" reset.e2e.test "$RREAD" --mode hold --hello 'ping\n' \
    --hold-secs 10)
expect_match "upstream reset in the fast relay: the client sees the tunnel end" \
    "^(eof|reset) [0-9.]+ 0$" "$(echo "$out" | sed -n 2p)"
expect_eq "... and its close receipt says upstream-reset, 5 bytes up" \
    "close allowed upstream-reset 5" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,bytes_up)"
m=$(rcpt_mark)
out=$(py tunnel socks5 "$SOCK" reset.e2e.test "$ECHO" --mode reset --data 'ping\n')
expect_eq "client reset: its bytes were echoed first" "echoed 5" "$(echo "$out" | sed -n 2p)"
expect_eq "... and the close receipt says client-reset" "close allowed client-reset 5 5" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,bytes_up,bytes_down)"

# --- slow reader ------------------------------------------------------------------------------
rss0=$(py rss "$EGRESSD_PID")
rm -f slow.ready slow.go
spawn slowclient "$E2E_PY" "$HELPER" tunnel socks5 "$SOCK" slow.e2e.test "$FLOOD" --mode slow \
    --ready-file "$WORK/slow.ready" --go-file "$WORK/slow.go" --timeout 60
SLOW=$SPAWNED
wait_for -s slow.ready
max=$rss0
for i in 1 2 3 4 5 6; do
	sleep 0.5
	r=$(py rss "$EGRESSD_PID")
	[ "$r" -gt "$max" ] && max=$r
done
growth=$((max - rss0))
echo "# egressd VmRSS: ${rss0} kB before, at most ${max} kB while the reader stalled"
expect_eq "slow reader: egressd's RSS grows less than 64 MiB" 1 "$([ $growth -lt 65536 ] && echo 1)"
touch slow.go
wait "$SLOW"
wait_for -s flood.report
sent=$(cat flood.report)
expect_eq "slow reader: then gets every byte" "00 recv ${sent#sent }" "$(cat "$WORK/slowclient.out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "slow reader: all of it was sent" "sent $FLOOD_BYTES" "$(echo "$sent" | cut -d' ' -f1,2)"
expect_eq "slow reader: receipt" "close $FLOOD_BYTES" \
    "$(rcpt --where host=slow.e2e.test --where event=close --wait 10 --fields event,bytes_down)"

# --- idle-timeout (timeout idle 1s) ---------------------------------------------------------
m=$(rcpt_mark)
out=$(py tunnel socks5 "$RUN/idle.sock" idle.e2e.test "$ECHO" --mode hold --hold-secs 8)
expect_eq "idle tunnel: opened" "00" "$(echo "$out" | head -n 1)"
expect_match "idle tunnel: closed by egressd 1 to 4 s after its last byte" "^eof [123]\." "$(echo "$out" | sed -n 2p)"
expect_eq "idle tunnel: close receipt" "close idle-timeout idle-timeout socks5 idle.e2e.test" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,frontend,host)"
out=$(py tunnel connect "$RUN/idle.sock" busy.e2e.test "$ECHO" --mode trickle --hold-secs 3)
expect_match "active tunnel (a byte every 0.3 s) under the same timeout stays open" "^alive [0-9]+$" \
    "$(echo "$out" | sed -n 2p)"
# A byte every 0.6 s, the tunnel opened just after a wall-clock second: the last byte
# before the first check is 0.4 s old but in the previous second.
m=$(rcpt_mark)
out=$(py tunnel connect "$RUN/idle.sock" busy.e2e.test "$ECHO" --mode trickle --hold-secs 2.5 \
    --interval 0.6 --align 0.05)
expect_match "active tunnel (a byte every 0.6 s, from the start of a second) stays open" "^alive [0-9]+$" \
    "$(echo "$out" | sed -n 2p)"
expect_eq "... and its close receipt is the client's, not idle-timeout" "close allowed client-eof" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts relay
finish
