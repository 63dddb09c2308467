/*
 * check_parent.c: unit tests for egressd's side of a parent proxy (proto/parent.c): the
 * parent's answer head (status line, line ends, bytes a head never has, the bound, what
 * follows the head belonging to the tunnel), the CONNECT request written (Host, Basic
 * Proxy-Authorization, refused bytes, the bound) and base64 (RFC 4648 s10 vectors).
 *
 * Every answer is copied into a heap buffer of exactly its length (a read past len is an
 * ASan error in --enable-asan builds) and also fed cut at every length before its end,
 * where it must need more (or, for an error, need more or be the same error).
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parent.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define IN(lit) .in = (lit), .len = sizeof(lit) - 1

struct answer_case {
	const char *name;
	const char *in;
	size_t len;
	enum proto_status st;
	int status;                  /* OK */
	const char *line;            /* OK: the status line */
	size_t head_len;             /* OK */
	const char *why;             /* ERROR: a part of it */
};

static enum proto_status
parse(const char *in, size_t len, struct parent_answer *a, const char **why)
{
	uint8_t *b = malloc(len ? len : 1);
	enum proto_status st;

	ck_assert_ptr_nonnull(b);
	memcpy(b, in, len);
	st = parent_parse_answer(b, len, a, why);
	/* Pointers into the buffer are checked before it goes. */
	if (st == PROTO_OK) {
		ck_assert_ptr_eq(a->line, b);
		ck_assert_uint_le(a->head_len, len);
	}
	free(b);
	return st;
}

static void
run_answer(const struct answer_case *t)
{
	struct parent_answer a;
	const char *why = NULL;
	enum proto_status st = parse(t->in, t->len, &a, &why);

	ck_assert_msg(st == t->st, "%s: status %d, expected %d (%s)", t->name, st, t->st,
	    why ? why : "-");
	if (st == PROTO_OK) {
		ck_assert_int_eq(a.status, t->status);
		ck_assert_uint_eq(a.head_len, t->head_len);
		ck_assert_uint_eq(a.line_len, strlen(t->line));
		ck_assert_msg(memcmp(t->in, t->line, a.line_len) == 0, "%s: line", t->name);
		ck_assert_ptr_null(why);
	} else if (st == PROTO_ERROR) {
		ck_assert_ptr_nonnull(why);
		ck_assert_msg(strstr(why, t->why) != NULL, "%s: why '%s', expected '%s'", t->name,
		    why, t->why);
	}
	/* Every prefix that ends before the head's end needs more, or is the same error. */
	for (size_t n = 0; n < (st == PROTO_OK ? t->head_len : t->len); n++) {
		enum proto_status sp = parse(t->in, n, &a, &why);

		ck_assert_msg(sp == PROTO_NEED_MORE || (st == PROTO_ERROR && sp == PROTO_ERROR),
		    "%s: prefix %zu gave %d", t->name, n, sp);
	}
}

/* --- the status and the head ------------------------------------------------------------- */

static const struct answer_case status_cases[] = {
	{ "squid 200", IN("HTTP/1.1 200 Connection established\r\n\r\n"), PROTO_OK, 200,
	  "HTTP/1.1 200 Connection established", 39, NULL },
	{ "tinyproxy 200 with headers", IN("HTTP/1.0 200 Connection established\r\n"
	  "Proxy-agent: tinyproxy/1.11.1\r\n\r\n"), PROTO_OK, 200,
	  "HTTP/1.0 200 Connection established", 70, NULL },
	{ "no reason phrase", IN("HTTP/1.1 204\r\n\r\n"), PROTO_OK, 204, "HTTP/1.1 204", 16,
	  NULL },
	{ "an empty reason phrase", IN("HTTP/1.1 200 \r\n\r\n"), PROTO_OK, 200, "HTTP/1.1 200 ",
	  17, NULL },
	{ "407 (the caller refuses it)", IN("HTTP/1.1 407 Proxy Authentication Required\r\n"
	  "Proxy-Authenticate: Basic realm=\"corp\"\r\nContent-Length: 0\r\n\r\n"), PROTO_OK, 407,
	  "HTTP/1.1 407 Proxy Authentication Required", 105, NULL },
	{ "obs-text in the reason", IN("HTTP/1.1 403 Verboten \xe2\x80\x94 nein\r\n\r\n"),
	  PROTO_OK, 403, "HTTP/1.1 403 Verboten \xe2\x80\x94 nein", 34, NULL },
	{ "HTTP/2 is not an answer to HTTP/1.1", IN("HTTP/2 200\r\n\r\n"), PROTO_ERROR, 0, NULL,
	  0, "not HTTP/1.x" },
	{ "lower case", IN("http/1.1 200 OK\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "not HTTP/1.x" },
	{ "two spaces", IN("HTTP/1.1  200 OK\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "three digits" },
	{ "two digits", IN("HTTP/1.1 20 OK\r\n\r\n"), PROTO_ERROR, 0, NULL, 0, "three digits" },
	{ "four digits", IN("HTTP/1.1 2000 OK\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "followed by a space" },
	{ "status 099", IN("HTTP/1.1 099 Low\r\n\r\n"), PROTO_ERROR, 0, NULL, 0, "out of range" },
	{ "status 600", IN("HTTP/1.1 600 High\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "out of range" },
	{ "an empty first line", IN("\r\nHTTP/1.1 200 OK\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "not HTTP/1.x" },
	{ "not HTTP at all", IN("SSH-2.0-OpenSSH_9.2\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "not HTTP/1.x" },
};

START_TEST(test_status)
{
	run_answer(&status_cases[_i]);
}
END_TEST

static const struct answer_case lineend_cases[] = {
	{ "LF line ends", IN("HTTP/1.1 200 OK\nVia: x\n\n"), PROTO_OK, 200, "HTTP/1.1 200 OK",
	  24, NULL },
	{ "mixed line ends", IN("HTTP/1.1 200 OK\r\nVia: x\n\r\n"), PROTO_OK, 200,
	  "HTTP/1.1 200 OK", 26, NULL },
	{ "a bare CR in a header", IN("HTTP/1.1 200 OK\r\nVia: a\rb\r\n\r\n"), PROTO_ERROR, 0,
	  NULL, 0, "bare CR" },
	{ "a bare CR in the status line", IN("HTTP/1.1 200 O\rK\r\n\r\n"), PROTO_ERROR, 0, NULL,
	  0, "bare CR" },
	{ "a NUL in a header", IN("HTTP/1.1 200 OK\r\nVia: a\0b\r\n\r\n"), PROTO_ERROR, 0,
	  NULL, 0, "control byte" },
	{ "DEL in a header", IN("HTTP/1.1 200 OK\r\nVia: a\x7f\r\n\r\n"), PROTO_ERROR, 0,
	  NULL, 0, "control byte" },
	{ "ESC in the reason", IN("HTTP/1.1 200 \x1b[31mOK\r\n\r\n"), PROTO_ERROR, 0, NULL, 0,
	  "control byte" },
	{ "HTAB is allowed", IN("HTTP/1.1 200 OK\r\nVia:\tx\r\n\r\n"), PROTO_OK, 200,
	  "HTTP/1.1 200 OK", 27, NULL },
	{ "a head not ended yet", IN("HTTP/1.1 200 OK\r\nVia: x\r\n"), PROTO_NEED_MORE, 0, NULL,
	  0, NULL },
	{ "a CR last", IN("HTTP/1.1 200 OK\r\n\r"), PROTO_NEED_MORE, 0, NULL, 0, NULL },
};

START_TEST(test_lineends)
{
	run_answer(&lineend_cases[_i]);
}
END_TEST

/* What follows the blank line is the tunnel's: head_len stops there, whatever it is. */
START_TEST(test_tunnel_bytes)
{
	static const char in[] = "HTTP/1.1 200 OK\r\n\r\n\x16\x03\x01\0\r\n\r\nSSH-2.0\r\n";
	struct parent_answer a;
	const char *why;

	ck_assert_int_eq(parse(in, sizeof(in) - 1, &a, &why), PROTO_OK);
	ck_assert_uint_eq(a.head_len, 19);
	ck_assert_int_eq(a.status, 200);
}
END_TEST

/* The bound: a head must end within EGRESS_PARENT_HEAD_MAX, a longer one is refused. */
START_TEST(test_bound)
{
	size_t n = EGRESS_PARENT_HEAD_MAX + 64;
	char *b = malloc(n);
	struct parent_answer a;
	const char *why;
	size_t pre = sizeof("HTTP/1.1 200 OK\r\nX: ") - 1;

	ck_assert_ptr_nonnull(b);
	memcpy(b, "HTTP/1.1 200 OK\r\nX: ", pre);
	memset(b + pre, 'a', n - pre);
	/* The whole bound without an end: an error. */
	ck_assert_int_eq(parse(b, EGRESS_PARENT_HEAD_MAX, &a, &why), PROTO_ERROR);
	ck_assert_ptr_nonnull(strstr(why, "too large"));
	ck_assert_int_eq(parse(b, n, &a, &why), PROTO_ERROR);
	/* One byte less: it may still end. */
	ck_assert_int_eq(parse(b, EGRESS_PARENT_HEAD_MAX - 1, &a, &why), PROTO_NEED_MORE);
	/* A head that ends exactly at the bound is accepted. */
	memcpy(b + EGRESS_PARENT_HEAD_MAX - 4, "\r\n\r\n", 4);
	ck_assert_int_eq(parse(b, n, &a, &why), PROTO_OK);
	ck_assert_uint_eq(a.head_len, EGRESS_PARENT_HEAD_MAX);
	/* One byte past it is not. */
	memset(b + pre, 'a', n - pre);
	memcpy(b + EGRESS_PARENT_HEAD_MAX - 3, "\r\n\r\n", 4);
	ck_assert_int_eq(parse(b, n, &a, &why), PROTO_ERROR);
	free(b);
}
END_TEST

/* --- the request ------------------------------------------------------------------------- */

START_TEST(test_request_plain)
{
	uint8_t out[EGRESS_PARENT_REQUEST_MAX];
	static const char want[] = "CONNECT 192.0.2.7:443 HTTP/1.1\r\nHost: 192.0.2.7:443\r\n\r\n";
	size_t n = parent_connect_request("192.0.2.7:443", NULL, out, sizeof(out));

	ck_assert_uint_eq(n, sizeof(want) - 1);
	ck_assert(memcmp(out, want, n) == 0);
}
END_TEST

START_TEST(test_request_auth)
{
	uint8_t out[EGRESS_PARENT_REQUEST_MAX];
	static const char want[] = "CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443"
	    "\r\nProxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n";
	size_t n = parent_connect_request("[2001:db8::1]:443", "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
	    out, sizeof(out));

	ck_assert_uint_eq(n, sizeof(want) - 1);
	ck_assert(memcmp(out, want, n) == 0);
}
END_TEST

/* Bytes that would end a header line or start another are refused, as is no room. */
START_TEST(test_request_refused)
{
	uint8_t out[EGRESS_PARENT_REQUEST_MAX];
	char big[EGRESS_PARENT_AUTHORITY_MAX + 2];

	ck_assert_uint_eq(parent_connect_request("a.example:443\r\nX: y", NULL, out,
	    sizeof(out)), 0);
	ck_assert_uint_eq(parent_connect_request("a.example:443", "abc\r\nX: y", out,
	    sizeof(out)), 0);
	ck_assert_uint_eq(parent_connect_request("a b:443", NULL, out, sizeof(out)), 0);
	ck_assert_uint_eq(parent_connect_request("", NULL, out, sizeof(out)), 0);
	ck_assert_uint_eq(parent_connect_request("a.example:443", "", out, sizeof(out)), 0);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_uint_eq(parent_connect_request(big, NULL, out, sizeof(out)), 0);
	ck_assert_uint_eq(parent_connect_request("a.example:443", NULL, out, 20), 0);
}
END_TEST

/* --- base64 ------------------------------------------------------------------------------ */

static const struct {
	const char *in, *out;
} b64_cases[] = {
	{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" }, { "foob", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	{ "Aladdin:open sesame", "QWxhZGRpbjpvcGVuIHNlc2FtZQ==" },   /* RFC 7617 s2 */
	{ "\xff\xfe\xfd", "//79" },
};

START_TEST(test_base64)
{
	char out[64];
	size_t n = parent_base64((const uint8_t *)b64_cases[_i].in, strlen(b64_cases[_i].in),
	    out, sizeof(out));

	ck_assert_uint_eq(n, strlen(b64_cases[_i].out));
	ck_assert_str_eq(out, b64_cases[_i].out);
}
END_TEST

START_TEST(test_base64_room)
{
	char out[9];

	ck_assert_uint_eq(parent_base64((const uint8_t *)"foobar", 6, out, sizeof(out)), 8);
	ck_assert_uint_eq(parent_base64((const uint8_t *)"foobar", 6, out, 8), 0);
}
END_TEST

static Suite *
parent_suite(void)
{
	Suite *s = suite_create("parent");
	TCase *tc;

#define LOOP(name, fn, cases) do { \
		tc = tcase_create(name); \
		tcase_add_loop_test(tc, fn, 0, NELEM(cases)); \
		suite_add_tcase(s, tc); \
	} while (0)
#define ONE(name, fn) do { \
		tc = tcase_create(name); \
		tcase_add_test(tc, fn); \
		suite_add_tcase(s, tc); \
	} while (0)
	LOOP("answer status line", test_status, status_cases);
	LOOP("answer line ends and bytes", test_lineends, lineend_cases);
	ONE("answer: what follows is the tunnel's", test_tunnel_bytes);
	ONE("answer bound", test_bound);
	ONE("request without auth", test_request_plain);
	ONE("request with Basic auth", test_request_auth);
	ONE("request refused", test_request_refused);
	LOOP("base64 vectors", test_base64, b64_cases);
	ONE("base64 room", test_base64_room);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(parent_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
