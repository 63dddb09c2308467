/*
 * dnsstub.c: the stub resolver inside the sandbox (SPEC "Names and connections inside
 * the sandbox"). It listens on 127.0.0.53:53, UDP and TCP, reads each query with the
 * bounded parser of proto/dnswire.c, asks egressd the question (name, type) over the
 * pinned principal socket with the native question verb (docs/native.md, proto/native.c;
 * one question per connection) and answers from egressd's 18-byte answer: it knows no policy, keeps no
 * mapping and caches nothing. It trusts egressd's answers (through the pinned socket
 * only) and nothing that arrives on its own sockets, which any program in the sandbox may
 * write to.
 *
 * Bounds: DNSSTUB_SLOTS questions and TCP connections at once, UDP and TCP together; one
 * question at a time per TCP connection, and at most DNSSTUB_PER_PORT per UDP source
 * address and port (glibc and c-ares send A and AAAA at once from one socket: with one
 * per port the second waited for the resolver's 5 s retry). Nothing is queued: a UDP
 * question beyond either bound gets SERVFAIL at once, a retransmission (the id of a
 * question from that port still out) is dropped (its answer is on the way), and TCP
 * accepting pauses while the slots are full. Each question to egressd has a deadline
 * (DNSSTUB_FORWARD_MS, then SERVFAIL), each TCP connection an idle one.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common.h"
#include "dnsstub.h"
#include "dnswire.h"
#include "log.h"
#include "native.h"
#include "sandbox.h"

#define DNSSTUB_SLOTS 64             /* questions and TCP connections at once */
#define DNSSTUB_PER_PORT 4           /* UDP questions out at once from one client port */
#define DNSSTUB_FORWARD_MS 2000      /* egressd answers within this, else SERVFAIL */
#define DNSSTUB_TCP_IDLE_MS 10000    /* a TCP connection with no question is closed */
#define DNSSTUB_TCP_MSG_MAX 1024     /* a longer TCP query is not a query: closed */
#define DNSSTUB_UDP_MAX 1500         /* a datagram read; a query is far shorter */
#define DNSSTUB_BACKLOG 16
#define DNSSTUB_BIND_TRIES 50         /* port 53 in use: tried again this often, */
#define DNSSTUB_BIND_PAUSE_MS 20      /* this far apart (a second in all) */
#define DNSSTUB_FD_SCAN 1024         /* egress-launch holds only a few descriptors */

enum dnsstub_state {
	DNSSTUB_FREE,
	DNSSTUB_READING,             /* TCP: waiting for a query (length and message) */
	DNSSTUB_ASKING,              /* waiting for egressd's answer */
	DNSSTUB_WRITING,             /* TCP: sending the answer */
};

struct dnsstub_slot {
	enum dnsstub_state state;
	bool tcp;
	struct sockaddr_in peer;     /* UDP: where the answer goes */
	int cfd;                     /* TCP: the client, else -1 */
	uint8_t cbuf[2 + DNSSTUB_TCP_MSG_MAX];   /* TCP: the query read so far */
	size_t clen;
	uint8_t obuf[2 + DNSWIRE_ANSWER_MAX];    /* TCP: the answer being written */
	size_t olen, ooff;
	int efd;                     /* the question's connection to egressd, else -1 */
	uint8_t ebuf[EGRESS_NATIVE_ANSWER];
	size_t elen;
	struct dnswire_query q;
	struct event *cev, *eev, *timer;
};

static struct event_base *base;
static struct egress_pin pin;
static int udp_fd = -1, tcp_fd = -1;
static struct event *ev_udp, *ev_tcp;
static struct egress_accept_pause accept_pause;
static struct dnsstub_slot slots[DNSSTUB_SLOTS];
static size_t slots_used;            /* bound: DNSSTUB_SLOTS */

static void dnsstub_tcp_cb(evutil_socket_t, short, void *);

static void
dnsstub_listen(bool on, void *arg)
{
	(void)arg;
	if (on && slots_used < DNSSTUB_SLOTS)
		event_add(ev_tcp, NULL);
	else
		event_del(ev_tcp);
}

static void
dnsstub_timer_ms(struct dnsstub_slot *s, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(s->timer, &tv);
}

static void
dnsstub_end_question(struct dnsstub_slot *s)
{
	if (s->efd != -1) {
		event_del(s->eev);
		close(s->efd);
		s->efd = -1;
	}
	evtimer_del(s->timer);
}

static void
dnsstub_free(struct dnsstub_slot *s)
{
	dnsstub_end_question(s);
	if (s->cfd != -1) {
		event_del(s->cev);
		close(s->cfd);
		s->cfd = -1;
	}
	s->state = DNSSTUB_FREE;
	slots_used--;
	if (!accept_pause.paused)
		event_add(ev_tcp, NULL);
}

/* Sends the answer to s's query with rcode (and the address, when there is one). */
static void
dnsstub_reply(struct dnsstub_slot *s, uint8_t rcode, const uint8_t *addr, uint32_t ttl)
{
	size_t n = dnswire_answer(&s->q, rcode, addr, ttl, s->obuf + 2);

	dnsstub_end_question(s);
	if (!s->tcp) {
		/* A full socket buffer drops the answer, as the network would: the client
		 * asks again. */
		(void)sendto(udp_fd, s->obuf + 2, n, MSG_DONTWAIT, (struct sockaddr *)&s->peer,
		    sizeof(s->peer));
		dnsstub_free(s);
		return;
	}
	s->obuf[0] = (uint8_t)(n >> 8);
	s->obuf[1] = (uint8_t)n;
	s->olen = n + 2;
	s->ooff = 0;
	s->state = DNSSTUB_WRITING;
	event_del(s->cev);
	event_assign(s->cev, base, s->cfd, EV_WRITE | EV_PERSIST, dnsstub_tcp_cb, s);
	event_add(s->cev, NULL);
	dnsstub_timer_ms(s, DNSSTUB_TCP_IDLE_MS);
}

static void
dnsstub_egress_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dnsstub_slot *s = arg;
	struct native_answer a;
	ssize_t n;

	(void)what;
	n = read(fd, s->ebuf + s->elen, sizeof(s->ebuf) - s->elen);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* Closed before 18 bytes: an older egressd, or one refusing the framing. */
		dnsstub_reply(s, DNSWIRE_SERVFAIL, NULL, 0);
		return;
	}
	s->elen += (size_t)n;
	if (s->elen < sizeof(s->ebuf))
		return;
	if (native_answer_parse(s->ebuf, &a) == -1 || a.rcode > DNSWIRE_NXDOMAIN) {
		dnsstub_reply(s, DNSWIRE_SERVFAIL, NULL, 0);
		return;
	}
	dnsstub_reply(s, a.rcode, a.count == 1 ? a.addr : NULL, a.ttl);
}

/* The query in buf: answered at once (errors, no text form), or asked of egressd. */
static void
dnsstub_query(struct dnsstub_slot *s, const uint8_t *buf, size_t len)
{
	uint8_t req[EGRESS_NATIVE_REQUEST_MAX];
	size_t reqlen;

	switch (dnswire_parse(buf, len, &s->q)) {
	case DNSWIRE_DROP:
		/* No answer (a response, or no header); on TCP the stream is not a client's. */
		dnsstub_free(s);
		return;
	case DNSWIRE_ERROR:
		dnsstub_reply(s, s->q.rcode, NULL, 0);
		return;
	case DNSWIRE_QUERY:
		break;
	}
	if (!s->q.text_ok || (reqlen = native_request_build(EGRESS_NATIVE_QUESTION,
	    s->q.qtype, s->q.text, s->q.textlen, req)) == 0) {
		/* No name egressd could allow (the root, a label with '.' or NUL). */
		dnsstub_reply(s, DNSWIRE_NXDOMAIN, NULL, 0);
		return;
	}
	s->state = DNSSTUB_ASKING;
	if (s->tcp)
		event_del(s->cev);   /* one question at a time per connection */
	if ((s->efd = egress_pin_connect(&pin)) == -1 ||
	    write(s->efd, req, reqlen) != (ssize_t)reqlen) {
		/* 264 bytes into a fresh local stream: it fits, or egressd is gone. */
		dnsstub_reply(s, DNSWIRE_SERVFAIL, NULL, 0);
		return;
	}
	s->elen = 0;
	event_assign(s->eev, base, s->efd, EV_READ | EV_PERSIST, dnsstub_egress_cb, s);
	event_add(s->eev, NULL);
	dnsstub_timer_ms(s, DNSSTUB_FORWARD_MS);
}

static void
dnsstub_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dnsstub_slot *s = arg;

	(void)fd;
	(void)what;
	if (s->state == DNSSTUB_ASKING)
		dnsstub_reply(s, DNSWIRE_SERVFAIL, NULL, 0);
	else
		dnsstub_free(s);     /* an idle or stuck TCP client */
}

static struct dnsstub_slot *
dnsstub_slot_new(bool tcp)
{
	for (size_t i = 0; i < DNSSTUB_SLOTS; i++) {
		struct dnsstub_slot *s = &slots[i];

		if (s->state != DNSSTUB_FREE)
			continue;
		s->tcp = tcp;
		s->cfd = -1;
		s->efd = -1;
		s->clen = 0;
		s->state = DNSSTUB_READING;
		if (++slots_used == DNSSTUB_SLOTS)
			event_del(ev_tcp);
		return s;
	}
	return NULL;
}

static void
dnsstub_udp_cb(evutil_socket_t fd, short what, void *arg)
{
	uint8_t buf[DNSSTUB_UDP_MAX];
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	struct dnsstub_slot *s;
	size_t same_port = 0;
	uint16_t id;
	ssize_t n;

	(void)what;
	(void)arg;
	n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&peer, &plen);
	if (n < 0 || plen != sizeof(peer))
		return;
	if (n < 2)
		return;              /* not even an id: nothing to answer */
	id = (uint16_t)(buf[0] << 8 | buf[1]);
	for (size_t i = 0; i < DNSSTUB_SLOTS; i++)
		if (slots[i].state != DNSSTUB_FREE && !slots[i].tcp &&
		    slots[i].peer.sin_port == peer.sin_port &&
		    slots[i].peer.sin_addr.s_addr == peer.sin_addr.s_addr) {
			if (slots[i].q.id == id)
				return;      /* a retransmission: its answer is on the way */
			same_port++;
		}
	if (same_port >= DNSSTUB_PER_PORT || (s = dnsstub_slot_new(false)) == NULL) {
		struct dnswire_query q;
		uint8_t out[DNSWIRE_ANSWER_MAX];

		/* Full, or this port has its share out: SERVFAIL now rather than a queue. */
		if (dnswire_parse(buf, (size_t)n, &q) != DNSWIRE_DROP)
			(void)sendto(fd, out, dnswire_answer(&q, DNSWIRE_SERVFAIL, NULL, 0, out),
			    MSG_DONTWAIT, (struct sockaddr *)&peer, plen);
		return;
	}
	s->peer = peer;
	dnsstub_query(s, buf, (size_t)n);
}

static void
dnsstub_tcp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dnsstub_slot *s = arg;
	ssize_t n;

	(void)what;
	if (s->state == DNSSTUB_WRITING) {
		n = write(fd, s->obuf + s->ooff, s->olen - s->ooff);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			dnsstub_free(s);
			return;
		}
		s->ooff += (size_t)n;
		if (s->ooff < s->olen)
			return;
		/* Answered: the connection may ask its next question. */
		s->state = DNSSTUB_READING;
		s->clen = 0;
		event_del(s->cev);
		event_assign(s->cev, base, fd, EV_READ | EV_PERSIST, dnsstub_tcp_cb, s);
		event_add(s->cev, NULL);
		dnsstub_timer_ms(s, DNSSTUB_TCP_IDLE_MS);
		return;
	}
	{
		size_t want = s->clen < 2 ? 2 - s->clen :
		    2 + (size_t)(s->cbuf[0] << 8 | s->cbuf[1]) - s->clen;

		n = read(fd, s->cbuf + s->clen, want);
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		dnsstub_free(s);
		return;
	}
	s->clen += (size_t)n;
	if (s->clen < 2)
		return;
	{
		size_t mlen = (size_t)(s->cbuf[0] << 8 | s->cbuf[1]);

		if (mlen > DNSSTUB_TCP_MSG_MAX || mlen == 0) {
			dnsstub_free(s);
			return;
		}
		if (s->clen < 2 + mlen)
			return;
		dnsstub_query(s, s->cbuf + 2, mlen);
	}
}

static void
dnsstub_accept_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dnsstub_slot *s;
	int cfd;

	(void)what;
	(void)arg;
	if ((cfd = egress_accept(fd, &accept_pause)) == -1)
		return;
	if ((s = dnsstub_slot_new(true)) == NULL) {
		close(cfd);          /* not reached: accepting is off while the slots are full */
		return;
	}
	s->cfd = cfd;
	event_assign(s->cev, base, cfd, EV_READ | EV_PERSIST, dnsstub_tcp_cb, s);
	event_add(s->cev, NULL);
	dnsstub_timer_ms(s, DNSSTUB_TCP_IDLE_MS);
}

static void __attribute__((noreturn))
dnsstub_serve(void)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 || sandbox_drop_caps() == -1 ||
	    sandbox_no_new_privs() == -1) {
		log_warnx("dns stub: cannot confine itself");
		_exit(1);
	}
	if ((base = event_base_new()) == NULL)
		_exit(1);
	/* Everything allocated before the filter and never after (bounded, no surprises). */
	for (size_t i = 0; i < DNSSTUB_SLOTS; i++) {
		slots[i].cfd = slots[i].efd = -1;
		if ((slots[i].cev = event_new(base, -1, 0, NULL, NULL)) == NULL ||
		    (slots[i].eev = event_new(base, -1, 0, NULL, NULL)) == NULL ||
		    (slots[i].timer = evtimer_new(base, dnsstub_timeout_cb, &slots[i])) == NULL)
			_exit(1);
	}
	ev_udp = event_new(base, udp_fd, EV_READ | EV_PERSIST, dnsstub_udp_cb, NULL);
	ev_tcp = event_new(base, tcp_fd, EV_READ | EV_PERSIST, dnsstub_accept_cb, NULL);
	accept_pause.base = base;
	accept_pause.listen = dnsstub_listen;
	if (ev_udp == NULL || ev_tcp == NULL || egress_accept_pause_init(&accept_pause) == -1)
		_exit(1);
	if (sandbox_relay_filter() == -1) {
		log_warnx("dns stub: cannot install its filter");
		_exit(1);
	}
	event_add(ev_udp, NULL);
	event_add(ev_tcp, NULL);
	event_base_dispatch(base);
	_exit(0);
}

static int
dnsstub_socket(int type, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	int fd, r, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(DNSSTUB_PORT);
	inet_pton(AF_INET, DNSSTUB_ADDR, &sin.sin_addr);
	if ((fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "dns stub: socket: %s", strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/*
	 * In use: in a sandbox's fresh network namespace only by the stub of an
	 * egress-launch that has just exited there (its child is killed with it, and the
	 * kill takes a moment); a bounded wait for it, not a loop.
	 */
	for (int i = 0; (r = bind(fd, (struct sockaddr *)&sin, sizeof(sin))) == -1 &&
	    errno == EADDRINUSE && i < DNSSTUB_BIND_TRIES; i++)
		usleep(DNSSTUB_BIND_PAUSE_MS * 1000);
	if (r == -1 || (type == SOCK_STREAM && listen(fd, DNSSTUB_BACKLOG) == -1)) {
		snprintf(err, errlen, "dns stub: cannot listen on %s:%d/%s: %s%s", DNSSTUB_ADDR,
		    DNSSTUB_PORT, type == SOCK_STREAM ? "tcp" : "udp", strerror(errno),
		    errno == EACCES ? " (port 53 needs CAP_NET_BIND_SERVICE; or --no-dns)" : "");
		close(fd);
		return -1;
	}
	return fd;
}

int
dnsstub_start(const char *egress, const char *expect, char *err, size_t errlen)
{
	char why[256];
	pid_t pid, parent;

	if (egress_pin_open(&pin, egress, expect, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "dns stub: %s", why);
		return -1;
	}
	if ((udp_fd = dnsstub_socket(SOCK_DGRAM, err, errlen)) == -1 ||
	    (tcp_fd = dnsstub_socket(SOCK_STREAM, err, errlen)) == -1)
		goto fail;
	parent = getpid();
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "dns stub: fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		/*
		 * The stub dies with the launcher's process, which becomes the workload. If
		 * that process is gone already (a command not found exits at once), the death
		 * signal was armed too late: the stub would live on and hold port 53.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 || getppid() != parent)
			_exit(1);
		/* Off the workload's terminal input, fd 4 (the broker's channel) and every
		 * descriptor of egress-launch's (--status-fd, --env-fd): only stderr and its
		 * own three stay. Bound: descriptors below DNSSTUB_FD_SCAN. */
		close(0);
		for (int fd = 3; fd < DNSSTUB_FD_SCAN; fd++)
			if (fd != udp_fd && fd != tcp_fd && fd != pin.fd)
				close(fd);
		dnsstub_serve();
	}
	close(udp_fd);
	close(tcp_fd);
	close(pin.fd);
	return 0;
fail:
	if (udp_fd != -1)
		close(udp_fd);
	close(pin.fd);
	return -1;
}
