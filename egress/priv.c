/*
 * priv.c: what egressd's monitor (monitor.c) does with root's rights for the engine,
 * which runs as the `user` of egressd.conf (or nobody) and may not create or remove
 * files: AF_UNIX listeners for principals, owned by their owners, their removal, and the
 * receipts file, its reopening and rotation. Every name is one path component inside
 * runtime-dir (the monitor's working directory) or the receipts path fixed at start,
 * never a path from a request; what is found at a path is trusted for nothing (lstat,
 * O_NOFOLLOW, one link).
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

#define PRIV_BACKLOG 128


/* --- the operations ------------------------------------------------------------------ */

int
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

int
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
int
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

int
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

/* --- names and capabilities ---------------------------------------------------------- */

/* One path component: what a request may name inside runtime-dir. */
bool
priv_name_ok(const char *text, size_t cap)
{
	size_t len = strnlen(text, cap);

	return len > 0 && len < cap && len < sizeof(((struct sockaddr_un *)0)->sun_path) &&
	    memchr(text, '/', len) == NULL && strcmp(text, ".") != 0 && strcmp(text, "..") != 0;
}

/*
 * The monitor's capabilities when it runs as root: sockets for other owners in a root
 * directory (CHOWN, DAC_OVERRIDE, FOWNER), the engine's start as its user (SETUID,
 * SETGID) and signals to it (KILL). Nothing else, the bounding set included.
 */
int
priv_caps(void)
{
	static const cap_value_t keep[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_SETUID,
	    CAP_SETGID, CAP_KILL };
	const int nkeep = (int)(sizeof(keep) / sizeof(keep[0]));
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
	/* Of those, what it has: a root of a user namespace may hold fewer (egress-run). */
	{
		cap_t now = cap_get_proc();
		cap_value_t have[sizeof(keep) / sizeof(keep[0])];
		int nhave = 0;

		if (now == NULL)
			return -1;
		for (int i = 0; i < nkeep; i++) {
			cap_flag_value_t v = CAP_CLEAR;

			if (cap_get_flag(now, keep[i], CAP_PERMITTED, &v) == 0 && v == CAP_SET)
				have[nhave++] = keep[i];
		}
		cap_free(now);
		if ((caps = cap_init()) == NULL)
			return -1;
		if ((nhave == 0 || (cap_set_flag(caps, CAP_PERMITTED, nhave, have, CAP_SET) == 0 &&
		    cap_set_flag(caps, CAP_EFFECTIVE, nhave, have, CAP_SET) == 0)) &&
		    cap_set_proc(caps) == 0)
			rc = 0;
		cap_free(caps);
	}
	return rc;
}

