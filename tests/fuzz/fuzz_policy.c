/*
 * fuzz_policy.c: libFuzzer target for the policy parser and the sealed format. Beyond
 * not crashing: an accepted policy's canonical form parses to the same canonical form,
 * and sealing it then loading the seal gives the same digest.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_diag d;
	struct policy *p, *q, *r;
	char d1[EGRESS_DIGEST_STRLEN], d2[EGRESS_DIGEST_STRLEN];
	char *canon, *sealed;
	size_t clen, slen;

	if (size > 65536)
		return 0;
	p = policy_load("fuzz", data, size, NULL, &d);
	if (p == NULL) {
		if (d.nerrors == 0)
			abort();
		policy_diag_free(&d);
		return 0;
	}
	policy_diag_free(&d);
	canon = policy_canonical(p, &clen);
	q = policy_load("canon", (const uint8_t *)canon, clen, NULL, &d);
	if (q == NULL) {
		fprintf(stderr, "canonical form refused: %s\n", d.nerrors ? d.errors[0] : "?");
		abort();
	}
	policy_diag_free(&d);
	policy_digest(p, d1);
	policy_digest(q, d2);
	if (strcmp(d1, d2) != 0)
		abort();
	sealed = seal_policy(p, NULL, &slen);
	r = policy_load("sealed", (const uint8_t *)sealed, slen, NULL, &d);
	if (r == NULL)
		abort();
	policy_diag_free(&d);
	policy_digest(r, d2);
	if (strcmp(d1, d2) != 0 || policy_mac_state(r) != POLICY_SEALED_NO_MAC)
		abort();
	free(canon);
	free(sealed);
	policy_free(p);
	policy_free(q);
	policy_free(r);
	return 0;
}
