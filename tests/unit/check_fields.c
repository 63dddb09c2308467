/*
 * check_fields.c: unit tests for the line tokenizer of the policy language and
 * egressd.conf (common/fields.c), one table and one tcase per behaviour: fields and their
 * columns, blanks, comments, bad bytes, the field limit, and that nothing past len is read.
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAXF 4

struct fields_case {
	const char *line;
	size_t len;             /* 0: strlen(line) */
	int want;               /* fields, or -1 */
	const char *fields;     /* want >= 0: the fields, each followed by '|' */
	const char *cols;       /* want >= 0: their columns, each followed by ',' */
	enum fields_why why;    /* want -1 */
	size_t col;             /* want -1 */
	unsigned char byte;     /* want -1, FIELDS_BAD_BYTE */
};

/* A row that starts a tcase: its name, then its cases up to the next such row. */
#define GROUP(name) { NULL, 0, 0, (name), NULL, 0, 0, 0 }

static const struct fields_case cases[] = {
	GROUP("fields and columns: split at runs of spaces and tabs (columns 1-based)"),
	{ "allow example.com 443", 0, 3, "allow|example.com|443|", "1,7,19,", 0, 0, 0 },
	{ "a", 0, 1, "a|", "1,", 0, 0, 0 },
	{ "  \t a \t\t bb  ", 0, 2, "a|bb|", "5,10,", 0, 0, 0 },
	{ "a\tb", 0, 2, "a|b|", "1,3,", 0, 0, 0 },
	{ "", 0, 0, "", "", 0, 0, 0 },
	{ " \t \t", 0, 0, "", "", 0, 0, 0 },
	{ "x=1,y:2/3", 0, 1, "x=1,y:2/3|", "1,", 0, 0, 0 },
	GROUP("comments: '#' ends the fields, at a field's start or inside one; any byte after"),
	{ "# a comment", 0, 0, "", "", 0, 0, 0 },
	{ "allow a # b c", 0, 2, "allow|a|", "1,7,", 0, 0, 0 },
	{ "allow a#b", 0, 2, "allow|a|", "1,7,", 0, 0, 0 },
	{ "a # \x01\x7f\xff", 0, 1, "a|", "1,", 0, 0, 0 },
	{ "#", 0, 0, "", "", 0, 0, 0 },
	{ "a b c d e # fields before the comment count", 0, -1, NULL, NULL, FIELDS_TOO_MANY, 9,
	    0 },
	GROUP("bad bytes in a field: control, DEL, NUL, non-ASCII, at their column"),
	{ "allow a\x01 443", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 8, 0x01 },
	{ "a\rb", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 2, '\r' },
	{ "a \r", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 3, '\r' },
	{ "caf\xc3\xa9", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 4, 0xc3 },
	{ "a \x7f", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 3, 0x7f },
	{ "ab\0cd", 5, -1, NULL, NULL, FIELDS_BAD_BYTE, 3, 0 },
	{ "\x1b", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 1, 0x1b },
	/* A bad byte in the field beyond the limit: the byte is reported, it comes first. */
	{ "a b c d e\x02", 0, -1, NULL, NULL, FIELDS_BAD_BYTE, 10, 0x02 },
	GROUP("the field limit: MAXF fields fit, the next is an error at its start"),
	{ "a b c d", 0, 4, "a|b|c|d|", "1,3,5,7,", 0, 0, 0 },
	{ "a b c d ", 0, 4, "a|b|c|d|", "1,3,5,7,", 0, 0, 0 },
	{ "a b c d e", 0, -1, NULL, NULL, FIELDS_TOO_MANY, 9, 0 },
	{ "a b c d   eee f", 0, -1, NULL, NULL, FIELDS_TOO_MANY, 11, 0 },
	{ "a b c d #e", 0, 4, "a|b|c|d|", "1,3,5,7,", 0, 0, 0 },
	GROUP("bounded: only len bytes are read, what follows in memory is not the line"),
	{ "allow a 443", 7, 2, "allow|a|", "1,7,", 0, 0, 0 },
	{ "ab\x01", 2, 1, "ab|", "1,", 0, 0, 0 },
	{ "a b c d e", 7, 4, "a|b|c|d|", "1,3,5,7,", 0, 0, 0 },
	{ "x", 0, 1, "x|", "1,", 0, 0, 0 },
};

static void
check_case(const struct fields_case *c)
{
	size_t len = c->len ? c->len : strlen(c->line);
	/* A heap copy of exactly len bytes: a read past it is AddressSanitizer's to see. */
	char *line = malloc(len ? len : 1);
	struct fields_field f[MAXF];
	struct fields_error err = { 0, 0, 0 };
	char got[256] = "", cols[64] = "";
	int n;

	ck_assert_ptr_nonnull(line);
	memcpy(line, c->line, len);
	n = fields_split(line, len, f, MAXF, &err);
	ck_assert_msg(n == c->want, "'%s': %d fields, want %d", c->line, n, c->want);
	if (n >= 0) {
		for (int i = 0; i < n; i++) {
			size_t gl = strlen(got), cl = strlen(cols);

			ck_assert(f[i].s >= line && f[i].s + f[i].len <= line + len);
			snprintf(got + gl, sizeof(got) - gl, "%.*s|", (int)f[i].len, f[i].s);
			snprintf(cols + cl, sizeof(cols) - cl, "%zu,", f[i].col);
		}
		ck_assert_str_eq(got, c->fields);
		ck_assert_str_eq(cols, c->cols);
	} else {
		ck_assert_int_eq(err.why, c->why);
		ck_assert_uint_eq(err.col, c->col);
		ck_assert_uint_eq(err.byte, c->byte);
	}
	free(line);
}

START_TEST(test_case)
{
	check_case(&cases[_i]);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fields");
	SRunner *sr;
	int failed;

	/* One tcase per GROUP row, looping over the rows up to the next one. */
	for (size_t g = 0, end; g < NELEM(cases); g = end) {
		TCase *tc = tcase_create(cases[g].fields);

		suite_add_tcase(s, tc);
		for (end = g + 1; end < NELEM(cases) && cases[end].line != NULL; end++)
			continue;
		tcase_add_loop_test(tc, test_case, (int)g + 1, (int)end);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
