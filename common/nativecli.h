/*
 * nativecli.h: one EGR1 connect over a stream, with a deadline, for egress-broker (over
 * the principal socket) and egress-connect (over egress-relay). The bytes are
 * proto/native.c's; this is only the I/O around them.
 */
#ifndef EGRESS_NATIVECLI_H
#define EGRESS_NATIVECLI_H

#include <stdint.h>

/*
 * Sends the EGR1 request for host:port on the connected stream fd and reads exactly the
 * 8-byte reply (never a byte of the tunnel after it) within timeout_ms. Returns 0
 * (allowed: fd is now the tunnel) or a libegress code: egressd's, else
 * EGRESS_ERR_HANDSHAKE_TIMEOUT when no reply came in time, EGRESS_ERR_SHUTDOWN when the
 * connection failed, closed early or answered something that is not EGR1.
 */
int nativecli_handshake(int fd, const char *host, uint16_t port, int timeout_ms);

#endif
