#!/bin/bash
#
# transparent-bench.sh: the performance benchmark of names and transparent connections
# inside the sandbox (issue 11, "Performance"). In one run, in a network namespace of its
# own, it measures:
#
#   transparent  a client connects straight to the synthetic address that egressd gave
#                for the upstream's name (EGR1 DNS question verb), as a program inside the
#                sandbox does: the namespace's route and nft REDIRECT (docs/sandbox.md
#                "Transparent connections") -> egress-relay --transparent -> egressd's
#                principal socket (EGR1 verb 2) -> the upstream on 127.0.0.1
#   proxied      the same client through egress-relay's proxy listener: HTTP CONNECT to the
#                same name and port -> egress-relay -> egressd -> the same upstream
#   direct       the client to the upstream with nothing between (for scale only)
#
# for each: bulk MiB/s (BENCH_BULK down through one tunnel, best of BENCH_ROUNDS) and tunnel
# setups/s (connect, 1 byte echoed, close; sequential and BENCH_CONC-way, best of
# BENCH_REPS), the two paths taking turns so that drift hits both alike, and the CPU time
# egress-relay and egressd spent per setup. The target: transparent/proxied >= 0.90.
#
#   stub         UDP A queries to the sandbox's stub resolver (launcher/dnsstub.c) as it
#                runs in production: started by egress-launch on 127.0.0.53:53 in this
#                namespace, forwarding each question to egressd over the principal socket.
#                The client (tcpbench dns) is egress-launch's workload, under its seccomp
#                filter; it keeps one query outstanding at a time (target >= 20 000 q/s),
#                then BENCH_DNS_OUT at once from as many source ports.
#
# Pinning as in egressd-bench.sh: bulk, sequential setups and the first stub run have the
# client, egress-relay (and the stub), egressd and the upstream on CPU 0; a chain of
# wakeups across CPUs on a VM costs more than the work itself and varies severalfold.
# BENCH_PIN=0 pins nothing. The targets are judged on the pinned figures.
#
# Needs root (unshare -n, ip, nft); uses only the loopback of the namespace it makes and a
# temporary directory, and kills what it started (the namespace goes with its processes).
#
# usage: bench/transparent-bench.sh [BUILD_DIR]
#   BUILD_DIR (or $EGRESS_BUILD, default the current directory) holds egressd, egress-relay,
#   egress-launch, egress-policy and bench/tcpbench (compiled from here when missing).
# Knobs (environment): BENCH_BULK (bytes, default 1G), BENCH_ROUNDS (3), BENCH_SEQ (3000),
# BENCH_PAR (8000), BENCH_CONC (8), BENCH_REPS (3), BENCH_DNS (50000 queries per run),
# BENCH_DNS_OUT (8), BENCH_TW_REUSE (1), BENCH_BUDGET (seconds, 240), BENCH_PIN (1),
# BENCH_KEEP=1 keeps the temporary directory.

SRC=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-${EGRESS_BUILD:-.}}" && pwd) || exit 2
BENCH_PROG=transparent-bench
BENCH_LABEL_W=44             # the report's label column
# shellcheck source=bench/lib.sh
. "$SRC/lib.sh"

# First the namespace: everything below runs in it, and dies with it.
if [ "${TRANSPARENT_BENCH_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || die "needs root (a network namespace of its own, a route, nft)"
	for t in unshare ip nft; do
		command -v "$t" >/dev/null 2>&1 || die "needs $t"
	done
	exec env TRANSPARENT_BENCH_NS=1 TRANSPARENT_BENCH_BUSY="$(busy_pct)" \
	    unshare -n -- "$0" "$B"
fi

bench_knobs 240
REPS=${BENCH_REPS:-3}
DNSN=${BENCH_DNS:-50000}
DNSOUT=${BENCH_DNS_OUT:-8}
BUSY0=${TRANSPARENT_BENCH_BUSY:-?}
NAME=up.bench.test

for p in egressd egress-relay egress-launch egress-policy; do
	[ -x "$B/$p" ] || die "no $p in $B (build it there, or pass the build directory)"
done

bench_tmpdir
bench_tcpbench dns

# --- the namespace: loopback, the synthetic range local, nft REDIRECT ---------------------

read -r P_RELAY P_TRANS P_LAUNCH <<<"$("$TB" freeport 3)"
ip link set lo up || die "ip link set lo up failed"
# A fresh namespace has tcp_tw_reuse 2: a port in TIME_WAIT is reused for a new connection
# only between loopback addresses, and one to a synthetic address (from a synthetic source
# address) is not such a connection: the client's ~28k ephemeral ports to one address and
# port run out after ~28k setups in 60 s, which the 8-way runs make (EADDRNOTAVAIL). The
# proxied path's connections are loopback ones and reuse. 1 gives both paths the same
# reuse, so that the ratio is the relay's and egressd's; BENCH_TW_REUSE=2 shows the rest.
sysctl -q -w "net.ipv4.tcp_tw_reuse=${BENCH_TW_REUSE:-1}" || die "sysctl tcp_tw_reuse failed"
TW_REUSE=$(sysctl -n net.ipv4.tcp_tw_reuse 2>/dev/null)
ip route add local 198.18.0.0/15 dev lo || die "ip route add failed"
printf 'table ip transparent_bench {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ip daddr 198.18.0.0/15 meta l4proto tcp redirect to :%s\n }\n}\n' \
    "$P_TRANS" | nft -f - || die "nft failed"

# --- the upstream, egressd, egress-relay ---------------------------------------------------

bench_serve

# One principal allowed the upstream by name (static in egressd's hosts), receipts with
# HMAC as in production, no limit in the way.
echo "127.0.0.1 $NAME" >"$T/hosts"
bench_policy "$T/bench.policy" "$NAME"
bench_egressd "bench policy $T/bench.policy"
SOCK=$T/run/bench.sock
bench_wait_socket "$SOCK" || die "egressd did not start: $(tail -3 "$T/egressd.log")"

# One relay carries both paths: the proxy listener and the transparent one.
"$B/egress-relay" --listen "127.0.0.1:$P_RELAY" --transparent "127.0.0.1:$P_TRANS" \
    --egress "$SOCK" --max-conns 4096 2>"$T/relay.err" &
PIDS+=($!)
RELAY_PID=$!

SYN=$("$TB" ask -u "$SOCK" -q "$NAME" 2>"$T/ask.err") ||
	die "egressd gave $NAME no address: $(cat "$T/ask.err")"
case $SYN in
198.18.* | 198.19.*) ;;
*) die "$NAME's address $SYN is not in the synthetic range" ;;
esac

declare -A PATHOF TARGETOF
NAMES=(direct proxied transparent)
PATHOF[direct]=tcp:127.0.0.1:$UP
PATHOF[proxied]=http:127.0.0.1:$P_RELAY
TARGETOF[proxied]=$NAME:$UP
PATHOF[transparent]=tcp:$SYN:$UP

# Polls until a path carries one setup, at most 15 s.
for n in "${NAMES[@]}"; do
	bench_ready "${PATHOF[$n]}" "${TARGETOF[$n]:-}" || die "$n (${PATHOF[$n]}) never carried a setup: $(cat "$T/ready.err")"
done

# --- measurements -------------------------------------------------------------------------

# Sets the CPUs of the upstream, egress-relay and egressd.
pin() {
	local pid

	for pid in "$SERVE_PID" "$RELAY_PID" "$EGRESSD_PID"; do
		taskset -a -p -c "$1" "$pid" >/dev/null 2>&1
	done
}
pinned() {
	if [ "$PIN" = 1 ]; then
		pin 0
		WRAP=(taskset -c 0)
	fi
}
unpinned() {
	if [ "$PIN" = 1 ]; then
		pin "$ALLCPUS"
		WRAP=()
	fi
}

# The larger of two numbers; a number beats "fail"/"skip".
best() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/) { print b; exit }
		if (b !~ /^[0-9.]+$/) { print a; exit }
		print (a + 0 >= b + 0 ? a : b) }'
}

# CPU ticks of egress-relay and egressd together.
ticks() {
	local pid sum=0 v

	for pid in "$RELAY_PID" "$EGRESSD_PID"; do
		v=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $12 + $13 }')
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

declare -A BULK_R BULKF_R SEQ_R PAR_R CPU_R TK
for n in "${NAMES[@]}"; do
	BULK_R[$n]=skip BULKF_R[$n]=- SEQ_R[$n]=skip PAR_R[$n]=skip CPU_R[$n]=0 TK[$n]=0
done

# $1 result array, $2 goal (bulk|setups), then tcpbench's options: one call per path,
# in turn; the array keeps each path's best. Setups count egress-relay's and egressd's
# CPU into TK.
one_round() {
	local -n res=$1
	local kind=$2 n v t0
	shift 2

	for n in "${NAMES[@]}"; do
		t0=$(ticks)
		if [ "$kind" = bulk ]; then
			v=$(measure best_mibps bulk -p "${PATHOF[$n]}" \
			    ${TARGETOF[$n]:+-t "${TARGETOF[$n]}"} -n "$BULK" -r 1 -T "$(cap 60)")
		else
			v=$(measure per_s setups -p "${PATHOF[$n]}" \
			    ${TARGETOF[$n]:+-t "${TARGETOF[$n]}"} "$@" -T "$(cap 60)")
			TK[$n]=$((TK[$n] + $(ticks) - t0))
		fi
		# shellcheck disable=SC2004 # res is associative: $n is its key
		res[$n]=$(best "${res[$n]}" "$v")
	done
}

echo "transparent-bench: measuring ${NAMES[*]} (synthetic $SYN), $(left) s of budget" >&2
pinned
for _ in $(seq 1 "$ROUNDS"); do one_round BULK_R bulk; done
for _ in $(seq 1 "$REPS"); do one_round SEQ_R setups -n "$SEQ" -c 1; done
unpinned
for _ in $(seq 1 "$REPS"); do one_round PAR_R setups -n "$PAR" -c "$CONC"; done
if [ "$PIN" = 1 ]; then
	for _ in $(seq 1 "$ROUNDS"); do one_round BULKF_R bulk; done
fi
for n in "${NAMES[@]}"; do
	CPU_R[$n]=$(awk -v t="${TK[$n]}" -v hz="$HZ" -v c=$(((SEQ + PAR) * REPS)) \
	    'BEGIN { printf "%.1f", t / hz * 1e6 / c }')
done

# --- the stub resolver, through egress-launch ---------------------------------------------

# CPU ticks (utime + stime) of one process.
pticks() {
	local v

	v=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }')
	echo "${v:-0}"
}

# $1 outstanding queries; egress-launch runs under $WRAP, so its relay, its stub and the
# client (its workload) share the pin. The workload is a shell that runs the client and
# then reports the stub's CPU time (the stub is its child: egress-launch forked it before
# it exec'd). Prints per_s, p50_us, lost, and the CPU microseconds per query of the stub,
# egressd and the client.
stub_run() {
	local out e0 e1 st

	if [ "$(left)" -lt 10 ]; then
		echo "skip - - - - -"
		return
	fi
	e0=$(pticks "$EGRESSD_PID")
	# shellcheck disable=SC2016 # the workload's own $$ and $@
	if out=$("${WRAP[@]}" "$B/egress-launch" --egress "$SOCK" --listen "127.0.0.1:$P_LAUNCH" \
	    -- sh -c '"$@" || exit $?
		for p in $(cat /proc/$$/task/$$/children); do
			s=$(cat /proc/$p/stat 2>/dev/null) && echo "child $s"
		done
		exit 0' sh "$TB" dns -s 127.0.0.53:53 -q "$NAME" -n "$DNSN" -c "$1" -W 1000 \
	    -T "$(cap 60)" 2>"$T/dns.err"); then
		e1=$(pticks "$EGRESSD_PID")
		echo "$out" >>"$T/results.txt"
		st=$(grep '^child [0-9]* (egress-launch)' <<<"$out" | sed 's/.*) //' |
		    awk '{ print $12 + $13 }')
		grep '^dns ' <<<"$out" | sed -n 's/.* per_s=\([0-9.]*\) p50_us=\([0-9]*\) .* lost=\([0-9]*\) .* cpu_us_per_q=\([0-9.]*\).*/\1 \2 \3 \4/p' |
		    awk -v st="${st:-x}" -v e=$((e1 - e0)) -v hz="$HZ" -v n="$DNSN" '{
			s = st ~ /^[0-9]+$/ ? sprintf("%.1f", st / hz * 1e6 / n) : "-"
			printf "%s %s %s %s %.1f %s\n", $1, $2, $3, s, e / hz * 1e6 / n, $4 }'
	else
		echo "transparent-bench: stub, $1 outstanding: $(head -3 "$T/dns.err")" >&2
		echo "fail - - - - -"
	fi
}

declare -A DNS_R DNS_P50 DNS_LOST DNS_CPU
for k in pin1 free1 freeN; do
	DNS_R[$k]=skip DNS_P50[$k]=- DNS_LOST[$k]=- DNS_CPU[$k]="- - -"
done
# Best of REPS (the stub and the relay start afresh each run).
stub_best() {
	local key=$1 out=$2 r p l cs ce cc i

	for i in $(seq 1 "$REPS"); do
		read -r r p l cs ce cc <<<"$(stub_run "$out")"
		if [[ $r =~ ^[0-9.]+$ ]] && { ! [[ ${DNS_R[$key]} =~ ^[0-9.]+$ ]] ||
		    awk -v a="$r" -v b="${DNS_R[$key]}" 'BEGIN { exit !(a + 0 > b + 0) }'; }; then
			DNS_R[$key]=$r DNS_P50[$key]=$p DNS_LOST[$key]=$l DNS_CPU[$key]="$cs $ce $cc"
		elif ! [[ ${DNS_R[$key]} =~ ^[0-9.]+$ ]]; then
			DNS_R[$key]=$r
		fi
	done
}
echo "transparent-bench: measuring the stub resolver, $(left) s of budget" >&2
if [ "$PIN" = 1 ]; then
	pin 0
	WRAP=(taskset -c 0)
	stub_best pin1 1
	unpinned
fi
stub_best free1 1
stub_best freeN "$DNSOUT"

# --- report -------------------------------------------------------------------------------

if [ "$PIN" = 1 ]; then ONE="1 CPU"; else ONE=free; fi
bench_report_head
echo "  egressd, egress-relay, egress-launch from $B; upstream tcpbench on 127.0.0.1:$UP" \
    "as $NAME (synthetic $SYN); receipts ${KEYLINE:+with HMAC}"
bench_busy_line "$BUSY0"
if [ "$PIN" = 1 ]; then
	echo "  bulk: $BULK down, best of $ROUNDS, all on CPU 0 and again unpinned;" \
	    "setups: $SEQ sequential all on CPU 0, $PAR $CONC-way unpinned, best of $REPS;" \
	    "paths in turn"
else
	echo "  bulk: $BULK down, best of $ROUNDS; setups: $SEQ sequential, $PAR $CONC-way," \
	    "best of $REPS; nothing pinned; paths in turn"
fi
echo "  net.ipv4.tcp_tw_reuse $TW_REUSE in the namespace (BENCH_TW_REUSE; the default of a" \
    "fresh namespace is 2)"
echo "  CPU: egress-relay + egressd time (/proc/PID/stat) per setup over all setups runs"
echo
printf '%-12s %9s %9s %9s %9s %9s\n' "" bulk bulk setups/s setups/s "CPU us"
printf '%-12s %9s %9s %9s %9s %9s\n' "" "MiB/s" "MiB/s" seq "${CONC}-way" "per"
printf '%-12s %9s %9s %9s %9s %9s\n' path "$ONE" free "$ONE" free setup
for n in "${NAMES[@]}"; do
	printf '%-12s %9s %9s %9s %9s %9s\n' "$n" "${BULK_R[$n]}" "${BULKF_R[$n]}" \
	    "${SEQ_R[$n]}" "${PAR_R[$n]}" "${CPU_R[$n]}"
done
echo
r_bulk=$(ratio "${BULK_R[transparent]}" "${BULK_R[proxied]}")
r_seq=$(ratio "${SEQ_R[transparent]}" "${SEQ_R[proxied]}")
r_par=$(ratio "${PAR_R[transparent]}" "${PAR_R[proxied]}")
bench_target "bulk     transparent/proxied ($ONE)" "$r_bulk" ge 0.90
[ "$PIN" = 1 ] && bench_row "for information" \
    "bulk     transparent/proxied (free)" \
    "$(ratio "${BULKF_R[transparent]}" "${BULKF_R[proxied]}")"
bench_target "setups   transparent/proxied seq ($ONE)" "$r_seq" ge 0.90
bench_target "setups   transparent/proxied $CONC-way" "$r_par" ge 0.90
bench_row "" "CPU      transparent/proxied per setup" \
    "$(ratio "${CPU_R[transparent]}" "${CPU_R[proxied]}")"
echo
echo "stub resolver (egress-launch's, 127.0.0.53:53 -> egressd), UDP A queries for $NAME," \
    "$DNSN per run, best of $REPS:"
printf '  %-41s %9s %7s %5s  %s\n' "" "q/s" "p50 us" lost \
    "CPU us per query: stub + egressd + client = sum (one-CPU capacity)"
for k in pin1 free1 freeN; do
	case $k in
	pin1) label="one client, 1 outstanding ($ONE)" ;;
	free1) label="one client, 1 outstanding (free)" ;;
	freeN) label="one client, $DNSOUT outstanding, $DNSOUT ports (free)" ;;
	esac
	[ "$k" = pin1 ] && [ "$PIN" != 1 ] && continue
	# shellcheck disable=SC2086 # three numbers
	printf '  %-41s %9s %7s %5s  %s\n' "$label" "${DNS_R[$k]}" "${DNS_P50[$k]}" \
	    "${DNS_LOST[$k]}" "$(set -- ${DNS_CPU[$k]}; awk -v s="$1" -v e="$2" -v c="$3" 'BEGIN {
		if (s !~ /^[0-9.]+$/ || e !~ /^[0-9.]+$/ || c !~ /^[0-9.]+$/) { print "-"; exit }
		t = s + e + c
		printf "%s + %s + %s = %.1f (%.0f q/s)", s, e, c, t, (t > 0 ? 1e6 / t : 0) }')"
done
if [ "$PIN" = 1 ]; then k=pin1; else k=free1; fi
bench_target "stub     q/s, 1 outstanding ($ONE)" "${DNS_R[$k]}" ge 20000
