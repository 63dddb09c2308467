/*
 * relay.c: the tunnel. The success answer, then the bounded two-way copy (EGRESSD_RELAY_BUF
 * per direction, the reader paused beyond it), half-close propagated once a side's bytes
 * are delivered, a forwarded request's body cut by its framing, the fast relay of our own
 * 64 KiB reads and the idle timeout. An upstream that is not a parent's and not forwarded
 * to is a sink from its connect (conn_start_relay): it never has a bufferevent. Trusts
 * nothing either side sends: it only copies.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "conn.h"
#include "splice.h"


/*
 * Every change of a direction's half-close goes through the table (connstate.c). A step
 * it refuses is a bug in egressd, not something a peer can cause (each reader reports
 * EOF once: it is not read again): logged, and egressd aborts, as conn_transition does.
 */
static void
conn_half_step(struct conn *c, enum conn_dir d, enum conn_half_event ev)
{
	if (!conn_halves_step(&c->halves, d, ev)) {
		log_error("event=half-close-refused id=%s dir=%s half=%s on=%s", c->id,
		    conn_dir_name(d), conn_half_name(conn_halves_get(&c->halves, d)),
		    conn_half_event_name(ev));
		abort();
	}
}

static void
conn_maybe_finish(struct conn *c)
{
	if (conn_halves_done(&c->halves)) {
		conn_close(c, EGRESS_ALLOWED, conn_halves_first_eof(&c->halves));
		return;
	}
	/* Forwarding: the response is complete when the upstream closes and it is flushed. */
	if (c->fe == FE_HTTP_FORWARD && conn_halves_eof(&c->halves, CD_DOWN) &&
	    conn_queued(c, 0) == 0)
		conn_close(c, EGRESS_ALLOWED, conn_halves_first_eof(&c->halves));
}

/* Direction d's reader got EOF: the cause of the close if it is the first. */
static void
conn_half_eof(struct conn *c, enum conn_dir d)
{
	conn_half_step(c, d, CHE_EOF);
	conn_propagate_eof(c);
}

size_t
conn_queued(const struct conn *c, int i)
{
	struct bufferevent *b = i == 1 ? c->ubev : NULL;
	size_t q = conn_sinked(c, i) ? egress_sink_len(&c->sink[i]) : 0;

	/* Both while conn_go_bare moves one into the other (or failed to). */
	return q + (b != NULL ? evbuffer_get_length(bufferevent_get_output(b)) : 0);
}

/*
 * Shuts the other side's write half once direction d saw EOF and everything it read is
 * delivered: the upstream's (side 1) for CD_UP, the client's (side 0) for CD_DOWN.
 */
static void
conn_half_shut(struct conn *c, enum conn_dir d, bool may)
{
	int i = d == CD_UP ? 1 : 0;
	struct bufferevent *dst = i == 1 ? c->ubev : NULL;

	if (!may || conn_halves_get(&c->halves, d) != CH_EOF_SEEN)
		return;
	if (c->hold != 0) {
		c->shut_skipped = true; /* after the acknowledgement (conn_release_finish) */
		return;
	}
	if (conn_queued(c, i) != 0)
		return;                 /* the write callback comes back once it is delivered */
	/*
	 * The last half: the close that follows at once (conn_maybe_finish) ends dst's side
	 * with its FIN, and nothing is unread on dst, whose own direction read to its end: one
	 * shutdown(2) fewer a tunnel. Not through TLS to a parent (close_notify first).
	 */
	if (!c->parent_tls &&
	    conn_halves_get(&c->halves, d == CD_UP ? CD_DOWN : CD_UP) == CH_SHUT_SENT) {
		conn_half_step(c, d, CHE_SHUT);
		return;
	}
	if (conn_sinked(c, i)) {
		shutdown(c->sink[i].fd, SHUT_WR);
	} else {
		conn_parent_tls_shut(c, dst);   /* TLS to a parent: close_notify first */
		shutdown(bufferevent_getfd(dst), SHUT_WR);
	}
	conn_half_step(c, d, CHE_SHUT);
}

/* Half-close: once everything from the closed side is delivered, shut the other way. */
void
conn_propagate_eof(struct conn *c)
{
	/* A forwarded request's upload ends with its body (framing), not the client's EOF. */
	conn_half_shut(c, CD_UP, c->fe != FE_HTTP_FORWARD);
	conn_half_shut(c, CD_DOWN, true);
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
 * len bytes at p, or n bytes at the front of in, for sink i before the fast relay (the
 * client's, a sink upstream's): straight to its socket when they may leave now
 * (conn_write_now), else queued, armed unless the hold turned its write off (conn_resume
 * arms it then); a write error waits in the queue for the write event (conn_sink_write).
 */
size_t
conn_sink_send(struct conn *c, int i, const void *p, size_t len)
{
	return egress_sink_send(&c->sink[i], p, len, conn_write_now(c, NULL),
	    !(c->suspended & CONN_SUSP_WRITE(i)));
}

static size_t
conn_sink_push(struct conn *c, int i, struct evbuffer *in, size_t n)
{
	return egress_sink_push(&c->sink[i], in, n, conn_write_now(c, NULL),
	    !(c->suspended & CONN_SUSP_WRITE(i)));
}

/*
 * n bytes at the front of the client's input (the SNI guard's release, the relay's move)
 * to the upstream: its bufferevent, or its sink. Returns the bytes handed on; a sink's
 * queue at the bound pauses the client's reads (conn_sink_write turns them on again).
 */
size_t
conn_push_up(struct conn *c, size_t n)
{
	size_t moved;

	if (!c->usink)
		return egress_splice_push(c->cin, c->ubev, n, conn_write_now(c, c->ubev));
	moved = conn_sink_push(c, 1, c->cin, n);
	if (egress_sink_len(&c->sink[1]) >= EGRESSD_RELAY_BUF)
		conn_read_off(c, 0);
	return moved;
}

/*
 * Moves what one side's input has to the other side (up: the client's, to the upstream;
 * down: an upstream bufferevent's, to the client's sink); false when the connection was
 * closed. A sink upstream has no input: its reads move at once (conn_up_read).
 */
static bool
conn_relay_move(struct conn *c, bool up)
{
	struct evbuffer *in;
	size_t n;
	int moved;

	if (!up && c->ubev == NULL)
		return true;
	if (up && c->cin == NULL)
		return true;            /* bare: the fast relay moved everything */
	in = up ? c->cin : bufferevent_get_input(c->ubev);
	n = evbuffer_get_length(in);
	if (up && conn_forward_done(c)) {
		/* Exactly one request: what follows the body is never forwarded. */
		evbuffer_drain(in, n);
		conn_read_off(c, 0);
		return true;
	}
	if (n == 0)
		return true;
	if (up && conn_state_guarded(c->state))
		return true;            /* held for the SNI guard; it releases what passes */
	if (!up && conn_state_guarded(c->state) && c->guard->hello_passed &&
	    c->guard->hrr < 0) {
		/* Note the server's first bytes: is it asking for a second ClientHello? */
		struct conn_guard *g = c->guard;
		size_t want = sizeof(g->server) - g->nserver;

		g->nserver += (size_t)evbuffer_copyout(in, g->server + g->nserver,
		    want < n ? want : n);
		g->hrr = tls_server_hrr(g->server, g->nserver);
		if (g->hrr >= 0 && evbuffer_get_length(c->cin) > 0)
			conn_guard_pending = c;
	}
	if (!conn_write_open(c)) {
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
			conn_read_off(c, 0);
			if (n == 0) {
				evbuffer_drain(in, evbuffer_get_length(in));
				return true;
			}
		}
		if (n == 0)
			return true;
	}
	if (up && c->usink) {
		/* Never forwarding (conn_start_relay): the sink pauses the client itself. */
		moved = (int)conn_push_up(c, n);
		return moved <= 0 || conn_account(c, true, (size_t)moved);
	}
	if (!up) {
		/* To the client's sink; one at the bound pauses the upstream's reads, its
		 * write event turns them on again at half of it (conn_sink_write). */
		moved = (int)conn_sink_push(c, 0, in, n);
		if (moved <= 0)
			return true;
		if (!conn_account(c, false, (size_t)moved))
			return false;
		if (egress_sink_len(&c->sink[0]) >= EGRESSD_RELAY_BUF)
			conn_read_off(c, 1);
		return true;
	}
	moved = (int)egress_splice_push(in, c->ubev, n, conn_write_now(c, c->ubev));
	if (moved <= 0)
		return true;
	if (conn_forward_done(c))
		evbuffer_drain(in, evbuffer_get_length(in));
	if (!conn_account(c, true, (size_t)moved))
		return false;
	/* Backpressure: a slow upstream pauses the client; ubev's write callback resumes it. */
	if (evbuffer_get_length(bufferevent_get_output(c->ubev)) >= EGRESSD_RELAY_BUF) {
		conn_read_off(c, 0);
		bufferevent_setwatermark(c->ubev, EV_WRITE, EGRESSD_RELAY_BUF / 2, 0);
	}
	return true;
}

/* After bytes moved: the server's answer is known now, judge the client bytes held. */
static void
conn_guard_pending_run(struct conn *c)
{
	if (conn_guard_pending == c) {
		conn_guard_pending = NULL;
		if (conn_state_guarded(c->state))
			conn_guard_read(c);
	}
}

/* An upstream bufferevent's read callback (a parent's, forwarding). */
void
conn_relay_read(struct bufferevent *src, void *arg)
{
	struct conn *c = arg;

	(void)src;
	if (conn_relay_move(c, false))
		conn_guard_pending_run(c);
}

/* The client's bytes in the relay (not under the guard: conn_guard_read has them). */
void
conn_relay_client_read(struct conn *c)
{
	if (conn_relay_move(c, true))
		conn_guard_pending_run(c);
}

/* An upstream bufferevent's output drained to its low watermark. */
void
conn_relay_write(struct bufferevent *dst, void *arg)
{
	struct conn *c = arg;

	bufferevent_setwatermark(dst, EV_WRITE, 0, 0);     /* the pause (conn_relay_move) is over */
	if (!conn_halves_eof(&c->halves, CD_UP) && !conn_forward_done(c))
		conn_read_on(c, 0);
	conn_propagate_eof(c);
}

/*
 * The fast relay (the copy itself is common/splice.c, shared with egress-relay). libevent
 * 2.1 reads at most 4 KiB per call (EVBUFFER_MAX_READ), a syscall and a wake-up per page
 * of a bulk tunnel; here each read takes up to the relay bound into one scratch buffer,
 * and goes straight to the other socket when nothing is queued there. What does not fit
 * waits in the other side's sink, whose bound pauses this side as a bufferevent's did.
 * Every byte moved is counted (conn_account: receipt, byte quota, idle stamp).
 * No bufferevent is left by then, nor the client's input (conn_fast_start): an idle tunnel
 * holds its struct conn, three events and two sinks without queues (bench/README.md).
 */
uint8_t conn_scratch[EGRESSD_RELAY_BUF];

/* CS_FAST's reads on either socket (through connread.c's conn_sock_read). */
void
conn_fast_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	bool up = fd == c->sink[0].fd;
	size_t n;

	(void)what;
	switch (egress_splice_read(fd, c->fast[up ? 0 : 1], &c->sink[up ? 1 : 0], conn_scratch,
	    EGRESSD_RELAY_BUF, &n)) {
	case EGRESS_SPLICE_MOVED:
		(void)conn_account(c, up, n);
		break;
	case EGRESS_SPLICE_AGAIN:
		break;
	case EGRESS_SPLICE_EOF:
		conn_half_eof(c, up ? CD_UP : CD_DOWN);
		break;
	case EGRESS_SPLICE_READ_ERROR:
		conn_close(c, EGRESS_ALLOWED, errno == ECONNRESET ?
		    (up ? "client-reset" : "upstream-reset") : "error");
		break;
	case EGRESS_SPLICE_SEND_ERROR: {
		int e = errno;

		/* Sent before a queue failed (no memory): delivered, so counted. */
		if (n > 0 && !conn_account(c, up, n))
			break;
		conn_close(c, EGRESS_ALLOWED, e == EPIPE || e == ECONNRESET ?
		    (up ? "upstream-reset" : "client-reset") : "error");
		break;
	}
	}
}

/*
 * A sink upstream's read before the fast relay (GUARD, GUARD_OPEN, RELAY): what
 * conn_relay_move does with an upstream bufferevent's input, without one. The read takes
 * what the client's queue has room for (a full queue pauses it; the client's sink turns
 * it on again at half, conn_sink_write), the server's first bytes are noted for the guard
 * (a HelloRetryRequest?), the open receipt is written before they reach the client (a
 * server that speaks first), and they go straight to the client's socket when they may
 * (conn_write_now), or wait in its queue.
 */
void
conn_up_read(struct conn *c)
{
	size_t q = egress_sink_len(&c->sink[0]), n;
	ssize_t r;

	if (q >= EGRESSD_RELAY_BUF) {
		conn_read_off(c, 1);
		return;
	}
	r = read(c->sink[1].fd, conn_scratch, EGRESSD_RELAY_BUF - q);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) {
		int e = errno;

		conn_read_off(c, 1);
		if (r == 0) {
			conn_half_eof(c, CD_DOWN);
			return;
		}
		conn_close(c, EGRESS_ALLOWED, e == ECONNRESET || e == EPIPE ?
		    "upstream-reset" : "error");
		return;
	}
	n = (size_t)r;
	if (conn_state_guarded(c->state) && c->guard->hello_passed && c->guard->hrr < 0) {
		/* Note the server's first bytes: is it asking for a second ClientHello? */
		struct conn_guard *g = c->guard;
		size_t want = sizeof(g->server) - g->nserver;

		want = want < n ? want : n;
		memcpy(g->server + g->nserver, conn_scratch, want);
		g->nserver += want;
		g->hrr = tls_server_hrr(g->server, g->nserver);
		if (g->hrr >= 0 && evbuffer_get_length(c->cin) > 0)
			conn_guard_pending = c;
	}
	if (!conn_write_open(c)) {
		conn_close(c, EGRESS_SHUTDOWN, "error");
		return;
	}
	if (conn_sink_send(c, 0, conn_scratch, n) < n) {
		conn_close(c, EGRESS_ALLOWED, "error");        /* no memory for the queue */
		return;
	}
	if (!conn_account(c, false, n))
		return;
	if (egress_sink_len(&c->sink[0]) >= EGRESSD_RELAY_BUF)
		conn_read_off(c, 1);
	conn_guard_pending_run(c);
}

/*
 * Any sink's write event: what waits leaves; once half of the bound is left, the reader
 * that feeds it goes on (it paused at the bound): the fast relay's own (egress_sink_written),
 * before it connread.c's (the client for a sink upstream, the upstream for the client);
 * once nothing is, a half-close that waited for it goes on, or, for an answer before the
 * close (the drain), the connection is freed. A write error ends a tunnel as a
 * bufferevent's did; before the tunnel it is the client's end (conn_client_ended).
 */
void
conn_sink_write(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	bool to_up = fd == c->sink[1].fd;
	struct egress_sink *dst = &c->sink[to_up ? 1 : 0];
	enum egress_splice_res r;

	(void)what;
	if (!c->bare) {
		r = egress_sink_flush(dst, EGRESSD_RELAY_BUF);
		if (r == EGRESS_SPLICE_MOVED && egress_sink_len(dst) <= EGRESSD_RELAY_BUF / 2 &&
		    conn_state_tunnel(c->state)) {
			if (to_up && !conn_halves_eof(&c->halves, CD_UP))
				conn_read_on(c, 0);
			else if (!to_up && !conn_halves_eof(&c->halves, CD_DOWN))
				conn_read_on(c, 1);
		}
	} else {
		r = egress_sink_written(dst, EGRESSD_RELAY_BUF, c->fast[to_up ? 0 : 1],
		    conn_halves_eof(&c->halves, to_up ? CD_UP : CD_DOWN));
	}
	switch (r) {
	case EGRESS_SPLICE_SEND_ERROR:
		if (!conn_state_tunnel(c->state)) {
			conn_client_ended(c, BEV_EVENT_WRITING | BEV_EVENT_ERROR);
			return;
		}
		conn_close(c, EGRESS_ALLOWED, errno == EPIPE || errno == ECONNRESET ?
		    (to_up ? "upstream-reset" : "client-reset") : "error");
		return;
	case EGRESS_SPLICE_MOVED:
		if (c->state == CS_DRAIN) {
			if (egress_sink_len(dst) == 0)
				conn_free(c);   /* the answer is out: closed */
			return;
		}
		if (conn_state_tunnel(c->state))
			conn_propagate_eof(c);
		return;
	default:
		return;
	}
}

/*
 * RELAY -fast-> FAST without a bufferevent: the client is a sink from its accept and a
 * sink upstream from its connect; an upstream bufferevent (a plain parent's) goes to a
 * sink, with what it still had to write, armed unless the hold turned that write off
 * (conn_resume arms it then). The bufferevent lets go of its socket first
 * (bufferevent_setfd -1: its events are deleted and its close-on-free has nothing left to
 * close; conn_free closes the sink's socket from now on). Only then can the bytes move: a
 * socket bufferevent keeps its output's front frozen outside its own write callback (a
 * move before the setfd failed, EAGAIN); 2.1's setfd unfreezes it, and so does the
 * unfreeze here, which does not rely on that. The client's input, empty now, is freed.
 * False: no memory for a queue, the tunnel closed (what stayed in the bufferevent counts
 * as not delivered: conn_queued).
 */
static bool
conn_go_bare(struct conn *c)
{
	struct bufferevent *b = c->ubev;   /* NULL for a sink upstream (conn_start_relay) */

	if (b != NULL) {
		egress_sink_init(&c->sink[1], bufferevent_getfd(b), egressd_base, conn_sink_write,
		    c);
		bufferevent_setfd(b, -1);
		evbuffer_unfreeze(bufferevent_get_output(b), 1);
	}
	c->bare = true;
	if (b != NULL && egress_sink_take(&c->sink[1], bufferevent_get_output(b),
	    !(c->suspended & CONN_SUSP_WRITE(1))) != 0) {
		conn_close(c, EGRESS_ALLOWED, "error");
		return false;
	}
	if (b != NULL)
		bufferevent_free(b);
	c->ubev = NULL;
	/* What the client's input had is moved (conn_fast_start): an idle tunnel keeps none. */
	evbuffer_free(c->cin);
	c->cin = NULL;
	return true;
}

/*
 * From connread.c's reads to the fast relay's (RELAY -fast-> FAST): what the inputs
 * already hold is delivered first, queued in the other side's sink. The fast reads are only added
 * here: the first one runs in a later callback (conn_write_open says why that matters).
 * A forwarded request never takes this path: every client byte of it must pass the body
 * framing in conn_relay_move, which alone decides what goes upstream.
 */
void
conn_fast_start(struct conn *c)
{
	if (c->state != CS_RELAY || c->fe == FE_HTTP_FORWARD)
		return;
	/* No read comes between these moves and the transition (which stops connread.c's
	 * reads): nothing is left behind in the inputs. */
	if (!conn_relay_move(c, true) || !conn_relay_move(c, false))
		return;
	/* Through an https:// parent the relay goes on as it is: TLS is the upstream
	 * bufferevent's, and the fast relay's reads and writes of its fd would bypass it. */
	if (c->parent_tls)
		return;
	conn_transition(c, CE_FAST);
	if (!conn_go_bare(c))
		return;
	if (!conn_halves_eof(&c->halves, CD_UP) && conn_queued(c, 1) < EGRESSD_RELAY_BUF)
		event_add(c->fast[0], NULL);
	if (!conn_halves_eof(&c->halves, CD_DOWN) && conn_queued(c, 0) < EGRESSD_RELAY_BUF)
		event_add(c->fast[1], NULL);
}

/* A side's read ended: EOF (its bytes are delivered first), or an error with errno. */
static void
conn_relay_ended(struct conn *c, bool client, short what)
{
	if (what & BEV_EVENT_EOF) {
		if (client && conn_state_guarded(c->state)) {
			/* A client that stops mid-ClientHello never had it judged. */
			if (evbuffer_get_length(c->cin) > 0) {
				conn_guard_refuse(c, EGRESS_SNI_MALFORMED,
				    "client closed in the middle of its ClientHello", NULL, 0);
				return;
			}
			if (!conn_guard_stop(c))
				return;
		}
		/* Deliver what is left in the input first. */
		if (!conn_relay_move(c, client))
			return;
		conn_half_eof(c, client ? CD_UP : CD_DOWN);
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

/* An upstream bufferevent's event callback (a parent's, forwarding). */
void
conn_relay_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	conn_relay_ended(arg, false, what);
}

void
conn_relay_client_event(struct conn *c, short what)
{
	conn_relay_ended(c, true, what);
}

/* The idle check runs at most once per timeout idle; activity only stamps a time. */
void
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

bool
conn_write_now(const struct conn *c, const struct bufferevent *dst)
{
	return c->hold == 0 && !engine_waiting() && !(c->parent_tls && dst == c->ubev);
}

void
conn_answer(struct conn *c, const void *p, size_t len)
{
	(void)conn_sink_send(c, 0, p, len);
}

void
conn_start_relay(struct conn *c, int fd)
{
	const struct policy_settings *s = conn_settings(c);
	int one = 1;

	/*
	 * Through a parent proxy the upstream is the parent's tunnel: ubev exists (fd -1).
	 * Forwarding writes the head and cuts the body through a bufferevent. Any other
	 * upstream is a sink from here on, read by its own event: a bufferevent made now
	 * would be taken apart again when the fast relay starts, a few callbacks later (its
	 * making and freeing were a tenth of the engine's instructions per setup).
	 */
	if (c->ubev == NULL && c->fe != FE_HTTP_FORWARD) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		egress_sink_init(&c->sink[1], fd, egressd_base, conn_sink_write, c);
		c->usink = true;        /* conn_free closes fd from now on */
		if (!conn_sink_reads(c, 1)) {
			conn_deny(c, EGRESS_CONNECT_REFUSED, "no memory for the upstream", NULL, 0,
			    0, -1);
			return;
		}
	} else if (c->ubev == NULL) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->ubev = bufferevent_socket_new(egressd_base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (c->ubev == NULL)
			close(fd);
		else
			(void)conn_own_reads(c, 1);     /* checked below */
	}
	if (!c->usink && (c->ubev == NULL || (c->fast[1] == NULL && !c->parent_tls))) {
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
		conn_transition(c, CE_CONNECTED_GUARD);
	} else {
		/* The open receipt reaches the kernel before any byte may flow: writing it
		 * is the way into the relay (CONNECT -open-> RELAY). */
		if (!conn_write_open(c)) {
			conn_deny(c, EGRESS_SHUTDOWN, "receipt could not be written", NULL, 0, 0,
			    -1);
			return;
		}
	}
	c->last_activity = egress_mono_ms();

	switch (c->fe) {
	case FE_HTTP_CONNECT: {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		conn_answer(c, ok, sizeof(ok) - 1);
		break;
	}
	case FE_SOCKS5: {
		uint8_t out[10];

		conn_answer(c, out, socks5_reply(0x00, out));
		break;
	}
	case FE_SOCKS4: {
		uint8_t out[8];

		conn_answer(c, out, socks4_reply(90, out));
		break;
	}
	case FE_NATIVE:
	case FE_TRANSPARENT: {
		uint8_t out[EGRESS_NATIVE_REPLY];

		conn_answer(c, out, native_reply(EGRESS_ALLOWED, out));
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
	/* conn_transition installed both sides' callbacks and read bounds. */
	/* libevent reads 4 KiB at a time by default: a bulk tunnel then costs a syscall and
	 * a wake-up per page. Up to the relay bound per call instead (reads allocate what
	 * the socket has, so an idle or chatty tunnel does not grow); only a TLS upstream's
	 * reads are libevent's (the others are ours, connread.c, up to the bound already). */
	if (c->ubev != NULL && c->fast[1] == NULL)
		bufferevent_set_max_single_read(c->ubev, EGRESSD_RELAY_BUF);
	if (c->ubev != NULL)
		bufferevent_set_max_single_write(c->ubev, EGRESSD_RELAY_BUF);
	/* Reading; an upstream bufferevent writes since it was made (enabling its write
	 * again would register the write event with nothing queued: a poll that wakes for
	 * nothing and an epoll_ctl to take it back), the sinks when bytes wait. */
	conn_read_on(c, 1);
	conn_read_on(c, 0);
	conn_set_timer(c, (unsigned)s->timeout_idle);
	/*
	 * Bytes a parent proxy sent right after its answer head are the upstream's first:
	 * read again in a later callback, as if they had just arrived (the fast relay's start
	 * below moves them at once).
	 */
	if (c->ubev != NULL && evbuffer_get_length(bufferevent_get_input(c->ubev)) > 0)
		bufferevent_trigger(c->ubev, EV_READ, BEV_TRIG_DEFER_CALLBACKS);
	/* Bytes the client sent early (after its request) are tunnel payload. */
	if (conn_state_guarded(c->state) || c->fe == FE_HTTP_FORWARD) {
		if (evbuffer_get_length(c->cin) == 0)
			return;
		if (conn_state_guarded(c->state))
			conn_guard_read(c);
		else
			conn_relay_client_read(c);
		return;
	}
	conn_fast_start(c);
}
