/*
 * check_priv.c: egressd's privileged helper (egress/priv.c) driven as a compromised
 * egressd would: raw requests on its channel. Each case sends one datagram and checks the
 * errno of the reply and what happened on disk; valid requests must still work after every
 * hostile one, and the helper must leave when its channel closes. Needs root (the helper
 * keeps CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER): skipped otherwise.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egressd.h"
#include "fdpass.h"
#include "priv.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char rundir[64], statedir[64], receipts[PATH_MAX];

/* One raw request of len bytes (with fd attached when >= 0); the reply's err, *outfd. */
static int
raw(const struct priv_msg *q, size_t len, int attach, int *outfd)
{
	struct priv_msg r;
	int fd, nfds, truncated;
	ssize_t n;

	ck_assert_int_eq(egress_fdpass_send(priv_channel(), q, len, attach, 1000), (ssize_t)len);
	n = egress_fdpass_recv(priv_channel(), &r, sizeof(r), &fd, &nfds, &truncated, 0);
	ck_assert_int_eq(n, (ssize_t)sizeof(r));
	if (outfd != NULL)
		*outfd = fd;
	else if (fd != -1)
		close(fd);
	return r.err;
}

static int
req(enum priv_op op, const char *name, int *outfd)
{
	struct priv_msg q;

	memset(&q, 0, sizeof(q));
	q.op = (uint32_t)op;
	snprintf(q.text, sizeof(q.text), "%s", name);
	return raw(&q, sizeof(q), -1, outfd);
}

static void
setup(void)
{
	snprintf(rundir, sizeof(rundir), "/tmp/check-priv-run.XXXXXX");
	snprintf(statedir, sizeof(statedir), "/tmp/check-priv-state.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(rundir));
	ck_assert_ptr_nonnull(mkdtemp(statedir));
	snprintf(receipts, sizeof(receipts), "%s/receipts.jsonl", statedir);
	ck_assert_int_eq(priv_start(rundir, receipts), 0);
}

static void
teardown(void)
{
	char cmd[256];

	priv_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", rundir, statedir);
	ck_assert_int_eq(system(cmd), 0);
}

static const struct {
	const char *what;
	const char *name;
	int want;
} bad_names[] = {
	{ "empty", "", EINVAL },
	{ "dot", ".", EINVAL },
	{ "dot dot", "..", EINVAL },
	{ "a parent path", "../escape.sock", EINVAL },
	{ "an absolute path", "/etc/escape.sock", EINVAL },
	{ "a sub folder", "a/b.sock", EINVAL },
	{ "longer than sun_path", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", EINVAL },
};

START_TEST(test_bad_names)
{
	struct stat st;
	char path[PATH_MAX];

	ck_assert_msg(req(PRIV_LISTEN, bad_names[_i].name, NULL) == bad_names[_i].want,
	    "LISTEN %s", bad_names[_i].what);
	ck_assert_msg(req(PRIV_UNLINK, bad_names[_i].name, NULL) == bad_names[_i].want,
	    "UNLINK %s", bad_names[_i].what);
	ck_assert_int_ne(stat("/etc/escape.sock", &st), 0);
	snprintf(path, sizeof(path), "%s/../escape.sock", rundir);
	ck_assert_int_ne(stat(path, &st), 0);
	ck_assert_int_eq(req(PRIV_LISTEN, "still.sock", NULL), 0);     /* it still serves */
}
END_TEST

START_TEST(test_bad_frames)
{
	struct priv_msg q;
	int pfd[2], fd = -1;

	memset(&q, 0, sizeof(q));
	q.op = PRIV_LISTEN;
	snprintf(q.text, sizeof(q.text), "short.sock");
	ck_assert_int_eq(raw(&q, 8, -1, NULL), EBADMSG);              /* short */
	q.op = 99;
	ck_assert_int_eq(raw(&q, sizeof(q), -1, NULL), ENOSYS);       /* unknown op */
	q.op = PRIV_LISTEN;
	memset(q.text, 'a', sizeof(q.text));                          /* no NUL */
	ck_assert_int_eq(raw(&q, sizeof(q), -1, NULL), EINVAL);
	/* A descriptor attached to a request is closed, the request served. */
	ck_assert_int_eq(pipe(pfd), 0);
	snprintf(q.text, sizeof(q.text), "withfd.sock");
	ck_assert_int_eq(raw(&q, sizeof(q), pfd[0], &fd), 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	close(pfd[0]);
	{
		/* the helper's copy is gone: the read end's last holder closed, write fails */
		char c = 'x';

		ck_assert_int_eq(write(pfd[1], &c, 1), -1);
		ck_assert_int_eq(errno, EPIPE);
	}
	close(pfd[1]);
}
END_TEST

START_TEST(test_not_sockets)
{
	char path[PATH_MAX + 32];
	struct stat st;
	int fd;

	/* A file or a symlink where a socket is asked for, or to be removed: left alone. */
	snprintf(path, sizeof(path), "%s/file.sock", rundir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(req(PRIV_LISTEN, "file.sock", NULL), EEXIST);
	ck_assert_int_eq(req(PRIV_UNLINK, "file.sock", NULL), EPERM);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	snprintf(path, sizeof(path), "%s/link.sock", rundir);
	ck_assert_int_eq(symlink("/etc/passwd", path), 0);
	ck_assert_int_eq(req(PRIV_LISTEN, "link.sock", NULL), EEXIST);
	ck_assert_int_eq(req(PRIV_UNLINK, "link.sock", NULL), EPERM);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(stat("/etc/passwd", &st), 0);
	ck_assert_int_eq(req(PRIV_LISTEN, "ok.sock", &fd), 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(req(PRIV_UNLINK, "ok.sock", NULL), 0);
	snprintf(path, sizeof(path), "%s/ok.sock", rundir);
	ck_assert_int_ne(lstat(path, &st), 0);
}
END_TEST

START_TEST(test_receipts_path)
{
	char other[PATH_MAX + 32];
	int fd = -1;

	/* A FIFO: refused at once (a blocking open would hang the helper for good). */
	ck_assert_int_eq(mkfifo(receipts, 0600), 0);
	{
		int err = req(PRIV_RECEIPTS_OPEN, "", NULL);

		/* ENXIO: no reader, refused by O_NONBLOCK; with one, EPERM (not a file) */
		ck_assert_msg(err == ENXIO || err == EPERM, "FIFO: %s", strerror(err));
	}
	unlink(receipts);
	/* A hard link to another file: refused. */
	snprintf(other, sizeof(other), "%s/other", statedir);
	fd = open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(link(other, receipts), 0);
	ck_assert_int_eq(req(PRIV_RECEIPTS_OPEN, "", NULL), EPERM);
	unlink(receipts);
	/* A symlink: refused (O_NOFOLLOW). */
	ck_assert_int_eq(symlink(other, receipts), 0);
	ck_assert_int_ne(req(PRIV_RECEIPTS_OPEN, "", NULL), 0);
	unlink(receipts);
	/* A plain file: opened for appending. */
	ck_assert_int_eq(req(PRIV_RECEIPTS_OPEN, "", &fd), 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & (O_APPEND | O_NONBLOCK), O_APPEND);
	close(fd);
}
END_TEST

START_TEST(test_receipts_folder_writable)
{
	int fd = -1;

	/* A folder egressd's user could write: no reopen, no rotation. */
	priv_stop();
	ck_assert_int_eq(chmod(statedir, 0777), 0);
	ck_assert_int_eq(priv_start(rundir, receipts), 0);
	ck_assert_int_eq(req(PRIV_RECEIPTS_OPEN, "", &fd), EPERM);
	ck_assert_int_eq(req(PRIV_RECEIPTS_ROTATE, "", &fd), EPERM);
	ck_assert_int_eq(req(PRIV_LISTEN, "fine.sock", &fd), 0);       /* sockets still */
	close(fd);
}
END_TEST

START_TEST(test_leaves_with_egressd)
{
	/* priv_stop closes the channel and reaps the helper: it returns at all. */
	priv_stop();
	ck_assert_int_eq(priv_channel(), -1);
	ck_assert_int_eq(priv_start(rundir, receipts), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("priv");
	TCase *tc = tcase_create("helper");
	SRunner *sr;
	int failed;

	if (geteuid() != 0) {
		puts("SKIP: the privileged helper needs root");
		return 77;
	}
	log_init("egressd", LOG_OUT_LOGFMT, false, false);
	signal(SIGPIPE, SIG_IGN);       /* a write to a pipe the helper closed: EPIPE */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_bad_names, 0, (int)NELEM(bad_names));
	tcase_add_test(tc, test_bad_frames);
	tcase_add_test(tc, test_not_sockets);
	tcase_add_test(tc, test_receipts_path);
	tcase_add_test(tc, test_receipts_folder_writable);
	tcase_add_test(tc, test_leaves_with_egressd);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
