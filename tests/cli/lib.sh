# lib.sh: helpers for the shell tests. Sourced; needs top_srcdir and top_builddir
# (set by make check; defaults let a test run by hand from the build directory).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$(pwd)}
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/egress-$TEST_NAME.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PASSED=0
FAILED=0

ok() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
not_ok() { FAILED=$((FAILED + 1)); echo "not ok - $*"; }

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else
		not_ok "$1"; printf '  expected: %s\n  actual:   %s\n' "$2" "$3"; fi
}

# expect_match WHAT PATTERN TEXT (grep -E)
expect_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then ok "$1"; else
		not_ok "$1"; printf '  pattern: %s\n  text:    %s\n' "$2" "$3"; fi
}

finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}
