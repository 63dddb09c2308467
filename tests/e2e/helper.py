#!/usr/bin/env python3
"""
helper.py: the clients, upstream servers and receipt checks of egressd's end-to-end
tests (tests/e2e/*.sh). Python standard library only.

Trust and scope: it connects only to AF_UNIX principal sockets and to loopback addresses
(127.0.0.0/8, ::1); a server binds only loopback. Every wait has a deadline, every loop
a bound, so a broken egressd makes a test fail, never hang.

  servers:  echo, http, eofreply, bulk, flood, bannerfirst, reset, backlog0 (write
            --port-file when ready)
  clients:  tunnel (SOCKS5, SOCKS4, SOCKS4a, HTTP CONNECT + a mode), raw (bytes in, bytes
            or an HTTP verdict out)
  receipts: rcpt (query), chain (hash chain, MAC, every open closed)
  misc:     freeport, lo-up (bring lo up in a fresh network namespace), rss
"""
import argparse
import hashlib
import hmac
import ipaddress
import json
import os
import socket
import struct
import sys
import threading
import time

CHUNK = 1 << 16


def die(msg):
    sys.stderr.write("helper: %s\n" % msg)
    sys.exit(2)


def loopback_only(addr):
    if not ipaddress.ip_address(addr).is_loopback:
        die("refusing a non-loopback address %s" % addr)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# --- servers -------------------------------------------------------------------------


def listener(addr, port, backlog=128):
    loopback_only(addr)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(backlog)
    return s


def log_line(path, obj):
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(obj, sort_keys=True) + "\n")


def recv_to_eof(c, limit=None, deadline=None):
    """Reads until EOF; returns (count, sha256 hex, first bytes)."""
    h = hashlib.sha256()
    n = 0
    first = b""
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            c.settimeout(left)
        try:
            b = c.recv(CHUNK)
        except (socket.timeout, ConnectionResetError):
            break
        if not b:
            break
        h.update(b)
        if len(first) < 256:
            first += b[: 256 - len(first)]
        n += len(b)
        if limit is not None and n >= limit:
            break
    return n, h.hexdigest(), first


def serve_forever(s, handler, args):
    while True:
        c, peer = s.accept()
        log_line(args.conn_log, {"peer": peer[0], "local": c.getsockname()[0]})
        t = threading.Thread(target=handler, args=(c, args), daemon=True)
        t.start()


def h_echo(c, args):
    n = 0
    try:
        while True:
            b = c.recv(CHUNK)
            if not b:
                break
            n += len(b)
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        c.close()
        log_line(args.log, {"bytes": n})


def read_head(c, buf, deadline):
    while b"\r\n\r\n" not in buf:
        c.settimeout(max(0.01, deadline - time.monotonic()))
        b = c.recv(CHUNK)
        if not b:
            raise EOFError("eof in head")
        buf += b
        if len(buf) > 1 << 20:
            raise EOFError("head too large")
    i = buf.index(b"\r\n\r\n") + 4
    return buf[:i], buf[i:]


def read_exact(c, buf, n, deadline):
    while len(buf) < n:
        c.settimeout(max(0.01, deadline - time.monotonic()))
        b = c.recv(CHUNK)
        if not b:
            raise EOFError("eof in body")
        buf += b
    return buf[:n], buf[n:]


def read_line(c, buf, deadline):
    while b"\r\n" not in buf:
        c.settimeout(max(0.01, deadline - time.monotonic()))
        b = c.recv(CHUNK)
        if not b:
            raise EOFError("eof in chunk line")
        buf += b
    i = buf.index(b"\r\n")
    return buf[:i], buf[i + 2:]


def h_http(c, args):
    """One request per connection, then Connection: close; logs what arrived, including
    any byte after the request (a second request must never be forwarded)."""
    rec = {"server": args.name}
    deadline = time.monotonic() + 10
    try:
        head, rest = read_head(c, b"", deadline)
        lines = head[:-4].split(b"\r\n")
        method, target, version = lines[0].decode("latin-1").split(" ", 2)
        headers = []
        for l in lines[1:]:
            k, v = l.decode("latin-1").split(":", 1)
            headers.append([k.strip(), v.strip()])
        hmap = {}
        for k, v in headers:
            hmap.setdefault(k.lower(), []).append(v)
        body = b""
        if "chunked" in ",".join(hmap.get("transfer-encoding", [])).lower():
            rec["framing"] = "chunked"
            while True:
                line, rest = read_line(c, rest, deadline)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while True:
                        line, rest = read_line(c, rest, deadline)
                        if line == b"":
                            break
                    break
                data, rest = read_exact(c, rest, size + 2, deadline)
                body += data[:-2]
        elif "content-length" in hmap:
            rec["framing"] = "length"
            body, rest = read_exact(c, rest, int(hmap["content-length"][0]), deadline)
        rec.update(method=method, target=target, version=version, headers=headers,
                   body_len=len(body), body_sha256=hashlib.sha256(body).hexdigest())
        payload = ("%s %s %s %d\n" % (args.name, method, target, len(body))).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                  b"Connection: close\r\nX-Upstream: %s\r\n\r\n%s"
                  % (len(payload), args.name.encode(), payload))
        c.shutdown(socket.SHUT_WR)
        n, _, first = recv_to_eof(c, deadline=time.monotonic() + 3)
        rec["extra"] = len(rest) + n
        rec["extra_text"] = (rest + first)[:200].decode("latin-1")
    except (OSError, EOFError, ValueError) as e:
        rec["error"] = str(e)
    finally:
        c.close()
        log_line(args.log, rec)


def h_eofreply(c, args):
    """Reads to EOF, then answers what it got and --reply-bytes more, then closes."""
    try:
        n, sha, _ = recv_to_eof(c, deadline=time.monotonic() + 30)
        c.sendall(("got %d %s\n" % (n, sha)).encode())
        block = bytes(range(256)) * 256
        left = args.reply_bytes
        while left > 0:
            m = min(left, len(block))
            c.sendall(block[:m])
            left -= m
        c.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        c.close()


def h_bulk(c, args):
    """Sends --send FILE while hashing what arrives; reports both sides."""
    res = {}

    def reader():
        res["n"], res["sha"], _ = recv_to_eof(c, deadline=time.monotonic() + 120)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    sent = 0
    try:
        with open(args.send, "rb") as f:
            sent = c.sendfile(f)
        c.shutdown(socket.SHUT_WR)
    except OSError as e:
        res["error"] = str(e)
    t.join(130)
    c.close()
    write_atomic(args.report, "recv %d %s sent %d\n" % (res.get("n", -1), res.get("sha", "-"),
                                                        sent))


def h_flood(c, args):
    """Sends --bytes of a random block pattern as fast as the reader takes it."""
    block = os.urandom(1 << 20)
    h = hashlib.sha256()
    sent = 0
    try:
        while sent < args.bytes:
            m = min(len(block), args.bytes - sent)
            c.sendall(block[:m])
            h.update(block[:m])
            sent += m
        c.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        c.close()
        write_atomic(args.report, "sent %d %s\n" % (sent, h.hexdigest()))


def h_bannerfirst(c, args):
    """A server-first peer that half-closes at once: banner, SHUT_WR, then reads to EOF."""
    try:
        c.sendall(b"banner from upstream\n")
        c.shutdown(socket.SHUT_WR)
        n, sha, _ = recv_to_eof(c, deadline=time.monotonic() + 30)
        write_atomic(args.report, "recv %d %s\n" % (n, sha))
    except OSError as e:
        write_atomic(args.report, "error %s\n" % e)
    finally:
        c.close()


def reset_close(c):
    """Closes with a reset (SO_LINGER 0): the peer sees ECONNRESET, not an EOF."""
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def h_reset(c, args):
    """--reply-bytes of banner first (then a pause, so that they arrive before the
    reset), --bytes of the client's read, then a reset instead of a FIN."""
    try:
        if args.reply_bytes:
            c.sendall(b"r" * args.reply_bytes)
            time.sleep(0.5)
        got = 0
        c.settimeout(10)
        while got < args.bytes:
            b = c.recv(CHUNK)
            if not b:
                break
            got += len(b)
    except OSError:
        pass
    finally:
        reset_close(c)


def cmd_serve(args):
    s = listener(args.addr, args.port)
    handler = {"echo": h_echo, "http": h_http, "eofreply": h_eofreply, "bulk": h_bulk,
               "flood": h_flood, "bannerfirst": h_bannerfirst, "reset": h_reset}[args.kind]
    write_atomic(args.port_file, "%d\n" % s.getsockname()[1])
    serve_forever(s, handler, args)


def cmd_backlog0(args):
    """A listener whose accept queue is full: further SYNs are dropped (Linux), so a
    connect to it times out without any other host being involved."""
    s = listener(args.addr, args.port, backlog=0)
    port = s.getsockname()[1]
    fillers = []
    for _ in range(8):
        f = socket.socket(s.family, socket.SOCK_STREAM)
        f.setblocking(False)
        try:
            f.connect((args.addr, port))
        except BlockingIOError:
            pass
        fillers.append(f)
        time.sleep(0.05)
    write_atomic(args.port_file, "%d\n" % port)
    while True:
        time.sleep(3600)


# --- clients -------------------------------------------------------------------------


def connect_unix(path, uid=None, timeout=10):
    if uid is not None:
        os.setgid(uid)
        os.setuid(uid)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def recv_n(s, n, deadline):
    buf = b""
    while len(buf) < n:
        s.settimeout(max(0.01, deadline - time.monotonic()))
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


def closed_soon(s, secs=3.0):
    """True when the peer closes within secs and sends nothing more."""
    s.settimeout(secs)
    try:
        b = s.recv(1)
    except socket.timeout:
        return "open"
    except ConnectionResetError:
        return "closed"
    return "closed" if not b else "data"


def send_maybe_split(s, data, split):
    if not split:
        s.sendall(data)
        return
    for i in range(len(data)):
        s.sendall(data[i:i + 1])
        time.sleep(0.002)


def host_bytes(host, atyp):
    if atyp == 1:
        return socket.inet_pton(socket.AF_INET, host)
    if atyp == 4:
        return socket.inet_pton(socket.AF_INET6, host)
    hb = host.encode()
    return bytes([len(hb)]) + hb


def handshake(s, args):
    """Returns (ok, status text)."""
    deadline = time.monotonic() + args.timeout
    if args.proto == "socks5":
        atyp = args.atyp
        if atyp is None:
            atyp = 1 if ":" not in args.host and all(
                p.isdigit() for p in args.host.split(".")) and args.host.count(".") == 3 else 3
            if ":" in args.host:
                atyp = 4
        greet = bytes([5, 1, 0])
        req = bytes([5, args.cmd, args.rsv, atyp]) + host_bytes(args.host, atyp) + \
            struct.pack(">H", args.port)
        if args.coalesce:
            send_maybe_split(s, greet + req, args.split)
            sel = recv_n(s, 2, deadline)
        else:
            send_maybe_split(s, greet, args.split)
            sel = recv_n(s, 2, deadline)
            if sel == b"\x05\x00":
                send_maybe_split(s, req, args.split)
        if sel != b"\x05\x00":
            return False, "greeting=%s %s" % (sel.hex() or "none", closed_soon(s))
        rep = recv_n(s, 10, deadline)
        if len(rep) < 2:
            return False, "none %s" % closed_soon(s, 0.5)
        if len(rep) != 10 or rep[0] != 5 or rep[2] != 0 or rep[3] != 1:
            return False, "badreply=%s" % rep.hex()
        if rep[1] != 0:
            return False, "%02x %s" % (rep[1], closed_soon(s))
        return True, "00"
    if args.proto in ("socks4", "socks4a"):
        if args.proto == "socks4":
            ip = socket.inet_pton(socket.AF_INET, args.host)
            req = bytes([4, args.cmd]) + struct.pack(">H", args.port) + ip + b"e2e\0"
        else:
            req = bytes([4, args.cmd]) + struct.pack(">H", args.port) + b"\0\0\0\x01" + \
                b"e2e\0" + args.host.encode() + b"\0"
        send_maybe_split(s, req, args.split)
        rep = recv_n(s, 8, deadline)
        if len(rep) < 2:
            return False, "none %s" % closed_soon(s, 0.5)
        if len(rep) != 8 or rep[0] != 0:
            return False, "badreply=%s" % rep.hex()
        if rep[1] != 90:
            return False, "%d %s" % (rep[1], closed_soon(s))
        return True, "90"
    if args.proto in ("native", "transparent"):
        hb = args.host.encode()
        verb = b"\x02" if args.proto == "transparent" else b"\x00"
        req = b"EGR1\x01" + verb + struct.pack(">H", args.port) + bytes([len(hb)]) + hb
        send_maybe_split(s, req, args.split)
        rep = recv_n(s, 8, deadline)
        if len(rep) < 8:
            return False, "none %s" % closed_soon(s, 0.5)
        if rep[:4] != b"EGR1":
            return False, "badreply=%s" % rep.hex()
        code = struct.unpack(">i", rep[4:])[0]
        if code != 0:
            return False, "%d %s" % (code, closed_soon(s))
        return True, "0"
    # HTTP CONNECT
    authority = "[%s]:%d" % (args.host, args.port) if ":" in args.host else \
        "%s:%d" % (args.host, args.port)
    req = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode()
    send_maybe_split(s, req, args.split)
    head = b""
    while b"\r\n\r\n" not in head and time.monotonic() < deadline:
        b = recv_n(s, 1, deadline)
        if not b:
            break
        head += b
    if not head:
        return False, "none %s" % closed_soon(s, 0.5)
    status, reason = http_verdict(head)
    if status != "200":
        return False, "%s %s %s" % (status, reason, closed_soon(s))
    return True, "200"


def http_verdict(data):
    """'STATUS EGRESS-REASON CONNECTION' of an HTTP response head."""
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    parts = head[0].split(" ")
    status = parts[1] if len(parts) > 1 else "?"
    reason = "-"
    for l in head[1:]:
        if ":" in l:
            k, v = l.split(":", 1)
            if k.strip().lower() == "egress-reason":
                reason = v.strip()
    return status, reason


def cmd_tunnel(args):
    if args.align is not None:
        # Start at a chosen fraction of a wall-clock second (timing edges of egressd).
        time.sleep((args.align - time.time() % 1) % 1)
    if args.at is not None:
        # Start at a chosen wall-clock time (this process's own start-up is not counted).
        time.sleep(max(0.0, args.at - time.time()))
    if args.start_file:
        write_atomic(args.start_file, "%.6f\n" % time.time())
    s = connect_unix(args.sock, args.uid, args.timeout)
    ok, status = handshake(s, args)
    out(status)
    if not ok or args.mode != "hold":
        if args.status_file:
            write_atomic(args.status_file, status + "\n")
    if not ok:
        return 0
    t0 = time.monotonic()
    mode = args.mode
    if mode == "none":
        s.close()
    elif mode == "echo":
        # Starts with ASCII: random bytes could look like TLS to the SNI guard.
        data = (b"echo" + os.urandom(args.size))[:args.size]
        s.sendall(data)
        got = recv_n(s, len(data), time.monotonic() + args.timeout)
        out("echo-ok" if got == data else "echo-bad %d" % len(got))
    elif mode == "hold":
        # First --hello (echoed by the upstream: bytes flowed, the SNI guard passed them,
        # so the open receipt exists), or --wait-bytes from a server-first upstream; then
        # the status file; then stays until the far side closes or the hold file goes.
        n = 0
        hello = unescape(args.hello)
        if hello:
            s.sendall(hello)
            n = len(recv_n(s, len(hello), time.monotonic() + args.timeout))
        elif args.wait_bytes:
            n = len(recv_n(s, args.wait_bytes, time.monotonic() + args.timeout))
        if args.status_file:
            write_atomic(args.status_file, status + "\n")
        s.setblocking(False)
        why = "held"
        end = time.monotonic() + args.hold_secs
        while time.monotonic() < end:
            if args.hold_file and not os.path.exists(args.hold_file):
                why = "released"
                break
            try:
                b = s.recv(CHUNK)
                if not b:
                    why = "eof"
                    break
                n += len(b)
            except BlockingIOError:
                time.sleep(0.05)
            except ConnectionResetError:
                why = "reset"
                break
        out("%s %.1f %d" % (why, time.monotonic() - t0, n))
    elif mode == "bulk":
        res = {}

        def reader():
            res["r"] = recv_to_eof(s, deadline=time.monotonic() + 120)

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        with open(args.send, "rb") as f:
            s.settimeout(120)
            s.sendfile(f)
        s.shutdown(socket.SHUT_WR)
        th.join(130)
        n, sha, _ = res.get("r", (-1, "-", b""))
        out("recv %d %s" % (n, sha))
    elif mode == "reset":
        # --data (backslash escapes as --hello's), then, once its echo waits unread, a
        # close: what a reset is on an AF_UNIX socket (the peer reads ECONNRESET when
        # the closer left bytes unread; no SO_LINGER, no RST segment there).
        data = unescape(args.data)
        s.sendall(data)
        s.settimeout(args.timeout)
        end = time.monotonic() + args.timeout
        got = b""
        while len(got) < len(data) and time.monotonic() < end:
            got = s.recv(len(data), socket.MSG_PEEK)
            if not got:
                break
            if len(got) < len(data):
                time.sleep(0.02)
        out("echoed %d" % len(got))
        reset_close(s)
    elif mode == "halfclose":
        s.sendall(args.data.encode())
        s.shutdown(socket.SHUT_WR)
        n, sha, first = recv_to_eof(s, deadline=time.monotonic() + args.timeout)
        out("recv %d %s" % (n, sha))
        out("first %s" % first.split(b"\n")[0].decode("latin-1"))
    elif mode == "slow":
        write_atomic(args.ready_file, "ready\n")
        end = time.monotonic() + 60
        while not os.path.exists(args.go_file) and time.monotonic() < end:
            time.sleep(0.05)
        n, sha, _ = recv_to_eof(s, deadline=time.monotonic() + 60)
        out("recv %d %s" % (n, sha))
    elif mode == "hello":
        # A ClientHello (and then an application-data record) to an echo upstream:
        # "echoed" when every byte came back, else what happened.
        if args.malformed:
            data = tls_records(b"\x01\x00\x00\x06\x03\x03\x00\x00\x00\x00\x00\x00"[:10], 1)
        elif args.openssl_hello:
            data = openssl_hello(args.sni[0] if args.sni else None)
        else:
            names = [n for n in args.sni if n]
            data = tls_records(client_hello(names, args.ech), args.records)
        if args.appdata:
            # --appdata-bytes N: N bytes of application data, in records of 16 KiB at most
            n = args.appdata_bytes
            data += tls_records(os.urandom(n), -(-n // 16384), 0x17)
        # Records before the hello (--before HEX, e.g. a ChangeCipherSpec 140303000101).
        data = b"".join(bytes.fromhex(b) for b in args.before) + data
        try:
            send_maybe_split(s, data, args.split_hello)
        except (BrokenPipeError, ConnectionResetError):
            pass
        got = recv_n(s, len(data), time.monotonic() + args.timeout)
        if got == data:
            out("echoed")
        else:
            out("%s after %d" % (closed_soon(s, 1), len(got)))
    elif mode == "trickle":
        # One byte every --interval s for --hold-secs, each echoed: activity keeps a
        # tunnel alive.
        s.settimeout(2)
        end = time.monotonic() + args.hold_secs
        n = 0
        why = "alive"
        while time.monotonic() < end:
            try:
                s.sendall(b"t")
                if s.recv(1) != b"t":
                    why = "eof"
                    break
            except OSError:
                why = "error"
                break
            n += 1
            time.sleep(args.interval)
        out("%s %d" % (why, n))
    elif mode == "reverse":
        # The upstream spoke first and half-closed: read its banner to EOF, then talk.
        n, sha, first = recv_to_eof(s, deadline=time.monotonic() + args.timeout)
        out("banner %s" % first.decode("latin-1").strip())
        s.sendall(args.data.encode())
        s.shutdown(socket.SHUT_WR)
        n2, _, _ = recv_to_eof(s, deadline=time.monotonic() + args.timeout)
        out("after %d" % n2)
    elif mode == "flood":
        # Sends until the tunnel is closed under it (quota-bytes); echoes are read.
        s.setblocking(False)
        sent = recvd = 0
        block = b"q" * 512
        end = time.monotonic() + args.timeout
        why = "timeout"
        while time.monotonic() < end:
            try:
                if sent < args.size:
                    sent += s.send(block)
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                why = "reset"
                break
            try:
                b = s.recv(CHUNK)
                if not b:
                    why = "eof"
                    break
                recvd += len(b)
            except BlockingIOError:
                time.sleep(0.01)
            except ConnectionResetError:
                why = "reset"
                break
        out("%s sent %d recv %d" % (why, sent, recvd))
    return 0


def client_hello(names, ech=False):
    """A TLS 1.2/1.3-style ClientHello handshake message with server_name entries."""
    exts = b""
    if names:
        entries = b"".join(b"\x00" + struct.pack(">H", len(n)) + n.encode() for n in names)
        sn = struct.pack(">H", len(entries)) + entries
        exts += struct.pack(">HH", 0, len(sn)) + sn
    sv = b"\x02\x03\x04"                                   # supported_versions: TLS 1.3
    exts += struct.pack(">HH", 43, len(sv)) + sv
    if ech:
        e = b"\x00\x00\x01\x00\x01\x07\x00\x20" + os.urandom(32) + b"\x00\x10" + os.urandom(16)
        exts += struct.pack(">HH", 0xfe0d, len(e)) + e
    body = b"\x03\x03" + os.urandom(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00" + \
        struct.pack(">H", len(exts)) + exts
    return b"\x01" + struct.pack(">I", len(body))[1:] + body


def openssl_hello(name):
    """The ClientHello records Python's ssl (OpenSSL) writes first, SNI name."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outg, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outg.read()


def tls_records(msg, n, ctype=0x16):
    size = -(-len(msg) // n)
    parts = [msg[i:i + size] for i in range(0, len(msg), size)]
    return b"".join(bytes([ctype]) + b"\x03\x01" + struct.pack(">H", len(p)) + p for p in parts)


def unescape(text):
    return text.encode("latin-1").decode("unicode_escape").encode("latin-1")


def cmd_raw(args):
    # Decoded before connect_unix drops to --uid (which may not read Python's library).
    data = bytes.fromhex(args.hex) if args.hex is not None else unescape(args.data)
    data2 = unescape(args.data2) if args.data2 is not None else None
    data3 = unescape(args.data3) if args.data3 is not None else None
    until_text = unescape(args.until_text) if args.until_text is not None else None
    s = connect_unix(args.sock, args.uid, args.timeout)
    try:
        send_maybe_split(s, data, args.split)
        if args.sent_file:
            write_atomic(args.sent_file, "sent\n")
        if data2 is not None:
            if args.go_file:
                # Sent when the test says so, not after a guess at how long that takes.
                end = time.monotonic() + 30
                while not os.path.exists(args.go_file) and time.monotonic() < end:
                    time.sleep(0.02)
            else:
                time.sleep(args.delay)
            send_maybe_split(s, data2, args.split2)
            if data3 is not None:
                s.sendall(data3)
        if args.shut:
            s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass                        # refused early: what was answered still counts
    t0 = time.monotonic()
    buf = b""
    deadline = time.monotonic() + args.timeout
    state = "open"
    arrived = False
    while time.monotonic() < deadline:
        # --hold-file: the connection stays until that file goes (or --timeout).
        step = 0.05 if args.hold_file else deadline - time.monotonic()
        s.settimeout(max(0.01, min(step, deadline - time.monotonic())))
        try:
            b = s.recv(CHUNK)
        except socket.timeout:
            if args.hold_file and os.path.exists(args.hold_file):
                continue
            break
        except ConnectionResetError:
            state = "closed"
            break
        if not b:
            state = "closed"
            break
        buf += b
        if len(buf) > 1 << 20:
            break
        if not arrived and ((args.until_len and len(buf) >= args.until_len) or
                            (until_text is not None and until_text in buf)):
            # The whole expected answer is here, however long that took: "open" then
            # means still open --linger seconds later.
            arrived = True
            deadline = time.monotonic() + args.linger
    secs = time.monotonic() - t0
    if args.http:
        if not buf:
            out("none - %s" % state)
        else:
            status, reason = http_verdict(buf)
            out("%s %s %s" % (status, reason, state))
        if args.body:
            out(buf.split(b"\r\n\r\n", 1)[-1].decode("latin-1").strip())
    elif args.text:
        out("%s %s" % (buf.decode("latin-1").strip() or "none", state))
    else:
        out("%s %s" % (buf.hex() or "none", state))
    if args.elapsed:
        out("elapsed %.1f" % secs)
    return 0


def cmd_hold_many(args):
    """Opens N connections that send nothing and keeps them while --hold-file exists."""
    socks = []
    for _ in range(args.n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(args.sock)
        if args.tunnel:
            # a SOCKS5 tunnel to HOST:PORT, open (its echo answered) before the next
            host, port = args.tunnel.rsplit(":", 1)
            s.sendall(b"\x05\x01\x00")
            recv_n(s, 2, time.monotonic() + 5)
            hb = host.encode()
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(hb)]) + hb +
                      int(port).to_bytes(2, "big"))
            rep = recv_n(s, 10, time.monotonic() + 5)
            if rep[1] != 0:
                die("tunnel refused: %r" % rep)
            s.sendall(b"x")
            recv_n(s, 1, time.monotonic() + 5)
        socks.append(s)
    write_atomic(args.ready_file, "%d\n" % len(socks))
    end = time.monotonic() + 60
    while os.path.exists(args.hold_file) and time.monotonic() < end:
        time.sleep(0.05)
    for s in socks:
        s.close()
    return 0


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])      # utime + stime


def cmd_cpu(args):
    """CPU time (ms) the process used during --secs seconds."""
    t0 = cpu_ticks(args.pid)
    time.sleep(args.secs)
    hz = os.sysconf("SC_CLK_TCK")
    out(str((cpu_ticks(args.pid) - t0) * 1000 // hz))
    return 0


def cmd_burst(args):
    """N sequential requests, as fast as egressd answers; prints 'N x STATUS' lines."""
    data = bytes.fromhex(args.hex) if args.hex is not None else unescape(args.data)
    seen = {}
    t0 = time.monotonic()
    for _ in range(args.n):
        s = connect_unix(args.sock, None, args.timeout)
        try:
            s.sendall(data)
            if args.shut:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        buf = b""
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                b = s.recv(CHUNK)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            buf += b
        s.close()
        if buf.startswith(b"HTTP/"):
            st = " ".join(http_verdict(buf))
        else:
            st = buf[:4].hex() or "none"
        seen[st] = seen.get(st, 0) + 1
    for k in sorted(seen):
        out("%d x %s" % (seen[k], k))
    out("elapsed %.2f" % (time.monotonic() - t0))
    return 0


# --- receipts ------------------------------------------------------------------------


def load_records(path, skip=0):
    recs = []
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except FileNotFoundError:
        return recs
    for i, l in enumerate(lines[:-1]):
        if i < skip:
            continue
        try:
            recs.append(json.loads(l))
        except ValueError:
            pass
    return recs


def matches(r, wheres):
    for w in wheres:
        k, v = w.split("=", 1)
        if str(r.get(k, "")) != v:
            return False
    return True


QTYPES = {"A": 1, "NS": 2, "CNAME": 5, "MX": 15, "TXT": 16, "AAAA": 28, "SRV": 33,
          "HTTPS": 65}


def cmd_dnsq(args):
    """The native connector's question verb (docs/native.md), one connection per name:
    prints 'CODE RCODE COUNT TTL ADDR CLOSED' per name (ADDR '-' when COUNT is 0, CLOSED
    'closed' when egressd closed after the answer), or 'short N' for a truncated one."""
    names = list(args.names)
    if args.many:
        names = [args.many.replace("%d", str(i)) for i in range(args.count)]
    if args.random:
        # Random labels (seeded: a failure can be replayed), one per name.
        import random
        rnd = random.Random(args.random)
        names = [args.many.replace("%d", "%016x" % rnd.getrandbits(64))
                 for _ in range(args.count)]
    if args.names_file:
        write_atomic(args.names_file, "\n".join(names) + "\n")
    qtype = QTYPES[args.qtype] if args.qtype in QTYPES else int(args.qtype)
    if args.parallel > 1:
        lines = dnsq_parallel(args.sock, qtype, names, args.parallel, args.timeout)
    else:
        lines = dnsq_serial(args.sock, qtype, names, args.timeout)
    if args.summary:
        # Distinct answers and how many names got an address (many names at once).
        addrs = [l.split()[4] for l in lines if not l.startswith("short")]
        out("names=%d answered=%d distinct=%d" % (len(lines), sum(a != "-" for a in addrs),
                                                 len(set(a for a in addrs if a != "-"))))
        if args.last_file:
            write_atomic(args.last_file, "\n".join(lines) + "\n")
        return 0
    for l in lines:
        out(l)
    return 0


def dnsq_line(rep, closed):
    code = struct.unpack(">i", rep[4:8])[0]
    ttl = struct.unpack(">I", rep[10:14])[0]
    addr = socket.inet_ntop(socket.AF_INET, rep[14:18]) if rep[9] else "-"
    return "%d %d %d %d %s %s" % (code, rep[8], rep[9], ttl, addr, closed)


def dnsq_serial(sock, qtype, names, timeout):
    lines = []
    for name in names:
        s = connect_unix(sock, None, timeout)
        qb = name.encode("latin-1")
        s.sendall(b"EGR1\x01\x01" + struct.pack(">H", qtype) + bytes([len(qb)]) + qb)
        deadline = time.monotonic() + timeout
        rep = recv_n(s, 18, deadline)
        if len(rep) != 18 or rep[:4] != b"EGR1":
            lines.append("short %d %s" % (len(rep), rep.hex()))
            s.close()
            continue
        closed = "closed" if recv_n(s, 1, deadline) == b"" else "open"
        s.close()
        lines.append(dnsq_line(rep, closed))
    return lines


def dnsq_parallel(sock, qtype, names, width, timeout):
    """The same answers as dnsq_serial, in the order of names, with up to width questions
    in flight at once (non-blocking sockets, one selector): fast enough for 100 000
    names. Still one connection per question, as the verb wants."""
    import selectors
    sel = selectors.DefaultSelector()
    lines = [None] * len(names)
    nxt = 0
    live = 0
    deadline = time.monotonic() + timeout + len(names) / 1000.0

    def start(i):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(sock)          # blocking connect: a full backlog waits, not fails
        s.setblocking(False)
        qb = names[i].encode("latin-1")
        s.sendall(b"EGR1\x01\x01" + struct.pack(">H", qtype) + bytes([len(qb)]) + qb)
        sel.register(s, selectors.EVENT_READ, [i, b""])

    while nxt < len(names) or live:
        while live < width and nxt < len(names):
            start(nxt)
            nxt += 1
            live += 1
        if time.monotonic() > deadline:
            break
        for key, _ in sel.select(1):
            s, st = key.fileobj, key.data
            try:
                b = s.recv(64)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionResetError:
                b = b""
            if b:
                st[1] += b
                if len(st[1]) <= 18:
                    continue
            # EOF (or a byte past the answer): the question is done.
            rep = st[1]
            if len(rep) < 18 or rep[:4] != b"EGR1":
                lines[st[0]] = "short %d %s" % (len(rep), rep.hex())
            else:
                lines[st[0]] = dnsq_line(rep[:18], "closed" if len(rep) == 18 else "open")
            sel.unregister(s)
            s.close()
            live -= 1
    for key in list(sel.get_map().values()):
        lines[key.data[0]] = "short %d %s" % (len(key.data[1]), key.data[1].hex())
        key.fileobj.close()
    return [l if l is not None else "short 0 " for l in lines]


def cmd_rcpt(args):
    end = time.monotonic() + args.wait
    while True:
        hits = [r for r in load_records(args.file, args.skip) if matches(r, args.where)]
        # With --sum-count, --min is about the sum of the counts (collapsed denials are
        # written when their second ends).
        have = sum(int(r.get("count", 1)) for r in hits) if args.sum_count else len(hits)
        if have >= args.min or time.monotonic() >= end:
            break
        time.sleep(0.05)
    if args.count:
        out(str(len(hits)))
        return 0
    if args.sum_count:
        out(str(sum(int(r.get("count", 1)) for r in hits)))
        return 0
    if not hits:
        out("none")
        return 0
    r = hits[-1]
    out(" ".join(str(r.get(f, "-")) for f in args.fields.split(",")))
    return 0


def cmd_chain(args):
    """Checks prev (hash chain), seq, mac (with --key), member order and that every open
    has one close; a torn line is accepted only when a repair record follows it."""
    key = open(args.key, "rb").read() if args.key else None
    with open(args.file, "rb") as f:
        lines = f.read().split(b"\n")
    problems = []
    if lines and lines[-1] != b"":
        problems.append("file does not end with a newline")
    lines = lines[:-1]
    prev = "sha256:" + "0" * 64
    seq = None
    opens, closes = {}, {}
    torn = repairs = 0
    order = ["seq", "prev", "event", "id", "time", "principal", "policy", "frontend",
             "host", "raw", "port", "addr", "via", "sni", "reason", "close", "detail", "bytes_up",
             "bytes_down", "duration_ms", "count", "head", "sig", "mac"]
    for i, l in enumerate(lines):
        try:
            r = json.loads(l)
        except ValueError:
            nxt = json.loads(lines[i + 1]) if i + 1 < len(lines) else {}
            if nxt.get("event") == "repair":
                torn += 1
                continue
            problems.append("line %d: not JSON" % (i + 1))
            continue
        if r.get("prev") != prev:
            problems.append("line %d: prev %s, expected %s" % (i + 1, r.get("prev"), prev))
        if seq is not None and r.get("seq") != seq + 1:
            problems.append("line %d: seq %s after %s" % (i + 1, r.get("seq"), seq))
        seq = r.get("seq")
        keys = list(r.keys())
        if keys != [k for k in order if k in r] or any(k not in order for k in keys):
            problems.append("line %d: member order %s" % (i + 1, ",".join(keys)))
        if key is not None:
            cut = l.rfind(b',"mac"')
            if cut < 0:
                problems.append("line %d: no mac" % (i + 1))
            else:
                want = "hmac-sha256:" + hmac.new(key, b"egress-receipt-1\0" + l[:cut],
                                                 hashlib.sha256).hexdigest()
                if r.get("mac") != want:
                    problems.append("line %d: bad mac" % (i + 1))
        ev = r.get("event")
        if ev == "open":
            if r.get("id") in opens:
                problems.append("line %d: second open of %s" % (i + 1, r.get("id")))
            opens[r.get("id")] = i + 1
        elif ev == "close":
            if r.get("id") in closes:
                problems.append("line %d: second close of %s" % (i + 1, r.get("id")))
            if r.get("id") not in opens:
                problems.append("line %d: close without open %s" % (i + 1, r.get("id")))
            closes[r.get("id")] = i + 1
        elif ev == "repair":
            repairs += 1
        prev = "sha256:" + hashlib.sha256(l).hexdigest()
    for oid, ln in opens.items():
        if oid not in closes:
            problems.append("line %d: open %s has no close" % (ln, oid))
    if torn != repairs and not args.allow_unrepaired:
        problems.append("%d torn lines, %d repair records" % (torn, repairs))
    for p in problems[:20]:
        out(p)
    if not problems:
        out("ok %d records %d opens %d closes %d repairs" % (
            len(lines) - torn, len(opens), len(closes), repairs))
    return 1 if problems else 0


# --- misc ----------------------------------------------------------------------------


def cmd_field(args):
    r = json.loads(sys.stdin.readline() or "{}")
    if args.header:
        vals = [v for k, v in r.get("headers", []) if k.lower() == args.names[0].lower()]
        out(",".join(vals))
        return 0
    out(" ".join(str(r.get(f, "-")) for f in args.names))
    return 0


def cmd_freeport(args):
    loopback_only(args.addr)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((args.addr, 0))
    out(str(s.getsockname()[1]))
    s.close()
    return 0


def cmd_lo_up(args):
    import fcntl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ifr = struct.pack("16sh14x", b"lo", 0)
    flags = struct.unpack("16sh14x", fcntl.ioctl(s, 0x8913, ifr))[1]   # SIOCGIFFLAGS
    fcntl.ioctl(s, 0x8914, struct.pack("16sh14x", b"lo", flags | 1))  # SIOCSIFFLAGS, UP
    return 0


def cmd_rss(args):
    with open("/proc/%d/status" % args.pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                out(l.split()[1])
                return 0
    out("0")
    return 1


def main():
    ap = argparse.ArgumentParser(prog="helper.py")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("serve")
    p.add_argument("kind", choices=["echo", "http", "eofreply", "bulk", "flood", "bannerfirst",
                                     "reset"])
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True)
    p.add_argument("--conn-log")
    p.add_argument("--log")
    p.add_argument("--name", default="upstream")
    p.add_argument("--reply-bytes", type=int, default=0)
    p.add_argument("--send")
    p.add_argument("--report")
    p.add_argument("--bytes", type=int, default=0)
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("backlog0")
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True)
    p.set_defaults(fn=cmd_backlog0)

    p = sub.add_parser("tunnel")
    p.add_argument("proto", choices=["socks5", "socks4", "socks4a", "connect", "native",
                                      "transparent"])
    p.add_argument("sock")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--mode", default="none",
                   choices=["none", "echo", "hold", "bulk", "halfclose", "slow", "flood",
                            "trickle", "reverse", "hello", "reset"])
    p.add_argument("--atyp", type=int)
    p.add_argument("--cmd", type=int, default=1)
    p.add_argument("--rsv", type=int, default=0)
    p.add_argument("--split", action="store_true")
    p.add_argument("--coalesce", action="store_true")
    p.add_argument("--uid", type=int)
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("--status-file")
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--hold-file")
    p.add_argument("--hold-secs", type=float, default=60)
    p.add_argument("--interval", type=float, default=0.3)
    p.add_argument("--align", type=float)
    p.add_argument("--at", type=float)
    p.add_argument("--start-file")
    p.add_argument("--hello", default="hold\\n")
    p.add_argument("--sni", action="append", default=[])
    p.add_argument("--ech", action="store_true")
    p.add_argument("--records", type=int, default=1)
    p.add_argument("--split-hello", action="store_true")
    p.add_argument("--malformed", action="store_true")
    p.add_argument("--appdata", action="store_true")
    p.add_argument("--appdata-bytes", type=int, default=300)
    p.add_argument("--openssl-hello", action="store_true")
    p.add_argument("--before", action="append", default=[])
    p.add_argument("--wait-bytes", type=int, default=0)
    p.add_argument("--send")
    p.add_argument("--data", default="")
    p.add_argument("--ready-file")
    p.add_argument("--go-file")
    p.set_defaults(fn=cmd_tunnel)

    p = sub.add_parser("dnsq")
    p.add_argument("sock")
    p.add_argument("qtype")
    p.add_argument("names", nargs="*")
    p.add_argument("--many", help="a name pattern with %%d, asked --count times")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--summary", action="store_true")
    p.add_argument("--last-file", help="with --summary: every answer line, in order")
    p.add_argument("--random", type=int, default=0,
                   help="with --many: %%d becomes a random label (this seed), not the index")
    p.add_argument("--parallel", type=int, default=1, help="questions in flight at once")
    p.add_argument("--names-file", help="the names asked, one a line, in order")
    p.add_argument("--timeout", type=float, default=10)
    p.set_defaults(fn=cmd_dnsq)

    p = sub.add_parser("raw")
    p.add_argument("sock")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--hex")
    g.add_argument("--data")
    p.add_argument("--data2")
    p.add_argument("--sent-file")
    p.add_argument("--delay", type=float, default=0.5)
    p.add_argument("--go-file")
    p.add_argument("--hold-file")
    p.add_argument("--until-len", type=int, default=0)
    p.add_argument("--until-text")
    p.add_argument("--linger", type=float, default=1.0)
    p.add_argument("--split", action="store_true")
    p.add_argument("--split2", action="store_true", help="--data2 a byte per write")
    p.add_argument("--data3", help="one write right after --data2")
    p.add_argument("--shut", action="store_true")
    p.add_argument("--http", action="store_true")
    p.add_argument("--body", action="store_true")
    p.add_argument("--text", action="store_true")
    p.add_argument("--elapsed", action="store_true")
    p.add_argument("--uid", type=int)
    p.add_argument("--timeout", type=float, default=5)
    p.set_defaults(fn=cmd_raw)

    p = sub.add_parser("hold-many")
    p.add_argument("sock")
    p.add_argument("n", type=int)
    p.add_argument("--hold-file", required=True)
    p.add_argument("--ready-file", required=True)
    p.add_argument("--tunnel", help="HOST:PORT: each a SOCKS5 tunnel there, used once")
    p.set_defaults(fn=cmd_hold_many)

    p = sub.add_parser("cpu")
    p.add_argument("pid", type=int)
    p.add_argument("--secs", type=float, default=2)
    p.set_defaults(fn=cmd_cpu)

    p = sub.add_parser("burst")
    p.add_argument("sock")
    p.add_argument("n", type=int)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--hex")
    g.add_argument("--data")
    p.add_argument("--shut", action="store_true")
    p.add_argument("--timeout", type=float, default=5)
    p.set_defaults(fn=cmd_burst)

    p = sub.add_parser("rcpt")
    p.add_argument("file")
    p.add_argument("--skip", type=int, default=0)
    p.add_argument("--where", action="append", default=[])
    p.add_argument("--fields", default="event,reason,frontend,host,port")
    p.add_argument("--count", action="store_true")
    p.add_argument("--sum-count", action="store_true")
    p.add_argument("--wait", type=float, default=0)
    p.add_argument("--min", type=int, default=1)
    p.set_defaults(fn=cmd_rcpt)

    p = sub.add_parser("chain")
    p.add_argument("file")
    p.add_argument("--key")
    p.add_argument("--allow-unrepaired", action="store_true")
    p.set_defaults(fn=cmd_chain)

    p = sub.add_parser("field")
    p.add_argument("names", nargs="+")
    p.add_argument("--header", action="store_true")
    p.set_defaults(fn=cmd_field)

    p = sub.add_parser("freeport")
    p.add_argument("--addr", default="127.0.0.1")
    p.set_defaults(fn=cmd_freeport)

    p = sub.add_parser("lo-up")
    p.set_defaults(fn=cmd_lo_up)

    p = sub.add_parser("rss")
    p.add_argument("pid", type=int)
    p.set_defaults(fn=cmd_rss)

    args = ap.parse_args()
    sys.exit(args.fn(args) or 0)


if __name__ == "__main__":
    main()
