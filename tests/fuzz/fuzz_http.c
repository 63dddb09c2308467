/*
 * fuzz_http.c: libFuzzer target for the HTTP frontend (proto/http.c): request heads,
 * the head forwarded upstream, and the chunked-body scanner. Properties checked, beyond
 * not crashing and not reading past the input (ASan):
 *  - an accepted head ends in CRLF CRLF within the input and within EGRESS_HTTP_HEAD_MAX;
 *    its host re-parses to itself, a CONNECT port is never 0; the same head alone is
 *    accepted again and any shorter prefix of it is NEED_MORE;
 *  - NEED_MORE only below EGRESS_HTTP_HEAD_MAX; an ERROR carries a status and a why;
 *  - the forwarded head fits, starts with the method, sets Host, carries no Proxy-*
 *    field and ends with "Connection: close" and the blank line;
 *  - the chunked scanner gives the same answer whether the input comes in one piece or
 *    split at input[0] % len, and never consumes more than it was given;
 *  - http_head_parse fed the input in pieces (lengths from input[0]) answers at every
 *    step what http_parse_request answers for that prefix, with the same status,
 *    reason and why, and examines at most FUZZ_WORK_FACTOR bytes per input byte.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

/* The forwarded head is the client's head with Host rewritten: twice the limit is ample. */
#define FUZZ_OUT_MAX (2 * EGRESS_HTTP_HEAD_MAX + 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_check_forward(const struct http_request *req)
{
	static uint8_t out[FUZZ_OUT_MAX];
	size_t n = http_forward_head(req, out, sizeof(out)), i, line;
	unsigned hosts = 0;

	if (req->kind != HTTP_FORWARD) {
		if (n != 0)
			abort();
		return;
	}
	if (n == 0 || n < 4 || memcmp(out + n - 4, "\r\n\r\n", 4) != 0)
		abort();
	if (strncmp((const char *)out, req->method, strlen(req->method)) != 0)
		abort();
	if (n < sizeof("Connection: close\r\n\r\n") - 1 ||
	    memcmp(out + n - 23, "\r\nConnection: close\r\n\r\n", 23) != 0)
		abort();
	/* every line ends in CRLF, no bare CR or LF; no Proxy-* or second Host line */
	for (i = 0, line = 0; i < n; i++) {
		if (out[i] == '\r' && (i + 1 >= n || out[i + 1] != '\n'))
			abort();
		if (out[i] == '\n' && (i == 0 || out[i - 1] != '\r'))
			abort();
		if (i == line && line > 0) {
			if (n - i >= 6 && strncasecmp((const char *)out + i, "proxy-", 6) == 0)
				abort();
			if (n - i >= 5 && strncasecmp((const char *)out + i, "host:", 5) == 0)
				hosts++;
		}
		if (out[i] == '\n')
			line = i + 1;
	}
	if (hosts != 1)
		abort();
	/* too small a buffer is refused, never overrun */
	if (http_forward_head(req, out, n - 1) != 0)
		abort();
}

static void
fuzz_check_ok(const uint8_t *data, size_t size, const struct http_request *req)
{
	static struct http_request again;
	struct proto_error err;
	struct host h;
	const char *why = NULL;
	size_t i;

	if (req->head_len < 4 || req->head_len > size || req->head_len > EGRESS_HTTP_HEAD_MAX)
		abort();
	if (memcmp(data + req->head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	if (req->version != 10 && req->version != 11)
		abort();
	if (req->method[0] == '\0' || strlen(req->method) > EGRESS_HTTP_METHOD_MAX)
		abort();
	if (req->nheaders > EGRESS_HTTP_HEADERS_MAX)
		abort();
	for (i = 0; i < req->nheaders; i++) {
		const struct http_header *hd = &req->headers[i];

		if (hd->name < data || hd->name + hd->name_len > data + req->head_len ||
		    hd->name_len == 0)
			abort();
		if (hd->value < data || hd->value + hd->value_len > data + req->head_len)
			abort();
	}
	if (req->port == 0)
		abort();
	if (req->kind == HTTP_CONNECT) {
		if (req->path != NULL || req->body != HTTP_BODY_NONE)
			abort();
	} else if (req->kind == HTTP_FORWARD) {
		if (req->path == NULL || req->path_len == 0)
			abort();
	} else
		abort();
	if (host_parse(req->host.name, strlen(req->host.name), &h, &why) == -1 ||
	    strcmp(h.name, req->host.name) != 0 || h.kind != req->host.kind) {
		fprintf(stderr, "host '%s' does not re-parse to itself\n", req->host.name);
		abort();
	}
	/* the parser looks at the head only */
	if (http_parse_request(data, req->head_len, &again, &err) != PROTO_OK ||
	    again.head_len != req->head_len || strcmp(again.host.name, req->host.name) != 0 ||
	    again.port != req->port)
		abort();
	if (http_parse_request(data, req->head_len - 1, &again, &err) != PROTO_NEED_MORE)
		abort();
	fuzz_check_forward(req);
}

static void
fuzz_chunked(const uint8_t *data, size_t size)
{
	struct http_chunked one, two;
	struct proto_error err;
	size_t split = data[0] % size, c1 = 0, c2 = 0, total;
	enum proto_status r1, r2;

	memset(&one, 0, sizeof(one));
	r1 = http_chunked_scan(&one, data, size, &c1, &err);
	if (c1 > size || (r1 == PROTO_ERROR && err.why == NULL))
		abort();
	if (r1 == PROTO_NEED_MORE && c1 != size)
		abort();

	memset(&two, 0, sizeof(two));
	r2 = http_chunked_scan(&two, data, split, &c2, &err);
	if (c2 > split)
		abort();
	total = c2;
	if (r2 == PROTO_NEED_MORE) {
		if (c2 != split)
			abort();
		r2 = http_chunked_scan(&two, data + split, size - split, &c2, &err);
		if (c2 > size - split)
			abort();
		total += c2;
	}
	/* where the body ends does not depend on how it arrived */
	if (r1 != r2 || (r1 == PROTO_OK && total != c1)) {
		fprintf(stderr, "chunked: whole %d/%zu, split at %zu %d/%zu\n", r1, c1, split,
		    r2, total);
		abort();
	}
}

/* Bytes the resumed parser may examine per input byte (it is linear, not quadratic). */
#define FUZZ_WORK_FACTOR 4

static void
fuzz_resumed(const uint8_t *data, size_t size)
{
	static struct http_request req, once;
	struct proto_error err, err1;
	struct http_head h;
	enum proto_status r = PROTO_NEED_MORE, r1;
	size_t have = 0, step = 1 + data[0] % 7;

	memset(&h, 0, sizeof(h));
	/* at most size calls: each adds at least one byte */
	while (r == PROTO_NEED_MORE && have < size) {
		have = size - have < step ? size : have + step;
		r = http_head_parse(&h, data, have, &req, &err);
		if (r == PROTO_NEED_MORE)
			continue;
		r1 = http_parse_request(data, have, &once, &err1);
		if (r != r1)
			abort();
		if (r == PROTO_ERROR && (err.http_status != err1.http_status ||
		    err.reason != err1.reason || strcmp(err.why, err1.why) != 0))
			abort();
		if (r == PROTO_OK && (req.head_len != once.head_len ||
		    req.nheaders != once.nheaders || strcmp(req.host.name, once.host.name) != 0))
			abort();
	}
	if (r == PROTO_NEED_MORE && http_parse_request(data, size, &once, &err1) != r)
		abort();
	if (h.examined > (uint64_t)FUZZ_WORK_FACTOR * size + 2 * (EGRESS_HTTP_METHOD_MAX + 1))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct http_request req;
	struct proto_error err;

	switch (http_parse_request(data, size, &req, &err)) {
	case PROTO_OK:
		fuzz_check_ok(data, size, &req);
		break;
	case PROTO_NEED_MORE:
		if (size >= EGRESS_HTTP_HEAD_MAX)
			abort();
		break;
	case PROTO_ERROR:
		if (err.why == NULL)
			abort();
		if (err.http_status != 400 && err.http_status != 405 && err.http_status != 431)
			abort();
		if (err.reason != EGRESS_MALFORMED_REQUEST && err.reason != EGRESS_BAD_HOST &&
		    err.reason != EGRESS_UNSUPPORTED)
			abort();
		if (err.raw != NULL && (err.raw < data || err.raw + err.raw_len > data + size))
			abort();
		break;
	default:
		abort();
	}
	if (size > 0) {
		fuzz_chunked(data, size);
		fuzz_resumed(data, size);
	}
	return 0;
}
