/*
 * check_dnschain.c: unit tests for the CNAME records of an answer (egress/dnschain.c;
 * SPEC "egressd", decision pipeline: every CNAME in the chain is checked against deny
 * rules). A name of the chain that is not kept is a name the deny rules never see, so
 * every way of losing one must refuse the answer: a chain past EGRESSD_MAX_CNAMES, a
 * record that does not continue the chain, a name that is not canonical.
 *
 * Each case is a list of records as c-ares hands them over (owner, target, in answer
 * order; the A answer's chain and then the AAAA answer's) and what must come of them.
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egressd.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CASE_MAX 40                   /* records in one case */

struct chain_case {
	const char *what;
	const char *qname;
	const char *recs[CASE_MAX][2];    /* owner, target; ends at a NULL owner */
	int want;                         /* 0, or -1 at record fail_at */
	size_t fail_at;
	const char *why;                  /* a part of *why, for -1 */
	const char *names;                /* ans->cnames joined by spaces, for 0 */
};

/* n links q.test -> l1.test -> ... -> lN.test, then the same chain once more (AAAA). */
static void
build_chain(const char *recs[][2], unsigned n, unsigned copies, char store[][32])
{
	size_t k = 0;

	for (unsigned c = 0; c < copies; c++)
		for (unsigned i = 1; i <= n; i++) {
			if (i == 1)
				snprintf(store[k * 2], 32, "q.test");
			else
				snprintf(store[k * 2], 32, "l%u.test", i - 1);
			snprintf(store[k * 2 + 1], 32, "l%u.test", i);
			recs[k][0] = store[k * 2];
			recs[k][1] = store[k * 2 + 1];
			k++;
		}
	recs[k][0] = NULL;
}

static int
run(const char *qname, const char *const recs[][2], struct dns_answer *ans, size_t *at,
    const char **why)
{
	struct dns_chain ch;

	memset(ans, 0, sizeof(*ans));
	dns_chain_init(&ch, qname);
	for (*at = 0; recs[*at][0] != NULL; (*at)++)
		if (dns_chain_link(&ch, ans, recs[*at][0], recs[*at][1], why) == -1)
			return -1;
	return 0;
}

static void
joined(const struct dns_answer *ans, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < ans->ncnames && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? " " : "",
		    ans->cnames[i]);
}

static const struct chain_case cases[] = {
	{ "no CNAME", "q.test", { { NULL, NULL } }, 0, 0, NULL, "" },
	{ "one link", "q.test", { { "q.test", "t.test" }, { NULL, NULL } }, 0, 0, NULL,
	    "t.test" },
	{ "the A and the AAAA chain: each name once", "q.test",
	    { { "q.test", "a.test" }, { "a.test", "b.test" }, { "q.test", "a.test" },
	    { "a.test", "b.test" }, { NULL, NULL } }, 0, 0, NULL, "a.test b.test" },
	{ "two different chains: every name kept", "q.test",
	    { { "q.test", "a.test" }, { "q.test", "b.test" }, { "b.test", "c.test" },
	    { NULL, NULL } }, 0, 0, NULL, "a.test b.test c.test" },
	{ "names canonicalised: case and a trailing dot", "q.test",
	    { { "Q.TEST", "EVIL.Test." }, { NULL, NULL } }, 0, 0, NULL, "evil.test" },
	{ "a record owned by no name of the chain", "q.test",
	    { { "q.test", "a.test" }, { "evil.test", "b.test" }, { NULL, NULL } }, -1, 1,
	    "outside the chain", NULL },
	{ "the first record not owned by the name asked", "q.test",
	    { { "other.test", "a.test" }, { NULL, NULL } }, -1, 0, "outside the chain", NULL },
	{ "a chain out of order", "q.test",
	    { { "q.test", "a.test" }, { "b.test", "c.test" }, { "a.test", "b.test" },
	    { NULL, NULL } }, -1, 1, "outside the chain", NULL },
	{ "a target with an escaped dot", "q.test",
	    { { "q.test", "evil\\.test" }, { NULL, NULL } }, -1, 0, "target is not a valid",
	    NULL },
	{ "a target with a space", "q.test",
	    { { "q.test", "evil test" }, { NULL, NULL } }, -1, 0, "target is not a valid",
	    NULL },
	{ "a target that is an address", "q.test",
	    { { "q.test", "127.0.0.1" }, { NULL, NULL } }, -1, 0, "target is not a valid",
	    NULL },
	{ "an empty target", "q.test",
	    { { "q.test", "" }, { NULL, NULL } }, -1, 0, "target is not a valid", NULL },
	{ "a NULL target", "q.test",
	    { { "q.test", NULL }, { NULL, NULL } }, -1, 0, "target is not a valid", NULL },
	{ "an owner that is not a name", "q.test",
	    { { "q..test", "a.test" }, { NULL, NULL } }, -1, 0, "owner is not a valid", NULL },
	{ "a target over 253 octets is refused, not cut", "q.test",
	    { { "q.test", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.evil.test" },
	    { NULL, NULL } }, -1, 0, "target is not a valid", NULL },
};

START_TEST(test_cases)
{
	const struct chain_case *tc = &cases[_i];
	struct dns_answer *ans = malloc(sizeof(*ans));
	const char *why = NULL;
	char got[EGRESSD_MAX_CHAIN_NAMES * (EGRESS_HOST_MAX + 1)];
	size_t at;
	int r;

	ck_assert_ptr_nonnull(ans);
	r = run(tc->qname, tc->recs, ans, &at, &why);
	ck_assert_msg(r == tc->want, "%s: returned %d", tc->what, r);
	if (r == -1) {
		ck_assert_msg(at == tc->fail_at, "%s: refused at record %zu, not %zu", tc->what,
		    at, tc->fail_at);
		ck_assert_msg(why != NULL && strstr(why, tc->why) != NULL, "%s: why %s",
		    tc->what, why ? why : "(null)");
	} else {
		joined(ans, got, sizeof(got));
		ck_assert_msg(strcmp(got, tc->names) == 0, "%s: names \"%s\"", tc->what, got);
	}
	free(ans);
}
END_TEST

/* Exactly EGRESSD_MAX_CNAMES links pass, in the A and in the AAAA answer. */
START_TEST(test_bound_ok)
{
	const char *recs[CASE_MAX][2];
	char store[CASE_MAX * 2][32];
	struct dns_answer *ans = malloc(sizeof(*ans));
	const char *why = NULL;
	size_t at;

	ck_assert_ptr_nonnull(ans);
	build_chain(recs, EGRESSD_MAX_CNAMES, 2, store);
	ck_assert_int_eq(run("q.test", recs, ans, &at, &why), 0);
	ck_assert_uint_eq(ans->ncnames, EGRESSD_MAX_CNAMES);
	ck_assert_str_eq(ans->cnames[EGRESSD_MAX_CNAMES - 1], "l8.test");
	free(ans);
}
END_TEST

/* One link more is refused at that link, naming the bound: never a chain checked in part. */
START_TEST(test_bound_over)
{
	const char *recs[CASE_MAX][2];
	char store[CASE_MAX * 2][32];
	struct dns_answer *ans = malloc(sizeof(*ans));
	const char *why = NULL;
	char want[64];
	size_t at;

	ck_assert_ptr_nonnull(ans);
	for (unsigned n = EGRESSD_MAX_CNAMES + 1; n < CASE_MAX / 2; n++) {
		build_chain(recs, n, 2, store);
		ck_assert_int_eq(run("q.test", recs, ans, &at, &why), -1);
		ck_assert_uint_eq(at, EGRESSD_MAX_CNAMES);
		snprintf(want, sizeof(want), "CNAME chain longer than %d links",
		    EGRESSD_MAX_CNAMES);
		ck_assert_str_eq(why, want);
	}
	free(ans);
}
END_TEST

/* A resolver that restarts the chain again and again cannot overflow what is kept. */
START_TEST(test_restarts)
{
	const char *recs[CASE_MAX][2];
	char store[CASE_MAX][32];
	struct dns_answer *ans = malloc(sizeof(*ans));
	const char *why = NULL;
	size_t at, i;

	ck_assert_ptr_nonnull(ans);
	for (i = 0; i < CASE_MAX - 1; i++) {
		snprintf(store[i], 32, "t%zu.test", i);
		recs[i][0] = "q.test";
		recs[i][1] = store[i];
	}
	recs[i][0] = NULL;
	ck_assert_int_eq(run("q.test", recs, ans, &at, &why), -1);
	ck_assert_uint_eq(at, EGRESSD_MAX_CHAIN_NAMES);
	ck_assert_ptr_nonnull(strstr(why, "more CNAME targets"));
	free(ans);
}
END_TEST

static Suite *
dnschain_suite(void)
{
	Suite *s = suite_create("dnschain");
	TCase *tc;

	tc = tcase_create("records: linkage, canonical names, duplicates");
	tcase_add_loop_test(tc, test_cases, 0, NELEM(cases));
	suite_add_tcase(s, tc);
	tc = tcase_create("bound: EGRESSD_MAX_CNAMES links pass");
	tcase_add_test(tc, test_bound_ok);
	suite_add_tcase(s, tc);
	tc = tcase_create("bound: a longer chain is refused");
	tcase_add_test(tc, test_bound_over);
	suite_add_tcase(s, tc);
	tc = tcase_create("bound: chains restarted without end");
	tcase_add_test(tc, test_restarts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(dnschain_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
