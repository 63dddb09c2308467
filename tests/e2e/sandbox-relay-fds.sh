#!/bin/sh
# egress-relay out of descriptors does not spin. Under `ulimit -n 32`, and 33, it is flooded
# with 100 connections (within the backlog of 128) held open for 3 s (accept, or the principal socket's connect, then
# fails with EMFILE while the listener stays readable): its CPU time (utime + stime, /proc/PID/stat) over that time stays under 30% of
# the wall time, and it says it pauses. Once the flood lets go, it serves again: a SOCKS5
# echo through it to egressd works, within a bounded wait.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'ok.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.0/8\n' > open.policy
conf_begin
principal relay open.policy
egressd_start
SOCK=$RUN/relay.sock

cat > flood.py <<'PYEOF'
import os, socket, sys, time
pid, port, n, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
tck = os.sysconf("SC_CLK_TCK")
def cpu():
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / tck
held = []
for _ in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", port))      # completes in the kernel: the backlog
    held.append(s)
c0, t0 = cpu(), time.monotonic()
time.sleep(hold)
c1, t1 = cpu(), time.monotonic()
for s in held:
    s.close()
print("%d" % round(100 * (c1 - c0) / (t1 - t0)))
PYEOF
# flood_case LIMIT: the relay under `ulimit -n LIMIT`, flooded, then asked to serve. Two
# limits of different parity: each established tunnel takes two descriptors, so one of
# them leaves none for accept4 itself (EMFILE on accept), the other one descriptor that
# accept takes and the principal socket's connect then lacks (EMFILE there).
flood_case() {
	RPORT=$(freeport)
	spawn "relay$1" sh -c 'ulimit -n "$1" && shift && exec "$@"' sh "$1" "$RELAY" \
	    --listen "127.0.0.1:$RPORT" --egress "$SOCK" --max-conns 1000
	RPID=$SPAWNED
	wait_listen "$RPORT" || { echo "Bail out! egress-relay did not listen: $(cat "relay$1.err")"; exit 99; }
	share=$("$E2E_PY" flood.py "$RPID" "$RPORT" 100 3)
	echo "# ulimit -n $1: egress-relay used ${share}% of one CPU while out of descriptors"
	if [ "${share:-100}" -lt 30 ]; then
		ok "ulimit -n $1: egress-relay out of descriptors does not spin: ${share}% CPU < 30%"
	else
		not_ok "ulimit -n $1: egress-relay out of descriptors does not spin: ${share}% CPU, want < 30%"
	fi
	expect_match "ulimit -n $1: it says it pauses accepting" \
	    "out of descriptors, accepting again" "$(head -c 100000 "relay$1.err")"
	if wait_until serves; then ok "ulimit -n $1: once descriptors are free it serves again (SOCKS5 echo)"
	else not_ok "ulimit -n $1: once descriptors are free it serves again (SOCKS5 echo)"; fi
	if alive "$RPID"; then ok "ulimit -n $1: the relay still runs"; else not_ok "ulimit -n $1: the relay still runs"; fi
	stop "$RPID"
}
serves() { [ "$(sh_py socks "$RPORT" ok.e2e.test "$ECHO" --mode echo --timeout 5 | tr '\n' ' ')" = "00 echo-ok " ]; }
flood_case 32
flood_case 33

finish
