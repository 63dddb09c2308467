/*
 * sock.c: connecting to an AF_UNIX socket by path, and splitting HOST:PORT, for every
 * program (egress-run, egressctl, the pinned principal socket of pin.c; egressd's
 * configuration and metrics listener, egress-relay, egress-connect, egress-launch).
 * IP literals for all of them and for the policy library's addr_parse.
 * Trusts nothing it is given: a split only finds where the parts are, each caller parses
 * and bounds them.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sock.h"

int
egress_sock_unix_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	if (egress_sock_unix_addr(&sun, path) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

#define SOCK_IP_TEXT_MAX 64    /* longest address text inet_pton is handed */

int
egress_ip_parse(const char *s, size_t len, int *family, uint8_t b[16])
{
	char buf[SOCK_IP_TEXT_MAX];
	bool colon = false;

	memset(b, 0, 16);
	*family = 0;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == ':')
			colon = true;
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		    (c >= 'A' && c <= 'F') || c == '.'))
			return -1;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	/*
	 * glibc's inet_pton is strict here: IPv4 only as four decimal octets without leading
	 * zeros (also inside IPv6), IPv6 per RFC 4291 with at most one "::".
	 */
	if (inet_pton(colon ? AF_INET6 : AF_INET, buf, b) != 1) {
		memset(b, 0, 16);
		return -1;
	}
	*family = colon ? AF_INET6 : AF_INET;
	return 0;
}

int
egress_hostport_split(const char *s, size_t len, struct egress_hostport *hp)
{
	const char *colon = len > 0 ? memrchr(s, ':', len) : NULL;

	memset(hp, 0, sizeof(*hp));
	if (colon == NULL)
		return -1;
	hp->host = s;
	hp->hostlen = (size_t)(colon - s);
	hp->port = colon + 1;
	hp->portlen = len - hp->hostlen - 1;
	if (hp->hostlen >= 2 && s[0] == '[' && s[hp->hostlen - 1] == ']') {
		hp->host++;
		hp->hostlen -= 2;
		hp->bracketed = true;
	}
	return 0;
}
