/*
 * nativecli.c: one EGR1 connect (docs/native.md): the request native_request_build
 * writes, sent and answered within a deadline. Trusts egressd's reply only as far as its
 * framing (native_reply_parse): a code outside the reasons table is treated as shutdown.
 * Its codes are the reasons' wire codes (common/reason.c), which are libegress's
 * EGRESS_ERR_* by contract: common/ needs nothing of broker/'s header for them.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "native.h"
#include "nativecli.h"
#include "sock.h"

int
nativecli_handshake(int fd, const char *host, uint16_t port, int timeout_ms)
{
	uint8_t req[EGRESS_NATIVE_REQUEST_MAX], rep[EGRESS_NATIVE_REPLY];
	size_t reqlen, off = 0, got = 0;
	int64_t deadline = egress_mono_ms() + timeout_ms;
	struct pollfd pfd;
	ssize_t n;
	int left;
	int32_t code;

	reqlen = native_request_build(EGRESS_NATIVE_CONNECT, port, host,
	    strnlen(host, EGRESS_NATIVE_NAME_MAX + 1), req);
	if (reqlen == 0)
		return egress_reason_code(EGRESS_MALFORMED_REQUEST);
	/* bound: 9 + 255 bytes, and every wait below ends at the deadline */
	while (off < reqlen || got < sizeof(rep)) {
		left = (int)(deadline - egress_mono_ms());
		if (left <= 0)
			return egress_reason_code(EGRESS_HANDSHAKE_TIMEOUT);
		pfd.fd = fd;
		pfd.events = off < reqlen ? POLLOUT : POLLIN;
		pfd.revents = 0;
		n = poll(&pfd, 1, left);
		if (n == -1 && errno != EINTR)
			return egress_reason_code(EGRESS_SHUTDOWN);
		if (n <= 0)
			continue;
		if (off < reqlen) {
			n = send(fd, req + off, reqlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n == -1 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n <= 0)
				return egress_reason_code(EGRESS_SHUTDOWN);
			off += (size_t)n;
			continue;
		}
		n = recv(fd, rep + got, sizeof(rep) - got, MSG_DONTWAIT);
		if (n == -1 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n <= 0)
			return egress_reason_code(EGRESS_SHUTDOWN);
		got += (size_t)n;
	}
	if (native_reply_parse(rep, &code) == -1)
		return egress_reason_code(EGRESS_SHUTDOWN);
	if (code == 0)
		return 0;
	if (egress_reason_of_code(code) == -1)
		return egress_reason_code(EGRESS_SHUTDOWN);
	return code;
}
