/*
 * check_fd4.c: the fd-4 channel's framing. libegress (egress_fd4_connect) against a fake
 * broker thread on a socketpair: allowed gives a usable stream, refusals their codes and
 * errno, silence a timeout, bad arguments malformed-request, a foreign id is ignored.
 * And egress-broker's datagram validation (fd4_parse_request), table-driven, and EGF1's
 * other direction (libegress's fd4_request_build, the broker's replies) round trip.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "egress.h"
#include "fd4.h"
#include "fdpass.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

enum fake_mode {
	FAKE_ALLOW,             /* code 0 and a stream */
	FAKE_REFUSE,            /* the code in fake.code */
	FAKE_SILENT,            /* keeps the reply socket, never answers */
	FAKE_STRAY_FIRST,       /* a reply with a wrong id (and a stream), then fake.code */
	FAKE_NO_STREAM,         /* code 0 without a descriptor */
	FAKE_GARBAGE,           /* a short datagram, then fake.code */
};

struct fake {
	int chan;               /* broker's end */
	enum fake_mode mode;
	int code;
	int peer;               /* ALLOW: the test's end of the stream handed out */
	int held;               /* SILENT: the reply socket kept */
	struct fd4_request req; /* what arrived */
	int parsed;             /* fd4_parse_request's answer */
	int nfds;
};

static void
send_reply(int reply, uint32_t id, int code, int fd)
{
	uint8_t out[EGRESS_FD4_REPLY];

	fd4_reply(id, (int32_t)code, out);
	ck_assert_int_eq((int)egress_fdpass_send(reply, out, sizeof(out), fd, 1000), (int)sizeof(out));
}

static void *
fake_broker(void *arg)
{
	struct fake *f = arg;
	uint8_t buf[EGRESS_FD4_REQUEST_MAX + 1];
	int reply, trunc, sp[2];
	ssize_t n;

	n = egress_fdpass_recv(f->chan, buf, sizeof(buf), &reply, &f->nfds, &trunc, 0);
	if (n < 0 || reply < 0)
		return NULL;
	f->parsed = fd4_parse_request(buf, (size_t)n, &f->req);
	switch (f->mode) {
	case FAKE_ALLOW:
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
		send_reply(reply, f->req.id, 0, sp[0]);
		close(sp[0]);
		f->peer = sp[1];
		break;
	case FAKE_REFUSE:
		send_reply(reply, f->req.id, f->code, -1);
		break;
	case FAKE_SILENT:
		f->held = reply;
		return NULL;
	case FAKE_STRAY_FIRST:
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
		send_reply(reply, f->req.id + 1, 0, sp[0]);
		close(sp[0]);
		f->peer = sp[1];
		send_reply(reply, f->req.id, f->code, -1);
		break;
	case FAKE_NO_STREAM:
		send_reply(reply, f->req.id, 0, -1);
		break;
	case FAKE_GARBAGE:
		ck_assert_int_eq((int)egress_fdpass_send(reply, "EGF1", 4, -1, 1000), 4);
		send_reply(reply, f->req.id, f->code, -1);
		break;
	}
	close(reply);
	return NULL;
}

/* Runs one egress_fd4_connect against a fake broker in mode; returns its result. */
static int
run_fake(struct fake *f, enum fake_mode mode, int code, const char *host, uint16_t port,
    int timeout_ms, int *err)
{
	pthread_t t;
	int sv[2], r;

	memset(f, 0, sizeof(*f));
	f->peer = f->held = -1;
	f->mode = mode;
	f->code = code;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	f->chan = sv[1];
	ck_assert_int_eq(pthread_create(&t, NULL, fake_broker, f), 0);
	errno = 0;
	r = egress_fd4_connect(sv[0], host, port, timeout_ms);
	*err = errno;
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
	return r;
}

START_TEST(test_allowed)
{
	struct fake f;
	char buf[16];
	int s, err;

	s = run_fake(&f, FAKE_ALLOW, 0, "example.org", 443, 2000, &err);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(f.parsed, 0);
	ck_assert_int_eq(f.nfds, 1);
	ck_assert_str_eq(f.req.host, "example.org");
	ck_assert_uint_eq(f.req.port, 443);
	ck_assert_uint_eq(f.req.timeout_ms, 2000);
	ck_assert_int_ne(fcntl(s, F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_int_eq((int)write(s, "ping", 4), 4);
	ck_assert_int_eq((int)read(f.peer, buf, sizeof(buf)), 4);
	ck_assert(memcmp(buf, "ping", 4) == 0);
	ck_assert_int_eq((int)write(f.peer, "pong", 4), 4);
	ck_assert_int_eq((int)read(s, buf, sizeof(buf)), 4);
	ck_assert(memcmp(buf, "pong", 4) == 0);
	close(s);
	close(f.peer);
}
END_TEST

START_TEST(test_ids_advance)
{
	struct fake f;
	uint32_t first;
	int s, err;

	s = run_fake(&f, FAKE_REFUSE, EGRESS_ERR_NOT_ALLOWLISTED, "a.example", 1, 1000, &err);
	ck_assert_int_eq(s, EGRESS_ERR_NOT_ALLOWLISTED);
	first = f.req.id;
	s = run_fake(&f, FAKE_REFUSE, EGRESS_ERR_NOT_ALLOWLISTED, "a.example", 1, 1000, &err);
	ck_assert_uint_ne(f.req.id, first);
}
END_TEST

static const int refusals[] = {
	EGRESS_ERR_NOT_ALLOWLISTED, EGRESS_ERR_DENIED_BY_RULE, EGRESS_ERR_PRIVATE_ADDRESS,
	EGRESS_ERR_DNS_FAILURE, EGRESS_ERR_CONNECT_REFUSED, EGRESS_ERR_SHUTDOWN,
};

START_TEST(test_refused)
{
	struct fake f;
	int s, err;

	s = run_fake(&f, FAKE_REFUSE, refusals[_i], "denied.example", 22, 1000, &err);
	ck_assert_int_eq(s, refusals[_i]);
	ck_assert_int_eq(err, ECONNREFUSED);
}
END_TEST

START_TEST(test_timeout)
{
	struct fake f;
	int s, err;

	s = run_fake(&f, FAKE_SILENT, 0, "slow.example", 80, 200, &err);
	ck_assert_int_eq(s, EGRESS_ERR_HANDSHAKE_TIMEOUT);
	ck_assert_int_eq(err, ETIMEDOUT);
	close(f.held);
}
END_TEST

START_TEST(test_stray_ignored)
{
	struct fake f;
	int s, err;

	s = run_fake(&f, FAKE_STRAY_FIRST, EGRESS_ERR_DENIED_BY_RULE, "x.example", 80, 1000, &err);
	ck_assert_int_eq(s, EGRESS_ERR_DENIED_BY_RULE);
	/* the stray stream was closed by libegress: its peer sees EOF */
	{
		char c;
		ck_assert_int_eq((int)read(f.peer, &c, 1), 0);
	}
	close(f.peer);
	s = run_fake(&f, FAKE_GARBAGE, EGRESS_ERR_BAD_HOST, "x.example", 80, 1000, &err);
	ck_assert_int_eq(s, EGRESS_ERR_BAD_HOST);
}
END_TEST

START_TEST(test_no_stream)
{
	struct fake f;
	int s, err;

	s = run_fake(&f, FAKE_NO_STREAM, 0, "x.example", 80, 1000, &err);
	ck_assert_int_eq(s, EGRESS_ERR_SHUTDOWN);
	ck_assert_int_eq(err, EPROTO);
}
END_TEST

START_TEST(test_bad_args)
{
	char longhost[300];
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	memset(longhost, 'a', 256);
	longhost[256] = '\0';
	errno = 0;
	ck_assert_int_eq(egress_fd4_connect(sv[0], "", 80, 100), EGRESS_ERR_MALFORMED_REQUEST);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(egress_fd4_connect(sv[0], longhost, 80, 100),
	    EGRESS_ERR_MALFORMED_REQUEST);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(egress_fd4_connect(sv[0], NULL, 80, 100), EGRESS_ERR_MALFORMED_REQUEST);
	ck_assert_int_eq(egress_fd4_connect(sv[0], "a.example", 0, 100),
	    EGRESS_ERR_MALFORMED_REQUEST);
	ck_assert_int_eq(egress_fd4_connect(-1, "a.example", 80, 100),
	    EGRESS_ERR_MALFORMED_REQUEST);
	/* nothing was sent for any of them */
	{
		char c;
		ck_assert_int_eq((int)recv(sv[1], &c, 1, MSG_DONTWAIT), -1);
		ck_assert_int_eq(errno, EAGAIN);
	}
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_broken_channel)
{
	int sv[2], p[2];

	/* the broker's end is gone: the seqpacket send fails with EPIPE (never SIGPIPE) */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	close(sv[1]);
	errno = 0;
	ck_assert_int_eq(egress_fd4_connect(sv[0], "a.example", 80, 200), EGRESS_ERR_SHUTDOWN);
	ck_assert_int_eq(errno, EPIPE);
	close(sv[0]);
	/* not a socket */
	ck_assert_int_eq(pipe(p), 0);
	errno = 0;
	ck_assert_int_eq(egress_fd4_connect(p[1], "a.example", 80, 200), EGRESS_ERR_SHUTDOWN);
	ck_assert_int_eq(errno, ENOTSOCK);
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(test_strerror)
{
	ck_assert_str_eq(egress_strerror(EGRESS_ERR_NOT_ALLOWLISTED), "not-allowlisted");
	ck_assert_str_eq(egress_strerror(EGRESS_ERR_MALFORMED_REQUEST), "malformed-request");
	ck_assert_str_eq(egress_strerror(EGRESS_ERR_HANDSHAKE_TIMEOUT), "handshake-timeout");
	ck_assert_str_eq(egress_strerror(EGRESS_ERR_SHUTDOWN), "shutdown");
	ck_assert_str_eq(egress_strerror(-1000), "unknown");
	ck_assert_str_eq(egress_strerror(-1023), "unknown");
	ck_assert_str_eq(egress_strerror(5), "unknown");
	/* every code names common.h's reason of the same row */
	for (int r = 1; r < EGRESS_REASON_COUNT; r++)
		ck_assert_str_eq(egress_strerror(-(1000 + r)),
		    egress_reason_name((enum egress_reason)r));
	ck_assert_int_eq(EGRESS_ERR_SHUTDOWN, -(1000 + EGRESS_SHUTDOWN));
	ck_assert_int_eq(EGRESS_ERR_UNSUPPORTED, -(1000 + EGRESS_UNSUPPORTED));
}
END_TEST

/* common/reason.c's code mapping, both ways: every reason round-trips, nothing else maps. */
static const int32_t not_codes[] = { -1000, 1, 1001, -1023, -999, INT32_MIN, INT32_MAX };

START_TEST(test_reason_code_roundtrip)
{
	for (int r = 0; r < EGRESS_REASON_COUNT; r++) {
		int32_t code = egress_reason_code((enum egress_reason)r);

		ck_assert_int_eq(code, r == 0 ? 0 : -(1000 + r));
		ck_assert_int_eq(egress_reason_of_code(code), r);
	}
	ck_assert_int_eq(egress_reason_code(EGRESS_NOT_ALLOWLISTED), EGRESS_ERR_NOT_ALLOWLISTED);
	ck_assert_int_eq(egress_reason_code(EGRESS_SHUTDOWN), EGRESS_ERR_SHUTDOWN);
}
END_TEST

START_TEST(test_reason_not_code)
{
	ck_assert_int_eq(egress_reason_of_code(not_codes[_i]), -1);
	ck_assert_str_eq(egress_strerror(not_codes[_i]), "unknown");
}
END_TEST

/* --- fd4_parse_request --------------------------------------------------------------- */

struct dgram_case {
	const char *name;
	const char *bytes;      /* escaped; len says how many */
	size_t len;
	int reason;             /* 0: accepted */
	uint32_t id;
	int has_id;
	uint16_t port;
	const char *host;
};

#define H "EGF1\x00\x00\x00\x07\x00\x00\x03\xe8"
static const struct dgram_case dgrams[] = {
	{ "valid", H "\x01\xbb\x09" "a.example", 24, 0, 7, 1, 443, "a.example" },
	{ "one-letter host", H "\x00\x16\x01" "h", 16, 0, 7, 1, 22, "h" },
	{ "empty", "", 0, EGRESS_MALFORMED_REQUEST, 0, 0, 0, NULL },
	{ "short head", H "\x01\xbb", 14, EGRESS_MALFORMED_REQUEST, 7, 1, 0, NULL },
	{ "head only", H "\x01\xbb\x00", 15, EGRESS_MALFORMED_REQUEST, 7, 1, 0, NULL },
	{ "wrong magic", "EGF2\x00\x00\x00\x07\x00\x00\x03\xe8\x01\xbb\x01" "a", 16,
	    EGRESS_MALFORMED_REQUEST, 0, 0, 0, NULL },
	{ "EGR1 magic", "EGR1\x00\x00\x00\x07\x00\x00\x03\xe8\x01\xbb\x01" "a", 16,
	    EGRESS_MALFORMED_REQUEST, 0, 0, 0, NULL },
	{ "port 0", H "\x00\x00\x01" "a", 16, EGRESS_MALFORMED_REQUEST, 7, 1, 0, NULL },
	{ "length says more", H "\x01\xbb\x05" "a.ex", 19, EGRESS_MALFORMED_REQUEST, 7, 1, 0,
	    NULL },
	{ "length says less", H "\x01\xbb\x02" "a.ex", 19, EGRESS_MALFORMED_REQUEST, 7, 1, 0,
	    NULL },
	{ "hostlen 0 with bytes", H "\x01\xbb\x00" "a", 16, EGRESS_MALFORMED_REQUEST, 7, 1, 0,
	    NULL },
	{ "NUL in host", H "\x01\xbb\x03" "a\0b", 18, EGRESS_MALFORMED_REQUEST, 7, 1, 0, NULL },
	{ "NUL at end", H "\x01\xbb\x02" "a\0", 17, EGRESS_MALFORMED_REQUEST, 7, 1, 0, NULL },
};

START_TEST(test_parse)
{
	const struct dgram_case *c = &dgrams[_i];
	struct fd4_request req;
	int r = fd4_parse_request((const uint8_t *)c->bytes, c->len, &req);

	ck_assert_msg(r == c->reason, "%s: got %d", c->name, r);
	ck_assert_int_eq(req.has_id, c->has_id);
	if (c->has_id)
		ck_assert_uint_eq(req.id, c->id);
	if (r == 0) {
		ck_assert_uint_eq(req.port, c->port);
		ck_assert_str_eq(req.host, c->host);
		ck_assert_uint_eq(req.timeout_ms, 1000);
	}
}
END_TEST

START_TEST(test_parse_bounds)
{
	uint8_t buf[EGRESS_FD4_REQUEST_MAX + 2];
	struct fd4_request req;

	memcpy(buf, H "\x01\xbb\xff", 15);
	memset(buf + 15, 'a', sizeof(buf) - 15);
	ck_assert_int_eq(fd4_parse_request(buf, EGRESS_FD4_REQUEST_MAX, &req), 0);
	ck_assert_uint_eq(strlen(req.host), 255);
	ck_assert_int_eq(fd4_parse_request(buf, EGRESS_FD4_REQUEST_MAX + 1, &req),
	    EGRESS_MALFORMED_REQUEST);
	ck_assert_int_eq(fd4_timeout_ms(0), FD4_TIMEOUT_DEFAULT_MS);
	ck_assert_int_eq(fd4_timeout_ms(5), 5);
	ck_assert_int_eq(fd4_timeout_ms(UINT32_MAX), FD4_TIMEOUT_MAX_MS);
}
END_TEST

/* --- EGF1 both ways: fd4_request_build -> fd4_parse_request, fd4_reply -> parse --- */

START_TEST(test_build_roundtrip)
{
	const struct dgram_case *c = &dgrams[_i];
	uint8_t out[EGRESS_FD4_REQUEST_MAX];
	struct fd4_request req;
	size_t len;

	if (c->reason != 0)
		return;              /* only what a request can be is built */
	len = fd4_request_build(c->id, 1000, c->port, c->host, strlen(c->host), out);
	ck_assert_uint_eq(len, c->len);
	ck_assert(memcmp(out, c->bytes, len) == 0);
	ck_assert_int_eq(fd4_parse_request(out, len, &req), 0);
	ck_assert_uint_eq(req.id, c->id);
	ck_assert_uint_eq(req.port, c->port);
	ck_assert_str_eq(req.host, c->host);
}
END_TEST

START_TEST(test_build_bounds)
{
	uint8_t out[EGRESS_FD4_REQUEST_MAX];
	char host[EGRESS_FD4_HOST_MAX + 1];
	struct fd4_request req;

	memset(host, 'h', sizeof(host));
	ck_assert_uint_eq(fd4_request_build(1, 0, 0, "a", 1, out), 0);
	ck_assert_uint_eq(fd4_request_build(1, 0, 443, "", 0, out), 0);
	ck_assert_uint_eq(fd4_request_build(1, 0, 443, host, sizeof(host), out), 0);
	ck_assert_uint_eq(fd4_request_build(0xfffffffe, 0, 443, host, EGRESS_FD4_HOST_MAX, out),
	    EGRESS_FD4_REQUEST_MAX);
	ck_assert_int_eq(fd4_parse_request(out, EGRESS_FD4_REQUEST_MAX, &req), 0);
	ck_assert_uint_eq(req.id, 0xfffffffe);
	ck_assert_uint_eq(req.timeout_ms, 0);
	ck_assert_uint_eq(req.hostlen, EGRESS_FD4_HOST_MAX);
	ck_assert_int_eq(fd4_timeout_ms(req.timeout_ms), FD4_TIMEOUT_DEFAULT_MS);
}
END_TEST

static const struct {
	uint32_t id;
	int32_t code;
} fd4_replies[] = {
	{ 1, 0 }, { 7, EGRESS_ERR_NOT_ALLOWLISTED }, { 0xffffffff, EGRESS_ERR_SHUTDOWN },
	{ 0, EGRESS_ERR_MALFORMED_REQUEST }, { 42, 5 },
};

START_TEST(test_reply_roundtrip)
{
	uint8_t out[EGRESS_FD4_REPLY];
	uint32_t id = 0;
	int32_t code = 12345;

	fd4_reply(fd4_replies[_i].id, fd4_replies[_i].code, out);
	ck_assert_int_eq(fd4_reply_parse(out, sizeof(out), &id, &code), 0);
	ck_assert_uint_eq(id, fd4_replies[_i].id);
	ck_assert_int_eq(code, fd4_replies[_i].code);
}
END_TEST

START_TEST(test_reply_refused)
{
	uint8_t out[EGRESS_FD4_REPLY + 1] = { 0 };
	uint32_t id;
	int32_t code;

	fd4_reply(3, 0, out);
	ck_assert_int_eq(fd4_reply_parse(out, EGRESS_FD4_REPLY - 1, &id, &code), -1);
	ck_assert_int_eq(fd4_reply_parse(out, EGRESS_FD4_REPLY + 1, &id, &code), -1);
	ck_assert_int_eq(fd4_reply_parse(out, 0, &id, &code), -1);
	out[0] = 'X';
	ck_assert_int_eq(fd4_reply_parse(out, EGRESS_FD4_REPLY, &id, &code), -1);
}
END_TEST

/* The installed header and proto/fd4.h spell EGF1's magic each; libegress.c asserts the
 * sizes at compile time, the bytes only a run can compare. */
START_TEST(test_magic_agrees)
{
	uint8_t out[FD4_REPLY_LEN];

	ck_assert_mem_eq(FD4_MAGIC, EGRESS_FD4_MAGIC, sizeof(EGRESS_FD4_MAGIC));
	fd4_reply(1, 0, out);
	ck_assert_mem_eq(out, EGRESS_FD4_MAGIC, 4);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fd4");
	TCase *tc;
	SRunner *sr;
	int failed;

	tc = tcase_create("allowed: the stream works, the request is framed right");
	tcase_add_test(tc, test_allowed);
	tcase_add_test(tc, test_ids_advance);
	suite_add_tcase(s, tc);
	tc = tcase_create("refusals return their code, errno ECONNREFUSED");
	tcase_add_loop_test(tc, test_refused, 0, (int)NELEM(refusals));
	suite_add_tcase(s, tc);
	tc = tcase_create("no reply in time: handshake-timeout");
	tcase_add_test(tc, test_timeout);
	suite_add_tcase(s, tc);
	tc = tcase_create("replies not for this request are ignored");
	tcase_add_test(tc, test_stray_ignored);
	tcase_add_test(tc, test_no_stream);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad arguments: malformed-request, nothing sent");
	tcase_add_test(tc, test_bad_args);
	suite_add_tcase(s, tc);
	tc = tcase_create("broken channel: shutdown");
	tcase_add_test(tc, test_broken_channel);
	suite_add_tcase(s, tc);
	tc = tcase_create("reason names");
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	tc = tcase_create("reason codes: reason to code and back, nothing else is one");
	tcase_add_test(tc, test_reason_code_roundtrip);
	tcase_add_loop_test(tc, test_reason_not_code, 0, (int)NELEM(not_codes));
	suite_add_tcase(s, tc);
	tc = tcase_create("request datagram validation");
	tcase_add_loop_test(tc, test_parse, 0, (int)NELEM(dgrams));
	tcase_add_test(tc, test_parse_bounds);
	suite_add_tcase(s, tc);
	tc = tcase_create("EGF1 both ways: built requests parse back, replies decode");
	tcase_add_loop_test(tc, test_build_roundtrip, 0, (int)NELEM(dgrams));
	tcase_add_test(tc, test_build_bounds);
	tcase_add_loop_test(tc, test_reply_roundtrip, 0, (int)NELEM(fd4_replies));
	tcase_add_test(tc, test_reply_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("proto/fd4.h and egress.h name one magic");
	tcase_add_test(tc, test_magic_agrees);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
