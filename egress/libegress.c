/*
 * libegress.c: egress_fd4_connect() and egress_strerror() (egress.h). Trusts the broker
 * for nothing but the framing: a reply must carry this request's id, and a stream is
 * accepted only with code 0. Every descriptor it makes or receives is close-on-exec and
 * closed on every path that does not return it.
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

#include "egress.h"
#include "fdpass.h"
#include "sock.h"

static pthread_mutex_t fd4_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t fd4_next_id;            /* under fd4_lock */

/* The broker caps a request at 120 s; without a timeout it uses 30 s. */
#define FD4_DEFAULT_WAIT_MS 130000
/* Replies with a foreign id that one call skips before giving up. */
#define FD4_MAX_STRAY 64

static const char *const fd4_names[] = {
	"allowed", "not-allowlisted", "denied-by-rule", "malformed-request", "bad-host",
	"private-address", "dns-failure", "dns-timeout", "connect-refused", "connect-timeout",
	"quota-connections", "quota-rate", "quota-bytes", "sni-missing", "sni-mismatch",
	"sni-malformed", "sni-ech", "not-tls", "unsupported", "handshake-timeout", "peer-uid",
	"idle-timeout", "shutdown",
};

const char *
egress_strerror(int code)
{
	int row;

	if (code == 0)
		return fd4_names[0];
	if (code > -1001 || code < -1022)
		return "unknown";
	row = -code - 1000;
	return fd4_names[row];
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
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
	uint32_t id = ++fd4_next_id;
	int64_t deadline;
	struct pollfd pfd;
	ssize_t n;
	int32_t code;

	memcpy(req, EGRESS_FD4_MAGIC, 4);
	put32(req + 4, id);
	put32(req + 8, timeout_ms > 0 ? (uint32_t)timeout_ms : 0);
	req[12] = (uint8_t)(port >> 8);
	req[13] = (uint8_t)port;
	req[14] = (uint8_t)hostlen;
	memcpy(req + EGRESS_FD4_REQUEST_HEAD, host, hostlen);

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == -1)
		return fail(EGRESS_ERR_SHUTDOWN, errno);
	deadline = egress_mono_ms() + (timeout_ms > 0 ? timeout_ms : FD4_DEFAULT_WAIT_MS);
	n = egress_fdpass_send(chan, req, EGRESS_FD4_REQUEST_HEAD + hostlen, pair[1],
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
		if (n != EGRESS_FD4_REPLY || trunc || memcmp(rep, EGRESS_FD4_MAGIC, 4) != 0 ||
		    get32(rep + 4) != id) {
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
		code = (int32_t)get32(rep + 8);
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
