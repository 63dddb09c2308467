/*
 * receipt.h: the receipt line (docs/receipts.md), both directions in one place: the
 * layout and member order egressd writes, the chain (prev), the MAC and checkpoint
 * contexts, the hand scanner and the verifier. Used by egressd's writer
 * (egress/receipt.c) and egressctl's receipts and receipts verify.
 */
#ifndef EGRESS_PROTO_RECEIPT_H
#define EGRESS_PROTO_RECEIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define RCPT_LINE_MAX 4096            /* egressd's lines, with their newline, never exceed it */
#define RCPT_INPUT_MAX (64 * 1024)    /* the longest line a reader looks at */
#define RCPT_HEX_LEN 64               /* a SHA-256 or HMAC-SHA256 in hex */
#define RCPT_PREV_PREFIX "sha256:"
#define RCPT_HASH_STRLEN (sizeof(RCPT_PREV_PREFIX) - 1 + RCPT_HEX_LEN + 1)
#define RCPT_PREV_ZERO \
	"sha256:0000000000000000000000000000000000000000000000000000000000000000"
#define RCPT_MAC_CONTEXT "egress-receipt-1"            /* MACed with its NUL */
#define RCPT_CHECKPOINT_CONTEXT "egress-checkpoint-1"  /* signed with its NUL */
#define RCPT_SIG_PREFIX "ed25519:"
#define RCPT_SIG_STRLEN (sizeof(RCPT_SIG_PREFIX) - 1 + 2 * EGRESS_ED25519_SIGLEN + 1)
#define RCPT_CHECKPOINT_MSG_MAX 128   /* context, seq in decimal and head */

enum receipt_event { RECEIPT_OPEN, RECEIPT_CLOSE, RECEIPT_DENY, RECEIPT_REPAIR, RECEIPT_CHECKPOINT };

/* One record; NULL strings and negative numbers are left out of the line. */
struct receipt {
	enum receipt_event event;
	const char *id;
	const char *principal;
	const char *policy;          /* digest */
	const char *frontend;        /* NULL before the first byte chose one */
	const char *host;            /* canonical host, or NULL */
	const uint8_t *raw;          /* non-canonical host bytes (hex encoded) */
	size_t raw_len;
	int port;                    /* -1: none */
	const char *addr;
	const char *via;             /* "parent": the tunnel went through the parent proxy */
	const char *sni;
	enum egress_reason reason;
	const char *close;           /* close cause */
	int64_t bytes_up, bytes_down; /* -1: none */
	int64_t duration_ms;          /* -1: none */
	unsigned count;               /* > 1 only for collapsed denials */
	const char *detail;           /* repair: what was repaired; checkpoint: "shutdown" */
	const char *head;             /* checkpoint: hash of the line before it */
	const char *sig;              /* checkpoint: "ed25519:<hex>" */
};

/* --- writing ---------------------------------------------------------------------- */

struct rcpt_line {
	char s[RCPT_LINE_MAX];
	size_t len;                  /* without a newline; always < RCPT_LINE_MAX */
};

/*
 * The line of r with its seq, the prev of the line before it ("sha256:<hex>"), its time
 * and, with a key, its MAC, in egressd's fixed member order, without its newline (there
 * is room for one). -1 when it does not fit.
 */
int rcpt_encode(struct rcpt_line *out, const struct receipt *r, uint64_t seq,
    const char *prev, const char *time, const struct egress_key *key);
/* "sha256:<hex>" of a line without its newline: the next line's prev. */
void rcpt_chain_hash(const char *line, size_t len, char out[RCPT_HASH_STRLEN]);
/* HMAC-SHA256 over the MAC context and body (len <= RCPT_INPUT_MAX), in hex. */
void rcpt_mac_hex(const struct egress_key *key, const char *body, size_t len,
    char out[RCPT_HEX_LEN + 1]);
/* The message a checkpoint at seq signs: context, NUL, seq in decimal, head. -1: too long. */
int rcpt_checkpoint_msg(uint64_t seq, const char *head, char out[RCPT_CHECKPOINT_MSG_MAX],
    size_t *len);
void rcpt_sig_format(const uint8_t raw[EGRESS_ED25519_SIGLEN], char out[RCPT_SIG_STRLEN]);
/* "ed25519:<128 hex>" to its bytes; -1 when it is not that. */
int rcpt_sig_parse(const char *s, uint8_t raw[EGRESS_ED25519_SIGLEN]);
/* '"key":"value"': the bytes a line holding that member has, when value needs no escape. */
int rcpt_member_needle(const char *key, const char *value, char *out, size_t cap);

/* --- reading ---------------------------------------------------------------------- */

/* What the hand scanner takes from a line written in egressd's fixed member order. */
struct rcpt_scan {
	uint64_t seq;
	const char *prev;        /* RCPT_HEX_LEN hex digits */
	const char *event;
	size_t event_len;
	const char *mac;         /* RCPT_HEX_LEN hex digits, or NULL */
	size_t body_len;         /* the MACed part: the line up to ,"mac" */
};

/* 0, or -1 when the line (without its newline) does not have egressd's shape. */
int rcpt_scan_line(const char *s, size_t len, struct rcpt_scan *r);
bool rcpt_event_is(const struct rcpt_scan *r, const char *ev);

/*
 * The walk along the chain, across files. File names handed to rcpt_verify_line are
 * kept by pointer (the first break and a torn line name them): they must outlive v.
 */
struct rcpt_verify {
	char prev[RCPT_HEX_LEN + 1];        /* hash of the last intact line */
	char prev_before[RCPT_HEX_LEN + 1]; /* hash of the line before that one */
	uint64_t seq, seq_before;           /* seq of those lines; 0: none yet */
	size_t last_len;                    /* length of the last intact line */
	uint64_t records, repaired;
	bool started;
	/* An unparseable line waiting for the repair record that must follow it. */
	bool torn;
	bool torn_nonl;                     /* it had no newline */
	const char *torn_file;
	size_t torn_lineno;
	/* The first break. */
	bool broken;
	const char *bad_file;
	size_t bad_lineno;
	uint64_t bad_seq;
	bool bad_has_seq;
	char bad_what[160];
	/*
	 * Checkpoints (with public keys): signatures over the head of the chain, each by any
	 * of pubkeys (one file may hold the checkpoints of several egressd runs, each with a
	 * key of its own); pubkey is the first of them, NULL when there are none.
	 */
	void *pubkey;
	void *const *pubkeys;
	size_t npubkeys, pub_hint;          /* the key that signed the last checkpoint */
	uint64_t checkpoints, covered, last_ckpt_seq;
	bool last_ckpt_shutdown;
	const struct egress_key *key;       /* MACs checked when not NULL */
};

/* key (MACs) and pubkey (checkpoints) may be NULL; both are borrowed. */
void rcpt_verify_init(struct rcpt_verify *v, const struct egress_key *key, void *pubkey);
/* The same with n public keys (n may be 0); a checkpoint signed by any of them is good. */
void rcpt_verify_init_pubkeys(struct rcpt_verify *v, const struct egress_key *key,
    void *const *pubkeys, size_t n);
/* One line without its newline (nonl: it had none): moves on, or records the first break. */
void rcpt_verify_line(struct rcpt_verify *v, const char *file, size_t lineno, const char *s,
    size_t len, bool nonl);
/* After the last line of the last file: a torn tail, no checkpoint with a pubkey. */
void rcpt_verify_end(struct rcpt_verify *v, const char *last_file);

#endif
