/*
 * fuzz_draft.c: libFuzzer target for the draft policy from receipts (policy/suggest.c
 * over proto/receipt.c's scanner, then policy/draft.c), the input being a receipts file.
 * Beyond not crashing: whatever the lines say, the draft is a policy policy_load accepts
 * without an error, every line of it is a comment or an "allow HOST PORTS" line (no byte
 * of a receipt can open another directive, a deny, a permit-range, an "allow *"), no
 * wildcard of it sits on a public suffix, it has no more rules than observations, and
 * the same observations in reverse order give the same bytes. Each input line is also
 * taken as a raw host (port from its length) straight into draft_write.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "draft.h"
#include "policy.h"
#include "suggest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_RAW 256

static void
fuzz_check_draft(const struct draft_obs *obs, size_t n)
{
	struct draft_obs *rev = n ? malloc(n * sizeof(*rev)) : NULL;
	struct policy_diag d;
	struct policy *p;
	size_t len, len2;
	char *draft, *again;

	draft = draft_write(obs, n, "fuzz", &len, NULL);
	if (len == 0 || draft[len - 1] != '\n' || strlen(draft) != len)
		abort();
	p = policy_load("draft", (const uint8_t *)draft, len, NULL, &d);
	if (p == NULL || d.nerrors != 0)
		abort();
	for (size_t i = 0; i < d.nwarnings; i++)
		if (strstr(d.warnings[i], "public suffix") != NULL || strstr(d.warnings[i],
		    "allow *") != NULL)
			abort();
	policy_diag_free(&d);
	for (const char *s = draft; *s != '\0';) {
		const char *nl = strchr(s, '\n');

		if (*s != '#') {
			if (strncmp(s, "allow ", 6) != 0 || (s[6] == '*' && s[7] != '.'))
				abort();
		}
		s = nl + 1;
	}
	if (policy_rule_count(p) > n)
		abort();
	policy_free(p);
	for (size_t i = 0; i < n; i++)
		rev[i] = obs[n - 1 - i];
	again = draft_write(rev, n, "fuzz", &len2, NULL);
	if (len2 != len || memcmp(again, draft, len) != 0)
		abort();
	free(again);
	free(draft);
	free(rev);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct draft_obs raw[FUZZ_MAX_RAW];
	char *hosts[FUZZ_MAX_RAW];
	struct suggest sg;
	size_t off = 0, nraw = 0;

	suggest_init(&sg, size > 0 && data[0] & 1 ? "build-a" : NULL);
	while (off < size) {
		const char *nl = memchr(s + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (s + off)) : size - off;

		(void)suggest_line(&sg, s + off, len);
		if (nraw < FUZZ_MAX_RAW && memchr(s + off, '\0', len) == NULL) {
			hosts[nraw] = strndup(s + off, len);
			raw[nraw].host = hosts[nraw];
			raw[nraw].port = (uint16_t)len;
			raw[nraw].opens = len & 3;
			raw[nraw].denials = len & 4;
			nraw++;
		}
		off += len + (nl ? 1 : 0);
	}
	fuzz_check_draft(sg.obs, sg.nobs);
	fuzz_check_draft(raw, nraw);
	suggest_free(&sg);
	for (size_t i = 0; i < nraw; i++)
		free(hosts[i]);
	return 0;
}
