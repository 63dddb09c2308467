/*
 * tcpbench: the load tool of bench/egressd-bench.sh. One binary, libc only, epoll:
 *
 *   tcpbench serve [-a ADDR] [-T SECONDS] PORT   the upstream (PORT 0: the kernel picks)
 *   tcpbench freeport [COUNT]                    prints COUNT distinct free loopback ports
 *   tcpbench bulk   -p PATH [-t TARGET] [-n BYTES] [-r ROUNDS] [-d down|up] [-T SECONDS]
 *                   [-c TUNNELS]               TUNNELS > 1: that many tunnels at once
 *                                              (down only), BYTES each, the rate of all
 *   tcpbench setups -p PATH [-t TARGET] [-n COUNT] [-c CONCURRENCY] [-T SECONDS] [-P FILE]
 *   tcpbench idle   -p PATH [-t TARGET] [-n COUNT] [-c CONCURRENCY] [-T SECONDS] [-H SECONDS]
 *   tcpbench ask    -u FILE -q NAME              prints the A answer of egressd's EGR1 DNS
 *                                                question verb (docs/native.md) for NAME
 *   tcpbench dns    -s IPV4:PORT -q NAME [-n COUNT] [-c OUTSTANDING] [-W MS] [-T SECONDS]
 *                                                UDP A queries for NAME to a DNS server:
 *                                                OUTSTANDING sockets (distinct source
 *                                                ports), one query out on each at a time;
 *                                                an answer must be NOERROR with one A
 *                                                record, or the run fails; a query with no
 *                                                answer within -W ms is sent again (a new
 *                                                id) and counted as lost
 *
 * PATH says how the upstream is reached:
 *   tcp:IPV4:PORT          plain TCP: the upstream itself, or a TCP proxy (socat, haproxy)
 *   http:IPV4:PORT         an HTTP CONNECT proxy over TCP (squid)
 *   socks5:IPV4:PORT       a SOCKS5 proxy over TCP
 *   unix-http:FILE         HTTP CONNECT over an AF_UNIX socket (an egressd principal)
 *   unix-socks5:FILE       SOCKS5 over an AF_UNIX socket
 * TARGET (IPV4:PORT) is what a proxied request asks for: the upstream's address.
 *
 * The upstream's protocol: a connection whose first byte is 'B' carries a 10-byte head,
 * 'B', a direction ('D' or 'U') and a count (8 bytes, big endian). 'D': the server sends
 * count bytes, then shuts its side down. 'U': the server reads count bytes, then answers
 * the count it read (8 bytes, big endian). Any other first byte: the server echoes every
 * byte until the client closes. A setup is: connect, the proxy's handshake, one byte
 * echoed, close. The server trusts no client: every connection is bounded by its state,
 * and the whole server by its lifetime (-T).
 *
 * Every client wait has a deadline (-T); the first failure ends the run with a message
 * and exit status 1. Results are one logfmt line on standard output.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TB_BULK_MAGIC 'B'
#define TB_BULK_HEAD 10                   /* 'B', direction, 8-byte count */
#define TB_ECHO_BYTE 'e'                  /* a setup's byte: anything but 'B' */
#define TB_IO_BUF (256 * 1024)            /* bulk reads and writes */
#define TB_ECHO_BUF (64 * 1024)           /* the server echoes at most this per read */
#define TB_HEAD_MAX 4096                  /* a proxy's answer head */
#define TB_REQ_MAX 4096                   /* a request or payload we send */
#define TB_TARGET_MAX 64                  /* "255.255.255.255:65535" and then some */
#define TB_MAX_CONC 1024                  /* concurrent loops of setups/idle */
#define TB_MAX_SETUPS 10000000ULL         /* setups in one run */
#define TB_MAX_IDLE 200000ULL             /* idle tunnels in one run */
#define TB_MAX_ROUNDS 100
#define TB_MAX_BYTES (1ULL << 40)         /* 1 TiB per bulk round */
#define TB_BULK_TUNNELS 64                /* bulk -c: tunnels at once */
#define TB_MAX_SECONDS 86400.0
#define TB_SERVE_EVENTS 256               /* events per epoll_wait */
#define TB_SERVE_ACCEPTS 64               /* accepts per wakeup of the listener */
#define TB_SERVE_WRITES 16                /* bulk reads or writes per wakeup of one conn */
#define TB_FREEPORT_MAX 64
#define TB_DNS_MAX_OUT 256                /* dns: sockets, one query outstanding on each */
#define TB_DNS_MAX_QUERIES 100000000ULL   /* dns: answers in one run */
#define TB_DNS_NAME_MAX 253               /* a name in text form */
#define TB_DNS_MSG_MAX 512                /* a query we send, an answer we accept */

static const char *tb_mode = "tcpbench";

static void __attribute__((noreturn, format(printf, 1, 2)))
tb_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tcpbench: %s: ", tb_mode);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn))
tb_usage(void)
{
	fprintf(stderr,
	    "usage: tcpbench serve [-a ADDR] [-T SECONDS] PORT\n"
	    "       tcpbench freeport [COUNT]\n"
	    "       tcpbench bulk -p PATH [-t TARGET] [-n BYTES] [-r ROUNDS] [-d down|up] [-c N] "
	    "[-T SECONDS]\n"
	    "       tcpbench setups -p PATH [-t TARGET] [-n COUNT] [-c CONCURRENCY] [-P FILE] "
	    "[-T SECONDS]\n"
	    "       tcpbench idle -p PATH [-t TARGET] [-n COUNT] [-c CONCURRENCY] "
	    "[-T SECONDS] [-H SECONDS]\n"
	    "       tcpbench ask -u FILE -q NAME\n"
	    "       tcpbench dns -s IPV4:PORT -q NAME [-n COUNT] [-c OUTSTANDING] [-W MS] "
	    "[-T SECONDS]\n"
	    "PATH: tcp:IPV4:PORT http:IPV4:PORT socks5:IPV4:PORT unix-http:FILE "
	    "unix-socks5:FILE\n");
	exit(2);
}

static double
tb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds until deadline, for poll/epoll: at least 0, at most max_ms. */
static int
tb_wait_ms(double deadline, int max_ms)
{
	double left = (deadline - tb_now()) * 1000.0;

	if (left <= 0)
		return 0;
	if (left >= (double)max_ms)
		return max_ms;
	return (int)left + 1;
}

/* A number in [min, max], with K/M/G (powers of 1024) when suffixes is set. */
static uint64_t
tb_number(const char *what, const char *s, uint64_t min, uint64_t max, bool suffixes)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	errno = 0;
	if (s[0] < '0' || s[0] > '9')
		tb_die("%s: not a number: %s", what, s);
	v = strtoull(s, &end, 10);
	if (errno != 0)
		tb_die("%s: out of range: %s", what, s);
	if (suffixes && *end != '\0' && end[1] == '\0') {
		switch (*end) {
		case 'K': mult = 1ULL << 10; end++; break;
		case 'M': mult = 1ULL << 20; end++; break;
		case 'G': mult = 1ULL << 30; end++; break;
		default: break;
		}
	}
	if (*end != '\0' || v > max / mult || v * mult < min || v * mult > max)
		tb_die("%s: want %" PRIu64 " to %" PRIu64 ": %s", what, min, max, s);
	return (uint64_t)v * mult;
}

static double
tb_seconds(const char *what, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > TB_MAX_SECONDS)
		tb_die("%s: want seconds in (0, %.0f]: %s", what, TB_MAX_SECONDS, s);
	return v;
}

/* Descriptors: as many as the hard limit allows; idle runs need thousands. */
static rlim_t
tb_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

static int
tb_parse_ipv4_port(const char *s, struct sockaddr_in *sin)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	size_t hl;
	char *end;
	unsigned long port;

	if (colon == NULL || (hl = (size_t)(colon - s)) == 0 || hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -1;
	if (colon[1] < '0' || colon[1] > '9')
		return -1;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || port == 0 || port > 65535)
		return -1;
	sin->sin_port = htons((uint16_t)port);
	return 0;
}

/* --- paths ------------------------------------------------------------------------ */

enum tb_proto { TB_PLAIN, TB_HTTP, TB_SOCKS5 };

struct tb_path {
	const char *text;
	enum tb_proto proto;
	int family;
	struct sockaddr_storage sa;
	socklen_t salen;
};

static void
tb_path_parse(const char *s, struct tb_path *p)
{
	static const struct {
		const char *prefix;
		enum tb_proto proto;
		int family;
	} kinds[] = {
		{ "tcp:", TB_PLAIN, AF_INET },
		{ "http:", TB_HTTP, AF_INET },
		{ "socks5:", TB_SOCKS5, AF_INET },
		{ "unix-http:", TB_HTTP, AF_UNIX },
		{ "unix-socks5:", TB_SOCKS5, AF_UNIX },
	};

	memset(p, 0, sizeof(*p));
	p->text = s;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t pl = strlen(kinds[i].prefix);
		const char *rest = s + pl;

		if (strncmp(s, kinds[i].prefix, pl) != 0)
			continue;
		p->proto = kinds[i].proto;
		p->family = kinds[i].family;
		if (p->family == AF_UNIX) {
			struct sockaddr_un *sun = (struct sockaddr_un *)&p->sa;
			size_t len = strlen(rest);

			if (len == 0 || len >= sizeof(sun->sun_path))
				tb_die("path %s: socket name empty or too long", s);
			sun->sun_family = AF_UNIX;
			memcpy(sun->sun_path, rest, len + 1);
			p->salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
		} else {
			if (tb_parse_ipv4_port(rest, (struct sockaddr_in *)&p->sa) == -1)
				tb_die("path %s: want IPV4:PORT after %s", s, kinds[i].prefix);
			p->salen = sizeof(struct sockaddr_in);
		}
		return;
	}
	tb_die("path %s: want tcp:, http:, socks5:, unix-http: or unix-socks5:", s);
}

/* --- the client's connection machine ------------------------------------------------ */

enum tb_phase {
	PH_FREE = 0,
	PH_RETRY,                    /* AF_UNIX backlog full: connect again shortly */
	PH_CONNECT,                  /* waiting for a TCP connect */
	PH_HTTP_REPLY,               /* CONNECT sent, reading the answer head */
	PH_S5_METHOD,                /* greeting sent, reading the method choice */
	PH_S5_REPLY,                 /* request sent, reading the reply */
	PH_ECHO,                     /* the byte sent, reading it back */
	PH_READY,                    /* the tunnel is up (bulk: handed over) */
};

static const char *const tb_phase_names[] = {
	[PH_FREE] = "free", [PH_RETRY] = "retry", [PH_CONNECT] = "connect",
	[PH_HTTP_REPLY] = "http-reply", [PH_S5_METHOD] = "socks5-method",
	[PH_S5_REPLY] = "socks5-reply", [PH_ECHO] = "echo", [PH_READY] = "ready",
};

enum tb_goal {
	GOAL_HANDOFF,                /* bulk: stop when the tunnel is up */
	GOAL_ECHO_CLOSE,             /* setups */
	GOAL_ECHO_HOLD,              /* idle */
};

struct tb_conn {
	int fd;
	enum tb_phase phase;
	uint32_t interest;           /* the epoll events asked for, 0 when not added */
	uint8_t out[TB_REQ_MAX];
	size_t outlen, outoff;
	uint8_t in[TB_HEAD_MAX];
	size_t inlen;
	double t0;                   /* when this setup began */
};

struct tb_run {
	const struct tb_path *path;
	char target[TB_TARGET_MAX];
	struct sockaddr_in target_sa;
	enum tb_goal goal;
	int ep;
	struct tb_conn *slots;
	size_t nslots;
	uint64_t want, started, done;
	double *lat;                 /* seconds per setup, want of them (setups) */
	int *held;                   /* idle tunnels, want of them */
	size_t nheld;
	int ready_fd;                /* handoff */
	double deadline;
};

#define TB_HELD_TAG ((uint64_t)1 << 32) /* epoll data of a held tunnel: tag | index */

static void __attribute__((noreturn, format(printf, 3, 4)))
tb_conn_die(const struct tb_run *r, const struct tb_conn *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tcpbench: %s: %s: ", tb_mode, r->path->text);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (phase %s, after %" PRIu64 " complete)\n", tb_phase_names[c->phase],
	    r->done);
	exit(1);
}

static void
tb_conn_want(struct tb_run *r, struct tb_conn *c, uint32_t ev)
{
	struct epoll_event e;

	if (c->interest == ev)
		return;
	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.u64 = (uint64_t)(c - r->slots);
	if (epoll_ctl(r->ep, c->interest == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &e) == -1)
		tb_conn_die(r, c, "epoll_ctl: %s", strerror(errno));
	c->interest = ev;
}

static void
tb_conn_close(struct tb_run *r, struct tb_conn *c)
{
	(void)r;
	/* close(2) removes the descriptor from the epoll set. */
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	c->interest = 0;
	c->phase = PH_FREE;
}

/* Sends what is queued; then waits for the answer, or for room to send the rest. */
static void
tb_conn_flush(struct tb_run *r, struct tb_conn *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				tb_conn_want(r, c, EPOLLOUT);
				return;
			}
			tb_conn_die(r, c, "send: %s", strerror(errno));
		}
		c->outoff += (size_t)n;
	}
	tb_conn_want(r, c, EPOLLIN);
}

static void
tb_conn_send(struct tb_run *r, struct tb_conn *c, enum tb_phase next, const void *data,
    size_t len)
{
	memcpy(c->out, data, len);
	c->outlen = len;
	c->outoff = 0;
	c->inlen = 0;
	c->phase = next;
	tb_conn_flush(r, c);
}

static void tb_conn_next(struct tb_run *r, struct tb_conn *c);

/* What a setup sends and expects back: one byte, or a file's bytes (-P, e.g. a TLS
 * ClientHello, to measure the SNI guard). */
static uint8_t tb_payload[TB_REQ_MAX] = { TB_ECHO_BYTE };
static size_t tb_payload_len = 1;

/* The tunnel is up: what the goal wants next. */
static void
tb_conn_tunnel_up(struct tb_run *r, struct tb_conn *c)
{
	if (r->goal == GOAL_HANDOFF) {
		if (c->interest != 0 && epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL) == -1)
			tb_conn_die(r, c, "epoll_ctl: %s", strerror(errno));
		c->interest = 0;
		c->phase = PH_READY;
		r->ready_fd = c->fd;
		c->fd = -1;
		r->done++;
		return;
	}
	tb_conn_send(r, c, PH_ECHO, tb_payload, tb_payload_len);
}

static void
tb_conn_handshake(struct tb_run *r, struct tb_conn *c)
{
	char req[TB_REQ_MAX];
	int n;

	switch (r->path->proto) {
	case TB_PLAIN:
		tb_conn_tunnel_up(r, c);
		break;
	case TB_HTTP:
		n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n",
		    r->target, r->target);
		if (n < 0 || (size_t)n >= sizeof(req))
			tb_conn_die(r, c, "CONNECT request too long");
		tb_conn_send(r, c, PH_HTTP_REPLY, req, (size_t)n);
		break;
	case TB_SOCKS5: {
		static const uint8_t greeting[] = { 5, 1, 0 };

		tb_conn_send(r, c, PH_S5_METHOD, greeting, sizeof(greeting));
		break;
	}
	}
}

/* Starts one connection in a free slot. */
static void
tb_conn_start(struct tb_run *r, struct tb_conn *c)
{
	int one = 1;

	if (c->phase == PH_FREE)
		c->t0 = tb_now();
	c->fd = socket(r->path->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd == -1)
		tb_conn_die(r, c, "socket: %s", strerror(errno));
	c->interest = 0;
	c->phase = PH_CONNECT;
	if (r->path->family == AF_INET &&
	    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		tb_conn_die(r, c, "TCP_NODELAY: %s", strerror(errno));
	if (connect(c->fd, (const struct sockaddr *)&r->path->sa, r->path->salen) == 0) {
		tb_conn_handshake(r, c);
		return;
	}
	if (errno == EINPROGRESS) {
		tb_conn_want(r, c, EPOLLOUT);
		return;
	}
	if (errno == EAGAIN && r->path->family == AF_UNIX) {
		/* The listener's backlog is full: the server is behind, not gone. */
		close(c->fd);
		c->fd = -1;
		c->phase = PH_RETRY;
		return;
	}
	tb_conn_die(r, c, "connect: %s", strerror(errno));
}

/* Begins the next setup in this slot, if any is left. */
static void
tb_conn_next(struct tb_run *r, struct tb_conn *c)
{
	if (r->started >= r->want) {
		c->phase = PH_FREE;
		return;
	}
	r->started++;
	c->phase = PH_FREE;
	tb_conn_start(r, c);
}

static void
tb_conn_hold(struct tb_run *r, struct tb_conn *c)
{
	struct epoll_event e;

	/* Still watched: a proxy that closes an idle tunnel is reported, not missed. */
	memset(&e, 0, sizeof(e));
	e.events = EPOLLIN | EPOLLRDHUP;
	e.data.u64 = TB_HELD_TAG | (uint64_t)r->nheld;
	if (epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &e) == -1)
		tb_conn_die(r, c, "epoll_ctl: %s", strerror(errno));
	r->held[r->nheld++] = c->fd;
	c->fd = -1;
	c->interest = 0;
	r->done++;
	tb_conn_next(r, c);
}

/* "HTTP/1.x 200 ...": anything else is the proxy's refusal, shown as it came. */
static void
tb_conn_http_reply(struct tb_run *r, struct tb_conn *c)
{
	const uint8_t *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
	size_t head;

	if (end == NULL) {
		if (c->inlen == sizeof(c->in))
			tb_conn_die(r, c, "proxy answer head over %zu bytes", sizeof(c->in));
		return;
	}
	head = (size_t)(end - c->in) + 4;
	if (c->inlen < 12 || memcmp(c->in, "HTTP/1.", 7) != 0 ||
	    memcmp(c->in + 8, " 200", 4) != 0) {
		const uint8_t *eol = memchr(c->in, '\r', c->inlen);

		tb_conn_die(r, c, "proxy refused: %.*s", (int)(eol ? eol - c->in : 40), c->in);
	}
	if (c->inlen != head)
		tb_conn_die(r, c, "bytes after the proxy's answer before the tunnel was used");
	tb_conn_tunnel_up(r, c);
}

static void
tb_conn_s5_method(struct tb_run *r, struct tb_conn *c)
{
	uint8_t req[10];

	if (c->inlen < 2)
		return;
	if (c->inlen > 2 || c->in[0] != 5 || c->in[1] != 0)
		tb_conn_die(r, c, "SOCKS5 method refused (%02x %02x)", c->in[0], c->in[1]);
	req[0] = 5;
	req[1] = 1;                  /* CONNECT */
	req[2] = 0;
	req[3] = 1;                  /* IPv4 */
	memcpy(req + 4, &r->target_sa.sin_addr, 4);
	memcpy(req + 8, &r->target_sa.sin_port, 2);
	tb_conn_send(r, c, PH_S5_REPLY, req, sizeof(req));
}

static void
tb_conn_s5_reply(struct tb_run *r, struct tb_conn *c)
{
	size_t want;

	if (c->inlen < 5)
		return;
	if (c->in[0] != 5 || c->in[1] != 0)
		tb_conn_die(r, c, "SOCKS5 reply %02x", c->in[1]);
	switch (c->in[3]) {
	case 1: want = 10; break;
	case 4: want = 22; break;
	case 3: want = 7 + (size_t)c->in[4]; break;
	default: tb_conn_die(r, c, "SOCKS5 reply with address type %02x", c->in[3]);
	}
	if (c->inlen < want)
		return;
	if (c->inlen > want)
		tb_conn_die(r, c, "bytes after the SOCKS5 reply before the tunnel was used");
	tb_conn_tunnel_up(r, c);
}

static void
tb_conn_echo(struct tb_run *r, struct tb_conn *c)
{
	if (c->inlen < tb_payload_len)
		return;                 /* more of the echo to come */
	if (c->inlen != tb_payload_len || memcmp(c->in, tb_payload, tb_payload_len) != 0)
		tb_conn_die(r, c, "the echo came back as %zu bytes", c->inlen);
	if (r->goal == GOAL_ECHO_HOLD) {
		tb_conn_hold(r, c);
		return;
	}
	if (r->lat != NULL)
		r->lat[r->done] = tb_now() - c->t0;
	r->done++;
	tb_conn_close(r, c);
	tb_conn_next(r, c);
}

static void
tb_conn_readable(struct tb_run *r, struct tb_conn *c)
{
	ssize_t n;

	do
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		tb_conn_die(r, c, "recv: %s", strerror(errno));
	}
	if (n == 0)
		tb_conn_die(r, c, "the peer closed the connection");
	c->inlen += (size_t)n;
	switch (c->phase) {
	case PH_HTTP_REPLY:
		tb_conn_http_reply(r, c);
		break;
	case PH_S5_METHOD:
		tb_conn_s5_method(r, c);
		break;
	case PH_S5_REPLY:
		tb_conn_s5_reply(r, c);
		break;
	case PH_ECHO:
		tb_conn_echo(r, c);
		break;
	default:
		tb_conn_die(r, c, "unexpected bytes");
	}
}

static void
tb_conn_event(struct tb_run *r, struct tb_conn *c, uint32_t ev)
{
	if (c->phase == PH_CONNECT) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		if (err != 0)
			tb_conn_die(r, c, "connect: %s", strerror(err));
		tb_conn_handshake(r, c);
		return;
	}
	if (c->outoff < c->outlen) {
		if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			tb_conn_flush(r, c);
		return;
	}
	if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
		tb_conn_readable(r, c);
}

static void
tb_run_init(struct tb_run *r, const struct tb_path *path, const char *target,
    enum tb_goal goal, size_t nslots, uint64_t want, double seconds)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->goal = goal;
	r->want = want;
	r->ready_fd = -1;
	r->deadline = tb_now() + seconds;
	if (path->proto != TB_PLAIN) {
		if (target == NULL)
			tb_die("%s: a proxied path needs -t IPV4:PORT", path->text);
		/* HTTP CONNECT may name a host (the SNI guard measure does); SOCKS5 sends an
		 * IPv4 address. */
		if (strlen(target) >= sizeof(r->target) || (path->proto != TB_HTTP &&
		    tb_parse_ipv4_port(target, &r->target_sa) == -1))
			tb_die("target %s: want IPV4:PORT (HOST:PORT over HTTP CONNECT)", target);
		memcpy(r->target, target, strlen(target) + 1);
	}
	if ((r->ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		tb_die("epoll_create1: %s", strerror(errno));
	if (nslots > want)
		nslots = (size_t)want;
	r->nslots = nslots;
	if ((r->slots = calloc(nslots, sizeof(*r->slots))) == NULL)
		tb_die("out of memory");
	for (size_t i = 0; i < nslots; i++)
		r->slots[i].fd = -1;
}

static void
tb_run_free(struct tb_run *r)
{
	for (size_t i = 0; i < r->nslots; i++)
		tb_conn_close(r, &r->slots[i]);
	free(r->slots);
	close(r->ep);
}

/* Runs the machine until `want` are done; any failure or the deadline ends the program. */
static void
tb_run_loop(struct tb_run *r)
{
	struct epoll_event evs[64];
	bool retry = false;

	for (size_t i = 0; i < r->nslots; i++)
		tb_conn_next(r, &r->slots[i]);
	while (r->done < r->want) {
		int n, wait;

		if (tb_now() >= r->deadline) {
			fprintf(stderr, "tcpbench: %s: %s: deadline passed with %" PRIu64 " of %"
			    PRIu64 " complete\n", tb_mode, r->path->text, r->done, r->want);
			exit(1);
		}
		wait = tb_wait_ms(r->deadline, retry ? 1 : 1000);
		n = epoll_wait(r->ep, evs, (int)(sizeof(evs) / sizeof(evs[0])), wait);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			tb_die("epoll_wait: %s", strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;

			if (tag & TB_HELD_TAG)
				tb_die("%s: the proxy closed idle tunnel %" PRIu64 " while others "
				    "were opening", r->path->text, tag & ~TB_HELD_TAG);
			tb_conn_event(r, &r->slots[tag], evs[i].events);
		}
		retry = false;
		for (size_t i = 0; i < r->nslots; i++) {
			if (r->slots[i].phase != PH_RETRY)
				continue;
			tb_conn_start(r, &r->slots[i]);
			if (r->slots[i].phase == PH_RETRY)
				retry = true;
		}
	}
}

/* --- bulk --------------------------------------------------------------------------- */

static uint8_t tb_iobuf[TB_IO_BUF];

static void
tb_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t
tb_get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Waits for fd to be ready for ev before the deadline. */
static void
tb_poll(int fd, short ev, double deadline, const char *what)
{
	struct pollfd pfd = { .fd = fd, .events = ev, .revents = 0 };

	for (;;) {
		int n;

		if (tb_now() >= deadline)
			tb_die("deadline passed %s", what);
		n = poll(&pfd, 1, tb_wait_ms(deadline, 1000));
		if (n > 0)
			return;
		if (n < 0 && errno != EINTR)
			tb_die("poll: %s", strerror(errno));
	}
}

static void
tb_send_all(int fd, const uint8_t *p, size_t len, double deadline, const char *what)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				tb_poll(fd, POLLOUT, deadline, what);
				continue;
			}
			tb_die("send %s: %s", what, strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Reads up to len; 0 only at EOF. */
static size_t
tb_recv_some(int fd, uint8_t *p, size_t len, double deadline, const char *what)
{
	for (;;) {
		ssize_t n = recv(fd, p, len, 0);

		if (n >= 0)
			return (size_t)n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			tb_die("recv %s: %s", what, strerror(errno));
		tb_poll(fd, POLLIN, deadline, what);
	}
}

/* One round: a fresh tunnel (its setup not timed), then count bytes one way. MiB/s. */
static double
tb_bulk_round(const struct tb_path *path, const char *target, uint64_t bytes, bool down,
    double seconds)
{
	struct tb_run r;
	uint8_t head[TB_BULK_HEAD];
	uint64_t moved = 0;
	double t0, dt, deadline;
	int fd;

	tb_run_init(&r, path, target, GOAL_HANDOFF, 1, 1, seconds);
	tb_run_loop(&r);
	fd = r.ready_fd;
	deadline = r.deadline;
	tb_run_free(&r);

	head[0] = TB_BULK_MAGIC;
	head[1] = down ? 'D' : 'U';
	tb_put_be64(head + 2, bytes);
	t0 = tb_now();
	tb_send_all(fd, head, sizeof(head), deadline, "the bulk head");
	if (down) {
		while (moved < bytes) {
			size_t want = bytes - moved < TB_IO_BUF ? (size_t)(bytes - moved) : TB_IO_BUF;
			size_t n = tb_recv_some(fd, tb_iobuf, want, deadline, "bulk data");

			if (n == 0)
				tb_die("%s: EOF after %" PRIu64 " of %" PRIu64 " bytes", path->text,
				    moved, bytes);
			moved += n;
		}
		dt = tb_now() - t0;
		/* The server shuts down after exactly `bytes`: anything more is an error. */
		if (tb_recv_some(fd, tb_iobuf, 1, deadline, "the end of bulk data") != 0)
			tb_die("%s: more than %" PRIu64 " bytes came", path->text, bytes);
	} else {
		uint8_t ack[8];
		size_t got = 0;

		memset(tb_iobuf, 'u', sizeof(tb_iobuf));
		while (moved < bytes) {
			size_t n = bytes - moved < TB_IO_BUF ? (size_t)(bytes - moved) : TB_IO_BUF;

			tb_send_all(fd, tb_iobuf, n, deadline, "bulk data");
			moved += n;
		}
		while (got < sizeof(ack)) {
			size_t n = tb_recv_some(fd, ack + got, sizeof(ack) - got, deadline,
			    "the bulk count");

			if (n == 0)
				tb_die("%s: EOF before the server's count", path->text);
			got += n;
		}
		dt = tb_now() - t0;
		if (tb_get_be64(ack) != bytes)
			tb_die("%s: the server counted %" PRIu64 " of %" PRIu64 " bytes",
			    path->text, tb_get_be64(ack), bytes);
	}
	close(fd);
	return (double)bytes / (1024.0 * 1024.0) / dt;
}

/*
 * One round over several tunnels at once, each its own BYTES down: fresh tunnels (their
 * setups not timed), every head sent, then the bytes of all as they come (poll). MiB/s of
 * all together, from the first head to the last byte.
 */
static double
tb_bulk_many(const struct tb_path *path, const char *target, uint64_t bytes, size_t ntun,
    double seconds)
{
	struct pollfd pfd[TB_BULK_TUNNELS];
	uint64_t got[TB_BULK_TUNNELS];
	uint8_t head[TB_BULK_HEAD];
	size_t left = ntun;
	double t0, dt, deadline = 0;

	for (size_t i = 0; i < ntun; i++) {
		struct tb_run r;

		tb_run_init(&r, path, target, GOAL_HANDOFF, 1, 1, seconds);
		tb_run_loop(&r);
		pfd[i].fd = r.ready_fd;
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
		got[i] = 0;
		if (i == 0)
			deadline = r.deadline;
		tb_run_free(&r);
	}
	head[0] = TB_BULK_MAGIC;
	head[1] = 'D';
	tb_put_be64(head + 2, bytes);
	t0 = tb_now();
	for (size_t i = 0; i < ntun; i++)
		tb_send_all(pfd[i].fd, head, sizeof(head), deadline, "the bulk head");
	while (left > 0) {
		int n;

		if (tb_now() >= deadline)
			tb_die("deadline passed in bulk data (%zu of %zu tunnels done)", ntun - left,
			    ntun);
		n = poll(pfd, (nfds_t)ntun, tb_wait_ms(deadline, 1000));
		if (n < 0 && errno != EINTR)
			tb_die("poll: %s", strerror(errno));
		for (size_t i = 0; n > 0 && i < ntun; i++) {
			uint64_t want;
			ssize_t k;

			if (pfd[i].fd < 0 || pfd[i].revents == 0)
				continue;
			want = bytes - got[i] < TB_IO_BUF ? bytes - got[i] : TB_IO_BUF;
			k = recv(pfd[i].fd, tb_iobuf, (size_t)want, MSG_DONTWAIT);
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				continue;
			if (k < 0)
				tb_die("recv bulk data: %s", strerror(errno));
			if (k == 0)
				tb_die("%s: EOF after %" PRIu64 " of %" PRIu64 " bytes (tunnel %zu)",
				    path->text, got[i], bytes, i);
			got[i] += (uint64_t)k;
			if (got[i] == bytes) {
				pfd[i].fd = -pfd[i].fd - 1;     /* done: poll skips it */
				left--;
			}
		}
	}
	dt = tb_now() - t0;
	for (size_t i = 0; i < ntun; i++) {
		int fd = -pfd[i].fd - 1;

		if (tb_recv_some(fd, tb_iobuf, 1, deadline, "the end of bulk data") != 0)
			tb_die("%s: more than %" PRIu64 " bytes came", path->text, bytes);
		close(fd);
	}
	return (double)bytes * (double)ntun / (1024.0 * 1024.0) / dt;
}

static int
tb_bulk(int argc, char **argv)
{
	const char *pathtext = NULL, *target = NULL;
	uint64_t bytes = 1ULL << 30, rounds = 3, ntun = 1;
	double seconds = 120, best = 0;
	bool down = true;
	struct tb_path path;
	char list[TB_MAX_ROUNDS * 16] = "";
	size_t ll = 0;
	int ch;

	while ((ch = getopt(argc, argv, "p:t:n:r:d:T:c:")) != -1) {
		switch (ch) {
		case 'p': pathtext = optarg; break;
		case 't': target = optarg; break;
		case 'n': bytes = tb_number("-n", optarg, 1, TB_MAX_BYTES, true); break;
		case 'r': rounds = tb_number("-r", optarg, 1, TB_MAX_ROUNDS, false); break;
		case 'd':
			if (strcmp(optarg, "down") == 0)
				down = true;
			else if (strcmp(optarg, "up") == 0)
				down = false;
			else
				tb_usage();
			break;
		case 'T': seconds = tb_seconds("-T", optarg); break;
		case 'c': ntun = tb_number("-c", optarg, 1, TB_BULK_TUNNELS, false); break;
		default: tb_usage();
		}
	}
	if (pathtext == NULL || optind != argc || (ntun > 1 && !down))
		tb_usage();
	tb_path_parse(pathtext, &path);
	for (uint64_t i = 0; i < rounds; i++) {
		double mibps = ntun > 1 ?
		    tb_bulk_many(&path, target, bytes, (size_t)ntun, seconds) :
		    tb_bulk_round(&path, target, bytes, down, seconds);
		int n;

		if (mibps > best)
			best = mibps;
		n = snprintf(list + ll, sizeof(list) - ll, "%s%.1f", i ? "," : "", mibps);
		if (n > 0 && (size_t)n < sizeof(list) - ll)
			ll += (size_t)n;
	}
	printf("bulk path=%s dir=%s tunnels=%" PRIu64 " bytes=%" PRIu64 " rounds=%" PRIu64
	    " best_mibps=%.1f mibps=%s\n", path.text, down ? "down" : "up", ntun, bytes, rounds,
	    best, list);
	return 0;
}

/* --- setups and idle ----------------------------------------------------------------- */

static int
tb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int
tb_setups(int argc, char **argv)
{
	const char *pathtext = NULL, *target = NULL;
	uint64_t count = 3000, conc = 1;
	double seconds = 60, t0, dt;
	struct tb_path path;
	struct tb_run r;
	int ch;

	while ((ch = getopt(argc, argv, "p:t:n:c:T:P:")) != -1) {
		switch (ch) {
		case 'p': pathtext = optarg; break;
		case 't': target = optarg; break;
		case 'n': count = tb_number("-n", optarg, 1, TB_MAX_SETUPS, true); break;
		case 'c': conc = tb_number("-c", optarg, 1, TB_MAX_CONC, false); break;
		case 'T': seconds = tb_seconds("-T", optarg); break;
		case 'P': {
			FILE *fp = fopen(optarg, "rb");

			if (fp == NULL)
				tb_die("-P: cannot open the payload file");
			tb_payload_len = fread(tb_payload, 1, sizeof(tb_payload), fp);
			fclose(fp);
			if (tb_payload_len == 0 || tb_payload[0] == 'B')
				tb_die("-P: empty payload, or one starting with 'B' (bulk)");
			break;
		}
		default: tb_usage();
		}
	}
	if (pathtext == NULL || optind != argc)
		tb_usage();
	tb_path_parse(pathtext, &path);
	tb_raise_nofile();
	tb_run_init(&r, &path, target, GOAL_ECHO_CLOSE, (size_t)conc, count, seconds);
	if ((r.lat = calloc((size_t)count, sizeof(*r.lat))) == NULL)
		tb_die("out of memory");
	t0 = tb_now();
	tb_run_loop(&r);
	dt = tb_now() - t0;
	qsort(r.lat, (size_t)count, sizeof(*r.lat), tb_cmp_double);
	printf("setups path=%s conc=%" PRIu64 " n=%" PRIu64 " seconds=%.3f per_s=%.1f "
	    "p50_us=%.0f p99_us=%.0f\n", path.text, conc, count, dt, (double)count / dt,
	    r.lat[count / 2] * 1e6, r.lat[count * 99 / 100] * 1e6);
	free(r.lat);
	tb_run_free(&r);
	return 0;
}

static volatile sig_atomic_t tb_stop;

static void
tb_on_signal(int sig)
{
	(void)sig;
	tb_stop = 1;
}

static int
tb_idle(int argc, char **argv)
{
	const char *pathtext = NULL, *target = NULL;
	uint64_t count = 2000, conc = 16, closed = 0;
	double seconds = 60, hold = 600, t0, until;
	struct epoll_event evs[64];
	struct sigaction sa;
	sigset_t block, open;
	struct tb_path path;
	struct tb_run r;
	rlim_t nofile;
	int ch;

	while ((ch = getopt(argc, argv, "p:t:n:c:T:H:")) != -1) {
		switch (ch) {
		case 'p': pathtext = optarg; break;
		case 't': target = optarg; break;
		case 'n': count = tb_number("-n", optarg, 1, TB_MAX_IDLE, true); break;
		case 'c': conc = tb_number("-c", optarg, 1, TB_MAX_CONC, false); break;
		case 'T': seconds = tb_seconds("-T", optarg); break;
		case 'H': hold = tb_seconds("-H", optarg); break;
		default: tb_usage();
		}
	}
	if (pathtext == NULL || optind != argc)
		tb_usage();
	tb_path_parse(pathtext, &path);
	nofile = tb_raise_nofile();
	if ((rlim_t)(count + conc + 16) > nofile)
		tb_die("%" PRIu64 " tunnels need more descriptors than the limit (%llu)", count,
		    (unsigned long long)nofile);

	/* SIGTERM/SIGINT are let in only while waiting, so none is lost between checks. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tb_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &open);
	sigdelset(&open, SIGTERM);
	sigdelset(&open, SIGINT);

	tb_run_init(&r, &path, target, GOAL_ECHO_HOLD, (size_t)conc, count, seconds);
	if ((r.held = calloc((size_t)count, sizeof(*r.held))) == NULL)
		tb_die("out of memory");
	t0 = tb_now();
	tb_run_loop(&r);
	printf("ready path=%s tunnels=%zu seconds=%.3f\n", path.text, r.nheld, tb_now() - t0);
	fflush(stdout);

	until = tb_now() + hold;
	while (!tb_stop && tb_now() < until) {
		int n = epoll_pwait(r.ep, evs, (int)(sizeof(evs) / sizeof(evs[0])),
		    tb_wait_ms(until, 1000), &open);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			tb_die("epoll_wait: %s", strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			uint64_t idx = evs[i].data.u64 & ~TB_HELD_TAG;

			if (!(evs[i].data.u64 & TB_HELD_TAG) || idx >= r.nheld)
				continue;
			fprintf(stderr, "tcpbench: idle: %s: the proxy closed held tunnel %" PRIu64
			    "\n", path.text, idx);
			close(r.held[idx]);
			closed++;
		}
	}
	for (size_t i = 0; i < r.nheld; i++)
		close(r.held[i]);
	free(r.held);
	tb_run_free(&r);
	printf("released path=%s tunnels=%zu closed_by_proxy=%" PRIu64 "\n", path.text, r.nheld,
	    closed);
	return closed == 0 ? 0 : 1;
}

/* --- serve -------------------------------------------------------------------------- */

enum tb_sstate {
	SS_NEW,                      /* no byte yet */
	SS_HEAD,                     /* 'B' seen, reading the rest of the head */
	SS_ECHO,
	SS_SOURCE,                   /* sending `left` bytes */
	SS_SINK,                     /* reading `left` bytes */
	SS_DRAIN,                    /* done: discard until the client closes */
};

struct tb_sconn {
	enum tb_sstate st;
	uint8_t head[TB_BULK_HEAD];
	size_t headlen;
	uint64_t left, count;
	uint8_t *pend;               /* bytes owed to the client (echo, count): <= TB_ECHO_BUF */
	size_t pendlen, pendoff;
	uint32_t interest;
};

struct tb_server {
	int ep, lfd;
	struct tb_sconn **conns;     /* by descriptor */
	size_t nconns;               /* the descriptor limit */
	bool paused;
	double resume;
};

static uint8_t tb_srcbuf[TB_IO_BUF];

static void
tb_serve_close(struct tb_server *s, int fd)
{
	struct tb_sconn *c = s->conns[fd];

	free(c->pend);
	free(c);
	s->conns[fd] = NULL;
	close(fd);
}

static void
tb_serve_want(struct tb_server *s, int fd, uint32_t ev)
{
	struct tb_sconn *c = s->conns[fd];
	struct epoll_event e;

	if (c->interest == ev)
		return;
	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.fd = fd;
	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &e) == -1)
		tb_die("epoll_ctl: %s", strerror(errno));
	c->interest = ev;
}

/* Sends the owed bytes; false when the connection is gone. Pauses reading meanwhile. */
static bool
tb_serve_flush(struct tb_server *s, int fd)
{
	struct tb_sconn *c = s->conns[fd];

	while (c->pendoff < c->pendlen) {
		ssize_t n = send(fd, c->pend + c->pendoff, c->pendlen - c->pendoff, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				tb_serve_want(s, fd, EPOLLOUT);
				return true;
			}
			tb_serve_close(s, fd);
			return false;
		}
		c->pendoff += (size_t)n;
	}
	c->pendlen = c->pendoff = 0;
	tb_serve_want(s, fd, EPOLLIN);
	return true;
}

static bool
tb_serve_owe(struct tb_server *s, int fd, const uint8_t *p, size_t len)
{
	struct tb_sconn *c = s->conns[fd];

	if (c->pend == NULL && (c->pend = malloc(TB_ECHO_BUF)) == NULL) {
		tb_serve_close(s, fd);
		return false;
	}
	memcpy(c->pend, p, len);
	c->pendlen = len;
	c->pendoff = 0;
	return tb_serve_flush(s, fd);
}

static void
tb_serve_source(struct tb_server *s, int fd)
{
	struct tb_sconn *c = s->conns[fd];

	for (int i = 0; i < TB_SERVE_WRITES && c->left > 0; i++) {
		size_t want = c->left < TB_IO_BUF ? (size_t)c->left : TB_IO_BUF;
		ssize_t n = send(fd, tb_srcbuf, want, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			tb_serve_close(s, fd);
			return;
		}
		c->left -= (uint64_t)n;
	}
	if (c->left == 0) {
		shutdown(fd, SHUT_WR);
		c->st = SS_DRAIN;
		tb_serve_want(s, fd, EPOLLIN);
	}
}

/* An upload is complete: the count goes back, then the client closes. */
static bool
tb_serve_sunk(struct tb_server *s, int fd)
{
	struct tb_sconn *c = s->conns[fd];
	uint8_t ack[8];

	tb_put_be64(ack, c->count);
	c->st = SS_DRAIN;
	return tb_serve_owe(s, fd, ack, sizeof(ack));
}

/* What the client sent, as its state says. Returns false when fd was closed. */
static bool
tb_serve_input(struct tb_server *s, int fd, uint8_t *p, size_t len)
{
	struct tb_sconn *c = s->conns[fd];

	while (len > 0) {
		switch (c->st) {
		case SS_NEW:
			c->st = p[0] == TB_BULK_MAGIC ? SS_HEAD : SS_ECHO;
			break;
		case SS_HEAD: {
			size_t take = TB_BULK_HEAD - c->headlen < len ? TB_BULK_HEAD - c->headlen :
			    len;

			memcpy(c->head + c->headlen, p, take);
			c->headlen += take;
			p += take;
			len -= take;
			if (c->headlen < TB_BULK_HEAD)
				return true;
			c->count = c->left = tb_get_be64(c->head + 2);
			if (c->head[1] == 'D') {
				c->st = SS_SOURCE;
				tb_serve_want(s, fd, EPOLLOUT);
				if (len > 0) {
					/* A downloader sends nothing more. */
					tb_serve_close(s, fd);
					return false;
				}
				return true;
			}
			if (c->head[1] != 'U') {
				tb_serve_close(s, fd);
				return false;
			}
			c->st = SS_SINK;
			if (c->left == 0)
				return tb_serve_sunk(s, fd);
			break;
		}
		case SS_ECHO:
			return tb_serve_owe(s, fd, p, len);
		case SS_SINK:
			if (len > c->left) {
				tb_serve_close(s, fd);
				return false;
			}
			c->left -= len;
			return c->left > 0 ? true : tb_serve_sunk(s, fd);
		case SS_SOURCE:
		case SS_DRAIN:
			return true;
		}
	}
	return true;
}

static void
tb_serve_readable(struct tb_server *s, int fd)
{
	ssize_t n;

	for (int i = 0; i < TB_SERVE_WRITES; i++) {
		struct tb_sconn *c = s->conns[fd];
		uint8_t *buf = tb_iobuf;
		size_t cap = c->st == SS_ECHO || c->st == SS_NEW ? TB_ECHO_BUF : TB_IO_BUF;

		n = recv(fd, buf, cap, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				tb_serve_close(s, fd);
			return;
		}
		if (n == 0) {
			tb_serve_close(s, fd);
			return;
		}
		if (!tb_serve_input(s, fd, buf, (size_t)n))
			return;
		/* One read per wakeup while bytes are owed or being sent. */
		c = s->conns[fd];
		if (c->pendlen > 0 || c->st == SS_SOURCE || c->st == SS_ECHO)
			return;
	}
}

static void
tb_serve_accept(struct tb_server *s)
{
	for (int i = 0; i < TB_SERVE_ACCEPTS; i++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct epoll_event e;
		struct tb_sconn *c;

		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Out of descriptors: pause accepting instead of spinning. */
				fprintf(stderr, "tcpbench: serve: accept: %s; pausing 100 ms\n",
				    strerror(errno));
				epoll_ctl(s->ep, EPOLL_CTL_DEL, s->lfd, NULL);
				s->paused = true;
				s->resume = tb_now() + 0.1;
			}
			return;
		}
		if ((size_t)fd >= s->nconns || (c = calloc(1, sizeof(*c))) == NULL) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		memset(&e, 0, sizeof(e));
		e.events = EPOLLIN;
		e.data.fd = fd;
		c->interest = EPOLLIN;
		s->conns[fd] = c;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &e) == -1) {
			free(c);
			s->conns[fd] = NULL;
			close(fd);
		}
	}
}

static int
tb_serve(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	double lifetime = 3600, until;
	struct epoll_event evs[TB_SERVE_EVENTS], e;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	struct tb_server s;
	uint16_t port;
	int ch, one = 1;

	while ((ch = getopt(argc, argv, "a:T:")) != -1) {
		switch (ch) {
		case 'a': addr = optarg; break;
		case 'T': lifetime = tb_seconds("-T", optarg); break;
		default: tb_usage();
		}
	}
	if (optind != argc - 1)
		tb_usage();
	port = (uint16_t)tb_number("PORT", argv[optind], 0, 65535, false);
	memset(&s, 0, sizeof(s));
	s.nconns = (size_t)tb_raise_nofile();
	if (s.nconns > 1U << 20)
		s.nconns = 1U << 20;
	if ((s.conns = calloc(s.nconns, sizeof(*s.conns))) == NULL)
		tb_die("out of memory");
	memset(tb_srcbuf, 'd', sizeof(tb_srcbuf));

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		tb_die("-a %s: want an IPv4 address", addr);
	if ((s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(s.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(s.lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(s.lfd, 4096) == -1 ||
	    getsockname(s.lfd, (struct sockaddr *)&sin, &slen) == -1)
		tb_die("%s:%u: %s", addr, (unsigned)port, strerror(errno));
	if ((s.ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		tb_die("epoll_create1: %s", strerror(errno));
	memset(&e, 0, sizeof(e));
	e.events = EPOLLIN;
	e.data.fd = s.lfd;
	if (epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, &e) == -1)
		tb_die("epoll_ctl: %s", strerror(errno));
	printf("listening addr=%s port=%u\n", addr, (unsigned)ntohs(sin.sin_port));
	fflush(stdout);

	until = tb_now() + lifetime;
	while (tb_now() < until) {
		int n = epoll_wait(s.ep, evs, TB_SERVE_EVENTS, tb_wait_ms(until, 100));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			tb_die("epoll_wait: %s", strerror(errno));
		}
		if (s.paused && tb_now() >= s.resume) {
			if (epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, &e) == 0)
				s.paused = false;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			struct tb_sconn *c;

			if (fd == s.lfd) {
				tb_serve_accept(&s);
				continue;
			}
			if ((c = s.conns[fd]) == NULL)
				continue;
			if ((evs[i].events & EPOLLOUT) && c->pendlen > 0) {
				if (!tb_serve_flush(&s, fd))
					continue;
			} else if ((evs[i].events & EPOLLOUT) && c->st == SS_SOURCE) {
				tb_serve_source(&s, fd);
				continue;
			}
			if ((c = s.conns[fd]) == NULL || c->pendlen > 0)
				continue;
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				tb_serve_readable(&s, fd);
		}
	}
	return 0;
}

/* --- ask and dns ------------------------------------------------------------------- */

/* The wire form of NAME (text, labels joined by '.'): its length, or 0 when not a name. */
static size_t
tb_dns_wire_name(const char *name, uint8_t *out)
{
	size_t len = strlen(name), o = 0;
	const char *p = name;

	if (len == 0 || len > TB_DNS_NAME_MAX)
		return 0;
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (l == 0 || l > 63)
			return 0;
		out[o++] = (uint8_t)l;
		memcpy(out + o, p, l);
		o += l;
		p += l;
		if (*p == '.')
			p++;
	}
	out[o++] = 0;
	return o;
}

/* EGR1 DNS question verb over the principal socket: prints the A record's address. */
static int
tb_ask(int argc, char **argv)
{
	const char *sock = NULL, *name = NULL;
	struct sockaddr_un sun;
	uint8_t req[9 + TB_DNS_NAME_MAX], ans[18];
	size_t nl, got = 0;
	double deadline = tb_now() + 10;
	char addr[INET_ADDRSTRLEN];
	int ch, fd;

	while ((ch = getopt(argc, argv, "u:q:")) != -1) {
		switch (ch) {
		case 'u': sock = optarg; break;
		case 'q': name = optarg; break;
		default: tb_usage();
		}
	}
	if (sock == NULL || name == NULL || optind != argc)
		tb_usage();
	nl = strlen(name);
	if (nl == 0 || nl > TB_DNS_NAME_MAX || strlen(sock) >= sizeof(sun.sun_path))
		tb_die("name or socket path too long");
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sock, strlen(sock) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		tb_die("%s: %s", sock, strerror(errno));
	memcpy(req, "EGR1\1\1\0\1", 8);         /* version 1, verb 1, qtype A */
	req[8] = (uint8_t)nl;
	memcpy(req + 9, name, nl);
	tb_send_all(fd, req, 9 + nl, deadline, "the question");
	while (got < sizeof(ans)) {
		size_t n = tb_recv_some(fd, ans + got, sizeof(ans) - got, deadline, "the answer");

		if (n == 0)
			tb_die("EOF after %zu of 18 bytes", got);
		got += n;
	}
	close(fd);
	if (memcmp(ans, "EGR1\0\0\0\0", 8) != 0 || ans[8] != 0 || ans[9] != 1)
		tb_die("%s: refused (rcode %u, count %u)", name, ans[8], ans[9]);
	inet_ntop(AF_INET, ans + 14, addr, sizeof(addr));
	printf("%s\n", addr);
	return 0;
}

struct tb_dns_sock {
	int fd;
	uint16_t id;                 /* of the query out */
	double sent;                 /* when it was sent (first time: latency from here) */
	double resent;               /* when it was last sent (the -W timer) */
};

static uint8_t tb_dns_query[TB_DNS_MSG_MAX];
static size_t tb_dns_qlen;

static void
tb_dns_send(struct tb_dns_sock *d, uint16_t id, double now)
{
	d->id = id;
	tb_dns_query[0] = (uint8_t)(id >> 8);
	tb_dns_query[1] = (uint8_t)id;
	d->resent = now;
	/* A full socket buffer loses the query as the network would: -W sends it again. */
	if (send(d->fd, tb_dns_query, tb_dns_qlen, MSG_DONTWAIT) < 0 && errno != EAGAIN &&
	    errno != EWOULDBLOCK && errno != ECONNREFUSED)
		tb_die("send: %s", strerror(errno));
}

static int
tb_dns(int argc, char **argv)
{
	const char *server = NULL, *name = NULL;
	uint64_t count = 100000, out = 1, done = 0, started = 0, lost = 0, stale = 0;
	double seconds = 60, wait_ms = 1000, t0, dt, deadline, *lat;
	struct tb_dns_sock socks[TB_DNS_MAX_OUT];
	struct epoll_event evs[TB_DNS_MAX_OUT];
	struct sockaddr_in sin;
	struct rusage ru;
	uint8_t buf[TB_DNS_MSG_MAX];
	uint16_t next_id = 1;
	double cpu;
	size_t wl;
	int ch, ep;

	while ((ch = getopt(argc, argv, "s:q:n:c:W:T:")) != -1) {
		switch (ch) {
		case 's': server = optarg; break;
		case 'q': name = optarg; break;
		case 'n': count = tb_number("-n", optarg, 1, TB_DNS_MAX_QUERIES, true); break;
		case 'c': out = tb_number("-c", optarg, 1, TB_DNS_MAX_OUT, false); break;
		case 'W': wait_ms = (double)tb_number("-W", optarg, 1, 60000, false); break;
		case 'T': seconds = tb_seconds("-T", optarg); break;
		default: tb_usage();
		}
	}
	if (server == NULL || name == NULL || optind != argc)
		tb_usage();
	if (tb_parse_ipv4_port(server, &sin) == -1)
		tb_die("-s: want IPV4:PORT");
	if (out > count)
		out = count;
	/* The query: id, RD, one question (NAME, A, IN); no EDNS. */
	memcpy(tb_dns_query, "\0\0\1\0\0\1\0\0\0\0\0\0", 12);
	if ((wl = tb_dns_wire_name(name, tb_dns_query + 12)) == 0)
		tb_die("-q: not a name: %s", name);
	memcpy(tb_dns_query + 12 + wl, "\0\1\0\1", 4);
	tb_dns_qlen = 12 + wl + 4;
	if ((lat = calloc((size_t)count, sizeof(*lat))) == NULL)
		tb_die("out of memory");
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		tb_die("epoll_create1: %s", strerror(errno));
	for (uint64_t i = 0; i < out; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u64 = i };

		/* A connected socket each: its own source port, answers from the server only. */
		if ((socks[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0)) == -1 || connect(socks[i].fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, socks[i].fd, &e) == -1)
			tb_die("socket: %s", strerror(errno));
	}
	t0 = tb_now();
	deadline = t0 + seconds;
	for (uint64_t i = 0; i < out; i++) {
		socks[i].sent = t0;
		tb_dns_send(&socks[i], next_id++, t0);
		started++;
	}
	while (done < count) {
		double now = tb_now();
		int n;

		if (now >= deadline)
			tb_die("deadline passed after %" PRIu64 " of %" PRIu64 " answers", done,
			    count);
		n = epoll_wait(ep, evs, (int)out, tb_wait_ms(deadline, (int)wait_ms));
		if (n < 0 && errno != EINTR)
			tb_die("epoll_wait: %s", strerror(errno));
		now = tb_now();
		for (int k = 0; k < n; k++) {
			struct tb_dns_sock *d = &socks[evs[k].data.u64];
			ssize_t r;

			while ((r = recv(d->fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
				uint16_t id = (uint16_t)(buf[0] << 8 | buf[1]);

				if (r < 12 || !(buf[2] & 0x80))
					tb_die("a reply that is not a DNS response (%zd bytes)", r);
				if (id != d->id) {
					stale++;         /* the answer to a query sent again */
					continue;
				}
				if ((buf[3] & 0x0f) != 0 || buf[6] != 0 || buf[7] != 1)
					tb_die("answer %" PRIu64 ": rcode %u, %u answers (want NOERROR, "
					    "one A)", done, buf[3] & 0x0f, buf[6] << 8 | buf[7]);
				lat[done++] = now - d->sent;
				if (started < count) {
					d->sent = now;
					tb_dns_send(d, next_id++, now);
					started++;
				} else {
					d->id = 0;       /* id 0 is never sent: nothing out here */
				}
				if (done == count)
					break;
			}
			if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNREFUSED)
				tb_die("recv: %s", strerror(errno));
		}
		/* Lost ones: bounded by out sockets per wakeup. */
		for (uint64_t i = 0; i < out; i++)
			if (socks[i].id != 0 && (now - socks[i].resent) * 1000.0 >= wait_ms) {
				lost++;
				if (next_id == 0)
					next_id = 1;
				tb_dns_send(&socks[i], next_id++, now);
			}
		if (next_id == 0)
			next_id = 1;
	}
	dt = tb_now() - t0;
	/* The client's own CPU per answer: what it adds to a chain sharing one CPU. */
	if (getrusage(RUSAGE_SELF, &ru) == -1)
		tb_die("getrusage: %s", strerror(errno));
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	qsort(lat, (size_t)count, sizeof(*lat), tb_cmp_double);
	printf("dns server=%s name=%s outstanding=%" PRIu64 " n=%" PRIu64 " seconds=%.3f "
	    "per_s=%.1f p50_us=%.0f p99_us=%.0f lost=%" PRIu64 " stale=%" PRIu64
	    " cpu_us_per_q=%.1f\n", server, name, out, count, dt, (double)count / dt,
	    lat[count / 2] * 1e6, lat[count * 99 / 100] * 1e6, lost, stale,
	    cpu / (double)count);
	for (uint64_t i = 0; i < out; i++)
		close(socks[i].fd);
	close(ep);
	free(lat);
	return 0;
}

/* --- freeport ----------------------------------------------------------------------- */

/* Ports bound together, so that they differ; closed before the caller binds them. */
static int
tb_freeport(int argc, char **argv)
{
	uint64_t count = argc > 2 ? tb_number("COUNT", argv[2], 1, TB_FREEPORT_MAX, false) : 1;
	int fds[TB_FREEPORT_MAX];

	if (argc > 3)
		tb_usage();
	for (uint64_t i = 0; i < count; i++) {
		struct sockaddr_in sin;
		socklen_t slen = sizeof(sin);

		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
		    bind(fds[i], (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
		    getsockname(fds[i], (struct sockaddr *)&sin, &slen) == -1)
			tb_die("%s", strerror(errno));
		printf("%s%u", i ? " " : "", (unsigned)ntohs(sin.sin_port));
	}
	printf("\n");
	for (uint64_t i = 0; i < count; i++)
		close(fds[i]);
	return 0;
}

int
main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		tb_usage();
	tb_mode = argv[1];
	/* getopt sees the mode as the program name. */
	if (strcmp(argv[1], "serve") == 0)
		return tb_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "freeport") == 0)
		return tb_freeport(argc, argv);
	if (strcmp(argv[1], "bulk") == 0)
		return tb_bulk(argc - 1, argv + 1);
	if (strcmp(argv[1], "setups") == 0)
		return tb_setups(argc - 1, argv + 1);
	if (strcmp(argv[1], "idle") == 0)
		return tb_idle(argc - 1, argv + 1);
	if (strcmp(argv[1], "ask") == 0)
		return tb_ask(argc - 1, argv + 1);
	if (strcmp(argv[1], "dns") == 0)
		return tb_dns(argc - 1, argv + 1);
	tb_usage();
}
