/*
 * check_synth.c: the per-principal synthetic address map (egress/synth.c): allocation
 * inside the range, stability, reverse lookup, recycling of the least recently used name
 * at the bound, a new bound (SIGHUP), no two names on one address, a range smaller than
 * the bound, release.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "synth.h"

static struct synth *
map(const char *range, size_t max)
{
	struct cidr c;
	const char *why;

	ck_assert_int_eq(cidr_parse(range, strlen(range), &c, &why), 0);
	return synth_new(&c, max);
}

static struct addr
v4(const char *s)
{
	struct addr a;

	ck_assert_int_eq(addr_parse(s, strlen(s), &a), 0);
	return a;
}

static const char *
text(const struct addr *a)
{
	static char buf[EGRESS_ADDRSTRLEN];

	addr_format(a, buf);
	return buf;
}

START_TEST(test_allocate_in_range)
{
	struct synth *s = map("198.18.0.0/15", 4096);
	struct cidr c;
	const char *why;
	struct addr a;

	ck_assert_int_eq(cidr_parse("198.18.0.0/15", 13, &c, &why), 0);
	ck_assert_int_eq(synth_get(s, "api.github.com", &a), 0);
	ck_assert(cidr_contains(&c, &a));
	/* Not the network address of the range. */
	ck_assert_str_ne(text(&a), "198.18.0.0");
	ck_assert(synth_in_range(s, &a));
	ck_assert_str_eq(synth_name(s, &a), "api.github.com");
	ck_assert_uint_eq(synth_count(s), 1);
	synth_free(s);
}
END_TEST

START_TEST(test_stable)
{
	struct synth *s = map("198.18.0.0/15", 4096);
	struct addr a, b, c;

	ck_assert_int_eq(synth_get(s, "a.example", &a), 0);
	ck_assert_int_eq(synth_get(s, "b.example", &b), 0);
	ck_assert_int_eq(synth_get(s, "a.example", &c), 0);
	ck_assert(addr_equal(&a, &c));
	ck_assert(!addr_equal(&a, &b));
	ck_assert_uint_eq(synth_count(s), 2);
	synth_free(s);
}
END_TEST

START_TEST(test_unknown_addresses)
{
	struct synth *s = map("198.18.0.0/15", 4096);
	struct addr a, other = v4("198.18.200.7"), out = v4("10.0.0.1"), v6;

	ck_assert_int_eq(synth_get(s, "a.example", &a), 0);
	ck_assert_ptr_null(synth_name(s, &other));
	ck_assert(synth_in_range(s, &other));
	ck_assert_ptr_null(synth_name(s, &out));
	ck_assert(!synth_in_range(s, &out));
	ck_assert(synth_in_range(s, &(struct addr){ AF_INET, { 198, 19, 255, 255 } }));
	ck_assert(!synth_in_range(s, &(struct addr){ AF_INET, { 198, 20, 0, 0 } }));
	ck_assert(!synth_in_range(s, &(struct addr){ AF_INET, { 198, 17, 255, 255 } }));
	ck_assert_int_eq(addr_parse("::1", 3, &v6), 0);
	ck_assert(!synth_in_range(s, &v6));
	ck_assert_ptr_null(synth_name(s, &v6));
	synth_free(s);
}
END_TEST

START_TEST(test_recycle_lru)
{
	struct synth *s = map("198.18.0.0/15", 64);
	struct addr first[64], a, b;
	char name[64];

	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "n%d.e2e.test", i);
		ck_assert_int_eq(synth_get(s, name, &first[i]), 0);
	}
	ck_assert_uint_eq(synth_count(s), 64);
	/* n0 used again (by a connection): n1 is now the least recently used. */
	ck_assert_str_eq(synth_name(s, &first[0]), "n0.e2e.test");
	ck_assert_int_eq(synth_get(s, "new.e2e.test", &a), 0);
	ck_assert_uint_eq(synth_count(s), 64);
	ck_assert_uint_eq(synth_recycled(s), 1);
	ck_assert_ptr_null(synth_name(s, &first[1]));
	ck_assert_str_eq(synth_name(s, &first[0]), "n0.e2e.test");
	/* The recycled address is not handed out again at once. */
	ck_assert(!addr_equal(&a, &first[1]));
	/* n1 again: a new address, and n2 goes. */
	ck_assert_int_eq(synth_get(s, "n1.e2e.test", &b), 0);
	ck_assert(!addr_equal(&b, &first[1]));
	ck_assert_ptr_null(synth_name(s, &first[2]));
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "m%d.e2e.test", i);
		ck_assert_int_eq(synth_get(s, name, &a), 0);
		ck_assert_uint_le(synth_count(s), 64);
	}
	ck_assert_uint_eq(synth_count(s), 64);
	synth_free(s);
}
END_TEST

/* A reload's new bound: lower recycles the least recently used at once, higher grows. */
START_TEST(test_set_max)
{
	struct synth *s = map("198.18.0.0/15", 20);
	struct addr held[20], a;
	char name[64];

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "n%d.e2e.test", i);
		ck_assert_int_eq(synth_get(s, name, &held[i]), 0);
	}
	/* n0 used again: the 12 least recently used are n1..n12. */
	ck_assert_str_eq(synth_name(s, &held[0]), "n0.e2e.test");
	ck_assert_uint_eq(synth_set_max(s, 8), 12);
	ck_assert_uint_eq(synth_count(s), 8);
	ck_assert_uint_eq(synth_capacity(s), 8);
	ck_assert_uint_eq(synth_recycled(s), 12);
	for (int i = 1; i <= 12; i++)
		ck_assert_ptr_null(synth_name(s, &held[i]));
	ck_assert_str_eq(synth_name(s, &held[0]), "n0.e2e.test");
	for (int i = 13; i < 20; i++) {
		snprintf(name, sizeof(name), "n%d.e2e.test", i);
		ck_assert_str_eq(synth_name(s, &held[i]), name);
		ck_assert_int_eq(synth_get(s, name, &a), 0);
		ck_assert(addr_equal(&a, &held[i]));
	}
	/* The freed addresses go to no other name before the cursor comes round. */
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "m%d.e2e.test", i);
		ck_assert_int_eq(synth_get(s, name, &a), 0);
		for (int j = 1; j <= 12; j++)
			ck_assert(!addr_equal(&a, &held[j]));
		ck_assert_uint_le(synth_count(s), 8);
	}
	/* Higher: room for more, nothing recycled; 0 changes nothing. */
	ck_assert_uint_eq(synth_set_max(s, 4096), 0);
	ck_assert_uint_eq(synth_set_max(s, 0), 0);
	ck_assert_uint_eq(synth_capacity(s), 4096);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "k%d.e2e.test", i);
		ck_assert_int_eq(synth_get(s, name, &a), 0);
	}
	ck_assert_uint_eq(synth_count(s), 108);
	synth_free(s);
	/* Never above what the range holds. */
	s = map("10.0.0.0/28", 14);
	ck_assert_uint_eq(synth_set_max(s, 4096), 0);
	ck_assert_uint_eq(synth_capacity(s), 14);
	synth_free(s);
}
END_TEST

/* Every name held has its own address, also once the cursor has wrapped many times. */
START_TEST(test_no_collision)
{
	struct synth *s = map("10.0.0.0/28", 14);   /* 14 usable: the bound is the range */
	struct addr a[14], x;
	char name[64];

	ck_assert_uint_eq(synth_capacity(s), 14);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 14; i++) {
			snprintf(name, sizeof(name), "r%d-%d.example", round, i);
			ck_assert_int_eq(synth_get(s, name, &a[i]), 0);
			ck_assert_str_ne(text(&a[i]), "10.0.0.0");
			ck_assert_str_ne(text(&a[i]), "10.0.0.15");
		}
		for (int i = 0; i < 14; i++)
			for (int j = i + 1; j < 14; j++)
				ck_assert_msg(!addr_equal(&a[i], &a[j]), "round %d: %d and %d share %s",
				    round, i, j, text(&a[i]));
		for (int i = 0; i < 14; i++) {
			snprintf(name, sizeof(name), "r%d-%d.example", round, i);
			ck_assert_str_eq(synth_name(s, &a[i]), name);
		}
	}
	/* Mixed: keep one name hot while others churn. */
	ck_assert_int_eq(synth_get(s, "hot.example", &x), 0);
	for (int i = 0; i < 200; i++) {
		struct addr y;

		snprintf(name, sizeof(name), "churn%d.example", i);
		ck_assert_int_eq(synth_get(s, name, &y), 0);
		ck_assert(!addr_equal(&x, &y));
		ck_assert_str_eq(synth_name(s, &x), "hot.example");
	}
	synth_free(s);
}
END_TEST

/* A range smaller than synthetic-max: the range is the bound, the oldest name recycled. */
START_TEST(test_range_exhaustion)
{
	struct synth *s = map("192.0.2.0/30", 4096);   /* .1 and .2 */
	struct addr a, b, c;

	ck_assert_uint_eq(synth_capacity(s), 2);
	ck_assert_int_eq(synth_get(s, "a.example", &a), 0);
	ck_assert_int_eq(synth_get(s, "b.example", &b), 0);
	ck_assert_str_eq(text(&a), "192.0.2.1");
	ck_assert_str_eq(text(&b), "192.0.2.2");
	ck_assert_int_eq(synth_get(s, "c.example", &c), 0);
	ck_assert_uint_eq(synth_count(s), 2);
	/* Only a's address was free: c has it now, and a has none. */
	ck_assert(addr_equal(&a, &c));
	ck_assert_str_eq(synth_name(s, &c), "c.example");
	ck_assert_str_eq(synth_name(s, &b), "b.example");
	synth_free(s);
	s = map("192.0.2.7/32", 10);
	ck_assert_uint_eq(synth_capacity(s), 1);
	ck_assert_int_eq(synth_get(s, "a.example", &a), 0);
	ck_assert_str_eq(text(&a), "192.0.2.7");
	synth_free(s);
}
END_TEST

START_TEST(test_refused_ranges)
{
	struct cidr c;
	const char *why;

	ck_assert_int_eq(cidr_parse("2001:db8::/64", 13, &c, &why), 0);
	ck_assert_ptr_null(synth_new(&c, 10));
	ck_assert_int_eq(cidr_parse("198.18.0.0/15", 13, &c, &why), 0);
	ck_assert_ptr_null(synth_new(&c, 0));
}
END_TEST

/* Releasing a map with many names frees everything (run under ASan/valgrind in CI). */
START_TEST(test_release)
{
	struct synth *s = map("198.18.0.0/15", 4096);
	struct addr a;
	char name[64];

	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "x%d.example", i);
		ck_assert_int_eq(synth_get(s, name, &a), 0);
	}
	ck_assert_uint_eq(synth_count(s), 4096);
	ck_assert_uint_eq(synth_recycled(s), 5000 - 4096);
	ck_assert_int_eq(synth_get(s, "", &a), -1);
	synth_free(s);
	synth_free(NULL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("synth");
	SRunner *sr;
	TCase *tc;
	int failed;

	tc = tcase_create("allocates inside the range, finds the name back");
	tcase_add_test(tc, test_allocate_in_range);
	suite_add_tcase(s, tc);
	tc = tcase_create("a name keeps its address");
	tcase_add_test(tc, test_stable);
	suite_add_tcase(s, tc);
	tc = tcase_create("addresses never given have no name");
	tcase_add_test(tc, test_unknown_addresses);
	suite_add_tcase(s, tc);
	tc = tcase_create("at the bound the least recently used name is recycled");
	tcase_add_test(tc, test_recycle_lru);
	suite_add_tcase(s, tc);
	tc = tcase_create("a new bound: lower recycles at once, higher grows");
	tcase_add_test(tc, test_set_max);
	suite_add_tcase(s, tc);
	tc = tcase_create("no two names share an address");
	tcase_add_test(tc, test_no_collision);
	suite_add_tcase(s, tc);
	tc = tcase_create("a range smaller than the bound");
	tcase_add_test(tc, test_range_exhaustion);
	suite_add_tcase(s, tc);
	tc = tcase_create("ranges that are not IPv4, a bound of 0");
	tcase_add_test(tc, test_refused_ranges);
	suite_add_tcase(s, tc);
	tc = tcase_create("release");
	tcase_add_test(tc, test_release);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
