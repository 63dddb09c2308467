/*
 * proto.h: the parsers of the frontends egressd sniffs on a principal connection:
 * HTTP/1.1 (CONNECT and absolute-form forwarding), SOCKS5 (RFC 1928, RFC 1929) and
 * SOCKS4/4a. Every function here is pure: it looks at the bytes received so far, never
 * reads past len, never allocates, and answers NEED_MORE, OK or ERROR with a reason.
 * Input may arrive split at any byte or coalesced with what follows (bytes after the
 * request are tunnel payload and are left alone: *consumed says where the request ends).
 */
#ifndef EGRESS_PROTO_H
#define EGRESS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "policy.h"

enum proto_status {
	PROTO_ERROR = -1,
	PROTO_NEED_MORE = 0,
	PROTO_OK = 1,
};

/* Why a request was refused before any policy decision. */
struct proto_error {
	enum egress_reason reason;   /* malformed-request, bad-host, unsupported */
	int http_status;             /* HTTP status to send (400, 405, 431...) */
	int socks_rep;               /* SOCKS: the status byte sent (SOCKS5: what is in the
	                              * reply); -1: none sent by the parser, use the table's */
	const char *why;             /* static text for the log */
	const uint8_t *raw;          /* the offending host bytes, for the receipt's "raw" */
	size_t raw_len;
	bool has_port;               /* bad-host: the request's port (1..65535) was valid, */
	uint16_t port;               /* so the receipt still names it */
};

/* --- http.c -------------------------------------------------------------------------- */

#define EGRESS_HTTP_HEAD_MAX 16384   /* request line + headers + blank line */
#define EGRESS_HTTP_HEADERS_MAX 100  /* header lines */
#define EGRESS_HTTP_METHOD_MAX 16
#define EGRESS_HTTP_CHUNK_LINE_MAX 1024 /* chunk-size line incl. extensions */

struct http_header {
	const uint8_t *name;         /* into the caller's buffer */
	size_t name_len;
	const uint8_t *value;        /* leading and trailing OWS removed */
	size_t value_len;
};

enum http_kind {
	HTTP_CONNECT = 1,            /* CONNECT host:port */
	HTTP_FORWARD,                /* METHOD http://host[:port]/path */
};

enum http_body {
	HTTP_BODY_NONE = 0,
	HTTP_BODY_LENGTH,            /* Content-Length: content_length */
	HTTP_BODY_CHUNKED,           /* Transfer-Encoding: chunked (last coding) */
};

struct http_request {
	enum http_kind kind;
	char method[EGRESS_HTTP_METHOD_MAX + 1];
	int version;                 /* 10 or 11 */
	struct host host;            /* canonical, from the request target (never Host:) */
	uint16_t port;               /* CONNECT: required, 1..65535; forward: default 80 */
	const uint8_t *path;         /* forward: origin-form path and query ("/" if empty; may
	                              * start with '?' for http://host?q: the forward head
	                              * adds the '/') */
	size_t path_len;
	struct http_header headers[EGRESS_HTTP_HEADERS_MAX];
	size_t nheaders;
	enum http_body body;
	uint64_t content_length;
	size_t head_len;             /* bytes up to and including the blank line */
};

/*
 * Parses one request head. OK: req is filled and head_len says where the head ends.
 * ERROR: err says why and which status to answer (400 malformed-request or bad-host, 405
 * unsupported, 431 too large). Leading empty lines (CRLF) are skipped.
 */
enum proto_status http_parse_request(const uint8_t *buf, size_t len, struct http_request *req,
    struct proto_error *err);

/* What the header lines said so far about Host, credentials and body framing (internal). */
struct http_seen {
	unsigned host;
	unsigned proxy_auth;
	bool length;
	bool te;
	unsigned te_chunked;         /* times "chunked" appeared */
	bool te_chunked_last;        /* ... and it is the last coding so far */
	bool te_coding;              /* at least one coding */
};

/*
 * A request head parsed as it arrives: each call looks only at the bytes that came since
 * the last one (and the CR before them), so a head sent a byte at a time costs linear
 * work, not quadratic. Zero it before the first call. Fields are internal but for
 * examined (tests assert that the work is linear) and start (where the request line
 * begins, after any empty lines).
 */
struct http_head {
	size_t off;                  /* start of the first line not parsed yet */
	size_t scan;                 /* where the search for that line's end resumes */
	size_t start;                /* start of the request line */
	size_t method;               /* bytes of a partial request line's method checked */
	bool method_done;            /* ... up to its space */
	bool request_line;           /* parsed: header lines follow */
	bool resumed;                /* an earlier call answered NEED_MORE */
	struct http_seen seen;
	uint64_t examined;           /* bytes looked at, over all calls */
};
/*
 * http_parse_request, resumed: buf holds every byte of the previous call (it may have
 * moved) and perhaps more, and req is the same struct each time (it carries what the
 * request line said). The answer for each buf is exactly http_parse_request's. Once the
 * head is complete it is parsed whole once more, so that OK leaves req pointing into
 * this call's buf. After OK or ERROR the state is spent: zero it for another request.
 */
enum proto_status http_head_parse(struct http_head *h, const uint8_t *buf, size_t len,
    struct http_request *req, struct proto_error *err);

/*
 * Writes the head egressd sends upstream for a HTTP_FORWARD request: the request line in
 * origin form as HTTP/1.1, Host set to the target, the client's headers without hop-by-hop
 * ones (Connection and the names it lists, Keep-Alive, Proxy-*, TE, Trailer, Upgrade,
 * Host), with Content-Length / Transfer-Encoding kept for the body, then
 * "Connection: close". Returns the length, or 0 if it does not fit in cap or req is not a
 * HTTP_FORWARD request.
 */
size_t http_forward_head(const struct http_request *req, uint8_t *out, size_t cap);

/* An error response: status line, Egress-Reason, Connection: close, a text body. */
size_t http_error_response(int status, enum egress_reason reason, uint8_t *out, size_t cap);

/* Incremental scanner of a chunked body, to find where exactly one request ends; zero it
 * before the first call. */
struct http_chunked {
	int state;                   /* internal */
	uint64_t left;               /* bytes of the current chunk still to come */
	size_t line;                 /* bytes of the current size/trailer line so far */
	bool done;
};
/*
 * Scans len more bytes of a chunked body. Returns OK when the body (last chunk and
 * trailers) ended, *consumed being the bytes of buf that belong to it; NEED_MORE when all
 * of buf belongs to it and more is needed; ERROR for malformed framing, *consumed being
 * the bytes of buf before the offending one (0 once the error is known).
 */
enum proto_status http_chunked_scan(struct http_chunked *c, const uint8_t *buf, size_t len,
    size_t *consumed, struct proto_error *err);

/*
 * The body of the one request egressd forwards, framed by what its head said: nothing,
 * Content-Length or chunked (http_chunked_scan). It decides which client bytes go
 * upstream; everything after the body is never forwarded. Start it with
 * http_framing_start, then feed it every client byte after the head exactly once, in
 * order, however they are split.
 */
struct http_framing {
	enum http_body body;
	uint64_t left;               /* Content-Length: body bytes still to come */
	struct http_chunked chunked;
	enum proto_status status;    /* NEED_MORE until the body ended (OK) or broke (ERROR) */
};
void http_framing_start(struct http_framing *f, enum http_body body, uint64_t content_length);
/*
 * Takes len more client bytes. NEED_MORE: all of them belong to the body (*taken == len)
 * and more is to come. OK: the body is complete; its last *taken bytes were the first of
 * buf, the rest is not part of it (and every later call takes 0 and answers OK). ERROR:
 * malformed chunked framing; *taken bytes came before the offending one (0 on later
 * calls). Whatever the split, the totals taken and the final answer are the same.
 */
enum proto_status http_framing_take(struct http_framing *f, const uint8_t *buf, size_t len,
    size_t *taken, struct proto_error *err);

/* --- socks.c ------------------------------------------------------------------------- */

#define EGRESS_SOCKS_NAME_MAX 255    /* SOCKS4a host and user id, SOCKS5 name */

struct socks_request {
	int version;                 /* 4 or 5 */
	bool by_name;                /* SOCKS5 ATYP 3 or SOCKS4a: the client sent a name */
	struct host host;            /* canonical */
	uint16_t port;               /* may be 0: the policy refuses it */
};

enum socks5_stage {
	SOCKS5_GREETING = 0,
	SOCKS5_AUTH,                 /* RFC 1929 username/password, any credential accepted */
	SOCKS5_REQUEST,
	SOCKS5_DONE,
};

struct socks5 {
	enum socks5_stage stage;
};

/*
 * Takes the next SOCKS5 message from buf. OK: *consumed bytes were one message; reply
 * (replylen bytes, at most 10) must be sent to the client; when the stage becomes
 * SOCKS5_DONE, req holds the CONNECT request and no reply is written (the caller answers
 * after its decision with socks5_reply). ERROR: reply holds the failure answer to send
 * before closing (may be empty), err says why.
 */
enum proto_status socks5_step(struct socks5 *s, const uint8_t *buf, size_t len,
    size_t *consumed, uint8_t reply[10], size_t *replylen, struct socks_request *req,
    struct proto_error *err);
/* A complete reply with BND.ADDR 0.0.0.0:0. */
size_t socks5_reply(uint8_t rep, uint8_t out[10]);

/* One SOCKS4 or SOCKS4a request; OK: *consumed bytes were the request. */
enum proto_status socks4_parse(const uint8_t *buf, size_t len, size_t *consumed,
    struct socks_request *req, struct proto_error *err);
/* The 8-byte reply, DSTPORT and DSTIP zero. */
size_t socks4_reply(uint8_t cd, uint8_t out[8]);

/* --- native.c ------------------------------------------------------------------------ */

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

enum proto_status native_parse(const uint8_t *buf, size_t len, size_t *consumed,
    struct native_request *req, struct proto_error *err);
/* The reply for a reason: 0 for allowed, -(1000 + reason) otherwise. */
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

#endif
