/*
 * nativecli.h: one EGR1 connect over a stream, with a deadline, for egress-broker (over
 * the principal socket) and egress-connect (over egress-relay). The bytes are
 * proto/native.c's; this is only the I/O around them (in common/: a client of egressd in
 * any folder may use it without reaching into broker/).
 */
#ifndef EGRESS_NATIVECLI_H
#define EGRESS_NATIVECLI_H

#include <stdint.h>

/*
 * Sends the EGR1 request for host:port on the connected stream fd and reads exactly the
 * 8-byte reply (never a byte of the tunnel after it) within timeout_ms. Returns 0
 * (allowed: fd is now the tunnel) or a reason's wire code (egress_reason_code, the same
 * as libegress's EGRESS_ERR_*): egressd's, else that of EGRESS_HANDSHAKE_TIMEOUT when no
 * reply came in time, of EGRESS_SHUTDOWN when the connection failed, closed early or
 * answered something that is not EGR1 (of EGRESS_MALFORMED_REQUEST for a name EGR1
 * cannot carry).
 */
int nativecli_handshake(int fd, const char *host, uint16_t port, int timeout_ms);

#endif
