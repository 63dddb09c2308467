/*
 * floorproxy: a reference of bench/egressd-bench.sh (issue 17), not a product. It does
 * what the SPEC makes egressd do for one tunnel of the benchmark, and nothing else, with
 * as few system calls as an epoll proxy can:
 *
 *   an AF_UNIX listener; HTTP CONNECT (the request read, "200" answered once the upstream
 *   is connected); with the SNI guard (default), the client's first bytes are read and
 *   held before anything reaches the upstream; an "open" record, sent to a second process
 *   that writes it to a file and acknowledges it, before any byte moves (without the
 *   guard: before the "200"); the relay; a "close" record, written but not waited for.
 *
 * What it leaves out makes it cheaper than egressd could ever be: no policy, no name
 * lookup (every tunnel goes to -t), no ClientHello parsing, no checking of the records in
 * the writer, no log line, no limits. With -k, the writer does what the SPEC makes every
 * record cost (a hash chain and a MAC, docs/receipts.md) and nothing more: each line's
 * prev is the SHA-256 of the line before it, its mac the HMAC-SHA256 under the key of
 * "egress-receipt-1\0" and the line up to ,"mac", with contexts made once (the key's
 * inner and outer states kept, the digest fetched once). Without -k, the line carries
 * zeros there. With -e (built by make, which links egressd's own parsers: FLOOR_EGRESS),
 * the engine also does the rest of what the SPEC makes a tunnel cost, with egressd's
 * code and without its event framework: the CONNECT head parsed by http_parse_request,
 * the host:port decided by policy_decide against the policy file, the ClientHello scanned
 * by tls_scan and its SNI matched against the host (sni match), and every system call
 * under a seccomp allow-list. Still left out: the name lookup (the policy's host goes to
 * -t), the monitor's checking of what the engine sends, log lines and limits. Its sockets are edge-triggered, so no
 * epoll_ctl is spent but one ADD per socket, and a close removes it; a peer's FIN seen
 * with its last bytes (EPOLLRDHUP) ends the side without reading the 0. The writer
 * blocks in recv(2) on its channel, as it serves nothing else. It is also the floor of
 * bulk (issue 17's 8 tunnels at once): in the relay, what a socket does not take waits in a
 * buffer of that side, made then, with EPOLLOUT added to the side's registration (one
 * epoll_ctl) until it is written, and the source is not read meanwhile; a setup's
 * payloads are a few hundred bytes and never take that path.
 *
 * usage: floorproxy [-n] [-W] [-k KEYFILE] [-e POLICY] -l SOCKET -t IPV4:PORT -r FILE
 *   -n  no guard: the open is written when the upstream connects, the "200" after it
 *   -W  no records: neither the open (nor its wait for the writer) nor the close; what the
 *       rest of the tunnel costs, against which the receipts' share is measured
 *   -k  chain and MAC the records with the key in KEYFILE (egress-policy keygen's)
 *   -e  egressd's parsing, a policy decision (POLICY), sni match and seccomp (see above)
 * It runs until killed (SIGTERM). The writer is the parent; the relaying child's pid is
 * its only child (pgrep -P), as egressd's engine is the monitor's.
 *
 * Trusts: its arguments. Clients and the upstream are the benchmark's own (tcpbench on
 * loopback); a peer that breaks the protocol ends its tunnel, a failed call ends the run.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

#ifdef FLOOR_EGRESS
#include <seccomp.h>

#include "http.h"
#include "policy.h"
#include "tls.h"
#endif

#define FP_HEAD_MAX 4096                /* the CONNECT head and the held first bytes */
#define FP_BUF (64 * 1024)
#define FP_BATCH (256 * 1024)
#define FP_RECORD 512                   /* egressd's records are 400 to 450 bytes */

enum fp_state { FP_REQ, FP_HELLO, FP_HELD, FP_RELAY };

struct fp_conn;
struct fp_side {
	struct fp_conn *c;
	int fd;
	bool eof;                       /* the peer's FIN was read or seen */
	bool ready;                     /* an edge came while the tunnel was held, or its
	                                 * reads paused while the other side was full */
	bool out;                       /* EPOLLOUT is in its registration (pend waits) */
	bool shut;                      /* its write side is shut */
	uint8_t *pend;                  /* bulk: bytes for this side's socket that it did not
	                                 * take yet (FP_BUF; made on the first short write) */
	size_t plen, poff;
};

struct fp_conn {
	struct fp_side s[2];            /* 0: the client, 1: the upstream */
	enum fp_state state;
	uint64_t wait;                  /* the batch whose acknowledgement releases it */
	uint64_t id;
	struct fp_conn *next;           /* held, in the order of their records; or closed,
	                                 * freed at the turn's end (fp_dead) */
	bool closed;                    /* events of this turn that still name it are skipped */
	size_t hlen;
	char head[FP_HEAD_MAX];
#ifdef FLOOR_EGRESS
	char host[EGRESS_HOST_MAX + 1]; /* -e: the request's canonical host */
#endif
};

static bool fp_guard = true;
static bool fp_records = true;          /* -W: false */
#ifdef FLOOR_EGRESS
static struct policy *fp_policy;        /* -e */
static struct http_request fp_req;
static uint8_t fp_scratch[EGRESS_TLS_SCRATCH];
#endif
static struct sockaddr_in fp_target;
static int fp_ep = -1, fp_chan = -1, fp_lfd = -1;
static struct fp_side fp_lside, fp_cside;     /* the listener's and channel's epoll tags */
static char fp_batch[FP_BATCH];
static size_t fp_blen = 1;              /* byte 0: 1 when the batch wants an answer */
static uint64_t fp_sent, fp_acked, fp_ids;
static struct fp_conn *fp_held, **fp_held_tail = &fp_held;
static unsigned fp_nconns, fp_nheld;
static struct fp_conn *fp_dead;         /* closed in this turn: freed at its end */
static uint8_t fp_buf[FP_BUF];

static void __attribute__((noreturn, format(printf, 1, 2)))
fp_die(const char *fmt, ...)
{
	va_list ap;

	fputs("floorproxy: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void
fp_ctl(struct fp_side *s, int op, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = s };

	if (epoll_ctl(fp_ep, op, s->fd, &e) == -1)
		fp_die("epoll_ctl: %s", strerror(errno));
}

static void
fp_add(struct fp_side *s, uint32_t ev)
{
	fp_ctl(s, EPOLL_CTL_ADD, ev);
}

/* v in decimal (base 10) or hex (16) at o: the digits written. */
static size_t
fp_num(char *o, uint64_t v, unsigned base)
{
	char t[20];
	size_t n = 0, i;

	do {
		t[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	for (i = 0; i < n; i++)
		o[i] = t[n - 1 - i];
	return n;
}

static size_t
fp_put(char *o, const char *s, size_t n)
{
	memcpy(o, s, n);
	return n;
}

/*
 * A record like egressd's (its size and members), into the turn's batch: the constant
 * parts are copied, the numbers written by hand (egressd's monitor makes its lines
 * without a format too). prev and mac are zeros here; the writer fills them with -k.
 */
static void
fp_record(const struct fp_conn *c, const char *event, bool wait)
{
	static const char zeros[] =
	    "0000000000000000000000000000000000000000000000000000000000000000";
	static const char p1[] = "{\"seq\":", p2[] = ",\"prev\":\"sha256:",
	    p3[] = "\",\"event\":\"", p4[] = "\",\"id\":\"c-", p5[] = "\",\"time\":\"",
	    p6[] = "\",\"principal\":\"bench\",\"policy\":\"sha256:",
	    p7[] = "\",\"frontend\":\"http-connect\",\"host\":\"floor.bench\",\"port\":",
	    p8[] = ",\"addr\":\"127.0.0.1\",\"reason\":\"allowed\",\"mac\":\"hmac-sha256:",
	    p9[] = "\"}\n";
	struct timespec ts;
	char *o = fp_batch + fp_blen, *start = o;
	size_t ns;

	if (fp_blen + FP_RECORD > sizeof(fp_batch))
		fp_die("a batch over %zu bytes", sizeof(fp_batch));
	clock_gettime(CLOCK_REALTIME, &ts);
	o += fp_put(o, p1, sizeof(p1) - 1);
	o += fp_num(o, c->id, 10);
	o += fp_put(o, p2, sizeof(p2) - 1);
	o += fp_put(o, zeros, 64);
	o += fp_put(o, p3, sizeof(p3) - 1);
	o += fp_put(o, event, strlen(event));
	o += fp_put(o, p4, sizeof(p4) - 1);
	o += fp_num(o, c->id, 16);
	o += fp_put(o, p5, sizeof(p5) - 1);
	o += fp_num(o, (uint64_t)ts.tv_sec, 10);
	*o++ = '.';
	ns = fp_num(o, (uint64_t)ts.tv_nsec, 10);
	memmove(o + 9 - ns, o, ns);             /* nine digits, zeros in front */
	memset(o, '0', 9 - ns);
	o += 9;
	o += fp_put(o, p6, sizeof(p6) - 1);
	o += fp_put(o, zeros, 64);
	o += fp_put(o, p7, sizeof(p7) - 1);
	o += fp_num(o, ntohs(fp_target.sin_port), 10);
	o += fp_put(o, p8, sizeof(p8) - 1);
	o += fp_put(o, zeros, 64);
	o += fp_put(o, p9, sizeof(p9) - 1);
	fp_blen += (size_t)(o - start);
	if (wait)
		fp_batch[0] = 1;
}

static void
fp_send_all(int fd, const void *p, size_t n)
{
	ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w != (ssize_t)n)
		fp_die("a short send (%zd of %zu): this reference relays small payloads only", w, n);
}

static void
fp_close(struct fp_conn *c)
{
	if (fp_records)
		fp_record(c, "close", false);
	close(c->s[0].fd);              /* a close takes the socket out of the epoll set */
	close(c->s[1].fd);
	c->closed = true;               /* one epoll_wait can name both sides */
	c->next = fp_dead;
	fp_dead = c;
	fp_nconns--;
}

static void fp_release(struct fp_conn *c);

/* The open, and the tunnel held until the writer acknowledged it (-W: released now). */
static void
fp_hold(struct fp_conn *c)
{
	if (!fp_records) {
		fp_release(c);
		return;
	}
	fp_record(c, "open", true);
	c->state = FP_HELD;
	c->wait = fp_sent + 1;          /* the batch this turn sends */
	c->next = NULL;
	*fp_held_tail = c;
	fp_held_tail = &c->next;
	fp_nheld++;
}

static bool fp_side_read(struct fp_side *s, uint32_t ev, bool drain);
#ifdef FLOOR_EGRESS
static bool fp_request_ok(struct fp_conn *c);
static bool fp_hello_ok(struct fp_conn *c);
#endif

static void
fp_release(struct fp_conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	c->state = FP_RELAY;
	if (fp_guard)
		fp_send_all(c->s[1].fd, c->head, c->hlen);
	else
		fp_send_all(c->s[0].fd, ok, sizeof(ok) - 1);
	/* The edges that came meanwhile were not read: read them now. */
	for (int i = 0; i < 2; i++)
		if (c->s[i].ready) {
			c->s[i].ready = false;
			if (!fp_side_read(&c->s[i], EPOLLIN, false))
				return;         /* the tunnel ended */
		}
}

static void
fp_acks(uint64_t upto)
{
	fp_acked = upto;
	while (fp_held != NULL && fp_held->wait <= fp_acked) {
		struct fp_conn *c = fp_held;

		fp_held = c->next;
		if (fp_held == NULL)
			fp_held_tail = &fp_held;
		fp_nheld--;
		fp_release(c);
	}
}

static void
fp_connected(struct fp_conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	int one = 1;

	setsockopt(c->s[1].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fp_add(&c->s[1], EPOLLIN | EPOLLRDHUP | EPOLLET);
	if (!fp_guard) {
		fp_hold(c);             /* the open before the answer */
		return;
	}
	fp_send_all(c->s[0].fd, ok, sizeof(ok) - 1);
	c->state = FP_HELLO;
	c->hlen = 0;
}

/* The CONNECT head is complete: the upstream (always -t). */
static void
fp_connect(struct fp_conn *c)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);

	if (fd == -1)
		fp_die("socket: %s", strerror(errno));
	c->s[1].fd = fd;
	if (connect(fd, (struct sockaddr *)&fp_target, sizeof(fp_target)) == -1 &&
	    errno != EINPROGRESS)
		fp_die("connect: %s", strerror(errno));
	/* Loopback connects inside connect(2): egressd asks getpeername too. */
	if (getpeername(fd, (struct sockaddr *)&peer, &len) == -1)
		fp_die("the upstream did not connect at once (a loopback upstream does)");
	fp_connected(c);
}

#ifdef FLOOR_EGRESS
/* -e: the head as egressd parses it, and the policy's decision on its host:port. */
static bool
fp_request_ok(struct fp_conn *c)
{
	struct proto_error err;
	unsigned line = 0;

	if (http_parse_request((const uint8_t *)c->head, c->hlen, &fp_req, &err) != PROTO_OK ||
	    fp_req.kind != HTTP_CONNECT) {
		fprintf(stderr, "floorproxy: a request refused: %s\n", err.why ? err.why : "-");
		return false;
	}
	if (policy_decide(fp_policy, &fp_req.host, fp_req.port, &line) != EGRESS_ALLOWED) {
		fprintf(stderr, "floorproxy: %s:%u not allowed\n", fp_req.host.name, fp_req.port);
		return false;
	}
	memcpy(c->host, fp_req.host.name, sizeof(c->host));
	return true;
}

/* -e: the held first bytes must be one whole ClientHello whose SNI is the host. */
static bool
fp_hello_ok(struct fp_conn *c)
{
	struct tls_result res;

	tls_scan((const uint8_t *)c->head, c->hlen, true, fp_scratch, sizeof(fp_scratch), &res);
	if (res.unit != TLS_HELLO || !res.has_sni || strcmp(res.sni, c->host) != 0) {
		fprintf(stderr, "floorproxy: a ClientHello refused (this reference reads it in "
		    "one read)\n");
		return false;
	}
	return true;
}

/* -e: the engine's system calls, an allow-list; anything else kills it. */
static void
fp_seccomp(void)
{
	static const int calls[] = {
		SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(close), SCMP_SYS(sendto),
		SCMP_SYS(recvfrom), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_ctl), SCMP_SYS(accept4),
		SCMP_SYS(connect), SCMP_SYS(getpeername), SCMP_SYS(setsockopt),
		SCMP_SYS(shutdown), SCMP_SYS(clock_gettime), SCMP_SYS(brk), SCMP_SYS(mmap),
		SCMP_SYS(munmap), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(newfstatat),
		SCMP_SYS(fstat),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc = ctx == NULL ? -1 : 0;

	for (size_t i = 0; rc == 0 && i < sizeof(calls) / sizeof(calls[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i], 0);
	/* As egressd's engine: sockets of the families it connects to, and no other. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, AF_INET));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, AF_INET6));
	if (rc != 0 || seccomp_load(ctx) != 0)
		fp_die("seccomp: the engine's filter");
	seccomp_release(ctx);
}

static void
fp_load_policy(const char *path)
{
	static uint8_t buf[1 << 20];
	struct policy_diag d = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd == -1 ? -1 : read(fd, buf, sizeof(buf));

	if (n < 0 || (size_t)n == sizeof(buf))
		fp_die("%s: cannot read it", path);
	close(fd);
	if ((fp_policy = policy_load(path, buf, (size_t)n, NULL, &d)) == NULL)
		fp_die("%s: %s", path, d.nerrors > 0 ? d.errors[0] : "not a policy");
	policy_diag_free(&d);
}
#endif

/*
 * The relay's write of n bytes into side o: what its socket does not take waits in o->pend,
 * and o's registration gets EPOLLOUT. False when the bytes wait (the source pauses).
 */
static bool
fp_relay_send(struct fp_side *o, const uint8_t *p, size_t n)
{
	ssize_t w = send(o->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w < 0)
		w = 0;                  /* EAGAIN; an error meets the EPOLLOUT event's send */
	if ((size_t)w == n)
		return true;
	if (o->pend == NULL && (o->pend = malloc(FP_BUF)) == NULL)
		fp_die("out of memory");
	memcpy(o->pend, p + w, n - (size_t)w);
	o->plen = n - (size_t)w;
	o->poff = 0;
	fp_ctl(o, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
	o->out = true;
	return false;
}

/*
 * Side s reached its EOF: once its bytes left (nothing waits in o), the other side's write
 * half is shut, and the tunnel ends when both directions are done. False when it ended.
 */
static bool
fp_side_finish(struct fp_conn *c, struct fp_side *s)
{
	struct fp_side *o = s == &c->s[0] ? &c->s[1] : &c->s[0];

	if (c->state != FP_RELAY) {
		fp_close(c);
		return false;
	}
	if (o->plen > 0 || o->shut)
		return true;            /* the shut waits for o's bytes (fp_side_out) */
	if (o->eof && s->plen == 0) {
		fp_close(c);
		return false;
	}
	shutdown(o->fd, SHUT_WR);
	o->shut = true;
	return true;
}

/* EPOLLOUT on o: what waits goes; once nothing does, the paused source reads again. */
static bool
fp_side_out(struct fp_side *o)
{
	struct fp_conn *c = o->c;
	struct fp_side *s = o == &c->s[0] ? &c->s[1] : &c->s[0];
	ssize_t w;

	if (o->plen == 0)
		return true;
	w = send(o->fd, o->pend + o->poff, o->plen, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	if (w < 0) {
		fp_close(c);            /* the peer is gone: the tunnel ends */
		return false;
	}
	o->poff += (size_t)w;
	o->plen -= (size_t)w;
	if (o->plen > 0)
		return true;
	fp_ctl(o, EPOLL_CTL_MOD, EPOLLIN | EPOLLRDHUP | EPOLLET);
	o->out = false;
	if (s->eof)
		return fp_side_finish(c, s);
	if (s->ready) {
		s->ready = false;
		return fp_side_read(s, EPOLLIN, true);
	}
	return true;
}

/*
 * A side's edge: reads until drained (drain: until EAGAIN or the EOF, for reads that
 * paused while the other side was full). False when the tunnel ended (c is freed).
 */
static bool
fp_side_read(struct fp_side *s, uint32_t ev, bool drain)
{
	struct fp_conn *c = s->c;
	int me = s == &c->s[0] ? 0 : 1;
	struct fp_side *o = &c->s[1 - me];
	ssize_t n;

	if (c->state == FP_HELD || o->plen > 0) {
		s->ready = true;        /* no byte moves before the acknowledgement, nor
		                         * while the other side has bytes waiting */
		return true;
	}
	for (;;) {
		if (c->state == FP_REQ || c->state == FP_HELLO)
			n = read(s->fd, c->head + c->hlen, sizeof(c->head) - c->hlen);
		else
			n = read(s->fd, fp_buf, sizeof(fp_buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0) {
			s->eof = true;
			break;
		}
		if (c->state == FP_REQ) {
			c->hlen += (size_t)n;
			if (memmem(c->head, c->hlen, "\r\n\r\n", 4) == NULL) {
				if (c->hlen == sizeof(c->head))
					break;  /* no head within the bound: the tunnel ends */
				continue;
			}
#ifdef FLOOR_EGRESS
			if (fp_policy != NULL && !fp_request_ok(c))
				break;          /* refused: the tunnel ends */
#endif
			fp_connect(c);
			return true;
		}
		if (c->state == FP_HELLO) {
			/* The guard: the first bytes are held, then the open. */
			c->hlen = (size_t)n;
#ifdef FLOOR_EGRESS
			if (fp_policy != NULL && !fp_hello_ok(c))
				break;
#endif
			fp_hold(c);
			if (!(ev & (EPOLLRDHUP | EPOLLHUP)))
				return true;
			if (c->state == FP_HELD) {
				s->ready = true;        /* the EOF, after the release */
				return true;
			}
			s->eof = true;                  /* -W: released already */
			break;
		}
		if (!fp_relay_send(o, fp_buf, (size_t)n)) {
			s->ready = true;        /* o is full: read on once it drained */
			return true;
		}
		if ((size_t)n < sizeof(fp_buf) && !drain) {
			if (!(ev & (EPOLLRDHUP | EPOLLHUP)))
				return true;    /* drained; the next edge says more */
			s->eof = true;          /* the FIN came with these bytes */
			break;
		}
	}
	/* This side's EOF: the other's write side shuts, and the tunnel ends with both. */
	return fp_side_finish(c, s);
}

static void
fp_accept(void)
{
	int fd = accept4(fp_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct fp_conn *c;

	if (fd == -1) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return;
		fp_die("accept4: %s", strerror(errno));
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fp_die("out of memory");
	c->id = ++fp_ids;
	c->s[0] = (struct fp_side){ .c = c, .fd = fd };
	c->s[1] = (struct fp_side){ .c = c, .fd = -1 };
	c->state = FP_REQ;
	fp_nconns++;
	/* The request is usually there already (as egressd, read it at once); the socket
	 * is added once, after the first read, so its edge is not one already read. */
	if (fp_side_read(&c->s[0], 0, false))
		fp_add(&c->s[0], EPOLLIN | EPOLLRDHUP | EPOLLET);
}

static void
fp_chan_read(bool block)
{
	uint64_t ack;
	ssize_t n = recv(fp_chan, &ack, sizeof(ack), block ? 0 : MSG_DONTWAIT);

	if (n == -1 && !block && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n == 0)
		exit(0);                /* the writer is gone: so is the run */
	if (n != (ssize_t)sizeof(ack))
		fp_die("the writer's channel: %s", strerror(errno));
	fp_acks(ack);
}

static void
fp_turn_end(void)
{
	bool wait = fp_batch[0] != 0;

	while (fp_dead != NULL) {
		struct fp_conn *c = fp_dead;

		fp_dead = c->next;
		free(c->s[0].pend);
		free(c->s[1].pend);
		free(c);
	}

	if (fp_blen > 1) {
		if (send(fp_chan, fp_batch, fp_blen, MSG_NOSIGNAL) != (ssize_t)fp_blen)
			fp_die("send to the writer: %s", strerror(errno));
		if (wait)
			fp_sent++;
		fp_blen = 1;
		fp_batch[0] = 0;
	}
	/* Nothing else could move: wait here, not in one more epoll_wait (egressd too). */
	while (fp_nheld > 0 && fp_nheld == fp_nconns)
		fp_chan_read(true);
}

static void __attribute__((noreturn))
fp_engine(void)
{
	struct epoll_event ev[64];

	if ((fp_ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		fp_die("epoll_create1: %s", strerror(errno));
#ifdef FLOOR_EGRESS
	if (fp_policy != NULL)
		fp_seccomp();
#endif
	fp_lside.fd = fp_lfd;
	fp_cside.fd = fp_chan;
	fp_add(&fp_lside, EPOLLIN);
	fp_add(&fp_cside, EPOLLIN);
	for (;;) {
		int n = epoll_wait(fp_ep, ev, 64, -1);

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			fp_die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct fp_side *s = ev[i].data.ptr;

			if (s == &fp_lside)
				fp_accept();
			else if (s != &fp_cside && s->c->closed)
				continue;       /* closed earlier in this turn */
			else if (s == &fp_cside)
				fp_chan_read(false);
			else if (s->out && (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) &&
			    !fp_side_out(s))
				continue;       /* the tunnel ended */
			else if (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				(void)fp_side_read(s, ev[i].events, false);
		}
		fp_turn_end();
	}
}

/* -k: the writer's MAC (the key's states made once) and digest, and the chain's head. */
static EVP_MAC_CTX *fp_mac;
static EVP_MD_CTX *fp_md;
static EVP_MD *fp_sha256;
static char fp_prev[65] = "0000000000000000000000000000000000000000000000000000000000000000";

static void
fp_key(const char *path)
{
	uint8_t key[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd == -1 ? -1 : read(fd, key, sizeof(key));
	EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_end()
	};

	if (n < 16)
		fp_die("%s: not a key", path);
	close(fd);
	if (hmac == NULL || (fp_mac = EVP_MAC_CTX_new(hmac)) == NULL ||
	    EVP_MAC_init(fp_mac, key, (size_t)n, params) != 1 ||
	    (fp_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL ||
	    (fp_md = EVP_MD_CTX_new()) == NULL)
		fp_die("libcrypto: HMAC-SHA256");
}

static void
fp_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
}

/* One record line (without its newline): its prev, its mac, then the chain moves on. */
static void
fp_seal(char *line, size_t len)
{
	static const char ctx[] = "egress-receipt-1";   /* MACed with its NUL */
	static const char pk[] = "\"prev\":\"sha256:", mk[] = ",\"mac\":\"hmac-sha256:";
	char *prev = memmem(line, len, pk, sizeof(pk) - 1);
	char *mac = memmem(line, len, mk, sizeof(mk) - 1);
	uint8_t d[32];
	size_t dl = 0;
	unsigned int hl = 0;

	if (prev == NULL || mac == NULL || (size_t)(line + len - mac) < sizeof(mk) - 1 + 64)
		fp_die("a record without its prev or mac");
	memcpy(prev + sizeof(pk) - 1, fp_prev, 64);
	if (EVP_MAC_init(fp_mac, NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(fp_mac, (const uint8_t *)ctx, sizeof(ctx)) != 1 ||
	    EVP_MAC_update(fp_mac, (const uint8_t *)line, (size_t)(mac - line)) != 1 ||
	    EVP_MAC_final(fp_mac, d, &dl, sizeof(d)) != 1)
		fp_die("libcrypto: HMAC-SHA256");
	fp_hex(d, sizeof(d), mac + sizeof(mk) - 1);
	if (EVP_DigestInit_ex2(fp_md, fp_sha256, NULL) != 1 ||
	    EVP_DigestUpdate(fp_md, line, len) != 1 || EVP_DigestFinal_ex(fp_md, d, &hl) != 1)
		fp_die("libcrypto: SHA-256");
	fp_hex(d, sizeof(d), fp_prev);
}

/* The writer: each batch to the file (one write), its acknowledgement when it wants one. */
static void __attribute__((noreturn))
fp_writer(int rfd)
{
	static char b[FP_BATCH];
	uint64_t seq = 0;

	for (;;) {
		ssize_t n = recv(fp_chan, b, sizeof(b), 0);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			exit(n == 0 ? 0 : 1);
		for (char *l = b + 1, *e; fp_mac != NULL && l < b + n; l = e + 1) {
			if ((e = memchr(l, '\n', (size_t)(b + n - l))) == NULL)
				fp_die("a batch that does not end a line");
			fp_seal(l, (size_t)(e - l));
		}
		if (write(rfd, b + 1, (size_t)n - 1) != n - 1)
			fp_die("write to the record file: %s", strerror(errno));
		if (b[0] != 0) {
			seq++;
			if (send(fp_chan, &seq, sizeof(seq), MSG_NOSIGNAL) != (ssize_t)sizeof(seq))
				fp_die("send to the engine: %s", strerror(errno));
		}
	}
}

int
main(int argc, char **argv)
{
	const char *path = NULL, *target = NULL, *rec = NULL, *key = NULL, *pol = NULL;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int o, sp[2], rfd;
	pid_t pid;
	char host[64];
	unsigned port;

	while ((o = getopt(argc, argv, "nWe:k:l:t:r:")) != -1) {
		switch (o) {
		case 'n': fp_guard = false; break;
		case 'W': fp_records = false; break;
		case 'k': key = optarg; break;
		case 'e': pol = optarg; break;
		case 'l': path = optarg; break;
		case 't': target = optarg; break;
		case 'r': rec = optarg; break;
		default: path = NULL; optind = argc; break;
		}
	}
	if (path == NULL || target == NULL || rec == NULL || optind != argc) {
		fprintf(stderr, "usage: floorproxy [-n] [-W] [-k KEYFILE] [-e POLICY] -l SOCKET "
		    "-t IPV4:PORT -r FILE\n");
		return 2;
	}
	if (pol != NULL) {
#ifdef FLOOR_EGRESS
		fp_load_policy(pol);
#else
		fp_die("-e: built without egressd's parsers (make bench/floorproxy has them)");
#endif
	}
	if (sscanf(target, "%63[0-9.]:%u", host, &port) != 2 || port == 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &fp_target.sin_addr) != 1)
		fp_die("target %s: want IPV4:PORT", target);
	fp_target.sin_family = AF_INET;
	fp_target.sin_port = htons((uint16_t)port);
	if (strlen(path) >= sizeof(sun.sun_path))
		fp_die("socket path too long");
	strcpy(sun.sun_path, path);
	if ((rfd = open(rec, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) == -1)
		fp_die("%s: %s", rec, strerror(errno));
	if ((fp_lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1 ||
	    (unlink(path), bind(fp_lfd, (struct sockaddr *)&sun, sizeof(sun))) == -1 ||
	    listen(fp_lfd, 4096) == -1)
		fp_die("%s: %s", path, strerror(errno));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		fp_die("socketpair: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	if ((pid = fork()) == -1)
		fp_die("fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		close(sp[0]);
		close(rfd);
		fp_chan = sp[1];
		fp_engine();
	}
	close(sp[1]);
	close(fp_lfd);
	fp_chan = sp[0];
	if (key != NULL)
		fp_key(key);            /* the writer's alone */
	fp_writer(rfd);
}
