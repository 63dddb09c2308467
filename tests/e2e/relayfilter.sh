#!/bin/sh
# egress-relay's allow-list seccomp filter (sandbox/allow.c), end to end. In real
# bubblewrap through egress-run, curl in the sandbox reaches an allowed HTTPS upstream
# through the relay, which runs in filter mode (/proc/PID/status: Seccomp 2, at least one
# filter). On the host, a relay started by the test has exactly one filter more than the
# test's shell and relays a SOCKS5 echo under it. Test-only trigger (--enable-debug builds,
# EGRESS_TEST_HOOKS): EGRESS_RELAY_TEST_FORBIDDEN=1 makes the relay call getpgid, which its
# list lacks, right after the filter is loaded: the relay dies by SIGSYS (status 159),
# stderr names the call, nothing listens; with --seccomp-log the same call is reported as
# action=enosys and the relay goes on serving.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

# --- through the sandbox path: egress-run, bwrap, egress-launch, the relay, egressd --------
https_upstream ok.e2e.test echo.e2e.test       # both names in testdns's zone
start_server echo echo
ECHO=$PORT
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}:%{http_connect}"
# The workload prints the relay's seccomp lines (status is world-readable, also of a
# process that is not dumpable), then runs curl.
# shellcheck disable=SC2016
PROBE='for s in /proc/[0-9]*/status; do
	if grep -q "^Name:[[:space:]]*egress-relay$" "$s" 2>/dev/null; then
		grep "^Seccomp" "$s" | tr -s "\t " " " | tr "\n" " "
	fi
done
exec "$@"'
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP" --resolver "127.0.0.1:$DNS_PORT" --permit-range 127.0.0.0/8 \
    -- sh -c "$PROBE" sh $CURL "https://ok.e2e.test:$UP/"
expect_eq "sandbox: curl reaches the allowed upstream through the filtered relay" \
    "0 200:200" "$rc ${out##* }"
expect_match "sandbox: the relay runs in seccomp filter mode, with a filter of its own" \
    "^Seccomp: 2 Seccomp_filters: [1-9][0-9]* " "$out"
echo "# in the sandbox: $out"
expect_clean "sandbox run"

# --- on the host: an egressd of the test, one principal -------------------------------------
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
EOF
conf_begin
principal relay open.policy
egressd_start
SOCK=$RUN/relay.sock
socks() { sh_py socks "$@"; }
filters() { sed -n 's/^Seccomp_filters:[[:space:]]*//p' "/proc/$1/status"; }
# relay_up NAME ARGS...: the relay on a free port; sets RPORT, RPID (environment from the
# caller's ENV_PREFIX, a list of NAME=VALUE for env(1)). It returns once the relay wrote
# "ready" on --ready-fd, which it does after loading its filter (listen() comes before the
# filter, so a listening port alone does not say the filter is in place).
relay_up() {
	_n=$1
	shift
	RPORT=$(freeport)
	# shellcheck disable=SC2086
	spawn "$_n" env ${ENV_PREFIX:-} "$RELAY" --listen "127.0.0.1:$RPORT" --egress "$SOCK" \
	    --ready-fd 3 "$@" 3>"$WORK/$_n.ready"
	RPID=$SPAWNED
	if ! wait_until grep -q '^ready$' "$WORK/$_n.ready"; then
		echo "Bail out! egress-relay did not say ready: $(cat "$WORK/$_n.err")"
		exit 99
	fi
}

relay_up relay1
expect_eq "host: the relay's status says filter mode" "2" \
    "$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$RPID/status")"
expect_eq "host: the relay has exactly one filter more than this shell (its own)" \
    "$(( $(filters $$) + 1 ))" "$(filters "$RPID")"
expect_eq "host: SOCKS5 through the filtered relay, bytes both ways" "00 echo-ok" \
    "$(socks "$RPORT" echo.e2e.test "$ECHO" --mode echo --size 100000 | tr '\n' ' ' | sed 's/ $//')"
kill -TERM "$RPID"
wait "$RPID"
expect_eq "host: SIGTERM ends the filtered relay with 0 (the exit path is allowed)" 0 "$?"
expect_eq "host: and it reported no refused call" "" "$(grep seccomp "$WORK/relay1.err")"

# --- a forbidden call (test-only trigger) -----------------------------------------------------
if ! grep -q '^#define EGRESS_TEST_HOOKS 1' "$top_builddir/config.h"; then
	skip "forbidden call kills the relay" "not an --enable-debug build (no EGRESS_TEST_HOOKS)"
	skip "--seccomp-log reports it and goes on" "not an --enable-debug build"
	finish
	exit
fi
P=$(freeport)
timeout 10 env EGRESS_RELAY_TEST_FORBIDDEN=1 "$RELAY" --listen "127.0.0.1:$P" --egress "$SOCK" \
    </dev/null >forbidden.out 2>forbidden.err
rc=$?
expect_eq "forbidden call: the relay dies by SIGSYS (128 + 31)" 159 "$rc"
expect_match "forbidden call: stderr names the call" \
    "^egress-relay: seccomp syscall=getpgid nr=[0-9]+ action=kill$" "$(cat forbidden.err)"
expect_eq "forbidden call: one report, the first refusal is the last" 1 \
    "$(grep -c seccomp forbidden.err)"
expect_eq "forbidden call: nothing listens after it" 0 "$(listening "$P")"

ENV_PREFIX=EGRESS_RELAY_TEST_FORBIDDEN=1 relay_up logged --seccomp-log
expect_match "--seccomp-log: the same call is reported as refused with ENOSYS" \
    "^egress-relay: seccomp syscall=getpgid nr=[0-9]+ action=enosys$" "$(cat "$WORK/logged.err")"
expect_eq "--seccomp-log: and the relay goes on serving" "00 echo-ok" \
    "$(socks "$RPORT" echo.e2e.test "$ECHO" --mode echo --size 1000 | tr '\n' ' ' | sed 's/ $//')"
kill -TERM "$RPID"
wait "$RPID"
expect_eq "--seccomp-log: SIGTERM still ends it with 0" 0 "$?"
finish
