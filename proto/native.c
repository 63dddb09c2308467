/*
 * native.c: the native connector's framing (EGR1), the frontend egress-broker speaks on
 * behalf of fd-4 clients, and its DNS question verb, which the sandbox's stub resolver
 * speaks, and its transparent verb (a connect that egress-relay's transparent listener
 * makes for the workload: the same request, another receipt frontend). A pure, bounded parser like the others: a fixed 9-byte head and a host of at
 * most 255 bytes, which goes through host_parse like every host. Trusts nothing of the
 * bytes; the verb byte is checked as soon as it arrives, so an unknown verb (and, in an
 * older egressd, the question verb itself) is refused at once.
 */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "proto.h"

static enum proto_status
native_fail(struct proto_error *err, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len)
{
	err->reason = reason;
	err->http_status = 0;
	err->socks_rep = -1;
	err->why = why;
	err->raw = raw;
	err->raw_len = raw_len;
	return PROTO_ERROR;
}

enum proto_status
native_parse(const uint8_t *buf, size_t len, size_t *consumed, struct native_request *req,
    struct proto_error *err)
{
	size_t hostlen;
	const char *why;

	memset(req, 0, sizeof(*req));
	memset(err, 0, sizeof(*err));
	*consumed = 0;
	/* Refuse a wrong byte as soon as it is seen, not after a timeout. */
	for (size_t i = 0; i < len && i < 4; i++)
		if (buf[i] != (uint8_t)EGRESS_NATIVE_MAGIC[i])
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "not EGR1", NULL, 0);
	if (len >= 5 && buf[4] != EGRESS_NATIVE_VERSION)
		return native_fail(err, EGRESS_MALFORMED_REQUEST, "unknown EGR1 version", NULL,
		    0);
	if (len >= 6 && buf[5] != EGRESS_NATIVE_CONNECT && buf[5] != EGRESS_NATIVE_QUESTION &&
	    buf[5] != EGRESS_NATIVE_TRANSPARENT)
		return native_fail(err, EGRESS_MALFORMED_REQUEST, "unknown EGR1 verb", NULL, 0);
	if (len >= 6)
		req->verb = buf[5];          /* known from here on, also when refused */
	if (len < EGRESS_NATIVE_HEAD)
		return PROTO_NEED_MORE;
	hostlen = buf[8];
	if (req->verb == EGRESS_NATIVE_QUESTION) {
		req->qtype = (uint16_t)(buf[6] << 8 | buf[7]);
		if (req->qtype == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "qtype 0", NULL, 0);
		if (hostlen == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "empty qname", NULL, 0);
	} else {
		req->port = (uint16_t)(buf[6] << 8 | buf[7]);
		if (req->port == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "port 0", NULL, 0);
		if (hostlen == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "empty host", NULL, 0);
	}
	if (len < EGRESS_NATIVE_HEAD + hostlen)
		return PROTO_NEED_MORE;
	if (host_parse((const char *)buf + EGRESS_NATIVE_HEAD, hostlen, &req->host, &why) == -1) {
		if (req->verb != EGRESS_NATIVE_QUESTION) {
			err->has_port = true;        /* checked above: not 0 */
			err->port = req->port;
		}
		return native_fail(err, EGRESS_BAD_HOST, why, buf + EGRESS_NATIVE_HEAD, hostlen);
	}
	*consumed = EGRESS_NATIVE_HEAD + hostlen;
	return PROTO_OK;
}

size_t
native_reply(enum egress_reason reason, uint8_t out[EGRESS_NATIVE_REPLY])
{
	int32_t code = egress_reason_code(reason);
	uint32_t u = (uint32_t)code;

	memcpy(out, EGRESS_NATIVE_MAGIC, 4);
	out[4] = (uint8_t)(u >> 24);
	out[5] = (uint8_t)(u >> 16);
	out[6] = (uint8_t)(u >> 8);
	out[7] = (uint8_t)u;
	return EGRESS_NATIVE_REPLY;
}

uint8_t
native_rcode(enum egress_reason reason)
{
	switch (reason) {
	case EGRESS_ALLOWED:
		return EGRESS_DNS_NOERROR;
	case EGRESS_NOT_ALLOWLISTED:
	case EGRESS_DENIED_BY_RULE:
	case EGRESS_BAD_HOST:
		return EGRESS_DNS_NXDOMAIN;
	case EGRESS_MALFORMED_REQUEST:
		return EGRESS_DNS_FORMERR;
	default:
		return EGRESS_DNS_SERVFAIL;
	}
}

size_t
native_answer(enum egress_reason reason, const struct addr *a, uint32_t ttl,
    uint8_t out[EGRESS_NATIVE_ANSWER])
{
	native_reply(reason, out);
	out[8] = native_rcode(reason);
	out[9] = a != NULL && reason == EGRESS_ALLOWED && a->family == AF_INET ? 1 : 0;
	if (out[9] == 0)
		ttl = 0;
	out[10] = (uint8_t)(ttl >> 24);
	out[11] = (uint8_t)(ttl >> 16);
	out[12] = (uint8_t)(ttl >> 8);
	out[13] = (uint8_t)ttl;
	if (out[9])
		memcpy(out + 14, a->b, 4);
	else
		memset(out + 14, 0, 4);
	return EGRESS_NATIVE_ANSWER;
}
