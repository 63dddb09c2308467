/*
 * check_dnswire.c: the stub resolver's DNS wire parser and encoder (proto/dnswire.c):
 * one question read with case kept in the echo and lower case in the text form, label and
 * name bounds, compression pointers refused, counts, opcodes and classes refused with
 * the right rcode, EDNS OPT ignored, responses and short input dropped, answers built.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "dnswire.h"

/* A query: id 0x1234, RD, one question name (wire) type, class; extra appended. */
static size_t
mkquery(uint8_t *out, const uint8_t *name, size_t namelen, uint16_t type, uint16_t cls,
    const uint8_t *extra, size_t extralen, uint16_t arcount)
{
	static const uint8_t head[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
	size_t n = sizeof(head);

	memcpy(out, head, n);
	out[11] = (uint8_t)arcount;
	memcpy(out + n, name, namelen);
	n += namelen;
	out[n++] = (uint8_t)(type >> 8);
	out[n++] = (uint8_t)type;
	out[n++] = (uint8_t)(cls >> 8);
	out[n++] = (uint8_t)cls;
	if (extralen > 0)
		memcpy(out + n, extra, extralen);
	return n + extralen;
}

static const uint8_t OKNAME[] = "\002Ok\003E2e\004TEST";   /* Ok.E2e.TEST. (with the NUL) */

START_TEST(test_simple_query)
{
	uint8_t buf[600];
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0);

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert_uint_eq(q.id, 0x1234);
	ck_assert(q.rd);
	ck_assert_uint_eq(q.qtype, 1);
	ck_assert_uint_eq(q.qclass, 1);
	ck_assert(q.text_ok);
	ck_assert_str_eq(q.text, "ok.e2e.test");
	ck_assert_uint_eq(q.wirelen, sizeof(OKNAME));
	ck_assert(memcmp(q.wire, OKNAME, sizeof(OKNAME)) == 0);
}
END_TEST

START_TEST(test_answer_a)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	static const uint8_t ip[4] = { 198, 18, 0, 7 };
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0), m;

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	m = dnswire_answer(&q, DNSWIRE_NOERROR, ip, 1, out);
	ck_assert_uint_eq(m, n + 16);
	ck_assert_uint_eq(out[0], 0x12);
	ck_assert_uint_eq(out[1], 0x34);
	ck_assert_uint_eq(out[2], 0x81);       /* QR, RD */
	ck_assert_uint_eq(out[3], 0x80);       /* RA, NOERROR */
	ck_assert_uint_eq(out[5], 1);          /* one question */
	ck_assert_uint_eq(out[7], 1);          /* one answer */
	ck_assert(memcmp(out + 12, buf + 12, n - 12) == 0);   /* the question as sent */
	{
		static const uint8_t rr[] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4,
		    198, 18, 0, 7 };

		ck_assert(memcmp(out + n, rr, sizeof(rr)) == 0);
	}
}
END_TEST

START_TEST(test_answer_nodata_nxdomain_servfail)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	static const uint8_t ip[4] = { 198, 18, 0, 7 };
	static const uint8_t rcodes[] = { DNSWIRE_NXDOMAIN, DNSWIRE_SERVFAIL };
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 28, 1, NULL, 0, 0);

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	/* AAAA: NOERROR with no data even if an address is given. */
	ck_assert_uint_eq(dnswire_answer(&q, DNSWIRE_NOERROR, ip, 1, out), n);
	ck_assert_uint_eq(out[3], 0x80);
	ck_assert_uint_eq(out[7], 0);
	n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	for (size_t i = 0; i < sizeof(rcodes); i++) {
		ck_assert_uint_eq(dnswire_answer(&q, rcodes[i], ip, 1, out), n);
		ck_assert_uint_eq(out[3], 0x80 | rcodes[i]);
		ck_assert_uint_eq(out[5], 1);
		ck_assert_uint_eq(out[7], 0);
	}
}
END_TEST

START_TEST(test_case_kept_in_echo)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	static const uint8_t mixed[] = "\002oK\003e2E\004tEsT";
	struct dnswire_query q;
	size_t n = mkquery(buf, mixed, sizeof(mixed), 1, 1, NULL, 0, 0);

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert_str_eq(q.text, "ok.e2e.test");
	dnswire_answer(&q, DNSWIRE_NXDOMAIN, NULL, 0, out);
	ck_assert(memcmp(out + 12, mixed, sizeof(mixed)) == 0);
}
END_TEST

START_TEST(test_label_and_name_bounds)
{
	uint8_t name[300], buf[700];
	struct dnswire_query q;
	size_t n, len;

	/* A 63-octet label is fine, 64 has the reserved top bits 01: FORMERR. */
	name[0] = 63;
	memset(name + 1, 'a', 63);
	name[64] = 0;
	n = mkquery(buf, name, 65, 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert_uint_eq(q.textlen, 63);
	name[0] = 64;
	name[65] = 0;
	n = mkquery(buf, name, 66, 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
	ck_assert_uint_eq(q.rcode, DNSWIRE_FORMERR);
	ck_assert(!q.has_question);
	/* 255 wire octets (3 x 63 + 61, then the root) is the most; 256 is FORMERR. */
	len = 0;
	for (int i = 0; i < 3; i++) {
		name[len++] = 63;
		memset(name + len, 'b', 63);
		len += 63;
	}
	name[len++] = 61;
	memset(name + len, 'c', 61);
	len += 61;
	name[len++] = 0;
	ck_assert_uint_eq(len, 255);
	n = mkquery(buf, name, len, 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert_uint_eq(q.textlen, 253);
	name[len - 1 - 62] = 62;
	memset(name + len - 1 - 61, 'c', 62);
	name[len] = 0;
	n = mkquery(buf, name, len + 1, 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
	ck_assert_uint_eq(q.rcode, DNSWIRE_FORMERR);
}
END_TEST

START_TEST(test_pointer_refused)
{
	uint8_t buf[600];
	static const uint8_t ptr[] = { 2, 'o', 'k', 0xc0, 12 };
	static const uint8_t bare[] = { 0xc0, 12 };
	struct dnswire_query q;
	size_t n = mkquery(buf, ptr, sizeof(ptr), 1, 1, NULL, 0, 0);

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
	ck_assert_uint_eq(q.rcode, DNSWIRE_FORMERR);
	n = mkquery(buf, bare, sizeof(bare), 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
	ck_assert_uint_eq(q.rcode, DNSWIRE_FORMERR);
}
END_TEST

START_TEST(test_truncated)
{
	uint8_t buf[600];
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0);

	/* Every cut inside the question is FORMERR; inside the header it is dropped. */
	for (size_t cut = 0; cut < n; cut++) {
		enum dnswire_status st = dnswire_parse(buf, cut, &q);

		if (cut < DNSWIRE_HEADER)
			ck_assert_int_eq(st, DNSWIRE_DROP);
		else {
			ck_assert_int_eq(st, DNSWIRE_ERROR);
			ck_assert_uint_eq(q.rcode, DNSWIRE_FORMERR);
		}
	}
}
END_TEST

START_TEST(test_counts)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0);
	static const int field[] = { 5, 7, 9 };     /* QDCOUNT 2, ANCOUNT 1, NSCOUNT 1 */

	for (size_t i = 0; i < 3; i++) {
		uint8_t save = buf[field[i]];

		buf[field[i]] = (uint8_t)(i == 0 ? 2 : 1);
		ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
		ck_assert_uint_eq(q.rcode, DNSWIRE_FORMERR);
		/* FORMERR: the header only, with the query's id. */
		ck_assert_uint_eq(dnswire_answer(&q, q.rcode, NULL, 0, out), DNSWIRE_HEADER);
		ck_assert_uint_eq(out[0], 0x12);
		ck_assert_uint_eq(out[3], 0x80 | DNSWIRE_FORMERR);
		ck_assert_uint_eq(out[5], 0);
		buf[field[i]] = save;
	}
	buf[5] = 0;
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
}
END_TEST

START_TEST(test_opcode_notimp)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0);

	for (unsigned op = 1; op < 16; op++) {
		buf[2] = (uint8_t)(op << 3);
		ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
		ck_assert_uint_eq(q.rcode, DNSWIRE_NOTIMP);
		ck_assert_uint_eq(dnswire_answer(&q, q.rcode, NULL, 0, out), DNSWIRE_HEADER);
		ck_assert_uint_eq(out[2], 0x80 | (op << 3));
		ck_assert_uint_eq(out[3], 0x80 | DNSWIRE_NOTIMP);
	}
}
END_TEST

START_TEST(test_class_refused)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 3, NULL, 0, 0);

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_ERROR);
	ck_assert_uint_eq(q.rcode, DNSWIRE_REFUSED);
	ck_assert(q.has_question);
	ck_assert_uint_eq(dnswire_answer(&q, q.rcode, NULL, 0, out), n);
	ck_assert(memcmp(out + 12, buf + 12, n - 12) == 0);
}
END_TEST

START_TEST(test_edns_ignored)
{
	uint8_t buf[600], out[DNSWIRE_ANSWER_MAX];
	static const uint8_t ip[4] = { 198, 18, 0, 9 };
	/* OPT: root name, type 41, UDP size 1232, no extended rcode, DO set, no data. */
	static const uint8_t opt[] = { 0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0 };
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, opt, sizeof(opt), 1), m;

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	m = dnswire_answer(&q, DNSWIRE_NOERROR, ip, 1, out);
	ck_assert_uint_eq(m, n - sizeof(opt) + 16);
	ck_assert_uint_eq(out[11], 0);         /* no additional record */
}
END_TEST

START_TEST(test_dropped)
{
	uint8_t buf[600];
	struct dnswire_query q;
	size_t n = mkquery(buf, OKNAME, sizeof(OKNAME), 1, 1, NULL, 0, 0);

	buf[2] |= 0x80;                          /* a response: never answered (no loops) */
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_DROP);
	ck_assert_int_eq(dnswire_parse(buf, 11, &q), DNSWIRE_DROP);
	ck_assert_int_eq(dnswire_parse(buf, 0, &q), DNSWIRE_DROP);
}
END_TEST

START_TEST(test_no_text_form)
{
	uint8_t buf[600];
	static const uint8_t dot[] = "\003a.b\004test";
	static const uint8_t nul[] = { 3, 'a', 0, 'b', 0 };
	static const uint8_t root[] = { 0 };
	struct dnswire_query q;
	size_t n = mkquery(buf, dot, sizeof(dot), 1, 1, NULL, 0, 0);

	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert(!q.text_ok);
	n = mkquery(buf, nul, sizeof(nul), 1, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert(!q.text_ok);
	n = mkquery(buf, root, sizeof(root), 2, 1, NULL, 0, 0);
	ck_assert_int_eq(dnswire_parse(buf, n, &q), DNSWIRE_QUERY);
	ck_assert(!q.text_ok);
	ck_assert_uint_eq(q.wirelen, 1);
}
END_TEST

int
main(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "one question, text form in lower case", test_simple_query },
		{ "an A answer with the question echoed", test_answer_a },
		{ "NODATA, NXDOMAIN, SERVFAIL carry no record", test_answer_nodata_nxdomain_servfail },
		{ "case kept in the echo", test_case_kept_in_echo },
		{ "label 63 and name 255 bounds", test_label_and_name_bounds },
		{ "compression pointers in the question: FORMERR", test_pointer_refused },
		{ "a question cut short: FORMERR; a header cut short: dropped", test_truncated },
		{ "counts other than one question: FORMERR, header only", test_counts },
		{ "opcodes other than QUERY: NOTIMP", test_opcode_notimp },
		{ "classes other than IN: REFUSED", test_class_refused },
		{ "EDNS OPT ignored, answered without OPT", test_edns_ignored },
		{ "responses and short input dropped", test_dropped },
		{ "names without a faithful text form", test_no_text_form },
	};
	Suite *s = suite_create("dnswire");
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
