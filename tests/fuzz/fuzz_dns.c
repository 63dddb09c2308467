/*
 * fuzz_dns.c: libFuzzer target for the stub resolver's DNS parser and encoder
 * (proto/dnswire.c). Beyond not crashing (ASan catches a read past the input, which
 * libFuzzer hands over in a buffer of exactly size bytes): an accepted query has a
 * name within 255 octets and a text form within 253; its answer, for every rcode and
 * with and without an address, has the query's id and carries the query's question
 * byte for byte; an error answer is the header alone unless a question was read.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "dnswire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t ip[4] = { 198, 18, 0, 1 };
	static const uint8_t rcodes[] = { DNSWIRE_NOERROR, DNSWIRE_FORMERR, DNSWIRE_SERVFAIL,
	    DNSWIRE_NXDOMAIN };
	uint8_t out[DNSWIRE_ANSWER_MAX];
	struct dnswire_query q;
	enum dnswire_status st = dnswire_parse(data, size, &q);
	size_t n;

	if (st == DNSWIRE_DROP)
		return 0;
	if (size < DNSWIRE_HEADER || (data[0] << 8 | data[1]) != q.id)
		abort();
	if (st == DNSWIRE_ERROR) {
		n = dnswire_answer(&q, q.rcode, NULL, 0, out);
		if (q.rcode == DNSWIRE_NOERROR || n != (q.has_question ? DNSWIRE_HEADER +
		    q.wirelen + 4 : DNSWIRE_HEADER))
			abort();
		return 0;
	}
	if (!q.has_question || q.wirelen < 1 || q.wirelen > DNSWIRE_MAX_NAME ||
	    q.textlen > DNSWIRE_MAX_TEXT - 1 || (q.text_ok && strlen(q.text) != q.textlen) ||
	    q.wirelen + DNSWIRE_HEADER + 4 > size)
		abort();
	for (size_t i = 0; i < sizeof(rcodes); i++)
		for (int a = 0; a < 2; a++) {
			n = dnswire_answer(&q, rcodes[i], a ? ip : NULL, 1, out);
			if (n > DNSWIRE_ANSWER_MAX || n < DNSWIRE_HEADER + q.wirelen + 4)
				abort();
			if (memcmp(out, data, 2) != 0 || (out[3] & 0x0f) != rcodes[i] ||
			    out[4] != 0 || out[5] != 1)
				abort();
			/* The question section equals the query's, byte for byte. */
			if (memcmp(out + DNSWIRE_HEADER, data + DNSWIRE_HEADER, q.wirelen + 4) != 0)
				abort();
			if (n != DNSWIRE_HEADER + q.wirelen + 4 + (a && rcodes[i] == 0 &&
			    q.qtype == DNSWIRE_TYPE_A ? 16 : 0))
				abort();
		}
	return 0;
}
