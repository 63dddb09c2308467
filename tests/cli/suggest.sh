#!/bin/sh
# egress-policy suggest: the draft policy from receipts files (SPEC "Writing a policy
# without guessing"). Receipts of two principals, made by receipts-gen.py exactly as
# egressd writes them: opens and not-allowlisted denials become allow lines with their
# counts, other denials (a private address) never do; --principal selects one principal;
# a wildcard at 3 siblings under one registrable domain, not at 2, never on github.io;
# a line that is not a receipt is skipped with FILE:LINE, an unreadable file or one
# without any receipt is an error. The draft checks, seals and decides as it says.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
EP=$top_builddir/egress-policy
GEN="$top_srcdir/tests/cli/receipts-gen.py"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 is not installed"
	exit 77
fi
cd "$WORK" || exit 1
run() { out=$("$@" 2>err); rc=$?; err=$(cat err); }
# The rules of a draft: its lines that are not comments, the comment cut off.
rules() { grep -v '^#' "$1" | sed 's/ *#.*//'; }

# open P HOST PORT, deny P HOST PORT REASON [COUNT], dnsdeny P HOST: one record each.
n=0
open() {
	n=$((n + 1))
	printf '{"event":"open","id":"c-%04d","time":"2026-11-29T12:00:%02d.000Z","principal":"%s","policy":"sha256:%s","frontend":"http-connect","host":"%s","port":%s,"addr":"192.0.2.%d","sni":"%s","reason":"allowed"}\n' \
	    "$n" $((n % 60)) "$1" "$(printf 'ab%.0s' $(seq 32))" "$2" "$3" $((n % 250)) "$2"
	printf '{"event":"close","id":"c-%04d","time":"2026-11-29T12:00:%02d.500Z","principal":"%s","policy":"sha256:%s","frontend":"http-connect","host":"%s","port":%s,"addr":"192.0.2.%d","reason":"allowed","close":"client-eof","bytes_up":10,"bytes_down":20,"duration_ms":5}\n' \
	    "$n" $((n % 60)) "$1" "$(printf 'ab%.0s' $(seq 32))" "$2" "$3" $((n % 250))
}
deny() {
	n=$((n + 1))
	printf '{"event":"deny","id":"c-%04d","time":"2026-11-29T12:01:%02d.000Z","principal":"%s","policy":"sha256:%s","frontend":"socks5","host":"%s","port":%s,%s"reason":"%s",%s"duration_ms":1}\n' \
	    "$n" $((n % 60)) "$1" "$(printf 'ab%.0s' $(seq 32))" "$2" "$3" \
	    "$([ "$4" = private-address ] && echo '"addr":"10.1.2.3",')" "$4" \
	    "$([ -n "${5:-}" ] && echo "\"count\":$5,")"
}
dnsdeny() {
	n=$((n + 1))
	printf '{"event":"deny","id":"c-%04d","time":"2026-11-29T12:02:00.000Z","principal":"%s","policy":"sha256:%s","frontend":"dns","host":"%s","reason":"not-allowlisted","duration_ms":0}\n' \
	    "$n" "$1" "$(printf 'ab%.0s' $(seq 32))" "$2"
}
{
	open build-a pypi.org 443
	open build-a pypi.org 443
	open build-a pypi.org 80
	open build-a files.pythonhosted.org 443
	# three siblings under example.com: one wildcard
	open build-a a.example.com 443
	open build-a b.example.com 443
	deny build-a c.example.com 8443 not-allowlisted
	# two under example.net: two lines
	open build-a d.example.net 443
	open build-a e.example.net 443
	# three under the public suffix github.io: three lines
	open build-a a.github.io 443
	open build-a b.github.io 443
	open build-a c.github.io 443
	# a collapsed denial counts its count
	deny build-a sum.golang.org 443 not-allowlisted 3
	# a refused private address, a rule's deny and a bad request never become an allow
	deny build-a internal.example.org 443 private-address
	deny build-a evil.example.org 443 denied-by-rule
	deny build-a 198.51.100.7 443 bad-request
	# a refused DNS question has no port: a commented-out line
	dnsdeny build-a proxy.golang.org
	# the other principal
	open build-b only-b.example 443
	deny build-b other-b.example 80 not-allowlisted
	open build-b 203.0.113.9 22
} > records.jsonl
python3 "$GEN" r.jsonl < records.jsonl || exit 1

# --- one principal ---------------------------------------------------------------------
run "$EP" suggest --principal build-a r.jsonl
printf '%s\n' "$out" > a.draft
expect_eq "suggest --principal build-a exits 0" 0 "$rc"
expect_eq "no warning for a good file" "" "$err"
expect_eq "build-a's draft: wildcard at 3, not at 2, never on github.io, no private address" \
"allow *.example.com 443,8443
allow a.github.io 443
allow b.github.io 443
allow c.github.io 443
allow d.example.net 443
allow e.example.net 443
allow files.pythonhosted.org 443
allow pypi.org 80,443
allow sum.golang.org 443" "$(rules a.draft)"
expect_match "counts: connections" '^allow pypi.org 80,443 +# 3 connections$' "$out"
expect_match "counts: a collapsed denial counts its count" \
    '^allow sum.golang.org 443 +# 3 denied \(not-allowlisted\)$' "$out"
expect_match "counts: the wildcard's names and counts" \
    '^allow \*.example.com 443,8443 +# 3 names, 2 connections, 1 denied \(not-allowlisted\)$' "$out"
expect_match "the wildcard lists its names" '^#   c.example.com 8443 +# 1 denied' "$out"
expect_match "a refused DNS question is a commented-out line" \
    '^# allow proxy.golang.org PORTS +# 1 name lookup refused, port not seen$' "$out"
expect_match "the header names the source" \
    '^# Draft policy written by egress-policy suggest --principal build-a r.jsonl.$' "$out"
expect_match "the header says review and seal" 'egress-policy seal' "$out"
for h in internal.example.org evil.example.org 198.51.100.7 only-b.example other-b.example; do
	expect_eq "$h is not in build-a's draft" "" "$(grep -F "$h" a.draft)"
done

# The draft is a policy: it checks, seals and decides as it reads.
run "$EP" check a.draft
expect_eq "the draft checks" 0 "$rc"
expect_eq "no public-suffix warning for the draft" "" "$(printf '%s' "$err" | grep 'public suffix')"
"$EP" seal a.draft > a.sealed
expect_eq "the draft seals" 0 "$?"
for t in "new.example.com 443 allow" "example.com 443 deny" "d.example.net 443 allow" \
    "f.example.net 443 deny" "d.github.io 443 deny" "pypi.org 8080 deny" \
    "internal.example.org 443 deny"; do
	set -- $t
	expect_eq "sealed draft: $1:$2 is $3" "$3" "$("$EP" test a.sealed "$1" "$2" | cut -d' ' -f1)"
done

# --- the other principal, and every principal ----------------------------------------------
run "$EP" suggest --principal build-b r.jsonl
expect_eq "build-b's draft" "allow 203.0.113.9 22
allow only-b.example 443
allow other-b.example 80" "$(printf '%s\n' "$out" | rules /dev/stdin)"
run "$EP" suggest r.jsonl
expect_eq "without --principal: both principals' hosts" 12 \
    "$(printf '%s\n' "$out" | rules /dev/stdin | wc -l | tr -d ' ')"
run "$EP" suggest --principal nobody r.jsonl
expect_eq "an unknown principal: exit 0" 0 "$rc"
expect_match "... with a warning" "the draft allows nothing" "$err"
expect_eq "... and no rule" "" "$(printf '%s\n' "$out" | rules /dev/stdin)"

# Two files add up; stdin is '-'.
head -n 4 r.jsonl > part1.jsonl     # two opens of pypi.org:443, with their closes
run "$EP" suggest --principal build-a part1.jsonl - < r.jsonl
expect_match "two files add up (stdin as -)" '^allow pypi.org 80,443 +# 5 connections$' "$out"

# --- errors ------------------------------------------------------------------------------------
run "$EP" suggest
expect_eq "no receipts file is a usage error" 2 "$rc"
run "$EP" suggest --principal
expect_eq "--principal without a name is a usage error" 2 "$rc"
run "$EP" suggest missing.jsonl
expect_eq "a missing file is an error" 1 "$rc"
expect_match "... named" "missing.jsonl: No such file" "$err"
expect_eq "... and nothing is written" "" "$out"
{ head -n 3 r.jsonl; echo '{"seq":4,"prev":"sha256:torn'; tail -n +4 r.jsonl; } > torn.jsonl
run "$EP" suggest --principal build-a torn.jsonl
expect_eq "a line that is not a receipt is skipped: exit 0" 0 "$rc"
expect_match "... with a warning naming file:line" \
    "^egress-policy: torn.jsonl:4: not a receipt line, skipped" "$err"
expect_eq "... and the rest is read" "$(rules a.draft)" "$(printf '%s\n' "$out" | rules /dev/stdin)"
cp a.draft not-receipts.txt
run "$EP" suggest not-receipts.txt
expect_eq "a file without one receipt line is an error" 1 "$rc"
expect_match "... said so" "not-receipts.txt: not a receipts file" "$err"
finish
