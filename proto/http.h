/*
 * http.h: HTTP/1.1 as egressd's frontend speaks it (http.c): the request head parsed in
 * (CONNECT and absolute-form forwarding), the head forwarded upstream and error
 * responses written out, and the framing of the one forwarded body.
 */
#ifndef EGRESS_PROTO_HTTP_H
#define EGRESS_PROTO_HTTP_H

#include "proto.h"

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

#endif
