/*
 * egress-connect HOST PORT: copies stdin to a stream to HOST:PORT and the stream to stdout,
 * for programs that take a command as their transport (OpenSSH's ProxyCommand). The
 * stream comes from the fd-4 channel ($EGRESS_FD, libegress) when that names an AF_UNIX
 * seqpacket socket, else from egressd's native connector reached through egress-relay
 * ($EGRESS_RELAY, ADDR:PORT on loopback): OpenSSH closes every descriptor above 2 before
 * it runs a ProxyCommand, so the relay is the fallback there. It decides nothing: a
 * refusal is egressd's, printed with its reason.
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "nativecli.h"
#include "sock.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EGRESS_ASAN_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EGRESS_ASAN_BUILD 1
#endif
#ifdef EGRESS_ASAN_BUILD
/*
 * Sanitizer builds only: inside the sandbox ptrace is forbidden, and LeakSanitizer needs
 * it at exit; it would fail the exit status of a program that did nothing wrong.
 */
int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return 1;
}
#endif


#define CONNECT_TIMEOUT_MS 30000
#define CONNECT_BUF 16384

static void __attribute__((noreturn))
usage(const char *why)
{
	if (why != NULL)
		log_warnx("%s", why);
	fprintf(stderr, "usage: egress-connect HOST PORT\n"
	    "  (needs EGRESS_FD naming the fd-4 channel, or EGRESS_RELAY=ADDR:PORT)\n");
	exit(2);
}

/* The descriptor named by $EGRESS_FD if it is an AF_UNIX seqpacket socket, else -1. */
static int
connect_channel(void)
{
	const char *s = getenv("EGRESS_FD");
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss), tl;
	char *end;
	long v;
	int type;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0' || errno != 0 || v < 0 || v > INT_MAX)
		return -1;
	tl = sizeof(type);
	if (getsockopt((int)v, SOL_SOCKET, SO_TYPE, &type, &tl) == -1 || type != SOCK_SEQPACKET)
		return -1;
	memset(&ss, 0, sizeof(ss));
	if (getsockname((int)v, (struct sockaddr *)&ss, &sl) == -1 || ss.ss_family != AF_UNIX)
		return -1;
	return (int)v;
}

/* A stream through egress-relay at $EGRESS_RELAY, or -1 with *code set. */
static int
connect_relay(const char *host, uint16_t port, int *code)
{
	const char *s = getenv("EGRESS_RELAY");
	char addr[64], *end;
	struct egress_hostport hp;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	socklen_t salen;
	long rp;
	int fd, r;

	*code = EGRESS_ERR_SHUTDOWN;
	if (s == NULL || strlen(s) >= sizeof(addr))
		return -1;
	if (egress_hostport_split(s, strlen(s), &hp) == -1)
		return -1;
	errno = 0;
	rp = strtol(hp.port, &end, 10);
	if (*end != '\0' || errno != 0 || rp < 1 || rp > 65535)
		return -1;
	/* The address as written, brackets and all: only an IPv6 literal may have them. */
	memcpy(addr, s, (size_t)(hp.port - 1 - s));
	addr[hp.port - 1 - s] = '\0';
	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	if (inet_pton(AF_INET, addr, &sin.sin_addr) == 1) {
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)rp);
		sa = (struct sockaddr *)&sin;
		salen = sizeof(sin);
	} else {
		if (addr[0] == '[' && strlen(addr) > 2 && addr[strlen(addr) - 1] == ']') {
			addr[strlen(addr) - 1] = '\0';
			memmove(addr, addr + 1, strlen(addr));
		}
		if (inet_pton(AF_INET6, addr, &sin6.sin6_addr) != 1)
			return -1;
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons((uint16_t)rp);
		sa = (struct sockaddr *)&sin6;
		salen = sizeof(sin6);
	}
	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	do
		r = connect(fd, sa, salen);
	while (r == -1 && errno == EINTR);
	if (r == -1) {
		log_warn("relay %s", s);
		close(fd);
		return -1;
	}
	if ((*code = nativecli_handshake(fd, host, port, CONNECT_TIMEOUT_MS)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Writes all of buf to fd (blocking). */
static int
write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copies both ways until the stream ends; returns the exit status. */
static int
connect_copy(int s)
{
	char buf[CONNECT_BUF];
	struct pollfd pfd[2];
	int in_open = 1, n;
	ssize_t r;

	for (;;) {
		pfd[0].fd = in_open ? STDIN_FILENO : -1;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		pfd[1].fd = s;
		pfd[1].events = POLLIN;
		pfd[1].revents = 0;
		n = poll(pfd, 2, -1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pfd[1].revents != 0) {
			r = read(s, buf, sizeof(buf));
			if (r == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0)
				return r == 0 ? 0 : 1;   /* stdout is unbuffered: nothing to flush */
			if (write_all(STDOUT_FILENO, buf, (size_t)r) == -1)
				return 1;
		}
		if (in_open && pfd[0].revents != 0) {
			r = read(STDIN_FILENO, buf, sizeof(buf));
			if (r == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				in_open = 0;
				(void)shutdown(s, SHUT_WR);
				continue;
			}
			if (write_all(s, buf, (size_t)r) == -1)
				return 1;
		}
	}
}

int
main(int argc, char **argv)
{
	const char *host;
	char *end;
	long port;
	int chan, s, code = 0;
	struct sigaction sa;

	log_init("egress-connect", LOG_OUT_PREFIX, false, false);
	if (argc != 3)
		usage(NULL);
	host = argv[1];
	errno = 0;
	port = strtol(argv[2], &end, 10);
	if (*argv[2] == '\0' || *end != '\0' || errno != 0 || port < 1 || port > 65535)
		usage("PORT must be 1-65535");
	if (*host == '\0' || strlen(host) > EGRESS_FD4_HOST_MAX)
		usage("HOST must be 1-255 bytes");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);

	if ((chan = connect_channel()) != -1) {
		s = egress_fd4_connect(chan, host, (uint16_t)port, CONNECT_TIMEOUT_MS);
		if (s < 0)
			code = s;
	} else if (getenv("EGRESS_RELAY") != NULL) {
		s = connect_relay(host, (uint16_t)port, &code);
	} else {
		usage("neither EGRESS_FD (an AF_UNIX seqpacket socket) nor EGRESS_RELAY is set");
	}
	if (s < 0) {
		log_warnx("%s:%ld: %s", host, port, egress_strerror(code));
		return 1;
	}
	return connect_copy(s);
}
