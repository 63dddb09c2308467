#!/bin/sh
# egressd end to end: rotation. With receipts-rotate, a receipt file past the size becomes
# FILE.<UTC time> and a new one starts; SIGUSR1 reopens the path after an operator moved
# it, without closing live tunnels; in every case the chain continues and
# `egressctl receipts verify` accepts all the files, oldest first, and refuses them out of
# order.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'r.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.0/8\n' > r.policy
conf_begin "receipts-rotate 4K"
principal rot r.policy
egressd_start
S=$RUN/rot.sock

# A live tunnel across every rotation: it must close once, normally, at the end. (The hold
# file exists before the client starts: a fast client would otherwise find it missing
# and let go at once, and the checks about the live tunnel would pass vacuously.)
rm -f held
touch keep
py tunnel socks5 "$S" r.e2e.test "$ECHO" --mode hold --status-file held --hold-secs 60 \
    --hold-file "$WORK/keep" > hold.out &
HOLD=$!
wait_for -f held
for i in $(seq 1 40); do
	py tunnel connect "$S" "denied$i.example.org" 443 >/dev/null
done
rotated=$(ls "$RCPT".2* 2>/dev/null | wc -l)
expect_eq "receipts-rotate 4K: at least 3 rotated files" 1 "$([ "$rotated" -ge 3 ] && echo 1)"
too_big=0
for f in "$RCPT".2*; do
	[ "$(stat -c %s "$f")" -lt 8192 ] || too_big=1
done
expect_eq "... none far past the size" 0 "$too_big"

# The operator's own rotation: mv, then SIGUSR1.
mv "$RCPT" "$RCPT.manual"
lm=$(log_mark)
kill -USR1 "$EGRESSD_PID"
wait_log "event=receipts-reopen result=ok" "$lm"
wait_for -f "$RCPT"
py tunnel connect "$S" after.example.org 443 >/dev/null
expect_eq "SIGUSR1: the new file gets the next record" 1 "$(grep -c after.example.org "$RCPT")"
expect_eq "SIGUSR1: no live tunnel was closed as daemon-restart" 0 \
    "$(cat "$RCPT".* "$RCPT" | grep -c daemon-restart)"
# SIGUSR1 with nothing moved: the same file goes on, nothing is closed.
lm=$(log_mark)
kill -USR1 "$EGRESSD_PID"
# After egressd has reopened (else this would pass without a reopen having happened).
wait_log "event=receipts-reopen result=ok" "$lm"
py tunnel connect "$S" again.example.org 443 >/dev/null
expect_eq "SIGUSR1 without a move: still one file, no spurious close" "1 0" \
    "$(grep -c again.example.org "$RCPT") $(grep -c '"event":"close"' "$RCPT")"

rm -f keep
wait "$HOLD" 2>/dev/null
expect_match "the live tunnel lasted until its client let go" "^released " "$(sed -n 2p hold.out)"
# Its close is written when egressd has seen the client go: wait for it, before the stop
# (which would close it as shutdown).
rcpt --where event=close --wait 10 >/dev/null
egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"

# All files, oldest first: the timestamped ones sort by time, then the manual, then the live.
set -- $(ls "$RCPT".2* | sort) "$RCPT.manual" "$RCPT"
args=
for f in "$@"; do args="$args --file $f"; done
# shellcheck disable=SC2086
out=$("$EGRESSCTL" receipts verify $args --key "$KEY" 2>&1)
expect_eq "verify: every file, oldest first, chain and MACs good" 0 "$?"
expect_match "verify: ... says how many" "records verified" "$out"
# shellcheck disable=SC2086
"$EGRESSCTL" receipts verify --file "$RCPT" --file "$RCPT.manual" --key "$KEY" >/dev/null 2>&1
expect_eq "verify: two files out of order fail" 1 "$?"
expect_eq "the live tunnel: one open, one close, not a daemon-restart" "1 1" \
    "$(cat "$@" | grep -c '"event":"open"') $(cat "$@" | grep '"event":"close"' | grep -vc daemon-restart)"
finish
