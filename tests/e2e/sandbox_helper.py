#!/usr/bin/env python3
"""
sandbox_helper.py: the probes and clients of the sandbox-side end-to-end tests
(tests/e2e/sandbox.sh, escape.sh, sandbox-relay.sh). Python standard library only; it
runs both on the host and inside egress-run's sandbox (as /usr/bin/python3, copied into the
sandbox's current directory, since only /usr, /etc and the current directory are there).

Trust and scope: it connects only to loopback addresses, to AF_UNIX sockets the test names,
and (for the escape probes, inside the sandbox only) to documentation and private
addresses that must be unreachable there. Every wait has a deadline.

  escape     inside the sandbox: every way out that must fail, one "NAME RESULT" line each
  status     capability sets, NoNewPrivs and Seccomp of a process (/proc/PID/status)
  x32        one x32 system call (the filter must kill the process)
  socks      a SOCKS5 CONNECT over TCP (the relay), then a mode: none, echo, hold, halfclose,
             reverse, stall (stop reading while the upstream floods), push (keep writing
             while the upstream does not read)
  slots      N connections at once to the relay: how many are closed at once, how many
             tunnels the rest get
  unixcount  an AF_UNIX listener that counts the connections it accepts (nothing must reach)
  sink       a loopback TCP upstream that accepts and never reads
  tree       descendants of a pid, "PID COMM" per line, depth first
  leakfds    exec a command with extra inheritable descriptors (a directory among them)
"""
import argparse
import ctypes
import errno
import hashlib
import ipaddress
import os
import select
import socket
import struct
import sys
import threading
import time

CHUNK = 1 << 16


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def die(msg):
    sys.stderr.write("sandbox_helper: %s\n" % msg)
    sys.exit(2)


def loopback_only(addr):
    if not ipaddress.ip_address(addr).is_loopback:
        die("refusing a non-loopback address %s" % addr)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def ename(e):
    return errno.errorcode.get(e, "E%d" % e)


# --- escape probes (inside the sandbox) ----------------------------------------------

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.ioctl.restype = ctypes.c_int
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]

NR = {                 # x86-64 and aarch64 (asm-generic) numbers
    "x86_64": {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
               "unshare": 272, "setns": 308, "clone": 56, "clone3": 435, "ptrace": 101,
               "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_open": 434,
               "pidfd_getfd": 438, "socket": 41, "socketpair": 53, "mount": 165},
    "aarch64": {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
                "unshare": 97, "setns": 268, "clone": 220, "clone3": 435, "ptrace": 117,
                "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_open": 434,
                "pidfd_getfd": 438, "socket": 198, "socketpair": 199, "mount": 40},
}[os.uname().machine]

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x10000000, 0x40000000, \
    0x20000000
SIGCHLD = 17
TIOCSTI = 0x5412


def sysc(name, *args):
    """Raw system call: 'ok' (or the value) on success, the errno name on failure."""
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
    if r == -1:
        return ename(ctypes.get_errno())
    return "ok"


def try_socket(fam, typ, proto=0):
    try:
        s = socket.socket(fam, typ, proto)
    except OSError as e:
        return ename(e.errno)
    s.close()
    return "created"


def try_connect(addr, port, timeout=3):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
    except OSError as e:
        return "socket-" + ename(e.errno)
    s.settimeout(timeout)
    try:
        s.connect((addr, port))
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return ename(e.errno)
    finally:
        s.close()
    return "connected"


def try_connect_fate(addr, port, timeout=5):
    """A connect that succeeds (the sandbox redirects it to egress-relay's transparent
    listener) and then what happens to it: egressd's refusal is a reset."""
    r = try_connect_keep(addr, port, timeout)
    if isinstance(r, str):
        return r
    try:
        r.sendall(b"x")
        return "eof" if r.recv(16) == b"" else "data"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return ename(e.errno)
    finally:
        r.close()


def try_connect_keep(addr, port, timeout):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((addr, port))
    except socket.timeout:
        s.close()
        return "timeout"
    except OSError as e:
        s.close()
        return ename(e.errno)
    return s


def try_udp_dns(port):
    """A DNS question to the host's test DNS server: nothing may answer in the sandbox."""
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + b"\x02ok\x03e2e\x04test\x00" + \
        struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    try:
        s.sendto(q, ("127.0.0.1", port))
        s.recvfrom(512)
        return "answered"
    except socket.timeout:
        return "noanswer"
    except OSError as e:
        return ename(e.errno)
    finally:
        s.close()


def socks5_connect(s, host, port, deadline):
    """SOCKS5 no-auth CONNECT by name; returns the reply code as two hex digits, or a
    word for what happened instead."""
    hb = host.encode()
    try:
        s.sendall(b"\x05\x01\x00")
        sel = recv_n(s, 2, deadline)
        if sel != b"\x05\x00":
            return "greeting=" + (sel.hex() or "closed")
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(hb)]) + hb + struct.pack(">H", port))
        rep = recv_n(s, 10, deadline)
    except (BrokenPipeError, ConnectionResetError):
        return "reset"
    if len(rep) < 2:
        return "closed"
    return "%02x" % rep[1]


def recv_n(s, n, deadline):
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            b = s.recv(n - len(buf))
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not b:
            break
        buf += b
    return buf


def relay_pid():
    """The egress-relay next to us in the sandbox (our child: egress-launch forked it)."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if argv0.endswith(b"/egress-relay"):
            return int(p)
    return None


def try_open(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return ename(e.errno)
    try:
        os.read(fd, 16)
    except OSError as e:
        return "read-" + ename(e.errno)
    finally:
        os.close(fd)
    return "readable"


def second_relay(args):
    """The workload starts an egress-relay of its own on the pinned socket: the workload's
    filter (inherited) must keep it from opening an AF_UNIX socket, so nothing passes."""
    import subprocess
    port = 3130             # 3128 and 3129 are the sandbox relay's own listeners
    rfd, wfd = os.pipe()
    try:
        p = subprocess.Popen(["egress-relay", "--listen", "127.0.0.1:%d" % port, "--egress",
                              "/run/egress.sock", "--ready-fd", str(wfd)], pass_fds=(wfd,),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as e:
        return "spawn-" + ename(e.errno)
    os.close(wfd)
    r, _, _ = select.select([rfd], [], [], 5)
    ready = os.read(rfd, 16) if r else b""
    os.close(rfd)
    if ready != b"ready\n":
        p.kill()
        p.wait()
        return "norelay"
    try:
        s = socket.create_connection(("127.0.0.1", port), 3)
        res = socks5_connect(s, args.host, args.port, time.monotonic() + 3)
        s.close()
    except OSError as e:
        res = ename(e.errno)
    p.terminate()
    p.wait()
    return res


def cmd_escape(args):
    up, dns = args.upstream_port, args.dns_port
    r = {}
    # Network: the host's loopback is not the sandbox's; a TCP connection to any other
    # IPv4 address is carried to egressd (transparent) and refused there; IPv6 has no
    # route anywhere.
    r["tcp-host-loopback"] = try_connect("127.0.0.1", up)
    r["tcp-host-dns"] = try_connect("127.0.0.1", dns)
    r["tcp6-host-loopback"] = try_connect("::1", up)
    r["tcp-192.0.2.1"] = try_connect_fate("192.0.2.1", 443)
    r["tcp-10.255.255.1"] = try_connect_fate("10.255.255.1", 443)
    r["tcp6-2001:db8::1"] = try_connect("2001:db8::1", 443)
    r["udp-host-dns"] = try_udp_dns(dns)
    # Socket families: only AF_INET and AF_INET6.
    r["af-unix-stream"] = try_socket(socket.AF_UNIX, socket.SOCK_STREAM)
    r["af-unix-dgram"] = try_socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    r["af-unix-seqpacket"] = try_socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r["af-netlink"] = try_socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    r["af-packet"] = try_socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    r["af-vsock"] = try_socket(40, socket.SOCK_STREAM)
    r["af-alg"] = try_socket(38, socket.SOCK_SEQPACKET)
    r["af-xdp"] = try_socket(44, socket.SOCK_RAW)
    r["af-family-100"] = try_socket(100, socket.SOCK_STREAM)
    # AF_UNIX with the upper half of the argument set: the kernel reads an int.
    r["af-unix-highbits"] = sysc("socket", (1 << 32) | socket.AF_UNIX, socket.SOCK_STREAM, 0)
    r["socketpair-unix"] = "ok" if socket.socketpair() else "failed"
    # (ctypes buffers are kept in variables: a temporary would be freed before the call)
    fds = ctypes.create_string_buffer(8)
    r["socketpair-inet"] = sysc("socketpair", socket.AF_INET, socket.SOCK_STREAM, 0,
                                ctypes.addressof(fds))
    r["raw-inet"] = try_socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    # The principal socket is there (bind-mounted) but cannot be reached directly.
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect("/run/egress.sock")
            r["connect-egress-sock"] = "connected"
        except OSError as e:
            r["connect-egress-sock"] = ename(e.errno)
        s.close()
    except OSError as e:
        r["connect-egress-sock"] = "socket-" + ename(e.errno)
    r["egress-sock-present"] = "yes" if os.path.exists("/run/egress.sock") else "no"
    # io_uring, namespaces, ptrace and friends.
    params = ctypes.create_string_buffer(120)
    r["io_uring_setup"] = sysc("io_uring_setup", 8, ctypes.addressof(params))
    r["io_uring_enter"] = sysc("io_uring_enter", 0, 0, 0, 0, 0, 0)
    r["io_uring_register"] = sysc("io_uring_register", 0, 0, 0, 0)
    r["unshare-newuser"] = sysc("unshare", CLONE_NEWUSER)
    r["unshare-newnet"] = sysc("unshare", CLONE_NEWNET)
    r["unshare-newns"] = sysc("unshare", CLONE_NEWNS)
    # clone with a namespace flag: a child must never come to exist (flags first on both).
    for nm, fl in (("clone-newuser", CLONE_NEWUSER), ("clone-newnet", CLONE_NEWNET),
                   ("clone-newpid", CLONE_NEWPID)):
        ctypes.set_errno(0)
        pid = libc.syscall(ctypes.c_long(NR["clone"]), ctypes.c_long(fl | SIGCHLD),
                           ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0),
                           ctypes.c_long(0))
        if pid == 0:
            os._exit(0)
        if pid > 0:
            os.waitpid(pid, 0)
            r[nm] = "created"
        else:
            r[nm] = ename(ctypes.get_errno())
    # clone3 with CLONE_NEWUSER: its flags are in memory, so the filter refuses it whole.
    cl_args = ctypes.create_string_buffer(struct.pack("<QQQQQ", CLONE_NEWUSER, 0, 0, 0,
                                                      SIGCHLD) + bytes(48), 88)
    ctypes.set_errno(0)
    pid = libc.syscall(ctypes.c_long(NR["clone3"]), ctypes.c_long(ctypes.addressof(cl_args)),
                       ctypes.c_long(88))
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        r["clone3-newuser"] = "created"
    else:
        r["clone3-newuser"] = ename(ctypes.get_errno())
    try:
        fd = os.open("/proc/1/ns/net", os.O_RDONLY)
        r["setns"] = sysc("setns", fd, 0)
        os.close(fd)
    except OSError as e:
        r["setns"] = "open-" + ename(e.errno)
    rp = relay_pid()
    r["relay-found"] = "yes" if rp else "no"
    rp = rp or 1
    r["ptrace-traceme"] = sysc("ptrace", 0, 0, 0, 0)
    r["ptrace-attach-relay"] = sysc("ptrace", 16, rp, 0, 0)
    buf = ctypes.create_string_buffer(64)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 64)
    r["process_vm_readv"] = sysc("process_vm_readv", rp, ctypes.addressof(iov), 1,
                                 ctypes.addressof(iov), 1, 0)
    ctypes.set_errno(0)
    pfd = libc.syscall(ctypes.c_long(NR["pidfd_open"]), ctypes.c_long(rp), ctypes.c_long(0))
    if pfd >= 0:
        r["pidfd_getfd"] = sysc("pidfd_getfd", pfd, 3, 0)
        os.close(pfd)
    else:
        r["pidfd_getfd"] = "pidfd_open-" + ename(ctypes.get_errno())
    r["relay-mem"] = try_open("/proc/%d/mem" % rp)
    r["relay-environ"] = try_open("/proc/%d/environ" % rp)
    # TIOCSTI: refused before the kernel looks at the descriptor (here /dev/null or a pipe,
    # where it would be ENOTTY), also with the upper half of the request set.
    c = ctypes.c_char(b"x")
    ctypes.set_errno(0)
    r["ioctl-tiocsti"] = "ok" if libc.ioctl(0, TIOCSTI, ctypes.addressof(c)) == 0 else \
        ename(ctypes.get_errno())
    ctypes.set_errno(0)
    r["ioctl-tiocsti-highbits"] = "ok" if libc.ioctl(0, (1 << 32) | TIOCSTI,
                                                     ctypes.addressof(c)) == 0 else \
        ename(ctypes.get_errno())
    src, tgt, fst = (ctypes.create_string_buffer(b"none"), ctypes.create_string_buffer(b"/tmp"),
                     ctypes.create_string_buffer(b"tmpfs"))
    r["mount-tmpfs"] = sysc("mount", ctypes.addressof(src), ctypes.addressof(tgt),
                            ctypes.addressof(fst), 0, 0)
    # Ordinary process creation still works (fork, and posix_spawn's clone3 fallback).
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    r["fork"] = "exit%d" % os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    import subprocess
    try:
        r["spawn"] = "exit%d" % subprocess.call(["sh", "-c", "exit 5"])
    except OSError as e:
        r["spawn"] = ename(e.errno)
    # The relay reaches egressd (sanity); a relay the workload starts itself does not.
    if args.host:
        try:
            s = socket.create_connection(("127.0.0.1", 3128), 3)
            r["own-relay-socks"] = socks5_connect(s, args.host, args.port,
                                                  time.monotonic() + 5)
            s.close()
        except OSError as e:
            r["own-relay-socks"] = ename(e.errno)
        r["second-relay-socks"] = second_relay(args)
    for k, v in r.items():
        out("%s %s" % (k, v))
    return 0


def cmd_x32(args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(0x40000000 | 39))      # x32 getpid
    out("survived %d %s" % (r, ename(ctypes.get_errno()) if r == -1 else "ok"))
    return 0


def cmd_status(args):
    want = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
    vals = {}
    with open("/proc/%s/status" % args.pid) as f:
        for l in f:
            k, _, v = l.partition(":")
            if k in want:
                vals[k] = v.strip()
    out(" ".join("%s=%s" % (k, vals.get(k, "-")) for k in want))
    return 0


# --- clients through the relay (host side) --------------------------------------------


def cmd_socks(args):
    loopback_only(args.addr)
    deadline = time.monotonic() + args.timeout
    try:
        s = socket.create_connection((args.addr, args.relay_port), args.timeout)
    except OSError as e:
        out("connect-" + ename(e.errno))
        return 0
    rep = socks5_connect(s, args.host, args.port, deadline)
    out(rep)
    if rep != "00":
        return 0
    mode = args.mode
    if mode == "echo":
        data = (b"echo" + os.urandom(args.size))[:args.size]
        s.sendall(data)
        got = recv_n(s, len(data), deadline)
        out("echo-ok" if got == data else "echo-bad %d" % len(got))
    elif mode == "halfclose":
        s.sendall(args.data.encode())
        s.shutdown(socket.SHUT_WR)
        h = hashlib.sha256()
        n, first = 0, b""
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                b = s.recv(CHUNK)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            h.update(b)
            if len(first) < 200:
                first += b[:200 - len(first)]
            n += len(b)
        out("recv %d" % n)
        out("first %s" % first.split(b"\n")[0].decode("latin-1"))
    elif mode == "reverse":
        # The upstream talks first and half-closes: read its banner and EOF, then speak.
        banner = b""
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            b = s.recv(CHUNK)
            if not b:
                break
            banner += b
        out("banner %s" % banner.decode("latin-1").strip())
        s.sendall(args.data.encode())
        s.shutdown(socket.SHUT_WR)
        s.settimeout(5)
        try:
            out("after %d" % len(s.recv(CHUNK)))
        except OSError as e:
            out("after " + ename(e.errno))
    elif mode == "hold":
        s.sendall(b"hold\n")
        got = recv_n(s, 5, deadline)
        if args.status_file:
            write_atomic(args.status_file, ("held" if got == b"hold\n" else "nohold") + "\n")
        end = time.monotonic() + 60
        while os.path.exists(args.hold_file) and time.monotonic() < end:
            time.sleep(0.05)
    elif mode == "stall":
        # Reads nothing until --go-file appears, then everything to EOF.
        write_atomic(args.ready_file, "ready\n")
        end = time.monotonic() + 60
        while not os.path.exists(args.go_file) and time.monotonic() < end:
            time.sleep(0.05)
        h = hashlib.sha256()
        n = 0
        end = time.monotonic() + 60
        while time.monotonic() < end:
            s.settimeout(max(0.01, end - time.monotonic()))
            try:
                b = s.recv(CHUNK)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            h.update(b)
            n += len(b)
        out("recv %d %s" % (n, h.hexdigest()))
    elif mode == "push":
        # Writes while it can to an upstream that never reads: how much left this client
        # before it blocked for good (1.5 s without progress), then holds until --go-file.
        s.setblocking(False)
        block = b"push" * (CHUNK // 4)
        sent = 0
        last = time.monotonic()
        end = time.monotonic() + 30
        while time.monotonic() < end and time.monotonic() - last < 1.5:
            try:
                n = s.send(block)
                sent += n
                last = time.monotonic()
            except BlockingIOError:
                select.select([], [s], [], 0.1)
            except OSError as e:
                out("error " + ename(e.errno))
                break
        write_atomic(args.ready_file, "pushed %d\n" % sent)
        end = time.monotonic() + 60
        while not os.path.exists(args.go_file) and time.monotonic() < end:
            time.sleep(0.05)
    s.close()
    return 0


def cmd_slots(args):
    """Opens N connections to the relay at once and sends nothing: those over the relay's
    limit must be closed at once (within --closed-within s). The rest then each run a
    SOCKS5 CONNECT and say hello through an echo upstream, and hold until --hold-file goes.
    Writes "closed C open O tunnels T" to --status-file."""
    loopback_only(args.addr)
    socks = []
    t0 = time.monotonic()
    for _ in range(args.n):
        s = socket.create_connection((args.addr, args.relay_port), 5)
        socks.append(s)
    closed, alive = [], []
    end = t0 + args.closed_within
    pending = list(socks)
    while pending and time.monotonic() < end:
        r, _, _ = select.select(pending, [], [], max(0.0, end - time.monotonic()))
        for s in r:
            try:
                b = s.recv(1)
            except ConnectionResetError:
                b = b""
            if not b:
                closed.append(s)
                pending.remove(s)
    alive = pending
    tunnels = 0
    for s in alive:
        rep = socks5_connect(s, args.host, args.port, time.monotonic() + 5)
        if rep == "00":
            s.sendall(b"hold\n")
            if recv_n(s, 5, time.monotonic() + 5) == b"hold\n":
                tunnels += 1
    write_atomic(args.status_file, "closed %d open %d tunnels %d\n" % (
        len(closed), len(alive), tunnels))
    end = time.monotonic() + 60
    while os.path.exists(args.hold_file) and time.monotonic() < end:
        time.sleep(0.05)
    for s in socks:
        s.close()
    return 0


# --- servers -------------------------------------------------------------------------


def cmd_unixcount(args):
    """An AF_UNIX listener of the test's own at PATH; appends a line to --count-file per
    connection accepted (a relay that followed a replaced path would land here)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(args.path)
    s.listen(16)
    write_atomic(args.ready_file, "ready\n")
    while True:
        c, _ = s.accept()
        with open(args.count_file, "a") as f:
            f.write("accepted\n")
        c.close()


def cmd_sink(args):
    """Accepts on loopback and never reads: a writer to it must be stopped by backpressure."""
    loopback_only(args.addr)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((args.addr, 0))
    s.listen(16)
    write_atomic(args.port_file, "%d\n" % s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)


# --- process tree and descriptors -----------------------------------------------------


def children(pid):
    kids = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def cmd_tree(args):
    def walk(pid, depth):
        for k in children(pid):
            try:
                with open("/proc/%d/comm" % k) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            out("%d %d %s" % (depth, k, comm))
            walk(k, depth + 1)
    walk(args.pid, 1)
    return 0


def cmd_leakfds(args):
    """Runs CMD with descriptors --dir (a directory) and --file dup'ed to the numbers given,
    inheritable: what a careless caller (a CI runner, a shell) may leave open."""
    dfd = os.open(args.dir, os.O_RDONLY | os.O_DIRECTORY)
    for n in args.fd:
        os.dup2(dfd, n, inheritable=True)
    os.close(dfd)
    os.execvp(args.cmd[0], args.cmd)


def main():
    ap = argparse.ArgumentParser(prog="sandbox_helper.py")
    sub = ap.add_subparsers(dest="sub", required=True)

    p = sub.add_parser("escape")
    p.add_argument("--upstream-port", type=int, required=True)
    p.add_argument("--dns-port", type=int, required=True)
    p.add_argument("--host")
    p.add_argument("--port", type=int, default=0)
    p.set_defaults(fn=cmd_escape)

    p = sub.add_parser("x32")
    p.set_defaults(fn=cmd_x32)

    p = sub.add_parser("status")
    p.add_argument("pid", nargs="?", default="self")
    p.set_defaults(fn=cmd_status)

    p = sub.add_parser("socks")
    p.add_argument("relay_port", type=int)
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--mode", default="none",
                   choices=["none", "echo", "halfclose", "reverse", "hold", "stall", "push"])
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--data", default="")
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("--status-file")
    p.add_argument("--hold-file")
    p.add_argument("--ready-file")
    p.add_argument("--go-file")
    p.set_defaults(fn=cmd_socks)

    p = sub.add_parser("slots")
    p.add_argument("relay_port", type=int)
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("n", type=int)
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--closed-within", type=float, default=1.0)
    p.add_argument("--status-file", required=True)
    p.add_argument("--hold-file", required=True)
    p.set_defaults(fn=cmd_slots)

    p = sub.add_parser("unixcount")
    p.add_argument("path")
    p.add_argument("--count-file", required=True)
    p.add_argument("--ready-file", required=True)
    p.set_defaults(fn=cmd_unixcount)

    p = sub.add_parser("sink")
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--port-file", required=True)
    p.set_defaults(fn=cmd_sink)

    p = sub.add_parser("tree")
    p.add_argument("pid", type=int)
    p.set_defaults(fn=cmd_tree)

    p = sub.add_parser("leakfds")
    p.add_argument("--dir", required=True)
    p.add_argument("--fd", type=int, action="append", required=True)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p.set_defaults(fn=cmd_leakfds)

    args = ap.parse_args()
    if getattr(args, "cmd", None) and args.cmd[0] == "--":
        args.cmd = args.cmd[1:]
    sys.exit(args.fn(args) or 0)


if __name__ == "__main__":
    main()
