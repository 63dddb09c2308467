#!/bin/sh
# tools/demo, README's Quick start line 1: runs as a newcomer would see it (against this
# build) and must end "demo: ok" with exit 0: the sealed policy, the offline decisions, the
# tampering caught, one sandboxed curl allowed (HTTP 200) and one refused, the receipts.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
for t in bwrap curl openssl; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "SKIP: $t is not installed (tools/deps installs it)"
		exit 77
	fi
done
out=$(EGRESS_POLICY="$top_builddir/egress-policy" sh "$top_srcdir/tools/demo" 2>&1)
rc=$?
expect_eq "tools/demo exits 0" 0 "$rc"
expect_match "it ends with demo: ok" "demo: ok$" "$out"
expect_match "the allowed request: HTTP 200" "^HTTP 200$" "$out"
expect_match "the refused one: not-allowlisted in the summary" \
    "denied +other\.test:[0-9]+ +1× not-allowlisted" "$out"
expect_match "the receipts: open, close and deny" \
    '"event":"open".*"event":"close".*"event":"deny"' "$(printf '%s' "$out" | tr '\n' ' ')"
[ "$rc" = 0 ] || printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
finish
