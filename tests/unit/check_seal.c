/*
 * check_seal.c: unit tests of digests, sealing and verification: known answers computed
 * independently with libcrypto, the sealed-file format, the MAC states, and tampering (every
 * byte of a sealed file changed to every other value, deleted, or a byte inserted; the file
 * truncated at every length; lines appended); Ed25519 signatures (#sig): an RFC 8032 key
 * whose signatures libcrypto computes here independently, sign and verify, another key,
 * a changed body byte (digest recomputed), every signature digit changed, each malformed
 * #sig line with its file:line:column, header order. Key files are tested in a private
 * directory made with mkdtemp under /tmp and removed afterwards. No network.
 */
#include "config.h"

#include <check.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "policy.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define FILE_NAME "s.policy"
#define MAGIC_LINE "#!egress-policy 1\n"

/* --- helpers -------------------------------------------------------------------------- */

/* The SPEC's example policy: many lines, every kind of directive. */
static const char spec_example[] =
    "allow  api.github.com            443\n"
    "allow  *.githubusercontent.com   443\n"
    "allow  pypi.org                  80,443\n"
    "allow  mirror.example.net        8000-8100\n"
    "allow  140.82.112.4              22\n"
    "deny   evil.githubusercontent.com\n"
    "permit-range 10.20.0.0/16\n"
    "sni    match\n"
    "quota  connections 64\n"
    "quota  rate 20/s\n"
    "quota  bytes 10G\n"
    "timeout connect 10s\n"
    "timeout dns 5s\n"
    "timeout idle 300s\n"
    "timeout handshake 10s\n"
    "pin    min 30s max 10m\n";

static void
sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	ck_assert_int_eq(EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL), 1);
	ck_assert_uint_eq(n, 32);
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void
hmac_hex(const void *key, size_t keylen, const void *buf, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	ck_assert_ptr_nonnull(HMAC(EVP_sha256(), key, (int)keylen, buf, len, md, &n));
	ck_assert_uint_eq(n, 32);
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void
make_key(struct egress_key *k, uint8_t seed, size_t len)
{
	memset(k, 0, sizeof(*k));
	for (size_t i = 0; i < len; i++)
		k->bytes[i] = (uint8_t)(seed + i * 37);
	k->len = len;
}

static struct policy *
load_buf(const void *buf, size_t len, const struct egress_key *key, struct policy_diag *d)
{
	return policy_load(FILE_NAME, buf, len, key, d);
}

static struct policy *
must_load(const void *buf, size_t len, const struct egress_key *key)
{
	struct policy_diag d;
	struct policy *p = load_buf(buf, len, key, &d);

	ck_assert_msg(p != NULL, "refused: %s", d.nerrors ? d.errors[0] : "(no error)");
	ck_assert_uint_eq(d.nerrors, 0);
	policy_diag_free(&d);
	return p;
}

/* True when loading fails with at least one error, which is then checked and freed. */
static bool
load_fails(const void *buf, size_t len, const struct egress_key *key)
{
	struct policy_diag d;
	struct policy *p = load_buf(buf, len, key, &d);
	bool failed = p == NULL && d.nerrors > 0;

	policy_free(p);
	policy_diag_free(&d);
	return failed;
}

/* Seals a plain policy text; the caller frees. */
static char *
seal_text(const char *text, const struct egress_key *key, size_t *len)
{
	struct policy *p = must_load(text, strlen(text), NULL);
	char *s = seal_policy(p, key, len);

	ck_assert_ptr_nonnull(s);
	policy_free(p);
	return s;
}

/*
 * Builds a sealed file independently of the library: the header over any body, with the
 * digest and (when key is given) the MAC computed by libcrypto here.
 */
static char *
build_sealed(const char *body, const struct egress_key *key, size_t *len)
{
	char d[65], m[65], *out;
	size_t blen = strlen(body), cap = blen + 256;
	int n;

	sha256_hex(body, blen, d);
	out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	if (key != NULL) {
		hmac_hex(key->bytes, key->len, body, blen, m);
		n = snprintf(out, cap, MAGIC_LINE "#digest sha256:%s\n#mac hmac-sha256:%s\n%s", d,
		    m, body);
	} else
		n = snprintf(out, cap, MAGIC_LINE "#digest sha256:%s\n%s", d, body);
	ck_assert(n > 0 && (size_t)n < cap);
	*len = (size_t)n;
	return out;
}

static char *
canonical_text(const char *text)
{
	struct policy *p = must_load(text, strlen(text), NULL);
	size_t len;
	char *c = policy_canonical(p, &len);

	policy_free(p);
	return c;
}

static bool
is_lower_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* --- digest and MAC known answers ----------------------------------------------------- */

struct digest_case {
	const char *in;
	const char *want;            /* NULL: compare with libcrypto only */
};

static const struct digest_case digest_cases[] = {
	{ "", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	{ "abc", "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
	{ "allow x.com 443\n", NULL },
	{ spec_example, NULL },
	{ "\n", NULL },
};

START_TEST(test_digest_kat)
{
	const struct digest_case *c = &digest_cases[_i];
	char got[EGRESS_DIGEST_STRLEN], hex[65], want[EGRESS_DIGEST_STRLEN];

	memset(got, 'Z', sizeof(got));
	seal_digest(c->in, strlen(c->in), got);
	sha256_hex(c->in, strlen(c->in), hex);
	snprintf(want, sizeof(want), "sha256:%s", hex);
	ck_assert_str_eq(got, want);
	if (c->want != NULL)
		ck_assert_str_eq(got, c->want);
}
END_TEST

/* policy_digest is the SHA-256 of the canonical body, as libcrypto computes it. */
START_TEST(test_policy_digest)
{
	const char *texts[] = { spec_example, "", "allow a.com 80,443\ndeny *.b.com\n" };

	for (size_t i = 0; i < NELEMS(texts); i++) {
		struct policy *p = must_load(texts[i], strlen(texts[i]), NULL);
		size_t len;
		char *c = policy_canonical(p, &len), hex[65], want[EGRESS_DIGEST_STRLEN];
		char got[EGRESS_DIGEST_STRLEN];

		sha256_hex(c, len, hex);
		snprintf(want, sizeof(want), "sha256:%s", hex);
		policy_digest(p, got);
		ck_assert_str_eq(got, want);
		free(c);
		policy_free(p);
	}
}
END_TEST

struct mac_case {
	const uint8_t *key;
	size_t keylen;
	const char *in;
	const char *want;
};

static const uint8_t rfc4231_key1[20] = {
	0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
	0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
};
static uint8_t rfc4231_key6[131];    /* 0xaa, filled in main */

/* RFC 4231 test cases 1, 2 and 6 (a key longer than the block). */
static const struct mac_case mac_cases[] = {
	{ rfc4231_key1, sizeof(rfc4231_key1), "Hi There",
	  "hmac-sha256:b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
	{ (const uint8_t *)"Jefe", 4, "what do ya want for nothing?",
	  "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
	{ rfc4231_key6, sizeof(rfc4231_key6),
	  "Test Using Larger Than Block-Size Key - Hash Key First",
	  "hmac-sha256:60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
};

START_TEST(test_mac_kat)
{
	const struct mac_case *c = &mac_cases[_i];
	struct egress_key k;
	char got[EGRESS_DIGEST_STRLEN], hex[65], want[EGRESS_DIGEST_STRLEN];

	memset(&k, 0, sizeof(k));
	memcpy(k.bytes, c->key, c->keylen);
	k.len = c->keylen;
	seal_mac(&k, c->in, strlen(c->in), got);
	ck_assert_str_eq(got, c->want);
	hmac_hex(c->key, c->keylen, c->in, strlen(c->in), hex);
	snprintf(want, sizeof(want), "hmac-sha256:%s", hex);
	ck_assert_str_eq(got, want);
}
END_TEST

/* seal_mac over a canonical body with keys of 32, 33 and 4096 bytes, against libcrypto. */
START_TEST(test_mac_body)
{
	char *body = canonical_text(spec_example);
	const size_t lens[] = { 32, 33, 64, EGRESS_KEY_MAX };
	char prev[EGRESS_DIGEST_STRLEN] = "";

	for (size_t i = 0; i < NELEMS(lens); i++) {
		struct egress_key k;
		char got[EGRESS_DIGEST_STRLEN], hex[65], want[EGRESS_DIGEST_STRLEN];

		make_key(&k, 7, lens[i]);
		seal_mac(&k, body, strlen(body), got);
		hmac_hex(k.bytes, k.len, body, strlen(body), hex);
		snprintf(want, sizeof(want), "hmac-sha256:%s", hex);
		ck_assert_str_eq(got, want);
		/* Keys sharing a prefix still give different MACs. */
		ck_assert_str_ne(got, prev);
		memcpy(prev, got, sizeof(prev));
	}
	free(body);
}
END_TEST

/* --- the sealed format ------------------------------------------------------------------ */

START_TEST(test_seal_format)
{
	struct egress_key k;
	char *body = canonical_text(spec_example), *sealed, *want;
	size_t len, wlen;

	/* Without a key: magic, digest, body. */
	sealed = seal_text(spec_example, NULL, &len);
	want = build_sealed(body, NULL, &wlen);
	ck_assert_uint_eq(len, wlen);
	ck_assert_uint_eq(len, strlen(sealed));
	ck_assert_str_eq(sealed, want);
	ck_assert(starts_with(sealed, MAGIC_LINE "#digest sha256:"));
	ck_assert_ptr_null(strstr(sealed, "#mac"));
	free(sealed);
	free(want);

	/* With a key: magic, digest, mac, body. */
	make_key(&k, 1, 32);
	sealed = seal_text(spec_example, &k, &len);
	want = build_sealed(body, &k, &wlen);
	ck_assert_uint_eq(len, wlen);
	ck_assert_str_eq(sealed, want);
	ck_assert(starts_with(sealed, MAGIC_LINE "#digest sha256:"));
	ck_assert_uint_eq(strlen(MAGIC_LINE "#digest sha256:") + 64 + 1 +
	    strlen("#mac hmac-sha256:") + 64 + 1 + strlen(body), len);
	free(sealed);
	free(want);
	free(body);
}
END_TEST

/* load(seal(p)) is p: same canonical form and digest; sealing again is byte-identical. */
static const char *const round_trip_policies[] = {
	spec_example,
	"",
	"allow x.com 443\n",
	"deny *.example.com\nallow a.example.com 80,81-90,443\n",
	"allow [2606:4700:4700::1111] 443\npermit-range 2001:db8::/32\nsni off\n",
	"quota bytes 1T\nquota rate 1/s\npin min 0 max 7d\ntimeout idle 1d\n",
};

START_TEST(test_round_trip)
{
	const char *text = round_trip_policies[_i];
	struct policy *p = must_load(text, strlen(text), NULL), *q;
	struct egress_key k, *keys[2] = { NULL, &k };
	char d0[EGRESS_DIGEST_STRLEN], d1[EGRESS_DIGEST_STRLEN];
	size_t c0len, c1len;
	char *c0 = policy_canonical(p, &c0len);

	make_key(&k, 42, 32);
	policy_digest(p, d0);
	for (size_t i = 0; i < 2; i++) {
		size_t len, len2;
		char *sealed = seal_policy(p, keys[i], &len), *again, *c1;

		q = must_load(sealed, len, keys[i]);
		policy_digest(q, d1);
		ck_assert_str_eq(d0, d1);
		c1 = policy_canonical(q, &c1len);
		ck_assert_uint_eq(c0len, c1len);
		ck_assert_str_eq(c0, c1);
		ck_assert_uint_eq(policy_rule_count(p), policy_rule_count(q));
		ck_assert_int_eq(policy_mac_state(q),
		    keys[i] ? POLICY_SEALED_MAC_OK : POLICY_SEALED_NO_MAC);
		again = seal_policy(q, keys[i], &len2);
		ck_assert_uint_eq(len, len2);
		ck_assert_mem_eq(sealed, again, len);
		free(again);
		free(c1);
		policy_free(q);
		free(sealed);
	}
	free(c0);
	policy_free(p);
}
END_TEST

START_TEST(test_mac_state)
{
	struct egress_key k;
	struct policy *p;
	char *sealed;
	size_t len;

	make_key(&k, 3, 32);
	p = must_load(spec_example, strlen(spec_example), NULL);
	ck_assert_int_eq(policy_mac_state(p), POLICY_UNSEALED);
	policy_free(p);

	sealed = seal_text(spec_example, NULL, &len);
	p = must_load(sealed, len, NULL);
	ck_assert_int_eq(policy_mac_state(p), POLICY_SEALED_NO_MAC);
	policy_free(p);
	free(sealed);

	sealed = seal_text(spec_example, &k, &len);
	p = must_load(sealed, len, NULL);
	ck_assert_int_eq(policy_mac_state(p), POLICY_SEALED_MAC_UNCHECKED);
	policy_free(p);
	p = must_load(sealed, len, &k);
	ck_assert_int_eq(policy_mac_state(p), POLICY_SEALED_MAC_OK);
	policy_free(p);
	free(sealed);
}
END_TEST

/* --- refusals ------------------------------------------------------------------------------ */

START_TEST(test_refuse_key_mismatch)
{
	struct egress_key k, other;
	char *sealed;
	size_t len;

	make_key(&k, 5, 32);

	/* A plain policy loaded with a key carries no MAC. */
	ck_assert(load_fails(spec_example, strlen(spec_example), &k));
	ck_assert(load_fails("", 0, &k));

	/* A sealed file without a MAC, loaded with a key. */
	sealed = seal_text(spec_example, NULL, &len);
	ck_assert(load_fails(sealed, len, &k));
	free(sealed);

	sealed = seal_text(spec_example, &k, &len);
	/* Another key. */
	make_key(&other, 6, 32);
	ck_assert(load_fails(sealed, len, &other));
	/* The same key with its last byte changed. */
	other = k;
	other.bytes[31] ^= 0x80;
	ck_assert(load_fails(sealed, len, &other));
	/*
	 * The same key with one byte more (not 0x00: HMAC pads a short key with zeros, so
	 * K and K||0x00 are one key by construction).
	 */
	other = k;
	other.bytes[32] = 0x5a;
	other.len = 33;
	ck_assert(load_fails(sealed, len, &other));
	/* A prefix of the key. */
	other = k;
	other.len = 31;
	ck_assert(load_fails(sealed, len, &other));
	/* Still fine with the right key. */
	ck_assert(!load_fails(sealed, len, &k));
	free(sealed);
}
END_TEST

/* Recomputing the digest after a change is caught by the MAC, not without a key. */
START_TEST(test_refuse_forged_digest)
{
	struct egress_key k;
	char *sealed, *body, *forged, *mac;
	size_t len, blen, hdr;
	char hex[65];
	struct policy *p;

	make_key(&k, 9, 32);
	sealed = seal_text(spec_example, &k, &len);
	body = canonical_text("allow evil.com 443\n");
	blen = strlen(body);
	mac = strstr(sealed, "#mac ");
	ck_assert_ptr_nonnull(mac);
	hdr = (size_t)(strchr(mac, '\n') + 1 - sealed);
	forged = malloc(hdr + blen + 1);
	ck_assert_ptr_nonnull(forged);
	memcpy(forged, sealed, hdr);
	memcpy(forged + hdr, body, blen + 1);
	sha256_hex(body, blen, hex);
	memcpy(forged + strlen(MAGIC_LINE "#digest sha256:"), hex, 64);

	ck_assert(load_fails(forged, hdr + blen, &k));
	/* Without the key the MAC is not checked, and the state says so. */
	p = must_load(forged, hdr + blen, NULL);
	ck_assert_int_eq(policy_mac_state(p), POLICY_SEALED_MAC_UNCHECKED);
	policy_free(p);
	free(forged);
	free(body);
	free(sealed);
}
END_TEST

/* Sealed files built here, with a correct digest (and MAC), whose body is not canonical. */
static const char *const noncanonical_bodies[] = {
	"allow x.com 443\n",                                    /* defaults missing */
	"# a comment\n%s",
	"%s\n",                                                 /* a blank line */
	"%s# trailer\n",
	"%.*s",                                                 /* no final newline */
	"CRLF",
	"SWAP",
	"DOUBLESPACE",
	"allow x.com 443\nallow x.com 443\n%s",
};

static char *
noncanonical_body(size_t i, const char *canon)
{
	const char *fmt = noncanonical_bodies[i];
	size_t clen = strlen(canon), cap = clen * 2 + 64;
	char *out = malloc(cap);

	ck_assert_ptr_nonnull(out);
	if (strcmp(fmt, "CRLF") == 0) {
		char *q = out;

		for (const char *s = canon; *s != '\0'; s++) {
			if (*s == '\n')
				*q++ = '\r';
			*q++ = *s;
		}
		*q = '\0';
	} else if (strcmp(fmt, "SWAP") == 0) {
		const char *nl = strchr(canon, '\n');
		size_t first = (size_t)(nl + 1 - canon);

		/* The second line first, then the first, then the rest. */
		const char *nl2 = strchr(nl + 1, '\n');
		size_t second = (size_t)(nl2 + 1 - (nl + 1));

		memcpy(out, nl + 1, second);
		memcpy(out + second, canon, first);
		strcpy(out + second + first, nl2 + 1);
	} else if (strcmp(fmt, "DOUBLESPACE") == 0) {
		const char *sp = strchr(canon, ' ');
		size_t at = (size_t)(sp - canon);

		memcpy(out, canon, at);
		out[at] = ' ';
		strcpy(out + at + 1, sp);
	} else if (strcmp(fmt, "%.*s") == 0)
		snprintf(out, cap, "%.*s", (int)(clen - 1), canon);
	else if (strstr(fmt, "%s") != NULL) {
		/* Formats from the table above; each holds exactly one %s. */
		const char *pct = strstr(fmt, "%s");

		snprintf(out, cap, "%.*s%s%s", (int)(pct - fmt), fmt, canon, pct + 2);
	} else
		snprintf(out, cap, "%s", fmt);
	ck_assert_str_ne(out, canon);
	return out;
}

START_TEST(test_refuse_noncanonical)
{
	char *canon = canonical_text(spec_example);
	char *body = noncanonical_body((size_t)_i, canon);
	struct egress_key k;
	struct policy_diag d;
	struct policy *p;
	char *sealed;
	size_t len;

	make_key(&k, 11, 32);
	/* The body itself is a valid plain policy: only its form is wrong. */
	p = must_load(body, strlen(body), NULL);
	policy_free(p);

	sealed = build_sealed(body, NULL, &len);
	p = load_buf(sealed, len, NULL, &d);
	ck_assert_msg(p == NULL, "non-canonical body %d accepted:\n%s", _i, body);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(strstr(d.errors[0], "canonical") != NULL, "%s", d.errors[0]);
	ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":"), "%s", d.errors[0]);
	policy_diag_free(&d);
	free(sealed);

	sealed = build_sealed(body, &k, &len);
	ck_assert(load_fails(sealed, len, &k));
	ck_assert(load_fails(sealed, len, NULL));
	free(sealed);
	free(body);
	free(canon);
}
END_TEST

/* Errors inside a sealed body name the file's line: the header counts. */
START_TEST(test_sealed_body_error_lines)
{
	struct egress_key k;
	struct policy_diag d;
	char *sealed;
	size_t len;

	make_key(&k, 13, 32);
	sealed = build_sealed("allow x.com 0\n", NULL, &len);
	ck_assert_ptr_null(load_buf(sealed, len, NULL, &d));
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":3:13:"), "%s", d.errors[0]);
	policy_diag_free(&d);
	free(sealed);

	sealed = build_sealed("allow x.com 0\n", &k, &len);
	ck_assert_ptr_null(load_buf(sealed, len, &k, &d));
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":4:13:"), "%s", d.errors[0]);
	policy_diag_free(&d);
	free(sealed);

	sealed = build_sealed("allow a.com 443\nbogus\n", NULL, &len);
	ck_assert_ptr_null(load_buf(sealed, len, NULL, &d));
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":4:1:"), "%s", d.errors[0]);
	policy_diag_free(&d);
	free(sealed);
}
END_TEST

/* Broken headers: each refused, naming the header line. */
struct header_case {
	const char *text;            /* %s: the 64-hex digest of the body; %m: the MAC */
	const char *prefix;
};

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct header_case header_cases[] = {
	{ MAGIC_LINE "#digest sha256:" H64 "\n", FILE_NAME ":2:" },   /* wrong digest */
	{ MAGIC_LINE "#digest sha256:" "0123456789ABCDEF0123456789abcdef0123456789abcdef"
	  "0123456789abcdef\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha1:" H64 "\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest  sha256:" H64 "\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha256:" H64 "0\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha256:" "0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcde\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha256:" H64 "\r\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha256:" H64, FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha256:\n", FILE_NAME ":2:" },
	{ MAGIC_LINE, FILE_NAME ":2:" },
	{ MAGIC_LINE "allow x.com 443\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "\n#digest sha256:" H64 "\n", FILE_NAME ":2:" },
	{ MAGIC_LINE "#digest sha256:" H64 "\n#mac hmac-sha256:" H64 "0\n", FILE_NAME ":3:" },
	{ MAGIC_LINE "#digest sha256:" H64 "\n#mac hmac-sha1:" H64 "\n", FILE_NAME ":3:" },
	{ MAGIC_LINE "#digest sha256:" H64 "\n#mac hmac-sha256:" "0123456789ABCDEF"
	  "0123456789abcdef0123456789abcdef0123456789abcdef\n", FILE_NAME ":3:" },
	{ MAGIC_LINE "#digest sha256:" H64 "\n#mac hmac-sha256:\n", FILE_NAME ":3:" },
};

START_TEST(test_refuse_header)
{
	const struct header_case *c = &header_cases[_i];
	char *canon = canonical_text("allow x.com 443\n");
	size_t hl = strlen(c->text), cl = strlen(canon);
	char *buf = malloc(hl + cl + 1);
	struct policy_diag d;
	struct egress_key k;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, c->text, hl);
	memcpy(buf + hl, canon, cl + 1);
	ck_assert_msg(load_buf(buf, hl + cl, NULL, &d) == NULL, "header %d accepted", _i);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], c->prefix), "header %d: '%s' does not start "
	    "with '%s'", _i, d.errors[0], c->prefix);
	policy_diag_free(&d);
	make_key(&k, 1, 32);
	ck_assert(load_fails(buf, hl + cl, &k));
	free(buf);
	free(canon);
}
END_TEST

/* --- tampering --------------------------------------------------------------------------- */

struct sealed_file {
	char *buf;
	size_t len;
	size_t magic_end;            /* first byte after the magic line */
	size_t mac_hex, mac_hex_end; /* the MAC's 64 hex digits */
	char digest[EGRESS_DIGEST_STRLEN];
};

static void
sealed_file_make(struct sealed_file *f, const struct egress_key *k)
{
	const char *mac;
	struct policy *p = must_load(spec_example, strlen(spec_example), NULL);

	f->buf = seal_policy(p, k, &f->len);
	policy_digest(p, f->digest);
	policy_free(p);
	f->magic_end = strlen(MAGIC_LINE);
	ck_assert(starts_with(f->buf, MAGIC_LINE));
	mac = strstr(f->buf, "\n#mac hmac-sha256:");
	ck_assert_ptr_nonnull(mac);
	f->mac_hex = (size_t)(mac - f->buf) + strlen("\n#mac hmac-sha256:");
	f->mac_hex_end = f->mac_hex + 64;
	ck_assert_int_eq(f->buf[f->mac_hex_end], '\n');
	ck_assert_uint_gt(f->len, f->mac_hex_end + 100);
}

/*
 * Without a key a change is either refused, or cannot pretend to be something it is not:
 * a broken magic line makes a plain policy of the same body (comments above it), and a
 * different MAC is only "unchecked".
 */
static const char *
judge_without_key(const struct sealed_file *f, const char *buf, size_t len, bool may_be_plain,
    bool may_be_unchecked)
{
	struct policy_diag d;
	struct policy *p = load_buf(buf, len, NULL, &d);
	const char *bad = NULL;
	char dg[EGRESS_DIGEST_STRLEN];

	if (p == NULL) {
		if (d.nerrors == 0)
			bad = "refused without an error";
		else if (may_be_unchecked)
			bad = "a MAC in lower-case hex was refused without a key";
	} else {
		policy_digest(p, dg);
		if (strcmp(dg, f->digest) != 0)
			bad = "accepted with another digest";
		else if (may_be_plain && policy_mac_state(p) != POLICY_UNSEALED)
			bad = "broken magic line still loaded as sealed";
		else if (may_be_unchecked && policy_mac_state(p) != POLICY_SEALED_MAC_UNCHECKED)
			bad = "changed MAC not reported as unchecked";
		else if (!may_be_plain && !may_be_unchecked)
			bad = "accepted";
	}
	policy_free(p);
	policy_diag_free(&d);
	return bad;
}

START_TEST(test_tamper_flip_with_key)
{
	struct egress_key k;
	struct sealed_file f;
	char *copy;
	size_t nbad = 0, bad_off = 0, tries = 0;
	unsigned bad_val = 0;

	make_key(&k, 17, 32);
	sealed_file_make(&f, &k);
	copy = malloc(f.len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, f.buf, f.len);
	ck_assert(!load_fails(copy, f.len, &k));
	for (size_t off = 0; off < f.len; off++) {
		const uint8_t orig = (uint8_t)f.buf[off];

		/* xor 0x01 first, then every other value the byte can take. */
		for (unsigned v = 0; v < 257; v++) {
			uint8_t nv = v == 0 ? (uint8_t)(orig ^ 0x01) : (uint8_t)(v - 1);

			if (v != 0 && (nv == orig || nv == (uint8_t)(orig ^ 0x01)))
				continue;
			copy[off] = (char)nv;
			tries++;
			if (!load_fails(copy, f.len, &k) && nbad++ == 0) {
				bad_off = off;
				bad_val = nv;
			}
		}
		copy[off] = (char)orig;
	}
	ck_assert_uint_eq(tries, f.len * 255);
	ck_assert_msg(nbad == 0, "%zu of %zu one-byte changes loaded with the key; first: "
	    "offset %zu ('%c' -> 0x%02x)", nbad, tries, bad_off, f.buf[bad_off], bad_val);
	ck_assert(!load_fails(copy, f.len, &k));
	free(copy);
	free(f.buf);
}
END_TEST

START_TEST(test_tamper_flip_without_key)
{
	struct egress_key k;
	struct sealed_file files[2];
	size_t nbad = 0, bad_off = 0, checked = 0;
	unsigned bad_val = 0;
	const char *why = NULL;

	make_key(&k, 19, 32);
	sealed_file_make(&files[0], &k);
	/* The same without a MAC: only the digest protects it. */
	{
		struct policy *p = must_load(spec_example, strlen(spec_example), NULL);

		files[1].buf = seal_policy(p, NULL, &files[1].len);
		policy_digest(p, files[1].digest);
		policy_free(p);
		files[1].magic_end = strlen(MAGIC_LINE);
		files[1].mac_hex = files[1].mac_hex_end = 0;
	}
	for (size_t fi = 0; fi < 2; fi++) {
		struct sealed_file *f = &files[fi];
		char *copy = malloc(f->len);

		ck_assert_ptr_nonnull(copy);
		memcpy(copy, f->buf, f->len);
		for (size_t off = 0; off < f->len; off++) {
			const uint8_t orig = (uint8_t)f->buf[off];
			bool in_magic = off < f->magic_end;
			bool in_mac = off >= f->mac_hex && off < f->mac_hex_end;

			for (unsigned v = 0; v < 256; v++) {
				const char *b;

				if (v == orig)
					continue;
				copy[off] = (char)v;
				checked++;
				b = judge_without_key(f, copy, f->len, in_magic,
				    in_mac && is_lower_hex((int)v));
				if (b != NULL && nbad++ == 0) {
					bad_off = off;
					bad_val = v;
					why = b;
				}
			}
			copy[off] = (char)orig;
		}
		ck_assert_msg(nbad == 0, "file %zu: %zu one-byte changes misjudged without a "
		    "key; first: offset %zu -> 0x%02x: %s", fi, nbad, bad_off, bad_val, why);
		free(copy);
	}
	ck_assert_uint_eq(checked, (files[0].len + files[1].len) * 255);
	free(files[0].buf);
	free(files[1].buf);
}
END_TEST

/* Deleting any byte, or inserting one anywhere, is refused. */
START_TEST(test_tamper_delete_insert)
{
	static const char inserts[] = { '\n', ' ', '#', 'a', '0', '\r', '\0', '\t' };
	struct egress_key k;
	struct sealed_file f;
	char *copy;
	size_t nbad = 0, bad_off = 0;
	const char *what = NULL;

	make_key(&k, 23, 32);
	sealed_file_make(&f, &k);
	copy = malloc(f.len + 1);
	ck_assert_ptr_nonnull(copy);
	for (size_t off = 0; off < f.len; off++) {
		/* delete */
		memcpy(copy, f.buf, off);
		memcpy(copy + off, f.buf + off + 1, f.len - off - 1);
		if (!load_fails(copy, f.len - 1, &k) ||
		    (off >= f.magic_end && !load_fails(copy, f.len - 1, NULL))) {
			if (nbad++ == 0) {
				bad_off = off;
				what = "deletion";
			}
		}
		/* insert before off */
		for (size_t j = 0; j < sizeof(inserts); j++) {
			memcpy(copy, f.buf, off);
			copy[off] = inserts[j];
			memcpy(copy + off + 1, f.buf + off, f.len - off);
			if (!load_fails(copy, f.len + 1, &k) ||
			    (off >= f.magic_end && !load_fails(copy, f.len + 1, NULL))) {
				if (nbad++ == 0) {
					bad_off = off;
					what = "insertion";
				}
			}
		}
	}
	ck_assert_msg(nbad == 0, "%zu deletions/insertions loaded; first: %s at %zu", nbad,
	    what, bad_off);
	free(copy);
	free(f.buf);
}
END_TEST

/* Truncated at any length, or with anything appended: refused. */
START_TEST(test_tamper_truncate_append)
{
	static const char *const tails[] = { "allow evil.com 443\n", "\n", "# comment\n", " ",
	    "x", "deny evil.com\n", "\r\n" };
	struct egress_key k;
	struct sealed_file f;
	char *copy;
	struct policy *p;

	make_key(&k, 29, 32);
	sealed_file_make(&f, &k);
	for (size_t n = 0; n < f.len; n++) {
		ck_assert_msg(load_fails(f.buf, n, &k), "truncated to %zu bytes: loaded with the "
		    "key", n);
		if (n >= f.magic_end)
			ck_assert_msg(load_fails(f.buf, n, NULL), "truncated to %zu bytes: loaded "
			    "without a key", n);
		else {
			/* A piece of the magic line is a comment: an empty plain policy. */
			struct policy_diag d;

			p = load_buf(f.buf, n, NULL, &d);
			ck_assert(p == NULL || policy_mac_state(p) == POLICY_UNSEALED);
			policy_free(p);
			policy_diag_free(&d);
		}
	}
	/* Dropping the last line of the body. */
	{
		size_t n = f.len - 1;

		while (n > 0 && f.buf[n - 1] != '\n')
			n--;
		ck_assert(load_fails(f.buf, n, &k));
		ck_assert(load_fails(f.buf, n, NULL));
	}
	copy = malloc(f.len + 64);
	ck_assert_ptr_nonnull(copy);
	for (size_t i = 0; i < NELEMS(tails); i++) {
		size_t tl = strlen(tails[i]);

		memcpy(copy, f.buf, f.len);
		memcpy(copy + f.len, tails[i], tl);
		ck_assert_msg(load_fails(copy, f.len + tl, &k), "appended '%s' loaded", tails[i]);
		ck_assert_msg(load_fails(copy, f.len + tl, NULL), "appended '%s' loaded without "
		    "a key", tails[i]);
	}
	/* A line in front of the magic: with the key refused, without it at best plain. */
	copy[0] = '\n';
	memcpy(copy + 1, f.buf, f.len);
	ck_assert(load_fails(copy, f.len + 1, &k));
	p = must_load(copy, f.len + 1, NULL);
	ck_assert_int_eq(policy_mac_state(p), POLICY_UNSEALED);
	policy_free(p);
	free(copy);
	free(f.buf);
}
END_TEST

/* --- Ed25519 signatures (#sig) ------------------------------------------------------------ */

/* RFC 8032 section 7.1, TEST 1 and TEST 2: the secret keys. */
static const uint8_t rfc8032_sk1[32] = {
	0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec,
	0x2c, 0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03,
	0x1c, 0xae, 0x7f, 0x60,
};
static const uint8_t rfc8032_sk2[32] = {
	0x4c, 0xcd, 0x08, 0x9b, 0x28, 0xff, 0x96, 0xda, 0x9d, 0xb6, 0xc3, 0x46, 0xec, 0x11,
	0x4e, 0x0f, 0x5b, 0x8a, 0x31, 0x9f, 0x2a, 0x5d, 0xfb, 0xc0, 0x45, 0x40, 0x28, 0x3b,
	0xa8, 0x67, 0x05, 0x1f,
};
/* TEST 1's signature of the empty message. */
#define RFC8032_SIG1 "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155" \
	"5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"

/* Keys as egress_ed25519_load returns them: [0] private, [1] public, for sk1 and sk2. */
static void *sk1_keys[2], *sk2_keys[2];
static char sigdir[64];

/* Writes the key pair of a raw secret key as PEM and loads both through the library. */
static void
ed_load_pair(const uint8_t sk[32], const char *name, void *keys[2])
{
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, sk, 32);
	char priv[128], pub[128], err[512];
	FILE *fp;

	ck_assert_ptr_nonnull(k);
	snprintf(priv, sizeof(priv), "%s/%s", sigdir, name);
	snprintf(pub, sizeof(pub), "%s/%s.pub", sigdir, name);
	ck_assert_ptr_nonnull(fp = fopen(priv, "w"));
	ck_assert_int_eq(PEM_write_PrivateKey(fp, k, NULL, NULL, 0, NULL, NULL), 1);
	fclose(fp);
	ck_assert_ptr_nonnull(fp = fopen(pub, "w"));
	ck_assert_int_eq(PEM_write_PUBKEY(fp, k), 1);
	fclose(fp);
	EVP_PKEY_free(k);
	keys[0] = egress_ed25519_load(priv, true, err, sizeof(err));
	ck_assert_msg(keys[0] != NULL, "%s", err);
	keys[1] = egress_ed25519_load(pub, false, err, sizeof(err));
	ck_assert_msg(keys[1] != NULL, "%s", err);
	unlink(priv);
	unlink(pub);
}

static void
sig_setup(void)
{
	snprintf(sigdir, sizeof(sigdir), "/tmp/check_seal_sig.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(sigdir));
	ed_load_pair(rfc8032_sk1, "sk1", sk1_keys);
	ed_load_pair(rfc8032_sk2, "sk2", sk2_keys);
	rmdir(sigdir);
}

static void
sig_teardown(void)
{
	for (size_t i = 0; i < 2; i++) {
		egress_ed25519_free(sk1_keys[i]);
		egress_ed25519_free(sk2_keys[i]);
	}
}

/* The Ed25519 signature of msg under a raw secret key, by libcrypto alone, as hex. */
static void
ed_sign_hex(const uint8_t sk[32], const void *msg, size_t len, char out[129])
{
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, sk, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t sig[64];
	size_t n = sizeof(sig);

	ck_assert(k != NULL && ctx != NULL);
	ck_assert_int_eq(EVP_DigestSignInit(ctx, NULL, NULL, NULL, k), 1);
	ck_assert_int_eq(EVP_DigestSign(ctx, sig, &n, msg, len), 1);
	ck_assert_uint_eq(n, 64);
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", sig[i]);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
}

/* A sealed file built here: digest (and MAC) of body, then sigline verbatim, then body. */
static char *
build_signed(const char *body, const struct egress_key *key, const char *sigline, size_t *len)
{
	char d[65], m[65], *out;
	size_t blen = strlen(body), cap = blen + strlen(sigline) + 256;
	int n;

	sha256_hex(body, blen, d);
	out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	if (key != NULL) {
		hmac_hex(key->bytes, key->len, body, blen, m);
		n = snprintf(out, cap, MAGIC_LINE "#digest sha256:%s\n#mac hmac-sha256:%s\n%s%s",
		    d, m, sigline, body);
	} else
		n = snprintf(out, cap, MAGIC_LINE "#digest sha256:%s\n%s%s", d, sigline, body);
	ck_assert(n > 0 && (size_t)n < cap);
	*len = (size_t)n;
	return out;
}

static enum policy_sig_state
sig_state(const struct policy *p, void *const *keys, size_t n, size_t *which, char *why)
{
	memset(why, 0, 512);
	return policy_sig_check(p, FILE_NAME, keys, n, which, why, 512);
}

/* The library's own signature primitive on RFC 8032's vector. */
START_TEST(test_sig_rfc8032)
{
	uint8_t sig[EGRESS_ED25519_SIGLEN];
	char hex[129];

	ck_assert_int_eq(egress_ed25519_sign(sk1_keys[0], "", 0, sig), 0);
	egress_hex(sig, sizeof(sig), hex);
	ck_assert_str_eq(hex, RFC8032_SIG1);
	ck_assert(egress_ed25519_verify(sk1_keys[1], "", 0, sig));
	ck_assert(!egress_ed25519_verify(sk2_keys[1], "", 0, sig));
}
END_TEST

/* seal --sign-key: the #sig line is libcrypto's signature of the canonical body. */
START_TEST(test_sig_seal_format)
{
	char *body = canonical_text(spec_example), *sealed, *want, hex[129], line[160];
	struct egress_key k;
	size_t len, wlen;

	ed_sign_hex(rfc8032_sk1, body, strlen(body), hex);
	snprintf(line, sizeof(line), "#sig ed25519:%s\n", hex);
	sealed = NULL;
	{
		struct policy *p = must_load(spec_example, strlen(spec_example), NULL);

		sealed = seal_policy_signed(p, NULL, sk1_keys[0], &len);
		ck_assert_ptr_nonnull(sealed);
		want = build_signed(body, NULL, line, &wlen);
		ck_assert_uint_eq(len, wlen);
		ck_assert_str_eq(sealed, want);
		free(sealed);
		free(want);
		/* With a key as well: #digest, #mac, #sig. */
		make_key(&k, 31, 32);
		sealed = seal_policy_signed(p, &k, sk1_keys[0], &len);
		want = build_signed(body, &k, line, &wlen);
		ck_assert_str_eq(sealed, want);
		free(sealed);
		free(want);
		/* Without a signing key it is seal_policy. */
		sealed = seal_policy_signed(p, &k, NULL, &len);
		want = seal_policy(p, &k, &wlen);
		ck_assert_uint_eq(len, wlen);
		ck_assert_str_eq(sealed, want);
		free(sealed);
		free(want);
		policy_free(p);
	}
	free(body);
}
END_TEST

/* Signed, loaded, verified; re-sealing is byte-identical (Ed25519 is deterministic). */
START_TEST(test_sig_verify)
{
	const char *text = round_trip_policies[_i];
	struct policy *p = must_load(text, strlen(text), NULL), *q;
	void *one[1] = { sk1_keys[1] }, *both[2] = { sk2_keys[1], sk1_keys[1] };
	void *none[2] = { NULL, sk2_keys[1] };
	char why[512], *sealed, *again;
	size_t len, len2, which = 99;

	sealed = seal_policy_signed(p, NULL, sk1_keys[0], &len);
	q = must_load(sealed, len, NULL);
	ck_assert(policy_has_sig(q));
	ck_assert_int_eq(policy_mac_state(q), POLICY_SEALED_NO_MAC);
	ck_assert_int_eq(sig_state(q, one, 1, &which, why), POLICY_SIG_OK);
	ck_assert_uint_eq(which, 0);
	ck_assert_int_eq(sig_state(q, both, 2, &which, why), POLICY_SIG_OK);
	ck_assert_uint_eq(which, 1);
	/* Another key, a NULL slot, no key at all. */
	ck_assert_int_eq(sig_state(q, none, 2, &which, why), POLICY_SIG_BAD);
	ck_assert_msg(starts_with(why, FILE_NAME ":3:14: signature does not verify under any "
	    "of the 2"), "%s", why);
	ck_assert_int_eq(sig_state(q, none + 1, 1, NULL, why), POLICY_SIG_BAD);
	ck_assert_msg(starts_with(why, FILE_NAME ":3:14: signature does not verify under the "
	    "trusted public key"), "%s", why);
	ck_assert_int_eq(sig_state(q, NULL, 0, NULL, why), POLICY_SIG_BAD);
	again = seal_policy_signed(q, NULL, sk1_keys[0], &len2);
	ck_assert_uint_eq(len, len2);
	ck_assert_mem_eq(sealed, again, len);
	free(again);
	policy_free(q);
	free(sealed);
	policy_free(p);
}
END_TEST

/* A MAC and a signature together: each checked by its own key; the #sig is line 4. */
START_TEST(test_sig_with_mac)
{
	struct policy *p = must_load(spec_example, strlen(spec_example), NULL), *q;
	void *pub[1] = { sk1_keys[1] }, *other[1] = { sk2_keys[1] };
	struct egress_key k, wrong;
	char why[512], *sealed;
	size_t len;

	make_key(&k, 37, 32);
	make_key(&wrong, 38, 32);
	sealed = seal_policy_signed(p, &k, sk1_keys[0], &len);
	q = must_load(sealed, len, &k);
	ck_assert_int_eq(policy_mac_state(q), POLICY_SEALED_MAC_OK);
	ck_assert_int_eq(sig_state(q, pub, 1, NULL, why), POLICY_SIG_OK);
	ck_assert_int_eq(sig_state(q, other, 1, NULL, why), POLICY_SIG_BAD);
	ck_assert_msg(starts_with(why, FILE_NAME ":4:14: "), "%s", why);
	policy_free(q);
	/* A good signature does not stand in for the MAC. */
	ck_assert(load_fails(sealed, len, &wrong));
	free(sealed);
	policy_free(p);
}
END_TEST

/* No signature, no seal: refused by name; a signature needs no key to load. */
START_TEST(test_sig_missing)
{
	struct policy *p = must_load(spec_example, strlen(spec_example), NULL), *q;
	void *pub[1] = { sk1_keys[1] };
	char why[512], *sealed;
	size_t len;

	ck_assert(!policy_has_sig(p));
	ck_assert_int_eq(sig_state(p, pub, 1, NULL, why), POLICY_SIG_NOT_SEALED);
	ck_assert_msg(starts_with(why, FILE_NAME ":1:1: not sealed"), "%s", why);
	sealed = seal_policy(p, NULL, &len);
	q = must_load(sealed, len, NULL);
	ck_assert(!policy_has_sig(q));
	ck_assert_int_eq(sig_state(q, pub, 1, NULL, why), POLICY_SIG_NONE);
	ck_assert_msg(starts_with(why, FILE_NAME ":1:1: no signature"), "%s", why);
	policy_free(q);
	free(sealed);
	policy_free(p);
}
END_TEST

/*
 * One body byte changed, the digest recomputed by whoever changed it: the file loads
 * (it is sealed and canonical), only the signature tells. Without recomputing, the digest
 * already does.
 */
START_TEST(test_sig_changed_body)
{
	char *body = canonical_text("allow a.example 443\nallow b.example 8000-8100\n");
	char *changed = strdup(body), *sealed, hex[129], line[160], why[512];
	void *pub[1] = { sk1_keys[1] };
	struct policy *q;
	char *at;
	size_t len;

	ck_assert_ptr_nonnull(changed);
	at = strstr(changed, "8100");
	ck_assert_ptr_nonnull(at);
	at[3] = '1';                            /* 8000-8101: still canonical */
	ed_sign_hex(rfc8032_sk1, body, strlen(body), hex);
	snprintf(line, sizeof(line), "#sig ed25519:%s\n", hex);
	sealed = build_signed(changed, NULL, line, &len);
	q = must_load(sealed, len, NULL);
	ck_assert_int_eq(sig_state(q, pub, 1, NULL, why), POLICY_SIG_BAD);
	ck_assert_msg(strstr(why, "signature does not verify") != NULL, "%s", why);
	policy_free(q);
	free(sealed);
	/* The signed body itself verifies. */
	sealed = build_signed(body, NULL, line, &len);
	q = must_load(sealed, len, NULL);
	ck_assert_int_eq(sig_state(q, pub, 1, NULL, why), POLICY_SIG_OK);
	policy_free(q);
	/* The digest left as it was: refused when loading. */
	at = strstr(sealed, "8100");
	ck_assert_ptr_nonnull(at);
	at[3] = '1';
	ck_assert(load_fails(sealed, len, NULL));
	free(sealed);
	free(changed);
	free(body);
}
END_TEST

/* Every one of the 128 signature digits changed to another hex digit: never verifies. */
START_TEST(test_sig_changed_sig)
{
	struct policy *p = must_load(spec_example, strlen(spec_example), NULL), *q;
	void *pub[1] = { sk1_keys[1] };
	char why[512], *sealed, *hex;
	size_t len, nbad = 0;

	sealed = seal_policy_signed(p, NULL, sk1_keys[0], &len);
	hex = strstr(sealed, "\n#sig ed25519:");
	ck_assert_ptr_nonnull(hex);
	hex += strlen("\n#sig ed25519:");
	for (size_t i = 0; i < 128; i++) {
		char orig = hex[i];

		hex[i] = orig == 'f' ? '0' : orig == '9' ? 'a' : (char)(orig + 1);
		q = must_load(sealed, len, NULL);
		if (sig_state(q, pub, 1, NULL, why) != POLICY_SIG_BAD)
			nbad++;
		policy_free(q);
		hex[i] = orig;
	}
	ck_assert_msg(nbad == 0, "%zu changed signatures verified", nbad);
	q = must_load(sealed, len, NULL);
	ck_assert_int_eq(sig_state(q, pub, 1, NULL, why), POLICY_SIG_OK);
	policy_free(q);
	free(sealed);
	policy_free(p);
}
END_TEST

/* Malformed #sig lines and header orders: each refused at its file:line:column. */
struct sigline_case {
	const char *line;            /* %H: 128 hex digits; %h: 127 */
	bool mac;                    /* a #mac line before it */
	const char *prefix;
	const char *msg;
};

static const struct sigline_case sigline_cases[] = {
	{ "#sig ed25519:%h\n", false, FILE_NAME ":3:141: ", "too short" },
	{ "#sig ed25519:%H0\n", false, FILE_NAME ":3:142: ", "too long" },
	{ "#sig ed25519:%H \n", false, FILE_NAME ":3:142: ", "too long" },
	{ "#sig ed25519:%H\r\n", false, FILE_NAME ":3:142: ", "too long" },
	{ "#sig ed25519:\n", false, FILE_NAME ":3:14: ", "too short" },
	{ "#sig ed25519:A%h\n", false, FILE_NAME ":3:14: ", "lower-case hex" },
	{ "#sig ed25519:%hg\n", false, FILE_NAME ":3:141: ", "lower-case hex" },
	{ "#sig ed25519: %h\n", false, FILE_NAME ":3:14: ", "lower-case hex" },
	{ "#sig  ed25519:%H\n", false, FILE_NAME ":3:6: ", "unsupported signature" },
	{ "#sig ed448:%H\n", false, FILE_NAME ":3:6: ", "unsupported signature" },
	{ "#sig ED25519:%H\n", false, FILE_NAME ":3:6: ", "unsupported signature" },
	{ "#sig ed25519%H\n", false, FILE_NAME ":3:6: ", "unsupported signature" },
	{ "#sig\ted25519:%H\n", false, FILE_NAME ":3:5: ", "one space" },
	{ "#sig\n", false, FILE_NAME ":3:5: ", "one space" },
	{ "#signature ed25519:%H\n", false, FILE_NAME ":3:5: ", "one space" },
	{ "#sig ed25519:%h", false, FILE_NAME ":3:142: ", "too long" },   /* body's 'a' */
	{ "#sig ed25519:%hZ\n", true, FILE_NAME ":4:141: ", "lower-case hex" },
	{ "#sig ed25519:%H\n#sig ed25519:%H\n", false, FILE_NAME ":4:1: ",
	  "'#sig' repeated or out of order" },
	{ "#sig ed25519:%H\n#sig ed25519:%H\n", true, FILE_NAME ":5:1: ",
	  "'#sig' repeated or out of order" },
	{ "#sig ed25519:%H\n#mac hmac-sha256:" H64 "\n", false, FILE_NAME ":4:1: ",
	  "'#mac' repeated or out of order" },
	{ "#mac hmac-sha256:" H64 "\n", true, FILE_NAME ":4:1: ",
	  "'#mac' repeated or out of order" },
	{ "#sig ed25519:%H\n#digest sha256:" H64 "\n", false, FILE_NAME ":4:1: ",
	  "'#digest' repeated or out of order" },
	{ "#digest sha256:" H64 "\n", false, FILE_NAME ":3:1: ",
	  "'#digest' repeated or out of order" },
};

/* Expands %H and %h in a case's line. */
static char *
sigline_expand(const char *fmt)
{
	static const char hex[] = "0123456789abcdef";
	char *out = malloc(strlen(fmt) * 2 + 600), *q = out;

	ck_assert_ptr_nonnull(out);
	for (const char *s = fmt; *s != '\0'; s++) {
		if (s[0] == '%' && (s[1] == 'H' || s[1] == 'h')) {
			size_t n = s[1] == 'H' ? 128 : 127;

			for (size_t i = 0; i < n; i++)
				*q++ = hex[(i * 7) % 16];
			s++;
		} else
			*q++ = *s;
	}
	*q = '\0';
	return out;
}

START_TEST(test_sig_refuse_line)
{
	const struct sigline_case *c = &sigline_cases[_i];
	char *canon = canonical_text("allow x.com 443\n"), *line = sigline_expand(c->line);
	struct egress_key k;
	struct policy_diag d;
	char *buf;
	size_t len;

	make_key(&k, 41, 32);
	buf = build_signed(canon, c->mac ? &k : NULL, line, &len);
	ck_assert_msg(load_buf(buf, len, c->mac ? &k : NULL, &d) == NULL, "case %d accepted", _i);
	ck_assert_uint_ge(d.nerrors, 1);
	ck_assert_msg(starts_with(d.errors[0], c->prefix) && strstr(d.errors[0], c->msg) != NULL,
	    "case %d: '%s' is not '%s...%s'", _i, d.errors[0], c->prefix, c->msg);
	policy_diag_free(&d);
	free(buf);
	free(line);
	free(canon);
}
END_TEST

/* #sig (or #mac) where #digest belongs: refused, saying the digest must come first. */
START_TEST(test_sig_without_digest)
{
	static const char *const heads[] = {
		MAGIC_LINE "#sig ed25519:%H\n",
		MAGIC_LINE "#sig ed25519:%H\n#digest sha256:" H64 "\n",
		MAGIC_LINE "#mac hmac-sha256:" H64 "\n#digest sha256:" H64 "\n",
	};
	char *canon = canonical_text("allow x.com 443\n");

	for (size_t i = 0; i < NELEMS(heads); i++) {
		char *head = sigline_expand(heads[i]), *buf;
		struct policy_diag d;
		size_t hl = strlen(head);

		buf = malloc(hl + strlen(canon) + 1);
		ck_assert_ptr_nonnull(buf);
		memcpy(buf, head, hl);
		strcpy(buf + hl, canon);
		ck_assert_ptr_null(load_buf(buf, strlen(buf), NULL, &d));
		ck_assert_uint_ge(d.nerrors, 1);
		ck_assert_msg(starts_with(d.errors[0], FILE_NAME ":2:1: ") &&
		    strstr(d.errors[0], "without '#digest' before it") != NULL, "%zu: %s", i,
		    d.errors[0]);
		policy_diag_free(&d);
		free(buf);
		free(head);
	}
	free(canon);
}
END_TEST

/* A signed file cut anywhere inside or at the end of its #sig line: refused at line 3. */
START_TEST(test_sig_truncated)
{
	struct policy *p = must_load(spec_example, strlen(spec_example), NULL);
	char *sealed, *sig;
	size_t len, start;

	sealed = seal_policy_signed(p, NULL, sk1_keys[0], &len);
	sig = strstr(sealed, "\n#sig ");
	ck_assert_ptr_nonnull(sig);
	start = (size_t)(sig + 1 - sealed);
	for (size_t n = start; n <= start + 141; n++) {
		struct policy_diag d;
		char want[32];

		ck_assert_ptr_null(load_buf(sealed, n, NULL, &d));
		ck_assert_uint_ge(d.nerrors, 1);
		snprintf(want, sizeof(want), FILE_NAME ":3:");
		/* Cut before "#sig" is whole, the line is body: a digest mismatch at line 2. */
		if (n - start >= 4)
			ck_assert_msg(starts_with(d.errors[0], want), "cut at %zu: %s", n - start,
			    d.errors[0]);
		if (n - start == 141)
			ck_assert_msg(strstr(d.errors[0], ":3:142: the #sig line does not end in a "
			    "newline") != NULL, "%s", d.errors[0]);
		if (n - start == 100)
			ck_assert_msg(strstr(d.errors[0], ":3:101: signature too short") != NULL,
			    "%s", d.errors[0]);
		policy_diag_free(&d);
	}
	free(sealed);
	policy_free(p);
}
END_TEST

/* A well-formed #sig of any 128 digits loads (the check is apart) and is kept. */
START_TEST(test_sig_wellformed_loads)
{
	char *canon = canonical_text("allow x.com 443\n"), *line = sigline_expand("#sig ed25519:%H\n");
	void *pub[1] = { sk1_keys[1] };
	struct policy *p;
	char *buf, why[512];
	size_t len;

	buf = build_signed(canon, NULL, line, &len);
	p = must_load(buf, len, NULL);
	ck_assert(policy_has_sig(p));
	ck_assert_int_eq(sig_state(p, pub, 1, NULL, why), POLICY_SIG_BAD);
	policy_free(p);
	free(buf);
	free(line);
	free(canon);
}
END_TEST

/* --- key files ---------------------------------------------------------------------------- */

static char tmpdir[64];

static void
tmpdir_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_seal.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
tmpdir_teardown(void)
{
	DIR *dir = opendir(tmpdir);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		unlinkat(dirfd(dir), de->d_name, 0);
	}
	closedir(dir);
	rmdir(tmpdir);
}

static void
tmp_path(char *out, size_t n, const char *name)
{
	int r = snprintf(out, n, "%s/%s", tmpdir, name);

	ck_assert(r > 0 && (size_t)r < n);
}

static void
write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *fp = fopen(path, "wb");

	ck_assert_msg(fp != NULL, "%s: %s", path, strerror(errno));
	ck_assert_uint_eq(fwrite(buf, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
}

static size_t
read_file(const char *path, uint8_t *buf, size_t cap)
{
	FILE *fp = fopen(path, "rb");
	size_t n;

	ck_assert_msg(fp != NULL, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, cap, fp);
	fclose(fp);
	return n;
}

struct keysize_case {
	size_t size;
	bool ok;
};

static const struct keysize_case keysize_cases[] = {
	{ 0, false }, { 1, false }, { 16, false }, { 31, false },
	{ 32, true }, { 33, true }, { 64, true }, { 4095, true }, { 4096, true },
	{ 4097, false }, { 8192, false }, { 65536, false },
};

START_TEST(test_key_load_size)
{
	const struct keysize_case *c = &keysize_cases[_i];
	char path[256], err[512];
	uint8_t *buf = malloc(c->size + 1);
	struct egress_key k;
	int r;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < c->size; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	tmp_path(path, sizeof(path), "key");
	write_file(path, buf, c->size);
	err[0] = '\0';
	r = egress_key_load(path, &k, err, sizeof(err));
	if (c->ok) {
		ck_assert_msg(r == 0, "%zu-byte key refused: %s", c->size, err);
		ck_assert_uint_eq(k.len, c->size);
		ck_assert_mem_eq(k.bytes, buf, c->size);
		egress_key_clear(&k);
	} else {
		ck_assert_msg(r == -1, "%zu-byte key accepted", c->size);
		ck_assert_msg(err[0] != '\0', "refused without a message");
		ck_assert_msg(strstr(err, path) != NULL, "message does not name the file: %s",
		    err);
	}
	free(buf);
}
END_TEST

START_TEST(test_key_load_not_a_file)
{
	char path[256], err[512];
	struct egress_key k;

	/* A directory. */
	err[0] = '\0';
	ck_assert_int_eq(egress_key_load(tmpdir, &k, err, sizeof(err)), -1);
	ck_assert(err[0] != '\0');
	/* A missing file. */
	tmp_path(path, sizeof(path), "missing");
	err[0] = '\0';
	ck_assert_int_eq(egress_key_load(path, &k, err, sizeof(err)), -1);
	ck_assert(err[0] != '\0');
	/* A FIFO holding 32 bytes (a writer keeps it open, so nothing blocks). */
	{
		uint8_t bytes[32];
		int fd;

		tmp_path(path, sizeof(path), "fifo");
		ck_assert_int_eq(mkfifo(path, 0600), 0);
		fd = open(path, O_RDWR | O_NONBLOCK);
		ck_assert_int_ge(fd, 0);
		memset(bytes, 0x42, sizeof(bytes));
		ck_assert_int_eq(write(fd, bytes, sizeof(bytes)), (ssize_t)sizeof(bytes));
		err[0] = '\0';
		ck_assert_int_eq(egress_key_load(path, &k, err, sizeof(err)), -1);
		ck_assert(err[0] != '\0');
		close(fd);
	}
	/* A device is not a key, however many bytes it would give. */
	err[0] = '\0';
	ck_assert_int_eq(egress_key_load("/dev/null", &k, err, sizeof(err)), -1);
	ck_assert(err[0] != '\0');
	err[0] = '\0';
	ck_assert_int_eq(egress_key_load("/dev/zero", &k, err, sizeof(err)), -1);
	ck_assert(err[0] != '\0');
}
END_TEST

START_TEST(test_key_generate)
{
	char p1[256], p2[256], err[512];
	uint8_t b1[64], b2[64], again[64];
	struct egress_key k;
	struct stat st;
	struct policy *p;
	char *sealed;
	size_t len;
	mode_t old = umask(0);     /* the mode must not depend on the caller's umask */

	tmp_path(p1, sizeof(p1), "k1");
	tmp_path(p2, sizeof(p2), "k2");
	err[0] = '\0';
	ck_assert_msg(egress_key_generate(p1, err, sizeof(err)) == 0, "%s", err);
	umask(old);
	ck_assert_int_eq(lstat(p1, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq((unsigned)(st.st_mode & 07777), 0600);
	ck_assert_int_eq(st.st_size, 32);
	ck_assert_uint_eq(read_file(p1, b1, sizeof(b1)), 32);

	/* It loads as a key, and seals and verifies. */
	ck_assert_msg(egress_key_load(p1, &k, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(k.len, 32);
	ck_assert_mem_eq(k.bytes, b1, 32);
	sealed = seal_text(spec_example, &k, &len);
	p = must_load(sealed, len, &k);
	ck_assert_int_eq(policy_mac_state(p), POLICY_SEALED_MAC_OK);
	policy_free(p);
	free(sealed);
	egress_key_clear(&k);

	/* Never overwrites: the file keeps its bytes. */
	err[0] = '\0';
	ck_assert_int_eq(egress_key_generate(p1, err, sizeof(err)), -1);
	ck_assert(err[0] != '\0');
	ck_assert_uint_eq(read_file(p1, again, sizeof(again)), 32);
	ck_assert_mem_eq(again, b1, 32);

	/* Nor an existing file of another size. */
	write_file(p2, (const uint8_t *)"x", 1);
	ck_assert_int_eq(egress_key_generate(p2, err, sizeof(err)), -1);
	ck_assert_uint_eq(read_file(p2, again, sizeof(again)), 1);
	ck_assert_int_eq(unlink(p2), 0);

	/* A second key differs from the first. */
	ck_assert_msg(egress_key_generate(p2, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(read_file(p2, b2, sizeof(b2)), 32);
	ck_assert_msg(memcmp(b1, b2, 32) != 0, "two generated keys are equal");
}
END_TEST

/* A symbolic link is not followed: no file appears at its target. */
START_TEST(test_key_generate_symlink)
{
	char target[256], link[256], missing[256], err[512];
	struct stat st;

	tmp_path(target, sizeof(target), "target");
	tmp_path(link, sizeof(link), "link");
	tmp_path(missing, sizeof(missing), "nodir/key");
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_eq(egress_key_generate(link, err, sizeof(err)), -1);
	ck_assert_int_eq(stat(target, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* A directory that does not exist. */
	err[0] = '\0';
	ck_assert_int_eq(egress_key_generate(missing, err, sizeof(err)), -1);
	ck_assert(err[0] != '\0');
}
END_TEST

/* keygen --ed25519: a pair that signs and verifies; modes; never overwrites either file. */
START_TEST(test_sig_keygen)
{
	char priv[256], pub[256], other[256], err[512];
	uint8_t before[512], after[512];
	struct stat st;
	void *sk, *pk;
	uint8_t sig[EGRESS_ED25519_SIGLEN];
	size_t n1, n2;
	mode_t old = umask(077);   /* a public key stays readable whatever the umask */

	tmp_path(priv, sizeof(priv), "ed");
	tmp_path(pub, sizeof(pub), "ed.pub");
	tmp_path(other, sizeof(other), "other");
	ck_assert_msg(egress_ed25519_keygen_pair(priv, err, sizeof(err)) == 0, "%s", err);
	umask(old);
	ck_assert_int_eq(lstat(priv, &st), 0);
	ck_assert_uint_eq((unsigned)(st.st_mode & 07777), 0600);
	ck_assert_int_eq(lstat(pub, &st), 0);
	ck_assert_uint_eq((unsigned)(st.st_mode & 07777), 0644);
	ck_assert_ptr_nonnull(sk = egress_ed25519_load(priv, true, err, sizeof(err)));
	ck_assert_ptr_nonnull(pk = egress_ed25519_load(pub, false, err, sizeof(err)));
	ck_assert_int_eq(egress_ed25519_sign(sk, "m", 1, sig), 0);
	ck_assert(egress_ed25519_verify(pk, "m", 1, sig));
	ck_assert(!egress_ed25519_verify(sk2_keys[1], "m", 1, sig));
	/* The private file is not a public key, nor the public one a private key. */
	ck_assert_ptr_null(egress_ed25519_load(priv, false, err, sizeof(err)));
	ck_assert_ptr_null(egress_ed25519_load(pub, true, err, sizeof(err)));
	egress_ed25519_free(sk);
	egress_ed25519_free(pk);
	/* Again: refused, both files as they were. */
	n1 = read_file(priv, before, sizeof(before));
	ck_assert_int_eq(egress_ed25519_keygen_pair(priv, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "already exists") != NULL, "%s", err);
	n2 = read_file(priv, after, sizeof(after));
	ck_assert_uint_eq(n1, n2);
	ck_assert_mem_eq(before, after, n1);
	/* Only the .pub exists: nothing is written, the private file does not appear. */
	{
		char opub[256];

		tmp_path(opub, sizeof(opub), "other.pub");
		write_file(opub, (const uint8_t *)"x", 1);
		ck_assert_int_eq(egress_ed25519_keygen_pair(other, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, "other.pub: already exists") != NULL, "%s", err);
		ck_assert_int_eq(lstat(other, &st), -1);
		ck_assert_uint_eq(read_file(opub, after, sizeof(after)), 1);
	}
}
END_TEST

/* --- main ------------------------------------------------------------------------------------ */

static Suite *
seal_suite(void)
{
	Suite *s = suite_create("seal");
	TCase *tc;

	tc = tcase_create("digest_kat");
	tcase_add_loop_test(tc, test_digest_kat, 0, (int)NELEMS(digest_cases));
	tcase_add_test(tc, test_policy_digest);
	suite_add_tcase(s, tc);

	tc = tcase_create("mac_kat");
	tcase_add_loop_test(tc, test_mac_kat, 0, (int)NELEMS(mac_cases));
	tcase_add_test(tc, test_mac_body);
	suite_add_tcase(s, tc);

	tc = tcase_create("seal_format");
	tcase_add_test(tc, test_seal_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("round_trip");
	tcase_add_loop_test(tc, test_round_trip, 0, (int)NELEMS(round_trip_policies));
	suite_add_tcase(s, tc);

	tc = tcase_create("mac_state");
	tcase_add_test(tc, test_mac_state);
	suite_add_tcase(s, tc);

	tc = tcase_create("refuse_key_mismatch");
	tcase_add_test(tc, test_refuse_key_mismatch);
	tcase_add_test(tc, test_refuse_forged_digest);
	suite_add_tcase(s, tc);

	tc = tcase_create("refuse_noncanonical");
	tcase_add_loop_test(tc, test_refuse_noncanonical, 0, (int)NELEMS(noncanonical_bodies));
	tcase_add_test(tc, test_sealed_body_error_lines);
	suite_add_tcase(s, tc);

	tc = tcase_create("refuse_header");
	tcase_add_loop_test(tc, test_refuse_header, 0, (int)NELEMS(header_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("tamper_flip");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_tamper_flip_with_key);
	tcase_add_test(tc, test_tamper_flip_without_key);
	suite_add_tcase(s, tc);

	tc = tcase_create("tamper_delete_insert");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tamper_delete_insert);
	tcase_add_test(tc, test_tamper_truncate_append);
	suite_add_tcase(s, tc);

	tc = tcase_create("sig_kat");
	tcase_add_unchecked_fixture(tc, sig_setup, sig_teardown);
	tcase_add_test(tc, test_sig_rfc8032);
	tcase_add_test(tc, test_sig_seal_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("sig_verify");
	tcase_add_unchecked_fixture(tc, sig_setup, sig_teardown);
	tcase_add_loop_test(tc, test_sig_verify, 0, (int)NELEMS(round_trip_policies));
	tcase_add_test(tc, test_sig_with_mac);
	tcase_add_test(tc, test_sig_wellformed_loads);
	suite_add_tcase(s, tc);

	tc = tcase_create("sig_refuse_missing");
	tcase_add_unchecked_fixture(tc, sig_setup, sig_teardown);
	tcase_add_test(tc, test_sig_missing);
	suite_add_tcase(s, tc);

	tc = tcase_create("sig_refuse_tampered");
	tcase_add_unchecked_fixture(tc, sig_setup, sig_teardown);
	tcase_add_test(tc, test_sig_changed_body);
	tcase_add_test(tc, test_sig_changed_sig);
	tcase_add_test(tc, test_sig_truncated);
	suite_add_tcase(s, tc);

	tc = tcase_create("sig_refuse_line");
	tcase_add_loop_test(tc, test_sig_refuse_line, 0, (int)NELEMS(sigline_cases));
	tcase_add_test(tc, test_sig_without_digest);
	suite_add_tcase(s, tc);

	tc = tcase_create("sig_keygen");
	tcase_add_unchecked_fixture(tc, sig_setup, sig_teardown);
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_sig_keygen);
	suite_add_tcase(s, tc);

	tc = tcase_create("key_load");
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_loop_test(tc, test_key_load_size, 0, (int)NELEMS(keysize_cases));
	tcase_add_test(tc, test_key_load_not_a_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("key_generate");
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_key_generate);
	tcase_add_test(tc, test_key_generate_symlink);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	memset(rfc4231_key6, 0xaa, sizeof(rfc4231_key6));
	sr = srunner_create(seal_suite());
	srunner_run_all(sr, CK_ENV);   /* CK_VERBOSITY=verbose lists every check */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
