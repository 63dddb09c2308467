#!/bin/sh
# egressd end to end: the native connector's DNS question verb (docs/native.md). Answers
# come from the policy, never from a resolver: an allowed name gets a synthetic address
# (stable, TTL 1), AAAA an empty answer, a refused name NXDOMAIN with a deny receipt
# (frontend dns) and not one query at the test's DNS server. A synthetic address is the
# name again for every frontend (CONNECT, SOCKS5 ATYP 1 and 4, SOCKS4, native), for that
# principal only; another principal's, an unmapped and a recycled one are bad-host. The
# map holds at most synthetic-max names.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'web.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow web.e2e.test %s\nallow 127.0.0.1 %s\ndeny bad.e2e.test\npermit-range 127.0.0.0/8\n' \
    "$ECHO" "$ECHO" > a.policy
printf 'allow *.e2e.test 443\n' > m.policy
conf_begin "synthetic-max 64"
principal a a.policy
principal b a.policy
principal m m.policy
egressd_start
A=$RUN/a.sock
B=$RUN/b.sock
M=$RUN/m.sock
q() { py dnsq "$@"; }
asked() { grep -c "^$1 " "$DNSLOG"; }

# --- answers from the policy ----------------------------------------------------------
out=$(q "$A" A web.e2e.test)
SYN=$(echo "$out" | awk '{ print $5 }')
expect_match "allowed name: code 0, NOERROR, one A, TTL 1, then closed" \
    '^0 0 1 1 198\.1[89]\.[0-9]+\.[0-9]+ closed$' "$out"
expect_eq "... the same address when asked again" "$out" "$(q "$A" A web.e2e.test)"
expect_eq "AAAA of an allowed name: NOERROR, no data" "0 0 0 0 - closed" \
    "$(q "$A" AAAA web.e2e.test)"
expect_eq "other types too (TXT)" "0 0 0 0 - closed" "$(q "$A" TXT web.e2e.test)"
expect_eq "the name is canonicalised (case, trailing dot)" "$out" "$(q "$A" A WEB.e2e.TEST.)"
expect_eq "an allowed IP literal is answered with itself" "0 0 1 1 127.0.0.1 closed" \
    "$(q "$A" A 127.0.0.1)"
m=$(rcpt_mark)
expect_eq "a literal the policy does not name: NXDOMAIN" "-1001 3 0 0 - closed" \
    "$(q "$A" A 10.9.9.9)"
expect_eq "not allowlisted: NXDOMAIN, -1001" "-1001 3 0 0 - closed" \
    "$(q "$A" A refused.example)"
expect_eq "... a deny receipt, frontend dns, no port" \
    "deny dns refused.example - not-allowlisted" \
    "$(rcpt --skip "$m" --where event=deny --where host=refused.example --wait 10 \
    --fields event,frontend,host,port,reason)"
expect_eq "denied by rule: NXDOMAIN, -1002" "-1002 3 0 0 - closed" \
    "$(q "$A" A bad.e2e.test)"
expect_eq "... a deny receipt with its reason" "deny dns bad.e2e.test denied-by-rule" \
    "$(rcpt --skip "$m" --where event=deny --where host=bad.e2e.test --wait 10 \
    --fields event,frontend,host,reason)"
expect_eq "AAAA of a refused name: NXDOMAIN too" "-1001 3 0 0 - closed" \
    "$(q "$A" AAAA refused.example)"
expect_eq "a name that is not canonical: NXDOMAIN, -1004" "-1004 3 0 0 - closed" \
    "$(q "$A" A a_b.e2e.test)"
expect_eq "... a bad-host receipt, frontend dns, the bytes in raw" \
    "deny dns bad-host 615f622e6532652e74657374" \
    "$(rcpt --skip "$m" --where event=deny --where reason=bad-host --wait 10 \
    --fields event,frontend,reason,raw)"
expect_eq "qtype 0: FORMERR, -1003" "-1003 1 0 0 - closed" "$(q "$A" 0 web.e2e.test)"
expect_eq "no question reached the DNS server (refused or allowed)" "0 0 0 0" \
    "$(asked refused.example) $(asked bad.e2e.test) $(asked web.e2e.test) $(asked a_b.e2e.test)"

# --- the synthetic address is the name again, for every frontend ----------------------
m=$(rcpt_mark)
expect_eq "CONNECT to the synthetic address reaches the upstream" "200
echo-ok" "$(py tunnel connect "$A" "$SYN" "$ECHO" --mode echo --size 100)"
expect_eq "... receipt host is the name, addr the real one, SNI guard on the name" \
    "open http-connect web.e2e.test 127.0.0.1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,frontend,host,addr)"
expect_eq "... the name was resolved for real only now (A and AAAA)" 2 \
    "$(asked web.e2e.test)"
expect_eq "SOCKS5 ATYP 1" "00
echo-ok" "$(py tunnel socks5 "$A" "$SYN" "$ECHO" --mode echo --size 100)"
expect_eq "SOCKS5 ATYP 4, IPv4-mapped" "00
echo-ok" "$(py tunnel socks5 "$A" "::ffff:$SYN" "$ECHO" --atyp 4 --mode echo --size 100)"
expect_eq "SOCKS4" "90
echo-ok" "$(py tunnel socks4 "$A" "$SYN" "$ECHO" --mode echo --size 100)"
m=$(rcpt_mark)
expect_eq "native EGR1" "0
echo-ok" "$(py tunnel native "$A" "$SYN" "$ECHO" --mode echo --size 100)"
expect_eq "... receipt host is the name" "open native web.e2e.test" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,frontend,host)"
m=$(rcpt_mark)
expect_match "the rules apply to the name: another port is refused" '^403 not-allowlisted' \
    "$(py tunnel connect "$A" "$SYN" 9 --mode none)"
expect_eq "... receipt names the name" "deny web.e2e.test 9 not-allowlisted" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,port,reason)"

# --- synthetic addresses this principal does not hold ---------------------------------
m=$(rcpt_mark)
expect_match "another principal's synthetic address: bad-host" '^400 bad-host' \
    "$(py tunnel connect "$B" "$SYN" "$ECHO" --mode none)"
expect_eq "... deny receipt of that principal, the address as host" \
    "deny b $SYN bad-host" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,principal,host,reason)"
expect_match "an address of the range never given: bad-host (SOCKS5 0x02)" '^02' \
    "$(py tunnel socks5 "$A" 198.19.255.1 "$ECHO" --mode none)"
expect_match "... also by native EGR1 (-1004)" '^-1004' \
    "$(py tunnel native "$A" 198.19.255.1 "$ECHO" --mode none)"

# --- the bound: synthetic-max 64, 1000 names ------------------------------------------
expect_eq "1000 names under synthetic-max 64: every one answered" \
    "names=1000 answered=1000 distinct=1000" \
    "$(q "$M" A --many 'n%d.e2e.test' --count 1000 --summary --last-file many.out)"
FIRST=$(sed -n 1p many.out | awk '{ print $5 }')
LAST=$(sed -n 1000p many.out | awk '{ print $5 }')
sed -n 937,1000p many.out > held.before
# The last 64 names are still held: asked again, the same addresses.
i=936
: > held.after
while [ $i -lt 1000 ]; do
	q "$M" A "n$i.e2e.test" >> held.after
	i=$((i + 1))
done
expect_eq "the last 64 names kept their addresses" "" \
    "$(diff held.before held.after)"
m=$(rcpt_mark)
expect_match "a recycled synthetic address is bad-host" '^400 bad-host' \
    "$(py tunnel connect "$M" "$FIRST" 443 --mode none)"
expect_eq "... with a receipt" "deny $FIRST bad-host" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,reason)"
m=$(rcpt_mark)
expect_match "a held one is its name (which testdns does not know: dns-failure)" \
    '^502 dns-failure' "$(py tunnel connect "$M" "$LAST" 443 --mode none)"
expect_eq "... receipt host is the name" "deny n999.e2e.test dns-failure" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,reason)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts dnsverb
finish
