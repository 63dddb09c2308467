#!/bin/sh
# The examples in egress-policy(1) are run as written and must print what the page says;
# the example policy of egress-policy(5) must be the one shipped in docs/examples.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
EP=$top_builddir/egress-policy
cd "$WORK" || exit 1

# The literal displays of a page's EXAMPLES section; mdoc's \- is '-', \e is '\'.
literal() {
	sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$1" | sed -n '/^\.Bd -literal/,/^\.Ed/p' |
	    grep -v '^\.' | sed -e 's/\\-/-/g' -e 's/\\e/\\/g'
}

literal "$top_srcdir/man/egress-policy.5" | head -n 16 > example.policy
expect_eq "egress-policy(5) example is docs/examples/example.policy" "" \
	"$(diff example.policy "$top_srcdir/docs/examples/example.policy")"
"$EP" seal example.policy 2>/dev/null | tail -n +3 > canon.expected.tmp
literal "$top_srcdir/man/egress-policy.5" | tail -n 16 > canon.page
expect_eq "egress-policy(5) canonical form is what seal writes" "" "$(diff canon.page canon.expected.tmp)"

# Each "$ egress-policy test ..." line is followed by the exact output, each
# "$ egress-policy diff ..." by its output up to the next "$ " line; "$ cat FILE" shows a
# file, which is written as shown for the lines that follow. Templates are the source
# tree's, shown under their installed folder.
literal "$top_srcdir/man/egress-policy.1" > page.txt
EGRESS_TEMPLATE_DIR=$top_srcdir/templates
export EGRESS_TEMPLATE_DIR
installed() { sed "s|$EGRESS_TEMPLATE_DIR/|/usr/local/share/egress/templates/|g"; }
n=0 ndiff=0 pending=
flush() {
	case "$pending" in
	cat\ *) printf '%s' "$body" > "${pending#cat }" ;;
	diff\ *)
		# shellcheck disable=SC2086
		got=$("$EP" $pending 2>&1 | installed)
		expect_eq "man page: egress-policy $pending" "$(printf '%s' "$body")" "$got"
		ndiff=$((ndiff + 1)) ;;
	esac
	pending= body=
}
while IFS= read -r line; do
	case "$line" in
	'$ '*) flush ;;
	*) [ -n "$pending" ] && body="$body$line
" ;;
	esac
	case "$line" in
	'$ cat '*) pending="cat ${line#'$ cat '}" ;;
	'$ egress-policy diff '*) pending="${line#'$ egress-policy '}" ;;
	'$ egress-policy test '*)
		cmd=${line#'$ egress-policy '}
		IFS= read -r want
		# shellcheck disable=SC2086
		got=$("$EP" $cmd 2>&1 | installed)
		expect_eq "man page: egress-policy $cmd" "$want" "$got"
		n=$((n + 1))
		;;
	esac
done < page.txt
flush
expect_eq "the page has its twelve test examples" 12 "$n"
expect_eq "the page has its diff example" 1 "$ndiff"

# The keygen / seal / check example, with a key of our own.
"$EP" keygen policy.key 2>/dev/null
"$EP" seal --key policy.key example.policy > build.sealed
want=$(grep -A1 '^\$ egress-policy check --key' page.txt | tail -1)
expect_eq "man page: check --key of a sealed policy" "$want" \
	"$("$EP" check --key policy.key build.sealed 2>/dev/null)"
# ... and with an Ed25519 key pair of our own (keygen --ed25519, seal --sign-key).
"$EP" keygen --ed25519 policy.ed25519 2>/dev/null
"$EP" seal --sign-key policy.ed25519 example.policy > signed.sealed
want=$(grep -A1 '^\$ egress-policy check --pubkey' page.txt | tail -1)
expect_eq "man page: check --pubkey of a signed policy" "$want" \
	"$("$EP" check --pubkey policy.ed25519.pub signed.sealed 2>/dev/null)"
finish
