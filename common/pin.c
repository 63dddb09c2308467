/*
 * pin.c: the principal socket, pinned at start (egress-relay, the stub resolver of
 * egress-launch). The path is opened once with O_PATH|O_NOFOLLOW and checked to be a
 * socket (and, with --expect DEV:INO, the one egress-run bound in); every connection
 * after goes through /proc/self/fd/N of that descriptor, never through the path again, so
 * that something put at the path later (the workload can write to neither /run nor the
 * socket, but a lease's path may be elsewhere) is never followed. Trusts the path and the
 * expected identity it is given; nothing else.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "sock.h"

int
egress_pin_open(struct egress_pin *pin, const char *path, const char *expect, char *err,
    size_t errlen)
{
	struct stat st;

	pin->fd = -1;
	if (expect != NULL) {
		char *end;

		errno = 0;
		pin->dev = strtoull(expect, &end, 10);
		if (end == expect || *end != ':' || errno != 0)
			goto badexpect;
		pin->ino = strtoull(end + 1, &end, 10);
		if (*end != '\0' || errno != 0)
			goto badexpect;
	}
	if ((pin->fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(pin->fd, &st) == -1 || !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s is not a socket", path);
		goto fail;
	}
	if (expect != NULL && ((unsigned long long)st.st_dev != pin->dev ||
	    (unsigned long long)st.st_ino != pin->ino)) {
		snprintf(err, errlen, "%s is %llu:%llu, not the expected %s: refused", path,
		    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, expect);
		goto fail;
	}
	snprintf(pin->path, sizeof(pin->path), "/proc/self/fd/%d", pin->fd);
	return 0;
badexpect:
	snprintf(err, errlen, "--expect takes DEV:INO");
	return -2;
fail:
	close(pin->fd);
	pin->fd = -1;
	return -1;
}

int
egress_pin_connect(const struct egress_pin *pin)
{
	int fd;

	if ((fd = egress_sock_unix_connect(pin->path)) == -1)
		return -1;
	/*
	 * Blocking connect on a local socket: it either completes or fails at once. A fresh
	 * socket has no status flag F_SETFL could change but O_NONBLOCK, so one call sets it
	 * (no F_GETFL first: a syscall fewer per relayed connection and per DNS question).
	 */
	if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}
