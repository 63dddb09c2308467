#!/bin/sh
# egress-launch's exit status before anything starts: a usage error is 2 (the SPEC's
# usage or configuration error), with the usage on standard error, and nothing runs:
# no relay, no command. (The set-up failures, 125, 126 and 127, need a principal socket
# and are checked end to end by tests/e2e/sandbox-relay.sh.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/cli/lib.sh"
LAUNCH=$top_builddir/egress-launch
cd "$WORK" || exit 1

# ucase WHAT ARGS...: exit 2, the usage printed, the command (touch ran) not run.
ucase() {
	_what=$1
	shift
	rm -f ran
	"$LAUNCH" "$@" >out 2>err
	expect_eq "$_what: exit 2" 2 "$?"
	expect_match "$_what: the usage on stderr" "^usage: egress-launch " "$(cat err)"
	expect_eq "$_what: nothing ran" "no" "$([ -e ran ] && echo yes || echo no)"
}
ucase "no argument"
ucase "no --egress" -- touch ran
ucase "no command" --egress "$WORK/p.sock"
ucase "no command after --" --egress "$WORK/p.sock" --
ucase "an unknown option" --egress "$WORK/p.sock" --nope -- touch ran
ucase "--egress without its argument" --egress
ucase "--status-fd 4" --egress "$WORK/p.sock" --status-fd 4 -- touch ran
ucase "--status-fd 1" --egress "$WORK/p.sock" --status-fd 1 -- touch ran
ucase "--status-fd not a number" --egress "$WORK/p.sock" --status-fd x -- touch ran
ucase "--status-fd not open" --egress "$WORK/p.sock" --status-fd 9 -- touch ran
ucase "--listen without a port" --egress "$WORK/p.sock" --listen 127.0.0.1 -- touch ran
expect_match "... saying so" "--listen takes ADDR:PORT" "$(cat err)"
finish
