/*
 * check_monwire.c: the receipt batches from egressd's engine to its monitor
 * (proto/monwire.c). What the engine's encoder writes the monitor's reader gives back
 * member for member; and a table of hostile batches, one per refusal, each refused with
 * its reason (the monitor logs it and writes nothing of that record).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monwire.h"
#include "wire.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct receipt
base(enum receipt_event ev)
{
	struct receipt r;

	memset(&r, 0, sizeof(r));
	r.event = ev;
	r.id = "c-00ff";
	r.principal = "build-42";
	r.policy = DIGEST;
	r.frontend = "http-connect";
	r.host = "api.github.com";
	r.port = 443;
	r.addr = "140.82.112.6";
	r.sni = "api.github.com";
	r.reason = EGRESS_ALLOWED;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	if (ev == RECEIPT_CLOSE) {
		r.close = "client-eof";
		r.bytes_up = 1234;
		r.bytes_down = 56789;
		r.duration_ms = 812;
	}
	return r;
}

START_TEST(test_roundtrip)
{
	uint8_t buf[MW_BATCH_MAX];
	struct mw_writer w;
	struct mw_reader rd;
	struct mw_record rec;
	struct receipt in[3] = { base(RECEIPT_OPEN), base(RECEIPT_CLOSE), base(RECEIPT_DENY) };
	static const uint8_t raw[] = { 'A', 0, 0xff };
	const char *why = NULL;
	size_t len;

	in[2].id = NULL;
	in[2].host = NULL;
	in[2].raw = raw;
	in[2].raw_len = sizeof(raw);
	in[2].reason = EGRESS_NOT_ALLOWLISTED;
	in[2].count = 7;
	in[2].addr = "2001:db8::1";
	in[2].sni = NULL;
	in[1].via = "parent";        /* a tunnel through a parent proxy */
	mw_batch_begin(&w, buf, sizeof(buf));
	for (size_t i = 0; i < NELEM(in); i++)
		ck_assert_int_eq(mw_batch_add(&w, &in[i]), 0);
	len = mw_batch_end(&w, 5, 0);
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), 0);
	ck_assert_uint_eq(rd.seq, 5);
	for (size_t i = 0; i < NELEM(in); i++) {
		struct receipt r;

		ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 1);
		mw_record_receipt(&rec, &r);
		ck_assert_int_eq(r.event, in[i].event);
		ck_assert_str_eq(r.principal, in[i].principal);
		ck_assert_str_eq(r.policy, in[i].policy);
		ck_assert_int_eq(r.port, in[i].port);
		ck_assert_int_eq(r.reason, in[i].reason);
		ck_assert(r.bytes_up == in[i].bytes_up && r.bytes_down == in[i].bytes_down &&
		    r.duration_ms == in[i].duration_ms);
		ck_assert_str_eq(r.addr, in[i].addr);
		if (in[i].via != NULL)
			ck_assert_str_eq(r.via, in[i].via);
		else
			ck_assert_ptr_null(r.via);
		if (in[i].id != NULL)
			ck_assert_str_eq(r.id, in[i].id);
		else
			ck_assert_ptr_null(r.id);
		if (in[i].host != NULL)
			ck_assert_str_eq(r.host, in[i].host);
		if (in[i].close != NULL)
			ck_assert_str_eq(r.close, in[i].close);
	}
	ck_assert_uint_eq(rec.raw_len, sizeof(raw));
	ck_assert_mem_eq(rec.raw, raw, sizeof(raw));
	ck_assert_uint_eq(rec.count, 7);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 0);
	ck_assert_uint_eq(rd.seq, 8);
}
END_TEST

START_TEST(test_full_batch)
{
	uint8_t buf[MW_BATCH_MAX];
	struct mw_writer w;
	struct receipt r = base(RECEIPT_OPEN);
	unsigned n = 0;

	mw_batch_begin(&w, buf, sizeof(buf));
	while (mw_batch_add(&w, &r) == 0)
		n++;
	ck_assert_uint_eq(n, MW_BATCH_RECORDS);
	/* not an event the engine may send */
	mw_batch_begin(&w, buf, sizeof(buf));
	r.event = RECEIPT_CHECKPOINT;
	ck_assert_int_eq(mw_batch_add(&w, &r), -1);
}
END_TEST

/* A batch of one record, built by hand: event, then (tag, bytes) members. */
struct member {
	uint8_t tag;
	const char *v;          /* NULL: the next two fields */
	size_t len;
	const uint8_t *bytes;
};

static size_t
hand(uint8_t *buf, uint8_t ev, const struct member *m, size_t n, uint16_t count)
{
	struct mw_head h;
	size_t at = sizeof(h);

	memset(&h, 0, sizeof(h));
	h.magic = MW_MAGIC;
	h.type = MW_BATCH;
	h.count = count;
	h.seq = 1;
	memcpy(buf, &h, sizeof(h));
	buf[at++] = ev;
	buf[at++] = (uint8_t)n;
	for (size_t i = 0; i < n; i++) {
		size_t l = m[i].v ? strlen(m[i].v) : m[i].len;

		buf[at++] = m[i].tag;
		wire_put16(buf + at, (uint16_t)l);
		at += 2;
		memcpy(buf + at, m[i].v ? (const uint8_t *)m[i].v : m[i].bytes, l);
		at += l;
	}
	return at;
}

enum { T_ID = 1, T_PRINCIPAL, T_POLICY, T_FRONTEND, T_HOST, T_RAW, T_PORT, T_ADDR, T_SNI,
	T_REASON, T_CLOSE, T_UP, T_DOWN, T_DURATION, T_COUNT, T_VIA };

static const uint8_t zero[1] = { 0 }, bad_reason[1] = { 200 }, port[2] = { 1, 187 };
static const uint8_t one[4] = { 0, 0, 0, 1 }, big[8] = { 0x80, 0, 0, 0, 0, 0, 0, 0 };

#define ID { T_ID, "c-00ff", 0, NULL }
#define PR { T_PRINCIPAL, "build-42", 0, NULL }
#define PO { T_POLICY, DIGEST, 0, NULL }
#define RE { T_REASON, NULL, 1, zero }

static const struct refusal {
	const char *name;
	uint8_t ev;
	struct member m[6];
	size_t n;
	const char *why;
} refusals[] = {
	{ "checkpoint from the engine", RECEIPT_CHECKPOINT, { ID, PR, PO, RE }, 4,
	    "event is not open, close or deny" },
	{ "repair from the engine", RECEIPT_REPAIR, { ID, PR, PO, RE }, 4,
	    "event is not open, close or deny" },
	{ "open without id", RECEIPT_OPEN, { PR, PO, RE }, 3, "a member the event needs is missing" },
	{ "close without cause", RECEIPT_CLOSE, { ID, PR, PO, RE }, 4,
	    "a member the event needs is missing" },
	{ "id not c-hex", RECEIPT_OPEN, { { T_ID, "c-xyz", 0, NULL }, PR, PO, RE }, 4,
	    "id is not c-<hex>" },
	{ "principal with a slash", RECEIPT_OPEN, { ID, { T_PRINCIPAL, "a/b", 0, NULL }, PO, RE },
	    4, "principal is not a principal name" },
	{ "policy not a digest", RECEIPT_OPEN, { ID, PR, { T_POLICY, "sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeX", 0, NULL }, RE }, 4,
	    "policy is not sha256:<64 hex>" },
	{ "unknown frontend", RECEIPT_OPEN, { ID, PR, PO, RE, { T_FRONTEND, "gopher", 0, NULL } },
	    5, "unknown frontend" },
	{ "host with upper case", RECEIPT_OPEN, { ID, PR, PO, RE, { T_HOST, "Evil.com", 0, NULL } },
	    5, "host or sni is not a canonical name" },
	{ "host with a quote", RECEIPT_OPEN, { ID, PR, PO, RE, { T_HOST, "a\",\"x", 0, NULL } },
	    5, "host or sni is not a canonical name" },
	{ "sni with an empty label", RECEIPT_OPEN, { ID, PR, PO, RE, { T_SNI, "a..b", 0, NULL } },
	    5, "host or sni is not a canonical name" },
	{ "addr not an address", RECEIPT_OPEN, { ID, PR, PO, RE, { T_ADDR, "1.2.3", 0, NULL } },
	    5, "addr is not an address" },
	{ "via not parent", RECEIPT_OPEN, { ID, PR, PO, RE, { T_VIA, "direct", 0, NULL } },
	    5, "unknown via" },
	{ "via empty", RECEIPT_OPEN, { ID, PR, PO, RE, { T_VIA, "", 0, NULL } },
	    5, "member of a wrong length" },
	{ "unknown reason", RECEIPT_DENY, { PR, PO, { T_REASON, NULL, 1, bad_reason } }, 3,
	    "unknown reason" },
	{ "daemon cause unknown", RECEIPT_CLOSE, { ID, PR, PO, RE, { T_CLOSE, "gone", 0, NULL } },
	    5, "unknown close cause" },
	{ "bytes on an open", RECEIPT_OPEN, { ID, PR, PO, RE, { T_UP, NULL, 8, big } }, 5,
	    "member the event does not carry" },
	{ "count on an open", RECEIPT_OPEN, { ID, PR, PO, RE, { T_COUNT, NULL, 4, one } }, 5,
	    "member the event does not carry" },
	{ "count of one", RECEIPT_DENY, { PR, PO, RE, { T_COUNT, NULL, 4, one } }, 4,
	    "count below 2" },
	{ "port of three bytes", RECEIPT_OPEN, { ID, PR, PO, RE, { T_PORT, NULL, 3, big } }, 5,
	    "member of a wrong length" },
	{ "member twice", RECEIPT_OPEN, { ID, PR, PO, RE, { T_PORT, NULL, 2, port },
	    { T_PORT, NULL, 2, port } }, 6, "member twice" },
	{ "unknown tag", RECEIPT_OPEN, { ID, PR, PO, RE, { 99, "x", 0, NULL } }, 5,
	    "unknown member" },
	{ "NUL inside a string", RECEIPT_OPEN, { ID, PR, PO, RE, { T_HOST, NULL, 3,
	    (const uint8_t *)"a\0b" } }, 5, "string member too long or with a NUL" },
	{ "host and raw", RECEIPT_DENY, { PR, PO, RE, { T_HOST, "a.com", 0, NULL },
	    { T_RAW, "A", 0, NULL } }, 5, "both host and raw" },
};

START_TEST(test_refusal)
{
	const struct refusal *t = &refusals[_i];
	uint8_t buf[MW_BATCH_MAX];
	size_t len = hand(buf, t->ev, t->m, t->n, 1);
	struct mw_reader rd;
	struct mw_record rec;
	const char *why = NULL;

	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), 0);
	ck_assert_msg(mw_batch_next(&rd, &rec, &why) == -1, "%s: accepted", t->name);
	ck_assert_msg(why != NULL && strcmp(why, t->why) == 0, "%s: '%s', not '%s'", t->name,
	    why ? why : "(null)", t->why);
}
END_TEST

START_TEST(test_framing)
{
	struct member ok[] = { ID, PR, PO, RE };
	uint8_t buf[MW_BATCH_MAX + 8];
	size_t len = hand(buf, RECEIPT_OPEN, ok, NELEM(ok), 1);
	struct mw_reader rd;
	struct mw_record rec;
	const char *why = NULL;
	struct mw_head h;

	/* the well-formed one passes */
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), 0);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 1);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 0);
	/* a trailing byte */
	buf[len] = 0;
	ck_assert_int_eq(mw_batch_open(&rd, buf, len + 1, &why), 0);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 1);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), -1);
	ck_assert_str_eq(why, "bytes after the last record");
	/* cut anywhere inside the record */
	for (size_t cut = sizeof(struct mw_head); cut < len; cut++) {
		ck_assert_int_eq(mw_batch_open(&rd, buf, cut, &why), 0);
		ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), -1);
	}
	/* more records announced than sent */
	len = hand(buf, RECEIPT_OPEN, ok, NELEM(ok), 2);
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), 0);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 1);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), -1);
	/* headers */
	memcpy(&h, buf, sizeof(h));
	h.count = 0;
	memcpy(buf, &h, sizeof(h));
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), -1);
	h.count = MW_BATCH_RECORDS + 1;
	memcpy(buf, &h, sizeof(h));
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), -1);
	h.count = 1;
	h.seq = 0;
	memcpy(buf, &h, sizeof(h));
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), -1);
	h.seq = 1;
	h.magic = 0;
	memcpy(buf, &h, sizeof(h));
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), -1);
	ck_assert_int_eq(mw_batch_open(&rd, buf, 3, &why), -1);
	ck_assert_int_eq(mw_batch_open(&rd, buf, MW_BATCH_MAX + 1, &why), -1);
}
END_TEST

/* A batch nobody waits for carries closes only: an open in one is refused. */
START_TEST(test_noack)
{
	uint8_t buf[MW_BATCH_MAX];
	struct mw_writer w;
	struct mw_reader rd;
	struct mw_record rec;
	struct receipt c = base(RECEIPT_CLOSE), o = base(RECEIPT_OPEN);
	const char *why = NULL;
	size_t len;

	mw_batch_begin(&w, buf, sizeof(buf));
	ck_assert_int_eq(mw_batch_add(&w, &c), 0);
	len = mw_batch_end(&w, 1, MW_BATCH_NOACK);
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), 0);
	ck_assert(rd.noack);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 1);
	mw_batch_begin(&w, buf, sizeof(buf));
	ck_assert_int_eq(mw_batch_add(&w, &c), 0);
	ck_assert_int_eq(mw_batch_add(&w, &o), 0);
	len = mw_batch_end(&w, 1, MW_BATCH_NOACK);
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), 0);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), 1);
	ck_assert_int_eq(mw_batch_next(&rd, &rec, &why), -1);
	ck_assert_str_eq(why, "an open or a deny in a batch nobody waits for");
	/* unknown flags */
	len = mw_batch_end(&w, 1, 2);
	ck_assert_int_eq(mw_batch_open(&rd, buf, len, &why), -1);
	ck_assert_str_eq(why, "unknown batch flags");
}
END_TEST

/* Requests: a valid one of each op passes; each mutation is refused with its reason. */
static void
req_valid(struct mw_req *q, enum mw_op op)
{
	memset(q, 0, sizeof(*q));
	q->h.magic = MW_MAGIC;
	q->h.type = MW_REQ;
	q->op = op;
	snprintf(q->name, sizeof(q->name), "build-42");
	snprintf(q->path, sizeof(q->path), "/run/egress/build-42.sock");
	snprintf(q->policy, sizeof(q->policy), "/etc/egress/build.sealed");
	snprintf(q->digest, sizeof(q->digest), "%s", DIGEST);
	q->kind = op == MW_OPEN ? MW_OPEN_CONF_FILE : 0;
}

enum req_mut { M_NONE, M_NAME_SLASH, M_NAME_EMPTY, M_PATH_REL, M_POLICY_REL, M_DIGEST, M_ERR,
	M_FLAGS, M_KIND, M_OP, M_UNTERMINATED };

static const struct req_case {
	enum mw_op op;
	enum req_mut mut;
	const char *why;        /* NULL: accepted */
} req_cases[] = {
	{ MW_LISTEN, M_NONE, NULL },
	{ MW_UNLINK, M_NONE, NULL },
	{ MW_OPEN, M_NONE, NULL },
	{ MW_ADOPT, M_NONE, NULL },
	{ MW_READY, M_NONE, NULL },
	{ MW_MACCHECK, M_NONE, NULL },
	{ MW_LISTEN, M_NAME_SLASH, "LISTEN needs a principal name, absolute socket and policy paths, a digest" },
	{ MW_LISTEN, M_NAME_EMPTY, "LISTEN needs a principal name, absolute socket and policy paths, a digest" },
	{ MW_LISTEN, M_PATH_REL, "LISTEN needs a principal name, absolute socket and policy paths, a digest" },
	{ MW_LISTEN, M_POLICY_REL, "LISTEN needs a principal name, absolute socket and policy paths, a digest" },
	{ MW_LISTEN, M_DIGEST, "LISTEN needs a principal name, absolute socket and policy paths, a digest" },
	{ MW_UNLINK, M_NAME_SLASH, "UNLINK needs a principal name" },
	{ MW_OPEN, M_PATH_REL, "OPEN needs a known kind and an absolute path" },
	{ MW_OPEN, M_KIND, "OPEN needs a known kind and an absolute path" },
	{ MW_ADOPT, M_KIND, "ADOPT of an unknown kind" },
	{ MW_MACCHECK, M_DIGEST, "MACCHECK needs an absolute path and a digest" },
	{ MW_MACCHECK, M_PATH_REL, "MACCHECK needs an absolute path and a digest" },
	{ MW_READY, M_ERR, "a request with an error set" },
	{ MW_READY, M_FLAGS, "unknown flags" },
	{ MW_READY, M_OP, "unknown op" },
	{ MW_READY, M_UNTERMINATED, "a string member without its end" },
};

START_TEST(test_request)
{
	const struct req_case *t = &req_cases[_i];
	struct mw_req q;
	const char *why = NULL;
	int rc;

	req_valid(&q, t->op);
	switch (t->mut) {
	case M_NONE: break;
	case M_NAME_SLASH: snprintf(q.name, sizeof(q.name), "a/b"); break;
	case M_NAME_EMPTY: q.name[0] = '\0'; break;
	case M_PATH_REL: snprintf(q.path, sizeof(q.path), "../etc/shadow"); break;
	case M_POLICY_REL: snprintf(q.policy, sizeof(q.policy), "build.sealed"); break;
	case M_DIGEST: q.digest[10] = 'X'; break;
	case M_ERR: q.err = 5; break;
	case M_FLAGS: q.flags = 0x100; break;
	case M_KIND: q.kind = 9; break;
	case M_OP: q.op = 77; break;
	case M_UNTERMINATED: memset(q.text, 'a', sizeof(q.text)); break;
	}
	rc = mw_req_check(&q, &why);
	if (t->why == NULL)
		ck_assert_msg(rc == 0, "case %d refused: %s", _i, why ? why : "");
	else
		ck_assert_msg(rc == -1 && why != NULL && strcmp(why, t->why) == 0,
		    "case %d: '%s', not '%s'", _i, why ? why : "(accepted)", t->why);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("monwire");
	TCase *tc = tcase_create("batches");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_full_batch);
	tcase_add_test(tc, test_framing);
	tcase_add_test(tc, test_noack);
	tcase_add_loop_test(tc, test_request, 0, (int)NELEM(req_cases));
	tcase_add_loop_test(tc, test_refusal, 0, (int)NELEM(refusals));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
