/*
 * priv.h: the wire format between egressd and its privileged helper (priv.c), shared with
 * the unit test that drives the helper with hostile requests. One datagram each way on a
 * SOCK_SEQPACKET socketpair; a request must be exactly sizeof(struct priv_msg).
 */
#ifndef EGRESS_PRIV_H
#define EGRESS_PRIV_H

#include <limits.h>
#include <stdint.h>

enum priv_op { PRIV_LISTEN = 1, PRIV_UNLINK, PRIV_RECEIPTS_OPEN, PRIV_RECEIPTS_ROTATE };

/* Request and reply alike (op 0, err 0: the helper's ready message). */
struct priv_msg {
	uint32_t op;
	int32_t err;            /* reply: 0 or an errno value */
	uint32_t uid, gid;
	uint64_t dev, ino;
	char text[PATH_MAX];    /* request: a name; RECEIPTS_ROTATE reply: the old file's name */
};

/* egressd's end of the channel while a helper runs, else -1 (for the unit test). */
int priv_channel(void);

#endif
