/*
 * libegress.c: egress_fd4_connect() and egress_strerror() (egress.h). The installed
 * library is built with common/reason.c (reason names and codes), common/fdpass.c and
 * proto/fd4.c (the EGF1 datagrams). Trusts the broker for nothing but the framing: a
 * reply must carry this request's id, and a stream is accepted only with code 0. Every
 * descriptor it makes or receives is close-on-exec and closed on every path that does
 * not return it.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "egress.h"
#include "fd4.h"
#include "fdpass.h"
#include "sock.h"

static pthread_mutex_t fd4_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t fd4_next_id;            /* under fd4_lock */

/* The broker caps a request at 120 s; without a timeout it uses 30 s. */
#define FD4_DEFAULT_WAIT_MS (FD4_TIMEOUT_MAX_MS + 10000)
/* Replies with a foreign id that one call skips before giving up. */
#define FD4_MAX_STRAY 64

/* egress.h spells the codes out for its users; common/reason.c owns the mapping. */
_Static_assert(EGRESS_ERR_NOT_ALLOWLISTED ==
    -(EGRESS_REASON_CODE_BASE + EGRESS_NOT_ALLOWLISTED), "egress.h's codes follow the table");
_Static_assert(EGRESS_ERR_SHUTDOWN == -(EGRESS_REASON_CODE_BASE + EGRESS_SHUTDOWN) &&
    EGRESS_SHUTDOWN == EGRESS_REASON_COUNT - 1, "egress.h's codes end where the table ends");
/* egress.h names EGF1's magic and sizes for its users; proto/fd4.h, which owns the format,
 * has its own (the public header includes no internal one). check_fd4 compares the magic's
 * bytes, which C cannot do at compile time. */
_Static_assert(sizeof(EGRESS_FD4_MAGIC) == sizeof(FD4_MAGIC) &&
    sizeof(FD4_MAGIC) == FD4_MAGIC_LEN + 1, "one magic length");
_Static_assert(EGRESS_FD4_HOST_MAX == FD4_HOST_MAX, "one host limit");
_Static_assert(EGRESS_FD4_REQUEST_HEAD == FD4_REQUEST_HEAD &&
    EGRESS_FD4_REQUEST_MAX == FD4_REQUEST_MAX, "one request layout");
_Static_assert(EGRESS_FD4_REPLY == FD4_REPLY_LEN, "one reply size");

const char *
egress_strerror(int code)
{
	int r = egress_reason_of_code(code);

	return r == -1 ? "unknown" : egress_reason_name((enum egress_reason)r);
}

static int
fail(int code, int err)
{
	errno = err;
	return code;
}

/* Called with fd4_lock held. */
static int
fd4_request(int chan, const char *host, size_t hostlen, uint16_t port, int timeout_ms)
{
	uint8_t req[EGRESS_FD4_REQUEST_MAX], rep[EGRESS_FD4_REPLY + 1];
	int pair[2], stream, nfds, trunc, left, err, strays = 0;
	uint32_t id = ++fd4_next_id, rid;
	int64_t deadline;
	struct pollfd pfd;
	ssize_t n;
	int32_t code;
	size_t reqlen = fd4_request_build(id, timeout_ms > 0 ? (uint32_t)timeout_ms : 0, port,
	    host, hostlen, req);

	if (reqlen == 0)        /* egress_fd4_connect checked the arguments */
		return fail(EGRESS_ERR_MALFORMED_REQUEST, EINVAL);

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == -1)
		return fail(EGRESS_ERR_SHUTDOWN, errno);
	deadline = egress_mono_ms() + (timeout_ms > 0 ? timeout_ms : FD4_DEFAULT_WAIT_MS);
	n = egress_fdpass_send(chan, req, reqlen, pair[1],
	    timeout_ms > 0 ? timeout_ms : FD4_DEFAULT_WAIT_MS);
	err = errno;
	close(pair[1]);         /* the broker holds its own copy now (or never will) */
	if (n == -1) {
		close(pair[0]);
		if (err == ETIMEDOUT)
			return fail(EGRESS_ERR_HANDSHAKE_TIMEOUT, ETIMEDOUT);
		return fail(EGRESS_ERR_SHUTDOWN, err);
	}
	for (;;) {
		left = (int)(deadline - egress_mono_ms());
		if (left <= 0) {
			close(pair[0]);
			return fail(EGRESS_ERR_HANDSHAKE_TIMEOUT, ETIMEDOUT);
		}
		pfd.fd = pair[0];
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, left) == -1) {
			if (errno == EINTR)
				continue;
			err = errno;
			close(pair[0]);
			return fail(EGRESS_ERR_SHUTDOWN, err);
		}
		if (pfd.revents == 0)
			continue;
		n = egress_fdpass_recv(pair[0], rep, sizeof(rep), &stream, &nfds, &trunc, MSG_DONTWAIT);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n == -1) {
			err = errno;
			close(pair[0]);
			return fail(EGRESS_ERR_SHUTDOWN, err);
		}
		if (n == 0 && stream == -1 && (pfd.revents & POLLHUP) != 0) {
			/* the broker dropped its end without answering */
			close(pair[0]);
			return fail(EGRESS_ERR_SHUTDOWN, EPIPE);
		}
		if (trunc || fd4_reply_parse(rep, (size_t)n, &rid, &code) == -1 || rid != id) {
			/* not our answer: ignore it, but not forever */
			if (stream != -1)
				close(stream);
			if (++strays > FD4_MAX_STRAY) {
				close(pair[0]);
				return fail(EGRESS_ERR_SHUTDOWN, EPROTO);
			}
			continue;
		}
		close(pair[0]);
		if (code != 0) {
			if (stream != -1)
				close(stream);
			if (code > 0)
				return fail(EGRESS_ERR_SHUTDOWN, EPROTO);
			return fail(code, ECONNREFUSED);
		}
		if (stream == -1)
			return fail(EGRESS_ERR_SHUTDOWN, EPROTO);
		return stream;
	}
}

int
egress_fd4_connect(int chan, const char *host, uint16_t port, int timeout_ms)
{
	size_t hostlen;
	int r, err;

	if (chan < 0 || host == NULL || port == 0)
		return fail(EGRESS_ERR_MALFORMED_REQUEST, EINVAL);
	hostlen = strnlen(host, EGRESS_FD4_HOST_MAX + 1);
	if (hostlen == 0 || hostlen > EGRESS_FD4_HOST_MAX)
		return fail(EGRESS_ERR_MALFORMED_REQUEST, EINVAL);
	pthread_mutex_lock(&fd4_lock);
	r = fd4_request(chan, host, hostlen, port, timeout_ms);
	err = errno;
	pthread_mutex_unlock(&fd4_lock);
	errno = err;
	return r;
}
