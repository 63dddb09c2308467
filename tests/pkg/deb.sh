#!/bin/bash
# tests/pkg/deb.sh: the Debian packages, installed as an operator would, into a fresh Debian 12
# root. Builds egress_*.deb and libegress-dev_*.deb (make deb), unpacks a minimal bookworm
# root (debootstrap --variant=minbase, cached as a tarball), and then, in mount and pid
# namespaces of its own (so no mount, process or file of the host changes):
#   - apt-get install ./egress_*.deb ./libegress-dev_*.deb (dependencies from the mirror of
#     this machine's sources.list: the only step with the host's network);
#   - in a network namespace of its own too (only lo; the root is entered with pivot_root,
#     not chroot, because the kernel refuses user namespaces, which bubblewrap needs, to a
#     chrooted process): egressd started as the unit's ExecStart would (with the unit's
#     ProtectSystem=strict, ReadWritePaths, PrivateTmp, CapabilityBoundingSet and
#     NoNewPrivileges applied by hand), readiness by $NOTIFY_SOCKET (Type=notify), then, as
#     an unprivileged member of group egress (and a non-member, refused), egress-run --policy
#     NAME -- curl against a loopback upstream, allowed and denied; the receipts are in the
#     system file and egressctl receipts verify (key and public key) is green;
#   - reinstall (an upgrade's configure) keeps the keys and egressd.conf, remove keeps them
#     and the receipts, purge removes them.
# Trusts: the host's debootstrap, apt mirror and kernel. Runs as root; not part of make check
# (it builds packages and downloads from the mirror), run by .ci/run.
#
# Environment: EGRESS_PKG_CACHE (default /var/cache/egress-pkgtest: the root's tarball and
# apt's downloaded archives), EGRESS_PKG_DEBS (a folder with the .deb files already built:
# skips make deb), EGRESS_PKG_MIRROR (default: this machine's bookworm mirror).
set -euo pipefail

SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${EGRESS_PKG_CACHE:-/var/cache/egress-pkgtest}
TARBALL=$CACHE/bookworm-minbase.tar.gz
SUITE=bookworm

say() { printf '=== deb.sh: %s\n' "$*"; }
fail() { printf 'FAIL deb.sh: %s\n' "$*" >&2; exit 1; }
ok() { printf 'ok - %s\n' "$*"; }
# check DESCRIPTION COMMAND...: the command must succeed
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}

# --- inside the namespaces (this script run again by unshare) -------------------------------
# ns_mounts ROOT: the kernel file systems of ROOT, fresh (proc of the new pid namespace, a
# /dev of a few nodes bound from the host's, tmpfs /run and /tmp).
ns_mounts() {
	local r=$1 n
	mount --make-rprivate /
	mount -t proc proc "$r/proc"
	mount -t tmpfs -o mode=0755,nosuid tmpfs "$r/dev"
	for n in null zero full random urandom tty; do
		: > "$r/dev/$n"
		mount --bind "/dev/$n" "$r/dev/$n"
	done
	ln -s /proc/self/fd "$r/dev/fd"
	ln -s /proc/self/fd/0 "$r/dev/stdin"
	ln -s /proc/self/fd/1 "$r/dev/stdout"
	ln -s /proc/self/fd/2 "$r/dev/stderr"
	mkdir "$r/dev/pts" "$r/dev/shm"
	mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
	mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$r/run"
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/tmp"
}

if [ "${1:-}" = --stage-apt ]; then
	# Host network: only apt reaches the mirror.
	R=$2
	ns_mounts "$R"
	mkdir -p "$CACHE/archives/partial"
	mount --bind "$CACHE/archives" "$R/var/cache/apt/archives"
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	shift 2
	exec chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	    DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"
fi
if [ "${1:-}" = --stage-netns ]; then
	# Own network namespace: bring lo up with the host's ip, then make ROOT the root of this
	# mount namespace (pivot_root) and drop the host's file systems from it.
	R=$2
	shift 2
	ip link set lo up
	# ROOT a mount point of its own first (pivot_root needs one), its file systems on it.
	mount --make-rprivate /
	mount --bind "$R" "$R"
	ns_mounts "$R"
	mkdir -p "$R/.oldroot"
	cd "$R"
	pivot_root . .oldroot
	umount -l /.oldroot
	rmdir /.oldroot
	cd /
	exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
fi

# --- on the host ---------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || fail "runs as root (debootstrap, namespaces)"
for t in debootstrap unshare pivot_root ip dpkg-buildpackage lintian; do
	command -v "$t" >/dev/null || fail "needs $t (tools/deps --pkg)"
done
start=$(date +%s)

# The bookworm mirror and its security mirror of this machine's apt sources, so that the test
# downloads from where this machine does.
mirror() { # SUITE: the first URI that serves it, in one-line and deb822 sources
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v s="$1" '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
		    if ($(i + 1) == s) { print $i; exit } }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v s="$1" 'BEGIN { RS = "" } {
		    u = ""; ok = 0; n = split($0, l, "\n")
		    for (j = 1; j <= n; j++) {
		        if (l[j] ~ /^URIs:/) { split(l[j], w, /[ \t]+/); u = w[2] }
		        if (l[j] ~ /^Suites:/) { m = split(l[j], w, /[ \t]+/)
		            for (k = 2; k <= m; k++) if (w[k] == s) ok = 1 }
		        if (l[j] ~ /^Enabled: *no/) ok = 0 }
		    if (ok && u != "") { print u; exit } }' "$f"
	done
}
MIRROR=${EGRESS_PKG_MIRROR:-$(mirror $SUITE | head -n 1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECMIRROR=$(mirror $SUITE-security | head -n 1)
SECMIRROR=${SECMIRROR:-http://deb.debian.org/debian-security}
say "mirror $MIRROR, security $SECMIRROR, cache $CACHE"

WORK=$(mktemp -d /var/tmp/egress-pkg.XXXXXX)
R=$WORK/root
# Every mount lives in the namespaces, which end with their last process: nothing to
# unmount here. The check makes sure before the rm.
cleanup() {
	if grep -q " $WORK" /proc/self/mounts; then
		echo "deb.sh: mounts under $WORK left on the host" >&2
		return
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# 1. The packages.
if [ -n "${EGRESS_PKG_DEBS:-}" ]; then
	DEBS=$(cd "$EGRESS_PKG_DEBS" && pwd)
elif [ -f "$TOP/config.status" ]; then
	# A configured source tree (a developer's): its make deb (which packages a copy of
	# its distribution tree, never the build's objects).
	say "building the packages (make deb in $TOP)"
	nice -n 10 make -s -C "$TOP" deb > "$WORK/build.log" 2>&1 ||
	    { cat "$WORK/build.log"; fail "make deb"; }
	DEBS=$TOP/deb
else
	say "building the packages (make deb in $WORK/build)"
	mkdir "$WORK/build"
	(cd "$WORK/build" && "$TOP/configure" -q && nice -n 10 make -s deb) > "$WORK/build.log" 2>&1 ||
	    { cat "$WORK/build.log"; fail "make deb"; }
	DEBS=$WORK/build/deb
fi
ls "$DEBS"/egress_*.deb "$DEBS"/libegress-dev_*.deb >/dev/null || fail "no .deb files in $DEBS"
ok "packages built: $(cd "$DEBS" && echo egress_*.deb libegress-dev_*.deb)"
# lintian: errors fail the test; warnings and notes are printed.
lrc=0
lout=$(lintian --fail-on error "$DEBS"/egress_*.deb "$DEBS"/libegress-dev_*.deb 2>&1) || lrc=$?
printf '%s\n' "$lout" | grep -v '^running with root privileges' || true
[ "$lrc" = 0 ] || fail "lintian reports errors (above)"
ok "lintian: no errors"

# 2. A fresh minimal Debian 12 root: debootstrap once, then from the cached tarball.
mkdir -p "$CACHE"
if [ ! -s "$TARBALL" ]; then
	say "debootstrap $SUITE (once; cached as $TARBALL)"
	nice -n 10 debootstrap --variant=minbase $SUITE "$WORK/boot" "$MIRROR" \
	    > "$WORK/debootstrap.log" 2>&1 || { tail -n 40 "$WORK/debootstrap.log"; fail "debootstrap"; }
	tar -C "$WORK/boot" --numeric-owner -czf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
	rm -rf "${WORK:?}/boot"
fi
mkdir "$R"
tar -C "$R" --numeric-owner -xzf "$TARBALL"
printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
    "$MIRROR" $SUITE "$MIRROR" $SUITE "$SECMIRROR" $SUITE > "$R/etc/apt/sources.list"
mkdir "$R/pkgtest"
cp "$DEBS"/egress_*.deb "$DEBS"/libegress-dev_*.deb "$R/pkgtest/"
ok "fresh $SUITE root in $R"

# in_root CMD...: CMD in the root, own mount and pid namespaces, the host's network (apt)
in_root() { unshare --mount --pid --fork "$SELF" --stage-apt "$R" "$@"; }
# in_netns CMD...: CMD in the root, own mount, pid and network namespaces
in_netns() { unshare --mount --pid --net --fork "$SELF" --stage-netns "$R" "$@"; }

# 3. apt-get install, as the README says.
say "apt-get install ./egress_*.deb ./libegress-dev_*.deb"
in_root sh -c 'apt-get update -q && cd /pkgtest &&
    apt-get install -y -q ./egress_*.deb ./libegress-dev_*.deb curl' > "$WORK/apt.log" 2>&1 ||
    { tail -n 60 "$WORK/apt.log"; fail "apt-get install"; }
ok "apt-get install of both packages (postinst without a running systemd: a chroot)"

# What the package made: in the root's files, seen from here.
E=$R/etc/egress
check "the system user and group egress exist" \
    grep -q '^egress:x:[0-9]*:[0-9]*:' "$R/etc/passwd"
check "group egress exists" grep -q '^egress:x:' "$R/etc/group"
check "the user egress is a system user with no login shell" \
    sh -c "awk -F: '\$1 == \"egress\" && \$3 < 1000 && \$7 ~ /nologin|false/' '$R/etc/passwd' | grep -q ."
check "egressd.conf written on first install, with the lease socket for group egress" \
    grep -q '^lease .*/run/egress/lease.sock group egress$' "$E/egressd.conf"
for k in receipt.key receipt.ed25519; do
	check "$k made, mode 0600 root" test "$(stat -c '%a %u' "$E/$k")" = "600 0"
done
check "the checkpoint key's public half is there" grep -q 'BEGIN PUBLIC KEY' "$E/receipt.ed25519.pub"
check "/var/lib/egress exists" test -d "$R/var/lib/egress"
check "the unit is installed, with the packaged path" \
    grep -q '^ExecStart=/usr/bin/egressd -c /etc/egress/egressd.conf$' "$R/lib/systemd/system/egressd.service"
check "the unit is enabled (deb-systemd-helper, no running systemd needed)" \
    test -L "$R/etc/systemd/system/multi-user.target.wants/egressd.service"
check "libegress-dev: header, static library, pkg-config file, man page" sh -c "
    test -f '$R/usr/include/egress/egress.h' && ls '$R'/usr/lib/*/libegress.a >/dev/null &&
    ls '$R'/usr/lib/*/pkgconfig/egress.pc >/dev/null &&
    test -f '$R/usr/share/man/man3/egress_fd4_connect.3.gz'"

# 4. The system egressd in the root, a group member leasing from it. The inner script runs
# with only lo; it exits non-zero at the first failed step.
cat > "$R/pkgtest/inner.sh" <<'INNER'
#!/bin/sh
set -eu
fail() { echo "FAIL inner: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }
# until SECONDS CMD...: CMD polled every 0.1 s until it succeeds, at most SECONDS
until_ok() {
	n=$(($1 * 10)); shift
	while ! "$@" 2>/dev/null; do
		n=$((n - 1)); [ "$n" -gt 0 ] || return 1
		sleep 0.1
	done
}
# A loopback HTTP upstream (perl-base is in every Debian root): "hello" to every GET.
cat > /pkgtest/upstream.pl <<'PL'
use IO::Socket::INET;
my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 18080, Listen => 16,
    ReuseAddr => 1) or die "listen: $!";
open(my $r, '>', '/pkgtest/upstream.ready'); close($r);
while (my $c = $s->accept) {
	while (my $l = <$c>) { last if $l =~ /^\r?\n$/; }
	print $c "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
	close($c);
}
PL
perl /pkgtest/upstream.pl & UP=$!
until_ok 10 test -e /pkgtest/upstream.ready || fail "upstream did not start"

# A sealed policy in policy-dir, the name resolved by the hosts file, the loopback permitted.
printf 'allow ok.pkg.test 18080\npermit-range 127.0.0.0/8\n' > /pkgtest/build.policy
egress-policy seal /pkgtest/build.policy > /etc/egress/policies/build
printf '127.0.0.1 ok.pkg.test\n' > /etc/egress/hosts
printf 'hosts /etc/egress/hosts\nresolver 127.0.0.1:53\n' >> /etc/egress/egressd.conf
egressd -t -c /etc/egress/egressd.conf >/dev/null || fail "egressd -t refuses the packaged configuration"
ok "egressd -t accepts the packaged egressd.conf (plus a hosts line)"

# As the unit would: RuntimeDirectory=egress (0755), ExecStart, Type=notify.
install -d -m 0755 /run/egress
cat > /pkgtest/notify.pl <<'PL'
use IO::Socket::UNIX;
my $s = IO::Socket::UNIX->new(Type => SOCK_DGRAM, Local => '/run/notify.sock') or die "$!";
open(my $r, '>', '/run/notify.bound'); close($r);
$s->recv(my $m, 4096); open(my $o, '>', '/run/notify.msg'); print $o $m; close($o);
PL
perl /pkgtest/notify.pl & NP=$!
until_ok 10 test -e /run/notify.bound || fail "notify listener"
# The unit's confinement that matters to egressd, applied without systemd in a mount
# namespace of egressd's own: ProtectSystem=strict (/ and /run read-only but for the
# ReadWritePaths), PrivateTmp, CapabilityBoundingSet and NoNewPrivileges (setpriv).
UNIT=/lib/systemd/system/egressd.service
uval() { sed -n "s/^$1=//p" $UNIT; }
[ "$(uval ProtectSystem)" = strict ] && [ "$(uval NoNewPrivileges)" = yes ] &&
    [ "$(uval Type)" = notify ] || fail "the unit lost ProtectSystem=strict, NoNewPrivileges or Type=notify"
caps=$(uval CapabilityBoundingSet | tr "[:upper:]" "[:lower:]" | sed 's/cap_/+/g; s/ /,/g')
cat > /pkgtest/unitexec.sh <<UNITEXEC
set -e
for d in $(uval ReadWritePaths); do mount --bind "\$d" "\$d"; done
mount -o remount,bind,ro /
mount -o remount,bind,ro /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
exec setpriv --bounding-set -all,$caps --no-new-privs -- $(uval ExecStart)
UNITEXEC
NOTIFY_SOCKET=/run/notify.sock unshare --mount sh /pkgtest/unitexec.sh 2> /pkgtest/egressd.log & D=$!
until_ok 20 grep -q READY=1 /run/notify.msg || { cat /pkgtest/egressd.log; fail "no READY=1 on NOTIFY_SOCKET"; }
ok "egressd (the unit's ExecStart, read-only / and /run, its bounding set) sent READY=1 to \$NOTIFY_SOCKET"
# CHOWN DAC_OVERRIDE FOWNER KILL SETGID SETUID: bits 0 1 3 5 6 7
grep -q '^CapBnd:	00000000000000eb$' /proc/$D/status && grep -q '^NoNewPrivs:	1$' /proc/$D/status ||
    { grep -E '^(Name|CapBnd|NoNewPrivs)' /proc/$D/status; fail "egressd is not under the unit's bounding set and no_new_privs"; }
ok "egressd's monitor: the unit's six capabilities in its bounding set, no_new_privs"
test -S /run/egress/lease.sock || fail "no lease socket after READY=1"
[ "$(stat -c '%a %G' /run/egress/lease.sock)" = "660 egress" ] ||
    fail "lease socket: $(stat -c '%a %G' /run/egress/lease.sock), want 660 egress"
ok "the lease socket is 0660, group egress"
# (no procps in a minimal root: the engine by its name, PR_SET_NAME, in /proc)
eng=
for p in /proc/[0-9]*; do
	[ "$(cat "$p/comm" 2>/dev/null)" = egressd-engine ] && eng=$p
done
[ -n "$eng" ] && [ "$(stat -c %U "$eng")" = egress ] || fail "the engine does not run as user egress"
ok "the engine runs as user egress"

# An unprivileged user, member of group egress.
useradd -m -s /bin/sh -G egress alice
useradd -m -s /bin/sh bob
asuser() { u=$1; shift; cd "/home/$u" && setpriv --reuid "$u" --regid "$u" --init-groups \
    env -i PATH=/usr/bin:/bin HOME="/home/$u" LANG=C.UTF-8 "$@"; }
out=$(asuser alice egress-run --policy build -- curl -sS --max-time 10 http://ok.pkg.test:18080/ 2>/pkgtest/run1.err) ||
    { cat /pkgtest/run1.err; fail "egress-run --policy build (allowed)"; }
[ "$out" = hello ] || { cat /pkgtest/run1.err; fail "allowed fetch said '$out'"; }
ok "a member of egress: egress-run --policy build -- curl, allowed: the upstream answered"
grep -q 'principal lease-' /pkgtest/run1.err || { cat /pkgtest/run1.err; fail "no lease principal in the summary"; }
code=$(asuser alice egress-run --policy build -- curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
    http://denied.pkg.test:18080/ 2>/pkgtest/run2.err) || true
grep -q 'denied.pkg.test:18080.*not-allowlisted' /pkgtest/run2.err ||
    { cat /pkgtest/run2.err; fail "denied fetch: no not-allowlisted in the summary (code $code)"; }
[ "$code" = 403 ] || fail "denied fetch: HTTP $code, want 403"
ok "a member of egress: a destination the policy lacks is refused (403, not-allowlisted)"
rc=0
asuser bob egress-run --policy build -- true 2>/pkgtest/run3.err || rc=$?
[ "$rc" = 125 ] && grep -q 'lease.sock (Permission denied)' /pkgtest/run3.err ||
    { cat /pkgtest/run3.err; fail "a non-member: rc $rc, want 125 and EACCES on the lease socket"; }
ok "a user outside group egress gets no lease (125)"

# Receipts in the system file, the chain and MACs and signatures good.
R=/var/lib/egress/receipts.jsonl
until_ok 10 grep -q '"event":"close".*"host":"ok.pkg.test".*"reason":"allowed"' $R ||
    fail "no close receipt of the allowed fetch in $R"
grep -q '"event":"deny".*"host":"denied.pkg.test".*"reason":"not-allowlisted"' $R ||
    fail "no deny receipt in $R"
ok "the receipts of both runs are in $R"
egressctl receipts --principal "$(sed -n 's/.*(principal \(lease-[^)]*\)).*/\1/p' /pkgtest/run1.err | head -n 1)" |
    grep -q ok.pkg.test || fail "egressctl receipts --principal finds no record of the lease"
ok "egressctl receipts --principal finds the lease's records"
kill -TERM "$D"; wait "$D" || fail "egressd exited $? on SIGTERM"
egressctl receipts verify --key /etc/egress/receipt.key --pubkey /etc/egress/receipt.ed25519.pub \
    --complete --file $R || fail "egressctl receipts verify"
ok "egressctl receipts verify --key --pubkey --complete: green"
kill "$UP" "$NP" 2>/dev/null || true
INNER
chmod 755 "$R/pkgtest/inner.sh"
say "egressd in the root, own network namespace"
in_netns /pkgtest/inner.sh || fail "the system egressd in the root (above)"

# 5. Reinstall (what an upgrade's configure does), remove, purge. egressd.conf now carries
# the lines the test added (an operator's edit): kept too.
sums=$(cd "$E" && sha256sum egressd.conf receipt.key receipt.ed25519)
grep -q '^hosts ' "$E/egressd.conf" || fail "the test's edit of egressd.conf is not there"
in_root sh -c 'cd /pkgtest && dpkg -i ./egress_*.deb' > "$WORK/reinstall.log" 2>&1 ||
    { cat "$WORK/reinstall.log"; fail "dpkg -i over the installed package"; }
check "reinstall: egressd.conf and the keys are untouched" \
    test "$(cd "$E" && sha256sum egressd.conf receipt.key receipt.ed25519)" = "$sums"
# A checkpoint key deleted with its public half left: configure keeps that half aside and
# makes a new pair (keygen never overwrites: configure failed on every run until then).
pub=$(sha256sum < "$E/receipt.ed25519.pub")
rm "$E/receipt.ed25519"
in_root sh -c 'cd /pkgtest && dpkg -i ./egress_*.deb' > "$WORK/reinstall2.log" 2>&1 ||
    { cat "$WORK/reinstall2.log"; fail "dpkg -i with only the public checkpoint key left"; }
check "a lone public checkpoint key: a new key pair is made" \
    sh -c "test -s '$E/receipt.ed25519' && grep -q 'BEGIN PUBLIC KEY' '$E/receipt.ed25519.pub'"
check "a lone public checkpoint key: the old one is kept aside" \
    sh -c "cat '$E'/receipt.ed25519.pub.orphaned-* | sha256sum | grep -q '${pub%% *}'"
sums=$(cd "$E" && sha256sum egressd.conf receipt.key receipt.ed25519)
rsum=$(sha256sum < "$R/var/lib/egress/receipts.jsonl")
in_root apt-get remove -y -q egress > "$WORK/remove.log" 2>&1 ||
    { cat "$WORK/remove.log"; fail "apt-get remove egress"; }
check "remove: the programs are gone" test ! -e "$R/usr/bin/egressd"
check "remove: egressd.conf and the keys are kept" \
    test "$(cd "$E" && sha256sum egressd.conf receipt.key receipt.ed25519)" = "$sums"
check "remove: the receipts are kept" \
    test "$(sha256sum < "$R/var/lib/egress/receipts.jsonl")" = "$rsum"
in_root apt-get purge -y -q egress > "$WORK/purge.log" 2>&1 ||
    { cat "$WORK/purge.log"; fail "apt-get purge egress"; }
check "purge: egressd.conf and the keys are removed" \
    sh -c "! ls '$E'/egressd.conf '$E'/receipt.key '$E'/receipt.ed25519 '$E'/receipt.ed25519.pub '$E'/receipt.ed25519.pub.orphaned-* 2>/dev/null"
check "purge: the receipts are removed" test ! -e "$R/var/lib/egress"
check "purge: the unit's enablement is gone" \
    test ! -L "$R/etc/systemd/system/multi-user.target.wants/egressd.service"
check "purge: nothing of the host was mounted" sh -c "! grep -q ' $WORK' /proc/self/mounts"
say "passed in $(( $(date +%s) - start )) s"
