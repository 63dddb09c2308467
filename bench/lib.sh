# shellcheck shell=bash disable=SC2034 # the knobs and PIDs set here are the callers' variables
# bench/lib.sh: what the benchmarks that run egressd share (egressd-bench.sh,
# transparent-bench.sh): the knobs, the budget, the clean-up of what they started, the
# tcpbench upstream, egressd's configuration and start, one tcpbench measurement, and the
# ratios and verdicts of the report. Sourced by bash; the caller sets BENCH_PROG (its name
# in messages), BENCH_LABEL_W (the report's label column), SRC (this directory) and B
# (the build directory) before it sources this.
#
# Trusts: the build directory's programs and tcpbench's result lines (key=value); nothing
# here talks to anything but 127.0.0.1, AF_UNIX sockets in $T and the processes in PIDS.

set -u
export LC_ALL=C
PATH=$PATH:/usr/sbin:/sbin

die() {
	echo "$BENCH_PROG: $*" >&2
	exit 1
}

# Percent of all CPUs busy over one second (/proc/stat): other work skews every number.
busy_pct() {
	local a b

	a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
	sleep 1
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x); split(b, y); t = y[1] - x[1] + y[2] - x[2]
		printf "%.0f", (t > 0 ? 100 * (y[1] - x[1]) / t : 0) }'
}

# The knobs both benchmarks read; $1 is the default budget in seconds. The budget counts
# from here.
bench_knobs() {
	BULK=${BENCH_BULK:-1G}
	ROUNDS=${BENCH_ROUNDS:-3}
	SEQ=${BENCH_SEQ:-3000}
	PAR=${BENCH_PAR:-8000}
	CONC=${BENCH_CONC:-8}
	BUDGET=${BENCH_BUDGET:-$1}
	PIN=${BENCH_PIN:-1}
	command -v taskset >/dev/null 2>&1 || PIN=0
	ALLCPUS=0-$(($(nproc) - 1))
	HZ=$(getconf CLK_TCK)
	STARTED=$SECONDS
}

# What was started, in order; cleanup stops it in reverse. BENCH_KILL_CHILDREN=1 first
# sends TERM to each one's children (socat forks one per connection), by id. A caller's
# bench_on_exit, when defined, runs after them.
PIDS=()
BENCH_KILL_CHILDREN=0

stop_pid() {
	local pid=$1 i

	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 1 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

cleanup() {
	local i pid child

	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		pid=${PIDS[i]}
		if [ "$BENCH_KILL_CHILDREN" = 1 ]; then
			for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
				kill -TERM "$child" 2>/dev/null
			done
		fi
		stop_pid "$pid"
	done
	declare -F bench_on_exit >/dev/null && bench_on_exit
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "$BENCH_PROG: kept $T" >&2
	else
		rm -rf "$T"
	fi
}

# The temporary directory T, removed on exit with everything started; more descriptors.
bench_tmpdir() {
	T=$(mktemp -d "/tmp/$BENCH_PROG.XXXXXX") || die "no temporary directory"
	trap cleanup EXIT
	trap 'exit 130' INT TERM HUP
	ulimit -n "$(ulimit -Hn)" 2>/dev/null
}

left() {
	echo $((BUDGET - (SECONDS - STARTED)))
}

# Seconds for one tcpbench call: at most $1, never past the budget.
cap() {
	local l

	l=$(left)
	[ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}

# TB: the build directory's tcpbench, or one compiled here when it is missing or (with $1)
# lacks the verb $1 (a build older than the verb).
bench_tcpbench() {
	TB=$B/bench/tcpbench
	if [ ! -x "$TB" ] || { [ -n "${1:-}" ] && ! "$TB" "$1" 2>&1 | grep -q 'usage'; }; then
		TB=$T/tcpbench
		${CC:-cc} -O2 -o "$TB" "$SRC/tcpbench.c" || die "cannot build tcpbench"
	fi
}

# The upstream: tcpbench serve on 127.0.0.1; sets UP (its port) and SERVE_PID.
bench_serve() {
	local _

	"$TB" serve -T 900 0 >"$T/serve.out" 2>"$T/serve.err" &
	PIDS+=($!)
	SERVE_PID=$!
	for _ in $(seq 1 50); do
		grep -q '^listening' "$T/serve.out" && break
		sleep 0.1
	done
	UP=$(sed -n 's/^listening .*port=\([0-9]*\).*/\1/p' "$T/serve.out")
	[ -n "$UP" ] || die "tcpbench serve did not start: $(cat "$T/serve.err")"
}

# Polls until path $1 carries one setup (to target $2, if any), at most 15 s; on failure
# $T/ready.err says why.
bench_ready() {
	local _

	for _ in $(seq 1 150); do
		"$TB" setups -p "$1" ${2:+-t "$2"} -n 1 -T 2 >/dev/null 2>"$T/ready.err" && return 0
		sleep 0.1
	done
	return 1
}

# A principal's policy $1: allowed host $2 on the upstream's port only, loopback permitted,
# no limit in the way; $3, if any, one more line.
bench_policy() {
	{
		echo "allow $2 $UP"
		echo "permit-range 127.0.0.0/8"
		echo "quota connections 100000"
		echo "timeout idle 1h"
		[ -n "${3:-}" ] && echo "$3"
	} >"$1"
}

# egressd with receipts (with HMAC when egress-policy made a key) and hosts $T/hosts, one
# principal per argument ("NAME policy FILE"); sets KEYLINE and EGRESSD_PID.
bench_egressd() {
	local p

	KEYLINE=
	if [ -x "$B/egress-policy" ] && "$B/egress-policy" keygen "$T/receipt.key" >/dev/null 2>&1
	then
		KEYLINE="receipt-key $T/receipt.key"
	fi
	{
		echo "runtime-dir $T/run"
		echo "receipts $T/receipts.jsonl"
		echo "$KEYLINE"
		echo "hosts $T/hosts"
		echo "shutdown-grace 1"
		for p in "$@"; do
			echo "principal $p"
		done
	} >"$T/egressd.conf"
	"$B/egressd" -c "$T/egressd.conf" 2>"$T/egressd.log" &
	PIDS+=($!)
	EGRESSD_PID=$!
}

# Waits at most 5 s for the socket $1 to appear.
bench_wait_socket() {
	local _

	for _ in $(seq 50); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}

# Runs one tcpbench call (under $WRAP); prints the value of key $1 of its result line,
# or "fail" / "skip".
WRAP=()
measure() {
	local key=$1 out

	shift
	if [ "$(left)" -lt 5 ]; then
		echo skip
		return
	fi
	if out=$("${WRAP[@]}" "$TB" "$@" 2>"$T/tb.err"); then
		sed -n "s/.* $key=\([0-9.]*\).*/\1/p" <<<"$out"
		echo "$out" >>"$T/results.txt"
	else
		echo "$BENCH_PROG: tcpbench $*: $(head -3 "$T/tb.err")" >&2
		echo fail
	fi
}

# 1G, 512M, 64K or a plain count of bytes.
bytes_of() {
	case $1 in
	*G) echo $((${1%G} << 30)) ;;
	*M) echo $((${1%M} << 20)) ;;
	*K) echo $((${1%K} << 10)) ;;
	*) echo "$1" ;;
	esac
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b == 0) { print "n/a"; exit }
		printf "%.2f", a / b }'
}

# $1 value, $2 op (ge|le), $3 bound
verdict() {
	awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
		if (v !~ /^[0-9.]+$/) { print "n/a"; exit }
		ok = op == "ge" ? v + 0 >= t + 0 : v + 0 <= t + 0
		print ok ? "met" : "NOT MET" }'
}

# A report row with a target: label $1, value $2, met when value $3 (ge|le) $4.
bench_target() {
	printf '%-*s %7s  (target %s %s)  %s\n' "$BENCH_LABEL_W" "$1" "$2" \
	    "$([ "$3" = ge ] && echo '>=' || echo '<=')" "$4" "$(verdict "$2" "$3" "$4")"
}

# A report row without one: a note $1 (may be empty), label $2, value $3.
bench_row() {
	printf '%-*s %7s%s\n' "$BENCH_LABEL_W" "$2" "$3" "${1:+  ($1)}"
}

# The report's first line and the line on how busy the CPUs were ($1, "?" if unknown).
bench_report_head() {
	echo
	echo "$BENCH_PROG: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, Linux $(uname -r)," \
	    "$((SECONDS - STARTED)) s"
}

bench_busy_line() {
	echo "  CPUs busy before the start: $1%$([ "$1" != "?" ] && [ "$1" -gt 20 ] &&
	    echo ": other work was running, the numbers are skewed")"
}
