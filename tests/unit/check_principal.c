/*
 * check_principal.c: unit tests for egressd's principal table (egress/principal.c), linked
 * from libegressd.a. A real minimum of the daemon: a temporary runtime dir holding the
 * principals' sockets and policy files, an event base, a receipt file; no monitor (the
 * engine's objects without a channel listen and write receipts in-process). Covers principal_find over several principals,
 * the pin cache (lifetime = TTL within pin min/max, expiry, the bound: the oldest goes),
 * the deny collapse (the burst, identical denials counted, distinct ones in slots, the
 * slot bound, the flush at the next second) and a lease's tally. The clock is passed in
 * (principal_*_at) so that no test waits for time to pass.
 */
#include "config.h"

#include <check.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egressd.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char dir[] = "/tmp/check_principal.XXXXXX";
static char policy_path[sizeof(dir) + 32];

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	ck_assert_ptr_nonnull(fp);
	ck_assert_int_ge(fputs(text, fp), 0);
	ck_assert_int_eq(fclose(fp), 0);
}

static void
setup(void)
{
	char path[sizeof(dir) + 32];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(egressd_base = event_base_new());
	egressd_uid = getuid();
	egressd_gid = getgid();
	snprintf(policy_path, sizeof(policy_path), "%s/p.policy", dir);
	write_file(policy_path, "allow example.com 443\npin min 30s max 10m\n");
	snprintf(path, sizeof(path), "%s/receipts.log", dir);
	ck_assert_int_eq(receipt_open(path, NULL, egressd_base), 0);
}

static void
teardown(void)
{
	struct principal *p;
	char cmd[sizeof(dir) + 16];

	while ((p = TAILQ_FIRST(&principals)) != NULL) {
		p->lease = NULL;
		principal_remove(p, "test");
	}
	receipt_close();
	event_base_free(egressd_base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static struct principal *
make(const char *name, char *err, size_t errlen)
{
	char sock[sizeof(dir) + 64];
	struct principal_spec spec = { .name = name, .socket = sock,
	    .policy_file = policy_path };

	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, name);
	return principal_create(&spec, err, errlen);
}

static struct principal *
make_ok(const char *name)
{
	char err[256] = "";
	struct principal *p = make(name, err, sizeof(err));

	ck_assert_msg(p != NULL, "principal_create %s: %s", name, err);
	return p;
}

/* --- principal_find -------------------------------------------------------------- */

static const char *const names[] = { "alpha", "beta", "gamma", "a", "alphabet" };

START_TEST(test_find_several)
{
	struct principal *p[NELEM(names)];
	static const char *const absent[] = { "", "alph", "Alpha", "delta", "alphabets" };

	for (size_t i = 0; i < NELEM(names); i++)
		p[i] = make_ok(names[i]);
	for (size_t i = 0; i < NELEM(names); i++) {
		ck_assert_ptr_eq(principal_find(names[i]), p[i]);
		ck_assert_str_eq(p[i]->name, names[i]);
	}
	for (size_t i = 0; i < NELEM(absent); i++)
		ck_assert_msg(principal_find(absent[i]) == NULL, "found '%s'", absent[i]);
}
END_TEST

START_TEST(test_find_after_remove)
{
	struct principal *a = make_ok("alpha"), *b, *c;
	char sock[sizeof(dir) + 64];
	struct stat st;

	make_ok("beta");
	c = make_ok("gamma");
	snprintf(sock, sizeof(sock), "%s/beta.sock", dir);
	ck_assert_int_eq(stat(sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	principal_remove(principal_find("beta"), "test");
	ck_assert_ptr_null(principal_find("beta"));
	ck_assert_ptr_eq(principal_find("alpha"), a);
	ck_assert_ptr_eq(principal_find("gamma"), c);
	/* Its socket went with it; a new one of the same name may come. */
	ck_assert_int_eq(stat(sock, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	b = make_ok("beta");
	ck_assert_ptr_eq(principal_find("beta"), b);
}
END_TEST

START_TEST(test_create_refused)
{
	char err[256];

	make_ok("alpha");
	ck_assert_ptr_null(make("alpha", err, sizeof(err)));
	ck_assert_str_eq(err, "principal 'alpha' exists");
	ck_assert_ptr_null(make("bad/name", err, sizeof(err)));
	ck_assert_str_eq(err, "bad principal name 'bad/name'");
	ck_assert_ptr_eq(TAILQ_NEXT(TAILQ_FIRST(&principals), entry), NULL);
}
END_TEST

/* --- the pin cache ---------------------------------------------------------------- */

/* pin min 30s max 10m: the lifetime is the TTL, within those. */
static const struct {
	uint32_t ttl;
	int64_t life;            /* seconds */
} pin_rows[] = {
	{ 0, 30 }, { 1, 30 }, { 29, 30 }, { 30, 30 }, { 31, 31 }, { 300, 300 }, { 600, 600 },
	{ 601, 600 }, { 86400, 600 }, { UINT32_MAX, 600 },
};

START_TEST(test_pin_lifetime)
{
	struct principal *p = make_ok("alpha");
	struct addr a;
	const int64_t t0 = 1000000;
	const struct pin *pin;

	ck_assert_int_eq(addr_parse("192.0.2.7", strlen("192.0.2.7"), &a), 0);
	principal_pin_put_at(p, "example.com", &a, 1, pin_rows[_i].ttl, t0);
	ck_assert_uint_eq(p->npins, 1);
	pin = principal_pin_get_at(p, "example.com", t0 + pin_rows[_i].life * 1000 - 1);
	ck_assert_msg(pin != NULL, "ttl %u: gone before %llds", (unsigned)pin_rows[_i].ttl,
	    (long long)pin_rows[_i].life);
	ck_assert_uint_eq(pin->naddrs, 1);
	ck_assert(addr_equal(&pin->addrs[0], &a));
	ck_assert_ptr_null(principal_pin_get_at(p, "other.example", t0));
	/* Expired: not returned, and no longer held. */
	ck_assert_ptr_null(principal_pin_get_at(p, "example.com", t0 + pin_rows[_i].life * 1000));
	ck_assert_uint_eq(p->npins, 0);
}
END_TEST

/* A lookup sweeps every expired pin, whichever name it asks for. */
START_TEST(test_pin_expiry_sweep)
{
	struct principal *p = make_ok("alpha");
	struct addr a[2];

	ck_assert_int_eq(addr_parse("192.0.2.1", strlen("192.0.2.1"), &a[0]), 0);
	ck_assert_int_eq(addr_parse("2001:db8::1", strlen("2001:db8::1"), &a[1]), 0);
	principal_pin_put_at(p, "short.example", a, 2, 30, 0);
	principal_pin_put_at(p, "long.example", a, 1, 600, 0);
	ck_assert_uint_eq(p->npins, 2);
	ck_assert_uint_eq(principal_pin_get_at(p, "short.example", 29999)->naddrs, 2);
	ck_assert_ptr_null(principal_pin_get_at(p, "nothing.example", 30000));
	ck_assert_uint_eq(p->npins, 1);
	ck_assert_ptr_null(principal_pin_get_at(p, "short.example", 30000));
	ck_assert_ptr_nonnull(principal_pin_get_at(p, "long.example", 599999));
	ck_assert_ptr_null(principal_pin_get_at(p, "long.example", 600000));
	ck_assert_uint_eq(p->npins, 0);
}
END_TEST

/* The bound: past EGRESSD_PIN_MAX names, the oldest goes, one per new name. */
START_TEST(test_pin_replacement)
{
	struct principal *p = make_ok("alpha");
	struct addr a;
	char name[32];

	ck_assert_int_eq(addr_parse("192.0.2.1", strlen("192.0.2.1"), &a), 0);
	for (int i = 0; i < EGRESSD_PIN_MAX + 2; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		principal_pin_put_at(p, name, &a, 1, 60, i);
		ck_assert_uint_le(p->npins, EGRESSD_PIN_MAX);
	}
	ck_assert_uint_eq(p->npins, EGRESSD_PIN_MAX);
	ck_assert_ptr_null(principal_pin_get_at(p, "n0.example", 100));
	ck_assert_ptr_null(principal_pin_get_at(p, "n1.example", 100));
	ck_assert_ptr_nonnull(principal_pin_get_at(p, "n2.example", 100));
	snprintf(name, sizeof(name), "n%d.example", EGRESSD_PIN_MAX + 1);
	ck_assert_ptr_nonnull(principal_pin_get_at(p, name, 100));
	ck_assert_uint_eq(p->npins, EGRESSD_PIN_MAX);
}
END_TEST

/* --- the deny collapse ------------------------------------------------------------- */

/* The burst of one second is written one by one, identical or not. */
START_TEST(test_deny_burst)
{
	struct principal *p = make_ok("alpha");

	for (int i = 0; i < EGRESSD_DENY_BURST; i++)
		ck_assert(!principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443,
		    "socks5", 100));
	ck_assert_uint_eq(p->nslots, 0);
	ck_assert(principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443, "socks5",
	    100));
	ck_assert_uint_eq(p->nslots, 1);
	/* A new second: a new burst. */
	ck_assert(!principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443, "socks5",
	    101));
	ck_assert_uint_eq(p->nslots, 0);
	ck_assert_uint_eq(p->deny_count, 1);
}
END_TEST

/* Past the burst: which denials share a slot (reason, host, port), counted. */
static const struct deny_row {
	enum egress_reason reason;
	const char *host;
	int port;
	bool same_as_first;
} deny_rows[] = {
	{ EGRESS_NOT_ALLOWLISTED, "x.example", 443, true },
	{ EGRESS_NOT_ALLOWLISTED, "x.example", 80, false },
	{ EGRESS_NOT_ALLOWLISTED, "y.example", 443, false },
	{ EGRESS_NOT_ALLOWLISTED, "X.example", 443, false },
	{ EGRESS_BAD_HOST, "x.example", 443, false },
	{ EGRESS_NOT_ALLOWLISTED, NULL, 443, false },
	{ EGRESS_NOT_ALLOWLISTED, "", 443, false },
};

START_TEST(test_deny_identical)
{
	struct principal *p = make_ok("alpha");
	const struct deny_row *r = &deny_rows[_i];
	uint64_t seq;

	for (int i = 0; i < EGRESSD_DENY_BURST; i++)
		(void)principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "z.example", 1, "http",
		    200);
	ck_assert(principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443, "http",
	    200));
	for (int i = 0; i < 3; i++)
		ck_assert(principal_deny_collapse_at(p, r->reason, r->host, r->port, "socks5", 200));
	ck_assert_uint_eq(p->nslots, r->same_as_first ? 1 : 2);
	ck_assert_uint_eq(p->slots[0].count, r->same_as_first ? 4 : 1);
	if (!r->same_as_first) {
		ck_assert_uint_eq(p->slots[1].count, 3);
		ck_assert_str_eq(p->slots[1].host, r->host ? r->host : "");
		ck_assert_int_eq(p->slots[1].port, r->port);
		ck_assert_int_eq(p->slots[1].reason, r->reason);
		ck_assert_str_eq(p->slots[1].frontend, "socks5");
	}
	/* The next second writes one receipt per slot. */
	seq = receipt_seq();
	ck_assert(!principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443, "http",
	    201));
	ck_assert_uint_eq(receipt_seq() - seq, r->same_as_first ? 1 : 2);
	ck_assert_uint_eq(p->nslots, 0);
}
END_TEST

/* At most EGRESSD_DENY_SLOTS distinct ones: the next distinct one is written as it comes. */
START_TEST(test_deny_slot_bound)
{
	struct principal *p = make_ok("alpha");
	char host[32];

	for (int i = 0; i < EGRESSD_DENY_BURST; i++)
		(void)principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "z.example", 1, "http", 5);
	for (int i = 0; i < EGRESSD_DENY_SLOTS; i++) {
		snprintf(host, sizeof(host), "h%d.example", i);
		ck_assert(principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, host, 443, "http", 5));
	}
	ck_assert_uint_eq(p->nslots, EGRESSD_DENY_SLOTS);
	ck_assert(!principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "new.example", 443, "http",
	    5));
	/* Identical to a held one: still counted. */
	ck_assert(principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "h7.example", 443, "http", 5));
	ck_assert_uint_eq(p->slots[7].count, 2);
	ck_assert_uint_eq(p->nslots, EGRESSD_DENY_SLOTS);
}
END_TEST

/*
 * The flush timer is set at a second's first collapse, for a second later: it fires in a
 * later second, which may have collapsed denials of its own by then. Those wait for their
 * second's end, so that a second's identical denials are one record (before, the timer
 * wrote them early and the rest of the second made a second one: two records a second,
 * where tests/e2e/synthbound.sh counts on one, and failed once that way).
 */
START_TEST(test_deny_tick_keeps_this_second)
{
	struct principal *p = make_ok("alpha");
	uint64_t seq;

	for (int i = 0; i <= EGRESSD_DENY_BURST; i++)
		(void)principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443,
		    "dns", 300);
	ck_assert_uint_eq(p->nslots, 1);
	seq = receipt_seq();
	ck_assert(principal_deny_tick_at(p, 301));       /* a past second's: written */
	ck_assert_uint_eq(receipt_seq() - seq, 1);
	ck_assert_uint_eq(p->nslots, 0);
	for (int i = 0; i <= EGRESSD_DENY_BURST; i++)
		(void)principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443,
		    "dns", 301);
	ck_assert_uint_eq(p->nslots, 1);
	seq = receipt_seq();
	ck_assert(!principal_deny_tick_at(p, 301));      /* this second's: they wait */
	ck_assert_uint_eq(receipt_seq(), seq);
	ck_assert_uint_eq(p->nslots, 1);
	for (int i = 0; i < 3; i++)
		ck_assert(principal_deny_collapse_at(p, EGRESS_NOT_ALLOWLISTED, "x.example", 443,
		    "dns", 301));
	ck_assert_uint_eq(p->slots[0].count, 4);
	ck_assert(principal_deny_tick_at(p, 302));       /* its end: one record of 4 */
	ck_assert_uint_eq(receipt_seq() - seq, 1);
	ck_assert_uint_eq(p->nslots, 0);
	ck_assert(principal_deny_tick_at(p, 303));       /* nothing waits */
	ck_assert_uint_eq(receipt_seq() - seq, 1);
}
END_TEST

/* --- a lease's tally ---------------------------------------------------------------- */

/* Not a lease: nothing is kept. */
START_TEST(test_tally_no_lease)
{
	struct principal *p = make_ok("alpha");

	principal_tally(p, "x.example", 443, true, EGRESS_ALLOWED, 1, 10, 20);
	ck_assert_uint_eq(p->ntally, 0);
	ck_assert_ptr_null(p->tally);
}
END_TEST

/* Events added to a destination that is already in the summary, or a new row. */
static const struct tally_row {
	const char *host;
	int port;
	bool allowed;
	enum egress_reason reason;
	bool same_as_first;      /* first: x.example:443 allowed */
} tally_rows[] = {
	{ "x.example", 443, true, EGRESS_ALLOWED, true },
	{ "x.example", 443, true, EGRESS_IDLE_TIMEOUT, true },   /* closes: reason aside */
	{ "x.example", 80, true, EGRESS_ALLOWED, false },
	{ "y.example", 443, true, EGRESS_ALLOWED, false },
	{ "x.example", 443, false, EGRESS_NOT_ALLOWLISTED, false },
	{ NULL, -1, false, EGRESS_MALFORMED_REQUEST, false },
};

START_TEST(test_tally_rows)
{
	struct principal *p = make_ok("alpha");
	const struct tally_row *r = &tally_rows[_i];
	const struct tally *t;

	p->lease = (struct ctl_client *)p;      /* only its presence counts here */
	principal_tally(p, "x.example", 443, true, EGRESS_ALLOWED, 1, 100, 1000);
	principal_tally(p, r->host, r->port, r->allowed, r->reason, 2, 10, 20);
	ck_assert_uint_eq(p->ntally, r->same_as_first ? 1 : 2);
	t = &p->tally[0];
	ck_assert_str_eq(t->host, "x.example");
	ck_assert_uint_eq(t->count, r->same_as_first ? 3 : 1);
	ck_assert_uint_eq(t->bytes_up, r->same_as_first ? 110 : 100);
	ck_assert_uint_eq(t->bytes_down, r->same_as_first ? 1020 : 1000);
	ck_assert_int_eq(t->reason, EGRESS_ALLOWED);
	if (!r->same_as_first) {
		t = &p->tally[1];
		ck_assert_str_eq(t->host, r->host ? r->host : "");
		ck_assert_int_eq(t->port, r->port);
		ck_assert(t->allowed == r->allowed);
		ck_assert_int_eq(t->reason, r->allowed ? EGRESS_ALLOWED : r->reason);
		ck_assert_uint_eq(t->count, 2);
		ck_assert_uint_eq(t->bytes_up, 10);
		ck_assert_uint_eq(t->bytes_down, 20);
	}
	ck_assert_uint_eq(p->tally_dropped, 0);
}
END_TEST

/* Denials of one destination with different reasons are different rows. */
START_TEST(test_tally_deny_reasons)
{
	struct principal *p = make_ok("alpha");

	p->lease = (struct ctl_client *)p;
	principal_tally(p, "x.example", 443, false, EGRESS_NOT_ALLOWLISTED, 1, 0, 0);
	principal_tally(p, "x.example", 443, false, EGRESS_BAD_HOST, 1, 0, 0);
	principal_tally(p, "x.example", 443, false, EGRESS_NOT_ALLOWLISTED, 5, 0, 0);
	ck_assert_uint_eq(p->ntally, 2);
	ck_assert_uint_eq(p->tally[0].count, 6);
	ck_assert_uint_eq(p->tally[1].count, 1);
}
END_TEST

/* Past EGRESSD_TALLY_MAX destinations: new ones are counted as dropped, old ones still add. */
START_TEST(test_tally_bound)
{
	struct principal *p = make_ok("alpha");
	char host[32];

	p->lease = (struct ctl_client *)p;
	for (int i = 0; i < EGRESSD_TALLY_MAX; i++) {
		snprintf(host, sizeof(host), "h%d.example", i);
		principal_tally(p, host, 443, true, EGRESS_ALLOWED, 1, 1, 1);
	}
	ck_assert_uint_eq(p->ntally, EGRESSD_TALLY_MAX);
	principal_tally(p, "new.example", 443, true, EGRESS_ALLOWED, 3, 1, 1);
	principal_tally(p, "new2.example", 443, false, EGRESS_NOT_ALLOWLISTED, 4, 0, 0);
	ck_assert_uint_eq(p->tally_dropped, 7);
	ck_assert_uint_eq(p->ntally, EGRESSD_TALLY_MAX);
	principal_tally(p, "h9.example", 443, true, EGRESS_ALLOWED, 1, 5, 6);
	ck_assert_uint_eq(p->tally[9].count, 2);
	ck_assert_uint_eq(p->tally[9].bytes_up, 6);
	ck_assert_uint_eq(p->tally_dropped, 7);
}
END_TEST

static Suite *
principal_suite(void)
{
	Suite *s = suite_create("principal");
	TCase *tc;

	tc = tcase_create("find");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_find_several);
	tcase_add_test(tc, test_find_after_remove);
	tcase_add_test(tc, test_create_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("pin");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_pin_lifetime, 0, (int)NELEM(pin_rows));
	tcase_add_test(tc, test_pin_expiry_sweep);
	tcase_add_test(tc, test_pin_replacement);
	suite_add_tcase(s, tc);
	tc = tcase_create("deny");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_deny_burst);
	tcase_add_loop_test(tc, test_deny_identical, 0, (int)NELEM(deny_rows));
	tcase_add_test(tc, test_deny_slot_bound);
	tcase_add_test(tc, test_deny_tick_keeps_this_second);
	suite_add_tcase(s, tc);
	tc = tcase_create("tally");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tally_no_lease);
	tcase_add_loop_test(tc, test_tally_rows, 0, (int)NELEM(tally_rows));
	tcase_add_test(tc, test_tally_deny_reasons);
	tcase_add_test(tc, test_tally_bound);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(principal_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
