/*
 * suggest.c: receipts files to draft observations (suggest.h). Trusts nothing of the
 * files: a line is a receipt only when rcpt_scan_line (proto/receipt.c, the bounded
 * scanner egressctl uses) accepts its shape and jansson reads it as one object; lines
 * are bounded by RCPT_INPUT_MAX; a host is taken only when it is a string, and
 * draft_write then takes it only in host_parse's canonical form. Nothing here checks the
 * chain or the MACs (egressctl receipts verify does): a draft is reviewed by a person
 * before it is sealed, and a forged line can only add a line to that review.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common.h"
#include "log.h"
#include "receipt.h"
#include "suggest.h"

void
suggest_init(struct suggest *s, const char *principal)
{
	memset(s, 0, sizeof(*s));
	s->principal = principal;
}

void
suggest_free(struct suggest *s)
{
	for (size_t i = 0; i < s->nobs; i++)
		free((char *)s->obs[i].host);
	free(s->obs);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

static size_t
suggest_hash(const char *host, uint16_t port)
{
	return egress_hash(host, strlen(host)) * 31 + port;
}

/* The observation of host:port, made when it is new. */
static struct draft_obs *
suggest_obs(struct suggest *s, const char *host, uint16_t port)
{
	size_t i;

	if ((s->nobs + 1) * 2 > s->nslot) {
		size_t n = s->nslot ? s->nslot * 2 : 64;

		free(s->slot);
		s->slot = xcalloc(n, sizeof(*s->slot));
		s->nslot = n;
		for (size_t k = 0; k < s->nobs; k++) {
			for (i = suggest_hash(s->obs[k].host, s->obs[k].port) & (n - 1);
			    s->slot[i] != 0; i = (i + 1) & (n - 1))
				;
			s->slot[i] = k + 1;
		}
	}
	for (i = suggest_hash(host, port) & (s->nslot - 1); s->slot[i] != 0;
	    i = (i + 1) & (s->nslot - 1)) {
		struct draft_obs *o = &s->obs[s->slot[i] - 1];

		if (o->port == port && strcmp(o->host, host) == 0)
			return o;
	}
	if (s->nobs == s->capobs) {
		s->capobs = s->capobs ? s->capobs * 2 : 64;
		s->obs = xreallocarray(s->obs, s->capobs, sizeof(*s->obs));
	}
	s->slot[i] = s->nobs + 1;
	memset(&s->obs[s->nobs], 0, sizeof(s->obs[0]));
	s->obs[s->nobs].host = xstrdup(host);
	s->obs[s->nobs].port = port;
	return &s->obs[s->nobs++];
}

static uint64_t
suggest_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int
suggest_line(struct suggest *s, const char *line, size_t len)
{
	struct rcpt_scan sc;
	json_error_t jerr;
	json_t *o, *port, *count;
	const char *host, *principal, *reason;
	bool open, deny;
	uint16_t p = 0;
	int rc = 0;

	if (len > RCPT_INPUT_MAX || rcpt_scan_line(line, len, &sc) == -1)
		return -1;
	open = rcpt_event_is(&sc, "open");
	deny = rcpt_event_is(&sc, "deny");
	if (!open && !deny)
		return 0;                /* close, checkpoint, repair: not a decision */
	if ((o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
	    !json_is_object(o)) {
		json_decref(o);
		return -1;
	}
	principal = json_string_value(json_object_get(o, "principal"));
	host = json_string_value(json_object_get(o, "host"));
	reason = json_string_value(json_object_get(o, "reason"));
	port = json_object_get(o, "port");
	count = json_object_get(o, "count");
	if (s->principal != NULL && (principal == NULL || strcmp(principal, s->principal) != 0))
		goto out;
	/* Only the refusals an allow rule would have prevented. */
	if (deny && (reason == NULL || strcmp(reason, "not-allowlisted") != 0))
		goto out;
	if (host == NULL)
		goto out;                /* raw bytes: nothing a rule could name */
	if (json_is_integer(port) && json_integer_value(port) >= 1 &&
	    json_integer_value(port) <= 65535)
		p = (uint16_t)json_integer_value(port);
	else if (open)
		goto out;                /* an open always names its port */
	{
		struct draft_obs *ob = suggest_obs(s, host, p);

		if (open)
			ob->opens = suggest_add(ob->opens, 1);
		else
			ob->denials = suggest_add(ob->denials, json_is_integer(count) &&
			    json_integer_value(count) > 1 ? (uint64_t)json_integer_value(count) : 1);
	}
	s->taken++;
	rc = 1;
out:
	json_decref(o);
	return rc;
}

int
suggest_file(struct suggest *s, const char *path)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	const char *name = strcmp(path, "-") == 0 ? "(stdin)" : path;
	uint64_t lineno = 0, bad = 0, good = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (fp == NULL) {
		log_warn("%s", path);
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) != -1) {
		size_t len = (size_t)n;

		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		if (len == 0)
			continue;
		if (suggest_line(s, line, len) == -1) {
			if (bad++ < 10)
				log_warnx("%s:%llu: not a receipt line, skipped (egressctl receipts "
				    "verify --file %s says more)", name, (unsigned long long)lineno,
				    name);
		} else
			good++;
	}
	if (ferror(fp)) {
		log_warn("%s", path);
		free(line);
		if (fp != stdin)
			fclose(fp);
		return -1;
	}
	free(line);
	if (fp != stdin)
		fclose(fp);
	s->lines += lineno;
	s->bad += bad;
	if (bad > 10)
		log_warnx("%s: %llu lines that are not receipt lines skipped in all", name,
		    (unsigned long long)bad);
	if (bad > 0 && good == 0) {
		log_warnx("%s: not a receipts file (no line of it is a receipt)", name);
		return -1;
	}
	return 0;
}

char *
suggest_draft(const struct suggest *s, const char *source, size_t *len)
{
	return draft_write(s->obs, s->nobs, source, len, NULL);
}
