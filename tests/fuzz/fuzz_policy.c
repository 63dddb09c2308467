/*
 * fuzz_policy.c: libFuzzer target for the policy parser and the sealed format (with its
 * #mac and #sig header lines). Beyond not crashing: an accepted policy's canonical form
 * parses to the same canonical form, and sealing it then loading the seal gives the same
 * digest; a #sig that loaded verifies or not (never anything else) under a fixed key;
 * sealing with that key's private half gives a file that loads and verifies under it.
 *
 * include lines go through an opener over a fixed in-memory set (the parser reads no
 * file): a template "t", a cycle "./a" <-> "./b", a chain "./d1" .. "./d9" one deeper than
 * the bound, and "./x", whose bytes are the input's after its first "\n--\n" (the part
 * before is the top file). The properties above then hold for the expanded policy: its
 * canonical form, loaded with no opener at all, has the same digest.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 8032 TEST 1's secret key: the seeds signed with it verify, the rest must not. */
static const uint8_t fuzz_sk[32] = {
	0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec,
	0x2c, 0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03,
	0x1c, 0xae, 0x7f, 0x60,
};
static EVP_PKEY *fuzz_priv, *fuzz_pub;

static void
fuzz_keys(void)
{
	uint8_t pub[32];
	size_t n = sizeof(pub);

	if (fuzz_priv != NULL)
		return;
	fuzz_priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, fuzz_sk, 32);
	if (fuzz_priv == NULL || EVP_PKEY_get_raw_public_key(fuzz_priv, pub, &n) != 1 ||
	    (fuzz_pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, n)) == NULL)
		abort();
}

static const struct {
	const char *name;
	const char *text;
} fuzz_files[] = {
	{ "t.policy", "allow t.example 443\ndeny *.bad.t.example\n" },
	{ "a", "allow a.example 1-10\ninclude ./b\n" },
	{ "b", "include ./a\n" },
	{ "d1", "include ./d2\n" }, { "d2", "include ./d3\n" }, { "d3", "include ./d4\n" },
	{ "d4", "include ./d5\n" }, { "d5", "include ./d6\n" }, { "d6", "include ./d7\n" },
	{ "d7", "include ./d8\n" }, { "d8", "include ./d9\n" },
	{ "d9", "allow d.example 443\n" },
};

struct fuzz_extra {
	const uint8_t *buf;           /* "./x": the input after its "\n--\n" */
	size_t len;
};

static int
fuzz_open(void *arg, const char *from, const char *target, bool template,
    struct policy_include_file *out, char *why, size_t whylen)
{
	const struct fuzz_extra *x = arg;
	char name[80];
	const uint8_t *buf = NULL;
	size_t len = 0;

	(void)from;
	if (strlen(target) > 64)
		goto none;
	snprintf(name, sizeof(name), template ? "%s.policy" : "%s", template ? target :
	    strncmp(target, "./", 2) == 0 ? target + 2 : target);
	if (strcmp(name, "x") == 0 && x->buf != NULL) {
		buf = x->buf;
		len = x->len;
	} else
		for (size_t i = 0; i < sizeof(fuzz_files) / sizeof(fuzz_files[0]); i++)
			if (strcmp(fuzz_files[i].name, name) == 0) {
				buf = (const uint8_t *)fuzz_files[i].text;
				len = strlen(fuzz_files[i].text);
			}
	if (buf == NULL)
		goto none;
	out->buf = malloc(len + 1);
	if (out->buf == NULL)
		abort();
	memcpy(out->buf, buf, len);
	out->len = len;
	out->name = strdup(name);
	snprintf(out->id, sizeof(out->id), "%s", name);
	return 0;
none:
	snprintf(why, whylen, "no such file");
	return -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_diag d;
	struct policy *p, *q, *r;
	char d1[EGRESS_DIGEST_STRLEN], d2[EGRESS_DIGEST_STRLEN];
	char *canon, *sealed;
	size_t clen, slen, top = size;
	struct fuzz_extra extra = { NULL, 0 };
	const struct policy_includer inc = { fuzz_open, &extra, NULL };

	if (size > 65536)
		return 0;
	for (size_t i = 0; i + 4 <= size; i++)
		if (memcmp(data + i, "\n--\n", 4) == 0) {
			top = i + 1;
			extra.buf = data + i + 4;
			extra.len = size - i - 4;
			break;
		}
	p = policy_load_inc("fuzz", data, top, NULL, &inc, &d);
	if (p == NULL) {
		if (d.nerrors == 0)
			abort();
		policy_diag_free(&d);
		return 0;
	}
	policy_diag_free(&d);
	{
		/* The origin of a decision, through whatever the input included. */
		static const char *const hosts[] = { "t.example", "a.example", "x.bad.t.example",
		    "d.example", "api.github.com" };
		char origin[1024];
		struct host h;
		const char *why;

		for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
			if (host_parse(hosts[i], strlen(hosts[i]), &h, &why) == 0 &&
			    (policy_decide_origin(p, &h, 443, origin, sizeof(origin)) ==
			    EGRESS_NOT_ALLOWLISTED) != (strcmp(origin, "-") == 0))
				abort();
	}
	fuzz_keys();
	{
		void *keys[1] = { fuzz_pub };
		char why[512];
		enum policy_sig_state st = policy_sig_check(p, "fuzz", keys, 1, NULL, why,
		    sizeof(why));

		/* A plain input is never "signed"; a sealed one is OK, NONE or BAD as it is. */
		if (policy_mac_state(p) == POLICY_UNSEALED ? st != POLICY_SIG_NOT_SEALED :
		    policy_has_sig(p) ? st != POLICY_SIG_OK && st != POLICY_SIG_BAD :
		    st != POLICY_SIG_NONE)
			abort();
	}
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
	policy_free(r);
	free(sealed);
	{
		void *keys[1] = { fuzz_pub };
		char why[512];

		sealed = seal_policy_signed(p, NULL, fuzz_priv, &slen);
		if (sealed == NULL)
			abort();
		r = policy_load("signed", (const uint8_t *)sealed, slen, NULL, &d);
		if (r == NULL || !policy_has_sig(r) || policy_sig_check(r, "signed", keys, 1, NULL,
		    why, sizeof(why)) != POLICY_SIG_OK)
			abort();
		policy_diag_free(&d);
		policy_digest(r, d2);
		if (strcmp(d1, d2) != 0)
			abort();
	}
	free(canon);
	free(sealed);
	policy_free(p);
	policy_free(q);
	policy_free(r);
	return 0;
}
