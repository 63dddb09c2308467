/*
 * check_nativecli.c: common/nativecli.c, one EGR1 connect over a stream, against the
 * test's own end of a socketpair playing egressd: the request is the EGR1 bytes for
 * host:port, an allowed reply leaves the tunnel's first byte unread, a refusal is its
 * code, and what is not an answer (a foreign reply, a code off the reasons table, an early
 * close, silence, a name EGR1 cannot carry) is shutdown, handshake-timeout or
 * malformed-request. One tcase per behaviour.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "native.h"
#include "nativecli.h"
#include "sock.h"
#include "wire.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int cli = -1, srv = -1;     /* nativecli's end, egressd's end */

static void
pair_setup(void)
{
	int sp[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	cli = sp[0];
	srv = sp[1];
}

static void
pair_teardown(void)
{
	if (cli != -1)
		close(cli);
	if (srv != -1)
		close(srv);
	cli = srv = -1;
}

/* egressd's side: written before the handshake runs (the socketpair buffers it). */
static void
srv_write(const void *buf, size_t len)
{
	ck_assert_int_eq((int)write(srv, buf, len), (int)len);
}

/* What egressd received: one EGR1 connect request for host:port, nothing more. */
static void
srv_expect_request(const char *host, uint16_t port)
{
	uint8_t buf[EGRESS_NATIVE_REQUEST_MAX + 16];
	struct native_request req;
	struct proto_error err;
	size_t consumed = 0;
	ssize_t n = recv(srv, buf, sizeof(buf), MSG_DONTWAIT);

	ck_assert_int_gt((int)n, 0);
	ck_assert_int_eq(native_parse(buf, (size_t)n, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, (size_t)n);
	ck_assert_uint_eq(req.verb, EGRESS_NATIVE_CONNECT);
	ck_assert_str_eq(req.host.name, host);
	ck_assert_uint_eq(req.port, port);
}

START_TEST(test_allowed)
{
	uint8_t rep[EGRESS_NATIVE_REPLY], tunnel = 'T', got = 0;

	native_reply(EGRESS_ALLOWED, rep);
	srv_write(rep, sizeof(rep));
	srv_write(&tunnel, 1);                   /* the tunnel's first byte, right behind */
	ck_assert_int_eq(nativecli_handshake(cli, "example.org", 443, 1000), 0);
	srv_expect_request("example.org", 443);
	ck_assert_int_eq((int)read(cli, &got, 1), 1);
	ck_assert_int_eq(got, tunnel);
}
END_TEST

static const enum egress_reason refusals[] = {
	EGRESS_NOT_ALLOWLISTED, EGRESS_DENIED_BY_RULE, EGRESS_PRIVATE_ADDRESS,
	EGRESS_CONNECT_REFUSED, EGRESS_QUOTA_RATE, EGRESS_SHUTDOWN,
};

START_TEST(test_refused)
{
	uint8_t rep[EGRESS_NATIVE_REPLY];

	native_reply(refusals[_i], rep);
	srv_write(rep, sizeof(rep));
	ck_assert_int_eq(nativecli_handshake(cli, "10.0.0.1", 80, 1000),
	    egress_reason_code(refusals[_i]));
	srv_expect_request("10.0.0.1", 80);
}
END_TEST

/* 8 bytes that are not an answer: another magic, a code that names no reason. */
static const struct {
	const char *magic;
	int32_t code;
} foreign[] = {
	{ "EGR2", 0 },
	{ "HTTP", 0 },
	{ "EGR1", -1000 },
	{ "EGR1", -(EGRESS_REASON_CODE_BASE + EGRESS_REASON_COUNT) },
	{ "EGR1", 1 },
	{ "EGR1", INT32_MIN },
};

START_TEST(test_foreign_reply)
{
	uint8_t rep[EGRESS_NATIVE_REPLY];

	memcpy(rep, foreign[_i].magic, 4);
	wire_put32(rep + 4, (uint32_t)foreign[_i].code);
	srv_write(rep, sizeof(rep));
	ck_assert_int_eq(nativecli_handshake(cli, "example.org", 443, 1000),
	    egress_reason_code(EGRESS_SHUTDOWN));
}
END_TEST

START_TEST(test_early_close)
{
	srv_write("EGR1", 4);                    /* half a reply, then gone */
	close(srv);
	srv = -1;
	ck_assert_int_eq(nativecli_handshake(cli, "example.org", 443, 1000),
	    egress_reason_code(EGRESS_SHUTDOWN));
}
END_TEST

START_TEST(test_silence)
{
	int64_t t0 = egress_mono_ms();

	ck_assert_int_eq(nativecli_handshake(cli, "example.org", 443, 150),
	    egress_reason_code(EGRESS_HANDSHAKE_TIMEOUT));
	ck_assert_int_ge((int)(egress_mono_ms() - t0), 150);
	srv_expect_request("example.org", 443);  /* the request went out all the same */
}
END_TEST

START_TEST(test_name_too_long)
{
	char name[EGRESS_NATIVE_NAME_MAX + 2];
	uint8_t buf[4];

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';           /* 256 bytes: hostlen is one byte */
	ck_assert_int_eq(nativecli_handshake(cli, name, 443, 1000),
	    egress_reason_code(EGRESS_MALFORMED_REQUEST));
	ck_assert_int_eq((int)recv(srv, buf, sizeof(buf), MSG_DONTWAIT), -1);   /* nothing sent */
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("nativecli");
	SRunner *sr;
	TCase *tc;
	int failed;

	tc = tcase_create("allowed: the request for host:port, the tunnel's bytes left unread");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_allowed);
	suite_add_tcase(s, tc);
	tc = tcase_create("a refusal is egressd's code");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_loop_test(tc, test_refused, 0, (int)NELEM(refusals));
	suite_add_tcase(s, tc);
	tc = tcase_create("a reply that is not EGR1's, or names no reason, is shutdown");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_loop_test(tc, test_foreign_reply, 0, (int)NELEM(foreign));
	suite_add_tcase(s, tc);
	tc = tcase_create("a close before the whole reply is shutdown");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_early_close);
	suite_add_tcase(s, tc);
	tc = tcase_create("no reply within the deadline is handshake-timeout");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_silence);
	suite_add_tcase(s, tc);
	tc = tcase_create("a name EGR1 cannot carry is malformed-request, nothing sent");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_name_too_long);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
