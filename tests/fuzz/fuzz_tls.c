/*
 * fuzz_tls.c: libFuzzer target for the ClientHello inspector of the SNI guard
 * (proto/tls.c). The input is a client byte stream as egressd would hold it.
 *
 * Besides "no crash, no read past len" (ASan; the prefix is copied to a buffer of exactly
 * its length), it checks what egressd relies on:
 *  - walked unit by unit as egressd does (first call, then the rest while the unit is
 *    HELLO or PASS), every len lies within what was given and is non-zero for HELLO and
 *    PASS, NOT_TLS comes only on a first call, an ERROR carries sni-malformed and a why;
 *  - a stream that starts with a TLS record (type 0x16, or 20..24 with version major 3)
 *    is never NOT_TLS: no record before the hello (a ChangeCipherSpec) makes the guard
 *    stop looking;
 *  - a first-call HELLO covers only whole ChangeCipherSpec records before the hello's
 *    first handshake record;
 *  - a reported SNI is canonical: host_parse reads it back to itself, as a name;
 *  - raw points into the input or the scratch buffer;
 *  - the prefix rule: the input cut at input[0] % size answers NEED_MORE or exactly what
 *    the whole input answers (unit and len).
 * Trusts nothing in the input; abort() on any broken property.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

#define FUZZ_CT_FIRST 20        /* change_cipher_spec: the first TLS content type ... */
#define FUZZ_CT_HANDSHAKE 22
#define FUZZ_CT_LAST 24         /* ... heartbeat, the last one that makes a stream TLS */
#define FUZZ_UNITS_MAX 64       /* units walked per input: HELLO/PASS sequences are short */

static uint8_t scratch[EGRESS_TLS_SCRATCH];

static bool
fuzz_inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

static void
fuzz_check(const struct tls_result *r, const uint8_t *buf, size_t len, bool first)
{
	struct host h;
	const char *why = NULL;
	size_t n;

	if (r->unit < TLS_NEED_MORE || r->unit > TLS_ERROR)
		abort();
	if (r->unit == TLS_NOT_TLS && !first)
		abort();
	if (r->unit == TLS_HELLO || r->unit == TLS_PASS) {
		if (r->len == 0 || r->len > len)
			abort();
	} else if (r->len != 0)
		abort();
	if (r->unit == TLS_ERROR &&
	    (r->reason != EGRESS_SNI_MALFORMED || r->why == NULL))
		abort();
	if (r->has_sni) {
		if (r->unit != TLS_HELLO)
			abort();
		n = strnlen(r->sni, sizeof(r->sni));
		if (n == 0 || n > EGRESS_HOST_MAX)
			abort();
		if (host_parse(r->sni, n, &h, &why) != 0 || h.kind != HOST_NAME ||
		    strcmp(h.name, r->sni) != 0)
			abort();
	} else if (r->sni[0] != '\0')
		abort();
	if (r->raw != NULL && !fuzz_inside(r->raw, r->raw_len, buf, len) &&
	    !fuzz_inside(r->raw, r->raw_len, scratch, sizeof(scratch)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_result whole, r;
	uint8_t *prefix;
	size_t off = 0, cut;
	bool first = true;
	int n;

	tls_scan(data, size, true, scratch, sizeof(scratch), &whole);
	fuzz_check(&whole, data, size, true);
	if (whole.unit == TLS_NOT_TLS && size >= 2 && (data[0] == FUZZ_CT_HANDSHAKE ||
	    (data[0] >= FUZZ_CT_FIRST && data[0] <= FUZZ_CT_LAST && data[1] == 3)))
		abort();
	if (whole.unit == TLS_HELLO) {
		/* Bound: each pass moves off past a CCS record within whole.len. */
		for (off = 0; off < whole.len && data[off] != FUZZ_CT_HANDSHAKE; off += 6)
			if (whole.len - off < 6 || memcmp(data + off, "\x14\x03", 2) != 0 ||
			    data[off + 3] != 0 || data[off + 4] != 1 || data[off + 5] != 1)
				abort();
		if (off >= whole.len)
			abort();
		off = 0;
	}

	/* As egressd walks it: bounded by FUZZ_UNITS_MAX, each step takes len > 0 bytes. */
	r = whole;
	for (n = 0; n < FUZZ_UNITS_MAX; n++) {
		if (r.unit != TLS_HELLO && r.unit != TLS_PASS)
			break;
		off += r.len;
		first = false;
		tls_scan(data + off, size - off, first, scratch, sizeof(scratch), &r);
		fuzz_check(&r, data + off, size - off, first);
	}

	if (size == 0)
		return 0;
	cut = data[0] % size;
	prefix = malloc(cut == 0 ? 1 : cut);
	if (prefix == NULL)
		return 0;
	memcpy(prefix, data, cut);
	tls_scan(prefix, cut, true, scratch, sizeof(scratch), &r);
	fuzz_check(&r, prefix, cut, true);
	if (r.unit != TLS_NEED_MORE && (r.unit != whole.unit || r.len != whole.len))
		abort();
	free(prefix);
	return 0;
}
