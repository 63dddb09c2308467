/*
 * common.h: what every egress program shares: the SPEC's reason codes, allocation
 * wrappers that never return NULL, a growable argument vector, digests and key files, and
 * accepting with a pause. Trusts nothing it is given.
 */
#ifndef EGRESS_COMMON_H
#define EGRESS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The reasons of the SPEC's table, in table order: libegress returns -(1000 + row), so
 * the numeric values are part of the contract and must never be reordered.
 */
enum egress_reason {
	EGRESS_ALLOWED = 0,
	EGRESS_NOT_ALLOWLISTED,
	EGRESS_DENIED_BY_RULE,
	EGRESS_MALFORMED_REQUEST,
	EGRESS_BAD_HOST,
	EGRESS_PRIVATE_ADDRESS,
	EGRESS_DNS_FAILURE,
	EGRESS_DNS_TIMEOUT,
	EGRESS_CONNECT_REFUSED,
	EGRESS_CONNECT_TIMEOUT,
	EGRESS_QUOTA_CONNECTIONS,
	EGRESS_QUOTA_RATE,
	EGRESS_QUOTA_BYTES,
	EGRESS_SNI_MISSING,
	EGRESS_SNI_MISMATCH,
	EGRESS_SNI_MALFORMED,
	EGRESS_SNI_ECH,
	EGRESS_NOT_TLS,
	EGRESS_UNSUPPORTED,
	EGRESS_HANDSHAKE_TIMEOUT,
	EGRESS_PEER_UID,
	EGRESS_IDLE_TIMEOUT,
	EGRESS_SHUTDOWN,
	EGRESS_REASON_COUNT
};

const char *egress_reason_name(enum egress_reason r);
/*
 * The wire code of a reason, as EGR1 and EGF1 replies carry it and libegress returns it
 * (egress.h's EGRESS_ERR_*): 0 for allowed, else -(1000 + r). egress_reason_of_code is
 * the way back: the reason, or -1 for a code that is none (-1000, positive, off the end).
 */
#define EGRESS_REASON_CODE_BASE 1000
int32_t egress_reason_code(enum egress_reason r);
int egress_reason_of_code(int32_t code);
/*
 * What each client sees, from the SPEC's table: the HTTP status (0: the connection is
 * only closed), the SOCKS5 REP and the SOCKS4 CD (-1: closed without a reply).
 */
int egress_reason_http_status(enum egress_reason r);
int egress_reason_socks5(enum egress_reason r);
int egress_reason_socks4(enum egress_reason r);
/* The HTTP reason phrase of a status this project sends. */
const char *egress_http_phrase(int status);
/* Returns the reason named s, or -1. */
int egress_reason_from_name(const char *s);

/* Allocation: abort with a message rather than return NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
int xasprintf(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A growable argument vector for execv(): list is NULL-terminated after every add, and
 * owns copies of its strings. Start from a zeroed struct; arglist_free() empties it.
 */
struct arglist {
	char **list;
	size_t num;
	size_t nalloc;
};
void arglist_add(struct arglist *a, const char *s);
void arglist_addf(struct arglist *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arglist_addv(struct arglist *a, const char *const *v);   /* a NULL-terminated array */
void arglist_free(struct arglist *a);
/* NAME of NAME=VALUE (n bytes) is a portable shell name: egress-run and egress-launch. */
bool egress_env_name_ok(const char *s, size_t n);

/* Digests: "sha256:" + 64 lower-case hex digits, and the same for HMAC-SHA256. */
#define EGRESS_SHA256_LEN 32
#define EGRESS_DIGEST_STRLEN (sizeof("hmac-sha256:") - 1 + 64 + 1)
void egress_sha256(const void *buf, size_t len, uint8_t out[EGRESS_SHA256_LEN]);
void egress_hmac_sha256(const uint8_t *key, size_t keylen, const void *buf, size_t len,
    uint8_t out[EGRESS_SHA256_LEN]);
/* HMAC-SHA256 of a then b (b may be NULL with blen 0): one MAC, no copy of the two. */
void egress_hmac_sha256_2(const uint8_t *key, size_t keylen, const void *a, size_t alen,
    const void *b, size_t blen, uint8_t out[EGRESS_SHA256_LEN]);
void egress_hex(const uint8_t *in, size_t len, char *out);
/* The decimal text of v, written at the end of buf; returns where it starts. */
#define EGRESS_U64_LEN 21
const char *egress_u64(unsigned long long v, char buf[EGRESS_U64_LEN]);
/* Compares n bytes in constant time; 0 when equal. */
int egress_timingsafe_bcmp(const void *a, const void *b, size_t n);

/*
 * Key files hold at least EGRESS_KEY_MIN bytes, used raw; more than EGRESS_KEY_MAX is
 * refused so that a wrong path (a log, a device) is not silently taken as a key.
 */
#define EGRESS_KEY_MIN 32
#define EGRESS_KEY_MAX 4096
struct egress_key {
	uint8_t bytes[EGRESS_KEY_MAX];
	size_t len;
};
/* Returns 0, or -1 with a message in err (size errlen). */
int egress_key_load(const char *path, struct egress_key *key, char *err, size_t errlen);
/* Creates path with mode 0600 and 32 random bytes; never overwrites. */
int egress_key_generate(const char *path, char *err, size_t errlen);
void egress_key_clear(struct egress_key *key);

/*
 * Ed25519 for receipt checkpoints and policy seals (PEM keys as `openssl genpkey
 * -algorithm ed25519` writes them). The key is opaque; NULL with a message in err on
 * failure.
 */
#define EGRESS_ED25519_SIGLEN 64
void *egress_ed25519_load(const char *path, bool private_key, char *err, size_t errlen);
/* The same from fd (read and closed; -1: open path), path naming it in errors. */
void *egress_ed25519_load_fd(int fd, const char *path, bool private_key, char *err,
    size_t errlen);
void egress_ed25519_free(void *key);
/* Every public key of a PEM file of one or more (NULL and *n 0 on failure). */
#define EGRESS_ED25519_PUBS_MAX 65536
void **egress_ed25519_load_pubs(const char *path, size_t *n, char *err, size_t errlen);
void egress_ed25519_free_pubs(void **keys, size_t n);
/* A fresh pair: the private key written to priv_path (0600, O_EXCL), the public as PEM. */
int egress_ed25519_generate(const char *priv_path, char **pub, size_t *publen, char *err,
    size_t errlen);
int egress_ed25519_sign(void *key, const void *msg, size_t len,
    uint8_t sig[EGRESS_ED25519_SIGLEN]);
bool egress_ed25519_verify(void *key, const void *msg, size_t len,
    const uint8_t sig[EGRESS_ED25519_SIGLEN]);
/*
 * Writes a fresh Ed25519 key pair: path (the private key, PEM PKCS#8 as `openssl genpkey`
 * writes it, mode 0600) and path.pub (the public key, PEM SubjectPublicKeyInfo, mode 0644).
 * Never overwrites: when either exists nothing is written. 0, or -1 with err.
 */
int egress_ed25519_keygen_pair(const char *path, char *err, size_t errlen);

/*
 * Accepting with a pause when descriptors run out (accept.c, libevent): egress_accept()
 * is accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); on EMFILE or ENFILE it also
 * calls egress_accept_pause(), which switches the owner's listeners off (listen(false))
 * for EGRESS_ACCEPT_PAUSE_MS and then on (listen(true)), instead of letting a still
 * readable listener spin the event loop. Returns the descriptor, or -1 with errno.
 * base, listen and arg are the caller's; paused and timer belong to accept.c (zero them).
 * egress_accept_pause_init() allocates the timer up front (-1: no memory), so that the
 * pause never needs memory when descriptors run out; without it the pause is for good.
 */
#define EGRESS_ACCEPT_PAUSE_MS 1000
struct event_base;
struct event;
struct egress_accept_pause {
	struct event_base *base;
	void (*listen)(bool on, void *arg);
	void *arg;
	bool paused;
	struct event *timer;
};
int egress_accept_pause_init(struct egress_accept_pause *ap);
int egress_accept(int lfd, struct egress_accept_pause *ap);
void egress_accept_pause(struct egress_accept_pause *ap);
/* Frees the timer (before the event base goes); the listeners are left as they are. */
void egress_accept_pause_clear(struct egress_accept_pause *ap);

/*
 * The principal socket, pinned at start (pin.c): opened by path once (O_PATH, no symlink
 * followed), a socket, and with expect ("DEV:INO", or NULL) that very inode; connections
 * then go through the descriptor, never the path. egress_pin_open returns 0, -1 (refused,
 * a message in err) or -2 (expect is not DEV:INO). egress_pin_connect returns a
 * connected, non-blocking, close-on-exec descriptor, or -1 with errno.
 */
struct egress_pin {
	int fd;
	char path[32];               /* "/proc/self/fd/N" */
	unsigned long long dev, ino;
};
int egress_pin_open(struct egress_pin *pin, const char *path, const char *expect, char *err,
    size_t errlen);
int egress_pin_connect(const struct egress_pin *pin);

/*
 * FNV-1a over n bytes, the high bits folded in: the hash of the policy's rule tables and
 * of egressd's synthetic-name map (names are short; speed matters more than strength,
 * and neither table lets a client choose what collides with what it does not own).
 */
static inline uint64_t
egress_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

#endif
