#!/usr/bin/env python3
"""capture.py: save the first ClientHello a TLS client sends, on loopback only.

Usage: capture.py OUT.bin -- CLIENT ARGS...   (the string PORT in ARGS is replaced)

Listens on 127.0.0.1 (an ephemeral port), starts the client, reads until the records
read so far carry one complete handshake message (by the record lengths and the 3-byte
handshake length), writes exactly those records to OUT.bin and closes the connection
without answering, so the client fails after sending its hello. Nothing leaves loopback.
"""
import socket
import subprocess
import sys

RECORD_MAX = 16384
HELLO_MAX = 1 << 20  # a sanity bound for the capture, not the parser's


def hello_records(buf):
    """Returns the length of the records that complete the first handshake message, or 0."""
    off, msg = 0, b""
    while off + 5 <= len(buf):
        rtype, rlen = buf[off], int.from_bytes(buf[off + 3:off + 5], "big")
        if rtype != 0x16 or rlen == 0 or rlen > RECORD_MAX:
            raise SystemExit("not a handshake record at %d" % off)
        if off + 5 + rlen > len(buf):
            return 0
        msg += buf[off + 5:off + 5 + rlen]
        off += 5 + rlen
        if len(msg) >= 4 and len(msg) >= 4 + int.from_bytes(msg[1:4], "big"):
            return off
    return 0


def main():
    out, argv = sys.argv[1], sys.argv[3:]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(20)
    port = srv.getsockname()[1]
    argv = [a.replace("PORT", str(port)) for a in argv]
    client = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    conn, _ = srv.accept()
    conn.settimeout(20)
    buf = b""
    while True:
        n = hello_records(buf)
        if n:
            break
        if len(buf) > HELLO_MAX:
            raise SystemExit("hello too large")
        chunk = conn.recv(65536)
        if not chunk:
            raise SystemExit("client closed before a complete hello")
        buf += chunk
    conn.close()
    srv.close()
    client.wait(timeout=20)
    with open(out, "wb") as f:
        f.write(buf[:n])
    print("%s: %d bytes" % (out, n))


if __name__ == "__main__":
    main()
