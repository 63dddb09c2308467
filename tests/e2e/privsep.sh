#!/bin/sh
# egressd end to end: `user` and the monitor (egress/monitor.c, priv.c). With `user nobody`,
# egressd's engine runs as nobody, and the monitor (its parent) stays root with only
# CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID and SETUID (bounding set too). Through it, in a root-owned runtime-dir: egressctl principal add --owner,
# a lease taken by another uid and a principal added by SIGHUP get sockets mode 0600 owned
# by their owners, and one without owner (start-up, SIGHUP, principal add) is 0:0, the uid
# egressd started with, never nobody; a file in the way is left alone; removal unlinks; SIGUSR1 after a move
# and receipts-rotate reopen the root-owned receipt file and the chain continues. At
# shutdown every socket is gone and the engine exits with egressd.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1
if ! id nobody >/dev/null 2>&1; then
	echo "SKIP: no user nobody on this machine"
	exit 77
fi
NOBODY=$(id -u nobody)
NOGROUP=$(id -gn nobody)
EP=$top_builddir/egress-policy

run() { out=$("$@" 2>err); rc=$?; err=$(cat err); }
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

start_server echo echo
ECHO=$PORT
printf 'c.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.1/32\n' > open.policy
mkdir -p policies
"$EP" seal open.policy > policies/build.sealed
chmod 644 open.policy policies/build.sealed
chmod 755 policies

conf_begin "user nobody" "receipts-rotate 4K" "lease $RUN/lease.sock group $NOGROUP" \
    "policy-dir $WORK/policies"
principal fixed open.policy
egressd_start
expect_eq "the engine runs as nobody" "$NOBODY" "$(status_field "$ENGINE_PID" Uid | cut -f1)"
expect_eq "the engine is called egressd-engine, a child of the monitor" egressd-engine \
    "$(cat "/proc/$ENGINE_PID/comm" 2>/dev/null)"
expect_eq "the monitor stays root" 0 "$(status_field "$EGRESSD_PID" Uid)"
# CAP_CHOWN (0), CAP_DAC_OVERRIDE (1), CAP_FOWNER (3), CAP_KILL (5), CAP_SETGID (6),
# CAP_SETUID (7): 0xeb.
expect_eq "the monitor keeps CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID, nothing else" \
    "00000000000000eb 00000000000000eb 00000000000000eb 0000000000000000" \
    "$(status_field "$EGRESSD_PID" CapEff) $(status_field "$EGRESSD_PID" CapPrm) $(status_field "$EGRESSD_PID" CapBnd) $(status_field "$EGRESSD_PID" CapInh)"
expect_eq "the engine has no capability and no_new_privs" "0000000000000000 1" \
    "$(status_field "$ENGINE_PID" CapEff) $(status_field "$ENGINE_PID" NoNewPrivs)"
HELPER_PID=$ENGINE_PID
expect_eq "runtime-dir stays root's" "755 root" "$(stat -c '%a %U' "$RUN")"
expect_eq "a start-up principal without owner: egressd's own uid and gid (0:0)" "600 0:0" \
    "$(stat -c '%a %u:%g' "$RUN/fixed.sock" 2>/dev/null)"

# --- principal add --owner, through the helper -------------------------------------------
run "$EGRESSCTL" -s "$CTL" principal add dyn --policy "$WORK/open.policy" --owner 12345:23456
expect_eq "principal add --owner: exit 0" 0 "$rc"
expect_eq "its socket is mode 0600, owned by 12345:23456" "600 12345:23456" \
    "$(stat -c '%a %u:%g' "$RUN/dyn.sock" 2>/dev/null)"
expect_match "the reported dev:ino is the socket's" " $(stat -c %d:%i "$RUN/dyn.sock") " "$out"
expect_eq "it serves its owner" "00
echo-ok" "$(py tunnel socks5 "$RUN/dyn.sock" c.e2e.test "$ECHO" --uid 12345 --mode echo)"
run "$EGRESSCTL" -s "$CTL" principal remove dyn
expect_eq "principal remove: exit 0" 0 "$rc"
expect_eq "principal remove: the socket is unlinked" 1 "$(wait_gone "$RUN/dyn.sock" && echo 1)"
echo "not a socket" > "$RUN/blocked.sock"
run "$EGRESSCTL" -s "$CTL" principal add blocked --policy "$WORK/open.policy"
expect_eq "a file in the way: add refused" 1 "$rc"
expect_match "... saying so" "blocked.sock: exists and is not a socket" "$err"
expect_eq "... and the file is left alone" "not a socket" "$(cat "$RUN/blocked.sock")"
rm -f "$RUN/blocked.sock"
# Without --owner the default is the uid and gid egressd started with, not `user`'s.
run "$EGRESSCTL" -s "$CTL" principal add noowner --policy "$WORK/open.policy"
expect_eq "principal add without --owner: exit 0" 0 "$rc"
expect_eq "... owned 0:0 like a start-up principal, not by nobody" "600 0:0" \
    "$(stat -c '%a %u:%g' "$RUN/noowner.sock" 2>/dev/null)"
run "$EGRESSCTL" -s "$CTL" principal remove noowner

# --- a lease taken by another uid ---------------------------------------------------------
spawn lease "$E2E_PY" "$HELPER" raw "$RUN/lease.sock" --text --uid "$NOBODY" --timeout 3 \
    --data '{"verb":"lease","policy":"build.sealed"}\n'
LEASE=$SPAWNED
i=0
while [ -z "$(ls "$RUN" | grep "^lease-$NOBODY-")" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
ls_sock=$(ls "$RUN" | grep "^lease-$NOBODY-" | head -n 1)
expect_eq "lease by nobody: the principal's socket is nobody's, mode 0600" "600 $NOBODY:$(id -g nobody)" \
    "$(stat -c '%a %u:%g' "$RUN/$ls_sock" 2>/dev/null)"
expect_eq "lease by nobody: it serves" "00
echo-ok" "$(py tunnel socks5 "$RUN/$ls_sock" c.e2e.test "$ECHO" --uid "$NOBODY" --mode echo)"
wait "$LEASE"
expect_eq "lease by nobody: the socket goes with the lease" 1 "$(wait_gone "$RUN/$ls_sock" && echo 1)"

# --- SIGHUP adds a principal --------------------------------------------------------------
principal late open.policy owner 34567:34567
kill -HUP "$EGRESSD_PID"
expect_eq "SIGHUP: the new principal's socket appears" 0 "$(wait_for -S "$RUN/late.sock"; echo $?)"
expect_eq "SIGHUP: owned by its owner" "600 34567:34567" "$(stat -c '%a %u:%g' "$RUN/late.sock" 2>/dev/null)"
principal late2 open.policy
kill -HUP "$EGRESSD_PID"
expect_eq "SIGHUP, no owner: the new principal's socket appears" 0 "$(wait_for -S "$RUN/late2.sock"; echo $?)"
expect_eq "SIGHUP, no owner: owned 0:0 like a start-up principal, not by nobody" "600 0:0" \
    "$(stat -c '%a %u:%g' "$RUN/late2.sock" 2>/dev/null)"

# --- receipts: rotation by size and by SIGUSR1 ----------------------------------------------
S=$RUN/fixed.sock
for i in $(seq 1 15); do
	py tunnel connect "$S" "denied$i.example.org" 443 >/dev/null
done
rotated=$(ls "$RCPT".2* 2>/dev/null | wc -l)
expect_eq "receipts-rotate 4K as nobody: files were rotated" 1 "$([ "$rotated" -ge 1 ] && echo 1)"
expect_eq "the live file is root's, mode 0600" "600 root" "$(stat -c '%a %U' "$RCPT")"
mv "$RCPT" "$RCPT.manual"
kill -USR1 "$EGRESSD_PID"
wait_for -f "$RCPT"
py tunnel connect "$S" after.example.org 443 >/dev/null
expect_eq "SIGUSR1 as nobody: the new file gets the next record" 1 "$(grep -c after.example.org "$RCPT" 2>/dev/null)"
expect_eq "no reopen or rotation failed" "" "$(grep -E 'event=receipts-(reopen|rotate) .*error' egressd.err)"
# A FIFO (or anything but a plain file) at the receipts path is refused, not opened: the
# root helper must not block on it or write through it.
mv "$RCPT" "$RCPT.beforefifo"
mkfifo "$RCPT"
lm=$(log_mark)
kill -USR1 "$EGRESSD_PID"
wait_log "event=receipts-reopen .*error" "$lm"
expect_match "a FIFO at the receipts path: the reopen is refused" "event=receipts-reopen .*error=" \
    "$(tail -n "+$((lm + 1))" egressd.err)"
expect_eq "... and the helper still serves" 0 "$("$EGRESSCTL" -s "$CTL" principal add fifo \
    --policy "$WORK/open.policy" >/dev/null 2>&1; echo $?)"
rm -f "$RCPT"
kill -USR1 "$EGRESSD_PID"
wait_for -f "$RCPT"
py tunnel connect "$S" afterfifo.example.org 443 >/dev/null
expect_eq "... and once it is gone the next SIGUSR1 reopens" 1 "$(grep -c afterfifo.example.org "$RCPT" 2>/dev/null)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
expect_eq "the engine is gone with egressd" 1 "$(wait_gone "/proc/$HELPER_PID" && echo 1)"
expect_eq "every socket in runtime-dir was unlinked (control, lease, principals)" "" "$(ls "$RUN")"
# --- under the systemd unit's capability bounding set (dist/egressd.service) ----------------
# There egressd has no CAP_SETPCAP, so the monitor cannot trim the bounding set; what it
# keeps usable is the same.
if command -v setpriv >/dev/null 2>&1; then
	mkdir -p old && mv "$RCPT"* old/
	spawn egressd setpriv --bounding-set -all,+chown,+fowner,+dac_override,+setuid,+setgid,+kill \
	    --no-new-privs "$EGRESSD" -d -c "$WORK/egressd.conf"
	EGRESSD_PID=$SPAWNED
	wait_for -S "$CTL"
	wait_log "event=started "
	expect_eq "unit's bounding set: the monitor keeps the same six capabilities" \
	    "00000000000000eb 00000000000000eb" \
	    "$(status_field "$EGRESSD_PID" CapEff) $(status_field "$EGRESSD_PID" CapPrm)"
	run "$EGRESSCTL" -s "$CTL" principal add dyn2 --policy "$WORK/open.policy" --owner 12345:23456
	expect_eq "unit's bounding set: principal add --owner works" "0 600 12345:23456" \
	    "$rc $(stat -c '%a %u:%g' "$RUN/dyn2.sock" 2>/dev/null)"
	egressd_stop
	expect_eq "unit's bounding set: egressd exits 0" 0 "$EGRESSD_RC"
	expect_eq "unit's bounding set: runtime-dir left empty" "" "$(ls "$RUN")"
	mv "$RCPT" "$RCPT.unit"
	mv old/* .
else
	skip "the unit's bounding set" "setpriv is not installed"
fi

args=
for f in $(ls "$RCPT".2* | sort) "$RCPT.manual" "$RCPT.beforefifo" "$RCPT"; do args="$args --file $f"; done
# shellcheck disable=SC2086
run "$EGRESSCTL" receipts verify $args --key "$KEY"
expect_eq "verify: the chain runs across every file" 0 "$rc"
finish
