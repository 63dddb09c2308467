#!/bin/sh
# realwork.sh: egress-run for real work (SPEC "egress-run for real work"; egress-run(1)
# ENVIRONMENT INSIDE), in real bubblewrap, loopback only.
# - --setenv NAME=VALUE and --env NAME are visible inside, in their order; no other
#   variable of the caller's is; a --env value is in no argv (bwrap's, /proc/1/cmdline
#   inside). A user's HTTPS_PROXY (--setenv and --env) does not replace egress-launch's:
#   curl still reaches the allowed upstream; a user's EGRESS_FD is dropped (--no-fd4);
#   a user's JAVA_TOOL_OPTIONS is kept with the proxy properties appended.
# - HOME inside is a writable folder, fresh per run (a file written in one run is gone in
#   the next), also as an ordinary user; --home DIR is bound there and keeps what a run
#   wrote for the next, and is refused (125, nothing ran) when it holds egress-run's state
#   (the default receipts' folder, a --receipts file).
# - PATH inside holds only folders that exist inside (each entry a directory there): the
#   caller's missing folders, relative entries, folders not bound and a symlink out of a
#   bound folder are left out; a default when nothing remains; --setenv PATH is filtered
#   the same way.
# - --no-dns: the run works through the proxy variables (tests/e2e/dnsstub.sh checks the stub).
# - Bad values (--setenv without '=', a NAME that is not a shell name, HOME, a --home that
#   is not a directory): 125, nothing ran.
# - Without user namespaces (user.max_user_namespaces=0 in a user namespace of the test's
#   own, the host untouched), egress-run says so in one line naming the setting, 125, as
#   root and as an ordinary user.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

# --- an HTTPS upstream and a name for it ----------------------------------------------------
https_upstream ok.e2e.test
R=$WORK/rcpt/r.jsonl
mkdir -m 700 "$WORK/rcpt"
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="--allow ok.e2e.test:$UP $DNSARGS --receipts $R --quiet"
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}"
OK_URL=https://ok.e2e.test:$UP/
envval() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
ran() { [ -e "$BOX/ran" ] && echo ran || echo not-run; }

# --- --setenv and --env -----------------------------------------------------------------------
TOKEN=egress-e2e-token-$$
CALLER_OTHER=not-for-the-sandbox
export TOKEN CALLER_OTHER
# shellcheck disable=SC2086
erun $A --setenv GREETING=hello --setenv 'SPACED=a b=c' --env TOKEN --env UNSET_IN_CALLER \
    --setenv LATER=one --setenv LATER=two -- sh -c 'env; echo "cmdline=$(tr "\0" " " < /proc/1/cmdline)"'
expect_eq "--setenv: visible inside" "hello|a b=c|two" \
    "$(envval GREETING)|$(envval SPACED)|$(envval LATER)"
expect_eq "--env NAME: the caller's value inside" "$TOKEN" "$(envval TOKEN)"
expect_eq "--env NAME the caller has not set: not set inside" "" \
    "$(printf '%s\n' "$out" | grep -c '^UNSET_IN_CALLER=' | grep -v '^0$')"
expect_eq "no other variable of the caller's is inside" "0 0" \
    "$(printf '%s\n' "$out" | grep -c "^CALLER_OTHER=") $(printf '%s\n' "$out" | grep -c "$SECRET")"
expect_eq "a --env value is in no argv (bwrap's, pid 1 inside)" "1 0" \
    "$(printf '%s\n' "$out" | grep -c '^cmdline=.*bwrap') $(printf '%s\n' "$out" | grep '^cmdline=' | grep -c "$TOKEN")"

# A user's HTTPS_PROXY, given either way, does not replace egress-launch's.
HTTPS_PROXY=http://127.0.0.1:9
export HTTPS_PROXY
# shellcheck disable=SC2086
erun $A --setenv HTTPS_PROXY=http://127.0.0.1:9 --setenv http_proxy=http://127.0.0.1:9 \
    --setenv ALL_PROXY=socks5h://127.0.0.1:9 --env HTTPS_PROXY -- sh -c \
    'echo "$HTTPS_PROXY $http_proxy $ALL_PROXY"; '"$CURL $OK_URL"
expect_eq "a user's HTTPS_PROXY does not replace egress-launch's (and its ALL_PROXY is removed): curl reaches the upstream" \
    "0 http://127.0.0.1:3128 http://127.0.0.1:3128 
200" "$rc $out"
expect_match "a user's proxy variable: egress-run says it is not used" \
    "--setenv HTTPS_PROXY: egress-launch sets or removes it inside; your value is not used" \
    "$(cd "$BOX" && "$ERUN" --allow "ok.e2e.test:$UP" --receipts "$R" --setenv HTTPS_PROXY=x \
    -- true 2>&1 </dev/null)"
unset HTTPS_PROXY
# shellcheck disable=SC2086
erun $A --no-fd4 --setenv EGRESS_FD=9 --setenv EGRESS_RELAY=10.0.0.1:1 -- env
expect_eq "a user's EGRESS_* is dropped (no fd 4: no EGRESS_FD; EGRESS_RELAY is ours)" \
    "0 127.0.0.1:3128" "$(printf '%s\n' "$out" | grep -c '^EGRESS_FD=') $(envval EGRESS_RELAY)"

# shellcheck disable=SC2086
erun $A --setenv 'JAVA_TOOL_OPTIONS=-Xmx64m -Dfile.encoding=UTF-8' -- env
expect_eq "JAVA_TOOL_OPTIONS: the user's kept, the proxy properties appended" \
    "-Xmx64m -Dfile.encoding=UTF-8 -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128" \
    "$(envval JAVA_TOOL_OPTIONS)"

# --- HOME -------------------------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A -- sh -c 'echo "$HOME"; test -d "$HOME" && test -w "$HOME" && ls -A "$HOME" | wc -l &&
    echo kept > "$HOME/f" && mkdir -p "$HOME/.cache/pip" && cat "$HOME/f"'
expect_eq "HOME inside: a writable folder of its own, empty at the start" \
    "0 /run/egress-home 0 kept" "$rc $(words "$out")"
# shellcheck disable=SC2086
erun $A -- sh -c 'ls -A "$HOME" | wc -l; test -e "$HOME/f" && echo still-there || echo gone'
expect_eq "HOME is fresh per run: the last run's file is gone" "0 0 gone" "$rc $(words "$out")"

HD=$WORK/home
mkdir "$HD"
# shellcheck disable=SC2086
erun $A --home "$HD" -- sh -c 'mkdir -p "$HOME/.cache/pip" && echo cached > "$HOME/.cache/pip/f"'
# shellcheck disable=SC2086
erun $A --home "$HD" -- sh -c 'cat "$HOME/.cache/pip/f"'
expect_eq "--home DIR: what a run wrote there is there in the next" "0 cached" "$rc $out"
expect_eq "--home DIR: on the host, in DIR, the invoking user's" "cached $(id -u)" \
    "$(cat "$HD/.cache/pip/f" 2>/dev/null) $(stat -c %u "$HD/.cache/pip/f" 2>/dev/null)"
rm -f "$BOX/ran"
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP" $DNSARGS --home "$XDG_STATE_HOME" -- touch ran
expect_eq "--home the default receipts' folder: 125, nothing ran" "125 not-run" "$rc $(ran)"
expect_match "--home over the receipts: the message names --home" \
    "receipts file .* lies inside --home $XDG_STATE_HOME" "$err"
# shellcheck disable=SC2086
erun --allow "ok.e2e.test:$UP" $DNSARGS --receipts "$HD/r.jsonl" --home "$HD" -- touch ran
expect_eq "--home DIR holding the --receipts file: 125, nothing ran" "125 not-run" "$rc $(ran)"

if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
	NB=$WORK/nb
	mkdir -p "$NB" "$WORK/nbr" "$WORK/nbh" && chmod 777 "$NB" &&
	    chown nobody "$WORK/nbr" "$WORK/nbh"
	# shellcheck disable=SC2086
	(cd "$NB" && setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups \
	    env HOME="$NB" XDG_RUNTIME_DIR="$NB" "$ERUN" --allow "ok.e2e.test:$UP" $DNSARGS \
	    --receipts "$WORK/nbr/r.jsonl" --quiet --home "$WORK/nbh" -- sh -c \
	    'echo "$HOME" > "$HOME/f" && cat "$HOME/f"' >"$NB/out" 2>"$NB/err")
	expect_eq "as nobody: --home DIR is writable" "0 /run/egress-home" "$? $(cat "$NB/out")"
	# shellcheck disable=SC2086
	(cd "$NB" && setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups \
	    env HOME="$NB" XDG_RUNTIME_DIR="$NB" "$ERUN" --allow "ok.e2e.test:$UP" $DNSARGS \
	    --receipts "$WORK/nbr/r.jsonl" --quiet -- sh -c \
	    'touch "$HOME/f" && stat -c %u "$HOME/f"' >"$NB/out" 2>"$NB/err")
	expect_eq "as nobody: the fresh HOME is writable" "0 $(id -u nobody)" "$? $(cat "$NB/out")"
else
	skip "HOME as nobody" "no user nobody or no setpriv"
fi

# --- PATH -------------------------------------------------------------------------------------
mkdir -p "$BOX/bin" "$WORK/outside/bin"
ln -s "$WORK/outside/bin" "$BOX/link"
# inside_ok: every entry of PATH inside is a directory there.
INSIDE_OK='IFS=:; n=0; for d in $PATH; do [ -d "$d" ] || echo "missing $d"; n=$((n+1)); done; echo "$n $PATH"'
want="$BOX/bin:/usr/bin"
[ -d /bin ] && want="$want:/bin"
want="$want:/run/egress-bin"
# shellcheck disable=SC2086
ecmd env PATH="/nonexistent/bin:$BOX/bin:$WORK/outside/bin:.::relative/bin:$BOX/link:$BOX/../box/bin:/usr/bin:/usr/bin/:/bin" \
    "$ERUN" $A -- /bin/sh -c "$INSIDE_OK"
expect_eq "PATH inside: only folders that exist inside, each once, egress-run's own last" \
    "0 $(echo "$want" | tr ':' '\n' | wc -l | tr -d ' ') $want" "$rc $out"
dflt=""
for d in /usr/local/bin /usr/bin /bin; do [ -d "$d" ] && dflt="$dflt$d:"; done
# (egress-run finds bwrap in the caller's PATH: a link to it in a folder the sandbox lacks)
ln -s "$(command -v bwrap)" "$WORK/outside/bin/bwrap"
# shellcheck disable=SC2086
ecmd env PATH="/nonexistent/bin:$WORK/outside/bin" "$ERUN" $A -- /bin/sh -c "$INSIDE_OK"
expect_eq "PATH inside: a default when nothing of the caller's remains" \
    "0 ${dflt}/run/egress-bin" "$rc ${out#* }"
# shellcheck disable=SC2086
erun $A --setenv "PATH=$WORK/outside/bin:$BOX/bin" -- /bin/sh -c "$INSIDE_OK"
expect_eq "--setenv PATH: filtered the same way" "0 2 $BOX/bin:/run/egress-bin" "$rc $out"

# --- --no-dns ---------------------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A --no-dns -- $CURL "$OK_URL"
expect_eq "--no-dns: the run works through the proxy variables" "0 200" "$rc $out"

# --- bad values -------------------------------------------------------------------------------
touch "$WORK/afile"
for bad in "--setenv NOEQUALS" "--setenv 1A=x" "--setenv A-B=x" "--setenv =x" "--env A=B" \
    "--env 9" "--env" "--setenv HOME=/tmp" "--env HOME" "--home $WORK/nonexistent" \
    "--home $WORK/afile"; do
	rm -f "$BOX/ran"
	# shellcheck disable=SC2086
	erun --allow "ok.e2e.test:$UP" --receipts "$R" $bad -- touch ran
	expect_eq "$bad: 125, nothing ran" "125 not-run" "$rc $(ran)"
	expect_match "$bad: said as a bad value of the option" "^egress-run: --(setenv|env|home) " "$err"
done
rm -f "$BOX/ran"
erun --allow "ok.e2e.test:$UP" --receipts "$R" --setenv "$(printf 'A\nB=x')" -- touch ran
expect_eq "--setenv with a newline in NAME: 125, nothing ran" "125 not-run" "$rc $(ran)"

# --- no user namespaces -----------------------------------------------------------------------
# user.max_user_namespaces is per user namespace: 0 in one of the test's own stops every
# user namespace below it, and the host's value stays as it was.
HOSTMAX=$(cat /proc/sys/user/max_user_namespaces)
NSMSG="^egress-run: bubblewrap cannot create user namespaces here: user\.max_user_namespaces is 0: raise it"
if unshare -U -r true 2>/dev/null; then
	(cd "$BOX" && unshare -U -r sh -c 'echo 0 > /proc/sys/user/max_user_namespaces &&
	    exec "$@"' sh "$ERUN" --allow "ok.e2e.test:$UP" --receipts "$R" -- touch ran \
	    </dev/null >"$WORK/ns.out" 2>"$WORK/ns.err")
	expect_eq "no user namespaces, as root: 125, nothing ran" "125 not-run" "$? $(ran)"
	expect_match "no user namespaces, as root: one line naming the setting" "$NSMSG" \
	    "$(cat "$WORK/ns.err")"
	expect_eq "no user namespaces, as root: one line" "1" "$(wc -l < "$WORK/ns.err" | tr -d ' ')"
	if id nobody >/dev/null 2>&1 && command -v setpriv nsenter >/dev/null 2>&1; then
		# A user namespace mapping uids 0-65535 as they are, its limit 0, and egress-run
		# as nobody in it: bwrap's own namespaces are what fails.
		spawn holder unshare -U sleep 60
		NSH=$SPAWNED
		wait_until sh -c '[ "$(readlink /proc/$1/ns/user)" != "$(readlink /proc/self/ns/user)" ]' \
		    sh "$NSH"
		echo '0 0 65536' > "/proc/$NSH/uid_map" && echo '0 0 65536' > "/proc/$NSH/gid_map"
		(cd / && nsenter -t "$NSH" -U sh -c 'echo 0 > /proc/sys/user/max_user_namespaces &&
		    exec setpriv --reuid 65534 --regid 65534 --clear-groups "$@"' sh "$ERUN" \
		    --allow "ok.e2e.test:$UP" --receipts /nonexistent/r.jsonl -- true \
		    </dev/null >"$WORK/ns.out" 2>"$WORK/ns.err")
		expect_eq "no user namespaces, as nobody: 125" "125" "$?"
		expect_match "no user namespaces, as nobody: one line naming the setting" "$NSMSG" \
		    "$(cat "$WORK/ns.err")"
		expect_eq "no user namespaces, as nobody: one line" "1" \
		    "$(wc -l < "$WORK/ns.err" | tr -d ' ')"
		stop holder
	else
		skip "no user namespaces, as nobody" "no user nobody, setpriv or nsenter"
	fi
else
	skip "no user namespaces" "unshare -U -r does not work here"
fi
expect_eq "the host's user.max_user_namespaces is unchanged" "$HOSTMAX" \
    "$(cat /proc/sys/user/max_user_namespaces)"
expect_clean "realwork runs"

finish
