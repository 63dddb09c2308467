/*
 * draft.c: the draft policy from observations (draft.h). Trusts nothing of its input: a
 * host is taken only as host_parse gives it back (so no byte of it can end a line or open
 * a directive), the source line is written with every byte outside printable ASCII
 * replaced, and counts saturate. The only state is libpsl's list, loaded once.
 *
 * Why wildcards are this careful: a draft is what a reviewer starts from, and a wildcard
 * allows names nobody saw. It is written only where at least DRAFT_WILDCARD_MIN names
 * directly under one registrable domain were reached (a.example.com, b.example.com and
 * c.example.com give *.example.com), so that it never covers more than one registrant's
 * names: a.github.io, b.github.io and c.github.io are three sites of three owners under
 * the public suffix github.io, and stay three lines.
 */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpsl.h>

#include "common.h"
#include "draft.h"
#include "policy.h"
#include "policy-int.h"

#define DRAFT_PORTS_PER_LINE 2000    /* bytes of ports on one allow line (lines <= 4096) */
#define DRAFT_COLUMN 40              /* where a rule's comment starts, when it fits */
#define DRAFT_SOURCE_MAX 1000        /* bytes of the source shown in the header */

/* --- hosts -------------------------------------------------------------------------- */

struct dobs {
	char name[EGRESS_HOST_MAX + 1];
	enum host_kind kind;
	uint16_t port;
	uint64_t opens, denials;
};

struct dhost {
	const char *name;
	enum host_kind kind;
	uint16_t *ports;             /* sorted, distinct, none 0 */
	size_t nports;
	uint64_t opens, denials;     /* on a port */
	uint64_t lookups;            /* refused without a port (DNS questions) */
	const char *parent;          /* the registrable domain it lies directly under, or NULL */
	bool folded;                 /* listed under a wildcard */
};

/* One line of the draft: a host, or a wildcard with its members. */
struct dentry {
	char host[EGRESS_HOST_MAX + 3];
	uint16_t *ports;
	size_t nports;
	uint64_t opens, denials, lookups;
	size_t *members;             /* indexes into the hosts of a wildcard */
	size_t nmembers;
};

static uint64_t
draft_add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int
dobs_cmp(const void *x, const void *y)
{
	const struct dobs *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	if (c != 0)
		return c;
	return a->port < b->port ? -1 : a->port > b->port;
}

static int
port_cmp(const void *x, const void *y)
{
	uint16_t a = *(const uint16_t *)x, b = *(const uint16_t *)y;

	return a < b ? -1 : a > b;
}

static int
dentry_cmp(const void *x, const void *y)
{
	return strcmp(((const struct dentry *)x)->host, ((const struct dentry *)y)->host);
}

/* A host with a parent, as the wildcard pass sorts them. */
struct dsib {
	const char *parent, *name;
	size_t host;                 /* index into the hosts */
};

static int
dsib_cmp(const void *x, const void *y)
{
	const struct dsib *a = x, *b = y;
	int c = strcmp(a->parent, b->parent);

	return c != 0 ? c : strcmp(a->name, b->name);
}

/*
 * The registrable domain name lies directly under, when that is one a wildcard may sit
 * on: name is LABEL.DOMAIN, DOMAIN is what libpsl calls name's registrable domain, and
 * not a public suffix itself. NULL otherwise (and for every name without libpsl's list).
 */
static const char *
draft_parent(const char *name)
{
	const psl_ctx_t *psl = policy_psl();
	const char *dot = strchr(name, '.'), *reg;

	if (psl == NULL || dot == NULL)
		return NULL;
	if ((reg = psl_registrable_domain(psl, name)) == NULL || strcmp(reg, dot + 1) != 0)
		return NULL;
	if (psl_is_public_suffix(psl, dot + 1))
		return NULL;
	return dot + 1;
}

/* Ports as the canonical form writes them (runs merged: 80-81,443), from i on; returns
 * where it stopped (at most DRAFT_PORTS_PER_LINE bytes a line). */
static size_t
draft_ports(struct sbuf *b, const uint16_t *p, size_t n, size_t i)
{
	size_t start = b->len;

	while (i < n && b->len - start < DRAFT_PORTS_PER_LINE) {
		size_t j = i;

		while (j + 1 < n && p[j + 1] == p[j] + 1)
			j++;
		if (j == i)
			sbuf_printf(b, "%s%u", b->len > start ? "," : "", p[i]);
		else
			sbuf_printf(b, "%s%u-%u", b->len > start ? "," : "", p[i], p[j]);
		i = j + 1;
	}
	return i;
}

static void
draft_counts(struct sbuf *b, uint64_t opens, uint64_t denials, uint64_t lookups)
{
	const char *sep = "";

	if (opens != 0) {
		sbuf_printf(b, "%llu connection%s", (unsigned long long)opens,
		    opens == 1 ? "" : "s");
		sep = ", ";
	}
	if (denials != 0) {
		sbuf_printf(b, "%s%llu denied (not-allowlisted)", sep,
		    (unsigned long long)denials);
		sep = ", ";
	}
	if (lookups != 0)
		sbuf_printf(b, "%s%llu name lookup%s refused, port not seen", sep,
		    (unsigned long long)lookups, lookups == 1 ? "" : "s");
	else if (opens == 0 && denials == 0)
		sbuf_printf(b, "seen");
}

/* Pads the line that starts at line_start to the comment column. */
static void
draft_pad(struct sbuf *b, size_t line_start)
{
	size_t w = b->len - line_start;

	sbuf_printf(b, "%*s# ", w < DRAFT_COLUMN ? (int)(DRAFT_COLUMN - w) : 1, "");
}

static void
draft_entry(struct sbuf *b, const struct dentry *e, const struct dhost *hosts)
{
	size_t line = b->len, i;

	if (e->nports == 0) {
		/* Only refused lookups: the port is the reviewer's to fill in. */
		sbuf_printf(b, "# allow %s PORTS", e->host);
		draft_pad(b, line);
		draft_counts(b, e->opens, e->denials, e->lookups);
		sbuf_printf(b, "\n");
		return;
	}
	sbuf_printf(b, "allow %s ", e->host);
	i = draft_ports(b, e->ports, e->nports, 0);
	draft_pad(b, line);
	if (e->nmembers != 0)
		sbuf_printf(b, "%zu names, ", e->nmembers);
	draft_counts(b, e->opens, e->denials, e->lookups);
	sbuf_printf(b, "\n");
	while (i < e->nports) {      /* more ports than one line holds: rules add up */
		sbuf_printf(b, "allow %s ", e->host);
		i = draft_ports(b, e->ports, e->nports, i);
		sbuf_printf(b, "\n");
	}
	for (size_t m = 0; m < e->nmembers; m++) {
		const struct dhost *h = &hosts[e->members[m]];
		size_t j;

		line = b->len;
		sbuf_printf(b, "#   %s ", h->name);
		j = draft_ports(b, h->ports, h->nports, 0);
		if (j < h->nports)
			sbuf_printf(b, ",...");   /* all of them are on the wildcard's lines */
		draft_pad(b, line);
		draft_counts(b, h->opens, h->denials, h->lookups);
		sbuf_printf(b, "\n");
	}
}

/* The header: where the draft came from and what to do with it. */
static void
draft_header(struct sbuf *b, const char *source)
{
	size_t n = 0;

	sbuf_printf(b, "# Draft policy written by ");
	for (const unsigned char *p = (const unsigned char *)source; *p != '\0'; p++, n++) {
		if (n == DRAFT_SOURCE_MAX) {
			sbuf_printf(b, "...");
			break;
		}
		sbuf_printf(b, "%c", *p >= 0x20 && *p < 0x7f ? *p : '?');
	}
	sbuf_printf(b, ".\n"
	    "# It allows what the workload reached, not what it should reach. Review every\n"
	    "# line (remove what it must not reach, narrow the wildcards, fill in the ports\n"
	    "# of commented-out lines), then seal it and run with the sealed file:\n"
	    "#   egress-policy seal DRAFT > POLICY.sealed\n"
	    "#   egress-run --policy ./POLICY.sealed -- CMD\n"
	    "# Counts are from the receipts: connections opened, requests denied as\n"
	    "# not-allowlisted.\n");
}

char *
draft_write(const struct draft_obs *obs, size_t n, const char *source, size_t *len,
    size_t *skipped)
{
	struct dobs *o = n ? xcalloc(n, sizeof(*o)) : NULL;
	struct dhost *hosts = n ? xcalloc(n, sizeof(*hosts)) : NULL;
	struct dentry *ents = n ? xcalloc(n, sizeof(*ents)) : NULL;
	size_t no = 0, nh = 0, ne = 0, bad = 0, nsib, i, j;
	struct dsib *sib;
	struct sbuf b;

	sbuf_init(&b);

	/* Canonical hosts, sorted, so that equal hosts and ports lie together. */
	for (i = 0; i < n; i++) {
		struct host h;
		const char *why;

		if (obs[i].host == NULL ||
		    host_parse(obs[i].host, strlen(obs[i].host), &h, &why) == -1) {
			bad++;
			continue;
		}
		memcpy(o[no].name, h.name, sizeof(o[no].name));
		o[no].kind = h.kind;
		o[no].port = obs[i].port;
		o[no].opens = obs[i].opens;
		o[no].denials = obs[i].denials;
		no++;
	}
	if (no > 1)
		qsort(o, no, sizeof(*o), dobs_cmp);
	for (i = 0; i < no; i = j) {
		struct dhost *h = &hosts[nh++];

		h->name = o[i].name;
		h->kind = o[i].kind;
		h->ports = xcalloc(no - i, sizeof(*h->ports));
		for (j = i; j < no && strcmp(o[j].name, o[i].name) == 0; j++) {
			if (o[j].port == 0) {
				h->lookups = draft_add_sat(h->lookups, draft_add_sat(o[j].opens,
				    o[j].denials));
				continue;
			}
			if (h->nports == 0 || h->ports[h->nports - 1] != o[j].port)
				h->ports[h->nports++] = o[j].port;
			h->opens = draft_add_sat(h->opens, o[j].opens);
			h->denials = draft_add_sat(h->denials, o[j].denials);
		}
		if (h->kind == HOST_NAME && h->nports != 0)
			h->parent = draft_parent(h->name);
	}

	/* Wildcards: runs of at least DRAFT_WILDCARD_MIN hosts with one parent. */
	sib = xcalloc(nh + 1, sizeof(*sib));
	for (i = nsib = 0; i < nh; i++)
		if (hosts[i].parent != NULL) {
			sib[nsib].parent = hosts[i].parent;
			sib[nsib].name = hosts[i].name;
			sib[nsib++].host = i;
		}
	if (nsib > 1)
		qsort(sib, nsib, sizeof(*sib), dsib_cmp);
	for (size_t k = 0, m; k < nsib; k = m) {
		struct dentry *e;
		size_t total = 0;

		for (m = k; m < nsib && strcmp(sib[m].parent, sib[k].parent) == 0; m++)
			total += hosts[sib[m].host].nports;
		if (m - k < DRAFT_WILDCARD_MIN)
			continue;
		e = &ents[ne++];
		snprintf(e->host, sizeof(e->host), "*.%s", sib[k].parent);
		e->ports = xcalloc(total, sizeof(*e->ports));
		e->members = xcalloc(m - k, sizeof(*e->members));
		for (size_t q = k; q < m; q++) {
			struct dhost *h = &hosts[sib[q].host];

			h->folded = true;
			e->members[e->nmembers++] = sib[q].host;
			memcpy(e->ports + e->nports, h->ports, h->nports * sizeof(*h->ports));
			e->nports += h->nports;
			e->opens = draft_add_sat(e->opens, h->opens);
			e->denials = draft_add_sat(e->denials, h->denials);
			e->lookups = draft_add_sat(e->lookups, h->lookups);
		}
		qsort(e->ports, e->nports, sizeof(*e->ports), port_cmp);
		for (size_t q = j = 0; q < e->nports; q++)
			if (j == 0 || e->ports[j - 1] != e->ports[q])
				e->ports[j++] = e->ports[q];
		e->nports = j;
	}
	free(sib);
	for (i = 0; i < nh; i++) {
		struct dentry *e;

		if (hosts[i].folded)
			continue;
		e = &ents[ne++];
		snprintf(e->host, sizeof(e->host), "%s", hosts[i].name);
		e->ports = xcalloc(hosts[i].nports + 1, sizeof(*e->ports));
		memcpy(e->ports, hosts[i].ports, hosts[i].nports * sizeof(*e->ports));
		e->nports = hosts[i].nports;
		e->opens = hosts[i].opens;
		e->denials = hosts[i].denials;
		e->lookups = hosts[i].lookups;
	}
	if (ne > 1)
		qsort(ents, ne, sizeof(*ents), dentry_cmp);

	b.s[0] = '\0';
	draft_header(&b, source != NULL ? source : "(unknown)");
	if (ne == 0)
		sbuf_printf(&b, "# Nothing was reached: this policy allows nothing.\n");
	for (i = 0; i < ne; i++)
		draft_entry(&b, &ents[i], hosts);

	for (i = 0; i < ne; i++) {
		free(ents[i].ports);
		free(ents[i].members);
	}
	for (i = 0; i < nh; i++)
		free(hosts[i].ports);
	free(ents);
	free(hosts);
	free(o);
	if (skipped != NULL)
		*skipped = bad;
	*len = b.len;
	return b.s;
}
