/*
 * ctlclient.c: connects to egressd's control (or lease) socket and moves one line each
 * way. Trusts the socket's owner (egressd) only to end its reply with a newline within
 * the caller's bound; the bytes are handed on unread (proto/control.c decodes them).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "ctlclient.h"
#include "sock.h"

#define CTLCLIENT_CHUNK (64 * 1024)

int
ctlclient_connect(const char *path)
{
	return egress_sock_unix_connect(path);     /* one AF_UNIX connect for the tree */
}

int
ctlclient_send(int fd, const char *line, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

ssize_t
ctlclient_recv(int fd, char **bufp, size_t max, int wait_ms)
{
	size_t cap = max < CTLCLIENT_CHUNK ? max : CTLCLIENT_CHUNK, len = 0;
	char *buf = xmalloc(cap + 1), *nl;

	while ((nl = memchr(buf, '\n', len)) == NULL) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int pr;

		if (len == cap) {
			if (cap >= max) {
				free(buf);
				errno = EMSGSIZE;
				return -1;
			}
			cap = cap > max / 2 ? max : cap * 2;
			buf = xreallocarray(buf, cap + 1, 1);
		}
		if ((pr = poll(&pfd, 1, wait_ms)) == -1 && errno == EINTR)
			continue;
		if (pr != 1) {
			free(buf);
			if (pr == 0)
				errno = ETIMEDOUT;
			return -1;
		}
		if ((n = read(fd, buf + len, cap - len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			if (n == 0)
				errno = EPIPE;
			return -1;
		}
		len += (size_t)n;
	}
	*nl = '\0';
	*bufp = buf;
	return nl - buf;
}
