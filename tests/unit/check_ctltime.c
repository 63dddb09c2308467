/*
 * check_ctltime.c: unit tests for egressctl's time arguments (egressctl/ctltime.c,
 * receipts --since/--until), one table and one tcase per behaviour: dates, times and
 * fractions, zones and offsets carried across days, range checks, and the year the
 * 24-byte form can hold.
 */
#include "config.h"

#include <check.h>

#include <stdlib.h>
#include <string.h>

#include "egressctl.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct ctltime_case {
	const char *arg;
	const char *want;       /* NULL: refused */
};

struct ctltime_group {
	const char *name;
	const struct ctltime_case *cases;
	size_t n;
};

static const struct ctltime_case dates[] = {
	{ "2026-12-01", "2026-12-01T00:00:00.000Z" },
	{ "2024-02-29", "2024-02-29T00:00:00.000Z" },
	{ "2023-02-29", NULL },
	{ "1969-12-31", NULL },
	{ "2026-1-01", NULL },
	{ "2026-12-01x", NULL },
};
static const struct ctltime_case times[] = {
	{ "2026-12-01T10:20", "2026-12-01T10:20:00.000Z" },
	{ "2026-12-01 10:20:30", "2026-12-01T10:20:30.000Z" },
	{ "2026-12-01T10:20:30.5Z", "2026-12-01T10:20:30.500Z" },
	{ "2026-12-01T10:20:30.123456789Z", "2026-12-01T10:20:30.123Z" },
	{ "2026-12-01T10:20:30.1234567890Z", NULL },
	{ "2026-12-01T24:00", NULL },
	{ "2026-12-01T10:20:30.", NULL },
};
static const struct ctltime_case offsets[] = {
	{ "2026-12-01T01:00+02:00", "2026-11-30T23:00:00.000Z" },
	{ "2026-12-31T23:30-0100", "2027-01-01T00:30:00.000Z" },
	{ "2026-12-01T10:00+05", "2026-12-01T05:00:00.000Z" },
	{ "2026-12-01T10:00+24:00", NULL },
	{ "1970-01-01T00:30+01:00", NULL },
};
/* Found by fuzz_ctltime: an offset past 9999 wrapped the year to 0000 (y % 10000). */
static const struct ctltime_case year_range[] = {
	{ "9999-12-31T22:59-01:00", "9999-12-31T23:59:00.000Z" },
	{ "9999-12-31T23:30-01:00", NULL },
	{ "9999-12-31T23:59:59.999-00:01", NULL },
};

/* Found by fuzz_ctltime: strtoll took a sign, and the bound was on N before its unit. */
static const struct ctltime_case relative_strict[] = {
	{ "-+5d", NULL },
	{ "- 5d", NULL },
	{ "-1434567892d", NULL },
	{ "-36601d", NULL },
	{ "-3162240001s", NULL },
	{ "-99999999999999999999s", NULL },
};

static const struct ctltime_group groups[] = {
	{ "relative_strict", relative_strict, NELEM(relative_strict) },
	{ "dates", dates, NELEM(dates) },
	{ "times", times, NELEM(times) },
	{ "offsets", offsets, NELEM(offsets) },
	{ "year_range", year_range, NELEM(year_range) },
};

static const struct ctltime_group *cur;

START_TEST(test_case)
{
	const struct ctltime_case *c = &cur->cases[_i];
	char out[32];
	int rc = ctl_parse_time(c->arg, out);

	if (c->want == NULL) {
		ck_assert_msg(rc == -1, "'%s' accepted as %s", c->arg, out);
	} else {
		ck_assert_msg(rc == 0, "'%s' refused", c->arg);
		ck_assert_str_eq(out, c->want);
	}
}
END_TEST

START_TEST(test_relative)
{
	char out[32];

	ck_assert_int_eq(ctl_parse_time("-90s", out), 0);
	ck_assert_uint_eq(strlen(out), 24);
	ck_assert_int_eq(ctl_parse_time("-2d", out), 0);
	ck_assert_int_eq(ctl_parse_time("-36600d", out), 0);
	ck_assert_uint_eq(strlen(out), 24);
	ck_assert_int_eq(ctl_parse_time("-2w", out), -1);
	ck_assert_int_eq(ctl_parse_time("-", out), -1);
	ck_assert_int_eq(ctl_parse_time("--1s", out), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("ctltime");
	SRunner *sr;
	int failed = 0;
	TCase *tc;

	tc = tcase_create("relative");
	tcase_add_test(tc, test_relative);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed += srunner_ntests_failed(sr);
	srunner_free(sr);
	/* One suite per group: the table a loop test reads is the group's. */
	for (size_t g = 0; g < NELEM(groups); g++) {
		cur = &groups[g];
		s = suite_create("ctltime");
		tc = tcase_create(cur->name);
		tcase_add_loop_test(tc, test_case, 0, (int)cur->n);
		suite_add_tcase(s, tc);
		sr = srunner_create(s);
		srunner_run_all(sr, CK_NORMAL);
		failed += srunner_ntests_failed(sr);
		srunner_free(sr);
	}
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
