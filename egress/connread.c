/*
 * connread.c: the reads of a connection's sockets before the fast relay (the request, the
 * SNI guard, a forwarded request's relay, a parent's answer), made by egressd itself:
 * libevent 2.1's evbuffer_read asks FIONREAD before every read, one system call in two of
 * these (5 of the engine's 38 per guarded setup, bench/README.md).
 *
 * The client has no bufferevent: c->fast[0] reads into its input (c->cin), then calls the
 * reader of the connection's state (conn_client_readable), or its end on EOF or an error
 * (conn_client_ended). An upstream bufferevent (a parent's, forwarding) keeps its buffers,
 * its write side and its callbacks (conn_install sets them); its read event is never
 * enabled: c->fast[1] reads into its input and then does what libevent's
 * bufferevent_readcb does, the read callback after each read, or the event callback with
 * BEV_EVENT_EOF or BEV_EVENT_ERROR. A sink upstream's reads go to relay.c's conn_up_read.
 * No read while a side's input holds its bound (conn_read_bound, from conn_install; the
 * input's callback turns the read back on once something drained it). The TLS
 * bufferevent of an https parent reads for itself (c->fast[1] stays NULL, its watermark
 * is set): TLS is its own.
 *
 * A pause (conn_read_pause: the request is being decided, resolved, connected) turns the
 * reads off but leaves the event registered; only when something arrives meanwhile does
 * it go (the engine's base batches epoll changes per loop turn, but a pause spans turns:
 * taking the event off and putting it back cost 2 epoll_ctl per setup).
 *
 * Trusts nothing it reads: it only moves bytes into a bounded input, the parsers judge them.
 */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn.h"

#define CONN_RD(i) (1u << (i))

/* Side i's input: the client's own, an upstream bufferevent's; NULL for a sink upstream. */
static struct evbuffer *
conn_rd_in(const struct conn *c, int i)
{
	if (i == 0)
		return c->cin;
	return c->ubev != NULL ? bufferevent_get_input(c->ubev) : NULL;
}

/*
 * The event on or off as the owner wants and the side's read bound allows; a pause leaves
 * it registered (conn_read_pause). Whether it is registered is c->rd_reg, kept by the
 * only adds and deletes of the event before the fast relay (here and conn_sock_read's), not
 * asked of libevent: this runs a dozen times a setup.
 */
static void
conn_read_update(struct conn *c, int i)
{
	struct evbuffer *in = conn_rd_in(c, i);
	struct event *ev = c->fast[i];
	uint8_t bit = (uint8_t)CONN_RD(i);
	bool on = (c->rd_want & bit) != 0, pending = (c->rd_reg & bit) != 0;

	if (ev == NULL || c->bare || (in == NULL && !(i == 1 && c->usink)))
		return;
	/* A sink upstream has no input: the client's queue bounds it (conn_up_read). */
	if (on && in != NULL && c->rd_hi[i] > 0 && evbuffer_get_length(in) >= c->rd_hi[i])
		on = false;
	if (on && !pending) {
		if (event_add(ev, NULL) == 0)
			c->rd_reg |= bit;
	} else if (!on && pending && !(c->rd_keep & bit)) {
		event_del(ev);
		c->rd_reg &= (uint8_t)~bit;
	}
}

/*
 * Side i's read bound: what its input may hold before the reads pause, kept by the
 * connection (the reads are ours, so the bufferevent's own read watermark, and the
 * callback libevent adds to the input for it, would only be asked and run for nothing).
 * A TLS bufferevent reads for itself: its watermark is set.
 */
void
conn_read_bound(struct conn *c, int i, size_t hi)
{
	if (c->fast[i] == NULL) {
		if (i == 1 && c->ubev != NULL)
			bufferevent_setwatermark(c->ubev, EV_READ, 0, hi);
		c->rd_hi[i] = (uint32_t)hi;
		return;
	}
	if (c->rd_hi[i] == (uint32_t)hi)
		return;
	c->rd_hi[i] = (uint32_t)hi;
	conn_read_update(c, i);
}

/* Something left side i's input (a parser consumed it, the relay moved it): read again. */
static void
conn_input_cb(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;

	if (info->n_deleted == 0)
		return;
	for (int i = 0; i < 2; i++)
		if (conn_rd_in(c, i) == in)
			conn_read_update(c, i);
}

/*
 * One read of side i into its input, as bufferevent_readcb would: then the client's
 * reader for its state (conn.c), or the upstream bufferevent's read callback; at the end
 * of the bytes or on an error, the client's end (conn.c) or the bufferevent's event
 * callback.
 */
static void
conn_in_read(struct conn *c, int i)
{
	struct evbuffer *in = conn_rd_in(c, i);
	bufferevent_data_cb readcb = NULL;
	bufferevent_event_cb eventcb = NULL;
	void *arg = NULL;
	size_t hi = c->rd_hi[i], len = evbuffer_get_length(in), want = EGRESSD_RELAY_BUF;
	ssize_t r;
	int e;

	if (hi > 0) {
		if (len >= hi) {
			conn_read_update(c, i);
			return;
		}
		if (hi - len < want)
			want = hi - len;
	}
	if (i == 1)
		bufferevent_getcb(c->ubev, &readcb, NULL, &eventcb, &arg);
	r = read(event_get_fd(c->fast[i]), conn_scratch, want);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r > 0 && evbuffer_add(in, conn_scratch, (size_t)r) == -1) {
		r = -1;
		errno = ENOMEM;
	}
	if (r <= 0) {
		short what = BEV_EVENT_READING | (r == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR);

		e = errno;
		conn_read_off(c, i);
		errno = e;
		if (i == 0)
			conn_client_ended(c, what);
		else if (eventcb != NULL)
			eventcb(c->ubev, what, arg);
		return;                 /* c may be gone */
	}
	conn_read_update(c, i);         /* at the bound: no more until it drains */
	if (i == 0)
		conn_client_readable(c);
	else if (readcb != NULL)
		readcb(c->ubev, arg);
}

/* c->fast[i]'s callback: the bufferevent's reads until the fast relay, then its own. */
static void
conn_sock_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int i = fd == event_get_fd(c->fast[0]) ? 0 : 1;

	if (c->bare) {
		if (c->suspended & CONN_SUSP_FAST(i)) {
			event_del(c->fast[i]);  /* held: conn_resume adds it again */
			return;
		}
		conn_fast_read(fd, what, arg);
		return;
	}
	if (!(c->rd_want & CONN_RD(i))) {
		/* Paused, and something came: now the event goes. */
		c->rd_keep &= (uint8_t)~CONN_RD(i);
		c->rd_reg &= (uint8_t)~CONN_RD(i);
		event_del(c->fast[i]);
		return;
	}
	if (i == 1 && c->usink) {
		conn_up_read(c);
		return;
	}
	conn_in_read(c, i);
}

bool
conn_own_reads(struct conn *c, int i)
{
	struct evbuffer *in = conn_rd_in(c, i);
	int fd = i == 0 ? c->sink[0].fd : bufferevent_getfd(c->ubev);

	c->fast[i] = event_new(egressd_base, fd, EV_READ | EV_PERSIST, conn_sock_read, c);
	if (c->fast[i] == NULL)
		return false;
	/* A socket bufferevent freezes its input's end outside its own read callback, which
	 * never runs here: this read adds to it. */
	if (i == 1)
		evbuffer_unfreeze(in, 0);
	if (evbuffer_add_cb(in, conn_input_cb, c) == NULL) {
		event_free(c->fast[i]);
		c->fast[i] = NULL;
		return false;
	}
	return true;
}

bool
conn_sink_reads(struct conn *c, int i)
{
	c->fast[i] = event_new(egressd_base, c->sink[i].fd, EV_READ | EV_PERSIST,
	    conn_sock_read, c);
	return c->fast[i] != NULL;
}

void
conn_own_reads_free(struct conn *c, int i)
{
	uint8_t keep = (uint8_t)~CONN_RD(i);

	if (c->fast[i] != NULL)
		event_free(c->fast[i]);
	c->fast[i] = NULL;
	c->rd_want &= keep;
	c->rd_keep &= keep;
	c->rd_reg &= keep;
}

/*
 * Side i's reads wanted or not; keep: not wanted, but the event stays registered (a
 * pause). A TLS bufferevent reads for itself: for it a pause is an off.
 */
static void
conn_read_set(struct conn *c, int i, bool want, bool keep)
{
	struct bufferevent *b = i == 1 ? c->ubev : NULL;
	uint8_t bit = (uint8_t)CONN_RD(i);

	if (c->fast[i] == NULL) {
		if (b != NULL && want)
			bufferevent_enable(b, EV_READ);
		else if (b != NULL)
			bufferevent_disable(b, EV_READ);
		return;
	}
	c->rd_want = (uint8_t)(want ? c->rd_want | bit : c->rd_want & ~bit);
	c->rd_keep = (uint8_t)(keep ? c->rd_keep | bit : c->rd_keep & ~bit);
	conn_read_update(c, i);
}

void
conn_read_on(struct conn *c, int i)
{
	conn_read_set(c, i, true, false);
}

void
conn_read_off(struct conn *c, int i)
{
	conn_read_set(c, i, false, false);
}

void
conn_read_pause(struct conn *c, int i)
{
	conn_read_set(c, i, false, true);
}

/*
 * A read of side i in this loop turn, as if the socket had said it is readable: a client
 * writes its request right after its connect, so when egressd accepts, the request is
 * usually there (one epoll_wait fewer per setup; when it is not, the read's EAGAIN is the
 * cost). Only for reads that are on and ours.
 */
void
conn_read_now(struct conn *c, int i)
{
	if (c->fast[i] != NULL && (c->rd_want & CONN_RD(i)))
		event_active(c->fast[i], EV_READ, 1);
}

bool
conn_reading(const struct conn *c, int i)
{
	if (c->fast[i] == NULL)
		return i == 1 && c->ubev != NULL &&
		    (bufferevent_get_enabled(c->ubev) & EV_READ) != 0;
	return (c->rd_want & CONN_RD(i)) != 0;
}
