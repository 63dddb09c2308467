/*
 * parent.h: HTTP/1.1 as egressd speaks it to a parent proxy (parent.c), both directions:
 * the CONNECT request written out (with Basic Proxy-Authorization) and the parent's
 * answer head parsed in. The parent is the operator's, but its bytes are read as
 * strictly as a client's: bounded, pure, no allocation.
 */
#ifndef EGRESS_PROTO_PARENT_H
#define EGRESS_PROTO_PARENT_H

#include "proto.h"

#define EGRESS_PARENT_HEAD_MAX 8192    /* the answer's status line, headers, blank line */
#define EGRESS_PARENT_AUTH_MAX 512     /* user:password, before base64 */
#define EGRESS_PARENT_AUTH_B64_MAX (((EGRESS_PARENT_AUTH_MAX + 2) / 3) * 4 + 1)
#define EGRESS_PARENT_AUTHORITY_MAX (EGRESS_HOST_MAX + 8) /* [v6]:port or name:port */
#define EGRESS_PARENT_REQUEST_MAX (2 * EGRESS_PARENT_AUTHORITY_MAX + \
	EGRESS_PARENT_AUTH_B64_MAX + 128)

/* The parent's answer to CONNECT: pointers into the caller's buffer. */
struct parent_answer {
	int status;                  /* 100..599 */
	const uint8_t *line;         /* the status line, without its line end */
	size_t line_len;
	size_t head_len;             /* bytes up to and including the blank line: what
	                              * follows belongs to the tunnel */
};

/*
 * Parses the answer head in buf[0..len). OK: a is filled (the caller decides on
 * a->status: 2xx is the tunnel). NEED_MORE: no blank line yet and len is under
 * EGRESS_PARENT_HEAD_MAX. ERROR with *why (static text): a status line that is not
 * "HTTP/1.x DDD[ reason]", a NUL, a bare CR or another control byte than HTAB, or no end
 * of the head within EGRESS_PARENT_HEAD_MAX. Lines end in CRLF or LF (RFC 9112 s2.2).
 */
enum proto_status parent_parse_answer(const uint8_t *buf, size_t len, struct parent_answer *a,
    const char **why);

/*
 * "CONNECT authority HTTP/1.1", Host, and with auth_b64 (NULL: none) Proxy-Authorization:
 * Basic, into out. The authority is egressd's own (a canonical name or a formatted
 * address, with the port). Returns the length, or 0 when it does not fit or the
 * authority or credential holds a byte a header may not.
 */
size_t parent_connect_request(const char *authority, const char *auth_b64, uint8_t *out,
    size_t cap);

/*
 * Base64 (RFC 4648, padded) of in[0..n) into out with its NUL; the length without the
 * NUL, or 0 when it does not fit in cap.
 */
size_t parent_base64(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
