/*
 * monwire.h: the channel between egressd's monitor and its engine (egress/monitor.c,
 * egress/engine.c), both directions in one place. One SOCK_SEQPACKET socketpair; every
 * datagram begins with a struct mw_head. The engine asks, the monitor answers, one
 * exchange at a time; the monitor never speaks first. Two shapes:
 *
 *   MW_BATCH   engine -> monitor: receipt events (open, close, deny), numbered by the
 *              engine from 1 without gaps; answered by MW_ACK once every line of the
 *              batch is in the kernel (written to the receipts file), unless the batch
 *              holds closes only and says MW_BATCH_NOACK (nothing waits for those).
 *   MW_REQ     either way, fixed size (struct mw_req): LISTEN, UNLINK, OPEN, ADOPT,
 *              READY and their answers (err, and a descriptor in SCM_RIGHTS).
 *
 * The monitor parses what the engine sends as untrusted (the engine parses the network):
 * mw_batch_next is pure, bounded and allocation-free, and checks the syntax of every
 * member; what needs the monitor's state (a known principal, an open before its close,
 * the seq order) is checked by the monitor. Table tests: tests/unit/check_monwire.c;
 * fuzzed by tests/fuzz/fuzz_monwire.c.
 */
#ifndef EGRESS_PROTO_MONWIRE_H
#define EGRESS_PROTO_MONWIRE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "policy.h"           /* EGRESS_HOST_MAX, EGRESS_ADDRSTRLEN */
#include "receipt.h"

#define MW_MAGIC 0x45474d31u          /* "EGM1" */
#define MW_BATCH_MAX (60 * 1024)      /* bytes of one batch datagram */
#define MW_BATCH_RECORDS 64           /* records of one batch */
#define MW_ID_MAX 32                  /* "c-" and hex */
#define MW_NAME_MAX 64                /* principal names (EGRESSD_NAME_MAX) */
#define MW_RAW_MAX 1024               /* raw host bytes (EGRESS_HOST_INPUT_MAX) */
#define MW_WORD_MAX 24                /* frontend and close cause names */

enum mw_type { MW_BATCH = 1, MW_ACK, MW_REQ };

struct mw_head {
	uint32_t magic;
	uint16_t type;
	uint16_t count;              /* MW_BATCH: records that follow */
	uint64_t seq;                /* MW_BATCH: the first record's number; MW_ACK: the last */
	uint64_t file_seq;           /* MW_ACK: the receipts file's seq after the batch;
	                                MW_BATCH: MW_BATCH_NOACK or 0 */
};

/* A batch of closes only: the engine does not wait, so the monitor sends no MW_ACK. */
#define MW_BATCH_NOACK 1u

/* Requests (engine -> monitor) and answers (the same op, err set). */
enum mw_op {
	MW_LISTEN = 1,   /* create runtime-dir/name for uid:gid; answer: fd, dev, ino */
	MW_UNLINK,       /* the principal is gone: remove its socket (dev, ino) */
	MW_OPEN,         /* open a file the engine may read (path, kind): answer fd */
	MW_ADOPT,        /* at start: the monitor's principal number seq; answer: it, fd */
	MW_READY,        /* the engine serves */
	MW_MACCHECK,     /* policy-key: is text the HMAC of the fd's bytes [dev, dev+ino)? */
};

/* MW_OPEN kinds: what the monitor opens for an engine that may not open files itself. */
enum mw_open_kind {
	MW_OPEN_CONF = 1,    /* egressd.conf, the path egressd was started with */
	MW_OPEN_CONF_FILE,   /* a file the configuration names (policies, hosts, pubkeys,
	                        the parent-proxy auth file) */
	MW_OPEN_POLICY_DIR,  /* policy-dir/NAME (a lease) */
	MW_OPEN_PEER,        /* a policy named by a control client, opened with its rights:
	                        the fd sent is the client's connection (SO_PEERCRED) */
};

/* MW_ADOPT kinds: a principal (number h.seq), or one of the monitor's other listeners. */
enum mw_adopt_kind { MW_ADOPT_PRINCIPAL, MW_ADOPT_CONTROL, MW_ADOPT_LEASE, MW_ADOPT_METRICS };

#define MW_F_FROM_CONF 0x1u   /* a principal line of egressd.conf */
#define MW_F_LEASE     0x2u   /* lives as long as a control connection of the engine */
#define MW_F_OWNER     0x4u
#define MW_F_PEER_UID  0x8u
#define MW_F_LAST      0x10u  /* MW_ADOPT answer: no principal at seq (the end) */

struct mw_req {
	struct mw_head h;
	uint32_t op;
	int32_t err;                 /* answer: 0 or an errno value */
	uint32_t flags, kind;
	uint32_t uid, gid, peer_uid;
	uint64_t dev, ino;
	char name[MW_NAME_MAX + 1];
	char digest[EGRESS_DIGEST_STRLEN];
	char path[PATH_MAX];         /* LISTEN: the socket; OPEN: the file */
	char policy[PATH_MAX];       /* LISTEN/ADOPT: the policy file */
	char text[RCPT_HEX_LEN + 16]; /* MACCHECK: "hmac-sha256:<hex>" */
};

/*
 * The monitor's check of a request from the engine (the same bytes it would act on):
 * every string member ends inside its field, err is 0, the op and kind are known, the
 * flags are known ones, a name is a principal name, a path absolute, a digest
 * sha256:<64 hex>. 0, or -1 with *why (the monitor then answers EINVAL and logs why).
 */
int mw_req_check(const struct mw_req *q, const char **why);

/* --- batches ---------------------------------------------------------------------- */

/* One record as the monitor reads it: every string NUL-terminated, "" when absent. */
struct mw_record {
	enum receipt_event event;    /* RECEIPT_OPEN, RECEIPT_CLOSE or RECEIPT_DENY */
	char id[MW_ID_MAX + 1];
	char principal[MW_NAME_MAX + 1];
	char policy[EGRESS_DIGEST_STRLEN];
	char frontend[MW_WORD_MAX + 1];
	char host[EGRESS_HOST_MAX + 1];
	uint8_t raw[MW_RAW_MAX];
	size_t raw_len;
	int port;                    /* -1: none */
	char addr[EGRESS_ADDRSTRLEN];
	char via[MW_WORD_MAX + 1];   /* "parent", or "" */
	char sni[EGRESS_HOST_MAX + 1];
	enum egress_reason reason;
	char close[MW_WORD_MAX + 1];
	int64_t bytes_up, bytes_down, duration_ms; /* -1: none */
	unsigned count;              /* 0 or 1: one; > 1 a collapsed denial */
};

struct mw_writer {
	uint8_t *buf;
	size_t cap, len;
	unsigned count;
};

/* A batch being filled in buf (at least MW_BATCH_MAX bytes). */
void mw_batch_begin(struct mw_writer *w, uint8_t *buf, size_t cap);
/* Appends r; -1 when the batch is full (send it, begin again) or r cannot be encoded. */
int mw_batch_add(struct mw_writer *w, const struct receipt *r);
/* Finishes the header (first seq, flags); returns the datagram's length. */
size_t mw_batch_end(struct mw_writer *w, uint64_t first_seq, uint64_t flags);

struct mw_reader {
	const uint8_t *p, *end;
	unsigned left;
	uint64_t seq;                /* the next record's number */
	bool noack;                  /* MW_BATCH_NOACK: every record must be a close */
};

/* Checks the header of a datagram; -1 with *why when it is no batch. */
int mw_batch_open(struct mw_reader *rd, const uint8_t *buf, size_t len, const char **why);
/*
 * The next record into out: 1, 0 at the end (every byte used), -1 with *why when the
 * record or the batch is malformed: an unknown event or member, a member twice, a
 * string with bytes its member never has (a host or sni that is not a canonical name, an
 * id that is not c-<hex>, a digest that is not sha256:<64 hex>, an addr that does not
 * parse), a number out of range, a member the event does not carry, or trailing bytes.
 */
int mw_batch_next(struct mw_reader *rd, struct mw_record *out, const char **why);
/* The receipt of a record (pointers into rec). */
void mw_record_receipt(const struct mw_record *rec, struct receipt *r);

#endif
