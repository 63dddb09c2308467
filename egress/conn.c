/*
 * conn.c: one principal connection, from the first byte to the last receipt: its core.
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
 *
 * This file holds the core (conn.h has the map of the others): accepting, every change of
 * state (conn_transition, through the state table of connstate.c) with the callbacks each
 * state installs (conn_install, the one place), refusals and their answers, receipts, the
 * byte accounting with the byte quota (conn_account, the one place), timers and the close.
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
#include <event2/bufferevent.h>
#include <event2/bufferevent_struct.h>    /* ev_write: conn_write_resume */

#include "conn.h"

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

static unsigned nconns;
struct conn *conn_guard_pending;


void conn_deny_private(struct conn *c, const struct addr *a,
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

const struct policy_settings *
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
	r->via = c->via_parent ? "parent" : NULL;
	r->sni = c->sni;
	r->bytes_up = r->bytes_down = r->duration_ms = -1;
}

void
conn_log(const struct conn *c, const char *event, enum egress_reason reason, const char *why)
{
	char wbuf[256], port[EGRESS_U64_LEN];
	struct log_kv kv[9] = {
		{ "event", event }, { "principal", c->p->name }, { "id", c->id },
		{ "frontend", frontend_names[c->fe] ? frontend_names[c->fe] : "-" },
		{ "host", c->has_host ? c->host.name : "-" },
		{ "port", conn_port(c) >= 0 ? egress_u64((unsigned)c->port, port) : "-" },
		{ "addr", c->addr_text[0] ? c->addr_text : "-" },
		{ "reason", egress_reason_name(reason) },
		{ "why", why ? log_value(why, wbuf, sizeof(wbuf)) : NULL },
	};

	log_kv(LOG_LVL_INFO, kv, why ? 9 : 8);
}

/* The close line of an opened tunnel (its receipt's counts). */
static void
conn_log_close(const struct conn *c, enum egress_reason reason, const char *cause)
{
	char port[EGRESS_U64_LEN], up[EGRESS_U64_LEN], down[EGRESS_U64_LEN];
	const struct log_kv kv[] = {
		{ "event", "close" }, { "principal", c->p->name }, { "id", c->id },
		{ "host", c->host.name }, { "port", egress_u64(c->port, port) },
		{ "reason", egress_reason_name(reason) }, { "close", cause },
		{ "bytes_up", egress_u64((unsigned long long)c->bytes_up, up) },
		{ "bytes_down", egress_u64((unsigned long long)c->bytes_down, down) },
	};

	log_kv(LOG_LVL_INFO, kv, sizeof(kv) / sizeof(kv[0]));
}

void
conn_set_timer(struct conn *c, unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	evtimer_add(c->timer, &tv);
}

/*
 * The read bounds of c's state, and an upstream bufferevent's callbacks, the one place
 * they are set (the client's reader for each state is conn_client_readable's). The
 * request phase reads the client (at most one request head, plus one byte to notice);
 * the tunnel relays both sides, the client's bytes held up to what the guard may hold
 * while it inspects; the fast relay reads both sockets itself and writes them through
 * sinks once conn_fast_start freed an upstream bufferevent; the drain only writes the
 * answer, then frees (conn_sink_write).
 */
static void
conn_install(struct conn *c)
{
	bool guarded = conn_state_guarded(c->state);

	switch (c->state) {
	case CS_SNIFF:
	case CS_HTTP:
	case CS_SOCKS5:
	case CS_SOCKS4:
	case CS_NATIVE:
	case CS_RESOLVE:
	case CS_CONNECT:
	case CS_PARENT:
		conn_read_bound(c, 0, EGRESS_HTTP_HEAD_MAX + 1);
		if (c->state != CS_PARENT)
			break;
		/* The parent's answer head, and no more than its bound (parent.c). */
		bufferevent_setcb(c->ubev, conn_parent_read, NULL, conn_parent_event, c);
		conn_read_bound(c, 1, EGRESS_PARENT_HEAD_MAX);
		break;
	case CS_GUARD:
	case CS_GUARD_OPEN:
	case CS_RELAY:
	case CS_FAST:
		if (c->ubev != NULL)
			bufferevent_setcb(c->ubev, conn_relay_read, conn_relay_write,
			    conn_relay_event, c);
		conn_read_bound(c, 0, guarded ? CONN_GUARD_HOLD : EGRESSD_RELAY_BUF);
		conn_read_bound(c, 1, EGRESSD_RELAY_BUF);
		if (c->state != CS_FAST)
			break;
		/* No reads into the inputs any more; conn_fast_start hands an upstream
		 * bufferevent's socket to a sink and adds the read events (now the fast
		 * relay's) once what the inputs had is delivered. */
		conn_read_off(c, 0);
		conn_read_off(c, 1);
		return;
	case CS_DRAIN:
		conn_read_off(c, 0);
		break;
	case CS_COUNT:
	default:
		break;
	}
}

/*
 * Every change of state: the table says where ev leads from here, and the new state's
 * callbacks are installed. An event the table refuses is a bug in egressd, not something
 * a client can cause: it is logged and egressd aborts rather than run a connection in a
 * state nobody planned.
 */
static enum conn_state
conn_next_or_abort(const struct conn *c, enum conn_event ev)
{
	enum conn_state next = conn_state_next(c->state, ev);

	if (next == CS_REFUSED) {
		log_error("event=state-refused id=%s state=%s on=%s", c->id,
		    conn_state_name(c->state), conn_event_name(ev));
		abort();
	}
	return next;
}

void
conn_transition(struct conn *c, enum conn_event ev)
{
	c->state = conn_next_or_abort(c, ev);
	conn_install(c);
}

/* Sends the answer the client is owed (if any), then closes once it is flushed; a client
 * that does not read is cut after a few seconds. */
void
conn_answer_and_close(struct conn *c, const void *out, size_t n)
{
	if (n == 0 || c->sink[0].fd == -1) {
		conn_free(c);
		return;
	}
	conn_transition(c, CE_ANSWER);
	if (conn_sink_send(c, 0, out, n) < n) {
		conn_free(c);           /* no memory to queue it */
		return;
	}
	/* Sent at once (the usual case): freed in a later callback, as after a write event,
	 * for the callers that still hold c; else once the sink's write event drained it. */
	conn_set_timer(c, egress_sink_len(&c->sink[0]) == 0 ? 0 : 5);
}

/* The deny receipt and log line, or a count when denials come too fast (SPEC). */
void
conn_deny_receipt(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len)
{
	struct receipt r;
	int rc;

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
	rc = receipt_write(&r);
	conn_log(c, "deny", reason, why);
	if (rc == 0)
		conn_hold(c);           /* the answer waits for the monitor */
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

	/*
	 * Refused: nothing it waited for may come back to it. (A parent proxy's name still
	 * being resolved when the connect deadline ran out answered into the drained
	 * connection: a second denial, then an event the drain refuses, and abort.)
	 */
	if (c->dq != NULL) {
		dns_cancel(c->dq);
		c->dq = NULL;
	}
	conn_dial_free(c);
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
	if (now && n > 0 && c->sink[0].fd != -1) {
		/*
		 * No loop turn left (principal removed, daemon stopping): best effort, straight
		 * to the socket, once the monitor has the denial (the wait releases the hold).
		 */
		engine_sync();
		send(c->sink[0].fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		n = 0;
	}
	conn_answer_and_close(c, out, n);
}

void
conn_deny(struct conn *c, enum egress_reason reason, const char *why, const uint8_t *raw,
    size_t raw_len, int http_status, int socks_rep)
{
	conn_deny_as(c, reason, why, raw, raw_len, http_status, socks_rep, false);
}

/*
 * Connections holding for the monitor's acknowledgement of their open or denial
 * (c->held CONN_HELD_WAIT, in the order of their records), and released ones that owe a
 * half-close they skipped meanwhile (CONN_HELD_EOF). Why and how: conn_write_open.
 */
static TAILQ_HEAD(conn_heldq, conn) conn_held = TAILQ_HEAD_INITIALIZER(conn_held);
static unsigned conn_nwait;             /* of them, CONN_HELD_WAIT */


/* Side i's bufferevent: only an upstream's (a parent's, forwarding) has one. */
static struct bufferevent *
conn_bev(const struct conn *c, int i)
{
	return i == 0 ? NULL : c->ubev;
}

/* Write events with bytes to send, off: none may run before the acknowledgement. */
static void
conn_stop_writes(struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct bufferevent *b = conn_bev(c, i);

		if (conn_sinked(c, i) && egress_sink_disarm(&c->sink[i]))
			c->suspended |= CONN_SUSP_WRITE(i);
		if (b != NULL && (bufferevent_get_enabled(b) & EV_WRITE) &&
		    evbuffer_get_length(bufferevent_get_output(b)) > 0) {
			bufferevent_disable(b, EV_WRITE);
			c->suspended |= CONN_SUSP_WRITE(i);
		}
	}
}

void
conn_hold(struct conn *c)
{
	uint64_t n;

	/*
	 * No other connection could move meanwhile (each other one is held already; c is
	 * not counted if it holds already, for an earlier record): the
	 * engine has nothing to do but wait, so it waits here, and what follows in this
	 * callback may go straight to the sockets; stopping and restarting this one's
	 * events would only cost system calls (the sequential setups of bench/README.md).
	 */
	if (nconns <= conn_nwait - (c->held == CONN_HELD_WAIT) + 1) {
		engine_sync();
		return;
	}
	if ((n = engine_hold()) == 0)
		return;                 /* no monitor: the record is in the file already */
	if (c->held != CONN_HELD_NONE)
		TAILQ_REMOVE(&conn_held, c, held_entry);
	if (c->held != CONN_HELD_WAIT)
		conn_nwait++;
	TAILQ_INSERT_TAIL(&conn_held, c, held_entry);
	c->held = CONN_HELD_WAIT;
	c->hold = n;
	conn_stop_writes(c);
}

void
conn_hold_suspend(void)
{
	struct conn *c;

	TAILQ_FOREACH(c, &conn_held, held_entry) {
		if (c->held != CONN_HELD_WAIT)
			continue;
		conn_stop_writes(c);
		for (int i = 0; i < 2; i++) {
			struct bufferevent *b = conn_bev(c, i);

			/* Paused, not taken off: an acknowledgement usually comes before the
			 * socket has anything, and taking the events off and back cost 4 to 5
			 * epoll_ctl per 8-way setup. A read event that fires meanwhile goes
			 * then, without reading (connread.c). */
			if ((b != NULL || (!c->bare && conn_sinked(c, i))) &&
			    conn_reading(c, i)) {
				conn_read_pause(c, i);
				c->suspended |= CONN_SUSP_READ(i);
			}
			if (c->bare && c->fast[i] != NULL &&
			    event_pending(c->fast[i], EV_READ, NULL))
				c->suspended |= CONN_SUSP_FAST(i);
		}
	}
}

/*
 * A bufferevent's write the hold put off goes straight to the socket now, as it would
 * have without the hold (conn_write_now); only what does not go waits for the write
 * event. Enabling the write adds its event, so when everything went, the event is
 * deleted again in the same turn, which the changelist cancels out. Before, each guarded
 * 8-way setup paid an epoll_ctl to add the write, a loop turn, the writev, and an
 * epoll_ctl to take it off (bench/README.md). The write callback then runs as libevent
 * runs it after a drain, deferred to the end of this pass: conn_release is walking the
 * held connections, and the callback may close this one.
 */
static void
conn_write_resume(struct conn *c, struct bufferevent *b)
{
	struct evbuffer *out = bufferevent_get_output(b);

	/* A socket bufferevent's output is frozen at its front but while its write event
	 * writes (bufferevent_writecb): the same here. */
	if (conn_write_now(c, b)) {
		evbuffer_unfreeze(out, 1);
		(void)evbuffer_write(out, bufferevent_getfd(b));   /* an error: the event sees it */
		evbuffer_freeze(out, 1);
	}
	bufferevent_enable(b, EV_WRITE);
	if (evbuffer_get_length(out) == 0) {
		(void)event_del(&b->ev_write);
		bufferevent_trigger(b, EV_WRITE, BEV_TRIG_DEFER_CALLBACKS);
	}
}

/* Turns back on what the hold turned off. */
static void
conn_resume(struct conn *c)
{
	unsigned s = c->suspended;

	c->suspended = 0;
	for (int i = 0; i < 2; i++) {
		struct bufferevent *b = conn_bev(c, i);

		if ((s & CONN_SUSP_READ(i)) && (b != NULL || conn_sinked(c, i)))
			conn_read_on(c, i);
		if ((s & CONN_SUSP_WRITE(i)) && b != NULL)
			conn_write_resume(c, b);
		if ((s & CONN_SUSP_WRITE(i)) && conn_sinked(c, i))
			egress_sink_arm(&c->sink[i]);
		if ((s & CONN_SUSP_FAST(i)) && c->fast[i] != NULL)
			event_add(c->fast[i], NULL);
	}
}

void
conn_release(uint64_t acked)
{
	struct conn *c, *next;

	for (c = TAILQ_FIRST(&conn_held); c != NULL; c = next) {
		next = TAILQ_NEXT(c, held_entry);
		if (c->held != CONN_HELD_WAIT)
			continue;
		if (c->hold > acked)
			break;          /* in the order of their records: the rest wait too */
		c->hold = 0;
		conn_nwait--;
		conn_resume(c);
		if (c->shut_skipped) {
			c->held = CONN_HELD_EOF;
		} else {
			TAILQ_REMOVE(&conn_held, c, held_entry);
			c->held = CONN_HELD_NONE;
		}
	}
}

void
conn_release_finish(void)
{
	struct conn *c;

	/* From the head each time: a close here may send a batch, and that release others. */
	for (;;) {
		TAILQ_FOREACH(c, &conn_held, held_entry)
			if (c->held == CONN_HELD_EOF)
				break;
		if (c == NULL)
			return;
		TAILQ_REMOVE(&conn_held, c, held_entry);
		c->held = CONN_HELD_NONE;
		c->shut_skipped = false;
		if (conn_state_tunnel(c->state))
			conn_propagate_eof(c);
	}
}

/*
 * The open receipt, written when bytes may start to flow: at once without the SNI guard
 * (CONNECT -open-> RELAY); with it, when the guard passes the client's first bytes or
 * before the first upstream byte reaches the client (server-first protocols), whichever
 * comes first (GUARD -open-> GUARD_OPEN). The state records it: there is no flag.
 *
 * No byte moves between client and upstream, and no side is shut, before the monitor has
 * acknowledged the open receipt: the connection holds itself for it (conn_hold, below),
 * and the loop serves other connections meanwhile.
 * A peer's socket is written by its bufferevent's write event or its sink's, straight
 * from a callback (conn_write_now), or by conn_fast_read, or shut by conn_half_shut; what
 * the open's callback does next, per caller:
 *   conn_start_relay (CONNECT -open-> RELAY, the connect's write event, no guard): the
 *     success answer and a forwarded head are queued, early client bytes moved to the
 *     upstream; conn_fast_start moves what the inputs hold to the other side's sink and
 *     event_add's the fast reads.
 *   GUARD -open-> GUARD_OPEN: conn_guard_read (a hello passed; the hello is moved into
 *     upstream's output or sink, a guard end goes on to conn_fast_start), conn_up_read
 *     or, through a parent, conn_relay_move (the server's first bytes, moved into the
 *     client's sink), conn_guard_stop (the guard's end on the client's EOF),
 *     conn_close (nothing moves, the sockets close).
 *     Here the client's write event may already be active in this turn (its queue held
 *     the success answer) and would carry the server's first bytes out in the open's
 *     turn, and the guard's end on the client's EOF would shut the upstream's write side
 *     in the open's own callback (both seen with strace).
 * So conn_hold, right after the receipt is queued: a write event with bytes to send is
 * turned off at once (an event already active in this turn is taken off the active list
 * by bufferevent_disable, so it does not run after this callback); while c->hold is set
 * nothing is written straight (conn_write_now) and conn_half_shut shuts nothing (it notes
 * that it skipped one); at the turn's end (conn_hold_suspend) every event of the
 * connection that could run is turned off: reads, writes with bytes queued, the fast
 * reads. event_add never runs a callback, so what the rest of the open's turn enables
 * can fire only after the next poll, and the turn's end turns it off before that poll.
 * The acknowledgement (conn_release) turns back on exactly what was turned off, and a
 * skipped half-close runs then (conn_release_finish). A timer may still end a held
 * connection (a deadline): conn_free waits for the acknowledgement before its sockets
 * close, and so does conn_abort's answer sent straight when no loop turn is left.
 * One case is not covered: libevent's EVLOOP_ONCE polls a second time within one turn
 * when more than 32 deferred callbacks were queued in a pass (bufferevent_trigger with
 * BEV_TRIG_DEFER_CALLBACKS, conn_start_relay, only for parent-proxy tunnels whose parent
 * sent bytes after its answer head); a held connection's write event that the open's
 * callback registered could then run before the turn's end suspends it.
 * Earlier ways: waiting for the acknowledgement inside a guarded open's callback and at
 * the end of every turn that held an open (the engine slept on the channel once per turn,
 * 19 000 times in 30 000 8-way setups, bench/README.md); before that, holding both
 * bufferevents' writes and every half-close until a 0-s timer after the next poll.
 */
bool
conn_write_open(struct conn *c)
{
	struct receipt r;

	if (conn_state_opened(c->state))
		return true;
	/* A state that cannot open is egressd's bug: abort before the receipt, not after. */
	(void)conn_next_or_abort(c, CE_OPEN);
	conn_receipt_base(c, &r, RECEIPT_OPEN);
	r.reason = EGRESS_ALLOWED;
	if (receipt_write(&r) == -1)
		return false;
	c->p->total_allowed++;
	conn_log(c, "open", EGRESS_ALLOWED, NULL);
	conn_hold(c);
	conn_transition(c, CE_OPEN);
	return true;
}

/*
 * The one place bytes are counted: n bytes moved up (client to upstream) or down. They
 * count for the tunnel's receipt and against the principal's byte budget, whichever path
 * moved them (the bufferevent relay, the fast relay, the SNI guard's release, the
 * forwarded head); the move that crosses the budget closes the tunnel (quota-bytes).
 * Returns false when the connection was closed.
 */
bool
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

/*
 * The client's input grew: its reader in this state (connread.c calls it), by what the
 * state table says of the state: the request's parsers before the tunnel, the SNI guard
 * while it inspects, the relay's move once it is done. The fast relay reads for itself,
 * and the drain reads nothing.
 */
void
conn_client_readable(struct conn *c)
{
	if (conn_state_guarded(c->state))
		conn_guard_read(c);
	else if (c->state == CS_RELAY)
		conn_relay_client_read(c);
	else if (!conn_state_tunnel(c->state) && c->state != CS_DRAIN)
		conn_client_read(c);
}

/* The client's read ended (EOF, or an error with errno): per state. */
void
conn_client_ended(struct conn *c, short what)
{
	if (c->state == CS_DRAIN) {
		conn_free(c);
		return;
	}
	if (conn_state_tunnel(c->state)) {
		conn_relay_client_event(c, what);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		/* The client left before a decision: a request half sent is malformed. */
		if (c->state == CS_SNIFF && evbuffer_get_length(c->cin) == 0) {
			/* Every attempt leaves a receipt: this one, without a frontend. */
			conn_deny_receipt(c, EGRESS_MALFORMED_REQUEST,
			    "closed before sending a request", NULL, 0);
			conn_free(c);
			return;
		}
		if (c->state == CS_RESOLVE || c->state == CS_CONNECT || c->state == CS_PARENT) {
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
		conn_dial_free(c);
		conn_deny(c, EGRESS_CONNECT_TIMEOUT, c->via_parent ? "the parent proxy did not "
		    "answer in time" : "no pinned address answered in time", NULL, 0, 0, -1);
		break;
	case CS_PARENT:
		conn_parent_timeout(c);
		break;
	case CS_GUARD:
	case CS_GUARD_OPEN:
		if (c->guard->held) {
			conn_guard_refuse(c, EGRESS_HANDSHAKE_TIMEOUT,
			    "ClientHello not complete in time", NULL, 0);
			break;
		}
		conn_idle_check(c);
		break;
	case CS_RELAY:
	case CS_FAST:
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
	c->timer = evtimer_new(egressd_base, conn_timer_cb, c);
	c->sink[0].fd = c->sink[1].fd = -1;
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
	/* No bufferevent: an input of its own, and the socket's write side a sink, whose
	 * write event is made only when bytes wait (conn_free closes fd from now on). */
	egress_sink_init(&c->sink[0], fd, egressd_base, conn_sink_write, c);
	if ((c->cin = evbuffer_new()) == NULL || !conn_own_reads(c, 0)) {
		conn_free(c);
		return;
	}
	conn_install(c);                /* CS_SNIFF */
	conn_read_on(c, 0);
	conn_read_now(c, 0);    /* the request is usually there by now */
	conn_set_timer(c, (unsigned)conn_settings(c)->timeout_handshake);
}

void
conn_free(struct conn *c)
{
	if (c->dq != NULL)
		dns_cancel(c->dq);
	conn_dial_free(c);
	/*
	 * Closing sends a FIN or a reset: not before the monitor has the connection's open
	 * or denial (a deadline, or a refusal in the open's own callback, can end a held
	 * connection). The wait releases it, and every other one acknowledged with it.
	 */
	if (c->held == CONN_HELD_WAIT)
		engine_sync();
	if (c->held == CONN_HELD_WAIT)
		conn_nwait--;
	if (c->held != CONN_HELD_NONE)
		TAILQ_REMOVE(&conn_held, c, held_entry);
	if (c->counted)
		c->p->live--;
	TAILQ_REMOVE(&c->p->conns, c, entry);
	nconns--;
	event_free(c->timer);
	for (int i = 0; i < 2; i++)
		if (c->fast[i] != NULL)
			event_free(c->fast[i]);
	if (c->cin != NULL)
		evbuffer_free(c->cin);
	if (c->ubev != NULL)
		bufferevent_free(c->ubev);
	for (int i = 0; i < 2; i++) {
		if (!conn_sinked(c, i) || c->sink[i].fd == -1)
			continue;
		egress_sink_free(&c->sink[i]);
		close(c->sink[i].fd);
	}
	free(c->fwd_head);
	free(c->http);
	free(c->guard);
	free(c->sni);
	if (conn_guard_pending == c)
		conn_guard_pending = NULL;
	free(c);
}

void
conn_close(struct conn *c, enum egress_reason reason, const char *cause)
{
	struct receipt r;

	/* A guarded tunnel that ends before anything flowed still gets its open. */
	if (c->state == CS_GUARD)
		(void)conn_write_open(c);
	if (conn_state_opened(c->state)) {
		/* Count what reached each peer: bytes still queued never arrived. */
		size_t q = conn_queued(c, 1);

		c->bytes_up -= q < c->bytes_up ? q : c->bytes_up;
		q = conn_queued(c, 0);
		c->bytes_down -= q < c->bytes_down ? q : c->bytes_down;
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
		conn_log_close(c, reason, r.close);
	}
	conn_free(c);
}

void
conn_abort(struct conn *c, enum egress_reason reason, const char *close_cause)
{
	/* A tunnel (its success answer already sent) closes; it is never answered again. */
	if (conn_state_tunnel(c->state))
		conn_close(c, reason, close_cause);
	else if (c->state == CS_DRAIN)
		conn_free(c);
	else
		conn_deny_as(c, reason, "egressd is stopping or the principal was removed", NULL,
		    0, 0, -1, true);
}
