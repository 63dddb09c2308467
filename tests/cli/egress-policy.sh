#!/bin/sh
# egress-policy end to end: every verb, exit codes, diagnostics, sealing and tampering.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
EP=$top_builddir/egress-policy
cd "$WORK" || exit 1
cp "$top_srcdir/docs/examples/example.policy" p.policy

run() { out=$("$@" 2>err); rc=$?; err=$(cat err); }

# --- usage ---------------------------------------------------------------------------
run "$EP"; expect_eq "no verb is a usage error" 2 "$rc"
run "$EP" frobnicate x; expect_eq "unknown verb exits 2" 2 "$rc"
expect_match "unknown verb is named" "unknown verb 'frobnicate'" "$err"
run "$EP" test p.policy api.github.com 0; expect_eq "port 0 is a usage error" 2 "$rc"
run "$EP" test p.policy api.github.com 65536; expect_eq "port 65536 is a usage error" 2 "$rc"
run "$EP" test p.policy api.github.com 44x; expect_eq "port 44x is a usage error" 2 "$rc"
run "$EP" check; expect_eq "check without file exits 2" 2 "$rc"
run "$EP" check missing.policy; expect_eq "missing file is invalid (1)" 1 "$rc"
run "$EP" --version; expect_match "--version" "^egress-policy [0-9]" "$out"

# --- check -----------------------------------------------------------------------------
run "$EP" check p.policy
expect_eq "example policy is valid" 0 "$rc"
expect_match "check reports digest and state" \
	"^p.policy: valid, 6 hosts, sha256:[0-9a-f]{64}, not sealed$" "$out"

printf 'allow a.example 443\nalow b.example 443\nallow 127.1 80\nallow c.example 0\nsni maybe\n' > bad.policy
run "$EP" check bad.policy
expect_eq "bad policy exits 1" 1 "$rc"
expect_match "unknown directive names line and column" "^bad.policy:2:1: unknown directive 'alow'" "$err"
expect_match "numeric trick is an error at its column" "^bad.policy:3:7: bad host '127.1'" "$err"
expect_match "port 0 is an error" "^bad.policy:4:17: expected a port 1-65535" "$err"
expect_match "bad sni value" "^bad.policy:5:5: expected match, required or off" "$err"
expect_eq "every error is reported" 4 "$(grep -c '^bad.policy:' err)"

printf 'allow *.github.io 443\nallow *.co.uk 443\n' > psl.policy
run "$EP" check psl.policy
expect_eq "public-suffix wildcard is only a warning" 0 "$rc"
expect_match "warning for *.github.io" "psl.policy:1:7: warning: '\*.github.io' sits on a public suffix" "$err"
expect_match "warning for *.co.uk" "psl.policy:2:7: warning: '\*.co.uk' sits on a public suffix" "$err"

run "$EP" check - < p.policy; expect_eq "check reads stdin" 0 "$rc"

# --- digest: one canonical form for two spellings ------------------------------------
d1=$("$EP" digest p.policy)
{ printf '# reordered, respelled\r\n'; tac p.policy | sed -e 's/#.*//' -e 's/api.github.com/API.GITHUB.COM./' \
	-e 's/10m/600s/' -e 's/10G/10240M/' -e 's/80,443/443,80/'; } > p2.policy
d2=$("$EP" digest p2.policy)
expect_match "digest format" "^sha256:[0-9a-f]{64}$" "$d1"
expect_eq "two spellings, one digest" "$d1" "$d2"
printf 'allow api.github.com 443\n' > one.policy
expect_eq "a different policy has another digest" 1 "$([ "$("$EP" digest one.policy)" != "$d1" ] && echo 1)"

# --- keygen --------------------------------------------------------------------------
run "$EP" keygen k.key
expect_eq "keygen succeeds" 0 "$rc"
expect_eq "key is 32 bytes" 32 "$(stat -c %s k.key)"
expect_eq "key is mode 0600" 600 "$(stat -c %a k.key)"
cp k.key k.orig
run "$EP" keygen k.key
expect_eq "keygen never overwrites" 1 "$rc"
expect_match "keygen says why" "already exists" "$err"
expect_eq "the key is unchanged" "" "$(cmp k.key k.orig)"
"$EP" keygen other.key 2>/dev/null
head -c 31 /dev/urandom > short.key
run "$EP" check --key short.key p.policy
expect_eq "a 31-byte key is refused as usage" 2 "$rc"
expect_match "short key message" "at least 32" "$err"

# --- seal and check ----------------------------------------------------------------------
run "$EP" seal p.policy; printf '%s\n' "$out" > s.sealed
expect_eq "seal without key succeeds" 0 "$rc"
expect_eq "sealed header" "#!egress-policy 1" "$(head -1 s.sealed)"
expect_eq "sealed digest line" "#digest $d1" "$(sed -n 2p s.sealed)"
run "$EP" check s.sealed
expect_match "sealed without MAC" "sealed, digest verified, no MAC$" "$out"
expect_eq "sealed file has the source's digest" "$d1" "$("$EP" digest s.sealed)"
run "$EP" check --key k.key s.sealed
expect_eq "a key demands a MAC" 1 "$rc"
expect_match "no MAC message" "s.sealed:3:1: no MAC" "$err"

"$EP" seal --key k.key p.policy > m.sealed 2>/dev/null
expect_match "MAC line" "^#mac hmac-sha256:[0-9a-f]{64}$" "$(sed -n 3p m.sealed)"
run "$EP" check --key k.key m.sealed
expect_eq "MAC verifies with the key" 0 "$rc"
expect_match "verified state" "sealed, digest and MAC verified$" "$out"
run "$EP" check m.sealed
expect_match "MAC unchecked without key" "MAC not checked" "$out"
run "$EP" check --key other.key m.sealed
expect_eq "wrong key is refused" 1 "$rc"
expect_match "wrong key message" "MAC mismatch" "$err"
run "$EP" check --key k.key p.policy
expect_eq "a plain policy with a key is refused" 1 "$rc"

# Tampering: change one rule in the body.
sed 's/^allow api.github.com 443$/allow api.github.com 22/' m.sealed > t.sealed
run "$EP" check t.sealed
expect_eq "edited body is refused without key" 1 "$rc"
expect_match "digest mismatch reported" "t.sealed:2:1: digest mismatch" "$err"
# Re-digesting the edited body does not help against the MAC.
body_digest=$(tail -n +4 t.sealed | sha256sum | cut -d' ' -f1)
sed "2s/.*/#digest sha256:$body_digest/" t.sealed > t2.sealed
run "$EP" check --key k.key t2.sealed
expect_eq "re-digested body fails the MAC" 1 "$rc"
expect_match "MAC mismatch on re-digested body" "MAC mismatch" "$err"
# Re-sealing a sealed file keeps its digest.
"$EP" seal m.sealed > r.sealed 2>/dev/null
expect_eq "re-seal keeps the digest" "#digest $d1" "$(sed -n 2p r.sealed)"

# --- Ed25519: keygen --ed25519, seal --sign-key, check/test --pubkey -------------------------
run "$EP" keygen --ed25519 ed
expect_eq "keygen --ed25519 succeeds" 0 "$rc"
expect_eq "private key 0600, public key 0644" "600 644" "$(stat -c %a ed) $(stat -c %a ed.pub)"
expect_match "the private key is PEM PKCS#8" "^-----BEGIN PRIVATE KEY-----$" "$(head -n 1 ed)"
expect_match "the public key is PEM" "^-----BEGIN PUBLIC KEY-----$" "$(head -n 1 ed.pub)"
expect_eq "openssl reads it as Ed25519" "ED25519 Private-Key:" "$(openssl pkey -in ed -noout -text 2>/dev/null | head -n 1)"
cp ed ed.orig
run "$EP" keygen --ed25519 ed
expect_eq "keygen --ed25519 never overwrites" 1 "$rc"
expect_match "... saying so" "ed: already exists" "$err"
expect_eq "... the key is unchanged" "" "$(cmp ed ed.orig)"
"$EP" keygen --ed25519 ed2 2>/dev/null
run "$EP" seal --sign-key ed p.policy
expect_eq "seal --sign-key succeeds" 0 "$rc"
printf '%s\n' "$out" > sig.sealed
expect_match "the #sig line comes third" "^#sig ed25519:[0-9a-f]{128}$" "$(sed -n 3p sig.sealed)"
run "$EP" check sig.sealed
expect_match "without --pubkey the signature is not checked" "signature not checked \(no --pubkey\)$" "$out"
run "$EP" check --pubkey ed.pub sig.sealed
expect_eq "check --pubkey: exit 0" 0 "$rc"
expect_match "check --pubkey names the key" "sealed, digest verified, no MAC, signature verified by ed.pub$" "$out"
run "$EP" check --pubkey ed2.pub --pubkey ed.pub sig.sealed
expect_match "any of several --pubkey" "signature verified by ed.pub$" "$out"
run "$EP" check --pubkey ed2.pub sig.sealed
expect_eq "another key: exit 1" 1 "$rc"
expect_match "another key: says so at the #sig line" "^sig.sealed:3:14: signature does not verify" "$err"
run "$EP" check --pubkey ed.pub s.sealed
expect_eq "a sealed file without #sig: exit 1" 1 "$rc"
expect_match "... no signature" "^s.sealed:1:1: no signature" "$err"
run "$EP" check --pubkey ed.pub p.policy
expect_match "a plain file: not sealed" "^p.policy:1:1: not sealed" "$err"
"$EP" seal --key k.key --sign-key ed p.policy > both.sealed 2>/dev/null
expect_match "both options: #mac, then #sig" "^#mac hmac-sha256:[0-9a-f]{64} #sig ed25519:[0-9a-f]{128}$" \
	"$(sed -n '3p;4p' both.sealed | tr '\n' ' ' | sed 's/ $//')"
run "$EP" check --key k.key --pubkey ed.pub both.sealed
expect_match "both verified" "digest and MAC verified, signature verified by ed.pub$" "$out"
run "$EP" check --key other.key --pubkey ed.pub both.sealed
expect_eq "both given, the MAC wrong: refused" 1 "$rc"
# Re-digesting a changed body does not help against the signature.
sed 's/^allow api.github.com 443$/allow api.github.com 22/' sig.sealed > tsig.sealed
sed "2s/.*/#digest sha256:$(tail -n +4 tsig.sealed | sha256sum | cut -d' ' -f1)/" tsig.sealed > tsig2.sealed
run "$EP" check tsig2.sealed
expect_eq "re-digested body: valid without --pubkey" 0 "$rc"
run "$EP" check --pubkey ed.pub tsig2.sealed
expect_eq "re-digested body: refused with --pubkey" 1 "$rc"
expect_match "... the signature does not verify" "tsig2.sealed:3:14: signature does not verify" "$err"
sed '3s/ed25519:./ed25519:G/' sig.sealed > bad.sig
run "$EP" check bad.sig
expect_match "a malformed #sig names its column" "^bad.sig:3:14: expected a lower-case hex digit" "$err"
expect_eq "test --pubkey decides a signed policy" "allow allowed sig.sealed:6" \
	"$("$EP" test --pubkey ed.pub sig.sealed api.github.com 443 2>/dev/null)"
run "$EP" test --pubkey ed2.pub sig.sealed api.github.com 443
expect_eq "test --pubkey refuses a policy signed by another key" 1 "$rc"
run "$EP" seal --sign-key ed.pub p.policy
expect_eq "a public key cannot sign (usage, 2)" 2 "$rc"
expect_match "... saying so" "not an Ed25519 private key" "$err"
run "$EP" check --pubkey ed sig.sealed
expect_eq "a private key is not a --pubkey (usage, 2)" 2 "$rc"
run "$EP" digest --pubkey ed.pub p.policy
expect_eq "digest takes no options" 2 "$rc"
run "$EP" check --sign-key ed sig.sealed
expect_eq "check takes no --sign-key" 2 "$rc"
expect_match "... saying so" "check takes no --sign-key" "$err"

# --- test ----------------------------------------------------------------------------------
t() { "$EP" test p.policy "$1" "$2"; }
expect_eq "exact allow" "allow allowed p.policy:1" "$(t api.github.com 443)"
expect_eq "wildcard allow" "allow allowed p.policy:2" "$(t a.b.githubusercontent.com 443)"
expect_eq "apex not matched by wildcard" "deny not-allowlisted -" "$(t githubusercontent.com 443)"
expect_eq "deny beats allow" "deny denied-by-rule p.policy:6" "$(t evil.githubusercontent.com 443)"
expect_eq "deny on every port" "deny denied-by-rule p.policy:6" "$(t evil.githubusercontent.com 1)"
expect_eq "wrong port" "deny not-allowlisted -" "$(t api.github.com 80)"
expect_eq "range low edge" "allow allowed p.policy:4" "$(t mirror.example.net 8000)"
expect_eq "range high edge" "allow allowed p.policy:4" "$(t mirror.example.net 8100)"
expect_eq "past the range" "deny not-allowlisted -" "$(t mirror.example.net 8101)"
expect_eq "IP literal rule" "allow allowed p.policy:5" "$(t 140.82.112.4 22)"
expect_match "decimal IPv4 is bad-host" "^deny bad-host - " "$(t 2130706433 22)"
expect_match "octal IPv4 is bad-host" "^deny bad-host - " "$(t 0177.0.0.1 22)"
expect_match "short IPv4 is bad-host" "^deny bad-host - " "$(t 1.2.3 22)"
expect_match "zone id is bad-host" "^deny bad-host - " "$(t 'fe80::1%eth0' 22)"
expect_match "underscore is bad-host" "^deny bad-host - " "$(t a_b.example 22)"
run "$EP" test p.policy 127.1 443
expect_eq "bad-host still exits 0" 0 "$rc"

printf 'allow 127.0.0.1 80\nallow ::ffff:127.0.0.1 80\nallow 10.20.1.5 443\npermit-range 10.20.0.0/16\n' > lit.policy
expect_eq "loopback literal is private" "deny private-address - (127.0.0.0/8 Loopback)" \
	"$("$EP" test lit.policy 127.0.0.1 80)"
expect_eq "mapped loopback is private" "deny private-address - (127.0.0.0/8 Loopback)" \
	"$("$EP" test lit.policy ::ffff:7f00:1 80)"
expect_eq "permit-range lets an allowed private literal through" "allow allowed lit.policy:3" \
	"$("$EP" test lit.policy 10.20.1.5 443)"

finish
