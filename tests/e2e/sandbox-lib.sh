# sandbox-lib.sh: helpers of the sandbox-side end-to-end tests (sandbox.sh, escape.sh,
# sandbox-relay.sh), on top of lib.sh (which re-executes the test in a network namespace of
# its own with only lo, and gives spawn, stop, wait_for, dns_start, egressd_start, ...).
#
# Every egress-run of a test runs with XDG_RUNTIME_DIR=$WORK/xdg and XDG_STATE_HOME=
# $WORK/state, so that the private egressd's runtime folder (egress-run.XXXXXX) and the
# default receipts of the run are the test's own and can be checked for leftovers.
# The workload's current directory is $BOX ($WORK/box, bound read-write into the sandbox);
# sandbox_helper.py is copied there, since the sandbox sees only /usr, /etc, that folder
# and egress-run's own directory.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"

for b in egress-run egress-launch egress-relay egress-policy; do
	if [ ! -x "$top_builddir/$b" ]; then
		echo "Bail out! $top_builddir/$b is not built"
		exit 99
	fi
done
e2e_need bwrap
ERUN=$top_builddir/egress-run
RELAY=$top_builddir/egress-relay
LAUNCH=$top_builddir/egress-launch
EP=$top_builddir/egress-policy
SHELPER_SRC=$top_srcdir/tests/e2e/sandbox_helper.py
# The interpreter inside the sandbox must live under /usr (a pyenv shim in /root is not
# there); on the host, lib.sh's $E2E_PY.
SBX_PY=${E2E_SBX_PY:-/usr/bin/python3}
if [ ! -x "$SBX_PY" ]; then
	echo "SKIP: $SBX_PY is not installed (the probes inside the sandbox need it under /usr)"
	exit 77
fi
# bwrap that cannot make namespaces here (a container without user namespaces) is an
# environment problem, said as such; egress-run's own refusal is tested elsewhere.
if ! bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>"$WORK/bwrap.err"; then
	echo "SKIP: bwrap cannot create namespaces here: $(cat "$WORK/bwrap.err")"
	exit 77
fi

XDG_RUNTIME_DIR=$WORK/xdg
XDG_STATE_HOME=$WORK/state
mkdir -m 700 "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
export XDG_RUNTIME_DIR XDG_STATE_HOME
# Secrets in egress-run's own environment: none may reach the sandbox.
SECRET=egress-e2e-secret-$$-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
EGRESS_E2E_SECRET=$SECRET
AWS_SECRET_ACCESS_KEY=$SECRET
export EGRESS_E2E_SECRET AWS_SECRET_ACCESS_KEY

BOX=$WORK/box
mkdir "$BOX"
cp "$SHELPER_SRC" "$BOX/sandbox_helper.py"

sh_py() { "$E2E_PY" "$SHELPER_SRC" "$@"; }

# words TEXT: TEXT on one line, runs of blanks and newlines as one space.
words() { printf '%s\n' "$1" | tr -s ' \t\n' '   ' | sed 's/^ //; s/ $//'; }

# erun ARGS...: egress-run ARGS from $BOX, stdin /dev/null; sets rc, out (stdout) and err
# (stderr, the summary included). ecmd CMD...: the same for any command (env, a copy).
ecmd() {
	(cd "$BOX" && "$@" </dev/null >"$WORK/erun.out" 2>"$WORK/erun.err")
	rc=$?
	out=$(cat "$WORK/erun.out")
	err=$(cat "$WORK/erun.err")
}
erun() { ecmd "$ERUN" "$@"; }

# spawn_run NAME ARGS...: egress-run ARGS from $BOX in the background (lib.sh's spawn); its
# pid is $SPAWNED, its output $WORK/NAME.out and .err.
spawn_run() {
	_n=$1
	shift
	spawn "$_n" sh -c 'cd "$1" && shift && exec "$@"' sh "$BOX" "$ERUN" "$@"
}

# leftovers: "DIRS PROCS": runtime folders left in $XDG_RUNTIME_DIR, and processes whose
# argv names one (the private egressd, bwrap).
leftovers() {
	_d=$(ls -A "$XDG_RUNTIME_DIR" | wc -l | tr -d ' ')
	_p=0
	for _c in /proc/[0-9]*/cmdline; do
		if { tr '\0' ' ' < "$_c"; } 2>/dev/null | grep -q "$XDG_RUNTIME_DIR/"; then
			_p=$((_p + 1))
		fi
	done
	echo "$_d $_p"
}

# expect_clean WHAT: nothing of the run is left (runtime folder, egressd, bwrap), within
# 10 s (a private egressd under a sanitizer takes its time to exit).
expect_clean() {
	_i=0
	while [ "$(leftovers)" != "0 0" ] && [ $_i -lt 200 ]; do
		_i=$((_i + 1))
		sleep 0.05
	done
	expect_eq "$1: no runtime folder and no private egressd left" "0 0" "$(leftovers)"
}

# tree_pid PID DEPTH [COMM]: the first descendant of PID at DEPTH (named COMM), in
# egress-run's tree: 1 egressd and bwrap, 2 bwrap as the sandbox's pid 1, 3 the workload,
# 4 the relay.
tree_pid() {
	sh_py tree "$1" | awk -v d="$2" -v c="${3:-}" \
	    '$1 == d && (c == "" ? $3 != "egressd" : $3 == c) { print $2; exit }'
}

# alive PID: true while PID exists and is not a zombie (one whose parent died may stay
# one here, when pid 1 of the machine does not reap).
alive() {
	_st=$({ sed 's/.*) //' "/proc/$1/stat"; } 2>/dev/null | cut -c1)
	[ -n "$_st" ] && [ "$_st" != Z ]
}

# gone PID: until PID no longer runs (up to 10 s); 1 when it is gone, else 0.
gone() {
	_i=0
	while alive "$1"; do
		_i=$((_i + 1))
		[ $_i -gt 200 ] && { echo 0; return; }
		sleep 0.05
	done
	echo 1
}

# wait_listen PORT: until something listens on 127.0.0.1:PORT, without connecting to it.
wait_listen() {
	_hex=$(printf '%04X' "$1")
	_i=0
	while ! awk -v p=":$_hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
	    END { exit !f }' /proc/net/tcp; do
		_i=$((_i + 1))
		[ $_i -gt 200 ] && return 1
		sleep 0.05
	done
	return 0
}

# listening PORT: 1 when something listens on 127.0.0.1:PORT now, else 0.
listening() {
	_hex=$(printf '%04X' "$1")
	awk -v p=":$_hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
	    END { print f ? 1 : 0 }' /proc/net/tcp /proc/net/tcp6
}

# https_upstream NAME...: an HTTPS upstream (openssl s_server -www on 127.0.0.1:$UP) with a
# certificate for every NAME ($BOX/up.crt, readable inside as up.crt), and the test's DNS
# server answering each NAME with 127.0.0.1 ($DNS_PORT). Bails out when either fails.
https_upstream() {
	_san=
	for _n in "$@"; do
		_san="${_san:+$_san,}DNS:$_n"
	done
	if ! openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=$1" -days 1 \
	    -addext "subjectAltName=$_san" \
	    -keyout "$WORK/up.key" -out "$BOX/up.crt" >"$WORK/openssl.log" 2>&1; then
		echo "Bail out! openssl req: $(cat "$WORK/openssl.log")"
		exit 99
	fi
	UP=$(freeport)
	spawn tls openssl s_server -quiet -accept "127.0.0.1:$UP" -cert "$BOX/up.crt" \
	    -key "$WORK/up.key" -www
	wait_tcp "$UP" || { echo "Bail out! openssl s_server did not start: $(cat "$WORK/tls.err")"; exit 99; }
	: > "$WORK/zone"
	for _n in "$@"; do
		printf '%s A 127.0.0.1\n' "$_n" >> "$WORK/zone"
	done
	dns_start "$WORK/zone"
}
