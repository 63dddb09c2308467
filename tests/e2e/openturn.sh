#!/bin/sh
# egressd end to end: no byte moves, and no side is shut, between an open receipt and the
# monitor's acknowledgement of it. The engine sends each loop turn's receipts to the monitor
# at the turn's end and waits for the acknowledgement of a batch that holds an open; an open
# written inside the SNI guard, whose bytes could move later in the same turn, is sent and
# acknowledged at once (conn_write_open). strace, attached to egressd's engine (the process
# that relays), records its socket writes, shutdowns, polls and its reads of the channel to
# the monitor (fd 3) while tunnels of every path that writes the open run: no guard (early
# bytes, the fast relay), the SNI guard passing a ClientHello, passing a protocol that is not
# TLS, a server that speaks first, and a client that leaves before sending anything (the
# guard's end on its EOF, whose half-close once reached the upstream in the open's own
# callback). After an open's log line, the next poll (the turn ended: its flush waited) or a
# read of the channel (an acknowledgement) must come before any connection's socket is
# written or shut.
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
EOF
{ cat guard.policy; echo "sni off"; } > off.policy
conf_begin
principal guard guard.policy
principal off off.policy
egressd_start
G=$RUN/guard.sock
O=$RUN/off.sock

spawn strace strace -f -yy -s 64 -o "$WORK/trace" \
    -e trace=write,writev,sendto,sendmsg,shutdown,epoll_wait,epoll_pwait,recvfrom,recvmsg -p "$ENGINE_PID"
STRACE=$SPAWNED
_attached() { grep -q attached "$WORK/strace.err" 2>/dev/null; }
wait_until _attached || { echo "Bail out! strace did not attach: $(cat "$WORK/strace.err")"; exit 99; }

m=$(rcpt_mark)
expect_eq "guard: a client that leaves at once still gets its tunnel" "200" \
    "$(py tunnel connect "$G" echo.e2e.test "$ECHO" --mode none)"
expect_eq "guard: its close receipt says the client left" "close client-eof 0 0" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,close,bytes_up,bytes_down)"
expect_eq "guard: a ClientHello passes" "echoed" \
    "$(py tunnel connect "$G" echo.e2e.test "$ECHO" --mode hello --sni echo.e2e.test | sed -n 2p)"
expect_eq "guard: a protocol that is not TLS passes" "00
echo-ok" "$(py tunnel socks5 "$G" echo.e2e.test "$ECHO" --coalesce --mode echo --size 3000)"
expect_eq "guard: the server speaks first" "00
banner banner from upstream
after 0" "$(py tunnel socks5 "$G" banner.e2e.test "$BANNER" --mode reverse --data "late")"
expect_eq "no guard: early bytes and the fast relay" "00
echo-ok" "$(py tunnel socks5 "$O" echo.e2e.test "$ECHO" --coalesce --mode echo --size 3000)"
expect_eq "no guard: CONNECT" "200
echo-ok" "$(py tunnel connect "$O" echo.e2e.test "$ECHO" --split --mode echo --size 5000)"
OPENS=$(rcpt --skip "$m" --where event=open --wait 10 --min 6 --count)
expect_eq "six tunnels closed" 6 "$(rcpt --skip "$m" --where event=close --wait 10 --min 6 --count)"
stop "$STRACE"

# The log line of an open follows its receipt at once, before the state changes: from it to
# egressd's next poll or its next read of the monitor's channel (fd 3, the acknowledgement),
# no socket of a connection may be written or shut.
out=$("$E2E_PY" - "$WORK/trace" <<'EOF'
import re, sys
pend, opens, bad = {}, 0, []
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(\d+) +(\w+)\((\d+)<([^>]*)>?(.*)", line)
    if not m:
        continue
    pid, call, _, what, rest = m.groups()
    if call.startswith("epoll") or (call in ("recvfrom", "recvmsg") and _ == "3"):
        pend.pop(pid, None)
    elif call == "write" and what.endswith("egressd.err") and " event=open " in rest:
        pend[pid] = True
        opens += 1
    elif pid in pend and (what.startswith("TCP") or what.startswith("UNIX-STREAM")):
        bad.append(line.strip()[:160])
print("opens %d" % opens)
for b in bad:
    print("moved before the open was acknowledged: " + b)
EOF
)
expect_eq "six tunnels opened" 6 "$OPENS"
expect_eq "strace saw every open" "opens 6" "$(echo "$out" | head -n 1)"
expect_eq "no byte nor half-close between an open receipt and its acknowledgement" "" "$(echo "$out" | sed 1d)"
finish
