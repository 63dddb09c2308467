/*
 * check_tls.c: unit tests for the ClientHello inspector of the SNI guard (proto/tls.c)
 * against SPEC "egressd / SNI guard", the reasons sni-malformed / not-tls and the layout,
 * vectors and edge cases of protocol-notes part (b).
 *
 * ClientHellos are built here by a small builder that can put any value in any length
 * field, so every container can be made to disagree with its contents; they are wrapped
 * in records cut at any offset. Real hellos captured from curl, openssl s_client and
 * python3 ssl (tests/data/tls, see its README.md) are read at run time.
 *
 * Every input is copied into a heap buffer of exactly its length, so that a read past
 * len is an ASan error in --enable-asan builds, and every result is checked for the
 * invariants egressd relies on (scan_checked). Splits are checked with the prefix rule:
 * a prefix of a stream answers NEED_MORE or exactly what the whole stream answers.
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define S(lit) (lit), sizeof(lit) - 1

#define W_MAX (6 * EGRESS_TLS_SCRATCH + 4096) /* a hello cut into one-byte records */
#define RAW_MAX 1024

static uint8_t scratch[EGRESS_TLS_SCRATCH];

/* --- a byte writer with length fields filled in afterwards -------------------------- */

struct wr {
	uint8_t b[W_MAX];
	size_t len;
};

static struct wr msgbuf, recbuf, tmpbuf;

static void
w_u8(struct wr *w, unsigned v)
{
	ck_assert_uint_lt(w->len, W_MAX);
	w->b[w->len++] = (uint8_t)v;
}

static void
w_u16(struct wr *w, unsigned v)
{
	w_u8(w, v >> 8 & 0xff);
	w_u8(w, v & 0xff);
}

static void
w_bytes(struct wr *w, const void *p, size_t n)
{
	ck_assert_uint_le(w->len + n, W_MAX);
	memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void
w_fill(struct wr *w, uint8_t c, size_t n)
{
	ck_assert_uint_le(w->len + n, W_MAX);
	memset(w->b + w->len, c, n);
	w->len += n;
}

/* Reserves an n-byte length field; w_close fills it with what follows it, plus delta. */
static size_t
w_open(struct wr *w, size_t n)
{
	size_t at = w->len;

	w_fill(w, 0, n);
	return at;
}

static void
w_close(struct wr *w, size_t at, size_t n, long delta)
{
	unsigned long v = (unsigned long)((long)(w->len - at - n) + delta);
	size_t i;

	for (i = 0; i < n; i++)
		w->b[at + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* --- the ClientHello builder ------------------------------------------------------- */

/* The length fields a test can corrupt. */
enum field {
	F_RECORD,       /* the first record's length */
	F_HS,           /* handshake length */
	F_SID,          /* session_id */
	F_CS,           /* cipher_suites */
	F_CM,           /* compression_methods */
	F_EXTS,         /* extensions block */
	F_EXT_SV,       /* supported_versions extension, first */
	F_EXT_SNI,      /* server_name extension, second */
	F_SN_LIST,      /* ServerNameList */
	F_SN_NAME,      /* the first entry's name */
	F_EXT_ALPN,     /* application_layer_protocol_negotiation, last */
	F_COUNT
};

static const char *const field_names[F_COUNT] = {
	"record", "handshake", "session_id", "cipher_suites", "compression_methods",
	"extensions", "supported_versions", "server_name", "ServerNameList", "HostName",
	"alpn",
};

struct sn_entry {
	unsigned type;
	const char *name;
	size_t len;
};

#define EXTRA_MAX 4

struct spec {
	const struct sn_entry *sn;  /* server_name entries; NULL: host_name "example.com" */
	size_t nsn;
	const char *sni_data;       /* replaces the server_name extension data when set */
	size_t sni_data_len;
	bool no_sni;                /* no server_name extension */
	bool sni_twice;             /* a second, identical server_name extension */
	bool no_exts;               /* no extensions block (TLS 1.2 style) */
	bool empty_exts;            /* an empty extensions block */
	unsigned extra[EXTRA_MAX];  /* more extensions, each with 4 bytes of data */
	size_t nextra;
	size_t pad;                 /* a padding extension (21) with this much data */
	size_t sid;                 /* session_id bytes */
	size_t ncs;                 /* cipher suites; 0: three */
	bool cs_odd;                /* one more byte in cipher_suites */
	bool cs_none;               /* an empty cipher_suites */
	bool cm_none;               /* an empty compression_methods */
	size_t trailing;            /* bytes after the extensions block */
	unsigned legacy_version;    /* 0: 0x0303 */
	long delta[F_COUNT];        /* added to each length field */
};

static const struct sn_entry default_sn = { 0, S("example.com") };

/* The handshake message (header and body) into w. */
static void
build_msg(const struct spec *s, struct wr *w)
{
	size_t hs, at, exts, e, l, n, i, ncs = s->ncs ? s->ncs : 3;
	const struct sn_entry *sn = s->sn ? s->sn : &default_sn;
	size_t nsn = s->sn ? s->nsn : 1;
	int k;

	w->len = 0;
	w_u8(w, 1);
	hs = w_open(w, 3);
	w_u16(w, s->legacy_version ? s->legacy_version : 0x0303);
	for (i = 0; i < 32; i++)
		w_u8(w, (unsigned)(0xa0 + i));
	at = w_open(w, 1);
	w_fill(w, 0x55, s->sid);
	w_close(w, at, 1, s->delta[F_SID]);
	at = w_open(w, 2);
	for (i = 0; !s->cs_none && i < ncs; i++)
		w_u16(w, (unsigned)(0x1301 + i));
	if (s->cs_odd)
		w_u8(w, 0xff);
	w_close(w, at, 2, s->delta[F_CS]);
	at = w_open(w, 1);
	if (!s->cm_none)
		w_u8(w, 0);
	w_close(w, at, 1, s->delta[F_CM]);
	if (!s->no_exts) {
		exts = w_open(w, 2);
		if (!s->empty_exts) {
			w_u16(w, 43);
			e = w_open(w, 2);
			w_bytes(w, S("\x04\x03\x04\x03\x03"));
			w_close(w, e, 2, s->delta[F_EXT_SV]);
			for (k = 0; !s->no_sni && k < (s->sni_twice ? 2 : 1); k++) {
				w_u16(w, 0);
				e = w_open(w, 2);
				if (s->sni_data != NULL)
					w_bytes(w, s->sni_data, s->sni_data_len);
				else {
					l = w_open(w, 2);
					for (i = 0; i < nsn; i++) {
						w_u8(w, sn[i].type);
						n = w_open(w, 2);
						w_bytes(w, sn[i].name, sn[i].len);
						w_close(w, n, 2, i == 0 ? s->delta[F_SN_NAME] : 0);
					}
					w_close(w, l, 2, s->delta[F_SN_LIST]);
				}
				w_close(w, e, 2, s->delta[F_EXT_SNI]);
			}
			for (i = 0; i < s->nextra; i++) {
				w_u16(w, s->extra[i]);
				w_u16(w, 4);
				w_bytes(w, S("\x00\x01\x02\x03"));
			}
			w_u16(w, 16);
			e = w_open(w, 2);
			l = w_open(w, 2);
			w_bytes(w, S("\x02h2\x08http/1.1"));
			w_close(w, l, 2, 0);
			w_close(w, e, 2, s->delta[F_EXT_ALPN]);
			if (s->pad > 0) {
				w_u16(w, 21);
				w_u16(w, (unsigned)s->pad);
				w_fill(w, 0, s->pad);
			}
		}
		w_close(w, exts, 2, s->delta[F_EXTS]);
	}
	w_fill(w, 0, s->trailing);
	w_close(w, hs, 3, s->delta[F_HS]);
}

/*
 * Wraps the message into handshake records cut at cuts[] (increasing offsets into msg);
 * delta is added to the first record's length.
 */
static void
wrap(const uint8_t *msg, size_t mlen, const size_t *cuts, size_t ncuts, long delta,
    struct wr *out)
{
	size_t from = 0, to, i, at;

	out->len = 0;
	for (i = 0; i <= ncuts; i++) {
		to = i < ncuts ? cuts[i] : mlen;
		w_u8(out, 22);
		w_u16(out, i == 0 ? 0x0301 : 0x0303);
		at = w_open(out, 2);
		w_bytes(out, msg + from, to - from);
		w_close(out, at, 2, i == 0 ? delta : 0);
		from = to;
	}
}

/* The spec's hello in one record into recbuf. */
static void
build(const struct spec *s)
{
	build_msg(s, &msgbuf);
	wrap(msgbuf.b, msgbuf.len, NULL, 0, s->delta[F_RECORD], &recbuf);
}

/* --- scanning with invariants -------------------------------------------------------- */

struct out {
	struct tls_result r;
	uint8_t raw[RAW_MAX];       /* a copy of what raw pointed at */
	size_t raw_len;
	bool has_raw;
};

static const char *
unit_name(enum tls_unit u)
{
	static const char *const names[] = { "NEED_MORE", "NOT_TLS", "HELLO", "PASS", "END",
	    "ERROR" };

	return (unsigned)u < sizeof(names) / sizeof(names[0]) ? names[u] : "?";
}

static uint8_t *
exact_copy(const void *s, size_t len)
{
	uint8_t *p = malloc(len == 0 ? 1 : len);

	ck_assert_ptr_nonnull(p);
	if (len > 0)
		memcpy(p, s, len);
	return p;
}

static bool
inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

/* tls_scan on an exact copy of b; checks what egressd relies on of every answer. */
static void
scan_checked(const uint8_t *b, size_t len, bool first, struct out *o)
{
	uint8_t *p = exact_copy(b, len);
	struct tls_result *r = &o->r;
	struct host h;
	const char *why;

	memset(o, 0, sizeof(*o));
	tls_scan(p, len, first, scratch, sizeof(scratch), r);
	ck_assert_int_ge(r->unit, TLS_NEED_MORE);
	ck_assert_int_le(r->unit, TLS_ERROR);
	if (r->unit == TLS_NOT_TLS)
		ck_assert(first);
	if (r->unit == TLS_HELLO || r->unit == TLS_PASS) {
		ck_assert_uint_gt(r->len, 0);
		ck_assert_uint_le(r->len, len);
	} else
		ck_assert_uint_eq(r->len, 0);
	if (r->unit == TLS_ERROR) {
		ck_assert_int_eq(r->reason, EGRESS_SNI_MALFORMED);
		ck_assert_ptr_nonnull(r->why);
	}
	if (r->unit == TLS_HELLO && r->has_sni) {
		ck_assert_uint_le(strlen(r->sni), EGRESS_HOST_MAX);
		ck_assert_int_eq(host_parse(r->sni, strlen(r->sni), &h, &why), 0);
		ck_assert_int_eq(h.kind, HOST_NAME);
		ck_assert_str_eq(h.name, r->sni);
	}
	if (r->unit != TLS_HELLO) {
		ck_assert(!r->has_sni);
		ck_assert_str_eq(r->sni, "");
	}
	if (r->raw != NULL) {
		ck_assert(inside(r->raw, r->raw_len, p, len) ||
		    inside(r->raw, r->raw_len, scratch, sizeof(scratch)));
		ck_assert_uint_le(r->raw_len, RAW_MAX);
		memcpy(o->raw, r->raw, r->raw_len);
		o->raw_len = r->raw_len;
		o->has_raw = true;
	}
	r->raw = NULL;
	free(p);
}

/*
 * The prefix rule: every proper prefix answers NEED_MORE or exactly what the whole
 * answers (unit and len). Returns the whole's answer in *whole.
 */
static void
check_prefixes(const uint8_t *b, size_t len, bool first, struct out *whole)
{
	struct out o;
	size_t k;

	scan_checked(b, len, first, whole);
	for (k = 0; k < len; k++) {
		scan_checked(b, k, first, &o);
		if (o.r.unit == TLS_NEED_MORE)
			continue;
		ck_assert_msg(o.r.unit == whole->r.unit && o.r.len == whole->r.len,
		    "prefix of %zu/%zu bytes answers %s (%zu), the whole %s (%zu)", k, len,
		    unit_name(o.r.unit), o.r.len, unit_name(whole->r.unit), whole->r.len);
	}
}

/* A valid hello: every proper prefix is NEED_MORE, the whole is HELLO with sni. */
static void
check_hello_splits(const uint8_t *b, size_t len, bool first, const char *sni)
{
	struct out o;
	size_t k;

	for (k = 0; k < len; k++) {
		scan_checked(b, k, first, &o);
		ck_assert_msg(o.r.unit == TLS_NEED_MORE, "prefix of %zu/%zu bytes: %s (%s)", k,
		    len, unit_name(o.r.unit), o.r.why ? o.r.why : "");
	}
	scan_checked(b, len, first, &o);
	ck_assert_msg(o.r.unit == TLS_HELLO, "whole: %s (%s)", unit_name(o.r.unit),
	    o.r.why ? o.r.why : "");
	ck_assert_uint_eq(o.r.len, len);
	if (sni != NULL) {
		ck_assert(o.r.has_sni);
		ck_assert_str_eq(o.r.sni, sni);
	} else
		ck_assert(!o.r.has_sni);
}

static void
expect_hello(const uint8_t *b, size_t len, bool first, const char *sni, struct out *o)
{
	scan_checked(b, len, first, o);
	ck_assert_msg(o->r.unit == TLS_HELLO, "%s (%s)", unit_name(o->r.unit),
	    o->r.why ? o->r.why : "");
	ck_assert_uint_eq(o->r.len, len);
	if (sni != NULL) {
		ck_assert(o->r.has_sni);
		ck_assert_str_eq(o->r.sni, sni);
	} else
		ck_assert(!o->r.has_sni);
}

static void
expect_error(const uint8_t *b, size_t len, bool first, const char *why)
{
	struct out o;

	check_prefixes(b, len, first, &o);
	ck_assert_msg(o.r.unit == TLS_ERROR, "%s, wanted ERROR (%s)", unit_name(o.r.unit), why);
	if (why != NULL)
		ck_assert_msg(strstr(o.r.why, why) != NULL, "why \"%s\", wanted \"%s\"", o.r.why,
		    why);
}

/* --- protocol-notes (b): the 72-byte vector and its two-record split ----------------- */

static const uint8_t notes_hello[72] = {
	0x16, 0x03, 0x01, 0x00, 0x43,
	0x01, 0x00, 0x00, 0x3f,
	0x03, 0x03,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00,
	0x00, 0x14,
	0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00, 0x0b,
	'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm',
};

START_TEST(test_notes_vector)
{
	uint8_t two[77];
	struct out o;

	check_hello_splits(notes_hello, sizeof(notes_hello), true, "example.com");
	expect_hello(notes_hello, sizeof(notes_hello), true, "example.com", &o);
	ck_assert(!o.r.ech);
	ck_assert(!o.has_raw);

	/* 16 03 01 00 04 01 00 00 3f + 16 03 01 00 3f + the 63 body bytes */
	memcpy(two, "\x16\x03\x01\x00\x04\x01\x00\x00\x3f\x16\x03\x01\x00\x3f", 14);
	memcpy(two + 14, notes_hello + 9, 63);
	check_hello_splits(two, sizeof(two), true, "example.com");
	/* and the same again on a later call */
	check_hello_splits(two, sizeof(two), false, "example.com");
}
END_TEST

/* --- whole hellos, split at every byte, over two and three records ------------------ */

static const struct spec hello_specs[] = {
	{ .sid = 32 },                                  /* TLS 1.3 style */
	{ .sid = 0, .ncs = 1 },
	{ .sid = 7, .ncs = 40, .pad = 200 },
	{ .no_exts = true },                            /* TLS 1.2 style, no SNI */
};

START_TEST(test_split_bytes)
{
	const struct spec *s = &hello_specs[_i];

	build(s);
	check_hello_splits(recbuf.b, recbuf.len, true, s->no_exts ? NULL : "example.com");
	check_hello_splits(recbuf.b, recbuf.len, false, s->no_exts ? NULL : "example.com");
}
END_TEST

START_TEST(test_split_two_records)
{
	const struct spec *s = &hello_specs[_i];
	const char *sni = s->no_exts ? NULL : "example.com";
	size_t cut;

	build_msg(s, &msgbuf);
	/* every cut, including 4 (the header alone, as in the notes) and 1..3 inside it */
	for (cut = 1; cut < msgbuf.len; cut++) {
		wrap(msgbuf.b, msgbuf.len, &cut, 1, 0, &recbuf);
		check_hello_splits(recbuf.b, recbuf.len, true, sni);
	}
}
END_TEST

START_TEST(test_split_three_records)
{
	struct spec s = { .sid = 0, .ncs = 1 };
	size_t cuts[2];
	struct out o;

	build_msg(&s, &msgbuf);
	for (cuts[0] = 1; cuts[0] < msgbuf.len; cuts[0]++)
		for (cuts[1] = cuts[0] + 1; cuts[1] < msgbuf.len; cuts[1]++) {
			wrap(msgbuf.b, msgbuf.len, cuts, 2, 0, &recbuf);
			if (cuts[1] % 7 == 0 || cuts[0] == 4)
				check_hello_splits(recbuf.b, recbuf.len, true, "example.com");
			else
				expect_hello(recbuf.b, recbuf.len, true, "example.com", &o);
		}
	/* and exhaustively, prefixes included, over the notes' smaller hello */
	memcpy(msgbuf.b, notes_hello + 5, 67);
	for (cuts[0] = 1; cuts[0] < 67; cuts[0]++)
		for (cuts[1] = cuts[0] + 1; cuts[1] < 67; cuts[1]++) {
			wrap(msgbuf.b, 67, cuts, 2, 0, &recbuf);
			check_hello_splits(recbuf.b, recbuf.len, true, "example.com");
		}
}
END_TEST

START_TEST(test_one_byte_records)
{
	size_t cuts[512], i;
	struct out o;

	build_msg(&hello_specs[0], &msgbuf);
	ck_assert_uint_lt(msgbuf.len, NELEM(cuts));
	for (i = 1; i < msgbuf.len; i++)
		cuts[i - 1] = i;
	wrap(msgbuf.b, msgbuf.len, cuts, msgbuf.len - 1, 0, &recbuf);
	ck_assert_uint_eq(recbuf.len, 6 * msgbuf.len);
	expect_hello(recbuf.b, recbuf.len, true, "example.com", &o);
	check_hello_splits(recbuf.b, recbuf.len, false, "example.com");
}
END_TEST

/* --- oversized ----------------------------------------------------------------------- */

/* A hello whose message body is exactly body bytes, cut into records of 2^14. */
static void
build_sized(size_t body)
{
	struct spec s = { .sid = 32, .pad = 1 };
	size_t cuts[8], n = 0, at;

	build_msg(&s, &msgbuf);
	s.pad = body - (msgbuf.len - 4) + 1;
	build_msg(&s, &msgbuf);
	ck_assert_uint_eq(msgbuf.len, 4 + body);
	for (at = EGRESS_TLS_RECORD_MAX; at < msgbuf.len; at += EGRESS_TLS_RECORD_MAX)
		cuts[n++] = at;
	wrap(msgbuf.b, msgbuf.len, cuts, n, 0, &recbuf);
}

START_TEST(test_oversized)
{
	uint8_t small[64];
	struct tls_result r;
	struct out o;

	/* just at the bound: accepted, over three records */
	build_sized(EGRESS_TLS_HELLO_MAX);
	expect_hello(recbuf.b, recbuf.len, true, "example.com", &o);
	ck_assert_uint_eq(recbuf.len, 4 + EGRESS_TLS_HELLO_MAX + 3 * 5);
	/* every prefix waits (sampled: the walk is over record headers) */
	for (size_t k = 0; k < recbuf.len; k += 97) {
		scan_checked(recbuf.b, k, true, &o);
		ck_assert_int_eq(o.r.unit, TLS_NEED_MORE);
	}

	/* one more: refused as soon as the handshake length is in */
	build_sized(EGRESS_TLS_HELLO_MAX + 1);
	scan_checked(recbuf.b, recbuf.len, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_ERROR);
	ck_assert_str_eq(o.r.why, "oversized ClientHello");
	scan_checked(recbuf.b, 9, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_ERROR);
	scan_checked(recbuf.b, 8, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_NEED_MORE);

	/* a 16 KiB+ hello in one record is a record overflow */
	build_sized(EGRESS_TLS_RECORD_MAX);
	wrap(msgbuf.b, msgbuf.len, NULL, 0, 0, &recbuf);
	expect_error(recbuf.b, 5, true, "record longer");

	/* a scratch buffer too small for a hello spanning records */
	build_sized(EGRESS_TLS_RECORD_MAX);
	tls_scan(recbuf.b, recbuf.len, true, small, sizeof(small), &r);
	ck_assert_int_eq(r.unit, TLS_ERROR);
	ck_assert_str_eq(r.why, "ClientHello larger than the scratch buffer");
	tls_scan(recbuf.b, recbuf.len, true, NULL, 0, &r);
	ck_assert_int_eq(r.unit, TLS_ERROR);
	/* a hello in one record needs no scratch */
	tls_scan(notes_hello, sizeof(notes_hello), true, NULL, 0, &r);
	ck_assert_int_eq(r.unit, TLS_HELLO);
}
END_TEST

/* --- lengths: every field one too long and one too short ----------------------------- */

static const struct {
	enum field f;
	long delta;
	enum tls_unit want;
} lengths[] = {
	{ F_RECORD, +1, TLS_ERROR },            /* the record goes on past the message */
	{ F_RECORD, -1, TLS_ERROR },            /* a message byte read as a record header */
	{ F_HS, +1, TLS_NEED_MORE },            /* waits for a record carrying the rest */
	{ F_HS, -1, TLS_ERROR },                /* the record goes on past the message */
	{ F_SID, +1, TLS_ERROR }, { F_SID, -1, TLS_ERROR },
	{ F_CS, +1, TLS_ERROR }, { F_CS, -1, TLS_ERROR },
	{ F_CS, +2, TLS_ERROR }, { F_CS, -2, TLS_ERROR },
	{ F_CM, +1, TLS_ERROR }, { F_CM, -1, TLS_ERROR },
	{ F_EXTS, +1, TLS_ERROR }, { F_EXTS, -1, TLS_ERROR },
	{ F_EXT_SV, +1, TLS_ERROR }, { F_EXT_SV, -1, TLS_ERROR },
	{ F_EXT_SNI, +1, TLS_ERROR }, { F_EXT_SNI, -1, TLS_ERROR },
	{ F_SN_LIST, +1, TLS_ERROR }, { F_SN_LIST, -1, TLS_ERROR },
	{ F_SN_NAME, +1, TLS_ERROR }, { F_SN_NAME, -1, TLS_ERROR },
	{ F_EXT_ALPN, +1, TLS_ERROR }, { F_EXT_ALPN, -1, TLS_ERROR },
	/* far off: the whole range of each field */
	{ F_SID, +200, TLS_ERROR }, { F_CS, +0x7000, TLS_ERROR }, { F_CM, +250, TLS_ERROR },
	{ F_EXTS, +0x7000, TLS_ERROR }, { F_EXT_SNI, +0x7000, TLS_ERROR },
	{ F_SN_LIST, +0x7000, TLS_ERROR }, { F_SN_NAME, +0x7000, TLS_ERROR },
	{ F_HS, +0x10000, TLS_ERROR },          /* oversized */
	{ F_RECORD, +0x4000, TLS_ERROR },       /* record overflow */
};

START_TEST(test_lengths)
{
	struct spec s = { .sid = 32 };
	struct out o;

	s.delta[lengths[_i].f] = lengths[_i].delta;
	build(&s);
	check_prefixes(recbuf.b, recbuf.len, true, &o);
	ck_assert_msg(o.r.unit == lengths[_i].want, "%s %+ld: %s (%s), wanted %s",
	    field_names[lengths[_i].f], lengths[_i].delta, unit_name(o.r.unit),
	    o.r.why ? o.r.why : "", unit_name(lengths[_i].want));
	if (lengths[_i].want == TLS_NEED_MORE) {
		/* the start of a next record does not make it a hello */
		w_u8(&recbuf, 0x16);
		scan_checked(recbuf.b, recbuf.len, true, &o);
		ck_assert_int_ne(o.r.unit, TLS_HELLO);
	}
}
END_TEST

/* The body cut short at every offset, record and handshake lengths made to agree. */
START_TEST(test_truncated)
{
	struct spec s = { .sid = 5, .ncs = 2 };
	size_t full, k, bare;
	struct out o;

	build_msg(&s, &tmpbuf);
	full = tmpbuf.len - 4;
	bare = 2 + 32 + 1 + s.sid + 2 + 2 * s.ncs + 1 + 1; /* up to compression_methods */
	for (k = 0; k <= full; k++) {
		msgbuf.len = 0;
		w_u8(&msgbuf, 1);
		w_u8(&msgbuf, 0);
		w_u16(&msgbuf, (unsigned)k);
		w_bytes(&msgbuf, tmpbuf.b + 4, k);
		wrap(msgbuf.b, msgbuf.len, NULL, 0, 0, &recbuf);
		if (k == full)
			expect_hello(recbuf.b, recbuf.len, true, "example.com", &o);
		else if (k == bare)
			expect_hello(recbuf.b, recbuf.len, true, NULL, &o);
		else
			expect_error(recbuf.b, recbuf.len, true, NULL);
	}
}
END_TEST

/* Fields whose containers agree but whose values are out of range. */
static const struct {
	const char *name;
	struct spec s;
	const char *why;            /* NULL: HELLO */
} fields[] = {
	{ "session_id of 32 bytes", { .sid = 32 }, NULL },
	{ "session_id of 33 bytes", { .sid = 33 }, "session_id" },
	{ "session_id of 255 bytes", { .sid = 255 }, "session_id" },
	{ "odd cipher_suites", { .ncs = 2, .cs_odd = true }, "cipher_suites" },
	{ "one byte of cipher_suites", { .cs_none = true, .cs_odd = true }, "cipher_suites" },
	{ "empty cipher_suites", { .cs_none = true }, "cipher_suites" },
	{ "empty compression_methods", { .cm_none = true }, "compression_methods" },
	{ "empty compression_methods, no extensions", { .cm_none = true, .no_exts = true },
	    "compression_methods" },
	{ "one byte after the extensions", { .trailing = 1 }, "trailing bytes after" },
	{ "bytes after an empty extensions block", { .empty_exts = true, .trailing = 4 },
	    "trailing bytes after" },
	{ "one byte where extensions would start", { .no_exts = true, .trailing = 1 },
	    "truncated extensions length" },
	{ "legacy_version 3.0", { .legacy_version = 0x0300 }, NULL },
	{ "legacy_version 2.0", { .legacy_version = 0x0200 }, "legacy_version" },
	{ "legacy_version 254.253 (DTLS)", { .legacy_version = 0xfefd }, "legacy_version" },
};

START_TEST(test_fields)
{
	struct out o;

	build(&fields[_i].s);
	if (fields[_i].why != NULL) {
		check_prefixes(recbuf.b, recbuf.len, true, &o);
		ck_assert_msg(o.r.unit == TLS_ERROR, "%s: %s", fields[_i].name,
		    unit_name(o.r.unit));
		ck_assert_msg(strstr(o.r.why, fields[_i].why) != NULL, "%s: why \"%s\"",
		    fields[_i].name, o.r.why);
	} else
		check_hello_splits(recbuf.b, recbuf.len, true, "example.com");
}
END_TEST

/* --- extensions ---------------------------------------------------------------------- */

static const struct {
	const char *name;
	struct spec s;
	const char *sni;            /* NULL: no SNI */
	bool ech;
	const char *why;            /* non-NULL: ERROR with this in why */
} exts[] = {
	{ "no extensions block", { .no_exts = true }, NULL, false, NULL },
	{ "empty extensions block", { .empty_exts = true }, NULL, false, NULL },
	{ "no server_name", { .no_sni = true }, NULL, false, NULL },
	{ "ECH", { .nextra = 1, .extra = { 0xfe0d } }, "example.com", true, NULL },
	{ "ECH without SNI", { .no_sni = true, .nextra = 1, .extra = { 0xfe0d } }, NULL, true,
	    NULL },
	{ "ESNI draft", { .nextra = 1, .extra = { 0xffce } }, "example.com", true, NULL },
	{ "unknown extensions", { .nextra = 3, .extra = { 0x1234, 0xffff, 0xfe0c } },
	    "example.com", false, NULL },
	{ "duplicate server_name", { .sni_twice = true }, NULL, false, "duplicate extension" },
	{ "duplicate ECH", { .nextra = 2, .extra = { 0xfe0d, 0xfe0d } }, NULL, false,
	    "duplicate extension" },
	{ "duplicate 0xffff", { .nextra = 3, .extra = { 0xffff, 1, 0xffff } }, NULL, false,
	    "duplicate extension" },
	{ "duplicate supported_versions", { .nextra = 1, .extra = { 43 } }, NULL, false,
	    "duplicate extension" },
	{ "duplicate alpn", { .nextra = 1, .extra = { 16 } }, NULL, false,
	    "duplicate extension" },
	/* tlsfuzzer test-invalid-server-name-extension.py */
	{ "empty SNI extension", { .sni_data = "", .sni_data_len = 0 }, NULL, false,
	    "shorter than its list length" },
	{ "one-byte SNI extension", { .sni_data = "\x00", .sni_data_len = 1 }, NULL, false,
	    "shorter than its list length" },
	{ "empty host list", { .sni_data = "\x00\x00", .sni_data_len = 2 }, NULL, false,
	    "empty server_name list" },
	{ "empty hostname", { .sni_data = "\x00\x03\x00\x00\x00", .sni_data_len = 5 }, NULL,
	    false, "empty name" },
	{ "empty name of an unknown type", { .sni_data = "\x00\x03\x05\x00\x00",
	    .sni_data_len = 5 }, NULL, false, "empty name" },
	{ "trailing data in extension", { .sni_data = "\x00\x04\x00\x00\x01" "a" "b",
	    .sni_data_len = 7 }, NULL, false, "trailing bytes in the server_name" },
	{ "list longer than extension", { .sni_data = "\x00\x05\x00\x00\x01" "a",
	    .sni_data_len = 6 }, NULL, false, "longer than its extension" },
	{ "truncated entry header", { .sni_data = "\x00\x02\x00\x00", .sni_data_len = 4 },
	    NULL, false, "truncated server_name entry" },
	{ "name longer than list", { .sni_data = "\x00\x04\x00\x00\x02" "a",
	    .sni_data_len = 6 }, NULL, false, "longer than its list" },
	{ "host name entry then junk", { .sni_data = "\x00\x05\x00\x00\x01" "a" "\x00",
	    .sni_data_len = 7 }, NULL, false, "truncated server_name entry" },
};

START_TEST(test_extensions)
{
	struct out o;

	build(&exts[_i].s);
	check_prefixes(recbuf.b, recbuf.len, true, &o);
	if (exts[_i].why != NULL) {
		ck_assert_msg(o.r.unit == TLS_ERROR, "%s: %s", exts[_i].name, unit_name(o.r.unit));
		ck_assert_msg(strstr(o.r.why, exts[_i].why) != NULL, "%s: why \"%s\"",
		    exts[_i].name, o.r.why);
		return;
	}
	ck_assert_msg(o.r.unit == TLS_HELLO, "%s: %s (%s)", exts[_i].name,
	    unit_name(o.r.unit), o.r.why ? o.r.why : "");
	ck_assert_uint_eq(o.r.len, recbuf.len);
	ck_assert_int_eq(o.r.ech, exts[_i].ech);
	if (exts[_i].sni != NULL) {
		ck_assert(o.r.has_sni);
		ck_assert_str_eq(o.r.sni, exts[_i].sni);
	} else
		ck_assert(!o.r.has_sni);
}
END_TEST

/* --- server_name entries: two host names, unknown name types ------------------------- */

static const struct sn_entry sn_two[] = { { 0, S("a.example") }, { 0, S("b.example") } };
static const struct sn_entry sn_same[] = { { 0, S("a.example") }, { 0, S("a.example") } };
static const struct sn_entry sn_unknown_first[] = { { 1, S("x") }, { 0, S("a.example") } };
static const struct sn_entry sn_unknown_last[] = { { 0, S("a.example") },
	{ 0xff, S("\x00\xff junk") } };
static const struct sn_entry sn_unknown_both[] = { { 7, S("other.example") },
	{ 0, S("a.example") }, { 8, S("z") } };
static const struct sn_entry sn_unknown_only[] = { { 1, S("a.example") } };
static const struct sn_entry sn_two_around[] = { { 0, S("a.example") }, { 1, S("x") },
	{ 0, S("b.example") } };

static const struct {
	const char *name;
	const struct sn_entry *sn;
	size_t nsn;
	const char *sni;            /* NULL and !err: no SNI */
	bool err;
} entries[] = {
	{ "two host names", sn_two, 2, NULL, true },
	{ "the same host name twice", sn_same, 2, NULL, true },
	{ "two host names around an unknown type", sn_two_around, 3, NULL, true },
	{ "unknown name type first", sn_unknown_first, 2, "a.example", false },
	{ "unknown name type last", sn_unknown_last, 2, "a.example", false },
	{ "unknown name types around", sn_unknown_both, 3, "a.example", false },
	{ "only an unknown name type", sn_unknown_only, 1, NULL, false },
};

START_TEST(test_entries)
{
	struct spec s = { .sn = entries[_i].sn, .nsn = entries[_i].nsn };
	struct out o;

	build(&s);
	check_prefixes(recbuf.b, recbuf.len, true, &o);
	if (entries[_i].err) {
		ck_assert_msg(o.r.unit == TLS_ERROR, "%s: %s", entries[_i].name,
		    unit_name(o.r.unit));
		ck_assert_str_eq(o.r.why, "two host names in server_name");
		return;
	}
	ck_assert_msg(o.r.unit == TLS_HELLO, "%s: %s (%s)", entries[_i].name,
	    unit_name(o.r.unit), o.r.why ? o.r.why : "");
	if (entries[_i].sni != NULL) {
		ck_assert(o.r.has_sni);
		ck_assert_str_eq(o.r.sni, entries[_i].sni);
	} else
		ck_assert(!o.r.has_sni);
}
END_TEST

/* --- host names ---------------------------------------------------------------------- */

static const struct {
	const char *name;
	size_t len;
	const char *sni;            /* NULL: ERROR */
	const char *why;
} names[] = {
	{ S("example.com"), "example.com", NULL },
	{ S("EXAMPLE.Com"), "example.com", NULL },              /* accepted, lower-cased */
	{ S("WWW.EXAMPLE.COM"), "www.example.com", NULL },
	{ S("localhost"), "localhost", NULL },
	{ S("xn--bcher-kva.example"), "xn--bcher-kva.example", NULL },
	{ S("a-b.c-d.example"), "a-b.c-d.example", NULL },
	{ S("1.example"), "1.example", NULL },
	{ S("192.0.2.1"), NULL, "IP literal" },
	{ S("127.0.0.1"), NULL, "IP literal" },
	{ S("2001:db8::1"), NULL, "IP literal" },
	{ S("::1"), NULL, "IP literal" },
	{ S("::ffff:127.0.0.1"), NULL, "IP literal" },
	{ S("[2001:db8::1]"), NULL, "character not allowed" },
	{ S("example.com:443"), NULL, "':' in server_name" },
	{ S("2130706433"), NULL, "" },                          /* numeric: host_parse */
	{ S("127.1"), NULL, "" },
	{ S("0x7f.1"), NULL, "" },
	{ S("example.com."), NULL, "trailing dot" },
	{ S("."), NULL, "trailing dot" },
	{ S("192.0.2.1."), NULL, "trailing dot" },
	{ S("evil.com\0.example.com"), NULL, "NUL byte" },
	{ S("example.com\0"), NULL, "NUL byte" },
	{ S("\0"), NULL, "NUL byte" },
	{ S("a\x07.example"), NULL, "control byte" },           /* BEL */
	{ S("\x1b[31mred.example"), NULL, "control byte" },     /* ANSI colour */
	{ S("a\r\nb.example"), NULL, "control byte" },
	{ S("a\x7f.example"), NULL, "control byte" },
	{ S("b\xc3\xbc" "cher.example"), NULL, "non-ASCII" },   /* raw UTF-8 */
	{ S("\x80.example"), NULL, "non-ASCII" },
	{ S("a.example\xff"), NULL, "non-ASCII" },
	{ S("under_score.example"), NULL, "character not allowed" },
	{ S("*.example"), NULL, "character not allowed" },
	{ S("exa mple.com"), NULL, "character not allowed" },
	{ S("a%2eb.example"), NULL, "character not allowed" },
	{ S("user@example.com"), NULL, "character not allowed" },
	{ S("a/b.example"), NULL, "character not allowed" },
	{ S("a..example"), NULL, "empty label" },
	{ S(".example"), NULL, "empty label" },
	{ S("-a.example"), NULL, "hyphen" },
	{ S("a-.example"), NULL, "hyphen" },
};

START_TEST(test_names)
{
	struct sn_entry e = { 0, names[_i].name, names[_i].len };
	struct spec s = { .sn = &e, .nsn = 1 };
	struct out o;

	build(&s);
	check_prefixes(recbuf.b, recbuf.len, true, &o);
	if (names[_i].sni == NULL) {
		ck_assert_msg(o.r.unit == TLS_ERROR, "\"%s\": %s (%s)", names[_i].name,
		    unit_name(o.r.unit), o.r.sni);
		ck_assert_msg(strstr(o.r.why, names[_i].why) != NULL, "\"%s\": why \"%s\"",
		    names[_i].name, o.r.why);
		ck_assert(!o.r.has_sni);
		/* raw points at exactly the name bytes */
		ck_assert(o.has_raw);
		ck_assert_uint_eq(o.raw_len, names[_i].len);
		ck_assert(memcmp(o.raw, names[_i].name, names[_i].len) == 0);
		return;
	}
	ck_assert_msg(o.r.unit == TLS_HELLO, "\"%s\": %s (%s)", names[_i].name,
	    unit_name(o.r.unit), o.r.why ? o.r.why : "");
	ck_assert(o.r.has_sni);
	ck_assert_str_eq(o.r.sni, names[_i].sni);
	/* raw only when the bytes were not already canonical */
	if (strcmp(names[_i].name, names[_i].sni) == 0)
		ck_assert(!o.has_raw);
	else {
		ck_assert(o.has_raw);
		ck_assert_uint_eq(o.raw_len, names[_i].len);
		ck_assert(memcmp(o.raw, names[_i].name, names[_i].len) == 0);
	}
}
END_TEST

/* Long names: 253 octets fine, 254 refused; labels of 63 fine, 64 refused. */
START_TEST(test_name_lengths)
{
	char name[300];
	struct sn_entry e = { 0, name, 0 };
	struct spec s = { .sn = &e, .nsn = 1 };
	struct out o;
	size_t len, i;

	for (len = 250; len <= 260; len++) {
		for (i = 0; i < len; i++)
			name[i] = (i % 64 == 63) ? '.' : (char)('a' + i % 26);
		if (name[len - 1] == '.')
			continue;
		name[len] = '\0';
		e.len = len;
		build(&s);
		scan_checked(recbuf.b, recbuf.len, true, &o);
		if (len <= EGRESS_HOST_MAX) {
			ck_assert_msg(o.r.unit == TLS_HELLO, "%zu octets: %s", len, o.r.why);
			ck_assert_str_eq(o.r.sni, name);
		} else {
			ck_assert_msg(o.r.unit == TLS_ERROR, "%zu octets", len);
			ck_assert_uint_eq(o.raw_len, len);
		}
	}
	/* 253 octets in upper case: lower-cased */
	for (i = 0; i < 253; i++)
		name[i] = (i % 64 == 63) ? '.' : 'Q';
	e.len = 253;
	build(&s);
	scan_checked(recbuf.b, recbuf.len, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_HELLO);
	ck_assert_uint_eq(strlen(o.r.sni), 253);
	ck_assert_int_eq(o.r.sni[0], 'q');
	/* 254 with a trailing dot is still a trailing dot */
	name[253] = '.';
	e.len = 254;
	build(&s);
	scan_checked(recbuf.b, recbuf.len, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_ERROR);

	for (len = 62; len <= 65; len++) {
		memset(name, 'l', len);
		memcpy(name + len, ".example", 9);
		e.len = len + 8;
		build(&s);
		scan_checked(recbuf.b, recbuf.len, true, &o);
		ck_assert_int_eq(o.r.unit, len <= EGRESS_LABEL_MAX ? TLS_HELLO : TLS_ERROR);
	}
}
END_TEST

/* --- not TLS, SSLv2 ------------------------------------------------------------------ */

static const struct {
	const char *in;
	size_t len;
	bool first;
	enum tls_unit want;
	size_t decided;             /* the shortest prefix that answers */
} starts[] = {
	{ S("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), true, TLS_NOT_TLS, 1 },
	{ S("SSH-2.0-OpenSSH_9.2p1\r\n"), true, TLS_NOT_TLS, 1 },
	{ S("\x05\x01\x00"), true, TLS_NOT_TLS, 1 },
	{ S("\x00\x00\x00\x00"), true, TLS_NOT_TLS, 1 },
	/*
	 * A TLS record first (content type 20..24, version 3.x) is TLS: a CCS waits for the
	 * hello, anything else before a ClientHello is refused (decided by type and major).
	 */
	{ S("\x15\x03\x01\x00\x02\x02\x28"), true, TLS_ERROR, 2 },     /* an alert first */
	{ S("\x14\x03\x03\x00\x01\x01"), true, TLS_NEED_MORE, 0 },     /* CCS first */
	{ S("\x17\x03\x03\x00\x01\x00"), true, TLS_ERROR, 2 },         /* application data */
	{ S("\x18\x03\x03\x00\x03\x01\x00\x00"), true, TLS_ERROR, 2 }, /* heartbeat */
	{ S("\x15\x03\x09\x00\x02"), true, TLS_ERROR, 2 },
	{ S("\x14\x03\x05\x00\x01\x01"), true, TLS_ERROR, 3 },         /* above 3.4 */
	{ S("\x14\x03\x03\x00\x02\x01\x01"), true, TLS_ERROR, 5 },     /* two bytes */
	{ S("\x14\x03\x03\x00\x01\x02"), true, TLS_ERROR, 6 },         /* value not 1 */
	{ S("\x14\x03\x03\x00\x01\x01\x15\x03\x03\x00\x02\x01\x00"), true, TLS_ERROR, 7 },
	{ S("\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x01\x00"), true, TLS_ERROR, 7 },
	{ S("\x14\x03\x03\x00\x01\x01GET / HTTP/1.1\r\n"), true, TLS_ERROR, 7 },
	{ S("\x14\x03\x03\x00\x01\x01\x16\x03\x03\x00\x04\x02"), true, TLS_ERROR, 12 },
	/* those types with another version byte, and other types, are not TLS records */
	{ S("\x14\x00\x00\x00\x01\x01"), true, TLS_NOT_TLS, 2 },
	{ S("\x15\x02\x00"), true, TLS_NOT_TLS, 2 },
	{ S("\x17\x7f"), true, TLS_NOT_TLS, 2 },
	{ S("\x13\x03\x03\x00\x01\x01"), true, TLS_NOT_TLS, 1 },
	{ S("\x19\x03\x03\x00\x01\x01"), true, TLS_NOT_TLS, 1 },
	/* SSLv2-format hello (RFC 5246 App. E.2), as tlsfuzzer sends it */
	{ S("\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10\x00\x00\x39\x00\x00\x38"),
	    true, TLS_ERROR, 3 },
	{ S("\x80\x2e\x01"), true, TLS_ERROR, 3 },
	{ S("\x81\xff\x01\x00\x02"), true, TLS_ERROR, 3 },
	{ S("\x80\x2e\x02\x03"), true, TLS_NOT_TLS, 3 },              /* not msg_type 1 */
	{ S("\xff\xfb\x01"), true, TLS_ERROR, 3 },
	{ S("\xc3\xa9t\xc3\xa9"), true, TLS_NOT_TLS, 3 },
	/* after TLS started, junk is an error, not the end */
	{ S("GET / HTTP/1.1\r\n"), false, TLS_ERROR, 2 },
	{ S("\x80\x2e\x01\x03\x01"), false, TLS_ERROR, 2 },
	{ S("\x17\x02\x00\x00\x05"), false, TLS_ERROR, 2 },
	{ S("\x17\x03\x05\x00\x05"), false, TLS_ERROR, 3 },
	{ S("\x16\x04\x03\x00\x05"), false, TLS_ERROR, 2 },
	/* a handshake record that is not sound, first or not */
	{ S("\x16\x00\x00"), true, TLS_ERROR, 2 },
	{ S("\x16\x03\x01\x00\x00"), true, TLS_ERROR, 5 },             /* empty */
	{ S("\x16\x03\x01\x00\x00"), false, TLS_ERROR, 5 },
	{ S("\x16\x03\x01\x40\x01"), true, TLS_ERROR, 5 },             /* 2^14 + 1 */
	{ S("\x16\x03\x01\xff\xff"), true, TLS_ERROR, 5 },
	{ S("\x16\x03\x00\x00\x01\x01"), true, TLS_NEED_MORE, 0 },     /* SSL 3.0 record */
	{ S(""), true, TLS_NEED_MORE, 0 },
	{ S(""), false, TLS_NEED_MORE, 0 },
};

START_TEST(test_starts)
{
	struct out o;
	size_t k;

	check_prefixes((const uint8_t *)starts[_i].in, starts[_i].len, starts[_i].first, &o);
	ck_assert_msg(o.r.unit == starts[_i].want, "%zu: %s (%s)", (size_t)_i,
	    unit_name(o.r.unit), o.r.why ? o.r.why : "");
	if (o.r.unit == TLS_NEED_MORE)
		return;
	for (k = 0; k < starts[_i].len; k++) {
		scan_checked((const uint8_t *)starts[_i].in, k, starts[_i].first, &o);
		ck_assert_int_eq(o.r.unit, k < starts[_i].decided ? TLS_NEED_MORE :
		    starts[_i].want);
	}
}
END_TEST

START_TEST(test_sslv2_why)
{
	struct out o;

	scan_checked((const uint8_t *)"\x80\x2e\x01", 3, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_ERROR);
	ck_assert_int_eq(o.r.reason, EGRESS_SNI_MALFORMED);
	ck_assert_str_eq(o.r.why, "SSLv2 hello");
}
END_TEST

/* --- later units: ChangeCipherSpec, the end of inspection, a second hello ------------ */

static const struct {
	const char *in;
	size_t len;
	enum tls_unit want;
	size_t ulen;
} later[] = {
	{ S("\x14\x03\x03\x00\x01\x01"), TLS_PASS, 6 },
	{ S("\x14\x03\x01\x00\x01\x01\x17\x03\x03\x00\x10"), TLS_PASS, 6 },
	{ S("\x14\x03\x03\x00\x01\x02"), TLS_ERROR, 0 },              /* value not 1 */
	{ S("\x14\x03\x03\x00\x02\x01\x01"), TLS_ERROR, 0 },          /* two bytes */
	{ S("\x14\x03\x03\x00\x00"), TLS_ERROR, 0 },
	{ S("\x17\x03\x03\x00\x20"), TLS_END, 0 },                    /* application data */
	{ S("\x17\x03\x03\x00\x00"), TLS_END, 0 },                    /* empty, TLS 1.2 */
	{ S("\x17\x03\x03\x48\x00"), TLS_END, 0 },                    /* 2^14 + 2048 */
	{ S("\x17\x03\x03\x48\x01"), TLS_ERROR, 0 },
	{ S("\x15\x03\x03\x00\x02\x01\x00"), TLS_END, 0 },            /* alert */
	{ S("\x18\x03\x03\x00\x03\x01\x00\x00"), TLS_END, 0 },        /* heartbeat */
	{ S("\x19\x03\x03\x00\x03"), TLS_END, 0 },                    /* other types */
	{ S("\x00\x03\x03\x00\x03"), TLS_END, 0 },
	{ S("\x16\x03\x03\x00\x46\x10\x00\x00\x42"), TLS_END, 0 },    /* ClientKeyExchange */
	{ S("\x16\x03\x03\x00\x10\x14\x00\x00\x0c"), TLS_END, 0 },    /* Finished */
	{ S("\x16\x03\x03\x00\x10\x0b"), TLS_END, 0 },                /* Certificate */
	{ S("\x16\x03\x03\x00\x10\x00"), TLS_END, 0 },                /* any other */
	{ S("\x16\x03\x03\x00\x01\x0f"), TLS_END, 0 },
};

START_TEST(test_later)
{
	struct out o;

	check_prefixes((const uint8_t *)later[_i].in, later[_i].len, false, &o);
	ck_assert_msg(o.r.unit == later[_i].want, "%zu: %s (%s)", (size_t)_i,
	    unit_name(o.r.unit), o.r.why ? o.r.why : "");
	ck_assert_uint_eq(o.r.len, later[_i].ulen);
}
END_TEST

/* The first unit must be a ClientHello: a crafted handshake record opens nothing. */
START_TEST(test_first_not_hello)
{
	expect_error((const uint8_t *)"\x16\x03\x01\x00\x04\x10\x00\x00\x00", 9, true,
	    "first handshake message is not a ClientHello");
	expect_error((const uint8_t *)"\x16\x03\x01\x00\x04\x02\x00\x00\x00", 9, true,
	    "not a ClientHello");
	/* decided by the message type alone */
	expect_error((const uint8_t *)"\x16\x03\x01\x00\x04\x14", 6, true, "not a ClientHello");
}
END_TEST

/* --- ChangeCipherSpec records before the first ClientHello ----------------------------- */

static const struct sn_entry other_sn = { 0, S("other.example") };

static const struct {
	const char *what;
	size_t nccs;                /* CCS records first */
	const struct sn_entry *sn;  /* the hello's name; NULL: example.com */
	size_t cut;                 /* 0: the hello in one record; else cut there in two */
	bool no_hello;              /* after goes right after the CCS records */
	const char *after;          /* bytes after (the hello, or the CCS records) */
	size_t after_len;
	enum tls_unit want;
	const char *why;            /* ERROR: a part of the reason */
} ccs_first[] = {
	{ "CCS, hello", 1, NULL, 0, false, NULL, 0, TLS_HELLO, NULL },
	{ "CCS, hello naming another host", 1, &other_sn, 0, false, NULL, 0, TLS_HELLO, NULL },
	{ "three CCS, hello", 3, NULL, 0, false, NULL, 0, TLS_HELLO, NULL },
	{ "three CCS, hello naming another host", 3, &other_sn, 0, false, NULL, 0, TLS_HELLO,
	    NULL },
	{ "CCS, hello over two records", 1, NULL, 4, false, NULL, 0, TLS_HELLO, NULL },
	{ "CCS, hello over two records, another host", 2, &other_sn, 30, false, NULL, 0,
	    TLS_HELLO, NULL },
	{ "CCS, hello, CCS, data: the hello's unit ends with it", 1, NULL, 0, false,
	    S("\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x01\x00"), TLS_HELLO, NULL },
	{ "CCS, alert", 1, NULL, 0, true, S("\x15\x03\x03\x00\x02\x01\x00"), TLS_ERROR,
	    "alert before the ClientHello" },
	{ "CCS, application data", 2, NULL, 0, true, S("\x17\x03\x03\x00\x01\x00"),
	    TLS_ERROR, "application data before the ClientHello" },
	{ "CCS, heartbeat", 1, NULL, 0, true, S("\x18\x03\x03\x00\x03\x01\x00\x00"),
	    TLS_ERROR, "before the ClientHello" },
	{ "CCS, an unknown type", 1, NULL, 0, true, S("\x00\x03\x03\x00\x01\x00"), TLS_ERROR,
	    "before the ClientHello" },
	{ "CCS, a CCS of value 2", 1, NULL, 0, true, S("\x14\x03\x03\x00\x01\x02"),
	    TLS_ERROR, "ChangeCipherSpec value is not 1" },
	{ "CCS, a handshake message that is not a ClientHello", 1, NULL, 0, true,
	    S("\x16\x03\x03\x00\x04\x10\x00\x00\x00"), TLS_ERROR, "not a ClientHello" },
	{ "CCS, an empty handshake record", 1, NULL, 0, true, S("\x16\x03\x03\x00\x00"),
	    TLS_ERROR, "empty handshake record" },
	{ "CCS, junk", 1, NULL, 0, true, S("GET / HTTP/1.1\r\n"), TLS_ERROR, NULL },
};

START_TEST(test_ccs_first)
{
	struct spec sp = { .sid = 32 };
	static struct wr stream;
	size_t i, hlen = 0;
	struct out o;

	sp.sn = ccs_first[_i].sn;
	sp.nsn = sp.sn != NULL ? 1 : 0;
	stream.len = 0;
	for (i = 0; i < ccs_first[_i].nccs; i++)
		w_bytes(&stream, S("\x14\x03\x03\x00\x01\x01"));
	if (!ccs_first[_i].no_hello) {
		build_msg(&sp, &msgbuf);
		wrap(msgbuf.b, msgbuf.len, &ccs_first[_i].cut, ccs_first[_i].cut ? 1 : 0, 0,
		    &recbuf);
		w_bytes(&stream, recbuf.b, recbuf.len);
		hlen = stream.len;
	}
	if (ccs_first[_i].after != NULL)
		w_bytes(&stream, ccs_first[_i].after, ccs_first[_i].after_len);

	if (ccs_first[_i].want == TLS_ERROR) {
		expect_error(stream.b, stream.len, true, ccs_first[_i].why);
		return;
	}
	/* Split at every byte (as over reads): NEED_MORE until the hello is whole. */
	if (ccs_first[_i].after == NULL)
		check_hello_splits(stream.b, stream.len, true,
		    sp.sn != NULL ? sp.sn->name : "example.com");
	check_prefixes(stream.b, stream.len, true, &o);
	ck_assert_msg(o.r.unit == TLS_HELLO, "%s: %s (%s)", ccs_first[_i].what,
	    unit_name(o.r.unit), o.r.why ? o.r.why : "");
	/* The unit covers the CCS records and the hello: they are released together. */
	ck_assert_uint_eq(o.r.len, hlen);
	ck_assert(o.r.has_sni);
	ck_assert_str_eq(o.r.sni, sp.sn != NULL ? sp.sn->name : "example.com");
	/* Only on the first call: later, a CCS is a unit of its own. */
	scan_checked(stream.b, stream.len, false, &o);
	ck_assert_int_eq(o.r.unit, TLS_PASS);
	ck_assert_uint_eq(o.r.len, 6);
}
END_TEST

/* Many CCS records before the hello: each is walked (the guard bounds what it holds). */
START_TEST(test_ccs_many)
{
	struct spec sp = { .sid = 32 };
	static struct wr stream;
	size_t i, n = 1000;
	struct out o;

	stream.len = 0;
	for (i = 0; i < n; i++)
		w_bytes(&stream, S("\x14\x03\x01\x00\x01\x01"));
	scan_checked(stream.b, stream.len, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_NEED_MORE);
	build(&sp);
	w_bytes(&stream, recbuf.b, recbuf.len);
	expect_hello(stream.b, stream.len, true, "example.com", &o);
	ck_assert_uint_eq(o.r.len, 6 * n + recbuf.len);
}
END_TEST

/* A stream: hello, CCS, a second hello (after a HelloRetryRequest), application data. */
START_TEST(test_stream)
{
	struct spec s1 = { .sid = 32 };
	struct sn_entry e2 = { 0, S("other.example") };
	struct spec s2 = { .sid = 32, .sn = &e2, .nsn = 1 };
	static struct wr stream;
	size_t off = 0, h1, h2, cut = 4;
	const char *want[] = { "example.com", "other.example" };
	enum tls_unit units[8];
	char snis[2][EGRESS_HOST_MAX + 1];
	int n = 0, nh = 0, step;
	struct out o;
	bool first = true;

	stream.len = 0;
	build(&s1);
	w_bytes(&stream, recbuf.b, recbuf.len);
	h1 = recbuf.len;
	w_bytes(&stream, S("\x14\x03\x03\x00\x01\x01"));
	build_msg(&s2, &msgbuf);
	wrap(msgbuf.b, msgbuf.len, &cut, 1, 0, &recbuf);     /* CH2 over two records */
	w_bytes(&stream, recbuf.b, recbuf.len);
	h2 = recbuf.len;
	w_bytes(&stream, S("\x17\x03\x03\x00\x05hello"));

	/* Bound: each step takes len > 0 bytes or stops. */
	for (step = 0; step < NELEM(units); step++) {
		scan_checked(stream.b + off, stream.len - off, first, &o);
		units[n++] = o.r.unit;
		if (o.r.unit == TLS_HELLO) {
			ck_assert_uint_eq(o.r.len, nh == 0 ? h1 : h2);
			ck_assert_int_lt(nh, 2);
			strcpy(snis[nh++], o.r.sni);
		}
		if (o.r.unit != TLS_HELLO && o.r.unit != TLS_PASS)
			break;
		/* every later unit also split at every byte */
		check_prefixes(stream.b + off, o.r.len, first, &o);
		off += o.r.len;
		first = false;
	}
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(units[0], TLS_HELLO);
	ck_assert_int_eq(units[1], TLS_PASS);
	ck_assert_int_eq(units[2], TLS_HELLO);
	ck_assert_int_eq(units[3], TLS_END);
	ck_assert_str_eq(snis[0], want[0]);
	ck_assert_str_eq(snis[1], want[1]);
}
END_TEST

/* What may follow a hello in the same buffer, and what may not share its records. */
START_TEST(test_boundaries)
{
	struct spec s = { .sid = 32 };
	size_t hlen, cut = 20;
	struct out o;

	/* followed by other records: HELLO covers only its own */
	build(&s);
	hlen = recbuf.len;
	w_bytes(&recbuf, S("\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x02xy"));
	scan_checked(recbuf.b, recbuf.len, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_HELLO);
	ck_assert_uint_eq(o.r.len, hlen);
	/* followed by a second hello: still only the first */
	build(&s);
	tmpbuf.len = 0;
	w_bytes(&tmpbuf, recbuf.b, recbuf.len);
	w_bytes(&tmpbuf, recbuf.b, recbuf.len);
	scan_checked(tmpbuf.b, 2 * recbuf.len, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_HELLO);
	ck_assert_uint_eq(o.r.len, recbuf.len);

	/* coalesced with another handshake message in its last record: refused */
	build_msg(&s, &msgbuf);
	w_bytes(&msgbuf, S("\x10\x00\x00\x00"));
	wrap(msgbuf.b, msgbuf.len, NULL, 0, 0, &recbuf);
	expect_error(recbuf.b, recbuf.len, true, "coalesced");
	/* decided as soon as the record header says so */
	scan_checked(recbuf.b, 9, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_ERROR);
	wrap(msgbuf.b, msgbuf.len, &cut, 1, 0, &recbuf);
	expect_error(recbuf.b, recbuf.len, true, "coalesced");

	/* a record of another type inside the hello: refused */
	build_msg(&s, &msgbuf);
	wrap(msgbuf.b, cut, NULL, 0, 0, &recbuf);
	w_bytes(&recbuf, S("\x14\x03\x03\x00\x01\x01"));
	expect_error(recbuf.b, recbuf.len, true, "record of another type");
	wrap(msgbuf.b, cut, NULL, 0, 0, &recbuf);
	w_bytes(&recbuf, S("\x17\x03\x03\x00\x01\x01"));
	expect_error(recbuf.b, recbuf.len, false, "record of another type");
	/* and an empty handshake record inside it */
	wrap(msgbuf.b, cut, NULL, 0, 0, &recbuf);
	w_bytes(&recbuf, S("\x16\x03\x03\x00\x00"));
	expect_error(recbuf.b, recbuf.len, true, "empty handshake record");
}
END_TEST

/* --- real hellos captured from clients (tests/data/tls/README.md) -------------------- */

static const struct {
	const char *file;
	const char *sni;            /* NULL: none */
	size_t records;
} captured[] = {
	{ "curl-tls13.bin", "curl13.example.test", 1 },
	{ "curl-tls12.bin", "curl12.example.test", 1 },
	{ "openssl-default.bin", "openssl.example.test", 1 },
	{ "openssl-tls12.bin", "openssl12.example.test", 1 },
	{ "openssl-ffdhe8192.bin", "bigshare.example.test", 1 },
	{ "openssl-alpn-20k.bin", "large.example.test", 2 },
	{ "openssl-nosni.bin", NULL, 1 },
	{ "python-ssl.bin", "python.example.test", 1 },
};

static size_t
read_vector(const char *name, uint8_t *buf, size_t cap)
{
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/data/tls/%s", TOP_SRCDIR, name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	n = fread(buf, 1, cap, f);
	ck_assert(!ferror(f));
	ck_assert_msg(feof(f) || fgetc(f) == EOF, "%s larger than %zu bytes", path, cap);
	fclose(f);
	return n;
}

START_TEST(test_captured)
{
	static struct wr v;
	size_t off, nrec = 0;
	struct out o;

	v.len = read_vector(captured[_i].file, v.b, W_MAX);
	ck_assert_uint_gt(v.len, 0);
	for (off = 0; off + 5 <= v.len; nrec++)
		off += 5 + ((size_t)v.b[off + 3] << 8 | v.b[off + 4]);
	ck_assert_uint_eq(off, v.len);
	ck_assert_uint_eq(nrec, captured[_i].records);

	expect_hello(v.b, v.len, true, captured[_i].sni, &o);
	ck_assert(!o.r.ech);
	check_hello_splits(v.b, v.len, true, captured[_i].sni);
	/* as a second hello on a later call */
	expect_hello(v.b, v.len, false, captured[_i].sni, &o);
	/* with the client's next records behind it */
	memcpy(v.b + v.len, "\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x01", 11);
	scan_checked(v.b, v.len + 11, true, &o);
	ck_assert_int_eq(o.r.unit, TLS_HELLO);
	ck_assert_uint_eq(o.r.len, v.len);
	/* with a ChangeCipherSpec before it: still inspected, its name reported */
	memmove(v.b + 6, v.b, v.len);
	memcpy(v.b, "\x14\x03\x03\x00\x01\x01", 6);
	expect_hello(v.b, v.len + 6, true, captured[_i].sni, &o);
}
END_TEST

/* The captured single-record hellos cut into two records at every offset. */
START_TEST(test_captured_records)
{
	static struct wr v;
	size_t cut, mlen;
	struct out o;

	if (captured[_i].records != 1)
		return;
	v.len = read_vector(captured[_i].file, v.b, W_MAX);
	mlen = v.len - 5;
	for (cut = 1; cut < mlen; cut++) {
		wrap(v.b + 5, mlen, &cut, 1, 0, &recbuf);
		expect_hello(recbuf.b, recbuf.len, true, captured[_i].sni, &o);
	}
}
END_TEST

/* --- the server's answer: HelloRetryRequest or not ------------------------------------- */

static const struct {
	const char *what;
	int random_is_hrr;   /* 1: the HRR constant as random */
	uint8_t type;        /* record type */
	uint8_t msg;         /* handshake message type */
	size_t len;          /* bytes given */
	int want;
} hrr_cases[] = {
	{ "HelloRetryRequest", 1, 0x16, 0x02, 43, 1 },
	{ "HelloRetryRequest with more bytes", 1, 0x16, 0x02, 60, 1 },
	{ "ServerHello", 0, 0x16, 0x02, 43, 0 },
	{ "HRR random but not a ServerHello", 1, 0x16, 0x0b, 43, 0 },
	{ "alert record", 1, 0x15, 0x02, 43, 0 },
	{ "42 bytes of a HRR: not known yet", 1, 0x16, 0x02, 42, -1 },
	{ "5 bytes of a ServerHello: not known yet", 0, 0x16, 0x02, 5, -1 },
	{ "6 bytes, not a ServerHello: known", 0, 0x16, 0x0b, 6, 0 },
	{ "nothing yet", 0, 0x16, 0x02, 0, -1 },
	{ "first byte not handshake: known at once", 0, 0x17, 0x02, 1, 0 },
};

START_TEST(test_server_hrr)
{
	static const uint8_t hrr_random[32] = {
		0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65,
		0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2,
		0xc8, 0xa8, 0x33, 0x9c,
	};
	uint8_t buf[64];

	memset(buf, 0x42, sizeof(buf));
	buf[0] = hrr_cases[_i].type;
	buf[1] = 0x03;
	buf[2] = 0x03;
	buf[3] = 0x00;
	buf[4] = 0x3a;
	buf[5] = hrr_cases[_i].msg;
	buf[6] = 0x00;
	buf[7] = 0x00;
	buf[8] = 0x36;
	buf[9] = 0x03;
	buf[10] = 0x03;
	if (hrr_cases[_i].random_is_hrr)
		memcpy(buf + 11, hrr_random, sizeof(hrr_random));
	ck_assert_msg(tls_server_hrr(buf, hrr_cases[_i].len) == hrr_cases[_i].want,
	    "%s: expected %d", hrr_cases[_i].what, hrr_cases[_i].want);
}
END_TEST

static Suite *
tls_suite(void)
{
	Suite *s = suite_create("tls");
	TCase *tc;

#define LOOP_CASE(name, fn, table) do { \
		tc = tcase_create(name); \
		tcase_add_loop_test(tc, fn, 0, NELEM(table)); \
		tcase_set_timeout(tc, 120); \
		suite_add_tcase(s, tc); \
	} while (0)
#define ONE_CASE(name, fn) do { \
		tc = tcase_create(name); \
		tcase_add_test(tc, fn); \
		tcase_set_timeout(tc, 120); \
		suite_add_tcase(s, tc); \
	} while (0)

	ONE_CASE("protocol-notes 72-byte vector and its two-record split", test_notes_vector);
	LOOP_CASE("whole hello, every proper prefix NEED_MORE", test_split_bytes, hello_specs);
	LOOP_CASE("two records cut at every offset", test_split_two_records, hello_specs);
	ONE_CASE("three records cut at every pair of offsets", test_split_three_records);
	ONE_CASE("one record per message byte", test_one_byte_records);
	ONE_CASE("oversized: EGRESS_TLS_HELLO_MAX accepted, one more refused", test_oversized);
	LOOP_CASE("length fields one off and far off", test_lengths, lengths);
	ONE_CASE("body truncated at every offset", test_truncated);
	LOOP_CASE("fields out of range inside agreeing containers", test_fields, fields);
	LOOP_CASE("extensions: absent, ECH, duplicates, malformed server_name", test_extensions,
	    exts);
	LOOP_CASE("server_name entries: two host names, unknown types", test_entries, entries);
	LOOP_CASE("host names: literals, trailing dot, bytes outside LDH, case", test_names,
	    names);
	ONE_CASE("host names: 253/254 octets, 63/64-octet labels", test_name_lengths);
	LOOP_CASE("first bytes: not TLS, SSLv2, unsound record headers", test_starts, starts);
	ONE_CASE("SSLv2 hello reason", test_sslv2_why);
	LOOP_CASE("later units: CCS, end of inspection", test_later, later);
	ONE_CASE("first unit must be a ClientHello", test_first_not_hello);
	LOOP_CASE("ChangeCipherSpec before the first ClientHello", test_ccs_first, ccs_first);
	ONE_CASE("a thousand ChangeCipherSpec records before the first ClientHello",
	    test_ccs_many);
	ONE_CASE("stream: hello, CCS, second hello, application data", test_stream);
	ONE_CASE("what may follow a hello, what may not share its records", test_boundaries);
	LOOP_CASE("captured hellos: whole, every prefix, followed", test_captured, captured);
	LOOP_CASE("captured hellos cut into two records at every offset",
	    test_captured_records, captured);
	LOOP_CASE("the server's answer: HelloRetryRequest or not", test_server_hrr, hrr_cases);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tls_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
