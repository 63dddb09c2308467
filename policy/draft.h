/*
 * draft.h: the draft policy written from what a workload reached (egress-policy suggest,
 * egress-run --learn; SPEC "Writing a policy without guessing"). One writer for both
 * front ends, so that a learning run and suggest over its receipts write the same draft.
 */
#ifndef EGRESS_DRAFT_H
#define EGRESS_DRAFT_H

#include <stddef.h>
#include <stdint.h>

/* Siblings under one registrable domain from which the draft writes one wildcard. */
#define DRAFT_WILDCARD_MIN 3

/* One observation: host:port was opened, or refused as not-allowlisted, so many times. */
struct draft_obs {
	const char *host;            /* canonical host (host_parse's form) */
	uint16_t port;               /* 0: not known (a DNS question, refused) */
	uint64_t opens;              /* open receipts */
	uint64_t denials;            /* not-allowlisted denials (a collapsed one counts count) */
};

/*
 * The draft for n observations (duplicates add up): a header naming source (one line of
 * printable text, e.g. "egress-policy suggest r.jsonl") and saying the draft must be
 * reviewed and sealed, then one "allow HOST PORTS" per host with its ports merged as the
 * canonical form writes them, each with a comment giving its counts. Where at least
 * DRAFT_WILDCARD_MIN distinct names directly under one registrable domain (libpsl) were
 * seen, one "allow *.DOMAIN PORTS" (their ports merged) replaces them, the names listed in
 * comments below it; never on a public suffix, never for an address. A host seen only
 * without a port is a commented-out line. Lines sorted by host as the canonical form
 * sorts them: the same observations give the same bytes in any order. Hosts are taken in
 * host_parse's canonical form; one it refuses is left out and counted in *skipped (may be
 * NULL). Pure; the result ends in '\n' and is the caller's to free.
 */
char *draft_write(const struct draft_obs *obs, size_t n, const char *source, size_t *len,
    size_t *skipped);

#endif
