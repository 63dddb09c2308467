#!/bin/sh
# egressd out of descriptors does not spin on its other listeners either. Under `ulimit -n
# 64`, 100 idle principal connections exhaust its descriptors (the principal listeners
# pause, quotas.sh); then connections to the control socket, the lease socket and the
# metrics listener (evhttp) stay queued, each listener readable while accept fails with
# EMFILE. For each, a few connections over 3 s: egressd's CPU time (utime + stime,
# /proc/PID/stat) over that window stays under 30% of the wall time, and it logs the
# pause of that listener. Once the principal connections close, `egressctl status` and
# GET /metrics work again, within a bounded wait.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

printf 'c.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\ntimeout handshake 60s\n' > patient.policy
mkdir -p policies
MPORT=$(freeport)
conf_begin "lease $RUN/lease.sock" "policy-dir $WORK/policies" "metrics-listen 127.0.0.1:$MPORT"
principal patient patient.policy
egressd_start 64
wait_tcp "$MPORT" || { echo "Bail out! metrics-listen did not listen"; exit 99; }

touch many.hold
rm -f many.ready
spawn many "$E2E_PY" "$HELPER" hold-many "$RUN/patient.sock" 100 --hold-file "$WORK/many.hold" \
    --ready-file "$WORK/many.ready"
MANY=$SPAWNED
wait_for -s many.ready
wait_log "event=accept-paused" || { echo "Bail out! egressd did not run out of descriptors"; exit 99; }

# knock.py PID KIND ADDR: 6 connections to ADDR (a unix path, or a TCP port on loopback),
# one every 0.5 s, all held; prints egressd's CPU share (percent of wall time) meanwhile.
cat > knock.py <<'PYEOF'
import os, socket, sys, time
pid, kind, addr = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tck = os.sysconf("SC_CLK_TCK")
def cpu():
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / tck
held = []
c0, t0 = cpu(), time.monotonic()
for _ in range(6):
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)             # completes in the kernel: the backlog
    else:
        s = socket.socket()
        s.connect(("127.0.0.1", int(addr)))
    held.append(s)
    time.sleep(0.5)
c1, t1 = cpu(), time.monotonic()
for s in held:
    s.close()
print("%d" % round(100 * (c1 - c0) / (t1 - t0)))
PYEOF
knock() {       # NAME KIND ADDR LOGPATTERN
	m=$(log_mark)
	share=$("$E2E_PY" knock.py "$EGRESSD_PID" "$2" "$3")
	echo "# $1: egressd used ${share}% of one CPU while out of descriptors"
	if [ "${share:-100}" -lt 30 ]; then
		ok "$1 out of descriptors: egressd does not spin: ${share}% CPU < 30%"
	else
		not_ok "$1 out of descriptors: egressd does not spin: ${share}% CPU, want < 30%"
	fi
	if wait_log "$4" "$m"; then ok "$1 out of descriptors: the pause is logged"
	else not_ok "$1 out of descriptors: the pause is logged ($4)"; fi
}
knock "control socket" unix "$CTL" "event=accept-paused listener=control"
knock "lease socket" unix "$RUN/lease.sock" "event=accept-paused listener=control"
knock "metrics listener" tcp "$MPORT" "event=accept-paused listener=metrics"
expect_eq "egressd still runs" 1 "$(kill -0 "$EGRESSD_PID" 2>/dev/null && echo 1)"

rm -f many.hold
wait "$MANY"
# The listeners resume on timers of their own: retry for up to 20 s (by the clock).
_again() {
	end=$(($(date +%s) + 20))
	while [ "$(date +%s)" -lt "$end" ]; do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}
_status() { "$EGRESSCTL" -s "$CTL" status >/dev/null 2>&1; }
_metrics() { "$E2E_PY" - "$MPORT" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
sys.exit(0 if s.recv(12).startswith(b"HTTP/1.") else 1)
PYEOF
}
expect_eq "descriptors back: egressctl status works again" 1 "$(_again _status && echo 1)"
expect_eq "descriptors back: GET /metrics works again" 1 "$(_again _metrics && echo 1)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
finish
