#!/bin/sh
# egress-run run as root never hands root's identity to the workload (SPEC "egress-run for
# real work"): inside, /etc/shadow and root-only 0600 files (in /etc, in a --ro path, in a
# read-only current directory) are unreadable, the workload's uid as the host sees it
# (/proc/PID/status of the workload, and its uid_map) is not 0, and it cannot chmod or
# chown a root file outside its read-write binds. What it creates in the read-write current
# directory and in a --rw path is root's on the host (the invoker's), and it can still
# modify what root left there. --user USER runs it as USER instead (files it creates are
# USER's). curl through the proxy still reaches the allowed upstream, so the principal
# socket is reachable to the unprivileged uid. A file system that cannot idmap a
# read-write bind fails closed (125, naming --user).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: egress-run must run as root for this test"
	exit 77
fi

https_upstream ok.e2e.test
A="--allow ok.e2e.test:$UP --resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
A="$A --receipts $WORK/r.jsonl"

# Root-only files: one in the read-write current directory (the workload holds the
# invoker's ownership there, see egress-run(1)), one in a --ro path, one in a read-only
# current directory, and /etc/shadow.
RO=$WORK/ro
mkdir -p "$RO" "$WORK/rw" "$WORK/rocwd"
chmod 755 "$RO" "$WORK/rw" "$WORK/rocwd" "$BOX"
echo ro-secret > "$RO/secret" && chmod 600 "$RO/secret"
echo cwd-secret > "$WORK/rocwd/secret" && chmod 600 "$WORK/rocwd/secret"
echo mine > "$BOX/old" && chmod 600 "$BOX/old"
echo etc-secret > "$RO/key" && chmod 600 "$RO/key"

# shellcheck disable=SC2086
erun $A --ro "$RO" --quiet -- sh -c 'cat /etc/shadow >/dev/null 2>&1 && echo shadow-read;
    cat "$1/secret" >/dev/null 2>&1 && echo ro-read; echo done' sh "$RO"
expect_eq "root run: /etc/shadow and a root 0600 file in a --ro path are unreadable" \
    "0 done" "$rc $(words "$out")"

(cd "$WORK/rocwd" && "$ERUN" $A --ro . --quiet -- sh -c 'cat secret 2>&1 >/dev/null |
    sed "s/.*Permission denied.*/denied/"' </dev/null >"$WORK/rocwd.out" 2>&1)
expect_eq "root run, --ro .: a root 0600 file in the current directory is unreadable" \
    "denied" "$(cat "$WORK/rocwd.out")"

# The workload's uid, gid and groups as the host sees them (/proc/PID/status).
# shellcheck disable=SC2086
spawn_run host $A --quiet -- sh -c 'touch started; while [ ! -e stop ]; do sleep 0.05; done'
wait_for -e "$BOX/started" || not_ok "the workload started"
WPID=$(tree_pid "$SPAWNED" 3 sh)
IDS=$(awk '/^(Uid|Gid|Groups):/ { $1 = ""; printf "%s;", $0 }' "/proc/$WPID/status" 2>/dev/null)
touch "$BOX/stop"
wait "$SPAWNED"
expect_eq "root run: the workload holds 65534 (nobody) on the host, no root group" \
    " 65534 65534 65534 65534; 65534 65534 65534 65534;;" "$IDS"
rm -f "$BOX/started" "$BOX/stop"

# Writes: the current directory and a --rw path stay writable; what is created there is
# root's on the host; an existing root file there can be changed.
# shellcheck disable=SC2086
erun $A --rw "$WORK/rw" --quiet -- sh -c 'echo new > created && mkdir cdir &&
    echo new > "$1/created" && echo more >> old && echo written' sh "$WORK/rw"
expect_eq "root run: the current directory and --rw are writable" "0 written" "$rc $out"
expect_eq "root run: files created in the current directory are root's on the host" \
    "0:0 0:0" "$(stat -c %u:%g "$BOX/created") $(stat -c %u:%g "$BOX/cdir")"
expect_eq "root run: files created in a --rw path are root's on the host" "0:0" \
    "$(stat -c %u:%g "$WORK/rw/created")"
expect_eq "root run: a root file in the current directory was appended to, still root's" \
    "mine more 0:0 600" "$(words "$(cat "$BOX/old")") $(stat -c '%u:%g %a' "$BOX/old")"

# No chmod or chown to root's files outside the read-write binds.
# shellcheck disable=SC2086
erun $A --ro "$RO" --quiet -- sh -c 'chmod 644 "$1/key" 2>/dev/null && echo chmod;
    chown 0:0 /etc/hostname 2>/dev/null && echo chown;
    chmod 777 /etc/shadow 2>/dev/null && echo chmod-shadow; echo done' sh "$RO"
expect_eq "root run: no chmod/chown of root's files" "0 done 600" \
    "$rc $(words "$out") $(stat -c %a "$RO/key")"

# What a root run writes is root's on the host: it must never be setuid or setgid, or any
# local user could run it as root. Every way to set the bits on a new or an existing file
# (chmod, fchmod, fchmodat, open/creat with the bits, mknod, mkdir, install -m) fails, in
# the current directory and in a --rw path; nothing on the host carries either bit.
# shellcheck disable=SC2086,SC2016
erun $A --rw "$WORK/rw" --quiet -- sh -c 'cd "$1"; for d in . "$2"; do
	cp /bin/sh "$d/s1" && chmod 6755 "$d/s1" 2>/dev/null && echo chmod-setuid;
	chmod g+s "$d/s1" 2>/dev/null && echo chmod-setgid;
	install -m 4755 /bin/sh "$d/s2" 2>/dev/null && echo install-setuid;
	mkdir -m 2755 "$d/sd" 2>/dev/null && echo mkdir-setgid;
	/usr/bin/python3 -c "import os, sys
d = sys.argv[1]
tries = [lambda: os.close(os.open(d + \"/s3\", os.O_CREAT | os.O_WRONLY, 0o4755)),
    lambda: os.mknod(d + \"/s4\", 0o100000 | 0o4755),
    lambda: os.chmod(d + \"/s1\", 0o4755, follow_symlinks=True),
    lambda: os.fchmod(os.open(d + \"/s1\", os.O_RDONLY), 0o2755)]
for i, t in enumerate(tries):
    try:
        t()
        print(\"py-setid-%d\" % i)
    except OSError:
        pass" "$d"; done; echo done' sh "$BOX" "$WORK/rw"
expect_eq "root run: no setuid/setgid bit can be set (chmod, install, open, mknod, mkdir)" \
    "0 done" "$rc $(words "$out")"
expect_eq "root run: no setuid or setgid file or folder reached the host" "" \
    "$(find "$BOX" "$WORK/rw" -perm /6000 2>/dev/null)"
rm -rf "$BOX"/s1 "$BOX"/s2 "$BOX"/s3 "$BOX"/s4 "$BOX"/sd "$WORK"/rw/s*

# The proxy still works: the principal socket is reachable to the unprivileged uid.
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}"
# shellcheck disable=SC2086
erun $A --quiet -- $CURL "https://ok.e2e.test:$UP/"
expect_eq "root run: curl through the proxy reaches the allowed upstream" "0 200" "$rc $out"

# --user USER: the workload runs as USER; what it creates in a folder USER owns is USER's.
if id nobody >/dev/null 2>&1; then
	NBD=$WORK/nbd
	mkdir "$NBD" && chown nobody "$NBD" && cp "$BOX/up.crt" "$NBD/"
	# shellcheck disable=SC2086
	(cd "$NBD" && "$ERUN" $A --user nobody --quiet -- sh -c 'touch f; cat /etc/shadow \
	    >/dev/null 2>&1 && echo shadow-read; '"$CURL"' "$1"' sh "https://ok.e2e.test:$UP/" \
	    </dev/null >"$WORK/user.out" 2>"$WORK/user.err")
	expect_eq "--user nobody: runs, cannot read /etc/shadow, reaches the upstream" "0 200" \
	    "$? $(cat "$WORK/user.out")"
	expect_eq "--user nobody: its files are nobody's" "$(id -u nobody)" \
	    "$(stat -c %u "$NBD/f" 2>/dev/null)"
	erun --user no-such-user-here $A -- true
	expect_eq "--user with an unknown user: 125" 125 "$rc"
	# A user whose primary group is root's (gid 0): refused, in a mount namespace of the
	# test's own where /etc/passwd has such a user.
	cp /etc/passwd "$WORK/passwd"
	echo 'egress-gid0:x:64999:0::/nonexistent:/usr/sbin/nologin' >> "$WORK/passwd"
	# shellcheck disable=SC2086
	(cd "$BOX" && unshare -m sh -c 'mount --bind "$1" /etc/passwd && shift && exec "$@"' \
	    sh "$WORK/passwd" "$ERUN" --user egress-gid0 $A -- touch gid0-ran \
	    </dev/null >"$WORK/gid0.out" 2>&1)
	expect_eq "--user with primary group 0: 125, said, nothing ran" "125 1 no" \
	    "$? $(grep -c 'primary group is root' "$WORK/gid0.out") $([ -e "$BOX/gid0-ran" ] && echo ran || echo no)"
else
	skip "--user" "no user nobody"
fi
# A file system without idmapped mounts (ramfs) as the read-write current directory:
# refused, 125, one line naming --user; nothing of the workload ran.
mkdir "$WORK/ramfs"
# shellcheck disable=SC2086
unshare -m sh -c 'mount --make-rprivate / && mount -t ramfs none "$1" && cd "$1" && shift &&
    exec "$@"' sh "$WORK/ramfs" "$ERUN" $A --quiet -- touch ran </dev/null \
    >"$WORK/ramfs.out" 2>&1
rc=$?
expect_eq "no idmapped mounts: 125, one line naming --user USER" "125 1" \
    "$rc $(grep -c 'does not support idmapped mounts.*--user USER' "$WORK/ramfs.out")"
expect_clean "root runs"
finish
