/*
 * fields.h: the line tokenizer of egress's line-based files (the policy language,
 * egress-policy(5), and egressd.conf(5)): blank-separated fields, '#' to the line's end a
 * comment. Each caller keeps what differs between the two (its line limit, CRLF, its
 * messages); this holds what they share, so that both split a line the same way.
 *
 * Pure, bounded and allocation-free: looks at len bytes, writes at most max fields into
 * the caller's array (pointers into s, never copies), trusts the bytes for nothing.
 */
#ifndef EGRESS_FIELDS_H
#define EGRESS_FIELDS_H

#include <stddef.h>

/* One field: s[0..len) of the line, starting at 1-based column col. */
struct fields_field {
	const char *s;
	size_t len;
	size_t col;
};

enum fields_why {
	FIELDS_BAD_BYTE = 1,         /* a byte < 0x20 or >= 0x7f (NUL included) in a field */
	FIELDS_TOO_MANY,             /* a field after max of them */
};

struct fields_error {
	enum fields_why why;
	size_t col;                  /* 1-based: the bad byte, or the start of the extra field */
	unsigned char byte;          /* FIELDS_BAD_BYTE: the byte */
};

/*
 * Splits s[0..len) (one line without its newline; a caller strips a trailing CR) at
 * spaces and tabs; a '#' ends the line's fields, whether at a field's start or inside one
 * ("a#b" is the field "a"), and what follows it is not looked at. Returns the number of
 * fields (0 for a blank or comment line), or -1 with *err: the first bad byte of a field,
 * else the first field beyond max (a field is checked for bad bytes before it is counted).
 */
int fields_split(const char *s, size_t len, struct fields_field *f, size_t max,
    struct fields_error *err);

#endif
