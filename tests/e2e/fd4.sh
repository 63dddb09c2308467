#!/bin/sh
# The fd-4 channel in a real sandbox: a native client using libegress reaches an allowed
# upstream through descriptor 4 and is refused another with its reason; the receipts say
# frontend native; --no-fd4 leaves descriptor 4 out; ssh with ProxyCommand='egress-connect
# %h %p' logs into an OpenSSH server the test starts on loopback (its own config, port and
# host key), and git clones over ssh from it, as GIT_SSH_COMMAND is set in the sandbox.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
e2e_need ssh ssh-keygen git
[ -x /usr/sbin/sshd ] || { echo "SKIP: openssh-server is not installed (tools/deps installs it)"; exit 77; }
for b in egress-broker egress-connect tests/tools/fd4client; do
	[ -x "$top_builddir/$b" ] || { echo "Bail out! $top_builddir/$b is not built"; exit 99; }
done
cd "$WORK" || exit 1

start_server echo echo
ECHO=$PORT
SSHP=$(freeport)
printf 'n.e2e.test A 127.0.0.1\nssh.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cp "$top_builddir/tests/tools/fd4client" "$BOX/fd4client"
RUN_ARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8 --receipts $WORK/run.jsonl"

# --- a native client over fd 4 ---------------------------------------------------------
cd "$BOX" || exit 1
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --allow "n.e2e.test:$ECHO" $RUN_ARGS -- ./fd4client n.e2e.test "$ECHO" 2>&1)
expect_eq "libegress over fd 4: an allowed host, the stream echoes" "ok ping over fd 4" "$out"
expect_eq "... its receipts say frontend native" "native" \
    "$(grep '"event":"open"' "$WORK/run.jsonl" | tail -n 1 | py_field frontend)"
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --allow "n.e2e.test:$ECHO" $RUN_ARGS -- ./fd4client other.e2e.test "$ECHO" 2>&1)
expect_eq "libegress over fd 4: another host is refused with its reason" \
    "refused not-allowlisted" "$out"
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --no-fd4 --allow "n.e2e.test:$ECHO" $RUN_ARGS -- sh -c \
    'ls /proc/self/fd/4 >/dev/null 2>&1 && echo fd4 || echo none; echo "${EGRESS_FD:-unset}"' 2>&1)
expect_eq "--no-fd4: no descriptor 4, no EGRESS_FD" "none
unset" "$out"
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --allow "n.e2e.test:$ECHO" $RUN_ARGS -- sh -c \
    'echo "$EGRESS_FD"; ls /proc/self/fd | sort -n | tr "\n" " "' 2>&1)
expect_match "with fd 4: EGRESS_FD=4 and only 0, 1, 2, 4 (and ls's own) open" "^4
0 1 2 3 4 $" "$out"
cd "$WORK" || exit 1

# --- ssh and git over egress-connect -----------------------------------------------------
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f hostkey
ssh-keygen -q -t ed25519 -N '' -f "$BOX/id"
cp "$BOX/id.pub" authorized_keys
chmod 600 authorized_keys "$BOX/id"
cat > sshd_config <<EOF2
Port $SSHP
ListenAddress 127.0.0.1
HostKey $WORK/hostkey
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $WORK/sshd.pid
EOF2
spawn sshd /usr/sbin/sshd -D -e -f "$WORK/sshd_config"
wait_tcp "$SSHP" || { echo "Bail out! sshd did not start: $(cat "$WORK/sshd.err")"; exit 99; }
git init -q --bare --initial-branch=main repo.git
git init -q src && (cd src && git -c user.name=t -c user.email=t@e2e.test commit -q \
    --allow-empty -m "over egress" && git push -q "$WORK/repo.git" HEAD:refs/heads/main)
SSHOPT="-i $BOX/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
cd "$BOX" || exit 1
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --allow "ssh.e2e.test:$SSHP" $RUN_ARGS -- \
    ssh $SSHOPT -o "ProxyCommand=egress-connect %h %p" -p "$SSHP" root@ssh.e2e.test \
    'echo logged in over egress' 2>&1)
expect_eq "ssh with ProxyCommand=egress-connect logs in" "logged in over egress" "$out"
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --no-dns --allow "ssh.e2e.test:$SSHP" $RUN_ARGS -- sh -c \
    "GIT_SSH_COMMAND=\"\$GIT_SSH_COMMAND $SSHOPT\" git clone -q ssh://root@ssh.e2e.test:$SSHP$WORK/repo.git clone && git -C clone log --format=%s" 2>&1)
expect_eq "git clone over ssh through egress (--no-dns: GIT_SSH_COMMAND as egress-launch sets it)" \
    "over egress" "$out"
# shellcheck disable=SC2086
out=$("$ERUN" --quiet --allow "n.e2e.test:$ECHO" $RUN_ARGS -- \
    egress-connect ssh.e2e.test "$SSHP" </dev/null 2>&1)
expect_eq "egress-connect to a host the policy does not allow: exit 1" 1 "$?"
expect_match "... with the reason" "not-allowlisted" "$out"
cd "$WORK" || exit 1
finish
