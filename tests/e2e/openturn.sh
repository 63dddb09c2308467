#!/bin/sh
# egressd end to end: no byte moves, and no side is shut, between an open receipt and the
# monitor's acknowledgement of it. The engine sends each loop turn's receipts to the monitor
# at the turn's end; a connection whose open is among them holds itself (conn_hold) until
# the acknowledgement, read from the channel (fd 3), releases it, while the loop goes on
# with other connections. strace, attached to egressd's engine (the process that relays),
# records its socket writes, shutdowns and its reads of the channel while tunnels of every
# path that writes the open run, one at a time, twice: alone (the engine has nothing else
# to do, so it waits for the acknowledgement in the open's callback) and beside another
# client's live connection (the open's connection holds itself, the loop goes on); no
# guard (early bytes, the fast relay),
# the SNI guard passing a ClientHello, passing a protocol that is not TLS, a server that
# speaks first, and a client that leaves before sending anything (the guard's end on its
# EOF, whose half-close once reached the upstream in the open's own callback). After a
# batch holding an open is sent to the monitor, a read of the channel (the
# acknowledgement) must come before any connection's socket is written or shut. (A poll
# between them is no longer enough: the engine polls while held connections wait.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
cd "$WORK" || exit 1
e2e_need strace

start_server echo echo
ECHO=$PORT
start_server banner bannerfirst --report "$WORK/banner.report"
BANNER=$PORT

cat > zone <<EOF
echo.e2e.test    A 127.0.0.1
banner.e2e.test  A 127.0.0.1
EOF
dns_start zone
cat > guard.policy <<EOF
allow *.e2e.test 1024-65535
permit-range 127.0.0.0/8
timeout handshake 120s
EOF
{ cat guard.policy; echo "sni off"; } > off.policy
conf_begin
principal guard guard.policy
principal off off.policy
# A slow monitor (test hook of --enable-debug builds): 50 ms before each acknowledgement,
# so that the engine's polls in between see the held connections' events; without it the
# acknowledgement usually comes first, and a hold that let bytes out would pass unseen.
if grep -q '^#define EGRESS_TEST_HOOKS 1' "$top_builddir/config.h"; then
	EGRESS_MONITOR_TEST_ACK_DELAY_MS=50
	export EGRESS_MONITOR_TEST_ACK_DELAY_MS
else
	echo "# not an --enable-debug build: acknowledgements are not delayed"
fi
egressd_start
G=$RUN/guard.sock
O=$RUN/off.sock

spawn strace strace -f -yy -s 64 -o "$WORK/trace" \
    -e trace=write,writev,sendto,sendmsg,shutdown,epoll_wait,epoll_pwait,recvfrom,recvmsg -p "$ENGINE_PID"
STRACE=$SPAWNED
_attached() { grep -q attached "$WORK/strace.err" 2>/dev/null; }
wait_until _attached || { echo "Bail out! strace did not attach: $(cat "$WORK/strace.err")"; exit 99; }

# The six tunnels; $1 names the pass.
tunnels() {
	m=$(rcpt_mark)
	expect_eq "$1 guard: a client that leaves at once still gets its tunnel" "200" \
	    "$(py tunnel connect "$G" echo.e2e.test "$ECHO" --mode none)"
	expect_eq "$1 guard: its close receipt says the client left" "close client-eof 0 0" \
	    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,close,bytes_up,bytes_down)"
	expect_eq "$1 guard: a ClientHello passes" "echoed" \
	    "$(py tunnel connect "$G" echo.e2e.test "$ECHO" --mode hello --sni echo.e2e.test | sed -n 2p)"
	expect_eq "$1 guard: a protocol that is not TLS passes" "00
echo-ok" "$(py tunnel socks5 "$G" echo.e2e.test "$ECHO" --coalesce --mode echo --size 3000)"
	expect_eq "$1 guard: the server speaks first" "00
banner banner from upstream
after 0" "$(py tunnel socks5 "$G" banner.e2e.test "$BANNER" --mode reverse --data "late")"
	expect_eq "$1 no guard: early bytes and the fast relay" "00
echo-ok" "$(py tunnel socks5 "$O" echo.e2e.test "$ECHO" --coalesce --mode echo --size 3000)"
	expect_eq "$1 no guard: CONNECT" "200
echo-ok" "$(py tunnel connect "$O" echo.e2e.test "$ECHO" --split --mode echo --size 5000)"
	# A refusal: its answer (403) waits for the monitor's acknowledgement as bytes do.
	expect_match "$1 a name the policy lacks is refused" '^403' \
	    "$(py tunnel connect "$G" nope.example.org 443 --mode none)"
	expect_eq "$1 six tunnels closed" 6 \
	    "$(rcpt --skip "$m" --where event=close --wait 10 --min 6 --count)"
}
tunnels "alone:"
# A client connected and silent (its handshake deadline is 120 s): one more connection
# that could move, so each open's connection holds itself instead of waiting in place.
spawn idle "$E2E_PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("connected", flush=True)
time.sleep(120)' "$G"
IDLE=$SPAWNED
_idle() { grep -q connected "$WORK/idle.out" 2>/dev/null; }
wait_until _idle || { echo "Bail out! the idle client did not connect"; exit 99; }
tunnels "beside a live one:"
# strace first: the idle client's leaving is refused (malformed-request, a deny receipt),
# which strace would count when it comes before strace is gone.
stop "$STRACE"
stop "$IDLE"

# An open or a deny goes to the monitor in a batch that wants an acknowledgement (its
# header's file_seq is 0; a batch of closes only says MW_BATCH_NOACK, 1): from the sendmsg
# of such a batch on the channel (fd 3) to egressd's next read of the acknowledgement
# there, no socket of a connection may be written or shut. (The open's log line is no
# marker: log lines wait up to LOG_HOLD_MS and go in one write, common/log.h.)
out=$("$E2E_PY" - "$WORK/trace" <<'EOF'
import re, struct, sys

def unescape(s):
    """strace's quoted string (-s 64: the first 64 bytes) as bytes."""
    out, i = bytearray(), 0
    simple = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "\\": 92, '"': 34}
    while i < len(s):
        if s[i] != "\\":
            out.append(ord(s[i]) & 0xff)
            i += 1
            continue
        m = re.match(r"[0-7]{1,3}", s[i + 1:])
        if m:
            out.append(int(m.group(0), 8) & 0xff)
            i += 1 + len(m.group(0))
        elif s[i + 1] == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:
            out.append(simple.get(s[i + 1], ord(s[i + 1]) & 0xff))
            i += 2
    return bytes(out)

pend, opens, bad = {}, 0, []
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(\d+) +(\w+)\((\d+)<([^>]*)>?(.*)", line)
    if not m:
        continue
    pid, call, fd, what, rest = m.groups()
    # an acknowledgement read (24 bytes), not a peek or an EAGAIN
    if call in ("recvfrom", "recvmsg") and fd == "3" and rest.rstrip().endswith("= 24"):
        pend.pop(pid, None)
    elif call in ("sendmsg", "sendto", "write", "writev") and fd == "3":
        b = re.search(r'"((?:[^"\\]|\\.)*)"', rest)
        head = unescape(b.group(1)) if b else b""
        if len(head) >= 24:
            magic, typ, _, _, file_seq = struct.unpack("<IHHQQ", head[:24])
            if magic == 0x45474d31 and typ == 1 and file_seq == 0:
                pend[pid] = True
                opens += 1
    elif pid in pend and (what.startswith("TCP") or what.startswith("UNIX-STREAM")):
        bad.append(line.strip()[:160])
print("opens %d" % opens)
for b in bad:
    print("moved before the open was acknowledged: " + b)
EOF
)
expect_eq "strace saw a batch for every open and refusal" "opens 14" "$(echo "$out" | head -n 1)"
expect_eq "no byte nor half-close between an open or deny receipt and its acknowledgement" "" "$(echo "$out" | sed 1d)"
finish
