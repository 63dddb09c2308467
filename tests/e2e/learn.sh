#!/bin/sh
# learn.sh: egress-run --learn FILE (SPEC "Writing a policy without guessing"), in real
# bubblewrap, loopback only (lib.sh's own network namespace; the test DNS answers every
# name). A workload reaches 5 names (one of them on two ports) under
# --learn draft --permit-range 127.0.0.0/8:
# - learn mode is announced on stderr before the command starts;
# - a name the DNS answers with a private address outside the permit-range (10.1.2.3) is
#   still refused (private-address), and the SNI guard still refuses a mismatch;
# - the draft allows exactly the 5 names with their ports, with counts, and not the
#   refused name; it checks and seals;
# - rerunning the workload with --policy ./draft (as written, and sealed) succeeds, while
#   a name the learning run did not reach is refused (not-allowlisted);
# - --learn beside --policy or --allow is a usage error (125, nothing ran); a draft path
#   egress-run cannot write is refused before anything runs; a draft the workload replaced
#   by a symlink during the run is not written through it (125).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

NAMES="api.alpha.test cdn.alpha.test beta.test gamma.test pkg.delta.test"
https_upstream $NAMES other.test private.test
# A second upstream on another port, with the same certificate.
UP2=$(freeport)
spawn tls2 openssl s_server -quiet -accept "127.0.0.1:$UP2" -cert "$BOX/up.crt" \
    -key "$WORK/up.key" -www
wait_tcp "$UP2" || { echo "Bail out! the second s_server did not start"; exit 99; }
# private.test: a private address, outside the run's --permit-range 127.0.0.0/8.
grep -v '^private.test ' "$WORK/zone" > "$WORK/zone2"
echo 'private.test A 10.1.2.3' >> "$WORK/zone2"
dns_restart "$WORK/zone2"

R=$WORK/rcpt/r.jsonl
mkdir -m 700 "$WORK/rcpt"
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}"
# The workload: each name once, beta.test on both ports and twice on the first.
WORK_SH="echo command-started >&2"
for n in $NAMES; do
	WORK_SH="$WORK_SH; $CURL https://$n:$UP/; echo"
done
WORK_SH="$WORK_SH; $CURL https://beta.test:$UP/; echo; $CURL https://beta.test:$UP2/; echo"
WANT_OK=$(for i in 1 2 3 4 5 6 7; do echo 200; done)

# --- learning --------------------------------------------------------------------------------
erun --learn draft $DNSARGS --receipts "$R" -- sh -c "$WORK_SH
	$CURL https://private.test:$UP/ 2>/dev/null; echo
	$CURL --connect-to gamma.test:$UP:beta.test:$UP https://gamma.test:$UP/ 2>/dev/null; echo"
expect_eq "learning: the workload reaches its 5 names" "$WANT_OK" \
    "$(printf '%s\n' "$out" | head -n 7)"
# Refused: no HTTP answer (000: the transparent path resets) or the proxy's 403.
expect_match "learning: a name answered with a private address is still refused" '^(000|403)$' \
    "$(printf '%s\n' "$out" | sed -n 8p)"
expect_eq "learning: its receipt says private-address" 1 \
    "$(grep '"event":"deny"' "$R" | grep '"host":"private.test"' | grep -c '"reason":"private-address"')"
expect_match "learning: the SNI guard is still on (a mismatch is refused)" '^(000|403)$' \
    "$(printf '%s\n' "$out" | sed -n 9p)"
expect_eq "learning: ... with its receipt" 1 \
    "$(grep '"event":"deny"' "$R" | grep -c '"reason":"sni-mismatch"')"
expect_match "learn mode is announced on stderr" \
    '^egress-run: learn mode: every public destination is allowed on every port \(special-purpose addresses still refused outside --permit-range' "$err"
expect_eq "... before the command started" "learn" \
    "$(printf '%s\n' "$err" | grep -m1 -o -e 'learn mode' -e 'command-started' | sed 's/ mode//; s/command-started/command/')"
expect_match "the end of the run names the draft" "draft policy of [0-9]+ destinations written to draft" "$err"

D=$BOX/draft
sort_ports() { tr ',' '\n' | sort -n | tr '\n' ',' | sed 's/,$//'; }
B_PORTS=$(printf '%s\n%s\n' "$UP" "$UP2" | sort -n | tr '\n' ',' | sed 's/,$//')
if [ $((UP + 1)) -eq "$UP2" ]; then B_PORTS="$UP-$UP2"; fi
if [ $((UP2 + 1)) -eq "$UP" ]; then B_PORTS="$UP2-$UP"; fi
expect_eq "the draft allows exactly the 5 names, with their ports" \
"allow api.alpha.test $UP
allow beta.test $B_PORTS
allow cdn.alpha.test $UP
allow gamma.test $UP
allow pkg.delta.test $UP" "$(grep -v '^#' "$D" | sed 's/ *#.*//')"
expect_match "the draft counts connections" "^allow beta.test $B_PORTS +# 3 connections$" "$(cat "$D")"
expect_eq "the refused names are not in the draft" "" "$(grep -e private.test -e other.test "$D")"
expect_match "the draft's header says where it came from" \
    "^# Draft policy written by egress-run --learn from the receipts of principal run-" "$(head -n 1 "$D")"
"$EP" check "$D" >/dev/null 2>&1
expect_eq "the draft checks" 0 "$?"
"$EP" seal "$D" > "$BOX/draft.sealed"
expect_eq "the draft seals" 0 "$?"

# --- running with the draft --------------------------------------------------------------------
OTHER=$(grep '"host":"other.test"' "$R" | grep -c '"reason":"not-allowlisted"')
for P in ./draft ./draft.sealed; do
	erun --policy "$P" $DNSARGS --receipts "$R" --quiet -- sh -c "$WORK_SH
		$CURL https://other.test:$UP/ 2>/dev/null; echo
		$CURL https://private.test:$UP/ 2>/dev/null; echo"
	expect_eq "--policy $P: the workload succeeds" "0 $WANT_OK" \
	    "0 $(printf '%s\n' "$out" | head -n 7)"
	expect_match "--policy $P: a name the learning run did not reach is refused" \
	    '^(000|403)$' "$(printf '%s\n' "$out" | sed -n 8p)"
	expect_match "--policy $P: the private address is refused" '^(000|403)$' \
	    "$(printf '%s\n' "$out" | sed -n 9p)"
	expect_eq "--policy $P: other.test's refusal is a not-allowlisted receipt" \
	    "$((OTHER + 1))" "$(grep '"event":"deny"' "$R" | grep '"host":"other.test"' |
	    grep -c '"reason":"not-allowlisted"')"
	OTHER=$((OTHER + 1))
done

# --- usage -------------------------------------------------------------------------------------
ran() { [ -e "$BOX/ran" ] && echo ran || echo not-run; }
erun --learn d2 --allow "beta.test:$UP" $DNSARGS -- touch ran
expect_eq "--learn with --allow: 125, nothing ran" "125 not-run" "$rc $(ran)"
expect_match "... said why" "--learn runs with a policy of its own" "$err"
erun --learn d2 --policy ./draft $DNSARGS -- touch ran
expect_eq "--learn with --policy: 125, nothing ran" "125 not-run" "$rc $(ran)"
erun --learn "$WORK/no/such/dir/draft" $DNSARGS -- touch ran
expect_eq "--learn into a folder that does not exist: 125, nothing ran" "125 not-run" "$rc $(ran)"
expect_match "... named" "--learn $WORK/no/such/dir/draft: No such file" "$err"
# The draft's folder is the workload's (the current directory is bound read-write): a
# symlink it puts in the draft's place does not redirect egress-run's write.
echo untouched > "$WORK/victim"
erun --learn draft3 $DNSARGS --receipts "$R" -- sh -c "rm draft3 && ln -s $WORK/victim draft3"
expect_eq "a draft replaced by the workload: 125" 125 "$rc"
expect_match "... said so" "--learn draft3: the file was moved or replaced during the run" "$err"
expect_eq "... and nothing is written through the symlink" untouched "$(cat "$WORK/victim")"
expect_clean "after the learning runs"
finish
