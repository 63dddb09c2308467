/*
 * socks.h: SOCKS5 (RFC 1928, RFC 1929) and SOCKS4/4a as egressd's frontend speaks them
 * (socks.c): requests parsed in, replies written out.
 */
#ifndef EGRESS_PROTO_SOCKS_H
#define EGRESS_PROTO_SOCKS_H

#include "proto.h"

#define EGRESS_SOCKS_NAME_MAX 255    /* SOCKS4a host and user id, SOCKS5 name */

struct socks_request {
	int version;                 /* 4 or 5 */
	bool by_name;                /* SOCKS5 ATYP 3 or SOCKS4a: the client sent a name */
	struct host host;            /* canonical */
	uint16_t port;               /* may be 0: the policy refuses it */
};

enum socks5_stage {
	SOCKS5_GREETING = 0,
	SOCKS5_AUTH,                 /* RFC 1929 username/password, any credential accepted */
	SOCKS5_REQUEST,
	SOCKS5_DONE,
};

struct socks5 {
	enum socks5_stage stage;
};

/*
 * Takes the next SOCKS5 message from buf. OK: *consumed bytes were one message; reply
 * (replylen bytes, at most 10) must be sent to the client; when the stage becomes
 * SOCKS5_DONE, req holds the CONNECT request and no reply is written (the caller answers
 * after its decision with socks5_reply). ERROR: reply holds the failure answer to send
 * before closing (may be empty), err says why.
 */
enum proto_status socks5_step(struct socks5 *s, const uint8_t *buf, size_t len,
    size_t *consumed, uint8_t reply[10], size_t *replylen, struct socks_request *req,
    struct proto_error *err);
/* A complete reply with BND.ADDR 0.0.0.0:0. */
size_t socks5_reply(uint8_t rep, uint8_t out[10]);

/* One SOCKS4 or SOCKS4a request; OK: *consumed bytes were the request. */
enum proto_status socks4_parse(const uint8_t *buf, size_t len, size_t *consumed,
    struct socks_request *req, struct proto_error *err);
/* The 8-byte reply, DSTPORT and DSTIP zero. */
size_t socks4_reply(uint8_t cd, uint8_t out[8]);

#endif
