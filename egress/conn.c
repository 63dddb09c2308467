/*
 * conn.c: one principal connection, from the first byte to the last receipt.
 *
 *   sniff -> frontend parser (HTTP, SOCKS5, SOCKS4) -> quotas -> policy -> resolve
 *   (c-ares) -> CNAME chain against deny rules -> classify every answer -> pin ->
 *   connect to pinned addresses (families interleaved, 250 ms stagger) -> reply -> open
 *   receipt -> relay (bounded buffers, half-close, idle timeout, byte quota) -> close
 *
 * A target that is one of the principal's synthetic addresses (the DNS verb) becomes its
 * name again in conn_target, for every frontend, before anything else looks at it. The
 * DNS verb itself (conn_question) is answered from the policy alone: no resolver hears
 * of the name.
 *
 * Every refusal is a deny receipt written before the client hears the answer; every
 * tunnel has an open and a close. What the client sent is never trusted beyond its
 * parse: the identity is the listener the connection arrived on.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "egressd.h"
#include "tls.h"

enum conn_state {
	CS_SNIFF = 0,
	CS_HTTP,
	CS_SOCKS5,
	CS_SOCKS4,
	CS_NATIVE,
	CS_RESOLVE,
	CS_CONNECT,
	CS_GUARD,                    /* tunnel up, client bytes held for the SNI guard */
	CS_RELAY,
	CS_DRAIN,                    /* an error answer is being written, then close */
};

enum conn_frontend {
	FE_NONE = 0,
	FE_HTTP_CONNECT,
	FE_HTTP_FORWARD,
	FE_SOCKS5,
	FE_SOCKS4,
	FE_NATIVE,
	FE_DNS,                      /* the native connector's question verb */
	FE_TRANSPARENT,              /* its transparent verb: egress-relay for the workload */
};

static const char *const frontend_names[] = {
	[FE_NONE] = NULL,
	[FE_HTTP_CONNECT] = "http-connect",
	[FE_HTTP_FORWARD] = "http-forward",
	[FE_SOCKS5] = "socks5",
	[FE_SOCKS4] = "socks4",
	[FE_NATIVE] = "native",
	[FE_DNS] = "dns",
	[FE_TRANSPARENT] = "transparent",
};

struct conn;

struct attempt {
	int fd;
	struct event *ev;
	struct addr addr;
	struct conn *c;
};

struct conn {
	TAILQ_ENTRY(conn) entry;
	struct principal *p;
	char id[24];
	enum conn_state state;
	enum conn_frontend fe;
	struct bufferevent *cbev;    /* client (the principal socket) */
	struct bufferevent *ubev;    /* upstream, once connected */
	struct event *timer;         /* handshake, connect, idle, drain deadlines */
	struct socks5 s5;
	struct host host;
	uint16_t port;
	bool has_host;
	bool has_port;               /* port valid without a host (a bad-host refusal) */
	struct dns_query *dq;
	struct addr addrs[EGRESSD_MAX_ADDRS];
	size_t naddrs, next;
	struct attempt att[EGRESSD_MAX_ADDRS];
	size_t natt, failed;
	int last_errno;
	struct event *stagger;
	char addr_text[EGRESS_ADDRSTRLEN];
	bool counted;                /* in p->live */
	bool opened;                 /* open receipt written */
	uint64_t bytes_up, bytes_down;
	int64_t start_ms;            /* CLOCK_MONOTONIC */
	int64_t last_activity;       /* CLOCK_MONOTONIC ms */
	bool c_eof, u_eof, c_shut, u_shut;
	const char *first_eof;
	/* HTTP: the head as it arrives, parsed where the last read stopped. */
	struct conn_http *http;
	/* HTTP forwarding: the head to send upstream, then exactly one body, every client
	 * byte after the head fed once to the framing that says where the body ends. */
	uint8_t *fwd_head;
	size_t fwd_head_len;
	struct http_framing framing;
	/* The fast relay: our own reads, 64 KiB at a time, written through when the
	 * other side's output is empty (CONNECT and SOCKS tunnels, once the guard is done). */
	struct event *fast[2];       /* read events: [0] client, [1] upstream */
	/* SNI guard: allocated while it inspects, freed when it ends. */
	struct conn_guard *guard;
	char *sni;                   /* the server_name of the first ClientHello */
};

/* A request head being received: the parser's state and the request it fills. */
struct conn_http {
	struct http_head head;
	struct http_request req;
};

/*
 * The client bytes a guard may hold: one ClientHello and its record headers, and the
 * ChangeCipherSpec records a client may send before it (tls_scan holds them with the
 * hello, so that nothing flows before the hello is judged; they count against this).
 */
#define CONN_GUARD_HOLD (EGRESS_TLS_HELLO_MAX + 1024)

struct conn_guard {
	bool first;                  /* nothing classified yet */
	bool held;                   /* the handshake deadline runs for held bytes */
	bool hello_passed;           /* a ClientHello passed: what follows depends on the server */
	int hrr;                     /* -1 unknown, 0 no, 1 the server asked for a retry */
	uint8_t server[EGRESS_TLS_SERVER_HEAD];
	size_t nserver;
	uint8_t scratch[EGRESS_TLS_SCRATCH];
};

static unsigned nconns;
static struct conn *conn_guard_pending;  /* held client bytes to judge after a server read */
static void conn_free(struct conn *c);
static void conn_guard_read(struct bufferevent *bev, void *arg);
static void conn_guard_refuse(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len);
static void conn_close(struct conn *c, enum egress_reason reason, const char *cause);
static void conn_client_read(struct bufferevent *bev, void *arg);
static void conn_client_event(struct bufferevent *bev, short what, void *arg);
static void conn_connect_next(struct conn *c);
static void conn_deny_private(struct conn *c, const struct addr *a,
    const struct addr_verdict *v);

unsigned
conn_count(void)
{
	return nconns;
}

/* A principal's connections, in any phase: each still owes a receipt. */
size_t
conn_count_principal(const struct principal *p)
{
	const struct conn *c;
	size_t n = 0;

	TAILQ_FOREACH(c, &p->conns, entry)
		n++;
	return n;
}

static int64_t
conn_elapsed_ms(const struct conn *c)
{
	return egress_mono_ms() - c->start_ms;
}

static const struct policy_settings *
conn_settings(const struct conn *c)
{
	return policy_settings(c->p->policy);
}

/* The port for receipts and the log; -1 when the request has none (a question has none). */
static int
conn_port(const struct conn *c)
{
	return c->fe != FE_DNS && (c->has_host || c->has_port) ? c->port : -1;
}

static void
conn_receipt_base(const struct conn *c, struct receipt *r, enum receipt_event ev)
{
	memset(r, 0, sizeof(*r));
	r->event = ev;
	r->id = c->id;
	r->principal = c->p->name;
	r->policy = c->p->digest;
	r->frontend = frontend_names[c->fe];
	r->host = c->has_host ? c->host.name : NULL;
	r->port = conn_port(c);
	r->addr = c->addr_text[0] ? c->addr_text : NULL;
	r->sni = c->sni;
	r->bytes_up = r->bytes_down = r->duration_ms = -1;
}

static void
conn_log(const struct conn *c, const char *event, enum egress_reason reason, const char *why)
{
	char wbuf[256];

	char port[8];

	snprintf(port, sizeof(port), "%u", (unsigned)c->port);
	log_info("event=%s principal=%s id=%s frontend=%s host=%s port=%s addr=%s reason=%s%s%s",
	    event, c->p->name, c->id, frontend_names[c->fe] ? frontend_names[c->fe] : "-",
	    c->has_host ? c->host.name : "-", conn_port(c) >= 0 ? port : "-",
	    c->addr_text[0] ? c->addr_text : "-", egress_reason_name(reason),
	    why ? " why=" : "", why ? log_value(why, wbuf, sizeof(wbuf)) : "");
}

/* After an error answer is flushed the connection closes; a client that never reads
 * is cut after a short while. */
static void
conn_drain_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	conn_free(c);
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg);

static void
conn_set_timer(struct conn *c, unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	evtimer_add(c->timer, &tv);
}

/* Sends the answer the client is owed (if any), then closes once it is flushed; a client
 * that does not read is cut after a few seconds. */
static void
conn_answer_and_close(struct conn *c, const void *out, size_t n)
{
	if (n == 0 || c->cbev == NULL) {
		conn_free(c);
		return;
	}
	c->state = CS_DRAIN;
	bufferevent_disable(c->cbev, EV_READ);
	bufferevent_setcb(c->cbev, NULL, conn_drain_write, conn_client_event, c);
	bufferevent_setwatermark(c->cbev, EV_WRITE, 0, 0);
	bufferevent_write(c->cbev, out, n);
	conn_set_timer(c, 5);
}

/* The deny receipt and log line, or a count when denials come too fast (SPEC). */
static void
conn_deny_receipt(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len)
{
	struct receipt r;

	c->p->total_denied++;
	c->p->denied[reason]++;
	principal_tally(c->p, c->has_host ? c->host.name : NULL, conn_port(c), false, reason, 1,
	    0, 0);
	if (principal_deny_collapse(c->p, reason, c->has_host ? c->host.name : NULL,
	    conn_port(c), frontend_names[c->fe]))
		return;
	conn_receipt_base(c, &r, RECEIPT_DENY);
	r.reason = reason;
	r.raw = raw;
	r.raw_len = raw_len;
	r.duration_ms = conn_elapsed_ms(c);
	receipt_write(&r);
	conn_log(c, "deny", reason, why);
}

/*
 * Refuses the request: a deny receipt first, then the answer the frontend owes (HTTP
 * status, SOCKS reply), then close.
 */
static void
conn_deny_as(struct conn *c, enum egress_reason reason, const char *why, const uint8_t *raw,
    size_t raw_len, int http_status, int socks_rep, bool now)
{
	uint8_t out[512];
	size_t n = 0;

	conn_deny_receipt(c, reason, why, raw, raw_len);

	switch (c->fe) {
	case FE_HTTP_CONNECT:
	case FE_HTTP_FORWARD:
	case FE_NONE:
		if (http_status == 0)
			http_status = egress_reason_http_status(reason);
		if (http_status != 0)
			n = http_error_response(http_status, reason, out, sizeof(out));
		break;
	case FE_SOCKS5:
		if (socks_rep < 0)
			socks_rep = egress_reason_socks5(reason);
		if (socks_rep >= 0)
			n = socks5_reply((uint8_t)socks_rep, out);
		break;
	case FE_SOCKS4:
		if (socks_rep < 0)
			socks_rep = egress_reason_socks4(reason);
		if (socks_rep >= 0)
			n = socks4_reply((uint8_t)socks_rep, out);
		break;
	case FE_NATIVE:
	case FE_TRANSPARENT:
		n = native_reply(reason, out);
		break;
	case FE_DNS:
		/* A refused question is still answered: NXDOMAIN, FORMERR or SERVFAIL. */
		n = native_answer(reason, NULL, 0, out);
		break;
	}
	if (now && n > 0 && c->cbev != NULL) {
		/* No loop turn left (principal removed, daemon stopping): best effort. */
		send(bufferevent_getfd(c->cbev), out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		n = 0;
	}
	conn_answer_and_close(c, out, n);
}

static void
conn_deny(struct conn *c, enum egress_reason reason, const char *why, const uint8_t *raw,
    size_t raw_len, int http_status, int socks_rep)
{
	conn_deny_as(c, reason, why, raw, raw_len, http_status, socks_rep, false);
}

/* --- quotas ---------------------------------------------------------------------- */

static bool
conn_quota_ok(struct conn *c)
{
	struct principal *p = c->p;
	const struct policy_settings *s = conn_settings(c);
	time_t now = time(NULL);

	if (p->live >= s->quota_connections) {
		conn_deny(c, EGRESS_QUOTA_CONNECTIONS, "concurrent tunnels at the limit", NULL, 0,
		    0, -1);
		return false;
	}
	if (s->quota_bytes != EGRESS_UNLIMITED && p->bytes >= s->quota_bytes) {
		conn_deny(c, EGRESS_QUOTA_BYTES, "byte budget spent", NULL, 0, 0, -1);
		return false;
	}
	if (s->quota_rate != EGRESS_UNLIMITED) {
		if (p->rate_second != now) {
			p->rate_second = now;
			p->rate_count = 0;
		}
		if (p->rate_count >= s->quota_rate) {
			conn_deny(c, EGRESS_QUOTA_RATE, "new tunnels per second over the limit",
			    NULL, 0, 0, -1);
			return false;
		}
		p->rate_count++;
	}
	p->live++;
	c->counted = true;
	return true;
}

/* --- relay ----------------------------------------------------------------------- */

static void
conn_maybe_finish(struct conn *c)
{
	if (c->c_shut && c->u_shut) {
		conn_close(c, EGRESS_ALLOWED, c->first_eof);
		return;
	}
	/* Forwarding: the response is complete when the upstream closes and it is flushed. */
	if (c->fe == FE_HTTP_FORWARD && c->u_eof &&
	    evbuffer_get_length(bufferevent_get_output(c->cbev)) == 0)
		conn_close(c, EGRESS_ALLOWED, c->first_eof);
}

/* Half-close: once everything from the closed side is delivered, shut the other way. */
static void
conn_propagate_eof(struct conn *c)
{
	if (c->c_eof && !c->u_shut && c->fe != FE_HTTP_FORWARD &&
	    evbuffer_get_length(bufferevent_get_output(c->ubev)) == 0) {
		shutdown(bufferevent_getfd(c->ubev), SHUT_WR);
		c->u_shut = true;
	}
	if (c->u_eof && !c->c_shut &&
	    evbuffer_get_length(bufferevent_get_output(c->cbev)) == 0) {
		shutdown(bufferevent_getfd(c->cbev), SHUT_WR);
		c->c_shut = true;
	}
	conn_maybe_finish(c);
}

/* The forwarded request's body has ended (or broke): no client byte goes up any more. */
static bool
conn_forward_done(const struct conn *c)
{
	return c->fe == FE_HTTP_FORWARD && c->framing.status != PROTO_NEED_MORE;
}

/* Extents of the client's input handed to the framing per evbuffer_peek. */
#define CONN_FORWARD_IOV 8

/*
 * Feeds the n bytes at the start of in to the body framing; *n becomes how many of them
 * belong to the body. No byte in `in` was fed before: the caller moves the *n taken and,
 * once the body ended, drains the rest. The bytes are read in place, never copied.
 */
static enum proto_status
conn_forward_take(struct conn *c, struct evbuffer *in, size_t *n, struct proto_error *err)
{
	struct evbuffer_iovec v[CONN_FORWARD_IOV];
	struct evbuffer_ptr pos;
	enum proto_status st = c->framing.status;
	size_t avail = *n, total = 0, len, taken;
	int k, i;

	memset(err, 0, sizeof(*err));
	/* Each pass takes at least one byte or ends: at most avail passes. */
	while (total < avail && st == PROTO_NEED_MORE) {
		if (evbuffer_ptr_set(in, &pos, total, EVBUFFER_PTR_SET) == -1)
			break;
		k = evbuffer_peek(in, (ev_ssize_t)(avail - total), &pos, v, CONN_FORWARD_IOV);
		if (k <= 0)
			break;
		for (i = 0; i < k && i < CONN_FORWARD_IOV && st == PROTO_NEED_MORE; i++) {
			len = v[i].iov_len < avail - total ? v[i].iov_len : avail - total;
			st = http_framing_take(&c->framing, v[i].iov_base, len, &taken, err);
			total += taken;
		}
	}
	*n = total;                     /* what was not walked stays, not fed yet */
	return st;
}

/*
 * The open receipt, written when bytes may start to flow: at once without the SNI guard;
 * with it, when the guard passes the client's first bytes or before the first upstream
 * byte reaches the client (server-first protocols), whichever comes first.
 */
static bool
conn_write_open(struct conn *c)
{
	struct receipt r;

	if (c->opened)
		return true;
	conn_receipt_base(c, &r, RECEIPT_OPEN);
	r.reason = EGRESS_ALLOWED;
	if (receipt_write(&r) == -1)
		return false;
	c->opened = true;
	c->p->total_allowed++;
	conn_log(c, "open", EGRESS_ALLOWED, NULL);
	return true;
}

/*
 * The one place bytes are counted: n bytes moved up (client to upstream) or down. They
 * count for the tunnel's receipt and against the principal's byte budget, whichever path
 * moved them (the bufferevent relay, the fast relay, the SNI guard's release, the
 * forwarded head); the move that crosses the budget closes the tunnel (quota-bytes).
 * Returns false when the connection was closed.
 */
static bool
conn_account(struct conn *c, bool up, size_t n)
{
	const struct policy_settings *s = conn_settings(c);

	if (up)
		c->bytes_up += (uint64_t)n;
	else
		c->bytes_down += (uint64_t)n;
	c->p->bytes += (uint64_t)n;
	c->last_activity = egress_mono_ms();
	if (s->quota_bytes != EGRESS_UNLIMITED && c->p->bytes > s->quota_bytes) {
		conn_close(c, EGRESS_QUOTA_BYTES, "quota-bytes");
		return false;
	}
	return true;
}

/* Moves what src has to the other side; false when the connection was closed. */
static bool
conn_relay_move(struct conn *c, struct bufferevent *src)
{
	bool up = src == c->cbev;
	struct bufferevent *dst = up ? c->ubev : c->cbev;
	struct evbuffer *in = bufferevent_get_input(src), *out = bufferevent_get_output(dst);
	size_t n = evbuffer_get_length(in);
	int moved;

	if (up && conn_forward_done(c)) {
		/* Exactly one request: what follows the body is never forwarded. */
		evbuffer_drain(in, n);
		bufferevent_disable(c->cbev, EV_READ);
		return true;
	}
	if (n == 0)
		return true;
	if (up && c->guard != NULL)
		return true;            /* held for the SNI guard; it releases what passes */
	if (!up && c->guard != NULL && c->guard->hello_passed && c->guard->hrr < 0) {
		/* Note the server's first bytes: is it asking for a second ClientHello? */
		struct conn_guard *g = c->guard;
		size_t want = sizeof(g->server) - g->nserver;

		g->nserver += (size_t)evbuffer_copyout(in, g->server + g->nserver,
		    want < n ? want : n);
		g->hrr = tls_server_hrr(g->server, g->nserver);
		if (g->hrr >= 0 && evbuffer_get_length(bufferevent_get_input(c->cbev)) > 0)
			conn_guard_pending = c;
	}
	if (!c->opened && !conn_write_open(c)) {
		conn_close(c, EGRESS_SHUTDOWN, "error");
		return false;
	}
	if (up && c->fe == FE_HTTP_FORWARD) {
		/* Fed right before the move: every byte fed is moved or drained below. */
		struct proto_error err;

		if (conn_forward_take(c, in, &n, &err) == PROTO_ERROR) {
			conn_log(c, "forward", EGRESS_MALFORMED_REQUEST, err.why);
			conn_close(c, EGRESS_MALFORMED_REQUEST, "error");
			return false;
		}
		if (conn_forward_done(c)) {
			bufferevent_disable(c->cbev, EV_READ);
			if (n == 0) {
				evbuffer_drain(in, evbuffer_get_length(in));
				return true;
			}
		}
		if (n == 0)
			return true;
	}
	moved = evbuffer_remove_buffer(in, out, n);
	if (moved <= 0)
		return true;
	if (up && conn_forward_done(c))
		evbuffer_drain(in, evbuffer_get_length(in));
	if (!conn_account(c, up, (size_t)moved))
		return false;
	/* Backpressure: a slow reader on dst pauses src; dst's write callback resumes it. */
	if (evbuffer_get_length(out) >= EGRESSD_RELAY_BUF) {
		bufferevent_disable(src, EV_READ);
		bufferevent_setwatermark(dst, EV_WRITE, EGRESSD_RELAY_BUF / 2, 0);
	}
	return true;
}

static void
conn_relay_read(struct bufferevent *src, void *arg)
{
	struct conn *c = arg;

	if (!conn_relay_move(c, src))
		return;
	/* The server's answer is known now: judge the client bytes held meanwhile. */
	if (conn_guard_pending == c) {
		conn_guard_pending = NULL;
		if (c->guard != NULL)
			conn_guard_read(c->cbev, c);
	}
}

static void
conn_relay_write(struct bufferevent *dst, void *arg)
{
	struct conn *c = arg;
	bool to_up = dst == c->ubev;
	struct bufferevent *src = to_up ? c->cbev : c->ubev;
	bool src_eof = to_up ? c->c_eof : c->u_eof;

	bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
	if (!src_eof && !(to_up && conn_forward_done(c))) {
		if (c->fast[to_up ? 0 : 1] != NULL)
			event_add(c->fast[to_up ? 0 : 1], NULL);
		else
			bufferevent_enable(src, EV_READ);
	}
	conn_propagate_eof(c);
}

/*
 * The fast relay. libevent 2.1 reads at most 4 KiB per call (EVBUFFER_MAX_READ), a
 * syscall and a wake-up per page of a bulk tunnel; here each read takes up to the relay
 * bound into one scratch buffer, and goes straight to the other socket when nothing is
 * queued there. What does not fit is queued in the other side's bufferevent, whose
 * bound pauses this side exactly as before.
 */
static uint8_t conn_scratch[EGRESSD_RELAY_BUF];

static void
conn_fast_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	bool up = fd == bufferevent_getfd(c->cbev);
	struct bufferevent *dst = up ? c->ubev : c->cbev;
	struct evbuffer *out = bufferevent_get_output(dst);
	size_t queued = evbuffer_get_length(out), room;
	ssize_t n, w = 0;

	(void)what;
	if (queued >= EGRESSD_RELAY_BUF) {
		event_del(c->fast[up ? 0 : 1]);
		bufferevent_setwatermark(dst, EV_WRITE, EGRESSD_RELAY_BUF / 2, 0);
		return;
	}
	room = EGRESSD_RELAY_BUF - queued;
	n = read(fd, conn_scratch, room);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		conn_close(c, EGRESS_ALLOWED, errno == ECONNRESET ?
		    (up ? "client-reset" : "upstream-reset") : "error");
		return;
	}
	if (n == 0) {
		event_del(c->fast[up ? 0 : 1]);
		if (up)
			c->c_eof = true;
		else
			c->u_eof = true;
		if (c->first_eof == NULL)
			c->first_eof = up ? "client-eof" : "upstream-eof";
		conn_propagate_eof(c);
		return;
	}
	if (queued == 0) {
		w = send(bufferevent_getfd(dst), conn_scratch, (size_t)n, MSG_NOSIGNAL |
		    MSG_DONTWAIT);
		if (w < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				conn_close(c, EGRESS_ALLOWED, errno == EPIPE ||
				    errno == ECONNRESET ? (up ? "upstream-reset" : "client-reset") :
				    "error");
				return;
			}
			w = 0;
		}
	}
	if (w < n)
		evbuffer_add(out, conn_scratch + w, (size_t)(n - w));
	if (!conn_account(c, up, (size_t)n))
		return;
	if (evbuffer_get_length(out) >= EGRESSD_RELAY_BUF) {
		event_del(c->fast[up ? 0 : 1]);
		bufferevent_setwatermark(dst, EV_WRITE, EGRESSD_RELAY_BUF / 2, 0);
	}
}

/*
 * From the bufferevents' reads to ours: what they already read is delivered first. A
 * forwarded request never takes this path: every client byte of it must pass the body
 * framing in conn_relay_move, which alone decides what goes upstream.
 */
static void
conn_fast_start(struct conn *c)
{
	if (c->fe == FE_HTTP_FORWARD || c->guard != NULL || c->fast[0] != NULL)
		return;
	bufferevent_disable(c->cbev, EV_READ);
	bufferevent_disable(c->ubev, EV_READ);
	if (!conn_relay_move(c, c->cbev) || !conn_relay_move(c, c->ubev))
		return;
	c->fast[0] = event_new(egressd_base, bufferevent_getfd(c->cbev), EV_READ | EV_PERSIST,
	    conn_fast_read, c);
	c->fast[1] = event_new(egressd_base, bufferevent_getfd(c->ubev), EV_READ | EV_PERSIST,
	    conn_fast_read, c);
	if (!c->c_eof && evbuffer_get_length(bufferevent_get_output(c->ubev)) <
	    EGRESSD_RELAY_BUF)
		event_add(c->fast[0], NULL);
	if (!c->u_eof && evbuffer_get_length(bufferevent_get_output(c->cbev)) <
	    EGRESSD_RELAY_BUF)
		event_add(c->fast[1], NULL);
}

static void
conn_relay_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	bool client = bev == c->cbev;

	if (what & BEV_EVENT_EOF) {
		if (client && c->guard != NULL) {
			/* A client that stops mid-ClientHello never had it judged. */
			if (evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
				conn_guard_refuse(c, EGRESS_SNI_MALFORMED,
				    "client closed in the middle of its ClientHello", NULL, 0);
				return;
			}
			free(c->guard);
			c->guard = NULL;
			c->state = CS_RELAY;
			if (!conn_write_open(c)) {
				conn_close(c, EGRESS_SHUTDOWN, "error");
				return;
			}
		}
		/* Deliver what is left in the input first. */
		if (!conn_relay_move(c, bev))
			return;
		if (client)
			c->c_eof = true;
		else
			c->u_eof = true;
		if (c->first_eof == NULL)
			c->first_eof = client ? "client-eof" : "upstream-eof";
		conn_propagate_eof(c);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		int e = EVUTIL_SOCKET_ERROR();

		if (e == ECONNRESET || e == EPIPE)
			conn_close(c, EGRESS_ALLOWED, client ? "client-reset" : "upstream-reset");
		else
			conn_close(c, EGRESS_ALLOWED, "error");
	}
}

/* The idle check runs at most once per timeout idle; activity only stamps a time. */
static void
conn_idle_check(struct conn *c)
{
	int64_t now = egress_mono_ms(), idle = (int64_t)conn_settings(c)->timeout_idle * 1000;
	struct timeval tv;

	if (now - c->last_activity >= idle) {
		conn_close(c, EGRESS_IDLE_TIMEOUT, "idle-timeout");
		return;
	}
	tv.tv_sec = (time_t)((c->last_activity + idle - now) / 1000);
	tv.tv_usec = (suseconds_t)(((c->last_activity + idle - now) % 1000) * 1000);
	evtimer_add(c->timer, &tv);
}

static void
conn_start_relay(struct conn *c, int fd)
{
	const struct policy_settings *s = conn_settings(c);
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->ubev = bufferevent_socket_new(egressd_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->ubev == NULL) {
		close(fd);
		conn_deny(c, EGRESS_CONNECT_REFUSED, "no memory for the upstream", NULL, 0, 0, -1);
		return;
	}
	/*
	 * The SNI guard holds the client's bytes (never the upstream's) until it can classify
	 * them. Forwarding is exempt: egressd writes that request itself, in plain HTTP.
	 */
	if (s->sni != SNI_OFF && c->fe != FE_HTTP_FORWARD) {
		c->guard = xcalloc(1, sizeof(*c->guard));
		c->guard->first = true;
		c->guard->hrr = -1;
		c->state = CS_GUARD;
	} else {
		/* The open receipt reaches the kernel before any byte may flow. */
		if (!conn_write_open(c)) {
			conn_deny(c, EGRESS_SHUTDOWN, "receipt could not be written", NULL, 0, 0,
			    -1);
			return;
		}
		c->state = CS_RELAY;
	}
	c->last_activity = egress_mono_ms();

	switch (c->fe) {
	case FE_HTTP_CONNECT: {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		bufferevent_write(c->cbev, ok, sizeof(ok) - 1);
		break;
	}
	case FE_SOCKS5: {
		uint8_t out[10];

		bufferevent_write(c->cbev, out, socks5_reply(0x00, out));
		break;
	}
	case FE_SOCKS4: {
		uint8_t out[8];

		bufferevent_write(c->cbev, out, socks4_reply(90, out));
		break;
	}
	case FE_NATIVE:
	case FE_TRANSPARENT: {
		uint8_t out[EGRESS_NATIVE_REPLY];

		bufferevent_write(c->cbev, out, native_reply(EGRESS_ALLOWED, out));
		break;
	}
	case FE_HTTP_FORWARD:
		/* egressd writes the head, but it is the client's request: it counts as bytes
		 * up and against the byte quota like the body that follows. */
		bufferevent_write(c->ubev, c->fwd_head, c->fwd_head_len);
		free(c->fwd_head);
		c->fwd_head = NULL;
		if (!conn_account(c, true, c->fwd_head_len))
			return;
		break;
	default:
		break;
	}
	bufferevent_setcb(c->cbev, c->guard ? conn_guard_read : conn_relay_read,
	    conn_relay_write, conn_relay_event, c);
	bufferevent_setcb(c->ubev, conn_relay_read, conn_relay_write, conn_relay_event, c);
	bufferevent_setwatermark(c->cbev, EV_READ, 0,
	    c->guard ? CONN_GUARD_HOLD : EGRESSD_RELAY_BUF);
	bufferevent_setwatermark(c->ubev, EV_READ, 0, EGRESSD_RELAY_BUF);
	/* libevent reads 4 KiB at a time by default: a bulk tunnel then costs a syscall and
	 * a wake-up per page. Up to the relay bound per call instead (reads allocate what
	 * the socket has, so an idle or chatty tunnel does not grow). */
	bufferevent_set_max_single_read(c->cbev, EGRESSD_RELAY_BUF);
	bufferevent_set_max_single_read(c->ubev, EGRESSD_RELAY_BUF);
	bufferevent_set_max_single_write(c->cbev, EGRESSD_RELAY_BUF);
	bufferevent_set_max_single_write(c->ubev, EGRESSD_RELAY_BUF);
	bufferevent_enable(c->ubev, EV_READ | EV_WRITE);
	bufferevent_enable(c->cbev, EV_READ | EV_WRITE);
	conn_set_timer(c, (unsigned)s->timeout_idle);
	/* Bytes the client sent early (after its request) are tunnel payload. */
	if (c->guard != NULL || c->fe == FE_HTTP_FORWARD) {
		if (evbuffer_get_length(bufferevent_get_input(c->cbev)) == 0)
			return;
		if (c->guard != NULL)
			conn_guard_read(c->cbev, c);
		else
			conn_relay_read(c->cbev, c);
		return;
	}
	conn_fast_start(c);
}

/* --- SNI guard -------------------------------------------------------------------- */

/* The guard refuses: a deny receipt if nothing flowed yet, else the tunnel closes. */
static void
conn_guard_refuse(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len)
{
	free(c->guard);
	c->guard = NULL;
	if (c->opened) {
		conn_log(c, "guard", reason, why);
		conn_close(c, reason, "error");
		return;
	}
	/* Nothing reached the upstream: the attempt is a denial, with the SNI seen. */
	conn_deny_receipt(c, reason, why, raw, raw_len);
	conn_free(c);
}

/* The guard is done: the client's bytes flow from now on. */
static void
conn_guard_end(struct conn *c)
{
	free(c->guard);
	c->guard = NULL;
	c->state = CS_RELAY;
	if (!conn_write_open(c)) {
		conn_close(c, EGRESS_SHUTDOWN, "error");
		return;
	}
	bufferevent_setcb(c->cbev, conn_relay_read, conn_relay_write, conn_relay_event, c);
	bufferevent_setwatermark(c->cbev, EV_READ, 0, EGRESSD_RELAY_BUF);
	conn_set_timer(c, (unsigned)conn_settings(c)->timeout_idle);
	conn_fast_start(c);
}

/*
 * Releases n held bytes that passed to the upstream. They count against the byte budget
 * like relayed ones (before, they were counted but never checked: a tunnel whose hello
 * crossed the budget stayed open). False when that closed the connection.
 */
static bool
conn_guard_release(struct conn *c, size_t n)
{
	int moved = evbuffer_remove_buffer(bufferevent_get_input(c->cbev),
	    bufferevent_get_output(c->ubev), n);

	return moved <= 0 || conn_account(c, true, (size_t)moved);
}

static void
conn_guard_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	const struct policy_settings *s = conn_settings(c);
	struct tls_result res;

	for (int units = 0; units < 64; units++) {    /* bounded: a record per unit */
		size_t len = evbuffer_get_length(in);
		uint8_t *data;

		if (len == 0) {
			c->guard->held = false;
			conn_set_timer(c, (unsigned)s->timeout_idle);
			return;
		}
		data = evbuffer_pullup(in, (ev_ssize_t)len);
		if (c->guard->hello_passed && data[0] != 0x14) {
			/*
			 * After a ClientHello only a HelloRetryRequest makes the next handshake
			 * record a hello; until the server's answer is known the bytes wait.
			 */
			if (c->guard->hrr < 0) {
				if (!c->guard->held) {
					c->guard->held = true;
					conn_set_timer(c, (unsigned)s->timeout_handshake);
				}
				return;
			}
			if (c->guard->hrr == 0) {
				conn_guard_end(c);
				return;
			}
		}
		tls_scan(data, len, c->guard->first, c->guard->scratch,
		    sizeof(c->guard->scratch), &res);
		switch (res.unit) {
		case TLS_NEED_MORE:
			if (len >= CONN_GUARD_HOLD) {
				conn_guard_refuse(c, EGRESS_SNI_MALFORMED,
				    "ClientHello larger than the guard holds", NULL, 0);
				return;
			}
			if (!c->guard->held) {
				/* Held bytes must complete within the handshake timeout. */
				c->guard->held = true;
				conn_set_timer(c, (unsigned)s->timeout_handshake);
			}
			return;
		case TLS_NOT_TLS:
			if (s->sni == SNI_REQUIRED) {
				conn_guard_refuse(c, EGRESS_NOT_TLS,
				    "the client does not speak TLS and the policy says sni required",
				    NULL, 0);
				return;
			}
			conn_guard_end(c);
			return;
		case TLS_HELLO:
			if (res.has_sni && c->sni == NULL)
				c->sni = xstrdup(res.sni);
			if (res.ech) {
				conn_guard_refuse(c, EGRESS_SNI_ECH,
				    "ClientHello carries encrypted_client_hello", NULL, 0);
				return;
			}
			if (!res.has_sni && c->host.kind == HOST_NAME) {
				conn_guard_refuse(c, EGRESS_SNI_MISSING,
				    "ClientHello without server_name for a name", NULL, 0);
				return;
			}
			if (res.has_sni && strcmp(res.sni, c->host.name) != 0) {
				char why[EGRESS_HOST_MAX + 64];

				if (c->sni != NULL && strcmp(c->sni, res.sni) != 0) {
					free(c->sni);
					c->sni = xstrdup(res.sni);
				}
				snprintf(why, sizeof(why), "server_name %s is not the requested host",
				    res.sni);
				conn_guard_refuse(c, EGRESS_SNI_MISMATCH, why, NULL, 0);
				return;
			}
			if (!conn_write_open(c)) {
				conn_close(c, EGRESS_SHUTDOWN, "error");
				return;
			}
			if (!conn_guard_release(c, res.len))
				return;
			c->guard->first = false;
			c->guard->held = false;
			/* A second hello (after a retry) is the last one a handshake may have. */
			if (c->guard->hello_passed) {
				c->guard->hrr = 0;
			} else {
				c->guard->hello_passed = true;
				c->guard->hrr = -1;
				c->guard->nserver = 0;
			}
			break;
		case TLS_PASS:
			if (!conn_guard_release(c, res.len))
				return;
			c->guard->first = false;
			break;
		case TLS_END:
			conn_guard_end(c);
			return;
		case TLS_ERROR:
		default:
			conn_guard_refuse(c, res.reason ? res.reason : EGRESS_SNI_MALFORMED,
			    res.why ? res.why : "malformed ClientHello", res.raw, res.raw_len);
			return;
		}
	}
}

/* --- connect ---------------------------------------------------------------------- */

static void
conn_attempts_close(struct conn *c, int keep)
{
	for (size_t i = 0; i < c->natt; i++) {
		if ((int)i == keep || c->att[i].fd == -1)
			continue;
		event_free(c->att[i].ev);
		close(c->att[i].fd);
		c->att[i].fd = -1;
	}
	if (c->stagger != NULL) {
		event_free(c->stagger);
		c->stagger = NULL;
	}
}

static void
conn_connect_failed_all(struct conn *c)
{
	conn_attempts_close(c, -1);
	c->natt = 0;
	if (c->last_errno == ETIMEDOUT)
		conn_deny(c, EGRESS_CONNECT_TIMEOUT, "no pinned address answered", NULL, 0, 0,
		    -1);
	else
		conn_deny(c, EGRESS_CONNECT_REFUSED, strerror(c->last_errno), NULL, 0, 0, -1);
}

static void
conn_attempt_done(struct conn *c, size_t i)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(c->att[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err == 0) {
		int fd = c->att[i].fd;

		event_free(c->att[i].ev);
		c->att[i].fd = -1;
		conn_attempts_close(c, -1);
		c->natt = 0;
		evtimer_del(c->timer);
		addr_format(&c->att[i].addr, c->addr_text);
		conn_start_relay(c, fd);
		return;
	}
	event_free(c->att[i].ev);
	close(c->att[i].fd);
	c->att[i].fd = -1;
	c->last_errno = err;
	c->failed++;
	log_debug("event=connect-failed id=%s error=%s", c->id, strerror(err));
	/* A refusal needs no stagger: try the next address now. */
	if (c->next < c->naddrs)
		conn_connect_next(c);
	else if (c->failed == c->natt)
		conn_connect_failed_all(c);
}

static void
conn_attempt_ready(evutil_socket_t fd, short what, void *arg)
{
	struct attempt *a = arg;

	(void)fd;
	(void)what;
	conn_attempt_done(a->c, (size_t)(a - a->c->att));
}

static void
conn_stagger_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_connect_next(arg);
}

/*
 * egressd's own listener (metrics-listen) is refused whatever the policy permits, as a
 * private-address with the range "metrics-listen". Asked of every address right before
 * its connect(): literal, resolved or pinned (a pin holds for every port, the listener is
 * one port), from every frontend, and after any change of the host's addresses.
 */
static bool
conn_refuse_own(struct conn *c, const struct addr *a)
{
	struct addr_verdict v;

	if (!metrics_is_own(a, c->port))
		return false;
	memset(&v, 0, sizeof(v));
	v.denied = true;
	v.range = "metrics-listen";
	v.name = "egressd's own listening address";
	conn_attempts_close(c, -1);
	c->natt = 0;
	c->next = c->naddrs;
	conn_deny_private(c, a, &v);
	return true;
}

static void
conn_connect_next(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct attempt *a;
	int fd;

	while (c->next < c->naddrs) {
		const struct addr *ad = &c->addrs[c->next++];

		if (conn_refuse_own(c, ad))
			return;

		memset(&ss, 0, sizeof(ss));
		if (ad->family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

			sin->sin_family = AF_INET;
			sin->sin_port = htons(c->port);
			memcpy(&sin->sin_addr, ad->b, 4);
			sslen = sizeof(*sin);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(c->port);
			memcpy(&sin6->sin6_addr, ad->b, 16);
			sslen = sizeof(*sin6);
		}
		fd = socket(ad->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1) {
			c->last_errno = errno;
			if (errno == EMFILE || errno == ENFILE)
				break;
			continue;
		}
		if (connect(fd, (struct sockaddr *)&ss, sslen) == -1 && errno != EINPROGRESS) {
			c->last_errno = errno;
			close(fd);
			continue;
		}
		a = &c->att[c->natt++];
		a->fd = fd;
		a->addr = *ad;
		a->c = c;
		a->ev = event_new(egressd_base, fd, EV_WRITE, conn_attempt_ready, a);
		event_add(a->ev, NULL);
		/* RFC 8305: the next address starts after the stagger unless this one fails. */
		if (c->next < c->naddrs) {
			struct timeval tv = { 0, EGRESSD_CONNECT_STAGGER_MS * 1000 };

			if (c->stagger == NULL)
				c->stagger = evtimer_new(egressd_base, conn_stagger_cb, c);
			evtimer_add(c->stagger, &tv);
		}
		return;
	}
	if (c->natt == c->failed)
		conn_connect_failed_all(c);
}

/* Orders addresses IPv6 first, families alternating (RFC 8305 section 4). */
static void
conn_interleave(struct conn *c, const struct addr *in, size_t n)
{
	struct addr v4[EGRESSD_MAX_ADDRS], v6[EGRESSD_MAX_ADDRS];
	size_t n4 = 0, n6 = 0, i4 = 0, i6 = 0;

	for (size_t i = 0; i < n; i++) {
		if (in[i].family == AF_INET6)
			v6[n6++] = in[i];
		else
			v4[n4++] = in[i];
	}
	c->naddrs = 0;
	while (i4 < n4 || i6 < n6) {
		if (i6 < n6)
			c->addrs[c->naddrs++] = v6[i6++];
		if (i4 < n4)
			c->addrs[c->naddrs++] = v4[i4++];
	}
	c->next = 0;
}

static void
conn_connect(struct conn *c, const struct addr *addrs, size_t n)
{
	c->state = CS_CONNECT;
	/* One own address refuses the set, as one private answer does: none is tried. */
	for (size_t i = 0; i < n; i++)
		if (conn_refuse_own(c, &addrs[i]))
			return;
	conn_interleave(c, addrs, n);
	conn_set_timer(c, (unsigned)conn_settings(c)->timeout_connect);
	conn_connect_next(c);
}

/* --- decision --------------------------------------------------------------------- */

/*
 * Every address must be global or inside a permit-range; one refused answer refuses the
 * name (a mixed answer set is itself a rebinding signature). Returns the index of the
 * refused address, or -1.
 */
static long
conn_classify(struct conn *c, const struct addr *addrs, size_t n, struct addr_verdict *v)
{
	const struct conf *conf = egressd_conf;
	const struct policy_settings *s = conn_settings(c);

	for (size_t i = 0; i < n; i++) {
		if (addr_classify(&addrs[i], conf->nat64, conf->nnat64, v) &&
		    !addr_permitted(&addrs[i], v, s->permit, s->npermit))
			return (long)i;
	}
	return -1;
}

static void
conn_deny_private(struct conn *c, const struct addr *a, const struct addr_verdict *v)
{
	char why[256];

	addr_format(a, c->addr_text);
	snprintf(why, sizeof(why), "%s is in %s (%s)%s%s", c->addr_text, v->range, v->name,
	    v->embedded ? " via " : "", v->embedded ? v->via : "");
	conn_deny(c, EGRESS_PRIVATE_ADDRESS, why, NULL, 0, 0, -1);
}

static void
conn_dns_cb(void *arg, const struct dns_answer *ans)
{
	struct conn *c = arg;
	struct addr_verdict v;
	long bad;

	c->dq = NULL;
	if (ans->reason != EGRESS_ALLOWED) {
		conn_deny(c, ans->reason, ans->why, NULL, 0, 0, -1);
		return;
	}
	/* A deny rule applies to every name of the CNAME chain. */
	for (size_t i = 0; i < ans->ncnames; i++) {
		struct host h;
		const char *why;
		unsigned line;

		if (host_parse(ans->cnames[i], strlen(ans->cnames[i]), &h, &why) == -1) {
			conn_deny(c, EGRESS_DNS_FAILURE, "CNAME target is not a valid name", NULL, 0,
			    0, -1);
			return;
		}
		if (policy_denies(c->p->policy, &h, c->port, &line)) {
			char whybuf[300];

			snprintf(whybuf, sizeof(whybuf), "CNAME %s denied by rule line %u", h.name,
			    line);
			conn_deny(c, EGRESS_DENIED_BY_RULE, whybuf, NULL, 0, 0, -1);
			return;
		}
	}
	if ((bad = conn_classify(c, ans->addrs, ans->naddrs, &v)) >= 0) {
		conn_deny_private(c, &ans->addrs[bad], &v);
		return;
	}
	principal_pin_put(c->p, c->host.name, ans->addrs, ans->naddrs, ans->ttl);
	conn_connect(c, ans->addrs, ans->naddrs);
}

/*
 * Sets the request's target, the one place every frontend goes through. A synthetic
 * address (synthetic-range, also IPv4-mapped in IPv6) is replaced by the name this
 * principal's map holds for it, so that the rules, the resolution with its pinning and
 * checks, the SNI guard and the receipt all see the name; one the map does not hold
 * (never given, recycled, another principal's) is bad-host. Returns false when it refused.
 */
static bool
conn_target(struct conn *c, const struct host *h, uint16_t port)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct addr a;
	const char *name = NULL, *why;
	struct host named;

	c->host = *h;
	c->port = port;
	c->has_host = true;
	if (h->kind == HOST_IPV4)
		a = h->addr;
	else if (h->kind == HOST_IPV6 && memcmp(h->addr.b, mapped, sizeof(mapped)) == 0) {
		memset(&a, 0, sizeof(a));
		a.family = AF_INET;
		memcpy(a.b, h->addr.b + 12, 4);
	} else
		return true;
	/* The configured range, and those a SIGHUP replaced (no map holds them). */
	if (!cidr_contains(&egressd_conf->synth_range, &a) && !egressd_synth_retired(&a))
		return true;
	if (c->p->synth != NULL)
		name = synth_name(c->p->synth, &a);
	if (name == NULL || host_parse(name, strlen(name), &named, &why) == -1) {
		conn_deny(c, EGRESS_BAD_HOST, "synthetic address this principal does not hold",
		    NULL, 0, 0, -1);
		return false;
	}
	c->host = named;
	return true;
}

/*
 * The DNS verb: the answer comes from the policy, never from a resolver. A name some
 * port is allowed for gets its synthetic address (A) or an empty answer (other types);
 * an IP literal the policy allows gets itself; anything else is NXDOMAIN with a deny
 * receipt (conn_deny answers a question with an answer). No receipt for an answer: the
 * connection that follows has its own.
 */
static void
conn_question(struct conn *c, const struct native_request *req)
{
	uint8_t out[EGRESS_NATIVE_ANSWER];
	struct addr a;
	enum egress_reason r;
	bool have = false;

	evtimer_del(c->timer);
	bufferevent_disable(c->cbev, EV_READ);
	c->host = req->host;
	c->has_host = true;
	if (egressd_stopping) {
		conn_deny(c, EGRESS_SHUTDOWN, "egressd is stopping", NULL, 0, 0, -1);
		return;
	}
	r = policy_decide_name(c->p->policy, &c->host);
	if (r != EGRESS_ALLOWED) {
		conn_deny(c, r, r == EGRESS_DENIED_BY_RULE ? "a deny rule matches the name" :
		    "no rule allows the name on any port", NULL, 0, 0, -1);
		return;
	}
	if (req->qtype == EGRESS_DNS_TYPE_A && c->host.kind == HOST_IPV4) {
		a = c->host.addr;
		have = true;
	} else if (req->qtype == EGRESS_DNS_TYPE_A && c->host.kind == HOST_NAME) {
		if (c->p->synth == NULL)
			c->p->synth = synth_new(&egressd_conf->synth_range,
			    egressd_conf->synth_max);
		have = c->p->synth != NULL && synth_get(c->p->synth, c->host.name, &a) == 0;
	}
	if (have)
		addr_format(&a, c->addr_text);
	log_debug("event=answer principal=%s id=%s frontend=dns host=%s qtype=%u addr=%s",
	    c->p->name, c->id, c->host.name, (unsigned)req->qtype,
	    have ? c->addr_text : "-");
	conn_answer_and_close(c, out, native_answer(EGRESS_ALLOWED, have ? &a : NULL, 1, out));
}

static void
conn_decide(struct conn *c)
{
	enum egress_reason r;
	unsigned line = 0;
	const struct pin *pin;
	struct addr_verdict v;

	evtimer_del(c->timer);
	bufferevent_disable(c->cbev, EV_READ);
	if (egressd_stopping) {
		conn_deny(c, EGRESS_SHUTDOWN, "egressd is stopping", NULL, 0, 0, -1);
		return;
	}
	r = policy_decide(c->p->policy, &c->host, c->port, &line);
	if (r != EGRESS_ALLOWED) {
		char why[64];

		if (line)
			snprintf(why, sizeof(why), "rule line %u", line);
		conn_deny(c, r, line ? why : "no rule allows it", NULL, 0, 0, -1);
		return;
	}
	if (!conn_quota_ok(c))
		return;
	if (c->host.kind != HOST_NAME) {
		if (conn_classify(c, &c->host.addr, 1, &v) >= 0) {
			conn_deny_private(c, &c->host.addr, &v);
			return;
		}
		conn_connect(c, &c->host.addr, 1);
		return;
	}
	if ((pin = principal_pin_get(c->p, c->host.name)) != NULL) {
		/*
		 * Pinned addresses were classified when they were pinned, under this policy;
		 * whether one is egressd's own listener depends on the port and on the host's
		 * addresses now, so conn_connect asks that again.
		 */
		conn_connect(c, pin->addrs, pin->naddrs);
		return;
	}
	c->state = CS_RESOLVE;
	c->dq = dns_resolve(c->host.name, (unsigned)conn_settings(c)->timeout_dns, conn_dns_cb,
	    c);
}

/* --- frontends -------------------------------------------------------------------- */

/* A refused request still names its port when the parser read a valid one (bad-host). */
static void
conn_error_port(struct conn *c, const struct proto_error *err)
{
	if (err->has_port) {
		c->port = err->port;
		c->has_port = true;
	}
}

/*
 * The HTTP frontend's name from the bytes so far: http-connect once the request begins
 * with the method CONNECT and its space (after any empty lines), http-forward otherwise
 * (every other method, and a request line whose method is not complete yet). The first byte chose HTTP, so a
 * partial request (handshake-timeout, a close mid-request, a parse error) has one too.
 */
static enum conn_frontend
conn_http_frontend(const uint8_t *data, size_t len)
{
	static const char connect_sp[] = "CONNECT ";

	/* Empty lines before the request line are skipped, as the parser does. */
	while (len >= 2 && data[0] == '\r' && data[1] == '\n') {
		data += 2;
		len -= 2;
	}
	return len >= sizeof(connect_sp) - 1 &&
	    memcmp(data, connect_sp, sizeof(connect_sp) - 1) == 0 ? FE_HTTP_CONNECT :
	    FE_HTTP_FORWARD;
}

static void
conn_http(struct conn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in);
	size_t want = len > EGRESS_HTTP_HEAD_MAX + 1 ? EGRESS_HTTP_HEAD_MAX + 1 : len;
	uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)want);
	struct http_request *req;
	struct proto_error err;
	enum proto_status st;

	/*
	 * The parse resumes where the last read stopped: a head that arrives a byte at a time
	 * costs linear work. Its state lives until the head is complete or refused.
	 */
	if (c->http == NULL)
		c->http = xcalloc(1, sizeof(*c->http));
	req = &c->http->req;
	memset(&err, 0, sizeof(err));
	st = http_head_parse(&c->http->head, data, want, req, &err);
	/* Named from the request line's start: the empty lines before it are behind us. */
	c->fe = conn_http_frontend(data + c->http->head.start, want - c->http->head.start);
	if (st == PROTO_NEED_MORE)
		return;
	if (st == PROTO_ERROR) {
		free(c->http);
		c->http = NULL;
		conn_error_port(c, &err);
		conn_deny(c, err.reason, err.why, err.raw, err.raw_len, err.http_status, -1);
		return;
	}
	c->fe = req->kind == HTTP_CONNECT ? FE_HTTP_CONNECT : FE_HTTP_FORWARD;
	if (!conn_target(c, &req->host, req->port)) {
		free(c->http);
		c->http = NULL;
		return;
	}
	/* The forwarded Host is the name a synthetic address stood for. */
	req->host = c->host;
	if (req->kind == HTTP_FORWARD) {
		size_t cap = EGRESS_HTTP_HEAD_MAX + 512;

		c->fwd_head = xmalloc(cap);
		c->fwd_head_len = http_forward_head(req, c->fwd_head, cap);
		http_framing_start(&c->framing, req->body, req->content_length);
		if (c->fwd_head_len == 0) {
			free(c->http);
			c->http = NULL;
			conn_deny(c, EGRESS_MALFORMED_REQUEST, "request head too large to forward",
			    NULL, 0, 431, -1);
			return;
		}
	}
	evbuffer_drain(in, req->head_len);
	free(c->http);
	c->http = NULL;
	conn_decide(c);
}

static void
conn_socks5(struct conn *c, struct evbuffer *in)
{
	for (;;) {
		size_t len = evbuffer_get_length(in), consumed = 0, replylen = 0;
		uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)(len > 600 ? 600 : len));
		uint8_t reply[10];
		struct socks_request req;
		struct proto_error err;
		enum proto_status st;

		if (len == 0)
			return;
		memset(&err, 0, sizeof(err));
		st = socks5_step(&c->s5, data, len > 600 ? 600 : len, &consumed, reply, &replylen,
		    &req, &err);
		if (st == PROTO_NEED_MORE)
			return;
		if (st == PROTO_ERROR) {
			/* The parser's own answer (method refusal, REP) goes out as it is. */
			conn_error_port(c, &err);
			conn_deny_receipt(c, err.reason, err.why, err.raw, err.raw_len);
			conn_answer_and_close(c, reply, replylen);
			return;
		}
		evbuffer_drain(in, consumed);
		if (replylen > 0)
			bufferevent_write(c->cbev, reply, replylen);
		if (c->s5.stage == SOCKS5_DONE) {
			if (conn_target(c, &req.host, req.port))
				conn_decide(c);
			return;
		}
	}
}

/* A frontend parsed a complete request of consumed bytes: on to the decision. */
static void
conn_requested(struct conn *c, struct evbuffer *in, size_t consumed, const struct host *h,
    uint16_t port)
{
	evbuffer_drain(in, consumed);
	if (conn_target(c, h, port))
		conn_decide(c);
}

static void
conn_socks4(struct conn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), consumed = 0;
	size_t want = len > 1024 ? 1024 : len;
	uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)want);
	struct socks_request req;
	struct proto_error err;
	enum proto_status st;

	memset(&err, 0, sizeof(err));
	st = socks4_parse(data, want, &consumed, &req, &err);
	if (st == PROTO_NEED_MORE)
		return;
	if (st == PROTO_ERROR) {
		conn_error_port(c, &err);
		conn_deny(c, err.reason, err.why, err.raw, err.raw_len, 0, err.socks_rep);
		return;
	}
	conn_requested(c, in, consumed, &req.host, req.port);
}

static void
conn_native(struct conn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), consumed = 0;
	size_t want = len > EGRESS_NATIVE_HEAD + 255 ? EGRESS_NATIVE_HEAD + 255 : len;
	uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)want);
	struct native_request req;
	struct proto_error err;
	enum proto_status st;

	memset(&err, 0, sizeof(err));
	st = native_parse(data, want, &consumed, &req, &err);
	/* From the verb byte on, a question is answered as one (and its receipts say dns). */
	if (req.verb == EGRESS_NATIVE_QUESTION)
		c->fe = FE_DNS;
	else if (req.verb == EGRESS_NATIVE_TRANSPARENT)
		c->fe = FE_TRANSPARENT;  /* the same pipeline as native: only the name differs */
	if (st == PROTO_NEED_MORE)
		return;
	if (st == PROTO_ERROR) {
		conn_error_port(c, &err);
		conn_deny(c, err.reason, err.why, err.raw, err.raw_len, 0, -1);
		return;
	}
	if (req.verb == EGRESS_NATIVE_QUESTION) {
		evbuffer_drain(in, consumed);
		conn_question(c, &req);
		return;
	}
	conn_requested(c, in, consumed, &req.host, req.port);
}

static void
conn_client_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (c->state == CS_SNIFF) {
		uint8_t first;

		if (evbuffer_copyout(in, &first, 1) != 1)
			return;
		if (first == 0x05) {
			c->state = CS_SOCKS5;
			c->fe = FE_SOCKS5;
		} else if (first == 0x04) {
			c->state = CS_SOCKS4;
			c->fe = FE_SOCKS4;
		} else if (first == 'E') {
			/*
			 * "EGR1" is the native connector; anything else starting with E is HTTP,
			 * decided at the first byte that differs (until then, no frontend yet).
			 */
			uint8_t magic[4];
			ev_ssize_t n = evbuffer_copyout(in, magic, 4);

			if (n < 4 && memcmp(magic, EGRESS_NATIVE_MAGIC, (size_t)n) == 0)
				return;
			if (n == 4 && memcmp(magic, EGRESS_NATIVE_MAGIC, 4) == 0) {
				c->state = CS_NATIVE;
				c->fe = FE_NATIVE;
			} else
				c->state = CS_HTTP;
		} else
			c->state = CS_HTTP;
	}
	switch (c->state) {
	case CS_HTTP:
		conn_http(c, in);
		break;
	case CS_SOCKS5:
		conn_socks5(c, in);
		break;
	case CS_SOCKS4:
		conn_socks4(c, in);
		break;
	case CS_NATIVE:
		conn_native(c, in);
		break;
	default:
		break;
	}
}

static void
conn_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (c->state == CS_DRAIN) {
		conn_free(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		/* The client left before a decision: a request half sent is malformed. */
		if (c->state == CS_SNIFF && evbuffer_get_length(bufferevent_get_input(bev)) == 0) {
			/* Every attempt leaves a receipt: this one, without a frontend. */
			conn_deny_receipt(c, EGRESS_MALFORMED_REQUEST,
			    "closed before sending a request", NULL, 0);
			conn_free(c);
			return;
		}
		if (c->state == CS_RESOLVE || c->state == CS_CONNECT) {
			/* It gave up waiting: the decision's receipt says why it ended. */
			conn_free(c);
			return;
		}
		conn_deny(c, EGRESS_MALFORMED_REQUEST, "client closed during the request", NULL, 0,
		    0, -1);
	}
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	switch (c->state) {
	case CS_SNIFF:
	case CS_HTTP:
	case CS_SOCKS5:
	case CS_SOCKS4:
	case CS_NATIVE:
		conn_deny(c, EGRESS_HANDSHAKE_TIMEOUT, "request not complete in time", NULL, 0,
		    0, -1);
		break;
	case CS_CONNECT:
		conn_attempts_close(c, -1);
		c->natt = 0;
		conn_deny(c, EGRESS_CONNECT_TIMEOUT, "no pinned address answered in time", NULL,
		    0, 0, -1);
		break;
	case CS_GUARD:
		if (c->guard->held) {
			conn_guard_refuse(c, EGRESS_HANDSHAKE_TIMEOUT,
			    "ClientHello not complete in time", NULL, 0);
			break;
		}
		conn_idle_check(c);
		break;
	case CS_RELAY:
		conn_idle_check(c);
		break;
	case CS_DRAIN:
	default:
		conn_free(c);
		break;
	}
}

void
conn_accept(struct principal *p, int fd)
{
	struct conn *c;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	c = xcalloc(1, sizeof(*c));
	c->p = p;
	egressd_new_id(c->id);
	c->start_ms = egress_mono_ms();
	for (size_t i = 0; i < EGRESSD_MAX_ADDRS; i++)
		c->att[i].fd = -1;
	c->timer = evtimer_new(egressd_base, conn_timer_cb, c);
	TAILQ_INSERT_TAIL(&p->conns, c, entry);
	nconns++;
	if (p->has_peer_uid) {
		/* An extra condition, never the source of authority. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
		    cred.uid != p->peer_uid) {
			close(fd);
			conn_deny(c, EGRESS_PEER_UID, "SO_PEERCRED does not match peer-uid", NULL,
			    0, 0, -1);
			return;
		}
	}
	c->cbev = bufferevent_socket_new(egressd_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->cbev == NULL) {
		close(fd);
		conn_free(c);
		return;
	}
	/* The request phase buffers at most one request head (plus one byte to notice). */
	bufferevent_setwatermark(c->cbev, EV_READ, 0, EGRESS_HTTP_HEAD_MAX + 1);
	bufferevent_setcb(c->cbev, conn_client_read, NULL, conn_client_event, c);
	bufferevent_enable(c->cbev, EV_READ | EV_WRITE);
	conn_set_timer(c, (unsigned)conn_settings(c)->timeout_handshake);
}

static void
conn_free(struct conn *c)
{
	if (c->dq != NULL)
		dns_cancel(c->dq);
	conn_attempts_close(c, -1);
	if (c->counted)
		c->p->live--;
	TAILQ_REMOVE(&c->p->conns, c, entry);
	nconns--;
	event_free(c->timer);
	for (int i = 0; i < 2; i++)
		if (c->fast[i] != NULL)
			event_free(c->fast[i]);
	if (c->cbev != NULL)
		bufferevent_free(c->cbev);
	if (c->ubev != NULL)
		bufferevent_free(c->ubev);
	free(c->fwd_head);
	free(c->http);
	free(c->guard);
	free(c->sni);
	if (conn_guard_pending == c)
		conn_guard_pending = NULL;
	free(c);
}

static void
conn_close(struct conn *c, enum egress_reason reason, const char *cause)
{
	struct receipt r;

	/* A guarded tunnel that ends before anything flowed still gets its open. */
	if (!c->opened && (c->state == CS_GUARD || c->state == CS_RELAY))
		conn_write_open(c);
	if (c->opened) {
		/* Count what reached each peer: bytes still queued never arrived. */
		if (c->ubev != NULL) {
			size_t q = evbuffer_get_length(bufferevent_get_output(c->ubev));

			c->bytes_up -= q < c->bytes_up ? q : c->bytes_up;
		}
		if (c->cbev != NULL) {
			size_t q = evbuffer_get_length(bufferevent_get_output(c->cbev));

			c->bytes_down -= q < c->bytes_down ? q : c->bytes_down;
		}
		conn_receipt_base(c, &r, RECEIPT_CLOSE);
		r.reason = reason;
		r.close = cause ? cause : "error";
		r.bytes_up = (int64_t)c->bytes_up;
		r.bytes_down = (int64_t)c->bytes_down;
		r.duration_ms = conn_elapsed_ms(c);
		receipt_write(&r);
		c->p->closed[reason]++;
		principal_tally(c->p, r.host, r.port, true, reason, 1, c->bytes_up, c->bytes_down);
		c->p->closed_up += c->bytes_up;
		c->p->closed_down += c->bytes_down;
		log_info("event=close principal=%s id=%s host=%s port=%d reason=%s close=%s "
		    "bytes_up=%llu bytes_down=%llu", c->p->name, c->id, c->host.name, c->port,
		    egress_reason_name(reason), r.close, (unsigned long long)c->bytes_up,
		    (unsigned long long)c->bytes_down);
	}
	conn_free(c);
}

void
conn_abort(struct conn *c, enum egress_reason reason, const char *close_cause)
{
	/* A tunnel (its success answer already sent) closes; it is never answered again. */
	if (c->opened || c->state == CS_GUARD || c->state == CS_RELAY)
		conn_close(c, reason, close_cause);
	else if (c->state == CS_DRAIN)
		conn_free(c);
	else
		conn_deny_as(c, reason, "egressd is stopping or the principal was removed", NULL,
		    0, 0, -1, true);
}
