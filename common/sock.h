/*
 * sock.h: the socket helpers every egress program shares. The two header-only ones
 * (monotonic milliseconds, an AF_UNIX address) are inline so that the installed libegress
 * and the broker, which do not link libcommon, use the same code; the rest is sock.c.
 * Trusts nothing it is given: a path that does not fit sun_path is refused, never cut.
 */
#ifndef EGRESS_SOCK_H
#define EGRESS_SOCK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds: deadlines and durations, never wall-clock time. */
static inline int64_t
egress_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Fills *sun for path (a filesystem name); -1 with ENAMETOOLONG when it does not fit. */
static inline int
egress_sock_unix_addr(struct sockaddr_un *sun, const char *path)
{
	size_t n = strlen(path);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (n >= sizeof(sun->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun->sun_path, path, n);
	return 0;
}

/*
 * An IP literal of len bytes: IPv4 as four decimal octets, IPv6 (a ':' says which) as
 * inet_pton takes it; no brackets, no zone, no port. *family is AF_INET or AF_INET6 and
 * b (16 bytes) holds the address in network order. 0, or -1 (b then zero).
 */
int egress_ip_parse(const char *s, size_t len, int *family, uint8_t b[16]);

/* A blocking, close-on-exec stream connection to the AF_UNIX socket at path; -1, errno. */
int egress_sock_unix_connect(const char *path);

/*
 * "HOST:PORT", split at the last ':' (an IPv6 literal is written "[V6]:PORT"): host is
 * what precedes it without the brackets of "[...]" (bracketed says they were there), port
 * what follows it; neither is checked beyond that, nor copied. -1 without a ':'.
 */
struct egress_hostport {
	const char *host;
	size_t hostlen;
	const char *port;
	size_t portlen;
	bool bracketed;
};
int egress_hostport_split(const char *s, size_t len, struct egress_hostport *hp);

#endif
