#!/bin/sh
# egressd end to end: the receipt log itself. Every line chained (prev = sha256 of the
# previous line) and MACed (HMAC-SHA256 over "egress-receipt-1\0" + the line up to
# ,"mac"), members in the SPEC's order, the policy digest egress-policy computes; a deny
# is in the file before the client hears the answer, an open before the first tunnel
# byte; identical denials past 100 a second collapse into records with a count; SIGUSR1
# reopens the file and the new file continues the chain. The checker itself is shown to
# catch a changed byte, a removed line and a wrong key.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1
EP=$top_builddir/egress-policy

start_server echo echo
ECHO=$PORT
printf 'r.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
conf_begin
principal rc open.policy
egressd_start
S=$RUN/rc.sock
CONNECT_NOPE="CONNECT nope.example.org:443 HTTP/1.1\r\nHost: nope.example.org:443\r\n\r\n"

# --- written before the next step ---------------------------------------------------------
early=0
for i in 1 2 3 4 5; do
	m=$(rcpt_mark)
	py raw "$S" --http --timeout 10 --data "$CONNECT_NOPE" >/dev/null
	[ "$(rcpt --skip "$m" --fields event)" = deny ] && early=$((early + 1))
done
expect_eq "a deny receipt is in the file when the client has its answer (5 of 5)" 5 "$early"
touch hold
rm -f st
spawn holder "$E2E_PY" "$HELPER" tunnel socks5 "$S" r.e2e.test "$ECHO" --mode hold \
    --hold-file "$WORK/hold" --status-file "$WORK/st"
HOLDER=$SPAWNED
wait_for -s st
expect_eq "an open receipt is in the file when the first bytes have flowed" "open r.e2e.test" \
    "$(rcpt --where event=open --fields event,host)"
rm -f hold
wait "$HOLDER"

# --- members ----------------------------------------------------------------------------------
open=$(grep '"event":"open"' "$RCPT" | tail -n 1)
close=$(rcpt --where event=close --wait 10 --fields event)
expect_eq "the tunnel's close follows" close "$close"
expect_eq "open: members in order" "seq,prev,event,id,time,principal,policy,frontend,host,port,addr,reason,mac" \
    "$(echo "$open" | "$E2E_PY" -c 'import json,sys; print(",".join(json.loads(sys.stdin.readline()).keys()))')"
expect_match "open: id, time" '"id":"c-[0-9a-f]{16}","time":"20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3}Z"' "$open"
expect_eq "open: the policy digest is egress-policy's" "$("$EP" digest open.policy)" \
    "$(rcpt --where event=open --fields policy)"
expect_eq "close: members in order" \
    "seq,prev,event,id,time,principal,policy,frontend,host,port,addr,reason,close,bytes_up,bytes_down,duration_ms,mac" \
    "$(grep '"event":"close"' "$RCPT" | tail -n 1 | "$E2E_PY" -c 'import json,sys; print(",".join(json.loads(sys.stdin.readline()).keys()))')"
expect_eq "close: the same id as its open" "$(rcpt --where event=open --fields id)" "$(rcpt --where event=close --fields id)"
expect_eq "deny: members in order" "seq,prev,event,id,time,principal,policy,frontend,host,port,reason,duration_ms,mac" \
    "$(grep '"event":"deny"' "$RCPT" | tail -n 1 | "$E2E_PY" -c 'import json,sys; print(",".join(json.loads(sys.stdin.readline()).keys()))')"
expect_eq "the first record starts the chain with 64 zeros" "1 sha256:0000000000000000000000000000000000000000000000000000000000000000" \
    "$(head -n 1 "$RCPT" | "$E2E_PY" -c 'import json,sys; r=json.loads(sys.stdin.readline()); print(r["seq"], r["prev"])')"

# --- the checker catches what it should ------------------------------------------------------
check_receipts "before tampering"
sed '3s/"port":443/"port":444/' "$RCPT" > tampered.jsonl
expect_eq "a changed byte breaks the chain and the MAC" 1 \
    "$(py chain tampered.jsonl --key "$KEY" >/dev/null || echo 1)"
sed '2d' "$RCPT" > cut.jsonl
expect_match "a removed line breaks the chain" "prev sha256:" "$(py chain cut.jsonl --key "$KEY")"
head -c 32 /dev/urandom > wrong.key
expect_match "another key fails every MAC" "bad mac" "$(py chain "$RCPT" --key wrong.key)"

# --- identical denials past 100 a second -------------------------------------------------------
m=$(rcpt_mark)
out=$(py burst "$S" 300 --data "CONNECT flood.example.org:443 HTTP/1.1\r\nHost: flood.example.org:443\r\n\r\n")
echo "# $out" | tr '\n' ' '; echo
expect_match "300 identical denials are each answered 403" "^300 x 403 not-allowlisted" "$out"
# The collapsed ones are written when their second ends: wait until all are there.
expect_eq "the denials are all accounted for (sum of count)" 300 \
    "$(rcpt --skip "$m" --where host=flood.example.org --where event=deny --sum-count --min 300 --wait 10)"
recs=$(rcpt --skip "$m" --where host=flood.example.org --count)
echo "# $recs deny records for 300 identical denials"
secs=$(echo "$out" | sed -n 's/^elapsed \([0-9]*\).*/\1/p')
expect_eq "at most 100 records a second (and one with the count of the rest)" 1 \
    "$([ "$recs" -le $((100 * (secs + 2) + secs + 2)) ] && echo 1)"
# Inherently about speed: only a burst faster than 100 a second must collapse. 300 in under
# 2 s touch at most 3 wall-clock seconds, so one of them held more than 100 (all but
# surely; exactly 100, 100, 100 would need a perfectly even split).
if [ "$secs" -lt 2 ]; then
	expect_eq "past 100 a second identical denials collapse into records with count" 1 \
	    "$([ "$recs" -lt 300 ] && echo 1)"
else
	skip "past 100 a second identical denials collapse" "this machine sent 300 in ${secs}+ s, not past 100 a second"
fi
check_receipts "after a burst of denials"

# --- SIGUSR1: rotation ------------------------------------------------------------------------------
mv "$RCPT" receipts.1
lm=$(log_mark)
kill -USR1 "$EGRESSD_PID"
# Once egressd says it reopened the path, the next record goes to the new file.
wait_log "event=receipts-reopen result=ok" "$lm"
py raw "$S" --http --data "$CONNECT_NOPE" >/dev/null
wait_for -s "$RCPT"
last=$(tail -n 1 receipts.1 | tr -d '\n' | sha256sum | cut -d' ' -f1)
lastseq=$(tail -n 1 receipts.1 | "$E2E_PY" -c 'import json,sys; print(json.loads(sys.stdin.readline())["seq"])')
expect_eq "after SIGUSR1 a new file is written" 1 "$([ -s "$RCPT" ] && echo 1)"
expect_eq "the new file begins with the prev of the old file's last line" "sha256:$last" \
    "$(head -n 1 "$RCPT" | "$E2E_PY" -c 'import json,sys; print(json.loads(sys.stdin.readline())["prev"])')"
expect_eq "seq continues across the rotation" $((lastseq + 1)) \
    "$(head -n 1 "$RCPT" | "$E2E_PY" -c 'import json,sys; print(json.loads(sys.stdin.readline())["seq"])')"
expect_eq "the new file's mode is 0600" 600 "$(stat -c %a "$RCPT")"
egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
cat receipts.1 "$RCPT" > both.jsonl
expect_match "the two files verify as one chain" "^ok " "$(py chain both.jsonl --key "$KEY")"
finish
