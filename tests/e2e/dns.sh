#!/bin/sh
# egressd end to end: names. A test DNS server (tests/tools/testdns, queries logged) serves
# hostile answers: private (10.x, 169.254.x, 0.0.0.0), IPv4-mapped and NAT64-embedded
# loopback, one permitted and one private answer for one name, CNAMEs to denied and to
# private names, CNAME chains past egressd's bound of 8 links (ending on or passing a denied
# name) and a CNAME record outside the chain (both dns-failure, never a chain checked in
# part), NXDOMAIN, SERVFAIL, REFUSED and silence (dns-timeout). Numeric tricks
# are bad-host and never resolved, as are zone ids and names with a NUL; names are asked
# absolute, once, without a search list; answers are pinned for pin min even when the zone
# changes (also a name pinned late in a second), and re-resolved after pin max; the
# operator's hosts file is validated like DNS; a configured nat64-prefix is decoded.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server first http --name first --log "$WORK/first.log" --conn-log "$WORK/first.conns"
UP=$PORT
start_server second http --addr 127.0.0.2 --port "$UP" --name second --conn-log "$WORK/second.conns"
: > first.conns
: > second.conns

cat > zone1 <<EOF
a.e2e.test          A     127.0.0.1
A2.e2e.test         A     127.0.0.2
priv10.e2e.test     A     10.1.2.3
ll.e2e.test         A     169.254.169.254
unspec.e2e.test     A     0.0.0.0
mapped.e2e.test     AAAA  ::ffff:127.0.0.1
mapped10.e2e.test   AAAA  ::ffff:10.0.0.1
nat64.e2e.test      AAAA  64:ff9b::7f00:1
nat64ten.e2e.test   AAAA  64:ff9b::a00:1
mynat64.e2e.test    AAAA  2a00:1:64::a00:1
mixed.e2e.test      A     127.0.0.2
mixed.e2e.test      A     10.9.9.9
mixed6.e2e.test     A     127.0.0.2
mixed6.e2e.test     AAAA  fd00::1
evil.e2e.test       A     127.0.0.1
alias.e2e.test      CNAME evil.e2e.test
chain.e2e.test      CNAME mid.e2e.test
mid.e2e.test        CNAME evil.e2e.test
cpriv.e2e.test      CNAME inner.e2e.test
inner.e2e.test      A     10.2.2.2
cok.e2e.test        CNAME a.e2e.test
nx.e2e.test         NXDOMAIN
sf.e2e.test         SERVFAIL
refused.e2e.test    REFUSED
silent.e2e.test     SILENT
pin.e2e.test        A     127.0.0.1 1
rebind.e2e.test     A     127.0.0.1 1
pin2.e2e.test       A     127.0.0.1 1
evilhop.e2e.test    CNAME a.e2e.test
stray.e2e.test      CNAME a.e2e.test
stray.e2e.test      EXTRA evilhop.e2e.test
EOF
# chain NAME N LAST: NAME -> NAME-1 -> ... -> NAME-(N-1) -> LAST, N CNAME links.
chain() {
	_prev=$1.e2e.test
	_i=1
	while [ "$_i" -lt "$2" ]; do
		echo "$_prev CNAME $1-$_i.e2e.test"
		_prev=$1-$_i.e2e.test
		_i=$((_i + 1))
	done
	echo "$_prev CNAME $3"
}
{
	chain ok8 8 a.e2e.test             # 8 links: the bound, allowed
	chain long9 9 evil.e2e.test        # 9 links, the 9th to a denied name
	chain through10 9 evilhop.e2e.test # 10 links, passing a denied name at the 9th
	chain long9ok 9 a.e2e.test         # 9 links through no denied name: still refused
} >> zone1
sed -e 's/^pin.e2e.test .*/pin.e2e.test A 127.0.0.2 1/' \
    -e 's/^rebind.e2e.test .*/rebind.e2e.test A 10.3.3.3 1/' zone1 > zone2
dns_start zone1

cat > hosts <<EOF
127.0.0.1  fromhosts.e2e.test
10.7.7.7   badhosts.e2e.test
EOF
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
allow intranet 1024-65535
allow hidden.onion 1024-65535
deny evil.e2e.test
deny evilhop.e2e.test
permit-range 127.0.0.0/8
timeout dns 1s
EOF
cat > strict.policy <<EOF
allow *.e2e.test 1024-65535
allow 127.0.0.1 1024-65535
timeout dns 1s
EOF
{ cat open.policy; echo "pin min 1s max 2s"; } > shortpin.policy
{ cat open.policy; echo "pin min 2s max 2s"; } > pin2.policy
conf_begin "hosts $WORK/hosts" "nat64-prefix 2a00:1:64::/96"
principal open open.policy
principal strict strict.policy
principal shortpin shortpin.policy
principal pin2 pin2.policy
egressd_start
OPEN=$RUN/open.sock
STRICT=$RUN/strict.sock

# get SOCK HOST [PORT]: an absolute-form GET; prints "STATUS REASON" then the body.
get() {
	py raw "$1" --http --body --data "GET http://$2:${3:-$UP}/ HTTP/1.1\r\nHost: $2\r\n\r\n" |
	    sed '1s/ closed$//'
}
conn_count() { wc -l < "$1" | tr -d ' '; }
asked() { grep -c "^$1 " "$DNSLOG"; }

# denied WHAT SOCK HOST REASON HTTP SOCKS5: one name through HTTP and SOCKS5 with its receipt.
denied() {
	_m=$(rcpt_mark)
	expect_eq "$1: HTTP" "$5 $4" "$(get "$2" "$3" | head -n 1)"
	expect_eq "$1: receipt" "deny $4 http-forward $3 $UP" \
	    "$(rcpt --skip "$_m" --wait 10 --fields event,reason,frontend,host,port)"
	expect_eq "$1: SOCKS5" "$6 closed" "$(py tunnel socks5 "$2" "$3" "$UP")"
}
# isolated WHAT: true in the private network namespace, else says why it skips.
isolated() {
	[ "$E2E_ISOLATED" = 1 ] && return 0
	skip "$1" "a wrong answer would connect outside loopback; runs only in a network namespace (root)"
	return 1
}

# --- allowed names ---------------------------------------------------------------------
m=$(rcpt_mark)
expect_eq "a name with a permitted loopback answer" "200 -
first GET / 0" "$(get "$OPEN" a.e2e.test)"
expect_eq "its receipt pins the answer" "open a.e2e.test 127.0.0.1" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,host,addr)"
expect_eq "the name was asked for A and AAAA" "1 1" \
    "$(grep -c '^a.e2e.test A$' "$DNSLOG") $(grep -c '^a.e2e.test AAAA$' "$DNSLOG")"
m=$(rcpt_mark)
expect_eq "upper case and a trailing dot are one name" "200 -
second GET / 0" "$(get "$OPEN" A2.E2E.TEST.)"
expect_eq "the receipt has the canonical name" "a2.e2e.test" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields host)"
expect_eq "a CNAME to an allowed name" "200 -
first GET / 0" "$(get "$OPEN" cok.e2e.test)"
expect_eq "a name from the hosts file" "200 -
first GET / 0" "$(get "$OPEN" fromhosts.e2e.test)"
expect_eq "a hosts-file name is not asked of DNS" 0 "$(grep -c fromhosts "$DNSLOG")"
get "$OPEN" intranet >/dev/null
expect_eq "a single-label name is asked as it is, no search list" "intranet A
intranet AAAA" "$(grep intranet "$DNSLOG" | sort -u)"
expect_eq "a single-label name without an answer is dns-failure" "deny dns-failure intranet" \
    "$(rcpt --where host=intranet --wait 10 --fields event,reason,host)"
# c-ares answers a .onion name (RFC 7686: never resolved) inside ares_getaddrinfo, before
# dns_resolve has returned the query to its connection: the answer must come on a later
# turn (once, the query was freed in that answer and then cancelled again by the
# connection's end: a use-after-free, which the ASan build reports).
ENG0=$ENGINE_PID
expect_eq "a .onion name: dns-failure" "502 dns-failure" "$(get "$OPEN" hidden.onion | head -n 1)"
expect_eq "a .onion name: its receipt" "deny dns-failure hidden.onion" \
    "$(rcpt --where host=hidden.onion --wait 10 --fields event,reason,host)"
expect_eq "a .onion name is never asked of DNS" 0 "$(grep -c onion "$DNSLOG")"
expect_eq "a .onion name: the same engine serves on" "200 $ENG0" \
    "$(get "$OPEN" cok.e2e.test | head -n 1 | cut -d' ' -f1) $(engine_pid; echo "$ENGINE_PID")"

# --- bad-host: never resolved ---------------------------------------------------------
for h in 2130706433 0x7f.1 127.1 0177.0.0.1 0x7f000001 1.2.3; do
	hex=$(printf '%s' "$h" | od -An -tx1 | tr -d ' \n')
	m=$(rcpt_mark)
	expect_eq "bad-host $h by CONNECT" "400 bad-host closed" \
	    "$(py raw "$OPEN" --http --data "CONNECT $h:$UP HTTP/1.1\r\nHost: $h:$UP\r\n\r\n")"
	expect_eq "bad-host $h: receipt, host bytes hex-encoded" "deny bad-host - $hex" \
	    "$(rcpt --skip "$m" --wait 10 --fields event,reason,host,raw)"
	expect_eq "bad-host $h by SOCKS5 (name)" "02 closed" \
	    "$(py tunnel socks5 "$OPEN" "$h" "$UP" --atyp 3)"
	expect_eq "bad-host $h by SOCKS4a" "91 closed" "$(py tunnel socks4a "$OPEN" "$h" "$UP")"
	expect_eq "bad-host $h by forward" "400 bad-host closed" \
	    "$(py raw "$OPEN" --http --data "GET http://$h:$UP/ HTTP/1.1\r\nHost: $h\r\n\r\n")"
done
expect_eq "no numeric trick was ever asked of DNS" "" \
    "$(grep -E '^(2130706433|0x7f|127\.1 |0177|1\.2\.3 )' "$DNSLOG")"
for z in "fe80::1%25eth0" "fe80::1%eth0"; do
	expect_eq "an IPv6 zone id is bad-host ($z)" "400 bad-host closed" \
	    "$(py raw "$OPEN" --http --data "CONNECT [$z]:$UP HTTP/1.1\r\nHost: [$z]:$UP\r\n\r\n")"
done
m=$(rcpt_mark)
nul=$(printf 'nul.com' | od -An -tx1 | tr -d ' \n')00$(printf '.e2e.test' | od -An -tx1 | tr -d ' \n')
expect_match "a SOCKS5 name with a NUL byte is refused" "^050005(01|02)0001000000000000 closed$" \
    "$(py raw "$OPEN" --hex "05010005010003""11$nul$(printf '%04x' "$UP")")"
expect_match "... its receipt has the bytes hex-encoded, no host" "^deny (malformed-request|bad-host) - $nul$" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,host,raw)"
expect_eq "... and no part of it was asked of DNS" 0 "$(grep -c '^nul' "$DNSLOG")"
m=$(rcpt_mark)
expect_eq "an address sent as a SOCKS5 name is a literal, never resolved" "02 closed" \
    "$(py tunnel socks5 "$OPEN" 127.0.0.1 "$UP" --atyp 3)"
expect_eq "... and only an address rule could allow it" "deny not-allowlisted 127.0.0.1" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,host)"
expect_eq "the literal was not asked of DNS" 0 "$(grep -c '^127.0.0.1 ' "$DNSLOG")"

# --- private-address -------------------------------------------------------------------
denied "strict: a loopback answer" "$STRICT" a.e2e.test private-address 403 02
denied "strict: an IPv4-mapped loopback answer" "$STRICT" mapped.e2e.test private-address 403 02
expect_eq "strict: the refused address is in the receipt" "::ffff:127.0.0.1" \
    "$(rcpt --where host=mapped.e2e.test --where principal=strict --wait 10 --fields addr)"
denied "strict: a NAT64 (64:ff9b::/96) loopback answer" "$STRICT" nat64.e2e.test private-address 403 02
if isolated "private and non-loopback answers"; then
	: > second.conns
	denied "a 10.x answer" "$OPEN" priv10.e2e.test private-address 403 02
	expect_eq "the 10.x name was asked" 1 "$([ "$(asked priv10.e2e.test)" -ge 1 ] && echo 1)"
	denied "a link-local (metadata) answer" "$OPEN" ll.e2e.test private-address 403 02
	denied "an unspecified 0.0.0.0 answer" "$OPEN" unspec.e2e.test private-address 403 02
	denied "an IPv4-mapped 10.x answer" "$OPEN" mapped10.e2e.test private-address 403 02
	denied "a NAT64 10.x answer" "$OPEN" nat64ten.e2e.test private-address 403 02
	denied "a 10.x answer under the configured nat64-prefix" "$OPEN" mynat64.e2e.test private-address 403 02
	denied "one permitted and one private answer: refused as a whole" "$OPEN" mixed.e2e.test private-address 403 02
	expect_eq "mixed: the permitted address was never connected to" 0 "$(conn_count second.conns)"
	denied "a permitted A and a private AAAA: refused as a whole" "$OPEN" mixed6.e2e.test private-address 403 02
	expect_eq "mixed6: the permitted address was never connected to" 0 "$(conn_count second.conns)"
	denied "a CNAME to a private name" "$OPEN" cpriv.e2e.test private-address 403 02
	expect_eq "cpriv: the CNAME target was followed" "10.2.2.2" \
	    "$(rcpt --where host=cpriv.e2e.test --wait 10 --fields addr)"
	denied "a private address from the hosts file" "$OPEN" badhosts.e2e.test private-address 403 02
fi

# --- denied-by-rule through CNAMEs ----------------------------------------------------
denied "a CNAME to a denied name" "$OPEN" alias.e2e.test denied-by-rule 403 02
denied "a CNAME chain ending on a denied name" "$OPEN" chain.e2e.test denied-by-rule 403 02
expect_eq "the denied target itself is refused before DNS" 0 "$(asked evil.e2e.test)"

# --- CNAME chains past the bound, records outside the chain: dns-failure -----------------
expect_eq "a chain of 8 links (the bound) through no denied name" "200 -
first GET / 0" "$(get "$OPEN" ok8.e2e.test)"
lm=$(log_mark)
denied "a chain of 9 links whose 9th name is denied" "$OPEN" long9.e2e.test dns-failure 502 04
expect_eq "... the log names the bound" 0 \
    "$(wait_log 'host=long9.e2e.test .*reason=dns-failure why="CNAME chain longer than 8 links"' "$lm"; echo $?)"
denied "a chain of 10 links passing a denied name at the 9th" "$OPEN" through10.e2e.test dns-failure 502 04
denied "a chain of 9 links through no denied name" "$OPEN" long9ok.e2e.test dns-failure 502 04
lm=$(log_mark)
denied "a CNAME record outside the chain (owned by a denied name)" "$OPEN" stray.e2e.test dns-failure 502 04
expect_eq "... the log says why" 0 \
    "$(wait_log 'host=stray.e2e.test .*why="CNAME record outside the chain' "$lm"; echo $?)"

# --- dns-failure, dns-timeout -------------------------------------------------------------
denied "NXDOMAIN" "$OPEN" nx.e2e.test dns-failure 502 04
denied "SERVFAIL" "$OPEN" sf.e2e.test dns-failure 502 04
denied "REFUSED" "$OPEN" refused.e2e.test dns-failure 502 04
m=$(rcpt_mark)
out=$(py raw "$OPEN" --http --elapsed --data "CONNECT silent.e2e.test:$UP HTTP/1.1\r\nHost: silent.e2e.test:$UP\r\n\r\n")
expect_eq "a resolver that never answers: 504" "504 dns-timeout closed" "$(echo "$out" | head -n 1)"
expect_match "after about timeout dns (1s)" "^elapsed (0\.9|[123]\.)" "$(echo "$out" | sed -n 2p)"
expect_eq "dns-timeout receipt" "deny dns-timeout http-connect silent.e2e.test $UP" \
    "$(rcpt --skip "$m" --wait 10 --fields event,reason,frontend,host,port)"
expect_eq "dns-timeout by SOCKS5" "04 closed" "$(py tunnel socks5 "$OPEN" silent.e2e.test "$UP")"
expect_eq "dns-timeout by SOCKS4a" "91 closed" "$(py tunnel socks4a "$OPEN" silent.e2e.test "$UP")"

# --- pinning ------------------------------------------------------------------------------------
expect_eq "pin: first answer reaches the first upstream (open)" "first" "$(get "$OPEN" pin.e2e.test | sed -n 2p | cut -d' ' -f1)"
expect_eq "pin: first answer reaches the first upstream (shortpin)" "first" "$(get "$RUN/shortpin.sock" pin.e2e.test | sed -n 2p | cut -d' ' -f1)"
expect_eq "rebind: first answer allowed (open)" "200 -" "$(get "$OPEN" rebind.e2e.test | head -n 1)"
expect_eq "rebind: first answer allowed (shortpin)" "200 -" "$(get "$RUN/shortpin.sock" rebind.e2e.test | head -n 1)"
pinned_at=$(date +%s)
: > second.conns
asked_before=$(asked pin.e2e.test)
dns_restart zone2
for i in 1 2 3; do
	expect_eq "pin: within pin min the pinned address is used ($i)" "first" \
	    "$(get "$OPEN" pin.e2e.test | sed -n 2p | cut -d' ' -f1)"
done
expect_eq "pin: a pinned name is not asked again (TTL 1 < pin min)" "$asked_before" "$(asked pin.e2e.test)"
expect_eq "pin: the second upstream was never reached" 0 "$(conn_count second.conns)"
expect_eq "pin: SOCKS5 uses the same pin" "00" "$(py tunnel socks5 "$OPEN" pin.e2e.test "$UP")"
while [ $(($(date +%s) - pinned_at)) -lt 3 ]; do sleep 0.2; done
expect_eq "pin: after pin max the new answer is used" "second" \
    "$(get "$RUN/shortpin.sock" pin.e2e.test | sed -n 2p | cut -d' ' -f1)"
expect_eq "pin: after pin max the name was asked again" 1 \
    "$([ "$(asked pin.e2e.test)" -gt "$asked_before" ] && echo 1)"
# pin min 2s is two seconds, also for a name pinned late in a wall-clock second: pinned at
# X.93, the pin must still hold at X+2.45, past the end of second X+1 (where a pin counted
# in whole seconds would have ended) and about 0.5 s before its real end. The second
# request starts at that wall-clock time (--at), so neither the shell nor the start-up of
# python eats into the 0.5 s margin on a slow machine.
expect_eq "pin min 2s: first request, at the end of a second" "00" \
    "$(py tunnel socks5 "$RUN/pin2.sock" pin2.e2e.test "$UP" --align 0.93 --start-file "$WORK/pin2.t0")"
n2=$(grep -c '^pin2.e2e.test A$' "$DNSLOG")
at=$(awk '{ printf "%d.45\n", int($1) + 2 }' "$WORK/pin2.t0")
expect_eq "pin min 2s: a request about 1.5 s later, in the second after next" "00" \
    "$(py tunnel socks5 "$RUN/pin2.sock" pin2.e2e.test "$UP" --at "$at")"
expect_eq "pin min 2s: ... still uses the pin (the name is not asked again)" "$n2" \
    "$(grep -c '^pin2.e2e.test A$' "$DNSLOG")"
if isolated "rebinding to a private address after pin max"; then
	denied "rebinding to 10.x after pin max" "$RUN/shortpin.sock" rebind.e2e.test private-address 403 02
fi
expect_eq "rebind: the open principal still uses its pinned first answer" "200 -" \
    "$(get "$OPEN" rebind.e2e.test | head -n 1)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts dns
finish
