/*
 * seal.c: the sealed-policy format. A sealed file is the canonical body under a header:
 *
 *	#!egress-policy 1
 *	#digest sha256:<64 hex over the canonical body>
 *	#mac hmac-sha256:<64 hex over the canonical body>     (only when sealed with a key)
 *	#sig ed25519:<128 hex over the canonical body>        (only when sealed with --sign-key)
 *
 * in that order, each line at most once. Loading one checks the digest, that the body is
 * exactly canonical (so any change of any byte is noticed), and with a key the MAC,
 * compared in constant time. The header is untrusted bytes: each line is parsed in place
 * against its one exact form, looking at no more bytes than that form has. The signature
 * is checked apart (policy_sig_check), against public keys: whoever verifies it holds
 * nothing with which a policy could be sealed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy-int.h"

#define SEAL_DIGEST_PREFIX "#digest "
#define SEAL_MAC_PREFIX "#mac "
#define SEAL_SIG_PREFIX "#sig "
#define SEAL_SIG_ALG "ed25519:"
#define SEAL_SIG_HEX (2 * EGRESS_ED25519_SIGLEN)
/* "#sig ed25519:" + 128 hex digits, then the newline */
#define SEAL_SIG_LINE (sizeof(SEAL_SIG_PREFIX SEAL_SIG_ALG) - 1 + SEAL_SIG_HEX)
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
seal_policy_signed(const struct policy *p, const struct egress_key *key, void *sign_key,
    size_t *len)
{
	char digest[EGRESS_DIGEST_STRLEN], mac[EGRESS_DIGEST_STRLEN], sig[SEAL_SIG_HEX + 1];
	uint8_t raw[EGRESS_ED25519_SIGLEN];
	size_t blen;
	const char *body = policy_canonical_ref(p, &blen);
	char *out;

	policy_digest(p, digest);
	if (key != NULL)
		seal_mac(key, body, blen, mac);
	if (sign_key != NULL) {
		if (egress_ed25519_sign(sign_key, body, blen, raw) == -1)
			return NULL;
		egress_hex(raw, sizeof(raw), sig);
	}
	*len = (size_t)xasprintf(&out, "%s\n%s%s\n%s%s%s%s%s%s%.*s", EGRESS_SEAL_MAGIC,
	    SEAL_DIGEST_PREFIX, digest,
	    key != NULL ? SEAL_MAC_PREFIX : "", key != NULL ? mac : "", key != NULL ? "\n" : "",
	    sign_key != NULL ? SEAL_SIG_PREFIX SEAL_SIG_ALG : "", sign_key != NULL ? sig : "",
	    sign_key != NULL ? "\n" : "", (int)blen, body);
	return out;
}

char *
seal_policy(const struct policy *p, const struct egress_key *key, size_t *len)
{
	return seal_policy_signed(p, key, NULL, len);
}

static void
seal_error_at(struct policy_diag *d, const char *file, unsigned line, size_t col,
    const char *msg)
{
	if (d->nerrors >= EGRESS_POLICY_MAX_ERRORS)
		return;
	d->errors = xreallocarray(d->errors, d->nerrors + 1, sizeof(*d->errors));
	xasprintf(&d->errors[d->nerrors++], "%s:%u:%zu: %s", file, line, col, msg);
}

static void
seal_error(struct policy_diag *d, const char *file, unsigned line, const char *msg)
{
	seal_error_at(d, file, line, 1, msg);
}

static bool
seal_lower_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static uint8_t
seal_hex_value(uint8_t c)
{
	return (uint8_t)(c <= '9' ? c - '0' : c - 'a' + 10);
}

/* True when the line at p begins with word (a header's name, e.g. "#sig"). */
static bool
seal_starts(const uint8_t *p, const uint8_t *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* The name of the header line at p ("#digest", "#mac", "#sig"), or NULL. */
static const char *
seal_header_name(const uint8_t *p, const uint8_t *end)
{
	static const char *const names[] = { "#digest", "#mac", "#sig" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (seal_starts(p, end, names[i]))
			return names[i];
	return NULL;
}

/*
 * One "#sig ed25519:<128 lower-case hex>\n" line at *pos (which begins with "#sig"):
 * 0 with the signature decoded and *pos past the line, or -1 with the 1-based column of
 * the first wrong byte and why. Looks at most at SEAL_SIG_LINE + 1 bytes.
 */
static int
seal_sig_line(const uint8_t **pos, const uint8_t *end, uint8_t sig[EGRESS_ED25519_SIGLEN],
    size_t *col, const char **why)
{
	const uint8_t *p = *pos;
	size_t avail = (size_t)(end - p), at = sizeof(SEAL_SIG_PREFIX) - 1;

	if (avail <= at - 1 || p[at - 1] != ' ') {
		*col = at;
		*why = "expected one space after '#sig'";
		return -1;
	}
	for (size_t i = 0; i < sizeof(SEAL_SIG_ALG) - 1; i++, at++)
		if (at >= avail || p[at] != (uint8_t)SEAL_SIG_ALG[i]) {
			*col = sizeof(SEAL_SIG_PREFIX);
			*why = "unsupported signature: expected 'ed25519:' and 128 lower-case "
			    "hex digits";
			return -1;
		}
	for (size_t i = 0; i < SEAL_SIG_HEX; i++, at++) {
		if (at >= avail || p[at] == '\n') {
			*col = at + 1;
			*why = "signature too short: expected 128 lower-case hex digits";
			return -1;
		}
		if (!seal_lower_hex(p[at])) {
			*col = at + 1;
			*why = "expected a lower-case hex digit in the signature";
			return -1;
		}
	}
	if (at >= avail || p[at] != '\n') {
		*col = at + 1;
		*why = at >= avail ? "the #sig line does not end in a newline" :
		    "signature too long: expected a newline after 128 hex digits";
		return -1;
	}
	p += sizeof(SEAL_SIG_PREFIX SEAL_SIG_ALG) - 1;
	for (size_t i = 0; i < EGRESS_ED25519_SIGLEN; i++)
		sig[i] = (uint8_t)(seal_hex_value(p[2 * i]) << 4 | seal_hex_value(p[2 * i + 1]));
	*pos += SEAL_SIG_LINE + 1;
	return 0;
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
	return policy_load_inc(file, buf, len, key, NULL, d);
}

struct policy *
policy_load_inc(const char *file, const uint8_t *buf, size_t len, const struct egress_key *key,
    const struct policy_includer *inc, struct policy_diag *d)
{
	size_t mlen = strlen(EGRESS_SEAL_MAGIC);
	char digest[EGRESS_DIGEST_STRLEN], mac[EGRESS_DIGEST_STRLEN];
	char want[EGRESS_DIGEST_STRLEN];
	const uint8_t *pos = buf, *end = buf + len;
	uint8_t sig[EGRESS_ED25519_SIGLEN];
	bool has_mac = false;
	unsigned first_line = 2, sig_line = 0;
	const char *name;
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
		return policy_parse_body(file, buf, len, 1, inc, false, d);
	}
	pos += mlen + 1;
	if ((name = seal_header_name(pos, end)) != NULL && strcmp(name, "#digest") != 0) {
		seal_error(d, file, 2, strcmp(name, "#sig") == 0 ?
		    "'#sig' without '#digest' before it (the header is '" EGRESS_SEAL_MAGIC
		    "', '#digest', then '#mac' and '#sig' when present)" :
		    "'#mac' without '#digest' before it (the header is '" EGRESS_SEAL_MAGIC
		    "', '#digest', then '#mac' and '#sig' when present)");
		return NULL;
	}
	if (seal_header_line(&pos, end, SEAL_DIGEST_PREFIX, "sha256:", digest) == 0) {
		seal_error(d, file, 2, "expected '#digest sha256:' and 64 lower-case hex digits");
		return NULL;
	}
	first_line = 3;
	if (seal_starts(pos, end, "#mac")) {
		if (seal_header_line(&pos, end, SEAL_MAC_PREFIX, "hmac-sha256:", mac) == 0) {
			seal_error(d, file, first_line,
			    "expected '#mac hmac-sha256:' and 64 lower-case hex digits");
			return NULL;
		}
		has_mac = true;
		first_line++;
	}
	if (seal_starts(pos, end, "#sig")) {
		size_t col;
		const char *why;

		if (seal_sig_line(&pos, end, sig, &col, &why) == -1) {
			seal_error_at(d, file, first_line, col, why);
			return NULL;
		}
		sig_line = first_line++;
	}
	/* The body of a sealed file is canonical, so never a header's second appearance. */
	if ((name = seal_header_name(pos, end)) != NULL) {
		char msg[160];

		snprintf(msg, sizeof(msg), "'%s' repeated or out of order (the header is '"
		    EGRESS_SEAL_MAGIC "', '#digest', then '#mac' and '#sig' when present, "
		    "each once)", name);
		seal_error(d, file, first_line, msg);
		return NULL;
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
	p = policy_parse_body(file, pos, (size_t)(end - pos), first_line, NULL, true, d);
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
	if (sig_line != 0)
		policy_set_sig(p, sig, sig_line);
	return p;
}

bool
policy_has_sig(const struct policy *p)
{
	unsigned line;

	return policy_sig_ref(p, &line) != NULL;
}

enum policy_sig_state
policy_sig_check(const struct policy *p, const char *file, void *const *pubkeys, size_t n,
    size_t *which, char *why, size_t whylen)
{
	unsigned line;
	const uint8_t *sig = policy_sig_ref(p, &line);
	const char *body;
	size_t blen;

	if (policy_mac_state(p) == POLICY_UNSEALED) {
		snprintf(why, whylen, "%s:1:1: not sealed: a signature by a trusted key is "
		    "required (egress-policy seal --sign-key)", file);
		return POLICY_SIG_NOT_SEALED;
	}
	if (sig == NULL) {
		snprintf(why, whylen, "%s:1:1: no signature: the policy carries no '#sig' line "
		    "and a signature by a trusted key is required (egress-policy seal "
		    "--sign-key)", file);
		return POLICY_SIG_NONE;
	}
	/* The body was checked to be p's canonical form, so these are the signed bytes. */
	body = policy_canonical_ref(p, &blen);
	for (size_t i = 0; i < n; i++)
		if (pubkeys[i] != NULL && egress_ed25519_verify(pubkeys[i], body, blen, sig)) {
			if (which != NULL)
				*which = i;
			return POLICY_SIG_OK;
		}
	if (n == 1)
		snprintf(why, whylen, "%s:%u:%zu: signature does not verify under the trusted "
		    "public key: signed with another key, or changed after signing", file, line,
		    sizeof(SEAL_SIG_PREFIX SEAL_SIG_ALG));
	else
		snprintf(why, whylen, "%s:%u:%zu: signature does not verify under any of the %zu "
		    "trusted public keys: signed with another key, or changed after signing",
		    file, line, sizeof(SEAL_SIG_PREFIX SEAL_SIG_ALG), n);
	return POLICY_SIG_BAD;
}
