#!/bin/sh
# Nothing egress-run starts outlives it. egress-run is killed with SIGKILL during its
# start-up, 60 times: a third of the runs the very moment its broker child appears (a
# driver that watches egress-run's children in /proc kills it as soon as a second child is
# there, after the private egressd's bwrap: the window between the broker's fork and the
# point where it arranges to die with its parent); a third as soon as the private
# egressd's bwrap has cloned the sandbox's init (bwrap arms --die-with-parent in that init
# only after its mounts: killed before, the init stayed, blocked or running egressd, until
# egress-run's children got a pid namespace that ends with egress-run, runguard.c); a
# third after a random delay up to past the moment the sandbox starts. Within a bounded
# wait, no egress-broker, no bwrap and no egressd of the test is left.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
[ -x "$top_builddir/egress-broker" ] || { echo "Bail out! egress-broker is not built"; exit 99; }
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'n.e2e.test A 127.0.0.1\n' > zone
dns_start zone
RUNS=${E2E_BROKER_RUNS:-60}

cat > killer.py <<'PYEOF'
import os, random, signal, subprocess, sys, time
runs, box, erun = int(sys.argv[1]), sys.argv[2], sys.argv[3]
argv = [erun, "--quiet"] + sys.argv[4:] + ["--", "sleep", "30"]
def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []
def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""
def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""
seen_at = []
hits = inits = 0
for i in range(runs):
    p = subprocess.Popen(argv, cwd=box, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    if i % 3 == 1:
        # the sandbox's init, cloned by the private egressd's bwrap (after the probe's)
        deadline = t0 + 10
        while time.monotonic() < deadline and p.poll() is None:
            eb = [c for c in children(p.pid) if "egressd.conf" in cmdline(c)]
            if eb and children(eb[0]):
                os.kill(p.pid, signal.SIGKILL)
                inits += 1
                break
    elif i % 3 == 0:
        # targeted: the first child is the private egressd's bwrap; the next one is the
        # broker (before or just after its exec)
        first = None
        deadline = t0 + 10
        while time.monotonic() < deadline and p.poll() is None:
            cs = children(p.pid)
            if first is None and cs:
                first = cs[0]
            new = [c for c in cs if c != first]
            if first is not None and new:
                os.kill(p.pid, signal.SIGKILL)
                hits += 1
                seen_at.append(time.monotonic() - t0)
                break
    else:
        top = max(seen_at) * 1.5 if seen_at else 0.5
        time.sleep(random.uniform(0, top))
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()
print("targeted %d" % hits)
print("inits %d" % inits)
PYEOF

# brokers [PATTERN]: pids of the egress-broker processes of this test (their --egress is
# under $XDG_RUNTIME_DIR), or of any process whose command line matches PATTERN.
brokers() {
	for _c in /proc/[0-9]*/cmdline; do
		_a=$({ tr '\0' ' ' < "$_c"; } 2>/dev/null) || continue
		case $_a in
		${1:-*egress-broker*"$XDG_RUNTIME_DIR/"*})
			_p=${_c#/proc/}
			_p=${_p%/cmdline}
			alive "$_p" && printf '%s ' "$_p";;
		esac
	done
}
no_broker() { [ -z "$(brokers)" ]; }

"$E2E_PY" killer.py "$RUNS" "$BOX" "$ERUN" --allow "n.e2e.test:$ECHO" \
    --resolver "127.0.0.1:$DNS_PORT" --permit-range 127.0.0.0/8 \
    --receipts "$WORK/run.jsonl" > killer.out
expect_eq "the driver killed egress-run as its broker appeared, every targeted run" \
    "targeted $(((RUNS + 2) / 3))" "$(sed -n 1p killer.out)"
expect_eq "the driver killed egress-run as the sandbox's init appeared, every such run" \
    "inits $(((RUNS + 1) / 3))" "$(sed -n 2p killer.out)"
wait_until no_broker
left=$(brokers)
expect_eq "no egress-broker outlives egress-run killed during its start-up ($RUNS runs)" "" "$left"
for p in $left; do kill -KILL "$p" 2>/dev/null; done
# The private egressd's sandbox: bwrap (outer, and the sandbox's init) and egressd, each
# with the run's runtime folder under $XDG_RUNTIME_DIR in its command line.
others() { brokers "*$XDG_RUNTIME_DIR/egress-run.*"; }
no_other() { [ -z "$(others)" ]; }
wait_until no_other
left=$(others)
expect_eq "no bwrap nor egressd outlives egress-run killed during its start-up" "" "$left"
for p in $left; do kill -KILL "$p" 2>/dev/null; done
# The runtime folders of killed runs stay (nobody was left to remove them): the test's own.
rm -rf "${XDG_RUNTIME_DIR:?}"/egress-run.*

finish
