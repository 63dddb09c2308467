#!/bin/sh
# egressd end to end: public-key policy seals (policy-pubkey). With a policy-pubkey, a
# principal whose policy is signed by that key is accepted and serves (real curl through
# it to a loopback upstream); egressd -t, start-up, SIGHUP, egressctl principal add and
# the lease socket refuse, each naming why, a policy signed by another key, one whose
# body changed by one byte (with and without its digest recomputed), one sealed without a
# signature and a plain one. Several keys: any of them will do. With policy-key as well,
# both must hold. A policy-pubkey that is not an Ed25519 public key is refused with
# file:line:column.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need curl
cd "$WORK" || exit 1
EP=$top_builddir/egress-policy
C=$WORK/egressd.conf

run() { out=$("$@" 2>err); rc=$?; err=$(cat err); }

start_server web http --name web --log "$WORK/web.log"
WEB=$PORT
printf 'web.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.1/32
EOF

# --- the keys and the policies ------------------------------------------------------------
"$EP" keygen --ed25519 trust 2>/dev/null
"$EP" keygen --ed25519 other 2>/dev/null
expect_eq "keygen --ed25519: private key 0600, public key 0644" "600 644" \
    "$(stat -c %a trust) $(stat -c %a trust.pub)"
"$EP" keygen pkey 2>/dev/null
mkdir policies
"$EP" seal --sign-key trust open.policy > policies/good.sealed
"$EP" seal --sign-key other open.policy > other.sealed
"$EP" seal open.policy > policies/nosig.sealed
"$EP" seal --key pkey open.policy > maconly.sealed
"$EP" seal --key pkey --sign-key trust open.policy > both.sealed
cp policies/good.sealed good.sealed
expect_match "seal --sign-key: a #sig line under the digest" \
    "^#!egress-policy 1 #digest sha256:[0-9a-f]{64} #sig ed25519:[0-9a-f]{128}$" \
    "$(head -n 3 good.sealed | tr '\n' ' ' | sed 's/ $//')"
# One body byte changed (a port of the range), the digest left as it was ...
sed '4,$ s/65535/65534/' good.sealed > changed.sealed
expect_eq "one byte of the body differs" 1 "$(cmp -l good.sealed changed.sealed | wc -l | tr -d ' ')"
# ... and the same with the digest recomputed, as whoever changed it would: only the
# signature can tell.
tail -n +4 changed.sealed > changed.body
sed "2 s/sha256:.*/sha256:$(sha256sum changed.body | cut -d' ' -f1)/" changed.sealed > forged.sealed
cp forged.sealed policies/forged.sealed
run "$EP" check forged.sealed
expect_eq "the forged file is sealed and valid without a key (the digest matches)" 0 "$rc"

# --- egressd -t -----------------------------------------------------------------------------
# conf_begin writes 6 lines: the directives given to it are lines 7 and on.
tcase() {
	_what=$1 _rc=$2 _pat=$3
	shift 3
	conf_begin "$@"
	run "$EGRESSD" -t -c "$C"
	expect_eq "-t: $_what: exit $_rc" "$_rc" "$rc"
	expect_match "-t: $_what: says so" "$_pat" "$err$out"
}
tcase "signed by the policy-pubkey" 0 "configuration ok, 1 principals" \
    "policy-pubkey $WORK/trust.pub" "principal p policy $WORK/good.sealed"
tcase "signed by another key" 2 \
    "^$C:8: principal p: $WORK/other.sealed:3:14: signature does not verify under the trusted public key" \
    "policy-pubkey $WORK/trust.pub" "principal p policy $WORK/other.sealed"
tcase "one body byte changed" 2 "^$C:8: principal p: $WORK/changed.sealed:2:1: digest mismatch" \
    "policy-pubkey $WORK/trust.pub" "principal p policy $WORK/changed.sealed"
tcase "one body byte changed, digest recomputed" 2 \
    "^$C:8: principal p: $WORK/forged.sealed:3:14: signature does not verify" \
    "policy-pubkey $WORK/trust.pub" "principal p policy $WORK/forged.sealed"
tcase "sealed without a signature" 2 "^$C:8: principal p: $WORK/policies/nosig.sealed:1:1: no signature" \
    "policy-pubkey $WORK/trust.pub" "principal p policy $WORK/policies/nosig.sealed"
tcase "not sealed" 2 "^$C:8: principal p: $WORK/open.policy:1:1: not sealed" \
    "policy-pubkey $WORK/trust.pub" "principal p policy $WORK/open.policy"
tcase "any of several keys" 0 "configuration ok, 2 principals" \
    "policy-pubkey $WORK/other.pub" "policy-pubkey $WORK/trust.pub" \
    "principal p policy $WORK/good.sealed" "principal q policy $WORK/other.sealed"
tcase "several keys, signed by none" 2 "forged.sealed:3:14: signature does not verify under any of the 2 trusted public keys" \
    "policy-pubkey $WORK/other.pub" "policy-pubkey $WORK/trust.pub" \
    "principal p policy $WORK/forged.sealed"
tcase "a private key as policy-pubkey" 2 "^$C:7:15: policy-pubkey $WORK/trust: not an Ed25519 public key" \
    "policy-pubkey $WORK/trust"
tcase "an HMAC key as policy-pubkey" 2 "^$C:7:15: policy-pubkey $WORK/pkey: not an Ed25519 public key" \
    "policy-pubkey $WORK/pkey"
tcase "a missing policy-pubkey" 2 "^$C:7:15: policy-pubkey $WORK/none.pub: No such file" \
    "policy-pubkey $WORK/none.pub"
tcase "policy-pubkey without a path" 2 "^$C:7:1: expected: policy-pubkey PATH" "policy-pubkey"
tcase "policy-pubkey and policy-key: both hold" 0 "configuration ok, 1 principals" \
    "policy-pubkey $WORK/trust.pub" "policy-key $WORK/pkey" "principal p policy $WORK/both.sealed"
tcase "policy-pubkey and policy-key: a MAC alone is not enough" 2 "maconly.sealed:1:1: no signature" \
    "policy-pubkey $WORK/trust.pub" "policy-key $WORK/pkey" "principal p policy $WORK/maconly.sealed"
tcase "policy-pubkey and policy-key: a signature alone is not enough" 2 "good.sealed:3:1: no MAC" \
    "policy-pubkey $WORK/trust.pub" "policy-key $WORK/pkey" "principal p policy $WORK/good.sealed"
tcase "without policy-pubkey a signature is not required" 0 "configuration ok, 1 principals" \
    "principal p policy $WORK/policies/nosig.sealed"

# --- a signed principal serves; refused ones are refused at start -----------------------------
conf_begin "policy-pubkey $WORK/trust.pub" "lease $RUN/lease.sock" "policy-dir $WORK/policies" \
    "principal good policy $WORK/good.sealed" "principal bad policy $WORK/other.sealed"
# (bounded: an egressd that wrongly starts is stopped after 20 s and fails the check)
run timeout 20 "$EGRESSD" -c "$C"
expect_eq "start: a principal signed by another key refuses the configuration (exit 2)" 2 "$rc"
expect_match "start: ... naming the principal and why" \
    "^$C:11: principal bad: $WORK/other.sealed:3:14: signature does not verify" "$err"
expect_eq "start: ... and nothing is created" "" "$(ls "$RUN" 2>/dev/null)"

conf_begin "policy-pubkey $WORK/trust.pub" "lease $RUN/lease.sock" "policy-dir $WORK/policies" \
    "principal good policy $WORK/good.sealed"
egressd_start
m=$(rcpt_mark)
out=$(curl -sS --max-time 10 -x "socks5h://localhost$RUN/good.sock" "http://web.e2e.test:$WEB/signed")
expect_eq "curl through the principal with a signed policy" "web GET /signed 0" "$out"
expect_eq "... and its receipt" "open allowed web.e2e.test $WEB good" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,reason,host,port,principal)"

# --- egressctl principal add ------------------------------------------------------------------
acase() {
	_what=$1 _file=$2 _pat=$3
	run "$EGRESSCTL" -s "$CTL" principal add "x$4" --policy "$_file"
	expect_eq "principal add: $_what: refused (exit 1)" 1 "$rc"
	expect_match "principal add: $_what: the error says why" "$_pat" "$err"
	expect_eq "principal add: $_what: no socket" "" "$(ls "$RUN" | grep "^x$4")"
}
acase "signed by another key" "$WORK/other.sealed" "other.sealed:3:14: signature does not verify" 1
acase "one body byte changed" "$WORK/changed.sealed" "changed.sealed:2:1: digest mismatch" 2
acase "one body byte changed, digest recomputed" "$WORK/forged.sealed" \
    "forged.sealed:3:14: signature does not verify" 3
acase "sealed without a signature" "$WORK/policies/nosig.sealed" "nosig.sealed:1:1: no signature" 4
acase "not sealed" "$WORK/open.policy" "open.policy:1:1: not sealed" 5
run "$EGRESSCTL" -s "$CTL" principal add dyn --policy "$WORK/good.sealed"
expect_eq "principal add: signed by the policy-pubkey: accepted" 0 "$rc"
out=$(curl -sS --max-time 10 -x "socks5h://localhost$RUN/dyn.sock" "http://web.e2e.test:$WEB/dyn")
expect_eq "principal add: ... and it serves" "web GET /dyn 0" "$out"

# --- the lease socket ---------------------------------------------------------------------------
# (bounded: a lease wrongly granted is held by egressctl until timeout stops it)
run timeout 10 "$EGRESSCTL" -s "$RUN/lease.sock" lease nosig.sealed
expect_eq "lease: a policy without a signature is refused" 1 "$rc"
expect_match "lease: ... saying so" "no signature" "$err"
run timeout 10 "$EGRESSCTL" -s "$RUN/lease.sock" lease forged.sealed
expect_eq "lease: a forged policy is refused" 1 "$rc"
expect_match "lease: ... saying so" "signature does not verify" "$err"
spawn leaser "$EGRESSCTL" -s "$RUN/lease.sock" lease good.sealed
LEASER=$SPAWNED
wait_line "$WORK/leaser.out" >/dev/null
lsock=$(cut -d' ' -f2 leaser.out)
expect_eq "lease: a signed policy is leased" 1 "$([ -S "$lsock" ] && echo 1)"
kill -TERM "$LEASER"
wait "$LEASER" 2>/dev/null

# --- SIGHUP ----------------------------------------------------------------------------------------
conf_begin "policy-pubkey $WORK/trust.pub" "lease $RUN/lease.sock" "policy-dir $WORK/policies" \
    "principal good policy $WORK/good.sealed" "principal late policy $WORK/good.sealed" \
    "principal unsigned policy $WORK/policies/nosig.sealed"
lm=$(log_mark)
kill -HUP "$EGRESSD_PID"
wait_log "event=reload result=" "$lm"
expect_match "SIGHUP: a new principal without a signature is refused, saying why" \
    "event=reload principal=unsigned error=.*nosig.sealed:1:1: no signature" "$(tail -n "+$((lm + 1))" egressd.err)"
expect_eq "SIGHUP: ... and has no socket" "" "$(ls "$RUN" | grep '^unsigned')"
out=$(curl -sS --max-time 10 -x "socks5h://localhost$RUN/late.sock" "http://web.e2e.test:$WEB/late")
expect_eq "SIGHUP: a new principal with a signed policy serves" "web GET /late 0" "$out"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts policysig
finish
