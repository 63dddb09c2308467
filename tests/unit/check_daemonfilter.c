/*
 * check_daemonfilter.c: the seccomp filter egress-run puts on its private egressd
 * (sandbox_daemon_filter_export). Each case forks; the child exports the filter, loads it
 * as bwrap would (no_new_privs, SECCOMP_SET_MODE_FILTER), makes one call and reports
 * errno: allowed families and calls work, the rest fail with the SPEC's errno. Table-driven.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sandbox.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

enum call {
	C_SOCKET_UNIX, C_SOCKET_INET, C_SOCKET_INET6, C_SOCKET_NETLINK, C_SOCKET_PACKET,
	C_SOCKET_VSOCK, C_UNSHARE_USER, C_MOUNT, C_PTRACE, C_BPF, C_KEYCTL, C_SETHOSTNAME,
	C_FORK, C_OPEN, C_CLONE3, C_TIOCSTI,
};

static const struct {
	enum call call;
	const char *what;
	int want;               /* 0: the call succeeds; else its errno */
} cases[] = {
	{ C_SOCKET_UNIX, "socket(AF_UNIX) is allowed", 0 },
	{ C_SOCKET_INET, "socket(AF_INET) is allowed", 0 },
	{ C_SOCKET_INET6, "socket(AF_INET6) is allowed", 0 },
	{ C_SOCKET_NETLINK, "socket(AF_NETLINK): EAFNOSUPPORT", EAFNOSUPPORT },
	{ C_SOCKET_PACKET, "socket(AF_PACKET): EAFNOSUPPORT", EAFNOSUPPORT },
	{ C_SOCKET_VSOCK, "socket(AF_VSOCK): EAFNOSUPPORT", EAFNOSUPPORT },
	{ C_UNSHARE_USER, "unshare(CLONE_NEWUSER): EPERM", EPERM },
	{ C_MOUNT, "mount: EPERM", EPERM },
	{ C_PTRACE, "ptrace: EPERM", EPERM },
	{ C_BPF, "bpf: EPERM", EPERM },
	{ C_KEYCTL, "keyctl: EPERM", EPERM },
	{ C_SETHOSTNAME, "sethostname: EPERM", EPERM },
	{ C_FORK, "fork (clone without namespace flags) is allowed", 0 },
	{ C_OPEN, "open is allowed", 0 },
	{ C_CLONE3, "clone3: ENOSYS (libc falls back to clone)", ENOSYS },
	{ C_TIOCSTI, "ioctl(TIOCSTI): EPERM", EPERM },
};

static int
load_exported(void)
{
	struct sock_filter insns[4096];
	struct sock_fprog prog;
	int fd = memfd_create("filter", MFD_CLOEXEC);
	ssize_t n;

	if (fd == -1 || sandbox_daemon_filter_export(fd) == -1 || lseek(fd, 0, SEEK_SET) == -1)
		return -1;
	n = read(fd, insns, sizeof(insns));
	close(fd);
	if (n <= 0 || n % (ssize_t)sizeof(insns[0]) != 0)
		return -1;
	prog.len = (unsigned short)(n / (ssize_t)sizeof(insns[0]));
	prog.filter = insns;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* 0 when the call worked, else its errno. */
static int
make_call(enum call c)
{
	int r = -1, fd;

	errno = 0;
	switch (c) {
	case C_SOCKET_UNIX:
		r = socket(AF_UNIX, SOCK_STREAM, 0);
		break;
	case C_SOCKET_INET:
		r = socket(AF_INET, SOCK_STREAM, 0);
		break;
	case C_SOCKET_INET6:
		r = socket(AF_INET6, SOCK_STREAM, 0);
		if (r == -1 && errno == EAFNOSUPPORT)
			return 0;       /* a kernel without IPv6 says so itself: not the filter */
		break;
	case C_SOCKET_NETLINK:
		r = socket(AF_NETLINK, SOCK_RAW, 0);
		break;
	case C_SOCKET_PACKET:
		r = socket(AF_PACKET, SOCK_RAW, 0);
		break;
	case C_SOCKET_VSOCK:
		r = socket(AF_VSOCK, SOCK_STREAM, 0);
		break;
	case C_UNSHARE_USER:
		r = unshare(CLONE_NEWUSER);
		break;
	case C_MOUNT:
		/* Harmless if the filter let it through: no such mount point. */
		r = mount("none", "/nonexistent/egress-check", "tmpfs", 0, NULL);
		break;
	case C_PTRACE:
		r = (int)syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
		break;
	case C_BPF:
		r = (int)syscall(SYS_bpf, 0, NULL, 0);
		break;
	case C_KEYCTL:
		r = (int)syscall(SYS_keyctl, 0, 0, 0, 0, 0);
		break;
	case C_SETHOSTNAME:
		/* Too long: even let through, it would change nothing (EINVAL). */
		r = sethostname("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 66);
		break;
	case C_FORK: {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
		r = p > 0 ? 0 : -1;
		break;
	}
	case C_OPEN:
		r = open("/dev/null", O_RDONLY | O_CLOEXEC);
		break;
	case C_CLONE3:
		r = (int)syscall(SYS_clone3, NULL, 0);
		break;
	case C_TIOCSTI:
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		r = ioctl(fd, TIOCSTI, "x");
		if (r == -1 && errno == ENOTTY)
			r = 0;  /* reached the driver: the filter let it through */
		break;
	}
	return r >= 0 ? 0 : errno;
}

START_TEST(test_daemon_filter)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		if (load_exported() != 0)
			_exit(255);
		_exit(make_call(cases[_i].call) & 0xff);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "%s: the child was killed (signal %d)", cases[_i].what,
	    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_msg(WEXITSTATUS(status) != 255, "%s: the filter could not be exported or loaded",
	    cases[_i].what);
	ck_assert_msg(WEXITSTATUS(status) == cases[_i].want, "%s: got %s", cases[_i].what,
	    WEXITSTATUS(status) == 0 ? "success" : strerror(WEXITSTATUS(status)));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("daemonfilter");
	TCase *tc = tcase_create("calls");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_daemon_filter, 0, (int)NELEM(cases));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
