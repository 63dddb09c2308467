/*
 * check_addr.c: unit tests for addresses, CIDR ranges and the classification every answer
 * and every literal goes through (SPEC "egressd", decision pipeline: every range of
 * special-purpose-addresses.txt is denied unless its action is decode, in which case the
 * embedded IPv4 decides; the same for nat64-prefix ranges; permit-range is the operator's
 * exception).
 *
 * The data file is read here at run time and parsed independently of the awk generator
 * the library is built with; a small longest-prefix model over those rows is the oracle
 * for the first, last, an inner and the two neighbouring addresses of every row.
 */
#include "config.h"

#include <check.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy.h"

#define SPA_FILE TOP_SRCDIR "/policy/special-purpose-addresses.txt"
#define SPA_MAX_ROWS 512          /* rows this test can hold; the file has about 80 */
#define SPA_MAX_LINE 4096         /* longest line this test reads */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* --- helpers ---------------------------------------------------------------------- */

/* Parses a test vector with libc (never with the library under test). */
static struct addr
vec_addr(const char *s)
{
	struct addr a;

	memset(&a, 0, sizeof(a));
	if (strchr(s, ':') != NULL) {
		a.family = AF_INET6;
		ck_assert_msg(inet_pton(AF_INET6, s, a.b) == 1, "bad test vector %s", s);
	} else {
		a.family = AF_INET;
		ck_assert_msg(inet_pton(AF_INET, s, a.b) == 1, "bad test vector %s", s);
	}
	return a;
}

static const char *
vec_text(const struct addr *a, char *buf)
{
	if (inet_ntop(a->family, a->b, buf, INET6_ADDRSTRLEN) == NULL)
		snprintf(buf, INET6_ADDRSTRLEN, "(family %d)", a->family);
	return buf;
}

static unsigned
bits_of(int family)
{
	return family == AF_INET ? 32 : 128;
}

static bool
bit_get(const uint8_t *b, unsigned i)
{
	return (b[i / 8] >> (7 - i % 8)) & 1;
}

static void
bit_set(uint8_t *b, unsigned i, bool v)
{
	uint8_t m = (uint8_t)(0x80u >> (i % 8));

	b[i / 8] = v ? (uint8_t)(b[i / 8] | m) : (uint8_t)(b[i / 8] & ~m);
}

/* A CIDR written for a test, parsed with libc and strtoul (not with cidr_parse). */
static struct cidr
vec_cidr(const char *s)
{
	struct cidr c;
	char buf[64];
	const char *slash = strchr(s, '/');
	char *end;
	unsigned long n;

	memset(&c, 0, sizeof(c));
	ck_assert_msg(slash != NULL && (size_t)(slash - s) < sizeof(buf), "bad test cidr %s", s);
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	c.a = vec_addr(buf);
	n = strtoul(slash + 1, &end, 10);
	ck_assert_msg(*end == '\0' && n <= bits_of(c.a.family), "bad test cidr %s", s);
	c.plen = (unsigned)n;
	return c;
}

static bool
in_prefix(const struct addr *a, const struct addr *p, unsigned plen)
{
	if (a->family != p->family)
		return false;
	for (unsigned i = 0; i < plen; i++)
		if (bit_get(a->b, i) != bit_get(p->b, i))
			return false;
	return true;
}

/* a + 1 (delta 1) or a - 1 (delta -1); false when it wraps. */
static bool
addr_step(const struct addr *a, int delta, struct addr *out)
{
	int n = a->family == AF_INET ? 4 : 16;

	*out = *a;
	for (int i = n - 1; i >= 0; i--) {
		if (delta > 0) {
			if (out->b[i]++ != 0xff)
				return true;
		} else {
			if (out->b[i]-- != 0x00)
				return true;
		}
	}
	return false;
}

static struct addr
v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	struct addr x;

	memset(&x, 0, sizeof(x));
	x.family = AF_INET;
	x.b[0] = a;
	x.b[1] = b;
	x.b[2] = c;
	x.b[3] = d;
	return x;
}

/* --- the data file, parsed here ------------------------------------------------------ */

struct row {
	char text[64];          /* the CIDR as the file writes it */
	struct cidr c;
	bool decode;            /* default=decode; every other action denies */
	char action[32];
	char name[256];         /* the registry name: after '#', up to '|' */
	unsigned line;
};

static struct row rows[SPA_MAX_ROWS];
static size_t nrows;
static char load_error[512];    /* empty when the file was read and parsed */

static void
load_fail(unsigned line, const char *what)
{
	if (load_error[0] == '\0')
		snprintf(load_error, sizeof(load_error), "%s:%u: %s", SPA_FILE, line, what);
}

/* A row is a line that starts with a CIDR; its action is the word after "default=". */
static void
load_rows(void)
{
	FILE *f = fopen(SPA_FILE, "r");
	char line[SPA_MAX_LINE];
	unsigned lineno = 0;

	if (f == NULL) {
		snprintf(load_error, sizeof(load_error), "%s: %s", SPA_FILE, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		struct row *r;
		char addr[64], *p, *end;
		const char *d;
		size_t n;
		unsigned long plen;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			load_fail(lineno, "line too long for this test");
			break;
		}
		if (!isxdigit((unsigned char)line[0]) && line[0] != ':')
			continue;
		if (nrows == SPA_MAX_ROWS) {
			load_fail(lineno, "too many rows for this test");
			break;
		}
		r = &rows[nrows];
		memset(r, 0, sizeof(*r));
		r->line = lineno;
		n = strcspn(line, " \t\r\n#");
		if (n >= sizeof(r->text)) {
			load_fail(lineno, "CIDR too long");
			break;
		}
		memcpy(r->text, line, n);
		r->text[n] = '\0';
		p = strchr(r->text, '/');
		if (p == NULL || (size_t)(p - r->text) >= sizeof(addr)) {
			load_fail(lineno, "a row without a '/'");
			break;
		}
		memcpy(addr, r->text, (size_t)(p - r->text));
		addr[p - r->text] = '\0';
		r->c.a.family = strchr(addr, ':') != NULL ? AF_INET6 : AF_INET;
		if (inet_pton(r->c.a.family, addr, r->c.a.b) != 1) {
			load_fail(lineno, "not an address before '/'");
			break;
		}
		errno = 0;
		plen = strtoul(p + 1, &end, 10);
		if (end == p + 1 || *end != '\0' || errno != 0 ||
		    plen > bits_of(r->c.a.family)) {
			load_fail(lineno, "bad prefix length");
			break;
		}
		r->c.plen = (unsigned)plen;
		for (unsigned i = r->c.plen; i < bits_of(r->c.a.family); i++) {
			if (bit_get(r->c.a.b, i)) {
				load_fail(lineno, "host bits set in a row");
				break;
			}
		}

		d = strstr(line, "default=");
		if (d == NULL) {
			load_fail(lineno, "row without default=");
			break;
		}
		d += strlen("default=");
		n = strspn(d, "abcdefghijklmnopqrstuvwxyz-");
		if (n == 0 || n >= sizeof(r->action)) {
			load_fail(lineno, "empty action");
			break;
		}
		memcpy(r->action, d, n);
		r->action[n] = '\0';
		r->decode = strcmp(r->action, "decode") == 0;

		p = strchr(line, '#');
		if (p == NULL) {
			load_fail(lineno, "row without a name");
			break;
		}
		p += strspn(p + 1, " \t") + 1;
		n = strcspn(p, "|\n");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof(r->name)) {
			load_fail(lineno, "bad name");
			break;
		}
		memcpy(r->name, p, n);
		r->name[n] = '\0';
		nrows++;
	}
	if (ferror(f))
		load_fail(lineno, "read error");
	fclose(f);
	if (load_error[0] == '\0' && nrows < 50)
		load_fail(lineno, "fewer than 50 rows: the row syntax was not understood");
}

static long
row_by_text(const char *text)
{
	for (size_t i = 0; i < nrows; i++)
		if (strcmp(rows[i].text, text) == 0)
			return (long)i;
	return -1;
}

/* --- the oracle: longest prefix over the rows parsed above ------------------------------ */

static long
model_lookup(const struct addr *a)
{
	long best = -1;

	for (size_t i = 0; i < nrows; i++)
		if (in_prefix(a, &rows[i].c.a, rows[i].c.plen) &&
		    (best < 0 || rows[i].c.plen > rows[best].c.plen))
			best = (long)i;
	return best;
}

/* Where a decode row of the file carries its IPv4 (the file's section B and E). */
static bool
model_decode(const struct row *r, const struct addr *a, struct addr *out)
{
	static const uint8_t p6to4[2] = { 0x20, 0x02 };

	if (r->c.a.family != AF_INET6)
		return false;
	if (r->c.plen == 16 && memcmp(r->c.a.b, p6to4, 2) == 0) {
		*out = v4(a->b[2], a->b[3], a->b[4], a->b[5]);     /* 2002:WWXX:YYZZ::/48 */
		return true;
	}
	if (r->c.plen == 96) {
		*out = v4(a->b[12], a->b[13], a->b[14], a->b[15]);  /* low 32 bits */
		return true;
	}
	return false;
}

/* An address of decode row r that carries v (the inverse of model_decode). */
static struct addr
model_embed(const struct row *r, const struct addr *v)
{
	struct addr a = r->c.a;

	if (r->c.plen == 16) {
		memcpy(a.b + 2, v->b, 4);
		a.b[15] = 0x01;           /* the interface id does not matter */
		a.b[7] = 0x2a;            /* nor the subnet */
	} else {
		memcpy(a.b + 12, v->b, 4);
	}
	return a;
}

struct expect {
	bool denied;
	long row;               /* deciding row, -1 when global or reserved */
	bool reserved;          /* IPv6 outside 2000::/3 that no row names */
	bool decoded;           /* a decode row: the IPv4 decided */
	long via;               /* that decode row */
	struct addr v4;
};

static void
model_classify(const struct addr *a, struct expect *e)
{
	long r = model_lookup(a);

	memset(e, 0, sizeof(*e));
	e->row = -1;
	e->via = -1;
	if (r >= 0 && rows[r].decode) {
		ck_assert_msg(model_decode(&rows[r], a, &e->v4),
		    "the test cannot decode row %s (line %u)", rows[r].text, rows[r].line);
		e->decoded = true;
		e->via = r;
		r = model_lookup(&e->v4);
		e->denied = r >= 0;
		e->row = r;
		return;
	}
	if (r >= 0) {
		e->denied = true;
		e->row = r;
		return;
	}
	if (a->family == AF_INET6 && (a->b[0] & 0xe0) != 0x20) {
		e->denied = true;
		e->reserved = true;
	}
}

/* addr_classify (no nat64 prefixes) must agree with the model in every field it names. */
static void
check_model(const struct addr *a, const char *what, const struct row *of)
{
	struct addr_verdict v;
	struct expect e;
	char t[INET6_ADDRSTRLEN], t2[INET6_ADDRSTRLEN], t3[INET6_ADDRSTRLEN];
	bool r;

	model_classify(a, &e);
	memset(&v, 0x5a, sizeof(v));
	r = addr_classify(a, NULL, 0, &v);
	vec_text(a, t);
	ck_assert_msg(r == v.denied, "%s %s of %s: returned %d, v.denied %d", what, t, of->text,
	    r, v.denied);
	ck_assert_msg(v.denied == e.denied, "%s %s of %s (line %u): denied=%d, expected %d%s%s",
	    what, t, of->text, of->line, v.denied, e.denied,
	    e.row >= 0 ? " by " : "", e.row >= 0 ? rows[e.row].text : "");
	if (e.row >= 0) {
		ck_assert_msg(v.range != NULL && strcmp(v.range, rows[e.row].text) == 0,
		    "%s %s of %s: decided by %s, expected %s", what, t, of->text,
		    v.range != NULL ? v.range : "(null)", rows[e.row].text);
		ck_assert_msg(v.name != NULL && strcmp(v.name, rows[e.row].name) == 0,
		    "%s %s of %s: name \"%s\", expected \"%s\"", what, t, of->text,
		    v.name != NULL ? v.name : "(null)", rows[e.row].name);
	} else if (e.reserved) {
		ck_assert_msg(v.range != NULL && v.name != NULL,
		    "%s %s of %s: denied as reserved without a range and a name", what, t,
		    of->text);
	} else {
		ck_assert_msg(v.range == NULL, "%s %s of %s: global, but range %s", what, t,
		    of->text, v.range);
	}
	ck_assert_msg(v.decided_by_v4 == e.decoded, "%s %s of %s: decided_by_v4=%d, expected %d",
	    what, t, of->text, v.decided_by_v4, e.decoded);
	if (e.decoded) {
		ck_assert_msg(v.embedded, "%s %s of %s: decoded but not embedded", what, t,
		    of->text);
		ck_assert_msg(addr_equal(&v.v4, &e.v4), "%s %s of %s: v4 %s, expected %s", what,
		    t, of->text, vec_text(&v.v4, t2), vec_text(&e.v4, t3));
		ck_assert_msg(strcmp(v.via, rows[e.via].text) == 0,
		    "%s %s of %s: via \"%s\", expected %s", what, t, of->text, v.via,
		    rows[e.via].text);
	}
	if (a->family == AF_INET)
		ck_assert_msg(!v.embedded, "%s %s: an IPv4 address reports an embedded IPv4",
		    what, t);
}

/* --- the data file and the table ------------------------------------------------------ */

START_TEST(test_data_file)
{
	static const struct {
		const char *text;
		bool decode;
	} known[] = {
		{ "127.0.0.0/8", false }, { "0.0.0.0/32", false }, { "::1/128", false },
		{ "192.0.0.9/32", false }, { "2001::/32", false }, { "168.63.129.16/32", false },
		{ "64:ff9b:1::/48", false }, { "::/96", false }, { "fe80::/10", false },
		{ "::ffff:0:0/96", true }, { "64:ff9b::/96", true }, { "2002::/16", true },
	};
	size_t ndecode = 0;

	ck_assert_msg(load_error[0] == '\0', "%s", load_error);
	ck_assert_uint_ge(nrows, 50);
	for (size_t i = 0; i < NELEM(known); i++) {
		long r = row_by_text(known[i].text);

		ck_assert_msg(r >= 0, "row %s not found in the data file", known[i].text);
		ck_assert_msg(rows[r].decode == known[i].decode, "row %s: action %s",
		    known[i].text, rows[r].action);
	}
	/* "# 3ffe::/16" is commented out: not a row */
	ck_assert_int_lt(row_by_text("3ffe::/16"), 0);
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i].decode)
			ndecode++;
		/* the test's oracle must be able to decode every decode row */
		if (rows[i].decode) {
			struct addr x;

			ck_assert_msg(model_decode(&rows[i], &rows[i].c.a, &x),
			    "line %u: decode row %s not understood by this test", rows[i].line,
			    rows[i].text);
		}
		for (size_t j = i + 1; j < nrows; j++)
			ck_assert_msg(rows[i].c.plen != rows[j].c.plen ||
			    !in_prefix(&rows[i].c.a, &rows[j].c.a, rows[j].c.plen),
			    "lines %u and %u name the same range", rows[i].line, rows[j].line);
	}
	ck_assert_uint_eq(ndecode, 3);
}
END_TEST

START_TEST(test_table_matches_file)
{
	const struct cidr *ranges;
	const enum addr_action *actions;
	const char *const *names;
	size_t n = addr_table(&ranges, &actions, &names);
	bool *seen;

	ck_assert_msg(load_error[0] == '\0', "%s", load_error);
	ck_assert_uint_eq(n, nrows);
	seen = calloc(n, sizeof(*seen));
	ck_assert_ptr_nonnull(seen);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		size_t k;

		for (k = 0; k < n; k++)
			if (ranges[k].plen == r->c.plen && ranges[k].a.family == r->c.a.family &&
			    memcmp(ranges[k].a.b, r->c.a.b, r->c.a.family == AF_INET ? 4 : 16) == 0)
				break;
		ck_assert_msg(k < n, "line %u: %s is not in addr_table()", r->line, r->text);
		ck_assert_msg(!seen[k], "line %u: %s matched twice", r->line, r->text);
		seen[k] = true;
		ck_assert_msg(actions[k] == (r->decode ? ADDR_DECODE : ADDR_DENY),
		    "line %u: %s (default=%s) has action %d in addr_table()", r->line, r->text,
		    r->action, (int)actions[k]);
		ck_assert_msg(names[k] != NULL && strcmp(names[k], r->name) == 0,
		    "line %u: %s named \"%s\" in addr_table(), \"%s\" in the file", r->line,
		    r->text, names[k] != NULL ? names[k] : "(null)", r->name);
	}
	free(seen);
}
END_TEST

/* --- every row: first, last, an inner address, and the neighbours ------------------------ */

START_TEST(test_row_edges)
{
	const struct row *r = &rows[_i];
	unsigned nb = bits_of(r->c.a.family);
	struct addr first = r->c.a, last = r->c.a, inner = r->c.a, out;
	struct addr_verdict v;
	char t[INET6_ADDRSTRLEN];

	for (unsigned i = r->c.plen; i < nb; i++) {
		bit_set(last.b, i, true);
		bit_set(inner.b, i, (i * 7 + 3) % 5 < 2);
	}

	/* first and last: denied unless the row decodes, and then the model decides */
	if (!r->decode) {
		ck_assert_msg(addr_classify(&first, NULL, 0, &v),
		    "first address %s of %s (line %u, default=%s) not denied", vec_text(&first, t),
		    r->text, r->line, r->action);
		ck_assert_ptr_nonnull(v.range);
		ck_assert_ptr_nonnull(v.name);
		ck_assert_msg(addr_classify(&last, NULL, 0, &v),
		    "last address %s of %s (line %u, default=%s) not denied", vec_text(&last, t),
		    r->text, r->line, r->action);
		ck_assert_ptr_nonnull(v.range);
		ck_assert_ptr_nonnull(v.name);
	}
	check_model(&first, "first", r);
	check_model(&last, "last", r);
	check_model(&inner, "inner", r);
	/* the addresses just outside: longest-prefix row containing them, or global */
	if (addr_step(&first, -1, &out))
		check_model(&out, "before", r);
	if (addr_step(&last, +1, &out))
		check_model(&out, "after", r);
}
END_TEST

/* --- decode rows: the embedded IPv4 decides ------------------------------------------- */

static const struct {
	struct addr v4;
	bool denied;
} embed_vectors[] = {
	{ { AF_INET, { 8, 8, 8, 8 } }, false },
	{ { AF_INET, { 1, 1, 1, 1 } }, false },
	{ { AF_INET, { 140, 82, 112, 4 } }, false },
	{ { AF_INET, { 127, 0, 0, 1 } }, true },
	{ { AF_INET, { 10, 0, 0, 1 } }, true },
	{ { AF_INET, { 169, 254, 169, 254 } }, true },
	{ { AF_INET, { 100, 100, 100, 200 } }, true },
	{ { AF_INET, { 192, 0, 0, 9 } }, true },
	{ { AF_INET, { 168, 63, 129, 16 } }, true },
	{ { AF_INET, { 0, 0, 0, 0 } }, true },
	{ { AF_INET, { 255, 255, 255, 255 } }, true },
	{ { AF_INET, { 224, 0, 0, 1 } }, true },
};

START_TEST(test_decode_rows)
{
	char t[INET6_ADDRSTRLEN], t4[INET6_ADDRSTRLEN], tw[INET6_ADDRSTRLEN];
	size_t seen = 0;

	ck_assert_msg(load_error[0] == '\0', "%s", load_error);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		if (!r->decode)
			continue;
		seen++;
		for (size_t k = 0; k < NELEM(embed_vectors); k++) {
			const struct addr *want = &embed_vectors[k].v4;
			struct addr a = model_embed(r, want);
			struct addr_verdict v;
			long wrow = model_lookup(want);
			bool d = addr_classify(&a, NULL, 0, &v);

			/* the vectors themselves agree with the file */
			ck_assert_msg((wrow >= 0) == embed_vectors[k].denied,
			    "test vector %s disagrees with the data file", vec_text(want, t4));
			ck_assert_msg(d == embed_vectors[k].denied,
			    "%s (%s carrying %s): denied=%d, expected %d", vec_text(&a, t), r->text,
			    vec_text(want, t4), d, embed_vectors[k].denied);
			ck_assert_msg(v.embedded && v.decided_by_v4,
			    "%s (%s): embedded=%d decided_by_v4=%d", vec_text(&a, t), r->text,
			    v.embedded, v.decided_by_v4);
			ck_assert_msg(addr_equal(&v.v4, want), "%s (%s): v4 %s, expected %s",
			    vec_text(&a, t), r->text, vec_text(&v.v4, t4), vec_text(want, tw));
			if (embed_vectors[k].denied)
				ck_assert_msg(v.range != NULL && strcmp(v.range, rows[wrow].text) == 0,
				    "%s: decided by %s, expected %s", vec_text(&a, t),
				    v.range != NULL ? v.range : "(null)", rows[wrow].text);
			else
				ck_assert_ptr_null(v.range);
		}
	}
	ck_assert_uint_eq(seen, 3);
}
END_TEST

/* --- named vectors (the data file's sections D and E, and the SPEC) ----------------------- */

#define ANY (-1)

static const struct {
	const char *addr;
	bool denied;
	int embedded;           /* 0, 1 or ANY */
	int by_v4;              /* 0, 1 or ANY */
	const char *v4;         /* expected embedded IPv4, or NULL */
	const char *range;      /* expected deciding range, or NULL when global */
} vectors[] = {
	/* section E worked examples: all refused */
	{ "::ffff:127.0.0.1", true, 1, 1, "127.0.0.1", "127.0.0.0/8" },
	{ "::ffff:7f00:1", true, 1, 1, "127.0.0.1", "127.0.0.0/8" },
	{ "::ffff:a9fe:a9fe", true, 1, 1, "169.254.169.254", "169.254.169.254/32" },
	{ "64:ff9b::7f00:1", true, 1, 1, "127.0.0.1", "127.0.0.0/8" },
	{ "64:ff9b::127.0.0.1", true, 1, 1, "127.0.0.1", "127.0.0.0/8" },
	{ "64:ff9b::a00:1", true, 1, 1, "10.0.0.1", "10.0.0.0/8" },
	{ "2002:7f00:1::", true, 1, 1, "127.0.0.1", "127.0.0.0/8" },
	{ "2002:7f00:0001::", true, 1, 1, "127.0.0.1", "127.0.0.0/8" },
	{ "2002:a9fe:a9fe::1", true, 1, 1, "169.254.169.254", "169.254.169.254/32" },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", true, 1, 0, "127.0.0.1", "2001::/32" },
	{ "fe80::5efe:7f00:1", true, ANY, 0, NULL, "fe80::/10" },
	{ "fe80::200:5efe:7f00:1", true, ANY, 0, NULL, "fe80::/10" },
	/* IPv4-compatible and SIIT: denied whole, the IPv4 only reported */
	{ "::127.0.0.1", true, 1, 0, "127.0.0.1", "::/96" },
	{ "::8.8.8.8", true, 1, 0, "8.8.8.8", "::/96" },
	{ "::ffff:0:127.0.0.1", true, 1, 0, "127.0.0.1", "::ffff:0:0:0/96" },
	{ "::ffff:0:8.8.8.8", true, 1, 0, "8.8.8.8", "::ffff:0:0:0/96" },
	/* local-use NAT64 (RFC 8215) without an operator prefix: denied whatever it carries */
	{ "64:ff9b:1::7f00:1", true, ANY, 0, NULL, "64:ff9b:1::/48" },
	{ "64:ff9b:1:7f00:0:100::", true, 1, 0, "127.0.0.1", "64:ff9b:1::/48" },
	{ "64:ff9b:1:808:8:800::", true, 1, 0, "8.8.8.8", "64:ff9b:1::/48" },
	/* section D and other named endpoints */
	{ "fd00:ec2::254", true, 0, 0, NULL, "fd00:ec2::254/128" },
	{ "169.254.169.254", true, 0, 0, NULL, "169.254.169.254/32" },
	{ "169.254.170.2", true, 0, 0, NULL, "169.254.170.2/32" },
	{ "100.100.100.200", true, 0, 0, NULL, "100.100.100.200/32" },
	{ "192.0.0.192", true, 0, 0, NULL, "192.0.0.192/32" },
	{ "168.63.129.16", true, 0, 0, NULL, "168.63.129.16/32" },
	{ "0.0.0.0", true, 0, 0, NULL, "0.0.0.0/32" },
	{ "0.1.2.3", true, 0, 0, NULL, "0.0.0.0/8" },
	{ "255.255.255.255", true, 0, 0, NULL, "255.255.255.255/32" },
	{ "224.0.0.1", true, 0, 0, NULL, "224.0.0.0/4" },
	{ "239.255.255.250", true, 0, 0, NULL, "224.0.0.0/4" },
	{ "240.0.0.1", true, 0, 0, NULL, "240.0.0.0/4" },
	{ "127.0.0.1", true, 0, 0, NULL, "127.0.0.0/8" },
	{ "127.255.255.254", true, 0, 0, NULL, "127.0.0.0/8" },
	{ "10.0.0.1", true, 0, 0, NULL, "10.0.0.0/8" },
	{ "172.31.255.255", true, 0, 0, NULL, "172.16.0.0/12" },
	{ "192.168.1.1", true, 0, 0, NULL, "192.168.0.0/16" },
	{ "100.64.0.1", true, 0, 0, NULL, "100.64.0.0/10" },
	{ "192.0.0.8", true, 0, 0, NULL, "192.0.0.8/32" },
	{ "192.0.0.170", true, 0, 0, NULL, "192.0.0.170/32" },
	{ "192.0.0.255", true, 0, 0, NULL, "192.0.0.0/24" },
	{ "192.88.99.1", true, 0, 0, NULL, "192.88.99.0/24" },
	{ "192.88.99.2", true, 0, 0, NULL, "192.88.99.2/32" },
	{ "198.18.0.1", true, 0, 0, NULL, "198.18.0.0/15" },
	{ "198.51.100.7", true, 0, 0, NULL, "198.51.100.0/24" },
	{ "203.0.113.9", true, 0, 0, NULL, "203.0.113.0/24" },
	/* default=global-ok rows are still denied (SPEC: every range unless decode) */
	{ "192.0.0.9", true, 0, 0, NULL, "192.0.0.9/32" },
	{ "192.0.0.10", true, 0, 0, NULL, "192.0.0.10/32" },
	{ "192.31.196.1", true, 0, 0, NULL, "192.31.196.0/24" },
	{ "192.52.193.1", true, 0, 0, NULL, "192.52.193.0/24" },
	{ "192.175.48.6", true, 0, 0, NULL, "192.175.48.0/24" },
	{ "2001:1::1", true, 0, 0, NULL, "2001:1::1/128" },
	{ "2001:1::2", true, 0, 0, NULL, "2001:1::2/128" },
	{ "2001:1::3", true, 0, 0, NULL, "2001:1::3/128" },
	{ "2001:1::4", true, 0, 0, NULL, "2001::/23" },
	{ "2001:3::1", true, 0, 0, NULL, "2001:3::/32" },
	{ "2001:4:112::1", true, 0, 0, NULL, "2001:4:112::/48" },
	{ "2001:20::1", true, 0, 0, NULL, "2001:20::/28" },
	{ "2001:30::1", true, 0, 0, NULL, "2001:30::/28" },
	{ "2620:4f:8000::1", true, 0, 0, NULL, "2620:4f:8000::/48" },
	/* IPv6 rows */
	{ "::1", true, 0, 0, NULL, "::1/128" },
	{ "::", true, 0, 0, NULL, "::/128" },
	{ "3fff::1", true, 0, 0, NULL, "3fff::/20" },
	{ "5f00::1", true, 0, 0, NULL, "5f00::/16" },
	{ "100::1", true, 0, 0, NULL, "100::/64" },
	{ "100:0:0:1::1", true, 0, 0, NULL, "100:0:0:1::/64" },
	{ "2001:2::1", true, 0, 0, NULL, "2001:2::/48" },
	{ "2001:10::1", true, 0, 0, NULL, "2001:10::/28" },
	{ "2001:db8::1", true, 0, 0, NULL, "2001:db8::/32" },
	{ "fc00::1", true, 0, 0, NULL, "fc00::/7" },
	{ "fdff:ffff::1", true, 0, 0, NULL, "fc00::/7" },
	{ "fe80::1", true, 0, 0, NULL, "fe80::/10" },
	{ "febf:ffff::1", true, 0, 0, NULL, "fe80::/10" },
	{ "fec0::1", true, 0, 0, NULL, "fec0::/10" },
	{ "ff02::1", true, 0, 0, NULL, "ff00::/8" },
	{ "64:ff9b::", true, 1, 1, "0.0.0.0", "0.0.0.0/32" },
	{ "::ffff:0.0.0.0", true, 1, 1, "0.0.0.0", "0.0.0.0/32" },
	/* global: allowed */
	{ "8.8.8.8", false, 0, 0, NULL, NULL },
	{ "1.1.1.1", false, 0, 0, NULL, NULL },
	{ "140.82.112.4", false, 0, 0, NULL, NULL },
	{ "9.255.255.255", false, 0, 0, NULL, NULL },
	{ "11.0.0.0", false, 0, 0, NULL, NULL },
	{ "100.63.255.255", false, 0, 0, NULL, NULL },
	{ "100.128.0.0", false, 0, 0, NULL, NULL },
	{ "126.255.255.255", false, 0, 0, NULL, NULL },
	{ "128.0.0.0", false, 0, 0, NULL, NULL },
	{ "169.253.255.255", false, 0, 0, NULL, NULL },
	{ "169.255.0.0", false, 0, 0, NULL, NULL },
	{ "172.15.255.255", false, 0, 0, NULL, NULL },
	{ "172.32.0.0", false, 0, 0, NULL, NULL },
	{ "192.0.1.0", false, 0, 0, NULL, NULL },
	{ "192.167.255.255", false, 0, 0, NULL, NULL },
	{ "192.169.0.0", false, 0, 0, NULL, NULL },
	{ "198.17.255.255", false, 0, 0, NULL, NULL },
	{ "198.20.0.0", false, 0, 0, NULL, NULL },
	{ "223.255.255.255", false, 0, 0, NULL, NULL },
	{ "168.63.129.15", false, 0, 0, NULL, NULL },
	{ "2606:4700:4700::1111", false, 0, 0, NULL, NULL },
	{ "2001:4860:4860::8888", false, 0, 0, NULL, NULL },
	{ "2001:200::1", false, 0, 0, NULL, NULL },
	{ "2600::1", false, 0, 0, NULL, NULL },
	{ "2a00:1450:4001::1", false, 0, 0, NULL, NULL },
	{ "3ffe::1", false, 0, 0, NULL, NULL },
	{ "3fff:1000::1", false, 0, 0, NULL, NULL },
	{ "2002:808:808::", false, 1, 1, "8.8.8.8", NULL },
	{ "2002:101:101:1:2:3:4:5", false, 1, 1, "1.1.1.1", NULL },
	{ "::ffff:8.8.8.8", false, 1, 1, "8.8.8.8", NULL },
	{ "::ffff:1.1.1.1", false, 1, 1, "1.1.1.1", NULL },
	{ "64:ff9b::8.8.8.8", false, 1, 1, "8.8.8.8", NULL },
	{ "64:ff9b::808:808", false, 1, 1, "8.8.8.8", NULL },
};

START_TEST(test_vectors)
{
	struct addr a = vec_addr(vectors[_i].addr);
	struct addr_verdict v;
	char t[INET6_ADDRSTRLEN];
	bool r;

	memset(&v, 0x5a, sizeof(v));
	r = addr_classify(&a, NULL, 0, &v);
	ck_assert_msg(r == v.denied, "%s: return value and v.denied differ", vectors[_i].addr);
	ck_assert_msg(v.denied == vectors[_i].denied, "%s: denied=%d, expected %d (range %s)",
	    vectors[_i].addr, v.denied, vectors[_i].denied, v.range ? v.range : "(null)");
	if (vectors[_i].range == NULL) {
		ck_assert_msg(v.range == NULL, "%s: global, but range %s", vectors[_i].addr,
		    v.range);
	} else {
		ck_assert_msg(v.range != NULL && strcmp(v.range, vectors[_i].range) == 0,
		    "%s: range %s, expected %s", vectors[_i].addr,
		    v.range != NULL ? v.range : "(null)", vectors[_i].range);
		ck_assert_ptr_nonnull(v.name);
	}
	if (vectors[_i].embedded != ANY)
		ck_assert_msg(v.embedded == (vectors[_i].embedded == 1), "%s: embedded=%d",
		    vectors[_i].addr, v.embedded);
	if (vectors[_i].by_v4 != ANY)
		ck_assert_msg(v.decided_by_v4 == (vectors[_i].by_v4 == 1),
		    "%s: decided_by_v4=%d", vectors[_i].addr, v.decided_by_v4);
	if (vectors[_i].v4 != NULL) {
		struct addr w = vec_addr(vectors[_i].v4);

		ck_assert_msg(addr_equal(&v.v4, &w), "%s: v4 %s, expected %s", vectors[_i].addr,
		    vec_text(&v.v4, t), vectors[_i].v4);
	}
}
END_TEST

/* --- IPv6 outside 2000::/3 that no row names ------------------------------------------ */

static const char *const reserved6[] = {
	"4000::1", "4000::", "1::1", "e000::1", "8000::", "c000::1", "1fff:ffff::1",
	"fe00::1", "fb00::1", "0:0:0:0:0:2::", "::2:0:0", "::1:0:0:0", "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff",
	"64:ff9b::1:0:0", "100:0:0:2::", "dead:beef::1", "7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	"1000::", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "4000:1::",
};

START_TEST(test_reserved6)
{
	struct addr a = vec_addr(reserved6[_i]);
	struct addr_verdict v;

	/* the test's own premise: no row of the file names it, and it is outside 2000::/3 */
	ck_assert_msg(model_lookup(&a) < 0, "%s: the data file has a row for it",
	    reserved6[_i]);
	ck_assert_msg((a.b[0] & 0xe0) != 0x20, "%s is inside 2000::/3", reserved6[_i]);
	ck_assert_msg(addr_classify(&a, NULL, 0, &v), "%s: not denied", reserved6[_i]);
	ck_assert_msg(v.denied, "%s: v.denied not set", reserved6[_i]);
	ck_assert_msg(v.range != NULL && v.name != NULL, "%s: denied without range/name",
	    reserved6[_i]);
	ck_assert_msg(!v.decided_by_v4, "%s: decided by an IPv4", reserved6[_i]);
}
END_TEST

/* --- operator NAT64 prefixes (RFC 6052 s2.2) ------------------------------------------ */

/* RFC 6052 s2.4: 192.0.2.33 under each prefix length. */
static const struct {
	const char *prefix;
	const char *addr;
} rfc6052[] = {
	{ "2001:db8::/32", "2001:db8:c000:221::" },
	{ "2001:db8:100::/40", "2001:db8:1c0:2:21::" },
	{ "2001:db8:122::/48", "2001:db8:122:c000:2:2100::" },
	{ "2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::" },
	{ "2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0" },
	{ "2001:db8:122:344::/96", "2001:db8:122:344::192.0.2.33" },
};

/* RFC 6052 s2.2, bit by bit: the IPv4 follows the prefix, bits 64..71 (u) are skipped. */
static struct addr
rfc6052_embed(const struct cidr *p, const struct addr *w)
{
	struct addr a = p->a;
	unsigned pos = p->plen;

	for (unsigned k = 0; k < 32; k++, pos++) {
		if (pos == 64)
			pos = 72;
		bit_set(a.b, pos, bit_get(w->b, k));
	}
	return a;
}

static void
check_nat64(const struct addr *a, const struct cidr *nat64, size_t n, const char *via,
    const struct addr *want, bool denied, const char *range)
{
	struct addr_verdict v;
	char t[INET6_ADDRSTRLEN], t4[INET6_ADDRSTRLEN], tw[INET6_ADDRSTRLEN];
	bool r;

	memset(&v, 0x5a, sizeof(v));
	r = addr_classify(a, nat64, n, &v);
	vec_text(a, t);
	ck_assert_msg(r == denied && v.denied == denied, "%s via %s: denied=%d, expected %d",
	    t, via, r, denied);
	ck_assert_msg(v.embedded && v.decided_by_v4, "%s via %s: embedded=%d decided_by_v4=%d",
	    t, via, v.embedded, v.decided_by_v4);
	ck_assert_msg(addr_equal(&v.v4, want), "%s via %s: v4 %s, expected %s", t, via,
	    vec_text(&v.v4, t4), vec_text(want, tw));
	ck_assert_msg(strcmp(v.via, via) == 0, "%s: via \"%s\", expected %s", t, v.via, via);
	if (range == NULL)
		ck_assert_msg(v.range == NULL, "%s via %s: range %s", t, via, v.range);
	else
		ck_assert_msg(v.range != NULL && strcmp(v.range, range) == 0,
		    "%s via %s: range %s, expected %s", t, via,
		    v.range != NULL ? v.range : "(null)", range);
}

START_TEST(test_nat64)
{
	struct cidr p = vec_cidr(rfc6052[_i].prefix), all[NELEM(rfc6052)];
	struct addr a = vec_addr(rfc6052[_i].addr), w = v4(192, 0, 2, 33);
	struct addr g = v4(8, 8, 8, 8), lo = v4(127, 0, 0, 1), x;
	struct addr_verdict v;
	char t[INET6_ADDRSTRLEN];

	/* the test's encoder reproduces the RFC's own example */
	x = rfc6052_embed(&p, &w);
	ck_assert_msg(addr_equal(&x, &a), "test encoder: %s, RFC says %s", vec_text(&x, t),
	    rfc6052[_i].addr);

	/* without the operator's prefix: Documentation */
	ck_assert_msg(addr_classify(&a, NULL, 0, &v), "%s without nat64: not denied",
	    rfc6052[_i].addr);
	ck_assert_str_eq(v.range, "2001:db8::/32");
	ck_assert_str_eq(v.name, "Documentation");
	ck_assert(!v.decided_by_v4);

	/* with it: 192.0.2.33 decides, and it is TEST-NET-1 */
	check_nat64(&a, &p, 1, rfc6052[_i].prefix, &w, true, "192.0.2.0/24");
	/* with all six: the longest containing prefix is the one that decodes */
	for (size_t i = 0; i < NELEM(rfc6052); i++)
		all[i] = vec_cidr(rfc6052[i].prefix);
	check_nat64(&a, all, NELEM(all), rfc6052[_i].prefix, &w, true, "192.0.2.0/24");
	/* a global IPv4 under the same prefix is allowed, a loopback one is not */
	x = rfc6052_embed(&p, &g);
	check_nat64(&x, &p, 1, rfc6052[_i].prefix, &g, false, NULL);
	check_nat64(&x, all, NELEM(all), rfc6052[_i].prefix, &g, false, NULL);
	x = rfc6052_embed(&p, &lo);
	check_nat64(&x, &p, 1, rfc6052[_i].prefix, &lo, true, "127.0.0.0/8");
}
END_TEST

START_TEST(test_nat64_other)
{
	struct cidr p40 = vec_cidr("2001:db8:100::/40"), local = vec_cidr("64:ff9b:1::/48");
	struct cidr wkp = vec_cidr("64:ff9b::/96"), both[2];
	struct addr g = v4(8, 8, 8, 8), x;
	struct addr_verdict v;

	/* outside the operator's prefix the table still applies */
	x = vec_addr("2001:db8:ffff::1");
	ck_assert(addr_classify(&x, &p40, 1, &v));
	ck_assert_str_eq(v.range, "2001:db8::/32");
	ck_assert(!v.decided_by_v4);
	x = vec_addr("2001:db8:200::");
	ck_assert(addr_classify(&x, &p40, 1, &v));
	ck_assert_str_eq(v.range, "2001:db8::/32");
	/* an IPv4 address is never inside an IPv6 nat64 prefix */
	x = g;
	ck_assert(!addr_classify(&x, &p40, 1, &v));
	ck_assert(!v.embedded);
	/* the local-use /48 becomes usable once the operator names it */
	x = vec_addr("64:ff9b:1:808:8:800::");
	ck_assert(addr_classify(&x, NULL, 0, &v));
	check_nat64(&x, &local, 1, "64:ff9b:1::/48", &g, false, NULL);
	x = vec_addr("64:ff9b:1:7f00:0:100::");
	check_nat64(&x, &local, 1, "64:ff9b:1::/48", &(struct addr){ AF_INET, { 127, 0, 0, 1 } },
	    true, "127.0.0.0/8");
	/* the well-known prefix given as nat64-prefix decodes the same as its row */
	x = vec_addr("64:ff9b::a9fe:a9fe");
	check_nat64(&x, &wkp, 1, "64:ff9b::/96", &(struct addr){ AF_INET, { 169, 254, 169, 254 } },
	    true, "169.254.169.254/32");
	both[0] = wkp;
	both[1] = local;
	x = vec_addr("64:ff9b::808:808");
	check_nat64(&x, both, 2, "64:ff9b::/96", &g, false, NULL);
	/* the documentation range without its prefix, with an unrelated one */
	x = vec_addr("2001:db8:c000:221::");
	ck_assert(addr_classify(&x, &local, 1, &v));
	ck_assert_str_eq(v.range, "2001:db8::/32");
}
END_TEST

/* --- addr_permitted ------------------------------------------------------------------ */

static const struct {
	const char *addr;
	const char *permit[3];
	const char *nat64;
	bool permitted;
} permits[] = {
	{ "127.0.0.1", { "127.0.0.0/8" }, NULL, true },
	{ "127.0.0.1", { "127.0.0.1/32" }, NULL, true },
	{ "127.0.0.1", { "127.0.0.2/32" }, NULL, false },
	{ "127.0.0.1", { "10.0.0.0/8" }, NULL, false },
	{ "127.0.0.1", { NULL }, NULL, false },
	{ "::ffff:127.0.0.1", { "127.0.0.0/8" }, NULL, true },
	{ "::ffff:127.0.0.1", { "10.0.0.0/8" }, NULL, false },
	{ "::ffff:127.0.0.1", { "::ffff:0:0/96" }, NULL, true },
	{ "64:ff9b::a00:1", { "10.0.0.0/8" }, NULL, true },
	{ "64:ff9b::a00:1", { "10.0.0.2/32" }, NULL, false },
	{ "2002:7f00:1::", { "127.0.0.0/8" }, NULL, true },
	{ "2002:a9fe:a9fe::1", { "169.254.169.254/32" }, NULL, true },
	{ "2002:a9fe:a9fe::1", { "2002::/16" }, NULL, true },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", { "127.0.0.0/8" }, NULL, false },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", { "127.0.0.0/8", "65.54.227.120/32" }, NULL,
	  false },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", { "2001::/32" }, NULL, true },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", { "127.0.0.0/8", "2001::/23" }, NULL, true },
	{ "::127.0.0.1", { "127.0.0.0/8" }, NULL, false },
	{ "::127.0.0.1", { "::/96" }, NULL, true },
	{ "::ffff:0:127.0.0.1", { "127.0.0.0/8" }, NULL, false },
	{ "64:ff9b:1:7f00:0:100::", { "127.0.0.0/8" }, NULL, false },
	{ "64:ff9b:1:7f00:0:100::", { "127.0.0.0/8" }, "64:ff9b:1::/48", true },
	{ "2001:db8:c000:221::", { "192.0.2.0/24" }, "2001:db8::/32", true },
	{ "2001:db8:c000:221::", { "192.0.2.0/24" }, NULL, false },
	{ "2001:db8:c000:221::", { "2001:db8::/32" }, NULL, true },
	{ "10.20.1.1", { "10.20.0.0/16" }, NULL, true },
	{ "10.20.255.255", { "10.20.0.0/16" }, NULL, true },
	{ "10.21.0.1", { "10.20.0.0/16" }, NULL, false },
	{ "10.19.255.255", { "10.20.0.0/16" }, NULL, false },
	{ "10.20.1.1", { "192.168.0.0/16", "172.16.0.0/12", "10.20.0.0/16" }, NULL, true },
	{ "10.21.0.1", { "192.168.0.0/16", "172.16.0.0/12", "10.20.0.0/16" }, NULL, false },
	{ "169.254.169.254", { "169.254.169.0/25" }, NULL, false },
	{ "169.254.169.254", { "169.254.169.128/25" }, NULL, true },
	{ "::1", { "0.0.0.0/0" }, NULL, false },
	{ "::1", { "::/0" }, NULL, true },
	{ "127.0.0.1", { "::/0" }, NULL, false },
	{ "127.0.0.1", { "0.0.0.0/0" }, NULL, true },
	{ "fd00:ec2::254", { "fc00::/7" }, NULL, true },
	{ "fd00:ec2::254", { "fd00:ec2::255/128" }, NULL, false },
};

START_TEST(test_permitted)
{
	struct addr a = vec_addr(permits[_i].addr);
	struct cidr p[3], n64;
	struct addr_verdict v;
	size_t np = 0;

	memset(&n64, 0, sizeof(n64));

	for (size_t k = 0; k < 3 && permits[_i].permit[k] != NULL; k++)
		p[np++] = vec_cidr(permits[_i].permit[k]);
	if (permits[_i].nat64 != NULL)
		n64 = vec_cidr(permits[_i].nat64);
	/* every case is an address the classifier denies: the exception is what is tested */
	ck_assert_msg(addr_classify(&a, &n64, permits[_i].nat64 != NULL ? 1 : 0, &v),
	    "%s: not denied to begin with", permits[_i].addr);
	ck_assert_msg(addr_permitted(&a, &v, p, np) == permits[_i].permitted,
	    "%s with %s%s%s: permitted should be %d", permits[_i].addr,
	    np > 0 ? permits[_i].permit[0] : "(none)", np > 1 ? ", ..." : "",
	    permits[_i].nat64 != NULL ? " (nat64)" : "", permits[_i].permitted);
}
END_TEST

/* --- addr_parse / addr_format ------------------------------------------------------- */

static const struct {
	const char *in;
	const char *out;
} addr_ok[] = {
	{ "1.2.3.4", "1.2.3.4" },
	{ "0.0.0.0", "0.0.0.0" },
	{ "255.255.255.255", "255.255.255.255" },
	{ "127.0.0.1", "127.0.0.1" },
	{ "10.99.100.9", "10.99.100.9" },
	{ "9.10.199.250", "9.10.199.250" },
	{ "::", "::" },
	{ "::1", "::1" },
	{ "0:0:0:0:0:0:0:1", "::1" },
	{ "2001:DB8::1", "2001:db8::1" },
	{ "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1" },
	{ "2606:4700:4700:0:0:0:0:1111", "2606:4700:4700::1111" },
	{ "1:0:0:1:0:0:0:1", "1:0:0:1::1" },
	{ "1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7" },
	{ "::ffff:1.2.3.4", "::ffff:1.2.3.4" },
	{ "::FFFF:7F00:1", "::ffff:127.0.0.1" },
	{ "fe80::1", "fe80::1" },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
	{ "64:ff9b::7f00:1", "64:ff9b::7f00:1" },
	{ "::1:2", "::1:2" },
	{ "::1.2.3.4", "::102:304" },
	{ "2001:db8:122:344::192.0.2.33", "2001:db8:122:344::c000:221" },
};

START_TEST(test_addr_roundtrip)
{
	struct addr a, b, w = vec_addr(addr_ok[_i].out);
	char out[EGRESS_ADDRSTRLEN];
	size_t len = strlen(addr_ok[_i].in);
	char *in = malloc(len);

	ck_assert_ptr_nonnull(in);
	memcpy(in, addr_ok[_i].in, len);        /* no terminator: len decides */
	memset(&a, 0x5a, sizeof(a));
	ck_assert_msg(addr_parse(in, len, &a) == 0, "%s refused", addr_ok[_i].in);
	free(in);
	ck_assert_int_eq(a.family, w.family);
	ck_assert_msg(addr_equal(&a, &w), "%s: wrong address", addr_ok[_i].in);
	addr_format(&a, out);
	ck_assert_str_eq(out, addr_ok[_i].out);
	/* and back */
	ck_assert_int_eq(addr_parse(out, strlen(out), &b), 0);
	ck_assert(addr_equal(&a, &b));
}
END_TEST

/* IPv4 is formatted by hand: every octet value, in every position, as inet_ntop has it. */
START_TEST(test_addr_format_v4)
{
	struct addr a = { .family = AF_INET };
	char out[EGRESS_ADDRSTRLEN], want[INET_ADDRSTRLEN];
	unsigned v = (unsigned)_i;

	a.b[0] = (uint8_t)v;
	a.b[1] = (uint8_t)(255 - v);
	a.b[2] = (uint8_t)(v * 7);
	a.b[3] = (uint8_t)(v / 3);
	ck_assert_ptr_nonnull(inet_ntop(AF_INET, a.b, want, sizeof(want)));
	addr_format(&a, out);
	ck_assert_str_eq(out, want);
}
END_TEST

static const char *const addr_bad[] = {
	"", " ", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3.256",
	"0x7f.0.0.1", "0x7f000001", "2130706433", "127.1", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4.",
	"1.2.3.4/32", "-1.2.3.4", "example.com", ":::", "1:2:3:4:5:6:7:8:9", "12345::",
	"g::1", "[::1]", "fe80::1%eth0", "fe80::1%25eth0", "::1.2.3.04", "1::2::3",
	"::ffff:1.2.3", "::1 ", "::1/128",
	"0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000",
};

START_TEST(test_addr_bad)
{
	struct addr a;

	ck_assert_msg(addr_parse(addr_bad[_i], strlen(addr_bad[_i]), &a) == -1,
	    "\"%s\" accepted", addr_bad[_i]);
}
END_TEST

START_TEST(test_addr_parse_len)
{
	struct addr a, w;

	/* only len bytes are read */
	ck_assert_int_eq(addr_parse("1.2.3.45", 7, &a), 0);
	w = v4(1, 2, 3, 4);
	ck_assert(addr_equal(&a, &w));
	ck_assert_int_eq(addr_parse("::1]", 3, &a), 0);
	w = vec_addr("::1");
	ck_assert(addr_equal(&a, &w));
	ck_assert_int_eq(addr_parse("1.2.3.4", 8, &a), -1);       /* NUL inside len */
	ck_assert_int_eq(addr_parse("1.2.3\0.4", 8, &a), -1);
	ck_assert_int_eq(addr_parse("1.2.3.4", 0, &a), -1);
	/* addr_equal: family and bytes */
	w = vec_addr("::ffff:1.2.3.4");
	a = v4(1, 2, 3, 4);
	ck_assert(!addr_equal(&a, &w));
	w = v4(1, 2, 3, 5);
	ck_assert(!addr_equal(&a, &w));
	w = v4(1, 2, 3, 4);
	w.b[10] = 0x77;          /* bytes beyond an IPv4 address do not count */
	ck_assert(addr_equal(&a, &w));
}
END_TEST

/* --- cidr_parse / cidr_contains --------------------------------------------------- */

static const struct {
	const char *in;
	const char *canon;       /* cidr_format; NULL: refused */
} cidrs[] = {
	{ "10.0.0.0/8", "10.0.0.0/8" },
	{ "::/0", "::/0" },
	{ "2001:db8::/32", "2001:db8::/32" },
	{ "2001:DB8:0:0::/32", "2001:db8::/32" },
	{ "0.0.0.0/0", "0.0.0.0/0" },
	{ "0.0.0.0/32", "0.0.0.0/32" },
	{ "255.255.255.255/32", "255.255.255.255/32" },
	{ "10.20.0.0/16", "10.20.0.0/16" },
	{ "128.0.0.0/1", "128.0.0.0/1" },
	{ "192.168.1.128/25", "192.168.1.128/25" },
	{ "10.0.0.1/32", "10.0.0.1/32" },
	{ "::1/128", "::1/128" },
	{ "::ffff:0:0/96", "::ffff:0.0.0.0/96" },
	{ "64:ff9b::/96", "64:ff9b::/96" },
	{ "fe80::/10", "fe80::/10" },
	{ "8000::/1", "8000::/1" },
	{ "2001:db8:100::/40", "2001:db8:100::/40" },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127" },
	/* refused */
	{ "10.1.0.0/8", NULL },
	{ "10.0.0.1/31", NULL },
	{ "128.0.0.0/0", NULL },
	{ "2001:db8::1/32", NULL },
	{ "::1/127", NULL },
	{ "fe80::1/10", NULL },
	{ "10.0.0.0/33", NULL },
	{ "0.0.0.0/33", NULL },
	{ "10.0.0.0/999", NULL },
	{ "::/129", NULL },
	{ "::/200", NULL },
	{ "10.0.0.0/08", NULL },
	{ "10.0.0.0/008", NULL },
	{ "::/00", NULL },
	{ "10.0.0.0/0008", NULL },
	{ "10.0.0.0/00", NULL },
	{ "10.0.0.0", NULL },
	{ "::", NULL },
	{ "10.0.0.0/", NULL },
	{ "::/", NULL },
	{ "/8", NULL },
	{ "/", NULL },
	{ "", NULL },
	{ "10.0.0.0/a", NULL },
	{ "10.0.0.0/8a", NULL },
	{ "10.0.0.0/-8", NULL },
	{ "10.0.0.0/+8", NULL },
	{ "10.0.0.0/ 8", NULL },
	{ "10.0.0.0 /8", NULL },
	{ "10.0.0.0/8 ", NULL },
	{ "10.0.0.0/0x8", NULL },
	{ "10.0.0.0/8/8", NULL },
	{ "010.0.0.0/8", NULL },
	{ "10.0.0/8", NULL },
	{ "10/8", NULL },
	{ "[::1]/128", NULL },
	{ "fe80::%eth0/10", NULL },
	{ "example.com/8", NULL },
};

START_TEST(test_cidr_parse)
{
	struct cidr c;
	const char *why = NULL;
	char out[EGRESS_ADDRSTRLEN + 4];
	size_t len = strlen(cidrs[_i].in);
	char *in = malloc(len == 0 ? 1 : len);
	int r;

	ck_assert_ptr_nonnull(in);
	memcpy(in, cidrs[_i].in, len);
	r = cidr_parse(in, len, &c, &why);
	free(in);
	if (cidrs[_i].canon == NULL) {
		ck_assert_msg(r == -1, "\"%s\" accepted", cidrs[_i].in);
		ck_assert_msg(why != NULL && why[0] != '\0', "\"%s\": no reason", cidrs[_i].in);
		return;
	}
	ck_assert_msg(r == 0, "\"%s\" refused: %s", cidrs[_i].in, why ? why : "");
	{
		struct cidr w = vec_cidr(cidrs[_i].in);

		ck_assert_uint_eq(c.plen, w.plen);
		ck_assert(addr_equal(&c.a, &w.a));
	}
	cidr_format(&c, out);
	ck_assert_str_eq(out, cidrs[_i].canon);
}
END_TEST

static const struct {
	const char *cidr;
	const char *addr;
	bool in;
} contains[] = {
	{ "10.0.0.0/8", "10.0.0.0", true },
	{ "10.0.0.0/8", "10.255.255.255", true },
	{ "10.0.0.0/8", "10.128.0.1", true },
	{ "10.0.0.0/8", "9.255.255.255", false },
	{ "10.0.0.0/8", "11.0.0.0", false },
	{ "10.0.0.0/8", "::ffff:10.0.0.1", false },
	{ "10.20.0.0/16", "10.20.0.0", true },
	{ "10.20.0.0/16", "10.20.255.255", true },
	{ "10.20.0.0/16", "10.19.255.255", false },
	{ "10.20.0.0/16", "10.21.0.0", false },
	{ "100.64.0.0/10", "100.127.255.255", true },
	{ "100.64.0.0/10", "100.128.0.0", false },
	{ "100.64.0.0/10", "100.63.255.255", false },
	{ "172.16.0.0/12", "172.31.255.255", true },
	{ "172.16.0.0/12", "172.32.0.0", false },
	{ "192.168.1.128/25", "192.168.1.128", true },
	{ "192.168.1.128/25", "192.168.1.255", true },
	{ "192.168.1.128/25", "192.168.1.127", false },
	{ "192.168.1.128/25", "192.168.2.0", false },
	{ "198.18.0.0/15", "198.19.255.255", true },
	{ "198.18.0.0/15", "198.20.0.0", false },
	{ "198.18.0.0/15", "198.17.255.255", false },
	{ "10.0.0.0/31", "10.0.0.1", true },
	{ "10.0.0.0/31", "10.0.0.2", false },
	{ "10.0.0.1/32", "10.0.0.1", true },
	{ "10.0.0.1/32", "10.0.0.0", false },
	{ "10.0.0.1/32", "10.0.0.2", false },
	{ "128.0.0.0/1", "255.255.255.255", true },
	{ "128.0.0.0/1", "128.0.0.0", true },
	{ "128.0.0.0/1", "127.255.255.255", false },
	{ "0.0.0.0/0", "0.0.0.0", true },
	{ "0.0.0.0/0", "255.255.255.255", true },
	{ "0.0.0.0/0", "::", false },
	{ "0.0.0.0/0", "::ffff:1.2.3.4", false },
	{ "::/0", "::", true },
	{ "::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "::/0", "0.0.0.0", false },
	{ "::/0", "1.2.3.4", false },
	{ "2001:db8::/32", "2001:db8::", true },
	{ "2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "2001:db8::/32", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false },
	{ "2001:db8::/32", "2001:db9::", false },
	{ "2001:db8::/33", "2001:db8:7fff:ffff:ffff:ffff:ffff:ffff", true },
	{ "2001:db8::/33", "2001:db8:8000::", false },
	{ "fe80::/10", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "fe80::/10", "fec0::", false },
	{ "fe80::/10", "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false },
	{ "fc00::/7", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "fc00::/7", "fe00::", false },
	{ "fc00::/7", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false },
	{ "::ffff:0:0/96", "::ffff:255.255.255.255", true },
	{ "::ffff:0:0/96", "::1:0:0:0", false },
	{ "::ffff:0:0/96", "1.2.3.4", false },
	{ "::1/128", "::1", true },
	{ "::1/128", "::", false },
	{ "::1/128", "::2", false },
	{ "::/127", "::1", true },
	{ "::/127", "::2", false },
	{ "2001::/23", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "2001::/23", "2001:200::", false },
	{ "8000::/1", "ffff::", true },
	{ "8000::/1", "7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false },
};

START_TEST(test_cidr_contains)
{
	struct cidr c;
	const char *why;
	struct addr a = vec_addr(contains[_i].addr);

	ck_assert_int_eq(cidr_parse(contains[_i].cidr, strlen(contains[_i].cidr), &c, &why), 0);
	ck_assert_msg(cidr_contains(&c, &a) == contains[_i].in, "%s contains %s: expected %d",
	    contains[_i].cidr, contains[_i].addr, contains[_i].in);
}
END_TEST

/* --- ISATAP and the RFC 6052 u octet ------------------------------------------------- */

static const struct {
	const char *addr;
	bool nat64;          /* classify with 2001:db8::/32 as an operator nat64 prefix */
	bool denied;
	const char *v4;      /* the decoded IPv4, or NULL when none is reported */
} isatap[] = {
	/* ISATAP under a global /64: the IPv4 decides. */
	{ "2001:4860:4860::5efe:7f00:1", false, true, "127.0.0.1" },
	{ "2001:4860:4860::200:5efe:a9fe:a9fe", false, true, "169.254.169.254" },
	{ "2001:4860:4860::5efe:808:808", false, false, "8.8.8.8" },
	{ "2001:4860:4860::200:5efe:808:808", false, false, "8.8.8.8" },
	/* Not an ISATAP interface id: other bits set. */
	{ "2001:4860:4860::100:5efe:7f00:1", false, false, NULL },
	{ "2001:4860:4860:0:1:5efe:7f00:1", false, false, NULL },
	{ "2001:4860:4860::5eff:7f00:1", false, false, NULL },
	/* Link-local ISATAP stays link-local. */
	{ "fe80::5efe:7f00:1", false, true, NULL },
	/* NAT64 under a /32: a non-zero u octet is refused, a zero one decodes. */
	{ "2001:db8:808:808::", true, false, "8.8.8.8" },
	{ "2001:db8:808:808:ff00::", true, true, "8.8.8.8" },
	{ "2001:db8:808:808:100::", true, true, "8.8.8.8" },
};

START_TEST(test_isatap_u_octet)
{
	struct addr a;
	struct cidr pfx;
	struct addr_verdict v;
	const char *why;
	char v4[EGRESS_ADDRSTRLEN];

	ck_assert_int_eq(addr_parse(isatap[_i].addr, strlen(isatap[_i].addr), &a), 0);
	ck_assert_int_eq(cidr_parse("2001:db8::/32", 13, &pfx, &why), 0);
	ck_assert_msg(addr_classify(&a, &pfx, isatap[_i].nat64 ? 1 : 0, &v) == isatap[_i].denied,
	    "%s: expected denied=%d", isatap[_i].addr, isatap[_i].denied);
	ck_assert(v.denied == isatap[_i].denied);
	if (isatap[_i].v4 != NULL) {
		ck_assert_msg(v.embedded, "%s: no IPv4 decoded", isatap[_i].addr);
		addr_format(&v.v4, v4);
		ck_assert_str_eq(v4, isatap[_i].v4);
	}
	if (v.denied)
		ck_assert(v.range != NULL && v.name != NULL);
}
END_TEST

/* --- addr_port_parse: a resolver's address (egressd.conf, egress-run --resolver) -------- */

static const struct {
	const char *in;
	int rc;
	const char *addr;     /* canonical, when accepted */
	unsigned port;        /* 0: none given */
} addr_ports[] = {
	{ "127.0.0.1", 0, "127.0.0.1", 0 },
	{ "127.0.0.1:53", 0, "127.0.0.1", 53 },
	{ "127.0.0.1:65535", 0, "127.0.0.1", 65535 },
	{ "127.0.0.1:1", 0, "127.0.0.1", 1 },
	{ "::1", 0, "::1", 0 },
	{ "2001:DB8::1", 0, "2001:db8::1", 0 },
	{ "[::1]:5353", 0, "::1", 5353 },
	{ "[::1]", 0, "::1", 0 },
	{ "127.0.0.1:0", -1, NULL, 0 },
	{ "127.0.0.1:65536", -1, NULL, 0 },
	{ "127.0.0.1:053x", -1, NULL, 0 },
	{ "127.0.0.1:", -1, NULL, 0 },
	{ "127.0.0.1:123456", -1, NULL, 0 },
	{ "127.0.0.1:53 ", -1, NULL, 0 },
	{ " 127.0.0.1:53", -1, NULL, 0 },
	{ "127.0.0.1:53\nhosts /etc/x", -1, NULL, 0 },
	{ "127.0.0.1\n:53", -1, NULL, 0 },
	{ "[127.0.0.1]:53", -1, NULL, 0 },
	{ "[::1]:", -1, NULL, 0 },
	{ "[::1]53", -1, NULL, 0 },
	{ "[::1", -1, NULL, 0 },
	{ "localhost:53", -1, NULL, 0 },
	{ "", -1, NULL, 0 },
	{ ":53", -1, NULL, 0 },
	{ "1.2.3.4:-1", -1, NULL, 0 },
	{ "1.2.3.4:+53", -1, NULL, 0 },
};

START_TEST(test_addr_port_parse)
{
	struct addr a;
	unsigned port = 99;
	const char *why = NULL;
	char text[EGRESS_ADDRSTRLEN];
	int rc = addr_port_parse(addr_ports[_i].in, strlen(addr_ports[_i].in), &a, &port,
	    &why);

	ck_assert_msg(rc == addr_ports[_i].rc, "\"%s\": rc %d", addr_ports[_i].in, rc);
	if (rc == 0) {
		addr_format(&a, text);
		ck_assert_str_eq(text, addr_ports[_i].addr);
		ck_assert_uint_eq(port, addr_ports[_i].port);
	} else
		ck_assert_msg(why != NULL, "\"%s\": refused without a reason", addr_ports[_i].in);
}
END_TEST

START_TEST(test_addr_port_parse_len)
{
	struct addr a;
	unsigned port;
	const char *why;

	/* only len bytes are read: the newline after them is not looked at */
	ck_assert_int_eq(addr_port_parse("10.0.0.1:53\nx", 11, &a, &port, &why), 0);
	ck_assert_uint_eq(port, 53);
	ck_assert_int_eq(addr_port_parse("10.0.0.1:53\0", 12, &a, &port, &why), -1);
}
END_TEST

/* --- the suite ----------------------------------------------------------------------- */

static Suite *
addr_suite(void)
{
	Suite *s = suite_create("addr");
	TCase *tc;

#define LOOP_CASE(name, fn, n) do { \
		tc = tcase_create(name); \
		tcase_add_loop_test(tc, fn, 0, (int)(n)); \
		suite_add_tcase(s, tc); \
	} while (0)
#define ONE_CASE(name, fn) do { \
		tc = tcase_create(name); \
		tcase_add_test(tc, fn); \
		suite_add_tcase(s, tc); \
	} while (0)

	LOOP_CASE("addr_parse/addr_format round trip", test_addr_roundtrip, NELEM(addr_ok));
	LOOP_CASE("addr_format of IPv4, every octet value", test_addr_format_v4, 256);
	LOOP_CASE("addr_parse refuses", test_addr_bad, NELEM(addr_bad));
	ONE_CASE("addr_parse length, addr_equal", test_addr_parse_len);
	LOOP_CASE("addr_port_parse", test_addr_port_parse, NELEM(addr_ports));
	ONE_CASE("addr_port_parse length", test_addr_port_parse_len);
	LOOP_CASE("cidr_parse", test_cidr_parse, NELEM(cidrs));
	LOOP_CASE("cidr_contains boundaries", test_cidr_contains, NELEM(contains));
	ONE_CASE("data file: rows parsed by the test", test_data_file);
	ONE_CASE("addr_table matches the data file", test_table_matches_file);
	LOOP_CASE("every row: first, last, inner and neighbours", test_row_edges, nrows);
	ONE_CASE("decode rows: the embedded IPv4 decides", test_decode_rows);
	LOOP_CASE("named vectors (sections D, E)", test_vectors, NELEM(vectors));
	LOOP_CASE("IPv6 outside 2000::/3 is reserved", test_reserved6, NELEM(reserved6));
	LOOP_CASE("nat64 prefixes (RFC 6052)", test_nat64, NELEM(rfc6052));
	ONE_CASE("nat64 prefixes: scope", test_nat64_other);
	LOOP_CASE("addr_permitted", test_permitted, NELEM(permits));
	LOOP_CASE("ISATAP and the NAT64 u octet", test_isatap_u_octet, NELEM(isatap));
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	/* Read before the suite is built: one loop iteration per row. */
	load_rows();
	sr = srunner_create(addr_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
