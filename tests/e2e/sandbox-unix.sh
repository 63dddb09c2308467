#!/bin/sh
# AF_UNIX in the sandbox never reaches a socket by its path. The workload of egress-run has
# AF_UNIX sockets of its own (socketpair, and fd 4), and the current directory is the
# host's, read-write: a host process of the test listens there on a datagram socket, a
# seqpacket and a stream socket. From the inside the workload tries every way to address
# them: sendto and sendmsg with the path as destination, connect then send, on ends of
# socketpairs of every type it may ask for (SOCK_DGRAM, SOCK_RAW which the kernel makes a
# datagram socket, SOCK_SEQPACKET, SOCK_STREAM, with flags and with the high half of the
# argument set) and on fd 4 itself and a copy of it. The host listeners receive nothing
# and accept nothing. The fd-4 channel still works (libegress: an allowed host echoes, a
# refused one gets its reason), and socketpair for streams and seqpackets stays allowed.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
[ -x "$top_builddir/tests/tools/fd4client" ] || { echo "Bail out! fd4client is not built"; exit 99; }
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'n.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cp "$top_builddir/tests/tools/fd4client" "$BOX/fd4client"
A="--allow n.e2e.test:$ECHO --resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="$A --receipts $WORK/run.jsonl"

# The host's listeners, in the workload's current directory: every datagram and every
# accepted connection is one line of host.log.
cat > host.py <<'PYEOF'
import os, select, socket, sys
box, log = sys.argv[1], open(sys.argv[2], "w", buffering=1)
socks = {}
for name, typ in (("dgram", socket.SOCK_DGRAM), ("seqpacket", socket.SOCK_SEQPACKET),
                  ("stream", socket.SOCK_STREAM)):
    s = socket.socket(socket.AF_UNIX, typ)
    path = os.path.join(box, name + ".sock")
    s.bind(path)
    os.chmod(path, 0o777)
    if typ != socket.SOCK_DGRAM:
        s.listen(16)
    socks[s.fileno()] = (name, s)
open(sys.argv[3], "w").close()
while True:
    for fd in select.select(list(socks), [], [])[0]:
        name, s = socks[fd]
        if name == "dgram":
            log.write("dgram %r\n" % s.recv(4096))
        else:
            c, _ = s.accept()
            log.write("%s accepted\n" % name)
            c.close()
PYEOF
rm -f host.ready
spawn host "$E2E_PY" "$WORK/host.py" "$BOX" "$WORK/host.log" "$WORK/host.ready"
wait_for -e host.ready || { echo "Bail out! the host listeners did not start"; exit 99; }

cat > "$BOX/probe.py" <<'PYEOF'
import os, socket
def ename(e):
    import errno
    return errno.errorcode.get(e, str(e))
def tr(name, f):
    try:
        f()
        print(name, "sent")
    except OSError as e:
        print(name, ename(e.errno))
def attempts(tag, s):
    for t in ("dgram", "seqpacket", "stream"):
        p = t + ".sock"
        tr("%s-sendto-%s" % (tag, t), lambda: s.sendto(b"sendto " + tag.encode(), p))
        tr("%s-sendmsg-%s" % (tag, t),
           lambda: s.sendmsg([b"sendmsg " + tag.encode()], [], 0, p))
    for t in ("dgram", "seqpacket", "stream"):
        p = t + ".sock"
        tr("%s-connect-%s" % (tag, t), lambda: (s.connect(p), s.send(b"connect " + tag.encode())))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def pair(typ):
    sv = (ctypes.c_int * 2)()
    if libc.socketpair(socket.AF_UNIX, ctypes.c_long(typ), 0, sv) == -1:
        return ename(ctypes.get_errno()), None
    return "ok", socket.socket(fileno=sv[0])
for tag, typ in (("dgram", socket.SOCK_DGRAM), ("raw", socket.SOCK_RAW),
                 ("dgram-flags", socket.SOCK_DGRAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC),
                 ("dgram-highbits", socket.SOCK_DGRAM | (1 << 32)),
                 ("seqpacket", socket.SOCK_SEQPACKET), ("stream", socket.SOCK_STREAM)):
    r, s = pair(typ)
    print("socketpair-" + tag, r)
    if s is not None:
        s.setblocking(False)
        attempts(tag, s)
attempts("fd4", socket.socket(fileno=os.dup(4)))
attempts("fd4dup", socket.socket(fileno=os.dup(4)))
PYEOF

# shellcheck disable=SC2086
erun --quiet $A -- "$SBX_PY" probe.py
expect_eq "the probes ran" 0 "$rc"
[ "$rc" = 0 ] || printf '%s\n' "$err" | sed 's/^/# /'
printf '%s\n' "$out" > probes.txt
printf '%s\n' "$out" | sed 's/^/# /'
probe() {
	_got=$(awk -v k="$1" '$1 == k { print $2 }' probes.txt)
	expect_eq "$2 ($1)" "$3" "${_got:-missing}"
}
probe socketpair-seqpacket "socketpair(AF_UNIX, SOCK_SEQPACKET) stays allowed" ok
probe socketpair-stream "socketpair(AF_UNIX, SOCK_STREAM) stays allowed" ok
# Nothing reached the host: wait until the host listener has seen everything sent so far
# (a marker datagram of the test's own), then look.
"$E2E_PY" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"marker", sys.argv[1])' "$BOX/dgram.sock"
wait_until grep -q marker host.log
expect_eq "the host's datagram, seqpacket and stream sockets in the sandbox's current directory received nothing" \
    "dgram b'marker'" "$(cat host.log)"

# --- fd 4 still works -------------------------------------------------------------------
# shellcheck disable=SC2086
ecmd "$ERUN" --quiet $A -- ./fd4client n.e2e.test "$ECHO"
expect_eq "libegress over fd 4: an allowed host, the stream echoes" "ok ping over fd 4" "$out$err"
# shellcheck disable=SC2086
ecmd "$ERUN" --quiet $A -- ./fd4client other.e2e.test "$ECHO"
expect_eq "libegress over fd 4: another host is refused with its reason" \
    "refused not-allowlisted" "$out$err"
expect_clean "unix"

finish
