/*
 * check_digest.c: unit tests for common/digest.c's SHA-256 and HMAC-SHA256: the vectors
 * of FIPS 180-2 and RFC 4231 (a key longer than a block included), the empty key and
 * message, and HMAC-SHA256 against OpenSSL's own (EVP_Q_mac) for keys on both sides of
 * the 64-byte block and messages on both sides of its padding, whole and split in two.
 */
#include "config.h"

#include <check.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void
hex(const uint8_t md[EGRESS_SHA256_LEN], char out[2 * EGRESS_SHA256_LEN + 1])
{
	egress_hex(md, EGRESS_SHA256_LEN, out);
}

static const struct {
	const char *in;
	const char *want;
} sha_cases[] = {
	{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
	{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
};

START_TEST(test_sha256)
{
	uint8_t md[EGRESS_SHA256_LEN];
	char got[2 * EGRESS_SHA256_LEN + 1];

	egress_sha256(sha_cases[_i].in, strlen(sha_cases[_i].in), md);
	hex(md, got);
	ck_assert_str_eq(got, sha_cases[_i].want);
}
END_TEST

/* RFC 4231 test cases 1, 2 and 6 (131-byte key: hashed first), and the empty key. */
static const struct {
	uint8_t key_byte;           /* the key: klen times this byte, unless key is set */
	const char *key;
	size_t klen;
	const char *msg;
	const char *want;
} mac_cases[] = {
	{ 0x0b, NULL, 20, "Hi There",
	  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
	{ 0, "Jefe", 4, "what do ya want for nothing?",
	  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
	{ 0xaa, NULL, 131, "Test Using Larger Than Block-Size Key - Hash Key First",
	  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
	{ 0, "", 0, "", "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad" },
};

START_TEST(test_hmac_vectors)
{
	uint8_t key[256], md[EGRESS_SHA256_LEN];
	char got[2 * EGRESS_SHA256_LEN + 1];
	size_t ml = strlen(mac_cases[_i].msg);

	if (mac_cases[_i].key != NULL)
		memcpy(key, mac_cases[_i].key, mac_cases[_i].klen);
	else
		memset(key, mac_cases[_i].key_byte, mac_cases[_i].klen);
	egress_hmac_sha256(key, mac_cases[_i].klen, mac_cases[_i].msg, ml, md);
	hex(md, got);
	ck_assert_str_eq(got, mac_cases[_i].want);
	/* The same MAC when the message comes in two parts, at every split. */
	for (size_t cut = 0; cut <= ml; cut++) {
		egress_hmac_sha256_2(key, mac_cases[_i].klen, mac_cases[_i].msg, cut,
		    mac_cases[_i].msg + cut, ml - cut, md);
		hex(md, got);
		ck_assert_msg(strcmp(got, mac_cases[_i].want) == 0, "split at %zu", cut);
	}
}
END_TEST

static const size_t key_lens[] = { 1, 16, 31, 32, 55, 63, 64, 65, 100, 128, 4096 };
static const size_t msg_lens[] = { 0, 1, 17, 55, 56, 63, 64, 65, 119, 120, 447, 1000, 4096 };

START_TEST(test_hmac_openssl)
{
	static uint8_t key[4096], msg[4096];
	size_t kl = key_lens[_i];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 13 + 1);
	for (size_t j = 0; j < NELEM(msg_lens); j++) {
		size_t ml = msg_lens[j], n = 0;
		uint8_t want[EGRESS_SHA256_LEN], got[EGRESS_SHA256_LEN];

		ck_assert_ptr_nonnull(EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, kl,
		    msg, ml, want, sizeof(want), &n));
		ck_assert_uint_eq(n, sizeof(want));
		egress_hmac_sha256(key, kl, msg, ml, got);
		ck_assert_msg(memcmp(got, want, sizeof(got)) == 0, "key %zu, message %zu", kl, ml);
		egress_hmac_sha256_2(key, kl, msg, ml / 3, msg + ml / 3, ml - ml / 3, got);
		ck_assert_msg(memcmp(got, want, sizeof(got)) == 0, "key %zu, message %zu split",
		    kl, ml);
	}
}
END_TEST

/* One key after another: nothing of the first is left to colour the second's MAC. */
START_TEST(test_hmac_key_change)
{
	const uint8_t k1[] = "first key, 32 bytes long........", k2[] = "second";
	uint8_t a[EGRESS_SHA256_LEN], b[EGRESS_SHA256_LEN], c[EGRESS_SHA256_LEN];

	egress_hmac_sha256(k2, sizeof(k2) - 1, "m", 1, a);
	egress_hmac_sha256(k1, sizeof(k1) - 1, "m", 1, b);
	egress_hmac_sha256(k2, sizeof(k2) - 1, "m", 1, c);
	ck_assert(memcmp(a, c, sizeof(a)) == 0);
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
}
END_TEST

static Suite *
digest_suite(void)
{
	Suite *s = suite_create("digest");
	TCase *tc = tcase_create("sha256");

	tcase_add_loop_test(tc, test_sha256, 0, NELEM(sha_cases));
	tcase_add_loop_test(tc, test_hmac_vectors, 0, NELEM(mac_cases));
	tcase_add_loop_test(tc, test_hmac_openssl, 0, NELEM(key_lens));
	tcase_add_test(tc, test_hmac_key_change);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(digest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
