/*
 * fd4.c: validation of fd-4 request datagrams for egress-broker. The bytes come from
 * the sandboxed workload and are trusted for nothing: every length is checked against the
 * datagram's size before use. The host is not parsed here (egressd does that, strictly);
 * it is only kept free of NUL so that it stays one C string.
 */
#include "config.h"

#include <string.h>

#include "common.h"
#include "fd4.h"

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int
fd4_parse_request(const uint8_t *buf, size_t len, struct fd4_request *out)
{
	memset(out, 0, sizeof(*out));
	if (len >= 8 && memcmp(buf, EGRESS_FD4_MAGIC, 4) == 0) {
		out->id = get32(buf + 4);
		out->has_id = 1;
	}
	if (len < EGRESS_FD4_REQUEST_HEAD + 1 || len > EGRESS_FD4_REQUEST_MAX)
		return EGRESS_MALFORMED_REQUEST;
	if (!out->has_id)
		return EGRESS_MALFORMED_REQUEST;
	out->timeout_ms = get32(buf + 8);
	out->port = (uint16_t)((unsigned)buf[12] << 8 | buf[13]);
	out->hostlen = buf[14];
	if (out->port == 0 || out->hostlen == 0 ||
	    (size_t)out->hostlen != len - EGRESS_FD4_REQUEST_HEAD)
		return EGRESS_MALFORMED_REQUEST;
	if (memchr(buf + EGRESS_FD4_REQUEST_HEAD, '\0', out->hostlen) != NULL)
		return EGRESS_MALFORMED_REQUEST;
	memcpy(out->host, buf + EGRESS_FD4_REQUEST_HEAD, out->hostlen);
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
fd4_reply(uint32_t id, int32_t code, uint8_t out[EGRESS_FD4_REPLY])
{
	uint32_t c = (uint32_t)code;

	memcpy(out, EGRESS_FD4_MAGIC, 4);
	out[4] = (uint8_t)(id >> 24);
	out[5] = (uint8_t)(id >> 16);
	out[6] = (uint8_t)(id >> 8);
	out[7] = (uint8_t)id;
	out[8] = (uint8_t)(c >> 24);
	out[9] = (uint8_t)(c >> 16);
	out[10] = (uint8_t)(c >> 8);
	out[11] = (uint8_t)c;
}
