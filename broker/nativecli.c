/*
 * nativecli.c: one EGR1 exchange (docs/native.md). Trusts egressd's reply only as far as
 * its framing: a code outside the reasons table is treated as shutdown.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "egress.h"
#include "nativecli.h"
#include "sock.h"

int
nativecli_handshake(int fd, const char *host, uint16_t port, int timeout_ms)
{
	uint8_t req[9 + EGRESS_FD4_HOST_MAX], rep[8];
	size_t hostlen = strlen(host), off = 0, got = 0;
	int64_t deadline = egress_mono_ms() + timeout_ms;
	struct pollfd pfd;
	ssize_t n;
	int left;
	uint32_t c;
	int32_t code;

	if (hostlen == 0 || hostlen > EGRESS_FD4_HOST_MAX || port == 0)
		return EGRESS_ERR_MALFORMED_REQUEST;
	memcpy(req, "EGR1", 4);
	req[4] = 1;
	req[5] = 0;
	req[6] = (uint8_t)(port >> 8);
	req[7] = (uint8_t)port;
	req[8] = (uint8_t)hostlen;
	memcpy(req + 9, host, hostlen);
	/* bound: 9 + 255 bytes, and every wait below ends at the deadline */
	while (off < 9 + hostlen || got < sizeof(rep)) {
		left = (int)(deadline - egress_mono_ms());
		if (left <= 0)
			return EGRESS_ERR_HANDSHAKE_TIMEOUT;
		pfd.fd = fd;
		pfd.events = off < 9 + hostlen ? POLLOUT : POLLIN;
		pfd.revents = 0;
		n = poll(&pfd, 1, left);
		if (n == -1 && errno != EINTR)
			return EGRESS_ERR_SHUTDOWN;
		if (n <= 0)
			continue;
		if (off < 9 + hostlen) {
			n = send(fd, req + off, 9 + hostlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n == -1 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n <= 0)
				return EGRESS_ERR_SHUTDOWN;
			off += (size_t)n;
			continue;
		}
		n = recv(fd, rep + got, sizeof(rep) - got, MSG_DONTWAIT);
		if (n == -1 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n <= 0)
			return EGRESS_ERR_SHUTDOWN;
		got += (size_t)n;
	}
	if (memcmp(rep, "EGR1", 4) != 0)
		return EGRESS_ERR_SHUTDOWN;
	c = (uint32_t)rep[4] << 24 | (uint32_t)rep[5] << 16 | (uint32_t)rep[6] << 8 | rep[7];
	code = (int32_t)c;
	if (code == 0)
		return 0;
	if (code > EGRESS_ERR_NOT_ALLOWLISTED || code < EGRESS_ERR_SHUTDOWN)
		return EGRESS_ERR_SHUTDOWN;
	return code;
}

size_t
nativecli_question(uint16_t qtype, const char *qname, size_t qnamelen,
    uint8_t out[NATIVECLI_QUESTION_MAX])
{
	if (qtype == 0 || qnamelen == 0 || qnamelen > 255)
		return 0;
	memcpy(out, "EGR1", 4);
	out[4] = 1;
	out[5] = 1;                  /* the question verb */
	out[6] = (uint8_t)(qtype >> 8);
	out[7] = (uint8_t)qtype;
	out[8] = (uint8_t)qnamelen;
	memcpy(out + 9, qname, qnamelen);
	return 9 + qnamelen;
}

int
nativecli_answer_parse(const uint8_t in[NATIVECLI_ANSWER], struct nativecli_answer *a)
{
	if (memcmp(in, "EGR1", 4) != 0 || in[9] > 1)
		return -1;
	a->code = (int32_t)((uint32_t)in[4] << 24 | (uint32_t)in[5] << 16 |
	    (uint32_t)in[6] << 8 | in[7]);
	a->rcode = in[8];
	a->count = in[9];
	a->ttl = (uint32_t)in[10] << 24 | (uint32_t)in[11] << 16 | (uint32_t)in[12] << 8 | in[13];
	memcpy(a->addr, in + 14, 4);
	return 0;
}
