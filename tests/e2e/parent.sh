#!/bin/sh
# egressd end to end: a parent proxy (parent-proxy in egressd.conf(5)), against real
# parents started here on loopback: Squid (its access log says what it was asked) and
# tinyproxy (Basic authentication).
#  - resolve local (the default): a tunnel through the parent carries bytes both ways,
#    the parent is asked CONNECT <pinned address>:<port>, receipts carry via:"parent"
#    beside the real addr; the parent is dialled by name too; SOCKS5 takes the same path;
#    a server-first upstream's banner (bytes right behind the parent's answer) arrives;
#    plain HTTP forwarding goes through a CONNECT tunnel to the parent;
#  - a name the policy refuses and a private answer are refused before the parent is
#    asked (its access log unchanged); the SNI guard refuses a foreign hello with not one
#    byte at the upstream;
#  - resolve parent: egressd resolves nothing (no query at its resolver), asks CONNECT
#    <name>:<port>, receipts carry via and no addr;
#  - Basic auth to tinyproxy: the right credential passes, a wrong one is connect-refused
#    with the parent's status line in the log; the passwords are in no log and no receipt;
#  - a parent that is down is connect-refused, one that accepts and never answers
#    connect-timeout within timeout connect, one that refuses the destination (403)
#    connect-refused;
#  - egressd -t refuses a bad parent URL, https://, a missing or world-readable auth
#    file, an unknown resolve mode, ca with http://.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/lib.sh"
e2e_need squid tinyproxy socat
cd "$WORK" || exit 1

start_server echo echo --log "$WORK/echo.log"
ECHO=$PORT
start_server http http --log "$WORK/http.log"
HTTP=$PORT
start_server banner bannerfirst --report "$WORK/banner.report"
BANNER=$PORT
cat > zone <<EOF
up.e2e.test       A  127.0.0.1
private.e2e.test  A  10.1.2.3
denied.e2e.test   A  127.0.0.1
parent.e2e.test   A  127.0.0.1
wrong.e2e.test    A  127.0.0.1
mute.e2e.test     SILENT
EOF
dns_start zone
cat > parent.policy <<EOF
deny denied.e2e.test
allow up.e2e.test $ECHO,$HTTP,$BANNER,9
allow private.e2e.test $ECHO
allow only.e2e.test $ECHO
allow refused.e2e.test $ECHO
allow denied.e2e.test $ECHO
permit-range 127.0.0.0/8
timeout connect 2s
EOF

# --- the parents ----------------------------------------------------------------------------
# Squid: CONNECT to the test's upstream ports only, names from its own hosts file (only
# the parent knows only.e2e.test), nothing cached, every request in its access log.
SQ=$(freeport)
mkdir -p squid
chown proxy:proxy squid 2>/dev/null || chmod 777 squid
cat > squid.hosts <<EOF
127.0.0.1 only.e2e.test
127.0.0.1 refused.e2e.test
EOF
cat > squid.conf <<EOF
http_port 127.0.0.1:$SQ
pid_filename $WORK/squid/squid.pid
access_log stdio:$WORK/squid/access.log
cache_log $WORK/squid/cache.log
cache_store_log none
netdb_filename none
coredump_dir $WORK/squid
cache deny all
cache_mem 8 MB
hosts_file $WORK/squid.hosts
dns_nameservers 127.0.0.1
visible_hostname parent.e2e.test
shutdown_lifetime 0 seconds
acl upstream_ports port $ECHO $HTTP $BANNER
acl refused dstdomain -n refused.e2e.test
http_access deny refused
http_access deny !upstream_ports
http_access allow all
EOF
spawn squid squid -N -f "$WORK/squid.conf"
wait_tcp "$SQ" || { echo "Bail out! squid did not start: $(cat squid.err squid/cache.log 2>/dev/null)"; exit 99; }
SQLOG=$WORK/squid/access.log
# Squid writes a tunnel's line when the tunnel ends.
sq_lines() { if [ -f "$SQLOG" ]; then wc -l < "$SQLOG" | tr -d ' '; else echo 0; fi; }
_sq_has() { tail -n "+$(($2 + 1))" "$SQLOG" 2>/dev/null | grep -q -- "$1"; }
sq_wait() { wait_until _sq_has "$1" "$2"; }

# tinyproxy: Basic authentication, CONNECT to the echo port only.
TP=$(freeport)
TPPASS=s3cret-Pw-e2e
cat > tinyproxy.conf <<EOF
Port $TP
Listen 127.0.0.1
Timeout 30
LogFile "$WORK/tinyproxy.log"
LogLevel Info
MaxClients 20
Allow 127.0.0.1
BasicAuth egress $TPPASS
ConnectPort $ECHO
DisableViaHeader Yes
EOF
touch tinyproxy.log
chmod 666 tinyproxy.log
spawn tinyproxy tinyproxy -d -c "$WORK/tinyproxy.conf"
wait_tcp "$TP" || { echo "Bail out! tinyproxy did not start: $(cat tinyproxy.err tinyproxy.log)"; exit 99; }

S=$RUN/p.sock
# start DIRECTIVE...: egressd with this parent-proxy line (and others).
start() {
	conf_begin "$@"
	principal p parent.policy
	egressd_start
}
restart() {
	egressd_stop
	start "$@"
}
# tunnel PROTO HOST PORT [args]: the status and what became of the echo, on one line.
tunnel() {
	py tunnel "$@" --timeout 8 | tr '\n' ' ' | sed 's/ $//'
}

# --- resolve local --------------------------------------------------------------------------
start "parent-proxy http://parent.e2e.test:$SQ"

m=$(rcpt_mark)
s=$(sq_lines)
expect_eq "resolve local: CONNECT through the parent, bytes both ways" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo --size 5000)"
expect_eq "resolve local: the close receipt has via and the real addr" \
    "close allowed 127.0.0.1 parent 5000 5000" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,addr,via,bytes_up,bytes_down)"
expect_eq "resolve local: the open receipt too" "open 127.0.0.1 parent" \
    "$(rcpt --skip "$m" --where event=open --fields event,addr,via)"
if sq_wait " CONNECT 127.0.0.1:$ECHO " "$s"; then
	ok "resolve local: the parent was asked CONNECT 127.0.0.1:$ECHO (the pinned address)"
else
	not_ok "resolve local: the parent was asked CONNECT 127.0.0.1:$ECHO: $(tail -n 3 "$SQLOG")"
fi
expect_eq "resolve local: the parent never saw the name" 0 \
    "$(grep -c 'up\.e2e\.test' "$SQLOG")"

m=$(rcpt_mark)
expect_eq "resolve local: SOCKS5 through the parent" "00 echo-ok" \
    "$(tunnel socks5 "$S" up.e2e.test "$ECHO" --mode echo)"
expect_eq "resolve local: SOCKS5 receipt" "close socks5 127.0.0.1 parent" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,frontend,addr,via)"

# A server-first upstream: its banner may come in the same segment as the parent's 200.
m=$(rcpt_mark)
rm -f banner.report
out=$(py tunnel connect "$S" up.e2e.test "$BANNER" --mode hold --hello "" --wait-bytes 21 \
    --hold-secs 5 --timeout 8 | tr '\n' ' ')
case $out in
200\ eof\ *\ 21\ ) ok "server first through the parent: the banner arrived" ;;
*) not_ok "server first through the parent: the banner arrived ($out)" ;;
esac

# Plain HTTP forwarding: a CONNECT tunnel to the parent, the request forwarded inside it.
bridge "$S"
s=$(sq_lines)
m=$(rcpt_mark)
body=$(curl -s --max-time 8 -x "http://127.0.0.1:$BRIDGE_PORT" "http://up.e2e.test:$HTTP/through-parent")
case $body in
*through-parent*) ok "plain HTTP through the parent: the upstream answered" ;;
*) not_ok "plain HTTP through the parent: the upstream answered ($body)" ;;
esac
expect_eq "plain HTTP through the parent: receipt" "close http-forward 127.0.0.1 parent" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,frontend,addr,via)"
if sq_wait " CONNECT 127.0.0.1:$HTTP " "$s"; then
	ok "plain HTTP through the parent: asked as CONNECT 127.0.0.1:$HTTP"
else
	not_ok "plain HTTP through the parent: asked as CONNECT ($(tail -n 2 "$SQLOG"))"
fi

# Refused before the parent is asked: its log does not move (every tunnel above is
# logged by now: the last wait saw the last one).
s=$(sq_lines)
m=$(rcpt_mark)
expect_eq "a denied name is refused" "403 denied-by-rule data" "$(tunnel connect "$S" denied.e2e.test "$ECHO")"
expect_eq "a denied name: receipt" "deny denied-by-rule -" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via)"
m=$(rcpt_mark)
expect_eq "a private answer is refused under resolve local" "403 private-address data" \
    "$(tunnel connect "$S" private.e2e.test "$ECHO")"
expect_eq "a private answer: receipt" "deny private-address 10.1.2.3 -" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,addr,via)"

# A marker tunnel: once Squid logged it, everything before it is logged too.
expect_eq "a marker tunnel after the refusals" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
sq_wait " CONNECT 127.0.0.1:$ECHO " "$s"
expect_eq "refused requests never reached the parent (one line in its log: the marker)" 1 \
    "$(($(sq_lines) - s))"

# The SNI guard runs on the client's bytes before anything goes through the parent.
m=$(rcpt_mark)
: > echo.log
expect_eq "a foreign ClientHello through the parent is cut" "200 closed after 0" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode hello --sni other.e2e.test)"
expect_eq "a foreign ClientHello: receipt" "deny sni-mismatch parent" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via)"
wait_for -s echo.log
expect_eq "a foreign ClientHello: not one byte reached the upstream" '{"bytes": 0}' \
    "$(tr -d '\n' < echo.log)"

# The parent refuses the destination (Squid: http_access deny): connect-refused, its
# status line in the log.
m=$(rcpt_mark)
lm=$(log_mark)
expect_eq "the parent refusing the destination: 502" "502 connect-refused data" \
    "$(tunnel connect "$S" up.e2e.test 9)"
expect_eq "the parent refusing the destination: receipt" "deny connect-refused parent" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via)"
if wait_log 'reason=connect-refused why="the parent answered HTTP/1.1 403' "$lm"; then
	ok "the parent refusing the destination: its status line is in the log"
else
	not_ok "the parent refusing the destination: its status line is in the log"
fi
# The engine dies with a tunnel through the parent open: the monitor's daemon-restart
# close repeats via beside addr.
touch hold
m=$(rcpt_mark)
spawn holder "$E2E_PY" "$HELPER" tunnel connect "$S" up.e2e.test "$ECHO" --mode hold \
    --hold-file "$WORK/hold" --status-file "$WORK/held" --timeout 8
wait_for -s held
expect_eq "a held tunnel through the parent is open" "open parent" \
    "$(rcpt --skip "$m" --where event=open --wait 10 --fields event,via)"
lm=$(log_mark)
kill -KILL "$ENGINE_PID"
expect_eq "the engine killed: its daemon-restart close carries via and addr" \
    "close daemon-restart 127.0.0.1 parent" \
    "$(rcpt --skip "$m" --where close=daemon-restart --wait 10 --fields event,close,addr,via)"
wait_log "event=started " "$lm" || { echo "Bail out! no new engine: $(tail -n 5 egressd.err)"; exit 99; }
check_receipts "resolve local"

# --- resolve parent -------------------------------------------------------------------------
restart "parent-proxy http://127.0.0.1:$SQ resolve parent"
s=$(sq_lines)
m=$(rcpt_mark)
q=$(grep -c . "$DNSLOG" 2>/dev/null || echo 0)
expect_eq "resolve parent: a name only the parent knows" "200 echo-ok" \
    "$(tunnel connect "$S" only.e2e.test "$ECHO" --mode echo)"
expect_eq "resolve parent: receipt with via and no addr" "close allowed - parent" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,addr,via)"
if sq_wait " CONNECT only.e2e.test:$ECHO " "$s"; then
	ok "resolve parent: the parent was asked CONNECT only.e2e.test:$ECHO"
else
	not_ok "resolve parent: the parent was asked the name ($(tail -n 2 "$SQLOG"))"
fi
expect_eq "resolve parent: egressd's resolver heard nothing of it" 0 \
    "$(grep -c 'only\.e2e\.test' "$DNSLOG" 2>/dev/null)"
m=$(rcpt_mark)
s=$(sq_lines)
expect_eq "resolve parent: a denied name is still refused" "403 denied-by-rule data" \
    "$(tunnel connect "$S" denied.e2e.test "$ECHO")"
expect_eq "resolve parent: the parent refusing a name: 502" "502 connect-refused data" \
    "$(tunnel connect "$S" refused.e2e.test "$ECHO")"
expect_eq "resolve parent: its receipt" "deny connect-refused refused.e2e.test parent" \
    "$(rcpt --skip "$m" --where event=deny --where reason=connect-refused --wait 10 --fields event,reason,host,via)"
check_receipts "resolve parent"

# --- Basic auth (tinyproxy) -------------------------------------------------------------------
printf 'egress:%s\n' "$TPPASS" > auth.good
printf 'egress:wrong-%s\n' "$TPPASS" > auth.bad
chmod 600 auth.good auth.bad
restart "parent-proxy http://127.0.0.1:$TP auth $WORK/auth.good"
m=$(rcpt_mark)
expect_eq "auth: the right credential passes" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
expect_eq "auth: receipt" "close allowed 127.0.0.1 parent" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,addr,via)"
# SIGHUP: the confined engine reads the file again, opened by its monitor.
lm=$(log_mark)
kill -HUP "$EGRESSD_PID"
if wait_log 'event=reload result=ok' "$lm"; then
	ok "auth: SIGHUP re-reads the auth file through the monitor"
else
	not_ok "auth: SIGHUP re-reads the auth file through the monitor ($(tail -n 3 egressd.err))"
fi
expect_eq "auth: after SIGHUP the tunnel still passes" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
# A changed credential is not taken by SIGHUP (the parent settings stay as egressd
# started): the log says so instead of result=ok alone, and the running one still passes.
cp auth.good auth.keep
cp auth.bad auth.good
lm=$(log_mark)
kill -HUP "$EGRESSD_PID"
if wait_log 'event=reload detail="parent-proxy changed' "$lm"; then
	ok "auth: SIGHUP with a changed credential says it applies at the next start"
else
	not_ok "auth: SIGHUP with a changed credential says so ($(tail -n 3 egressd.err))"
fi
expect_eq "auth: and the running credential still passes" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
cp auth.keep auth.good
restart "parent-proxy http://127.0.0.1:$TP auth $WORK/auth.bad"
m=$(rcpt_mark)
lm=$(log_mark)
expect_eq "auth: a wrong credential is connect-refused (502)" "502 connect-refused data" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
expect_eq "auth: its receipt" "deny connect-refused parent" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via)"
if wait_log 'reason=connect-refused why="the parent answered HTTP/1.[01] 40[17]' "$lm"; then
	ok "auth: the parent's refusal (tinyproxy: 401, Squid: 407) is in the log"
else
	not_ok "auth: the parent's 407 is in the log ($(tail -n 3 egressd.err))"
fi
egressd_stop
b64=$(printf 'egress:%s' "$TPPASS" | base64)
b64bad=$(printf 'egress:wrong-%s' "$TPPASS" | base64)
expect_eq "auth: no password and no credential in egressd's log or the receipts" 0 \
    "$(cat egressd.err "$RCPT" | grep -c -e "$TPPASS" -e "$b64" -e "$b64bad")"
check_receipts "auth"

# --- https:// parents (TLS to the parent: socat terminates it in front of Squid) -----------------
printf 'subjectAltName=DNS:parent.e2e.test,IP:127.0.0.1\n' > ext.cnf
for ca in ca other; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $ca.key \
	    -out $ca.pem -days 2 -subj "/CN=e2e $ca" 2>/dev/null
done
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr \
    -subj /CN=parent.e2e.test 2>/dev/null
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
    -extfile ext.cnf 2>/dev/null
TLSP=$(freeport)
spawn tlsparent socat "OPENSSL-LISTEN:$TLSP,bind=127.0.0.1,reuseaddr,fork,cert=$WORK/srv.pem,key=$WORK/srv.key,verify=0" \
    "TCP:127.0.0.1:$SQ"
wait_tcp "$TLSP" || { echo "Bail out! socat (TLS) did not listen: $(cat tlsparent.err)"; exit 99; }
start "parent-proxy https://parent.e2e.test:$TLSP ca $WORK/ca.pem"
s=$(sq_lines)
m=$(rcpt_mark)
expect_eq "https parent: a tunnel through TLS to the parent, 200 kB both ways" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo --size 200000)"
expect_eq "https parent: receipt" "close allowed 127.0.0.1 parent 200000 200000" \
    "$(rcpt --skip "$m" --where event=close --wait 10 --fields event,reason,addr,via,bytes_up,bytes_down)"
if sq_wait " CONNECT 127.0.0.1:$ECHO " "$s"; then
	ok "https parent: the parent behind TLS was asked CONNECT 127.0.0.1:$ECHO"
else
	not_ok "https parent: the parent behind TLS was asked ($(tail -n 2 "$SQLOG"))"
fi
expect_eq "https parent: the server-first banner through TLS" "200 eof" \
    "$(py tunnel connect "$S" up.e2e.test "$BANNER" --mode hold --hello "" --wait-bytes 21 \
    --hold-secs 5 --timeout 8 | tr '\n' ' ' | awk '{ print $1, $2 }')"
expect_eq "https parent: SOCKS5 through TLS" "00 echo-ok" \
    "$(tunnel socks5 "$S" up.e2e.test "$ECHO" --mode echo --size 5000)"
# One segment of client bytes, released by the SNI guard with no read after it: the
# bufferevents must move it (the fast relay, which would, is not for TLS parents).
expect_eq "https parent: 1000 bytes in one segment" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo --size 1000)"
# SIGHUP: the confined engine reads the ca file again, opened by its monitor.
lm=$(log_mark)
kill -HUP "$EGRESSD_PID"
if wait_log 'event=reload result=ok' "$lm"; then
	ok "https parent: SIGHUP re-reads the ca file through the monitor"
else
	not_ok "https parent: SIGHUP re-reads the ca file through the monitor ($(tail -n 3 egressd.err))"
fi
restart "parent-proxy https://127.0.0.1:$TLSP ca $WORK/ca.pem"
expect_eq "https parent by address (the certificate's IP)" "200 echo-ok" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
# tlsbad WHAT DIRECTIVE PATTERN: connect-refused, the TLS failure in the log.
tlsbad() {
	restart "$2"
	_m=$(rcpt_mark)
	_lm=$(log_mark)
	expect_eq "$1: connect-refused" "502 connect-refused data" \
	    "$(tunnel connect "$S" up.e2e.test "$ECHO" --mode echo)"
	expect_eq "$1: receipt" "deny connect-refused parent" \
	    "$(rcpt --skip "$_m" --where event=deny --wait 10 --fields event,reason,via)"
	if wait_log "why=\"the parent's TLS: $3" "$_lm"; then
		ok "$1: the log says why"
	else
		not_ok "$1: the log says why ($(tail -n 2 egressd.err))"
	fi
}
tlsbad "https parent with another CA" "parent-proxy https://parent.e2e.test:$TLSP ca $WORK/other.pem" \
    "unable to get local issuer certificate"
tlsbad "https parent: a name its certificate does not have" \
    "parent-proxy https://wrong.e2e.test:$TLSP ca $WORK/ca.pem" "hostname mismatch"
tlsbad "https parent: the system store does not know the test's CA" \
    "parent-proxy https://parent.e2e.test:$TLSP" "unable to get local issuer certificate"
restart "parent-proxy http://127.0.0.1:$TLSP"
expect_eq "an http:// parent that speaks TLS: connect-refused" "502 connect-refused data" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO")"
egressd_stop
check_receipts "https parents"

# --- a parent that is down, or never answers ----------------------------------------------------
DOWN=$(freeport)
start "parent-proxy http://127.0.0.1:$DOWN"
m=$(rcpt_mark)
expect_eq "a parent that is down: connect-refused (502)" "502 connect-refused data" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO")"
expect_eq "a parent that is down: receipt" "deny connect-refused parent" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via)"
MUTE=$(freeport)
spawn mute socat "TCP-LISTEN:$MUTE,bind=127.0.0.1,reuseaddr,fork" "EXEC:sleep 30"
wait_tcp "$MUTE" || { echo "Bail out! socat did not listen"; exit 99; }
restart "parent-proxy http://127.0.0.1:$MUTE"
m=$(rcpt_mark)
t0=$(date +%s)
expect_eq "a parent that never answers: connect-timeout (504)" "504 connect-timeout data" \
    "$(tunnel connect "$S" up.e2e.test "$ECHO")"
t=$(($(date +%s) - t0))
if [ "$t" -ge 1 ] && [ "$t" -le 4 ]; then
	ok "a parent that never answers: within timeout connect (2 s; took ${t} s)"
else
	not_ok "a parent that never answers: within timeout connect (2 s; took ${t} s)"
fi
expect_eq "a parent that never answers: receipt" "deny connect-timeout parent" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via)"
# A parent by a name its DNS never answers, timeout dns as long as timeout connect: both
# deadlines run out together. The connect deadline's denial cancels the lookup (once its
# answer reached the drained connection: a second denial, then abort, the engine gone).
{ cat parent.policy; echo "timeout dns 2s"; } > mute.policy
egressd_stop
conf_begin "parent-proxy http://mute.e2e.test:$SQ"
principal p mute.policy
egressd_start
ENG0=$ENGINE_PID
m=$(rcpt_mark)
expect_eq "a parent whose name is never answered: connect-timeout (504)" \
    "504 connect-timeout data" "$(tunnel connect "$S" up.e2e.test "$ECHO")"
sleep 1
expect_eq "a parent whose name is never answered: one denial, the same engine" \
    "deny connect-timeout parent $ENG0" \
    "$(rcpt --skip "$m" --where event=deny --wait 10 --fields event,reason,via) $(engine_pid; echo "$ENGINE_PID")"
expect_eq "a parent whose name is never answered: no engine exit in the log" "" \
    "$(grep -E 'event=engine-exit|abort' "$WORK/egressd.err")"
egressd_stop
check_receipts "parent down"

out=$("$EGRESSCTL" receipts verify --file "$RCPT" --key "$KEY")
expect_eq "egressctl receipts verify: records with via verify (exit 0)" 0 "$?"

# --- egressd -t -----------------------------------------------------------------------------
# conf_t WHAT EXPECT-IN-ERROR DIRECTIVE: egressd -t refuses it, saying why.
conf_t() {
	conf_begin "$3"
	principal p parent.policy
	_e=$("$EGRESSD" -t -c "$WORK/egressd.conf" 2>&1)
	_rc=$?
	case $_rc:$_e in
	2:*"$2"*) ok "egressd -t: $1" ;;
	*) not_ok "egressd -t: $1 (rc $_rc: $_e)" ;;
	esac
}
printf 'egress:%s\n' "$TPPASS" > auth.open
chmod 644 auth.open
printf 'no-colon\n' > auth.shape
chmod 600 auth.shape
conf_t "no scheme" "expected a parent URL" "parent-proxy 127.0.0.1:$SQ"
conf_t "no port" "http://HOST:PORT" "parent-proxy http://127.0.0.1"
conf_t "port 0" "needs a port" "parent-proxy http://127.0.0.1:0"
conf_t "a path" "no path" "parent-proxy http://127.0.0.1:$SQ/x/y"
conf_t "a user in the URL" "no user in the URL" "parent-proxy http://u:p@127.0.0.1:$SQ"
conf_t "another scheme" "expected a parent URL" "parent-proxy socks5://127.0.0.1:$SQ"
conf_t "a missing ca file" "ca $WORK/ca.none: No such file" "parent-proxy https://127.0.0.1:$SQ ca $WORK/ca.none"
conf_t "a ca file without a certificate" "no PEM certificate" "parent-proxy https://127.0.0.1:$SQ ca $WORK/zone"
conf_t "an unknown mode" "expected: resolve local|parent" "parent-proxy http://127.0.0.1:$SQ resolve both"
conf_t "an unknown option" "unknown or repeated parent-proxy option" "parent-proxy http://127.0.0.1:$SQ via x"
conf_t "ca with http" "ca applies to https:// parents only" "parent-proxy http://127.0.0.1:$SQ ca $WORK/zone"
conf_t "a missing auth file" "auth $WORK/auth.none: No such file" "parent-proxy http://127.0.0.1:$SQ auth $WORK/auth.none"
conf_t "a world-readable auth file" "must be 0600" "parent-proxy http://127.0.0.1:$SQ auth $WORK/auth.open"
conf_t "an auth file without user:password" "expected user:password" "parent-proxy http://127.0.0.1:$SQ auth $WORK/auth.shape"
conf_t "a second parent" "a second parent-proxy" "parent-proxy http://127.0.0.1:$SQ
parent-proxy http://127.0.0.1:$TP"
_e=$("$EGRESSD" -t -c "$WORK/egressd.conf" 2>&1)
expect_eq "egressd -t: an error names no password" 0 "$(printf '%s' "$_e" | grep -c -e "$TPPASS")"
conf_begin "parent-proxy http://[::1]:$SQ/ auth $WORK/auth.good resolve parent"
principal p parent.policy
expect_eq "egressd -t: a good parent line" 0 "$("$EGRESSD" -t -c "$WORK/egressd.conf" >/dev/null 2>&1; echo $?)"
conf_begin "parent-proxy https://parent.e2e.test:$SQ ca $WORK/ca.pem auth $WORK/auth.good"
principal p parent.policy
expect_eq "egressd -t: a good https parent line" 0 "$("$EGRESSD" -t -c "$WORK/egressd.conf" >/dev/null 2>&1; echo $?)"

finish
