/*
 * check_draft.c: unit tests of the draft writer (policy/draft.c), the one egress-policy
 * suggest and egress-run --learn share (SPEC "Writing a policy without guessing"):
 * one allow per host with its ports merged as the canonical form writes them, a wildcard
 * only at DRAFT_WILDCARD_MIN siblings directly under one registrable domain and never on
 * a public suffix, counts in comments, IP literals literal, sorted and stable output, and
 * a draft that egress-policy's parser accepts. Needs libpsl's list (built in, or
 * Debian's publicsuffix); nothing touches the network.
 */
#include "config.h"

#include <check.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft.h"
#include "policy.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_OBS 8
#define MAX_LINES 8

/* The rule lines of a draft (lines not starting with '#'), comments cut off. */
static size_t
rules_of(const char *draft, char out[][512], size_t max)
{
	size_t n = 0;

	for (const char *p = draft; *p != '\0';) {
		const char *nl = strchr(p, '\n'), *hash;
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > 0 && p[0] != '#') {
			hash = memchr(p, '#', len);
			if (hash != NULL)
				len = (size_t)(hash - p);
			while (len > 0 && p[len - 1] == ' ')
				len--;
			ck_assert_uint_lt(n, max);
			ck_assert_uint_lt(len, 512);
			memcpy(out[n], p, len);
			out[n++][len] = '\0';
		}
		p = nl ? nl + 1 : p + len;
	}
	return n;
}

/* The comment on the line whose rule is rule ("" when there is none). */
static const char *
comment_of(const char *draft, const char *rule, char *buf, size_t cap)
{
	size_t rl = strlen(rule);

	for (const char *p = draft; *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > rl && strncmp(p, rule, rl) == 0 && p[rl] == ' ') {
			const char *hash = memchr(p, '#', len);

			if (hash != NULL) {
				snprintf(buf, cap, "%.*s", (int)(len - (size_t)(hash - p)), hash);
				return buf;
			}
		}
		p = nl ? nl + 1 : p + len;
	}
	return "";
}

struct draft_case {
	const char *what;
	struct draft_obs obs[MAX_OBS];
	const char *rules[MAX_LINES];    /* the allow lines, in order, NULL-terminated */
	const char *rule;                /* one rule whose comment is checked (or NULL) */
	const char *comment;             /* a substring of it */
};

#define O(h, p, o, d) { (h), (p), (o), (d) }

static const struct draft_case cases[] = {
	{ "one host, one port", { O("pypi.org", 443, 3, 0) },
	    { "allow pypi.org 443" }, "allow pypi.org 443", "# 3 connections" },
	{ "one connection is singular", { O("pypi.org", 443, 1, 0) },
	    { "allow pypi.org 443" }, "allow pypi.org 443", "# 1 connection" },
	{ "ports of one host merge into one line, runs as ranges",
	    { O("a.example", 443, 1, 0), O("a.example", 80, 1, 0), O("a.example", 81, 1, 0),
	      O("a.example", 82, 1, 0), O("a.example", 8080, 0, 2) },
	    { "allow a.example 80-82,443,8080" }, "allow a.example 80-82,443,8080",
	    "# 4 connections, 2 denied (not-allowlisted)" },
	{ "duplicates add up",
	    { O("a.example", 443, 1, 0), O("A.Example.", 443, 2, 0), O("a.example", 443, 0, 5) },
	    { "allow a.example 443" }, "allow a.example 443",
	    "# 3 connections, 5 denied (not-allowlisted)" },
	{ "denials alone are a line", { O("x.example", 22, 0, 4) },
	    { "allow x.example 22" }, "allow x.example 22", "# 4 denied (not-allowlisted)" },
	{ "three siblings under a registrable domain: one wildcard",
	    { O("a.example.com", 443, 1, 0), O("b.example.com", 443, 2, 0),
	      O("c.example.com", 8443, 0, 1) },
	    { "allow *.example.com 443,8443" }, "allow *.example.com 443,8443",
	    "# 3 names, 3 connections, 1 denied (not-allowlisted)" },
	{ "two siblings: two lines",
	    { O("a.example.com", 443, 1, 0), O("b.example.com", 443, 1, 0) },
	    { "allow a.example.com 443", "allow b.example.com 443" }, NULL, NULL },
	{ "the apex is not a sibling and stays its own line",
	    { O("example.com", 443, 1, 0), O("a.example.com", 443, 1, 0),
	      O("b.example.com", 443, 1, 0) },
	    { "allow a.example.com 443", "allow b.example.com 443", "allow example.com 443" },
	    NULL, NULL },
	{ "deeper names are not siblings of the registrable domain's children",
	    { O("a.example.com", 443, 1, 0), O("b.example.com", 443, 1, 0),
	      O("x.y.example.com", 443, 1, 0) },
	    { "allow a.example.com 443", "allow b.example.com 443",
	      "allow x.y.example.com 443" }, NULL, NULL },
	{ "the same name on two ports is one sibling",
	    { O("a.example.com", 443, 1, 0), O("a.example.com", 80, 1, 0),
	      O("b.example.com", 443, 1, 0) },
	    { "allow a.example.com 80,443", "allow b.example.com 443" }, NULL, NULL },
	{ "never on a public suffix: github.io",
	    { O("a.github.io", 443, 1, 0), O("b.github.io", 443, 1, 0),
	      O("c.github.io", 443, 1, 0), O("d.github.io", 443, 1, 0) },
	    { "allow a.github.io 443", "allow b.github.io 443", "allow c.github.io 443",
	      "allow d.github.io 443" }, NULL, NULL },
	{ "never on a public suffix: co.uk",
	    { O("bbc.co.uk", 443, 1, 0), O("gov.co.uk", 443, 1, 0), O("shop.co.uk", 443, 1, 0) },
	    { "allow bbc.co.uk 443", "allow gov.co.uk 443", "allow shop.co.uk 443" }, NULL, NULL },
	{ "under a registrable domain below a public suffix: a wildcard",
	    { O("a.bbc.co.uk", 443, 1, 0), O("b.bbc.co.uk", 443, 1, 0),
	      O("c.bbc.co.uk", 443, 1, 0) },
	    { "allow *.bbc.co.uk 443" }, "allow *.bbc.co.uk 443", "# 3 names, 3 connections" },
	{ "a project's own site under github.io is a registrable domain",
	    { O("a.proj.github.io", 443, 1, 0), O("b.proj.github.io", 443, 1, 0),
	      O("c.proj.github.io", 443, 1, 0) },
	    { "allow *.proj.github.io 443" }, NULL, NULL },
	{ "IP literals stay literal, IPv6 canonical",
	    { O("192.0.2.1", 443, 1, 0), O("192.0.2.2", 443, 1, 0), O("192.0.2.3", 443, 1, 0),
	      O("2001:DB8:0:0::1", 22, 1, 0) },
	    { "allow 192.0.2.1 443", "allow 192.0.2.2 443", "allow 192.0.2.3 443",
	      "allow 2001:db8::1 22" }, NULL, NULL },
	{ "sorted as the canonical form sorts, wildcards first",
	    { O("zz.example", 1, 1, 0), O("b.example.org", 2, 1, 0), O("a.example.org", 2, 1, 0),
	      O("c.example.org", 2, 1, 0), O("10.0.0.1", 3, 1, 0), O("aa.example", 4, 1, 0) },
	    { "allow *.example.org 2", "allow 10.0.0.1 3", "allow aa.example 4",
	      "allow zz.example 1" }, NULL, NULL },
	{ "a host that is not one is left out",
	    { O("bad host", 443, 1, 0), O("127.1", 80, 1, 0), O("ok.example", 443, 1, 0) },
	    { "allow ok.example 443" }, NULL, NULL },
	{ "a name seen only without a port is a commented-out line",
	    { O("dns.example", 0, 0, 2) }, { NULL }, "# allow dns.example PORTS",
	    "2 name lookups refused, port not seen" },
	{ "nothing seen, nothing allowed", { O(NULL, 0, 0, 0) }, { NULL }, NULL, NULL },
};

static size_t
nobs_of(const struct draft_case *c)
{
	size_t n = 0;

	while (n < MAX_OBS && (c->obs[n].host != NULL || c->obs[n].port != 0))
		n++;
	return n;
}

START_TEST(test_draft)
{
	const struct draft_case *c = &cases[_i];
	char rules[MAX_LINES + 1][512], buf[512];
	size_t len, n, want = 0, nobs = nobs_of(c);
	char *d = draft_write(c->obs, nobs, "check_draft", &len, NULL);

	ck_assert_uint_eq(strlen(d), len);
	ck_assert(len > 0 && d[len - 1] == '\n');
	n = rules_of(d, rules, MAX_LINES + 1);
	while (want < MAX_LINES && c->rules[want] != NULL)
		want++;
	ck_assert_msg(n == want, "%s: %zu rules, want %zu:\n%s", c->what, n, want, d);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(strcmp(rules[i], c->rules[i]) == 0, "%s: rule %zu is '%s', want "
		    "'%s':\n%s", c->what, i, rules[i], c->rules[i], d);
	if (c->rule != NULL)
		ck_assert_msg(strstr(comment_of(d, c->rule, buf, sizeof(buf)), c->comment) != NULL,
		    "%s: the comment of '%s' lacks '%s':\n%s", c->what, c->rule, c->comment, d);
	free(d);
}
END_TEST

/* Every draft is a policy the parser takes, whose rules are the draft's rules. */
START_TEST(test_draft_parses)
{
	const struct draft_case *c = &cases[_i];
	struct policy_diag diag;
	struct policy *p;
	size_t len;
	char *d = draft_write(c->obs, nobs_of(c), "check_draft", &len, NULL);

	p = policy_load("draft", (const uint8_t *)d, len, NULL, &diag);
	ck_assert_msg(p != NULL, "%s: %s\n%s", c->what, diag.nerrors ? diag.errors[0] : "", d);
	/* No wildcard of a draft sits on a public suffix: the check warning never fires. */
	for (size_t i = 0; i < diag.nwarnings; i++)
		ck_assert_msg(strstr(diag.warnings[i], "public suffix") == NULL, "%s: %s",
		    c->what, diag.warnings[i]);
	policy_diag_free(&diag);
	policy_free(p);
	free(d);
}
END_TEST

/* The same observations in another order give the same bytes. */
START_TEST(test_draft_stable)
{
	const struct draft_case *c = &cases[_i];
	struct draft_obs rev[MAX_OBS];
	size_t n = nobs_of(c), l1, l2;
	char *a, *b;

	for (size_t i = 0; i < n; i++)
		rev[i] = c->obs[n - 1 - i];
	a = draft_write(c->obs, n, "check_draft", &l1, NULL);
	b = draft_write(rev, n, "check_draft", &l2, NULL);
	ck_assert_uint_eq(l1, l2);
	ck_assert_msg(memcmp(a, b, l1) == 0, "%s:\n%s\n---\n%s", c->what, a, b);
	free(a);
	free(b);
}
END_TEST

/* The header names the source and says to review and seal; no byte of it opens a line. */
START_TEST(test_draft_header)
{
	struct draft_obs o = { "pypi.org", 443, 1, 0 };
	struct policy_diag diag;
	struct policy *p;
	size_t len, skipped = 9;
	char *d = draft_write(&o, 1, "egress-policy suggest a\nallow evil.example 1-65535",
	    &len, &skipped);

	ck_assert_uint_eq(skipped, 0);
	ck_assert_msg(strncmp(d, "# Draft policy written by egress-policy suggest a?allow "
	    "evil.example 1-65535.\n", 74) == 0, "%s", d);
	ck_assert_ptr_nonnull(strstr(d, "Review every"));
	ck_assert_ptr_nonnull(strstr(d, "egress-policy seal"));
	p = policy_load("draft", (const uint8_t *)d, len, NULL, &diag);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(policy_rule_count(p), 1);
	policy_diag_free(&diag);
	policy_free(p);
	free(d);

	{
		struct draft_obs bad[] = { { "a b", 1, 1, 0 }, { NULL, 1, 1, 0 },
		    { "ok.example", 1, 1, 0 } };

		d = draft_write(bad, 3, "t", &len, &skipped);
		ck_assert_uint_eq(skipped, 2);
		free(d);
	}
}
END_TEST

/* More ports than one line holds: several lines of one host (rules add up), each < 4096. */
START_TEST(test_draft_many_ports)
{
	static struct draft_obs o[3000];
	struct policy_diag diag;
	struct policy *p;
	struct host h;
	unsigned line;
	size_t len;
	char *d;

	for (size_t i = 0; i < NELEMS(o); i++) {
		o[i].host = i % 2 ? "a.example.com" : i % 3 ? "b.example.com" : "c.example.com";
		o[i].port = (uint16_t)(2 * i + 1);   /* odd ports: no runs */
		o[i].opens = 1;
	}
	d = draft_write(o, NELEMS(o), "t", &len, NULL);
	for (const char *q = d; *q;) {
		const char *nl = strchr(q, '\n');

		ck_assert_uint_lt((size_t)(nl - q), EGRESS_POLICY_MAX_LINE);
		q = nl + 1;
	}
	p = policy_load("draft", (const uint8_t *)d, len, NULL, &diag);
	ck_assert_msg(p != NULL, "%s", diag.nerrors ? diag.errors[0] : "");
	ck_assert_int_eq(host_parse("x.example.com", 13, &h, &(const char *){ NULL }), 0);
	ck_assert_int_eq(policy_decide(p, &h, 5999, &line), EGRESS_ALLOWED);
	ck_assert_int_eq(policy_decide(p, &h, 6000, &line), EGRESS_NOT_ALLOWLISTED);
	policy_diag_free(&diag);
	policy_free(p);
	free(d);
}
END_TEST

static Suite *
draft_suite(void)
{
	Suite *s = suite_create("draft");
	TCase *tc;

	tc = tcase_create("draft");
	tcase_add_loop_test(tc, test_draft, 0, (int)NELEMS(cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("draft parses");
	tcase_add_loop_test(tc, test_draft_parses, 0, (int)NELEMS(cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("draft stable");
	tcase_add_loop_test(tc, test_draft_stable, 0, (int)NELEMS(cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("draft header");
	tcase_add_test(tc, test_draft_header);
	suite_add_tcase(s, tc);

	tc = tcase_create("draft many ports");
	tcase_add_test(tc, test_draft_many_ports);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(draft_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
