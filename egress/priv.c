/*
 * priv.c: the few operations that need root once egressd runs as the `user` of
 * egressd.conf, in the style of OpenSSH's privilege-separation monitor.
 *
 * Without `user`, egressd (root, with the unit's reduced capability set) does them itself.
 * With `user`, priv_start() forks a helper before the drop. The helper stays root with
 * only CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_FOWNER (bounding set included), no_new_privs,
 * no descriptor but its end of a SOCK_SEQPACKET socketpair and stderr, and its working
 * directory is runtime-dir (so a path renamed or replaced later changes nothing). egressd
 * asks, one request at a time, and the helper does exactly this and nothing else:
 *
 *   LISTEN name uid gid   create the AF_UNIX listener runtime-dir/name, mode 0600, owned by
 *                         uid:gid, listening; pass it back with its device and inode
 *   UNLINK name dev ino   remove runtime-dir/name if it is a socket (and that one, when
 *                         dev/ino are given)
 *   RECEIPTS_OPEN         open the receipts file named at start for appending; pass it back
 *   RECEIPTS_ROTATE       rename that file to PATH.<UTC time>[.NNN] and open a new one
 *
 * A name is one path component (no '/', not "." or ".."). The receipts path is fixed at
 * start, never taken from a request. The helper exits when egressd closes its end.
 */
#include "config.h"

#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "egressd.h"
#include "fdpass.h"
#include "priv.h"

#define PRIV_BACKLOG 128


/* Request and reply alike; a request must be exactly this size. */

#define PRIV_MAX_SOCKETS 4096          /* sockets the helper made and has not removed */

static int priv_sock = -1;              /* egressd's end, when a helper runs */
static pid_t priv_pid = -1;
static const char *priv_runtime_dir;

/* --- the operations themselves (egressd without `user`, or the helper) ----------------- */

static int
priv_do_listen(const char *path, uid_t uid, gid_t gid, struct stat *st)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, e;

	if (egress_sock_unix_addr(&sun, path) == -1)
		return -1;
	if (lstat(path, st) == 0) {
		if (!S_ISSOCK(st->st_mode)) {
			errno = EEXIST;
			return -1;
		}
		if (unlink(path) == -1)
			return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		e = errno;
		umask(old);
		close(fd);
		errno = e;
		return -1;
	}
	umask(old);
	if (lchown(path, uid, gid) == -1 || chmod(path, 0600) == -1 ||
	    listen(fd, PRIV_BACKLOG) == -1 || lstat(path, st) == -1) {
		e = errno;
		unlink(path);
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int
priv_do_unlink(const char *path, uint64_t dev, uint64_t ino)
{
	struct stat st;

	if (lstat(path, &st) == -1)
		return -1;
	if (!S_ISSOCK(st.st_mode) ||
	    ((dev != 0 || ino != 0) && ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino))) {
		errno = EPERM;
		return -1;
	}
	return unlink(path);
}

/*
 * The receipt file for appending: a regular file with one link (not a FIFO that would
 * block, not a hard link to some other file), never through a symlink. The helper opens
 * it as root, so it trusts nothing about what is at the path.
 */
static int
priv_do_receipts_open(const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY, 0600);

	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) == -1) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

static int
priv_do_receipts_rotate(const char *path, char *old, size_t oldlen)
{
	char stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	int i, n;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (i = 0; i < 1000; i++) {
		n = i == 0 ? snprintf(old, oldlen, "%s.%s", path, stamp) :
		    snprintf(old, oldlen, "%s.%s.%03d", path, stamp, i);
		if (n < 0 || (size_t)n >= oldlen) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (access(old, F_OK) != 0)
			break;
	}
	if (i == 1000) {
		errno = EEXIST;
		return -1;
	}
	if (rename(path, old) == -1)
		return -1;
	return priv_do_receipts_open(path);
}

/* --- the helper --------------------------------------------------------------------------- */

/* One path component: what a request may name inside runtime-dir. */
bool
priv_name_ok(const char *text, size_t cap)
{
	size_t len = strnlen(text, cap);

	return len > 0 && len < cap && len < sizeof(((struct sockaddr_un *)0)->sun_path) &&
	    memchr(text, '/', len) == NULL && strcmp(text, ".") != 0 && strcmp(text, "..") != 0;
}

static int
priv_serve(const struct priv_msg *q, struct priv_msg *r, const char *receipts,
    bool receipts_ok, unsigned *live)
{
	struct stat st;
	int fd = -1;

	memset(r, 0, sizeof(*r));
	r->op = q->op;
	switch (q->op) {
	case PRIV_LISTEN:
		if (!priv_name_ok(q->text, sizeof(q->text))) {
			r->err = EINVAL;
			break;
		}
		if (*live >= PRIV_MAX_SOCKETS) {
			r->err = EMFILE;
			break;
		}
		if ((fd = priv_do_listen(q->text, (uid_t)q->uid, (gid_t)q->gid, &st)) == -1) {
			r->err = errno;
			break;
		}
		(*live)++;
		r->dev = (uint64_t)st.st_dev;
		r->ino = (uint64_t)st.st_ino;
		break;
	case PRIV_UNLINK:
		if (!priv_name_ok(q->text, sizeof(q->text)))
			r->err = EINVAL;
		else if (priv_do_unlink(q->text, q->dev, q->ino) == -1)
			r->err = errno;
		else if (*live > 0)
			(*live)--;
		break;
	case PRIV_RECEIPTS_OPEN:
		if (!receipts_ok)
			r->err = EPERM;
		else if ((fd = priv_do_receipts_open(receipts)) == -1)
			r->err = errno;
		break;
	case PRIV_RECEIPTS_ROTATE:
		if (!receipts_ok)
			r->err = EPERM;
		else if ((fd = priv_do_receipts_rotate(receipts, r->text, sizeof(r->text))) == -1)
			r->err = errno;
		break;
	default:
		r->err = ENOSYS;
		break;
	}
	return fd;
}

/*
 * Renaming and creating the receipt file as root is safe only in a folder egressd's user
 * cannot write (else it could put a link or a FIFO there between two requests): the
 * folder must be root's and not writable by group or others.
 */
static bool
priv_receipts_dir_ok(const char *receipts)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", receipts);
	if ((slash = strrchr(dir, '/')) == NULL)
		return false;
	*(slash == dir ? slash + 1 : slash) = '\0';
	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022) != 0) {
		fprintf(stderr, "egressd-priv: %s must be root's and not writable by group or "
		    "others: the receipt file will not be reopened or rotated\n", dir);
		return false;
	}
	return true;
}

static int
priv_caps(void)
{
	static const cap_value_t keep[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER };
	cap_t caps;
	int rc = -1;

	/*
	 * The bounding set too, where egressd may (CAP_SETPCAP): under the systemd unit it may
	 * not, and what is left there is unusable anyway (not permitted, no_new_privs, no exec).
	 */
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		bool kept = false;

		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept = kept || keep[i] == c;
		if (!kept && prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1 && errno != EPERM)
			return -1;
	}
	if ((caps = cap_init()) == NULL)
		return -1;
	if (cap_set_flag(caps, CAP_PERMITTED, 3, keep, CAP_SET) == 0 &&
	    cap_set_flag(caps, CAP_EFFECTIVE, 3, keep, CAP_SET) == 0 && cap_set_proc(caps) == 0)
		rc = 0;
	cap_free(caps);
	return rc;
}

static _Noreturn void
priv_helper(int sock, const char *runtime_dir, const char *receipts)
{
	static const int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE };
	struct priv_msg q, r;
	int fd, nfds, truncated;
	unsigned live = 0;
	bool receipts_ok;
	ssize_t n;

	/* systemd and a terminal signal the whole group: the helper leaves when egressd does. */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	if (sock != 3) {
		if (dup2(sock, 3) == -1)
			_exit(1);
		sock = 3;
	}
	if (close_range(4, ~0U, 0) == -1)
		for (int i = 4; i < 1024; i++)
			close(i);
	(void)prctl(PR_SET_NAME, "egressd-priv", 0, 0, 0);
	if (chdir(runtime_dir) == -1 || priv_caps() == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		fprintf(stderr, "egressd-priv: set-up failed: %s\n", strerror(errno));
		_exit(1);
	}
	receipts_ok = priv_receipts_dir_ok(receipts);
	/* Ready: priv_start waits for this before egressd goes on. */
	memset(&r, 0, sizeof(r));
	if (egress_fdpass_send(sock, &r, sizeof(r), -1, -1) == -1)
		_exit(1);
	for (;;) {
		n = egress_fdpass_recv(sock, &q, sizeof(q), &fd, &nfds, &truncated, 0);
		if (n <= 0)
			_exit(0);       /* egressd closed its end (or is gone) */
		if (fd != -1)
			close(fd);      /* a request carries no descriptor */
		if ((size_t)n != sizeof(q) || truncated) {
			memset(&r, 0, sizeof(r));
			r.err = EBADMSG;
			fd = -1;
		} else {
			fd = priv_serve(&q, &r, receipts, receipts_ok, &live);
		}
		if (egress_fdpass_send(sock, &r, sizeof(r), fd, -1) == -1)
			_exit(0);
		if (fd != -1)
			close(fd);
	}
}

/* --- egressd's side ------------------------------------------------------------------------- */

int
priv_start(const char *runtime_dir, const char *receipts)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		log_startupx("socketpair: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		log_startupx("fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		priv_helper(sv[1], runtime_dir, receipts);
	}
	close(sv[1]);
	priv_sock = sv[0];
	priv_pid = pid;
	priv_runtime_dir = runtime_dir;
	{
		/* Its first message says it is set up; an exit instead is a start-up failure. */
		struct priv_msg r;
		int fd, nfds, truncated;
		ssize_t n = egress_fdpass_recv(priv_sock, &r, sizeof(r), &fd, &nfds, &truncated, 0);

		if (fd != -1)
			close(fd);
		if (n != (ssize_t)sizeof(r) || r.op != 0 || r.err != 0) {
			log_startupx("the privileged helper did not start");
			priv_stop();
			return -1;
		}
	}
	return 0;
}

/*
 * One request, one reply; the helper is local and quick, so egressd waits for it. Returns
 * 0 with *fdp the descriptor the reply carried (or -1), or -1 with errno.
 */
static int
priv_call(struct priv_msg *q, struct priv_msg *r, int *fdp)
{
	int fd, nfds, truncated;
	ssize_t n;

	*fdp = -1;
	if (egress_fdpass_send(priv_sock, q, sizeof(*q), -1, -1) == -1)
		goto gone;
	n = egress_fdpass_recv(priv_sock, r, sizeof(*r), &fd, &nfds, &truncated, 0);
	if (n <= 0)
		goto gone;
	if ((size_t)n != sizeof(*r) || truncated || r->op != q->op || nfds > 1) {
		if (fd != -1)
			close(fd);
		errno = EPROTO;
		return -1;
	}
	if (r->err != 0) {
		if (fd != -1)
			close(fd);
		errno = r->err;
		return -1;
	}
	*fdp = fd;
	return 0;
gone:
	log_error("event=priv-helper error=\"the privileged helper is gone\" pid=%d",
	    (int)priv_pid);
	errno = EPIPE;
	return -1;
}

/* The name of path inside runtime-dir, for a request; NULL (errno) when it is elsewhere. */
static const char *
priv_name(const char *path)
{
	const char *base = strrchr(path, '/');

	if (base == NULL || !conf_inside(priv_runtime_dir, path)) {
		errno = EXDEV;
		return NULL;
	}
	return base + 1;
}

int
priv_listen(const char *path, uid_t uid, gid_t gid, dev_t *dev, ino_t *ino)
{
	struct priv_msg q, r;
	struct stat st;
	const char *name;
	int fd;

	if (priv_sock == -1) {
		if ((fd = priv_do_listen(path, uid, gid, &st)) != -1) {
			*dev = st.st_dev;
			*ino = st.st_ino;
		}
		return fd;
	}
	if ((name = priv_name(path)) == NULL)
		return -1;
	memset(&q, 0, sizeof(q));
	q.op = PRIV_LISTEN;
	q.uid = (uint32_t)uid;
	q.gid = (uint32_t)gid;
	snprintf(q.text, sizeof(q.text), "%s", name);
	if (priv_call(&q, &r, &fd) == -1)
		return -1;
	if (fd == -1) {
		errno = EPROTO;
		return -1;
	}
	*dev = (dev_t)r.dev;
	*ino = (ino_t)r.ino;
	return fd;
}

int
priv_unlink(const char *path, dev_t dev, ino_t ino)
{
	struct priv_msg q, r;
	const char *name;
	int fd;

	/* Without a helper, or outside runtime-dir (a control socket elsewhere): ourselves. */
	if (priv_sock == -1 || (name = priv_name(path)) == NULL)
		return priv_do_unlink(path, (uint64_t)dev, (uint64_t)ino);
	memset(&q, 0, sizeof(q));
	q.op = PRIV_UNLINK;
	q.dev = (uint64_t)dev;
	q.ino = (uint64_t)ino;
	snprintf(q.text, sizeof(q.text), "%s", name);
	if (priv_call(&q, &r, &fd) == -1)
		return -1;
	if (fd != -1)
		close(fd);
	return 0;
}

static int
priv_receipts(enum priv_op op, char *old, size_t oldlen)
{
	struct priv_msg q, r;
	int fd;

	memset(&q, 0, sizeof(q));
	q.op = op;
	if (priv_call(&q, &r, &fd) == -1)
		return -1;
	if (fd == -1) {
		errno = EPROTO;
		return -1;
	}
	if (old != NULL)
		snprintf(old, oldlen, "%.*s", (int)strnlen(r.text, sizeof(r.text)), r.text);
	return fd;
}

int
priv_receipts_open(const char *path)
{
	if (priv_sock == -1)
		return priv_do_receipts_open(path);
	return priv_receipts(PRIV_RECEIPTS_OPEN, NULL, 0);
}

int
priv_receipts_rotate(const char *path, char *old, size_t oldlen)
{
	if (priv_sock == -1)
		return priv_do_receipts_rotate(path, old, oldlen);
	return priv_receipts(PRIV_RECEIPTS_ROTATE, old, oldlen);
}

bool
priv_separated(void)
{
	return priv_sock != -1;
}

int
priv_channel(void)
{
	return priv_sock;
}

void
priv_stop(void)
{
	if (priv_sock == -1)
		return;
	close(priv_sock);
	priv_sock = -1;
	while (waitpid(priv_pid, NULL, 0) == -1 && errno == EINTR)
		;
	priv_pid = -1;
}
