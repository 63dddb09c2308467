/*
 * egress.h: libegress, the client side of the fd-4 channel (SPEC "Sandbox path", fd 4).
 *
 * A workload inside egress-run holds fd 4 ($EGRESS_FD), a connected AF_UNIX SOCK_SEQPACKET
 * socket whose peer is egress-broker (seqpacket, not datagram: a datagram socket could
 * address any socket by its path, see sandbox/sandbox.c). egress_fd4_connect() asks the broker for host:port
 * and returns a connected stream obtained from egressd's native connector; the decision is
 * egressd's alone.
 *
 * Wire format (integers big-endian):
 *   request  "EGF1" | id u32 | timeout_ms u32 | port u16 | len u8 | host
 *            sent on chan, carrying in SCM_RIGHTS one end of a fresh
 *            socketpair(AF_UNIX, SOCK_SEQPACKET) made for the reply
 *   reply    "EGF1" | id u32 | code i32, on that reply socket only; on code 0 the
 *            connected stream comes with it in SCM_RIGHTS
 */
#ifndef EGRESS_EGRESS_H
#define EGRESS_EGRESS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Codes: -(1000 + row of the SPEC's reasons table); allowed (row 0) is not an error. */
#define EGRESS_ERR_NOT_ALLOWLISTED     (-1001)
#define EGRESS_ERR_DENIED_BY_RULE      (-1002)
#define EGRESS_ERR_MALFORMED_REQUEST   (-1003)
#define EGRESS_ERR_BAD_HOST            (-1004)
#define EGRESS_ERR_PRIVATE_ADDRESS     (-1005)
#define EGRESS_ERR_DNS_FAILURE         (-1006)
#define EGRESS_ERR_DNS_TIMEOUT         (-1007)
#define EGRESS_ERR_CONNECT_REFUSED     (-1008)
#define EGRESS_ERR_CONNECT_TIMEOUT     (-1009)
#define EGRESS_ERR_QUOTA_CONNECTIONS   (-1010)
#define EGRESS_ERR_QUOTA_RATE          (-1011)
#define EGRESS_ERR_QUOTA_BYTES         (-1012)
#define EGRESS_ERR_SNI_MISSING         (-1013)
#define EGRESS_ERR_SNI_MISMATCH        (-1014)
#define EGRESS_ERR_SNI_MALFORMED       (-1015)
#define EGRESS_ERR_SNI_ECH             (-1016)
#define EGRESS_ERR_NOT_TLS             (-1017)
#define EGRESS_ERR_UNSUPPORTED         (-1018)
#define EGRESS_ERR_HANDSHAKE_TIMEOUT   (-1019)
#define EGRESS_ERR_PEER_UID            (-1020)
#define EGRESS_ERR_IDLE_TIMEOUT        (-1021)
#define EGRESS_ERR_SHUTDOWN            (-1022)

#define EGRESS_FD4_MAGIC "EGF1"
#define EGRESS_FD4_HOST_MAX 255
#define EGRESS_FD4_REQUEST_HEAD 15   /* magic, id, timeout_ms, port, len */
#define EGRESS_FD4_REQUEST_MAX (EGRESS_FD4_REQUEST_HEAD + EGRESS_FD4_HOST_MAX)
#define EGRESS_FD4_REPLY 12          /* magic, id, code */

/*
 * Asks the broker on chan for a stream to host:port and waits up to timeout_ms for the
 * answer (timeout_ms <= 0: the broker's default of 30 s, and this call waits 130 s).
 * Returns a connected stream descriptor (>= 0, close-on-exec) or a negative code with
 * errno set:
 *   - egressd's refusal: its code (e.g. EGRESS_ERR_NOT_ALLOWLISTED), errno ECONNREFUSED;
 *   - bad arguments (chan < 0, host NULL, empty, longer than 255 bytes, port 0):
 *     EGRESS_ERR_MALFORMED_REQUEST, errno EINVAL;
 *   - no reply within timeout_ms: EGRESS_ERR_HANDSHAKE_TIMEOUT, errno ETIMEDOUT;
 *   - the channel broken, closed or not a socket, or a reply without the promised
 *     stream: EGRESS_ERR_SHUTDOWN, errno from the failing call (EPIPE when the broker
 *     closed the reply socket without answering).
 * A host is a C string, so it cannot carry a NUL. Thread-safe: calls are serialised by a
 * process-wide mutex. Replies whose id is not this request's are ignored.
 */
int egress_fd4_connect(int chan, const char *host, uint16_t port, int timeout_ms);

/*
 * The reason name of a code ("not-allowlisted" for -1001 ...), "allowed" for 0, "unknown"
 * for anything else. Never NULL; static storage.
 */
const char *egress_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
