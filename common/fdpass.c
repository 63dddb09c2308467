/*
 * fdpass.c: one datagram with at most one descriptor (SCM_RIGHTS), in the style of
 * OpenSSH's monitor_fdpass.c. Trusts nothing about what arrives: every descriptor beyond
 * the first is closed, and MSG_CMSG_CLOEXEC keeps any of them from leaking across exec.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fdpass.h"

/* Room for a handful of descriptors so that extras are received (and closed), not lost
 * with MSG_CTRUNC; more than this many are closed by the kernel on truncation. */
#define FDPASS_MAX_FDS 16

ssize_t
egress_fdpass_send(int sock, const void *buf, size_t len, int fd, int timeout_ms)
{
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cmsgbuf;
	struct cmsghdr *cmsg;
	struct pollfd pfd;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = (void *)(uintptr_t)buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	for (;;) {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		pfd.fd = sock;
		pfd.events = POLLOUT;
		pfd.revents = 0;
		n = poll(&pfd, 1, timeout_ms);
		if (n == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (n == -1 && errno != EINTR)
			return -1;
	}
}

ssize_t
egress_fdpass_recv(int sock, void *buf, size_t cap, int *fd, int *nfds, int *truncated, int flags)
{
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX_FDS)];
	} cmsgbuf;
	struct cmsghdr *cmsg;
	ssize_t n;
	size_t i, count;
	int got;

	*fd = -1;
	*nfds = 0;
	*truncated = 0;
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = buf;
	iov.iov_len = cap;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsgbuf.buf;
	msg.msg_controllen = sizeof(cmsgbuf.buf);
	do
		n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
		    cmsg->cmsg_len < CMSG_LEN(0))
			continue;
		count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < count; i++) {
			memcpy(&got, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			(*nfds)++;
			if (*fd == -1)
				*fd = got;
			else
				close(got);
		}
	}
	if ((msg.msg_flags & MSG_TRUNC) != 0)
		*truncated = 1;
	if ((msg.msg_flags & MSG_CTRUNC) != 0)
		(*nfds)++;   /* some were dropped by the kernel: count it as "more than one" */
	return n;
}
