/* policy-int.h: what policy.c and seal.c share and nobody else uses. */
#ifndef EGRESS_POLICY_INT_H
#define EGRESS_POLICY_INT_H

#include "policy.h"

struct policy *policy_parse_body(const char *file, const uint8_t *buf, size_t len,
    unsigned first_line, const struct policy_includer *inc, bool sealed,
    struct policy_diag *d);
void policy_set_mac_state(struct policy *p, enum policy_mac_state m);
const char *policy_canonical_ref(const struct policy *p, size_t *len);
/* The #sig header's signature and line (line 0: the policy carries none). */
void policy_set_sig(struct policy *p, const uint8_t sig[EGRESS_ED25519_SIGLEN], unsigned line);
const uint8_t *policy_sig_ref(const struct policy *p, unsigned *line);

#endif
