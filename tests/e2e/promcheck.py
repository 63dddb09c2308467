# promcheck.py: a strict parser of the Prometheus text format (the subset egressd
# writes), then egressd's counters against its receipts. Prints "ok N samples, ..." or the
# problems, one per line.
import json, re, sys

text, rcpt, principal = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
PAIR = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
SAMPLE = re.compile(r"^(" + NAME + r")(\{(" + PAIR + r"(?:," + PAIR + r")*)?\})? (\S+)$")
types, helped, samples, errors = {}, set(), [], []
lines = text.split("\n")
if lines[-1] != "":
    errors.append("no newline at the end")
for n, line in enumerate(lines[:-1], 1):
    if line.startswith("# HELP "):
        name = line.split(" ")[2]
        if name in helped:
            errors.append("%d: second HELP for %s" % (n, name))
        helped.add(name)
        continue
    if line.startswith("# TYPE "):
        parts = line.split(" ")
        if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram"):
            errors.append("%d: bad TYPE line" % n)
        if parts[2] in types:
            errors.append("%d: second TYPE for %s" % (n, parts[2]))
        types[parts[2]] = parts[3]
        continue
    m = SAMPLE.match(line)
    if not m:
        errors.append("%d: not a sample: %r" % (n, line))
        continue
    name, value = m.group(1), m.group(4)
    try:
        v = float(value)
    except ValueError:
        errors.append("%d: value %r" % (n, value))
        continue
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    family = base if types.get(base) == "histogram" else name
    if family not in types:
        errors.append("%d: sample before its TYPE: %s" % (n, name))
    if types.get(family) == "counter" and v < 0:
        errors.append("%d: negative counter" % n)
    labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
    samples.append((name, labels, v))
buckets = [(s[1]["le"], s[2]) for s in samples if s[0] == "egress_dns_duration_seconds_bucket"]
if not buckets or buckets[-1][0] != "+Inf":
    errors.append("histogram without +Inf")
if any(b[1] < a[1] for a, b in zip(buckets, buckets[1:])):
    errors.append("buckets not cumulative")
count = [s[2] for s in samples if s[0] == "egress_dns_duration_seconds_count"]
if not count or not buckets or count[0] != buckets[-1][1]:
    errors.append("_count differs from +Inf")


def get(name, **lab):
    return sum(v for n, d, v in samples
               if n == name and all(d.get(k) == w for k, w in lab.items()))


mine = [json.loads(l) for l in open(rcpt) if l.strip()]
mine = [r for r in mine if r.get("principal") == principal]
want = {
    "opened": sum(1 for r in mine if r["event"] == "open"),
    "closed": sum(1 for r in mine if r["event"] == "close"),
    "up": sum(r.get("bytes_up", 0) for r in mine if r["event"] == "close"),
    "down": sum(r.get("bytes_down", 0) for r in mine if r["event"] == "close"),
}
denies = {}
for r in mine:
    if r["event"] == "deny":
        denies[r["reason"]] = denies.get(r["reason"], 0) + r.get("count", 1)
got = {
    "opened": get("egress_tunnels_opened_total", principal=principal),
    "closed": get("egress_tunnels_closed_total", principal=principal),
    "up": get("egress_bytes_total", principal=principal, direction="up"),
    "down": get("egress_bytes_total", principal=principal, direction="down"),
}
for k in want:
    if want[k] != got[k]:
        errors.append("%s: receipts say %s, metrics %s" % (k, want[k], got[k]))
for reason, n in denies.items():
    m = get("egress_denials_total", principal=principal, reason=reason)
    if m != n:
        errors.append("denials %s: receipts say %d, metrics %d" % (reason, n, m))
if get("egress_quota_hits_total", principal=principal, quota="connections") != \
        denies.get("quota-connections", 0):
    errors.append("quota hits differ from the quota-connections denials")
print("\n".join(errors) if errors else
      "ok %d samples, %d opened, %d denial reasons" % (len(samples), want["opened"], len(denies)))
