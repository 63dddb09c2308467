#!/bin/sh
# dist/egressd.service: every line is a comment, a [Section] or Key=Value, the keys that
# egressd's readiness and reload depend on are there, and, where systemd-analyze exists,
# systemd itself accepts the unit with ExecStart pointing at the egressd just built.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
UNIT=$top_srcdir/dist/egressd.service
cd "$WORK" || exit 1

bad=$(grep -nvE '^(#.*|;.*|\[[A-Za-z]+\]|[A-Z][A-Za-z0-9]*=.*|[[:space:]]*)$' "$UNIT")
expect_eq "every line is a comment, a [Section] or Key=Value" "" "$bad"
expect_eq "the sections are Unit, Service, Install, in order" "[Unit] [Service] [Install] " \
    "$(grep -E '^\[' "$UNIT" | tr '\n' ' ')"
# value KEY: the values of KEY in [Service]
value() { sed -n '/^\[Service\]/,/^\[/p' "$UNIT" | sed -n "s/^$1=//p"; }
expect_eq "Type=notify (egressd sends READY=1)" notify "$(value Type)"
expect_match "ExecStart runs egressd with its configuration" '^/[^ ]*/egressd -c /' \
    "$(value ExecStart)"
expect_eq "ExecReload sends SIGHUP" '/bin/kill -HUP $MAINPID' "$(value ExecReload)"
expect_eq "RuntimeDirectory=egress" egress "$(value RuntimeDirectory)"
expect_eq "StateDirectory=egress" egress "$(value StateDirectory)"
expect_eq "the sockets and receipts stay writable under ProtectSystem=strict" \
    "strict|/var/lib/egress /run/egress" "$(value ProtectSystem)|$(value ReadWritePaths)"
# The bounding set is exactly what egressd's monitor keeps (egress/priv.c, priv_caps): one
# more would be a capability no code uses, one less a monitor that fails (the package
# installs this unit).
keep=$(sed -n '/^priv_caps(void)/,/};/p' "$top_srcdir/egress/priv.c" | tr -c 'A-Z_\n' ' ' |
    grep -o 'CAP_[A-Z_]*' | sort | tr '\n' ' ')
expect_match "egress/priv.c's list of kept capabilities is found" '^CAP_' "$keep"
expect_eq "CapabilityBoundingSet is the monitor's list (egress/priv.c)" "$keep" \
    "$(value CapabilityBoundingSet | tr ' ' '\n' | sort | tr '\n' ' ')"
expect_eq "NoNewPrivileges=yes" yes "$(value NoNewPrivileges)"
expect_eq "no key is given twice in [Service]" "" \
    "$(sed -n '/^\[Service\]/,/^\[/p' "$UNIT" | sed -n 's/^\([A-Za-z]*\)=.*/\1/p' | sort | uniq -d)"

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "ok - systemd-analyze verify # SKIP systemd-analyze is not installed"
	finish || exit 1
	exit 77
fi
EGRESSD=$(cd "$top_builddir" && pwd)/egressd
if [ ! -x "$EGRESSD" ]; then
	echo "ok - systemd-analyze verify # SKIP egressd is not built"
	finish || exit 1
	exit 77
fi
sed "s|^ExecStart=[^ ]*|ExecStart=$EGRESSD|" "$UNIT" > egressd.service
# --man=no: the man pages need not be installed where the tests run.
out=$(systemd-analyze verify --man=no "$WORK/egressd.service" 2>&1)
expect_eq "systemd-analyze verify accepts the unit" "rc=0 " "rc=$? $out"
finish
