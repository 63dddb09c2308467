#!/bin/sh
# runkey.sh: a private egressd of egress-run signs checkpoints with a fresh Ed25519 key per
# run and writes its public half beside the receipts (SPEC "egress-run for real work";
# egress-run(1) FILES), so that `egressctl receipts verify --pubkey R.pub` checks the run's
# receipts with nothing secret.
# - During a run the private key is a 0600 file of the runtime folder that egressd.conf
#   names as signing-key; after the run it is gone, and R.pub holds one PEM public key.
# - The summary names R.pub and the egressctl command that checks the receipts with it.
# - verify --pubkey R.pub --complete passes and counts the run's checkpoints (the last one
#   egressd's shutdown); a record changed before a checkpoint (the chain recomputed, which
#   needs no key) fails on the signature, a tail cut (the last line removed) fails: no
#   checkpoint is left of a one-run file, and --complete refuses a two-run file whose
#   second run lost its shutdown checkpoint; another run's key fails.
# - Two runs have different keys: a second run into the same receipts file appends its own
#   public key to R.pub, and the whole file (both runs) still verifies with R.pub; a run
#   into another file gets another key.
# - R.pub is egress-run's state like the receipts: a --rw of it alone (the workload could
#   add a key of its own) is refused with 125, nothing ran; so is a --rw of it, or of the
#   receipts file, that is not there yet (egress-run would create what the sandbox then
#   binds).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

https_upstream ok.e2e.test
RD=$WORK/rcpt
mkdir -m 700 "$RD"
R=$RD/r.jsonl
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="--allow ok.e2e.test:$UP $DNSARGS --receipts $R"
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}"
OK_URL=https://ok.e2e.test:$UP/
ran() { [ -e "$BOX/ran" ] && echo ran || echo not-run; }
# count PATTERN FILE: the lines of FILE that match, 0 when there is no FILE.
count() { if [ -f "$2" ]; then grep -c -- "$1" "$2"; else echo 0; fi; }
# pubkeys FILE: the number of PEM public keys in FILE.
pubkeys() { count "-----BEGIN PUBLIC KEY-----" "$1"; }
# pubkey_n FILE N: the Nth PEM public key of FILE, as openssl reads it back (DER hex).
pubkey_n() {
	awk -v n="$2" '/-----BEGIN PUBLIC KEY-----/ { k++ } k == n { print }
	    /-----END PUBLIC KEY-----/ && k == n { exit }' "$1" |
	    openssl pkey -pubin -outform DER 2>/dev/null | od -An -tx1 | tr -d ' \n'
}
verify() { "$EGRESSCTL" receipts verify "$@" 2>&1; }

# --- one run: the key during the run, the public half after it -----------------------------
rm -f "$BOX/ready" "$BOX/go"
# shellcheck disable=SC2086,SC2016
spawn_run one $A -- sh -c 'u=$1; shift; "$@" "$u" > code; : > ready
	i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' \
    sh "$OK_URL" $CURL
ONE=$SPAWNED
wait_for -e "$BOX/ready"
for CONF in "$XDG_RUNTIME_DIR"/egress-run.*/egressd.conf; do break; done
SK=$(sed -n 's/^signing-key //p' "$CONF" 2>/dev/null)
expect_match "egressd.conf names a signing key in the runtime folder" \
    "^$XDG_RUNTIME_DIR/egress-run\.[^/]+/[^/]+$" "$SK"
expect_eq "... a 0600 Ed25519 private key" "600 ED25519" \
    "$(stat -c %a "$SK" 2>/dev/null) $(openssl pkey -in "$SK" -noout -text 2>/dev/null |
	sed -n 's/^ED25519 Private-Key:.*/ED25519/p')"
expect_eq "... R.pub already holds its public half" "$(openssl pkey -in "$SK" -pubout \
    -outform DER 2>/dev/null | od -An -tx1 | tr -d ' \n')" "$(pubkey_n "$R.pub" 1)"
touch "$BOX/go"
wait "$ONE"
expect_eq "the run: exit 0, the upstream reached" "0 200" "$? $(cat "$BOX/code")"
expect_eq "after the run the private key is gone" "no" "$([ -e "$SK" ] && echo yes || echo no)"
expect_eq "... and R.pub holds one public key" 1 "$(pubkeys "$R.pub")"
err=$(cat "$WORK/one.err")
expect_match "the summary names the public key" "public key in $R\.pub" "$err"
expect_match "... and the command that checks the receipts with it" \
    "egressctl receipts verify --file $R --pubkey $R\.pub" "$err"
out=$(verify --file "$R" --pubkey "$R.pub" --complete)
expect_eq "verify --pubkey R.pub --complete: exit 0" 0 "$?"
expect_match "... checkpoints covered, the last egressd's shutdown, nothing after it" \
    "^[1-9][0-9]* checkpoints? signed, the last at seq [0-9]+ \(egressd's shutdown\); 0 records after it" \
    "$out"
expect_clean "one run"

# A record before the checkpoint changed, the chain recomputed (no key needed for that).
"$E2E_PY" - "$R" "$WORK/forged.jsonl" <<'PYEOF'
import hashlib, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1])]
lines[0] = lines[0].replace("ok.e2e.test", "ok.e2e.tesu", 1)
prev = "sha256:" + "0" * 64
out = []
for l in lines:
    head, rest = l.split(',"prev":"', 1)
    l = head + ',"prev":"' + prev + rest[len(prev):]
    if '"event":"checkpoint"' in l:
        i = l.index('"head":"') + len('"head":"')
        l = l[:i] + prev + l[i + len(prev):]
    out.append(l)
    prev = "sha256:" + hashlib.sha256(l.encode()).hexdigest()
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PYEOF
expect_eq "the forgery changed a record" 1 "$(grep -c 'ok\.e2e\.tesu' "$WORK/forged.jsonl")"
out=$(verify --file "$WORK/forged.jsonl")
expect_eq "... which the chain alone cannot see" 0 "$?"
out=$(verify --file "$WORK/forged.jsonl" --pubkey "$R.pub")
expect_eq "... but R.pub can: exit 1" 1 "$?"
expect_match "... at the checkpoint's signature" "bad checkpoint signature" "$out"
# The tail cut: the shutdown checkpoint, the only one of a short run, removed.
sed '$d' "$R" > "$WORK/cut.jsonl"
out=$(verify --file "$WORK/cut.jsonl" --pubkey "$R.pub")
expect_eq "the last line cut: verify --pubkey exits 1" 1 "$?"
expect_match "... nothing is signed any more" "no checkpoint: nothing is signed" "$out"

# --- a second run: another key --------------------------------------------------------------
cp "$R.pub" "$WORK/first.pub"
# shellcheck disable=SC2086
erun $A -- $CURL "$OK_URL"
expect_eq "a second run into the same receipts: exit 0" "0 200" "$rc $out"
expect_eq "... R.pub now holds two public keys" 2 "$(pubkeys "$R.pub")"
K1=$(pubkey_n "$R.pub" 1)
K2=$(pubkey_n "$R.pub" 2)
expect_eq "... the first one unchanged, the second another key" "$(pubkey_n "$WORK/first.pub" 1) yes" \
    "$K1 $([ -n "$K2" ] && [ "$K2" != "$K1" ] && echo yes)"
out=$(verify --file "$R" --pubkey "$R.pub" --complete)
expect_eq "... both runs' receipts verify with R.pub: exit 0" 0 "$?"
expect_match "... with the checkpoints of both runs" \
    "^([2-9]|[1-9][0-9]+) checkpoints signed, .*\(egressd's shutdown\); 0 records after it" "$out"
out=$(verify --file "$R" --pubkey "$WORK/first.pub")
expect_eq "... the first run's key alone does not sign the second run: exit 1" 1 "$?"
expect_match "... at the second run's checkpoint" "bad checkpoint signature" "$out"
# The tail cut: the second run's shutdown checkpoint removed, the first run's still there.
sed '$d' "$R" > "$WORK/cut.jsonl"
out=$(verify --file "$WORK/cut.jsonl" --pubkey "$R.pub")
expect_match "the last line cut: the records after the first run's checkpoint are not covered" \
    "the last at seq [0-9]+ \(egressd's shutdown\); [1-9][0-9]* records? after it not covered" "$out"
out=$(verify --file "$WORK/cut.jsonl" --pubkey "$R.pub" --complete)
expect_eq "... and verify --complete exits 1" 1 "$?"
expect_match "... saying the tail is not complete" "^not complete: " "$(echo "$out" | tail -n 1)"
R2=$RD/r2.jsonl
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP" $DNSARGS --receipts "$R2" --quiet -- $CURL "$OK_URL"
K3=$(pubkey_n "$R2.pub" 1)
expect_eq "a run into another receipts file: its own key" "0 200 yes" \
    "$rc $out $([ -n "$K3" ] && [ "$K3" != "$K1" ] && [ "$K3" != "$K2" ] && echo yes)"
out=$(verify --file "$R2" --pubkey "$R2.pub" --complete)
expect_eq "... which verifies its receipts" 0 "$?"
out=$(verify --file "$R2" --pubkey "$WORK/first.pub")
expect_eq "... and another run's key does not: exit 1" 1 "$?"
expect_clean "later runs"

# --- R.pub is out of the workload's reach ---------------------------------------------------
rm -f "$BOX/ran"
cp "$R.pub" "$WORK/before.pub"
# shellcheck disable=SC2086
erun $A --rw "$R.pub" -- sh -c "cat up.crt >> '$R.pub'; touch ran"
expect_eq "a --rw of R.pub alone: refused with 125, nothing ran" "125 not-run" "$rc $(ran)"
expect_match "... says why" "lies inside .*, which the sandbox binds" "$err"
expect_eq "... R.pub unchanged" "" "$(cmp "$R.pub" "$WORK/before.pub" 2>&1)"
# A --rw of state that is not there yet (egress-run creates it after it listed the binds):
# refused before anything is created, nothing ran, whether it names the public key file or
# the receipts file itself.
for st in pub jsonl; do
	NR=$RD/new.jsonl
	rm -f "$BOX/ran" "$NR" "$NR.pub"
	T=$NR
	[ "$st" = pub ] && T=$NR.pub
	# shellcheck disable=SC2086
	erun --allow "ok.e2e.test:$UP" $DNSARGS --receipts "$NR" --rw "$T" -- \
	    sh -c "echo forged >> '$T'; touch ran"
	expect_eq "a --rw of the $st file before it exists: 125, nothing ran, nothing forged" \
	    "125 not-run 0" "$rc $(ran) $(count forged "$T")"
	expect_match "... says why" "--rw $T: No such file or directory" "$err"
done
expect_clean "refused run"
finish
