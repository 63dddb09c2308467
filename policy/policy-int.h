/* policy-int.h: what policy.c, seal.c and draft.c share and nobody else uses. */
#ifndef EGRESS_POLICY_INT_H
#define EGRESS_POLICY_INT_H

#include <libpsl.h>

#include "policy.h"

/* A growable string; it starts allocated, so b->s + b->len is never arithmetic on NULL. */
struct sbuf {
	char *s;
	size_t len, cap;
};
void sbuf_init(struct sbuf *b);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The public suffix list: the newer of libpsl's built-in one and Debian's file. */
const psl_ctx_t *policy_psl(void);

struct policy *policy_parse_body(const char *file, const uint8_t *buf, size_t len,
    unsigned first_line, const struct policy_includer *inc, bool sealed,
    struct policy_diag *d);
void policy_set_mac_state(struct policy *p, enum policy_mac_state m);
const char *policy_canonical_ref(const struct policy *p, size_t *len);
/* The #sig header's signature and line (line 0: the policy carries none). */
void policy_set_sig(struct policy *p, const uint8_t sig[EGRESS_ED25519_SIGLEN], unsigned line);
const uint8_t *policy_sig_ref(const struct policy *p, unsigned *line);

#endif
