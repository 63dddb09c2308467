#!/bin/sh
# egressd end to end: the control socket cannot be locked out from the lease socket. The
# control socket (root only) has slots of its own; the lease socket (group) has a fixed
# number of slots and a cap per peer uid (SO_PEERCRED), each refusal logged, and a few of
# its slots only root may take, so that root can always lease; a lease connection that holds
# no lease is closed EGRESSD_LEASE_IDLE_S after its accept (or after its last lease ended),
# whatever it sends meanwhile, one that holds a lease lives as long as it (SPEC "Leases").
# Callers are unprivileged uids in the lease group, as the group's members are.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1
EP=$top_builddir/egress-policy

# The limits, read from their one owner (the old code had none of these names).
hdr() { awk -v n="$1" '$1 == "#define" && $2 == n { print $3 }' "$top_srcdir/egress/egressd.h"; }
SLOTS=$(hdr EGRESSD_LEASE_CLIENTS)
CAP=$(hdr EGRESSD_LEASE_PER_UID)
IDLE=$(hdr EGRESSD_LEASE_IDLE_S)
ROOTSLOTS=$(hdr EGRESSD_LEASE_ROOT_SLOTS)
SLOTS=${SLOTS:-128} CAP=${CAP:-16} IDLE=${IDLE:-10} ROOTSLOTS=${ROOTSLOTS:-0}
NONROOT=$((SLOTS - ROOTSLOTS))  # the slots other uids may take
LGID=$(id -g nobody 2>/dev/null || echo 0)
LGROUP=$(getent group "$LGID" | cut -d: -f1)
[ -n "$LGROUP" ] || LGROUP=root

printf 'c.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.1/32\n' > open.policy
mkdir -p policies
"$EP" seal open.policy > policies/build.sealed
conf_begin "lease $RUN/lease.sock group $LGROUP" "policy-dir $WORK/policies"
egressd_start

# holder.py SOCK GID UID N STATUS HOLD: as UID (group GID, no other group) opens N lease
# connections that send nothing, then writes "open K" to STATUS whenever K, the number
# egressd has not closed, changes; ends when HOLD is gone (120 s at most).
cat > holder.py <<'PYEOF'
import os, select, socket, sys, time
sock, gid, uid, n, status, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5], sys.argv[6]
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
conns = []
end = time.monotonic() + 10
while len(conns) < n and time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(sock)
        conns.append(s)
    except BlockingIOError:     # the listen backlog is full for a moment: again
        s.close()
        time.sleep(0.01)
last = None
end = time.monotonic() + 120
while os.path.exists(hold) and time.monotonic() < end:
    r, _, _ = select.select(conns, [], [], 0)
    # readable with nothing to read: egressd closed it
    conns = [s for s in conns if s not in r or s.recv(1, socket.MSG_PEEK) != b""]
    if len(conns) != last:
        last = len(conns)
        with open(status + ".tmp", "w") as f:
            f.write("open %d\n" % last)
        os.rename(status + ".tmp", status)
    time.sleep(0.05)
PYEOF
# hold NAME UID N: a holder in the background; its status in st/NAME (st: writable by the
# holders' uids).
mkdir -p st
chmod 1777 st
hold() { spawn "$1" "$E2E_PY" "$WORK/holder.py" "$RUN/lease.sock" "$LGID" "$2" "$3" "$WORK/st/$1" "$WORK/slots.hold"; }
_status_is() { [ "$(cat "$WORK/st/$1" 2>/dev/null)" = "open $2" ]; }
status_of() { wait_until _status_is "$1" "$2"; cat "$WORK/st/$1" 2>/dev/null || echo none; }
_log_count() { [ "$(tail -n "+$(($3 + 1))" "$WORK/egressd.err" | grep -Ec -- "$1")" -ge "$2" ]; }
log_count() { wait_until _log_count "$@"; tail -n "+$(($3 + 1))" "$WORK/egressd.err" | grep -Ec -- "$1"; }

# --- one uid holds more lease connections than the cap, others fill every slot --------------
touch slots.hold
m=$(log_mark)
U0=20000
hold over $U0 $((CAP + 4))
expect_eq "per-uid cap: one uid keeps $CAP lease connections of $((CAP + 4))" "open $CAP" "$(status_of over "$CAP")"
expect_eq "per-uid cap: the 4 beyond it are refused, each logged" 4 \
    "$(log_count "event=control-refused socket=lease uid=$U0 .*why=uid-cap" 4 "$m")"
run_status() { "$EGRESSCTL" -s "$CTL" status >/dev/null 2>&1 && echo ok || echo refused; }
expect_eq "root's egressctl status works while one uid holds the cap" ok "$(run_status)"
# More uids until every slot but root's is taken (CAP each, the last the rest).
i=1
left=$((NONROOT - CAP))
while [ $left -gt 0 ]; do
	n=$CAP
	[ $left -lt "$CAP" ] && n=$left
	hold "fill$i" $((U0 + i)) "$n"
	eval "want_$i=$n"
	left=$((left - n))
	i=$((i + 1))
done
NFILL=$i
_all_full() {           # (its own counter: wait_until's is _i)
	_f=1
	while [ $_f -lt "$NFILL" ]; do
		_status_is "fill$_f" "$(eval echo "\$want_$_f")" || return 1
		_f=$((_f + 1))
	done
}
expect_eq "every non-root lease slot ($NONROOT of $SLOTS) is held by uids in the group" 1 \
    "$(wait_until _all_full && echo 1)"
m=$(log_mark)
hold late $((U0 + 999)) 1
expect_eq "lease slots full: one more uid is refused" "open 0" "$(status_of late 0)"
expect_eq "lease slots full: ... and it is logged" 1 \
    "$(log_count "event=control-refused socket=lease uid=$((U0 + 999)) .*why=slots-full" 1 "$m")"
expect_eq "lease slots full: root's egressctl status still works" ok "$(run_status)"
# Root leases through the lease socket itself (as egress-run --policy NAME does).
expect_eq "lease slots full for other uids: root still gets a lease on the lease socket" True \
    "$("$E2E_PY" - "$RUN/lease.sock" <<'PYEOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
    s.sendall(b'{"verb":"lease","policy":"build.sealed"}\n')
    line = s.makefile("rb").readline()
except OSError:
    line = b""
print(json.loads(line).get("ok") if line else "refused")
PYEOF
)"
# Root holds a connection open and still has the control slots for more.
spawn rootlease "$EGRESSCTL" -s "$CTL" principal add rootheld --policy "$WORK/open.policy" --lease
wait_for -S "$RUN/rootheld.sock"
expect_eq "lease slots full: root can still add a leased principal" 1 "$([ -S "$RUN/rootheld.sock" ] && echo 1)"
expect_match "lease slots full: ... and list it" "^rootheld " "$("$EGRESSCTL" -s "$CTL" principal list)"
stop "$SPAWNED"
rm -f slots.hold

# --- lease connections without a lease close at the deadline; one holding a lease does not ----
m=$(log_mark)
U1=21000
out=$("$E2E_PY" - "$RUN/lease.sock" "$LGID" "$U1" "$IDLE" "$CTL" <<'PYEOF'
import json, os, select, socket, sys, time
path, gid, uid, idle = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
# Root's control connection, opened before the drop (SO_PEERCRED is the connector's).
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ctl.settimeout(5)
ctl.connect(sys.argv[5])
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s
# The holders are going: wait (10 s at most) until a connection of this uid is answered.
end = time.monotonic() + 10
while True:
    try:
        p = conn()
        p.sendall(b'{"verb":"summary"}\n')
        if p.recv(1):
            p.close()
            break
    except OSError:
        pass
    if time.monotonic() > end:
        print("no slot")
        sys.exit(1)
    time.sleep(0.05)
t0 = time.monotonic()
silent, partial, chatty, leased, relet = conn(), conn(), conn(), conn(), conn()
partial.sendall(b'{"verb":')
leased.sendall(b'{"verb":"lease","policy":"build.sealed"}\n')
f = leased.makefile("rb")
lease = json.loads(f.readline())
print("lease", lease.get("ok"))
relet.sendall(b'{"verb":"lease","policy":"build.sealed"}\n')
rlease = json.loads(relet.makefile("rb").readline())
# Bounded: every wait below ends by idle * 2 + 5 s.
end = t0 + idle * 2 + 5
closed, sent, removed = {}, 0, None
while len(closed) < 4 and time.monotonic() < end:
    now = time.monotonic()
    if chatty not in closed and now >= t0 + sent * 3:   # a cheap request every 3 s
        chatty.sendall(b'{"verb":"summary"}\n')
        sent += 1
    if removed is None and now >= t0 + 2:       # root ends relet's lease: a fresh deadline
        ctl.sendall(json.dumps({"verb": "principal-remove",
                                "name": rlease.get("name")}).encode() + b"\n")
        ctl.makefile("rb").readline()
        removed = time.monotonic() - t0
    r, _, _ = select.select([s for s in (silent, partial, chatty, relet) if s not in closed],
                            [], [], 0.1)
    for s in r:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data == b"":
            closed[s] = time.monotonic() - t0
for name, s, since in (("silent", silent, 0), ("partial", partial, 0), ("chatty", chatty, 0),
                       ("relet", relet, removed or 0)):
    if s in closed:
        print(name, "closed", "in-time" if idle - 0.5 <= closed[s] - since <= idle + 4 else
              "after %.1f" % (closed[s] - since))
    else:
        print(name, "open")
# Past the deadline, the one holding a lease is still served.
leased.sendall(b'{"verb":"summary"}\n')
reply = json.loads(f.readline() or b"{}")
print("leased", "served" if reply.get("ok") else "not-served", "after %s" %
      ("deadline" if time.monotonic() - t0 > idle else "too-soon"))
print("socket", os.path.exists(lease.get("socket", "")))
PYEOF
)
expect_eq "idle: the lease holder got its lease" "lease True" "$(echo "$out" | sed -n 1p)"
expect_eq "idle: a lease connection that sends nothing is closed after ${IDLE} s" "silent closed in-time" \
    "$(echo "$out" | sed -n 2p)"
expect_eq "idle: one that sent half a request is closed after ${IDLE} s" "partial closed in-time" \
    "$(echo "$out" | sed -n 3p)"
expect_eq "deadline: one that sends a request every 3 s but never leases is closed ${IDLE} s after its accept" \
    "chatty closed in-time" "$(echo "$out" | sed -n 4p)"
expect_eq "deadline: one whose lease ended is closed ${IDLE} s after that" "relet closed in-time" \
    "$(echo "$out" | sed -n 5p)"
expect_eq "idle: one holding a lease is served past the deadline" "leased served after deadline" \
    "$(echo "$out" | sed -n 6p)"
expect_eq "idle: ... and its principal socket is still there" "socket True" "$(echo "$out" | sed -n 7p)"
expect_eq "idle: each deadline close is logged" 4 \
    "$(log_count "event=control-closed socket=lease uid=$U1 .*why=idle" 4 "$m")"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
finish
