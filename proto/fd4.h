/*
 * fd4.h: EGF1, the datagrams of the fd-4 channel (SPEC "Sandbox path", fd 4), both
 * directions (fd4.c):
 *   request  "EGF1" | id u32 | timeout_ms u32 | port u16 | len u8 | host
 *   reply    "EGF1" | id u32 | code i32
 * libegress builds requests and parses replies; egress-broker parses requests and builds
 * replies. The installed header broker/egress.h names the same magic and sizes for its
 * users (FD4_*) and must not include this internal one, so they are written twice:
 * broker/libegress.c asserts at compile time that the two agree.
 * Pure: looks at len bytes, never allocates.
 */
#ifndef EGRESS_PROTO_FD4_H
#define EGRESS_PROTO_FD4_H

#include <stddef.h>
#include <stdint.h>

#define FD4_MAGIC "EGF1"
#define FD4_MAGIC_LEN 4
#define FD4_HOST_MAX 255
#define FD4_REQUEST_HEAD 15          /* magic, id, timeout_ms, port, len */
#define FD4_REQUEST_MAX (FD4_REQUEST_HEAD + FD4_HOST_MAX)
#define FD4_REPLY_LEN 12             /* magic, id, code */

struct fd4_request {
	uint32_t id;                 /* set whenever at least 8 bytes with the magic came */
	int has_id;
	uint32_t timeout_ms;         /* as sent; fd4_timeout_ms() applies default and cap */
	uint16_t port;               /* 1..65535 */
	uint8_t hostlen;             /* 1..255 */
	char host[FD4_HOST_MAX + 1];   /* NUL-terminated, no NUL inside */
};

#define FD4_TIMEOUT_DEFAULT_MS 30000
#define FD4_TIMEOUT_MAX_MS 120000

/*
 * Returns 0 (out filled) or the reason (enum egress_reason, EGRESS_MALFORMED_REQUEST):
 * short, longer than FD4_REQUEST_MAX, wrong magic, port 0, length byte 0 or not
 * matching the datagram's size, a NUL in the host.
 */
int fd4_parse_request(const uint8_t *buf, size_t len, struct fd4_request *out);
/* 0 means the default; anything over the cap is capped. */
int fd4_timeout_ms(uint32_t requested);
/* The 12-byte reply datagram. */
void fd4_reply(uint32_t id, int32_t code, uint8_t out[FD4_REPLY_LEN]);

/*
 * libegress's side: the request datagram for host (hostlen bytes, no NUL needed) and
 * port; its length, or 0 when hostlen is 0 or over FD4_HOST_MAX or port is 0.
 * timeout_ms 0 asks for the broker's default.
 */
size_t fd4_request_build(uint32_t id, uint32_t timeout_ms, uint16_t port, const char *host,
    size_t hostlen, uint8_t out[FD4_REQUEST_MAX]);
/* A reply datagram of len bytes: 0 with *id and *code, -1 when it is not one (its size
 * or its magic). */
int fd4_reply_parse(const uint8_t *buf, size_t len, uint32_t *id, int32_t *code);

#endif
