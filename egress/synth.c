/*
 * synth.c: a principal's synthetic addresses (the DNS verb, docs/native.md). A name the
 * policy allows gets an IPv4 address from synthetic-range, the same one for as long as
 * the map holds it; a connection to that address is the name again, for this map only.
 *
 * Trusts its caller for the names (canonical, from host_parse) and for the range (an
 * IPv4 CIDR conf.c validated). Pure: no I/O, no clock, no global state. Bounded: at most
 * `max` names (and never more than the range holds); past that the least recently used
 * name is recycled (and when a reload lowers max, down to it at once). Both lookups are a hash probe; the only allocation is on inserting a
 * name (its entry, and the tables doubling).
 *
 * Addresses are handed out by a cursor that walks the range and wraps, skipping the ones
 * in use: an address that was recycled is given to another name only when the cursor has
 * come round again (after every other free address of the range), so a client that kept
 * an old answer meets bad-host, not somebody else's name.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "common.h"
#include "synth.h"

struct synth_entry {
	char *name;
	size_t namelen;
	uint32_t off;                        /* offset of the address in the range */
	struct synth_entry *by_name_next;    /* hash chains */
	struct synth_entry *by_off_next;
	TAILQ_ENTRY(synth_entry) lru;        /* head: least recently used */
};

struct synth {
	uint32_t base;                       /* first address of the range, host order */
	uint32_t first, last;                /* usable offsets, inclusive */
	size_t cap;                          /* min(max, usable addresses) */
	size_t n;
	uint32_t cursor;                     /* next offset to try */
	struct synth_entry **by_name;        /* nbuckets each, NULL until the first name */
	struct synth_entry **by_off;
	size_t nbuckets;                     /* power of two, >= n */
	TAILQ_HEAD(, synth_entry) lru;
	uint64_t recycled;
};

static size_t
synth_off_bucket(const struct synth *s, uint32_t off)
{
	uint64_t h = (uint64_t)off * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (s->nbuckets - 1);
}

/* The bound: max names, or as many as the range has usable addresses. */
static size_t
synth_cap(const struct synth *s, size_t max)
{
	uint64_t usable = (uint64_t)(s->last - s->first) + 1;

	return usable < max ? (size_t)usable : max;
}

struct synth *
synth_new(const struct cidr *range, size_t max)
{
	struct synth *s;
	uint64_t size;

	if (range->a.family != AF_INET || range->plen > 32 || max == 0)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->base = (uint32_t)range->a.b[0] << 24 | (uint32_t)range->a.b[1] << 16 |
	    (uint32_t)range->a.b[2] << 8 | range->a.b[3];
	size = (uint64_t)1 << (32 - range->plen);
	if (range->plen <= 30) {
		/* Neither the network nor the broadcast address of the range. */
		s->first = 1;
		s->last = (uint32_t)(size - 2);
	} else {
		s->first = 0;
		s->last = (uint32_t)(size - 1);
	}
	s->cap = synth_cap(s, max);
	s->cursor = s->first;
	TAILQ_INIT(&s->lru);
	return s;
}

void
synth_free(struct synth *s)
{
	struct synth_entry *e;

	if (s == NULL)
		return;
	while ((e = TAILQ_FIRST(&s->lru)) != NULL) {
		TAILQ_REMOVE(&s->lru, e, lru);
		free(e->name);
		free(e);
	}
	free(s->by_name);
	free(s->by_off);
	free(s);
}

size_t
synth_count(const struct synth *s)
{
	return s->n;
}

size_t
synth_capacity(const struct synth *s)
{
	return s->cap;
}

uint64_t
synth_recycled(const struct synth *s)
{
	return s->recycled;
}

bool
synth_in_range(const struct synth *s, const struct addr *a)
{
	uint32_t v;

	if (a->family != AF_INET)
		return false;
	v = (uint32_t)a->b[0] << 24 | (uint32_t)a->b[1] << 16 | (uint32_t)a->b[2] << 8 |
	    a->b[3];
	return v - s->base <= s->last + (s->first ? 1u : 0u);
}

static void
synth_addr(const struct synth *s, uint32_t off, struct addr *out)
{
	uint32_t v = s->base + off;

	memset(out, 0, sizeof(*out));
	out->family = AF_INET;
	out->b[0] = (uint8_t)(v >> 24);
	out->b[1] = (uint8_t)(v >> 16);
	out->b[2] = (uint8_t)(v >> 8);
	out->b[3] = (uint8_t)v;
}

static struct synth_entry *
synth_find_name(const struct synth *s, const char *name, size_t len)
{
	struct synth_entry *e;

	if (s->nbuckets == 0)
		return NULL;
	for (e = s->by_name[egress_hash(name, len) & (s->nbuckets - 1)]; e != NULL;
	    e = e->by_name_next)
		if (e->namelen == len && memcmp(e->name, name, len) == 0)
			return e;
	return NULL;
}

static struct synth_entry *
synth_find_off(const struct synth *s, uint32_t off)
{
	struct synth_entry *e;

	if (s->nbuckets == 0)
		return NULL;
	for (e = s->by_off[synth_off_bucket(s, off)]; e != NULL; e = e->by_off_next)
		if (e->off == off)
			return e;
	return NULL;
}

static void
synth_link(struct synth *s, struct synth_entry *e)
{
	size_t b = egress_hash(e->name, e->namelen) & (s->nbuckets - 1);

	e->by_name_next = s->by_name[b];
	s->by_name[b] = e;
	b = synth_off_bucket(s, e->off);
	e->by_off_next = s->by_off[b];
	s->by_off[b] = e;
}

static void
synth_unlink(struct synth *s, struct synth_entry *e)
{
	struct synth_entry **pp;

	for (pp = &s->by_name[egress_hash(e->name, e->namelen) & (s->nbuckets - 1)]; *pp != e;
	    pp = &(*pp)->by_name_next)
		;
	*pp = e->by_name_next;
	for (pp = &s->by_off[synth_off_bucket(s, e->off)]; *pp != e; pp = &(*pp)->by_off_next)
		;
	*pp = e->by_off_next;
}

/* Chains stay short: the tables double once they hold as many names as buckets. */
static void
synth_grow(struct synth *s)
{
	struct synth_entry *e;
	size_t nb = s->nbuckets ? s->nbuckets * 2 : 16;

	free(s->by_name);
	free(s->by_off);
	s->nbuckets = nb;
	s->by_name = xcalloc(nb, sizeof(*s->by_name));
	s->by_off = xcalloc(nb, sizeof(*s->by_off));
	TAILQ_FOREACH(e, &s->lru, lru)
		synth_link(s, e);
}

/* The least recently used name goes; its address becomes free. */
static void
synth_recycle_lru(struct synth *s)
{
	struct synth_entry *e = TAILQ_FIRST(&s->lru);

	synth_unlink(s, e);
	TAILQ_REMOVE(&s->lru, e, lru);
	free(e->name);
	free(e);
	s->n--;
	s->recycled++;
}

size_t
synth_set_max(struct synth *s, size_t max)
{
	size_t k = 0;

	if (max == 0)
		return 0;
	s->cap = synth_cap(s, max);
	/* Bounded by n: each pass frees one entry. The tables keep their size. */
	while (s->n > s->cap) {
		synth_recycle_lru(s);
		k++;
	}
	return k;
}

int
synth_get(struct synth *s, const char *name, struct addr *out)
{
	size_t len = strlen(name);
	struct synth_entry *e;

	if (len == 0)
		return -1;
	if ((e = synth_find_name(s, name, len)) != NULL) {
		TAILQ_REMOVE(&s->lru, e, lru);
		TAILQ_INSERT_TAIL(&s->lru, e, lru);
		synth_addr(s, e->off, out);
		return 0;
	}
	if (s->n == s->cap)
		synth_recycle_lru(s);    /* full: the least recently used name goes */
	if (s->n + 1 > s->nbuckets)
		synth_grow(s);
	/* n < cap <= usable addresses: a free one exists, at most a round away. */
	while (synth_find_off(s, s->cursor) != NULL)
		s->cursor = s->cursor == s->last ? s->first : s->cursor + 1;
	e = xcalloc(1, sizeof(*e));
	e->name = xstrdup(name);
	e->namelen = len;
	e->off = s->cursor;
	s->cursor = s->cursor == s->last ? s->first : s->cursor + 1;
	synth_link(s, e);
	TAILQ_INSERT_TAIL(&s->lru, e, lru);
	s->n++;
	synth_addr(s, e->off, out);
	return 0;
}

const char *
synth_name(struct synth *s, const struct addr *a)
{
	struct synth_entry *e;
	uint32_t v;

	if (!synth_in_range(s, a))
		return NULL;
	v = (uint32_t)a->b[0] << 24 | (uint32_t)a->b[1] << 16 | (uint32_t)a->b[2] << 8 |
	    a->b[3];
	if ((e = synth_find_off(s, v - s->base)) == NULL)
		return NULL;
	/* A connection uses the name as much as a question does. */
	TAILQ_REMOVE(&s->lru, e, lru);
	TAILQ_INSERT_TAIL(&s->lru, e, lru);
	return e->name;
}
