#!/bin/sh
# egressd end to end: configuration and control. egressd -t on good and bad files (exit 0
# and 2, errors as file:line:column); the control socket (0600, SO_PEERCRED); egressctl
# status, principal add (socket 0600 in runtime-dir, --owner, --peer-uid, dev:ino and
# digest as reported; a file or symlink in the way is left alone), list, remove (live
# tunnels close with shutdown receipts, and one whose client had not spoken yet gets no
# injected reply), add --lease (the principal goes when the egressctl holding it is
# killed); the lease socket (0660 with its group, the lease and summary verbs only, sealed policies
# from policy-dir, the caller owns the principal); policy-key (an unsealed or wrongly
# keyed policy is refused); user (privileges dropped after binding).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1
EP=$top_builddir/egress-policy

run() { out=$("$@" 2>err); rc=$?; err=$(cat err); }

start_server echo echo
ECHO=$PORT
printf 'c.e2e.test A 127.0.0.1\n' > zone
dns_start zone
cat > open.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.1/32
EOF
printf 'allow a.example 443\nalow b.example 443\n' > bad.policy

# --- egressd -t -------------------------------------------------------------------------
conf_begin
principal one open.policy
principal two open.policy owner 1000:1000 peer-uid 1000
run "$EGRESSD" -t -c "$WORK/egressd.conf"
expect_eq "-t: a good configuration exits 0" 0 "$rc"
expect_match "-t: says so" "configuration ok, 2 principals" "$out"
expect_eq "-t: nothing is created" "" "$(ls "$RUN" 2>/dev/null)"
C=$WORK/egressd.conf
tcase() {
	_what=$1 _pat=$2
	shift 2
	conf_begin "$@"
	run "$EGRESSD" -t -c "$C"
	expect_eq "-t: $_what: exit 2" 2 "$rc"
	expect_match "-t: $_what: error names file:line:column" "$_pat" "$err"
}
tcase "unknown directive" "^$C:7:1: unknown directive 'frobnicate'" "frobnicate yes"
tcase "relative path" "^$C:7:10: expected an absolute path" "receipts relative.jsonl"
tcase "bad resolver" "^$C:7:10: expected a resolver address" "resolver 1.2.3:x"
tcase "bad nat64-prefix length" "^$C:7:14: a NAT64 prefix is IPv6 of length" "nat64-prefix 64:ff9b::/80"
tcase "bad shutdown-grace" "^$C:7:1: expected: shutdown-grace" "shutdown-grace soon"
tcase "bad owner" "^$C:7:[0-9]+: expected UID:GID" "principal x policy $WORK/open.policy owner root"
tcase "unknown principal option" "^$C:7:[0-9]+: unknown principal option 'colour'" \
    "principal x policy $WORK/open.policy colour blue"
tcase "principal without policy" "^$C:7:1: principal 'x' has no policy" "principal x socket $RUN/x.sock"
tcase "socket outside runtime-dir" "^$C:7:1: socket $WORK/x.sock of principal 'x' is not directly inside" \
    "principal x socket $WORK/x.sock policy $WORK/open.policy"
tcase "duplicate principal" "^$C:8:11: principal 'x' already defined on line 7" \
    "principal x policy $WORK/open.policy" "principal x policy $WORK/open.policy"
tcase "bad principal name" "^$C:7:11: principal name must be" "principal ../x policy $WORK/open.policy"
tcase "invalid policy file" "$WORK/bad.policy:2:1: unknown directive 'alow'" \
    "principal x policy $WORK/bad.policy"
tcase "missing policy file" "principal x: policy $WORK/missing.policy: No such file" \
    "principal x policy $WORK/missing.policy"
run "$EGRESSD" -t -c "$WORK/no-such.conf"
expect_eq "-t: a missing file exits 2" 2 "$rc"
run "$EGRESSD" -t
expect_eq "egressd without -c is a usage error" 2 "$rc"

# --- the daemon and the control socket ---------------------------------------------------
mkdir -p policies
"$EP" seal open.policy > policies/build.sealed
cp open.policy policies/plain.policy
LGROUP=$(id -gn nobody 2>/dev/null || echo root)
conf_begin "lease $RUN/lease.sock group $LGROUP" "policy-dir $WORK/policies"
principal one open.policy
egressd_start
expect_eq "control socket: mode 0600, root's" "600 0:0" "$(stat -c '%a %u:%g' "$CTL")"
expect_eq "runtime-dir is not writable by others" "755" "$(stat -c %a "$RUN")"
run "$EGRESSCTL" -s "$CTL" status
expect_eq "status exits 0" 0 "$rc"
expect_match "status names egressd's pid" "^egressd [0-9.]+, pid $EGRESSD_PID, up [0-9]+s" "$out"
expect_match "status counts principals" "principals: +1" "$out"
expect_match "status names the receipt file" "receipts: +$RCPT" "$out"
chmod 666 "$CTL"
expect_eq "a non-root peer is refused by SO_PEERCRED even when it can connect" "none closed" \
    "$(py raw "$CTL" --uid 12345 --data '{"verb":"status"}\n' --timeout 10)"
chmod 600 "$CTL"
run "$EGRESSCTL" -s "$WORK/none.sock" status
expect_eq "no egressd: exit 1" 1 "$rc"
expect_match "no egressd: says so" "is egressd running" "$err"
run "$EGRESSCTL" -s "$CTL" frobnicate
expect_eq "unknown verb: exit 2" 2 "$rc"
run "$EGRESSCTL" -s "$CTL" principal add x
expect_eq "add without --policy: exit 2" 2 "$rc"

# --- principal add / list -------------------------------------------------------------------
run "$EGRESSCTL" -s "$CTL" principal add dyn --policy open.policy
expect_eq "add: exit 0" 0 "$rc"
expect_eq "add: the socket is created in runtime-dir" 1 "$([ -S "$RUN/dyn.sock" ] && echo 1)"
expect_eq "add: prints name, socket, dev:ino and digest" \
    "dyn $RUN/dyn.sock $(stat -c %d:%i "$RUN/dyn.sock") $("$EP" digest open.policy)" "$out"
expect_eq "add: mode 0600, egressd's own uid by default" "600 0:0" "$(stat -c '%a %u:%g' "$RUN/dyn.sock")"
expect_eq "add: the new principal serves" "00
echo-ok" "$(py tunnel socks5 "$RUN/dyn.sock" c.e2e.test "$ECHO" --mode echo)"
run "$EGRESSCTL" -s "$CTL" principal add owned --policy "$WORK/open.policy" --owner 4242:4343
expect_eq "add --owner: owner and group set, mode 0600" "600 4242:4343" \
    "$(stat -c '%a %u:%g' "$RUN/owned.sock")"
run "$EGRESSCTL" -s "$CTL" principal add picky --policy open.policy --owner 12345:12345 --peer-uid 12345
m=$(rcpt_mark)
expect_eq "add --peer-uid: root is refused" "none closed" "$(py raw "$RUN/picky.sock" --hex 050100)"
expect_eq "add --peer-uid: receipt" "deny peer-uid picky" "$(rcpt --skip "$m" --wait 10 --fields event,reason,principal)"
expect_eq "add --peer-uid: that uid is served" "00
echo-ok" "$(py tunnel socks5 "$RUN/picky.sock" c.e2e.test "$ECHO" --uid 12345 --mode echo)"
run "$EGRESSCTL" -s "$CTL" principal add dyn --policy open.policy
expect_eq "add: a duplicate name is refused (exit 1)" 1 "$rc"
expect_match "add: ... saying why" "exists" "$err"
run "$EGRESSCTL" -s "$CTL" principal add ../escape --policy open.policy
expect_eq "add: a name that is not a name is refused" 1 "$rc"
expect_eq "add: ... and nothing is created outside runtime-dir" "" "$(ls "$WORK" | grep escape)"
run "$EGRESSCTL" -s "$CTL" principal add broken --policy bad.policy
expect_eq "add: an invalid policy is refused" 1 "$rc"
expect_match "add: ... naming file:line:column" "bad.policy:2:1: unknown directive" "$err"
expect_eq "add: no socket for a refused principal" "" "$(ls "$RUN" | grep broken)"

echo "not a socket" > "$RUN/squat.sock"
run "$EGRESSCTL" -s "$CTL" principal add squat --policy open.policy
expect_eq "add: a file in the way that is not a socket is refused" 1 "$rc"
expect_eq "add: ... and left alone" "not a socket" "$(cat "$RUN/squat.sock")"
rm -f "$RUN/squat.sock"
echo "precious" > "$WORK/target"
ln -s "$WORK/target" "$RUN/link.sock"
run "$EGRESSCTL" -s "$CTL" principal add link --policy open.policy
expect_eq "add: a symlink in the way is refused" 1 "$rc"
expect_eq "add: ... its target untouched" "precious" "$(cat "$WORK/target")"
expect_eq "add: ... the symlink left alone" 1 "$([ -L "$RUN/link.sock" ] && echo 1)"
rm -f "$RUN/link.sock"

run "$EGRESSCTL" -s "$CTL" principal list
expect_eq "list: exit 0" 0 "$rc"
for n in one dyn owned picky; do
	line=$(echo "$out" | awk -v n="$n" '$1 == n')
	expect_eq "list: $n with its socket, dev:ino and digest" \
	    "$n $RUN/$n.sock $(stat -c %d:%i "$RUN/$n.sock") $("$EP" digest open.policy)" \
	    "$(echo "$line" | awk '{ print $1, $2, $3, $6 }')"
done

# --- principal remove with a live tunnel ---------------------------------------------------------
touch dyn.hold
spawn dynholder "$E2E_PY" "$HELPER" tunnel connect "$RUN/dyn.sock" c.e2e.test "$ECHO" --mode hold \
    --hold-file "$WORK/dyn.hold" --status-file "$WORK/dyn.status"
HOLDER=$SPAWNED
wait_for -s dyn.status
# A second tunnel whose client has not spoken yet (the SNI guard is still waiting).
spawn dynsilent "$E2E_PY" "$HELPER" tunnel socks5 "$RUN/dyn.sock" c.e2e.test "$ECHO" --mode hold \
    --hello "" --hold-file "$WORK/dyn.hold" --status-file "$WORK/dynsilent.status"
SILENT=$SPAWNED
wait_for -s dynsilent.status
# Both tunnels are open on the client's side; egressd counts each when it has taken it up.
dyn_listed() { "$EGRESSCTL" -s "$CTL" principal list | grep -Eq "^dyn .* 2 +no "; }
wait_until dyn_listed
expect_match "list: the live tunnels are counted" "^dyn .* 2 +no " "$("$EGRESSCTL" -s "$CTL" principal list)"
m=$(rcpt_mark)
run "$EGRESSCTL" -s "$CTL" principal remove dyn
expect_eq "remove: exit 0" 0 "$rc"
expect_eq "remove: the socket is gone" 1 "$([ ! -e "$RUN/dyn.sock" ] && echo 1)"
wait "$HOLDER"
wait "$SILENT"
expect_match "remove: the live tunnel was closed" "^(eof|reset) " "$(sed -n 2p dynholder.out)"
expect_eq "remove: its close receipt says shutdown" "close shutdown shutdown dyn" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,principal)"
expect_match "remove: a tunnel whose client was silent is closed without a byte injected" \
    "^(eof|reset) [0-9.]+ 0$" "$(sed -n 2p dynsilent.out)"
expect_eq "remove: ... and, being open, it gets a close receipt too (not a deny)" "2 0" \
    "$(rcpt --skip "$m" --where event=close --where close=shutdown --count --min 2 --wait 10) $(rcpt --skip "$m" --where event=deny --count)"
expect_eq "remove: no longer listed" "" "$("$EGRESSCTL" -s "$CTL" principal list | awk '$1 == "dyn"')"
run "$EGRESSCTL" -s "$CTL" principal remove dyn
expect_eq "remove: an unknown name exits 1" 1 "$rc"
expect_match "remove: ... saying so" "no such principal" "$err"

# --- lease ------------------------------------------------------------------------------------
spawn leaser "$EGRESSCTL" -s "$CTL" principal add leased --policy "$WORK/open.policy" --lease
LEASER=$SPAWNED
wait_for -S "$RUN/leased.sock"
expect_eq "lease: the principal exists while egressctl holds it" 1 "$([ -S "$RUN/leased.sock" ] && echo 1)"
expect_match "lease: egressctl printed the socket and dev:ino" \
    "^leased $RUN/leased.sock $(stat -c %d:%i "$RUN/leased.sock") " "$(cat leaser.out)"
expect_match "lease: listed as a lease" "^leased .* yes +sha256:" "$("$EGRESSCTL" -s "$CTL" principal list)"
touch lease.hold
spawn leaseholder "$E2E_PY" "$HELPER" tunnel socks5 "$RUN/leased.sock" c.e2e.test "$ECHO" --mode hold \
    --hold-file "$WORK/lease.hold" --status-file "$WORK/lease.status"
LHOLDER=$SPAWNED
wait_for -s lease.status
expect_eq "lease: a tunnel is open through it" "00" "$(cat lease.status)"
m=$(rcpt_mark)
kill -KILL "$LEASER"
wait "$LEASER" 2>/dev/null
expect_eq "lease: killing egressctl removes the principal" 1 "$(wait_gone "$RUN/leased.sock" && echo 1)"
expect_eq "lease: no longer listed" "" "$("$EGRESSCTL" -s "$CTL" principal list | awk '$1 == "leased"')"
wait "$LHOLDER"
expect_eq "lease: its tunnel closed with a shutdown receipt" "close shutdown shutdown leased" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,close,principal)"
# --- the lease socket ----------------------------------------------------------------------------
expect_eq "lease socket: mode 0660, group $LGROUP" "660 root:$LGROUP" "$(stat -c '%a %U:%G' "$RUN/lease.sock")"
expect_match "lease socket: serves the lease and summary verbs only" '"ok":false.*lease and summary verbs only' \
    "$(py raw "$RUN/lease.sock" --text --timeout 10 --until-text '\n' --linger 0 --data '{"verb":"status"}\n')"
# summary: only for a lease the connection holds; then its destinations, added up.
sumout=$("$E2E_PY" - "$RUN/lease.sock" "$ECHO" "$EGRESSD_PID" <<'PYEOF'
import json, socket, sys
def ask(f, s, req):
    s.sendall((json.dumps(req) + "\n").encode())
    return json.loads(f.readline())
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); f = s.makefile("r")
r = ask(f, s, {"verb": "summary"})
print("before", r["ok"], r.get("error"))
r = ask(f, s, {"verb": "lease", "policy": "build.sealed"})
name, sock = r["name"], r["socket"]
for host in ("c.e2e.test", "nope.example.org", "nope.example.org"):
    t = socket.socket(socket.AF_UNIX); t.settimeout(10); t.connect(sock)
    t.sendall(("CONNECT {0}:{1} HTTP/1.1\r\nHost: {0}:{1}\r\n\r\n".format(host, sys.argv[2])).encode())
    t.recv(4096); t.close()
# another connection's real lease: not visible from this one
s2 = socket.socket(socket.AF_UNIX); s2.settimeout(10); s2.connect(sys.argv[1]); f2 = s2.makefile("r")
other = ask(f2, s2, {"verb": "lease", "policy": "build.sealed"})["name"]
r = ask(f, s, {"verb": "summary", "name": other})
print("other", r["ok"], r.get("error"))
import time
for _ in range(100):
    r = ask(f, s, {"verb": "summary"})
    if r["open"] == 0:
        break
    time.sleep(0.1)
print("mine", r["ok"], r["principal"] == name, r["open"], r["dropped"])
for d in sorted(r["destinations"], key=lambda d: d["host"]):
    print("dest", d["host"], d.get("port", "-"), d["allowed"], d["reason"], d["count"])
# A client that asks without reading: egressd stops reading it, its memory stays bounded.
def rss():
    with open("/proc/%s/status" % sys.argv[3]) as st:
        return int([l for l in st if l.startswith("VmRSS:")][0].split()[1])
before = rss()
s2.setblocking(False)
sent = 0
req = b'{"verb":"summary"}\n' * 1000
end = time.monotonic() + 3
while time.monotonic() < end:
    try:
        sent += s2.send(req)
    except BlockingIOError:
        time.sleep(0.05)
print("flood", sent > 100000, rss() - before < 32768)
PYEOF
)
expect_eq "summary: the lease socket's verb, for the leases the connection holds" \
"before False this connection holds no lease
other False no such lease (a lease connection sees only its own)
mine True True 0 0
dest c.e2e.test $ECHO True allowed 1
dest nope.example.org $ECHO False not-allowlisted 2
flood True True" "$sumout"
if id nobody >/dev/null 2>&1; then
	NOBODY=$(id -u nobody)
	# The caller holds its connection (and so the lease) until leasenobody.hold goes,
	# not for a fixed time that a slow machine could use up before the checks below.
	touch leasenobody.hold
	spawn leasenobody "$E2E_PY" "$HELPER" raw "$RUN/lease.sock" --text --uid "$NOBODY" --timeout 60 \
	    --hold-file "$WORK/leasenobody.hold" --data '{"verb":"lease","policy":"build.sealed"}\n'
	LN=$SPAWNED
	nobody_leased() { ls "$RUN" | grep -q "^lease-$NOBODY-"; }
	wait_until nobody_leased
	ls_sock=$(ls "$RUN" | grep "^lease-$NOBODY-" | head -n 1)
	expect_match "lease socket: a non-root caller in the group gets a principal" "^lease-$NOBODY-[0-9a-f]+\.sock$" "$ls_sock"
	expect_eq "lease socket: the principal is owned by the caller, mode 0600" "600 $NOBODY:$(id -g nobody)" \
	    "$(stat -c '%a %u:%g' "$RUN/$ls_sock" 2>/dev/null)"
	expect_eq "lease socket: it serves" "00
echo-ok" "$(py tunnel socks5 "$RUN/$ls_sock" c.e2e.test "$ECHO" --uid "$NOBODY" --mode echo)"
	rm -f leasenobody.hold
	wait "$LN"
	expect_eq "lease socket: the principal goes with the caller's connection" 1 "$(wait_gone "$RUN/$ls_sock" && echo 1)"
	expect_eq "lease socket: the reply named the socket and dev:ino" 1 \
	    "$(grep -q "\"socket\": *\"$RUN/$ls_sock\".*\"dev_ino\": *\"[0-9]*:[0-9]*\"" leasenobody.out && echo 1)"
else
	skip "lease socket as another user" "no user nobody"
fi
run "$EGRESSCTL" -s "$RUN/lease.sock" lease plain.policy
expect_eq "lease: an unsealed policy is refused" 1 "$rc"
expect_match "lease: ... saying so" "sealed" "$err"
run "$EGRESSCTL" -s "$RUN/lease.sock" lease ../open.policy
expect_eq "lease: a path instead of a name is refused" 1 "$rc"
spawn rootlease "$EGRESSCTL" -s "$RUN/lease.sock" lease build.sealed
RL=$SPAWNED
wait_line "$WORK/rootlease.out" >/dev/null
rl_sock=$(cut -d' ' -f2 rootlease.out)
expect_eq "egressctl lease prints name, socket and dev:ino" "$(stat -c %d:%i "$rl_sock" 2>/dev/null)" \
    "$(cut -d' ' -f3 rootlease.out)"
expect_eq "egressctl lease: the policy digest is the sealed one's" "$("$EP" digest policies/build.sealed)" \
    "$(cut -d' ' -f4 rootlease.out)"
kill -TERM "$RL"
wait "$RL" 2>/dev/null
expect_eq "egressctl lease: killed, its principal is gone" 1 "$(wait_gone "$rl_sock" && echo 1)"

egressd_stop
expect_eq "egressd exits 0" 0 "$EGRESSD_RC"
check_receipts control

# --- policy-key and user -------------------------------------------------------------------------
"$EP" keygen pkey >/dev/null 2>&1
"$EP" keygen otherkey >/dev/null 2>&1
"$EP" seal --key pkey open.policy > good.sealed
"$EP" seal --key otherkey open.policy > wrong.sealed
"$EP" seal open.policy > nomac.sealed
conf_begin "policy-key $WORK/pkey"
principal keyed good.sealed
run "$EGRESSD" -t -c "$C"
expect_eq "policy-key: a policy sealed with the key is accepted" 0 "$rc"
conf_begin "policy-key $WORK/pkey"
principal keyed wrong.sealed
run "$EGRESSD" -t -c "$C"
expect_eq "policy-key: a policy sealed with another key is refused" 2 "$rc"
conf_begin "policy-key $WORK/pkey"
principal keyed open.policy
run "$EGRESSD" -t -c "$C"
expect_eq "policy-key: an unsealed policy is refused" 2 "$rc"
if id nobody >/dev/null 2>&1; then
	conf_begin "policy-key $WORK/pkey" "user nobody"
	principal keyed good.sealed
	egressd_start
	expect_eq "user: egressd's engine runs as nobody after binding" "$(id -u nobody)" \
	    "$(awk '$1 == "Uid:" { print $2 }' "/proc/$ENGINE_PID/status")"
	expect_eq "user: it still serves" "00
echo-ok" "$(py tunnel socks5 "$RUN/keyed.sock" c.e2e.test "$ECHO" --mode echo)"
	run "$EGRESSCTL" -s "$CTL" principal add other --policy nomac.sealed
	expect_eq "policy-key: egressctl add of a policy without MAC is refused" 1 "$rc"
	egressd_stop
	expect_eq "user: egressd exits 0" 0 "$EGRESSD_RC"
	check_receipts "after user"
else
	skip "user nobody" "no user nobody on this machine"
fi
finish
