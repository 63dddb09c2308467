#!/bin/sh
# egressd end to end: metrics. The Prometheus text of `metrics-listen` (GET /metrics) and
# of the control socket's metrics verb parses under a strict parser (HELP and TYPE before a
# family's samples, label syntax, float values, histogram buckets cumulative and ending at
# +Inf with _sum and _count) and its counters equal what the receipts say: opens, closes
# with their bytes, denials by reason (collapsed ones counted), quota hits. egressd never
# connects to its own metrics address.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need curl
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'm.e2e.test A 127.0.0.1\nnx.e2e.test NXDOMAIN\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.0/8\nquota connections 1\n' > m.policy
MPORT=$(freeport)
conf_begin "metrics-listen 127.0.0.1:$MPORT"
principal mx m.policy
egressd_start
S=$RUN/mx.sock
wait_tcp "$MPORT" || { echo "Bail out! metrics-listen did not listen"; exit 99; }

# Traffic: two tunnels with bytes, denials of three kinds, a quota hit.
for i in 1 2; do
	py tunnel socks5 "$S" m.e2e.test "$ECHO" --mode echo --size 1000 >/dev/null
done
py tunnel connect "$S" other.example.org 443 >/dev/null
py tunnel connect "$S" other.example.org 443 >/dev/null
py tunnel socks5 "$S" nx.e2e.test "$ECHO" >/dev/null
rm -f held
py tunnel socks5 "$S" m.e2e.test "$ECHO" --mode hold --status-file held --hold-secs 60 \
    >/dev/null &
HOLD=$!
wait_for -f held
py tunnel socks5 "$S" m.e2e.test "$ECHO" >/dev/null
kill "$HOLD" 2>/dev/null
wait "$HOLD" 2>/dev/null
# The metrics are compared with the receipts: wait until egressd has closed all three
# tunnels (the held one last), rather than for a guessed time.
rcpt --where event=close --count --min 3 --wait 10 >/dev/null

# --- the exposition parses, over HTTP and over the control socket --------------------------
curl -sS -D http.head -o http.txt "http://127.0.0.1:$MPORT/metrics"
expect_eq "GET /metrics: 200" 200 "$(head_status http.head)"
expect_match "GET /metrics: text/plain version 0.0.4" "^Content-Type: text/plain; version=0.0.4" \
    "$(grep -i '^Content-Type' http.head | tr -d '\r')"
expect_eq "GET /other: 404" 404 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/other")"
"$EGRESSCTL" -s "$CTL" metrics > ctl.txt
expect_eq "egressctl metrics: exit 0" 0 "$?"
expect_eq "egressctl metrics: the same families as GET /metrics" \
    "$(grep '^# TYPE' http.txt)" "$(grep '^# TYPE' ctl.txt)"

cp "$top_srcdir/tests/e2e/promcheck.py" check.py
expect_match "GET /metrics parses strictly and matches the receipts" \
    "^ok [0-9]+ samples, 3 opened, 3 denial reasons$" "$("$E2E_PY" check.py http.txt "$RCPT" mx)"
expect_match "egressctl metrics parses strictly and matches the receipts" \
    "^ok [0-9]+ samples, 3 opened, 3 denial reasons$" "$("$E2E_PY" check.py ctl.txt "$RCPT" mx)"
expect_match "DNS: the NXDOMAIN counted as a failure" \
    '^egress_dns_queries_total\{result="failure"\} [1-9]' "$(grep 'result="failure"' http.txt)"
expect_match "quota hits: the connection quota was hit once" \
    '^egress_quota_hits_total\{principal="mx",quota="connections"\} 1$' \
    "$(grep 'quota="connections"' http.txt)"

# --- egressd never connects to its own metrics address ---------------------------------
printf 'allow 127.0.0.1 %s\npermit-range 127.0.0.0/8\n' "$MPORT" > self.policy
"$EGRESSCTL" -s "$CTL" principal add self --policy "$WORK/self.policy" >/dev/null
m=$(rcpt_mark)
py raw "$RUN/self.sock" --timeout 10 \
    --data "CONNECT 127.0.0.1:$MPORT HTTP/1.1\r\nHost: x\r\n\r\n" >/dev/null
expect_eq "CONNECT to the metrics address: private-address, even with a permit-range" \
    "deny private-address" "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
finish
