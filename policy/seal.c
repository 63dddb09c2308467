/*
 * seal.c: the sealed-policy format. A sealed file is the canonical body under a header:
 *
 *	#!egress-policy 1
 *	#digest sha256:<64 hex over the canonical body>
 *	#mac hmac-sha256:<64 hex over the canonical body>     (only when sealed with a key)
 *
 * Loading one checks the digest, that the body is exactly canonical (so any change of any
 * byte is noticed), and with a key the MAC, compared in constant time.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy-int.h"

#define SEAL_DIGEST_PREFIX "#digest "
#define SEAL_MAC_PREFIX "#mac "
#define SEAL_FAMILY "#!egress-policy"

void
seal_digest(const char *body, size_t len, char out[EGRESS_DIGEST_STRLEN])
{
	uint8_t md[EGRESS_SHA256_LEN];

	egress_sha256(body, len, md);
	memcpy(out, "sha256:", 7);
	egress_hex(md, sizeof(md), out + 7);
}

void
seal_mac(const struct egress_key *key, const char *body, size_t len,
    char out[EGRESS_DIGEST_STRLEN])
{
	uint8_t md[EGRESS_SHA256_LEN];

	egress_hmac_sha256(key->bytes, key->len, body, len, md);
	memcpy(out, "hmac-sha256:", 12);
	egress_hex(md, sizeof(md), out + 12);
}

char *
seal_policy(const struct policy *p, const struct egress_key *key, size_t *len)
{
	char digest[EGRESS_DIGEST_STRLEN], mac[EGRESS_DIGEST_STRLEN];
	size_t blen;
	const char *body = policy_canonical_ref(p, &blen);
	char *out;

	policy_digest(p, digest);
	if (key != NULL) {
		seal_mac(key, body, blen, mac);
		*len = (size_t)xasprintf(&out, "%s\n%s%s\n%s%s\n%.*s", EGRESS_SEAL_MAGIC,
		    SEAL_DIGEST_PREFIX, digest, SEAL_MAC_PREFIX, mac, (int)blen, body);
	} else
		*len = (size_t)xasprintf(&out, "%s\n%s%s\n%.*s", EGRESS_SEAL_MAGIC,
		    SEAL_DIGEST_PREFIX, digest, (int)blen, body);
	return out;
}

static void
seal_error(struct policy_diag *d, const char *file, unsigned line, const char *msg)
{
	if (d->nerrors >= EGRESS_POLICY_MAX_ERRORS)
		return;
	d->errors = xreallocarray(d->errors, d->nerrors + 1, sizeof(*d->errors));
	xasprintf(&d->errors[d->nerrors++], "%s:%u:1: %s", file, line, msg);
}

/* Takes one header line "PREFIX<value>\n"; returns the value's length or 0. */
static size_t
seal_header_line(const uint8_t **pos, const uint8_t *end, const char *prefix,
    const char *kind, char value[EGRESS_DIGEST_STRLEN])
{
	size_t plen = strlen(prefix), klen = strlen(kind), want = klen + 64;
	const uint8_t *p = *pos;

	if ((size_t)(end - p) < plen + want + 1 || memcmp(p, prefix, plen) != 0 ||
	    memcmp(p + plen, kind, klen) != 0 || p[plen + want] != '\n')
		return 0;
	for (size_t i = 0; i < 64; i++) {
		uint8_t c = p[plen + klen + i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	memcpy(value, p + plen, want);
	value[want] = '\0';
	*pos = p + plen + want + 1;
	return want;
}

struct policy *
policy_load(const char *file, const uint8_t *buf, size_t len, const struct egress_key *key,
    struct policy_diag *d)
{
	size_t mlen = strlen(EGRESS_SEAL_MAGIC);
	char digest[EGRESS_DIGEST_STRLEN], mac[EGRESS_DIGEST_STRLEN];
	char want[EGRESS_DIGEST_STRLEN];
	const uint8_t *pos = buf, *end = buf + len;
	bool has_mac = false;
	unsigned first_line = 2;
	struct policy *p;
	const char *canon;
	size_t clen;

	memset(d, 0, sizeof(*d));
	/*
	 * Fail closed: a file that claims to be sealed ("#!egress-policy" ...) but not in the
	 * one format we know is refused, never read as a plain policy whose header lines
	 * would be mere comments.
	 */
	if (len >= sizeof(SEAL_FAMILY) - 1 && memcmp(buf, SEAL_FAMILY, sizeof(SEAL_FAMILY) - 1) == 0 &&
	    (len < mlen + 1 || memcmp(buf, EGRESS_SEAL_MAGIC, mlen) != 0 || buf[mlen] != '\n')) {
		seal_error(d, file, 1, "unsupported seal header (expected exactly '"
		    EGRESS_SEAL_MAGIC "' and a newline)");
		return NULL;
	}
	if (len < mlen + 1 || memcmp(buf, EGRESS_SEAL_MAGIC, mlen) != 0 || buf[mlen] != '\n') {
		/* A plain policy: nothing to verify, nothing to trust beyond its text. */
		if (key != NULL) {
			seal_error(d, file, 1, "not sealed: a key was given but the policy "
			    "carries no MAC (seal it with egress-policy seal --key)");
			return NULL;
		}
		return policy_parse_body(file, buf, len, 1, d);
	}
	pos += mlen + 1;
	if (seal_header_line(&pos, end, SEAL_DIGEST_PREFIX, "sha256:", digest) == 0) {
		seal_error(d, file, 2, "expected '#digest sha256:' and 64 lower-case hex digits");
		return NULL;
	}
	first_line = 3;
	if (end - pos >= 5 && memcmp(pos, SEAL_MAC_PREFIX, 5) == 0) {
		if (seal_header_line(&pos, end, SEAL_MAC_PREFIX, "hmac-sha256:", mac) == 0) {
			seal_error(d, file, 3,
			    "expected '#mac hmac-sha256:' and 64 lower-case hex digits");
			return NULL;
		}
		has_mac = true;
		first_line = 4;
	}
	seal_digest((const char *)pos, (size_t)(end - pos), want);
	if (strcmp(want, digest) != 0) {
		seal_error(d, file, 2, "digest mismatch: the sealed body was changed after "
		    "sealing");
		return NULL;
	}
	if (key != NULL) {
		if (!has_mac) {
			seal_error(d, file, 3, "no MAC: the policy was sealed without a key");
			return NULL;
		}
		seal_mac(key, (const char *)pos, (size_t)(end - pos), want);
		if (egress_timingsafe_bcmp(want, mac, strlen(want)) != 0) {
			seal_error(d, file, 3, "MAC mismatch: wrong key, or the policy was "
			    "sealed by someone else");
			return NULL;
		}
	}
	p = policy_parse_body(file, pos, (size_t)(end - pos), first_line, d);
	if (p == NULL)
		return NULL;
	canon = policy_canonical_ref(p, &clen);
	if (clen != (size_t)(end - pos) || memcmp(canon, pos, clen) != 0) {
		/* Cannot happen with a matching digest unless the sealer was not ours. */
		unsigned line = first_line;
		for (size_t i = 0; i < clen && i < (size_t)(end - pos) && canon[i] == pos[i]; i++)
			if (canon[i] == '\n')
				line++;
		seal_error(d, file, line, "sealed body is not in canonical form");
		policy_free(p);
		return NULL;
	}
	policy_set_mac_state(p, !has_mac ? POLICY_SEALED_NO_MAC :
	    key != NULL ? POLICY_SEALED_MAC_OK : POLICY_SEALED_MAC_UNCHECKED);
	return p;
}
