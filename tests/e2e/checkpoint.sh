#!/bin/sh
# egressd end to end: signed checkpoints. With signing-key, egressd writes a checkpoint at
# most every second while records are written and one at shutdown: its head is the hash
# of the line before it, its sig an Ed25519 signature over "egress-checkpoint-1\0" + seq
# + head. `egressctl receipts verify --pubkey` then needs no secret: a record rewritten and
# the chain recomputed is caught at the next checkpoint, a wrong key or a missing
# signature refused, and what follows the last checkpoint is counted as not covered;
# --complete refuses a file whose last record is not the shutdown checkpoint (a tail cut,
# also right after a periodic checkpoint).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need openssl
cd "$WORK" || exit 1

openssl genpkey -algorithm ed25519 -out sign.pem 2>/dev/null
openssl pkey -in sign.pem -pubout -out sign.pub 2>/dev/null
openssl genpkey -algorithm ed25519 2>/dev/null | openssl pkey -pubout -out other.pub 2>/dev/null
printf 'c.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\n' > c.policy
conf_begin "signing-key $WORK/sign.pem"
principal ck c.policy
egressd_start
S=$RUN/ck.sock
for i in 1 2 3; do py tunnel connect "$S" "no$i.example.org" 443 >/dev/null; done
sleep 1.5
for i in 4 5; do py tunnel connect "$S" "no$i.example.org" 443 >/dev/null; done
# Let a periodic checkpoint cover everything: the shutdown one must still be written (a
# file that ends in any other record has lost its tail).
sleep 1.5
egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"

ck=$(grep -c '"event":"checkpoint"' "$RCPT")
expect_eq "periodic checkpoints and one shutdown checkpoint were written" "1 1" \
    "$([ "$ck" -ge 2 ] && echo 1) $(grep -c '"detail":"shutdown"' "$RCPT")"
expect_eq "the shutdown checkpoint is the last record" checkpoint \
    "$(tail -n 1 "$RCPT" | py_field event)"
# docs/receipts.md describes these records: the event and its detail.
row() { grep "^| \`$1\` |" "$top_srcdir/docs/receipts.md"; }
expect_match "docs/receipts.md: the event row lists checkpoint" '`checkpoint`' "$(row event)"
expect_match "docs/receipts.md: the detail row has the checkpoint's shutdown" \
    '^\| `detail` \| [^|]*checkpoint[^|]*\|.*`shutdown`' "$(row detail)"
out=$("$EGRESSCTL" receipts verify --file "$RCPT" --pubkey sign.pub)
expect_eq "verify --pubkey (no secret): exit 0" 0 "$?"
expect_match "verify --pubkey: the shutdown checkpoint covers everything" \
    "^$ck checkpoints signed, the last at seq [0-9]+ \(egressd's shutdown\); 0 records after it" "$out"
out=$("$EGRESSCTL" receipts verify --file "$RCPT" --pubkey sign.pub --key "$KEY")
expect_eq "verify --pubkey --key: exit 0" 0 "$?"
out=$("$EGRESSCTL" receipts verify --file "$RCPT" --pubkey sign.pub --complete)
expect_eq "verify --complete: a file ending in the shutdown checkpoint: exit 0" 0 "$?"
"$EGRESSCTL" receipts verify --file "$RCPT" --complete >/dev/null 2>&1
expect_eq "verify --complete without --pubkey: a usage error" 2 "$?"

"$EGRESSCTL" receipts verify --file "$RCPT" --pubkey other.pub >/dev/null
expect_eq "another public key: exit 1" 1 "$?"

# Rewrite the first deny's host and recompute the whole chain (no MAC key needed for a
# pubkey-only verifier): the checkpoint's signed head no longer matches.
"$E2E_PY" - "$RCPT" forged.jsonl fixhead <<'PYEOF2'
import hashlib, sys
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [l.rstrip("\n") for l in open(src)]
lines[0] = lines[0].replace("no1.example.org", "ok1.example.org")
prev = "sha256:" + "0" * 64
out = []
for l in lines:
    head, rest = l.split(',"prev":"', 1)
    l = head + ',"prev":"' + prev + rest[len(prev):]
    if mode == "fixhead" and '"event":"checkpoint"' in l:
        i = l.index('"head":"') + len('"head":"')
        l = l[:i] + prev + l[i + len(prev):]
    out.append(l)
    prev = "sha256:" + hashlib.sha256(l.encode()).hexdigest()
open(dst, "w").write("\n".join(out) + "\n")
PYEOF2
out=$("$EGRESSCTL" receipts verify --file forged.jsonl --pubkey sign.pub)
expect_eq "a rewritten record with a recomputed chain: exit 1" 1 "$?"
expect_match "... caught by the checkpoint's signature" "bad checkpoint signature" "$out"
"$EGRESSCTL" receipts verify --file forged.jsonl >/dev/null
expect_eq "... which the chain alone (no key) cannot see" 0 "$?"

# Cut the tail: the shutdown checkpoint and the records after the periodic one go.
last_periodic=$(grep -n '"event":"checkpoint"' "$RCPT" | head -n 1 | cut -d: -f1)
head -n "$((last_periodic + 1))" "$RCPT" > cut.jsonl
out=$("$EGRESSCTL" receipts verify --file cut.jsonl --pubkey sign.pub)
expect_match "a cut tail: the last checkpoint is not the shutdown one, and what follows is counted" \
    "the last at seq [0-9]+; 1 record after it not covered" "$out"
out=$("$EGRESSCTL" receipts verify --file cut.jsonl --pubkey sign.pub --complete)
expect_eq "a cut tail with --complete: exit 1" 1 "$?"
expect_match "... saying it is not complete" "^not complete: the last record is not egressd's shutdown checkpoint" \
    "$(echo "$out" | tail -n 1)"
# Cut exactly after the periodic checkpoint: a live file may end just so (exit 0), a
# finished one may not (--complete).
head -n "$last_periodic" "$RCPT" > cut-at-ckpt.jsonl
out=$("$EGRESSCTL" receipts verify --file cut-at-ckpt.jsonl --pubkey sign.pub)
expect_eq "cut right after a periodic checkpoint: a live file, exit 0" 0 "$?"
expect_match "... its last checkpoint is not egressd's shutdown" \
    "the last at seq [0-9]+; 0 records after it" "$out"
out=$("$EGRESSCTL" receipts verify --file cut-at-ckpt.jsonl --pubkey sign.pub --complete)
expect_eq "cut right after a periodic checkpoint, --complete: exit 1" 1 "$?"
expect_match "... saying it is not complete" "^not complete: " "$(echo "$out" | tail -n 1)"

# A file without checkpoints proves nothing to a pubkey verifier.
# The records before the first checkpoint (a loaded machine may sign one after the first
# record already).
awk '/"event":"checkpoint"/ { exit } { print }' "$RCPT" > nockpt.jsonl
out=$("$EGRESSCTL" receipts verify --file nockpt.jsonl --pubkey sign.pub 2>&1)
expect_eq "no checkpoint at all: exit 1" 1 "$?"
expect_match "... says nothing is signed" "no checkpoint: nothing is signed" "$out"
finish
