#!/bin/sh
# The sandbox end to end, from the inside: every way out that the workload of egress-run
# might try must fail, each asserted (python3 as the driver, sandbox_helper.py escape):
# a direct TCP connect to the host's loopback (the upstream, the DNS server: ECONNREFUSED,
# the sandbox's lo is its own); to any other IPv4 address it is carried to egressd as a
# transparent connection and refused there (reset, a deny receipt each); IPv6 outside lo
# is unrouted (ENETUNREACH); a DNS question over UDP to the host's resolver (no answer:
# names are resolved by egressd only); socket() for AF_UNIX (so no
# connect to /run/egress.sock), AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG, AF_XDP, unknown
# families and AF_UNIX with the upper half of the argument set (EAFNOSUPPORT); a raw
# socket (EPERM: no capability); io_uring (EPERM); unshare, clone with namespace flags,
# setns (EPERM), clone3 (ENOSYS); ptrace, process_vm_readv, pidfd_getfd on the relay
# (EPERM), its memory (EACCES: not dumpable); TIOCSTI, also with high bits (EPERM); mount
# (EPERM); an egress-relay the workload starts itself gets no AF_UNIX socket (the filter
# is inherited); an x32 system call and an i386 int $0x80 kill the process (128+SIGSYS).
# Also: every capability set is empty, NoNewPrivs 1, Seccomp 2 (the relay too runs under a
# filter, with NoNewPrivs); the environment holds only what the SPEC lists (and PWD, which
# bwrap sets to the current directory) and no secret of egress-run's caller (nor does any
# argv in the sandbox); only descriptors 0, 1, 2 and 4 reach the workload, also when egress-run's
# caller leaks more (a directory at 5, 9, 1023, 1024, 1500), and such a directory does not
# open the host's files to the workload.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
printf 'ok.e2e.test A 127.0.0.1\n' > zone
dns_start zone
A="--allow ok.e2e.test:$ECHO --resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="$A --receipts $WORK/receipts.jsonl"

# --- the probes -------------------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A -- "$SBX_PY" sandbox_helper.py escape --upstream-port "$ECHO" --dns-port "$DNS_PORT" \
    --host ok.e2e.test --port "$ECHO"
expect_eq "escape probes ran to the end" 0 "$rc"
[ "$rc" = 0 ] || printf '%s\n' "$err" | sed 's/^/# /'
printf '%s\n' "$out" > probes.txt
probe() {
	_got=$(awk -v k="$1" '$1 == k { print $2 }' probes.txt)
	expect_eq "$2 ($1)" "$3" "${_got:-missing}"
}
probe tcp-host-loopback "TCP to the host's loopback (the upstream) is refused: another lo" ECONNREFUSED
probe tcp-host-dns "TCP to the host's DNS server is refused" ECONNREFUSED
probe tcp6-host-loopback "TCP to the host's ::1 is refused" ECONNREFUSED
probe tcp-192.0.2.1 "TCP to 192.0.2.1: carried to egressd, refused (reset)" ECONNRESET
probe tcp-10.255.255.1 "TCP to 10.255.255.1: carried to egressd, refused (reset)" ECONNRESET
probe tcp6-2001:db8::1 "TCP to 2001:db8::1: no route (IPv6 is not carried)" ENETUNREACH
probe udp-host-dns "a DNS question over UDP to the host's resolver gets no answer" noanswer
probe af-unix-stream "socket(AF_UNIX, SOCK_STREAM)" EAFNOSUPPORT
probe af-unix-dgram "socket(AF_UNIX, SOCK_DGRAM)" EAFNOSUPPORT
probe af-unix-seqpacket "socket(AF_UNIX, SOCK_SEQPACKET)" EAFNOSUPPORT
probe af-unix-highbits "socket(AF_UNIX | 1 << 32) (the kernel reads an int)" EAFNOSUPPORT
probe connect-egress-sock "connect to /run/egress.sock: no AF_UNIX socket to do it with" \
    socket-EAFNOSUPPORT
probe egress-sock-present "the principal socket is there all the same" yes
probe af-netlink "socket(AF_NETLINK)" EAFNOSUPPORT
probe af-packet "socket(AF_PACKET)" EAFNOSUPPORT
probe af-vsock "socket(AF_VSOCK)" EAFNOSUPPORT
probe af-alg "socket(AF_ALG)" EAFNOSUPPORT
probe af-xdp "socket(AF_XDP)" EAFNOSUPPORT
probe af-family-100 "socket(100): an unknown family" EAFNOSUPPORT
probe socketpair-unix "socketpair(AF_UNIX) stays allowed" ok
probe socketpair-inet "socketpair(AF_INET)" EAFNOSUPPORT
probe raw-inet "a raw IPv4 socket: no CAP_NET_RAW" EPERM
probe io_uring_setup "io_uring_setup" EPERM
probe io_uring_enter "io_uring_enter" EPERM
probe io_uring_register "io_uring_register" EPERM
probe unshare-newuser "unshare(CLONE_NEWUSER)" EPERM
probe unshare-newnet "unshare(CLONE_NEWNET)" EPERM
probe unshare-newns "unshare(CLONE_NEWNS)" EPERM
probe clone-newuser "clone(CLONE_NEWUSER)" EPERM
probe clone-newnet "clone(CLONE_NEWNET)" EPERM
probe clone-newpid "clone(CLONE_NEWPID)" EPERM
probe clone3-newuser "clone3 (flags unreadable by the filter)" ENOSYS
probe setns "setns into pid 1's network namespace" EPERM
probe relay-found "the relay runs next to the workload" yes
probe ptrace-traceme "ptrace(PTRACE_TRACEME)" EPERM
probe ptrace-attach-relay "ptrace(PTRACE_ATTACH) on the relay" EPERM
probe process_vm_readv "process_vm_readv on the relay" EPERM
probe pidfd_getfd "pidfd_getfd on the relay" EPERM
probe relay-mem "the relay's memory (/proc/PID/mem): not dumpable" EACCES
probe relay-environ "the relay's environment (/proc/PID/environ)" EACCES
probe ioctl-tiocsti "ioctl(TIOCSTI)" EPERM
probe ioctl-tiocsti-highbits "ioctl(TIOCSTI | 1 << 32)" EPERM
probe mount-tmpfs "mount(tmpfs): no capability" EPERM
probe fork "fork still works" exit7
probe spawn "posix_spawn still works (clone3 falls back to clone)" exit5
probe own-relay-socks "the sandbox's relay reaches egressd (SOCKS5 reply 00)" 00
probe second-relay-socks "an egress-relay the workload starts itself reaches nothing" greeting=closed
expect_eq "the probes left no tunnel but the relay's own" \
    1 "$(py rcpt "$WORK/receipts.jsonl" --where event=open --count)"
for a in 192.0.2.1 10.255.255.1; do
	expect_eq "... and a deny receipt for the attempt to $a (transparent, not-allowlisted)" \
	    "transparent 443 not-allowlisted" "$(py rcpt "$WORK/receipts.jsonl" --where event=deny \
	    --where host=$a --fields frontend,port,reason)"
done
expect_clean "escape probes"

# --- other ABIs --------------------------------------------------------------------------------
if [ "$(uname -m)" = x86_64 ]; then
	# shellcheck disable=SC2086
	erun $A -- "$SBX_PY" sandbox_helper.py x32
	expect_eq "an x32 system call kills the workload (128 + SIGSYS)" 159 "$rc"
	expect_eq "... before it could say anything" "" "$out"
	ABI32=$top_builddir/tests/tools/abi32
	if [ ! -x "$ABI32" ]; then
		# Not wired into the build yet: compile it here when a compiler is at hand.
		ABI32=$WORK/abi32
		${CC:-cc} -o "$ABI32" "$top_srcdir/tests/tools/abi32.c" 2>/dev/null || ABI32=
	fi
	host32=$([ -n "$ABI32" ] && "$ABI32" 2>/dev/null)
	case $host32 in
	"pid "*)
		cp "$ABI32" "$BOX/abi32"
		# shellcheck disable=SC2086
		erun $A -- ./abi32
		expect_eq "an i386 system call (int \$0x80) kills the workload (128 + SIGSYS)" 159 "$rc"
		expect_eq "... before it could say anything" "" "$out"
		;;
	*)
		skip "an i386 system call kills the workload" \
		    "no i386 emulation on this kernel, or no abi32 (${host32:-not built})"
		;;
	esac
else
	skip "an x32 system call kills the workload" "not x86-64"
	skip "an i386 system call kills the workload" "not x86-64"
fi

# --- capabilities, no_new_privs, seccomp --------------------------------------------------------
# shellcheck disable=SC2086
erun $A -- "$SBX_PY" sandbox_helper.py status
expect_eq "the workload holds no capability, has NoNewPrivs and a seccomp filter" \
    "CapInh=0000000000000000 CapPrm=0000000000000000 CapEff=0000000000000000 CapBnd=0000000000000000 CapAmb=0000000000000000 NoNewPrivs=1 Seccomp=2" \
    "$out"
# The relay (started before the workload's filter) runs under a filter of its own.
# shellcheck disable=SC2016,SC2086
erun $A -- sh -c 'for p in /proc/[0-9]*; do
	case $(tr "\0" " " < $p/cmdline) in */egress-relay\ *) '"$SBX_PY"' sandbox_helper.py status ${p#/proc/};; esac
done'
expect_match "the relay has NoNewPrivs and a seccomp filter" "NoNewPrivs=1 Seccomp=2$" "$out"
echo "# the relay's capability sets inside the sandbox: $out"

# --- environment and argv -----------------------------------------------------------------------
# shellcheck disable=SC2086
erun $A -- env
# bwrap --chdir sets PWD (the current directory, bound as such): accepted, checked below.
names=$(printf '%s\n' "$out" | sed 's/=.*//' | grep -vx PWD | sort | tr '\n' ' ')
# PATH and HOME always (egress-run's own), TERM and LANG when the caller has them.
want="PATH HOME"
for v in TERM LANG; do
	eval "[ -n \"\${$v+x}\" ]" && want="$want $v"
done
want="$want HTTP_PROXY HTTPS_PROXY http_proxy https_proxy NO_PROXY no_proxy"
want="$want npm_config_proxy npm_config_https_proxy NODE_USE_ENV_PROXY JAVA_TOOL_OPTIONS"
want="$want EGRESS_RELAY EGRESS_FD"
# shellcheck disable=SC2086
want=$(printf '%s\n' $want | sort | tr '\n' ' ')
expect_eq "the environment holds exactly PATH HOME TERM LANG and the proxy variables" "$want" "$names"
envval() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
expect_eq "HTTPS_PROXY names the relay" "http://127.0.0.1:3128" "$(envval HTTPS_PROXY)"
expect_eq "ALL_PROXY is not set (transparent connections: no client needs SOCKS)" "" \
    "$(envval ALL_PROXY)$(envval all_proxy)"
expect_eq "NO_PROXY" "localhost,127.0.0.1,::1" "$(envval NO_PROXY)"
pwd_in=$(envval PWD)
expect_eq "PWD, if set, is only the current directory" "$BOX" "${pwd_in:-$BOX}"
expect_eq "EGRESS_RELAY" "127.0.0.1:3128" "$(envval EGRESS_RELAY)"
expect_eq "NODE_USE_ENV_PROXY" "1" "$(envval NODE_USE_ENV_PROXY)"
expect_match "JAVA_TOOL_OPTIONS sets the proxy properties" \
    "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128" "$(envval JAVA_TOOL_OPTIONS)"
expect_eq "GIT_SSH_COMMAND is not set (plain ssh connects transparently; fd4.sh: --no-dns)" "" \
    "$(envval GIT_SSH_COMMAND)"
expect_eq "EGRESS_FD names descriptor 4, the broker's channel" "4" "$(envval EGRESS_FD)"
case $out in
*"$SECRET"*) not_ok "no secret of egress-run's caller in the environment" ;;
*) ok "no secret of egress-run's caller in the environment" ;;
esac
# Every argv and the workload's environment, as the sandbox sees them.
# shellcheck disable=SC2086
erun $A -- sh -c 'cat /proc/[0-9]*/cmdline /proc/self/environ 2>/dev/null | tr "\0" "\n"'
expect_match "the sandbox's argv and environment were read" "egress-relay" "$out"
case $out in
*"$SECRET"*) not_ok "no secret in any argv or environment inside the sandbox" ;;
*) ok "no secret in any argv or environment inside the sandbox" ;;
esac

# --- descriptors --------------------------------------------------------------------------------
# ls itself holds one more: the /proc/N/fd directory it reads.
fdset() {
	printf '%s\n' "$1" | awk '$NF ~ /^\/proc\/[0-9]+\/fd$/ { next } / -> / { print $(NF - 2) }' |
	    sort -n | tr '\n' ' '
}
# shellcheck disable=SC2086
erun $A -- ls -l /proc/self/fd
expect_eq "only descriptors 0, 1, 2 and 4 (the broker's channel) reach the workload" "0 1 2 4 " \
    "$(fdset "$out")"
mkdir outside
echo "$SECRET" > outside/secret.txt
# egress-run's caller leaks a directory of the host at 5, 9, 1023, 1024 and 1500.
(
	ulimit -n 4096
	cd "$BOX" && sh_py leakfds --dir "$WORK/outside" --fd 5 --fd 9 --fd 1023 --fd 1024 --fd 1500 \
	    -- "$ERUN" $A -- ls -l /proc/self/fd </dev/null >"$WORK/leak.out" 2>"$WORK/leak.err"
)
expect_eq "descriptors leaked by egress-run's caller (5 9 1023 1024 1500) stay out" "0 1 2 4 " \
    "$(fdset "$(cat leak.out)")"
# shellcheck disable=SC2016
(
	ulimit -n 4096
	cd "$BOX" && sh_py leakfds --dir "$WORK/outside" --fd 5 --fd 9 --fd 1023 --fd 1024 --fd 1500 \
	    -- "$ERUN" $A -- sh -c 'for n in 5 9 1023 1024 1500; do
		cat /proc/self/fd/$n/secret.txt 2>/dev/null && echo "read through $n"; done
		test -e '"$WORK/outside"' && echo "outside is visible"; true' \
	    </dev/null >"$WORK/leak.out" 2>"$WORK/leak.err"
)
expect_eq "a leaked directory does not open the host's files to the workload" "" "$(cat leak.out)"
expect_clean "descriptors"

finish
