/*
 * check_receipt.c: the receipt line (proto/receipt.c). A chain written with rcpt_encode
 * verifies whole, with its MACs and its signed shutdown checkpoint; the scanner reads back
 * what the encoder wrote; and each kind of tampering (a changed byte, a removed, reordered
 * or duplicated line, a wrong MAC key, a wrong checkpoint key, a torn tail) breaks the
 * chain at the line where egressctl receipts verify reports it; a checkpoint is good when
 * any key of a key ring signed it.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <limits.h>
#include <stdint.h>

#include "receipt.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CHAIN_RECORDS 5              /* four connection records and the checkpoint */

struct chain {
	char lines[CHAIN_RECORDS + 2][RCPT_LINE_MAX];
	size_t len[CHAIN_RECORDS + 2];
	size_t n;
};

static struct egress_key key, other_key;
static void *signer, *other_signer;

static void
keys_setup(void)
{
	memset(&key, 0, sizeof(key));
	memset(key.bytes, 0x5a, EGRESS_KEY_MIN);
	key.len = EGRESS_KEY_MIN;
	other_key = key;
	other_key.bytes[7] ^= 1;
	signer = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	other_signer = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	ck_assert_ptr_nonnull(signer);
	ck_assert_ptr_nonnull(other_signer);
}

static void
keys_teardown(void)
{
	egress_ed25519_free(signer);
	egress_ed25519_free(other_signer);
}

static void
chain_add(struct chain *c, const struct receipt *r, char prev[RCPT_HASH_STRLEN])
{
	struct rcpt_line b;

	ck_assert_int_eq(rcpt_encode(&b, r, c->n + 1, prev, "2026-12-01T10:00:00.000Z",
	    &key), 0);
	ck_assert_uint_lt(b.len, RCPT_LINE_MAX);
	memcpy(c->lines[c->n], b.s, b.len);
	c->len[c->n] = b.len;
	rcpt_chain_hash(b.s, b.len, prev);
	c->n++;
}

/* What egressd writes: opens, a denial, a close, and its signed shutdown checkpoint. */
static void
chain_make(struct chain *c)
{
	char prev[RCPT_HASH_STRLEN] = RCPT_PREV_ZERO, head[RCPT_HASH_STRLEN];
	char msg[RCPT_CHECKPOINT_MSG_MAX], sig[RCPT_SIG_STRLEN];
	uint8_t raw[EGRESS_ED25519_SIGLEN];
	size_t msglen;
	struct receipt r;

	memset(c, 0, sizeof(*c));
	memset(&r, 0, sizeof(r));
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.event = RECEIPT_OPEN;
	r.id = "c1";
	r.principal = "ci";
	r.frontend = "connect";
	r.host = "api.github.com";
	r.port = 443;
	r.addr = "140.82.112.4";
	chain_add(c, &r, prev);
	r.event = RECEIPT_DENY;
	r.id = "c2";
	r.host = "evil.example\"\n";     /* escaped by the encoder */
	r.addr = NULL;
	r.reason = EGRESS_NOT_ALLOWLISTED;
	chain_add(c, &r, prev);
	r.event = RECEIPT_CLOSE;
	r.id = "c1";
	r.host = "api.github.com";
	r.reason = EGRESS_ALLOWED;
	r.close = "client-eof";
	r.bytes_up = 10;
	r.bytes_down = 20;
	r.duration_ms = 30;
	chain_add(c, &r, prev);
	r.event = RECEIPT_DENY;
	r.id = "c3";
	r.close = NULL;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.reason = EGRESS_PRIVATE_ADDRESS;
	r.count = 3;
	chain_add(c, &r, prev);
	memcpy(head, prev, sizeof(head));
	ck_assert_int_eq(rcpt_checkpoint_msg(c->n + 1, head, msg, &msglen), 0);
	ck_assert_int_eq(egress_ed25519_sign(signer, msg, msglen, raw), 0);
	rcpt_sig_format(raw, sig);
	memset(&r, 0, sizeof(r));
	r.event = RECEIPT_CHECKPOINT;
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.detail = "shutdown";
	r.head = head;
	r.sig = sig;
	chain_add(c, &r, prev);
	ck_assert_uint_eq(c->n, CHAIN_RECORDS);
}

static void
chain_verify(const struct chain *c, const struct egress_key *k, void *pub,
    struct rcpt_verify *v)
{
	rcpt_verify_init(v, k, pub);
	for (size_t i = 0; i < c->n; i++)
		rcpt_verify_line(v, "f", i + 1, c->lines[i], c->len[i], false);
	rcpt_verify_end(v, "f");
}

START_TEST(test_round_trip)
{
	struct chain c;
	struct rcpt_verify v;

	chain_make(&c);
	chain_verify(&c, &key, signer, &v);
	ck_assert_msg(!v.broken, "broken at %zu: %s", v.bad_lineno, v.bad_what);
	ck_assert_uint_eq(v.records, CHAIN_RECORDS);
	ck_assert_uint_eq(v.checkpoints, 1);
	ck_assert_uint_eq(v.last_ckpt_seq, CHAIN_RECORDS);
	ck_assert(v.last_ckpt_shutdown);
	ck_assert_uint_eq(v.covered, v.records);
	/* Chain only: no key, no public key. */
	chain_verify(&c, NULL, NULL, &v);
	ck_assert(!v.broken);
	ck_assert_uint_eq(v.records, CHAIN_RECORDS);
}
END_TEST

/*
 * A public key file may hold several keys (one per egress-run run): a checkpoint is good
 * when any of them signed it, wherever that key sits in the list; a list without the
 * signer is refused like a wrong key; no keys at all check no checkpoint.
 */
START_TEST(test_key_ring)
{
	struct chain c;
	struct rcpt_verify v;
	void *ring[3];

	chain_make(&c);
	ring[0] = other_signer;
	ring[1] = other_signer;
	ring[2] = signer;
	rcpt_verify_init_pubkeys(&v, &key, ring, 3);
	for (size_t i = 0; i < c.n; i++)
		rcpt_verify_line(&v, "f", i + 1, c.lines[i], c.len[i], false);
	rcpt_verify_end(&v, "f");
	ck_assert(!v.broken);
	ck_assert_uint_eq(v.checkpoints, 1);
	ck_assert_uint_eq(v.pub_hint, 2);
	ck_assert_ptr_eq(v.pubkey, other_signer);

	rcpt_verify_init_pubkeys(&v, &key, ring, 2);
	for (size_t i = 0; i < c.n; i++)
		rcpt_verify_line(&v, "f", i + 1, c.lines[i], c.len[i], false);
	rcpt_verify_end(&v, "f");
	ck_assert(v.broken);
	ck_assert_uint_eq(v.bad_lineno, CHAIN_RECORDS);
	ck_assert_str_eq(v.bad_what, "bad checkpoint signature (wrong --pubkey, or the chain "
	    "before it was rewritten)");

	rcpt_verify_init_pubkeys(&v, &key, ring, 0);
	ck_assert_ptr_null(v.pubkey);
	for (size_t i = 0; i < c.n; i++)
		rcpt_verify_line(&v, "f", i + 1, c.lines[i], c.len[i], false);
	rcpt_verify_end(&v, "f");
	ck_assert(!v.broken);
	ck_assert_uint_eq(v.checkpoints, 0);
}
END_TEST

/* The key files (common/digest.c): egress-run's generated pair and the key ring reader. */
static char keydir[] = "/tmp/check_receipt.XXXXXX";

static void
keydir_write(const char *name, const char *a, size_t alen, const char *b, size_t blen)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", keydir, name);
	ck_assert_ptr_nonnull(fp = fopen(path, "w"));
	ck_assert_uint_eq(fwrite(a, 1, alen, fp), alen);
	if (blen > 0)
		ck_assert_uint_eq(fwrite(b, 1, blen, fp), blen);
	ck_assert_int_eq(fclose(fp), 0);
}

START_TEST(test_generate_and_load_pubs)
{
	char priv[128], path[128], err[512], *pub1, *pub2, *pub3;
	size_t len1, len2, len3, n;
	uint8_t sig[EGRESS_ED25519_SIGLEN];
	struct stat st;
	void *sk, **ring;

	ck_assert_ptr_nonnull(mkdtemp(keydir));
	snprintf(priv, sizeof(priv), "%s/signing.key", keydir);
	ck_assert_int_eq(egress_ed25519_generate(priv, &pub1, &len1, err, sizeof(err)), 0);
	ck_assert_int_eq(stat(priv, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* Never overwritten. */
	ck_assert_int_eq(egress_ed25519_generate(priv, &pub3, &len3, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "already exists"));
	ck_assert_ptr_nonnull(sk = egress_ed25519_load(priv, true, err, sizeof(err)));
	ck_assert_int_eq(egress_ed25519_sign(sk, "m", 1, sig), 0);
	unlink(priv);
	ck_assert_int_eq(egress_ed25519_generate(priv, &pub2, &len2, err, sizeof(err)), 0);
	ck_assert(len1 != len2 || memcmp(pub1, pub2, len1) != 0);

	/* One key, two keys in file order: the first one signed "m". */
	keydir_write("one.pub", pub1, len1, NULL, 0);
	snprintf(path, sizeof(path), "%s/one.pub", keydir);
	ck_assert_ptr_nonnull(ring = egress_ed25519_load_pubs(path, &n, err, sizeof(err)));
	ck_assert_uint_eq(n, 1);
	ck_assert(egress_ed25519_verify(ring[0], "m", 1, sig));
	egress_ed25519_free_pubs(ring, n);
	keydir_write("two.pub", pub2, len2, pub1, len1);
	snprintf(path, sizeof(path), "%s/two.pub", keydir);
	ck_assert_ptr_nonnull(ring = egress_ed25519_load_pubs(path, &n, err, sizeof(err)));
	ck_assert_uint_eq(n, 2);
	ck_assert(!egress_ed25519_verify(ring[0], "m", 1, sig));
	ck_assert(egress_ed25519_verify(ring[1], "m", 1, sig));
	egress_ed25519_free_pubs(ring, n);

	/* Refused whole: a torn last block, nothing, a private key, a missing file. */
	keydir_write("torn.pub", pub1, len1, pub2, len2 / 2);
	snprintf(path, sizeof(path), "%s/torn.pub", keydir);
	ck_assert_ptr_null(egress_ed25519_load_pubs(path, &n, err, sizeof(err)));
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(strstr(err, "after key 1: not a whole PEM block"));
	keydir_write("empty.pub", "", 0, NULL, 0);
	snprintf(path, sizeof(path), "%s/empty.pub", keydir);
	ck_assert_ptr_null(egress_ed25519_load_pubs(path, &n, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "not an Ed25519 public key in PEM"));
	ck_assert_ptr_null(egress_ed25519_load_pubs(priv, &n, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "key 1: not an Ed25519 public key"));
	snprintf(path, sizeof(path), "%s/none.pub", keydir);
	ck_assert_ptr_null(egress_ed25519_load_pubs(path, &n, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));

	egress_ed25519_free(sk);
	free(pub1);
	free(pub2);
	unlink(priv);
	for (const char *const *f = (const char *const[]){ "one.pub", "two.pub", "torn.pub",
	    "empty.pub", NULL }; *f != NULL; f++) {
		snprintf(path, sizeof(path), "%s/%s", keydir, *f);
		unlink(path);
	}
	ck_assert_int_eq(rmdir(keydir), 0);
}
END_TEST

START_TEST(test_scan_reads_the_encoder)
{
	struct chain c;
	struct rcpt_scan s;
	char mac[RCPT_HEX_LEN + 1];

	chain_make(&c);
	for (size_t i = 0; i < c.n; i++) {
		ck_assert_int_eq(rcpt_scan_line(c.lines[i], c.len[i], &s), 0);
		ck_assert_uint_eq(s.seq, i + 1);
		ck_assert_ptr_nonnull(s.mac);
		rcpt_mac_hex(&key, c.lines[i], s.body_len, mac);
		ck_assert(memcmp(mac, s.mac, RCPT_HEX_LEN) == 0);
	}
	ck_assert(rcpt_scan_line(c.lines[1], c.len[1], &s) == 0 && rcpt_event_is(&s, "deny"));
	ck_assert_ptr_nonnull(strstr(c.lines[1], "\"host\":\"evil.example\\\"\\u000a\""));
	ck_assert(rcpt_scan_line(c.lines[4], c.len[4], &s) == 0 &&
	    rcpt_event_is(&s, "checkpoint"));
	/* The member order is fixed: egressd's lines start with seq, prev and event. */
	ck_assert(strncmp(c.lines[0], "{\"seq\":1,\"prev\":\"" RCPT_PREV_ZERO "\",\"event\":\"open\","
	    "\"id\":\"c1\",\"time\":", 104) == 0);
}
END_TEST

/* via sits right after addr (docs/receipts.md's order), and is left out without a parent. */
START_TEST(test_via_order)
{
	struct rcpt_line l;
	struct receipt r;

	memset(&r, 0, sizeof(r));
	r.event = RECEIPT_OPEN;
	r.id = "c-01";
	r.principal = "ci";
	r.host = "api.github.com";
	r.port = 443;
	r.addr = "140.82.112.4";
	r.via = "parent";
	r.sni = "api.github.com";
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	ck_assert_int_eq(rcpt_encode(&l, &r, 1, RCPT_PREV_ZERO, "2026-12-01T10:00:00.000Z", NULL),
	    0);
	ck_assert_ptr_nonnull(strstr(l.s, ",\"port\":443,\"addr\":\"140.82.112.4\","
	    "\"via\":\"parent\",\"sni\":\"api.github.com\",\"reason\":\"allowed\""));
	r.addr = NULL;              /* resolve parent: via without addr */
	ck_assert_int_eq(rcpt_encode(&l, &r, 1, RCPT_PREV_ZERO, "2026-12-01T10:00:00.000Z", NULL),
	    0);
	ck_assert_ptr_nonnull(strstr(l.s, ",\"port\":443,\"via\":\"parent\",\"sni\":"));
	r.via = NULL;
	ck_assert_int_eq(rcpt_encode(&l, &r, 1, RCPT_PREV_ZERO, "2026-12-01T10:00:00.000Z", NULL),
	    0);
	ck_assert_ptr_null(strstr(l.s, "via"));
}
END_TEST

/* egress_u64 (common/digest.c), the digits of a record's numbers. */
static const struct {
	unsigned long long v;
	const char *want;
} u64_cases[] = {
	{ 0, "0" }, { 7, "7" }, { 10, "10" }, { 443, "443" }, { 65535, "65535" },
	{ 18446744073709551615ULL, "18446744073709551615" },
};

START_TEST(test_u64)
{
	char buf[EGRESS_U64_LEN];

	ck_assert_str_eq(egress_u64(u64_cases[_i].v, buf), u64_cases[_i].want);
}
END_TEST

/*
 * The whole line, byte for byte: numbers (the largest seq, a zero, counts of a collapsed
 * denial), escapes, and the member order. Written by hand since 2026-12-03; the same
 * lines as the vsnprintf encoder's before it.
 */
START_TEST(test_exact_line)
{
	struct receipt r = { 0 };
	struct rcpt_line l;
	static const char *const want[] = {
		"{\"seq\":18446744073709551615,\"prev\":\"" RCPT_PREV_ZERO "\",\"event\":\"close\","
		"\"id\":\"c-1\",\"time\":\"2026-12-01T10:00:00.000Z\",\"principal\":\"ci\","
		"\"host\":\"a.example\",\"port\":0,\"reason\":\"allowed\",\"close\":\"q\\\"b\\\\\\u0001\","
		"\"bytes_up\":0,\"bytes_down\":123456789012,\"duration_ms\":9223372036854775807}",
		"{\"seq\":1,\"prev\":\"" RCPT_PREV_ZERO "\",\"event\":\"deny\",\"id\":\"c-1\","
		"\"time\":\"2026-12-01T10:00:00.000Z\",\"principal\":\"ci\",\"host\":\"a.example\","
		"\"port\":65535,\"reason\":\"allowed\",\"count\":4294967295}",
	};

	r.event = RECEIPT_CLOSE;
	r.id = "c-1";
	r.principal = "ci";
	r.host = "a.example";
	r.port = 0;
	r.close = "q\"b\\\x01";
	r.bytes_up = 0;
	r.bytes_down = 123456789012LL;
	r.duration_ms = INT64_MAX;
	ck_assert_int_eq(rcpt_encode(&l, &r, UINT64_MAX, RCPT_PREV_ZERO,
	    "2026-12-01T10:00:00.000Z", NULL), 0);
	l.s[l.len] = '\0';
	ck_assert_str_eq(l.s, want[0]);
	r.event = RECEIPT_DENY;
	r.close = NULL;
	r.port = 65535;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.count = UINT_MAX;
	ck_assert_int_eq(rcpt_encode(&l, &r, 1, RCPT_PREV_ZERO, "2026-12-01T10:00:00.000Z",
	    NULL), 0);
	l.s[l.len] = '\0';
	ck_assert_str_eq(l.s, want[1]);
}
END_TEST

/* Every byte value in a string member: as it is, or escaped as JSON has it. */
START_TEST(test_str_bytes)
{
	struct receipt r = { 0 };
	struct rcpt_line l;
	unsigned char b = (unsigned char)(_i + 1);
	char v[4] = { 'a', (char)b, 'z', '\0' }, want[32], *m;

	r.event = RECEIPT_CLOSE;
	r.close = v;
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	ck_assert_int_eq(rcpt_encode(&l, &r, 1, RCPT_PREV_ZERO, "t", NULL), 0);
	l.s[l.len] = '\0';
	if (b == '"' || b == '\\')
		snprintf(want, sizeof(want), "\"close\":\"a\\%cz\"}", b);
	else if (b >= 0x20 && b < 0x7f)
		snprintf(want, sizeof(want), "\"close\":\"a%cz\"}", b);
	else
		snprintf(want, sizeof(want), "\"close\":\"a\\u%04xz\"}", b);
	m = strstr(l.s, "\"close\":");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m, want);
}
END_TEST

START_TEST(test_sig_format_parse)
{
	uint8_t raw[EGRESS_ED25519_SIGLEN], back[EGRESS_ED25519_SIGLEN];
	char s[RCPT_SIG_STRLEN];

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 37 + 1);
	rcpt_sig_format(raw, s);
	ck_assert_int_eq(rcpt_sig_parse(s, back), 0);
	ck_assert(memcmp(raw, back, sizeof(raw)) == 0);
	s[20] = 'G';
	ck_assert_int_eq(rcpt_sig_parse(s, back), -1);
	ck_assert_int_eq(rcpt_sig_parse("ed25519:00", back), -1);
}
END_TEST

START_TEST(test_needle)
{
	char out[64];

	ck_assert_int_eq(rcpt_member_needle("principal", "ci", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "\"principal\":\"ci\"");
	ck_assert_int_eq(rcpt_member_needle("principal", "a\"b", out, sizeof(out)), -1);
	ck_assert_int_eq(rcpt_member_needle("principal",
	    "a-very-long-principal-name-that-does-not-fit-in-the-buffer", out, sizeof(out)), -1);
}
END_TEST

/* --- tampering: one row per kind, with where and what the verifier reports ----------- */

static void
mut_change_byte(struct chain *c)
{
	char *p = strstr(c->lines[2], "api.github.com");

	p[0] = 'b';
}

static void
mut_remove_line(struct chain *c)
{
	memmove(&c->lines[1], &c->lines[2], sizeof(c->lines[0]) * (c->n - 2));
	memmove(&c->len[1], &c->len[2], sizeof(c->len[0]) * (c->n - 2));
	c->n--;
}

static void
mut_reorder(struct chain *c)
{
	char tmp[RCPT_LINE_MAX];
	size_t l = c->len[1];

	memcpy(tmp, c->lines[1], sizeof(tmp));
	memcpy(c->lines[1], c->lines[2], sizeof(tmp));
	memcpy(c->lines[2], tmp, sizeof(tmp));
	c->len[1] = c->len[2];
	c->len[2] = l;
}

static void
mut_duplicate(struct chain *c)
{
	memmove(&c->lines[2], &c->lines[1], sizeof(c->lines[0]) * (c->n - 1));
	memmove(&c->len[2], &c->len[1], sizeof(c->len[0]) * (c->n - 1));
	c->n++;
}

static void
mut_cut_tail(struct chain *c)
{
	c->len[c->n - 1] -= 10;     /* a torn last line: no repair record follows */
}

static void
mut_none(struct chain *c)
{
	(void)c;
}

enum which_key { K_NONE, K_GOOD, K_OTHER };

static const struct {
	const char *name;
	void (*mutate)(struct chain *);
	enum which_key mac, sig;
	size_t lineno;               /* of the first break */
	const char *what;            /* a substring of what is reported */
} tamper[] = {
	{ "a changed byte, with the key", mut_change_byte, K_GOOD, K_GOOD, 3, "bad MAC" },
	{ "a changed byte, chain only", mut_change_byte, K_NONE, K_NONE, 4,
	    "prev does not match the previous line" },
	{ "a removed line", mut_remove_line, K_GOOD, K_GOOD, 2, "seq 3 after 1" },
	{ "a removed line, chain only", mut_remove_line, K_NONE, K_NONE, 2,
	    "reordered, deleted or inserted" },
	{ "a reordered line", mut_reorder, K_GOOD, K_GOOD, 2, "seq 3 after 1" },
	{ "a duplicated line", mut_duplicate, K_GOOD, K_GOOD, 3, "duplicate (seq 2 after 2)" },
	{ "a bad MAC (another key)", mut_none, K_OTHER, K_NONE, 1, "bad MAC" },
	{ "a bad checkpoint signature", mut_none, K_GOOD, K_OTHER, 5,
	    "bad checkpoint signature" },
	{ "a torn last line", mut_cut_tail, K_GOOD, K_NONE, 5,
	    "unparseable line" },
};

START_TEST(test_tamper)
{
	struct chain c;
	struct rcpt_verify v;
	const struct egress_key *k = tamper[_i].mac == K_GOOD ? &key :
	    tamper[_i].mac == K_OTHER ? &other_key : NULL;
	void *pub = tamper[_i].sig == K_GOOD ? signer : tamper[_i].sig == K_OTHER ?
	    other_signer : NULL;

	chain_make(&c);
	tamper[_i].mutate(&c);
	chain_verify(&c, k, pub, &v);
	ck_assert_msg(v.broken, "%s: not broken", tamper[_i].name);
	ck_assert_msg(v.bad_lineno == tamper[_i].lineno, "%s: broken at line %zu, not %zu (%s)",
	    tamper[_i].name, v.bad_lineno, tamper[_i].lineno, v.bad_what);
	ck_assert_msg(strstr(v.bad_what, tamper[_i].what) != NULL, "%s: \"%s\"",
	    tamper[_i].name, v.bad_what);
}
END_TEST

/* A first line that does not start the chain, and a line that is not egressd's shape. */
START_TEST(test_start_and_shape)
{
	struct chain c;
	struct rcpt_verify v;
	struct rcpt_scan s;

	chain_make(&c);
	rcpt_verify_init(&v, &key, NULL);
	rcpt_verify_line(&v, "f", 1, c.lines[1], c.len[1], false);
	ck_assert(v.broken);
	ck_assert_ptr_nonnull(strstr(v.bad_what, "not 64 zeros"));
	ck_assert_int_eq(rcpt_scan_line("{\"seq\":01}", 10, &s), -1);
	ck_assert_int_eq(rcpt_scan_line("not json", 8, &s), -1);
	ck_assert_int_eq(rcpt_scan_line(c.lines[0], c.len[0] - 1, &s), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("receipt");
	TCase *tc;
	SRunner *sr;
	int failed;

	tc = tcase_create("round_trip");
	tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
	tcase_add_test(tc, test_round_trip);
	suite_add_tcase(s, tc);
	tc = tcase_create("key_ring");
	tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
	tcase_add_test(tc, test_key_ring);
	suite_add_tcase(s, tc);
	tc = tcase_create("key_files");
	tcase_add_test(tc, test_generate_and_load_pubs);
	suite_add_tcase(s, tc);
	tc = tcase_create("scan");
	tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
	tcase_add_test(tc, test_scan_reads_the_encoder);
	tcase_add_test(tc, test_start_and_shape);
	suite_add_tcase(s, tc);
	tc = tcase_create("encoding");
	tcase_add_test(tc, test_sig_format_parse);
	tcase_add_test(tc, test_needle);
	suite_add_tcase(s, tc);
	tc = tcase_create("via");
	tcase_add_test(tc, test_via_order);
	tcase_add_test(tc, test_exact_line);
	tcase_add_loop_test(tc, test_u64, 0, NELEM(u64_cases));
	tcase_add_loop_test(tc, test_str_bytes, 0, 255);
	suite_add_tcase(s, tc);
	tc = tcase_create("tamper");
	tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
	tcase_add_loop_test(tc, test_tamper, 0, NELEM(tamper));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
