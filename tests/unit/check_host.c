/*
 * check_host.c: unit tests for host_parse(), the one place every host (policy field,
 * request target, SOCKS name, SNI) is turned into its canonical spelling or refused as
 * bad-host (SPEC "Policy language": lower case, one trailing dot removed, A-labels only,
 * labels 1..63, names <= 253, LDH, IPv4 only as four decimal octets without leading zeros,
 * IPv6 in any RFC 4291 spelling written back per RFC 5952, zone ids refused).
 *
 * Every input is copied into a heap buffer of exactly its length (no terminating NUL), so
 * that a read past `len` is an ASan error in --enable-asan builds. Every accepted host is
 * parsed a second time from its canonical text, which must be a fixed point.
 */
#include "config.h"

#include <check.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy.h"

#define LEN(lit) (sizeof(lit) - 1)

/* Renders untrusted bytes for a failure message: printable ASCII as is, the rest \xNN. */
static const char *
show(const char *s, size_t len, char *buf, size_t cap)
{
	size_t o = 0, i;

	for (i = 0; i < len && o + 8 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/* A copy with no slack: host_parse must never look at s[len]. */
static char *
exact_copy(const char *s, size_t len)
{
	char *p = malloc(len == 0 ? 1 : len);

	ck_assert_ptr_nonnull(p);
	if (len > 0)
		memcpy(p, s, len);
	return p;
}

static int
parse_exact(const char *s, size_t len, struct host *h, const char **why)
{
	char *p = exact_copy(s, len);
	int r;

	memset(h, 0xa5, sizeof(*h));    /* garbage: host_parse must set everything */
	r = host_parse(p, len, h, why);
	free(p);
	return r;
}

/* Refused as bad-host, with a reason. */
static void
expect_bad(const char *s, size_t len)
{
	struct host h;
	const char *why = NULL;
	char b[256];
	int r = parse_exact(s, len, &h, &why);

	ck_assert_msg(r == -1, "\"%s\" (len %zu) accepted as \"%s\", expected bad-host",
	    show(s, len, b, sizeof(b)), len, r == 0 ? h.name : "?");
	ck_assert_msg(why != NULL && why[0] != '\0', "\"%s\" refused without a reason",
	    show(s, len, b, sizeof(b)));
}

/* Accepted as kind with canonical text canon; the canonical text is a fixed point. */
static void
expect_ok(const char *s, size_t len, enum host_kind kind, const char *canon, struct host *out)
{
	struct host h, again;
	const char *why = NULL;
	char b[256];
	int r = parse_exact(s, len, &h, &why);

	ck_assert_msg(r == 0, "\"%s\" (len %zu) refused (%s), expected \"%s\"",
	    show(s, len, b, sizeof(b)), len, why != NULL ? why : "no reason", canon);
	ck_assert_msg(h.kind == kind, "\"%s\": kind %d, expected %d",
	    show(s, len, b, sizeof(b)), (int)h.kind, (int)kind);
	ck_assert_msg(memchr(h.name, '\0', sizeof(h.name)) != NULL,
	    "\"%s\": canonical text not terminated", show(s, len, b, sizeof(b)));
	ck_assert_msg(strcmp(h.name, canon) == 0, "\"%s\": canonical \"%s\", expected \"%s\"",
	    show(s, len, b, sizeof(b)), h.name, canon);

	r = parse_exact(h.name, strlen(h.name), &again, &why);
	ck_assert_msg(r == 0 && again.kind == h.kind && strcmp(again.name, h.name) == 0,
	    "canonical \"%s\" of \"%s\" is not a fixed point", h.name,
	    show(s, len, b, sizeof(b)));
	if (kind != HOST_NAME)
		ck_assert_msg(addr_equal(&again.addr, &h.addr),
		    "canonical \"%s\" parses to another address", h.name);
	if (out != NULL)
		*out = h;
}

static void
expect_name(const char *s, const char *canon)
{
	expect_ok(s, strlen(s), HOST_NAME, canon, NULL);
}

static void
expect_v6(const char *s, const char *canon, const uint8_t *bytes)
{
	struct host h;
	uint8_t want[16];
	char b[128];

	expect_ok(s, strlen(s), HOST_IPV6, canon, &h);
	ck_assert_int_eq(h.addr.family, AF_INET6);
	if (bytes == NULL) {
		/* The oracle is the hand-written canonical text, not the input. */
		ck_assert_msg(inet_pton(AF_INET6, canon, want) == 1, "bad table row %s", canon);
		bytes = want;
	}
	ck_assert_msg(memcmp(h.addr.b, bytes, 16) == 0, "\"%s\": wrong address bytes",
	    show(s, strlen(s), b, sizeof(b)));
}

/* --- names: case folding, one trailing dot, LDH ------------------------------------- */

static const struct {
	const char *in;
	const char *canon;
} names_ok[] = {
	{ "example.com", "example.com" },
	{ "EXAMPLE.COM", "example.com" },
	{ "Example.Com", "example.com" },
	{ "eXaMpLe.CoM", "example.com" },
	{ "example.com.", "example.com" },
	{ "EXAMPLE.COM.", "example.com" },
	{ "EgReSs.ExAmPlE.", "egress.example" },
	{ "a", "a" },
	{ "A", "a" },
	{ "a.", "a" },
	{ "Z.", "z" },
	{ "a.b", "a.b" },
	{ "a.b.c.d.e.f.g.h", "a.b.c.d.e.f.g.h" },
	{ "localhost", "localhost" },
	{ "LOCALHOST.", "localhost" },
	{ "api.github.com", "api.github.com" },
	{ "API.GitHub.com", "api.github.com" },
	{ "objects.githubusercontent.com", "objects.githubusercontent.com" },
	{ "pypi.org", "pypi.org" },
	{ "files.pythonhosted.org.", "files.pythonhosted.org" },
	{ "www.example.co.uk", "www.example.co.uk" },
	{ "mirror.example.net", "mirror.example.net" },
	{ "a-b.c-d.e", "a-b.c-d.e" },
	{ "foo-bar.example", "foo-bar.example" },
	{ "a--b.example", "a--b.example" },
	{ "a---------b.example", "a---------b.example" },
	{ "x-1.y-2.z-3", "x-1.y-2.z-3" },
	{ "1example.com", "1example.com" },
	{ "3com.com", "3com.com" },
	{ "123.example", "123.example" },
	{ "0.example", "0.example" },
	{ "a1.b2.c3", "a1.b2.c3" },
	{ "A1.B2.C3.", "a1.b2.c3" },
	{ "foo.1a", "foo.1a" },
	{ "foo.a1", "foo.a1" },
	{ "example.0xg", "example.0xg" },
	{ "1.2.3.com", "1.2.3.com" },
	{ "1.2.3.4.example", "1.2.3.4.example" },
	{ "0x7f.example", "0x7f.example" },
	{ "0X7F.EXAMPLE", "0x7f.example" },
	{ "0x7f000001.example", "0x7f000001.example" },
	{ "2130706433.example", "2130706433.example" },
	{ "127.0.0.1.nip.io", "127.0.0.1.nip.io" },
	{ "10.0.0.1.sslip.io.", "10.0.0.1.sslip.io" },
	{ "0177.0.0.1.example", "0177.0.0.1.example" },
	{ "ff02.example", "ff02.example" },
	{ "fe80.example.", "fe80.example" },
	{ "abcdef.abcdef", "abcdef.abcdef" },
	{ "e", "e" },
	{ "com", "com" },
	{ "io.", "io" },
	{ "xn--bcher-kva.example", "xn--bcher-kva.example" },
	{ "XN--BCHER-KVA.EXAMPLE", "xn--bcher-kva.example" },
	{ "Xn--Bcher-Kva.Example.", "xn--bcher-kva.example" },
	{ "xn--nxasmq6b.com", "xn--nxasmq6b.com" },
	{ "xn--fiqs8s", "xn--fiqs8s" },
	{ "www.xn--fiqs8s.", "www.xn--fiqs8s" },
	{ "xn--80ak6aa92e.com", "xn--80ak6aa92e.com" },
	{ "xn--mnchen-3ya.de", "xn--mnchen-3ya.de" },
	{ "sub.xn--mnchen-3ya.xn--p1ai", "sub.xn--mnchen-3ya.xn--p1ai" },
	{ "ABCDEFGHIJKLMNOPQRSTUVWXYZ.example", "abcdefghijklmnopqrstuvwxyz.example" },
	{ "abcdefghijklmnopqrstuvwxyz0123456789.example",
	  "abcdefghijklmnopqrstuvwxyz0123456789.example" },
	{ "a-0.b-1.c-2.d-3.e-4.f-5", "a-0.b-1.c-2.d-3.e-4.f-5" },
	{ "evil.githubusercontent.com", "evil.githubusercontent.com" },
};

START_TEST(test_names_ok)
{
	expect_name(names_ok[_i].in, names_ok[_i].canon);
}
END_TEST

static const char *const names_bad[] = {
	/* empty labels and dots */
	".", "..", "...", ".example.com", "..example.com", "example.com..",
	"example.com...", "example..com", "a..b", "a...b", ".a", "a.b..", ".a.",
	/* hyphens at label edges */
	"-", "--", "-.example", "a.-.b", "-example.com", "example-.com", "example.-com",
	"example.com-", "example.com-.", "-example.com.", "a-.b", "a.b-", "a.-b", "xn--",
	"xn--.example", "a.xn--", "-a-", "a.-b-.c",
	/* underscore and other punctuation */
	"_dmarc.example.com", "exa_mple.com", "example.com_", "a_b", "_",
	"*.example.com", "*", "*.", "a.*.example", "exa*mple.com", "example.*",
	"example.com/", "example.com/path", "example.com:443", "example.com:",
	"user@example.com", "@example.com", "example.com@", "example.com%2f",
	"exa%6dple.com", "%", "exa mple.com", " example.com", "example.com ", " ",
	"a\\b.com", "a\"b.com", "a'b.com", "a?b.com", "a#b.com", "a!b.com", "a$b.com",
	"a&b.com", "a(b).com", "a+b.com", "a,b.com", "a;b.com", "a=b.com", "a<b>.com",
	"a^b.com", "a`b.com", "a{b}.com", "a|b.com", "a~b.com", "a/b.com", "a[b].com",
	"[example.com", "example.com]", "http://example.com", "example.com?x",
	/* control bytes */
	"example.com\t", "\texample.com", "exa\tmple.com", "example.com\r\n",
	"example.com\n", "exam\rple.com", "exam\x01ple.com", "\x1f" "example.com",
	"exam\x7fple.com", "\x7f", "example.com\x1b[0m", "exa\x08mple.com",
	/* non-ASCII: UTF-8 U-labels, Latin-1, full-width forms, odd dots */
	"b\xc3\xbc" "cher.example", "B\xc3\x9c" "CHER.EXAMPLE", "\xe4\xbe\x8b\xe3\x81\x88.jp",
	"\xef\xbc\xa5\xef\xbc\xb8\xef\xbc\xa1\xef\xbc\xad\xef\xbc\xb0\xef\xbc\xac\xef\xbc\xa5.com",
	"example\xe3\x80\x82" "com", "example\xef\xbc\x8e" "com", "b\xfc" "cher.example",
	"\x80" "example.com", "example.com\xff", "example.com\xc0\x80",
	"exa\xe2\x80\x8bmple.com", "\xef\xbb\xbf" "example.com", "xn--bcher-kva.\xc3\xa9",
	"\xc2\xa0" "example.com",
};

START_TEST(test_names_bad)
{
	expect_bad(names_bad[_i], strlen(names_bad[_i]));
}
END_TEST

/*
 * Every byte value at four places of a name: first octet, middle of a label, last octet
 * of a label, last octet of the input. Only letters (folded), digits, and hyphen or dot
 * where the LDH rules allow them, are accepted.
 */
static const char *const every_byte_pattern[] = {
	"\x01" "abcd.example",     /* first octet of the name */
	"ab\x01" "cd.example",     /* inside a label */
	"abcd\x01" ".example",     /* last octet of a label */
	"abcd.example\x01",        /* last octet of the input */
};

START_TEST(test_every_byte)
{
	const char *pat = every_byte_pattern[_i];
	size_t len = strlen(pat), at = (size_t)(strchr(pat, '\x01') - pat);

	for (unsigned b = 0; b < 256; b++) {
		unsigned char c = (unsigned char)b;
		char in[32], canon[32];
		bool ok;

		memcpy(in, pat, len);
		in[at] = (char)c;
		memcpy(canon, in, len);
		canon[len] = '\0';
		if (c >= 'A' && c <= 'Z')
			canon[at] = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
			ok = true;
		else if (c == '-')
			ok = _i == 1;
		else if (c == '.')
			ok = _i == 1 || _i == 3;
		else
			ok = false;
		if (c == '.' && _i == 3)
			canon[len - 1] = '\0';     /* the one trailing dot goes */
		if (ok)
			expect_ok(in, len, HOST_NAME, canon, NULL);
		else
			expect_bad(in, len);
	}
}
END_TEST

/* --- lengths: labels 1..63, names <= 253, input <= EGRESS_HOST_INPUT_MAX ----------------- */

/* Writes n copies of c at p, returns p + n. */
static char *
fill(char *p, char c, size_t n)
{
	memset(p, c, n);
	return p + n;
}

/* A name of labels of the given lengths, of c, dot-separated; returns its length. */
static size_t
build_name(char *out, size_t cap, const size_t *labels, size_t n, char c)
{
	char *p = out;

	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_lt((size_t)(p - out) + labels[i] + 2, cap);
		if (i > 0)
			*p++ = '.';
		p = fill(p, c, labels[i]);
	}
	*p = '\0';
	return (size_t)(p - out);
}

START_TEST(test_label_length)
{
	char in[512], canon[512];
	size_t len;

	/* 63 octets: fine, first, middle or last, any case, with a trailing dot */
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 7 }, 2, 'a');
	expect_ok(in, len, HOST_NAME, in, NULL);
	len = build_name(in, sizeof(in), (const size_t[]){ 3, 63, 3 }, 3, 'b');
	expect_ok(in, len, HOST_NAME, in, NULL);
	len = build_name(in, sizeof(in), (const size_t[]){ 7, 63 }, 2, 'c');
	expect_ok(in, len, HOST_NAME, in, NULL);
	len = build_name(canon, sizeof(canon), (const size_t[]){ 63, 63 }, 2, 'z');
	build_name(in, sizeof(in), (const size_t[]){ 63, 63 }, 2, 'Z');
	in[len] = '.';
	expect_ok(in, len + 1, HOST_NAME, canon, NULL);
	len = build_name(in, sizeof(in), (const size_t[]){ 63 }, 1, '7');
	memcpy(in, "x", 1);                /* not all digits: a name, not an address */
	expect_ok(in, len, HOST_NAME, in, NULL);
	/* a 63-octet label of mixed LDH */
	len = build_name(in, sizeof(in), (const size_t[]){ 63 }, 1, '-');
	in[0] = 'a';
	in[62] = '9';
	expect_ok(in, len, HOST_NAME, in, NULL);

	/* 64 octets: refused wherever the label sits */
	len = build_name(in, sizeof(in), (const size_t[]){ 64, 7 }, 2, 'a');
	expect_bad(in, len);
	len = build_name(in, sizeof(in), (const size_t[]){ 3, 64, 3 }, 3, 'a');
	expect_bad(in, len);
	len = build_name(in, sizeof(in), (const size_t[]){ 7, 64 }, 2, 'a');
	expect_bad(in, len);
	in[len] = '.';
	expect_bad(in, len + 1);
	len = build_name(in, sizeof(in), (const size_t[]){ 64 }, 1, 'a');
	expect_bad(in, len);
	len = build_name(in, sizeof(in), (const size_t[]){ 200 }, 1, 'a');
	expect_bad(in, len);
}
END_TEST

START_TEST(test_name_length)
{
	char in[2048], canon[2048];
	size_t len;

	/* 253 octets: 63.63.63.61 */
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 63, 63, 61 }, 4, 'a');
	ck_assert_uint_eq(len, 253);
	expect_ok(in, len, HOST_NAME, in, NULL);
	/* ... plus the root dot is still 253 */
	in[len] = '.';
	in[len + 1] = '\0';
	len = build_name(canon, sizeof(canon), (const size_t[]){ 63, 63, 63, 61 }, 4, 'a');
	expect_ok(in, len + 1, HOST_NAME, canon, NULL);
	/* ... and upper case folds */
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 63, 63, 61 }, 4, 'Q');
	build_name(canon, sizeof(canon), (const size_t[]){ 63, 63, 63, 61 }, 4, 'q');
	expect_ok(in, len, HOST_NAME, canon, NULL);
	/* 127 one-octet labels: 253 */
	{
		size_t one[127];

		for (size_t i = 0; i < 127; i++)
			one[i] = 1;
		len = build_name(in, sizeof(in), one, 127, 'x');
		ck_assert_uint_eq(len, 253);
		expect_ok(in, len, HOST_NAME, in, NULL);
		/* one more octet in the first label: 254 */
		memmove(in + 1, in, len + 1);
		in[0] = 'x';
		expect_bad(in, len + 1);
	}

	/* 254 octets: 63.63.63.62, with or without the root dot */
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 63, 63, 62 }, 4, 'a');
	ck_assert_uint_eq(len, 254);
	expect_bad(in, len);
	in[len] = '.';
	expect_bad(in, len + 1);
	/* 255 and beyond */
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 63, 63, 63 }, 4, 'a');
	ck_assert_uint_eq(len, 255);
	expect_bad(in, len);
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 63, 63, 63, 63, 63, 63, 63 },
	    8, 'a');
	expect_bad(in, len);
	/* the 253 name behind two root dots */
	len = build_name(in, sizeof(in), (const size_t[]){ 63, 63, 63, 61 }, 4, 'a');
	in[len] = '.';
	in[len + 1] = '.';
	expect_bad(in, len + 2);
}
END_TEST

START_TEST(test_input_length)
{
	size_t big = 65536;
	char *in = malloc(big);
	size_t len;

	ck_assert_ptr_nonnull(in);
	/* EGRESS_HOST_INPUT_MAX + 1 and far beyond, of name bytes and of address bytes */
	memset(in, 'a', big);
	expect_bad(in, EGRESS_HOST_INPUT_MAX + 1);
	expect_bad(in, EGRESS_HOST_INPUT_MAX);
	expect_bad(in, big);
	for (size_t i = 0; i + 1 < big; i += 2)
		memcpy(in + i, "a.", 2);
	expect_bad(in, EGRESS_HOST_INPUT_MAX + 1);
	expect_bad(in, big - 1);
	memset(in, '0', big);
	expect_bad(in, EGRESS_HOST_INPUT_MAX + 1);
	in[0] = ':';
	in[1] = ':';
	expect_bad(in, EGRESS_HOST_INPUT_MAX + 1);
	/* an IPv6 literal with too many leading zeros (still under the input cap) */
	memcpy(in, "::", 2);
	memset(in + 2, '0', 100);
	memcpy(in + 102, "1", 1);
	expect_bad(in, 103);
	/* empty */
	expect_bad("", 0);
	expect_bad("example.com", 0);
	/* the same name passes once it is short */
	len = strlen("example.com");
	memcpy(in, "example.com", len);
	expect_ok(in, len, HOST_NAME, "example.com", NULL);
	free(in);
}
END_TEST

/* --- explicit lengths: embedded NUL, bytes beyond len --------------------------------- */

#define BIN(lit) lit, LEN(lit)

static const struct {
	const char *s;
	size_t len;
	enum host_kind kind;     /* 0: refused */
	const char *canon;
} binary[] = {
	{ BIN("exam\0ple.com"), 0, NULL },
	{ BIN("example.com\0"), 0, NULL },
	{ BIN("\0example.com"), 0, NULL },
	{ BIN("example.com\0.evil.net"), 0, NULL },
	{ BIN("example.com.\0"), 0, NULL },
	{ BIN("\0"), 0, NULL },
	{ BIN("\0\0\0\0"), 0, NULL },
	{ BIN("1.2.3.4\0"), 0, NULL },
	{ BIN("127.0.0.1\0.example.com"), 0, NULL },
	{ BIN("::1\0"), 0, NULL },
	{ BIN("[::1]\0"), 0, NULL },
	{ BIN("[::1\0]"), 0, NULL },
	{ BIN("fe80::1\0eth0"), 0, NULL },
	{ BIN("xn--bcher-kva\0.example"), 0, NULL },
	/* the length decides, not a terminator: only the first len bytes count */
	{ "example.comXYZ", 11, HOST_NAME, "example.com" },
	{ "example.com.evil.net", 11, HOST_NAME, "example.com" },
	{ "example.com_bad", 11, HOST_NAME, "example.com" },
	{ "example.com", 7, HOST_NAME, "example" },
	{ "Example.com..", 12, HOST_NAME, "example.com" },
	{ "1.2.3.4567", 7, HOST_IPV4, "1.2.3.4" },
	{ "1.2.3.4.", 7, HOST_IPV4, "1.2.3.4" },
	{ "::1]", 3, HOST_IPV6, "::1" },
	{ "::1%eth0", 3, HOST_IPV6, "::1" },
	{ "[::1]:443", 5, HOST_IPV6, "::1" },
	{ "2001:db8::1/32", 11, HOST_IPV6, "2001:db8::1" },
	{ "[::1]", 4, 0, NULL },
	{ "example.com", 12, 0, NULL },        /* the terminating NUL is inside len */
	{ "1.2.3.4", 8, 0, NULL },
	{ "1.2.3.45", 6, 0, NULL },            /* "1.2.3." is numeric with a trailing dot */
	{ "a-b.example", 2, 0, NULL },         /* "a-" ends with a hyphen */
};

START_TEST(test_binary)
{
	if (binary[_i].kind == 0)
		expect_bad(binary[_i].s, binary[_i].len);
	else
		expect_ok(binary[_i].s, binary[_i].len, binary[_i].kind, binary[_i].canon, NULL);
}
END_TEST

/* --- numbers: only four decimal octets without leading zeros --------------------------- */

static const struct {
	const char *in;
	uint8_t b[4];
} ipv4_ok[] = {
	{ "1.2.3.4", { 1, 2, 3, 4 } },
	{ "0.0.0.0", { 0, 0, 0, 0 } },
	{ "255.255.255.255", { 255, 255, 255, 255 } },
	{ "127.0.0.1", { 127, 0, 0, 1 } },
	{ "10.0.0.1", { 10, 0, 0, 1 } },
	{ "8.8.8.8", { 8, 8, 8, 8 } },
	{ "140.82.112.4", { 140, 82, 112, 4 } },
	{ "169.254.169.254", { 169, 254, 169, 254 } },
	{ "192.168.1.100", { 192, 168, 1, 100 } },
	{ "100.64.0.0", { 100, 64, 0, 0 } },
	{ "1.0.0.0", { 1, 0, 0, 0 } },
	{ "0.0.0.1", { 0, 0, 0, 1 } },
	{ "9.99.199.249", { 9, 99, 199, 249 } },
	{ "10.20.30.40", { 10, 20, 30, 40 } },
	{ "201.0.10.100", { 201, 0, 10, 100 } },
	{ "250.251.252.253", { 250, 251, 252, 253 } },
};

START_TEST(test_ipv4_ok)
{
	struct host h;

	expect_ok(ipv4_ok[_i].in, strlen(ipv4_ok[_i].in), HOST_IPV4, ipv4_ok[_i].in, &h);
	ck_assert_int_eq(h.addr.family, AF_INET);
	ck_assert_mem_eq(h.addr.b, ipv4_ok[_i].b, 4);
}
END_TEST

static const char *const numeric_bad[] = {
	/* the SPEC's own examples and their relatives */
	"2130706433", "0x7f.1", "0x7f000001", "0X7F000001", "0177.0.0.1", "127.1",
	"127.0.1", "1.2.3", "1.2", "1", "0", "00", "4294967295", "4294967296",
	"99999999999999999999", "1.2.3.4.5", "1.2.3.4.5.6", "01.2.3.4", "1.02.3.4",
	"1.2.03.4", "1.2.3.04", "00.0.0.0", "0.0.0.00", "000.000.000.000",
	"127.000.000.001", "017700000001", "1.2.3.256", "256.0.0.0", "1.256.0.0",
	"999.1.1.1", "1.2.3.4294967295", "1.2.3.1000",
	/* a trailing dot on a number */
	"1.2.3.4.", "127.0.0.1.", "0.0.0.0.", "2130706433.", "0x7f.", "1.",
	"255.255.255.255.", "1.2.3.4..",
	/* hex, octal and mixed forms */
	"0x7F.0.0.1", "0x7f.0.0.1", "1.2.3.0x4", "0x1.0x2.0x3.0x4", "0x0", "0x",
	"0xffffffff", "0x7f.0x1", "127.0x0.0.1", "0300.0250.0.1", "0.0.0.0x0",
	"1.2.3.0X04", "example.0x10", "a.0X10", "a.0x",
	/* a last label that is numeric makes the whole host numeric */
	"foo.123", "foo.1", "example.com.1", "localhost.1", "a.00", "a.0",
	"www.example.2130706433", "foo.123.", "a.b.c.4",
	/* empty octets, signs, spaces */
	"1.2..4", ".1.2.3.4", "1..2.3.4", "1.2.3.4/8", "+1.2.3.4", "1.2.3.+4",
	"1.2.3.-4", "-1.2.3.4", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4\t",
	/* addresses in brackets are for IPv6 only */
	"[1.2.3.4]", "[127.0.0.1]", "[2130706433]",
};

START_TEST(test_numeric_bad)
{
	expect_bad(numeric_bad[_i], strlen(numeric_bad[_i]));
}
END_TEST

/* --- IPv6: any RFC 4291 spelling, RFC 5952 text ------------------------------------ */

static const struct {
	const char *in;
	const char *canon;
} ipv6_ok[] = {
	/* the SPEC's example: one host, many spellings */
	{ "2606:4700:4700:0:0:0:0:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700::1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700:0000:0000:0000:0000:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700::0:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700:0::1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700:0:0::0:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700:0:0:0::1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700::0000:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700::0:0:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700::0:0:0:1111", "2606:4700:4700::1111" },
	{ "2606:4700:4700:00:000:0000:0:1111", "2606:4700:4700::1111" },
	{ "[2606:4700:4700::1111]", "2606:4700:4700::1111" },
	{ "[2606:4700:4700:0:0:0:0:1111]", "2606:4700:4700::1111" },
	/* upper case hex, leading zeros */
	{ "2001:DB8::1", "2001:db8::1" },
	{ "2001:Db8::1", "2001:db8::1" },
	{ "2001:0db8::0001", "2001:db8::1" },
	{ "2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1" },
	{ "2001:db8:0:0:0:0:0:1", "2001:db8::1" },
	{ "2001:db8::0:0:0:0:1", "2001:db8::1" },
	{ "[2001:DB8::1]", "2001:db8::1" },
	{ "A:B:C:D:E:F:A:B", "a:b:c:d:e:f:a:b" },
	{ "a:b:c:d:e:f:a:b", "a:b:c:d:e:f:a:b" },
	{ "ABCD:EF01:2345:6789:ABCD:EF01:2345:6789", "abcd:ef01:2345:6789:abcd:ef01:2345:6789" },
	{ "2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8::ff00:42:8329" },
	{ "FD00:0EC2:0000:0000:0000:0000:0000:0254", "fd00:ec2::254" },
	{ "2001:4860:4860:0:0:0:0:8888", "2001:4860:4860::8888" },
	/* loopback and unspecified */
	{ "::1", "::1" },
	{ "[::1]", "::1" },
	{ "0:0:0:0:0:0:0:1", "::1" },
	{ "0000:0000:0000:0000:0000:0000:0000:0001", "::1" },
	{ "::0:1", "::1" },
	{ "0::1", "::1" },
	{ "0:0::0:1", "::1" },
	{ "00:000:0000::1", "::1" },
	{ "0:0:0:0:0:0::1", "::1" },
	{ "::0:0:0:0:0:0:1", "::1" },
	{ "::0.0.0.1", "::1" },
	{ "[0:0:0:0:0:0:0:1]", "::1" },
	{ "::", "::" },
	{ "[::]", "::" },
	{ "0:0:0:0:0:0:0:0", "::" },
	{ "::0", "::" },
	{ "0::", "::" },
	{ "0000::0000", "::" },
	{ "0:0:0:0::0:0:0", "::" },
	{ "::0.0.0.0", "::" },
	/* RFC 5952 4.2: longest run, first on a tie, never a single group */
	{ "1:0:0:1:0:0:0:1", "1:0:0:1::1" },
	{ "1:0:0:0:1:0:0:1", "1::1:0:0:1" },
	{ "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1" },
	{ "2001:db8::aaaa:0:0:1", "2001:db8::aaaa:0:0:1" },
	{ "0:0:1:0:0:1:0:0", "::1:0:0:1:0:0" },
	{ "1:0:0:2:0:0:0:0", "1:0:0:2::" },
	{ "0:0:0:1::", "0:0:0:1::" },
	{ "::1:0:0:0", "::1:0:0:0" },
	{ "1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7" },
	{ "1::2:3:4:5:6:7", "1:0:2:3:4:5:6:7" },
	{ "1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0" },
	{ "::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8" },
	{ "1:2:3:4:5:6::8", "1:2:3:4:5:6:0:8" },
	{ "1:2:3:4:5::7:8", "1:2:3:4:5:0:7:8" },
	{ "1:2:3:4:5::8", "1:2:3:4:5::8" },
	{ "2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1" },
	{ "2001:db8:0:0:0:0:2:1", "2001:db8::2:1" },
	{ "2001:db8::0:1", "2001:db8::1" },
	{ "0:1:0:1:0:1:0:1", "0:1:0:1:0:1:0:1" },
	{ "1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0" },
	{ "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8" },
	{ "1:0:0:0:0:0:0:0", "1::" },
	{ "1::", "1::" },
	{ "1::0", "1::" },
	{ "fe80::1", "fe80::1" },
	{ "FE80:0:0:0:0:0:0:1", "fe80::1" },
	{ "fe80:0000::0001", "fe80::1" },
	{ "[FE80::1]", "fe80::1" },
	{ "fe80::", "fe80::" },
	{ "ff02::1", "ff02::1" },
	{ "FF02:0000::0001", "ff02::1" },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
	{ "FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:255.255.255.255",
	  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
	/* embedded dotted quads: IPv4-mapped keeps them (RFC 5952 s5), others are hex */
	{ "::ffff:1.2.3.4", "::ffff:1.2.3.4" },
	{ "::FFFF:1.2.3.4", "::ffff:1.2.3.4" },
	{ "::ffff:102:304", "::ffff:1.2.3.4" },
	{ "0:0:0:0:0:ffff:1.2.3.4", "::ffff:1.2.3.4" },
	{ "0:0:0:0:0:FFFF:0102:0304", "::ffff:1.2.3.4" },
	{ "[::ffff:1.2.3.4]", "::ffff:1.2.3.4" },
	{ "::ffff:127.0.0.1", "::ffff:127.0.0.1" },
	{ "::ffff:7f00:1", "::ffff:127.0.0.1" },
	{ "::ffff:a9fe:a9fe", "::ffff:169.254.169.254" },
	{ "::ffff:0:0", "::ffff:0.0.0.0" },
	{ "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304" },
	{ "2001:db8:122:344::192.0.2.33", "2001:db8:122:344::c000:221" },
	{ "2002:7f00:0001::", "2002:7f00:1::" },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:4136:e378:8000:63bf:80ff:fffe" },
	{ "fd00:ec2::254", "fd00:ec2::254" },
	{ "64:ff9b::7f00:1", "64:ff9b::7f00:1" },
	{ "2001:4860:4860::8888", "2001:4860:4860::8888" },
};

START_TEST(test_ipv6_ok)
{
	expect_v6(ipv6_ok[_i].in, ipv6_ok[_i].canon, NULL);
}
END_TEST

/* Bytes written out by hand, so that the address is not only checked through libc. */
static const struct {
	const char *in;
	const char *canon;
	uint8_t b[16];
} ipv6_bytes[] = {
	{ "2606:4700:4700:0:0:0:0:1111", "2606:4700:4700::1111",
	  { 0x26, 0x06, 0x47, 0x00, 0x47, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x11 } },
	{ "[::1]", "::1", { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 } },
	{ "::", "::", { 0 } },
	{ "::ffff:1.2.3.4", "::ffff:1.2.3.4",
	  { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4 } },
	{ "1:0:0:1:0:0:0:1", "1:0:0:1::1",
	  { 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1 } },
	{ "FE80::ABCD:EF01", "fe80::abcd:ef01",
	  { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd, 0xef, 0x01 } },
	{ "2001:db8:122:344::192.0.2.33", "2001:db8:122:344::c000:221",
	  { 0x20, 0x01, 0x0d, 0xb8, 0x01, 0x22, 0x03, 0x44, 0, 0, 0, 0, 192, 0, 2, 33 } },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.254",
	  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
	  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xfe } },
};

START_TEST(test_ipv6_bytes)
{
	expect_v6(ipv6_bytes[_i].in, ipv6_bytes[_i].canon, ipv6_bytes[_i].b);
}
END_TEST

/*
 * RFC 5952 s5 keeps a dotted quad only where the prefix says an IPv4 is embedded; the
 * deprecated IPv4-compatible form (RFC 4291 s2.5.5.1) gives no such signal for ::1:2, so
 * its text is plain hextets, like every other address.
 */
static const struct {
	const char *in;
	const char *canon;
} ipv6_compat_text[] = {
	{ "::1:2", "::1:2" },
	{ "0:0:0:0:0:0:1:2", "::1:2" },
	{ "::0.1.0.2", "::1:2" },
	{ "::1:0", "::1:0" },
	{ "::1.2.3.4", "::102:304" },
	{ "::8.8.8.8", "::808:808" },
	{ "::255.255.0.0", "::ffff:0" },
	{ "::0.0.1.0", "::100" },
	{ "::ffff", "::ffff" },
	{ "::2", "::2" },
};

START_TEST(test_ipv6_compat_text)
{
	expect_v6(ipv6_compat_text[_i].in, ipv6_compat_text[_i].canon, NULL);
}
END_TEST

static const char *const ipv6_bad[] = {
	/* zone identifiers in every spelling */
	"fe80::1%eth0", "fe80::1%25eth0", "fe80::1%", "fe80::1%1", "[fe80::1%eth0]",
	"[fe80::1%25eth0]", "::1%lo", "::ffff:1.2.3.4%eth0", "fe80::1%25", "%25",
	/* too many, too few, too long groups */
	":::", "::::", "1:::2", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8::",
	"::1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::8", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:",
	":1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:", "12345::", "::12345", "00000::1",
	"1::2::3", "::1::", ":1::", "1::2:", ":", "1:", ":1", "1:2",
	/* bad digits */
	"g::1", "::g", "1:2:3:4:5:6:7:g", "::-1", "::+1", "0x1::", "::0x1", "1.0::",
	"::1 ", " ::1", "::1\t", ":: 1",
	/* bad embedded IPv4 */
	"::1.2.3.04", "::ffff:01.2.3.4", "::ffff:1.2.3", "::ffff:1.2.3.4.5",
	"::ffff:256.1.1.1", "::1.2.3.4:5", "1.2.3.4::", "::ffff:1.2.3.4.",
	"1:2:3:4:5:6:7:1.2.3.4", "::1.2.3", "::ffff:0x7f.0.0.1", "::ffff:127.1",
	"::1.2.3.4.5", "::ffff:1.2.3.4:1",
	/* brackets */
	"[1.2.3.4]", "[::1", "::1]", "[]", "[example.com]", "[", "]", "[[::1]]",
	"[::1]]", "[[::1]", "[::1]:443", "[::1].", "[ ::1]", "[::1 ]", "[:]", "[::1]x",
	"x[::1]", "[::1]/128", "[]]", "[[]", "][", "]::1[", "[localhost]", "[1]",
	/* other junk that carries a colon */
	"::1.", "::1/128", "2001:db8::/32", "::1:", "fe80::1/64", "::1#", "::1@x",
	"example.com:443", "http://[::1]", "v6::1",
};

START_TEST(test_ipv6_bad)
{
	expect_bad(ipv6_bad[_i], strlen(ipv6_bad[_i]));
}
END_TEST

/* --- the reason is always set on failure -------------------------------------------- */

START_TEST(test_why)
{
	struct host h;
	const char *why = "untouched";

	/* a refusal replaces a stale reason ... */
	ck_assert_int_eq(host_parse("a..b", 4, &h, &why), -1);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_ne(why, "untouched");
	/* ... and each kind of refusal has one */
	why = NULL;
	ck_assert_int_eq(host_parse("127.1", 5, &h, &why), -1);
	ck_assert_ptr_nonnull(why);
	why = NULL;
	ck_assert_int_eq(host_parse("[::1", 4, &h, &why), -1);
	ck_assert_ptr_nonnull(why);
	why = NULL;
	ck_assert_int_eq(host_parse("", 0, &h, &why), -1);
	ck_assert_ptr_nonnull(why);
	/* success needs no reason and leaves a usable host */
	why = NULL;
	ck_assert_int_eq(host_parse("Example.COM.", 12, &h, &why), 0);
	ck_assert_int_eq(h.kind, HOST_NAME);
	ck_assert_str_eq(h.name, "example.com");
}
END_TEST

static Suite *
host_suite(void)
{
	Suite *s = suite_create("host");
	TCase *tc;

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define LOOP_CASE(name, fn, table) do { \
		tc = tcase_create(name); \
		tcase_add_loop_test(tc, fn, 0, NELEM(table)); \
		suite_add_tcase(s, tc); \
	} while (0)
#define ONE_CASE(name, fn) do { \
		tc = tcase_create(name); \
		tcase_add_test(tc, fn); \
		suite_add_tcase(s, tc); \
	} while (0)

	LOOP_CASE("names: case folding and the trailing dot", test_names_ok, names_ok);
	LOOP_CASE("names: LDH, dots, non-ASCII and control bytes refused", test_names_bad,
	    names_bad);
	LOOP_CASE("names: every byte value at four positions", test_every_byte,
	    every_byte_pattern);
	ONE_CASE("names: labels 1..63 octets", test_label_length);
	ONE_CASE("names: at most 253 octets", test_name_length);
	ONE_CASE("input: empty and over EGRESS_HOST_INPUT_MAX", test_input_length);
	LOOP_CASE("input: explicit length, embedded NUL", test_binary, binary);
	LOOP_CASE("ipv4: four decimal octets", test_ipv4_ok, ipv4_ok);
	LOOP_CASE("ipv4: every other numeric spelling is bad-host", test_numeric_bad,
	    numeric_bad);
	LOOP_CASE("ipv6: RFC 4291 spellings to RFC 5952", test_ipv6_ok, ipv6_ok);
	LOOP_CASE("ipv6: address bytes", test_ipv6_bytes, ipv6_bytes);
	LOOP_CASE("ipv6: IPv4-compatible text is hex", test_ipv6_compat_text,
	    ipv6_compat_text);
	LOOP_CASE("ipv6: zone ids, brackets and malformed refused", test_ipv6_bad, ipv6_bad);
	ONE_CASE("why: set on every failure", test_why);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(host_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
