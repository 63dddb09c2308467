/*
 * fdpass.h: datagrams with at most one descriptor in SCM_RIGHTS, for the fd-4 channel
 * (libegress and egress-broker). Both retry on EINTR; received descriptors are
 * close-on-exec; a datagram carrying more than one descriptor has the extras closed.
 */
#ifndef EGRESS_FDPASS_H
#define EGRESS_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Sends one datagram of len bytes, with fd in SCM_RIGHTS when fd >= 0. Returns the
 * bytes sent or -1 (errno). EAGAIN is waited out with poll() for up to timeout_ms
 * (< 0: forever). */
ssize_t egress_fdpass_send(int sock, const void *buf, size_t len, int fd, int timeout_ms);

/* Receives one datagram into buf (cap bytes). *fd is the first descriptor it carried,
 * or -1; *nfds counts every descriptor received (all but *fd are already closed);
 * *truncated is set when the datagram was longer than cap. Returns the bytes stored, 0
 * for an empty datagram or EOF, or -1 (errno). flags go to recvmsg (MSG_DONTWAIT...). */
ssize_t egress_fdpass_recv(int sock, void *buf, size_t cap, int *fd, int *nfds, int *truncated,
    int flags);

#endif
