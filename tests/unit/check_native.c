/*
 * check_native.c: the EGR1 native connector framing, both directions. Every accepted
 * request whole, split at every byte (a prefix is NEED_MORE, never an answer) and
 * followed by payload; every refusal with its reason, as soon as the offending byte is
 * there. The clients' side: a built request is the documented bytes and parses back to
 * what was built; replies and answers decode to what egressd encoded.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "native.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static size_t
frame(uint8_t *out, uint8_t version, uint8_t flags, uint16_t port, const char *host,
    size_t hostlen)
{
	memcpy(out, "EGR1", 4);
	out[4] = version;
	out[5] = flags;
	out[6] = (uint8_t)(port >> 8);
	out[7] = (uint8_t)port;
	out[8] = (uint8_t)hostlen;
	memcpy(out + 9, host, hostlen);
	return 9 + hostlen;
}

static const struct {
	const char *host;
	uint16_t port;
	const char *canonical;
	enum host_kind kind;
} good[] = {
	{ "api.github.com", 443, "api.github.com", HOST_NAME },
	{ "API.GitHub.COM.", 443, "api.github.com", HOST_NAME },
	{ "a", 1, "a", HOST_NAME },
	{ "140.82.112.4", 22, "140.82.112.4", HOST_IPV4 },
	{ "2606:4700:4700:0:0:0:0:1111", 853, "2606:4700:4700::1111", HOST_IPV6 },
	{ "[::1]", 65535, "::1", HOST_IPV6 },
	{ "xn--bcher-kva.example", 80, "xn--bcher-kva.example", HOST_NAME },
};

START_TEST(test_good)
{
	uint8_t buf[512];
	size_t len = frame(buf, 1, 0, good[_i].port, good[_i].host, strlen(good[_i].host));
	struct native_request req;
	struct proto_error err;
	size_t consumed;

	for (size_t cut = 0; cut < len; cut++)
		ck_assert_msg(native_parse(buf, cut, &consumed, &req, &err) == PROTO_NEED_MORE,
		    "%s: prefix of %zu bytes did not ask for more", good[_i].host, cut);
	memcpy(buf + len, "\x16\x03\x01payload", 10);
	ck_assert_int_eq(native_parse(buf, len + 10, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, len);
	ck_assert_str_eq(req.host.name, good[_i].canonical);
	ck_assert_int_eq(req.host.kind, good[_i].kind);
	ck_assert_uint_eq(req.port, good[_i].port);
	ck_assert_uint_eq(req.verb, EGRESS_NATIVE_CONNECT);
	ck_assert_uint_eq(req.qtype, 0);
}
END_TEST

/* The question verb: the same head, qtype where the port was, the qname as a host. */
static const struct {
	const char *qname;
	uint16_t qtype;
	const char *canonical;
	enum host_kind kind;
} questions[] = {
	{ "api.github.com", 1, "api.github.com", HOST_NAME },
	{ "API.GitHub.COM.", 28, "api.github.com", HOST_NAME },
	{ "x.e2e.test", 16, "x.e2e.test", HOST_NAME },
	{ "140.82.112.4", 1, "140.82.112.4", HOST_IPV4 },
	{ "2606:4700:4700::1111", 28, "2606:4700:4700::1111", HOST_IPV6 },
	{ "a", 65535, "a", HOST_NAME },
};

START_TEST(test_question)
{
	uint8_t buf[512];
	size_t len = frame(buf, 1, EGRESS_NATIVE_QUESTION, questions[_i].qtype,
	    questions[_i].qname, strlen(questions[_i].qname));
	struct native_request req;
	struct proto_error err;
	size_t consumed;

	for (size_t cut = 0; cut < len; cut++) {
		ck_assert_msg(native_parse(buf, cut, &consumed, &req, &err) == PROTO_NEED_MORE,
		    "%s: prefix of %zu bytes did not ask for more", questions[_i].qname, cut);
		/* The verb is known once its byte is there. */
		if (cut >= 6)
			ck_assert_uint_eq(req.verb, EGRESS_NATIVE_QUESTION);
	}
	memcpy(buf + len, "trailing", 8);
	ck_assert_int_eq(native_parse(buf, len + 8, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, len);
	ck_assert_uint_eq(req.verb, EGRESS_NATIVE_QUESTION);
	ck_assert_uint_eq(req.qtype, questions[_i].qtype);
	ck_assert_uint_eq(req.port, 0);
	ck_assert_str_eq(req.host.name, questions[_i].canonical);
	ck_assert_int_eq(req.host.kind, questions[_i].kind);
}
END_TEST

static const struct {
	const char *what;
	uint16_t qtype;
	const char *qname;
	size_t qnamelen;
	enum egress_reason reason;
	size_t decided_at;
} bad_questions[] = {
	{ "qtype 0", 0, "a.test", 6, EGRESS_MALFORMED_REQUEST, 9 },
	{ "empty qname", 1, "", 0, EGRESS_MALFORMED_REQUEST, 9 },
	{ "numeric trick", 1, "2130706433", 10, EGRESS_BAD_HOST, 19 },
	{ "NUL in qname", 1, "evil.com\0.ok.test", 17, EGRESS_BAD_HOST, 26 },
	{ "underscore", 33, "_sip._tcp.test", 14, EGRESS_BAD_HOST, 23 },
	{ "empty label", 1, "a..test", 7, EGRESS_BAD_HOST, 16 },
};

START_TEST(test_bad_question)
{
	uint8_t buf[512];
	struct native_request req;
	struct proto_error err;
	size_t consumed;

	frame(buf, 1, EGRESS_NATIVE_QUESTION, bad_questions[_i].qtype, bad_questions[_i].qname,
	    bad_questions[_i].qnamelen);
	for (size_t cut = 0; cut < bad_questions[_i].decided_at; cut++)
		ck_assert_msg(native_parse(buf, cut, &consumed, &req, &err) == PROTO_NEED_MORE,
		    "%s: %zu bytes did not ask for more", bad_questions[_i].what, cut);
	ck_assert_int_eq(native_parse(buf, bad_questions[_i].decided_at, &consumed, &req, &err),
	    PROTO_ERROR);
	ck_assert_int_eq(err.reason, bad_questions[_i].reason);
	/* Refused, but still a question: the caller answers it (NXDOMAIN, FORMERR). */
	ck_assert_uint_eq(req.verb, EGRESS_NATIVE_QUESTION);
	ck_assert(!err.has_port);
	if (bad_questions[_i].reason == EGRESS_BAD_HOST) {
		ck_assert_uint_eq(req.qtype, bad_questions[_i].qtype);
		ck_assert_uint_eq(err.raw_len, bad_questions[_i].qnamelen);
		ck_assert(memcmp(err.raw, bad_questions[_i].qname, err.raw_len) == 0);
	}
}
END_TEST

static const struct {
	enum egress_reason reason;
	const char *addr;            /* NULL: none given */
	uint32_t ttl;
	int32_t code;
	uint8_t rcode, count;
	uint32_t ttl_sent;
} answers[] = {
	{ EGRESS_ALLOWED, "198.18.0.7", 1, 0, 0, 1, 1 },
	{ EGRESS_ALLOWED, "140.82.112.4", 1, 0, 0, 1, 1 },
	{ EGRESS_ALLOWED, NULL, 1, 0, 0, 0, 0 },             /* AAAA: NOERROR, no data */
	{ EGRESS_ALLOWED, "2001:db8::1", 1, 0, 0, 0, 0 },    /* only IPv4 is carried */
	{ EGRESS_NOT_ALLOWLISTED, "198.18.0.7", 1, -1001, 3, 0, 0 },
	{ EGRESS_DENIED_BY_RULE, NULL, 0, -1002, 3, 0, 0 },
	{ EGRESS_BAD_HOST, NULL, 0, -1004, 3, 0, 0 },
	{ EGRESS_MALFORMED_REQUEST, NULL, 0, -1003, 1, 0, 0 },
	{ EGRESS_HANDSHAKE_TIMEOUT, NULL, 0, -1019, 2, 0, 0 },
	{ EGRESS_SHUTDOWN, NULL, 0, -1022, 2, 0, 0 },
};

START_TEST(test_answer)
{
	uint8_t out[EGRESS_NATIVE_ANSWER];
	struct addr a;
	uint32_t u;

	if (answers[_i].addr != NULL)
		ck_assert_int_eq(addr_parse(answers[_i].addr, strlen(answers[_i].addr), &a), 0);
	ck_assert_uint_eq(native_answer(answers[_i].reason, answers[_i].addr ? &a : NULL,
	    answers[_i].ttl, out), 18);
	ck_assert(memcmp(out, "EGR1", 4) == 0);
	u = (uint32_t)out[4] << 24 | (uint32_t)out[5] << 16 | (uint32_t)out[6] << 8 | out[7];
	ck_assert_int_eq((int32_t)u, answers[_i].code);
	ck_assert_uint_eq(out[8], answers[_i].rcode);
	ck_assert_uint_eq(out[9], answers[_i].count);
	u = (uint32_t)out[10] << 24 | (uint32_t)out[11] << 16 | (uint32_t)out[12] << 8 | out[13];
	ck_assert_uint_eq(u, answers[_i].ttl_sent);
	if (answers[_i].count)
		ck_assert(memcmp(out + 14, a.b, 4) == 0);
	else
		ck_assert(memcmp(out + 14, "\0\0\0\0", 4) == 0);
}
END_TEST

static const struct {
	const char *what;
	uint8_t version, flags;
	uint16_t port;
	const char *host;
	size_t hostlen;
	const char *magic;           /* replaces "EGR1" when set */
	enum egress_reason reason;
	size_t decided_at;           /* the refusal is known with this many bytes */
} bad[] = {
	{ "wrong magic", 1, 0, 443, "a.test", 6, "EGR2", EGRESS_MALFORMED_REQUEST, 4 },
	{ "HTTP", 1, 0, 443, "a.test", 6, "GET ", EGRESS_MALFORMED_REQUEST, 1 },
	{ "version 0", 0, 0, 443, "a.test", 6, NULL, EGRESS_MALFORMED_REQUEST, 5 },
	{ "version 2", 2, 0, 443, "a.test", 6, NULL, EGRESS_MALFORMED_REQUEST, 5 },
	{ "unknown verb 3", 1, 3, 443, "a.test", 6, NULL, EGRESS_MALFORMED_REQUEST, 6 },
	{ "transparent, port 0", 1, 2, 0, "198.18.0.7", 10, NULL, EGRESS_MALFORMED_REQUEST, 9 },
	{ "transparent, numeric trick", 1, 2, 443, "2130706433", 10, NULL, EGRESS_BAD_HOST, 19 },
	{ "unknown verb 0x80", 1, 0x80, 443, "a.test", 6, NULL, EGRESS_MALFORMED_REQUEST, 6 },
	{ "port 0", 1, 0, 0, "a.test", 6, NULL, EGRESS_MALFORMED_REQUEST, 9 },
	{ "empty host", 1, 0, 443, "", 0, NULL, EGRESS_MALFORMED_REQUEST, 9 },
	{ "numeric trick", 1, 0, 443, "2130706433", 10, NULL, EGRESS_BAD_HOST, 19 },
	{ "octal", 1, 0, 443, "0177.0.0.1", 10, NULL, EGRESS_BAD_HOST, 19 },
	{ "NUL in host", 1, 0, 443, "evil.com\0.ok.test", 17, NULL, EGRESS_BAD_HOST, 26 },
	{ "zone id", 1, 0, 443, "fe80::1%eth0", 12, NULL, EGRESS_BAD_HOST, 21 },
	{ "underscore", 1, 0, 443, "a_b.test", 8, NULL, EGRESS_BAD_HOST, 17 },
	{ "non-ASCII", 1, 0, 443, "b\xc3\xbc" "cher.test", 11, NULL, EGRESS_BAD_HOST, 20 },
};

START_TEST(test_bad)
{
	uint8_t buf[512];
	size_t len = frame(buf, bad[_i].version, bad[_i].flags, bad[_i].port, bad[_i].host,
	    bad[_i].hostlen);
	struct native_request req;
	struct proto_error err;
	size_t consumed;

	if (bad[_i].magic)
		memcpy(buf, bad[_i].magic, 4);
	for (size_t cut = 0; cut < bad[_i].decided_at; cut++)
		ck_assert_msg(native_parse(buf, cut, &consumed, &req, &err) == PROTO_NEED_MORE,
		    "%s: %zu bytes did not ask for more", bad[_i].what, cut);
	memset(&err, 0, sizeof(err));
	ck_assert_msg(native_parse(buf, bad[_i].decided_at, &consumed, &req, &err) ==
	    PROTO_ERROR, "%s: not refused at %zu bytes", bad[_i].what, bad[_i].decided_at);
	ck_assert_int_eq(err.reason, bad[_i].reason);
	ck_assert_ptr_nonnull(err.why);
	ck_assert_int_eq(native_parse(buf, len, &consumed, &req, &err), PROTO_ERROR);
	if (bad[_i].reason == EGRESS_BAD_HOST) {
		ck_assert_uint_eq(err.raw_len, bad[_i].hostlen);
		ck_assert(memcmp(err.raw, bad[_i].host, bad[_i].hostlen) == 0);
		/* the receipt still names the port */
		ck_assert(err.has_port);
		ck_assert_uint_eq(err.port, bad[_i].port);
	} else
		ck_assert(!err.has_port);
}
END_TEST

START_TEST(test_longest_host)
{
	uint8_t buf[512];
	char host[255];
	struct native_request req;
	struct proto_error err;
	size_t consumed, len;

	/* 255 octets cannot be a name (253 at most): refused as bad-host, not overread. */
	memset(host, 'a', sizeof(host));
	for (size_t i = 63; i < sizeof(host); i += 64)
		host[i] = '.';
	len = frame(buf, 1, 0, 443, host, sizeof(host));
	ck_assert_int_eq(native_parse(buf, len, &consumed, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.reason, EGRESS_BAD_HOST);
	/* 253 octets is a name. */
	len = frame(buf, 1, 0, 443, host, 253);
	buf[9 + 252] = 'a';
	ck_assert_int_eq(native_parse(buf, len, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(strlen(req.host.name), 253);
}
END_TEST

/* The transparent verb: a connect request in every byte but the verb. */
START_TEST(test_transparent)
{
	uint8_t buf[512];
	size_t len = frame(buf, 1, EGRESS_NATIVE_TRANSPARENT, good[_i].port, good[_i].host,
	    strlen(good[_i].host));
	struct native_request req;
	struct proto_error err;
	size_t consumed;

	for (size_t cut = 0; cut < len; cut++) {
		ck_assert_msg(native_parse(buf, cut, &consumed, &req, &err) == PROTO_NEED_MORE,
		    "%s: prefix of %zu bytes did not ask for more", good[_i].host, cut);
		if (cut >= 6)
			ck_assert_uint_eq(req.verb, EGRESS_NATIVE_TRANSPARENT);
	}
	memcpy(buf + len, "\x16\x03\x01payload", 10);
	ck_assert_int_eq(native_parse(buf, len + 10, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, len);
	ck_assert_str_eq(req.host.name, good[_i].canonical);
	ck_assert_uint_eq(req.port, good[_i].port);
	ck_assert_uint_eq(req.verb, EGRESS_NATIVE_TRANSPARENT);
}
END_TEST

static const struct {
	enum egress_reason reason;
	int32_t code;
} replies[] = {
	{ EGRESS_ALLOWED, 0 },
	{ EGRESS_NOT_ALLOWLISTED, -1001 },
	{ EGRESS_DENIED_BY_RULE, -1002 },
	{ EGRESS_PRIVATE_ADDRESS, -1005 },
	{ EGRESS_CONNECT_REFUSED, -1008 },
	{ EGRESS_SHUTDOWN, -1022 },
};

START_TEST(test_reply)
{
	uint8_t out[EGRESS_NATIVE_REPLY];
	uint32_t u;

	ck_assert_uint_eq(native_reply(replies[_i].reason, out), 8);
	ck_assert(memcmp(out, "EGR1", 4) == 0);
	u = (uint32_t)out[4] << 24 | (uint32_t)out[5] << 16 | (uint32_t)out[6] << 8 | out[7];
	ck_assert_int_eq((int32_t)u, replies[_i].code);
}
END_TEST

/* --- the clients' side: native_request_build, native_reply_parse, native_answer_parse --- */

static const struct {
	uint8_t verb;
	uint16_t arg;
	const char *name;
	const char *canonical;
} builds[] = {
	{ EGRESS_NATIVE_CONNECT, 443, "api.github.com", "api.github.com" },
	{ EGRESS_NATIVE_CONNECT, 1, "API.GitHub.COM.", "api.github.com" },
	{ EGRESS_NATIVE_CONNECT, 65535, "[::1]", "::1" },
	{ EGRESS_NATIVE_QUESTION, EGRESS_DNS_TYPE_A, "x.e2e.test", "x.e2e.test" },
	{ EGRESS_NATIVE_QUESTION, EGRESS_DNS_TYPE_AAAA, "a", "a" },
	{ EGRESS_NATIVE_TRANSPARENT, 80, "198.18.0.7", "198.18.0.7" },
	{ EGRESS_NATIVE_TRANSPARENT, 8443, "140.82.112.4", "140.82.112.4" },
};

START_TEST(test_build_roundtrip)
{
	uint8_t out[EGRESS_NATIVE_REQUEST_MAX], want[512];
	size_t nl = strlen(builds[_i].name), len, consumed;
	struct native_request req;
	struct proto_error err;

	len = native_request_build(builds[_i].verb, builds[_i].arg, builds[_i].name, nl, out);
	/* the bytes docs/native.md describes */
	ck_assert_uint_eq(len, frame(want, 1, builds[_i].verb, builds[_i].arg, builds[_i].name,
	    nl));
	ck_assert(memcmp(out, want, len) == 0);
	ck_assert_int_eq(native_parse(out, len, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, len);
	ck_assert_uint_eq(req.verb, builds[_i].verb);
	ck_assert_str_eq(req.host.name, builds[_i].canonical);
	if (builds[_i].verb == EGRESS_NATIVE_QUESTION) {
		ck_assert_uint_eq(req.qtype, builds[_i].arg);
		ck_assert_uint_eq(req.port, 0);
	} else {
		ck_assert_uint_eq(req.port, builds[_i].arg);
		ck_assert_uint_eq(req.qtype, 0);
	}
}
END_TEST

START_TEST(test_build_bounds)
{
	uint8_t out[EGRESS_NATIVE_REQUEST_MAX];
	char name[EGRESS_NATIVE_NAME_MAX + 1];
	struct native_request req;
	struct proto_error err;
	size_t consumed;

	memset(name, 'a', sizeof(name));
	ck_assert_uint_eq(native_request_build(3, 443, "a.test", 6, out), 0);
	ck_assert_uint_eq(native_request_build(0x80, 443, "a.test", 6, out), 0);
	ck_assert_uint_eq(native_request_build(EGRESS_NATIVE_CONNECT, 0, "a.test", 6, out), 0);
	ck_assert_uint_eq(native_request_build(EGRESS_NATIVE_QUESTION, 0, "a.test", 6, out), 0);
	ck_assert_uint_eq(native_request_build(EGRESS_NATIVE_CONNECT, 443, "", 0, out), 0);
	ck_assert_uint_eq(native_request_build(EGRESS_NATIVE_CONNECT, 443, name,
	    EGRESS_NATIVE_NAME_MAX + 1, out), 0);
	/* the longest name fits the buffer exactly; egressd judges it (bad-host: no label
	 * is that long), the builder only frames it */
	ck_assert_uint_eq(native_request_build(EGRESS_NATIVE_CONNECT, 443, name,
	    EGRESS_NATIVE_NAME_MAX, out), EGRESS_NATIVE_REQUEST_MAX);
	ck_assert_int_eq(native_parse(out, EGRESS_NATIVE_REQUEST_MAX, &consumed, &req, &err),
	    PROTO_ERROR);
	ck_assert_int_eq(err.reason, EGRESS_BAD_HOST);
}
END_TEST

START_TEST(test_reply_roundtrip)
{
	uint8_t out[EGRESS_NATIVE_REPLY];
	int32_t code = 12345;

	native_reply(replies[_i].reason, out);
	ck_assert_int_eq(native_reply_parse(out, &code), 0);
	ck_assert_int_eq(code, replies[_i].code);
	ck_assert_int_eq(egress_reason_of_code(code), (int)replies[_i].reason);
}
END_TEST

START_TEST(test_answer_roundtrip)
{
	uint8_t out[EGRESS_NATIVE_ANSWER];
	struct native_answer got;
	struct addr a;

	if (answers[_i].addr != NULL)
		ck_assert_int_eq(addr_parse(answers[_i].addr, strlen(answers[_i].addr), &a), 0);
	native_answer(answers[_i].reason, answers[_i].addr ? &a : NULL, answers[_i].ttl, out);
	memset(&got, 0xa5, sizeof(got));
	ck_assert_int_eq(native_answer_parse(out, &got), 0);
	ck_assert_int_eq(got.code, answers[_i].code);
	ck_assert_uint_eq(got.rcode, answers[_i].rcode);
	ck_assert_uint_eq(got.count, answers[_i].count);
	ck_assert_uint_eq(got.ttl, answers[_i].ttl_sent);
	if (got.count)
		ck_assert(memcmp(got.addr, a.b, 4) == 0);
}
END_TEST

START_TEST(test_decode_refuses)
{
	uint8_t out[EGRESS_NATIVE_ANSWER];
	struct native_answer got;
	struct addr a;
	int32_t code;

	ck_assert_int_eq(addr_parse("140.82.112.4", 12, &a), 0);
	native_answer(EGRESS_ALLOWED, &a, 60, out);
	out[9] = 2;                  /* count: at most one address */
	ck_assert_int_eq(native_answer_parse(out, &got), -1);
	native_answer(EGRESS_ALLOWED, &a, 60, out);
	out[3] = '2';                /* EGR2 */
	ck_assert_int_eq(native_answer_parse(out, &got), -1);
	ck_assert_int_eq(native_reply_parse(out, &code), -1);
	memcpy(out, "HTTP/1.1", 8);
	ck_assert_int_eq(native_reply_parse(out, &code), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("native");
	TCase *tc;
	SRunner *sr;
	int failed;

	tc = tcase_create("accepted, split at every byte, followed by payload");
	tcase_add_loop_test(tc, test_good, 0, (int)NELEM(good));
	suite_add_tcase(s, tc);
	tc = tcase_create("transparent connects: split at every byte, the verb known early");
	tcase_add_loop_test(tc, test_transparent, 0, (int)NELEM(good));
	suite_add_tcase(s, tc);
	tc = tcase_create("refused with its reason as soon as it is known");
	tcase_add_loop_test(tc, test_bad, 0, (int)NELEM(bad));
	suite_add_tcase(s, tc);
	tc = tcase_create("host length bounds");
	tcase_add_test(tc, test_longest_host);
	suite_add_tcase(s, tc);
	tc = tcase_create("questions: split at every byte, the verb known early");
	tcase_add_loop_test(tc, test_question, 0, (int)NELEM(questions));
	suite_add_tcase(s, tc);
	tc = tcase_create("refused questions are still questions");
	tcase_add_loop_test(tc, test_bad_question, 0, (int)NELEM(bad_questions));
	suite_add_tcase(s, tc);
	tc = tcase_create("answers: code, rcode, at most one IPv4 address");
	tcase_add_loop_test(tc, test_answer, 0, (int)NELEM(answers));
	suite_add_tcase(s, tc);
	tc = tcase_create("replies carry libegress's codes");
	tcase_add_loop_test(tc, test_reply, 0, (int)NELEM(replies));
	suite_add_tcase(s, tc);
	tc = tcase_create("built requests are the documented bytes and parse back, every verb");
	tcase_add_loop_test(tc, test_build_roundtrip, 0, (int)NELEM(builds));
	suite_add_tcase(s, tc);
	tc = tcase_create("nothing is built that no request can carry");
	tcase_add_test(tc, test_build_bounds);
	suite_add_tcase(s, tc);
	tc = tcase_create("replies and answers decode to what was encoded");
	tcase_add_loop_test(tc, test_reply_roundtrip, 0, (int)NELEM(replies));
	tcase_add_loop_test(tc, test_answer_roundtrip, 0, (int)NELEM(answers));
	suite_add_tcase(s, tc);
	tc = tcase_create("decoders refuse what is not an EGR1 reply or answer");
	tcase_add_test(tc, test_decode_refuses);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
