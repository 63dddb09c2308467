/*
 * check_allow.c: the allow-list seccomp filters of sandbox/allow.c. Each case forks a
 * child of its own (the filter cannot be unloaded) that installs a small list, makes its
 * calls, writes what it saw to a result pipe and exits with exit() (so that a sanitizer's
 * exit-time work runs under the filter too); the parent reads the child's wait status,
 * the result pipe and the report pipe the SIGSYS handler wrote to.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allow.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct run {
	int status;
	char result[256];       /* what the child wrote to its result pipe */
	char report[512];       /* what the handler wrote */
};

static int result_fd = -1;

/* In the child: one result word to the parent. */
static void
say(const char *s)
{
	(void)!write(result_fd, s, strlen(s));
}

static void
say_errno(long r)
{
	char b[64];

	snprintf(b, sizeof(b), "%s ", r >= 0 ? "ok" : strerrorname_np(errno));
	say(b);
}

static void
slurp(int fd, char *b, size_t cap)
{
	size_t off = 0;
	ssize_t n;

	while (off + 1 < cap && (n = read(fd, b + off, cap - 1 - off)) > 0)
		off += (size_t)n;
	b[off] = '\0';
	close(fd);
}

/* Forks; the child installs t in mode and runs body, then exit(0). */
static void
run(const struct sbx_allow *t, size_t n, enum sbx_allow_mode mode, void (*body)(void),
    struct run *out)
{
	int rp[2], ep[2];
	pid_t pid;

	ck_assert_int_eq(pipe(rp), 0);
	ck_assert_int_eq(pipe(ep), 0);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		close(rp[0]);
		close(ep[0]);
		setrlimit(RLIMIT_CORE, &none);  /* SIGSYS dumps core by default */
		result_fd = rp[1];
		if (sbx_allow_install(t, n, mode, ep[1], "check_allow") == -1)
			_exit(99);
		body();
		exit(0);
	}
	close(rp[1]);
	close(ep[1]);
	slurp(rp[0], out->result, sizeof(out->result));
	slurp(ep[0], out->report, sizeof(out->report));
	ck_assert_int_eq(waitpid(pid, &out->status, 0), pid);
}

static void
expect_exit0(const struct run *r)
{
	ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
	    "child did not exit 0 (status %#x, report \"%s\")", r->status, r->report);
}

static void
expect_sigsys(const struct run *r)
{
	ck_assert_msg(WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGSYS,
	    "child not killed by SIGSYS (status %#x)", r->status);
}

static const struct sbx_allow getpgid_only[] = { SBX_ALLOW("getpgid") };
static const struct sbx_allow nothing[] = { SBX_ALLOW("no_such_syscall") };

static void
body_getpgid(void)
{
	say_errno(syscall(SYS_getpgid, 0));
}

START_TEST(allowed_call_works)
{
	struct run r;

	run(getpgid_only, NELEM(getpgid_only), SBX_ALLOW_KILL, body_getpgid, &r);
	expect_exit0(&r);
	ck_assert_str_eq(r.result, "ok ");
	ck_assert_str_eq(r.report, "");
}
END_TEST

static void
body_getpgid_then_more(void)
{
	say("before ");
	say_errno(syscall(SYS_getpgid, 0));
	say("after ");                  /* never in KILL mode */
}

START_TEST(forbidden_call_kills_and_is_named)
{
	struct run r;
	char want[128];

	run(nothing, NELEM(nothing), SBX_ALLOW_KILL, body_getpgid_then_more, &r);
	expect_sigsys(&r);
	ck_assert_str_eq(r.result, "before ");
	snprintf(want, sizeof(want), "check_allow: seccomp syscall=getpgid nr=%d action=kill\n",
	    SYS_getpgid);
	ck_assert_str_eq(r.report, want);
}
END_TEST

static void
body_two_refused(void)
{
	say_errno(syscall(SYS_getpgid, 0));
	say_errno(syscall(SYS_getuid));
	say("after ");
}

START_TEST(log_mode_returns_enosys_and_continues)
{
	struct run r;
	char want[256];

	run(nothing, NELEM(nothing), SBX_ALLOW_LOG, body_two_refused, &r);
	expect_exit0(&r);
	ck_assert_str_eq(r.result, "ENOSYS ENOSYS after ");
	snprintf(want, sizeof(want),
	    "check_allow: seccomp syscall=getpgid nr=%d action=enosys\n"
	    "check_allow: seccomp syscall=getuid nr=%d action=enosys\n", SYS_getpgid, SYS_getuid);
	/* the report may also list calls of exit() (stdio, a sanitizer) that the list lacks */
	ck_assert_msg(strncmp(r.report, want, strlen(want)) == 0, "report \"%s\"", r.report);
}
END_TEST

static const struct sbx_allow unix_only[] = {
	SBX_ALLOW_ARG("socket", 0, AF_UNIX), SBX_ALLOW("close"),
};

static void
body_socket_unix_then_inet(void)
{
	long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);

	say_errno(fd);
	if (fd >= 0)
		close((int)fd);
	/* the kernel reads an int: garbage above it is AF_UNIX still, and so is the rule */
	fd = syscall(SYS_socket, (long)AF_UNIX | (1L << 32), SOCK_STREAM, 0);
	say_errno(fd);
	if (fd >= 0)
		close((int)fd);
	say_errno(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
}

START_TEST(socket_domain_rule)
{
	struct run r;
	char want[128];

	run(unix_only, NELEM(unix_only), SBX_ALLOW_KILL, body_socket_unix_then_inet, &r);
	expect_sigsys(&r);
	ck_assert_str_eq(r.result, "ok ok ");
	snprintf(want, sizeof(want), "check_allow: seccomp syscall=socket nr=%d action=kill\n",
	    SYS_socket);
	ck_assert_str_eq(r.report, want);
}
END_TEST

static const struct sbx_allow fcntl_some[] = {
	SBX_ALLOW_ARG("fcntl", 1, F_GETFL, F_SETFL), SBX_ALLOW_ERR("getuid", EACCES),
};

static void
body_fcntl(void)
{
	say_errno(fcntl(0, F_GETFL));
	say_errno(syscall(SYS_getuid));         /* a deny entry: EACCES, no trap */
	say_errno(fcntl(0, F_GETFD));           /* not in the set: ENOSYS (LOG) */
}

START_TEST(fcntl_command_set_and_errno_entry)
{
	struct run r;
	char want[128];

	run(fcntl_some, NELEM(fcntl_some), SBX_ALLOW_LOG, body_fcntl, &r);
	expect_exit0(&r);
	ck_assert_str_eq(r.result, "ok EACCES ENOSYS ");
	snprintf(want, sizeof(want), "check_allow: seccomp syscall=fcntl nr=%d action=enosys\n",
	    SYS_fcntl);
	ck_assert_msg(strncmp(r.report, want, strlen(want)) == 0, "report \"%s\"", r.report);
}
END_TEST

static const struct sbx_allow with_unknown[] = {
	SBX_ALLOW("no_such_syscall"), SBX_ALLOW("getpgid"), SBX_ALLOW("another_made_up_one"),
};

START_TEST(unknown_name_is_skipped)
{
	struct run r;

	run(with_unknown, NELEM(with_unknown), SBX_ALLOW_KILL, body_getpgid, &r);
	expect_exit0(&r);
	ck_assert_str_eq(r.result, "ok ");
	ck_assert_str_eq(r.report, "");
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(sbx_allow_name(SYS_getpgid), "getpgid");
	ck_assert_str_eq(sbx_allow_name(SYS_socket), "socket");
	ck_assert_ptr_null(sbx_allow_name(-1));
	ck_assert_ptr_null(sbx_allow_name(1 << 20));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("allow");
	TCase *tc;
	SRunner *sr;
	int failed;

#define ADD(name) do { tc = tcase_create(#name); tcase_add_test(tc, name); \
	suite_add_tcase(s, tc); } while (0)
	ADD(allowed_call_works);
	ADD(forbidden_call_kills_and_is_named);
	ADD(log_mode_returns_enosys_and_continues);
	ADD(socket_domain_rule);
	ADD(fcntl_command_set_and_errno_entry);
	ADD(unknown_name_is_skipped);
	ADD(names);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
