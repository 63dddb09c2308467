/*
 * fields.c: the line tokenizer of the policy language and egressd.conf (fields.h). The
 * line is untrusted: every byte is looked at once, within len; the fields point into it.
 */
#include "config.h"

#include "fields.h"

static int
fields_fail(struct fields_error *err, enum fields_why why, size_t col, unsigned char byte)
{
	err->why = why;
	err->col = col;
	err->byte = byte;
	return -1;
}

int
fields_split(const char *s, size_t len, struct fields_field *f, size_t max,
    struct fields_error *err)
{
	size_t nf = 0, i = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t start;

		if (c == ' ' || c == '\t') {
			i++;
			continue;
		}
		if (c == '#')
			break;                     /* a comment may hold any byte */
		start = i;
		while (i < len) {
			c = (unsigned char)s[i];
			if (c == ' ' || c == '\t' || c == '#')
				break;
			if (c < 0x20 || c >= 0x7f)
				return fields_fail(err, FIELDS_BAD_BYTE, i + 1, c);
			i++;
		}
		if (nf == max)
			return fields_fail(err, FIELDS_TOO_MANY, start + 1, 0);
		f[nf].s = s + start;
		f[nf].len = i - start;
		f[nf].col = start + 1;
		nf++;
	}
	return (int)nf;
}
