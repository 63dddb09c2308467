#!/bin/sh
# templates.sh: egress-run --allow @pypi (SPEC "Writing a policy without guessing"), in real
# bubblewrap, loopback only. The test's DNS server answers the template's names, pypi.org
# and files.pythonhosted.org, with 127.0.0.1, where an HTTPS upstream with a certificate for
# them listens on 443 (the port the template allows; this is the test's own network
# namespace, so nothing leaves the machine):
# - real curl inside reaches both names through the template;
# - a name the template lacks (notpypi.e2e.test, which the DNS server would answer too) and a
#   port it lacks (pypi.org:8443) are refused, and the summary says not-allowlisted;
# - --allow @NAME of a template that does not exist, and a name with '/', are usage errors
#   (125) naming the template folder, before anything runs;
# - egressd -t refuses an unsealed policy with an include line ("seal the policy", at
#   file:line:column) and takes its sealed form, which holds the template's rules.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/e2e/sandbox-lib.sh"
cd "$WORK" || exit 1
e2e_need openssl curl

EGRESS_TEMPLATE_DIR=$top_srcdir/templates
export EGRESS_TEMPLATE_DIR

# --- an HTTPS upstream on 127.0.0.1:443 for the template's names ----------------------------
if ! openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=pypi.org" -days 1 \
    -addext "subjectAltName=DNS:pypi.org,DNS:files.pythonhosted.org,DNS:notpypi.e2e.test" \
    -keyout "$WORK/up.key" -out "$BOX/up.crt" >"$WORK/openssl.log" 2>&1; then
	echo "Bail out! openssl req: $(cat "$WORK/openssl.log")"
	exit 99
fi
if [ "$(listening 443)" = 1 ]; then
	echo "Bail out! port 443 is taken in the test's namespace"
	exit 99
fi
spawn tls openssl s_server -quiet -accept 127.0.0.1:443 -cert "$BOX/up.crt" \
    -key "$WORK/up.key" -www
wait_tcp 443 || { echo "Bail out! openssl s_server did not start: $(cat "$WORK/tls.err")"; exit 99; }
# 8443 too, so that a refusal there is the policy's, not a closed port's.
spawn tls2 openssl s_server -quiet -accept 127.0.0.1:8443 -cert "$BOX/up.crt" \
    -key "$WORK/up.key" -www
wait_tcp 8443 || { echo "Bail out! openssl s_server did not start: $(cat "$WORK/tls2.err")"; exit 99; }
printf '%s A 127.0.0.1\n' pypi.org files.pythonhosted.org notpypi.e2e.test > "$WORK/zone"
dns_start "$WORK/zone"

R=$WORK/rcpt/r.jsonl
mkdir -m 700 "$WORK/rcpt"
DNSARGS="--resolver 127.0.0.1:$DNS_PORT --permit-range 127.0.0.0/8"
CURL="curl -sS --max-time 10 --cacert up.crt -o /dev/null -w %{http_code}"

# --- the template's names pass, others do not -------------------------------------------------
# shellcheck disable=SC2086
erun --allow @pypi $DNSARGS --receipts "$R" -- sh -c "
	echo index=\$($CURL https://pypi.org/simple/)
	echo files=\$($CURL https://files.pythonhosted.org/packages/x.whl)
	echo other=\$($CURL https://notpypi.e2e.test/ 2>/dev/null)
	echo port=\$($CURL https://pypi.org:8443/ 2>/dev/null)"
printf '%s\n' "$out" "$err" | sed 's/^/# /'
expect_eq "egress-run --allow @pypi: the run succeeds" 0 "$rc"
expect_match "pypi.org (the index) is reached through the template" "^index=200$" "$out"
expect_match "files.pythonhosted.org (the files) is reached through the template" "^files=200$" "$out"
expect_match "a name the template lacks is refused" "^other=000$" "$out"
expect_match "a port the template lacks is refused" "^port=000$" "$out"
expect_match "the summary names notpypi.e2e.test not-allowlisted" \
    "denied +notpypi\\.e2e\\.test:443 .*not-allowlisted" "$err"
expect_match "the summary names pypi.org:8443 not-allowlisted" \
    "denied +pypi\\.org:8443 .*not-allowlisted" "$err"

# --- a template with --allow HOST:PORT beside it ------------------------------------------------
# shellcheck disable=SC2086
erun --allow @pypi --allow pypi.org:8443 $DNSARGS --receipts "$R" --quiet -- sh -c "
	echo port=\$($CURL https://pypi.org:8443/)"
expect_match "@pypi and --allow pypi.org:8443 together: 8443 passes" "^port=200$" "$out"

# --- usage errors -------------------------------------------------------------------------------
: > "$BOX/ran"; rm -f "$BOX/ran"
# shellcheck disable=SC2086
erun --allow @nonesuch $DNSARGS --receipts "$R" -- sh -c ': > ran'
expect_eq "--allow @nonesuch: 125" 125 "$rc"
expect_match "--allow @nonesuch: names the template folder" \
    "cannot include template 'nonesuch': no such template in $EGRESS_TEMPLATE_DIR" "$err"
expect_eq "--allow @nonesuch: nothing ran" no "$([ -e "$BOX/ran" ] && echo yes || echo no)"
# shellcheck disable=SC2086
erun --allow @../templates/pypi $DNSARGS --receipts "$R" -- sh -c ': > ran'
expect_eq "--allow @../x: 125" 125 "$rc"
expect_match "--allow @../x: a template is a plain name" "bad template name" "$err"
expect_eq "--allow @../x: nothing ran" no "$([ -e "$BOX/ran" ] && echo yes || echo no)"

# --- egressd reads no include file: an unsealed policy with one is refused, sealed it serves --
printf 'include pypi\nallow api.example 443\n' > "$WORK/inc.policy"
"$EP" seal "$WORK/inc.policy" > "$WORK/inc.sealed"
conf_begin "principal p policy $WORK/inc.policy"
out=$("$EGRESSD" -t -c "$WORK/egressd.conf" 2>&1); rc=$?
expect_eq "egressd -t: an unsealed policy with an include: exit 2" 2 "$rc"
expect_match "egressd -t: ... says where and to seal it" \
    "$WORK/inc.policy:1:1: include is not read here: seal the policy" "$out"
conf_begin "principal p policy $WORK/inc.sealed"
out=$("$EGRESSD" -t -c "$WORK/egressd.conf" 2>&1); rc=$?
expect_eq "egressd -t: its sealed form (rules expanded, no template read): exit 0" 0 "$rc"
expect_eq "egressd -t: the sealed form has the template's rules" \
    "allow files.pythonhosted.org 443|allow pypi.org 443" \
    "$(grep '^allow .*py' "$WORK/inc.sealed" | tr '\n' '|' | sed 's/|$//')"

finish
