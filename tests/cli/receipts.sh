#!/bin/sh
# egressctl's receipt verbs against receipt files made here: receipts-gen.py chains and
# MACs records exactly as egressd does (docs/receipts.md). verify: a good chain, each kind
# of tampering reported at the right record with exit 1, torn lines with and without their
# repair record, rotation across files. receipts: every filter against known content, the
# table and --json; --follow across appends, rotation and truncation. Real receipts from
# egressd are checked by tests/e2e/receipts.sh.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
CTL=$top_builddir/egressctl/egressctl
GEN="$top_srcdir/tests/cli/receipts-gen.py"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 is not installed"
	exit 77
fi
cd "$WORK" || exit 1
gen() { python3 "$GEN" "$@"; }
# run CMD...: stdout and stderr, then "rc=N" on a line of its own
run() { "$@" 2>&1; echo "rc=$?"; }
verify() { run "$CTL" receipts verify "$@"; }
head -c 32 /dev/urandom > key
head -c 32 /dev/urandom > wrong.key

# --- verify: a good chain ----------------------------------------------------------------
gen --key key --count 10 t.jsonl
expect_eq "a good file verifies with its key" "10 records verified, MACs good
rc=0" "$(verify --file t.jsonl --key key)"
expect_eq "a good file verifies without a key (chain only)" \
    "10 records verified, chain only (no --key)
rc=0" "$(verify --file t.jsonl)"
expect_eq "the default file is /var/lib/egress/receipts.jsonl" \
    "egressctl: /var/lib/egress/receipts.jsonl: No such file or directory
rc=1" "$(if [ -e /var/lib/egress/receipts.jsonl ]; then
	printf 'egressctl: /var/lib/egress/receipts.jsonl: No such file or directory\nrc=1'
	else verify; fi)"

# --- verify: tampering, each at its record ----------------------------------------------------
sed '4s/"port":443/"port":444/' t.jsonl > flip.jsonl
expect_eq "a flipped byte: bad MAC at its record" "flip.jsonl:4: seq 4: bad MAC
3 records verified before the first break
rc=1" "$(verify --file flip.jsonl --key key)"
expect_eq "a flipped byte without a key: the next record's prev" \
    "flip.jsonl:5: seq 5: prev does not match the previous line: changed, reordered, deleted or inserted
4 records verified before the first break
rc=1" "$(verify --file flip.jsonl)"
sed '4d' t.jsonl > del.jsonl
expect_eq "a deleted line" \
    "del.jsonl:4: seq 5: seq 5 after 3: prev does not match the previous line: reordered, deleted or inserted
3 records verified before the first break
rc=1" "$(verify --file del.jsonl --key key)"
awk 'NR == 4 { held = $0; next } { print } NR == 5 { print held }' t.jsonl > swap.jsonl
expect_eq "two lines swapped" \
    "swap.jsonl:4: seq 5: seq 5 after 3: prev does not match the previous line: reordered, deleted or inserted
3 records verified before the first break
rc=1" "$(verify --file swap.jsonl --key key)"
sed '4p' t.jsonl > dup.jsonl
expect_eq "a duplicated line" "dup.jsonl:5: seq 4: duplicate (seq 4 after 4)
4 records verified before the first break
rc=1" "$(verify --file dup.jsonl --key key)"
head -c "$(($(head -n 5 t.jsonl | wc -c) + 40))" t.jsonl > cut.jsonl
expect_eq "truncated in the middle of a line" "cut.jsonl:6: torn line at the end (not repaired)
5 records verified before the first break
rc=1" "$(verify --file cut.jsonl --key key)"
expect_eq "the wrong key" "t.jsonl:1: seq 1: bad MAC
0 records verified before the first break
rc=1" "$(verify --file t.jsonl --key wrong.key)"
sed '3s/.*/{"seq":3,"garbage"/' t.jsonl > garbage.jsonl
expect_eq "an unparseable line in the middle" \
    "garbage.jsonl:3: unparseable line (not followed by its repair record)
2 records verified before the first break
rc=1" "$(verify --file garbage.jsonl --key key)"
sed '1s/"event":"open"/"event":"open","event":"open"/' t.jsonl | gen --key key --rechain twice.jsonl
expect_eq "the first line is read by jansson: a member twice" \
    "twice.jsonl:1: unparseable line (not followed by its repair record)
0 records verified before the first break
rc=1" "$(verify --file twice.jsonl --key key)"
sed '3s/"seq":3,/"seq":3 ,/' t.jsonl | gen --key key --rechain shape.jsonl
expect_eq "a line not in egressd's shape" \
    "shape.jsonl:3: unparseable line (not followed by its repair record)
2 records verified before the first break
rc=1" "$(verify --file shape.jsonl --key key)"
sed '5s/"event":"open"/"event":"repair","x":"\\u0000"/' t.jsonl | gen --key key --rechain nul.jsonl
expect_eq "a repair record is read by jansson" \
    "nul.jsonl:5: unparseable line (not followed by its repair record)
4 records verified before the first break
rc=1" "$(verify --file nul.jsonl --key key)"
sed '1,2d' t.jsonl > tailonly.jsonl
expect_match "a file that is not the chain's start" \
    "^tailonly.jsonl:1: seq 3: the first record's prev is not 64 zeros" "$(verify --file tailonly.jsonl)"

# --- verify: torn lines -------------------------------------------------------------------
gen --key key --count 5 a.jsonl
printf '{"event":"repair","time":"2026-11-29T12:00:00.000Z","detail":"torn-line bytes=40"}\n' |
    gen --key key --after a.jsonl repair.jsonl
gen --key key --count 3 --after repair.jsonl more.jsonl
{ cat a.jsonl; head -n 1 t.jsonl | head -c 40; echo; cat repair.jsonl more.jsonl; } > repaired.jsonl
expect_eq "a torn line followed by its repair record" \
    "9 records verified, MACs good, 1 torn line repaired
rc=0" "$(verify --file repaired.jsonl --key key)"
{ cat a.jsonl; head -n 1 t.jsonl | head -c 40; } > torn.jsonl
expect_eq "a torn last line, not repaired" "torn.jsonl:6: torn line at the end (not repaired)
5 records verified before the first break
rc=1" "$(verify --file torn.jsonl --key key)"
{ cat a.jsonl; head -n 1 t.jsonl | head -c 40; echo; } > torn-nl.jsonl
expect_eq "an unparseable last line" "torn-nl.jsonl:6: unparseable line
5 records verified before the first break
rc=1" "$(verify --file torn-nl.jsonl --key key)"
# A line whole but for its newline: egressd's restart leaves it out of the chain too.
gen --key key --count 6 six.jsonl
l6=$(sed -n 6p six.jsonl)
printf '{"event":"repair","time":"2026-11-29T12:00:00.000Z","detail":"torn-line bytes=%s"}\n' \
    "${#l6}" | gen --key key --after a.jsonl repair6.jsonl
{ cat a.jsonl; printf '%s\n' "$l6"; cat repair6.jsonl; } > whole.jsonl
expect_eq "a whole line that lost its newline, then its repair" \
    "6 records verified, MACs good, 1 torn line repaired
rc=0" "$(verify --file whole.jsonl --key key)"
{ cat a.jsonl; printf '%s' "$l6"; } > whole-nonl.jsonl
expect_eq "a whole last line without its newline" \
    "whole-nonl.jsonl:6: torn line at the end (not repaired)
5 records verified before the first break
rc=1" "$(verify --file whole-nonl.jsonl --key key)"

# --- verify: rotation -----------------------------------------------------------------------
gen --key key --count 4 --after a.jsonl b.jsonl
expect_eq "two files in order: the chain continues" "9 records verified, MACs good
rc=0" "$(verify --file a.jsonl --file b.jsonl --key key)"
expect_match "two files in the wrong order" \
    "^b.jsonl:1: seq 6: the first record's prev is not 64 zeros" \
    "$(verify --file b.jsonl --file a.jsonl --key key)"
expect_eq "a file given twice" "a.jsonl:1: seq 1: seq 1 after 5: prev does not match the previous line: reordered, deleted or inserted
5 records verified before the first break
rc=1" "$(verify --file a.jsonl --file a.jsonl)"

# --- usage -------------------------------------------------------------------------------------
expect_eq "--file without its argument is a usage error" 2 \
    "$("$CTL" receipts verify --file >/dev/null 2>&1; echo $?)"
expect_eq "an operand is a usage error" 2 \
    "$("$CTL" receipts verify t.jsonl >/dev/null 2>&1; echo $?)"
# A file or key that cannot be read is a runtime failure (1), not a usage error (2).
expect_eq "a missing file: exit 1, saying which" "egressctl: nope: No such file or directory
rc=1" "$(verify --file nope)"
expect_eq "a missing second file: exit 1, after nothing printed as verified" \
    "egressctl: nope: No such file or directory
rc=1" "$(verify --file t.jsonl --file nope --key key)"
mkdir unreadable.d
expect_eq "a file that cannot be read (a directory): exit 1" 1 \
    "$("$CTL" receipts verify --file unreadable.d >/dev/null 2>&1; echo $?)"
expect_eq "a missing --key: exit 1" 1 \
    "$("$CTL" receipts verify --file t.jsonl --key nope.key >/dev/null 2>&1; echo $?)"
expect_eq "a missing --pubkey: exit 1" 1 \
    "$("$CTL" receipts verify --file t.jsonl --pubkey nope.pub >/dev/null 2>&1; echo $?)"
expect_eq "an unknown option is still a usage error" 2 \
    "$("$CTL" receipts verify --file t.jsonl --nope >/dev/null 2>&1; echo $?)"
expect_eq "a bad --since" 2 "$("$CTL" receipts --file t.jsonl --since yesterday >/dev/null 2>&1; echo $?)"
expect_eq "a bad --decision" 2 "$("$CTL" receipts --file t.jsonl --decision maybe >/dev/null 2>&1; echo $?)"

# --- receipts: filters against known content --------------------------------------------------------
ago() { date -u -d "@$(($(date +%s) - $1))" +%Y-%m-%dT%H:%M:%S.000Z; }
T_OLD=$(ago 7200)
T_NEW=$(ago 600)
cat > in.jsonl <<EOF2
{"event":"open","id":"c-0000000000000001","time":"2026-11-29T12:00:00.123Z","principal":"build-42","policy":"sha256:0db7","frontend":"http-connect","host":"api.github.com","port":443,"addr":"140.82.112.6","sni":"api.github.com","reason":"allowed"}
{"event":"close","id":"c-0000000000000001","time":"2026-11-29T12:00:01.000Z","principal":"build-42","policy":"sha256:0db7","frontend":"http-connect","host":"api.github.com","port":443,"addr":"140.82.112.6","sni":"api.github.com","reason":"allowed","close":"client-eof","bytes_up":1234,"bytes_down":56789,"duration_ms":812}
{"event":"deny","id":"c-0000000000000002","time":"2026-11-29T12:05:00.000Z","principal":"build-42","policy":"sha256:0db7","frontend":"socks5","host":"evil.example.org","port":443,"reason":"not-allowlisted","duration_ms":2,"count":37}
{"event":"deny","id":"c-0000000000000003","time":"2026-11-29T12:30:00.000Z","principal":"build-7","policy":"sha256:77aa","frontend":"http-forward","host":"intranet.corp.example","port":80,"addr":"10.0.0.1","reason":"private-address","duration_ms":4}
{"event":"open","id":"c-0000000000000004","time":"2026-11-29T13:00:00.000Z","principal":"build-7","policy":"sha256:77aa","frontend":"socks5","host":"pypi.org","port":443,"addr":"151.101.0.223","reason":"allowed"}
{"event":"close","id":"c-0000000000000004","time":"2026-11-29T13:00:05.000Z","principal":"build-7","policy":"sha256:77aa","frontend":"socks5","host":"pypi.org","port":443,"addr":"151.101.0.223","reason":"allowed","close":"upstream-eof","bytes_up":10,"bytes_down":20,"duration_ms":5000}
{"event":"deny","id":"c-0000000000000005","time":"$T_OLD","principal":"build-42","policy":"sha256:0db7","frontend":"socks5","host":"old.example.com","port":22,"reason":"not-allowlisted","duration_ms":1}
{"event":"deny","id":"c-0000000000000006","time":"$T_NEW","principal":"build-42","policy":"sha256:0db7","frontend":"socks5","host":"new.example.com","port":22,"reason":"not-allowlisted","duration_ms":1}
EOF2
gen --key key q.jsonl < in.jsonl
expect_eq "the query file verifies" "8 records verified, MACs good
rc=0" "$(verify --file q.jsonl --key key)"
# ids of the matching records, from --json
ids() { "$CTL" receipts --file q.jsonl --json "$@" | sed 's/.*"id":"c-0*\([0-9]*\)".*/\1/' | tr '\n' ' '; }
expect_eq "--principal build-42" "1 1 2 5 6 " "$(ids --principal build-42)"
expect_eq "--principal build-4 matches no prefix" "" "$(ids --principal build-4)"
expect_eq "--principal build-7" "3 4 4 " "$(ids --principal build-7)"
expect_eq "--decision allow: opens and closes" "1 1 4 4 " "$(ids --decision allow)"
expect_eq "--decision deny" "2 3 5 6 " "$(ids --decision deny)"
expect_eq "--reason private-address" "3 " "$(ids --reason private-address)"
expect_eq "--host '*.example.org'" "2 " "$(ids --host '*.example.org')"
expect_eq "--host 'p?pi.*'" "4 4 " "$(ids --host 'p?pi.*')"
expect_eq "--since absolute, with milliseconds" "1 2 3 4 4 5 6 " "$(ids --since 2026-11-29T12:00:01.000Z)"
expect_eq "--since absolute, without seconds" "2 3 4 4 5 6 " "$(ids --since 2026-11-29T12:05)"
expect_eq "--until absolute (exclusive)" "1 1 " "$(ids --until 2026-11-29T12:05:00Z)"
expect_eq "--since and --until" "3 4 " "$(ids --since 2026-11-29T12:30 --until 2026-11-29T13:00:01)"
expect_eq "--since -1h (relative)" "6 " "$(ids --since -1h)"
expect_eq "--since -180m --until -30m" "5 " "$(ids --since -180m --until -30m)"
expect_eq "--since -7200s includes nothing older" "6 " "$(ids --since -7100s)"
# ISO 8601 --until (exclusive), one per line: ARGUMENT|IDS OF THE RECORDS BEFORE IT.
# A date alone is midnight UTC; T or a space; an offset is converted to UTC (also across
# a day); the record times are 12:00:00.123, 12:00:01, 12:05, 12:30, 13:00, 13:00:05 UTC.
while IFS='|' read -r arg want; do
	expect_eq "--until '$arg'" "$want" "$(ids --until "$arg")"
done <<'EOF2'
2026-11-29|
2026-11-29T12:05|1 1 
2026-11-29T12:05Z|1 1 
2026-11-29 12:05|1 1 
2026-11-29 12:05:00Z|1 1 
2026-11-29T13:05:00+01:00|1 1 
2026-11-29T13:05+0100|1 1 
2026-11-29T13:05+01|1 1 
2026-11-29T07:05-05:00|1 1 
2026-11-29T06:35:00.000-0530|1 1 
2026-11-29T12:05+00:00|1 1 
2026-11-29T12:05-00:00|1 1 
2026-11-29T12:00:01.001+00:00|1 1 
2026-11-29T13:00:01+01:00|1 
2026-11-29T12:00:00.124|1 
2026-11-29T12:00:00.1239999|
2026-11-30T00:05+11:00|1 1 2 3 4 4 
2026-11-28T23:30-12:30|
2026-11-28T23:30:01-12:30|1 
EOF2
# Strict: every field its width, nothing around, a real date and time, a bounded fraction.
while read -r arg; do
	expect_eq "--since '$arg' is refused (usage)" 2 \
	    "$("$CTL" receipts --file q.jsonl --since "$arg" >/dev/null 2>&1; echo $?)"
done <<'EOF2'
2026-11-29T12
2026-11-29T
2026-11-29T12:5
2026-11-29T1:05
2026-1-29
26-11-29
+2026-11-29
2026-11-29t12:05
2026-11-29TT12:05
2026-11-29_12:05
2026-11-29T12:05:
2026-11-29T12:05:0
2026-11-29T12:05:00.
2026-11-29T12:05:00.1234567890
2026-11-29T12:05+1
2026-11-29T12:05+01:5
2026-11-29T12:05+015
2026-11-29T12:05+01:00:00
2026-11-29T12:05+24:00
2026-11-29T12:05+01:60
2026-11-29T12:05Z+01:00
2026-11-29T12:05ZZ
2026-11-29T12:05 Z
2026-11-29+01:00
2026-11-29T24:00
2026-11-29T12:60
2026-11-29T12:05:61
2026-02-29
2026-04-31
2026-13-01
2026-00-10
1969-12-31
1970-01-01T00:30+01:00
2026-11-29T12:05x
EOF2
expect_eq "--since '2028-02-29' (a leap day) is a date" "" "$(ids --since 2028-02-29)"
for arg in " 2026-11-29" "2026-11-29 " "2026-11-29T12:05 "; do
	expect_eq "--since '$arg' (a space around) is refused" 2 \
	    "$("$CTL" receipts --file q.jsonl --since "$arg" >/dev/null 2>&1; echo $?)"
done
expect_eq "--principal and --decision deny and --host" "6 " \
    "$(ids --principal build-42 --decision deny --host 'new.*')"
expect_eq "--json prints the lines unchanged" "$(sed -n '4p;5p;6p' q.jsonl)" \
    "$("$CTL" receipts --file q.jsonl --json --principal build-7)"
expect_eq "the table" \
"TIME                     PRINCIPAL        FRONTEND     HOST:PORT                        ADDRESS         DECISION/REASON                          UP       DOWN  DURATION
2026-11-29T12:00:00.123Z build-42         http-connect api.github.com:443               140.82.112.6    open/allowed                              -          -         -
2026-11-29T12:00:01.000Z build-42         http-connect api.github.com:443               140.82.112.6    close/allowed/client-eof               1234      56789     812ms
2026-11-29T12:05:00.000Z build-42         socks5       evil.example.org:443             -               deny/not-allowlisted x37                  -          -       2ms
2026-11-29T12:30:00.000Z build-7          http-forward intranet.corp.example:80         10.0.0.1        deny/private-address                      -          -       4ms" \
    "$("$CTL" receipts --file q.jsonl --until 2026-11-29T13:00)"
expect_eq "two files are read in order" "$(cat a.jsonl b.jsonl)" \
    "$("$CTL" receipts --file a.jsonl --file b.jsonl --json)"
expect_eq "an unparseable line is skipped with a note" \
    "egressctl: garbage.jsonl:3: unparseable line skipped (egressctl receipts verify says more)
9" "$("$CTL" receipts --file garbage.jsonl --json 2>&1 >/dev/null; "$CTL" receipts --file garbage.jsonl --json 2>/dev/null | wc -l | tr -d ' ')"

# --- receipts --follow: appends, a partial line, rotation, truncation ----------------------------
# wait_lines FILE N: until FILE has N lines, at most 5 s
wait_lines() {
	_i=0
	while [ "$(wc -l < "$1" | tr -d ' ')" -lt "$2" ] && [ $_i -lt 100 ]; do
		_i=$((_i + 1))
		sleep 0.05
	done
}
gen --key key --count 3 f.jsonl
"$CTL" receipts --follow --json --file f.jsonl > follow.out 2> follow.err &
FOLLOW_PID=$!
"$CTL" receipts --follow --json --principal build-2 --file f.jsonl > follow2.out 2>&1 &
FOLLOW2_PID=$!
wait_lines follow.out 3
expect_eq "--follow first prints what is there" "$(cat f.jsonl)" "$(cat follow.out)"
gen --key key --count 4 --after f.jsonl f-more.jsonl
cat f-more.jsonl >> f.jsonl
wait_lines follow.out 7
expect_eq "--follow prints appended records" "$(cat f.jsonl)" "$(cat follow.out)"
# A line written in two pieces is printed once whole.
gen --key key --count 1 --after f.jsonl f-one.jsonl
head -c 50 f-one.jsonl >> f.jsonl
sleep 0.5
expect_eq "--follow waits for a partial line's newline" 7 "$(wc -l < follow.out | tr -d ' ')"
tail -c +51 f-one.jsonl >> f.jsonl
wait_lines follow.out 8
# Rotation as egressd does it: mv, a last record to the old file by its descriptor, then
# a new file that continues the chain.
mv f.jsonl f.jsonl.1
gen --key key --count 2 --after f.jsonl.1 f-late.jsonl
cat f-late.jsonl >> f.jsonl.1
sleep 0.3
gen --key key --count 3 --after f.jsonl.1 f.jsonl
wait_lines follow.out 13
gen --key key --count 2 --after f.jsonl f-new.jsonl
cat f-new.jsonl >> f.jsonl
wait_lines follow.out 15
expect_eq "--follow reads the old file to its end, then the new one from its start" \
    "$(cat f.jsonl.1 f.jsonl)" "$(cat follow.out)"
expect_eq "what --follow printed verifies across the rotation" "15 records verified, MACs good
rc=0" "$(verify --file follow.out --key key)"
# A file that got shorter (copytruncate) is read again from its start.
cp f.jsonl f-rotated.jsonl
: > f.jsonl
sleep 0.3
gen --key key --count 2 --after f.jsonl.1 f-trunc.jsonl
cat f-trunc.jsonl >> f.jsonl
wait_lines follow.out 17
expect_eq "--follow reads a truncated file from its start" \
    "$(cat f.jsonl.1 f-rotated.jsonl f-trunc.jsonl)" "$(cat follow.out)"
kill -TERM "$FOLLOW_PID"
wait "$FOLLOW_PID"
expect_eq "--follow exits 0 on SIGTERM, quietly" "rc=0 " "rc=$? $(cat follow.err)"
kill -INT "$FOLLOW2_PID"
wait "$FOLLOW2_PID"
expect_eq "--follow exits 0 on SIGINT" 0 "$?"
expect_eq "--follow applies the filters" \
    "$(cat f.jsonl.1 f-rotated.jsonl f-trunc.jsonl | grep '"principal":"build-2"')" "$(cat follow2.out)"
expect_eq "--follow with the standard input is a usage error" 2 \
    "$("$CTL" receipts --follow --file - </dev/null >/dev/null 2>&1; echo $?)"

# --- real receipts: egressd's denials, a crash with a torn line, a rotation ------------------------
EGRESSD=$top_builddir/egressd
deny() {
	python3 - "$WORK/run/rc.sock" "$@" <<'PYEOF'
import socket, sys
for h in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sys.argv[1])
    s.sendall(('CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n' % (h, h)).encode())
    s.recv(200)
    s.close()
PYEOF
}
# egressd_up: starts egressd in the foreground, in the background; 1 when it does not start
egressd_up() {
	"$EGRESSD" -d -c "$WORK/egressd.conf" 2>>"$WORK/egressd.err" &
	EGRESSD_PID=$!
	_i=0
	until [ -S "$WORK/run/rc.sock" ]; do
		_i=$((_i + 1))
		if [ $_i -gt 100 ] || ! kill -0 "$EGRESSD_PID" 2>/dev/null; then
			kill -KILL "$EGRESSD_PID" 2>/dev/null
			wait "$EGRESSD_PID" 2>/dev/null
			return 1
		fi
		sleep 0.05
	done
}
if [ ! -x "$EGRESSD" ]; then
	echo "ok - real receipts # SKIP egressd is not built"
else
	mkdir -m 700 run
	printf 'allow ok.example.com 443\n' > p.policy
	cp key real.key
	chmod 600 real.key
	cat > egressd.conf <<EOF2
runtime-dir $WORK/run
control $WORK/ctl.sock
receipts $WORK/r.jsonl
receipt-key $WORK/real.key
resolver 127.0.0.1:9
shutdown-grace 1
principal rc socket $WORK/run/rc.sock policy $WORK/p.policy
EOF2
	if ! egressd_up; then
		echo "ok - real receipts # SKIP egressd did not start here: $(tail -n 1 egressd.err)"
	else
		deny nope.example.org evil.example.net
		kill -KILL "$EGRESSD_PID"
		wait "$EGRESSD_PID" 2>/dev/null
		expect_eq "egressd's receipts verify" "2 records verified, MACs good" \
		    "$("$CTL" receipts verify --file r.jsonl --key real.key)"
		expect_eq "egressd's denials, by host glob" "nope.example.org:443 deny/not-allowlisted" \
		    "$("$CTL" receipts --file r.jsonl --host 'nope.*' | awk 'NR == 2 { print $4, $6 }')"
		printf '{"seq":3,"prev":"sha' >> r.jsonl
		expect_eq "after kill -9 and a half-written line: torn, not repaired" \
		    "r.jsonl:3: torn line at the end (not repaired)" \
		    "$("$CTL" receipts verify --file r.jsonl --key real.key | head -n 1)"
		rm -f run/rc.sock ctl.sock
		if egressd_up; then
			"$CTL" receipts --follow --json --file r.jsonl > rfollow.out 2>/dev/null &
			FOLLOW_PID=$!
			deny before.example.org
			mv r.jsonl r.jsonl.1
			kill -USR1 "$EGRESSD_PID"
			sleep 0.3
			deny later.example.org
			kill -TERM "$EGRESSD_PID"
			wait "$EGRESSD_PID"
			want=$("$CTL" receipts --json --file r.jsonl.1 --file r.jsonl 2>/dev/null)
			wait_lines rfollow.out "$(printf '%s\n' "$want" | wc -l)"
			kill -TERM "$FOLLOW_PID"
			wait "$FOLLOW_PID"
			expect_eq "--follow sees a live egressd's records, across its rotation" \
			    "$want" "$(cat rfollow.out)"
			expect_eq "egressd's restart repairs it, and the chain goes on across the rotation" \
			    "5 records verified, MACs good, 1 torn line repaired" \
			    "$("$CTL" receipts verify --file r.jsonl.1 --file r.jsonl --key real.key)"
			expect_eq "the repair record is egressd's" "repair torn-line bytes=20" \
			    "$(grep '"event":"repair"' r.jsonl.1 | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); print(r["event"], r["detail"])')"
		else
			not_ok "egressd restarts after kill -9: $(tail -n 1 egressd.err)"
		fi
	fi
fi
finish
