/*
 * native.h: EGR1, the native connector (docs/native.md), both directions (native.c):
 * egressd parses requests and encodes replies and answers; egress-broker, egress-connect,
 * the sandbox's stub resolver and egress-relay build requests and decode what comes back.
 */
#ifndef EGRESS_PROTO_NATIVE_H
#define EGRESS_PROTO_NATIVE_H

#include "proto.h"

/*
 * The native connector (docs/native.md): what egress-broker speaks for fd-4 clients.
 *
 *   connect  "EGR1" | version u8 (1) | verb u8 (0) | port u16 | hostlen u8 | host
 *   reply    "EGR1" | code i32          (0: allowed, then the stream is the tunnel;
 *                                        else -(1000 + reason), libegress's codes)
 *
 *   question "EGR1" | version u8 (1) | verb u8 (1) | qtype u16 | qnamelen u8 | qname
 *   answer   "EGR1" | code i32 | rcode u8 | count u8 (0, 1) | ttl u32 | IPv4 [4]
 *            (one question per connection; egressd closes after the answer)
 *
 * Integers are big-endian. It grants nothing the other frontends do not. The verb byte
 * was the flags byte (always 0) before the question verb: an egressd that does not know
 * the verb refuses it with the 8-byte reply, -1003, and closes.
 */
#define EGRESS_NATIVE_MAGIC "EGR1"
#define EGRESS_NATIVE_VERSION 1
#define EGRESS_NATIVE_CONNECT 0          /* verb: a tunnel to host:port */
#define EGRESS_NATIVE_QUESTION 1         /* verb: a DNS question (qname, qtype) */
#define EGRESS_NATIVE_TRANSPARENT 2      /* verb: connect, for egress-relay's transparent
                                          * listener (receipts say transparent) */
#define EGRESS_NATIVE_HEAD 9             /* magic, version, verb, port/qtype, hostlen */
#define EGRESS_NATIVE_NAME_MAX 255       /* hostlen is one byte */
#define EGRESS_NATIVE_REQUEST_MAX (EGRESS_NATIVE_HEAD + EGRESS_NATIVE_NAME_MAX)
#define EGRESS_NATIVE_REPLY 8
#define EGRESS_NATIVE_ANSWER 18          /* reply, rcode, count, ttl, address */

/* DNS response codes (RFC 1035) an answer carries. */
#define EGRESS_DNS_NOERROR 0
#define EGRESS_DNS_FORMERR 1
#define EGRESS_DNS_SERVFAIL 2
#define EGRESS_DNS_NXDOMAIN 3
#define EGRESS_DNS_TYPE_A 1
#define EGRESS_DNS_TYPE_AAAA 28

/*
 * A parsed request. verb is set as soon as its byte was seen, also when the request is
 * refused (ERROR), so that the caller answers a question with an answer; qtype too once
 * the head is complete.
 */
struct native_request {
	uint8_t verb;                /* EGRESS_NATIVE_CONNECT, _QUESTION or _TRANSPARENT */
	struct host host;            /* the connect target, or the question's name */
	uint16_t port;               /* connect: 1..65535; question: 0 */
	uint16_t qtype;              /* question: 1..65535; connect: 0 */
};

/* --- egressd's side: requests in, replies and answers out ------------------------- */

/*
 * The framing of one request, the name's bytes unchecked: OK means a complete head and
 * name (*consumed bytes), the name not yet through host_parse. Use native_parse, which
 * adds that; this half lives apart so that clients, which only build requests and read
 * replies, need no host parser (and no libpolicy) to link native.c.
 */
enum proto_status native_parse_frame(const uint8_t *buf, size_t len, size_t *consumed,
    struct native_request *req, struct proto_error *err);
/* bad-host for the name of a framed request that host_parse refused with why. */
enum proto_status native_refuse_name(const uint8_t *buf, size_t *consumed,
    struct native_request *req, struct proto_error *err, const char *why);

/*
 * One request from the bytes received so far: NEED_MORE, OK (*consumed bytes were the
 * request, req->host canonical), or ERROR with err's reason, as soon as a wrong byte is
 * seen. Bytes after the request are the tunnel's and are left alone.
 */
static inline enum proto_status
native_parse(const uint8_t *buf, size_t len, size_t *consumed, struct native_request *req,
    struct proto_error *err)
{
	enum proto_status st = native_parse_frame(buf, len, consumed, req, err);
	const char *why;

	if (st != PROTO_OK)
		return st;
	if (host_parse((const char *)buf + EGRESS_NATIVE_HEAD, *consumed - EGRESS_NATIVE_HEAD,
	    &req->host, &why) == -1)
		return native_refuse_name(buf, consumed, req, err, why);
	return PROTO_OK;
}

/* The reply for a reason: 0 for allowed, -(1000 + reason) otherwise (egress_reason_code). */
size_t native_reply(enum egress_reason reason, uint8_t out[EGRESS_NATIVE_REPLY]);
/* The rcode a question's answer carries for a reason: NOERROR for allowed, NXDOMAIN for
 * a name the policy refuses (not-allowlisted, denied-by-rule, bad-host), FORMERR for
 * malformed-request, SERVFAIL for anything else. */
uint8_t native_rcode(enum egress_reason reason);
/*
 * A question's answer: the reply's code for reason, its rcode, then one IPv4 address
 * with ttl when a is IPv4 and reason is allowed, else no address and ttl 0.
 */
size_t native_answer(enum egress_reason reason, const struct addr *a, uint32_t ttl,
    uint8_t out[EGRESS_NATIVE_ANSWER]);

/* --- the clients' side: requests out, replies and answers in -------------------------- */

/*
 * The request for verb: arg is the port (connect, transparent) or the qtype (question),
 * name the host or qname in text form (namelen bytes, no NUL needed). Returns its length,
 * or 0 for an unknown verb, arg 0, or a name of 0 or more than EGRESS_NATIVE_NAME_MAX
 * bytes. The name's bytes are egressd's to judge (native_parse), not checked here.
 */
size_t native_request_build(uint8_t verb, uint16_t arg, const char *name, size_t namelen,
    uint8_t out[EGRESS_NATIVE_REQUEST_MAX]);
/*
 * The 8-byte reply to a connect: 0 with *code set (0 allowed, else what egressd sent,
 * which egress_reason_of_code may still find to be no code), -1 when it is not EGR1.
 */
int native_reply_parse(const uint8_t in[EGRESS_NATIVE_REPLY], int32_t *code);
/* A question's 18-byte answer, as native_answer writes it. */
struct native_answer {
	int32_t code;                /* 0, or egressd's code */
	uint8_t rcode;               /* the DNS rcode to answer with */
	uint8_t count;               /* 0 or 1: addr and ttl are the A record */
	uint32_t ttl;
	uint8_t addr[4];
};
/* 0 when in is an answer (magic EGR1, count 0 or 1), -1 otherwise. */
int native_answer_parse(const uint8_t in[EGRESS_NATIVE_ANSWER], struct native_answer *a);

#endif
