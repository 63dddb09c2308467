/*
 * check_policy.c: unit tests of the policy language (egress-policy(5)): every directive and
 * every error, the canonical form and its digest, and matching (deny beats allow,
 * wildcards, literals, port ranges, deciding lines), including a 100000-rule policy, and
 * include (expansion, origins, depth, cycles; the included bytes come from memory).
 *
 * The expectations come from the SPEC's "Policy language" section, not from the code: a
 * failure here means the library and the contract disagree. Nothing here touches the
 * network or the file system.
 */
#include "config.h"

#include <check.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define FILE_NAME "t.policy"

/* Table entries carry an explicit length so that NUL bytes can be part of the input. */
#define TXT(s) (s), 0
#define BIN(s) (s), (sizeof(s) - 1)

/* The canonical block of an empty policy: every default, spelled out, sorted. */
#define DEFAULTS_CANONICAL \
	"pin min 30s max 600s\n" \
	"quota bytes unlimited\n" \
	"quota connections 256\n" \
	"quota rate unlimited\n" \
	"sni match\n" \
	"timeout connect 10s\n" \
	"timeout dns 5s\n" \
	"timeout handshake 10s\n" \
	"timeout idle 300s\n"
#define DEFAULTS_LINES 9

/* --- helpers ---------------------------------------------------------------------- */

static size_t
text_len(const char *s, size_t len)
{
	return len != 0 ? len : strlen(s);
}

static struct policy *
load_text(const char *s, size_t len, struct policy_diag *d)
{
	return policy_load(FILE_NAME, (const uint8_t *)s, text_len(s, len), NULL, d);
}

/* Loads a policy that must be valid and free of errors. */
static struct policy *
must_load(const char *s, size_t len)
{
	struct policy_diag d;
	struct policy *p = load_text(s, len, &d);

	ck_assert_msg(p != NULL, "policy refused: %s\n--- input ---\n%s",
	    d.nerrors ? d.errors[0] : "(no error reported)", s);
	ck_assert_msg(d.nerrors == 0, "policy accepted with %zu errors, first: %s", d.nerrors,
	    d.nerrors ? d.errors[0] : "");
	policy_diag_free(&d);
	return p;
}

static char *
canonical_of(const char *s, size_t len)
{
	struct policy *p = must_load(s, len);
	size_t clen;
	char *c = policy_canonical(p, &clen);

	ck_assert_uint_eq(clen, strlen(c));
	policy_free(p);
	return c;
}

static void
digest_of(const char *s, size_t len, char out[EGRESS_DIGEST_STRLEN])
{
	struct policy *p = must_load(s, len);

	policy_digest(p, out);
	policy_free(p);
}

/* True when text has exactly this line (without its '\n'). */
static bool
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);

		if (len == n && memcmp(p, line, n) == 0)
			return true;
		p += len + (nl != NULL);
	}
	return false;
}

static size_t
count_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	return n;
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
parse_host(const char *name, struct host *h)
{
	const char *why = NULL;

	ck_assert_msg(host_parse(name, strlen(name), h, &why) == 0, "host_parse(%s): %s",
	    name, why ? why : "?");
}

/* --- every directive, accepted ------------------------------------------------------ */

struct ok_case {
	const char *text;
	size_t len;
	const char *line;            /* the line the canonical form must hold */
};

static const struct ok_case ok_cases[] = {
	{ TXT("allow x.com 443"), "allow x.com 443" },
	{ TXT("allow X.Com. 80,443"), "allow x.com 80,443" },
	{ TXT("allow x.com 1"), "allow x.com 1" },
	{ TXT("allow x.com 65535"), "allow x.com 65535" },
	{ TXT("allow x.com 1-65535"), "allow x.com 1-65535" },
	{ TXT("allow mirror.example.net 8000-8100"), "allow mirror.example.net 8000-8100" },
	{ TXT("allow x.com 22,80-90,443"), "allow x.com 22,80-90,443" },
	{ TXT("allow *.example.com 443"), "allow *.example.com 443" },
	{ TXT("allow *.A.Example.COM. 443"), "allow *.a.example.com 443" },
	{ TXT("allow xn--bcher-kva.example 443"), "allow xn--bcher-kva.example 443" },
	{ TXT("allow a-b.c0.example 443"), "allow a-b.c0.example 443" },
	{ TXT("allow 140.82.112.4 22"), "allow 140.82.112.4 22" },
	{ TXT("allow [::1] 443"), "allow ::1 443" },
	{ TXT("allow 2606:4700:4700:0:0:0:0:1111 443"), "allow 2606:4700:4700::1111 443" },
	{ TXT("allow [2606:4700:4700::1111] 443"), "allow 2606:4700:4700::1111 443" },
	{ TXT("allow [2001:DB8:0:0:1:0:0:1] 443"), "allow 2001:db8::1:0:0:1 443" },
	{ TXT("deny x.com"), "deny x.com 1-65535" },
	{ TXT("deny x.com 25"), "deny x.com 25" },
	{ TXT("deny x.com 25,465-587"), "deny x.com 25,465-587" },
	{ TXT("deny *.x.com"), "deny *.x.com 1-65535" },
	{ TXT("deny 10.0.0.1"), "deny 10.0.0.1 1-65535" },
	{ TXT("deny [2001:db8::0:1]"), "deny 2001:db8::1 1-65535" },
	{ TXT("permit-range 10.20.0.0/16"), "permit-range 10.20.0.0/16" },
	{ TXT("permit-range 192.168.1.1/32"), "permit-range 192.168.1.1/32" },
	{ TXT("permit-range 2001:DB8:0::/32"), "permit-range 2001:db8::/32" },
	{ TXT("permit-range fd00::/8"), "permit-range fd00::/8" },
	{ TXT("sni match"), "sni match" },
	{ TXT("sni required"), "sni required" },
	{ TXT("sni off"), "sni off" },
	{ TXT("quota connections 1"), "quota connections 1" },
	{ TXT("quota connections 64"), "quota connections 64" },
	{ TXT("quota connections 1000000"), "quota connections 1000000" },
	{ TXT("quota rate 1/s"), "quota rate 1/s" },
	{ TXT("quota rate 20/s"), "quota rate 20/s" },
	{ TXT("quota rate 1000000/s"), "quota rate 1000000/s" },
	{ TXT("quota rate unlimited"), "quota rate unlimited" },
	{ TXT("quota bytes 1"), "quota bytes 1" },
	{ TXT("quota bytes 1000"), "quota bytes 1000" },
	{ TXT("quota bytes 1K"), "quota bytes 1024" },
	{ TXT("quota bytes 512K"), "quota bytes 524288" },
	{ TXT("quota bytes 1M"), "quota bytes 1048576" },
	{ TXT("quota bytes 10M"), "quota bytes 10485760" },
	{ TXT("quota bytes 1G"), "quota bytes 1073741824" },
	{ TXT("quota bytes 10G"), "quota bytes 10737418240" },
	{ TXT("quota bytes 1T"), "quota bytes 1099511627776" },
	{ TXT("quota bytes 999999999999"), "quota bytes 999999999999" },
	{ TXT("quota bytes 1000000000000"), "quota bytes 1000000000000" },
	{ TXT("quota bytes 8388607T"), "quota bytes 9223370937343148032" },
	{ TXT("quota bytes unlimited"), "quota bytes unlimited" },
	{ TXT("timeout connect 1"), "timeout connect 1s" },
	{ TXT("timeout connect 1s"), "timeout connect 1s" },
	{ TXT("timeout dns 2m"), "timeout dns 120s" },
	{ TXT("timeout idle 1h"), "timeout idle 3600s" },
	{ TXT("timeout idle 604800"), "timeout idle 604800s" },
	{ TXT("timeout handshake 7d"), "timeout handshake 604800s" },
	{ TXT("timeout handshake 1d"), "timeout handshake 86400s" },
	{ TXT("pin min 0"), "pin min 0s max 600s" },
	{ TXT("pin min 0s max 1s"), "pin min 0s max 1s" },
	{ TXT("pin max 7d"), "pin min 30s max 604800s" },
	{ TXT("pin max 10m min 1m"), "pin min 60s max 600s" },
	{ TXT("pin min 10m"), "pin min 600s max 600s" },
	{ TXT("pin min 30s max 10m"), "pin min 30s max 600s" },
	{ TXT("pin min 1h\npin max 2h"), "pin min 3600s max 7200s" },
	/* Comments, whitespace and line endings. */
	{ TXT("allow x.com 443 # caf\xc3\xa9 \xe2\x9c\x93"), "allow x.com 443" },
	{ TXT("# \xf0\x9f\x94\x92 only UTF-8 here\nallow x.com 443"), "allow x.com 443" },
	{ TXT("allow x.com 443#comment"), "allow x.com 443" },
	{ TXT("allow x.com 443 # a b c d e f g h i j k"), "allow x.com 443" },
	{ TXT("\tallow\tx.com\t443\t\r\n"), "allow x.com 443" },
	{ TXT("  allow   x.com    443   "), "allow x.com 443" },
	{ TXT("allow x.com 443\r"), "allow x.com 443" },
};

START_TEST(test_directive_ok)
{
	const struct ok_case *c = &ok_cases[_i];
	char *canon = canonical_of(c->text, c->len);
	bool rule = starts_with(c->line, "allow ") || starts_with(c->line, "deny ") ||
	    starts_with(c->line, "permit-range ");

	ck_assert_msg(has_line(canon, c->line), "'%s': no line '%s' in\n%s", c->text, c->line,
	    canon);
	/* A setting replaces its default line; a rule adds one. */
	ck_assert_uint_eq(count_lines(canon), DEFAULTS_LINES + (rule ? 1u : 0u));
	free(canon);
}
END_TEST

/* --- every error ---------------------------------------------------------------------- */

struct err_case {
	const char *text;
	size_t len;
	const char *prefix;          /* "file:line:col:" where the column is unambiguous */
	const char *substr;          /* in the first error */
};

static const struct err_case err_cases[] = {
	/* allow / deny: shape */
	{ TXT("allow x.com"), FILE_NAME ":1:", "allow HOST PORTS" },
	{ TXT("allow"), FILE_NAME ":1:", "allow HOST PORTS" },
	{ TXT("allow x.com #443"), FILE_NAME ":1:", "allow HOST PORTS" },
	{ TXT("allow x.com 443 extra"), FILE_NAME ":1:17:", "unexpected field" },
	{ TXT("deny"), FILE_NAME ":1:", "deny HOST" },
	{ TXT("deny x.com 443 extra"), FILE_NAME ":1:16:", "unexpected field" },
	/* ports */
	{ TXT("allow x.com 0"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com 65536"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com 99999999999999999999"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com 90-80"), FILE_NAME ":1:13:", "backwards" },
	{ TXT("allow x.com 80,"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com ,80"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com 80,,443"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com 80-"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com -80"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com 80--90"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com 80-90-100"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com 8000-70000"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com 22,80-90,0"), FILE_NAME ":1:", "port" },
	{ TXT("allow x.com 22,90-80,443"), FILE_NAME ":1:", "backwards" },
	{ TXT("allow x.com https"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com +443"), FILE_NAME ":1:13:", "port" },
	{ TXT("allow x.com 443;80"), FILE_NAME ":1:", "port" },
	{ TXT("deny x.com 0"), FILE_NAME ":1:12:", "port" },
	{ TXT("deny x.com 90-80"), FILE_NAME ":1:12:", "backwards" },
	/* wildcards */
	{ TXT("allow a.*.com 443"), FILE_NAME ":1:7:", "wildcard" },
	{ TXT("allow *. 443"), FILE_NAME ":1:9:", "bad host" },
	{ TXT("allow * *"), FILE_NAME ":1:9:", "expected a port" },
	{ TXT("allow *"), FILE_NAME ":1:8:", "expected: allow HOST PORTS" },
	{ TXT("allow **.com 443"), FILE_NAME ":1:7:", "wildcard" },
	{ TXT("allow *example.com 443"), FILE_NAME ":1:7:", "wildcard" },
	{ TXT("allow example.* 443"), FILE_NAME ":1:7:", "wildcard" },
	{ TXT("allow *.*.com 443"), FILE_NAME ":1:", "host" },
	{ TXT("allow *.1.2.3.4 443"), FILE_NAME ":1:7:", "wildcard" },
	{ TXT("allow *.[::1] 443"), FILE_NAME ":1:7:", "wildcard" },
	{ TXT("allow *. 443"), FILE_NAME ":1:", "host" },
	/* hosts */
	{ TXT("allow 127.1 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow 2130706433 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow 0x7f.1 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow 0177.0.0.1 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow 1.2.3.256 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow foo_bar.com 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow -a.com 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow a-.com 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow a..com 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow .a.com 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow x.com.. 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow user@x.com 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow fe80::1%eth0 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow [::1 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow 1::2::3 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow [x.com] 443"), FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com 443"),
	    FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow "
	    "a123456789.a123456789.a123456789.a123456789.a123456789.a123456789."
	    "a123456789.a123456789.a123456789.a123456789.a123456789.a123456789."
	    "a123456789.a123456789.a123456789.a123456789.a123456789.a123456789."
	    "a123456789.a123456789.a123456789.a123456789.a123456789.abcd.com 443"),
	    FILE_NAME ":1:7:", "bad host" },
	{ TXT("allow x.com 443\ndeny foo_bar.com"), FILE_NAME ":2:6:", "bad host" },
	/* permit-range */
	{ TXT("permit-range 10.20.0.1/16"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range 10.0.0.0/33"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range 2001:db8::/129"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range 2001:db8::1/32"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range 10.0.0.0"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range 10.0.0.0/"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range example.com/8"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range 010.0.0.0/8"), FILE_NAME ":1:14:", "range" },
	{ TXT("permit-range"), FILE_NAME ":1:", "permit-range" },
	{ TXT("permit-range 10.0.0.0/8 10.1.0.0/16"), FILE_NAME ":1:25:", "permit-range" },
	/* sni */
	{ TXT("sni maybe"), FILE_NAME ":1:5:", "match" },
	{ TXT("sni MATCH"), FILE_NAME ":1:5:", "match" },
	{ TXT("sni"), FILE_NAME ":1:", "sni" },
	{ TXT("sni match off"), FILE_NAME ":1:11:", "sni" },
	{ TXT("allow x.com 443\nsni off\n\nsni match"), FILE_NAME ":4:1:", "line 2" },
	{ TXT("sni off\nsni off"), FILE_NAME ":2:1:", "line 1" },
	/* quota */
	{ TXT("quota connections 0"), FILE_NAME ":1:19:", "connections" },
	{ TXT("quota connections 1000001"), FILE_NAME ":1:19:", "connections" },
	{ TXT("quota connections -1"), FILE_NAME ":1:19:", "connections" },
	{ TXT("quota connections 10k"), FILE_NAME ":1:19:", "connections" },
	{ TXT("quota connections unlimited"), FILE_NAME ":1:19:", "connections" },
	{ TXT("quota rate 0/s"), FILE_NAME ":1:12:", "rate" },
	{ TXT("quota rate 20"), FILE_NAME ":1:12:", "rate" },
	{ TXT("quota rate 20/m"), FILE_NAME ":1:12:", "rate" },
	{ TXT("quota rate /s"), FILE_NAME ":1:12:", "rate" },
	{ TXT("quota rate 1000001/s"), FILE_NAME ":1:12:", "rate" },
	{ TXT("quota bytes 0"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 0K"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 0G"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 10X"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 1.5G"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes -1"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 10GB"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes G"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 16777216T"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota bytes 99999999999999999999999"), FILE_NAME ":1:13:", "size" },
	{ TXT("quota speed 5"), FILE_NAME ":1:7:", "connections" },
	{ TXT("quota bytes"), FILE_NAME ":1:", "quota" },
	{ TXT("quota"), FILE_NAME ":1:", "quota" },
	{ TXT("quota bytes 1G 2G"), FILE_NAME ":1:", "quota" },
	{ TXT("quota bytes 1G\nquota bytes 2G"), FILE_NAME ":2:", "line 1" },
	{ TXT("quota connections 5\nquota rate 5/s\nquota connections 6"), FILE_NAME ":3:",
	    "line 1" },
	{ TXT("allow x.com 443\nquota rate 5/s\nquota rate unlimited"), FILE_NAME ":3:",
	    "line 2" },
	/* timeout */
	{ TXT("timeout connect 0s"), FILE_NAME ":1:17:", "duration" },
	{ TXT("timeout connect 0"), FILE_NAME ":1:17:", "duration" },
	{ TXT("timeout connect 8d"), FILE_NAME ":1:17:", "duration" },
	{ TXT("timeout connect 604801"), FILE_NAME ":1:17:", "duration" },
	{ TXT("timeout connect 169h"), FILE_NAME ":1:17:", "duration" },
	{ TXT("timeout idle 10ms"), FILE_NAME ":1:14:", "duration" },
	{ TXT("timeout idle 1w"), FILE_NAME ":1:14:", "duration" },
	{ TXT("timeout idle s"), FILE_NAME ":1:14:", "duration" },
	{ TXT("timeout idle -5s"), FILE_NAME ":1:14:", "duration" },
	{ TXT("timeout dns 1.5s"), FILE_NAME ":1:13:", "duration" },
	{ TXT("timeout dns 5S"), FILE_NAME ":1:13:", "duration" },
	{ TXT("timeout read 5s"), FILE_NAME ":1:9:", "handshake" },
	{ TXT("timeout idle"), FILE_NAME ":1:", "timeout" },
	{ TXT("timeout"), FILE_NAME ":1:", "timeout" },
	{ TXT("timeout handshake 10s 20s"), FILE_NAME ":1:23:", "timeout" },
	{ TXT("timeout dns 5s\ntimeout dns 6s"), FILE_NAME ":2:", "line 1" },
	{ TXT("timeout idle 1h\ntimeout dns 6s\n\ntimeout idle 2h"), FILE_NAME ":4:",
	    "line 1" },
	/* pin */
	{ TXT("pin min 10m max 1m"), FILE_NAME ":1:", "pin" },
	{ TXT("pin max 1m min 10m"), FILE_NAME ":1:", "pin" },
	{ TXT("pin min 700s"), FILE_NAME ":1:", "pin" },
	{ TXT("pin max 10s"), FILE_NAME ":1:", "pin" },
	{ TXT("pin min 8d"), FILE_NAME ":1:9:", "duration" },
	{ TXT("pin max 0"), FILE_NAME ":1:9:", "duration" },
	{ TXT("pin max 0s"), FILE_NAME ":1:9:", "duration" },
	{ TXT("pin max 8d"), FILE_NAME ":1:9:", "duration" },
	{ TXT("pin min 30x"), FILE_NAME ":1:9:", "duration" },
	{ TXT("pin min 1s\npin min 2s"), FILE_NAME ":2:", "line 1" },
	{ TXT("pin min 1s max 1m\n\n\npin min 2s"), FILE_NAME ":4:", "line 1" },
	{ TXT("pin min 1s min 2s"), FILE_NAME ":1:", "line 1" },
	{ TXT("pin max 1m\npin max 2m"), FILE_NAME ":2:", "line 1" },
	{ TXT("pin"), FILE_NAME ":1:", "pin" },
	{ TXT("pin min"), FILE_NAME ":1:", "pin" },
	{ TXT("pin min 1s max"), FILE_NAME ":1:", "pin" },
	{ TXT("pin foo 1s"), FILE_NAME ":1:5:", "min" },
	{ TXT("pin min 1s foo 2s"), FILE_NAME ":1:12:", "min" },
	/* unknown directives */
	{ TXT("frobnicate x"), FILE_NAME ":1:1:", "unknown directive" },
	{ TXT("   frobnicate x"), FILE_NAME ":1:4:", "unknown directive" },
	{ TXT("allowx x.com 443"), FILE_NAME ":1:1:", "unknown directive" },
	{ TXT("permit 10.0.0.0/8"), FILE_NAME ":1:1:", "unknown directive" },
	{ TXT("allow x.com 443\n\tbogus"), FILE_NAME ":2:2:", "unknown directive" },
	{ TXT("allow x.com 443\r\nbogus\r\n"), FILE_NAME ":2:1:", "unknown directive" },
	/* bytes: NUL anywhere, non-ASCII outside comments, control bytes */
	{ BIN("\0allow x.com 443"), FILE_NAME ":1:1:", "NUL" },
	{ BIN("allow x.com 443\n\0"), FILE_NAME ":2:1:", "NUL" },
	{ BIN("allow x.\0com 443"), FILE_NAME ":1:", "NUL" },
	{ BIN("allow x.com 443 # comment \0 here"), FILE_NAME ":1:", "NUL" },
	{ BIN("# \0\nallow x.com 443"), FILE_NAME ":1:", "NUL" },
	{ TXT("allow \xc3\xbc.de 443"), FILE_NAME ":1:7:", "non-ASCII" },
	{ TXT("allow b\xc3\xbc" "cher.de 443"), FILE_NAME ":1:", "non-ASCII" },
	{ TXT("\xef\xbb\xbf" "allow x.com 443"), FILE_NAME ":1:1:", "non-ASCII" },
	{ TXT("allow x.com 443\xc2\xa0"), FILE_NAME ":1:", "non-ASCII" },
	{ TXT("allow \x01x.com 443"), FILE_NAME ":1:7:", "control" },
	{ TXT("\x1b[0mallow x.com 443"), FILE_NAME ":1:1:", "control" },
	{ TXT("allow x.com 443\x7f"), FILE_NAME ":1:", "control" },
	{ TXT("allow x.com\v443"), FILE_NAME ":1:", "control" },
	{ TXT("allow x.com\f443"), FILE_NAME ":1:", "control" },
	{ TXT("allow x.com\r443"), FILE_NAME ":1:", "control" },
	{ TXT("allow x.com 443\r\r\n"), FILE_NAME ":1:", "control" },
	/* fields */
	{ TXT("pin min 1s max 2s a b c d"), FILE_NAME ":1:25:", "too many fields" },
	{ TXT("a b c d e f g h i j k l"), FILE_NAME ":1:", "too many fields" },
	/* the first of several errors is the first bad line, and any error refuses all */
	{ TXT("allow a.com 443\nallow b.com 0\nallow c.com 443\nfoo"), FILE_NAME ":2:13:",
	    "port" },
};

START_TEST(test_parse_error)
{
	const struct err_case *c = &err_cases[_i];
	struct policy_diag d;
	struct policy *p = load_text(c->text, c->len, &d);

	ck_assert_msg(p == NULL, "case %d: '%s' was accepted", _i, c->text);
	ck_assert_msg(d.nerrors >= 1, "case %d: '%s' refused without an error", _i, c->text);
	ck_assert_msg(starts_with(d.errors[0], c->prefix),
	    "case %d: '%s': error '%s' does not start with '%s'", _i, c->text, d.errors[0],
	    c->prefix);
	ck_assert_msg(strstr(d.errors[0], c->substr) != NULL,
	    "case %d: '%s': error '%s' does not mention '%s'", _i, c->text, d.errors[0],
	    c->substr);
	policy_diag_free(&d);
	ck_assert_ptr_null(d.errors);
	ck_assert_uint_eq(d.nerrors, 0);
}
END_TEST

/* Every error names file:line:col, and all bad lines are reported in order. */
START_TEST(test_error_list)
{
	const char *text = "allow a.com 443\n"      /* 1 */
	    "allow b.com 0\n"                         /* 2 */
	    "allow c.com 443\n"                       /* 3 */
	    "quota bytes 0\n"                         /* 4 */
	    "bogus\n";                                /* 5 */
	struct policy_diag d;
	struct policy *p = load_text(text, 0, &d);
	char *big, *q;
	size_t n = 60;

	ck_assert_ptr_null(p);
	ck_assert_uint_eq(d.nerrors, 3);
	ck_assert(starts_with(d.errors[0], FILE_NAME ":2:13: "));
	ck_assert(starts_with(d.errors[1], FILE_NAME ":4:13: "));
	ck_assert(starts_with(d.errors[2], FILE_NAME ":5:1: "));
	policy_diag_free(&d);

	/* Many bad lines: refused, reported in order, and the list stays bounded. */
	big = malloc(n * 8 + 1);
	ck_assert_ptr_nonnull(big);
	q = big;
	for (size_t i = 0; i < n; i++) {
		memcpy(q, "bogus 1\n", 8);
		q += 8;
	}
	*q = '\0';
	p = load_text(big, 0, &d);
	ck_assert_ptr_null(p);
	ck_assert_uint_ge(d.nerrors, 2);
	ck_assert_uint_le(d.nerrors, EGRESS_POLICY_MAX_ERRORS);
	ck_assert(starts_with(d.errors[0], FILE_NAME ":1:1: "));
	ck_assert(starts_with(d.errors[1], FILE_NAME ":2:1: "));
	policy_diag_free(&d);
	free(big);
}
END_TEST

/* Lines: 4096 bytes accepted, 4097 refused; CRLF does not change the limit. */
static char *
long_line(size_t len, const char *eol)
{
	const char *head = "allow x.com 443 #";
	size_t hl = strlen(head), el = strlen(eol);
	char *s = malloc(len + el + 1);

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_ge(len, hl);
	memcpy(s, head, hl);
	memset(s + hl, 'x', len - hl);
	memcpy(s + len, eol, el + 1);
	return s;
}

START_TEST(test_line_length)
{
	struct policy_diag d;
	struct policy *p;
	char *s;

	s = long_line(EGRESS_POLICY_MAX_LINE, "\n");
	p = must_load(s, 0);
	policy_free(p);
	free(s);

	s = long_line(EGRESS_POLICY_MAX_LINE + 1, "\n");
	p = load_text(s, 0, &d);
	ck_assert_ptr_null(p);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":1:"), "%s", d.errors[0]);
	ck_assert_msg(strstr(d.errors[0], "longer") != NULL, "%s", d.errors[0]);
	policy_diag_free(&d);
	free(s);

	/* On line 2, and as the last line without a newline. */
	s = long_line(EGRESS_POLICY_MAX_LINE + 1, "");
	{
		size_t sl = strlen(s);
		char *t = malloc(sl + 2);

		ck_assert_ptr_nonnull(t);
		t[0] = '\n';              /* line 1 empty, the long line is line 2 */
		memcpy(t + 1, s, sl + 1);
		p = load_text(t, 0, &d);
		ck_assert_ptr_null(p);
		ck_assert_uint_ge(d.nerrors, 1);
		ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":2:"), "%s", d.errors[0]);
		policy_diag_free(&d);
		free(t);
	}
	free(s);

	/* A line of 4096 bytes is the same line whichever end-of-line marks it. */
	s = long_line(EGRESS_POLICY_MAX_LINE, "\r\n");
	p = load_text(s, 0, &d);
	ck_assert_msg(p != NULL, "a %d-byte line ending in CRLF was refused: %s",
	    EGRESS_POLICY_MAX_LINE, d.nerrors ? d.errors[0] : "");
	policy_diag_free(&d);
	policy_free(p);
	free(s);
}
END_TEST

/* Eight fields are fine (then judged by the directive), nine are refused. */
START_TEST(test_field_count)
{
	struct policy_diag d;
	struct policy *p;

	p = load_text("pin min 1s max 2s a b c", 0, &d);
	ck_assert_ptr_null(p);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(strstr(d.errors[0], "too many fields") == NULL, "%s", d.errors[0]);
	policy_diag_free(&d);

	p = load_text("pin min 1s max 2s a b c d", 0, &d);
	ck_assert_ptr_null(p);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":1:25: "), "%s", d.errors[0]);
	ck_assert_msg(strstr(d.errors[0], "too many fields") != NULL, "%s", d.errors[0]);
	policy_diag_free(&d);
}
END_TEST

/* --- settings ---------------------------------------------------------------------------- */

START_TEST(test_settings_default)
{
	struct policy *p = must_load("allow x.com 443\n", 0);
	const struct policy_settings *s = policy_settings(p);

	ck_assert_int_eq(s->sni, SNI_MATCH);
	ck_assert_uint_eq(s->quota_connections, 256);
	ck_assert_uint_eq(s->quota_rate, EGRESS_UNLIMITED);
	ck_assert_uint_eq(s->quota_bytes, EGRESS_UNLIMITED);
	ck_assert_uint_eq(s->timeout_connect, 10);
	ck_assert_uint_eq(s->timeout_dns, 5);
	ck_assert_uint_eq(s->timeout_idle, 300);
	ck_assert_uint_eq(s->timeout_handshake, 10);
	ck_assert_uint_eq(s->pin_min, 30);
	ck_assert_uint_eq(s->pin_max, 600);
	ck_assert_uint_eq(s->npermit, 0);
	ck_assert_uint_eq(policy_rule_count(p), 1);
	ck_assert_int_eq(policy_mac_state(p), POLICY_UNSEALED);
	policy_free(p);
}
END_TEST

START_TEST(test_settings_explicit)
{
	const char *text =
	    "sni required\n"
	    "quota connections 64\n"
	    "quota rate 20/s\n"
	    "quota bytes 10G\n"
	    "timeout connect 11s\n"
	    "timeout dns 1m\n"
	    "timeout idle 1h\n"
	    "timeout handshake 12\n"
	    "pin max 2h min 1m\n"
	    "permit-range 10.20.0.0/16\n"
	    "permit-range 10.0.0.0/8\n"
	    "permit-range 2001:db8::/32\n"
	    "permit-range 2001:db8:1::/48\n"
	    "permit-range 10.0.0.0/8\n"
	    "allow x.com 443\n"
	    "allow y.com 443\n"
	    "deny x.com 80\n";
	struct policy *p = must_load(text, 0);
	const struct policy_settings *s = policy_settings(p);
	char buf[EGRESS_ADDRSTRLEN + 4];
	bool v4 = false, v6 = false;

	ck_assert_int_eq(s->sni, SNI_REQUIRED);
	ck_assert_uint_eq(s->quota_connections, 64);
	ck_assert_uint_eq(s->quota_rate, 20);
	ck_assert_uint_eq(s->quota_bytes, 10ULL << 30);
	ck_assert_uint_eq(s->timeout_connect, 11);
	ck_assert_uint_eq(s->timeout_dns, 60);
	ck_assert_uint_eq(s->timeout_idle, 3600);
	ck_assert_uint_eq(s->timeout_handshake, 12);
	ck_assert_uint_eq(s->pin_min, 60);
	ck_assert_uint_eq(s->pin_max, 7200);
	/* Contained and duplicate ranges are dropped: 10.0.0.0/8 and 2001:db8::/32 remain. */
	ck_assert_uint_eq(s->npermit, 2);
	ck_assert_ptr_nonnull(s->permit);
	for (size_t i = 0; i < s->npermit; i++) {
		cidr_format(&s->permit[i], buf);
		if (strcmp(buf, "10.0.0.0/8") == 0)
			v4 = true;
		else if (strcmp(buf, "2001:db8::/32") == 0)
			v6 = true;
		else
			ck_abort_msg("unexpected permit range %s", buf);
	}
	ck_assert(v4 && v6);
	policy_free(p);

	p = must_load("sni off\nquota rate unlimited\nquota bytes 1T\n", 0);
	s = policy_settings(p);
	ck_assert_int_eq(s->sni, SNI_OFF);
	ck_assert_uint_eq(s->quota_rate, EGRESS_UNLIMITED);
	ck_assert_uint_eq(s->quota_bytes, 1ULL << 40);
	ck_assert_uint_eq(policy_rule_count(p), 0);
	policy_free(p);
}
END_TEST

/* --- warnings ------------------------------------------------------------------------------ */

struct warn_case {
	const char *text;
	bool warns;
	const char *substr;          /* in the first warning */
};

static const struct warn_case warn_cases[] = {
	{ "allow *.github.io 443\n", true, "github.io" },
	{ "allow *.co.uk 443\n", true, "co.uk" },
	{ "allow *.com 443\n", true, "com" },
	{ "allow *.CO.UK. 443\n", true, "co.uk" },
	{ "allow x.com 443\nallow *.github.io 443\n", true, FILE_NAME ":2:" },
	{ "allow *.example.com 443\n", false, NULL },
	{ "allow *.foo.github.io 443\n", false, NULL },
	{ "allow *.bbc.co.uk 443\n", false, NULL },
	{ "allow github.io 443\n", false, NULL },
	{ "allow co.uk 443\n", false, NULL },
	{ "allow x.com 443\n", false, NULL },
	{ "", true, "no allow rule" },
	{ "# nothing but a comment\n\n", true, "no allow rule" },
	{ "sni off\nquota connections 5\n", true, "no allow rule" },
	{ "permit-range 10.0.0.0/8\n", true, "no allow rule" },
	/* A deny rule allows nothing: still no allow rule, every request is denied. */
	{ "deny evil.com\n", true, "no allow rule" },
};

START_TEST(test_warning)
{
	const struct warn_case *c = &warn_cases[_i];
	struct policy_diag d;
	struct policy *p = load_text(c->text, 0, &d);

	ck_assert_msg(p != NULL, "'%s' refused: %s", c->text, d.nerrors ? d.errors[0] : "");
	ck_assert_uint_eq(d.nerrors, 0);
	if (c->warns) {
		ck_assert_msg(d.nwarnings >= 1, "'%s': no warning", c->text);
		ck_assert_msg(strstr(d.warnings[0], c->substr) != NULL,
		    "'%s': warning '%s' does not mention '%s'", c->text, d.warnings[0],
		    c->substr);
		ck_assert_msg(starts_with(d.warnings[0], FILE_NAME ":"), "%s", d.warnings[0]);
	} else
		ck_assert_msg(d.nwarnings == 0, "'%s': unexpected warning '%s'", c->text,
		    d.warnings[0]);
	policy_diag_free(&d);
	policy_free(p);
}
END_TEST

/* --- canonical form ------------------------------------------------------------------------- */

/* The SPEC's own example. */
static const char spec_example[] =
    "allow  api.github.com            443\n"
    "allow  *.githubusercontent.com   443          # any subdomain, never the apex\n"
    "allow  pypi.org                  80,443\n"
    "allow  mirror.example.net        8000-8100\n"
    "allow  140.82.112.4              22           # IP literal: only when written literally\n"
    "deny   evil.githubusercontent.com              # port optional on deny: all ports\n"
    "permit-range 10.20.0.0/16                     # operator exception to address rejection\n"
    "sni    match                                   # match (default) | required | off\n"
    "quota  connections 64                          # concurrent, per principal (default 256)\n"
    "quota  rate 20/s                               # new tunnels per second (default unlimited)\n"
    "quota  bytes 10G                               # both ways, principal lifetime (K,M,G = 2^10..)\n"
    "timeout connect 10s                            # defaults: connect 10s, dns 5s, idle 300s,\n"
    "timeout dns 5s                                 #           handshake 10s\n"
    "timeout idle 300s\n"
    "timeout handshake 10s\n"
    "pin    min 30s max 10m                         # default min 30s max 10m\n";

static const char spec_example_canonical[] =
    "allow *.githubusercontent.com 443\n"
    "allow 140.82.112.4 22\n"
    "allow api.github.com 443\n"
    "allow mirror.example.net 8000-8100\n"
    "allow pypi.org 80,443\n"
    "deny evil.githubusercontent.com 1-65535\n"
    "permit-range 10.20.0.0/16\n"
    "pin min 30s max 600s\n"
    "quota bytes 10737418240\n"
    "quota connections 64\n"
    "quota rate 20/s\n"
    "sni match\n"
    "timeout connect 10s\n"
    "timeout dns 5s\n"
    "timeout handshake 10s\n"
    "timeout idle 300s\n";

START_TEST(test_canonical_spec_example)
{
	struct policy *p = must_load(spec_example, 0);
	size_t len;
	char *c = policy_canonical(p, &len);

	ck_assert_str_eq(c, spec_example_canonical);
	ck_assert_uint_eq(len, sizeof(spec_example_canonical) - 1);
	ck_assert_uint_eq(policy_rule_count(p), 6);
	free(c);
	policy_free(p);
}
END_TEST

START_TEST(test_canonical_defaults)
{
	char *c = canonical_of("", 0);

	ck_assert_str_eq(c, DEFAULTS_CANONICAL);
	free(c);

	c = canonical_of("allow B.example 443\ndeny a.example\npermit-range 192.168.0.0/16\n"
	    "permit-range 10.0.0.0/8\nallow a.example 22\nallow *.z.example 1\n", 0);
	ck_assert_str_eq(c,
	    "allow *.z.example 1\n"
	    "allow a.example 22\n"
	    "allow b.example 443\n"
	    "deny a.example 1-65535\n"
	    "permit-range 10.0.0.0/8\n"
	    "permit-range 192.168.0.0/16\n"
	    DEFAULTS_CANONICAL);
	free(c);
}
END_TEST

/*
 * The canonical form is built in a growable buffer: the first write goes to a fresh one
 * (fuzz_policy once found it doing pointer arithmetic on NULL there, which the sanitizer
 * build reports), and a policy far larger than its first allocation grows it.
 */
START_TEST(test_canonical_buffer_growth)
{
	char text[64 * 400], want[64 * 400], *c;
	size_t tl = 0, wl = 0;

	for (int i = 0; i < 300; i++) {
		tl += (size_t)snprintf(text + tl, sizeof(text) - tl,
		    "allow host-%03d.long-label-to-grow-the-buffer.example 443\n", 299 - i);
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl,
		    "allow host-%03d.long-label-to-grow-the-buffer.example 443\n", i);
	}
	snprintf(want + wl, sizeof(want) - wl, "%s", DEFAULTS_CANONICAL);
	c = canonical_of(text, 0);
	ck_assert_uint_gt(strlen(c), 4096);
	ck_assert_str_eq(c, want);
	free(c);
}
END_TEST

/* Port lists are merged and sorted. */
struct port_case {
	const char *in, *out;
};

static const struct port_case port_cases[] = {
	{ "443", "443" },
	{ "443,80", "80,443" },
	{ "80,81-90,85", "80-90" },
	{ "80-90,91-100", "80-100" },
	{ "80-90,85-95", "80-95" },
	{ "80-90,92-100", "80-90,92-100" },
	{ "1-65535,80", "1-65535" },
	{ "22,80-90,443", "22,80-90,443" },
	{ "8100-8200,8000-8100", "8000-8200" },
	{ "5,3,1,2,4", "1-5" },
	{ "65535,1", "1,65535" },
	{ "10-10", "10" },
	{ "443,443", "443" },
	{ "443,444", "443-444" },
	{ "90-100,1-10,50", "1-10,50,90-100" },
};

START_TEST(test_canonical_ports)
{
	const struct port_case *c = &port_cases[_i];
	char text[128], want[128], wantd[128];
	char *canon;

	snprintf(text, sizeof(text), "allow x.com %s\ndeny y.com %s\n", c->in, c->in);
	snprintf(want, sizeof(want), "allow x.com %s", c->out);
	snprintf(wantd, sizeof(wantd), "deny y.com %s", c->out);
	canon = canonical_of(text, 0);
	ck_assert_msg(has_line(canon, want), "'%s': want '%s' in\n%s", c->in, want, canon);
	ck_assert_msg(has_line(canon, wantd), "'%s': want '%s' in\n%s", c->in, wantd, canon);
	free(canon);
}
END_TEST

/* Two spellings of one policy: one canonical form, one digest. */
struct same_case {
	const char *a;
	size_t alen;
	const char *b;
	size_t blen;
};

static const struct same_case same_cases[] = {
	/* reordered lines */
	{ TXT("allow a.com 443\nallow b.com 80\nsni off\n"),
	  TXT("sni off\nallow b.com 80\nallow a.com 443\n") },
	{ TXT(spec_example),
	  TXT("pin min 30s max 600s\ntimeout handshake 10s\nquota bytes 10G\n"
	      "deny evil.githubusercontent.com\nallow 140.82.112.4 22\nquota rate 20/s\n"
	      "allow pypi.org 443\nallow mirror.example.net 8000-8100\n"
	      "quota connections 64\nallow *.githubusercontent.com 443\n"
	      "allow api.github.com 443\npermit-range 10.20.0.0/16\nallow pypi.org 80\n") },
	/* comments and blank lines */
	{ TXT("allow a.com 443\n"),
	  TXT("# header \xe2\x80\x94 UTF-8\n\n   # indented\nallow a.com 443 # trailing\n\n#\n") },
	/* whitespace and tabs */
	{ TXT("allow a.com 443\nquota rate 5/s\n"),
	  TXT("\tallow   a.com\t\t443  \n  quota\trate\t5/s\t\n") },
	/* CRLF and a missing final newline */
	{ TXT("allow a.com 443\nsni off\n"), TXT("allow a.com 443\r\nsni off\r\n") },
	{ TXT("allow a.com 443\nsni off\n"), TXT("allow a.com 443\r\nsni off") },
	{ TXT("allow a.com 443\n"), TXT("allow a.com 443") },
	/* case and trailing dots */
	{ TXT("allow api.github.com 443\n"), TXT("allow API.GitHub.COM 443\n") },
	{ TXT("allow a.com 443\n"), TXT("allow a.com. 443\n") },
	{ TXT("allow *.a.com 443\ndeny b.a.com\n"), TXT("allow *.A.com. 443\ndeny B.A.COM.\n") },
	/* IPv6 spellings */
	{ TXT("allow 2606:4700:4700::1111 443\n"),
	  TXT("allow [2606:4700:4700:0:0:0:0:1111] 443\n") },
	{ TXT("allow 2001:db8::1:0:0:1 443\n"), TXT("allow 2001:DB8:0:0:1:0:0:1 443\n") },
	{ TXT("deny [::1]\n"), TXT("deny 0:0:0:0:0:0:0:1\n") },
	{ TXT("permit-range 2001:db8::/32\n"), TXT("permit-range 2001:0DB8:0000::/32\n") },
	/* durations */
	{ TXT("pin max 10m\n"), TXT("pin max 600s\n") },
	{ TXT("pin max 10m\n"), TXT("pin max 600\n") },
	{ TXT("timeout idle 1h\n"), TXT("timeout idle 3600s\n") },
	{ TXT("timeout handshake 1d\n"), TXT("timeout handshake 86400\n") },
	{ TXT("timeout dns 2m\n"), TXT("timeout dns 120s\n") },
	/* sizes */
	{ TXT("quota bytes 1G\n"), TXT("quota bytes 1073741824\n") },
	{ TXT("quota bytes 1024K\n"), TXT("quota bytes 1M\n") },
	{ TXT("quota bytes 1024G\n"), TXT("quota bytes 1T\n") },
	/* explicit defaults against omitted ones */
	{ TXT("allow a.com 443\n"),
	  TXT("allow a.com 443\nsni match\nquota connections 256\nquota rate unlimited\n"
	      "quota bytes unlimited\ntimeout connect 10s\ntimeout dns 5s\n"
	      "timeout idle 300s\ntimeout handshake 10s\npin min 30s max 10m\n") },
	{ TXT(""), TXT("pin min 30s\npin max 600s\n") },
	/* pin in any order, on one line or two */
	{ TXT("pin min 30s max 120s\n"), TXT("pin max 2m min 30s\n") },
	{ TXT("pin min 30s max 120s\n"), TXT("pin max 120\npin min 30\n") },
	/* split and merged port lists */
	{ TXT("allow a.com 80,443\n"), TXT("allow a.com 443\nallow a.com 80\n") },
	{ TXT("allow a.com 80-90\n"), TXT("allow a.com 80,81-90,85\n") },
	{ TXT("allow a.com 80-100\n"), TXT("allow a.com 80-90\nallow a.com 91-100\n") },
	{ TXT("allow a.com 443\n"), TXT("allow a.com 443\nallow a.com 443\n") },
	{ TXT("allow a.com 443,444\n"), TXT("allow a.com 443-444\n") },
	/* deny without ports is every port */
	{ TXT("deny a.com\n"), TXT("deny a.com 1-65535\n") },
	{ TXT("deny a.com\n"), TXT("deny a.com 1-100,101-65535\n") },
	{ TXT("deny a.com\n"), TXT("deny a.com 25\ndeny a.com\n") },
	/* permit ranges inside another are dropped */
	{ TXT("permit-range 10.0.0.0/8\n"),
	  TXT("permit-range 10.20.0.0/16\npermit-range 10.0.0.0/8\npermit-range 10.1.2.3/32\n") },
	{ TXT("permit-range 10.0.0.0/8\n"), TXT("permit-range 10.0.0.0/8\npermit-range 10.0.0.0/8\n") },
	{ TXT("permit-range 2001:db8::/32\n"),
	  TXT("permit-range 2001:db8:1::/48\npermit-range 2001:db8::/32\n") },
};

START_TEST(test_canonical_same)
{
	const struct same_case *c = &same_cases[_i];
	char *ca = canonical_of(c->a, c->alen), *cb = canonical_of(c->b, c->blen);
	char da[EGRESS_DIGEST_STRLEN], db[EGRESS_DIGEST_STRLEN];

	ck_assert_msg(strcmp(ca, cb) == 0, "case %d: canonical forms differ:\n%s---\n%s", _i,
	    ca, cb);
	digest_of(c->a, c->alen, da);
	digest_of(c->b, c->blen, db);
	ck_assert_str_eq(da, db);
	free(ca);
	free(cb);
}
END_TEST

/* Different policies: different digests. */
static const char *const distinct_policies[] = {
	"",
	"allow a.com 443\n",
	"allow a.com 444\n",
	"allow a.com 443,444\n",
	"allow a.com 443,445\n",
	"allow b.com 443\n",
	"allow *.a.com 443\n",
	"allow a.com.b 443\n",
	"allow a.com 443\nallow b.com 443\n",
	"deny a.com 443\n",
	"deny a.com\n",
	"allow a.com 443\ndeny a.com 80\n",
	"allow 1.2.3.4 443\n",
	"allow 1.2.3.5 443\n",
	"allow ::1 443\n",
	"sni off\n",
	"sni required\n",
	"quota connections 255\n",
	"quota rate 1/s\n",
	"quota bytes 1\n",
	"quota bytes 1K\n",
	"timeout connect 11s\n",
	"timeout dns 6s\n",
	"timeout idle 301s\n",
	"timeout handshake 11s\n",
	"pin min 29s\n",
	"pin max 601s\n",
	"pin min 0\n",
	"permit-range 10.0.0.0/8\n",
	"permit-range 10.0.0.0/9\n",
	"permit-range 10.0.0.0/8\npermit-range 192.168.0.0/16\n",
};

START_TEST(test_canonical_distinct)
{
	size_t n = NELEMS(distinct_policies);
	char (*d)[EGRESS_DIGEST_STRLEN] = calloc(n, sizeof(*d));

	ck_assert_ptr_nonnull(d);
	for (size_t i = 0; i < n; i++)
		digest_of(distinct_policies[i], 0, d[i]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ck_assert_msg(strcmp(d[i], d[j]) != 0, "same digest for\n%s---\n%s",
			    distinct_policies[i], distinct_policies[j]);
	free(d);
}
END_TEST

/* The canonical form of a canonical form is itself; the digest is its SHA-256. */
START_TEST(test_canonical_fixed_point)
{
	const char *inputs[] = { spec_example, "", "allow a.com 80,81-90\ndeny *.b.com\n",
	    "permit-range 2001:db8::/32\nallow [::1] 1\npin min 0 max 7d\n",
	    "quota bytes 1T\n", "quota bytes 1000G\nquota rate 1000000/s\n" };

	for (size_t i = 0; i < NELEMS(inputs); i++) {
		char *c1 = canonical_of(inputs[i], 0), *c2 = canonical_of(c1, 0);
		char d1[EGRESS_DIGEST_STRLEN], d2[EGRESS_DIGEST_STRLEN];
		char want[EGRESS_DIGEST_STRLEN];

		ck_assert_str_eq(c1, c2);
		digest_of(inputs[i], 0, d1);
		digest_of(c1, 0, d2);
		ck_assert_str_eq(d1, d2);
		seal_digest(c1, strlen(c1), want);
		ck_assert_str_eq(d1, want);
		ck_assert_uint_eq(strlen(d1), strlen("sha256:") + 64);
		ck_assert(starts_with(d1, "sha256:"));
		ck_assert_uint_eq(strspn(d1 + 7, "0123456789abcdef"), 64);
		/* Every line ends in '\n', fields are one space apart, lines sorted. */
		ck_assert_uint_gt(strlen(c1), 0);
		ck_assert_int_eq(c1[strlen(c1) - 1], '\n');
		ck_assert_ptr_null(strstr(c1, "  "));
		ck_assert_ptr_null(strchr(c1, '\t'));
		ck_assert_ptr_null(strchr(c1, '\r'));
		ck_assert_ptr_null(strchr(c1, '#'));
		for (const char *l = c1, *nl; (nl = strchr(l, '\n')) != NULL && nl[1] != '\0';
		    l = nl + 1) {
			const char *next = nl + 1;
			size_t la = (size_t)(nl - l), lb = strcspn(next, "\n");
			int r = memcmp(l, next, la < lb ? la : lb);

			ck_assert_msg(r < 0 || (r == 0 && la < lb), "lines out of order in\n%s", c1);
		}
		free(c1);
		free(c2);
	}
}
END_TEST

/* --- matching ------------------------------------------------------------------------------ */

static const char decide_policy[] =
    "# decisions: the line numbers below matter\n"     /* 1 */
    "allow api.github.com 443\n"                        /* 2 */
    "allow *.example.com 443\n"                         /* 3 */
    "allow example.com 80\n"                            /* 4 */
    "deny evil.example.com\n"                           /* 5 */
    "allow evil.example.com 443\n"                      /* 6 */
    "deny *.bad.example.com 443\n"                      /* 7 */
    "allow ok.bad.example.com 443,8443\n"               /* 8 */
    "allow mirror.example.net 8000-8100\n"              /* 9 */
    "allow 140.82.112.4 22\n"                           /* 10 */
    "allow [2606:4700:4700:0:0:0:0:1111] 443\n"         /* 11 */
    "allow multi.example.org 80\n"                      /* 12 */
    "allow multi.example.org 443\n"                     /* 13 */
    "deny plain.example.org\n"                          /* 14 */
    "allow sub.plain.example.org 443\n"                 /* 15 */
    "allow *.wild.example.org 443\n"                    /* 16 */
    "deny *.wild.example.org 25\n"                      /* 17 */
    "allow x.wild.example.org 25\n"                     /* 18 */
    "allow mixed.example.org 22,80-90,443\n"            /* 19 */
    "allow *.deep.example.org 80\n"                     /* 20 */
    "allow *.a.deep.example.org 8080\n"                 /* 21 */
    "\n"                                                /* 22 */
    "allow late.example.org 1000\n"                     /* 23 */
    "allow late.example.org 2000-2010\n"                /* 24 */
    "allow late.example.org 1001\n"                     /* 25 */
    "deny 10.1.2.3 25\n"                                /* 26 */
    "allow 10.1.2.3 1-1024\n";                          /* 27 */

struct decide_case {
	const char *host;
	uint16_t port;
	enum egress_reason want;
	unsigned line;
};

#define A EGRESS_ALLOWED
#define D EGRESS_DENIED_BY_RULE
#define N EGRESS_NOT_ALLOWLISTED

static const struct decide_case decide_cases[] = {
	/* exact names */
	{ "api.github.com", 443, A, 2 },
	{ "API.GitHub.com.", 443, A, 2 },
	{ "api.github.com", 80, N, 0 },
	{ "api.github.com", 0, N, 0 },
	{ "github.com", 443, N, 0 },
	{ "x.api.github.com", 443, N, 0 },
	{ "api.github.co", 443, N, 0 },
	/* wildcards: any depth, never the apex, never a lookalike */
	{ "a.example.com", 443, A, 3 },
	{ "a.b.example.com", 443, A, 3 },
	{ "a.b.c.d.e.example.com", 443, A, 3 },
	{ "example.com", 443, N, 0 },
	{ "badexample.com", 443, N, 0 },
	{ "a.badexample.com", 443, N, 0 },
	{ "example.com.evil.net", 443, N, 0 },
	{ "a.example.com", 80, N, 0 },
	{ "example.com", 80, A, 4 },
	/* deny beats allow: exact against exact and wildcard */
	{ "evil.example.com", 443, D, 5 },
	{ "evil.example.com", 1, D, 5 },
	{ "evil.example.com", 65535, D, 5 },
	{ "Evil.Example.Com.", 80, D, 5 },
	/* an exact deny does not deny a subdomain */
	{ "sub.evil.example.com", 443, A, 3 },
	/* deny wildcard against allow wildcard and against allow exact */
	{ "x.bad.example.com", 443, D, 7 },
	{ "y.x.bad.example.com", 443, D, 7 },
	{ "ok.bad.example.com", 443, D, 7 },
	{ "ok.bad.example.com", 8443, A, 8 },
	{ "x.bad.example.com", 8443, N, 0 },
	{ "bad.example.com", 443, A, 3 },
	/* ranges: both ends in, one past each end out */
	{ "mirror.example.net", 7999, N, 0 },
	{ "mirror.example.net", 8000, A, 9 },
	{ "mirror.example.net", 8050, A, 9 },
	{ "mirror.example.net", 8100, A, 9 },
	{ "mirror.example.net", 8101, N, 0 },
	/* IP literals match only themselves */
	{ "140.82.112.4", 22, A, 10 },
	{ "140.82.112.4", 443, N, 0 },
	{ "140.82.112.5", 22, N, 0 },
	{ "::ffff:140.82.112.4", 22, N, 0 },
	{ "[::ffff:140.82.112.4]", 22, N, 0 },
	{ "140.82.112.4.example.com", 22, N, 0 },
	{ "2606:4700:4700::1111", 443, A, 11 },
	{ "[2606:4700:4700::1111]", 443, A, 11 },
	{ "2606:4700:4700:0::1111", 443, A, 11 },
	{ "2606:4700:4700:0:0:0:0:1111", 443, A, 11 },
	{ "2606:4700:4700::1112", 443, N, 0 },
	{ "2606:4700:4700::1111", 80, N, 0 },
	/* ports of one host from two lines report their own line */
	{ "multi.example.org", 80, A, 12 },
	{ "multi.example.org", 443, A, 13 },
	{ "multi.example.org", 8080, N, 0 },
	{ "late.example.org", 1000, A, 23 },
	{ "late.example.org", 1001, A, 25 },
	{ "late.example.org", 1002, N, 0 },
	{ "late.example.org", 1999, N, 0 },
	{ "late.example.org", 2000, A, 24 },
	{ "late.example.org", 2010, A, 24 },
	{ "late.example.org", 2011, N, 0 },
	/* exact deny of all ports; its subdomains are judged on their own */
	{ "plain.example.org", 443, D, 14 },
	{ "sub.plain.example.org", 443, A, 15 },
	{ "other.plain.example.org", 443, N, 0 },
	/* a deny wildcard for one port beats an exact allow of that port */
	{ "x.wild.example.org", 25, D, 17 },
	{ "x.wild.example.org", 443, A, 16 },
	{ "y.wild.example.org", 443, A, 16 },
	{ "y.wild.example.org", 25, D, 17 },
	{ "y.wild.example.org", 26, N, 0 },
	{ "wild.example.org", 443, N, 0 },
	{ "wild.example.org", 25, N, 0 },
	/* port lists */
	{ "mixed.example.org", 21, N, 0 },
	{ "mixed.example.org", 22, A, 19 },
	{ "mixed.example.org", 23, N, 0 },
	{ "mixed.example.org", 79, N, 0 },
	{ "mixed.example.org", 80, A, 19 },
	{ "mixed.example.org", 85, A, 19 },
	{ "mixed.example.org", 90, A, 19 },
	{ "mixed.example.org", 91, N, 0 },
	{ "mixed.example.org", 443, A, 19 },
	{ "mixed.example.org", 444, N, 0 },
	/* nested wildcards: the deeper one first, then the shorter one */
	{ "b.deep.example.org", 80, A, 20 },
	{ "x.a.deep.example.org", 8080, A, 21 },
	{ "x.a.deep.example.org", 80, A, 20 },
	{ "a.deep.example.org", 8080, N, 0 },
	{ "a.deep.example.org", 80, A, 20 },
	{ "deep.example.org", 80, N, 0 },
	/* deny of one port of a literal, allow of a range around it */
	{ "10.1.2.3", 25, D, 26 },
	{ "10.1.2.3", 24, A, 27 },
	{ "10.1.2.3", 1024, A, 27 },
	{ "10.1.2.3", 1025, N, 0 },
	/* unknown */
	{ "unknown.example", 443, N, 0 },
	{ "com", 443, N, 0 },
	{ "1.1.1.1", 443, N, 0 },
};

START_TEST(test_decide)
{
	const struct decide_case *c = &decide_cases[_i];
	struct policy *p = must_load(decide_policy, 0);
	struct host h;
	unsigned line = 12345;
	enum egress_reason r;

	parse_host(c->host, &h);
	r = policy_decide(p, &h, c->port, &line);
	ck_assert_msg(r == c->want && line == c->line, "%s:%u: got %s line %u, want %s line %u",
	    c->host, c->port, egress_reason_name(r), line, egress_reason_name(c->want),
	    c->line);
	policy_free(p);
}
END_TEST

/* policy_denies says yes only for deny rules, with the deny's line. */
START_TEST(test_denies)
{
	const struct decide_case *c = &decide_cases[_i];
	struct policy *p = must_load(decide_policy, 0);
	struct host h;
	unsigned line = 12345;
	bool denied;

	if (c->port == 0) {
		policy_free(p);
		return;
	}
	parse_host(c->host, &h);
	denied = policy_denies(p, &h, c->port, &line);
	ck_assert_msg(denied == (c->want == D), "%s:%u: policy_denies says %d", c->host,
	    c->port, denied);
	ck_assert_uint_eq(line, c->want == D ? c->line : 0);
	ck_assert(policy_denies(p, &h, c->port, NULL) == denied);
	policy_free(p);
}
END_TEST

#undef A
#undef D
#undef N

/* A name without a port (the DNS verb): allowed when some port is allowed for it. */
static const struct {
	const char *policy;
	const char *host;
	enum egress_reason want;
} name_cases[] = {
	{ "allow x.com 443\n", "x.com", EGRESS_ALLOWED },
	{ "allow x.com 443\n", "y.com", EGRESS_NOT_ALLOWLISTED },
	{ "allow x.com 443\n", "a.x.com", EGRESS_NOT_ALLOWLISTED },
	{ "allow *.e2e.test 443\n", "n7.e2e.test", EGRESS_ALLOWED },
	{ "allow *.e2e.test 443\n", "e2e.test", EGRESS_NOT_ALLOWLISTED },
	{ "allow x.com 443\ndeny x.com 443\n", "x.com", EGRESS_DENIED_BY_RULE },
	/* Denied on 443 only: still allowed on 80. */
	{ "allow x.com 80,443\ndeny x.com 443\n", "x.com", EGRESS_ALLOWED },
	/* The allowed port lies just past a deny range, inside the allow range. */
	{ "allow x.com 1-1000\ndeny x.com 1-999\n", "x.com", EGRESS_ALLOWED },
	{ "allow x.com 1-1000\ndeny x.com 1-1000\n", "x.com", EGRESS_DENIED_BY_RULE },
	{ "allow x.com 1-65535\ndeny x.com 1-65535\n", "x.com", EGRESS_DENIED_BY_RULE },
	/* A deny wildcard refuses what an exact allow names, on every port it allows. */
	{ "allow a.x.com 443\ndeny *.x.com 1-65535\n", "a.x.com", EGRESS_DENIED_BY_RULE },
	{ "allow *.x.com 443\ndeny a.x.com 443\n", "b.x.com", EGRESS_ALLOWED },
	{ "allow *.x.com 443\ndeny a.x.com 443\n", "a.x.com", EGRESS_DENIED_BY_RULE },
	/* A deny that matches on a port nothing allows still names the refusal. */
	{ "deny x.com 22\n", "x.com", EGRESS_DENIED_BY_RULE },
	{ "allow 140.82.112.4 22\n", "140.82.112.4", EGRESS_ALLOWED },
	{ "allow 140.82.112.4 22\n", "140.82.112.5", EGRESS_NOT_ALLOWLISTED },
	{ "allow *.x.com 443\n", "198.18.0.7", EGRESS_NOT_ALLOWLISTED },
};

START_TEST(test_decide_name)
{
	struct policy *p = must_load(name_cases[_i].policy, 0);
	struct host h;

	parse_host(name_cases[_i].host, &h);
	ck_assert_msg(policy_decide_name(p, &h) == name_cases[_i].want, "%s: %s",
	    name_cases[_i].policy, name_cases[_i].host);
	policy_free(p);
}
END_TEST

/* A policy without rules decides nothing; deny alone allows nothing. */
START_TEST(test_decide_empty)
{
	struct policy *p = must_load("deny x.com\n", 0);
	struct host h;
	unsigned line = 1;

	parse_host("y.com", &h);
	ck_assert_int_eq(policy_decide(p, &h, 443, &line), EGRESS_NOT_ALLOWLISTED);
	ck_assert_uint_eq(line, 0);
	parse_host("x.com", &h);
	ck_assert_int_eq(policy_decide(p, &h, 443, &line), EGRESS_DENIED_BY_RULE);
	ck_assert_uint_eq(line, 1);
	policy_free(p);

	p = must_load("", 0);
	line = 7;
	ck_assert_int_eq(policy_decide(p, &h, 443, &line), EGRESS_NOT_ALLOWLISTED);
	ck_assert_uint_eq(line, 0);
	ck_assert(!policy_denies(p, &h, 443, &line));
	ck_assert_uint_eq(line, 0);
	policy_free(p);
}
END_TEST

/* --- the rule of every host ('allow *', egress-run --learn's) ------------------------- */

static const char any_policy[] =
    "allow * 1-65535\n"                                 /* 1 */
    "deny evil.example.com\n"                           /* 2 */
    "allow api.example.com 443\n"                       /* 3 */
    "deny * 25\n"                                       /* 4 */
    "allow *.wild.example.org 8443\n";                  /* 5 */

static const struct {
	const char *host;
	uint16_t port;
	enum egress_reason want;
	unsigned line;
} any_cases[] = {
	/* any name, any depth, any port, the apex of nothing */
	{ "example.com", 443, EGRESS_ALLOWED, 1 },
	{ "a.b.c.example.net", 1, EGRESS_ALLOWED, 1 },
	{ "com", 65535, EGRESS_ALLOWED, 1 },
	/* IP literals too (the address check is addr_classify's, not the rules') */
	{ "140.82.112.4", 22, EGRESS_ALLOWED, 1 },
	{ "2606:4700:4700::1111", 443, EGRESS_ALLOWED, 1 },
	{ "10.1.2.3", 80, EGRESS_ALLOWED, 1 },
	/* a more specific rule decides first and names its own line */
	{ "api.example.com", 443, EGRESS_ALLOWED, 3 },
	{ "x.wild.example.org", 8443, EGRESS_ALLOWED, 5 },
	{ "x.wild.example.org", 8444, EGRESS_ALLOWED, 1 },
	/* deny beats it: an exact deny, and a deny of every host on one port */
	{ "evil.example.com", 443, EGRESS_DENIED_BY_RULE, 2 },
	{ "sub.evil.example.com", 443, EGRESS_ALLOWED, 1 },
	{ "api.example.com", 25, EGRESS_DENIED_BY_RULE, 4 },
	{ "1.1.1.1", 25, EGRESS_DENIED_BY_RULE, 4 },
	/* port 0 is never allowed */
	{ "example.com", 0, EGRESS_NOT_ALLOWLISTED, 0 },
};

START_TEST(test_any)
{
	struct policy *p = must_load(any_policy, 0);
	struct host h;
	unsigned line = 12345;
	enum egress_reason r;

	parse_host(any_cases[_i].host, &h);
	r = policy_decide(p, &h, any_cases[_i].port, &line);
	ck_assert_msg(r == any_cases[_i].want && line == any_cases[_i].line,
	    "%s:%u: got %s line %u", any_cases[_i].host, any_cases[_i].port,
	    egress_reason_name(r), line);
	policy_free(p);
}
END_TEST

/* Its canonical form is one rule like any other; the DNS verb allows every name. */
START_TEST(test_any_canonical)
{
	struct policy *p = must_load("allow   *  443,80\nallow * 81\ndeny * 25\n", 0), *q;
	struct policy_diag d;
	struct host h;
	char *c;
	size_t len;

	c = policy_canonical(p, &len);
	ck_assert_str_eq(c, "allow * 80-81,443\ndeny * 25\n" DEFAULTS_CANONICAL);
	q = must_load(c, len);
	free(c);
	c = policy_canonical(q, &len);
	ck_assert_str_eq(c, "allow * 80-81,443\ndeny * 25\n" DEFAULTS_CANONICAL);
	free(c);
	ck_assert_uint_eq(policy_rule_count(p), 1);
	parse_host("anything.example", &h);
	ck_assert_int_eq(policy_decide_name(p, &h), EGRESS_ALLOWED);
	policy_free(q);
	policy_free(p);

	/* deny of every host: nothing is allowed, by name or on a port */
	p = must_load("allow x.com 443\ndeny *\n", 0);
	parse_host("x.com", &h);
	ck_assert_int_eq(policy_decide_name(p, &h), EGRESS_DENIED_BY_RULE);
	policy_free(p);

	/* 'allow *' is a warning: a learning run's rule, not one to keep */
	p = load_text("allow * 443\n", 0, &d);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(d.nwarnings, 1);
	ck_assert_msg(strstr(d.warnings[0], FILE_NAME ":1:7: warning: 'allow *'") != NULL,
	    "%s", d.warnings[0]);
	policy_diag_free(&d);
	policy_free(p);
}
END_TEST

/* --- scale -------------------------------------------------------------------------------- */

#define SCALE_RULES 100000u
#define SCALE_DOMAINS 101u

START_TEST(test_scale)
{
	size_t cap = (size_t)SCALE_RULES * 40, len = 0;
	char *text = malloc(cap), *canon;
	struct policy *p;
	struct host h;
	char name[64];
	unsigned line, bad = 0, first_bad = 0;
	size_t clen;

	ck_assert_ptr_nonnull(text);
	for (unsigned i = 0; i < SCALE_RULES; i++) {
		int n = snprintf(text + len, cap - len, "allow h%u.example%u.com 443\n", i,
		    i % SCALE_DOMAINS);

		ck_assert(n > 0 && (size_t)n < cap - len);
		len += (size_t)n;
	}
	p = must_load(text, len);
	free(text);
	ck_assert_uint_eq(policy_rule_count(p), SCALE_RULES);
	canon = policy_canonical(p, &clen);
	ck_assert_uint_eq(count_lines(canon), SCALE_RULES + DEFAULTS_LINES);
	free(canon);

	for (unsigned i = 0; i < SCALE_RULES; i += 1000) {
		snprintf(name, sizeof(name), "h%u.example%u.com", i, i % SCALE_DOMAINS);
		parse_host(name, &h);
		line = 0;
		ck_assert_int_eq(policy_decide(p, &h, 443, &line), EGRESS_ALLOWED);
		ck_assert_uint_eq(line, i + 1);
		ck_assert_int_eq(policy_decide(p, &h, 80, &line), EGRESS_NOT_ALLOWLISTED);
		ck_assert_uint_eq(line, 0);
	}
	/* Every rule, counted rather than asserted one by one. */
	for (unsigned i = 0; i < SCALE_RULES; i++) {
		snprintf(name, sizeof(name), "h%u.example%u.com", i, i % SCALE_DOMAINS);
		parse_host(name, &h);
		if (policy_decide(p, &h, 443, &line) != EGRESS_ALLOWED || line != i + 1) {
			if (bad++ == 0)
				first_bad = i;
		}
	}
	ck_assert_msg(bad == 0, "%u rules decided wrongly, first h%u", bad, first_bad);

	/* Names that are not there: wrong domain, past the end, apex, subdomain. */
	{
		const char *unknown[] = { "h1.example2.com", "h100000.example10.com",
		    "h100001.example0.com", "example1.com", "x.h1.example1.com",
		    "h1.example1.co", "h1.example1.com.evil", "hx.example1.com" };

		for (size_t i = 0; i < NELEMS(unknown); i++) {
			parse_host(unknown[i], &h);
			line = 99;
			ck_assert_msg(policy_decide(p, &h, 443, &line) == EGRESS_NOT_ALLOWLISTED,
			    "%s was allowed (line %u)", unknown[i], line);
			ck_assert_uint_eq(line, 0);
		}
	}
	policy_free(p);
}
END_TEST

/* --- include ---------------------------------------------------------------------------- */

/*
 * A fixed in-memory set of files for include lines: the parser reads nothing itself, so the
 * test hands it the bytes. Files are named as written without "./" (a template NAME is
 * NAME.policy); the id is the name, so a cycle is one file met twice.
 */
static const struct {
	const char *name;
	const char *text;
} inc_files[] = {
	{ "common.policy", "allow c.example 443\n" },
	{ "pypi.policy", "# a template\n\nallow pypi.org 443\nallow files.pythonhosted.org 443\n" },
	{ "nested.policy", "allow n.example 80\ninclude ./common.policy\n" },
	{ "a.policy", "include ./b.policy\n" },
	{ "b.policy", "include ./a.policy\n" },
	{ "self.policy", "include ./self.policy\n" },
	{ "d1.policy", "include ./d2.policy\n" },
	{ "d2.policy", "include ./d3.policy\n" },
	{ "d3.policy", "include ./d4.policy\n" },
	{ "d4.policy", "include ./d5.policy\n" },
	{ "d5.policy", "include ./d6.policy\n" },
	{ "d6.policy", "include ./d7.policy\n" },
	{ "d7.policy", "include ./d8.policy\n" },
	{ "d8.policy", "include ./d9.policy\n" },
	{ "d9.policy", "allow deep.example 1\n" },
	{ "settings.policy", "allow s.example 443\nsni off\n" },
	{ "perm.policy", "permit-range 10.0.0.0/8\n" },
	{ "quota.policy", "quota connections 5\n" },
	{ "sealed.policy", "#!egress-policy 1\n#digest sha256:"
	    "0000000000000000000000000000000000000000000000000000000000000000\n" },
	{ "bad.policy", "allow x.example 443\nallow bad..host 443\n" },
	{ "deny.policy", "deny evil.c.example\n" },
	{ FILE_NAME, "allow t.example 1\n" },      /* the top file's own name */
};

static int
mem_open(void *arg, const char *from, const char *target, bool template,
    struct policy_include_file *out, char *why, size_t whylen)
{
	char name[256];

	(void)arg;
	(void)from;
	if (template)
		snprintf(name, sizeof(name), "%s.policy", target);
	else
		snprintf(name, sizeof(name), "%s", strncmp(target, "./", 2) == 0 ? target + 2 :
		    target);
	for (size_t i = 0; i < NELEMS(inc_files); i++)
		if (strcmp(inc_files[i].name, name) == 0) {
			out->len = strlen(inc_files[i].text);
			out->buf = malloc(out->len + 1);
			memcpy(out->buf, inc_files[i].text, out->len);
			out->name = strdup(name);
			snprintf(out->id, sizeof(out->id), "%.60s", name);
			return 0;
		}
	snprintf(why, whylen, "no file %s", name);
	return -1;
}

static const struct policy_includer mem_inc = { mem_open, NULL, NULL };

static struct policy *
load_inc(const char *s, struct policy_diag *d)
{
	return policy_load_inc(FILE_NAME, (const uint8_t *)s, strlen(s), NULL, &mem_inc, d);
}

static struct policy *
must_load_inc(const char *s)
{
	struct policy_diag d;
	struct policy *p = load_inc(s, &d);

	ck_assert_msg(p != NULL, "policy refused: %s\n--- input ---\n%s",
	    d.nerrors ? d.errors[0] : "(no error reported)", s);
	policy_diag_free(&d);
	return p;
}

/* The canonical form and digest are over the expanded rules: included = inlined. */
START_TEST(test_include_digest)
{
	struct policy *a = must_load_inc("allow a.example 443\ninclude ./common.policy\n"
	    "include pypi\ninclude ./deny.policy\n");
	struct policy *b = must_load("allow a.example 443\nallow c.example 443\n"
	    "allow pypi.org 443\nallow files.pythonhosted.org 443\ndeny evil.c.example\n", 0);
	char da[EGRESS_DIGEST_STRLEN], db[EGRESS_DIGEST_STRLEN];
	size_t la, lb;
	char *ca = policy_canonical(a, &la), *cb = policy_canonical(b, &lb);

	ck_assert_str_eq(ca, cb);
	ck_assert(strstr(ca, "include") == NULL);
	policy_digest(a, da);
	policy_digest(b, db);
	ck_assert_str_eq(da, db);
	ck_assert_uint_eq(policy_rule_count(a), 5);
	free(ca);
	free(cb);
	policy_free(a);
	policy_free(b);
}
END_TEST

/* A sealed policy holds the expanded rules: it loads with no opener, to the same digest. */
START_TEST(test_include_sealed)
{
	struct policy *a = must_load_inc("include pypi\ninclude ./nested.policy\n"), *b;
	struct policy_diag d;
	char da[EGRESS_DIGEST_STRLEN], db[EGRESS_DIGEST_STRLEN];
	size_t len;
	char *sealed = seal_policy(a, NULL, &len);

	b = policy_load("t.sealed", (const uint8_t *)sealed, len, NULL, &d);
	ck_assert_msg(b != NULL, "%s", d.nerrors ? d.errors[0] : "");
	policy_diag_free(&d);
	policy_digest(a, da);
	policy_digest(b, db);
	ck_assert_str_eq(da, db);
	free(sealed);
	policy_free(a);
	policy_free(b);
}
END_TEST

/* Each rule keeps its file and line, and the include lines that brought it in. */
static const struct {
	const char *host;
	uint16_t port;
	enum egress_reason want;
	const char *origin;
	unsigned top_line;             /* policy_decide's line: the line in the top file */
} origin_cases[] = {
	{ "a.example", 443, EGRESS_ALLOWED, FILE_NAME ":1", 1 },
	{ "pypi.org", 443, EGRESS_ALLOWED, "pypi.policy:3 (via " FILE_NAME ":2)", 2 },
	{ "files.pythonhosted.org", 443, EGRESS_ALLOWED, "pypi.policy:4 (via " FILE_NAME ":2)",
	    2 },
	{ "n.example", 80, EGRESS_ALLOWED, "nested.policy:1 (via " FILE_NAME ":4)", 4 },
	{ "c.example", 443, EGRESS_ALLOWED,
	    "common.policy:1 (via nested.policy:2, " FILE_NAME ":4)", 4 },
	{ "evil.c.example", 443, EGRESS_DENIED_BY_RULE, "deny.policy:1 (via " FILE_NAME ":5)", 5 },
	{ "other.example", 443, EGRESS_NOT_ALLOWLISTED, "-", 0 },
};

START_TEST(test_include_origin)
{
	struct policy *p = must_load_inc("allow a.example 443\ninclude pypi\n\n"
	    "include ./nested.policy\ninclude ./deny.policy\n");
	struct host h;
	const char *why;
	char origin[256];
	unsigned line;

	ck_assert_int_eq(host_parse(origin_cases[_i].host, strlen(origin_cases[_i].host), &h,
	    &why), 0);
	ck_assert_int_eq(policy_decide_origin(p, &h, origin_cases[_i].port, origin,
	    sizeof(origin)), origin_cases[_i].want);
	ck_assert_str_eq(origin, origin_cases[_i].origin);
	ck_assert_int_eq(policy_decide(p, &h, origin_cases[_i].port, &line),
	    origin_cases[_i].want);
	ck_assert_uint_eq(line, origin_cases[_i].top_line);
	policy_free(p);
}
END_TEST

/* One file included twice (not a cycle), and includes exactly at the depth bound. */
START_TEST(test_include_ok)
{
	struct policy *p = must_load_inc("include ./common.policy\ninclude ./nested.policy\n"
	    "include ./common.policy\n");

	ck_assert_uint_eq(policy_rule_count(p), 2);
	policy_free(p);
	p = must_load_inc("include ./d2.policy\n");       /* d2 .. d9: 8 deep */
	ck_assert_uint_eq(policy_rule_count(p), 1);
	policy_free(p);
}
END_TEST

/* Every refusal names file:line:column and, inside an include, the chain. */
static const struct {
	const char *text;
	const char *where;             /* the error must start with this */
	const char *what;              /* ... and contain this */
} inc_err_cases[] = {
	{ "include ./a.policy", "b.policy:1:9:", "include cycle: a.policy is already being read ("
	    FILE_NAME ":1 -> a.policy:1 -> b.policy:1 -> a.policy)" },
	{ "include ./self.policy", "self.policy:1:9:", "include cycle" },
	{ "allow x.example 1\ninclude ./" FILE_NAME, FILE_NAME ":2:9:", "include cycle: "
	    FILE_NAME " is already being read" },
	{ "include ./d1.policy", "d8.policy:1:1:", "includes nested deeper than 8 (" FILE_NAME
	    ":1 -> d1.policy:1 -> d2.policy:1" },
	{ "include ./d1.policy", "d8.policy:1:1:", "(via d7.policy:1, d6.policy:1" },
	{ "include nope", FILE_NAME ":1:9:", "cannot include template 'nope': no file" },
	{ "include ./missing.policy", FILE_NAME ":1:9:", "cannot include file './missing.policy'" },
	{ "include a/b", FILE_NAME ":1:9:", "bad template name 'a/b'" },
	{ "include ..", FILE_NAME ":1:9:", "bad template name '..'" },
	{ "include ../", FILE_NAME ":1:9:", "bad template name '../'" },
	{ "include pypi.policy", FILE_NAME ":1:9:", "bad template name 'pypi.policy'" },
	{ "include Pypi", FILE_NAME ":1:9:", "bad template name" },
	{ "include -x", FILE_NAME ":1:9:", "bad template name" },
	{ "include /etc/egress/x.policy", FILE_NAME ":1:9:", "not an absolute path" },
	{ "include", FILE_NAME ":1:8:", "expected: include NAME" },
	{ "include a b", FILE_NAME ":1:11:", "expected: include NAME" },
	{ "include ./settings.policy", "settings.policy:2:1:",
	    "'sni' in an included file: an included file holds only allow, deny and include" },
	{ "include ./settings.policy", "settings.policy:2:1:", "(via " FILE_NAME ":1)" },
	{ "include ./perm.policy", "perm.policy:1:1:", "'permit-range' in an included file" },
	{ "include ./quota.policy", "quota.policy:1:1:", "'quota' in an included file" },
	{ "include ./sealed.policy", FILE_NAME ":1:9:", "sealed.policy is a sealed policy" },
	{ "\n\ninclude ./bad.policy", "bad.policy:2:7:", "bad host 'bad..host'" },
	{ "\n\ninclude ./bad.policy", "bad.policy:2:7:", "(via " FILE_NAME ":3)" },
};

START_TEST(test_include_error)
{
	struct policy_diag d;
	struct policy *p = load_inc(inc_err_cases[_i].text, &d);

	ck_assert_msg(p == NULL, "accepted: %s", inc_err_cases[_i].text);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(strncmp(d.errors[0], inc_err_cases[_i].where,
	    strlen(inc_err_cases[_i].where)) == 0 && strstr(d.errors[0], inc_err_cases[_i].what),
	    "%s: got '%s', want '%s' ... '%s'", inc_err_cases[_i].text, d.errors[0],
	    inc_err_cases[_i].where, inc_err_cases[_i].what);
	policy_diag_free(&d);
}
END_TEST

/* Without an opener (egressd), an include is refused with the way out: seal the policy. */
START_TEST(test_include_no_opener)
{
	struct policy_diag d;
	struct policy *p = load_text(TXT("allow a.example 443\ninclude pypi\n"), &d);

	ck_assert(p == NULL);
	ck_assert_uint_eq(d.nerrors, 1);
	ck_assert_msg(strncmp(d.errors[0], FILE_NAME ":2:1: include is not read here: seal the "
	    "policy", strlen(FILE_NAME ":2:1: include is not read here: seal the policy")) == 0,
	    "%s", d.errors[0]);
	policy_diag_free(&d);
}
END_TEST

/* --- main ------------------------------------------------------------------------------------ */

static Suite *
policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc;

	tc = tcase_create("directive_ok");
	tcase_add_loop_test(tc, test_directive_ok, 0, (int)NELEMS(ok_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("parse_error");
	tcase_add_loop_test(tc, test_parse_error, 0, (int)NELEMS(err_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("error_list");
	tcase_add_test(tc, test_error_list);
	suite_add_tcase(s, tc);

	tc = tcase_create("line_length");
	tcase_add_test(tc, test_line_length);
	suite_add_tcase(s, tc);

	tc = tcase_create("field_count");
	tcase_add_test(tc, test_field_count);
	suite_add_tcase(s, tc);

	tc = tcase_create("settings");
	tcase_add_test(tc, test_settings_default);
	tcase_add_test(tc, test_settings_explicit);
	suite_add_tcase(s, tc);

	tc = tcase_create("warning");
	tcase_add_loop_test(tc, test_warning, 0, (int)NELEMS(warn_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("canonical_spec_example");
	tcase_add_test(tc, test_canonical_spec_example);
	tcase_add_test(tc, test_canonical_defaults);
	tcase_add_test(tc, test_canonical_buffer_growth);
	suite_add_tcase(s, tc);

	tc = tcase_create("canonical_ports");
	tcase_add_loop_test(tc, test_canonical_ports, 0, (int)NELEMS(port_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("canonical_same");
	tcase_add_loop_test(tc, test_canonical_same, 0, (int)NELEMS(same_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("canonical_distinct");
	tcase_add_test(tc, test_canonical_distinct);
	suite_add_tcase(s, tc);

	tc = tcase_create("canonical_fixed_point");
	tcase_add_test(tc, test_canonical_fixed_point);
	suite_add_tcase(s, tc);

	tc = tcase_create("decide");
	tcase_add_loop_test(tc, test_decide, 0, (int)NELEMS(decide_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("denies");
	tcase_add_loop_test(tc, test_denies, 0, (int)NELEMS(decide_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("decide a name without a port");
	tcase_add_loop_test(tc, test_decide_name, 0, (int)NELEMS(name_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("decide_empty");
	tcase_add_test(tc, test_decide_empty);
	suite_add_tcase(s, tc);

	tc = tcase_create("any host");
	tcase_add_loop_test(tc, test_any, 0, (int)NELEMS(any_cases));
	tcase_add_test(tc, test_any_canonical);
	suite_add_tcase(s, tc);

	tc = tcase_create("include_digest");
	tcase_add_test(tc, test_include_digest);
	tcase_add_test(tc, test_include_sealed);
	suite_add_tcase(s, tc);

	tc = tcase_create("include_origin");
	tcase_add_loop_test(tc, test_include_origin, 0, (int)NELEMS(origin_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("include_ok");
	tcase_add_test(tc, test_include_ok);
	suite_add_tcase(s, tc);

	tc = tcase_create("include_error");
	tcase_add_loop_test(tc, test_include_error, 0, (int)NELEMS(inc_err_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("include_no_opener");
	tcase_add_test(tc, test_include_no_opener);
	suite_add_tcase(s, tc);

	tc = tcase_create("scale");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scale);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(policy_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);   /* CK_VERBOSITY=verbose lists every check */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
