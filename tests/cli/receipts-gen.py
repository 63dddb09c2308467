#!/usr/bin/env python3
"""receipts-gen.py: writes receipt files the way egressd does (docs/receipts.md), for the
tests and the benchmark of egressctl's receipt verbs.

  receipts-gen.py [--key FILE] [--after FILE] OUT < records.jsonl
      chains and MACs the records read (JSON objects without seq, prev and mac; members
      in egressd's order), continuing the chain of --after when given
  receipts-gen.py [--key FILE] --count N OUT
      N synthetic records: 20 principals, opens, closes and denials
  receipts-gen.py [--key FILE] --rechain OUT < lines
      rewrites the prev (and the mac, with --key) of whole lines taken as they are, so
      that a test can make a line the chain and MAC vouch for but egressd never writes

Standard library only.
"""
import argparse
import hashlib
import hmac
import json
import re
import sys

ZERO = 'sha256:' + '0' * 64


def tail(path):
    """seq and prev-hash that continue the chain after the last line of path."""
    last = None
    with open(path, 'rb') as f:
        for line in f:
            last = line.rstrip(b'\n')
    if last is None:
        return 1, ZERO
    return json.loads(last)['seq'] + 1, 'sha256:' + hashlib.sha256(last).hexdigest()


def synthetic(n):
    reasons = ['not-allowlisted', 'private-address', 'bad-request', 'dns-failure']
    fronts = ['http-connect', 'socks5', 'http-forward', 'socks4']
    i = k = 0
    while i < n:
        k += 1
        p = 'build-%d' % (k % 20)
        host = 'h%d.example.com' % (k % 97)
        cid = 'c-%016x' % k
        t = '2026-11-29T%02d:%02d:%02d.%03dZ' % (k // 3600000 % 24, k // 60000 % 60,
                                                 k // 1000 % 60, k % 1000)
        base = {'id': cid, 'time': t, 'principal': p, 'policy': 'sha256:' + 'ab' * 32,
                'frontend': fronts[k % 4], 'host': host, 'port': 443}
        if k % 5 == 4:
            d = {'event': 'deny', **base, 'reason': reasons[k % 4], 'duration_ms': 3}
            yield d
            i += 1
            continue
        o = {'event': 'open', **base, 'addr': '192.0.2.%d' % (k % 250), 'reason': 'allowed'}
        yield o
        i += 1
        if i < n:
            c = {'event': 'close', **base, 'addr': o['addr'], 'reason': 'allowed',
                 'close': 'client-eof', 'bytes_up': 1000 + k, 'bytes_down': 50000 + k,
                 'duration_ms': 812}
            yield c
            i += 1


def rechain(key, out):
    prev = ZERO
    with open(out, 'wb') as f:
        for line in sys.stdin.buffer:
            line = line.rstrip(b'\n')
            line = re.sub(rb'"prev":"sha256:[0-9a-f]{64}"', b'"prev":"' + prev.encode() + b'"',
                          line, count=1)
            i = line.rfind(b',"mac":"')
            if key is not None and i != -1:
                mac = hmac.new(key, b'egress-receipt-1\0' + line[:i], hashlib.sha256).hexdigest()
                line = line[:i] + b',"mac":"hmac-sha256:' + mac.encode() + b'"}'
            f.write(line + b'\n')
            prev = 'sha256:' + hashlib.sha256(line).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--key')
    ap.add_argument('--after')
    ap.add_argument('--count', type=int)
    ap.add_argument('--rechain', action='store_true')
    ap.add_argument('out')
    a = ap.parse_args()
    key = open(a.key, 'rb').read() if a.key else None
    seq, prev = tail(a.after) if a.after else (1, ZERO)
    if a.rechain:
        rechain(key, a.out)
        return
    recs = synthetic(a.count) if a.count is not None else \
        (json.loads(l) for l in sys.stdin if l.strip())
    with open(a.out, 'wb') as f:
        for r in recs:
            line = json.dumps({'seq': seq, 'prev': prev, **r}, separators=(',', ':'),
                              ensure_ascii=True).encode()
            if key is not None:
                mac = hmac.new(key, b'egress-receipt-1\0' + line[:-1], hashlib.sha256).hexdigest()
                line = line[:-1] + b',"mac":"hmac-sha256:' + mac.encode() + b'"}'
            f.write(line + b'\n')
            prev = 'sha256:' + hashlib.sha256(line).hexdigest()
            seq += 1


if __name__ == '__main__':
    main()
