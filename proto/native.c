/*
 * native.c: EGR1, the native connector's framing (docs/native.md), both directions. The
 * frontend egress-broker speaks on behalf of fd-4 clients, its DNS question verb, which
 * the sandbox's stub resolver speaks, and its transparent verb (a connect that
 * egress-relay's transparent listener makes for the workload: the same request, another
 * receipt frontend).
 *
 * egressd's side trusts nothing of the bytes: a pure, bounded parser like the others, a
 * fixed 9-byte head and a host of at most 255 bytes, which goes through host_parse like
 * every host (native_parse, native.h). The verb byte is checked as soon as it arrives, so
 * an unknown verb (and, in an older egressd, the question verb itself) is refused at once.
 * The clients' side trusts egressd's replies only as far as their framing: the magic,
 * and for an answer a count of 0 or 1; what a code means is egress_reason_of_code's to say.
 */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "native.h"
#include "wire.h"

static bool
native_verb_known(uint8_t verb)
{
	return verb == EGRESS_NATIVE_CONNECT || verb == EGRESS_NATIVE_QUESTION ||
	    verb == EGRESS_NATIVE_TRANSPARENT;
}

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
native_parse_frame(const uint8_t *buf, size_t len, size_t *consumed,
    struct native_request *req, struct proto_error *err)
{
	size_t hostlen;

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
	if (len >= 6 && !native_verb_known(buf[5]))
		return native_fail(err, EGRESS_MALFORMED_REQUEST, "unknown EGR1 verb", NULL, 0);
	if (len >= 6)
		req->verb = buf[5];          /* known from here on, also when refused */
	if (len < EGRESS_NATIVE_HEAD)
		return PROTO_NEED_MORE;
	hostlen = buf[8];
	if (req->verb == EGRESS_NATIVE_QUESTION) {
		req->qtype = wire_get16(buf + 6);
		if (req->qtype == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "qtype 0", NULL, 0);
		if (hostlen == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "empty qname", NULL, 0);
	} else {
		req->port = wire_get16(buf + 6);
		if (req->port == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "port 0", NULL, 0);
		if (hostlen == 0)
			return native_fail(err, EGRESS_MALFORMED_REQUEST, "empty host", NULL, 0);
	}
	if (len < EGRESS_NATIVE_HEAD + hostlen)
		return PROTO_NEED_MORE;
	*consumed = EGRESS_NATIVE_HEAD + hostlen;
	return PROTO_OK;
}

enum proto_status
native_refuse_name(const uint8_t *buf, size_t *consumed, struct native_request *req,
    struct proto_error *err, const char *why)
{
	size_t hostlen = *consumed - EGRESS_NATIVE_HEAD;

	*consumed = 0;
	if (req->verb != EGRESS_NATIVE_QUESTION) {
		err->has_port = true;        /* checked by native_parse_frame: not 0 */
		err->port = req->port;
	}
	return native_fail(err, EGRESS_BAD_HOST, why, buf + EGRESS_NATIVE_HEAD, hostlen);
}

size_t
native_reply(enum egress_reason reason, uint8_t out[EGRESS_NATIVE_REPLY])
{
	memcpy(out, EGRESS_NATIVE_MAGIC, 4);
	wire_put32(out + 4, (uint32_t)egress_reason_code(reason));
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
	wire_put32(out + 10, out[9] ? ttl : 0);
	if (out[9])
		memcpy(out + 14, a->b, 4);
	else
		memset(out + 14, 0, 4);
	return EGRESS_NATIVE_ANSWER;
}

size_t
native_request_build(uint8_t verb, uint16_t arg, const char *name, size_t namelen,
    uint8_t out[EGRESS_NATIVE_REQUEST_MAX])
{
	if (!native_verb_known(verb) || arg == 0 || namelen == 0 ||
	    namelen > EGRESS_NATIVE_NAME_MAX)
		return 0;
	memcpy(out, EGRESS_NATIVE_MAGIC, 4);
	out[4] = EGRESS_NATIVE_VERSION;
	out[5] = verb;
	wire_put16(out + 6, arg);
	out[8] = (uint8_t)namelen;
	memcpy(out + EGRESS_NATIVE_HEAD, name, namelen);
	return EGRESS_NATIVE_HEAD + namelen;
}

int
native_reply_parse(const uint8_t in[EGRESS_NATIVE_REPLY], int32_t *code)
{
	if (memcmp(in, EGRESS_NATIVE_MAGIC, 4) != 0)
		return -1;
	*code = (int32_t)wire_get32(in + 4);
	return 0;
}

int
native_answer_parse(const uint8_t in[EGRESS_NATIVE_ANSWER], struct native_answer *a)
{
	if (native_reply_parse(in, &a->code) == -1 || in[9] > 1)
		return -1;
	a->rcode = in[8];
	a->count = in[9];
	a->ttl = wire_get32(in + 10);
	memcpy(a->addr, in + 14, 4);
	return 0;
}
