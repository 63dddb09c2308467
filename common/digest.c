/*
 * digest.c: SHA-256, HMAC-SHA256 (libcrypto) and key files, and the text of digests and
 * numbers (egress_hex, egress_u64). Keys are read raw and
 * wiped after use; a key file must be a regular file of EGRESS_KEY_MIN..EGRESS_KEY_MAX bytes.
 * Ed25519 keys are PEM (libcrypto parses them); a public key file is trusted for no more
 * than the keys it holds (at most EGRESS_ED25519_PUBS_MAX).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "common.h"

/*
 * OpenSSL 3 looks an algorithm up by name on every one-shot call; egressd hashes and MACs
 * two records per tunnel, so the algorithms are fetched once and contexts reused. The
 * contexts are per process: these functions are not for concurrent threads.
 */
static EVP_MD *digest_sha256;

static void __attribute__((noreturn))
digest_fail(const char *what)
{
	fprintf(stderr, "libcrypto: %s failed\n", what);
	abort();
}

/* ctx, made once, ready for a new SHA-256 (re-initialising it allocates nothing). */
static void
digest_begin(EVP_MD_CTX **ctx)
{
	if (digest_sha256 == NULL && (digest_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		digest_fail("fetching SHA-256");
	if (*ctx == NULL && (*ctx = EVP_MD_CTX_new()) == NULL)
		digest_fail("SHA-256 context");
	if (EVP_DigestInit_ex(*ctx, digest_sha256, NULL) != 1)
		digest_fail("SHA-256");
}

void
egress_sha256(const void *buf, size_t len, uint8_t out[EGRESS_SHA256_LEN])
{
	static EVP_MD_CTX *ctx;
	unsigned int n = EGRESS_SHA256_LEN;

	digest_begin(&ctx);
	if (EVP_DigestUpdate(ctx, buf, len) != 1 || EVP_DigestFinal_ex(ctx, out, &n) != 1)
		digest_fail("SHA-256");
}

/*
 * HMAC-SHA256 (RFC 2104) of a then b, on a digest context made once. Written here rather
 * than with EVP_MAC: OpenSSL 3.0's HMAC copies its key's digest contexts at every
 * initialisation, allocating and freeing each time, which the monitor paid twice per
 * tunnel (issue 17, bench/README.md). Nothing of the key outlives a call.
 */
#define DIGEST_BLOCK 64

void
egress_hmac_sha256_2(const uint8_t *key, size_t keylen, const void *a, size_t alen,
    const void *b, size_t blen, uint8_t out[EGRESS_SHA256_LEN])
{
	static EVP_MD_CTX *ctx;
	uint8_t k[DIGEST_BLOCK], pad[DIGEST_BLOCK], inner[EGRESS_SHA256_LEN];
	unsigned int n = EGRESS_SHA256_LEN;

	memset(k, 0, sizeof(k));
	if (keylen > sizeof(k))
		egress_sha256(key, keylen, k);          /* a long key is its digest */
	else if (keylen > 0)
		memcpy(k, key, keylen);
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x36;
	digest_begin(&ctx);
	if (EVP_DigestUpdate(ctx, pad, sizeof(pad)) != 1 ||
	    (alen > 0 && EVP_DigestUpdate(ctx, a, alen) != 1) ||
	    (blen > 0 && EVP_DigestUpdate(ctx, b, blen) != 1) ||
	    EVP_DigestFinal_ex(ctx, inner, &n) != 1)
		digest_fail("HMAC-SHA256");
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x5c;
	digest_begin(&ctx);
	n = EGRESS_SHA256_LEN;
	if (EVP_DigestUpdate(ctx, pad, sizeof(pad)) != 1 ||
	    EVP_DigestUpdate(ctx, inner, sizeof(inner)) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &n) != 1)
		digest_fail("HMAC-SHA256");
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(inner, sizeof(inner));
}

void
egress_hmac_sha256(const uint8_t *key, size_t keylen, const void *buf, size_t len,
    uint8_t out[EGRESS_SHA256_LEN])
{
	egress_hmac_sha256_2(key, keylen, buf, len, NULL, 0, out);
}

const char *
egress_u64(unsigned long long v, char buf[EGRESS_U64_LEN])
{
	char *p = buf + EGRESS_U64_LEN - 1;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	return p;
}

void
egress_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * len] = '\0';
}

int
egress_timingsafe_bcmp(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) != 0;
}

void
egress_key_clear(struct egress_key *key)
{
	OPENSSL_cleanse(key, sizeof(*key));
}

int
egress_key_load(const char *path, struct egress_key *key, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd;

	memset(key, 0, sizeof(*key));
	/* O_NONBLOCK: a FIFO must be refused below, not block the open. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	/* Read one byte more than allowed so that an over-long file is noticed. */
	n = read(fd, key->bytes, sizeof(key->bytes));
	if (n == (ssize_t)sizeof(key->bytes)) {
		uint8_t extra;
		if (read(fd, &extra, 1) == 1) {
			snprintf(err, errlen, "%s: key file longer than %d bytes", path,
			    EGRESS_KEY_MAX);
			close(fd);
			egress_key_clear(key);
			return -1;
		}
	}
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (n < EGRESS_KEY_MIN) {
		snprintf(err, errlen, "%s: key file holds %zd bytes, at least %d are required",
		    path, n, EGRESS_KEY_MIN);
		egress_key_clear(key);
		return -1;
	}
	key->len = (size_t)n;
	return 0;
}

int
egress_key_generate(const char *path, char *err, size_t errlen)
{
	uint8_t buf[32];
	int fd;

	if (RAND_bytes(buf, sizeof(buf)) != 1) {
		snprintf(err, errlen, "libcrypto: no random bytes");
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", path,
		    errno == EEXIST ? "already exists, not overwritten" : strerror(errno));
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	if (fchmod(fd, 0600) == -1 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
	    fsync(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		OPENSSL_cleanse(buf, sizeof(buf));
		close(fd);
		unlink(path);
		return -1;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	if (close(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

void *
egress_ed25519_load(const char *path, bool private_key, char *err, size_t errlen)
{
	return egress_ed25519_load_fd(-1, path, private_key, err, errlen);
}

void *
egress_ed25519_load_fd(int fd, const char *path, bool private_key, char *err, size_t errlen)
{
	FILE *fp = fd == -1 ? fopen(path, "re") : fdopen(fd, "r");
	EVP_PKEY *k;

	if (fp == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	k = private_key ? PEM_read_PrivateKey(fp, NULL, NULL, NULL) :
	    PEM_read_PUBKEY(fp, NULL, NULL, NULL);
	fclose(fp);
	if (k == NULL || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
		snprintf(err, errlen, "%s: not an Ed25519 %s key in PEM (openssl genpkey "
		    "-algorithm ed25519%s)", path, private_key ? "private" : "public",
		    private_key ? "" : ", then openssl pkey -pubout");
		EVP_PKEY_free(k);
		return NULL;
	}
	return k;
}

void
egress_ed25519_free(void *key)
{
	EVP_PKEY_free(key);
}

/*
 * Every PEM public key in path, in file order: a file may hold several (egress-run appends
 * one per run to the public key file beside its receipts, which all runs share). Reading
 * stops at the end of the file; anything else that is not an Ed25519 public key, or more
 * than EGRESS_ED25519_PUBS_MAX of them, refuses the whole file.
 */
void **
egress_ed25519_load_pubs(const char *path, size_t *n, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	BIO *bio;
	void **keys = NULL;
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long derlen;
	unsigned long e;

	*n = 0;
	if (fp == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if ((bio = BIO_new_fp(fp, BIO_CLOSE)) == NULL) {
		fclose(fp);
		snprintf(err, errlen, "%s: libcrypto: no memory", path);
		return NULL;
	}
	ERR_clear_error();
	/*
	 * The PEM framing first (its reader tells the end of the file from a torn block,
	 * which libcrypto 3's key decoders do not), then each block's key.
	 */
	while (PEM_read_bio(bio, &name, &header, &der, &derlen) == 1) {
		const unsigned char *p = der;
		EVP_PKEY *k = NULL;

		if (strcmp(name, PEM_STRING_PUBLIC) == 0 && header[0] == '\0' &&
		    *n < EGRESS_ED25519_PUBS_MAX)
			k = d2i_PUBKEY(NULL, &p, derlen);
		if (k == NULL || p != der + derlen || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
			snprintf(err, errlen, "%s: key %zu: %s", path, *n + 1,
			    *n == EGRESS_ED25519_PUBS_MAX ? "too many keys" :
			    "not an Ed25519 public key (openssl genpkey -algorithm ed25519, then "
			    "openssl pkey -pubout)");
			EVP_PKEY_free(k);
			goto fail;
		}
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(der);
		name = header = NULL;
		der = NULL;
		keys = xreallocarray(keys, *n + 1, sizeof(*keys));
		keys[(*n)++] = k;
	}
	/* The end of the file is "no start line"; a torn or foreign block is not. */
	e = ERR_peek_last_error();
	if (*n == 0 || ERR_GET_LIB(e) != ERR_LIB_PEM || ERR_GET_REASON(e) != PEM_R_NO_START_LINE) {
		if (*n == 0)
			snprintf(err, errlen, "%s: not an Ed25519 public key in PEM (openssl "
			    "genpkey -algorithm ed25519, then openssl pkey -pubout)", path);
		else
			snprintf(err, errlen, "%s: after key %zu: not a whole PEM block", path, *n);
		goto fail;
	}
	ERR_clear_error();
	BIO_free(bio);
	return keys;
fail:
	ERR_clear_error();
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(der);
	BIO_free(bio);
	egress_ed25519_free_pubs(keys, *n);
	*n = 0;
	return NULL;
}

void
egress_ed25519_free_pubs(void **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		EVP_PKEY_free(keys[i]);
	free(keys);
}

/*
 * A fresh key pair: the private key to priv_path (created 0600, never overwritten, PEM
 * as signing-key reads it), the public half returned as PEM in *pub (malloc'd, *publen
 * bytes), for the caller to put where verifiers find it. 0, or -1 with a message.
 */
int
egress_ed25519_generate(const char *priv_path, char **pub, size_t *publen, char *err,
    size_t errlen)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	BIO *sec = BIO_new(BIO_s_secmem()), *pb = BIO_new(BIO_s_mem());
	char *data;
	long len, plen;
	int fd, rc = -1;

	*pub = NULL;
	if (k == NULL || sec == NULL || pb == NULL ||
	    PEM_write_bio_PrivateKey(sec, k, NULL, NULL, 0, NULL, NULL) != 1 ||
	    PEM_write_bio_PUBKEY(pb, k) != 1 ||
	    (len = BIO_get_mem_data(sec, &data)) <= 0) {
		snprintf(err, errlen, "libcrypto: cannot make an Ed25519 key pair");
		goto out;
	}
	fd = open(priv_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", priv_path,
		    errno == EEXIST ? "already exists, not overwritten" : strerror(errno));
		goto out;
	}
	if (fchmod(fd, 0600) == -1 || write(fd, data, (size_t)len) != (ssize_t)len) {
		snprintf(err, errlen, "%s: %s", priv_path, strerror(errno));
		close(fd);
		unlink(priv_path);
		goto out;
	}
	if (close(fd) == -1) {
		snprintf(err, errlen, "%s: %s", priv_path, strerror(errno));
		unlink(priv_path);
		goto out;
	}
	plen = BIO_get_mem_data(pb, &data);
	*pub = xmalloc((size_t)plen + 1);
	memcpy(*pub, data, (size_t)plen);
	(*pub)[plen] = '\0';
	*publen = (size_t)plen;
	rc = 0;
out:
	BIO_free(sec);          /* a secure-heap BIO: cleansed when freed */
	BIO_free(pb);
	EVP_PKEY_free(k);
	return rc;
}

int
egress_ed25519_sign(void *key, const void *msg, size_t len, uint8_t sig[EGRESS_ED25519_SIGLEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t n = EGRESS_ED25519_SIGLEN;
	int ok;

	ok = ctx != NULL && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestSign(ctx, sig, &n, msg, len) == 1 && n == EGRESS_ED25519_SIGLEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -1;
}

bool
egress_ed25519_verify(void *key, const void *msg, size_t len,
    const uint8_t sig[EGRESS_ED25519_SIGLEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok;

	ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestVerify(ctx, sig, EGRESS_ED25519_SIGLEN, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

/* Creates path exclusively (no symbolic link followed) with exactly mode; -1 with err. */
static FILE *
digest_create(const char *path, mode_t mode, char *err, size_t errlen)
{
	FILE *fp;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", path,
		    errno == EEXIST ? "already exists, not overwritten" : strerror(errno));
		return NULL;
	}
	/* The umask must not make a public key unreadable or a private one readable. */
	if (fchmod(fd, mode) == -1 || (fp = fdopen(fd, "w")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return NULL;
	}
	return fp;
}

/* Flushes to the disk and closes; on failure the file is removed. */
static int
digest_finish(FILE *fp, const char *path, bool wrote, char *err, size_t errlen)
{
	bool ok = wrote && fflush(fp) == 0 && fsync(fileno(fp)) == 0;

	if (!ok)
		snprintf(err, errlen, "%s: %s", path, wrote ? strerror(errno) :
		    "libcrypto could not write the PEM key");
	if (fclose(fp) != 0 && ok) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		ok = false;
	}
	if (!ok)
		unlink(path);
	return ok ? 0 : -1;
}

int
egress_ed25519_keygen_pair(const char *path, char *err, size_t errlen)
{
	char *pub, vbuf[4096];
	struct stat st;
	bool wrote;
	EVP_PKEY *k;
	FILE *fp;
	int r = -1;

	xasprintf(&pub, "%s.pub", path);
	/* Checked first so that a refusal leaves no half pair behind (O_EXCL still decides). */
	if (lstat(path, &st) == 0 || lstat(pub, &st) == 0) {
		snprintf(err, errlen, "%s: already exists, not overwritten",
		    lstat(path, &st) == 0 ? path : pub);
		free(pub);
		return -1;
	}
	if ((k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL) {
		snprintf(err, errlen, "libcrypto: Ed25519 key generation failed");
		free(pub);
		return -1;
	}
	if ((fp = digest_create(path, 0600, err, errlen)) == NULL)
		goto out;
	/* stdio's buffer is ours, so that no copy of the private key stays in freed memory. */
	setvbuf(fp, vbuf, _IOFBF, sizeof(vbuf));
	wrote = PEM_write_PrivateKey(fp, k, NULL, NULL, 0, NULL, NULL) == 1;
	wrote = digest_finish(fp, path, wrote, err, errlen) == 0;
	OPENSSL_cleanse(vbuf, sizeof(vbuf));
	if (!wrote)
		goto out;
	if ((fp = digest_create(pub, 0644, err, errlen)) == NULL) {
		unlink(path);
		goto out;
	}
	if (digest_finish(fp, pub, PEM_write_PUBKEY(fp, k) == 1, err, errlen) == -1) {
		unlink(path);
		goto out;
	}
	r = 0;
out:
	EVP_PKEY_free(k);
	free(pub);
	return r;
}
