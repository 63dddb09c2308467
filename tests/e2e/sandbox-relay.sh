#!/bin/sh
# egress-relay and egress-launch end to end, on the host (outside bwrap), against an egressd
# of the test with principals: the relay refuses a start whose socket is not the --expect
# one, a symlink, not a socket, missing, and any non-loopback --listen (nothing listens
# then); it relays SOCKS5 to egressd (which alone decides), passes a half-close both ways;
# a principal path replaced after start (removed, then a symlink to a listener of the
# test's own, then a listening socket of the test's own at the very path) is never
# followed: new connections still reach egressd, the test's listeners see none; with
# --max-conns 4, of 10 connections held at once 4 get tunnels (egressctl principal list
# and the receipts agree) and 6 are closed at once, and the slots come back when they
# close; a client that stops reading while the upstream floods 256 MiB, or keeps writing
# to an upstream that never reads, does not make the relay grow (VmRSS) and then gets
# every byte; SIGTERM ends the relay with 0. egress-launch outside the sandbox: 125 when
# the relay cannot start (nothing of the workload runs), 126 and 127, and a workload that
# reaches egressd through the relay it started, with no capability left.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
start_server eofreply eofreply --reply-bytes 2000000
EOFR=$PORT
start_server banner bannerfirst --report "$WORK/banner.report"
BANNER=$PORT
FLOOD_BYTES=268435456
start_server flood flood --bytes $FLOOD_BYTES --report "$WORK/flood.report"
FLOOD=$PORT
rm -f sink.port
spawn sink "$E2E_PY" "$SHELPER_SRC" sink --port-file "$WORK/sink.port"
wait_for -s sink.port || { echo "Bail out! sink did not start"; exit 99; }
SINK=$(cat sink.port)
cat > zone <<EOF
ok.e2e.test     A 127.0.0.1
slots.e2e.test  A 127.0.0.1
pin.e2e.test    A 127.0.0.1
flood.e2e.test  A 127.0.0.1
sink.e2e.test   A 127.0.0.1
EOF
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
conf_begin
principal relay open.policy
principal pin open.policy
principal slots open.policy
egressd_start
SOCK=$RUN/relay.sock
devino() { stat -c %d:%i "$1"; }

# relay_start NAME ARGS...: egress-relay on a free loopback port; sets RPORT and RPID.
relay_start() {
	_n=$1
	shift
	RPORT=$(freeport)
	spawn "$_n" "$RELAY" --listen "127.0.0.1:$RPORT" "$@"
	RPID=$SPAWNED
	if ! wait_listen "$RPORT"; then
		echo "Bail out! egress-relay did not listen: $(cat "$WORK/$_n.err")"
		exit 99
	fi
}
# refuse WHAT RC PATTERN ARGS...: egress-relay ARGS must exit RC at once, saying PATTERN,
# and leave nothing listening on the port of its --listen.
refuse() {
	_what=$1 _want=$2 _pat=$3
	shift 3
	timeout 5 "$RELAY" "$@" </dev/null >relay.out 2>relay.err
	_rc=$?
	expect_eq "relay refuses $_what: exit $_want" "$_want" "$_rc"
	expect_match "relay refuses $_what: says why" "$_pat" "$(cat relay.err)"
}
socks() { sh_py socks "$@"; }

# --- refusals at start ---------------------------------------------------------------------------
P=$(freeport)
D=$(devino "$SOCK")
refuse "a socket that is not the --expect one" 1 "not the expected" \
    --listen "127.0.0.1:$P" --egress "$SOCK" --expect "${D%%:*}:$((${D#*:} + 1))"
expect_eq "... and nothing listens" 0 "$(listening "$P")"
refuse "a malformed --expect" 2 "DEV:INO" --listen "127.0.0.1:$P" --egress "$SOCK" --expect 12
ln -s "$SOCK" link.sock
refuse "a symlink as --egress" 1 "link\.sock" --listen "127.0.0.1:$P" --egress "$WORK/link.sock"
: > plain.file
refuse "a regular file as --egress" 1 "not a socket" --listen "127.0.0.1:$P" --egress "$WORK/plain.file"
refuse "a missing --egress" 1 "no-such\.sock" --listen "127.0.0.1:$P" --egress "$WORK/no-such.sock"
for l in "0.0.0.0:$P" "192.0.2.1:$P" "10.0.0.1:$P" "[::]:$P" "[::ffff:127.0.0.1]:$P" \
    "localhost:$P" "[fe80::1]:$P"; do
	refuse "--listen $l (not loopback)" 2 "only loopback|bad address" --listen "$l" --egress "$SOCK"
	expect_eq "... and nothing listens on $l" 0 "$(listening "$P")"
done
refuse "--max-conns 0" 2 "max-conns" --listen "127.0.0.1:$P" --egress "$SOCK" --max-conns 0
refuse "--buffer 100" 2 "buffer" --listen "127.0.0.1:$P" --egress "$SOCK" --buffer 100

# --- relaying -------------------------------------------------------------------------------------
relay_start relay1 --egress "$SOCK" --expect "$(devino "$SOCK")"
R1=$RPORT
R1PID=$RPID
expect_eq "relay with the right --expect: SOCKS5 through it to an allowed upstream" "00 echo-ok" \
    "$(socks "$R1" ok.e2e.test "$ECHO" --mode echo --size 100000 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "relay: egressd alone decides (a port the policy refuses: SOCKS5 0x02)" "02" \
    "$(socks "$R1" ok.e2e.test 80)"
expect_eq "relay: egressd's receipt names the principal of the socket" "deny relay ok.e2e.test not-allowlisted" \
    "$(rcpt --where port=80 --fields event,principal,host,reason)"
expect_eq "relay: runs with NoNewPrivs under its own seccomp filter" \
    "NoNewPrivs=1 Seccomp=2" "$(sh_py status "$R1PID" | sed 's/.* NoNewPrivs/NoNewPrivs/')"
out=$(socks "$R1" ok.e2e.test "$EOFR" --mode halfclose --data "sent then shut")
n=$(printf 'sent then shut' | sha256sum | cut -d' ' -f1)
expect_eq "half-close (client): the upstream saw the client's EOF after its data" \
    "first got 14 $n" "$(echo "$out" | sed -n 3p)"
expect_eq "half-close (client): and the client still got the whole answer" \
    "recv $(( $(printf 'got 14 %s\n' "$n" | wc -c) + 2000000 ))" "$(echo "$out" | sed -n 2p)"
rm -f banner.report
out=$(socks "$R1" ok.e2e.test "$BANNER" --mode reverse --data "client speaks after the banner")
expect_eq "half-close (upstream): the client got the banner and EOF, and could still speak" \
    "00 banner banner from upstream after 0" "$(words "$out")"
wait_for -s banner.report
expect_eq "half-close (upstream): the upstream got the client's bytes after its own EOF" \
    "recv 30 $(printf 'client speaks after the banner' | sha256sum | cut -d' ' -f1)" "$(cat banner.report)"

# --- the pinned socket: a path replaced after start is never followed -------------------------------
PIN=$RUN/pin.sock
relay_start relaypin --egress "$PIN" --expect "$(devino "$PIN")"
RP=$RPORT
expect_eq "pinned relay: works before the path changes" "00 echo-ok" \
    "$(socks "$RP" pin.e2e.test "$ECHO" --mode echo | tr '\n' ' ' | sed 's/ $//')"
m=$(rcpt_mark)
rm -f "$PIN" evil.count evil.ready
spawn evil "$E2E_PY" "$SHELPER_SRC" unixcount "$WORK/evil.sock" --count-file "$WORK/evil.count" \
    --ready-file "$WORK/evil.ready"
wait_for -s evil.ready
ln -s "$WORK/evil.sock" "$PIN"
r1=$(socks "$RP" pin.e2e.test "$ECHO" --mode echo | tr '\n' ' ' | sed 's/ $//')
expect_match "path replaced by a symlink to another listener: the relay still reaches egressd or fails" \
    "^(00 echo-ok|closed|reset)$" "$r1"
echo "# after the symlink: $r1"
expect_eq "path replaced by a symlink: the other listener saw no connection" 0 \
    "$(cat evil.count 2>/dev/null | wc -l | tr -d ' ')"
rm -f "$PIN" evil2.count evil2.ready
spawn evil2 "$E2E_PY" "$SHELPER_SRC" unixcount "$PIN" --count-file "$WORK/evil2.count" \
    --ready-file "$WORK/evil2.ready"
wait_for -s evil2.ready
r2=$(socks "$RP" pin.e2e.test "$ECHO" --mode echo | tr '\n' ' ' | sed 's/ $//')
expect_match "path replaced by a listening socket of another: the relay still reaches egressd or fails" \
    "^(00 echo-ok|closed|reset)$" "$r2"
echo "# after the replacement: $r2"
expect_eq "path replaced by a socket: the new listener saw no connection" 0 \
    "$(cat evil2.count 2>/dev/null | wc -l | tr -d ' ')"
n00=$(printf '%s\n%s\n' "$r1" "$r2" | grep -c '^00')
expect_eq "path replaced: each tunnel after it is egressd's, for the pinned principal" "$n00" \
    "$(py rcpt "$RCPT" --skip "$m" --where event=close --where principal=pin --count --wait 10 --min "$n00")"

# --- slots --------------------------------------------------------------------------------------------
relay_start relayslots --egress "$RUN/slots.sock" --max-conns 4
RS=$RPORT
m=$(rcpt_mark)
touch slots.hold
rm -f slots.status
spawn slots "$E2E_PY" "$SHELPER_SRC" slots "$RS" slots.e2e.test "$ECHO" 10 --closed-within 1 \
    --status-file "$WORK/slots.status" --hold-file "$WORK/slots.hold"
wait_for -s slots.status
expect_eq "--max-conns 4, 10 connections at once: 6 closed within 1 s, 4 get tunnels" \
    "closed 6 open 4 tunnels 4" "$(cat slots.status)"
expect_eq "egressctl principal list: 4 live tunnels on the principal" 4 \
    "$("$EGRESSCTL" -s "$CTL" principal list | awk '$1 == "slots" { print $4 }')"
expect_eq "receipts: 4 tunnels opened for the principal" 4 \
    "$(py rcpt "$RCPT" --skip "$m" --where principal=slots --where event=open --count)"
expect_eq "over the limit the relay does not even connect to egressd (no receipt at all)" 4 \
    "$(py rcpt "$RCPT" --skip "$m" --where principal=slots --count)"
rm -f slots.hold
wait "$SPAWNED"
slots_free() { [ "$("$EGRESSCTL" -s "$CTL" principal list | awk '$1 == "slots" { print $4 }')" = 0 ]; }
wait_until slots_free
expect_eq "the slots come back when the tunnels close" "00 echo-ok" \
    "$(socks "$RS" slots.e2e.test "$ECHO" --mode echo | tr '\n' ' ' | sed 's/ $//')"

# --- the buffer bound --------------------------------------------------------------------------------
relay_start relayflood --egress "$SOCK"
RF=$RPORT
RFPID=$RPID
rss0=$(py rss "$RFPID")
rm -f stall.ready stall.go
spawn stall "$E2E_PY" "$SHELPER_SRC" socks "$RF" flood.e2e.test "$FLOOD" --mode stall \
    --ready-file "$WORK/stall.ready" --go-file "$WORK/stall.go" --timeout 60
STALL=$SPAWNED
wait_for -s stall.ready
max=$rss0
for _ in 1 2 3 4 5 6; do
	sleep 0.5
	r=$(py rss "$RFPID")
	[ "$r" -gt "$max" ] && max=$r
done
echo "# egress-relay VmRSS: $rss0 kB before, at most $max kB while the client did not read"
expect_eq "a client that stops reading: the relay grows less than 32 MiB" 1 \
    "$([ $((max - rss0)) -lt 32768 ] && echo 1)"
touch stall.go
wait "$STALL"
wait_for -s flood.report
expect_eq "... then it gets every byte the upstream sent" \
    "00 recv $FLOOD_BYTES $(cut -d' ' -f3 flood.report)" "$(words "$(cat stall.out)")"
rss0=$(py rss "$RFPID")
rm -f push.ready push.go
spawn push "$E2E_PY" "$SHELPER_SRC" socks "$RF" sink.e2e.test "$SINK" --mode push \
    --ready-file "$WORK/push.ready" --go-file "$WORK/push.go" --timeout 60
PUSH=$SPAWNED
wait_for -s push.ready
r=$(py rss "$RFPID")
echo "# a client writing to an upstream that never reads: $(cat push.ready); relay VmRSS $rss0 -> $r kB"
expect_eq "a client that keeps writing while the upstream does not read is stopped (backpressure)" 1 \
    "$(awk '{ print ($2 < 128 * 1048576) ? 1 : 0 }' push.ready)"
expect_eq "... and the relay grows less than 32 MiB" 1 "$([ $((r - rss0)) -lt 32768 ] && echo 1)"
touch push.go
wait "$PUSH"

stop "$R1PID" 2>/dev/null
kill -TERM "$RFPID"
wait "$RFPID"
expect_eq "SIGTERM: the relay exits 0" 0 "$?"

# --- egress-launch outside the sandbox ---------------------------------------------------------------
lcase() {
	_what=$1 _want=$2
	shift 2
	rm -f "$BOX/ran"
	ecmd "$LAUNCH" "$@"
	expect_eq "egress-launch: $_what: exit $_want" "$_want" "$rc" || true
	[ "$rc" = "$_want" ] || echo "# stderr: $err"
}
P=$(freeport)
lcase "the relay cannot start (--expect differs)" 125 --egress "$SOCK" --listen "127.0.0.1:$P" \
    --expect 1:1 -- touch ran
expect_match "... says so" "egress-relay did not start listening" "$err"
expect_eq "... and the workload did not run" 0 "$([ -e "$BOX/ran" ] && echo 1 || echo 0)"
lcase "no principal socket" 125 --egress "$WORK/no-such.sock" --listen "127.0.0.1:$P" -- touch ran
expect_eq "... and the workload did not run" 0 "$([ -e "$BOX/ran" ] && echo 1 || echo 0)"
lcase "a non-loopback --listen" 125 --egress "$SOCK" --listen "0.0.0.0:$P" -- touch ran
expect_eq "... and the workload did not run" 0 "$([ -e "$BOX/ran" ] && echo 1 || echo 0)"
lcase "no --egress (a usage error)" 2 -- touch ran
lcase "not found" 127 --egress "$SOCK" --listen "127.0.0.1:$P" -- no-such-command-e2e
printf '#!/bin/sh\ntouch ran\n' > "$BOX/notexec"
chmod 644 "$BOX/notexec"
lcase "not executable" 126 --egress "$SOCK" --listen "127.0.0.1:$P" -- ./notexec
P=$(freeport)
# shellcheck disable=SC2016
lcase "a workload through the relay it started" 0 --egress "$SOCK" --listen "127.0.0.1:$P" -- \
    sh -c '"$1" sandbox_helper.py socks "${EGRESS_RELAY#*:}" ok.e2e.test "$2" --mode echo &&
	"$1" sandbox_helper.py status' sh "$SBX_PY" "$ECHO"
expect_eq "egress-launch: the workload reached egressd through EGRESS_RELAY, with no capability left" \
    "00 echo-ok CapInh=0000000000000000 CapPrm=0000000000000000 CapEff=0000000000000000 CapBnd=0000000000000000 CapAmb=0000000000000000 NoNewPrivs=1 Seccomp=2" \
    "$(words "$out")"
# The relay stops with the workload, maybe a moment after egress-launch returned.
not_listening() { [ "$(listening "$P")" = 0 ]; }
wait_until not_listening
expect_eq "egress-launch: its relay is gone with the workload" 0 "$(listening "$P")"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts sandbox-relay
finish
