/*
 * check_log.c: unit tests for the one log API (common/log.c): the "prog: " output of the
 * command-line programs and the logfmt output of egressd, with and without
 * strerror(errno), the _f forms' function name, debug lines only when asked for, and
 * fatal's exit status, batching (log_batch). Each case captures stderr in a temporary file.
 */
#include "config.h"

#include <check.h>

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Points stderr at a fresh temporary file; returns it for log_read(). */
static FILE *
log_capture(void)
{
	FILE *f = tmpfile();

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ne(dup2(fileno(f), STDERR_FILENO), -1);
	return f;
}

static const char *
log_read(FILE *f)
{
	static char buf[4096];
	size_t n;

	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

enum log_call { CALL_WARN, CALL_WARNX, CALL_WARN_F, CALL_WARNX_F, CALL_INFO, CALL_DEBUG,
	CALL_ERROR_ERRNO };

struct log_case {
	enum log_output out;
	bool debug;
	enum log_call call;
	const char *want;       /* the whole output (prefix); a regex of it (logfmt) */
};

static const struct log_case log_cases[] = {
	{ LOG_OUT_PREFIX, false, CALL_WARN, "egress-test: open x: No such file or directory\n" },
	{ LOG_OUT_PREFIX, false, CALL_WARNX, "egress-test: open x\n" },
	{ LOG_OUT_PREFIX, false, CALL_WARN_F, "egress-test: log_call: open x: "
	    "No such file or directory\n" },
	{ LOG_OUT_PREFIX, false, CALL_WARNX_F, "egress-test: log_call: open x\n" },
	{ LOG_OUT_PREFIX, false, CALL_INFO, "egress-test: open x\n" },
	{ LOG_OUT_PREFIX, false, CALL_DEBUG, "" },
	{ LOG_OUT_PREFIX, true, CALL_DEBUG, "egress-test: open x\n" },
	{ LOG_OUT_LOGFMT, false, CALL_WARN, "^time=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z "
	    "level=warn open x error=No such file or directory\n$" },
	{ LOG_OUT_LOGFMT, false, CALL_WARNX, "^time=[^ ]+Z level=warn open x\n$" },
	{ LOG_OUT_LOGFMT, false, CALL_WARN_F, "^time=[^ ]+Z level=warn func=log_call open x "
	    "error=No such file or directory\n$" },
	{ LOG_OUT_LOGFMT, false, CALL_WARNX_F, "^time=[^ ]+Z level=warn func=log_call open x\n$" },
	{ LOG_OUT_LOGFMT, false, CALL_INFO, "^time=[^ ]+Z level=info open x\n$" },
	{ LOG_OUT_LOGFMT, false, CALL_DEBUG, "^$" },
	{ LOG_OUT_LOGFMT, true, CALL_DEBUG, "^time=[^ ]+Z level=debug open x\n$" },
	{ LOG_OUT_LOGFMT, false, CALL_ERROR_ERRNO, "^time=[^ ]+Z level=error open x "
	    "error=No such file or directory\n$" },
	{ LOG_OUT_PREFIX, false, CALL_ERROR_ERRNO, "egress-test: open x: "
	    "No such file or directory\n" },
};

static void
log_call(enum log_call call)
{
	errno = ENOENT;
	switch (call) {
	case CALL_WARN: log_warn("open %s", "x"); break;
	case CALL_WARNX: log_warnx("open %s", "x"); break;
	case CALL_WARN_F: log_warn_f("open %s", "x"); break;
	case CALL_WARNX_F: log_warnx_f("open %s", "x"); break;
	case CALL_INFO: log_info("open %s", "x"); break;
	case CALL_DEBUG: log_debug("open %s", "x"); break;
	case CALL_ERROR_ERRNO: log_error_errno("open %s", "x"); break;
	}
}

START_TEST(test_output)
{
	const struct log_case *c = &log_cases[_i];
	FILE *f = log_capture();
	const char *got;

	log_init("egress-test", c->out, false, c->debug);
	log_call(c->call);
	got = log_read(f);
	if (c->out == LOG_OUT_PREFIX)
		ck_assert_str_eq(got, c->want);
	else {
		regex_t re;

		ck_assert_int_eq(regcomp(&re, c->want, REG_EXTENDED | REG_NOSUB), 0);
		ck_assert_msg(regexec(&re, got, 0, NULL, 0) == 0, "case %d: '%s' !~ '%s'", _i,
		    got, c->want);
		regfree(&re);
	}
}
END_TEST

/* fatal logs (errno first, as the caller saw it) and exits with the status it is given. */
START_TEST(test_fatal)
{
	FILE *f = log_capture();
	int st;
	pid_t pid;

	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		log_init("egress-test", LOG_OUT_PREFIX, false, false);
		errno = EACCES;
		if (_i == 0)
			log_fatal(3, "listen %s", "127.0.0.1:1");
		log_fatalx_f(4, "bad %d", 7);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	if (_i == 0) {
		ck_assert_int_eq(WEXITSTATUS(st), 3);
		ck_assert_str_eq(log_read(f), "egress-test: listen 127.0.0.1:1: Permission denied\n");
	} else {
		ck_assert_int_eq(WEXITSTATUS(st), 4);
		ck_assert_str_eq(log_read(f), "egress-test: test_fatal_fn: bad 7\n");
	}
}
END_TEST

/* Start-up diagnostics at a place in a file: the place first, whatever the output. */
static const struct {
	enum log_output out;
	unsigned line;
	size_t col;
	const char *want;
} at_cases[] = {
	{ LOG_OUT_PREFIX, 7, 10, "/etc/e.conf:7:10: expected x\n" },
	{ LOG_OUT_PREFIX, 7, 0, "/etc/e.conf:7: expected x\n" },
	{ LOG_OUT_PREFIX, 0, 0, "/etc/e.conf: expected x\n" },
	{ LOG_OUT_PREFIX, 0, 3, "/etc/e.conf: expected x\n" },
	{ LOG_OUT_LOGFMT, 7, 10, "/etc/e.conf:7:10: expected x\n" },
	{ LOG_OUT_LOGFMT, 0, 0, "/etc/e.conf: expected x\n" },
};

START_TEST(test_startup_at)
{
	FILE *f = log_capture();

	log_init("egress-test", at_cases[_i].out, false, false);
	log_startupx_at("/etc/e.conf", at_cases[_i].line, at_cases[_i].col, "expected %s", "x");
	ck_assert_str_eq(log_read(f), at_cases[_i].want);
}
END_TEST

START_TEST(test_value)
{
	char buf[64];

	ck_assert_str_eq(log_value("plain", buf, sizeof(buf)), "plain");
	ck_assert_str_eq(log_value("", buf, sizeof(buf)), "\"\"");
	ck_assert_str_eq(log_value("a b\"c", buf, sizeof(buf)), "\"a b\\\"c\"");
	ck_assert_str_eq(log_value("x\ny", buf, sizeof(buf)), "\"x\\x0ay\"");
}
END_TEST

/* Lines of f in order: how many, and whether each is "time=... level=L event=eN pad..."
 * with N counting up from 0 (whole lines, none lost, none doubled). */
static int
log_lines_in_order(FILE *f, int *n)
{
	static char buf[65536];
	size_t len;
	int want = 0;
	char *p, *nl;

	rewind(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		char tag[32];
		char *ev;

		*nl = '\0';
		snprintf(tag, sizeof(tag), "event=e%d ", want);
		if (strncmp(p, "time=", 5) != 0 || (ev = strstr(p, "event=")) == NULL ||
		    strncmp(ev, tag, strlen(tag)) != 0)
			return -1;
		want++;
	}
	*n = want;
	return *p == '\0' ? 0 : -1;    /* nothing after the last newline */
}

/*
 * log_batch: info and debug lines wait for log_flush; a warning writes what waited, then
 * itself; a line that does not fit writes what waited first; log_batch(false) and exit()
 * write the rest. The order of lines is kept in every case.
 */
/* log_kv: the same line as the format it replaces, in both outputs; "-" values and all. */
START_TEST(test_kv)
{
	const struct log_kv kv[] = { { "event", "open" }, { "principal", "ci" },
		{ "host", "a.example" }, { "port", "443" }, { "why", "\"a b\"" } };
	regex_t re;
	FILE *f = log_capture();

	log_init("egress-test", LOG_OUT_PREFIX, false, false);
	log_kv(LOG_LVL_INFO, kv, NELEM(kv));
	log_kv(LOG_LVL_DEBUG, kv, 1);                   /* no debug asked for */
	ck_assert_str_eq(log_read(f), "egress-test: event=open principal=ci host=a.example "
	    "port=443 why=\"a b\"\n");
	f = log_capture();
	log_init("egress-test", LOG_OUT_LOGFMT, false, true);
	log_kv(LOG_LVL_INFO, kv, 2);
	log_kv(LOG_LVL_DEBUG, kv, 1);
	log_kv(LOG_LVL_INFO, kv, 0);
	ck_assert_int_eq(regcomp(&re, "^time=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z "
	    "level=info event=open principal=ci\n"
	    "time=[^ ]+Z level=debug event=open\n"
	    "time=[^ ]+Z level=info \n$", REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_msg(regexec(&re, log_read(f), 0, NULL, 0) == 0, "'%s'", log_read(f));
	regfree(&re);
}
END_TEST

/* The time text of lines and receipts: RFC 3339, UTC, milliseconds, within a second of now. */
START_TEST(test_utc_ms)
{
	char out[LOG_UTC_LEN], want[32];
	regex_t re;
	time_t before = time(NULL), after;
	struct tm tm;
	size_t n = log_utc_ms(out);

	after = time(NULL);
	ck_assert_uint_eq(n, strlen(out));
	ck_assert_int_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
	    "\\.[0-9]{3}Z$", REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_msg(regexec(&re, out, 0, NULL, 0) == 0, "'%s'", out);
	regfree(&re);
	gmtime_r(&before, &tm);
	strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S", &tm);
	if (strncmp(out, want, 19) != 0) {
		gmtime_r(&after, &tm);
		strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S", &tm);
		ck_assert_msg(strncmp(out, want, 19) == 0, "'%s' is not now", out);
	}
}
END_TEST

/*
 * A message is cut at 2047 bytes (its newline kept), whether it came from a format or
 * from log_kv; the error still follows a cut message.
 */
START_TEST(test_cut)
{
	static char big[3000];
	const struct log_kv kv[] = { { "k", big } };
	const char *got, *m;
	FILE *f;

	memset(big, 'x', sizeof(big) - 1);
	for (int i = 0; i < 3; i++) {
		f = log_capture();
		log_init("egress-test", LOG_OUT_LOGFMT, false, false);
		errno = ENOENT;
		if (i == 0)
			log_info("%s", big);
		else if (i == 1)
			log_kv(LOG_LVL_INFO, kv, 1);
		else
			log_warn("%s", big);
		got = log_read(f);
		m = strstr(got, "level=");
		ck_assert_ptr_nonnull(m);
		m = strchr(m, ' ') + 1;
		if (i < 2) {
			ck_assert_uint_eq(strlen(m), 2047 + 1);
			ck_assert_int_eq(m[2047], '\n');
			ck_assert_int_eq(m[i == 1 ? 2 : 0], 'x');
		} else {
			ck_assert_uint_eq(strspn(m, "x"), 2047);
			ck_assert_str_eq(m + 2047, " error=No such file or directory\n");
		}
	}
}
END_TEST

START_TEST(test_batch)
{
	FILE *f = log_capture();
	char pad[1001];
	int n = 0, st;
	pid_t pid;

	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	log_init("egress-test", LOG_OUT_LOGFMT, false, true);
	log_batch(true);
	log_info("event=e0 a");
	log_debug("event=e1 b");
	ck_assert_str_eq(log_read(f), "");              /* held */
	log_flush();
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_eq(n, 2);
	log_info("event=e2 c");
	log_warnx("event=e3 d");                        /* writes e2 first */
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_eq(n, 4);
	for (int i = 4; i < 44; i++)                    /* 40 KiB: beyond the 16 KiB held */
		log_info("event=e%d %s", i, pad);
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_gt(n, 4);
	ck_assert_int_lt(n, 44);                        /* the last ones still held */
	log_batch(false);
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_eq(n, 44);
	log_info("event=e44 not held");
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_eq(n, 45);

	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		log_batch(true);
		log_info("event=e45 written at exit");
		exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_eq(n, 46);
}
END_TEST

/*
 * log_flush_due: nothing held is -1; held lines younger than LOG_HOLD_MS stay held and
 * the answer is the milliseconds left; once they are due it writes them all, in order.
 */
START_TEST(test_flush_due)
{
	FILE *f = log_capture();
	struct timespec nap = { 0, (LOG_HOLD_MS + 20) * 1000000L };
	long ms;
	int n = 0;

	log_init("egress-test", LOG_OUT_LOGFMT, false, false);
	log_batch(true);
	ck_assert_int_eq(log_flush_due(), -1);
	log_info("event=e0 first");
	ms = log_flush_due();
	ck_assert_int_gt(ms, 0);
	ck_assert_int_le(ms, LOG_HOLD_MS);
	log_info("event=e1 second");                   /* the oldest line sets the time */
	ck_assert_int_le(log_flush_due(), ms);
	ck_assert_str_eq(log_read(f), "");              /* not due: held */
	while (nanosleep(&nap, &nap) == -1 && errno == EINTR)
		;
	ck_assert_int_eq(log_flush_due(), -1);          /* due: written */
	ck_assert_int_eq(log_lines_in_order(f, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(log_flush_due(), -1);          /* nothing left */
	log_batch(false);
}
END_TEST

static Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc;

	tc = tcase_create("outputs: prefix and logfmt, errno or not, _f");
	tcase_add_loop_test(tc, test_output, 0, NELEM(log_cases));
	suite_add_tcase(s, tc);
	tc = tcase_create("fatal: logs and exits with its status");
	tcase_add_loop_test(tc, test_fatal, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("start-up diagnostics at a file's line and column");
	tcase_add_loop_test(tc, test_startup_at, 0, NELEM(at_cases));
	suite_add_tcase(s, tc);
	tc = tcase_create("batching: held until a flush, a warning, a full buffer or exit");
	tcase_add_test(tc, test_batch);
	tcase_add_test(tc, test_flush_due);
	suite_add_tcase(s, tc);
	tc = tcase_create("logfmt values: quoted when they need it");
	tcase_add_test(tc, test_value);
	suite_add_tcase(s, tc);
	tc = tcase_create("lines made without a format (log_kv), the cut, the time");
	tcase_add_test(tc, test_kv);
	tcase_add_test(tc, test_cut);
	tcase_add_test(tc, test_utc_ms);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
