/*
 * policy.c: the policy language of egress-policy(5): parser, canonical form, matching.
 *
 * The parser is a pure function over the file's bytes. Every error names file:line:column
 * and what was expected, and any error refuses the whole policy. Rules are indexed by host
 * in two hash tables (exact names and literals; wildcard suffixes), so that a decision
 * costs a constant number of lookups per label of the asked name, whatever the policy's
 * size. deny beats allow.
 *
 * include lines are expanded in place: the parser asks the caller's opener
 * (struct policy_includer) for the bytes of what a line names and parses them as part of
 * the same policy, so the canonical form is over the expanded rules and no file is read
 * here. Included files are untrusted like the top one, and bounded together: at most
 * EGRESS_POLICY_MAX_INCLUDE_DEPTH deep, EGRESS_POLICY_MAX_INCLUDES files and
 * EGRESS_POLICY_MAX_BYTES bytes in all; a file already being read is a cycle, refused.
 * They hold only allow, deny and include: a setting there could loosen (sni off,
 * permit-range) what the top file says, unseen by whoever reads only the top file.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libpsl.h>

#include "policy.h"
#include "policy-int.h"
#include "fields.h"

#define POLICY_MAX_FIELDS 8          /* fields on one line; more is an error */
#define POLICY_MAX_NUMBER 999999999999ULL

/* Defaults of the SPEC; the canonical form spells every one out. */
#define POLICY_DEF_CONNECTIONS 256
#define POLICY_DEF_CONNECT 10
#define POLICY_DEF_DNS 5
#define POLICY_DEF_IDLE 300
#define POLICY_DEF_HANDSHAKE 10
#define POLICY_DEF_PIN_MIN 30
#define POLICY_DEF_PIN_MAX 600
#define POLICY_MAX_TIMEOUT 604800    /* a week */
#define POLICY_MAX_CONNECTIONS 1000000

struct portrange {
	uint16_t lo, hi;
	unsigned line;               /* where it was written: line of source src */
	unsigned src;                /* index in policy.srcs; 0 is the top file */
};

/* A file the policy was read from: the top file (index 0) or an included one. */
struct policy_src {
	char *name;
	unsigned parent;             /* the including file's index */
	unsigned line;               /* the include line in it */
};

struct portset {
	struct portrange *raw;       /* as written, file order */
	size_t nraw;
	struct portrange *span;      /* merged, sorted, disjoint (line unused) */
	size_t nspan;
};

struct rule {
	char *host;                  /* canonical host, or the suffix of a wildcard */
	size_t hostlen;
	bool wildcard;
	struct portset allow;
	struct portset deny;
};

struct htab {
	size_t *slot;                /* rule index + 1; 0 is empty */
	size_t cap;                  /* power of two */
	size_t n;
};

struct policy {
	struct rule *rules;
	size_t nrules, caprules;
	struct htab exact;           /* names and literals */
	struct htab wild;            /* wildcard suffixes */
	struct cidr *permit;
	size_t npermit;
	struct policy_settings set;
	enum policy_mac_state mac;
	unsigned sig_line;           /* the #sig header's line; 0: none */
	uint8_t sig[EGRESS_ED25519_SIGLEN];
	char *canonical;
	size_t canonical_len;
	char digest[EGRESS_DIGEST_STRLEN];
	struct policy_src *srcs;
	size_t nsrcs;
};

/* --- diagnostics ---------------------------------------------------------------- */

struct parse {
	const char *file;
	unsigned line;
	unsigned src;                /* file's index in p->srcs */
	unsigned depth;              /* 0 in the top file */
	const struct policy_includer *inc; /* NULL: include lines are refused */
	bool sealed;                 /* parsing a sealed body */
	size_t inc_bytes;            /* bytes of every file included so far */
	char ids[EGRESS_POLICY_MAX_INCLUDE_DEPTH + 1][64]; /* ids of the files being read */
	struct policy_diag *d;
	struct policy *p;
	/* Line of each single-valued directive, to refuse a second one. */
	unsigned seen_sni, seen_pin_min, seen_pin_max;
	unsigned seen_quota[3], seen_timeout[4];
	size_t nrules;               /* allow + deny lines */
	size_t nallow;               /* allow lines */
};

/*
 * " (via FILE:LINE, FILE:LINE)": the include lines that brought source src in, nearest
 * first; "" for the top file. Cut short (with "...") rather than overflow.
 */
static void
policy_via(const struct policy *p, unsigned src, char *out, size_t outlen)
{
	size_t n = 0;
	int k;

	out[0] = '\0';
	for (unsigned s = src; s != 0 && s < p->nsrcs; s = p->srcs[s].parent) {
		const struct policy_src *ps = &p->srcs[s];

		k = snprintf(out + n, outlen - n, "%s%s:%u", s == src ? " (via " : ", ",
		    p->srcs[ps->parent].name, ps->line);
		if (k < 0 || (size_t)k >= outlen - n - 1) {
			snprintf(out + (outlen > 5 ? outlen - 5 : 0), outlen > 5 ? 5 : outlen,
			    "...)");
			return;
		}
		n += (size_t)k;
	}
	if (n != 0)
		snprintf(out + n, outlen - n, ")");
}

static void __attribute__((format(printf, 3, 4)))
parse_error(struct parse *ps, size_t col, const char *fmt, ...)
{
	char *msg, *full;
	va_list ap;
	struct policy_diag *d = ps->d;

	if (d->nerrors >= EGRESS_POLICY_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (ps->line == 0)
		xasprintf(&full, "%s: %s", ps->file, msg);
	else {
		char via[512];

		policy_via(ps->p, ps->src, via, sizeof(via));
		xasprintf(&full, "%s:%u:%zu: %s%s", ps->file, ps->line, col, msg, via);
	}
	free(msg);
	d->errors = xreallocarray(d->errors, d->nerrors + 1, sizeof(*d->errors));
	d->errors[d->nerrors++] = full;
}

static void __attribute__((format(printf, 3, 4)))
parse_warning(struct parse *ps, size_t col, const char *fmt, ...)
{
	char *msg, *full;
	va_list ap;
	struct policy_diag *d = ps->d;

	if (d->nwarnings >= EGRESS_POLICY_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	{
		char via[512];

		policy_via(ps->p, ps->src, via, sizeof(via));
		xasprintf(&full, "%s:%u:%zu: warning: %s%s", ps->file, ps->line, col, msg, via);
	}
	free(msg);
	d->warnings = xreallocarray(d->warnings, d->nwarnings + 1, sizeof(*d->warnings));
	d->warnings[d->nwarnings++] = full;
}

void
policy_diag_free(struct policy_diag *d)
{
	for (size_t i = 0; i < d->nerrors; i++)
		free(d->errors[i]);
	for (size_t i = 0; i < d->nwarnings; i++)
		free(d->warnings[i]);
	free(d->errors);
	free(d->warnings);
	memset(d, 0, sizeof(*d));
}

/* --- hash tables of rules --------------------------------------------------------- */

static size_t
htab_find(const struct htab *t, const struct rule *rules, const char *s, size_t n)
{
	size_t i;

	if (t->cap == 0)
		return 0;
	/* The table is at most half full, so the probe ends at an empty slot. */
	for (i = egress_hash(s, n) & (t->cap - 1); t->slot[i] != 0; i = (i + 1) & (t->cap - 1)) {
		const struct rule *r = &rules[t->slot[i] - 1];

		if (r->hostlen == n && memcmp(r->host, s, n) == 0)
			return t->slot[i];
	}
	return 0;
}

static void
htab_put(struct htab *t, const struct rule *rules, size_t idx)
{
	const struct rule *r = &rules[idx];
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		struct htab nt = { NULL, t->cap ? t->cap * 2 : 16, 0 };

		nt.slot = xcalloc(nt.cap, sizeof(*nt.slot));
		for (i = 0; i < t->cap; i++)
			if (t->slot[i] != 0)
				htab_put(&nt, rules, t->slot[i] - 1);
		free(t->slot);
		*t = nt;
	}
	for (i = egress_hash(r->host, r->hostlen) & (t->cap - 1); t->slot[i] != 0;
	    i = (i + 1) & (t->cap - 1))
		;
	t->slot[i] = idx + 1;
	t->n++;
}

static struct rule *
policy_rule_get(struct policy *p, const char *host, size_t n, bool wildcard)
{
	struct htab *t = wildcard ? &p->wild : &p->exact;
	size_t idx = htab_find(t, p->rules, host, n);
	struct rule *r;

	if (idx != 0)
		return &p->rules[idx - 1];
	if (p->nrules == p->caprules) {
		p->caprules = p->caprules ? p->caprules * 2 : 16;
		p->rules = xreallocarray(p->rules, p->caprules, sizeof(*p->rules));
	}
	r = &p->rules[p->nrules];
	memset(r, 0, sizeof(*r));
	r->host = xstrndup(host, n);
	r->hostlen = n;
	r->wildcard = wildcard;
	htab_put(t, p->rules, p->nrules);
	p->nrules++;
	return r;
}

/* --- port sets -------------------------------------------------------------------- */

static void
portset_add(struct portset *ps, uint16_t lo, uint16_t hi, unsigned line, unsigned src)
{
	ps->raw = xreallocarray(ps->raw, ps->nraw + 1, sizeof(*ps->raw));
	ps->raw[ps->nraw].lo = lo;
	ps->raw[ps->nraw].hi = hi;
	ps->raw[ps->nraw].line = line;
	ps->raw[ps->nraw].src = src;
	ps->nraw++;
}

static int
portrange_cmp(const void *x, const void *y)
{
	const struct portrange *a = x, *b = y;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->hi < b->hi ? -1 : a->hi > b->hi;
}

/* Merges overlapping and adjacent ranges: 80,81-90,85 becomes 80-90. */
static void
portset_merge(struct portset *ps)
{
	size_t i, n = 0;

	free(ps->span);
	ps->span = NULL;
	ps->nspan = 0;
	if (ps->nraw == 0)
		return;
	ps->span = xreallocarray(NULL, ps->nraw, sizeof(*ps->span));
	memcpy(ps->span, ps->raw, ps->nraw * sizeof(*ps->span));
	qsort(ps->span, ps->nraw, sizeof(*ps->span), portrange_cmp);
	for (i = 1; i < ps->nraw; i++) {
		if ((unsigned)ps->span[i].lo <= (unsigned)ps->span[n].hi + 1) {
			if (ps->span[i].hi > ps->span[n].hi)
				ps->span[n].hi = ps->span[i].hi;
		} else
			ps->span[++n] = ps->span[i];
	}
	ps->nspan = n + 1;
}

/* Returns the range as written that put port in the set, or NULL. */
static const struct portrange *
portset_match(const struct portset *ps, uint16_t port)
{
	size_t lo = 0, hi = ps->nspan;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (port < ps->span[mid].lo)
			hi = mid;
		else if (port > ps->span[mid].hi)
			lo = mid + 1;
		else {
			for (size_t i = 0; i < ps->nraw; i++)
				if (port >= ps->raw[i].lo && port <= ps->raw[i].hi)
					return &ps->raw[i];
			return NULL;   /* not reached: span is made of raw */
		}
	}
	return NULL;
}

static void
portset_free(struct portset *ps)
{
	free(ps->raw);
	free(ps->span);
}

/* --- fields ----------------------------------------------------------------------- */

static bool
field_is(const struct fields_field *f, const char *word)
{
	return f->len == strlen(word) && memcmp(f->s, word, f->len) == 0;
}

/* Decimal without sign, at most max; returns the end or NULL. Leading zeros are accepted. */
static const char *
parse_number_max(const char *s, const char *end, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	while (p < end && *p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (max - d) / 10)
			return NULL;
		v = v * 10 + d;
		p++;
	}
	if (p == s)
		return NULL;
	*out = v;
	return p;
}

static const char *
parse_number(const char *s, const char *end, uint64_t *out)
{
	return parse_number_max(s, end, POLICY_MAX_NUMBER, out);
}

static int
parse_ports(struct parse *ps, const struct fields_field *f, struct portset *set)
{
	const char *p = f->s, *end = f->s + f->len;

	for (;;) {
		const char *q;
		uint64_t lo, hi;

		if ((q = parse_number(p, end, &lo)) == NULL || lo < 1 || lo > 65535) {
			parse_error(ps, f->col + (size_t)(p - f->s),
			    "expected a port 1-65535, a list (80,443) or a range (8000-8100), got '%.*s'",
			    (int)f->len, f->s);
			return -1;
		}
		hi = lo;
		if (q < end && *q == '-') {
			const char *r = parse_number(q + 1, end, &hi);

			if (r == NULL || hi < 1 || hi > 65535) {
				parse_error(ps, f->col + (size_t)(q + 1 - f->s),
				    "expected the end of the port range (1-65535)");
				return -1;
			}
			if (hi < lo) {
				parse_error(ps, f->col + (size_t)(p - f->s),
				    "port range %llu-%llu runs backwards",
				    (unsigned long long)lo, (unsigned long long)hi);
				return -1;
			}
			q = r;
		}
		portset_add(set, (uint16_t)lo, (uint16_t)hi, ps->line, ps->src);
		if (q == end)
			return 0;
		if (*q != ',' || q + 1 == end) {
			parse_error(ps, f->col + (size_t)(q - f->s),
			    "expected ',' and another port, got '%.*s'", (int)(end - q), q);
			return -1;
		}
		p = q + 1;
	}
}

/* Seconds: N, Ns, Nm, Nh, Nd. */
static int
parse_duration(struct parse *ps, const struct fields_field *f, uint64_t min, uint64_t max,
    uint64_t *out)
{
	const char *end = f->s + f->len, *q;
	uint64_t v, mul = 1;

	if ((q = parse_number(f->s, end, &v)) == NULL)
		goto bad;
	if (q + 1 == end) {
		switch (*q) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: goto bad;
		}
	} else if (q != end)
		goto bad;
	v *= mul;
	if (v < min || v > max) {
		parse_error(ps, f->col, "duration '%.*s' out of range (%llus to %llus)",
		    (int)f->len, f->s, (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
bad:
	parse_error(ps, f->col, "expected a duration (30s, 10m, 1h, 1d), got '%.*s'",
	    (int)f->len, f->s);
	return -1;
}

/* Bytes: N, NK, NM, NG, NT (powers of 2^10), or "unlimited". */
static int
parse_size(struct parse *ps, const struct fields_field *f, uint64_t *out)
{
	const char *end = f->s + f->len, *q;
	uint64_t v;
	unsigned shift = 0;

	if (field_is(f, "unlimited")) {
		*out = EGRESS_UNLIMITED;
		return 0;
	}
	if ((q = parse_number_max(f->s, end, UINT64_MAX >> 1, &v)) == NULL) {
		if (f->len > 0 && f->s[0] >= '0' && f->s[0] <= '9')
			goto big;
		goto bad;
	}
	if (q + 1 == end) {
		switch (*q) {
		case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		default: goto bad;
		}
	} else if (q != end)
		goto bad;
	if (v == 0 || v > (UINT64_MAX >> 1) >> shift)
		goto big;
	*out = v << shift;
	return 0;
big:
	parse_error(ps, f->col, "size '%.*s' must be at least 1 byte and fit in 63 bits",
	    (int)f->len, f->s);
	return -1;
bad:
	parse_error(ps, f->col, "expected a size in bytes (1000, 512K, 10M, 10G, 1T) or "
	    "'unlimited', got '%.*s'", (int)f->len, f->s);
	return -1;
}

/* --- directives ------------------------------------------------------------------- */

static const psl_ctx_t *policy_psl_ctx;
static pthread_once_t policy_psl_once = PTHREAD_ONCE_INIT;

static void
policy_psl_init(void)
{
	/* The newer of libpsl's built-in list and Debian's publicsuffix file. */
	policy_psl_ctx = psl_latest(NULL);
	if (policy_psl_ctx == NULL)
		policy_psl_ctx = psl_builtin();
}

const psl_ctx_t *
policy_psl(void)
{
	pthread_once(&policy_psl_once, policy_psl_init);
	return policy_psl_ctx;
}

/*
 * A rule's ports (field 3, or every port when a deny has none) into *ports, and the rule
 * counted against the bound. -1 (said, *ports freed) on a bad list or one rule too many.
 */
static int
parse_rule_ports(struct parse *ps, const struct fields_field *f, size_t nf,
    struct portset *ports)
{
	if (nf == 3) {
		if (parse_ports(ps, &f[2], ports) == -1) {
			portset_free(ports);
			return -1;
		}
	} else
		portset_add(ports, 1, 65535, ps->line, ps->src);
	if (++ps->nrules > EGRESS_POLICY_MAX_RULES) {
		parse_error(ps, f[0].col, "more than %d allow and deny rules",
		    EGRESS_POLICY_MAX_RULES);
		portset_free(ports);
		return -1;
	}
	return 0;
}

/*
 * "allow * PORTS" (and "deny * [PORTS]"): the rule of every host, names and IP literals
 * alike (egress-run --learn's policy). It only widens what the rules decide: the address
 * check (special-purpose ranges, permit-range), pinning and the SNI guard apply as to any
 * allowed host. It is kept under the key "*" in the table of exact hosts, which no host
 * can collide with (host_parse refuses '*'), so the canonical form spells it "allow *
 * PORTS" like any rule; policy_any_rule finds it. The fields were counted by parse_rule.
 */
static int
parse_rule_any(struct parse *ps, bool allow, const struct fields_field *f, size_t nf)
{
	struct portset ports = { 0 };
	struct rule *r;

	if (parse_rule_ports(ps, f, nf, &ports) == -1)
		return -1;
	if (allow) {
		ps->nallow++;
		parse_warning(ps, f[1].col, "'allow *' allows every host, name or address, on "
		    "these ports (a learning run's rule, not one to keep)");
	}
	r = policy_rule_get(ps->p, "*", 1, false);
	for (size_t i = 0; i < ports.nraw; i++)
		portset_add(allow ? &r->allow : &r->deny, ports.raw[i].lo, ports.raw[i].hi,
		    ps->line, ps->src);
	portset_free(&ports);
	return 0;
}

static int
parse_rule(struct parse *ps, bool allow, const struct fields_field *f, size_t nf)
{
	struct host h;
	const char *why, *name = f[1].s;
	size_t len = f[1].len;
	bool wildcard = false;
	struct portset ports = { 0 };
	struct rule *r;

	if (allow && nf != 3) {
		parse_error(ps, nf < 3 ? f[nf - 1].col + f[nf - 1].len : f[3].col,
		    nf < 3 ? "expected: allow HOST PORTS" :
		    "unexpected field after the ports (expected: allow HOST PORTS)");
		return -1;
	}
	if (!allow && nf != 2 && nf != 3) {
		parse_error(ps, nf < 2 ? f[0].col + f[0].len : f[3].col,
		    nf < 2 ? "expected: deny HOST [PORTS]" :
		    "unexpected field after the ports (expected: deny HOST [PORTS])");
		return -1;
	}
	if (len == 1 && name[0] == '*')
		return parse_rule_any(ps, allow, f, nf);
	if (len >= 2 && name[0] == '*' && name[1] == '.') {
		wildcard = true;
		name += 2;
		len -= 2;
	} else if (memchr(name, '*', len) != NULL) {
		parse_error(ps, f[1].col, "a wildcard is only allowed as '*.' followed by a "
		    "name (*.example.com), or as '*' alone (every host)");
		return -1;
	}
	if (host_parse(name, len, &h, &why) == -1) {
		parse_error(ps, f[1].col + (wildcard ? 2 : 0), "bad host '%.*s': %s",
		    (int)f[1].len, f[1].s, why);
		return -1;
	}
	if (wildcard && h.kind != HOST_NAME) {
		parse_error(ps, f[1].col, "a wildcard needs a name after '*.', not an address");
		return -1;
	}
	if (parse_rule_ports(ps, f, nf, &ports) == -1)
		return -1;
	if (allow)
		ps->nallow++;
	if (wildcard && allow) {
		const psl_ctx_t *psl = policy_psl();

		if (psl != NULL && psl_is_public_suffix(psl, h.name))
			parse_warning(ps, f[1].col, "'*.%s' sits on a public suffix: it allows "
			    "every site registered under '%s'", h.name, h.name);
	}
	r = policy_rule_get(ps->p, h.name, strlen(h.name), wildcard);
	for (size_t i = 0; i < ports.nraw; i++)
		portset_add(allow ? &r->allow : &r->deny, ports.raw[i].lo, ports.raw[i].hi,
		    ps->line, ps->src);
	portset_free(&ports);
	return 0;
}

static int
parse_once(struct parse *ps, unsigned *seen, const struct fields_field *f, const char *what)
{
	if (*seen != 0) {
		parse_error(ps, f->col, "second '%s' (the first is on line %u)", what, *seen);
		return -1;
	}
	*seen = ps->line;
	return 0;
}

static int
parse_permit(struct parse *ps, const struct fields_field *f, size_t nf)
{
	struct policy *p = ps->p;
	struct cidr c;
	const char *why;

	if (nf != 2) {
		parse_error(ps, nf < 2 ? f[0].col + f[0].len : f[2].col,
		    "expected: permit-range ADDRESS/PREFIX-LENGTH");
		return -1;
	}
	if (cidr_parse(f[1].s, f[1].len, &c, &why) == -1) {
		parse_error(ps, f[1].col, "bad range '%.*s': %s", (int)f[1].len, f[1].s, why);
		return -1;
	}
	if (p->npermit >= EGRESS_POLICY_MAX_PERMITS) {
		parse_error(ps, f[0].col, "more than %d permit-range lines",
		    EGRESS_POLICY_MAX_PERMITS);
		return -1;
	}
	p->permit = xreallocarray(p->permit, p->npermit + 1, sizeof(*p->permit));
	p->permit[p->npermit++] = c;
	return 0;
}

static void parse_lines(struct parse *ps, const uint8_t *buf, size_t len,
    unsigned first_line);

/* A template name: a plain identifier, so that it can only name a file of the folder. */
static bool
include_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > EGRESS_POLICY_MAX_TEMPLATE)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (i > 0 && (c == '-' || c == '_'))))
			return false;
	}
	return true;
}

/* "top:1 -> a:3 -> b:2 -> NAME": the files being read, each with its include line. */
static void
include_chain(const struct parse *ps, const char *last, char *out, size_t outlen)
{
	unsigned chain[EGRESS_POLICY_MAX_INCLUDE_DEPTH + 1];
	size_t n = 0, k = 0;

	for (unsigned s = ps->src; n < sizeof(chain) / sizeof(chain[0]); s = ps->p->srcs[s].parent) {
		chain[n++] = s;
		if (s == 0)
			break;
	}
	out[0] = '\0';
	while (n-- > 0) {
		unsigned s = chain[n];
		/* The line in s that leads on: the include line of the next file, or ours. */
		unsigned line = n == 0 ? ps->line : ps->p->srcs[chain[n - 1]].line;
		int w = snprintf(out + k, outlen - k, "%s:%u -> ", ps->p->srcs[s].name, line);

		if (w < 0 || (size_t)w >= outlen - k)
			return;
		k += (size_t)w;
	}
	snprintf(out + k, outlen - k, "%s", last);
}

/*
 * include NAME | include ./PATH | include ../PATH: the file's allow, deny and include
 * lines become the policy's, each rule remembering where it was written.
 */
static int
parse_include(struct parse *ps, const struct fields_field *f, size_t nf)
{
	struct policy *p = ps->p;
	struct policy_include_file in;
	const char *t;
	char target[EGRESS_POLICY_MAX_LINE + 1], why[512], chain[1024];
	bool template;
	size_t len;
	int rc = -1;

	if (nf != 2) {
		parse_error(ps, nf < 2 ? f[0].col + f[0].len : f[2].col,
		    "expected: include NAME (a template) or include ./PATH");
		return -1;
	}
	t = f[1].s;
	len = f[1].len;
	if (ps->inc == NULL) {
		parse_error(ps, f[0].col, ps->sealed ?
		    "include in a sealed policy (a sealed body holds the expanded rules, never "
		    "an include)" :
		    "include is not read here: seal the policy (egress-policy seal FILE > "
		    "FILE.sealed writes it with every included rule expanded) and use the "
		    "sealed file");
		return -1;
	}
	template = !((len > 2 && memcmp(t, "./", 2) == 0) || (len > 3 && memcmp(t, "../", 3) == 0));
	if (template && !include_name_ok(t, len)) {
		if (t[0] == '/')
			parse_error(ps, f[1].col, "include takes a template NAME or a path relative "
			    "to this file (./PATH or ../PATH), not an absolute path");
		else
			parse_error(ps, f[1].col, "bad template name '%.*s': a template is a plain "
			    "name of at most %d lower-case letters, digits, '-' and '_' (no '/', "
			    "no '.'); write ./PATH for a file", (int)len, t,
			    EGRESS_POLICY_MAX_TEMPLATE);
		return -1;
	}
	if (ps->depth >= EGRESS_POLICY_MAX_INCLUDE_DEPTH) {
		include_chain(ps, "...", chain, sizeof(chain));
		parse_error(ps, f[0].col, "includes nested deeper than %d (%s)",
		    EGRESS_POLICY_MAX_INCLUDE_DEPTH, chain);
		return -1;
	}
	if (p->nsrcs > EGRESS_POLICY_MAX_INCLUDES) {
		parse_error(ps, f[0].col, "more than %d included files",
		    EGRESS_POLICY_MAX_INCLUDES);
		return -1;
	}
	memcpy(target, t, len);
	target[len] = '\0';
	memset(&in, 0, sizeof(in));
	why[0] = '\0';
	if (ps->inc->open(ps->inc->arg, ps->file, target, template, &in, why, sizeof(why)) == -1) {
		parse_error(ps, f[1].col, "cannot include %s '%s': %s", template ? "template" :
		    "file", target, why[0] ? why : "not found");
		free(in.buf);
		free(in.name);
		return -1;
	}
	if (in.name == NULL)
		in.name = xstrdup(target);
	in.id[sizeof(in.id) - 1] = '\0';
	/* A file being read (by id, or by name for the top file, which has no id) is a cycle. */
	for (unsigned s = ps->src, k = ps->depth;; s = p->srcs[s].parent, k--) {
		if (strcmp(p->srcs[s].name, in.name) == 0 ||
		    (in.id[0] != '\0' && strcmp(ps->ids[k], in.id) == 0)) {
			include_chain(ps, in.name, chain, sizeof(chain));
			parse_error(ps, f[1].col, "include cycle: %s is already being read (%s)",
			    in.name, chain);
			goto out;
		}
		if (s == 0)
			break;
	}
	if (in.len > EGRESS_POLICY_MAX_BYTES - ps->inc_bytes) {
		parse_error(ps, f[1].col, "included files larger than %u bytes in all",
		    EGRESS_POLICY_MAX_BYTES);
		goto out;
	}
	if (in.len >= sizeof(EGRESS_SEAL_MAGIC) - 1 &&
	    memcmp(in.buf, "#!egress-policy", sizeof("#!egress-policy") - 1) == 0) {
		parse_error(ps, f[1].col, "%s is a sealed policy: include its plain source "
		    "(a sealed file carries settings, which an included file may not)", in.name);
		goto out;
	}
	ps->inc_bytes += in.len;
	p->srcs = xreallocarray(p->srcs, p->nsrcs + 1, sizeof(*p->srcs));
	p->srcs[p->nsrcs].name = in.name;
	p->srcs[p->nsrcs].parent = ps->src;
	p->srcs[p->nsrcs].line = ps->line;
	in.name = NULL;
	{
		struct parse saved = *ps;

		ps->file = p->srcs[p->nsrcs].name;
		ps->src = (unsigned)p->nsrcs++;
		ps->depth++;
		memcpy(ps->ids[ps->depth], in.id, sizeof(in.id));
		parse_lines(ps, in.buf, in.len, 1);
		ps->file = saved.file;
		ps->src = saved.src;
		ps->depth = saved.depth;
		ps->line = saved.line;
	}
	rc = 0;
out:
	free(in.buf);
	free(in.name);
	return rc;
}

static int
parse_directive(struct parse *ps, const struct fields_field *f, size_t nf)
{
	struct policy_settings *s = &ps->p->set;
	static const char *const quotas[] = { "connections", "rate", "bytes" };
	static const char *const timeouts[] = { "connect", "dns", "idle", "handshake" };

	if (field_is(&f[0], "allow") || field_is(&f[0], "deny"))
		return parse_rule(ps, field_is(&f[0], "allow"), f, nf);
	if (field_is(&f[0], "include"))
		return parse_include(ps, f, nf);
	if (ps->src != 0 && (field_is(&f[0], "permit-range") || field_is(&f[0], "sni") ||
	    field_is(&f[0], "quota") || field_is(&f[0], "timeout") || field_is(&f[0], "pin"))) {
		parse_error(ps, f[0].col, "'%.*s' in an included file: an included file holds "
		    "only allow, deny and include lines (settings belong in the top policy, "
		    "where its reader sees them)", (int)f[0].len, f[0].s);
		return -1;
	}
	if (field_is(&f[0], "permit-range"))
		return parse_permit(ps, f, nf);
	if (field_is(&f[0], "sni")) {
		if (nf != 2) {
			parse_error(ps, nf < 2 ? f[0].col + f[0].len : f[2].col,
			    "expected: sni match|required|off");
			return -1;
		}
		if (field_is(&f[1], "match"))
			s->sni = SNI_MATCH;
		else if (field_is(&f[1], "required"))
			s->sni = SNI_REQUIRED;
		else if (field_is(&f[1], "off"))
			s->sni = SNI_OFF;
		else {
			parse_error(ps, f[1].col, "expected match, required or off, got '%.*s'",
			    (int)f[1].len, f[1].s);
			return -1;
		}
		return parse_once(ps, &ps->seen_sni, &f[0], "sni");
	}
	if (field_is(&f[0], "quota")) {
		size_t k;

		if (nf != 3) {
			parse_error(ps, nf < 3 ? f[nf - 1].col + f[nf - 1].len : f[3].col,
			    "expected: quota connections N | quota rate N/s | quota bytes SIZE");
			return -1;
		}
		for (k = 0; k < 3; k++)
			if (field_is(&f[1], quotas[k]))
				break;
		if (k == 3) {
			parse_error(ps, f[1].col, "expected connections, rate or bytes, got '%.*s'",
			    (int)f[1].len, f[1].s);
			return -1;
		}
		if (k == 0) {
			uint64_t v = 0;
			const char *q = parse_number(f[2].s, f[2].s + f[2].len, &v);

			if (q != f[2].s + f[2].len || v < 1 || v > POLICY_MAX_CONNECTIONS) {
				parse_error(ps, f[2].col, "expected a number of connections "
				    "(1-%d), got '%.*s'", POLICY_MAX_CONNECTIONS,
				    (int)f[2].len, f[2].s);
				return -1;
			}
			s->quota_connections = v;
		} else if (k == 1) {
			uint64_t v = 0;
			const char *q;

			if (field_is(&f[2], "unlimited"))
				s->quota_rate = EGRESS_UNLIMITED;
			else if ((q = parse_number(f[2].s, f[2].s + f[2].len, &v)) == NULL ||
			    f[2].s + f[2].len - q != 2 || q[0] != '/' || q[1] != 's' ||
			    v < 1 || v > POLICY_MAX_CONNECTIONS) {
				parse_error(ps, f[2].col, "expected a rate N/s (1-%d) or "
				    "'unlimited', got '%.*s'", POLICY_MAX_CONNECTIONS,
				    (int)f[2].len, f[2].s);
				return -1;
			} else
				s->quota_rate = v;
		} else if (parse_size(ps, &f[2], &s->quota_bytes) == -1)
			return -1;
		return parse_once(ps, &ps->seen_quota[k], &f[1], quotas[k]);
	}
	if (field_is(&f[0], "timeout")) {
		uint64_t *slot[] = { &s->timeout_connect, &s->timeout_dns, &s->timeout_idle,
		    &s->timeout_handshake };
		size_t k;

		if (nf != 3) {
			parse_error(ps, nf < 3 ? f[nf - 1].col + f[nf - 1].len : f[3].col,
			    "expected: timeout connect|dns|idle|handshake DURATION");
			return -1;
		}
		for (k = 0; k < 4; k++)
			if (field_is(&f[1], timeouts[k]))
				break;
		if (k == 4) {
			parse_error(ps, f[1].col, "expected connect, dns, idle or handshake, got "
			    "'%.*s'", (int)f[1].len, f[1].s);
			return -1;
		}
		if (parse_duration(ps, &f[2], 1, POLICY_MAX_TIMEOUT, slot[k]) == -1)
			return -1;
		return parse_once(ps, &ps->seen_timeout[k], &f[1], timeouts[k]);
	}
	if (field_is(&f[0], "pin")) {
		if (nf != 3 && nf != 5) {
			parse_error(ps, f[0].col, "expected: pin min DURATION max DURATION");
			return -1;
		}
		for (size_t i = 1; i < nf; i += 2) {
			if (field_is(&f[i], "min")) {
				if (parse_duration(ps, &f[i + 1], 0, POLICY_MAX_TIMEOUT,
				    &s->pin_min) == -1 ||
				    parse_once(ps, &ps->seen_pin_min, &f[i], "pin min") == -1)
					return -1;
			} else if (field_is(&f[i], "max")) {
				if (parse_duration(ps, &f[i + 1], 1, POLICY_MAX_TIMEOUT,
				    &s->pin_max) == -1 ||
				    parse_once(ps, &ps->seen_pin_max, &f[i], "pin max") == -1)
					return -1;
			} else {
				parse_error(ps, f[i].col, "expected min or max, got '%.*s'",
				    (int)f[i].len, f[i].s);
				return -1;
			}
		}
		return 0;
	}
	parse_error(ps, f[0].col, "unknown directive '%.*s' (expected allow, deny, include, "
	    "permit-range, sni, quota, timeout or pin)", (int)f[0].len, f[0].s);
	return -1;
}

/* Splits one line (without its newline) into fields and hands them on. */
static void
parse_line(struct parse *ps, const char *s, size_t len)
{
	struct fields_field f[POLICY_MAX_FIELDS];
	struct fields_error err;
	unsigned char c;
	int nf;

	if (len > 0 && s[len - 1] == '\r')
		len--;                     /* CRLF line endings are accepted */
	if (len > EGRESS_POLICY_MAX_LINE) {
		parse_error(ps, EGRESS_POLICY_MAX_LINE + 1, "line longer than %d bytes",
		    EGRESS_POLICY_MAX_LINE);
		return;
	}
	/* Comments may hold any bytes but NUL (the caller refuses a NUL anywhere). */
	if ((nf = fields_split(s, len, f, POLICY_MAX_FIELDS, &err)) == -1) {
		c = err.byte;
		if (err.why == FIELDS_TOO_MANY)
			parse_error(ps, err.col, "too many fields on one line");
		else
			parse_error(ps, err.col, c == 0 ? "NUL byte" : c >= 0x80 ?
			    "non-ASCII byte outside a comment (write names as A-labels, xn--)" :
			    "control byte 0x%02x", c);
		return;
	}
	if (nf > 0)
		parse_directive(ps, f, (size_t)nf);
}

/* --- canonical form ----------------------------------------------------------------- */

#define SBUF_INITIAL 1024

void
sbuf_init(struct sbuf *b)
{
	b->s = xmalloc(SBUF_INITIAL);
	b->s[0] = '\0';
	b->len = 0;
	b->cap = SBUF_INITIAL;
}

void
sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap * 2 + (size_t)n + 64;
		b->s = xreallocarray(b->s, b->cap, 1);
	}
}

static void
sbuf_ports(struct sbuf *b, const struct portset *ps)
{
	for (size_t i = 0; i < ps->nspan; i++) {
		if (ps->span[i].lo == ps->span[i].hi)
			sbuf_printf(b, "%s%u", i ? "," : "", ps->span[i].lo);
		else
			sbuf_printf(b, "%s%u-%u", i ? "," : "", ps->span[i].lo, ps->span[i].hi);
	}
}

static int
line_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static void
policy_make_canonical(struct policy *p)
{
	struct policy_settings *s = &p->set;
	struct sbuf b;
	size_t nlines = 0, i;
	char **lines, *out;
	size_t *offs;
	char cidr[EGRESS_ADDRSTRLEN + 4];

	sbuf_init(&b);
	offs = xcalloc(p->nrules * 2 + p->npermit + 16, sizeof(*offs));
	for (i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];

		if (r->allow.nspan) {
			offs[nlines++] = b.len;
			sbuf_printf(&b, "allow %s%s ", r->wildcard ? "*." : "", r->host);
			sbuf_ports(&b, &r->allow);
			sbuf_printf(&b, "%c", '\0');
		}
		if (r->deny.nspan) {
			offs[nlines++] = b.len;
			sbuf_printf(&b, "deny %s%s ", r->wildcard ? "*." : "", r->host);
			sbuf_ports(&b, &r->deny);
			sbuf_printf(&b, "%c", '\0');
		}
	}
	for (i = 0; i < p->npermit; i++) {
		offs[nlines++] = b.len;
		cidr_format(&p->permit[i], cidr);
		sbuf_printf(&b, "permit-range %s%c", cidr, '\0');
	}
	offs[nlines++] = b.len;
	sbuf_printf(&b, "sni %s%c", s->sni == SNI_MATCH ? "match" :
	    s->sni == SNI_REQUIRED ? "required" : "off", '\0');
	offs[nlines++] = b.len;
	sbuf_printf(&b, "quota connections %llu%c",
	    (unsigned long long)s->quota_connections, '\0');
	offs[nlines++] = b.len;
	if (s->quota_rate == EGRESS_UNLIMITED)
		sbuf_printf(&b, "quota rate unlimited%c", '\0');
	else
		sbuf_printf(&b, "quota rate %llu/s%c", (unsigned long long)s->quota_rate, '\0');
	offs[nlines++] = b.len;
	if (s->quota_bytes == EGRESS_UNLIMITED)
		sbuf_printf(&b, "quota bytes unlimited%c", '\0');
	else
		sbuf_printf(&b, "quota bytes %llu%c", (unsigned long long)s->quota_bytes, '\0');
	offs[nlines++] = b.len;
	sbuf_printf(&b, "timeout connect %llus%c", (unsigned long long)s->timeout_connect, '\0');
	offs[nlines++] = b.len;
	sbuf_printf(&b, "timeout dns %llus%c", (unsigned long long)s->timeout_dns, '\0');
	offs[nlines++] = b.len;
	sbuf_printf(&b, "timeout idle %llus%c", (unsigned long long)s->timeout_idle, '\0');
	offs[nlines++] = b.len;
	sbuf_printf(&b, "timeout handshake %llus%c",
	    (unsigned long long)s->timeout_handshake, '\0');
	offs[nlines++] = b.len;
	sbuf_printf(&b, "pin min %llus max %llus%c", (unsigned long long)s->pin_min,
	    (unsigned long long)s->pin_max, '\0');

	lines = xcalloc(nlines, sizeof(*lines));
	for (i = 0; i < nlines; i++)
		lines[i] = b.s + offs[i];
	qsort(lines, nlines, sizeof(*lines), line_cmp);
	out = xmalloc(b.len + 1);
	p->canonical_len = 0;
	for (i = 0; i < nlines; i++) {
		size_t n = strlen(lines[i]);

		memcpy(out + p->canonical_len, lines[i], n);
		p->canonical_len += n;
		out[p->canonical_len++] = '\n';
	}
	out[p->canonical_len] = '\0';
	p->canonical = out;
	seal_digest(p->canonical, p->canonical_len, p->digest);
	free(lines);
	free(offs);
	free(b.s);
}

/* Drops permit ranges that another one contains, then sorts the rest. */
static void
policy_permit_normalise(struct policy *p)
{
	size_t i, j, n = 0;

	for (i = 0; i < p->npermit; i++) {
		bool redundant = false;

		for (j = 0; j < p->npermit && !redundant; j++) {
			if (i == j || p->permit[j].a.family != p->permit[i].a.family)
				continue;
			if (p->permit[j].plen < p->permit[i].plen &&
			    cidr_contains(&p->permit[j], &p->permit[i].a))
				redundant = true;
			else if (p->permit[j].plen == p->permit[i].plen && j < i &&
			    cidr_contains(&p->permit[j], &p->permit[i].a))
				redundant = true;      /* a duplicate: keep the first */
		}
		if (!redundant)
			p->permit[n++] = p->permit[i];
	}
	p->npermit = n;
	p->set.permit = p->permit;
	p->set.npermit = p->npermit;
}

/* --- entry points ------------------------------------------------------------------- */

static struct policy *
policy_new(void)
{
	struct policy *p = xcalloc(1, sizeof(*p));

	p->set.sni = SNI_MATCH;
	p->set.quota_connections = POLICY_DEF_CONNECTIONS;
	p->set.quota_rate = EGRESS_UNLIMITED;
	p->set.quota_bytes = EGRESS_UNLIMITED;
	p->set.timeout_connect = POLICY_DEF_CONNECT;
	p->set.timeout_dns = POLICY_DEF_DNS;
	p->set.timeout_idle = POLICY_DEF_IDLE;
	p->set.timeout_handshake = POLICY_DEF_HANDSHAKE;
	p->set.pin_min = POLICY_DEF_PIN_MIN;
	p->set.pin_max = POLICY_DEF_PIN_MAX;
	return p;
}

void
policy_free(struct policy *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nrules; i++) {
		free(p->rules[i].host);
		portset_free(&p->rules[i].allow);
		portset_free(&p->rules[i].deny);
	}
	free(p->rules);
	free(p->exact.slot);
	free(p->wild.slot);
	free(p->permit);
	free(p->canonical);
	for (size_t i = 0; i < p->nsrcs; i++)
		free(p->srcs[i].name);
	free(p->srcs);
	free(p);
}

/* The lines of one file (the top one or an included one), first_line its first's number. */
static void
parse_lines(struct parse *ps, const uint8_t *buf, size_t len, unsigned first_line)
{
	const char *s = (const char *)buf, *end = s + len;

	ps->line = first_line;
	while (s < end && ps->d->nerrors < EGRESS_POLICY_MAX_ERRORS) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		const char *nul = memchr(s, '\0', (size_t)(eol - s));

		if (nul != NULL)
			parse_error(ps, (size_t)(nul - s) + 1, "NUL byte");
		else
			parse_line(ps, s, (size_t)(eol - s));
		s = nl ? nl + 1 : end;
		ps->line++;
	}
}

/*
 * Parses the lines of buf; first_line is the file line number of buf's first byte (a
 * sealed file's body starts after its header). inc opens what include lines name (NULL:
 * they are refused; sealed says why). Returns NULL on any error.
 */
struct policy *
policy_parse_body(const char *file, const uint8_t *buf, size_t len, unsigned first_line,
    const struct policy_includer *inc, bool sealed, struct policy_diag *d)
{
	struct parse ps;

	memset(&ps, 0, sizeof(ps));
	ps.file = file;
	ps.d = d;
	ps.inc = inc;
	ps.sealed = sealed;
	if (inc != NULL && inc->top_id != NULL)
		snprintf(ps.ids[0], sizeof(ps.ids[0]), "%s", inc->top_id);
	ps.p = policy_new();
	ps.p->srcs = xcalloc(1, sizeof(*ps.p->srcs));
	ps.p->srcs[0].name = xstrdup(file);
	ps.p->nsrcs = 1;
	if (len > EGRESS_POLICY_MAX_BYTES) {
		parse_error(&ps, 0, "policy larger than %u bytes", EGRESS_POLICY_MAX_BYTES);
		policy_free(ps.p);
		return NULL;
	}
	parse_lines(&ps, buf, len, first_line);
	if (d->nerrors == 0 && ps.p->set.pin_min > ps.p->set.pin_max) {
		ps.line = ps.seen_pin_min ? ps.seen_pin_min : ps.seen_pin_max;
		parse_error(&ps, 1, "pin min (%llus) is above pin max (%llus)",
		    (unsigned long long)ps.p->set.pin_min, (unsigned long long)ps.p->set.pin_max);
	}
	if (d->nerrors != 0) {
		policy_free(ps.p);
		return NULL;
	}
	for (size_t i = 0; i < ps.p->nrules; i++) {
		portset_merge(&ps.p->rules[i].allow);
		portset_merge(&ps.p->rules[i].deny);
	}
	policy_permit_normalise(ps.p);
	if (ps.nallow == 0) {
		ps.line = 0;
		d->warnings = xreallocarray(d->warnings, d->nwarnings + 1, sizeof(char *));
		xasprintf(&d->warnings[d->nwarnings++],
		    "%s: warning: no allow rule: every request will be denied", file);
	}
	policy_make_canonical(ps.p);
	return ps.p;
}

const struct policy_settings *
policy_settings(const struct policy *p)
{
	return &p->set;
}

size_t
policy_rule_count(const struct policy *p)
{
	return p->nrules;
}

enum policy_mac_state
policy_mac_state(const struct policy *p)
{
	return p->mac;
}

void
policy_set_mac_state(struct policy *p, enum policy_mac_state m)
{
	p->mac = m;
}

void
policy_set_sig(struct policy *p, const uint8_t sig[EGRESS_ED25519_SIGLEN], unsigned line)
{
	memcpy(p->sig, sig, EGRESS_ED25519_SIGLEN);
	p->sig_line = line;
}

const uint8_t *
policy_sig_ref(const struct policy *p, unsigned *line)
{
	*line = p->sig_line;
	return p->sig_line != 0 ? p->sig : NULL;
}

char *
policy_canonical(const struct policy *p, size_t *len)
{
	*len = p->canonical_len;
	return xstrndup(p->canonical, p->canonical_len);
}

const char *
policy_canonical_ref(const struct policy *p, size_t *len)
{
	*len = p->canonical_len;
	return p->canonical;
}

void
policy_digest(const struct policy *p, char out[EGRESS_DIGEST_STRLEN])
{
	memcpy(out, p->digest, EGRESS_DIGEST_STRLEN);
}

/* The rule of host '*' (parse_rule_any), or NULL. */
static const struct rule *
policy_any_rule(const struct policy *p)
{
	size_t idx = htab_find(&p->exact, p->rules, "*", 1);

	return idx != 0 ? &p->rules[idx - 1] : NULL;
}

/* The range of the rule of every host that has port, or NULL. */
static const struct portrange *
policy_match_any(const struct policy *p, uint16_t port, bool deny)
{
	const struct rule *r = policy_any_rule(p);

	return r != NULL ? portset_match(deny ? &r->deny : &r->allow, port) : NULL;
}

/*
 * The rule that matches h:port, as written: exact first, then wildcards, longest first,
 * then the rule of every host.
 */
static const struct portrange *
policy_match(const struct policy *p, const struct host *h, uint16_t port, bool deny)
{
	size_t n = strlen(h->name), idx;
	const struct portrange *line;

	idx = htab_find(&p->exact, p->rules, h->name, n);
	if (idx != 0) {
		const struct rule *r = &p->rules[idx - 1];

		line = portset_match(deny ? &r->deny : &r->allow, port);
		if (line != NULL)
			return line;
	}
	if (h->kind != HOST_NAME || p->wild.n == 0)
		return policy_match_any(p, port, deny);
	for (const char *dot = memchr(h->name, '.', n); dot != NULL;
	    dot = memchr(dot + 1, '.', n - (size_t)(dot + 1 - h->name))) {
		const char *suffix = dot + 1;

		idx = htab_find(&p->wild, p->rules, suffix, n - (size_t)(suffix - h->name));
		if (idx != 0) {
			const struct rule *r = &p->rules[idx - 1];

			line = portset_match(deny ? &r->deny : &r->allow, port);
			if (line != NULL)
				return line;
		}
	}
	return policy_match_any(p, port, deny);
}

/* The rule's line in the top file: its own, or the include line that brought it in. */
static unsigned
policy_top_line(const struct policy *p, const struct portrange *r)
{
	unsigned s = r->src, line = r->line;

	while (s != 0 && s < p->nsrcs) {
		line = p->srcs[s].line;
		s = p->srcs[s].parent;
	}
	return line;
}

bool
policy_denies(const struct policy *p, const struct host *h, uint16_t port, unsigned *line)
{
	const struct portrange *r = policy_match(p, h, port, true);

	if (line != NULL)
		*line = r != NULL ? policy_top_line(p, r) : 0;
	return r != NULL;
}

static enum egress_reason
policy_decide_rule(const struct policy *p, const struct host *h, uint16_t port,
    const struct portrange **rule)
{
	if (port == 0) {
		*rule = NULL;
		return EGRESS_NOT_ALLOWLISTED;
	}
	if ((*rule = policy_match(p, h, port, true)) != NULL)
		return EGRESS_DENIED_BY_RULE;
	if ((*rule = policy_match(p, h, port, false)) != NULL)
		return EGRESS_ALLOWED;
	return EGRESS_NOT_ALLOWLISTED;
}

enum egress_reason
policy_decide(const struct policy *p, const struct host *h, uint16_t port, unsigned *line)
{
	const struct portrange *r;
	enum egress_reason why = policy_decide_rule(p, h, port, &r);

	*line = r != NULL ? policy_top_line(p, r) : 0;
	return why;
}

enum egress_reason
policy_decide_origin(const struct policy *p, const struct host *h, uint16_t port, char *out,
    size_t outlen)
{
	const struct portrange *r;
	enum egress_reason why = policy_decide_rule(p, h, port, &r);
	char via[512];

	if (r == NULL)
		snprintf(out, outlen, "-");
	else {
		policy_via(p, r->src, via, sizeof(via));
		snprintf(out, outlen, "%s:%u%s", p->srcs[r->src < p->nsrcs ? r->src : 0].name,
		    r->line, via);
	}
	return why;
}

/*
 * A port set's candidates for the smallest port the policy allows: the smallest allowed
 * port is either the start of an allow range or the port just after a deny range.
 */
static bool
policy_candidates_allow(const struct policy *p, const struct host *h, const struct rule *r,
    bool *any_deny)
{
	unsigned line;

	for (size_t i = 0; i < r->allow.nspan; i++)
		if (policy_decide(p, h, r->allow.span[i].lo, &line) == EGRESS_ALLOWED)
			return true;
	for (size_t i = 0; i < r->deny.nspan; i++) {
		*any_deny = true;
		if (r->deny.span[i].hi < 65535 &&
		    policy_decide(p, h, (uint16_t)(r->deny.span[i].hi + 1), &line) ==
		    EGRESS_ALLOWED)
			return true;
	}
	return false;
}

enum egress_reason
policy_decide_name(const struct policy *p, const struct host *h)
{
	size_t n = strlen(h->name), idx;
	bool any_deny = false;

	/* Every rule that matches the name, as policy_match visits them. */
	idx = htab_find(&p->exact, p->rules, h->name, n);
	if (idx != 0 && policy_candidates_allow(p, h, &p->rules[idx - 1], &any_deny))
		return EGRESS_ALLOWED;
	if (h->kind == HOST_NAME && p->wild.n != 0) {
		for (const char *dot = memchr(h->name, '.', n); dot != NULL;
		    dot = memchr(dot + 1, '.', n - (size_t)(dot + 1 - h->name))) {
			const char *suffix = dot + 1;

			idx = htab_find(&p->wild, p->rules, suffix, n - (size_t)(suffix - h->name));
			if (idx != 0 && policy_candidates_allow(p, h, &p->rules[idx - 1],
			    &any_deny))
				return EGRESS_ALLOWED;
		}
	}
	if (policy_any_rule(p) != NULL &&
	    policy_candidates_allow(p, h, policy_any_rule(p), &any_deny))
		return EGRESS_ALLOWED;
	return any_deny ? EGRESS_DENIED_BY_RULE : EGRESS_NOT_ALLOWLISTED;
}
