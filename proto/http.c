/*
 * http.c: the HTTP/1.1 frontend of egressd. It parses one request head (CONNECT
 * host:port, or an absolute-form http:// request that egressd forwards once), writes the
 * head sent upstream for the latter, writes error responses, and frames that one
 * request's body (none, Content-Length, or chunked) to find where exactly it ends: the
 * framing alone decides which client bytes after the head go upstream.
 *
 * Trusts nothing it reads: every byte comes from the confined workload. The parser is a
 * pure function over (buf, len) that the daemon calls again with more bytes; it never
 * reads past len, never allocates, and keeps pointers into the caller's buffer only.
 * Hosts are trusted to nobody but host_parse: a target that it refuses is bad-host.
 *
 * Where the RFCs leave a choice, the stricter one is taken, consistently:
 *  - Lines end in CRLF. A bare LF, a bare CR, obs-fold, whitespace before the colon,
 *    control bytes (NUL included) in a field value: 400. A request smuggler relies on two
 *    parsers disagreeing; refusing every lenient spelling leaves nothing to disagree on.
 *  - 400 malformed-request for everything syntactically broken: the request line, the
 *    target (missing, empty, zero or non-numeric port, userinfo, fragment, a path on
 *    CONNECT, a port with a leading zero), header syntax, duplicate Host or
 *    Proxy-Authorization, a body on CONNECT, unframeable bodies (Transfer-Encoding not
 *    ending in chunked, Transfer-Encoding on HTTP/1.0, Transfer-Encoding together with
 *    Content-Length, Content-Length lists or conflicting values), a missing Host on
 *    HTTP/1.1, a method longer than EGRESS_HTTP_METHOD_MAX.
 *  - 400 bad-host when host_parse refuses the target's host; err->raw points at it.
 *  - 405 unsupported for well-formed requests egressd does not serve: origin-form
 *    ("GET /x"), asterisk-form ("OPTIONS *") and absolute URLs of any scheme but http
 *    (https://, ftp://): egressd forwards only absolute http:// URLs; https goes through
 *    CONNECT.
 *  - 431 (malformed-request) for a head over EGRESS_HTTP_HEAD_MAX bytes or over
 *    EGRESS_HTTP_HEADERS_MAX header lines; an over-long request line is part of the head,
 *    so it is 431 too rather than 414.
 *  - 400 malformed-request, like any malformed request (the SPEC's reason table), for a
 *    version other than HTTP/1.0 and HTTP/1.1, well-formed (HTTP/2.0, and so the h2
 *    preface "PRI * HTTP/2.0") or not (not HTTP/DIGIT.DIGIT); not 505.
 *  - Host is required on HTTP/1.1 and optional on HTTP/1.0, but never used: policy and
 *    forwarding take the request target, so a Host that disagrees is ignored.
 *  - The request line is checked while it is still incomplete, as far as the method:
 *    a client that speaks TLS or another binary protocol to the proxy is refused at its
 *    first byte instead of holding a connection until the head limit or the timeout.
 *  - A head that arrives in pieces is parsed where the last piece stopped
 *    (http_head_parse): each byte is looked at a bounded number of times, every line is
 *    judged once when it is complete, and the answer for each prefix is the one-shot
 *    parser's, early refusals (431, the method check) included.
 *  - Content-Length is digits only; identical duplicates are accepted (RFC 9110 s8.6)
 *    and forwarded once.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "http.h"

/* Content-Length and chunk sizes stay below 2^63 so that they fit off_t everywhere. */
#define HTTP_LENGTH_MAX ((uint64_t)INT64_MAX)
#define HTTP_PORT_DIGITS_MAX 5          /* "65535" */
#define HTTP_VERSION_LEN 8              /* "HTTP/1.1" */
#define HTTP_ERROR_RESPONSE_MAX 512     /* an error response is short and fixed */

#define HTTP_WHY_ONLY_HTTP "egressd forwards only absolute http:// URLs"

/* --- characters ---------------------------------------------------------------------- */

/* RFC 9110 s5.6.2 tchar. */
static bool
http_tchar(uint8_t c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* RFC 9110 s5.5 field-vchar, SP and HTAB: what a field value may hold. */
static bool
http_value_char(uint8_t c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* RFC 3986 s3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
static bool
http_scheme_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '+' || c == '-' || c == '.';
}

static bool
http_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static uint8_t
http_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}

/* Case-insensitive comparison of p[0..n) with the lower-case literal s. */
static bool
http_ieq(const uint8_t *p, size_t n, const char *s)
{
	size_t i;

	if (strlen(s) != n)
		return false;
	for (i = 0; i < n; i++)
		if (http_lower(p[i]) != (uint8_t)s[i])
			return false;
	return true;
}

static void
http_trim(const uint8_t **p, size_t *n)
{
	while (*n > 0 && http_ows((*p)[0])) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && http_ows((*p)[*n - 1]))
		(*n)--;
}

/* --- errors -------------------------------------------------------------------------- */

static enum proto_status
http_fail(struct proto_error *err, int status, enum egress_reason reason, const char *why)
{
	err->reason = reason;
	err->http_status = status;
	err->socks_rep = -1;
	err->why = why;
	return PROTO_ERROR;
}

static enum proto_status
http_bad(struct proto_error *err, const char *why)
{
	return http_fail(err, 400, EGRESS_MALFORMED_REQUEST, why);
}

static enum proto_status
http_unsupported(struct proto_error *err, const char *why)
{
	return http_fail(err, 405, EGRESS_UNSUPPORTED, why);
}

/* --- lines --------------------------------------------------------------------------- */

/*
 * The next line end in buf[from..lim), from being where an earlier search stopped (the
 * bytes before it hold no CR or LF): 1 with *end at its CR; 0 when the line is not
 * complete within lim, *from then being where to resume (a CR at lim - 1 is looked at
 * again, its LF may come next); -1 with *why for a bare LF or a bare CR. *examined counts
 * the bytes looked at.
 */
static int
http_next_line(const uint8_t *buf, size_t *from, size_t lim, size_t *end, const char **why,
    uint64_t *examined)
{
	size_t i;

	for (i = *from; i < lim; i++) {
		(*examined)++;
		if (buf[i] == '\n') {
			*why = "bare LF line ending (lines end in CRLF)";
			return -1;
		}
		if (buf[i] != '\r')
			continue;
		if (i + 1 >= lim) {
			*from = i;
			return 0;
		}
		if (buf[i + 1] != '\n') {
			*why = "bare CR";
			return -1;
		}
		*end = i;
		*from = i + 2;
		return 1;
	}
	*from = i;
	return 0;
}

/*
 * The request line is not complete yet: refuse now if its method already cannot be one,
 * so that binary protocols are answered at once. p[0..n) is what has arrived of it; the
 * method's first h->method bytes were checked by an earlier call, so each byte is looked
 * at once and at most EGRESS_HTTP_METHOD_MAX + 1 of them in all.
 */
static enum proto_status
http_partial_request_line(struct http_head *h, const uint8_t *p, size_t n,
    struct proto_error *err)
{
	size_t i;

	if (n == 1 && p[0] == '\r')
		return PROTO_NEED_MORE;         /* a leading empty line, not yet complete */
	for (i = h->method; i < n && !h->method_done; i++) {
		h->examined++;
		if (p[i] == ' ') {
			if (i == 0)
				return http_bad(err, "request line starts with a space");
			h->method_done = true;
			break;
		}
		if (i >= EGRESS_HTTP_METHOD_MAX)
			return http_bad(err, "method longer than EGRESS_HTTP_METHOD_MAX");
		if (!http_tchar(p[i]))
			return http_bad(err, "not an HTTP request (method is not a token)");
	}
	h->method = i;
	return PROTO_NEED_MORE;
}

/* More bytes are needed: fine below the head limit, 431 at it. */
static enum proto_status
http_incomplete(size_t len, struct proto_error *err)
{
	if (len >= EGRESS_HTTP_HEAD_MAX)
		return http_fail(err, 431, EGRESS_MALFORMED_REQUEST,
		    "request head larger than EGRESS_HTTP_HEAD_MAX");
	return PROTO_NEED_MORE;
}

/* --- request target ------------------------------------------------------------------ */

/* A port: 1..5 digits, no leading zero, 1..65535. */
static int
http_port(const uint8_t *p, size_t n, uint16_t *port, const char **why)
{
	uint32_t v = 0;
	size_t i;

	if (n == 0) {
		*why = "empty port";
		return -1;
	}
	if (n > HTTP_PORT_DIGITS_MAX) {
		*why = "port longer than five digits";
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9') {
			*why = "port is not a decimal number";
			return -1;
		}
		v = v * 10 + (uint32_t)(p[i] - '0');
	}
	if (v == 0) {
		*why = "port 0";
		return -1;
	}
	if (p[0] == '0') {
		*why = "port with a leading zero";
		return -1;
	}
	if (v > UINT16_MAX) {
		*why = "port above 65535";
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

/*
 * host [":" port] of an authority (no userinfo). An IPv6 host is bracketed and passed to
 * host_parse with its brackets. Without a port: 80 unless port_required (CONNECT).
 */
static enum proto_status
http_authority(const uint8_t *a, size_t n, bool port_required, struct http_request *req,
    struct proto_error *err)
{
	const uint8_t *colon = NULL, *rbracket;
	const char *why = NULL;
	size_t hlen;

	if (memchr(a, '@', n) != NULL)
		return http_bad(err, "userinfo in the request target");
	if (n > 0 && a[0] == '[') {
		if ((rbracket = memchr(a, ']', n)) == NULL)
			return http_bad(err, "'[' without ']' in the request target");
		hlen = (size_t)(rbracket - a) + 1;
		if (hlen < n) {
			if (a[hlen] != ':')
				return http_bad(err, "bytes after ']' in the request target");
			colon = a + hlen;
		}
	} else {
		colon = memchr(a, ':', n);
		hlen = colon != NULL ? (size_t)(colon - a) : n;
	}
	if (hlen == 0)
		return http_bad(err, "request target without a host");
	if (colon == NULL) {
		if (port_required)
			return http_bad(err, "CONNECT target without a port");
		req->port = 80;
	} else if (http_port(colon + 1, (size_t)(a + n - colon - 1), &req->port, &why) == -1)
		return http_bad(err, why);
	if (host_parse((const char *)a, hlen, &req->host, &why) == -1) {
		err->raw = a;
		err->raw_len = hlen;
		err->has_port = true;        /* parsed above, or the default 80 */
		err->port = req->port;
		return http_fail(err, 400, EGRESS_BAD_HOST, why);
	}
	return PROTO_OK;
}

/* CONNECT: authority-form only, RFC 9112 s3.2.3. */
static enum proto_status
http_connect_target(const uint8_t *t, size_t n, struct http_request *req,
    struct proto_error *err)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i] == '/' || t[i] == '?' || t[i] == '#')
			return http_bad(err, "CONNECT target is not host:port (authority form)");
	req->kind = HTTP_CONNECT;
	return http_authority(t, n, true, req, err);
}

/* Anything else: absolute-form http:// only, RFC 9112 s3.2.2. */
static enum proto_status
http_absolute_target(const uint8_t *t, size_t n, struct http_request *req,
    struct proto_error *err)
{
	static const uint8_t slash[] = "/";
	const uint8_t *auth;
	size_t i, alen;
	enum proto_status r;

	if (n == 1 && t[0] == '*')
		return http_unsupported(err, "asterisk-form: " HTTP_WHY_ONLY_HTTP);
	if (t[0] == '/')
		return http_unsupported(err, "origin-form: " HTTP_WHY_ONLY_HTTP);
	/* RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
	if (!((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= 'A' && t[0] <= 'Z')))
		return http_bad(err, "request target is not an absolute URL");
	for (i = 1; i < n && t[i] != ':'; i++)
		if (!http_scheme_char(t[i]))
			return http_bad(err, "request target is not an absolute URL");
	if (i == n)
		return http_bad(err, "request target is not an absolute URL");
	if (!http_ieq(t, i, "http"))
		return http_unsupported(err, HTTP_WHY_ONLY_HTTP);
	if (n - i < 3 || t[i + 1] != '/' || t[i + 2] != '/')
		return http_bad(err, "http: URL without //authority");
	if (memchr(t, '#', n) != NULL)
		return http_bad(err, "fragment in the request target");

	auth = t + i + 3;
	for (alen = 0; auth + alen < t + n; alen++)
		if (auth[alen] == '/' || auth[alen] == '?')
			break;
	req->kind = HTTP_FORWARD;
	if ((r = http_authority(auth, alen, false, req, err)) != PROTO_OK)
		return r;
	req->path = auth + alen;
	req->path_len = (size_t)(t + n - req->path);
	if (req->path_len == 0) {
		req->path = slash;
		req->path_len = 1;
	}
	return PROTO_OK;
}

/* --- request line -------------------------------------------------------------------- */

static enum proto_status
http_request_line(const uint8_t *p, size_t n, struct http_request *req,
    struct proto_error *err)
{
	const uint8_t *sp1, *sp2, *target, *version;
	size_t mlen, tlen, vlen, i;

	if ((sp1 = memchr(p, ' ', n)) == NULL)
		return http_bad(err, "request line without a target");
	mlen = (size_t)(sp1 - p);
	if (mlen == 0)
		return http_bad(err, "request line starts with a space");
	if (mlen > EGRESS_HTTP_METHOD_MAX)
		return http_bad(err, "method longer than EGRESS_HTTP_METHOD_MAX");
	for (i = 0; i < mlen; i++)
		if (!http_tchar(p[i]))
			return http_bad(err, "not an HTTP request (method is not a token)");

	target = sp1 + 1;
	if ((sp2 = memchr(target, ' ', (size_t)(p + n - target))) == NULL)
		return http_bad(err, "request line without an HTTP version");
	tlen = (size_t)(sp2 - target);
	if (tlen == 0)
		return http_bad(err, "empty request target");
	version = sp2 + 1;
	vlen = (size_t)(p + n - version);
	if (memchr(version, ' ', vlen) != NULL)
		return http_bad(err, "extra space in the request line");

	/* HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive (RFC 9112 s2.3) */
	if (vlen != HTTP_VERSION_LEN || memcmp(version, "HTTP/", 5) != 0 ||
	    version[5] < '0' || version[5] > '9' || version[6] != '.' ||
	    version[7] < '0' || version[7] > '9')
		return http_bad(err, "malformed HTTP version");
	if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
		return http_bad(err, "HTTP version other than 1.0 and 1.1");
	req->version = version[7] == '1' ? 11 : 10;

	for (i = 0; i < tlen; i++)
		if (target[i] <= 0x20 || target[i] >= 0x7f)
			return http_bad(err, "control or non-ASCII byte in the request target");
	memcpy(req->method, p, mlen);
	req->method[mlen] = '\0';

	/* Methods are case-sensitive (RFC 9110 s9.1): "connect" is not CONNECT. */
	if (mlen == 7 && memcmp(p, "CONNECT", 7) == 0)
		return http_connect_target(target, tlen, req, err);
	return http_absolute_target(target, tlen, req, err);
}

/* --- header lines -------------------------------------------------------------------- */

static enum proto_status
http_content_length(const uint8_t *v, size_t n, struct http_request *req,
    struct http_seen *seen, struct proto_error *err)
{
	uint64_t x = 0;
	size_t i;

	if (n == 0)
		return http_bad(err, "empty Content-Length");
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return http_bad(err, "Content-Length is not digits only");
		if (x > (HTTP_LENGTH_MAX - (uint64_t)(v[i] - '0')) / 10)
			return http_bad(err, "Content-Length too large");
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (seen->length && x != req->content_length)
		return http_bad(err, "Content-Length values differ");
	seen->length = true;
	req->content_length = x;
	return PROTO_OK;
}

/* One Transfer-Encoding line: a comma list of codings, RFC 9112 s6.1. */
static void
http_transfer_encoding(const uint8_t *v, size_t n, struct http_seen *seen)
{
	const uint8_t *e, *comma;
	size_t elen;

	seen->te = true;
	while (n > 0) {
		comma = memchr(v, ',', n);
		e = v;
		elen = comma != NULL ? (size_t)(comma - v) : n;
		v += elen;
		n -= elen;
		if (comma != NULL) {
			v++;
			n--;
		}
		http_trim(&e, &elen);
		if (elen == 0)
			continue;       /* empty list elements are allowed and mean nothing */
		seen->te_coding = true;
		seen->te_chunked_last = http_ieq(e, elen, "chunked");
		if (seen->te_chunked_last)
			seen->te_chunked++;
	}
}

static enum proto_status
http_header_line(const uint8_t *p, size_t n, struct http_request *req,
    struct http_seen *seen, struct proto_error *err)
{
	struct http_header *h;
	const uint8_t *v;
	size_t i, j, vlen;

	if (http_ows(p[0]))
		return http_bad(err, "obs-fold (header line starting with whitespace)");
	for (i = 0; i < n && p[i] != ':'; i++) {
		if (http_ows(p[i]))
			return http_bad(err, "whitespace between field name and colon");
		if (!http_tchar(p[i]))
			return http_bad(err, "field name is not a token");
	}
	if (i == n)
		return http_bad(err, "header line without a colon");
	if (i == 0)
		return http_bad(err, "empty field name");
	v = p + i + 1;
	vlen = n - i - 1;
	for (j = 0; j < vlen; j++)
		if (!http_value_char(v[j]))
			return http_bad(err, "control byte in a field value");
	http_trim(&v, &vlen);

	h = &req->headers[req->nheaders++];
	h->name = p;
	h->name_len = i;
	h->value = v;
	h->value_len = vlen;

	if (http_ieq(p, i, "host")) {
		if (++seen->host > 1)
			return http_bad(err, "second Host header");
	} else if (http_ieq(p, i, "proxy-authorization")) {
		/* accepted and ignored: never copied, logged or forwarded */
		if (++seen->proxy_auth > 1)
			return http_bad(err, "second Proxy-Authorization header");
	} else if (http_ieq(p, i, "content-length")) {
		if (req->kind == HTTP_CONNECT)
			return http_bad(err, "CONNECT with Content-Length");
		if (seen->te)
			return http_bad(err, "both Content-Length and Transfer-Encoding");
		return http_content_length(v, vlen, req, seen, err);
	} else if (http_ieq(p, i, "transfer-encoding")) {
		if (req->kind == HTTP_CONNECT)
			return http_bad(err, "CONNECT with Transfer-Encoding");
		if (seen->length)
			return http_bad(err, "both Content-Length and Transfer-Encoding");
		if (req->version == 10)
			return http_bad(err, "Transfer-Encoding in an HTTP/1.0 request");
		http_transfer_encoding(v, vlen, seen);
	}
	return PROTO_OK;
}

/* The head is complete: what can only be judged as a whole. */
static enum proto_status
http_head_done(struct http_request *req, const struct http_seen *seen,
    struct proto_error *err)
{
	if (req->version == 11 && seen->host == 0)
		return http_bad(err, "HTTP/1.1 request without Host");
	if (seen->te) {
		if (!seen->te_coding)
			return http_bad(err, "empty Transfer-Encoding");
		if (!seen->te_chunked_last || seen->te_chunked != 1)
			return http_bad(err,
			    "Transfer-Encoding does not end in chunked: the body cannot be framed");
		req->body = HTTP_BODY_CHUNKED;
	} else if (seen->length)
		req->body = HTTP_BODY_LENGTH;
	else
		req->body = HTTP_BODY_NONE;
	return PROTO_OK;
}

enum proto_status
http_parse_request(const uint8_t *buf, size_t len, struct http_request *req,
    struct proto_error *err)
{
	struct http_head h;

	memset(&h, 0, sizeof(h));
	return http_head_parse(&h, buf, len, req, err);
}

enum proto_status
http_head_parse(struct http_head *h, const uint8_t *buf, size_t len, struct http_request *req,
    struct proto_error *err)
{
	/* Nothing beyond the head limit is ever looked at. */
	size_t lim = len < EGRESS_HTTP_HEAD_MAX ? len : EGRESS_HTTP_HEAD_MAX;
	size_t end = 0;
	const char *why = NULL;
	enum proto_status r;
	int l;

	if (!h->resumed)
		memset(req, 0, sizeof(*req));
	memset(err, 0, sizeof(*err));

	/* Leading empty lines are skipped (RFC 9112 s2.2); they count toward the limit. */
	while (!h->request_line) {
		if ((l = http_next_line(buf, &h->scan, lim, &end, &why, &h->examined)) == -1)
			return http_bad(err, why);
		if (l == 0) {
			h->start = h->off;
			r = http_partial_request_line(h, buf + h->off, lim - h->off, err);
			if (r == PROTO_ERROR || (r = http_incomplete(len, err)) == PROTO_ERROR)
				return r;
			h->resumed = true;
			return r;
		}
		if (end > h->off) {
			h->start = h->off;
			h->examined += end - h->off;
			r = http_request_line(buf + h->off, end - h->off, req, err);
			if (r != PROTO_OK)
				return r;
			h->request_line = true;
		}
		h->off = end + 2;
	}

	/* Header lines, each bounded by the head limit, at most EGRESS_HTTP_HEADERS_MAX. */
	for (;;) {
		if ((l = http_next_line(buf, &h->scan, lim, &end, &why, &h->examined)) == -1)
			return http_bad(err, why);
		if (l == 0) {
			if ((r = http_incomplete(len, err)) == PROTO_NEED_MORE)
				h->resumed = true;
			return r;
		}
		if (end == h->off)
			break;
		if (req->nheaders == EGRESS_HTTP_HEADERS_MAX)
			return http_fail(err, 431, EGRESS_MALFORMED_REQUEST,
			    "more than EGRESS_HTTP_HEADERS_MAX header lines");
		h->examined += end - h->off;
		if ((r = http_header_line(buf + h->off, end - h->off, req, &h->seen, err)) !=
		    PROTO_OK)
			return r;
		h->off = end + 2;
	}
	if (h->resumed) {
		/*
		 * Lines parsed by earlier calls point into where buf was then: the complete
		 * head, at most EGRESS_HTTP_HEAD_MAX bytes, is parsed whole once more here.
		 */
		struct http_head again;

		memset(&again, 0, sizeof(again));
		r = http_head_parse(&again, buf, end + 2, req, err);
		h->examined += again.examined;
		return r;
	}
	req->head_len = end + 2;
	return http_head_done(req, &h->seen, err);
}

/* --- the head sent upstream ---------------------------------------------------------- */

/* A bounded writer: once something does not fit, everything after is dropped. */
struct http_out {
	uint8_t *p;
	size_t cap;
	size_t len;
	bool overflow;
};

static void
http_put(struct http_out *o, const void *s, size_t n)
{
	if (o->overflow || n > o->cap - o->len) {
		o->overflow = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void
http_puts(struct http_out *o, const char *s)
{
	http_put(o, s, strlen(s));
}

/* True when the client's Connection headers list name (RFC 9110 s7.6.1). */
static bool
http_connection_lists(const struct http_request *req, const uint8_t *name, size_t nlen)
{
	const struct http_header *h;
	const uint8_t *v, *e, *comma;
	size_t i, j, n, elen;

	for (i = 0; i < req->nheaders; i++) {
		h = &req->headers[i];
		if (!http_ieq(h->name, h->name_len, "connection"))
			continue;
		v = h->value;
		n = h->value_len;
		while (n > 0) {
			comma = memchr(v, ',', n);
			e = v;
			elen = comma != NULL ? (size_t)(comma - v) : n;
			v += elen;
			n -= elen;
			if (comma != NULL) {
				v++;
				n--;
			}
			http_trim(&e, &elen);
			if (elen != nlen)
				continue;
			for (j = 0; j < elen; j++)
				if (http_lower(e[j]) != http_lower(name[j]))
					break;
			if (j == elen)
				return true;
		}
	}
	return false;
}

static bool
http_hop_by_hop(const struct http_request *req, const struct http_header *h)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "te", "trailer", "upgrade", "host",
	};
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (http_ieq(h->name, h->name_len, hop[i]))
			return true;
	/* Proxy-Authorization, Proxy-Connection and every other Proxy-* field */
	if (h->name_len >= 6 && http_ieq(h->name, 6, "proxy-"))
		return true;
	/*
	 * The body's framing is never removed, whatever Connection says: dropping it would
	 * let the body be read upstream as a second request.
	 */
	if (http_ieq(h->name, h->name_len, "content-length") ||
	    http_ieq(h->name, h->name_len, "transfer-encoding"))
		return false;
	return http_connection_lists(req, h->name, h->name_len);
}

size_t
http_forward_head(const struct http_request *req, uint8_t *out, size_t cap)
{
	struct http_out o = { out, cap, 0, false };
	const struct http_header *h;
	bool length_sent = false;
	char port[sizeof(":65535")];
	size_t i;

	if (req->kind != HTTP_FORWARD || req->path == NULL || req->path_len == 0)
		return 0;
	http_puts(&o, req->method);
	http_puts(&o, " ");
	/* "http://host?q" has an empty path: origin form is "/?q" (RFC 9112 s3.2.1) */
	if (req->path[0] != '/')
		http_puts(&o, "/");
	http_put(&o, req->path, req->path_len);
	http_puts(&o, " HTTP/1.1\r\nHost: ");
	if (req->host.kind == HOST_IPV6)
		http_puts(&o, "[");
	http_puts(&o, req->host.name);
	if (req->host.kind == HOST_IPV6)
		http_puts(&o, "]");
	if (req->port != 80) {
		snprintf(port, sizeof(port), ":%u", (unsigned)req->port);
		http_puts(&o, port);
	}
	http_puts(&o, "\r\n");
	for (i = 0; i < req->nheaders; i++) {
		h = &req->headers[i];
		if (http_hop_by_hop(req, h))
			continue;
		if (http_ieq(h->name, h->name_len, "content-length")) {
			/* identical duplicates were accepted; upstream sees one */
			if (length_sent)
				continue;
			length_sent = true;
		}
		http_put(&o, h->name, h->name_len);
		http_puts(&o, ":");
		if (h->value_len > 0) {
			http_puts(&o, " ");
			http_put(&o, h->value, h->value_len);
		}
		http_puts(&o, "\r\n");
	}
	http_puts(&o, "Connection: close\r\n\r\n");
	return o.overflow ? 0 : o.len;
}

/* --- error responses ----------------------------------------------------------------- */

size_t
http_error_response(int status, enum egress_reason reason, uint8_t *out, size_t cap)
{
	char tmp[HTTP_ERROR_RESPONSE_MAX];
	const char *name = egress_reason_name(reason);
	int n;

	if (status < 100 || status > 599)
		return 0;
	/* RFC 9110 s15.5.6: a 405 carries Allow; what egressd serves for https is CONNECT. */
	n = snprintf(tmp, sizeof(tmp),
	    "HTTP/1.1 %d %s\r\n"
	    "Egress-Reason: %s\r\n"
	    "%s"
	    "Connection: close\r\n"
	    "Content-Type: text/plain\r\n"
	    "Content-Length: %zu\r\n"
	    "\r\n"
	    "%s\n",
	    status, egress_http_phrase(status), name,
	    status == 405 ? "Allow: CONNECT\r\n" : "",
	    strlen(name) + 1, name);
	if (n < 0 || (size_t)n >= sizeof(tmp) || (size_t)n > cap)
		return 0;
	memcpy(out, tmp, (size_t)n);
	return (size_t)n;
}

/* --- chunked bodies ------------------------------------------------------------------ */

enum {
	CH_SIZE = 0,                 /* hex digits of chunk-size (a zeroed struct starts here) */
	CH_SIZE_WS,                  /* BWS after the size: only ";" may follow */
	CH_EXT,                      /* chunk extensions up to CR */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,                  /* start of a trailer line, or the final CRLF */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_END_LF,
	CH_DONE,
	CH_ERROR,
};

/* The trailer section is bounded like a head. */
#define HTTP_TRAILER_MAX EGRESS_HTTP_HEAD_MAX
/* A chunk size stays below 2^63: one more hex digit past this would exceed it. */
#define HTTP_CHUNK_SIZE_SHIFT_MAX (HTTP_LENGTH_MAX >> 4)

/* The byte at buf[at] broke the framing: what came before it was a valid body so far. */
static enum proto_status
http_chunked_fail(struct http_chunked *c, struct proto_error *err, size_t *consumed, size_t at,
    const char *why)
{
	c->state = CH_ERROR;
	*consumed = at;
	return http_bad(err, why);
}

static int
http_hex(uint8_t b)
{
	if (b >= '0' && b <= '9')
		return b - '0';
	if (b >= 'a' && b <= 'f')
		return b - 'a' + 10;
	if (b >= 'A' && b <= 'F')
		return b - 'A' + 10;
	return -1;
}

/* Inside http_chunked_scan: buf[i - 1] is the offending byte. */
#define CH_FAIL(why) http_chunked_fail(c, err, consumed, i - 1, (why))

enum proto_status
http_chunked_scan(struct http_chunked *c, const uint8_t *buf, size_t len, size_t *consumed,
    struct proto_error *err)
{
	size_t i = 0, n;
	uint8_t b;
	int d;

	*consumed = 0;
	memset(err, 0, sizeof(*err));
	if (c->done || c->state == CH_DONE)
		return PROTO_OK;
	if (c->state == CH_ERROR)
		return http_bad(err, "chunked body already refused");

	while (i < len) {
		if (c->state == CH_DATA) {
			n = len - i;
			if ((uint64_t)n > c->left)
				n = (size_t)c->left;
			i += n;
			c->left -= n;
			if (c->left == 0)
				c->state = CH_DATA_CR;
			continue;
		}
		b = buf[i++];
		switch (c->state) {
		case CH_SIZE:
		case CH_SIZE_WS:
		case CH_EXT:
		case CH_SIZE_LF:
			if (++c->line > EGRESS_HTTP_CHUNK_LINE_MAX)
				return CH_FAIL(
				    "chunk-size line longer than EGRESS_HTTP_CHUNK_LINE_MAX");
			break;
		case CH_TRAILER:
		case CH_TRAILER_NAME:
		case CH_TRAILER_VALUE:
		case CH_TRAILER_LF:
		case CH_END_LF:
			/* in the trailer section left counts its bytes */
			if (++c->left > HTTP_TRAILER_MAX)
				return CH_FAIL("trailer section too large");
			break;
		default:
			break;
		}
		switch (c->state) {
		case CH_SIZE:
			if ((d = http_hex(b)) != -1) {
				if (c->left > HTTP_CHUNK_SIZE_SHIFT_MAX)
					return CH_FAIL("chunk size too large");
				c->left = c->left << 4 | (uint64_t)d;
				break;
			}
			if (c->line == 1)
				return CH_FAIL("chunk size is not hexadecimal");
			if (http_ows(b))
				c->state = CH_SIZE_WS;
			else if (b == ';')
				c->state = CH_EXT;
			else if (b == '\r')
				c->state = CH_SIZE_LF;
			else
				return CH_FAIL("chunk size is not hexadecimal");
			break;
		case CH_SIZE_WS:
			if (b == ';')
				c->state = CH_EXT;
			else if (!http_ows(b))
				return CH_FAIL("whitespace after a chunk size");
			break;
		case CH_EXT:
			if (b == '\r')
				c->state = CH_SIZE_LF;
			else if (!http_value_char(b))
				return CH_FAIL("control byte in a chunk extension");
			break;
		case CH_SIZE_LF:
			if (b != '\n')
				return CH_FAIL("bare CR in a chunk-size line");
			c->line = 0;
			c->state = c->left == 0 ? CH_TRAILER : CH_DATA;
			break;
		case CH_DATA_CR:
			if (b != '\r')
				return CH_FAIL("chunk data not followed by CRLF");
			c->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (b != '\n')
				return CH_FAIL("chunk data not followed by CRLF");
			c->state = CH_SIZE;
			break;
		case CH_TRAILER:
			if (b == '\r')
				c->state = CH_END_LF;
			else if (http_ows(b))
				return CH_FAIL("obs-fold in the trailer section");
			else if (http_tchar(b))
				c->state = CH_TRAILER_NAME;
			else
				return CH_FAIL("trailer field name is not a token");
			break;
		case CH_TRAILER_NAME:
			if (b == ':')
				c->state = CH_TRAILER_VALUE;
			else if (!http_tchar(b))
				return CH_FAIL("trailer field name is not a token");
			break;
		case CH_TRAILER_VALUE:
			if (b == '\r')
				c->state = CH_TRAILER_LF;
			else if (!http_value_char(b))
				return CH_FAIL("control byte in a trailer field");
			break;
		case CH_TRAILER_LF:
			if (b != '\n')
				return CH_FAIL("bare CR in the trailer section");
			c->state = CH_TRAILER;
			break;
		case CH_END_LF:
			if (b != '\n')
				return CH_FAIL("bare CR after the last chunk");
			c->state = CH_DONE;
			c->done = true;
			*consumed = i;
			return PROTO_OK;
		default:
			return CH_FAIL("chunked scanner in an unknown state");
		}
	}
	*consumed = len;
	return PROTO_NEED_MORE;
}
#undef CH_FAIL

/* --- the forwarded body -------------------------------------------------------------- */

void
http_framing_start(struct http_framing *f, enum http_body body, uint64_t content_length)
{
	memset(f, 0, sizeof(*f));
	f->body = body;
	f->left = body == HTTP_BODY_LENGTH ? content_length : 0;
	f->status = body == HTTP_BODY_NONE ||
	    (body == HTTP_BODY_LENGTH && content_length == 0) ? PROTO_OK : PROTO_NEED_MORE;
}

enum proto_status
http_framing_take(struct http_framing *f, const uint8_t *buf, size_t len, size_t *taken,
    struct proto_error *err)
{
	*taken = 0;
	memset(err, 0, sizeof(*err));
	if (f->status == PROTO_OK)
		return PROTO_OK;
	if (f->status == PROTO_ERROR)
		return http_bad(err, "body framing already refused");
	switch (f->body) {
	case HTTP_BODY_LENGTH:
		/* The count goes down as bytes pass: a body split over reads ends where it
		 * ends, and what follows it is never part of it. */
		*taken = (uint64_t)len < f->left ? len : (size_t)f->left;
		f->left -= *taken;
		if (f->left == 0)
			f->status = PROTO_OK;
		break;
	case HTTP_BODY_CHUNKED:
		f->status = http_chunked_scan(&f->chunked, buf, len, taken, err);
		break;
	default:
		f->status = PROTO_OK;
		break;
	}
	return f->status;
}
