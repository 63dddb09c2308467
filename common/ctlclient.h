/*
 * ctlclient.h: the client end of egressd's control socket (egressctl, egress-run): the
 * AF_UNIX connection and one line each way. What the lines say is proto/control.h's.
 */
#ifndef EGRESS_CTLCLIENT_H
#define EGRESS_CTLCLIENT_H

#include <stddef.h>
#include <sys/types.h>

/* A stream connection to the AF_UNIX socket at path, or -1 with errno. */
int ctlclient_connect(const char *path);
/* Writes the whole line (with its newline); -1 with errno. */
int ctlclient_send(int fd, const char *line, size_t len);
/*
 * Reads one line into *buf (malloc'd, NUL-terminated, free(3) it) and returns its length
 * without the newline; -1 with errno ETIMEDOUT (wait_ms of silence; -1 waits for ever),
 * EMSGSIZE (no newline in max bytes), EPIPE (egressd closed the connection) or read(2)'s.
 */
ssize_t ctlclient_recv(int fd, char **buf, size_t max, int wait_ms);

#endif
