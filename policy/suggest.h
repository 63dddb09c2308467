/*
 * suggest.h: receipts files to a draft policy (egress-policy suggest, egress-run --learn).
 * Compiled into both programs, not into libpolicy: it reads files and needs libproto's
 * receipt scanner and jansson.
 */
#ifndef EGRESS_SUGGEST_H
#define EGRESS_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "draft.h"

struct suggest {
	const char *principal;       /* only this principal's receipts; NULL: every one */
	struct draft_obs *obs;       /* one per host:port, counts added up */
	size_t nobs, capobs;
	size_t *slot;                /* hash of host:port: obs index + 1; 0 empty */
	size_t nslot;                /* power of two, at most half full */
	uint64_t lines;              /* lines read */
	uint64_t taken;              /* lines that added to the draft */
	uint64_t bad;                /* lines that are not receipt lines (skipped) */
};

void suggest_init(struct suggest *s, const char *principal);
void suggest_free(struct suggest *s);
/*
 * One line without its newline: 1 when it adds to the draft (an open, or a deny with
 * reason not-allowlisted, of the principal asked for), 0 when it is a receipt that does
 * not (a close, a checkpoint, another principal, any other denial: a refusal of a
 * special-purpose address must never become an allow), -1 when it is not a receipt line
 * (rcpt_scan_line refuses its shape, or it is not one JSON object).
 */
int suggest_line(struct suggest *s, const char *line, size_t len);
/*
 * Every line of path ("-" is stdin). A line that is not a receipt line is skipped with a
 * warning naming path:line (a torn last line after a crash is one: egressctl receipts
 * verify tells more). Returns 0, or -1 (said why) when the file cannot be read, or when
 * it has lines and not one of them is a receipt line (not a receipts file).
 */
int suggest_file(struct suggest *s, const char *path);
/* The draft (draft_write) of what was taken; the caller frees it. */
char *suggest_draft(const struct suggest *s, const char *source, size_t *len);

#endif
