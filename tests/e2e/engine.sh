#!/bin/sh
# egressd end to end: the monitor and its engine (SPEC "Privilege separation of egressd").
# egressd is two processes: the monitor (root here, the keys, the receipts file) and its
# child egressd-engine (nobody, no capabilities), which serves. SIGKILL of the engine under
# 200 live tunnels: every open gets its daemon-restart close, the chain verifies, a new
# engine serves a new tunnel within 1 s, the principal sockets (of egressd.conf and of
# egressctl principal add) keep their device and inode, a lease goes with its connection.
# Neither the receipt key nor the signing key is anywhere in the engine's memory (read
# from /proc/PID/mem; the same scan finds both in the monitor's). With the test verbs of
# --enable-debug: the engine cannot open a key file, forged or
# out-of-order receipts are refused by the monitor (logged, never written), and a system
# call outside the engine's filter kills it with the call named in the monitor's log.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1
if ! id nobody >/dev/null 2>&1; then
	echo "SKIP: no user nobody on this machine"
	exit 77
fi

start_server echo echo
ECHO=$PORT
printf 'k.e2e.test A 127.0.0.1\n' > zone
dns_start zone
printf 'allow *.e2e.test 1024-65535\npermit-range 127.0.0.1/32\n' > open.policy
openssl genpkey -algorithm ed25519 -out sign.pem 2>/dev/null
chmod 600 sign.pem
# the signing key's 32 private bytes: the end of its DER form
openssl pkey -in sign.pem -outform DER 2>/dev/null | tail -c 32 > sign.raw
mkdir -p policies
"$top_builddir/egress-policy" seal open.policy > policies/open.sealed
conf_begin "signing-key $WORK/sign.pem" "policy-dir $WORK/policies"
principal k open.policy
egressd_start
S=$RUN/k.sock
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# ctl JSON: one request on the control socket, its answer line.
ctl() {
	"$E2E_PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n"); b = b""
while not b.endswith(b"\n"):
    d = s.recv(65536)
    if not d: break
    b += d
print(b.decode().strip())' "$CTL" "$1"
}

# --- who is who -------------------------------------------------------------------------
expect_match "the engine is the monitor's child" "^[0-9]+$" "$ENGINE_PID"
expect_eq "the monitor stays root" 0 "$(status_field "$EGRESSD_PID" Uid)"
expect_eq "the engine runs as nobody" "$(id -u nobody)" "$(status_field "$ENGINE_PID" Uid)"
expect_eq "the engine has no capability" "0000000000000000 0000000000000000" \
    "$(status_field "$ENGINE_PID" CapPrm) $(status_field "$ENGINE_PID" CapEff)"
expect_eq "the engine has no_new_privs" 1 "$(status_field "$ENGINE_PID" NoNewPrivs)"
expect_eq "the engine runs under a seccomp filter" 2 "$(status_field "$ENGINE_PID" Seccomp)"
expect_match "the monitor keeps only its own capabilities (no CAP_SYS_ADMIN, CAP_NET_ADMIN)" \
    "^00000000000000e[0-9a-f]$|^00000000000000c[0-9a-f]$" "$(status_field "$EGRESSD_PID" CapEff)"
expect_match "status names the monitor's pid" "\"pid\": *$EGRESSD_PID\b" "$(ctl '{"verb":"status"}')"

# memscan PID FILE: how many times the bytes of FILE (raw, and in hex) are in PID's memory.
memscan() {
	"$E2E_PY" -c 'import re, sys
pid, key = int(sys.argv[1]), open(sys.argv[2], "rb").read()
needles = [key, key.hex().encode()]
hits, chunk, keep = 0, 16 << 20, 256
with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (r)", line)
        if not m or "[vvar]" in line or "[vsyscall]" in line:
            continue
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        if b - a > (64 << 30):
            continue        # a sanitizer shadow reservation, not data
        tail = b""
        while a < b:
            n = min(chunk, b - a)
            try:
                mem.seek(a)
                data = tail + mem.read(n)
            except OSError:
                break
            hits += sum(data.count(x) for x in needles)
            tail = data[-keep:]
            hits -= sum(tail.count(x) for x in needles)
            a += n
        hits += sum(tail.count(x) for x in needles)
print(hits)' "$1" "$2"
}
expect_eq "the receipt key is nowhere in the engine's memory" 0 "$(memscan "$ENGINE_PID" "$KEY")"
m=$(memscan "$EGRESSD_PID" "$KEY")
expect_match "... while the scan finds it in the monitor's ($m times)" "^[1-9][0-9]*$" "$m"
expect_eq "the signing key is nowhere in the engine's memory" 0 "$(memscan "$ENGINE_PID" sign.raw)"
m=$(memscan "$EGRESSD_PID" sign.raw)
expect_match "... while the scan finds it in the monitor's ($m times)" "^[1-9][0-9]*$" "$m"

# --- SIGKILL of the engine under 200 tunnels -------------------------------------------
before=$(stat -c %d:%i "$S")
# a principal added by the control socket (it outlives the engine) and a lease (it lives
# as long as its connection, which dies with the engine)
"$EGRESSCTL" -s "$CTL" principal add dyn --policy "$WORK/open.policy" >/dev/null
dyn_before=$(stat -c %d:%i "$RUN/dyn.sock")
spawn lease "$E2E_PY" "$HELPER" raw "$CTL" --text --timeout 30 \
    --data '{"verb":"lease","policy":"open.sealed"}\n'
i=0
while [ -z "$(ls "$RUN" | grep '^lease-0-')" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
ls_sock=$(ls "$RUN" | grep '^lease-0-' | head -n 1)
expect_match "a lease is held" "^lease-0-" "$ls_sock"
touch many.hold
spawn many "$E2E_PY" "$HELPER" hold-many "$S" 200 --tunnel "k.e2e.test:$ECHO" \
    --hold-file "$WORK/many.hold" --ready-file "$WORK/many.ready"
wait_for -s "$WORK/many.ready"
expect_eq "200 tunnels open" 200 "$(rcpt --where event=open --count --wait 10 --min 200)"
old=$ENGINE_PID
mark=$(log_mark)
t0=$(date +%s%N)
kill -KILL "$old"
# the first new tunnel through the same socket, as soon as one is served
served=no
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000 ]; do
	if [ "$(py tunnel socks5 "$S" k.e2e.test "$ECHO" --mode echo 2>/dev/null)" = "00
echo-ok" ]; then
		served=yes
		break
	fi
	sleep 0.02
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "a new engine serves a new tunnel" yes "$served"
expect_match "... within 1 s of the kill ($ms ms)" "^[0-9]{1,3}$" "$ms"
wait_log "event=engine-exit pid=$old signal=9" "$mark" || true
expect_match "the monitor logs the engine's death" "engine-exit pid=$old signal=9" \
    "$(tail -n "+$((mark + 1))" egressd.err)"
engine_pid
expect_match "a new engine" "^[0-9]+$" "$ENGINE_PID"
[ "$ENGINE_PID" != "$old" ] && r=new || r=same
expect_eq "... not the old one" new "$r"
expect_eq "the principal socket keeps its device and inode" "$before" "$(stat -c %d:%i "$S")"
expect_eq "the control socket's principal too" "$dyn_before" "$(stat -c %d:%i "$RUN/dyn.sock")"
expect_eq "... and the new engine serves it" "00
echo-ok" "$(py tunnel socks5 "$RUN/dyn.sock" k.e2e.test "$ECHO" --mode echo)"
expect_eq "the lease went with the engine: its socket is gone" 1 \
    "$(wait_gone "$RUN/$ls_sock" && echo 1)"
expect_eq "every open of the dead engine closed with daemon-restart" 200 \
    "$(rcpt --where event=close --where close=daemon-restart --count --wait 5 --min 200)"
rm -f many.hold
stop many
check_receipts "after the engine's death"

# --- test verbs (--enable-debug) ---------------------------------------------------------
a=$(ctl '{"verb":"debug","what":"open-keys"}')
if printf '%s' "$a" | grep -q "unknown verb"; then
	skip "the engine cannot open the receipt key" "egressd built without --enable-debug"
	skip "forged receipts are refused" "egressd built without --enable-debug"
	skip "a forbidden system call kills the engine" "egressd built without --enable-debug"
else
	expect_match "the engine cannot open the receipt key" "\"$KEY\": *\"(Permission denied)\"" "$a"
	expect_match "the engine cannot open the signing key" "\"$WORK/sign.pem\": *\"(Permission denied)\"" "$a"
	# forged receipts: the monitor refuses each, writes none of them
	mark=$(log_mark)
	r0=$(rcpt_mark)
	a=$(ctl '{"verb":"debug","what":"forge"}')
	expect_match "forge: answered" '"ok": *true' "$a"
	wait_log "daemon-restart is the monitor" "$mark" || true
	log=$(tail -n "+$((mark + 1))" egressd.err)
	for why in "close without its open" "no such principal" "open of an id already open" \
	    "daemon-restart is the monitor's"; do
		expect_match "the monitor refuses: $why" "event=receipt-refused detail=\"$why\"" "$log"
	done
	expect_eq "refused records are not written; the rest are (one open, one close)" \
	    "0 0 1 1" "$(tail -n "+$((r0 + 1))" "$RCPT" | awk '
	    /c-dead0001/ { a++ } /no-such-principal/ { b++ }
	    /"event":"open".*c-dead0003|c-dead0003.*"event":"open"/ { c++ }
	    /c-dead0003/ && /"event":"close"/ { d++ } END { print a+0, b+0, c+0, d+0 }')"
	check_receipts "after forged receipts"
	# a system call outside the filter
	old=$ENGINE_PID
	mark=$(log_mark)
	ctl '{"verb":"debug","what":"syscall"}' >/dev/null 2>&1
	wait_log "event=engine-exit pid=$old" "$mark" || true
	expect_match "a forbidden system call kills the engine, the monitor names it" \
	    "event=engine-exit pid=$old seccomp syscall=getpgid" "$(tail -n "+$((mark + 1))" egressd.err)"
	wait_log "event=engine-ready" "$mark" || true
	expect_eq "... and a new engine serves" "00
echo-ok" "$(py tunnel socks5 "$S" k.e2e.test "$ECHO" --mode echo)"
fi

egressd_stop
expect_eq "egressd exits 0 on SIGTERM" 0 "$EGRESSD_RC"
expect_eq "the engine is gone with it" no "$(kill -0 "$ENGINE_PID" 2>/dev/null && echo yes || echo no)"
check_receipts "engine"
finish
