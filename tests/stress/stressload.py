#!/usr/bin/env python3
"""stressload.py: the clients and upstreams of the stress suite (tests/stress/run.sh) that
tcpbench does not have: slow clients beside legitimate tunnels, fault upstreams and fault
clients, and lease cycles. asyncio, standard library only; every wait has a deadline.

  slow    --sock S --target T --slowloris N --idle M --interval SEC --tunnels K -c C
          [--min-run SEC]   (the slow ones go on at least SEC from the first tunnel)
          N connections that send a CONNECT head a byte every SEC seconds, M that connect
          and never send; once all are connected, K legitimate tunnels (CONNECT, one byte
          echoed, close) C at a time. Prints ok, fail, p50/p99/max setup latency (ms), how
          many slow and idle connections egressd closed and how many were still open.
  faults  --sock S --count K --out FILE
          Each fault case K times, each case on an upstream listener of its own (port),
          sequentially: writes one JSON line per case: port, the bytes the upstream
          received and the client received (summed), and the connections done.
  leases  --sock LEASESOCK --policy NAME -n N
          N lease/unlease cycles (lease verb, reply, close). Prints ok and fail.
  flood   --sock S | --tcp H:P --target T -n N --hold SEC
          N tunnels asked for at once, held SEC seconds, closed: ok, refused, pending.
  receipts FILE...          seq, opens, closes, daemon-restart closes, unclosed opens
  faultcheck --cases F --receipts R --count K   each fault case against its receipts

Trusts: nothing; it talks only to the AF_UNIX socket given and to its own listeners on
127.0.0.1.
"""
import argparse
import asyncio
import json
import os
import socket
import struct
import sys
import time

HEAD_MAX = 4096


def connect_head(target):
    return ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode()


async def read_head(reader, deadline):
    buf = b""
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or len(buf) > HEAD_MAX:
            raise TimeoutError("no head")
        chunk = await asyncio.wait_for(reader.read(HEAD_MAX), left)
        if not chunk:
            raise ConnectionError("eof in head: %r" % buf[:80])
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split(b" ")
    if len(status) < 2 or status[1] != b"200":
        raise ConnectionError("refused: %r" % head[:120])
    return rest


async def tunnel_open(sock, target, timeout):
    """Opens a CONNECT tunnel: (reader, writer, seconds to the 200, the upstream's bytes
    that came with the head: an upstream that speaks first may be that quick)."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(sock),
                                            timeout)
    writer.write(connect_head(target))
    rest = await read_head(reader, deadline)
    return reader, writer, time.monotonic() - t0, rest


async def one_setup(sock, target, timeout):
    reader, writer, dt, rest = await tunnel_open(sock, target, timeout)
    if rest:
        writer.close()
        raise ConnectionError("bytes after the head")
    try:
        writer.write(b"e")
        got = await asyncio.wait_for(reader.readexactly(1), timeout)
        if got != b"e":
            raise ConnectionError("echo")
    finally:
        writer.close()
    return dt


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = min(len(sorted_vals) - 1, int(round(p / 100.0 * (len(sorted_vals) - 1))))
    return sorted_vals[k]


# --- slow clients -----------------------------------------------------------------------

async def slowloris(sock, target, interval, state, stop):
    """One slot: a connection that sends the head a byte every interval; when egressd
    closes it (its handshake timeout), another takes its place until stop."""
    head = connect_head(target)
    first = True
    closed_once = False
    while not stop.is_set():
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(sock), 10)
        except (OSError, asyncio.TimeoutError):
            state["slow_connect_fail"] += 1
            await asyncio.sleep(interval)
            continue
        if first:
            state["slow_open"] += 1
            first = False
        i = 0
        try:
            while not stop.is_set():
                writer.write(head[i % len(head):i % len(head) + 1])
                i += 1
                await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(4096), interval)
                    if not data:
                        state["slow_closed"] += 1
                        break
                except asyncio.TimeoutError:
                    pass
        except (ConnectionError, OSError):
            state["slow_closed"] += 1
        finally:
            writer.close()
        if not closed_once and not stop.is_set():
            closed_once = True
            state["slow_slots_closed"] += 1


async def idler(sock, state, stop):
    """One slot: a connection that never sends; replaced when egressd closes it."""
    first = True
    closed_once = False
    while not stop.is_set():
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(sock), 10)
        except (OSError, asyncio.TimeoutError):
            state["idle_connect_fail"] += 1
            await asyncio.sleep(1)
            continue
        if first:
            state["idle_open"] += 1
            first = False
        try:
            rd = asyncio.ensure_future(reader.read(4096))
            st = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait({rd, st}, return_when=asyncio.FIRST_COMPLETED)
            if rd in done:
                state["idle_closed"] += 1
            for f in (rd, st):
                f.cancel()
        except (ConnectionError, OSError):
            state["idle_closed"] += 1
        finally:
            writer.close()
        if not closed_once and not stop.is_set():
            closed_once = True
            state["idle_slots_closed"] += 1


async def cmd_slow(a):
    state = dict(slow_open=0, slow_closed=0, slow_connect_fail=0, idle_open=0,
                 idle_closed=0, idle_connect_fail=0, slow_slots_closed=0, idle_slots_closed=0)
    stop = asyncio.Event()
    bg = []
    for i in range(a.slowloris):
        bg.append(asyncio.ensure_future(slowloris(a.sock, a.target, a.interval, state, stop)))
    for i in range(a.idle):
        bg.append(asyncio.ensure_future(idler(a.sock, state, stop)))
    deadline = time.monotonic() + 30
    while (state["slow_open"] + state["slow_connect_fail"] < a.slowloris or
           state["idle_open"] + state["idle_connect_fail"] < a.idle):
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    lat, fails, errs = [], 0, {}
    sem = asyncio.Semaphore(a.c)

    async def legit():
        nonlocal fails
        async with sem:
            try:
                lat.append(await one_setup(a.sock, a.target, a.timeout))
            except (OSError, ConnectionError, asyncio.TimeoutError, TimeoutError,
                    asyncio.IncompleteReadError) as e:
                fails += 1
                k = type(e).__name__
                errs[k] = errs.get(k, 0) + 1
    t0 = time.monotonic()
    await asyncio.gather(*(legit() for _ in range(a.tunnels)))
    wall = time.monotonic() - t0
    # The slow ones go on until min_run since they connected: past egressd's handshake
    # timeout, so that each slot has been closed by egressd at least once.
    await asyncio.sleep(max(0.0, a.min_run - (time.monotonic() - t0)))
    stop.set()
    await asyncio.wait_for(asyncio.gather(*bg, return_exceptions=True), 30)
    lat.sort()
    print("slow tunnels=%d ok=%d fail=%d wall_s=%.1f per_s=%.0f p50_ms=%.1f p99_ms=%.1f "
          "max_ms=%.1f slow_open=%d slow_closed_by_egressd=%d idle_open=%d "
          "idle_closed_by_egressd=%d slow_slots_closed=%d idle_slots_closed=%d "
          "connect_fail=%d errors=%s" % (
              a.tunnels, len(lat), fails, wall, len(lat) / wall if wall else 0,
              pct(lat, 50) * 1e3, pct(lat, 99) * 1e3, (lat[-1] if lat else 0) * 1e3,
              state["slow_open"], state["slow_closed"], state["idle_open"],
              state["idle_closed"], state["slow_slots_closed"], state["idle_slots_closed"],
              state["slow_connect_fail"] + state["idle_connect_fail"],
              json.dumps(errs, separators=(",", ":"))))


# --- faults -----------------------------------------------------------------------------
#
# Each case is (name, upstream behaviour, client behaviour). The counts are what the
# application on each side read: the receipt's bytes_up must equal what the upstream read,
# bytes_down what the client read. Where a side resets, it does so only after the other
# side's bytes it was sent were all read, so that no byte sits unread in a kernel buffer
# when the reset discards it (what is counted is then exact, not a race).

UP_X = 64 * 1024          # bytes a client sends in a case
DOWN_Y = 256 * 1024       # bytes an upstream sends in a case
BIG = 4 * 1024 * 1024     # the stop-reading cases: more than every buffer on the path
SLOW_N = 300              # a byte at a time


def rst(writer):
    s = writer.get_extra_info("socket")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def read_exactly_count(reader, n, timeout):
    got = 0
    deadline = time.monotonic() + timeout
    while got < n:
        chunk = await asyncio.wait_for(reader.read(min(65536, n - got)),
                                       max(0.01, deadline - time.monotonic()))
        if not chunk:
            break
        got += len(chunk)
    return got


async def read_to_eof(reader, timeout):
    got = 0
    deadline = time.monotonic() + timeout
    try:
        while True:
            chunk = await asyncio.wait_for(reader.read(65536),
                                           max(0.01, deadline - time.monotonic()))
            if not chunk:
                break
            got += len(chunk)
    except (ConnectionError, OSError):
        pass
    return got


async def send(writer, n, step=65536, pause=0.0):
    buf = b"x" * step
    left = n
    while left > 0:
        k = min(step, left)
        writer.write(buf[:k])
        await writer.drain()
        left -= k
        if pause:
            await asyncio.sleep(pause)


# upstream behaviours: return the bytes it read
async def up_reset_mid(reader, writer, ctl):
    got = await read_exactly_count(reader, UP_X, 20)
    await send(writer, DOWN_Y // 2)
    await ctl["client_read_half"].wait()
    rst(writer)
    return got


async def up_halfclose(reader, writer, ctl):
    await send(writer, DOWN_Y)
    writer.write_eof()
    got = await read_to_eof(reader, 20)
    writer.close()
    return got


async def up_wait_client_eof(reader, writer, ctl):
    got = await read_to_eof(reader, 20)
    await send(writer, DOWN_Y)
    writer.close()
    return got


async def up_stop_reading(reader, writer, ctl):
    await asyncio.sleep(2)
    got = await read_exactly_count(reader, BIG, 30)
    await send(writer, 1)
    writer.close()
    return got


async def up_byte_at_a_time(reader, writer, ctl):
    got = await read_exactly_count(reader, 1, 20)
    await send(writer, SLOW_N, step=1, pause=0.002)
    writer.close()
    return got


async def up_big_then_wait(reader, writer, ctl):
    got = await read_exactly_count(reader, 1, 20)
    await send(writer, BIG)
    await read_to_eof(reader, 30)
    writer.close()
    return got


async def up_echo_until_eof(reader, writer, ctl):
    got = 0
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            break
        got += len(chunk)
        writer.write(chunk)
        await writer.drain()
    writer.close()
    return got


async def up_partial_then_wait(reader, writer, ctl):
    got = await read_exactly_count(reader, UP_X, 20)
    await send(writer, DOWN_Y // 2)
    await read_to_eof(reader, 30)
    writer.close()
    return got


# client behaviours: return the bytes it read
async def cl_reset_mid(reader, writer, ctl):
    await send(writer, UP_X)
    got = await read_exactly_count(reader, DOWN_Y // 2, 20)
    ctl["client_read_half"].set()
    got += await read_to_eof(reader, 20)
    writer.close()
    return got


async def cl_after_upstream_eof(reader, writer, ctl):
    got = await read_to_eof(reader, 20)
    try:
        await send(writer, UP_X)
        writer.write_eof()
        await asyncio.sleep(0.2)
    except (ConnectionError, OSError):
        pass
    writer.close()
    return got


async def cl_halfclose(reader, writer, ctl):
    await send(writer, UP_X)
    writer.write_eof()
    got = await read_to_eof(reader, 20)
    writer.close()
    return got


async def cl_push_big(reader, writer, ctl):
    await send(writer, BIG)
    got = await read_to_eof(reader, 40)
    writer.close()
    return got


async def cl_read_to_eof(reader, writer, ctl):
    writer.write(b"g")
    await writer.drain()
    got = await read_to_eof(reader, 20)
    writer.close()
    return got


async def cl_stop_reading(reader, writer, ctl):
    writer.write(b"g")
    await writer.drain()
    await asyncio.sleep(2)
    got = await read_exactly_count(reader, BIG, 30)
    writer.close()
    return got


async def cl_byte_at_a_time(reader, writer, ctl):
    got = 0
    for _ in range(SLOW_N):
        writer.write(b"b")
        await writer.drain()
        await asyncio.sleep(0.002)
        got += await read_exactly_count(reader, 1, 10)
    writer.close()
    return got


async def cl_reset_after_read(reader, writer, ctl):
    await send(writer, UP_X)
    got = await read_exactly_count(reader, DOWN_Y // 2, 20)
    rst(writer)
    return got


CASES = [
    ("upstream-resets-mid-transfer", up_reset_mid, cl_reset_mid),
    ("upstream-half-closes", up_halfclose, cl_after_upstream_eof),
    ("client-half-closes", up_wait_client_eof, cl_halfclose),
    ("upstream-stops-reading", up_stop_reading, cl_push_big),
    ("upstream-byte-at-a-time", up_byte_at_a_time, cl_read_to_eof),
    ("client-stops-reading", up_big_then_wait, cl_stop_reading),
    ("client-byte-at-a-time", up_echo_until_eof, cl_byte_at_a_time),
    ("client-resets-mid-transfer", up_partial_then_wait, cl_reset_after_read),
]


async def run_case(a, name, up, cl):
    totals = dict(case=name, up_read=0, client_read=0, done=0, errors=0)
    ctl = {}
    pending = []

    async def handle(reader, writer):
        try:
            totals["up_read"] += await up(reader, writer, ctl)
        except (ConnectionError, OSError, asyncio.TimeoutError) as e:
            totals["errors"] += 1
            print("stressload: %s upstream: %r" % (name, e), file=sys.stderr)
        finally:
            ctl["up_done"].set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    totals["port"] = port
    for _ in range(a.count):
        ctl.clear()
        ctl["client_read_half"] = asyncio.Event()
        ctl["up_done"] = asyncio.Event()
        try:
            reader, writer, _, rest = await tunnel_open(a.sock, "127.0.0.1:%d" % port, 10)
            totals["client_read"] += len(rest) + await cl(reader, writer, ctl)
            await asyncio.wait_for(ctl["up_done"].wait(), 40)
            totals["done"] += 1
        except (ConnectionError, OSError, asyncio.TimeoutError, TimeoutError) as e:
            totals["errors"] += 1
            print("stressload: %s client: %r" % (name, e), file=sys.stderr)
    server.close()
    await server.wait_closed()
    return totals


async def cmd_faults(a):
    with open(a.out, "w") as out:
        for name, up, cl in CASES:
            t = await run_case(a, name, up, cl)
            out.write(json.dumps(t) + "\n")
            out.flush()


# --- leases -----------------------------------------------------------------------------

async def cmd_leases(a):
    ok = fail = 0
    req = (json.dumps({"verb": "lease", "policy": a.policy}) + "\n").encode()
    for _ in range(a.n):
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(a.sock), 10)
            writer.write(req)
            line = await asyncio.wait_for(reader.readline(), 10)
            r = json.loads(line)
            if r.get("ok") is True:
                ok += 1
            else:
                fail += 1
                print("stressload: lease: %s" % line[:200], file=sys.stderr)
            writer.close()
            await writer.wait_closed()
        except (OSError, ConnectionError, ValueError, asyncio.TimeoutError) as e:
            fail += 1
            print("stressload: lease: %r" % e, file=sys.stderr)
    print("leases n=%d ok=%d fail=%d" % (a.n, ok, fail))


# --- flood ------------------------------------------------------------------------------

async def cmd_flood(a):
    """n tunnels asked for at once (CONNECT), held, then closed: under a descriptor limit
    some are never accepted or are refused; what counts is what the daemon does."""
    st = dict(ok=0, refused=0, pending=0, connect_fail=0)
    why = {}
    conns = []

    async def one():
        try:
            if a.sock:
                r, w = await asyncio.wait_for(asyncio.open_unix_connection(a.sock), 3)
            else:
                h, _, port = a.tcp.rpartition(":")
                r, w = await asyncio.wait_for(asyncio.open_connection(h, int(port)), 3)
        except (OSError, asyncio.TimeoutError):
            st["connect_fail"] += 1
            return
        conns.append(w)
        w.write(connect_head(a.target))
        try:
            await read_head(r, time.monotonic() + 3)
            st["ok"] += 1
        except (TimeoutError, asyncio.TimeoutError):
            st["pending"] += 1
        except (ConnectionError, OSError) as e:
            st["refused"] += 1
            k = ("%s" % e)[:24] if isinstance(e, ConnectionError) and not e.errno else \
                os.strerror(e.errno or 0)
            why[k] = why.get(k, 0) + 1
    await asyncio.gather(*(one() for _ in range(a.n)))
    print("holding n=%d ok=%d refused=%d pending=%d connect_fail=%d why=%s" % (
        a.n, st["ok"], st["refused"], st["pending"], st["connect_fail"],
        json.dumps(why, separators=(",", ":")).replace(" ", "_")), flush=True)
    await asyncio.sleep(a.hold)
    for w in conns:
        w.close()
    await asyncio.sleep(0.2)
    print("flood done")


# --- receipts ---------------------------------------------------------------------------

def cmd_receipts(a):
    """The chain's bookkeeping: seq contiguous, every open closed once, no close without
    its open; the daemon-restart closes counted."""
    opens, closes = {}, {}
    seq_errors = bad = restart = nclose = 0
    prev = 0
    for fn in a.files:
        with open(fn) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    seq_errors += 1
                    continue
                if r.get("seq") != prev + 1:
                    seq_errors += 1
                prev = r.get("seq", prev)
                ev = r.get("event")
                if ev == "open":
                    if r["id"] in opens:
                        bad += 1
                    opens[r["id"]] = r
                elif ev == "close":
                    nclose += 1
                    if r["id"] not in opens or r["id"] in closes:
                        bad += 1
                    closes[r["id"]] = r
                    if r.get("close") == "daemon-restart":
                        restart += 1
    unclosed = sum(1 for i in opens if i not in closes)
    print("records=%d opens=%d closes=%d restart_closes=%d unclosed=%d bad_closes=%d "
          "seq_errors=%d" % (prev, len(opens), nclose, restart, unclosed, bad, seq_errors))


def cmd_faultcheck(a):
    """Each fault case's byte counts against its port's close records."""
    by_port = {}
    with open(a.receipts) as f:
        for line in f:
            r = json.loads(line)
            if r.get("event") != "close":
                continue
            p = by_port.setdefault(r.get("port"), dict(n=0, up=0, down=0, how={}))
            p["n"] += 1
            p["up"] += r.get("bytes_up", 0)
            p["down"] += r.get("bytes_down", 0)
            p["how"][r.get("close")] = p["how"].get(r.get("close"), 0) + 1
    n = exact = 0
    with open(a.cases) as f:
        for line in f:
            c = json.loads(line)
            p = by_port.get(c["port"], dict(n=0, up=0, down=0, how={}))
            ok = (c["done"] == a.count and c["errors"] == 0 and p["n"] == a.count and
                  p["up"] == c["up_read"] and p["down"] == c["client_read"])
            n += 1
            exact += ok
            print("case %-30s %s conns=%d/%d receipts=%d bytes_up=%d upstream_read=%d "
                  "bytes_down=%d client_read=%d closes=%s" % (
                      c["case"], "exact" if ok else "MISMATCH", c["done"], a.count, p["n"],
                      p["up"], c["up_read"], p["down"], c["client_read"],
                      json.dumps(p["how"], separators=(",", ":"))))
    print("cases=%d cases_exact=%d" % (n, exact))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("slow")
    s.add_argument("--sock", required=True)
    s.add_argument("--target", required=True)
    s.add_argument("--slowloris", type=int, default=1000)
    s.add_argument("--idle", type=int, default=500)
    s.add_argument("--interval", type=float, default=3.0)
    s.add_argument("--tunnels", type=int, default=10000)
    s.add_argument("-c", type=int, default=32)
    s.add_argument("--timeout", type=float, default=10.0)
    s.add_argument("--min-run", type=float, default=0.0)
    f = sub.add_parser("faults")
    f.add_argument("--sock", required=True)
    f.add_argument("--count", type=int, default=20)
    f.add_argument("--out", required=True)
    le = sub.add_parser("leases")
    le.add_argument("--sock", required=True)
    le.add_argument("--policy", required=True)
    le.add_argument("-n", type=int, default=10000)
    fl = sub.add_parser("flood")
    fl.add_argument("--sock")
    fl.add_argument("--tcp")
    fl.add_argument("--target", required=True)
    fl.add_argument("-n", type=int, default=600)
    fl.add_argument("--hold", type=float, default=5)
    rc = sub.add_parser("receipts")
    rc.add_argument("files", nargs="+")
    fc = sub.add_parser("faultcheck")
    fc.add_argument("--cases", required=True)
    fc.add_argument("--receipts", required=True)
    fc.add_argument("--count", type=int, required=True)
    a = p.parse_args()
    if a.cmd == "receipts":
        return cmd_receipts(a)
    if a.cmd == "faultcheck":
        return cmd_faultcheck(a)
    asyncio.run({"slow": cmd_slow, "faults": cmd_faults, "leases": cmd_leases,
                 "flood": cmd_flood}[a.cmd](a))


if __name__ == "__main__":
    main()
