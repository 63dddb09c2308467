#!/bin/sh
# egress-run end to end, in real bubblewrap, loopback only: curl in the sandbox reaches an
# allowed HTTPS upstream (openssl s_server, a name served by testdns) through HTTPS_PROXY
# and through ALL_PROXY=socks5h://, certificate checked; a name not allowed is refused and
# the summary on stderr names it with its reason (not-allowlisted, private-address without
# --permit-range), and lists the allowed destination with its bytes; receipts go to
# --receipts or $XDG_STATE_HOME/egress/receipts.jsonl. Exit status: the workload's own,
# 128+N for signal N, 126 (not executable), 127 (not found), 125 when set-up fails (no
# bwrap in PATH, no egressd or egress-launch next to egress-run, bad --allow, bad
# --permit-range, a policy with an error, a tampered sealed policy, a --rw path bwrap
# cannot bind, usage) and then nothing of the workload ran. SIGTERM, SIGINT and SIGHUP
# sent to egress-run reach the workload. The private egressd and its runtime folder are
# gone after every run, also when the workload is killed (SIGKILL, SIGINT from the host)
# and when egress-run is interrupted; when egress-run itself is killed with SIGKILL the
# sandbox and the private egressd stop (egress-run(1) BUGS: only the folder stays).
# --policy FILE (plain, and sealed) and --policy NAME (a lease from a system-like egressd
# with a lease socket and a policy-dir: the principal goes with the run, also when
# egress-run is killed); with no egressd answering, 125 and a clear message, never a
# fallback. --ro . makes the current directory read-only, --rw/--ro add paths (relative
# ones too, bound where they point), the rest of the host is not there, /usr and /etc are
# read-only.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

# --- an HTTPS upstream and names for it -----------------------------------------------------
https_upstream ok.e2e.test other.e2e.test
R=$WORK/run-receipts.jsonl
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="--allow ok.e2e.test:$UP $DNSARGS --receipts $R"
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}:%{http_connect}"
OK_URL=https://ok.e2e.test:$UP/
OTHER_URL=https://other.e2e.test:$UP/
# The last receipt of this run's principal (named in the summary).
run_principal() { printf '%s\n' "$err" | sed -n 's/.*(principal \([^)]*\)).*/\1/p' | head -n 1; }
last_rcpt() {
	py rcpt "$1" --where principal="$(run_principal)" --where event="$2" --wait 10 --fields "$3"
}

# --- allowed and denied, through HTTPS_PROXY and ALL_PROXY ---------------------------------
# (ALL_PROXY is set only with --no-dns: with transparent connections no client needs it.)
# shellcheck disable=SC2086
erun $A -- $CURL "$OK_URL"
expect_eq "HTTPS_PROXY: curl reaches the allowed upstream (HTTPS, certificate checked)" \
    "0 200:200" "$rc $out"
expect_match "summary: one destination, this run's principal" \
    "egress-run: 1 destination, receipts in $R \(principal run-[0-9]+-[0-9a-f]+\)" "$err"
expect_match "summary: the allowed destination with its bytes" \
    "allowed +ok\.e2e\.test:$UP +1× [1-9][0-9]* B up, [0-9.]+ (B|KiB) down" "$err"
expect_eq "receipt: an http-connect tunnel, closed" "http-connect ok.e2e.test $UP allowed" \
    "$(last_rcpt "$R" close frontend,host,port,reason)"
expect_clean "HTTPS_PROXY run"

# shellcheck disable=SC2086,SC2016
erun $A --no-dns -- sh -c '"$@" --proxy "$ALL_PROXY"' sh $CURL "$OK_URL"
expect_eq "ALL_PROXY=socks5h://: curl reaches the allowed upstream" "0 200" "$rc ${out%%:*}"
expect_match "summary (socks5h): the allowed destination with its bytes" \
    "allowed +ok\.e2e\.test:$UP +1× [1-9][0-9]* B up, [0-9.]+ (B|KiB) down" "$err"
expect_eq "receipt: a socks5 tunnel (the name went to egressd, socks5h)" \
    "socks5 ok.e2e.test $UP allowed" "$(last_rcpt "$R" close frontend,host,port,reason)"
expect_match "egressd resolved the name" "^ok\.e2e\.test A$" "$(cat "$DNSLOG")"

# --hosts: the private egressd answers the name from the file, without asking DNS.
printf '127.0.0.1 ok.e2e.test\n' > "$WORK/hosts"
: > "$DNSLOG"
# shellcheck disable=SC2086
erun --allow ok.e2e.test:$UP --hosts "$WORK/hosts" --resolver "127.0.0.1:$DNS_PORT" \
    --permit-range 127.0.0.0/8 --receipts "$R" -- $CURL "$OK_URL"
expect_eq "--hosts: the name is answered from the file" "0 200:200 0" \
    "$rc $out $(grep -c '^ok\.e2e\.test' "$DNSLOG")"
printf '10.1.2.3 ok.e2e.test\n' > "$WORK/hosts"
# shellcheck disable=SC2086
erun --allow ok.e2e.test:$UP --hosts "$WORK/hosts" --resolver "127.0.0.1:$DNS_PORT" \
    --receipts "$R" -- $CURL "$OK_URL"
expect_match "--hosts: its answers are validated like DNS's (a private address is refused)" \
    "denied +ok\.e2e\.test:$UP +1× private-address" "$err"

# As an ordinary user (the usual case: a CI job, an agent): the same run, unprivileged
# user namespaces for both bwraps, the private egressd and its sockets the user's.
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
	# (its XDG_RUNTIME_DIR is its current directory, so the runtime folder goes
	# elsewhere; its receipts are outside that directory, runstate.sh has the rest)
	NB=$WORK/nb
	mkdir -p "$NB" "$WORK/nbr" && chmod 777 "$NB" && chown nobody "$WORK/nbr" &&
	    cp "$BOX/up.crt" "$NB/"
	# shellcheck disable=SC2086
	(cd "$NB" && setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups \
	    env HOME="$NB" XDG_RUNTIME_DIR="$NB" "$ERUN" --allow "ok.e2e.test:$UP" $DNSARGS \
	    --receipts "$WORK/nbr/r.jsonl" -- $CURL "$OK_URL" >"$NB/out" 2>"$NB/err")
	expect_eq "as nobody: the run reaches the allowed upstream" "0 200:200" "$? $(cat "$NB/out")"
	expect_match "as nobody: its summary" "allowed +ok\.e2e\.test:$UP +1×" "$(cat "$NB/err")"
	expect_eq "as nobody: the receipts are nobody's" "$(id -u nobody)" \
	    "$(stat -c %u "$WORK/nbr/r.jsonl")"
else
	skip "egress-run as nobody" "no user nobody or no setpriv"
fi

# shellcheck disable=SC2086
erun $A -- $CURL "$OTHER_URL"
expect_eq "HTTPS_PROXY: a name not allowed is refused (CONNECT answered 403)" "56 000:403" "$rc $out"
expect_match "summary: names the refused destination and its reason" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
expect_match "summary: only this run's receipts" "egress-run: 1 destination," "$err"
case $err in
*"allowed "*) not_ok "summary: no allowed destination in a run that reached none" ;;
*) ok "summary: no allowed destination in a run that reached none" ;;
esac
# shellcheck disable=SC2086,SC2016
erun $A --no-dns -- sh -c '"$@" --proxy "$ALL_PROXY"' sh $CURL "$OTHER_URL"
expect_eq "ALL_PROXY: a name not allowed is refused (curl: SOCKS failure)" 97 "$rc"
expect_match "summary (socks5h): names the refused destination and its reason" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
expect_eq "receipt: a socks5 deny" "socks5 other.e2e.test not-allowlisted" \
    "$(last_rcpt "$R" deny frontend,host,reason)"
# One run, one allowed and one refused: the summary lists both.
# shellcheck disable=SC2086,SC2016
erun $A -- sh -c 'u1=$1 u2=$2; shift 2; "$@" "$u1"; "$@" "$u2"; true' sh "$OK_URL" "$OTHER_URL" $CURL
expect_match "one run, allowed and refused: two destinations" "egress-run: 2 destinations," "$err"
expect_match "... the allowed one with its bytes" \
    "allowed +ok\.e2e\.test:$UP +1× [1-9][0-9]* B up, [0-9.]+ (B|KiB) down" "$err"
expect_match "... the refused one with its reason" "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP" --resolver "127.0.0.1:$DNS_PORT" --receipts "$R" -- $CURL "$OK_URL"
expect_match "without --permit-range a loopback answer is refused: private-address" \
    "denied +ok\.e2e\.test:$UP +1× private-address" "$err"
# shellcheck disable=SC2086
erun $A --quiet -- $CURL "$OK_URL"
expect_eq "--quiet: no summary" "0 200:200 " "$rc $out $err"

# Receipts default to $XDG_STATE_HOME/egress/receipts.jsonl.
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP" $DNSARGS -- $CURL "$OK_URL"
expect_match "default receipts: the summary names \$XDG_STATE_HOME/egress/receipts.jsonl" \
    "receipts in $XDG_STATE_HOME/egress/receipts\.jsonl " "$err"
expect_eq "default receipts: the close receipt is there" "close ok.e2e.test" \
    "$(last_rcpt "$XDG_STATE_HOME/egress/receipts.jsonl" close event,host)"
expect_clean "allowed and denied runs"

# --- exit status --------------------------------------------------------------------------------
printf '#!/bin/sh\ntouch ran\n' > "$BOX/notexec"
chmod 644 "$BOX/notexec"
mkdir "$BOX/adir"
xcase() {
	_want=$1 _what=$2
	shift 2
	rm -f "$BOX/ran"
	# shellcheck disable=SC2086
	erun $A --quiet -- "$@"
	expect_eq "exit status: $_what" "$_want" "$rc"
}
xcase 0 "true: 0" true
xcase 7 "the workload's own (exit 7)" sh -c 'exit 7'
# shellcheck disable=SC2016
xcase 143 "killed by SIGTERM: 128+15" sh -c 'kill -TERM $$'
# shellcheck disable=SC2016
xcase 137 "killed by SIGKILL: 128+9" sh -c 'kill -KILL $$'
xcase 126 "not executable: 126" ./notexec
expect_eq "... and it did not run" 0 "$([ -e "$BOX/ran" ] && echo 1 || echo 0)"
xcase 126 "a directory: 126" ./adir
xcase 127 "not found: 127" no-such-command-e2e
expect_match "... said so" "no-such-command-e2e" "$err"
xcase 127 "a missing path: 127" ./no-such-file
expect_clean "exit status runs"

# --- set-up failures: 125, nothing of the workload ran, nothing left ------------------------------
scase() {
	_what=$1 _pat=$2
	shift 2
	rm -f "$BOX/ran"
	ecmd "$@"
	expect_eq "set-up failure: $_what: 125" 125 "$rc"
	# (printable ASCII only: a broken message may carry any byte)
	expect_match "set-up failure: $_what: says why" "$_pat" \
	    "$(printf '%s' "$err" | LC_ALL=C tr -c '\n -~' '?')"
	expect_eq "set-up failure: $_what: the workload did not run" 0 \
	    "$([ -e "$BOX/ran" ] && echo 1 || echo 0)"
}
mkdir nobin
# shellcheck disable=SC2086
scase "no bwrap in PATH" "bubblewrap \(bwrap\) not found" env PATH="$WORK/nobin" "$ERUN" $A -- touch ran
expect_clean "no bwrap (its private egressd was stopped)"
mkdir lonely
cp "$ERUN" lonely/
# shellcheck disable=SC2086
scase "no egressd next to egress-run" "egressd not found" "$WORK/lonely/egress-run" $A -- touch ran
cp "$top_builddir/egressd" lonely/
# shellcheck disable=SC2086
scase "no egress-launch next to egress-run" "egress-launch not found" "$WORK/lonely/egress-run" $A -- touch ran
expect_clean "no egressd, no egress-launch"
for spec in ok.e2e.test "ok.e2e.test:0" "ok.e2e.test:65536" "ok.e2e.test:443x" "bad_host.e2e.test:443" \
    "127.1:443" "[fe80::1%eth0]:443"; do
	# shellcheck disable=SC2086
	scase "--allow $spec" "^egress-run: --allow " "$ERUN" --allow "$spec" $DNSARGS --receipts "$R" -- touch ran
done
# shellcheck disable=SC2086
scase "--permit-range 10.0.0.0/33" "." "$ERUN" $A --permit-range 10.0.0.0/33 -- touch ran
printf 'allow ok.e2e.test %s\nalow other.e2e.test 443\n' "$UP" > "$BOX/bad.policy"
# shellcheck disable=SC2086
scase "a policy file with an error" "bad\.policy:2" "$ERUN" --policy ./bad.policy $DNSARGS --receipts "$R" -- touch ran
# shellcheck disable=SC2086
scase "a missing policy file" "missing\.policy" "$ERUN" --policy ./missing.policy $DNSARGS -- touch ran
# shellcheck disable=SC2086
scase "a --rw path bwrap cannot bind" "." "$ERUN" $A --rw "$WORK/no-such-dir" -- touch ran
scase "no command" "no command" "$ERUN" --allow "ok.e2e.test:$UP" --
scase "neither --allow nor --policy" "--allow" "$ERUN" -- touch ran
scase "an unknown option" "usage" "$ERUN" --bogus "$A" -- touch ran
expect_clean "set-up failures"

# --- signals reach the workload ---------------------------------------------------------------------
# The workload traps SIG, writes a marker in the current directory (bound read-write) and
# exits CODE; a bounded loop, so that a signal that never arrives fails instead of hanging.
sigcase() {
	_sig=$1 _code=$2
	rm -f "$BOX/ready" "$BOX/marker"
	# shellcheck disable=SC2086
	spawn_run "sig$_sig" $A --quiet -- sh -c "trap 'echo $_sig > marker; exit $_code' $_sig
		: > ready; i=0; while [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done; exit 9"
	_pid=$SPAWNED
	wait_for -e "$BOX/ready"
	kill "-$_sig" "$_pid"
	wait "$_pid"
	expect_eq "SIG$_sig to egress-run reaches the workload: its exit status" "$_code" "$?"
	expect_eq "SIG$_sig: the workload's trap wrote its marker" "$_sig" "$(cat "$BOX/marker" 2>/dev/null)"
}
sigcase TERM 3
sigcase INT 4
sigcase HUP 5
expect_clean "signal forwarding"

# --- cleanup when the workload is killed --------------------------------------------------------------
# hold_run NAME: egress-run with a workload that waits; sets ERPID, PRIVD (the private
# egressd: PRIVD), WL (the workload, seen from the host), RELAYPID and RTDIR.
hold_run() {
	rm -f "$BOX/ready"
	# shellcheck disable=SC2086
	spawn_run "$1" $A --quiet -- sh -c ': > ready; exec sleep 20'
	ERPID=$SPAWNED
	wait_for -e "$BOX/ready"
	# Until every process of the run is seen in egress-run's tree (10 s).
	wait_until hold_run_found
}
hold_run_found() {
	PRIVD=$(tree_pid "$ERPID" 3 egressd)     # egress-run -> bwrap -> its pid 1 -> egressd
	WL=$(tree_pid "$ERPID" 3)
	RELAYPID=$(tree_pid "$ERPID" 4 egress-relay)
	RTDIR=$(ls -d "$XDG_RUNTIME_DIR"/egress-run.* 2>/dev/null | head -n 1)
	[ -n "$PRIVD" ] && [ -n "$WL" ] && [ -n "$RELAYPID" ] && [ -n "$RTDIR" ]
}
killcase() {
	_what=$1 _sig=$2 _target=$3 _want=$4
	hold_run "kill$_sig"
	expect_match "$_what: the run is up (egressd, workload, relay, runtime folder)" \
	    "^[0-9]+ [0-9]+ [0-9]+ $XDG_RUNTIME_DIR/egress-run\.[A-Za-z0-9]{6}$" \
	    "$PRIVD ${WL:-none} ${RELAYPID:-none} $RTDIR"
	expect_eq "$_what: the runtime folder is 0700" 700 "$(stat -c %a "$RTDIR")"
	case $(cat "/proc/$RELAYPID/cmdline" "/proc/$RELAYPID/environ" "/proc/$WL/environ" \
	    "/proc/$PRIVD/cmdline" 2>/dev/null | tr '\0' ' ') in
	*"$SECRET"*) not_ok "$_what: no secret in the relay's argv and environment, nor the workload's" ;;
	"") not_ok "$_what: the relay's argv and environment could not be read" ;;
	*) ok "$_what: no secret in the relay's argv and environment, nor the workload's" ;;
	esac
	if [ "$_target" = workload ]; then kill "-$_sig" "$WL"; else kill "-$_sig" "$ERPID"; fi
	wait "$ERPID"
	expect_eq "$_what: egress-run exits 128+signal" "$_want" "$?"
	expect_eq "$_what: the private egressd is gone" 1 "$(gone "$PRIVD")"
	expect_eq "$_what: the relay is gone" 1 "$(gone "$RELAYPID")"
	expect_eq "$_what: the runtime folder is gone" 0 "$([ -e "$RTDIR" ] && echo 1 || echo 0)"
	expect_clean "$_what"
}
killcase "workload killed by SIGKILL from the host" KILL workload 137
killcase "workload interrupted by SIGINT from the host" INT workload 130
killcase "egress-run interrupted by SIGINT" INT egress-run 130
killcase "egress-run terminated by SIGTERM" TERM egress-run 143

# egress-run itself killed: --die-with-parent takes the sandbox down; egress-run(1) says its
# private egressd stops too (only the runtime folder stays behind).
hold_run erkill
# The private egressd is confined like the system one (egress-run(1)): no capability, no
# new privileges, a seccomp filter, its own mount namespace with / read-only.
st() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
expect_eq "private egressd: no capability (effective, permitted, bounding), no_new_privs, seccomp" \
    "0000000000000000 0000000000000000 0000000000000000 1 2" \
    "$(st "$PRIVD" CapEff) $(st "$PRIVD" CapPrm) $(st "$PRIVD" CapBnd) $(st "$PRIVD" NoNewPrivs) $(st "$PRIVD" Seccomp)"
expect_eq "private egressd: a mount namespace of its own, the host's network" "1 1" \
    "$([ "$(readlink "/proc/$PRIVD/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && echo 1) $([ "$(readlink "/proc/$PRIVD/ns/net")" = "$(readlink /proc/self/ns/net)" ] && echo 1)"
expect_match "private egressd: / is read-only" "^ro(,|$)" \
    "$(awk '$5 == "/" { print $6 }' "/proc/$PRIVD/mountinfo" | tail -n 1)"
expect_match "private egressd: its runtime folder is writable" "^rw(,|$)" \
    "$(awk -v d="$RTDIR" '$5 == d { print $6 }' "/proc/$PRIVD/mountinfo" | tail -n 1)"
expect_match "private egressd: its receipt file is writable" "^rw(,|$)" \
    "$(awk -v d="$R" '$5 == d { print $6 }' "/proc/$PRIVD/mountinfo" | tail -n 1)"
expect_eq "private egressd: not the receipts' folder, nor the current one" "" \
    "$(awk -v a="$WORK" -v b="$BOX" '($5 == a || $5 == b) && $6 ~ /^rw/' "/proc/$PRIVD/mountinfo")"
expect_match "private egressd: /root and /home are empty (tmpfs)" "^tmpfs tmpfs$" \
    "$(awk '$5 == "/root" || $5 == "/home" { print $9 }' "/proc/$PRIVD/mountinfo" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "private egressd: its own pid namespace" 1 \
    "$([ "$(readlink "/proc/$PRIVD/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] && echo 1)"
expect_eq "private egressd: stdin is not egress-run's" /dev/null "$(readlink "/proc/$PRIVD/fd/0")"
kill -KILL "$ERPID"
wait "$ERPID" 2>/dev/null
expect_eq "egress-run killed by SIGKILL: the workload dies with it (--die-with-parent)" 1 "$(gone "$WL")"
expect_eq "egress-run killed by SIGKILL: its private egressd stops (egress-run(1))" 1 "$(gone "$PRIVD")"
if alive "$PRIVD"; then
	kill -TERM "$PRIVD"
	gone "$PRIVD" >/dev/null
fi
rm -rf "$RTDIR"

# --- --policy FILE ---------------------------------------------------------------------------------------
printf 'allow ok.e2e.test %s\npermit-range 127.0.0.0/8\n' "$UP" > "$BOX/p.policy"
# shellcheck disable=SC2086
erun --policy ./p.policy $DNSARGS --receipts "$R" -- $CURL "$OK_URL"
expect_eq "--policy FILE (./FILE in the current directory, plain): allowed" "0 200:200" "$rc $out"
# shellcheck disable=SC2086
erun --policy "$BOX/p.policy" $DNSARGS --receipts "$R" -- $CURL "$OTHER_URL"
expect_match "--policy FILE (plain): what it does not allow is refused" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
"$EP" seal "$BOX/p.policy" > "$BOX/p.sealed"
# shellcheck disable=SC2086
erun --policy ./p.sealed $DNSARGS --receipts "$R" -- $CURL "$OK_URL"
expect_eq "--policy FILE (sealed): allowed" "0 200:200" "$rc $out"
expect_eq "--policy FILE (sealed): the run's principal has the sealed digest" \
    "$("$EP" digest "$BOX/p.sealed")" "$(last_rcpt "$R" close policy)"
# shellcheck disable=SC2086
erun --policy ./p.sealed $DNSARGS --receipts "$R" -- $CURL "$OTHER_URL"
expect_match "--policy FILE (sealed): what it does not allow is refused" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
sed "s/^allow ok.e2e.test /allow other.e2e.test /" "$BOX/p.sealed" > "$BOX/t.sealed"
# shellcheck disable=SC2086
scase "a sealed policy whose body was edited" "t\.sealed" "$ERUN" --policy ./t.sealed $DNSARGS \
    --receipts "$R" -- touch ran
expect_clean "--policy FILE"

# --- --policy NAME: a lease from a system-like egressd ---------------------------------------------------
mkdir policies
"$EP" seal "$BOX/p.policy" > policies/ci-default
cp "$BOX/p.policy" policies/plain
LGROUP=$(id -gn nobody 2>/dev/null || echo root)
conf_begin "lease $RUN/lease.sock group $LGROUP" "policy-dir $WORK/policies"
egressd_start
wait_for -S "$RUN/lease.sock" || { echo "Bail out! no lease socket"; exit 99; }
L="--lease-socket $RUN/lease.sock --receipts $RCPT"
leases() { "$EGRESSCTL" -s "$CTL" principal list | awk '$1 ~ /^lease-/' | wc -l | tr -d ' '; }
# shellcheck disable=SC2086
erun --policy ci-default $L -- $CURL "$OK_URL"
expect_eq "--policy NAME: a lease from the system egressd, allowed" "0 200:200" "$rc $out"
expect_match "--policy NAME: the summary names the leased principal and the destination" \
    "principal lease-0-[0-9a-f]+\).*allowed +ok\.e2e\.test:$UP +1×" "$(printf '%s' "$err" | tr '\n' ' ')"
expect_eq "--policy NAME: the tunnel's receipt is the system egressd's" "close ok.e2e.test allowed" \
    "$(last_rcpt "$RCPT" close event,host,reason)"
# egressd ends the lease when it sees egress-run's connection go, maybe just after it exited.
no_leases() { [ "$(leases)" = 0 ]; }
wait_until no_leases
expect_eq "--policy NAME: the lease ends with the run" 0 "$(leases)"
expect_clean "--policy NAME (no private egressd at all)"
# shellcheck disable=SC2086
erun --policy ci-default $L -- $CURL "$OTHER_URL"
expect_match "--policy NAME: what the policy does not allow is refused" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
# Without --receipts (the system egressd's receipt file is root's): the summary comes from
# egressd over the lease connection, the same destinations and bytes as the receipts say.
m=$(wc -l < "$RCPT")
erun --policy ci-default --lease-socket "$RUN/lease.sock" -- sh -c \
    "$CURL $OK_URL; $CURL $OK_URL; $CURL $OTHER_URL"
expect_match "--policy NAME, no --receipts: the summary is egressd's" \
    "destinations, receipts kept by the system egressd \(principal lease-[0-9]+-[0-9a-f]+\)" "$err"
sum_bytes=$(tail -n "+$((m + 1))" "$RCPT" | "$E2E_PY" -c '
import json, sys
up = down = 0
for l in sys.stdin:
    o = json.loads(l)
    if o.get("event") == "close" and o.get("host") == "ok.e2e.test":
        up += o["bytes_up"]; down += o["bytes_down"]
def human(n):
    return "%d B" % n if n < 10240 else "%.1f KiB" % (n / 1024)
print("%s up, %s down" % (human(up), human(down)))')
expect_match "--policy NAME, no --receipts: allowed twice, bytes as in the receipts" \
    "allowed +ok\.e2e\.test:$UP +2× $sum_bytes" "$err"
expect_match "--policy NAME, no --receipts: the refusal and its reason" \
    "denied +other\.e2e\.test:$UP +1× not-allowlisted" "$err"
rm -f "$BOX/ready"
# shellcheck disable=SC2086
spawn_run leasekill --policy ci-default $L --quiet -- sh -c ': > ready; exec sleep 20'
wait_for -e "$BOX/ready"
expect_eq "--policy NAME: the lease is listed while the run lasts" 1 "$(leases)"
kill -KILL "$SPAWNED"
wait "$SPAWNED" 2>/dev/null
wait_until no_leases
expect_eq "--policy NAME: egress-run killed by SIGKILL: the lease ends" 0 "$(leases)"
# shellcheck disable=SC2086
scase "--policy NAME not in policy-dir" "lease refused: .*no-such-policy" "$ERUN" --policy no-such-policy $L -- touch ran
# shellcheck disable=SC2086
scase "--policy NAME of an unsealed policy" "lease refused: .*sealed policy" "$ERUN" --policy plain $L -- touch ran
# shellcheck disable=SC2086
scase "--policy NAME with --resolver" "private egressd" "$ERUN" --policy ci-default $L \
    --resolver "127.0.0.1:$DNS_PORT" -- touch ran
scase "--policy NAME, no egressd on the lease socket" \
    "the system egressd does not answer on $WORK/nobody\.sock" \
    "$ERUN" --policy ci-default --lease-socket "$WORK/nobody.sock" -- touch ran
"$E2E_PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$WORK/stale.sock"
scase "--policy NAME, a stale lease socket" "does not answer on $WORK/stale\.sock" \
    "$ERUN" --policy ci-default --lease-socket "$WORK/stale.sock" -- touch ran
egressd_stop
scase "--policy NAME, the system egressd stopped" "does not answer" \
    "$ERUN" --policy ci-default --lease-socket "$RUN/lease.sock" -- touch ran
# A name without a slash is a NAME even when a file of that name is here (SPEC).
scase "--policy NAME that is also a file here: still a lease, never a private egressd" \
    "does not answer on $WORK/nobody\.sock" \
    "$ERUN" --policy p.policy --lease-socket "$WORK/nobody.sock" -- touch ran
expect_clean "--policy NAME without egressd: never a fallback to a private egressd"

# --- what the sandbox sees of the file system ------------------------------------------------------------
mkdir rw ro hidden
echo data > ro/file
# shellcheck disable=SC2086
erun $A --quiet -- sh -c 'touch ./cwd-rw && echo wrote'
expect_eq "the current directory is read-write by default" "0 wrote 1" \
    "$rc $out $([ -e "$BOX/cwd-rw" ] && echo 1 || echo 0)"
# shellcheck disable=SC2086
erun $A --quiet --ro . -- sh -c 'touch ./cwd-ro 2>/dev/null && echo wrote; cat up.crt >/dev/null && echo read'
expect_eq "--ro .: the current directory is readable, not writable" "read 0" \
    "$out $([ -e "$BOX/cwd-ro" ] && echo 1 || echo 0)"
# shellcheck disable=SC2086
erun $A --quiet --rw "$WORK/rw" --ro "$WORK/ro" -- sh -c "echo hi > $WORK/rw/f && echo wrote;
	cat $WORK/ro/file; echo x > $WORK/ro/g 2>/dev/null && echo wrote-ro;
	test -e $WORK/hidden && echo hidden-visible; test -e $WORK/egressd.conf && echo work-visible;
	touch /usr/egress-e2e-$$ 2>/dev/null && echo wrote-usr; touch /etc/egress-e2e-$$ 2>/dev/null && echo wrote-etc;
	true"
expect_eq "--rw PATH is writable, --ro PATH readable only, nothing else of the host is there, /usr and /etc read-only" \
    "wrote data" "$(words "$out")"
expect_eq "--rw PATH: the file reached the host" "hi" "$(cat rw/f 2>/dev/null)"
# Relative paths, as in egress-run(1)'s example (--rw ./out): where the caller means them.
mkdir "$BOX/out"
# shellcheck disable=SC2086
erun $A --quiet --ro . --rw ./out --rw ../rw -- sh -c 'echo rel > ./out/f && echo wrote-out;
	echo rel > ../rw/g && echo wrote-rw; true'
expect_eq "--ro . --rw ./out: ./out is writable (bound where it points)" "wrote-out rel" \
    "$(words "$(printf '%s\n' "$out" | grep -x wrote-out) $(cat "$BOX/out/f" 2>/dev/null)")"
expect_eq "--rw ../rw: a relative path outside the current directory is writable" "wrote-rw rel" \
    "$(words "$(printf '%s\n' "$out" | grep -x wrote-rw) $(cat rw/g 2>/dev/null)")"
rm -f "/usr/egress-e2e-$$" "/etc/egress-e2e-$$"
expect_clean "file system runs"

# 500 --rw/--ro paths and a long command: every path is bound, every argument reaches the
# workload (egress-run's argument vector grows; a fixed array once overflowed at ~125).
mkdir "$WORK/many"
manyargs=
i=0
while [ $i -lt 500 ]; do
	mkdir "$WORK/many/d$i"
	if [ $((i % 2)) = 0 ]; then manyargs="$manyargs --rw $WORK/many/d$i"
	else manyargs="$manyargs --ro $WORK/many/d$i"; fi
	i=$((i + 1))
done
# shellcheck disable=SC2086,SC2016
erun $A --quiet $manyargs -- sh -c 'n=0; for d in "$0"/many/d*; do [ -d "$d" ] && n=$((n + 1)); done
	touch "$0/many/d0/w" "$0/many/d498/w" 2>/dev/null && echo rw-ok
	touch "$0/many/d1/w" 2>/dev/null && echo ro-written
	echo "$n dirs $# args $1 ${300}"' "$WORK" $(seq 1 300)
expect_eq "500 --rw/--ro paths: all bound, --rw writable, --ro not; 300 arguments intact" \
    "0 rw-ok 500 dirs 300 args 1 300" "$rc $(words "$out")"
expect_clean "500 paths"

finish
