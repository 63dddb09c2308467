#!/bin/sh
# egress-broker end to end (the fd-4 channel): a python driver holds the workload's end of
# the AF_UNIX SOCK_SEQPACKET socketpair and egress-broker the other, towards a real egressd's
# principal socket. An allowed host gives code 0 and a working stream; a refusal gives
# egressd's code; bad datagrams get malformed-request where there is a reply socket and
# never stop the broker; two requests sent without reading are both answered, in order; a
# client that drops its reply socket early hurts nothing; the broker's descriptor count
# is the same after all that. egress-connect works over EGRESS_FD and over EGRESS_RELAY
# (egress-relay, TCP on loopback), and prints egressd's reason on a refusal.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

BROKER=${EGRESS_BROKER:-$top_builddir/egress-broker}
CONNECT=${EGRESS_CONNECT:-$top_builddir/egress-connect}
RELAYBIN=${EGRESS_RELAY_BIN:-$top_builddir/egress-relay}
for b in "$BROKER" "$CONNECT" "$RELAYBIN"; do
	[ -x "$b" ] || { echo "Bail out! $b is not built"; exit 99; }
done

start_server echo echo
ECHO=$PORT
printf 'n.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow n.e2e.test %s\ndeny bad.e2e.test\npermit-range 127.0.0.0/8\n' "$ECHO" > b.policy
conf_begin
principal bro b.policy
egressd_start
S=$RUN/bro.sock

cat > driver.py <<'PYEOF'
import array, os, signal, socket, struct, subprocess, sys, time

broker, connect, sock, echo = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = open(sys.argv[5], "w")
relay = sys.argv[6]

def res(k, v):
    out.write("%s %s\n" % (k, v))
    out.flush()

a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
err = open("broker.err", "w")
p = subprocess.Popen([broker, "--channel", str(b.fileno()), "--egress", sock],
                     pass_fds=[b.fileno()], stderr=err)
b.close()

def dgram(host, port, rid=1, tmo=5000, magic=b"EGF1", hostlen=None):
    h = host if isinstance(host, bytes) else host.encode()
    n = len(h) if hostlen is None else hostlen
    return magic + struct.pack(">IIHB", rid, tmo, port, n) + h

def send(data, nfds=1, extra=None):
    """Sends data with a fresh reply socket (nfds 1), none (0) or reply + extra (2)."""
    r1, r2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fds = []
    if nfds >= 1:
        fds.append(r2.fileno())
    if extra is not None:
        fds.append(extra)
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    a.sendmsg([data], anc)
    r2.close()
    return r1

def answer(r1, timeout=10):
    r1.settimeout(timeout)
    try:
        msg, anc, flags, addr = r1.recvmsg(64, socket.CMSG_SPACE(4 * 4))
    except socket.timeout:
        return ("noanswer", None, None)
    fds = []
    for lvl, typ, d in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds += list(array.array("i", d[: len(d) - len(d) % 4]))
    if len(msg) != 12 or msg[:4] != b"EGF1":
        return ("bad", None, fds)
    rid, code = struct.unpack(">Ii", msg[4:])
    return (code, rid, fds)

def request(data, **kw):
    r1 = send(data, **kw)
    code, rid, fds = answer(r1)
    r1.close()
    return code, rid, fds

def echo_through(fd, payload=b"ping through fd4"):
    s = socket.socket(fileno=fd)
    s.settimeout(5)
    s.sendall(payload)
    got = b""
    while len(got) < len(payload):
        x = s.recv(64)
        if not x:
            break
        got += x
    s.close()
    return "echo-ok" if got == payload else "echo-bad"

def nfd():
    return len(os.listdir("/proc/%d/fd" % p.pid))

def idle(timeout=10):
    """Until the broker sleeps in poll(): it answers a request before it closes that
    request's descriptors, so only then is its count settled. False when the kernel does
    not say (wchan), after timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open("/proc/%d/wchan" % p.pid) as f:
                if "poll" in f.read():
                    return True
        except OSError:
            return False
        time.sleep(0.02)
    return False

def settled(want, timeout=10):
    """The descriptor count once it is back to want (or, after timeout, what it is)."""
    end = time.monotonic() + timeout
    while nfd() != want and time.monotonic() < end:
        time.sleep(0.02)
    return nfd()

# allowed: code 0, the id echoed, one stream that works
code, rid, fds = request(dgram("n.e2e.test", echo, rid=41))
res("allowed", "%s %s %d" % (code, rid, len(fds or [])))
res("allowed-echo", echo_through(fds[0]) if code == 0 and fds else "none")
if not idle():
    time.sleep(0.5)
base = nfd()

code, rid, fds = request(dgram("other.e2e.test", echo, rid=42))
res("denied", "%s %s %d" % (code, rid, len(fds or [])))
code, rid, fds = request(dgram("bad.e2e.test", echo, rid=43))
res("denied-rule", code)

bad = {
    "short": b"EGF1\x00\x00\x00\x07",
    "long": dgram("a" * 255, echo, rid=7) + b"x",
    "huge": b"EGF1" + b"\x00" * 4000,
    "empty": b"",
    "magic": dgram("n.e2e.test", echo, rid=7, magic=b"EGF2"),
    "nul": dgram(b"n.e2e\x00test", echo, rid=7),
    "port0": dgram("n.e2e.test", 0, rid=7),
    "lenmore": dgram("n.e2e.test", echo, rid=7, hostlen=11),
    "lenless": dgram("n.e2e.test", echo, rid=7, hostlen=9),
    "len0": dgram("n.e2e.test", echo, rid=7, hostlen=0),
}
for k, d in bad.items():
    code, rid, fds = request(d)
    res("bad-" + k, code)

# no reply descriptor: dropped; a non-socket only descriptor: dropped too
send(dgram("n.e2e.test", echo), nfds=0).close()
pr, pw = os.pipe()
a.sendmsg([dgram("n.e2e.test", echo)],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pr]))])
# two descriptors: malformed on the first, the second closed by the broker
code, rid, fds = request(dgram("n.e2e.test", echo, rid=9), extra=pw)
res("two-fds", "%s %s" % (code, rid))
os.close(pr)
os.close(pw)
code, rid, fds = request(dgram("n.e2e.test", echo, rid=10))
res("after-bad", "%s %s" % (code, echo_through(fds[0]) if fds else "none"))

# two requests without reading: one reply socket for both, answers in request order
r1, r2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
for rid, host in ((100, "n.e2e.test"), (101, "other.e2e.test")):
    a.sendmsg([dgram(host, echo, rid=rid)],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r2.fileno()]))])
r2.close()
c1, i1, f1 = answer(r1)
c2, i2, f2 = answer(r1)
r1.close()
res("pipelined", "%s:%s %s:%s" % (i1, c1, i2, c2))
if f1:
    res("pipelined-echo", echo_through(f1[0]))

# a client that drops its reply socket before the answer
for i in range(3):
    send(dgram("n.e2e.test", echo, rid=200 + i)).close()
code, rid, fds = request(dgram("n.e2e.test", echo, rid=300))
res("after-drop", "%s %s" % (code, echo_through(fds[0]) if fds else "none"))

n = settled(base)
res("fds", "same" if n == base else "%d->%d" % (base, n))
res("alive", "yes" if p.poll() is None else "exited %s" % p.returncode)

# egress-connect over EGRESS_FD (fd 4), then over EGRESS_RELAY
def run_connect(host, port, env_extra, via_fd4):
    env = dict(os.environ)
    env.pop("EGRESS_FD", None)
    env.pop("EGRESS_RELAY", None)
    env.update(env_extra)
    if via_fd4:
        cmd = ["sh", "-c", 'n=$1; shift; [ "$n" = 4 ] || eval "exec 4<&$n $n<&-"; exec "$@"', "sh",
               str(a.fileno()), connect, host, str(port)]
        pf = [a.fileno()]
    else:
        cmd = [connect, host, str(port)]
        pf = []
    c = subprocess.run(cmd, input=b"hello over egress-connect\n", capture_output=True,
                       env=env, pass_fds=pf, timeout=20)
    return c.returncode, c.stdout.decode(errors="replace").strip(), \
        c.stderr.decode(errors="replace").strip()

rc, o, e = run_connect("n.e2e.test", echo, {"EGRESS_FD": "4"}, True)
res("connect-fd4", "%d %s" % (rc, o))
rc, o, e = run_connect("other.e2e.test", echo, {"EGRESS_FD": "4"}, True)
res("connect-fd4-refused", "%d %s" % (rc, e))
rc, o, e = run_connect("n.e2e.test", echo, {"EGRESS_RELAY": relay}, False)
res("connect-relay", "%d %s" % (rc, o))
rc, o, e = run_connect("bad.e2e.test", echo, {"EGRESS_RELAY": relay}, False)
res("connect-relay-refused", "%d %s" % (rc, e))
# EGRESS_FD naming something else falls back to the relay
rc, o, e = run_connect("n.e2e.test", echo, {"EGRESS_FD": "0", "EGRESS_RELAY": relay}, False)
res("connect-fallback", "%d %s" % (rc, o))

n = settled(base)
res("fds-end", "same" if n == base else "%d->%d" % (base, n))
p.send_signal(signal.SIGTERM)
res("term", p.wait(timeout=10))
PYEOF

RPORT=$(freeport)
spawn relay "$RELAYBIN" --listen "127.0.0.1:$RPORT" --egress "$S"
wait_tcp "$RPORT" || { echo "Bail out! egress-relay did not start: $(cat relay.err)"; exit 99; }

"$E2E_PY" driver.py "$BROKER" "$CONNECT" "$S" "$ECHO" results "127.0.0.1:$RPORT" \
    2> driver.err || echo "# driver failed: $(tail -n 5 driver.err)"
r() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' results; }

expect_eq "allowed: code 0, the request's id, one stream" "0 41 1" "$(r allowed)"
expect_eq "... the stream reaches the upstream" echo-ok "$(r allowed-echo)"
expect_eq "not allowlisted: -1001, no descriptor" "-1001 42 0" "$(r denied)"
expect_eq "denied by rule: -1002" -1002 "$(r denied-rule)"
for k in short long huge empty magic nul port0 lenmore lenless len0; do
	expect_eq "bad datagram ($k): malformed-request" -1003 "$(r bad-$k)"
done
expect_eq "two descriptors: malformed-request, with the id" "-1003 9" "$(r two-fds)"
expect_eq "the broker serves after every bad datagram" "0 echo-ok" "$(r after-bad)"
expect_eq "two requests unread: both answered in order" "100:0 101:-1001" "$(r pipelined)"
expect_eq "... the first stream works" echo-ok "$(r pipelined-echo)"
expect_eq "reply sockets dropped early: the broker goes on" "0 echo-ok" "$(r after-drop)"
expect_eq "the broker's descriptor count is unchanged" same "$(r fds)"
expect_eq "the broker is alive" yes "$(r alive)"
expect_eq "egress-connect over EGRESS_FD: echo" "0 hello over egress-connect" \
    "$(r connect-fd4)"
expect_eq "egress-connect over EGRESS_FD: refusal, exit 1 and the reason" \
    "1 egress-connect: other.e2e.test:$ECHO: not-allowlisted" "$(r connect-fd4-refused)"
expect_eq "egress-connect over EGRESS_RELAY: echo" "0 hello over egress-connect" \
    "$(r connect-relay)"
expect_eq "egress-connect over EGRESS_RELAY: refusal, exit 1 and the reason" \
    "1 egress-connect: bad.e2e.test:$ECHO: denied-by-rule" "$(r connect-relay-refused)"
expect_eq "EGRESS_FD not a seqpacket socket: the relay is used" \
    "0 hello over egress-connect" "$(r connect-fallback)"
expect_eq "descriptor count unchanged at the end" same "$(r fds-end)"
expect_eq "the broker exits 0 on SIGTERM" 0 "$(r term)"

"$CONNECT" >/dev/null 2>&1
expect_eq "egress-connect without arguments: exit 2" 2 "$?"
EGRESS_RELAY= "$CONNECT" n.e2e.test 0 >/dev/null 2>&1
expect_eq "egress-connect port 0: exit 2" 2 "$?"
"$BROKER" --channel 0 --egress "$S" --expect 0:0 </dev/null >/dev/null 2>broker-expect.err
rc=$?
expect_eq "egress-broker refuses a channel that is not a seqpacket socket: exit 2" 2 "$rc"
"$E2E_PY" -c '
import socket, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sys.exit(subprocess.call([sys.argv[1], "--channel", str(b.fileno()), "--egress", sys.argv[2],
    "--expect", "0:0"], pass_fds=[b.fileno()], stderr=subprocess.DEVNULL))' "$BROKER" "$S"
expect_eq "egress-broker refuses a principal socket that is not the expected one: exit 1" \
    1 "$?"
ST=$(stat -c '%d:%i' "$S")
# "up": it answered a request (code 0), so it got past --expect; not "still running after
# a guessed delay", which a slow start would pass without having checked anything.
"$E2E_PY" -c '
import array, socket, struct, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
p = subprocess.Popen([sys.argv[1], "--channel", str(b.fileno()), "--egress", sys.argv[2],
    "--expect", sys.argv[3]], pass_fds=[b.fileno()])
b.close()
r1, r2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
h = b"n.e2e.test"
a.sendmsg([b"EGF1" + struct.pack(">IIHB", 5, 5000, int(sys.argv[4]), len(h)) + h],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r2.fileno()]))])
r2.close()
r1.settimeout(10)
try:
    msg = r1.recv(64)
except socket.timeout:
    msg = b""
up = len(msg) == 12 and struct.unpack(">Ii", msg[4:]) == (5, 0)
print("up" if up and p.poll() is None else "exited" if p.poll() is not None else "noanswer")
p.terminate()
sys.exit(p.wait())' "$BROKER" "$S" "$ST" "$ECHO" > expect.out
expect_eq "egress-broker starts with the right --expect, exits 0 on SIGTERM" "up 0" \
    "$(cat expect.out) $?"

# PR_SET_PDEATHSIG: the broker goes with the process that started it (egress-run)
"$E2E_PY" -c '
import os, socket, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
p = subprocess.Popen([sys.argv[1], "--channel", str(b.fileno()), "--egress", sys.argv[2]],
    pass_fds=[b.fileno()])
print(p.pid, flush=True)
# Dies once the broker is serving (it sleeps in poll()), so that PDEATHSIG is what ends it.
import time
end = time.monotonic() + 10
while time.monotonic() < end:
    try:
        if "poll" in open("/proc/%d/wchan" % p.pid).read():
            break
    except OSError:
        break
    time.sleep(0.02)
os._exit(0)' "$BROKER" "$S" > orphan.pid
OPID=$(cat orphan.pid)
broker_alive() { kill -0 "$OPID" 2>/dev/null; }
_i=0
while broker_alive && [ $_i -lt 200 ]; do _i=$((_i + 1)); sleep 0.05; done
if kill -0 "$OPID" 2>/dev/null; then
	not_ok "egress-broker exits when its parent dies"
	kill "$OPID"
else
	ok "egress-broker exits when its parent dies"
fi

finish
