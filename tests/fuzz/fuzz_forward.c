/*
 * fuzz_forward.c: libFuzzer target for the body framing of a forwarded request
 * (http_framing_start / http_framing_take in proto/http.c): which client bytes after
 * the head egressd sends upstream. It trusts nothing in the input.
 *
 * Input: byte 0 picks the framing (none, Content-Length, chunked), bytes 1-2 the
 * Content-Length (big-endian, so that it often ends inside the stream), byte 3 seeds
 * the split points; the rest is the byte stream after the head. Properties checked,
 * beyond not crashing and not reading past the input (ASan):
 *  - the answer (total taken, final status) is the same fed whole, a byte at a time,
 *    and in FUZZ_SPLITS splittings whose piece lengths come from the input;
 *  - taken never exceeds what a call was given; NEED_MORE takes all of it; once the
 *    body ended (OK) or broke (ERROR) every later call takes 0 and answers the same;
 *  - Content-Length takes exactly min(length, stream); no framing takes nothing; an
 *    ERROR (chunked only) has a why.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define FUZZ_HEADER 4                /* framing, length (2), split seed */
#define FUZZ_SPLITS 4                /* splittings tried besides whole and bytewise */
#define FUZZ_PIECE_MAX 64            /* longest piece of a splitting */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_result {
	enum proto_status status;
	size_t taken;
};

/* A small deterministic generator: the split points depend on the input only. */
static uint32_t
fuzz_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Feeds s[0..n) in pieces: piece 0 means "the rest" (whole), else the given length,
 * or random lengths from seed when piece is SIZE_MAX. */
static struct fuzz_result
fuzz_feed(enum http_body body, uint64_t clen, const uint8_t *s, size_t n, size_t piece,
    uint32_t seed)
{
	struct http_framing f;
	struct proto_error err;
	struct fuzz_result res = { PROTO_NEED_MORE, 0 };
	size_t off = 0, k, taken;
	uint32_t x = seed | 1;
	enum proto_status r;

	http_framing_start(&f, body, clen);
	if (n == 0) {
		r = http_framing_take(&f, s, 0, &taken, &err);
		if (taken != 0)
			abort();
		res.status = r;
		return res;
	}
	/* at most n pieces: each is at least one byte */
	while (off < n) {
		if (piece == 0)
			k = n - off;
		else if (piece == SIZE_MAX)
			k = 1 + fuzz_next(&x) % FUZZ_PIECE_MAX;
		else
			k = piece;
		if (k > n - off)
			k = n - off;
		r = http_framing_take(&f, s + off, k, &taken, &err);
		if (taken > k)
			abort();
		if (r == PROTO_NEED_MORE && taken != k)
			abort();
		if (r == PROTO_ERROR && err.why == NULL)
			abort();
		if (res.status != PROTO_NEED_MORE) {
			/* ended before: nothing more is ever taken, the answer stays */
			if (taken != 0 || r != res.status)
				abort();
		}
		res.taken += taken;
		res.status = r;
		off += k;
	}
	if (res.taken > n)
		abort();
	return res;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum http_body bodies[] = {
		HTTP_BODY_NONE, HTTP_BODY_LENGTH, HTTP_BODY_CHUNKED,
	};
	struct fuzz_result whole, other;
	enum http_body body;
	uint64_t clen;
	const uint8_t *s;
	size_t n, i;
	uint32_t seed;

	if (size < FUZZ_HEADER)
		return 0;
	body = bodies[data[0] % 3];
	clen = (uint64_t)data[1] << 8 | data[2];
	seed = (uint32_t)data[3] * 2654435761u;
	s = data + FUZZ_HEADER;
	n = size - FUZZ_HEADER;

	whole = fuzz_feed(body, clen, s, n, 0, 0);
	switch (body) {
	case HTTP_BODY_NONE:
		if (whole.status != PROTO_OK || whole.taken != 0)
			abort();
		break;
	case HTTP_BODY_LENGTH:
		if (whole.taken != (clen < n ? clen : n))
			abort();
		if ((whole.status == PROTO_OK) != (clen <= n) || whole.status == PROTO_ERROR)
			abort();
		break;
	default:
		break;
	}
	for (i = 0; i <= FUZZ_SPLITS; i++) {
		if (i == 0)
			other = fuzz_feed(body, clen, s, n, 1, 0);
		else
			other = fuzz_feed(body, clen, s, n, SIZE_MAX, seed + (uint32_t)i);
		if (other.status != whole.status || other.taken != whole.taken) {
			fprintf(stderr, "framing %d: whole %d/%zu, splitting %zu %d/%zu\n",
			    (int)body, whole.status, whole.taken, i, other.status, other.taken);
			abort();
		}
	}
	return 0;
}
