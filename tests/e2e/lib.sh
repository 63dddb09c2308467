# lib.sh: helpers for egressd's end-to-end tests. Sourced by tests/e2e/*.sh; needs
# top_srcdir and top_builddir (set by make check). Builds on tests/cli/lib.sh (ok, not_ok,
# expect_eq, expect_match, finish, $WORK).
#
# Isolation: as root, each test re-executes itself in a new network namespace whose only
# interface is lo, so that a connection egressd should never make (to a private or a
# global-looking address) fails there instead of leaving the machine; every server binds
# loopback only, lets the kernel pick its port where it can, and every process started
# here is stopped by its process group id on exit. E2E_KEEP=1 keeps the test's folder
# (configuration, logs, receipts, query log) for a look afterwards.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$(pwd)}
export top_srcdir top_builddir

E2E_PY=${E2E_PY:-python3}
HELPER="$top_srcdir/tests/e2e/helper.py"

# A tool that is truly missing skips the whole test (exit 77), saying which.
e2e_need() {
	for t in "$@"; do
		if ! command -v "$t" >/dev/null 2>&1; then
			echo "SKIP: $t is not installed (tools/deps installs it)"
			exit 77
		fi
	done
}
e2e_need "$E2E_PY" setsid
if [ "$(id -u)" != 0 ]; then
	# Principals owned by other uids, peer-uid, the lease socket's callers and the
	# network namespace all need it; CI runs as root.
	echo "SKIP: the end-to-end tests of egressd run as root"
	exit 77
fi
for b in egressd egressctl tests/tools/testdns; do
	if [ ! -x "$top_builddir/$b" ]; then
		echo "Bail out! $top_builddir/$b is not built"
		exit 99
	fi
done

if [ -z "${EGRESS_E2E_NETNS:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 &&
    unshare -n true 2>/dev/null; then
	EGRESS_E2E_NETNS=1
	export EGRESS_E2E_NETNS
	exec unshare -n sh -c '"$1" "$2" lo-up && shift 2 && exec sh "$@"' sh "$E2E_PY" "$HELPER" \
	    "$0" "$@"
fi
# Only lo in this namespace: addresses outside loopback are unreachable by construction.
E2E_ISOLATED=0
if [ "$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/self/net/dev 2>/dev/null)" = "lo" ]; then
	E2E_ISOLATED=1
fi

. "$top_srcdir/tests/cli/lib.sh"
chmod 711 "$WORK"               # a test may connect as another uid (peer-uid)

EGRESSD="$top_builddir/egressd"
EGRESSCTL="$top_builddir/egressctl/egressctl"
TESTDNS="$top_builddir/tests/tools/testdns"
RUN="$WORK/run"
CTL="$RUN/control.sock"
RCPT="$WORK/receipts.jsonl"
KEY="$WORK/receipt.key"
DNSLOG="$WORK/dns.log"
E2E_PIDS=""

py() { "$E2E_PY" "$HELPER" "$@"; }

e2e_cleanup() {
	for p in $E2E_PIDS; do
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
	done
	sleep 0.1
	for p in $E2E_PIDS; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	if [ -n "${E2E_KEEP:-}" ]; then
		echo "# kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap e2e_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# spawn NAME CMD...: runs CMD in the background in its own session (so that its children
# go with it), output in $WORK/NAME.out and .err; its pid is $SPAWNED. The files are
# emptied here, before the background job opens them: a reader of NAME.out (wait_line)
# must not see what an earlier NAME wrote there (dns_restart's testdns read the old "port"
# line as the job truncated it, and the port came back empty).
spawn() {
	_n=$1
	shift
	: >"$WORK/$_n.out"
	: >"$WORK/$_n.err"
	setsid "$@" </dev/null >"$WORK/$_n.out" 2>"$WORK/$_n.err" &
	SPAWNED=$!
	E2E_PIDS="$E2E_PIDS $SPAWNED"
}

# stop PID: TERM to its group, then wait for it.
stop() {
	kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# wait_for TEST-ARGS...: polls a test(1) expression for up to 10 s.
wait_for() {
	_i=0
	while ! test "$@"; do
		_i=$((_i + 1))
		[ $_i -gt 200 ] && return 1
		sleep 0.05
	done
	return 0
}

# wait_until CMD...: runs CMD until it succeeds, for up to 10 s (a wait that succeeds
# returns at once, so the bound can be generous for slow machines and sanitizer builds).
wait_until() {
	_i=0
	while ! "$@"; do
		_i=$((_i + 1))
		[ $_i -gt 200 ] && return 1
		sleep 0.05
	done
	return 0
}

# log_mark: the number of lines in egressd's log so far. wait_log PATTERN [MARK]: until a
# line after MARK matches PATTERN (grep -E), for up to 10 s: egressd has done what it logs.
log_mark() { if [ -f "$WORK/egressd.err" ]; then wc -l < "$WORK/egressd.err" | tr -d ' '; else echo 0; fi; }
_log_has() { tail -n "+$(($2 + 1))" "$WORK/egressd.err" 2>/dev/null | grep -Eq -- "$1"; }
wait_log() { wait_until _log_has "$1" "${2:-0}"; }

# wait_gone PATH: until PATH disappears (10 s).
wait_gone() {
	_i=0
	while [ -e "$1" ]; do
		_i=$((_i + 1))
		[ $_i -gt 200 ] && return 1
		sleep 0.05
	done
	return 0
}

# wait_line FILE: until FILE has a complete first line; prints it.
wait_line() {
	_i=0
	while :; do
		if [ -s "$1" ] && [ "$(wc -l < "$1")" -ge 1 ]; then
			head -n 1 "$1"
			return 0
		fi
		_i=$((_i + 1))
		[ $_i -gt 200 ] && return 1
		sleep 0.05
	done
}

# start_server NAME KIND [helper args]: a helper.py upstream on loopback; sets PORT.
start_server() {
	_n=$1
	shift
	rm -f "$WORK/$_n.port"
	spawn "$_n" "$E2E_PY" "$HELPER" serve "$@" --port-file "$WORK/$_n.port"
	if ! wait_for -s "$WORK/$_n.port"; then
		echo "Bail out! upstream $_n did not start: $(cat "$WORK/$_n.err")"
		exit 99
	fi
	PORT=$(cat "$WORK/$_n.port")
}

freeport() { py freeport "$@"; }

# dns_start ZONE [PORT]: testdns on 127.0.0.1, queries logged to $DNSLOG; sets DNS_PORT
# and DNS_PID.
dns_start() {
	spawn dns "$TESTDNS" -z "$1" -l "$DNSLOG" -p "${2:-0}"
	DNS_PID=$SPAWNED
	if ! _l=$(wait_line "$WORK/dns.out"); then
		echo "Bail out! testdns did not start: $(cat "$WORK/dns.err")"
		exit 99
	fi
	DNS_PORT=${_l#port }
	case $DNS_PORT in
	''|*[!0-9]*) echo "Bail out! testdns said '$_l', not its port"; exit 99;;
	esac
}

# dns_restart ZONE: the same port, a new zone (pins must outlive this).
dns_restart() {
	stop "$DNS_PID"
	dns_start "$1" "$DNS_PORT"
}

# conf_begin [extra directives...]: a fresh egressd.conf in $WORK/egressd.conf.
conf_begin() {
	[ -f "$KEY" ] || head -c 32 /dev/urandom > "$KEY"
	chmod 600 "$KEY"
	{
		echo "runtime-dir $RUN"
		echo "control $CTL"
		echo "receipts $RCPT"
		echo "receipt-key $KEY"
		echo "resolver 127.0.0.1:$DNS_PORT"
		echo "shutdown-grace 1"
		for _d in "$@"; do echo "$_d"; done
	} > "$WORK/egressd.conf"
}

# principal NAME POLICYFILE [options...]: appends a principal to the configuration.
principal() {
	_n=$1
	case $2 in /*) _p=$2 ;; *) _p=$WORK/$2 ;; esac
	shift 2
	echo "principal $_n socket $RUN/$_n.sock policy $_p $*" >> "$WORK/egressd.conf"
}

# egressd_start [NOFILE]: starts egressd -c $WORK/egressd.conf, log in $WORK/egressd.err;
# waits for the control socket and every principal socket; sets EGRESSD_PID.
# With NOFILE, egressd runs under that descriptor limit (ulimit -n).
egressd_start() {
	if [ -n "${1:-}" ]; then
		spawn egressd sh -c 'ulimit -n "$1" && shift && exec "$@"' sh "$1" \
		    "$EGRESSD" -d -c "$WORK/egressd.conf"
	else
		spawn egressd "$EGRESSD" -d -c "$WORK/egressd.conf"
	fi
	EGRESSD_PID=$SPAWNED
	_i=0
	while [ ! -S "$CTL" ]; do
		_i=$((_i + 1))
		if [ $_i -gt 200 ] || ! kill -0 "$EGRESSD_PID" 2>/dev/null; then
			echo "Bail out! egressd did not start: $(cat "$WORK/egressd.err")"
			exit 99
		fi
		sleep 0.05
	done
	for _s in $(awk '$1 == "principal" { for (i = 3; i < NF; i++) if ($i == "socket") print $(i + 1) }' \
	    "$WORK/egressd.conf"); do
		wait_for -S "$_s" || { echo "Bail out! no socket $_s"; exit 99; }
	done
	# The sockets exist before egressd drops privileges (user) and installs its signal
	# handlers; "event=started" is logged after both, so that a test may check the uid or
	# send SIGTERM, SIGHUP or SIGUSR1 at once. (spawn started a fresh egressd.err.)
	if ! wait_log "event=started "; then
		echo "Bail out! egressd did not log event=started: $(cat "$WORK/egressd.err")"
		exit 99
	fi
	engine_pid
}

# engine_pid: ENGINE_PID, the pid of egressd's engine (the monitor's child that serves).
engine_pid() {
	ENGINE_PID=$(pgrep -P "$EGRESSD_PID" -x egressd-engine | head -n 1)
}

# egressd_stop: SIGTERM, waits; sets EGRESSD_RC.
egressd_stop() {
	kill -TERM "$EGRESSD_PID" 2>/dev/null
	wait "$EGRESSD_PID"
	EGRESSD_RC=$?
}

# wait_tcp PORT [ADDR]: until something accepts on ADDR:PORT (10 s).
wait_tcp() {
	"$E2E_PY" - "$1" "${2:-127.0.0.1}" <<'PYEOF'
import socket, sys, time
end = time.monotonic() + 10
while time.monotonic() < end:
    try:
        socket.create_connection((sys.argv[2], int(sys.argv[1])), 1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
PYEOF
}

# bridge SOCK: a TCP listener on 127.0.0.1 relaying to a principal socket (for curl's
# HTTP and SOCKS4 proxies); sets BRIDGE_PORT.
bridge() {
	_i=0
	while [ $_i -lt 5 ]; do
		BRIDGE_PORT=$(freeport)
		spawn "bridge-$BRIDGE_PORT" socat "TCP-LISTEN:$BRIDGE_PORT,bind=127.0.0.1,fork,reuseaddr" \
		    "UNIX-CONNECT:$1"
		if wait_tcp "$BRIDGE_PORT" && kill -0 "$SPAWNED" 2>/dev/null; then
			return 0
		fi
		_i=$((_i + 1))
	done
	echo "Bail out! socat bridge did not start"
	exit 99
}

# py_field NAME...: fields of the JSON line on stdin; py_header NAME: a header of it.
py_field() { py field "$@"; }
py_header() { py field --header "$1"; }

# rcpt [helper rcpt args]: query the receipts (last matching record's fields).
rcpt() { py rcpt "$RCPT" "$@"; }
rcpt_mark() { if [ -f "$RCPT" ]; then wc -l < "$RCPT" | tr -d ' '; else echo 0; fi; }

# check_receipts WHAT: the chain, the MACs, every open closed.
check_receipts() {
	_r=$(py chain "$RCPT" --key "$KEY")
	expect_match "$1: receipt chain, MACs and open/close pairs" "^ok " "$_r"
}

# An HTTP response head's status and Egress-Reason, from a curl -D file.
head_status() { awk 'NR == 1 { print $2 }' "$1" | tr -d '\r'; }
head_reason() { grep -i '^Egress-Reason:' "$1" | head -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'; }

# skip WHAT WHY: a check that cannot run here, said as such.
skip() { echo "ok - $1 # SKIP $2"; }
