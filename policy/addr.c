/*
 * addr.c: addresses, CIDR ranges and the classification every resolved answer and every
 * IP literal goes through before egressd may connect to it.
 *
 * The table is generated at build time from special-purpose-addresses.txt (the SPEC's
 * shared data): every row is denied unless its action is decode, in which case the IPv4
 * embedded in the IPv6 address is classified instead. Matching is longest-prefix, so
 * 192.0.0.9/32 wins over 192.0.0.0/24. No library "is_global" helper is consulted: they
 * lag the registry (see the data file's header).
 */
#include "config.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy.h"
#include "sock.h"
#include "spa-table.h"
#define ADDR_TEXT_MAX 64   /* longest address text inet_pton is handed */

int
addr_parse(const char *s, size_t len, struct addr *a)
{
	int family;

	/* One parser of IP literals for every program (common/sock.c). */
	memset(a, 0, sizeof(*a));
	if (egress_ip_parse(s, len, &family, a->b) == -1)
		return -1;
	a->family = family;
	return 0;
}

/*
 * "IP", "IP:PORT" or "[IPv6]:PORT" (a resolver's address, as egressd.conf and egress-run
 * take it). A bare IPv6 address has no port; the port is decimal, 1-65535. Returns 0 with
 * *port 0 when none was given, or -1 with *why.
 */
int
addr_port_parse(const char *s, size_t len, struct addr *a, unsigned *port, const char **why)
{
	const char *host = s, *colon = NULL;
	size_t hlen = len, plen;
	unsigned v = 0;

	*port = 0;
	memset(a, 0, sizeof(*a));
	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (close == NULL) {
			*why = "'[' without ']'";
			return -1;
		}
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close + 1 < s + len) {
			if (close[1] != ':') {
				*why = "expected ':' after ']'";
				return -1;
			}
			colon = close + 1;
		}
	} else if ((colon = memchr(s, ':', len)) != NULL) {
		if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - s)) != NULL)
			colon = NULL;       /* a bare IPv6 address: no port */
		else
			hlen = (size_t)(colon - s);
	}
	if (addr_parse(host, hlen, a) == -1 || (host != s && a->family != AF_INET6)) {
		*why = host != s ? "not an IPv6 address inside [ ]" :
		    "not an IPv4 or IPv6 address";
		return -1;
	}
	if (colon == NULL)
		return 0;
	plen = len - (size_t)(colon + 1 - s);
	if (plen == 0 || plen > 5) {
		*why = "expected a port 1-65535 after ':'";
		return -1;
	}
	for (size_t i = 0; i < plen; i++) {
		if (colon[1 + i] < '0' || colon[1 + i] > '9') {
			*why = "expected a port 1-65535 after ':'";
			return -1;
		}
		v = v * 10 + (unsigned)(colon[1 + i] - '0');
	}
	if (v == 0 || v > 65535) {
		*why = "the port must be 1-65535";
		return -1;
	}
	*port = v;
	return 0;
}

void
addr_format(const struct addr *a, char out[EGRESS_ADDRSTRLEN])
{
	static const uint8_t zero[12];

	/*
	 * glibc writes ::/96 (IPv4-compatible, deprecated) in mixed notation; RFC 5952 s5
	 * keeps that notation for IPv4-mapped and translated prefixes only: ::1:2, not
	 * ::0.1.0.2. (::ffff:1.2.3.4 stays mixed, as the RFC recommends.)
	 */
	if (a->family == AF_INET6 && memcmp(a->b, zero, 12) == 0 && (a->b[12] | a->b[13]) != 0) {
		snprintf(out, EGRESS_ADDRSTRLEN, "::%x:%x", (unsigned)(a->b[12] << 8 | a->b[13]),
		    (unsigned)(a->b[14] << 8 | a->b[15]));
		return;
	}
	if (a->family == AF_INET) {
		/* Dotted decimal by hand: inet_ntop's sprintf was 3 % of a tunnel's setup. */
		char *p = out;

		for (int i = 0; i < 4; i++) {
			unsigned v = a->b[i];

			if (v >= 100)
				*p++ = (char)('0' + v / 100);
			if (v >= 10)
				*p++ = (char)('0' + v / 10 % 10);
			*p++ = (char)('0' + v % 10);
			*p++ = i < 3 ? '.' : '\0';
		}
		return;
	}
	if (inet_ntop(a->family, a->b, out, EGRESS_ADDRSTRLEN) == NULL)
		snprintf(out, EGRESS_ADDRSTRLEN, "?");
}

bool
addr_equal(const struct addr *a, const struct addr *b)
{
	size_t n = a->family == AF_INET ? 4 : 16;

	return a->family == b->family && memcmp(a->b, b->b, n) == 0;
}

static unsigned
addr_bits(const struct addr *a)
{
	return a->family == AF_INET ? 32 : 128;
}

/* True when the first plen bits of a and b agree. */
static bool
addr_prefix_equal(const uint8_t *a, const uint8_t *b, unsigned plen)
{
	unsigned full = plen / 8, rest = plen % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ b[full]) & (0xff << (8 - rest)) & 0xff) == 0;
}

int
cidr_parse(const char *s, size_t len, struct cidr *c, const char **why)
{
	const char *slash = memchr(s, '/', len);
	unsigned plen = 0;
	size_t i, digits;
	struct addr zero;

	memset(c, 0, sizeof(*c));
	if (slash == NULL) {
		*why = "expected ADDRESS/PREFIX-LENGTH";
		return -1;
	}
	if (addr_parse(s, (size_t)(slash - s), &c->a) == -1) {
		*why = "not a valid IPv4 or IPv6 address before '/'";
		return -1;
	}
	digits = len - (size_t)(slash - s) - 1;
	if (digits == 0 || digits > 3) {
		*why = "expected a prefix length after '/'";
		return -1;
	}
	for (i = 0; i < digits; i++) {
		char d = slash[1 + i];

		if (d < '0' || d > '9' || (i == 0 && d == '0' && digits > 1)) {
			*why = "prefix length must be decimal without leading zeros";
			return -1;
		}
		plen = plen * 10 + (unsigned)(d - '0');
	}
	if (plen > addr_bits(&c->a)) {
		*why = c->a.family == AF_INET ? "IPv4 prefix length above 32" :
		    "IPv6 prefix length above 128";
		return -1;
	}
	c->plen = plen;
	/* Host bits must be zero: 10.1.2.3/8 is a typo for something, not a range. */
	memset(&zero, 0, sizeof(zero));
	for (i = plen; i < addr_bits(&c->a); i++) {
		if (c->a.b[i / 8] & (0x80 >> (i % 8))) {
			*why = "address has bits set beyond the prefix length";
			return -1;
		}
	}
	return 0;
}

void
cidr_format(const struct cidr *c, char out[EGRESS_ADDRSTRLEN + 4])
{
	char a[EGRESS_ADDRSTRLEN];

	addr_format(&c->a, a);
	snprintf(out, EGRESS_ADDRSTRLEN + 4, "%s/%u", a, c->plen);
}

bool
cidr_contains(const struct cidr *c, const struct addr *a)
{
	return c->a.family == a->family && addr_prefix_equal(c->a.b, a->b, c->plen);
}

/* --- the special-purpose table ----------------------------------------------------- */

static struct cidr *spa_cidrs;          /* parsed spa_rows, same order */
static enum addr_action *spa_actions;
static const char **spa_names;
static size_t *spa_order;               /* row indexes, longest prefix first */
static pthread_once_t spa_once = PTHREAD_ONCE_INIT;

static int
spa_cmp(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	if (spa_cidrs[a].plen != spa_cidrs[b].plen)
		return spa_cidrs[a].plen > spa_cidrs[b].plen ? -1 : 1;
	return a < b ? -1 : a > b;
}

static void
spa_init(void)
{
	const char *why;

	spa_cidrs = xcalloc(spa_nrows, sizeof(*spa_cidrs));
	spa_actions = xcalloc(spa_nrows, sizeof(*spa_actions));
	spa_names = xcalloc(spa_nrows, sizeof(*spa_names));
	spa_order = xcalloc(spa_nrows, sizeof(*spa_order));
	for (size_t i = 0; i < spa_nrows; i++) {
		const char *t = spa_rows[i].cidr;

		if (cidr_parse(t, strlen(t), &spa_cidrs[i], &why) == -1) {
			/* The build generated it; a bad row is a broken build, never a skip. */
			fprintf(stderr, "special-purpose table: %s: %s\n", t, why);
			abort();
		}
		spa_actions[i] = spa_rows[i].action;
		spa_names[i] = spa_rows[i].name;
		spa_order[i] = i;
	}
	qsort(spa_order, spa_nrows, sizeof(*spa_order), spa_cmp);
}

size_t
addr_table(const struct cidr **ranges, const enum addr_action **actions,
    const char *const **names)
{
	pthread_once(&spa_once, spa_init);
	*ranges = spa_cidrs;
	*actions = spa_actions;
	*names = spa_names;
	return spa_nrows;
}

static uint32_t
addr_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
addr_set_v4(struct addr *v4, uint32_t x)
{
	memset(v4, 0, sizeof(*v4));
	v4->family = AF_INET;
	v4->b[0] = (uint8_t)(x >> 24);
	v4->b[1] = (uint8_t)(x >> 16);
	v4->b[2] = (uint8_t)(x >> 8);
	v4->b[3] = (uint8_t)x;
}

/*
 * RFC 6052 section 2.2: the IPv4 sits after the prefix, skipping bits 64..71 (the "u"
 * octet). Returns false for a prefix length RFC 6052 does not define.
 */
static bool
addr_rfc6052_v4(const struct addr *a, unsigned plen, struct addr *v4)
{
	uint8_t out[4];
	unsigned pos, k = 0;

	if (plen != 32 && plen != 40 && plen != 48 && plen != 56 && plen != 64 &&
	    plen != 96)
		return false;
	for (pos = plen / 8; k < 4; pos++) {
		if (pos == 8)
			continue;           /* the u octet */
		out[k++] = a->b[pos];
	}
	addr_set_v4(v4, addr_be32(out));
	return true;
}

/* Where a range of the table carries an IPv4, decode it (for a verdict or a report). */
static bool
addr_embedded_v4(const struct addr *a, const struct cidr *range, struct addr *v4)
{
	static const uint8_t p6to4[2] = { 0x20, 0x02 };
	static const uint8_t teredo[4] = { 0x20, 0x01, 0x00, 0x00 };
	static const uint8_t nat64local[6] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };

	if (range->plen == 16 && memcmp(range->a.b, p6to4, 2) == 0) {
		addr_set_v4(v4, addr_be32(a->b + 2));          /* 2002:WWXX:YYZZ::/48 */
		return true;
	}
	if (range->plen == 32 && memcmp(range->a.b, teredo, 4) == 0) {
		addr_set_v4(v4, ~addr_be32(a->b + 12));        /* Teredo client, obfuscated */
		return true;
	}
	if (range->plen == 48 && memcmp(range->a.b, nat64local, 6) == 0)
		return addr_rfc6052_v4(a, 48, v4);
	if (range->plen == 96) {
		addr_set_v4(v4, addr_be32(a->b + 12));
		return true;
	}
	return false;
}

/* Longest-prefix match over the table; returns the row or -1. */
static long
addr_lookup(const struct addr *a)
{
	for (size_t k = 0; k < spa_nrows; k++) {
		size_t i = spa_order[k];

		if (cidr_contains(&spa_cidrs[i], a))
			return (long)i;
	}
	return -1;
}

static void
addr_verdict_row(struct addr_verdict *v, long row)
{
	v->denied = true;
	v->range = spa_rows[row].cidr;
	v->name = spa_rows[row].name;
}

bool
addr_classify(const struct addr *a, const struct cidr *nat64, size_t nnat64,
    struct addr_verdict *v)
{
	static const struct cidr global6 = { { AF_INET6, { 0x20 } }, 3 };
	const struct cidr *best = NULL;
	long row;

	pthread_once(&spa_once, spa_init);
	memset(v, 0, sizeof(*v));

	/* The operator's NAT64 prefixes come first: they say where an IPv4 is embedded. */
	for (size_t i = 0; a->family == AF_INET6 && i < nnat64; i++)
		if (cidr_contains(&nat64[i], a) && (best == NULL || nat64[i].plen > best->plen))
			best = &nat64[i];
	if (best != NULL && addr_rfc6052_v4(a, best->plen, &v->v4)) {
		v->embedded = true;
		v->decided_by_v4 = true;
		cidr_format(best, v->via);
		if (best->plen < 96 && a->b[8] != 0) {
			/* RFC 6052 s2.2: bits 64-71 must be zero; anything else is not NAT64. */
			v->decided_by_v4 = false;
			v->denied = true;
			v->range = "nat64-prefix";
			v->name = "NAT64 address with a non-zero u octet (RFC 6052)";
			return true;
		}
		row = addr_lookup(&v->v4);
		if (row >= 0)
			addr_verdict_row(v, row);
		return v->denied;
	}

	row = addr_lookup(a);
	if (row >= 0 && spa_actions[row] == ADDR_DECODE &&
	    addr_embedded_v4(a, &spa_cidrs[row], &v->v4)) {
		v->embedded = true;
		v->decided_by_v4 = true;
		snprintf(v->via, sizeof(v->via), "%s", spa_rows[row].cidr);
		row = addr_lookup(&v->v4);
		if (row >= 0)
			addr_verdict_row(v, row);
		return v->denied;
	}
	if (row >= 0) {
		addr_verdict_row(v, row);
		/* Denied whatever it carries; the IPv4 is only reported. */
		if (a->family == AF_INET6 && addr_embedded_v4(a, &spa_cidrs[row], &v->v4)) {
			v->embedded = true;
			snprintf(v->via, sizeof(v->via), "%s", spa_rows[row].cidr);
		}
		return true;
	}
	if (a->family == AF_INET6 && !cidr_contains(&global6, a)) {
		v->denied = true;
		v->range = "::/0";
		v->name = "Reserved by the IETF (outside global unicast 2000::/3)";
		return true;
	}
	/*
	 * ISATAP (RFC 5214 s6.1): an interface id of 0:5efe or 200:5efe carries an IPv4 under
	 * any /64; where an ISATAP router exists it forwards there, so that IPv4 decides.
	 */
	if (a->family == AF_INET6 && (a->b[8] & ~0x02) == 0 && a->b[9] == 0 &&
	    a->b[10] == 0x5e && a->b[11] == 0xfe) {
		v->embedded = true;
		v->decided_by_v4 = true;
		snprintf(v->via, sizeof(v->via), "ISATAP");
		addr_set_v4(&v->v4, addr_be32(a->b + 12));
		row = addr_lookup(&v->v4);
		if (row >= 0)
			addr_verdict_row(v, row);
		return v->denied;
	}
	return false;
}

bool
addr_permitted(const struct addr *a, const struct addr_verdict *v,
    const struct cidr *permit, size_t npermit)
{
	for (size_t i = 0; i < npermit; i++) {
		if (cidr_contains(&permit[i], a))
			return true;
		if (v->decided_by_v4 && cidr_contains(&permit[i], &v->v4))
			return true;
	}
	return false;
}
