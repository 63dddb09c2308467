#!/bin/bash
# tests/stress/run.sh [SCENARIO ...]: egress's stress suite (make stress; .ci/run runs the
# short profile). Run from a build directory (B, default .); SCENARIO is slow, crash,
# fds, faults or churn (default: all, in that order). Each scenario starts its own egressd
# (the build's, under nice), talks to it over AF_UNIX sockets and to upstreams on
# 127.0.0.1 only, prints its figures as "figure NAME VALUE" lines and a verdict line per
# bar, and fails when a figure misses its bar. Every wait is bounded; every count is
# bounded by the profile.
#
# STRESS_PROFILE=full (default; the issue's counts) or short (the CI profile, < 5 min).
# Each count can be set alone: STRESS_SLOW_LEGIT, STRESS_SLOWLORIS, STRESS_SLOW_IDLE,
# STRESS_CRASH_TUNNELS, STRESS_FD_FLOOD, STRESS_FAULT_COUNT, STRESS_CHURN_TUNNELS,
# STRESS_CHURN_LEASES. STRESS_KEEP=1 keeps the work directory.
#
# Trusts: the build directory's programs; nothing here reaches anything but 127.0.0.1, the
# AF_UNIX sockets in its work directory and the processes it started.
set -u
export LC_ALL=C
PATH=$PATH:/usr/sbin:/sbin
SRC=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${B:-.}" && pwd)
PY=${PYTHON:-python3}
LOAD="$PY $SRC/stressload.py"
PROFILE=${STRESS_PROFILE:-full}
case $PROFILE in
full)
	: "${STRESS_SLOW_LEGIT:=10000}" "${STRESS_SLOWLORIS:=1000}" "${STRESS_SLOW_IDLE:=500}"
	: "${STRESS_CRASH_TUNNELS:=1000}" "${STRESS_FD_FLOOD:=600}" "${STRESS_FAULT_COUNT:=20}"
	: "${STRESS_CHURN_TUNNELS:=1000000}" "${STRESS_CHURN_LEASES:=10000}" ;;
short)
	: "${STRESS_SLOW_LEGIT:=2000}" "${STRESS_SLOWLORIS:=200}" "${STRESS_SLOW_IDLE:=100}"
	: "${STRESS_CRASH_TUNNELS:=200}" "${STRESS_FD_FLOOD:=400}" "${STRESS_FAULT_COUNT:=2}"
	: "${STRESS_CHURN_TUNNELS:=20000}" "${STRESS_CHURN_LEASES:=300}" ;;
*) echo "stress: STRESS_PROFILE is full or short" >&2; exit 2 ;;
esac
EGRESSD=$B/egressd
EGRESSCTL=$B/egressctl/egressctl
EPOLICY=$B/egress-policy
RELAY=$B/egress-relay
TB=$B/bench/tcpbench
for p in "$EGRESSD" "$EGRESSCTL" "$EPOLICY" "$RELAY"; do
	[ -x "$p" ] || { echo "stress: no $p (make first)" >&2; exit 2; }
done
if [ ! -x "$TB" ]; then
	make -C "$B" bench/tcpbench >/dev/null || { echo "stress: cannot build tcpbench" >&2; exit 2; }
fi
T=$(mktemp -d /tmp/egress-stress.XXXXXX)
PIDS=()
FAILED=0

stop_all() {
	local i pid

	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		pid=${PIDS[i]}
		kill -TERM "$pid" 2>/dev/null || continue
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	PIDS=()
}
cleanup() {
	stop_all
	if [ "${STRESS_KEEP:-0}" = 1 ]; then echo "stress: kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
ulimit -n "$(ulimit -Hn)" 2>/dev/null

say() { echo "stress: $*"; }
declare -A FIG
figure() { FIG[$1]=$2; echo "figure $SCENARIO $1 $2"; echo "$SCENARIO $1 $2" >>"$T/figures"; }
# bar NAME VALUE OP BOUND: a verdict; a missed bar fails the suite.
bar() {
	if awk -v v="$2" -v op="$3" -v b="$4" 'BEGIN { if (v !~ /^-?[0-9.]+$/) exit 1
	    if (op == "ge") exit !(v + 0 >= b + 0); if (op == "le") exit !(v + 0 <= b + 0)
	    exit !(v + 0 == b + 0) }'; then
		echo "bar  $SCENARIO $1 = $2 ($3 $4): met"
	else
		echo "bar  $SCENARIO $1 = $2 ($3 $4): NOT MET"
		FAILED=1
	fi
}
# wait_until SECONDS CMD...: polls CMD every 0.1 s for at most SECONDS.
wait_until() {
	local end=$((SECONDS + $1))

	shift
	while ! "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
}
nfds() { local n=0 p; for p in "$@"; do n=$((n + $(ls /proc/"$p"/fd 2>/dev/null | wc -l))); done; echo $n; }
rss_kb() { local n=0 p; for p in "$@"; do n=$((n + $(awk '/^VmRSS/ { print $2 }' /proc/"$p"/status 2>/dev/null || echo 0))); done; echo $n; }
cpu_ticks() { local n=0 p; for p in "$@"; do n=$((n + $(awk '{ print $14 + $15 }' /proc/"$p"/stat 2>/dev/null || echo 0))); done; echo $n; }
HZ=$(getconf CLK_TCK)

# --- the upstream, egressd, its principal -----------------------------------------------

upstream() {
	# Each scenario's own: the last one's "listening" line, still in the file until the
	# shell of the new server truncates it, once gave an empty port (every tunnel of the
	# next scenario refused as malformed).
	rm -f "$T/serve.out"
	"$TB" serve -T 7200 0 >"$T/serve.out" 2>"$T/serve.err" &
	PIDS+=($!)
	wait_until 5 grep -qs '^listening' "$T/serve.out" || { echo "stress: no upstream" >&2; exit 1; }
	UP=$(sed -n 's/^listening .*port=\([0-9]*\).*/\1/p' "$T/serve.out")
	TARGET=127.0.0.1:$UP
}

# egressd_conf DIR [LINES...]: $DIR/egressd.conf with receipts, a MAC key, a lease socket
# and one principal "stress" (allowed every port of 127.0.0.1, no quota in the way).
egressd_conf() {
	local d=$1

	shift
	mkdir -p "$d/run" "$d/policies"
	head -c 32 /dev/urandom >"$d/receipt.key"
	chmod 600 "$d/receipt.key"
	printf 'allow 127.0.0.1 1-65535\npermit-range 127.0.0.0/8\nquota connections 1000000\ntimeout idle 1h\n' \
	    >"$d/stress.policy"
	"$EPOLICY" seal "$d/stress.policy" >"$d/policies/stress.sealed" || exit 1
	{
		echo "runtime-dir $d/run"
		echo "receipts $d/receipts.jsonl"
		echo "receipt-key $d/receipt.key"
		echo "lease $d/run/lease.sock"
		echo "policy-dir $d/policies"
		echo "shutdown-grace 1"
		for l in "$@"; do echo "$l"; done
		echo "principal stress policy $d/stress.policy"
	} >"$d/egressd.conf"
	SOCK=$d/run/stress.sock
	D=$d
}

# egressd_up [NOFILE]: starts egressd on $D/egressd.conf; sets MON, ENG.
egressd_up() {
	local nofile=${1:-$(ulimit -Hn)}

	touch "$D/egressd.err"
	nice -n 10 sh -c 'ulimit -n "$1" && shift && exec "$@"' sh "$nofile" \
	    "$EGRESSD" -d -c "$D/egressd.conf" 2>>"$D/egressd.err" &
	MON=$!
	PIDS+=($MON)
	wait_until 20 grep -q "event=started .*pid=$MON " "$D/egressd.err" ||
	    { echo "stress: egressd did not start: $(tail -5 "$D/egressd.err")" >&2; exit 1; }
	engine
}
engine() { ENG=$(pgrep -P "$MON" -x egressd-engine | head -n 1); [ -n "$ENG" ]; }
egressd_down() {
	kill -TERM "$MON" 2>/dev/null
	wait_until 20 sh -c "! kill -0 $MON 2>/dev/null"
	wait "$MON" 2>/dev/null
}
setups() { "$TB" setups -p "unix-http:$SOCK" -t "$TARGET" "$@"; }
# rcpt_check FILE KEY: the receipt file's figures (stressload.py receipts) and verify_rc,
# the exit status of egressctl receipts verify with the MAC key.
rcpt_check() {
	$LOAD receipts "$1"
	"$EGRESSCTL" receipts verify --file "$1" --key "$2" >"$T/verify.out" 2>&1
	echo "verify_rc=$?"
}
fds_le() { [ "$(nfds "$MON" "$ENG")" -le "$1" ]; }
kv() { awk -v k="$1=" '{ for (i = 1; i <= NF; i++) if (index($i, k) == 1) { print substr($i, length(k) + 1); exit } }'; }

# --- slow clients -----------------------------------------------------------------------

scenario_slow() {
	local out base end ok fail

	egressd_conf "$T/slow"
	egressd_up
	setups -n 200 -c 4 -T 30 >/dev/null || { say "slow: warm-up failed"; FAILED=1; return; }
	base=$(nfds "$MON" "$ENG")
	figure fds_baseline "$base"
	out=$($LOAD slow --sock "$SOCK" --target "$TARGET" --slowloris "$STRESS_SLOWLORIS" \
	    --idle "$STRESS_SLOW_IDLE" --interval 3 --tunnels "$STRESS_SLOW_LEGIT" -c 16 \
	    --min-run 15 2>"$T/slow.err")
	echo "$out"
	ok=$(kv ok <<<"$out"); fail=$(kv fail <<<"$out")
	figure legit_tunnels "$STRESS_SLOW_LEGIT"
	figure legit_ok_pct "$(awk -v o="$ok" -v n="$STRESS_SLOW_LEGIT" 'BEGIN { printf "%.2f", 100 * o / n }')"
	figure setup_p50_ms "$(kv p50_ms <<<"$out")"
	figure setup_p99_ms "$(kv p99_ms <<<"$out")"
	figure setup_max_ms "$(kv max_ms <<<"$out")"
	figure slowloris_closed_by_egressd "$(kv slow_closed_by_egressd <<<"$out")"
	figure idle_closed_by_egressd "$(kv idle_closed_by_egressd <<<"$out")"
	figure slowloris_slots_closed "$(kv slow_slots_closed <<<"$out")"
	figure idle_slots_closed "$(kv idle_slots_closed <<<"$out")"
	wait_until 30 fds_le "$base"
	end=$(nfds "$MON" "$ENG")
	figure fds_after "$end"
	bar legit_ok_pct "$(awk -v o="$ok" -v n="$STRESS_SLOW_LEGIT" 'BEGIN { printf "%.2f", 100 * o / n }')" ge 99.9
	bar fds_after "$end" le "$base"
	# 15 s is past the handshake timeout (10 s): egressd has closed every slot once.
	bar slowloris_slots_closed "${FIG[slowloris_slots_closed]}" eq "$STRESS_SLOWLORIS"
	bar idle_slots_closed "${FIG[idle_slots_closed]}" eq "$STRESS_SLOW_IDLE"
	egressd_down
	rcpt_check "$D/receipts.jsonl" "$D/receipt.key" >"$T/slow.rcpt"
	bar receipts_verify "$(kv verify_rc <"$T/slow.rcpt")" eq 0
	stop_all
}

# --- crash under load -------------------------------------------------------------------

# hold N: N live tunnels (tcpbench idle: each carried one echoed byte); sets HOLD.
hold() {
	rm -f "$T/hold.out"     # the last hold's "ready" must not pass for this one's
	: >"$T/hold.out"
	"$TB" idle -p "unix-http:$SOCK" -t "$TARGET" -n "$1" -c 16 -T 120 -H 600 \
	    >"$T/hold.out" 2>"$T/hold.err" &
	HOLD=$!
	wait_until 120 grep -q '^ready' "$T/hold.out"
}

scenario_crash() {
	local mark n r

	egressd_conf "$T/crash"
	egressd_up
	n=$STRESS_CRASH_TUNNELS
	# 1. the whole daemon: the monitor and its engine at once.
	hold "$n" || { say "crash: $n tunnels not ready: $(head -3 "$T/hold.err")"; FAILED=1; return; }
	figure live_tunnels_at_kill_1 "$n"
	kill -KILL "$MON" "$ENG"
	wait "$MON" 2>/dev/null
	kill -TERM "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null
	wait_until 10 sh -c "! kill -0 $ENG 2>/dev/null"
	r=$SECONDS
	egressd_up
	figure restart_s_1 $((SECONDS - r))
	setups -n 100 -c 4 -T 30 >/dev/null && r=1 || r=0
	bar serves_after_restart_1 "$r" eq 1
	# 2. the engine alone: the monitor closes its tunnels and starts another.
	hold "$n" || { say "crash: $n tunnels not ready: $(head -3 "$T/hold.err")"; FAILED=1; return; }
	figure live_tunnels_at_kill_2 "$n"
	mark=$(grep -c 'event=engine-ready' "$D/egressd.err")
	local old=$ENG
	kill -KILL "$ENG"
	wait_until 30 sh -c "[ \$(grep -c 'event=engine-ready' '$D/egressd.err') -gt $mark ]"
	kill -TERM "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null
	engine
	[ "$ENG" != "$old" ] && r=1 || r=0
	bar new_engine "$r" eq 1
	setups -n 100 -c 4 -T 30 >/dev/null && r=1 || r=0
	bar serves_after_engine_restart "$r" eq 1
	egressd_down
	rcpt_check "$D/receipts.jsonl" "$D/receipt.key" >"$T/crash.rcpt"
	cat "$T/crash.rcpt"
	figure opens "$(kv opens <"$T/crash.rcpt")"
	figure closes "$(kv closes <"$T/crash.rcpt")"
	figure daemon_restart_closes "$(kv restart_closes <"$T/crash.rcpt")"
	bar receipts_verify "$(kv verify_rc <"$T/crash.rcpt")" eq 0
	bar opens "$(kv opens <"$T/crash.rcpt")" eq $((2 * n + 2 * 100))
	bar open_without_close "$(kv unclosed <"$T/crash.rcpt")" eq 0
	bar close_twice_or_orphan "$(kv bad_closes <"$T/crash.rcpt")" eq 0
	bar duplicate_or_missing_seq "$(kv seq_errors <"$T/crash.rcpt")" eq 0
	bar daemon_restart_closes "$(kv restart_closes <"$T/crash.rcpt")" eq $((2 * n))
	stop_all
}

# --- descriptor exhaustion --------------------------------------------------------------

# flood_cpu NAME "PID..." FLOOD-ARGS...: the flood (its connects, then 5 s held); CPU of
# the PIDs from before its first connect to after its last close (% of one core).
flood_cpu() {
	local name=$1 pid=$2 c0 c1 t0 t1 out

	shift 2
	c0=$(cpu_ticks $pid); t0=$(date +%s.%N)
	$LOAD flood "$@" --hold 5 >"$T/flood.out" 2>"$T/flood.err" &
	local fl=$!
	wait "$fl"
	c1=$(cpu_ticks $pid); t1=$(date +%s.%N)
	cat "$T/flood.out"
	figure "${name}_flood_cpu_pct" "$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" -v hz="$HZ" \
	    'BEGIN { printf "%.1f", 100 * (b - a) / hz / (e - s) }')"
	figure "${name}_flood_tunnels_ok" "$(kv ok <"$T/flood.out")"
	figure "${name}_flood_refused" "$(kv refused <"$T/flood.out")"
}

scenario_fds() {
	local r rport lim=256 rlim=64

	egressd_conf "$T/fds"
	egressd_up "$lim"
	figure egressd_nofile "$lim"
	flood_cpu egressd "$MON $ENG" --sock "$SOCK" --target "$TARGET" -n "$STRESS_FD_FLOOD"
	kill -0 "$MON" 2>/dev/null && kill -0 "$ENG" 2>/dev/null && r=1 || r=0
	bar egressd_alive "$r" eq 1
	bar egressd_flood_cpu_pct "${FIG[egressd_flood_cpu_pct]}" le 25
	wait_until 20 setups -n 50 -c 4 -T 5 >/dev/null 2>&1 && r=1 || r=0
	bar egressd_serves_after "$r" eq 1
	# egress-relay under its own limit, in front of the same principal.
	rport=$($TB freeport 1)
	nice -n 10 sh -c 'ulimit -n "$1" && shift && exec "$@"' sh "$rlim" \
	    "$RELAY" --listen "127.0.0.1:$rport" --egress "$SOCK" 2>"$T/relay.err" &
	local relay=$!
	PIDS+=($relay)
	wait_until 10 "$TB" setups -p "http:127.0.0.1:$rport" -t "$TARGET" -n 1 -T 2 >/dev/null 2>&1
	figure relay_nofile "$rlim"
	flood_cpu relay "$relay" --tcp "127.0.0.1:$rport" --target "$TARGET" -n "$STRESS_FD_FLOOD"
	kill -0 "$relay" 2>/dev/null && r=1 || r=0
	bar relay_alive "$r" eq 1
	bar relay_flood_cpu_pct "${FIG[relay_flood_cpu_pct]}" le 25
	wait_until 20 "$TB" setups -p "http:127.0.0.1:$rport" -t "$TARGET" -n 50 -c 4 -T 5 \
	    >/dev/null 2>&1 && r=1 || r=0
	bar relay_serves_after "$r" eq 1
	egressd_down
	stop_all
}

# --- faults on the path -----------------------------------------------------------------

scenario_faults() {
	local base end

	egressd_conf "$T/faults"
	egressd_up
	setups -n 50 -c 2 -T 30 >/dev/null
	base=$(nfds "$MON" "$ENG")
	figure fds_baseline "$base"
	$LOAD faults --sock "$SOCK" --count "$STRESS_FAULT_COUNT" --out "$T/faults.json" \
	    2>"$T/faults.err" || { say "faults: stressload failed: $(tail -3 "$T/faults.err")"; FAILED=1; }
	sed 's/^/  /' "$T/faults.err" | head -20
	wait_until 30 fds_le "$base"
	end=$(nfds "$MON" "$ENG")
	figure fds_after "$end"
	bar fds_after "$end" le "$base"
	egressd_down
	$LOAD faultcheck --cases "$T/faults.json" --receipts "$D/receipts.jsonl" \
	    --count "$STRESS_FAULT_COUNT" >"$T/faults.check"
	cat "$T/faults.check"
	bar cases_exact "$(kv cases_exact <"$T/faults.check")" eq "$(kv cases <"$T/faults.check")"
	rcpt_check "$D/receipts.jsonl" "$D/receipt.key" >"$T/faults.rcpt"
	bar receipts_verify "$(kv verify_rc <"$T/faults.rcpt")" eq 0
	bar open_without_close "$(kv unclosed <"$T/faults.rcpt")" eq 0
	stop_all
}

# --- churn ------------------------------------------------------------------------------

sampler() { # every second: RSS (kB) and descriptors of egressd's two processes
	while kill -0 "$MON" 2>/dev/null; do
		engine >/dev/null 2>&1
		echo "$(rss_kb "$MON" "$ENG") $(nfds "$MON" "$ENG")"
		sleep 1
	done
}

scenario_churn() {
	local s0 s1 out l

	egressd_conf "$T/churn" "receipts-rotate 256M"
	egressd_up
	setups -n 2000 -c 8 -T 60 >/dev/null
	$LOAD leases --sock "$D/run/lease.sock" --policy stress.sealed -n 20 >/dev/null
	sleep 1
	s0="$(rss_kb "$MON" "$ENG") $(nfds "$MON" "$ENG")"
	sampler >"$T/churn.samples" &
	local sp=$!
	out=$(setups -n "$STRESS_CHURN_TUNNELS" -c 8 -T 7200 2>&1) || { say "churn: $out"; FAILED=1; }
	echo "$out"
	l=$($LOAD leases --sock "$D/run/lease.sock" --policy stress.sealed -n "$STRESS_CHURN_LEASES" 2>"$T/leases.err")
	echo "$l"
	sleep 2
	s1="$(rss_kb "$MON" "$ENG") $(nfds "$MON" "$ENG")"
	kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
	figure tunnels "$STRESS_CHURN_TUNNELS"
	figure setups_per_s "$(kv per_s <<<"$out")"
	figure leases "$STRESS_CHURN_LEASES"
	figure leases_ok "$(kv ok <<<"$l")"
	figure rss_kb_start "${s0% *}"
	figure rss_kb_peak "$(awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { print m }' "$T/churn.samples")"
	figure rss_kb_end "${s1% *}"
	figure fds_start "${s0#* }"
	figure fds_peak "$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$T/churn.samples")"
	figure fds_end "${s1#* }"
	bar leases_ok "$(kv ok <<<"$l")" eq "$STRESS_CHURN_LEASES"
	bar rss_kb_end "${s1% *}" le "$(( ${s0% *} * 5 / 4 + 2048 ))"
	bar fds_end "${s1#* }" le "${s0#* }"
	egressd_down
	stop_all
}

# --- main -------------------------------------------------------------------------------

[ $# -gt 0 ] || set -- slow crash fds faults churn
SCENARIO=suite
say "profile $PROFILE, $(nproc) CPUs, $(uname -sr), build $B ($(grep -q -- '--enable-debug' "$B/config.log" 2>/dev/null && echo debug || echo release)), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
for SCENARIO in "$@"; do
	t0=$SECONDS
	say "=== $SCENARIO"
	case $SCENARIO in
	slow | crash | fds | faults | churn) upstream; "scenario_$SCENARIO" ;;
	*) echo "stress: no scenario $SCENARIO" >&2; exit 2 ;;
	esac
	stop_all
	say "$SCENARIO: $((SECONDS - t0)) s"
done
if [ $FAILED -ne 0 ]; then say "FAILED: a bar was not met"; exit 1; fi
say "every bar met"
