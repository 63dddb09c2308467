/*
 * proto.h: what the frontend parsers of proto/ share: the answer of a parse step and why
 * a request was refused. Each format has a header of its own (http.h, socks.h, native.h,
 * tls.h, fd4.h, dnswire.h) holding both of its directions. Every parser is pure: it
 * looks at the bytes received so far, never reads past len, never allocates, and answers
 * NEED_MORE, OK or ERROR with a reason.
 * Input may arrive split at any byte or coalesced with what follows (bytes after the
 * request are tunnel payload and are left alone: *consumed says where the request ends).
 */
#ifndef EGRESS_PROTO_H
#define EGRESS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "policy.h"

enum proto_status {
	PROTO_ERROR = -1,
	PROTO_NEED_MORE = 0,
	PROTO_OK = 1,
};

/* Why a request was refused before any policy decision. */
struct proto_error {
	enum egress_reason reason;   /* malformed-request, bad-host, unsupported */
	int http_status;             /* HTTP status to send (400, 405, 431...) */
	int socks_rep;               /* SOCKS: the status byte sent (SOCKS5: what is in the
	                              * reply); -1: none sent by the parser, use the table's */
	const char *why;             /* static text for the log */
	const uint8_t *raw;          /* the offending host bytes, for the receipt's "raw" */
	size_t raw_len;
	bool has_port;               /* bad-host: the request's port (1..65535) was valid, */
	uint16_t port;               /* so the receipt still names it */
};

#endif
