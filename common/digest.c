/*
 * digest.c: SHA-256, HMAC-SHA256 (libcrypto) and key files. Keys are read raw and
 * wiped after use; a key file must be a regular file of EGRESS_KEY_MIN..EGRESS_KEY_MAX bytes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common.h"

void
egress_sha256(const void *buf, size_t len, uint8_t out[EGRESS_SHA256_LEN])
{
	unsigned int n = EGRESS_SHA256_LEN;

	if (EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL) != 1) {
		fprintf(stderr, "libcrypto: SHA-256 failed\n");
		abort();
	}
}

void
egress_hmac_sha256(const uint8_t *key, size_t keylen, const void *buf, size_t len,
    uint8_t out[EGRESS_SHA256_LEN])
{
	unsigned int n = EGRESS_SHA256_LEN;

	if (keylen > INT32_MAX ||
	    HMAC(EVP_sha256(), key, (int)keylen, buf, len, out, &n) == NULL) {
		fprintf(stderr, "libcrypto: HMAC-SHA256 failed\n");
		abort();
	}
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
