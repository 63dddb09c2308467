#!/bin/sh
# Every man page is clean at mandoc's warning level (style notes aside).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
if ! command -v mandoc >/dev/null 2>&1; then
	echo "mandoc not installed (Debian package mandoc): skipped"
	exit 77
fi
for page in "$top_srcdir"/man/*.[0-9]; do
	out=$(mandoc -T lint -W warning "$page" 2>&1)
	expect_eq "mandoc -T lint $(basename "$page")" "" "$out"
done
finish
