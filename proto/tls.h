/*
 * tls.h: the ClientHello inspector of the SNI guard. A pure, bounded function over the
 * client bytes egressd holds back: it never reads past len, never allocates (the caller
 * lends a scratch buffer for a handshake message split over several records), and says
 * what the next unit of the client stream is. It only reads: nothing is terminated, no
 * key is held (no MITM).
 */
#ifndef EGRESS_TLS_H
#define EGRESS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "policy.h"

#define EGRESS_TLS_RECORD_MAX 16384   /* TLSPlaintext.length (2^14), RFC 8446 s5.1 */
#define EGRESS_TLS_HELLO_MAX 32768    /* largest ClientHello message accepted (PQ key shares) */
#define EGRESS_TLS_SCRATCH (EGRESS_TLS_HELLO_MAX + 4) /* scratch the caller lends */

enum tls_unit {
	TLS_NEED_MORE = 0,   /* the next unit is not complete in buf yet */
	TLS_NOT_TLS,         /* first call only: the stream does not start with a TLS record */
	TLS_HELLO,           /* a complete ClientHello, in the first `len` bytes of records */
	TLS_PASS,            /* a ChangeCipherSpec record: `len` bytes may go on, keep looking */
	TLS_END,             /* a record that ends inspection: everything from here flows */
	TLS_ERROR,           /* malformed or oversized: refuse (reason in the result) */
};

struct tls_result {
	enum tls_unit unit;
	size_t len;                  /* bytes of buf this unit covers (HELLO, PASS) */
	/* For TLS_HELLO: */
	bool has_sni;                /* exactly one host_name was present */
	char sni[EGRESS_HOST_MAX + 1]; /* canonical (lower case; host_parse'd) */
	bool ech;                    /* encrypted_client_hello (0xfe0d) present */
	/* For TLS_ERROR (and a non-canonical SNI): */
	enum egress_reason reason;   /* sni-malformed */
	const char *why;             /* static text for the log */
	const uint8_t *raw;          /* the server_name bytes when they are not canonical */
	size_t raw_len;
};

/*
 * Classifies the next unit at the start of buf (the client bytes not yet released).
 * first: nothing of this stream was classified yet. Only then can the answer be
 * TLS_NOT_TLS: the stream does not start with a TLS record (content type 20..24 with
 * record version major 3, or any record of type 22); an SSLv2-format hello is TLS_ERROR.
 * On a first call ChangeCipherSpec records before the ClientHello belong to its unit
 * (TLS_HELLO's len covers them), and any other record before it is TLS_ERROR. A
 * ClientHello is reassembled across records (every record before it is complete must be a
 * handshake record) and across any split of buf.
 */
void tls_scan(const uint8_t *buf, size_t len, bool first, uint8_t *scratch,
    size_t scratch_len, struct tls_result *res);

/*
 * The first bytes of the server's answer: 1 when it is a HelloRetryRequest (so a second
 * ClientHello follows and is inspected), 0 when it is anything else, -1 when fewer than
 * EGRESS_TLS_SERVER_HEAD bytes are known yet.
 */
#define EGRESS_TLS_SERVER_HEAD 43
int tls_server_hrr(const uint8_t *buf, size_t len);

#endif
