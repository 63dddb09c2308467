#!/bin/sh
# runstate.sh: nothing of egress-run's own state is reachable from inside the sandbox, and
# no option value reaches a file egress-run writes unchecked (SPEC "egress-run for real
# work"; egress-run(1) FILES and EXIT STATUS).
# - The default receipts file inside the current directory ($HOME, or $XDG_STATE_HOME
#   under it), a --rw or --ro of the receipts' folder (also an ancestor, also through a
#   symlink), a --ro of the file alone: 125, nothing ran, the receipts intact.
# - The runtime folder (the private egressd's key and sockets) is never under a bound
#   path: with $XDG_RUNTIME_DIR the current directory, with a --rw of it, and with no
#   $XDG_RUNTIME_DIR from /tmp (as root and as nobody), `ls` inside lists none of this
#   run's egress-run.* folders, and the run works.
# - The summary is egressd's accounting of the run: the test rotates the receipts file
#   away mid-run, and the summary still lists what the run reached and was refused.
# - --permit-range, --resolver, --hosts, --receipts and --allow values with a newline that
#   would add `allow other.e2e.test 1-65535` or a configuration directive: 125, nothing
#   ran; the same options with valid values work.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

# --- an HTTPS upstream and names for it -----------------------------------------------------
https_upstream ok.e2e.test other.e2e.test
RD=$WORK/rcpt
mkdir -m 700 "$RD"
R=$RD/r.jsonl
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="--allow ok.e2e.test:$UP $DNSARGS --receipts $R"
CURL="curl -sS --max-time 10 --cacert $BOX/up.crt -o /dev/null -w %{http_code}"
OK_URL=https://ok.e2e.test:$UP/
OTHER_URL=https://other.e2e.test:$UP/
INJ="allow other.e2e.test 1-65535"
ran() { [ -e "$BOX/ran" ] && echo ran || echo not-run; }
ascii() { printf '%s' "$1" | LC_ALL=C tr -c '\n -~' '?'; }

# The valid run: it works.
# shellcheck disable=SC2086
erun $A -- $CURL "$OK_URL"
expect_eq "a valid run reaches the allowed upstream" "0 200" "$rc $out"

# --- the receipts are out of the workload's reach -------------------------------------------
# refuse WHAT RECEIPTS ENV-AND-ARGS...: egress-run (from $BOX) with a workload that empties
# and deletes RECEIPTS; 125, the workload did not run, RECEIPTS intact.
refuse() {
	_what=$1 _r=$2
	shift 2
	mkdir -p "$(dirname "$_r")"
	printf '{"seed":1}\n' > "$_r"
	rm -f "$BOX/ran"
	ecmd "$@" -- sh -c ": > '$_r'; rm -f '$_r'; touch ran"
	expect_eq "$_what: refused with 125, the workload did not run" "125 not-run" "$rc $(ran)"
	expect_match "$_what: says why" "lies inside .*, which the sandbox binds" "$(ascii "$err")"
	expect_eq "$_what: the receipts are intact" '{"seed":1}' "$(cat "$_r" 2>/dev/null)"
}
# shellcheck disable=SC2086
refuse "HOME is the current directory (default receipts inside it)" \
    "$BOX/.local/state/egress/receipts.jsonl" \
    env -u XDG_STATE_HOME HOME="$BOX" "$ERUN" --allow "ok.e2e.test:$UP" $DNSARGS
expect_match "... the message says to pass --receipts" "--receipts FILE outside it" "$err"
# shellcheck disable=SC2086
refuse "XDG_STATE_HOME inside the current directory" "$BOX/state/egress/receipts.jsonl" \
    env XDG_STATE_HOME="$BOX/state" "$ERUN" --allow "ok.e2e.test:$UP" $DNSARGS
rm -rf "$BOX/.local" "$BOX/state"
# shellcheck disable=SC2086
refuse "--rw of the receipts' folder" "$R" "$ERUN" $A --rw "$RD"
# shellcheck disable=SC2086
refuse "--ro of the receipts' folder" "$R" "$ERUN" $A --ro "$RD"
# shellcheck disable=SC2086
refuse "--rw of an ancestor of the receipts' folder" "$R" "$ERUN" $A --rw "$WORK"
ln -s "$RD" "$BOX/rlink"
# shellcheck disable=SC2086
refuse "--rw of a symlink to the receipts' folder" "$R" "$ERUN" $A --rw ./rlink
rm -f "$BOX/rlink"
# shellcheck disable=SC2086
refuse "--ro of the receipts file alone" "$R" "$ERUN" $A --ro "$R"
# shellcheck disable=SC2086
refuse "--receipts in the current directory" "$BOX/r.jsonl" "$ERUN" \
    --allow "ok.e2e.test:$UP" $DNSARGS --receipts ./r.jsonl
rm -f "$R" "$BOX/r.jsonl"
expect_clean "refused runs"

# --- the runtime folder is out of the workload's reach --------------------------------------
# gone_inside OUT: the egress-run.* entries the workload listed that are gone from the
# host after the run (this run's runtime folder); other runs' folders may come and go.
gone_inside() {
	for _e in $(printf '%s\n' "$1" | grep '^egress-run\.' ); do
		[ -e "$2/$_e" ] || printf '%s ' "$_e"
	done
}
# shellcheck disable=SC2086
(cd "$XDG_RUNTIME_DIR" && "$ERUN" $A -- ls -a "$XDG_RUNTIME_DIR" >"$WORK/ls.out" 2>"$WORK/ls.err")
rc=$?
expect_eq "from \$XDG_RUNTIME_DIR: the run works, no runtime folder inside" "0 " \
    "$rc $(gone_inside "$(cat "$WORK/ls.out")" "$XDG_RUNTIME_DIR")"
# shellcheck disable=SC2086
erun $A --rw "$XDG_RUNTIME_DIR" -- ls -a "$XDG_RUNTIME_DIR"
expect_eq "--rw \$XDG_RUNTIME_DIR: the run works, no runtime folder inside" "0 " \
    "$rc $(gone_inside "$out" "$XDG_RUNTIME_DIR")"
# No XDG_RUNTIME_DIR, from /tmp: the receipts elsewhere (not under /tmp either).
VT=$(mktemp -d /var/tmp/egress-runstate.XXXXXX)
chmod 755 "$VT"
# shellcheck disable=SC2086
(cd /tmp && env -u XDG_RUNTIME_DIR "$ERUN" --allow "ok.e2e.test:$UP" $DNSARGS \
    --receipts "$VT/r.jsonl" -- ls -a /tmp >"$WORK/ls.out" 2>"$WORK/ls.err")
rc=$?
expect_eq "no \$XDG_RUNTIME_DIR, from /tmp: the run works, no runtime folder inside" "0 " \
    "$rc $(gone_inside "$(cat "$WORK/ls.out")" /tmp)"
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
	mkdir "$VT/nb" && chown nobody "$VT/nb"
	# shellcheck disable=SC2086
	(cd /tmp && setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups \
	    env -u XDG_RUNTIME_DIR -u TMPDIR HOME=/nonexistent "$ERUN" --allow "ok.e2e.test:$UP" \
	    $DNSARGS --receipts "$VT/nb/r.jsonl" -- ls -a /tmp >"$WORK/ls.out" 2>"$WORK/ls.err")
	rc=$?
	expect_eq "as nobody, no \$XDG_RUNTIME_DIR, from /tmp: the run works, no runtime folder inside" \
	    "0 " "$rc $(gone_inside "$(cat "$WORK/ls.out")" /tmp)"
else
	skip "as nobody from /tmp" "no user nobody or no setpriv"
fi
# A mount below a bound path shows what is mounted there: $XDG_RUNTIME_DIR bind-mounted at
# ./mnt of the current directory (in a mount namespace of the test's own), so the runtime
# folder's ancestors never meet the current directory, but the sandbox (binding
# recursively) would see it at ./mnt.
mkdir "$BOX/mnt"
# shellcheck disable=SC2086
(cd "$BOX" && unshare -m sh -c 'mount --make-rprivate / && mount --bind "$1" "$2" && shift 2 &&
    exec "$@"' sh "$XDG_RUNTIME_DIR" "$BOX/mnt" "$ERUN" $A -- ls -a "$BOX/mnt" \
    >"$WORK/ls.out" 2>"$WORK/ls.err")
rc=$?
expect_eq "\$XDG_RUNTIME_DIR mounted below the current directory: the run works, no runtime folder inside" \
    "0 " "$rc $(gone_inside "$(cat "$WORK/ls.out")" "$XDG_RUNTIME_DIR")"
rmdir "$BOX/mnt"
rm -rf "$VT"
expect_clean "runtime folder runs"

# --- the summary is egressd's accounting, not the file --------------------------------------
# The workload reaches ok, is refused other, then waits; the test moves the receipts file
# away and puts an empty one in its place; the summary still lists both.
rm -f "$BOX/ready" "$BOX/go"
# shellcheck disable=SC2086,SC2016
spawn_run acct $A -- sh -c 'u1=$1 u2=$2; shift 2; "$@" "$u1"; "$@" "$u2"; : > ready
	i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' \
    sh "$OK_URL" "$OTHER_URL" $CURL
ACCT=$SPAWNED
wait_for -e "$BOX/ready"
mv "$R" "$R.rotated"
: > "$R"
touch "$BOX/go"
wait "$ACCT"
expect_eq "summary run: exit 0" 0 "$?"
err=$(cat "$WORK/acct.err")
expect_match "summary after the receipts were rotated away: two destinations" \
    "egress-run: 2 destinations, receipts in $R " "$err"
expect_match "... the allowed one with its bytes" \
    "allowed +ok\.e2e\.test:$UP +1× [1-9][0-9]* B up, [0-9.]+ (B|KiB) down" "$err"
expect_match "... the refused one with its reason" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
expect_eq "... and the receipts egressd wrote (in the rotated file) say the same" \
    "close ok.e2e.test deny other.e2e.test" \
    "$(grep -v '"event":"open"' "$R.rotated" | grep '"event":"\(close\|deny\)"' |
	sed 's/.*"event":"\([a-z]*\)".*"host":"\([^"]*\)".*/\1 \2/' | tr '\n' ' ' | sed 's/ $//')"
rm -f "$R" "$R.rotated"
expect_clean "summary run"

# --- option values are parsed first ---------------------------------------------------------
# inject WHAT PATTERN ARGS...: egress-run ARGS -- curl other.e2e.test; 125 and nothing ran
# (with the injection working, curl would reach other.e2e.test: 200).
inject() {
	_what=$1 _pat=$2
	shift 2
	# shellcheck disable=SC2086
	ecmd "$@" -- $CURL "$OTHER_URL"
	expect_eq "$_what: refused with 125, nothing ran" "125 " "$rc $out"
	expect_match "$_what: names the option" "$_pat" "$(ascii "$err")"
}
NL='
'
inject "--permit-range with a newline and an allow line" "^egress-run: --permit-range " \
    "$ERUN" --allow "ok.e2e.test:$UP" --resolver "127.0.0.1:$DNS_PORT" \
    --permit-range "127.0.0.0/8$NL$INJ" --receipts "$R"
# shellcheck disable=SC2086
inject "--allow with a newline and an allow line" "^egress-run: --allow " \
    "$ERUN" --allow "ok.e2e.test:$UP$NL$INJ" $DNSARGS --receipts "$R"
# Configuration directives: a hosts file (or a resolver) egressd was never given answers
# other.e2e.test, which DNS at port 1 would not.
printf '127.0.0.1 other.e2e.test\n' > "$WORK/inj.hosts"
: > "$WORK/hh"
: > "$WORK/hh${NL}resolver 127.0.0.1:$DNS_PORT"
ALLOW_BOTH="--allow ok.e2e.test:$UP --allow other.e2e.test:$UP --permit-range 127.0.0.0/8"
# shellcheck disable=SC2086
inject "--resolver with a newline and a hosts directive" "^egress-run: --resolver " \
    "$ERUN" $ALLOW_BOTH --resolver "127.0.0.1:1${NL}hosts $WORK/inj.hosts" --receipts "$R"
# shellcheck disable=SC2086
inject "--hosts with a newline and a resolver directive" "^egress-run: --hosts " \
    "$ERUN" $ALLOW_BOTH --hosts "$WORK/hh${NL}resolver 127.0.0.1:$DNS_PORT" --receipts "$R"
# shellcheck disable=SC2086
inject "--receipts with a newline and a hosts directive" "^egress-run: --receipts " \
    "$ERUN" $ALLOW_BOTH --resolver 127.0.0.1:1 --receipts "$R${NL}hosts $WORK/inj.hosts"
# shellcheck disable=SC2086
inject "--resolver with a trailing blank" "^egress-run: --resolver " \
    "$ERUN" $ALLOW_BOTH --resolver "127.0.0.1:$DNS_PORT " --receipts "$R"
# shellcheck disable=SC2086
inject "--resolver with port 0" "^egress-run: --resolver " \
    "$ERUN" $ALLOW_BOTH --resolver "127.0.0.1:0" --receipts "$R"
# shellcheck disable=SC2086
inject "--permit-range with host bits" "^egress-run: --permit-range " \
    "$ERUN" $ALLOW_BOTH --resolver "127.0.0.1:$DNS_PORT" --permit-range 127.0.0.1/8 --receipts "$R"
# The same options with valid values: the run works (the hosts file answers, DNS too).
# shellcheck disable=SC2086
erun $ALLOW_BOTH --resolver "127.0.0.1:1" --hosts "$WORK/inj.hosts" --receipts "$R" -- $CURL "$OTHER_URL"
expect_eq "valid --resolver, --hosts, --permit-range, --receipts: the run works" "0 200" "$rc $out"
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP,8443" --allow "other.e2e.test:1-65535" --resolver "127.0.0.1:$DNS_PORT" \
    --permit-range 127.0.0.0/8 --receipts "$R" -- $CURL "$OTHER_URL"
expect_eq "--allow with a port list and a port range: the run works" "0 200" "$rc $out"
expect_clean "option runs"

finish
