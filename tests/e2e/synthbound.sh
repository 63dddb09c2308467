#!/bin/sh
# egressd end to end: the synthetic map under load, and its settings on SIGHUP. 100 000
# random names allowed by a wildcard rule, under the default synthetic-max 4096: every one
# answered, the map (egress_synthetic_names, sampled while the questions run) never above
# 4096, egressd's RSS flat once the map is full, a recycled address bad-host, not one query
# at the test's DNS server, all well within a minute. Questions for refused names: each
# NXDOMAIN, their deny receipts (frontend dns) collapsed past 100 a second with every one
# counted. SIGHUP applies a new synthetic-max to live maps (shrinking recycles the least
# recently used names, bad-host from then on) and a new synthetic-range (live maps are
# released: their addresses and those of the old range bad-host, new answers from the new
# range); an invalid value keeps the running settings and says why.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

: > zone
dns_start zone
printf 'allow *.e2e.test 443\n' > m.policy
conf_begin
principal m m.policy
principal r m.policy
principal s m.policy
egressd_start
M=$RUN/m.sock
R=$RUN/r.sock
S=$RUN/s.sock
q() { py dnsq "$@"; }
asked() { grep -c "$1" "$DNSLOG"; }
# gauge NAME PRINCIPAL: one sample of a per-principal metric, through the control socket.
gauge() {
	"$EGRESSCTL" -s "$CTL" metrics | awk -v k="$1{principal=\"$2\"}" '$1 == k { print $2 }'
}
elapsed_since() { "$E2E_PY" -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }
now() { "$E2E_PY" -c 'import time; print(time.time())'; }

# --- 100 000 random names under the default synthetic-max --------------------------------
expect_eq "a principal's map is empty before its first question" 0 "$(gauge egress_synthetic_names m)"
RSS0=$(py rss "$EGRESSD_PID")
# The gauge, sampled while the questions run (a file the loop stops on).
: > samples
( while [ ! -f sampler.stop ]; do gauge egress_synthetic_names m >> samples; done ) &
SAMPLER=$!
t0=$(now)
expect_eq "10 000 names first: every one answered, each its own address" \
    "names=10000 answered=10000 distinct=10000" \
    "$(q "$M" A --many '%d.e2e.test' --random 11 --count 10000 --parallel 16 --summary \
    --last-file first.out --names-file first.names)"
RSS1=$(py rss "$EGRESSD_PID")
expect_eq "90 000 more: every one answered, each its own address" \
    "names=90000 answered=90000 distinct=90000" \
    "$(q "$M" A --many '%d.e2e.test' --random 12 --count 90000 --parallel 16 --summary \
    --last-file rest.out --names-file rest.names)"
secs=$(elapsed_since "$t0")
RSS2=$(py rss "$EGRESSD_PID")
touch sampler.stop
wait "$SAMPLER"
echo "# 100000 questions in $secs s; egressd RSS $RSS0 KiB at start, $RSS1 KiB after 10000 names, $RSS2 KiB after 100000"
expect_eq "every answer: code 0, NOERROR, one A, TTL 1, closed" 100000 \
    "$(cat first.out rest.out | grep -c '^0 0 1 1 198\.1[89]\.[0-9]*\.[0-9]* closed$')"
expect_eq "the answers are 100 000 distinct addresses" 100000 \
    "$(cat first.out rest.out | awk '{ print $5 }' | sort -u | wc -l | tr -d ' ')"
nsamples=$(wc -l < samples | tr -d ' ')
echo "# $nsamples samples of egress_synthetic_names, largest $(sort -n samples | tail -n 1)"
expect_eq "the map was sampled while it filled (at least 3 samples, one full)" 1 \
    "$([ "$nsamples" -ge 3 ] && grep -qx 4096 samples && echo 1)"
expect_eq "... and never held more than synthetic-max 4096" "" \
    "$(awk '$1 > 4096 || $1 !~ /^[0-9]+$/' samples)"
expect_eq "after the workload: 4096 names held, 95 904 recycled" "4096 95904" \
    "$(gauge egress_synthetic_names m) $(gauge egress_synthetic_recycled_total m)"
if grep -qa __asan_init "$top_builddir/egressd"; then
	# AddressSanitizer keeps freed memory in quarantine (256 MiB by default): RSS grows
	# with every recycled name there whatever egressd does, so it measures nothing.
	skip "RSS flat once the map is full" "an AddressSanitizer build (freed memory is quarantined)"
else
	expect_eq "RSS flat once the map is full (at most 2 MiB more after 90 000 more names)" 1 \
	    "$([ "$RSS2" -le $((RSS1 + 2048)) ] && echo 1)"
fi
expect_eq "the 100 000 questions took well under a minute (30 s)" 1 \
    "$("$E2E_PY" -c 'import sys; print(1 if float(sys.argv[1]) < 30 else 0)' "$secs")"
expect_eq "no question reached the DNS server" 0 "$(asked 'e2e\.test')"
FIRST=$(sed -n 1p first.out | awk '{ print $5 }')
LASTNAME=$(sed -n 90000p rest.names)
LAST=$(sed -n 90000p rest.out | awk '{ print $5 }')
m=$(rcpt_mark)
expect_match "the first name's address was recycled: bad-host" '^400 bad-host' \
    "$(py tunnel connect "$M" "$FIRST" 443 --mode none)"
expect_eq "... with a receipt naming the address" "deny $FIRST bad-host" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,reason)"
again=$(q "$M" A "$(sed -n 1p first.names)" | awk '{ print $5 }')
expect_eq "... asked again, the first name gets another address" 1 \
    "$([ -n "$again" ] && [ "$again" != "$FIRST" ] && echo 1)"
m=$(rcpt_mark)
expect_match "the last name's address is still that name (testdns does not know it)" \
    '^502 dns-failure' "$(py tunnel connect "$M" "$LAST" 443 --mode none)"
expect_eq "... receipt host is the name" "deny $LASTNAME dns-failure" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,reason)"

# --- NXDOMAIN denials are collapsed like other denials -----------------------------------
m=$(rcpt_mark)
t0=$(now)
q "$M" A --many 'refused.example' --count 1000 --parallel 8 > refused.out
secs=$(elapsed_since "$t0")
expect_eq "1000 questions for a refused name: each NXDOMAIN, -1001" "1000" \
    "$(grep -cx -- '-1001 3 0 0 - closed' refused.out)"
expect_eq "... every one counted in deny receipts (sum of count)" 1000 \
    "$(rcpt --skip "$m" --where host=refused.example --where event=deny --sum-count --min 1000 --wait 10)"
expect_eq "... all of them frontend dns, not-allowlisted, no port" "dns not-allowlisted -" \
    "$(rcpt --skip "$m" --where host=refused.example --fields frontend,reason,port | sort -u)"
recs=$(rcpt --skip "$m" --where host=refused.example --count)
echo "# $recs deny records for 1000 identical refused questions in $secs s"
if "$E2E_PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 2 else 1)' "$secs"; then
	# 1000 in under 2 s touch at most 3 wall-clock seconds: at most 300 one by one.
	expect_eq "past 100 a second they collapse into records with a count" 1 \
	    "$([ "$recs" -le 303 ] && [ "$(rcpt --skip "$m" --where host=refused.example \
	    --fields count | sort -n | tail -n 1)" -gt 1 ] && echo 1)"
else
	skip "past 100 a second they collapse" "this machine asked 1000 in $secs s"
fi
m=$(rcpt_mark)
q "$M" A --many 'nx%d.example' --count 500 --parallel 8 > distinct.out
expect_eq "500 distinct refused names: each NXDOMAIN" 500 \
    "$(grep -cx -- '-1001 3 0 0 - closed' distinct.out)"
expect_eq "... every one has its receipt (sum of count)" 500 \
    "$(rcpt --skip "$m" --where event=deny --where frontend=dns --sum-count --min 500 --wait 10)"
expect_eq "no query for a refused name reached the DNS server" "0 0" \
    "$(asked refused\\.example) $(asked 'nx[0-9]*\.example')"

# --- SIGHUP: a new synthetic-max and synthetic-range apply to live maps -------------------
# reload DIRECTIVES...: the same principals, these settings; waits for the reload's result.
reload() {
	conf_begin "$@"
	principal m m.policy
	principal r m.policy
	principal s m.policy
	lm=$(log_mark)
	kill -HUP "$EGRESSD_PID"
	wait_log "event=reload result=" "$lm"
}
since() { tail -n "+$((lm + 1))" egressd.err; }
addr_of() { awk '{ print $5 }'; }
q "$R" A --many 'h%d.e2e.test' --count 20 > r20.out
expect_eq "r holds 20 names under synthetic-max 4096" 20 "$(gauge egress_synthetic_names r)"
reload "synthetic-max 8"
expect_match "SIGHUP with synthetic-max 8: applied" "event=reload result=ok" "$(since)"
expect_eq "... a live map shrinks to it at once: 8 names, 12 recycled" "8 12" \
    "$(gauge egress_synthetic_names r) $(gauge egress_synthetic_recycled_total r)"
expect_match "... and egressd says so" \
    "event=reload principal=r synthetic-max=8 recycled=12" "$(since)"
H0=$(sed -n 1p r20.out | addr_of)
H19=$(sed -n 20p r20.out | addr_of)
m=$(rcpt_mark)
expect_match "... the least recently used names' addresses are bad-host" '^400 bad-host' \
    "$(py tunnel connect "$R" "$H0" 443 --mode none)"
expect_eq "... the most recent keep their addresses" "$(sed -n 13,20p r20.out)" \
    "$(q "$R" A h12.e2e.test h13.e2e.test h14.e2e.test h15.e2e.test h16.e2e.test \
    h17.e2e.test h18.e2e.test h19.e2e.test)"
m=$(rcpt_mark)
expect_match "... and are still their names (never remapped)" '^502 dns-failure' \
    "$(py tunnel connect "$R" "$H19" 443 --mode none)"
expect_eq "... receipt host is the name" "deny h19.e2e.test dns-failure" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,reason)"
expect_eq "100 more names: every one answered" "names=100 answered=100 distinct=100" \
    "$(q "$R" A --many 'i%d.e2e.test' --count 100 --summary)"
expect_eq "... the map stays at the new bound" 8 "$(gauge egress_synthetic_names r)"
expect_eq "the 4096 names of m shrank too" 8 "$(gauge egress_synthetic_names m)"
q "$S" A --many 'j%d.e2e.test' --count 20 >/dev/null
expect_eq "a map made after the reload has the new bound" 8 "$(gauge egress_synthetic_names s)"

reload "synthetic-max 0"
expect_match "SIGHUP with synthetic-max 0: refused" "event=reload result=failed" "$(since)"
expect_match "... and the log says why (file, line, the directive)" \
    'egressd\.conf:[0-9]+:[0-9]+: expected: synthetic-max NAMES' "$(since)"
q "$R" A --many 'k%d.e2e.test' --count 20 >/dev/null
expect_eq "... the running bound stays" 8 "$(gauge egress_synthetic_names r)"

OLD=$(q "$R" A k19.e2e.test | addr_of)
reload "synthetic-max 8" "synthetic-range 10.99.0.0/24"
expect_match "SIGHUP with synthetic-range 10.99.0.0/24: applied" "event=reload result=ok" \
    "$(since)"
expect_match "... live maps of the old range are released, and egressd says so" \
    "event=reload principal=r synthetic-range=10\.99\.0\.0/24 released=8" "$(since)"
expect_eq "... r holds no name now; the 8 count as recycled (132 + 8)" "0 140" \
    "$(gauge egress_synthetic_names r) $(gauge egress_synthetic_recycled_total r)"
m=$(rcpt_mark)
expect_match "... an address of the old range is bad-host, not a name" '^400 bad-host' \
    "$(py tunnel connect "$R" "$OLD" 443 --mode none)"
NEW=$(q "$R" A k19.e2e.test)
expect_match "... the name asked again: an address of the new range" \
    '^0 0 1 1 10\.99\.0\.[0-9]+ closed$' "$NEW"
m=$(rcpt_mark)
expect_match "... which is that name" '^502 dns-failure' \
    "$(py tunnel connect "$R" "$(echo "$NEW" | addr_of)" 443 --mode none)"
expect_eq "... receipt host is the name" "deny k19.e2e.test dns-failure" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,host,reason)"

reload "synthetic-max 8" "synthetic-range 10.98.0.0/31"
expect_match "SIGHUP with a /31 synthetic-range: refused" "event=reload result=failed" \
    "$(since)"
expect_match "... and the log says why" 'synthetic range is IPv4 of length 8 to 30' "$(since)"
expect_eq "... the running range stays: the name keeps its address" "$NEW" \
    "$(q "$R" A k19.e2e.test)"
expect_eq "no question of this test reached the DNS server but the connects' (h19, k19)" \
    "h19.e2e.test k19.e2e.test" \
    "$(awk '{ print $1 }' "$DNSLOG" | grep -v "^$LASTNAME\$" | sort -u | tr '\n' ' ' | sed 's/ $//')"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts synthbound
finish
