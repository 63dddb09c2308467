/*
 * fuzz_fields.c: libFuzzer target for fields_split (common/fields.c), the line tokenizer
 * of the policy language and egressd.conf. Properties besides "no crash": every field
 * lies inside the input, in order, non-empty, at its column, of printable ASCII without
 * blank or '#'; an error's column is inside the input and names the bad byte or a field's
 * start; a smaller limit gives the same fields as a larger one, up to the limit, or
 * FIELDS_TOO_MANY at the start of the first field beyond it.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "fields.h"

#define BIG 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_fields(const char *s, size_t size, const struct fields_field *f, int n)
{
	const char *prev_end = s;

	for (int i = 0; i < n; i++) {
		if (f[i].len == 0 || f[i].s < prev_end || f[i].s + f[i].len > s + size ||
		    f[i].col != (size_t)(f[i].s - s) + 1)
			abort();
		for (size_t k = 0; k < f[i].len; k++) {
			unsigned char c = (unsigned char)f[i].s[k];

			if (c <= 0x20 || c >= 0x7f || c == '#')
				abort();
		}
		prev_end = f[i].s + f[i].len;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fields_field big[BIG], small[4];
	const char *s = (const char *)data;
	struct fields_error e1, e2;
	int n, m;

	if (size > BIG)
		return 0;
	n = fields_split(s, size, big, BIG, &e1);
	if (n >= 0)
		check_fields(s, size, big, n);
	else if (e1.why != FIELDS_BAD_BYTE || e1.col < 1 || e1.col > size ||
	    (unsigned char)s[e1.col - 1] != e1.byte || (e1.byte >= 0x20 && e1.byte < 0x7f))
		abort();            /* BIG fields cannot be exceeded by BIG bytes */
	m = fields_split(s, size, small, 4, &e2);
	if (n >= 0 && n <= 4) {
		if (m != n)
			abort();
		for (int i = 0; i < m; i++)
			if (small[i].s != big[i].s || small[i].len != big[i].len)
				abort();
	} else if (n > 4) {
		/* Over the limit: the fifth field's start, unless a bad byte came first. */
		if (m != -1 || e2.why != FIELDS_TOO_MANY || e2.col != big[4].col)
			abort();
	} else if (m != -1 || (e2.why == FIELDS_BAD_BYTE && e2.col != e1.col) ||
	    (e2.why == FIELDS_TOO_MANY && e2.col >= e1.col))
		abort();
	return 0;
}
