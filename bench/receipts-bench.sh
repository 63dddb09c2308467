#!/bin/sh
#
# receipts-bench.sh: the performance figures of egressctl's receipt verbs (issue 7,
# "Performance"). Generates 1 000 000 chained and MACed records with
# tests/cli/receipts-gen.py (20 principals; about 490 MB in a temporary directory), then
# times, best of 3:
#
#   verify    egressctl receipts verify --key: records/s (target >= 200 000)
#   query     egressctl receipts --principal build-7 (1 in 20 records, table output to
#             /dev/null): seconds (target < 2)
#
# Usage: bench/receipts-bench.sh [BUILD_DIR] [RECORDS]   (default: the current directory)
set -eu
BUILD=${1:-.}
N=${2:-1000000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
CTL=$BUILD/egressctl/egressctl
[ -x "$CTL" ] || { echo "receipts-bench: $CTL is not built" >&2; exit 1; }
DIR=$(mktemp -d "${TMPDIR:-/tmp}/receipts-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
head -c 32 /dev/urandom > "$DIR/key"
echo "generating $N records..."
python3 "$SRC/tests/cli/receipts-gen.py" --key "$DIR/key" --count "$N" "$DIR/r.jsonl"
echo "$(wc -c < "$DIR/r.jsonl") bytes"
cat "$DIR/r.jsonl" > /dev/null        # into the page cache: the verbs are measured, not the disk

# best N seconds of 3 runs of a command
best() {
	b=
	for _ in 1 2 3; do
		s=$(date +%s.%N)
		"$@" > /dev/null
		e=$(date +%s.%N)
		b=$(echo "$s $e $b" | awk '{ t = $2 - $1; if ($3 == "" || t < $3) print t; else print $3 }')
	done
	echo "$b"
}
out=$("$CTL" receipts verify --file "$DIR/r.jsonl" --key "$DIR/key")
[ "$out" = "$N records verified, MACs good" ] || { echo "verify failed: $out" >&2; exit 1; }
tv=$(best "$CTL" receipts verify --file "$DIR/r.jsonl" --key "$DIR/key")
tc=$(best "$CTL" receipts verify --file "$DIR/r.jsonl")
tq=$(best "$CTL" receipts --file "$DIR/r.jsonl" --principal build-7)
tj=$(best "$CTL" receipts --file "$DIR/r.jsonl" --principal build-7 --json)
awk -v n="$N" -v tv="$tv" -v tc="$tc" -v tq="$tq" -v tj="$tj" 'BEGIN {
	printf "verify --key      %8.0f records/s  (%.2f s; target >= 200000: %s)\n", n / tv, tv, (n / tv >= 200000 ? "met" : "NOT MET")
	printf "verify (chain)    %8.0f records/s  (%.2f s)\n", n / tc, tc
	printf "--principal       %8.2f s          (table; target < 2 s: %s)\n", tq, (tq < 2 ? "met" : "NOT MET")
	printf "--principal --json %7.2f s\n", tj
}'
