/*
 * check_http.c: unit tests for the HTTP frontend (proto/http.c): request heads
 * (CONNECT and absolute-form forwarding), the head sent upstream, error responses and
 * the chunked-body scanner, against SPEC "egressd / Frontends", the reasons table and
 * the vectors of protocol-notes part (a.3).
 *
 * Every input is copied into a heap buffer of exactly its length, so that a read past
 * len is an ASan error in --enable-asan builds. Every accepted request is also fed at
 * every split point (each prefix must be NEED_MORE) and followed by tunnel payload (the
 * head must end at the same byte).
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

#define B(lit) lit, (sizeof(lit) - 1)
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* What a client may send right after its head: a TLS ClientHello, or anything. */
static const char payload[] = "\x16\x03\x01\x00\x43\x01\x00\x00\x3f\x03\x03"
    "GET / HTTP/1.1\r\n\r\n";

/* Renders untrusted bytes for a failure message: printable ASCII as is, the rest \xNN. */
static const char *
show(const void *v, size_t len, char *buf, size_t cap)
{
	const unsigned char *s = v;
	size_t o = 0, i;

	for (i = 0; i < len && o + 8 < cap; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
			buf[o++] = (char)s[i];
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", s[i]);
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/* A copy with no slack: the parser must never look at buf[len]. */
static uint8_t *
exact_copy(const void *s, size_t len)
{
	uint8_t *p = malloc(len == 0 ? 1 : len);

	ck_assert_ptr_nonnull(p);
	if (len > 0)
		memcpy(p, s, len);
	return p;
}

static enum proto_status
parse_exact(const uint8_t *p, size_t len, struct http_request *req, struct proto_error *err)
{
	memset(req, 0xa5, sizeof(*req));        /* garbage: the parser must set everything */
	memset(err, 0xa5, sizeof(*err));
	return http_parse_request(p, len, req, err);
}

/* --- accepted requests --------------------------------------------------------------- */

static const struct http_ok {
	const char *in;
	size_t len;
	enum http_kind kind;
	const char *method;
	int version;
	enum host_kind hkind;
	const char *host;
	uint16_t port;
	const char *path;            /* NULL for CONNECT */
	enum http_body body;
	uint64_t clen;
	size_t nheaders;
} http_ok[] = {
	/* protocol-notes a.3: CONNECT, curl's Host and Basic credentials */
	{ B("CONNECT server.example.com:80 HTTP/1.1\r\nHost: server.example.com\r\n"
	    "Proxy-Authorization: Basic dXNlcjpwYXNz\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "server.example.com", 80, NULL,
	  HTTP_BODY_NONE, 0, 2 },
	{ B("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
	    "User-Agent: curl/8.5.0\r\nProxy-Connection: Keep-Alive\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "example.com", 443, NULL,
	  HTTP_BODY_NONE, 0, 3 },
	/* curl --proxy1.0: HTTP/1.0, Host optional */
	{ B("CONNECT example.com:443 HTTP/1.0\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 10, HOST_NAME, "example.com", 443, NULL,
	  HTTP_BODY_NONE, 0, 0 },
	{ B("CONNECT example.com:443 HTTP/1.0\r\nHost: example.com\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 10, HOST_NAME, "example.com", 443, NULL,
	  HTTP_BODY_NONE, 0, 1 },
	/* curl test1230: bracketed IPv6 */
	{ B("CONNECT [1234:1234:1234::4ce]:8990 HTTP/1.1\r\nHost: [1234:1234:1234::4ce]:8990\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV6, "1234:1234:1234::4ce", 8990, NULL,
	  HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT [2606:4700:4700:0:0:0:0:1111]:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV6, "2606:4700:4700::1111", 443, NULL,
	  HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT [::1]:22 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV6, "::1", 22, NULL, HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT [::FFFF:127.0.0.1]:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV6, "::ffff:127.0.0.1", 443, NULL,
	  HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT 140.82.112.4:22 HTTP/1.1\r\nHost: 140.82.112.4:22\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV4, "140.82.112.4", 22, NULL, HTTP_BODY_NONE, 0, 1 },
	/* a literal the pipeline refuses later as private-address: not the parser's job */
	{ B("CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV4, "127.0.0.1", 80, NULL, HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT 0.0.0.0:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_IPV4, "0.0.0.0", 443, NULL, HTTP_BODY_NONE, 0, 1 },
	/* canonical host: case folded, trailing dot removed */
	{ B("CONNECT Example.COM.:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "example.com", 443, NULL, HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT xn--bcher-kva.example:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "xn--bcher-kva.example", 443, NULL,
	  HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT localhost:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "localhost", 443, NULL, HTTP_BODY_NONE, 0, 1 },
	/* port bounds */
	{ B("CONNECT a.example:1 HTTP/1.1\r\nHost: a.example:1\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 1, NULL, HTTP_BODY_NONE, 0, 1 },
	{ B("CONNECT a.example:65535 HTTP/1.1\r\nHost: a.example\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 65535, NULL, HTTP_BODY_NONE, 0, 1 },
	/* policy uses the target: a Host that disagrees is ignored */
	{ B("CONNECT api.github.com:443 HTTP/1.1\r\nHost: evil.example:80\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "api.github.com", 443, NULL,
	  HTTP_BODY_NONE, 0, 1 },
	/* leading empty lines are skipped */
	{ B("\r\nCONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 443, NULL, HTTP_BODY_NONE, 0, 1 },
	{ B("\r\n\r\n\r\nCONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 443, NULL, HTTP_BODY_NONE, 0, 1 },
	/* field syntax: case-insensitive names, OWS, empty and obs-text values */
	{ B("CONNECT a.example:443 HTTP/1.1\r\nhost: a\r\nX-Empty:\r\nX-Ows: \t v \t\r\n"
	    "X-Obs: caf\xc3\xa9\r\nX-Tab: a\tb\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 443, NULL, HTTP_BODY_NONE, 0, 5 },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHOST:a\r\n!#$%&'*+-.^_`|~09azAZ: tchar\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 443, NULL, HTTP_BODY_NONE, 0, 2 },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n"
	    "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n\r\n"),
	  HTTP_CONNECT, "CONNECT", 11, HOST_NAME, "a.example", 443, NULL, HTTP_BODY_NONE, 0, 3 },
	/* absolute-form forwarding */
	{ B("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://example.com:8080/a/b?c=d&e HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 8080, "/a/b?c=d&e",
	  HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://example.com?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "?q=1", HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://example.com:80/ HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("GET HTTP://EXAMPLE.COM/Path HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "/Path", HTTP_BODY_NONE, 0, 1 },
	{ B("GET hTtP://example.com/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://example.com/%7Euser/a%20b HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "example.com", 80, "/%7Euser/a%20b",
	  HTTP_BODY_NONE, 0, 1 },
	{ B("HEAD http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"),
	  HTTP_FORWARD, "HEAD", 11, HOST_IPV6, "::1", 8080, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://[2001:DB8::1]/x HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_IPV6, "2001:db8::1", 80, "/x", HTTP_BODY_NONE, 0, 1 },
	{ B("GET http://93.184.216.34/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_IPV4, "93.184.216.34", 80, "/", HTTP_BODY_NONE, 0, 1 },
	/* HTTP/1.0, Host optional */
	{ B("GET http://example.com/ HTTP/1.0\r\n\r\n"),
	  HTTP_FORWARD, "GET", 10, HOST_NAME, "example.com", 80, "/", HTTP_BODY_NONE, 0, 0 },
	{ B("POST http://example.com/ HTTP/1.0\r\nContent-Length: 3\r\n\r\n"),
	  HTTP_FORWARD, "POST", 10, HOST_NAME, "example.com", 80, "/", HTTP_BODY_LENGTH, 3, 1 },
	/* bodies */
	{ B("POST http://example.com/up HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/up", HTTP_BODY_LENGTH, 5, 2 },
	{ B("POST http://example.com/ HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_LENGTH, 0, 2 },
	{ B("PUT http://example.com/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
	    "Content-Length: 5\r\n\r\n"),
	  HTTP_FORWARD, "PUT", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_LENGTH, 5, 3 },
	{ B("PUT http://example.com/ HTTP/1.1\r\nHost: x\r\nContent-Length: 005\r\n\r\n"),
	  HTTP_FORWARD, "PUT", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_LENGTH, 5, 2 },
	{ B("PUT http://example.com/ HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n"),
	  HTTP_FORWARD, "PUT", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_LENGTH,
	  9223372036854775807ull, 2 },
	{ B("POST http://example.com/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_CHUNKED, 0, 2 },
	{ B("POST http://example.com/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_CHUNKED, 0, 2 },
	{ B("POST http://example.com/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_CHUNKED, 0, 2 },
	{ B("POST http://example.com/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_CHUNKED, 0, 3 },
	{ B("POST http://example.com/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ,chunked ,\r\n\r\n"),
	  HTTP_FORWARD, "POST", 11, HOST_NAME, "example.com", 80, "/", HTTP_BODY_CHUNKED, 0, 2 },
	/* methods are tokens of up to EGRESS_HTTP_METHOD_MAX */
	{ B("PROPFIND http://dav.example/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "PROPFIND", 11, HOST_NAME, "dav.example", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("ABCDEFGHIJKLMNOP http://a.example/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "ABCDEFGHIJKLMNOP", 11, HOST_NAME, "a.example", 80, "/",
	  HTTP_BODY_NONE, 0, 1 },
	{ B("get http://a.example/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "get", 11, HOST_NAME, "a.example", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("OPTIONS http://a.example/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "OPTIONS", 11, HOST_NAME, "a.example", 80, "/", HTTP_BODY_NONE, 0, 1 },
	{ B("DELETE http://a.example/r/1 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Foo\r\n"
	    "X-Foo: 1\r\nKeep-Alive: timeout=5\r\n\r\n"),
	  HTTP_FORWARD, "DELETE", 11, HOST_NAME, "a.example", 80, "/r/1", HTTP_BODY_NONE, 0, 4 },
	{ B("GET http://a.example/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic dTpw\r\n\r\n"),
	  HTTP_FORWARD, "GET", 11, HOST_NAME, "a.example", 80, "/", HTTP_BODY_NONE, 0, 2 },
	/* CONNECT's target: a path-less http:// URL would be a forward, not a CONNECT */
	{ B("CONNECTX http://a.example/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  HTTP_FORWARD, "CONNECTX", 11, HOST_NAME, "a.example", 80, "/", HTTP_BODY_NONE, 0, 1 },
};

static void
check_host_fixed_point(const struct host *h)
{
	struct host again;
	const char *why = NULL;

	ck_assert_msg(host_parse(h->name, strlen(h->name), &again, &why) == 0,
	    "canonical host \"%s\" does not parse again", h->name);
	ck_assert_str_eq(again.name, h->name);
	ck_assert_int_eq(again.kind, h->kind);
}

static void
check_ok(const struct http_ok *c, const struct http_request *req, enum proto_status r,
    const struct proto_error *err, size_t head_len)
{
	char b[512];

	ck_assert_msg(r == PROTO_OK, "\"%s\": status %d (%d %s), expected OK",
	    show(c->in, c->len, b, sizeof(b)), r, err->http_status,
	    r == PROTO_ERROR ? err->why : "");
	ck_assert_uint_eq(req->head_len, head_len);
	ck_assert_int_eq(req->kind, c->kind);
	ck_assert_str_eq(req->method, c->method);
	ck_assert_int_eq(req->version, c->version);
	ck_assert_int_eq(req->host.kind, c->hkind);
	ck_assert_str_eq(req->host.name, c->host);
	ck_assert_uint_eq(req->port, c->port);
	if (c->path == NULL) {
		ck_assert_ptr_null(req->path);
	} else {
		ck_assert_uint_eq(req->path_len, strlen(c->path));
		ck_assert_msg(memcmp(req->path, c->path, req->path_len) == 0,
		    "path \"%s\", expected \"%s\"",
		    show(req->path, req->path_len, b, sizeof(b)), c->path);
	}
	ck_assert_int_eq(req->body, c->body);
	if (c->body == HTTP_BODY_LENGTH)
		ck_assert_uint_eq(req->content_length, c->clen);
	ck_assert_uint_eq(req->nheaders, c->nheaders);
	check_host_fixed_point(&req->host);
}

START_TEST(test_ok)
{
	const struct http_ok *c = &http_ok[_i];
	struct http_request req;
	struct proto_error err;
	uint8_t *p = exact_copy(c->in, c->len);
	enum proto_status r = parse_exact(p, c->len, &req, &err);

	check_ok(c, &req, r, &err, c->len);
	/* header pointers point into the caller's buffer */
	for (size_t i = 0; i < req.nheaders; i++) {
		ck_assert(req.headers[i].name >= p && req.headers[i].name < p + c->len);
		ck_assert(req.headers[i].value >= p && req.headers[i].value <= p + c->len);
	}
	free(p);
}
END_TEST

/* Every proper prefix of an accepted request is NEED_MORE: never OK or ERROR early. */
START_TEST(test_ok_split)
{
	const struct http_ok *c = &http_ok[_i];
	struct http_request req;
	struct proto_error err;
	char b[512];

	for (size_t k = 0; k < c->len; k++) {
		uint8_t *p = exact_copy(c->in, k);
		enum proto_status r = parse_exact(p, k, &req, &err);

		ck_assert_msg(r == PROTO_NEED_MORE,
		    "prefix of %zu bytes of \"%s\": status %d (%s), expected NEED_MORE", k,
		    show(c->in, c->len, b, sizeof(b)), r, r == PROTO_ERROR ? err.why : "");
		free(p);
	}
}
END_TEST

/* Followed by tunnel payload: the head ends at the same byte. */
START_TEST(test_ok_coalesced)
{
	const struct http_ok *c = &http_ok[_i];
	struct http_request req;
	struct proto_error err;
	size_t n = c->len + sizeof(payload) - 1;
	uint8_t *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	memcpy(p, c->in, c->len);
	memcpy(p + c->len, payload, sizeof(payload) - 1);
	check_ok(c, &req, parse_exact(p, n, &req, &err), &err, c->len);
	free(p);
}
END_TEST

/* --- stored headers ------------------------------------------------------------------ */

static const struct {
	const char *in;
	size_t len;
	size_t idx;
	const char *name;
	const char *value;
} stored[] = {
	{ B("CONNECT a.b:1 HTTP/1.1\r\nHost:   a.b  \r\n\r\n"), 0, "Host", "a.b" },
	{ B("CONNECT a.b:1 HTTP/1.1\r\nHost: a\r\nX-Ows:\t \tv  w\t \r\n\r\n"), 1, "X-Ows", "v  w" },
	{ B("CONNECT a.b:1 HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n\r\n"), 1, "X-Empty", "" },
	{ B("CONNECT a.b:1 HTTP/1.1\r\nHost: a\r\nX-Blank:   \r\n\r\n"), 1, "X-Blank", "" },
	{ B("CONNECT a.b:1 HTTP/1.1\r\nHost: a\r\nX-Colons: a:b::c\r\n\r\n"), 1, "X-Colons", "a:b::c" },
	{ B("CONNECT a.b:1 HTTP/1.1\r\nHost: a\r\nx-MiXeD: V\r\n\r\n"), 1, "x-MiXeD", "V" },
};

START_TEST(test_stored)
{
	struct http_request req;
	struct proto_error err;
	uint8_t *p = exact_copy(stored[_i].in, stored[_i].len);
	const struct http_header *h;

	ck_assert_int_eq(parse_exact(p, stored[_i].len, &req, &err), PROTO_OK);
	ck_assert_uint_gt(req.nheaders, stored[_i].idx);
	h = &req.headers[stored[_i].idx];
	ck_assert_uint_eq(h->name_len, strlen(stored[_i].name));
	ck_assert(memcmp(h->name, stored[_i].name, h->name_len) == 0);
	ck_assert_uint_eq(h->value_len, strlen(stored[_i].value));
	ck_assert(memcmp(h->value, stored[_i].value, h->value_len) == 0);
	free(p);
}
END_TEST

/* --- refused requests ---------------------------------------------------------------- */

#define MAL EGRESS_MALFORMED_REQUEST
#define BADHOST EGRESS_BAD_HOST
#define UNSUP EGRESS_UNSUPPORTED

static const struct http_bad {
	const char *in;
	size_t len;
	int status;
	enum egress_reason reason;
	const char *raw;             /* bad-host: the host bytes err->raw must show */
} http_bad[] = {
	/* not served: 405 unsupported */
	{ B("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"), 405, UNSUP, NULL },
	{ B("GET /index.html HTTP/1.0\r\n\r\n"), 405, UNSUP, NULL },
	{ B("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n"), 405, UNSUP, NULL },
	{ B("GET https://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n"), 405, UNSUP, NULL },
	{ B("GET ftp://a.example/f HTTP/1.1\r\nHost: a.example\r\n\r\n"), 405, UNSUP, NULL },
	{ B("GET ws://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n"), 405, UNSUP, NULL },
	{ B("GET httpx://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 405, UNSUP, NULL },
	{ B("GET a.example:80 HTTP/1.1\r\nHost: a\r\n\r\n"), 405, UNSUP, NULL },
	/* methods are case-sensitive: "connect" is not CONNECT */
	{ B("connect a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 405, UNSUP, NULL },
	{ B("Connect a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 405, UNSUP, NULL },
	/* CONNECT port: required, 1..65535, digits */
	{ B("CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com: HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:0 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:00 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:0443 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:65536 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:99999 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:100000 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:443x HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:https HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:-1 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:+443 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:443:443 HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400, MAL, NULL },
	/* CONNECT target: authority form, no userinfo, no path */
	{ B("CONNECT user:pass@example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT @example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:443/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:443/path HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:443?q HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT example.com:443#f HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT https://example.com:443/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT * HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT :443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT [::1:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT [::1]443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT [::1] HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT ::1:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT 2606:4700::1111:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	/* CONNECT host through host_parse: bad-host, raw = the host bytes */
	{ B("CONNECT 2130706433:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "2130706433" },
	{ B("CONNECT 127.1:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "127.1" },
	{ B("CONNECT 0x7f.1:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "0x7f.1" },
	{ B("CONNECT 0177.0.0.1:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "0177.0.0.1" },
	{ B("CONNECT exa_mple.com:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "exa_mple.com" },
	{ B("CONNECT -a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "-a.example" },
	{ B("CONNECT a..example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "a..example" },
	{ B("CONNECT *.example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "*.example.com" },
	{ B("CONNECT evil.com%00.example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST,
	  "evil.com%00.example.com" },
	{ B("CONNECT a%2eexample:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "a%2eexample" },
	{ B("CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST,
	  "[fe80::1%25eth0]" },
	{ B("CONNECT [1.2.3.4]:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "[1.2.3.4]" },
	{ B("CONNECT [::g]:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "[::g]" },
	{ B("CONNECT a]:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "a]" },
	/* CONNECT has no body */
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"),
	  400, MAL, NULL },
	/* Host: required on 1.1, never twice */
	{ B("CONNECT a.example:443 HTTP/1.1\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nUser-Agent: x\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/ HTTP/1.1\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.0\r\nHost: a\r\nHOST: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nProxy-Authorization: Basic a\r\n"
	    "Proxy-Authorization: Basic b\r\n\r\n"), 400, MAL, NULL },
	/* versions: any but 1.0 and 1.1 is malformed-request, 400 like the rest (not 505) */
	{ B("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/2.0\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.2\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/ HTTP/0.9\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/ HTTP/3.0\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.10\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 http/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.x\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 FTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	/* request line syntax */
	{ B("CONNECT a.example:443\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT  a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443  HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1 \r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B(" CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT\ta.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443\tHTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GE(T http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("ABCDEFGHIJKLMNOPQ http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/\x01 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/\x7f HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example/caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT b\xc3\xbc" "cher.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	/* binary protocols are refused at their first bytes, without waiting */
	{ B("\x16\x03\x01\x00\x43\x01\x00\x00\x3f\x03\x03"), 400, MAL, NULL },
	{ B("\x16"), 400, MAL, NULL },
	{ B("\x00"), 400, MAL, NULL },
	{ B("GET\x00"), 400, MAL, NULL },
	{ B("ABCDEFGHIJKLMNOPQ"), 400, MAL, NULL },
	/* absolute-form: fragment, userinfo, broken authority */
	{ B("GET http://a.example/#frag HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example#frag HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://user:pass@a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://user@a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example@evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http:/a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http:a.example HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http: HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http:// HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://:80/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example:/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example:0/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example:65536/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example:8o/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://[::1/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://[::1]x/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET 1http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET ://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET ht_tp://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET a.example HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://127.1/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "127.1" },
	{ B("GET http://2130706433:8080/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "2130706433" },
	{ B("GET http://a%2eexample/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST, "a%2eexample" },
	{ B("GET http://a.example\\@evil/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("GET http://a.example\\evil/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, BADHOST,
	  "a.example\\evil" },
	/* line endings: CRLF only */
	{ B("CONNECT a.example:443 HTTP/1.1\nHost: a\n\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\n"), 400, MAL, NULL },
	{ B("\nCONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("\r\rCONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\rHost: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\rX: b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\r\n"), 400, MAL, NULL },
	/* field syntax */
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n folded\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\tfolded\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\n Host: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost : a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost\t: a\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX Y: b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\"X\": b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX(1): b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n: value\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX: a\x00" "b\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\x00.evil\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n"), 400, MAL, NULL },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX: \x1b[31m\r\n\r\n"), 400, MAL, NULL },
	/* body framing of forwarded requests */
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 5\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
	    "Content-Length: 6\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n"),
	  400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
	  400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
	  400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: gzip\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"),
	  400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x=1\r\n\r\n"),
	  400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n"),
	  400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n"), 400, MAL, NULL },
	{ B("POST http://a.example/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400, MAL, NULL },
};

/*
 * The port of a bad-host row, read from its request target independently of the parser:
 * the digits after the last ':' of the authority (after ']' for a bracketed host), or 80.
 */
static unsigned
bad_host_port(const char *in, size_t len)
{
	const char *t = memchr(in, ' ', len), *end, *a, *colon = NULL;
	unsigned port = 0;

	ck_assert_ptr_nonnull(t);
	t++;
	end = memchr(t, ' ', len - (size_t)(t - in));
	ck_assert_ptr_nonnull(end);
	a = strncmp(t, "http://", 7) == 0 ? t + 7 : t;
	for (const char *q = a; q < end && *q != '/' && *q != '?'; q++) {
		if (*q == ']')
			colon = NULL;
		else if (*q == ':')
			colon = q;
	}
	if (colon == NULL)
		return 80;
	for (const char *q = colon + 1; q < end && *q >= '0' && *q <= '9'; q++)
		port = port * 10 + (unsigned)(*q - '0');
	return port;
}

START_TEST(test_bad)
{
	const struct http_bad *c = &http_bad[_i];
	struct http_request req;
	struct proto_error err;
	uint8_t *p = exact_copy(c->in, c->len);
	enum proto_status r = parse_exact(p, c->len, &req, &err);
	char b[512];

	ck_assert_msg(r == PROTO_ERROR, "\"%s\": status %d, expected ERROR %d",
	    show(c->in, c->len, b, sizeof(b)), r, c->status);
	ck_assert_msg(err.http_status == c->status && err.reason == c->reason,
	    "\"%s\": %d %s (%s), expected %d %s", show(c->in, c->len, b, sizeof(b)),
	    err.http_status, egress_reason_name(err.reason), err.why, c->status,
	    egress_reason_name(c->reason));
	ck_assert_msg(err.why != NULL && err.why[0] != '\0', "refused without a reason");
	if (c->raw != NULL) {
		ck_assert_uint_eq(err.raw_len, strlen(c->raw));
		ck_assert(err.raw >= p && err.raw + err.raw_len <= p + c->len);
		ck_assert_msg(memcmp(err.raw, c->raw, err.raw_len) == 0, "raw \"%s\", expected \"%s\"",
		    show(err.raw, err.raw_len, b, sizeof(b)), c->raw);
	}
	/* bad-host still names the request's port (the receipt carries it); nothing else does */
	if (c->reason == BADHOST)
		ck_assert_msg(err.has_port && err.port == bad_host_port(c->in, c->len),
		    "\"%s\": port %d/%u, expected %u", show(c->in, c->len, b, sizeof(b)),
		    err.has_port, err.port, bad_host_port(c->in, c->len));
	else
		ck_assert_msg(!err.has_port, "\"%s\": a port without bad-host",
		    show(c->in, c->len, b, sizeof(b)));
	/* the status the daemon sends matches the reason (431/405 aside) */
	if (c->status == 400)
		ck_assert_int_eq(egress_reason_http_status(err.reason), 400);
	free(p);
}
END_TEST

/* No prefix of a refused request is ever accepted. */
START_TEST(test_bad_prefixes)
{
	const struct http_bad *c = &http_bad[_i];
	struct http_request req;
	struct proto_error err;

	for (size_t k = 0; k <= c->len; k++) {
		uint8_t *p = exact_copy(c->in, k);

		ck_assert_int_ne(parse_exact(p, k, &req, &err), PROTO_OK);
		free(p);
	}
}
END_TEST

/* --- bounds -------------------------------------------------------------------------- */

/* A request head of exactly n bytes, padded in one header (or leading empty lines). */
static uint8_t *
make_head(size_t n, size_t leading)
{
	static const char start[] = "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX-Pad: ";
	uint8_t *p = malloc(n);
	size_t i, o = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_gt(n, leading * 2 + sizeof(start) + 4);
	for (i = 0; i < leading; i++) {
		p[o++] = '\r';
		p[o++] = '\n';
	}
	memcpy(p + o, start, sizeof(start) - 1);
	o += sizeof(start) - 1;
	memset(p + o, 'x', n - o - 4);
	memcpy(p + n - 4, "\r\n\r\n", 4);
	return p;
}

START_TEST(test_head_limit)
{
	struct http_request req;
	struct proto_error err;
	uint8_t *p;

	/* exactly EGRESS_HTTP_HEAD_MAX, including the blank line */
	p = make_head(EGRESS_HTTP_HEAD_MAX, 0);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX, &req, &err), PROTO_OK);
	ck_assert_uint_eq(req.head_len, EGRESS_HTTP_HEAD_MAX);
	/* ... all of its prefixes are NEED_MORE (none reaches the limit) */
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX - 1, &req, &err), PROTO_NEED_MORE);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX - 2, &req, &err), PROTO_NEED_MORE);
	free(p);

	/* one byte more: 431 */
	p = make_head(EGRESS_HTTP_HEAD_MAX + 1, 0);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX + 1, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	ck_assert_int_eq(err.reason, EGRESS_MALFORMED_REQUEST);
	/* ... known as soon as EGRESS_HTTP_HEAD_MAX bytes came without the end */
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX - 1, &req, &err), PROTO_NEED_MORE);
	free(p);

	/* leading empty lines count toward the limit */
	p = make_head(EGRESS_HTTP_HEAD_MAX, 100);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX, &req, &err), PROTO_OK);
	ck_assert_uint_eq(req.head_len, EGRESS_HTTP_HEAD_MAX);
	free(p);
	p = make_head(EGRESS_HTTP_HEAD_MAX + 1, 100);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX + 1, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	free(p);

	/* a head that ended within the limit is fine whatever follows it */
	p = malloc(EGRESS_HTTP_HEAD_MAX * 2);
	ck_assert_ptr_nonnull(p);
	memset(p, 'z', EGRESS_HTTP_HEAD_MAX * 2);
	memcpy(p, "CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n", 43);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX * 2, &req, &err), PROTO_OK);
	ck_assert_uint_eq(req.head_len, 43);
	free(p);
}
END_TEST

START_TEST(test_request_line_limit)
{
	struct http_request req;
	struct proto_error err;
	size_t n = EGRESS_HTTP_HEAD_MAX + 100, i;
	uint8_t *p = malloc(n);

	/* a request line that never ends: NEED_MORE below the limit, 431 at it */
	ck_assert_ptr_nonnull(p);
	memcpy(p, "GET http://a.example/", 21);
	for (i = 21; i < n; i++)
		p[i] = 'a';
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX - 1, &req, &err), PROTO_NEED_MORE);
	ck_assert_int_eq(parse_exact(p, EGRESS_HTTP_HEAD_MAX, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	ck_assert_int_eq(parse_exact(p, n, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	free(p);
}
END_TEST

/* A request with nheaders header lines (Host first). */
static uint8_t *
make_headers(size_t nheaders, size_t *len)
{
	size_t cap = 64 + nheaders * 32, o = 0, i;
	uint8_t *p = malloc(cap);
	int n;

	ck_assert_ptr_nonnull(p);
	n = snprintf((char *)p, cap, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n");
	o = (size_t)n;
	for (i = 1; i < nheaders; i++) {
		n = snprintf((char *)p + o, cap - o, "X-H%zu: %zu\r\n", i, i);
		o += (size_t)n;
	}
	memcpy(p + o, "\r\n", 2);
	*len = o + 2;
	return p;
}

START_TEST(test_header_count)
{
	struct http_request req;
	struct proto_error err;
	size_t len;
	uint8_t *p;

	p = make_headers(EGRESS_HTTP_HEADERS_MAX, &len);
	ck_assert_int_eq(parse_exact(p, len, &req, &err), PROTO_OK);
	ck_assert_uint_eq(req.nheaders, EGRESS_HTTP_HEADERS_MAX);
	ck_assert_uint_eq(req.head_len, len);
	free(p);

	p = make_headers(EGRESS_HTTP_HEADERS_MAX + 1, &len);
	ck_assert_int_eq(parse_exact(p, len, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	ck_assert_int_eq(err.reason, EGRESS_MALFORMED_REQUEST);
	free(p);

	p = make_headers(EGRESS_HTTP_HEADERS_MAX * 3, &len);
	ck_assert_int_eq(parse_exact(p, len, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	free(p);
}
END_TEST

/* Incomplete but valid so far: NEED_MORE, whatever the stage. */
static const struct {
	const char *in;
	size_t len;
} need_more[] = {
	{ B("") }, { B("\r") }, { B("\r\n") }, { B("\r\n\r") }, { B("G") }, { B("CONNECT") },
	{ B("CONNECT ") }, { B("CONNECT a.example:443") }, { B("CONNECT a.example:443 HTTP/1.1") },
	{ B("CONNECT a.example:443 HTTP/1.1\r") }, { B("CONNECT a.example:443 HTTP/1.1\r\n") },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n") },
	{ B("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r") },
	{ B("GET http://a.example/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n") },
	{ B("ABCDEFGHIJKLMNOP") },
};

START_TEST(test_need_more)
{
	struct http_request req;
	struct proto_error err;
	uint8_t *p = exact_copy(need_more[_i].in, need_more[_i].len);
	char b[256];

	ck_assert_msg(parse_exact(p, need_more[_i].len, &req, &err) == PROTO_NEED_MORE,
	    "\"%s\" is not NEED_MORE", show(need_more[_i].in, need_more[_i].len, b, sizeof(b)));
	free(p);
}
END_TEST

/* --- the head sent upstream ---------------------------------------------------------- */

static const struct {
	const char *in;
	size_t len;
	const char *out;
} forward[] = {
	/* Host from the target, Proxy-* gone, Connection: close */
	{ B("GET http://example.com/x?y HTTP/1.1\r\nHost: wrong.example\r\nUser-Agent: curl/8\r\n"
	    "Accept: */*\r\nProxy-Connection: Keep-Alive\r\nProxy-Authorization: Basic dXNlcjpwYXNz\r\n\r\n"),
	  "GET /x?y HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8\r\nAccept: */*\r\n"
	  "Connection: close\r\n\r\n" },
	{ B("GET http://example.com:8080/ HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n" },
	{ B("GET http://example.com:80 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n" },
	{ B("GET http://example.com?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	  "GET /?q=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n" },
	{ B("HEAD http://[::1]:8080/a HTTP/1.1\r\nHost: x\r\n\r\n"),
	  "HEAD /a HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n" },
	{ B("GET http://[2001:DB8:0::1]/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nConnection: close\r\n\r\n" },
	{ B("GET http://EXAMPLE.com./ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n" },
	/* HTTP/1.0 goes out as HTTP/1.1 with a Host */
	{ B("GET http://example.com/ HTTP/1.0\r\nAccept: */*\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n" },
	/* hop-by-hop: Connection and what it lists, Keep-Alive, TE, Trailer, Upgrade */
	{ B("GET http://example.com/ HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Secret ,x-other\r\n"
	    "X-Secret: s\r\nX-Other: o\r\nX-Kept: k\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
	    "Trailer: X-Sum\r\nUpgrade: websocket\r\nProxy-Foo: f\r\nproxy-authorization: x\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com\r\nX-Kept: k\r\nConnection: close\r\n\r\n" },
	{ B("GET http://example.com/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nConnection: X-A\r\n"
	    "X-A: 1\r\nX-AB: 2\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com\r\nX-AB: 2\r\nConnection: close\r\n\r\n" },
	/* body framing is kept, even when Connection names it; CL duplicates go out once */
	{ B("POST http://example.com/p HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
	    "Content-Length: 5\r\nContent-Length: 5\r\nConnection: Content-Length\r\n\r\n"),
	  "POST /p HTTP/1.1\r\nHost: example.com\r\nContent-Type: text/plain\r\n"
	  "Content-Length: 5\r\nConnection: close\r\n\r\n" },
	{ B("POST http://example.com/p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n"
	    "Connection: transfer-encoding\r\n\r\n"),
	  "POST /p HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip, chunked\r\n"
	  "Connection: close\r\n\r\n" },
	/* values go out trimmed; an empty one stays empty */
	{ B("GET http://example.com/ HTTP/1.1\r\nhost: x\r\nX-A:   b c \t\r\nX-E:\r\nCookie: a=1; b=2\r\n\r\n"),
	  "GET / HTTP/1.1\r\nHost: example.com\r\nX-A: b c\r\nX-E:\r\nCookie: a=1; b=2\r\n"
	  "Connection: close\r\n\r\n" },
	{ B("DELETE http://127.0.0.1:9/x HTTP/1.1\r\nHost: x\r\n\r\n"),
	  "DELETE /x HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: close\r\n\r\n" },
};

START_TEST(test_forward)
{
	struct http_request req;
	struct proto_error err;
	uint8_t *p = exact_copy(forward[_i].in, forward[_i].len);
	size_t want = strlen(forward[_i].out), n;
	uint8_t *out;
	char b1[1024], b2[1024];

	ck_assert_int_eq(parse_exact(p, forward[_i].len, &req, &err), PROTO_OK);
	ck_assert_int_eq(req.kind, HTTP_FORWARD);
	out = malloc(want + 64);
	ck_assert_ptr_nonnull(out);
	n = http_forward_head(&req, out, want + 64);
	ck_assert_msg(n == want && memcmp(out, forward[_i].out, n) == 0,
	    "wrote \"%s\", expected \"%s\"", show(out, n, b1, sizeof(b1)),
	    show(forward[_i].out, want, b2, sizeof(b2)));
	/* exactly enough room, and one byte less */
	ck_assert_uint_eq(http_forward_head(&req, out, want), want);
	ck_assert(memcmp(out, forward[_i].out, want) == 0);
	ck_assert_uint_eq(http_forward_head(&req, out, want - 1), 0);
	ck_assert_uint_eq(http_forward_head(&req, out, 0), 0);
	/* credentials never appear upstream */
	for (size_t i = 0; i + 6 <= n; i++)
		ck_assert_msg(strncasecmp((char *)out + i, "proxy-", 6) != 0,
		    "a Proxy-* header was forwarded");
	free(out);
	free(p);
}
END_TEST

START_TEST(test_forward_not_connect)
{
	struct http_request req;
	struct proto_error err;
	uint8_t out[512];
	static const char in[] = "CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n";

	ck_assert_int_eq(parse_exact((const uint8_t *)in, sizeof(in) - 1, &req, &err), PROTO_OK);
	ck_assert_uint_eq(http_forward_head(&req, out, sizeof(out)), 0);
}
END_TEST

/* --- error responses ----------------------------------------------------------------- */

static const struct {
	int status;
	enum egress_reason reason;
	const char *out;
} responses[] = {
	{ 400, EGRESS_MALFORMED_REQUEST,
	  "HTTP/1.1 400 Bad Request\r\nEgress-Reason: malformed-request\r\nConnection: close\r\n"
	  "Content-Type: text/plain\r\nContent-Length: 18\r\n\r\nmalformed-request\n" },
	{ 400, EGRESS_BAD_HOST,
	  "HTTP/1.1 400 Bad Request\r\nEgress-Reason: bad-host\r\nConnection: close\r\n"
	  "Content-Type: text/plain\r\nContent-Length: 9\r\n\r\nbad-host\n" },
	{ 403, EGRESS_NOT_ALLOWLISTED,
	  "HTTP/1.1 403 Forbidden\r\nEgress-Reason: not-allowlisted\r\nConnection: close\r\n"
	  "Content-Type: text/plain\r\nContent-Length: 16\r\n\r\nnot-allowlisted\n" },
	{ 405, EGRESS_UNSUPPORTED,
	  "HTTP/1.1 405 Method Not Allowed\r\nEgress-Reason: unsupported\r\nAllow: CONNECT\r\n"
	  "Connection: close\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\nunsupported\n" },
	{ 431, EGRESS_MALFORMED_REQUEST,
	  "HTTP/1.1 431 Request Header Fields Too Large\r\nEgress-Reason: malformed-request\r\n"
	  "Connection: close\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n\r\n"
	  "malformed-request\n" },
	{ 504, EGRESS_DNS_TIMEOUT,
	  "HTTP/1.1 504 Gateway Timeout\r\nEgress-Reason: dns-timeout\r\nConnection: close\r\n"
	  "Content-Type: text/plain\r\nContent-Length: 12\r\n\r\ndns-timeout\n" },
	{ 503, EGRESS_SHUTDOWN,
	  "HTTP/1.1 503 Service Unavailable\r\nEgress-Reason: shutdown\r\nConnection: close\r\n"
	  "Content-Type: text/plain\r\nContent-Length: 9\r\n\r\nshutdown\n" },
};

START_TEST(test_error_response)
{
	uint8_t out[1024];
	size_t want = strlen(responses[_i].out);
	size_t n = http_error_response(responses[_i].status, responses[_i].reason, out,
	    sizeof(out));
	char b1[1024], b2[1024];

	ck_assert_msg(n == want && memcmp(out, responses[_i].out, n) == 0,
	    "wrote \"%s\", expected \"%s\"", show(out, n, b1, sizeof(b1)),
	    show(responses[_i].out, want, b2, sizeof(b2)));
	ck_assert_uint_eq(http_error_response(responses[_i].status, responses[_i].reason, out,
	    want), want);
	ck_assert_uint_eq(http_error_response(responses[_i].status, responses[_i].reason, out,
	    want - 1), 0);
}
END_TEST

/* Every reason with an HTTP status gives a response naming it. */
START_TEST(test_error_every_reason)
{
	uint8_t out[1024];

	for (int r = 0; r < EGRESS_REASON_COUNT; r++) {
		int status = egress_reason_http_status((enum egress_reason)r);
		const char *name = egress_reason_name((enum egress_reason)r);
		size_t n;
		char want[128];

		if (status == 0)
			continue;
		n = http_error_response(status, (enum egress_reason)r, out, sizeof(out) - 1);
		ck_assert_uint_gt(n, 0);
		out[n] = '\0';
		snprintf(want, sizeof(want), "HTTP/1.1 %d ", status);
		ck_assert(strncmp((char *)out, want, strlen(want)) == 0);
		snprintf(want, sizeof(want), "\r\nEgress-Reason: %s\r\n", name);
		ck_assert_ptr_nonnull(strstr((char *)out, want));
		ck_assert_ptr_nonnull(strstr((char *)out, "\r\nConnection: close\r\n"));
		snprintf(want, sizeof(want), "\r\n\r\n%s\n", name);
		ck_assert_ptr_nonnull(strstr((char *)out, want));
	}
	ck_assert_uint_eq(http_error_response(0, EGRESS_MALFORMED_REQUEST, out, sizeof(out)), 0);
	ck_assert_uint_eq(http_error_response(400, EGRESS_MALFORMED_REQUEST, out, 0), 0);
}
END_TEST

/* --- chunked bodies ------------------------------------------------------------------ */

static const struct {
	const char *in;
	size_t len;
	enum proto_status status;
	size_t consumed;             /* OK: where the body ends */
} chunked[] = {
	{ B("0\r\n\r\n"), PROTO_OK, 5 },
	{ B("5\r\nhello\r\n0\r\n\r\n"), PROTO_OK, 15 },
	{ B("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), PROTO_OK, 26 },
	{ B("A\r\n0123456789\r\n0\r\n\r\n"), PROTO_OK, 20 },
	{ B("a\r\n0123456789\r\n0\r\n\r\n"), PROTO_OK, 20 },
	{ B("000005\r\nhello\r\n0\r\n\r\n"), PROTO_OK, 20 },
	{ B("5;name=value\r\nhello\r\n0\r\n\r\n"), PROTO_OK, 26 },
	{ B("5 ; name = \"v\"\r\nhello\r\n0;last\r\n\r\n"), PROTO_OK, 33 },
	{ B("5\r\n\r\n0\r\n\r\n0\r\n\r\n"), PROTO_OK, 15 },
	{ B("3\r\n\x00\xff\n\r\n0\r\n\r\n"), PROTO_OK, 13 },
	{ B("0\r\nX-Sum: abc\r\n\r\n"), PROTO_OK, 17 },
	{ B("0\r\nA: 1\r\nB:\r\nC:  3 \r\n\r\n"), PROTO_OK, 23 },
	{ B("2\r\nhi\r\n0\r\nExpires: Thu, 01 Dec 1994 16:00:00 GMT\r\n\r\n"), PROTO_OK, 52 },
	/* incomplete */
	{ B(""), PROTO_NEED_MORE, 0 },
	{ B("5"), PROTO_NEED_MORE, 1 },
	{ B("5\r\nhel"), PROTO_NEED_MORE, 6 },
	{ B("5\r\nhello\r\n0\r\n"), PROTO_NEED_MORE, 13 },
	{ B("5\r\nhello\r\n0\r\nX: y\r\n"), PROTO_NEED_MORE, 19 },
	{ B("7fffffffffffffff\r\n"), PROTO_NEED_MORE, 18 },
	{ B("07fffffffffffffff\r\nabc"), PROTO_NEED_MORE, 22 },
	/* refused */
	{ B("8000000000000000\r\n"), PROTO_ERROR, 0 },
	{ B("fffffffffffffffff\r\n"), PROTO_ERROR, 0 },
	{ B("10000000000000000\r\n"), PROTO_ERROR, 0 },
	{ B("\r\n"), PROTO_ERROR, 0 },
	{ B(";ext\r\n"), PROTO_ERROR, 0 },
	{ B("g\r\n"), PROTO_ERROR, 0 },
	{ B("-5\r\n"), PROTO_ERROR, 0 },
	{ B("+5\r\n"), PROTO_ERROR, 0 },
	{ B("0x5\r\n"), PROTO_ERROR, 0 },
	{ B(" 5\r\n"), PROTO_ERROR, 0 },
	{ B("5 \r\n"), PROTO_ERROR, 0 },
	{ B("5 x\r\n"), PROTO_ERROR, 0 },
	{ B("5\n"), PROTO_ERROR, 0 },
	{ B("5\rx"), PROTO_ERROR, 0 },
	{ B("5;a\nb\r\n"), PROTO_ERROR, 0 },
	{ B("5;\x01\r\n"), PROTO_ERROR, 0 },
	{ B("5\r\nhello\n0\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("5\r\nhelloX\r\n"), PROTO_ERROR, 0 },
	{ B("5\r\nhelloX\n0\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("5\r\nhello\r\r0\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("5\r\nhello0\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("5\r\nhello\rX"), PROTO_ERROR, 0 },
	{ B("0\r\n\n"), PROTO_ERROR, 0 },
	{ B("0\r\n\rX"), PROTO_ERROR, 0 },
	{ B("0\r\n X: y\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("0\r\n\tX: y\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("0\r\nX y\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("0\r\n:y\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("0\r\nX: a\x00" "b\r\n\r\n"), PROTO_ERROR, 0 },
	{ B("0\r\nX: y\n\r\n"), PROTO_ERROR, 0 },
	{ B("0\r\nX: y\r\r\n"), PROTO_ERROR, 0 },
};

static size_t
chunked_scan_pieces(const uint8_t *p, size_t len, size_t split, enum proto_status *last)
{
	struct http_chunked c;
	struct proto_error err;
	size_t consumed = 0, total = 0;
	enum proto_status r;

	memset(&c, 0, sizeof(c));
	r = http_chunked_scan(&c, p, split, &consumed, &err);
	ck_assert_uint_le(consumed, split);
	total = consumed;
	if (r == PROTO_NEED_MORE) {
		ck_assert_uint_eq(consumed, split);
		r = http_chunked_scan(&c, p + split, len - split, &consumed, &err);
		ck_assert_uint_le(consumed, len - split);
		total += consumed;
	}
	if (r == PROTO_ERROR)
		ck_assert_ptr_nonnull(err.why);
	if (r == PROTO_OK)
		ck_assert(c.done);
	*last = r;
	return total;
}

START_TEST(test_chunked)
{
	uint8_t *p = exact_copy(chunked[_i].in, chunked[_i].len);
	size_t len = chunked[_i].len, total;
	enum proto_status r;
	char b[256];

	/* whole, then split at every byte into two pieces */
	for (size_t k = 0; k <= len; k++) {
		total = chunked_scan_pieces(p, len, k, &r);
		ck_assert_msg(r == chunked[_i].status, "\"%s\" split at %zu: status %d, expected %d",
		    show(chunked[_i].in, len, b, sizeof(b)), k, r, chunked[_i].status);
		if (r != PROTO_ERROR)
			ck_assert_uint_eq(total, chunked[_i].consumed);
	}
	free(p);
}
END_TEST

/* One byte at a time, followed by the next request: it stops at the body's last byte. */
START_TEST(test_chunked_bytewise)
{
	const size_t len = chunked[_i].len;
	static const char next[] = "GET http://a/ HTTP/1.1\r\n\r\n";
	size_t n = len + sizeof(next) - 1, i, total = 0, consumed;
	uint8_t *p = malloc(n);
	struct http_chunked c;
	struct proto_error err;
	enum proto_status r = PROTO_NEED_MORE;

	ck_assert_ptr_nonnull(p);
	memcpy(p, chunked[_i].in, len);
	memcpy(p + len, next, sizeof(next) - 1);
	memset(&c, 0, sizeof(c));
	for (i = 0; i < n && r == PROTO_NEED_MORE; i++) {
		uint8_t *one = exact_copy(p + i, 1);

		r = http_chunked_scan(&c, one, 1, &consumed, &err);
		ck_assert_uint_le(consumed, 1);
		total += consumed;
		free(one);
	}
	if (chunked[_i].status == PROTO_OK) {
		ck_assert_int_eq(r, PROTO_OK);
		ck_assert_uint_eq(total, chunked[_i].consumed);
		/* done stays done */
		ck_assert_int_eq(http_chunked_scan(&c, p, n, &consumed, &err), PROTO_OK);
		ck_assert_uint_eq(consumed, 0);
	} else if (chunked[_i].status == PROTO_ERROR) {
		ck_assert_int_eq(r, PROTO_ERROR);
		/* an error is sticky */
		ck_assert_int_eq(http_chunked_scan(&c, (const uint8_t *)"0\r\n\r\n", 5, &consumed,
		    &err), PROTO_ERROR);
	}
	/* coalesced in one buffer */
	memset(&c, 0, sizeof(c));
	r = http_chunked_scan(&c, p, n, &consumed, &err);
	if (chunked[_i].status == PROTO_OK) {
		ck_assert_int_eq(r, PROTO_OK);
		ck_assert_uint_eq(consumed, chunked[_i].consumed);
	}
	free(p);
}
END_TEST

START_TEST(test_chunked_limits)
{
	struct http_chunked c;
	struct proto_error err;
	size_t consumed, n;
	uint8_t *p;

	/* a size line of exactly EGRESS_HTTP_CHUNK_LINE_MAX bytes, CRLF included */
	n = EGRESS_HTTP_CHUNK_LINE_MAX + 1 + 2 + 5;
	p = malloc(n);
	ck_assert_ptr_nonnull(p);
	p[0] = '1';
	p[1] = ';';
	memset(p + 2, 'e', EGRESS_HTTP_CHUNK_LINE_MAX - 4);
	memcpy(p + EGRESS_HTTP_CHUNK_LINE_MAX - 2, "\r\nx\r\n0\r\n\r\n", 10);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(http_chunked_scan(&c, p, EGRESS_HTTP_CHUNK_LINE_MAX + 8, &consumed,
	    &err), PROTO_OK);
	ck_assert_uint_eq(consumed, EGRESS_HTTP_CHUNK_LINE_MAX + 8);
	free(p);

	/* one byte longer */
	n = EGRESS_HTTP_CHUNK_LINE_MAX + 1;
	p = malloc(n + 2);
	ck_assert_ptr_nonnull(p);
	p[0] = '1';
	p[1] = ';';
	memset(p + 2, 'e', n - 2 - 2);
	memcpy(p + n - 2, "\r\n", 2);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(http_chunked_scan(&c, p, n, &consumed, &err), PROTO_ERROR);
	ck_assert_int_eq(err.reason, EGRESS_MALFORMED_REQUEST);
	free(p);

	/* leading zeros count too: the bound is on bytes, not on the value */
	p = malloc(2000);
	ck_assert_ptr_nonnull(p);
	memset(p, '0', 2000);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(http_chunked_scan(&c, p, 2000, &consumed, &err), PROTO_ERROR);
	free(p);

	/* the trailer section is bounded like a head */
	n = 3 + EGRESS_HTTP_HEAD_MAX + 100;
	p = malloc(n);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "0\r\nX: ", 6);
	memset(p + 6, 'v', n - 6);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(http_chunked_scan(&c, p, n, &consumed, &err), PROTO_ERROR);
	free(p);

	/* a large chunk is counted, not buffered: NEED_MORE, all consumed */
	p = malloc(65536);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "100000\r\n", 8);
	memset(p + 8, 'd', 65536 - 8);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(http_chunked_scan(&c, p, 65536, &consumed, &err), PROTO_NEED_MORE);
	ck_assert_uint_eq(consumed, 65536);
	ck_assert_uint_eq(c.left, 0x100000 - (65536 - 8));
	free(p);
}
END_TEST

/* A whole forwarded request: head, then its chunked body, then the next bytes. */
START_TEST(test_request_then_body)
{
	static const char in[] =
	    "POST http://a.example/u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"
	    "GET http://evil.example/ HTTP/1.1\r\n\r\n";
	struct http_request req;
	struct proto_error err;
	struct http_chunked c;
	size_t consumed;

	ck_assert_int_eq(parse_exact((const uint8_t *)in, sizeof(in) - 1, &req, &err), PROTO_OK);
	ck_assert_int_eq(req.body, HTTP_BODY_CHUNKED);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(http_chunked_scan(&c, (const uint8_t *)in + req.head_len,
	    sizeof(in) - 1 - req.head_len, &consumed, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, 24);
	ck_assert(memcmp(in + req.head_len + consumed, "GET http://evil", 15) == 0);
}
END_TEST

/* --- resumed head parsing ------------------------------------------------------------ */

/*
 * Feeds in[0..len) to http_head_parse k bytes more at a time, each call on a fresh copy
 * of the prefix (so the buffer moves, as an evbuffer pullup may move it), and checks
 * that every answer is the one-shot parser's for that prefix. Returns the last answer;
 * *examined is what the resumed parser looked at in all.
 */
static enum proto_status
resume_feed(const char *in, size_t len, size_t k, struct http_request *req,
    struct proto_error *err, uint64_t *examined)
{
	struct http_head h;
	struct http_request once;
	struct proto_error err1;
	enum proto_status r = PROTO_NEED_MORE, r1;
	size_t have = 0;
	char b[512];

	memset(&h, 0, sizeof(h));
	memset(req, 0xa5, sizeof(*req));
	while (r == PROTO_NEED_MORE && have < len) {
		uint8_t *p;

		have = have + k < len ? have + k : len;
		p = exact_copy(in, have);
		r = http_head_parse(&h, p, have, req, err);
		r1 = parse_exact(p, have, &once, &err1);
		ck_assert_msg(r == r1, "\"%s\" fed %zu at a time, at %zu: resumed %d (%s), "
		    "whole %d (%s)", show(in, len, b, sizeof(b)), k, have, r,
		    r == PROTO_ERROR ? err->why : "", r1, r1 == PROTO_ERROR ? err1.why : "");
		if (r == PROTO_ERROR) {
			ck_assert_int_eq(err->http_status, err1.http_status);
			ck_assert_int_eq(err->reason, err1.reason);
			ck_assert_str_eq(err->why, err1.why);
			ck_assert_uint_eq(err->raw_len, err1.raw_len);
			if (err->raw != NULL)
				ck_assert(memcmp(err->raw, err1.raw, err->raw_len) == 0);
		}
		if (r == PROTO_OK) {
			/* the answer points into this call's buffer, like the one-shot one */
			ck_assert_uint_eq(req->head_len, once.head_len);
			ck_assert_str_eq(req->host.name, once.host.name);
			ck_assert_uint_eq(req->port, once.port);
			ck_assert_uint_eq(req->nheaders, once.nheaders);
			ck_assert_int_eq(req->body, once.body);
			ck_assert_uint_eq(req->content_length, once.content_length);
			for (size_t i = 0; i < req->nheaders; i++) {
				ck_assert(req->headers[i].name == once.headers[i].name);
				ck_assert(req->headers[i].value == once.headers[i].value);
				ck_assert_uint_eq(req->headers[i].value_len,
				    once.headers[i].value_len);
			}
			ck_assert(req->path == once.path ||
			    (req->path_len == 1 && once.path_len == 1 && req->path[0] == '/'));
		}
		free(p);
	}
	*examined = h.examined;
	return r;
}

/* Whatever the pieces, the resumed parser answers exactly as the one-shot one. */
START_TEST(test_resume_ok)
{
	const struct http_ok *c = &http_ok[_i];
	struct http_request req;
	struct proto_error err;
	uint64_t ex;

	for (size_t k = 1; k <= c->len; k++)
		ck_assert_int_eq(resume_feed(c->in, c->len, k, &req, &err, &ex), PROTO_OK);
}
END_TEST

START_TEST(test_resume_bad)
{
	const struct http_bad *c = &http_bad[_i];
	struct http_request req;
	struct proto_error err;
	uint64_t ex;

	for (size_t k = 1; k <= c->len; k++)
		ck_assert_int_eq(resume_feed(c->in, c->len, k, &req, &err, &ex), PROTO_ERROR);
}
END_TEST

/*
 * A head sent a byte at a time costs linear work: the bytes examined over all calls stay
 * within a small multiple of its length (re-parsing the whole buffer on each call, as
 * egressd once did, looks at about len^2 / 2 bytes: 134 million for 16 KiB).
 */
#define RESUME_WORK_FACTOR 4

START_TEST(test_resume_linear)
{
	struct http_request req;
	struct proto_error err;
	uint64_t ex;
	size_t len, i;
	uint8_t *p;

	/* a head of exactly the limit, one long header line */
	p = make_head(EGRESS_HTTP_HEAD_MAX, 0);
	ck_assert_int_eq(resume_feed((const char *)p, EGRESS_HTTP_HEAD_MAX, 1, &req, &err, &ex),
	    PROTO_OK);
	ck_assert_uint_eq(req.head_len, EGRESS_HTTP_HEAD_MAX);
	ck_assert_msg(ex >= EGRESS_HTTP_HEAD_MAX &&
	    ex <= (uint64_t)RESUME_WORK_FACTOR * EGRESS_HTTP_HEAD_MAX,
	    "16 KiB head byte by byte: %llu bytes examined", (unsigned long long)ex);
	free(p);

	/* many empty lines first, then the same */
	p = make_head(EGRESS_HTTP_HEAD_MAX, 4000);
	ck_assert_int_eq(resume_feed((const char *)p, EGRESS_HTTP_HEAD_MAX, 1, &req, &err, &ex),
	    PROTO_OK);
	ck_assert_uint_le(ex, (uint64_t)RESUME_WORK_FACTOR * EGRESS_HTTP_HEAD_MAX);
	free(p);

	/* the most header lines, short ones */
	p = make_headers(EGRESS_HTTP_HEADERS_MAX, &len);
	ck_assert_int_eq(resume_feed((const char *)p, len, 1, &req, &err, &ex), PROTO_OK);
	ck_assert_uint_le(ex, (uint64_t)RESUME_WORK_FACTOR * len);
	free(p);

	/* a request line that never ends: 431 at the limit, linear work until then */
	len = EGRESS_HTTP_HEAD_MAX + 10;
	p = malloc(len);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "GET http://a.example/", 21);
	for (i = 21; i < len; i++)
		p[i] = 'a';
	ck_assert_int_eq(resume_feed((const char *)p, len, 1, &req, &err, &ex), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	ck_assert_uint_le(ex, (uint64_t)RESUME_WORK_FACTOR * EGRESS_HTTP_HEAD_MAX);
	/* ... and so is a method that never ends, refused at once */
	memset(p, 'A', len);
	ck_assert_int_eq(resume_feed((const char *)p, len, 1, &req, &err, &ex), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 400);
	ck_assert_uint_le(ex, 2 * (EGRESS_HTTP_METHOD_MAX + 1));
	free(p);

	/* too many header lines: 431 as soon as the 101st is complete */
	p = make_headers(EGRESS_HTTP_HEADERS_MAX * 3, &len);
	ck_assert_int_eq(resume_feed((const char *)p, len, 1, &req, &err, &ex), PROTO_ERROR);
	ck_assert_int_eq(err.http_status, 431);
	ck_assert_uint_le(ex, (uint64_t)RESUME_WORK_FACTOR * len);
	free(p);
}
END_TEST

/* --- the forwarded body -------------------------------------------------------------- */

#define SMUGGLED "GET /admin HTTP/1.1\r\nHost: admin.internal\r\n\r\n"

static const struct framing_case {
	const char *in;
	size_t len;
	enum http_body body;
	uint64_t clen;
	enum proto_status status;    /* after all of in */
	size_t taken;                /* in all */
} framing[] = {
	/* no body: nothing after the head is the request's */
	{ B(""), HTTP_BODY_NONE, 0, PROTO_OK, 0 },
	{ B(SMUGGLED), HTTP_BODY_NONE, 0, PROTO_OK, 0 },
	{ B(SMUGGLED), HTTP_BODY_LENGTH, 0, PROTO_OK, 0 },
	/* Content-Length: exactly that many bytes, whatever follows */
	{ B("hello"), HTTP_BODY_LENGTH, 5, PROTO_OK, 5 },
	{ B("hello" SMUGGLED), HTTP_BODY_LENGTH, 5, PROTO_OK, 5 },
	{ B("hello\r\n" SMUGGLED), HTTP_BODY_LENGTH, 5, PROTO_OK, 5 },
	{ B("0123456789abcdefghijklmnopqrstuvwxyz" SMUGGLED), HTTP_BODY_LENGTH, 36, PROTO_OK, 36 },
	{ B("hel"), HTTP_BODY_LENGTH, 5, PROTO_NEED_MORE, 3 },
	{ B("\x00\xff\r\n" SMUGGLED), HTTP_BODY_LENGTH, 1ULL << 40, PROTO_NEED_MORE, 49 },
	/* chunked: the last chunk and the trailer section end it */
	{ B("5\r\nhello\r\n0\r\n\r\n"), HTTP_BODY_CHUNKED, 0, PROTO_OK, 15 },
	{ B("5\r\nhello\r\n0\r\n\r\n" SMUGGLED), HTTP_BODY_CHUNKED, 0, PROTO_OK, 15 },
	{ B("3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" SMUGGLED), HTTP_BODY_CHUNKED, 0, PROTO_OK, 24 },
	{ B("5\r\nhello\r\n0\r\nX-Sum: abc\r\nX-Other:\r\n\r\n" SMUGGLED), HTTP_BODY_CHUNKED, 0,
	  PROTO_OK, 37 },
	{ B("0\r\nX-Trailer: t\r\n\r\n" SMUGGLED), HTTP_BODY_CHUNKED, 0, PROTO_OK, 19 },
	/* a chunk whose data looks like a request is data */
	{ B("2f\r\n" SMUGGLED "xx\r\n0\r\n\r\n" SMUGGLED), HTTP_BODY_CHUNKED, 0, PROTO_OK, 58 },
	{ B("5\r\nhello\r\n0\r\nX-Sum: abc\r\n"), HTTP_BODY_CHUNKED, 0, PROTO_NEED_MORE, 25 },
	{ B("5\r\nhel"), HTTP_BODY_CHUNKED, 0, PROTO_NEED_MORE, 6 },
	/* broken framing: the bytes before the offending one were taken */
	{ B("5\r\nhelloX\r\n0\r\n\r\n"), HTTP_BODY_CHUNKED, 0, PROTO_ERROR, 8 },
	{ B("5\r\nhello\r\n0\r\nX-Sum: abc\n\r\n"), HTTP_BODY_CHUNKED, 0, PROTO_ERROR, 23 },
	{ B(SMUGGLED), HTTP_BODY_CHUNKED, 0, PROTO_ERROR, 0 },
};

/* Feeds the pieces [0,a) [a,b) [b,len) (some may be empty); returns the total taken. */
static size_t
framing_pieces(const struct framing_case *c, size_t a, size_t b, enum proto_status *last)
{
	struct http_framing f;
	struct proto_error err;
	size_t cut[3] = { a, b, c->len }, from = 0, total = 0, taken;
	enum proto_status r = PROTO_NEED_MORE;

	http_framing_start(&f, c->body, c->clen);
	for (int i = 0; i < 3; i++) {
		uint8_t *p = exact_copy(c->in + from, cut[i] - from);

		r = http_framing_take(&f, p, cut[i] - from, &taken, &err);
		ck_assert_uint_le(taken, cut[i] - from);
		if (r == PROTO_NEED_MORE)
			ck_assert_uint_eq(taken, cut[i] - from);
		if (r == PROTO_ERROR)
			ck_assert_ptr_nonnull(err.why);
		total += taken;
		from = cut[i];
		free(p);
	}
	*last = r;
	return total;
}

/* Split in two at every offset, and in three around every offset. */
START_TEST(test_framing_split)
{
	const struct framing_case *c = &framing[_i];
	enum proto_status r;
	size_t total;
	char b[256];

	for (size_t a = 0; a <= c->len; a++) {
		for (size_t d = 0; d <= 3 && a + d <= c->len; d++) {
			total = framing_pieces(c, a, a + d, &r);
			ck_assert_msg(r == c->status && total == c->taken,
			    "\"%s\" cut at %zu and %zu: status %d, %zu taken; expected %d, %zu",
			    show(c->in, c->len, b, sizeof(b)), a, a + d, r, total, c->status,
			    c->taken);
		}
	}
}
END_TEST

/* One byte at a time: each byte is fed once, the body ends at its last byte. */
START_TEST(test_framing_bytewise)
{
	const struct framing_case *c = &framing[_i];
	struct http_framing f;
	struct proto_error err;
	size_t total = 0, taken, i;
	enum proto_status r = c->status;

	http_framing_start(&f, c->body, c->clen);
	if (c->len == 0)
		r = f.status;
	for (i = 0; i < c->len; i++) {
		uint8_t *one = exact_copy(c->in + i, 1);

		r = http_framing_take(&f, one, 1, &taken, &err);
		total += taken;
		free(one);
		/* once ended, nothing more belongs to the body */
		if (r != PROTO_NEED_MORE)
			ck_assert_uint_eq(total, c->taken);
	}
	ck_assert_int_eq(r, c->status);
	ck_assert_uint_eq(total, c->taken);
	/* done stays done and takes nothing; an error stays an error */
	if (c->status != PROTO_NEED_MORE) {
		r = http_framing_take(&f, (const uint8_t *)"0\r\n\r\n", 5, &taken, &err);
		ck_assert_int_eq(r, c->status);
		ck_assert_uint_eq(taken, 0);
	}
}
END_TEST

/* The whole path: head, body over several reads, and a second request behind it. */
START_TEST(test_framing_after_head)
{
	static const char *const in[] = {
	    "POST http://a.example/u HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n"
	    "hello world" SMUGGLED,
	    "POST http://a.example/u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "4\r\nWiki\r\n5\r\npedia\r\n0\r\nX-T: 1\r\n\r\n" SMUGGLED,
	};
	static const size_t body[] = { 11, 32 };

	for (size_t t = 0; t < sizeof(in) / sizeof(in[0]); t++) {
		size_t len = strlen(in[t]);

		for (size_t step = 1; step <= 7; step++) {
			struct http_request req;
			struct proto_error err;
			struct http_framing f;
			size_t off, total = 0, taken;
			enum proto_status r = PROTO_NEED_MORE;

			ck_assert_int_eq(parse_exact((const uint8_t *)in[t], len, &req, &err),
			    PROTO_OK);
			http_framing_start(&f, req.body, req.content_length);
			for (off = req.head_len; off < len && r == PROTO_NEED_MORE; off += step) {
				size_t n = len - off < step ? len - off : step;

				r = http_framing_take(&f, (const uint8_t *)in[t] + off, n, &taken,
				    &err);
				total += taken;
			}
			ck_assert_int_eq(r, PROTO_OK);
			ck_assert_uint_eq(total, body[t]);
			ck_assert_str_eq(in[t] + req.head_len + total, SMUGGLED);
		}
	}
}
END_TEST

static Suite *
http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc;

#define LOOP_CASE(name, fn, table) do { \
		tc = tcase_create(name); \
		tcase_add_loop_test(tc, fn, 0, NELEM(table)); \
		suite_add_tcase(s, tc); \
	} while (0)
#define ONE_CASE(name, fn) do { \
		tc = tcase_create(name); \
		tcase_add_test(tc, fn); \
		suite_add_tcase(s, tc); \
	} while (0)

	LOOP_CASE("accepted: CONNECT and absolute-form", test_ok, http_ok);
	LOOP_CASE("accepted: every proper prefix is NEED_MORE", test_ok_split, http_ok);
	LOOP_CASE("accepted: followed by tunnel payload", test_ok_coalesced, http_ok);
	LOOP_CASE("accepted: headers stored OWS-trimmed", test_stored, stored);
	LOOP_CASE("refused: status, reason, raw host", test_bad, http_bad);
	LOOP_CASE("refused: no prefix is accepted", test_bad_prefixes, http_bad);
	LOOP_CASE("incomplete: NEED_MORE", test_need_more, need_more);
	ONE_CASE("bounds: head of EGRESS_HTTP_HEAD_MAX bytes, 431 beyond", test_head_limit);
	ONE_CASE("bounds: endless request line is 431", test_request_line_limit);
	ONE_CASE("bounds: EGRESS_HTTP_HEADERS_MAX header lines, 431 beyond", test_header_count);
	LOOP_CASE("forward: head rewritten for upstream", test_forward, forward);
	ONE_CASE("forward: nothing for CONNECT", test_forward_not_connect);
	LOOP_CASE("errors: response bytes", test_error_response, responses);
	ONE_CASE("errors: every reason with a status", test_error_every_reason);
	LOOP_CASE("chunked: split at every byte", test_chunked, chunked);
	LOOP_CASE("chunked: byte by byte and coalesced", test_chunked_bytewise, chunked);
	ONE_CASE("chunked: line, size and trailer bounds", test_chunked_limits);
	ONE_CASE("chunked: a request, its body, then the next bytes", test_request_then_body);
	LOOP_CASE("resumed: accepted alike in pieces of any size", test_resume_ok, http_ok);
	LOOP_CASE("resumed: refused alike in pieces of any size", test_resume_bad, http_bad);
	ONE_CASE("resumed: a head byte by byte is linear work", test_resume_linear);
	/*
	 * Its bound is the bytes examined, counted, not time: 2 s of ASan work alone, past
	 * Check's 4 s default when a CI machine is busy (seen: CI's ASan step, -j2).
	 */
	tcase_set_timeout(tc, 60);
	LOOP_CASE("framing: split at every offset", test_framing_split, framing);
	LOOP_CASE("framing: byte by byte, each byte once", test_framing_bytewise, framing);
	ONE_CASE("framing: head, body over reads, a smuggled request", test_framing_after_head);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(http_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
