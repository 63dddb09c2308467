/*
 * fuzz_parent.c: libFuzzer target for egressd's side of a parent proxy (proto/parent.c):
 * the parent's answer head, the CONNECT request and base64. Properties checked, beyond
 * not crashing and not reading past the input (ASan):
 *  - OK: the head ends in a blank line (LF, or CRLF) within EGRESS_PARENT_HEAD_MAX and the
 *    input; the status is 100..599 and the three digits after "HTTP/1.x "; the status line
 *    is the input's first line, without its line end; every prefix of the head is
 *    NEED_MORE; the input with any bytes after the head is the same answer (they are the
 *    tunnel's);
 *  - NEED_MORE only below the bound; ERROR carries a why;
 *  - the input read in pieces (each call on a longer prefix, as egressd does while it
 *    arrives) ends as it does whole: the first prefix that is not NEED_MORE is the whole
 *    input's answer (the same head, or refused);
 *  - the input as an authority and a credential: a request is built only without CR,
 *    LF, blank or control bytes, and then it is exactly the CONNECT line, Host and
 *    (with a credential) Proxy-Authorization, and an answer-shaped blank line ends it;
 *  - base64: the length is 4 * ceil(n / 3), and only the alphabet and final '='.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_answer(const uint8_t *data, size_t size)
{
	struct parent_answer a, b;
	const char *why = NULL, *why2 = NULL;
	enum proto_status st = parent_parse_answer(data, size, &a, &why);

	switch (st) {
	case PROTO_OK:
		if (a.head_len < 4 || a.head_len > size || a.head_len > EGRESS_PARENT_HEAD_MAX ||
		    data[a.head_len - 1] != '\n' || why != NULL)
			abort();
		if (!(data[a.head_len - 2] == '\n' || (data[a.head_len - 2] == '\r' &&
		    data[a.head_len - 3] == '\n')))
			abort();
		if (a.status < 100 || a.status > 599 || a.line != data || a.line_len < 12 ||
		    memcmp(data, "HTTP/1.", 7) != 0 ||
		    a.status != (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0'))
			abort();
		if (data[a.line_len] != '\n' && !(data[a.line_len] == '\r' &&
		    data[a.line_len + 1] == '\n'))
			abort();
		for (size_t n = 0; n < a.head_len; n++)
			if (parent_parse_answer(data, n, &b, &why2) != PROTO_NEED_MORE)
				abort();
		if (parent_parse_answer(data, a.head_len, &b, &why2) != PROTO_OK ||
		    b.status != a.status || b.head_len != a.head_len || b.line_len != a.line_len)
			abort();
		break;
	case PROTO_NEED_MORE:
		if (size >= EGRESS_PARENT_HEAD_MAX)
			abort();
		break;
	case PROTO_ERROR:
		if (why == NULL)
			abort();
		break;
	}
	/* Pieces: the first prefix that is not NEED_MORE is where the whole one decides. */
	{
		size_t step = size > 64 ? size / 64 : 1;
		enum proto_status sp = PROTO_NEED_MORE;
		size_t n;

		for (n = 0; n <= size && sp == PROTO_NEED_MORE; n += step)
			sp = parent_parse_answer(data, n, &b, &why2);
		if (sp == PROTO_NEED_MORE && parent_parse_answer(data, size, &b, &why2) != st)
			abort();
		if (sp == PROTO_OK && (st != PROTO_OK || b.head_len != a.head_len))
			abort();
		if (sp == PROTO_ERROR && st != PROTO_ERROR)
			abort();
	}
}

static bool
fuzz_header_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static void
fuzz_request(const uint8_t *data, size_t size)
{
	char authority[EGRESS_PARENT_AUTHORITY_MAX + 16], cred[EGRESS_PARENT_AUTH_B64_MAX + 16];
	uint8_t out[EGRESS_PARENT_REQUEST_MAX];
	char want[EGRESS_PARENT_REQUEST_MAX * 2];
	const uint8_t *cut = memchr(data, '|', size);
	size_t alen = cut ? (size_t)(cut - data) : size, clen = cut ? size - alen - 1 : 0;
	size_t n;
	int w;

	if (alen >= sizeof(authority) || clen >= sizeof(cred))
		return;
	memcpy(authority, data, alen);
	authority[alen] = '\0';
	memcpy(cred, cut ? cut + 1 : data, clen);
	cred[clen] = '\0';
	n = parent_connect_request(authority, cut ? cred : NULL, out, sizeof(out));
	if (strlen(authority) != alen || (cut && strlen(cred) != clen))
		return;                 /* a NUL inside: what C strings say is shorter */
	if (n == 0)
		return;
	if (!fuzz_header_ok(authority) || (cut && !fuzz_header_ok(cred)))
		abort();
	w = snprintf(want, sizeof(want), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n",
	    authority, authority, cut ? "Proxy-Authorization: Basic " : "", cut ? cred : "",
	    cut ? "\r\n" : "");
	if (w < 0 || (size_t)w != n || memcmp(want, out, n) != 0)
		abort();
}

static void
fuzz_base64(const uint8_t *data, size_t size)
{
	char out[4 * ((4096 + 2) / 3) + 1];
	size_t n;

	if (size > 4096)
		return;
	n = parent_base64(data, size, out, sizeof(out));
	if (n != ((size + 2) / 3) * 4 || out[n] != '\0')
		abort();
	for (size_t i = 0; i < n; i++) {
		char ch = out[i];
		bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';

		if (!alpha && !(ch == '=' && i >= n - 2))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_answer(data, size);
	fuzz_request(data, size);
	fuzz_base64(data, size);
	return 0;
}
