/*
 * fd4.c: EGF1, the fd-4 channel's datagrams (fd4.h), both directions. Requests come from
 * the sandboxed workload and are trusted for nothing by egress-broker: every length is
 * checked against the datagram's size before use. The host is not parsed here (egressd
 * does that, strictly); it is only kept free of NUL so that it stays one C string.
 * Replies come from egress-broker and are trusted as far as their size and magic.
 */
#include "config.h"

#include <string.h>

#include "common.h"
#include "fd4.h"
#include "wire.h"

int
fd4_parse_request(const uint8_t *buf, size_t len, struct fd4_request *out)
{
	memset(out, 0, sizeof(*out));
	if (len >= 8 && memcmp(buf, FD4_MAGIC, FD4_MAGIC_LEN) == 0) {
		out->id = wire_get32(buf + 4);
		out->has_id = 1;
	}
	if (len < FD4_REQUEST_HEAD + 1 || len > FD4_REQUEST_MAX)
		return EGRESS_MALFORMED_REQUEST;
	if (!out->has_id)
		return EGRESS_MALFORMED_REQUEST;
	out->timeout_ms = wire_get32(buf + 8);
	out->port = wire_get16(buf + 12);
	out->hostlen = buf[14];
	if (out->port == 0 || out->hostlen == 0 ||
	    (size_t)out->hostlen != len - FD4_REQUEST_HEAD)
		return EGRESS_MALFORMED_REQUEST;
	if (memchr(buf + FD4_REQUEST_HEAD, '\0', out->hostlen) != NULL)
		return EGRESS_MALFORMED_REQUEST;
	memcpy(out->host, buf + FD4_REQUEST_HEAD, out->hostlen);
	out->host[out->hostlen] = '\0';
	return 0;
}

int
fd4_timeout_ms(uint32_t requested)
{
	if (requested == 0)
		return FD4_TIMEOUT_DEFAULT_MS;
	if (requested > FD4_TIMEOUT_MAX_MS)
		return FD4_TIMEOUT_MAX_MS;
	return (int)requested;
}

void
fd4_reply(uint32_t id, int32_t code, uint8_t out[FD4_REPLY_LEN])
{
	memcpy(out, FD4_MAGIC, FD4_MAGIC_LEN);
	wire_put32(out + 4, id);
	wire_put32(out + 8, (uint32_t)code);
}

size_t
fd4_request_build(uint32_t id, uint32_t timeout_ms, uint16_t port, const char *host,
    size_t hostlen, uint8_t out[FD4_REQUEST_MAX])
{
	if (port == 0 || hostlen == 0 || hostlen > FD4_HOST_MAX)
		return 0;
	memcpy(out, FD4_MAGIC, FD4_MAGIC_LEN);
	wire_put32(out + 4, id);
	wire_put32(out + 8, timeout_ms);
	wire_put16(out + 12, port);
	out[14] = (uint8_t)hostlen;
	memcpy(out + FD4_REQUEST_HEAD, host, hostlen);
	return FD4_REQUEST_HEAD + hostlen;
}

int
fd4_reply_parse(const uint8_t *buf, size_t len, uint32_t *id, int32_t *code)
{
	if (len != FD4_REPLY_LEN || memcmp(buf, FD4_MAGIC, FD4_MAGIC_LEN) != 0)
		return -1;
	*id = wire_get32(buf + 4);
	*code = (int32_t)wire_get32(buf + 8);
	return 0;
}
