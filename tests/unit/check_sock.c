/*
 * check_sock.c: unit tests for the socket helpers every program shares (common/sock.c):
 * HOST:PORT splitting (the last ':' separates, "[V6]" loses its brackets), IP literals
 * (strict: what inet_pton takes, nothing else), AF_UNIX addresses (a path that does not
 * fit is refused, never cut) and connecting to one, and the monotonic clock.
 */
#include "config.h"

#include <check.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sock.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct split_case {
	const char *in;
	int want;
	const char *host, *port;
	bool bracketed;
};

static const struct split_case split_cases[] = {
	{ "127.0.0.1:8080", 0, "127.0.0.1", "8080", false },
	{ "[::1]:9464", 0, "::1", "9464", true },
	{ "::1:80", 0, "::1", "80", false },            /* the last ':' separates */
	{ "host.test:", 0, "host.test", "", false },    /* an empty port: the caller refuses */
	{ ":443", 0, "", "443", false },
	{ "[]:1", 0, "", "1", true },
	{ "[:1", 0, "[", "1", false },                  /* unbalanced: kept as written */
	{ "]:1", 0, "]", "1", false },
	{ "no-port", -1, NULL, NULL, false },
	{ "", -1, NULL, NULL, false },
};

START_TEST(test_split)
{
	const struct split_case *t = &split_cases[_i];
	struct egress_hostport hp;
	int r = egress_hostport_split(t->in, strlen(t->in), &hp);

	ck_assert_msg(r == t->want, "%s: %d", t->in, r);
	if (r == -1)
		return;
	ck_assert_msg(hp.hostlen == strlen(t->host) && memcmp(hp.host, t->host, hp.hostlen) == 0,
	    "%s: host %.*s", t->in, (int)hp.hostlen, hp.host);
	ck_assert_msg(hp.portlen == strlen(t->port) && memcmp(hp.port, t->port, hp.portlen) == 0,
	    "%s: port %.*s", t->in, (int)hp.portlen, hp.port);
	ck_assert_int_eq(hp.bracketed, t->bracketed);
}
END_TEST

/* The split reads len bytes, not up to a NUL: a field in a longer line. */
START_TEST(test_split_bounded)
{
	static const char line[] = "127.0.0.1:80 trailing:99";
	struct egress_hostport hp;

	ck_assert_int_eq(egress_hostport_split(line, 12, &hp), 0);
	ck_assert_uint_eq(hp.portlen, 2);
	ck_assert(memcmp(hp.port, "80", 2) == 0);
	ck_assert_int_eq(egress_hostport_split(line, 9, &hp), -1);
}
END_TEST

struct ip_case {
	const char *in;
	int family;                  /* 0: refused */
};

static const struct ip_case ip_cases[] = {
	{ "127.0.0.1", AF_INET },
	{ "0.0.0.0", AF_INET },
	{ "255.255.255.255", AF_INET },
	{ "::1", AF_INET6 },
	{ "::ffff:127.0.0.1", AF_INET6 },
	{ "2001:DB8::1", AF_INET6 },
	{ "127.000.0.1", 0 },        /* leading zeros */
	{ "127.1", 0 },
	{ "256.0.0.1", 0 },
	{ "[::1]", 0 },              /* brackets are the split's */
	{ "fe80::1%lo", 0 },         /* no zone */
	{ "1::2::3", 0 },
	{ " 127.0.0.1", 0 },
	{ "localhost", 0 },
	{ "", 0 },
	{ "1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc:dddd", 0 }, /* 64 */
};

START_TEST(test_ip)
{
	const struct ip_case *t = &ip_cases[_i];
	uint8_t b[16], want[16] = { 0 };
	int family = -1;
	int r = egress_ip_parse(t->in, strlen(t->in), &family, b);

	ck_assert_msg(r == (t->family ? 0 : -1), "%s: %d", t->in, r);
	ck_assert_int_eq(family, t->family);
	if (t->family)
		ck_assert_int_eq(inet_pton(t->family, t->in, want), 1);
	ck_assert_msg(memcmp(b, want, 16) == 0, "%s: bytes", t->in);
}
END_TEST

START_TEST(test_unix_addr)
{
	struct sockaddr_un sun;
	char longpath[sizeof(sun.sun_path) + 1];

	ck_assert_int_eq(egress_sock_unix_addr(&sun, "/run/egress/x.sock"), 0);
	ck_assert_int_eq(sun.sun_family, AF_UNIX);
	ck_assert_str_eq(sun.sun_path, "/run/egress/x.sock");
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	errno = 0;
	ck_assert_int_eq(egress_sock_unix_addr(&sun, longpath), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	longpath[sizeof(sun.sun_path) - 1] = '\0';          /* 107 bytes and the NUL fit */
	ck_assert_int_eq(egress_sock_unix_addr(&sun, longpath), 0);
}
END_TEST

/* A real listener in a fresh directory: connect reaches it, a missing one is ENOENT. */
START_TEST(test_unix_connect)
{
	char dir[] = "/tmp/check_sock.XXXXXX", path[64], gone[80];
	struct sockaddr_un sun;
	int lfd, fd, afd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	snprintf(gone, sizeof(gone), "%s/none", dir);
	ck_assert_int_eq(egress_sock_unix_addr(&sun, path), 0);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	fd = egress_sock_unix_connect(path);
	ck_assert_int_ge(fd, 0);
	afd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(afd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	{
		char c = 0;

		ck_assert_int_eq(read(afd, &c, 1), 1);
		ck_assert_int_eq(c, 'x');
	}
	errno = 0;
	ck_assert_int_eq(egress_sock_unix_connect(gone), -1);
	ck_assert_int_eq(errno, ENOENT);
	close(afd);
	close(fd);
	close(lfd);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_mono)
{
	int64_t a = egress_mono_ms(), b;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	b = egress_mono_ms();
	ck_assert_int_ge(b - a, 19);
	ck_assert_int_lt(b - a, 10000);
}
END_TEST

static Suite *
sock_suite(void)
{
	Suite *s = suite_create("sock");
	TCase *tc;

	tc = tcase_create("host:port: split at the last colon, brackets");
	tcase_add_loop_test(tc, test_split, 0, NELEM(split_cases));
	suite_add_tcase(s, tc);
	tc = tcase_create("host:port: reads only len bytes");
	tcase_add_test(tc, test_split_bounded);
	suite_add_tcase(s, tc);
	tc = tcase_create("IP literals: strict");
	tcase_add_loop_test(tc, test_ip, 0, NELEM(ip_cases));
	suite_add_tcase(s, tc);
	tc = tcase_create("AF_UNIX address: a path too long is refused");
	tcase_add_test(tc, test_unix_addr);
	suite_add_tcase(s, tc);
	tc = tcase_create("AF_UNIX connect");
	tcase_add_test(tc, test_unix_connect);
	suite_add_tcase(s, tc);
	tc = tcase_create("monotonic milliseconds");
	tcase_add_test(tc, test_mono);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sock_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
