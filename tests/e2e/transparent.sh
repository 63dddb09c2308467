#!/bin/sh
# egressd end to end: the native connector's transparent verb (EGR1 verb 2, docs/native.md),
# what egress-relay's transparent listener sends for a connection the workload made to an
# address directly. The same decision as a native connect: a synthetic address this
# principal was given is its name again (rules, resolution, SNI guard on the name, receipt
# host the name, addr the real one); one never given is bad-host; another port is refused.
# Only the receipts' frontend differs: transparent.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'ok.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow ok.e2e.test %s\npermit-range 127.0.0.0/8\n' "$ECHO" > a.policy
conf_begin
principal a a.policy
principal b a.policy
egressd_start
A=$RUN/a.sock
B=$RUN/b.sock

SYN=$(py dnsq "$A" A ok.e2e.test | awk '{ print $5 }')
expect_match "the name has a synthetic address" '^198\.1[89]\.[0-9]+\.[0-9]+$' "$SYN"

m=$(rcpt_mark)
expect_eq "transparent connect to the synthetic address reaches the upstream" "0
echo-ok" "$(py tunnel transparent "$A" "$SYN" "$ECHO" --mode echo --size 100)"
expect_eq "... receipt: frontend transparent, host the name, addr the real one" \
    "open transparent ok.e2e.test $ECHO 127.0.0.1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,frontend,host,port,addr)"
expect_eq "... and its close" "close transparent ok.e2e.test client-eof" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,frontend,host,close)"

m=$(rcpt_mark)
expect_match "another port of the name is refused" '^-1001 closed' \
    "$(py tunnel transparent "$A" "$SYN" 9 --mode none)"
expect_eq "... receipt names the name, frontend transparent" \
    "deny transparent ok.e2e.test 9 not-allowlisted" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,port,reason)"

m=$(rcpt_mark)
NEVER=198.18.200.9
[ "$NEVER" = "$SYN" ] && NEVER=198.18.200.10
expect_match "a synthetic address never given is bad-host" '^-1004 closed' \
    "$(py tunnel transparent "$A" "$NEVER" "$ECHO" --mode none)"
expect_eq "... deny receipt with the address as host" \
    "deny transparent $NEVER bad-host" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,frontend,host,reason)"
expect_match "another principal's synthetic address is bad-host" '^-1004 closed' \
    "$(py tunnel transparent "$B" "$SYN" "$ECHO" --mode none)"

expect_match "a literal the policy does not name is refused" '^-1001 closed' \
    "$(py tunnel transparent "$A" 127.0.0.1 "$ECHO" --mode none)"

finish
