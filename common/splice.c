/*
 * splice.c: the bounded two-way byte copy of egressd's tunnel and egress-relay (splice.h).
 * Trusts nothing it copies: it only moves bytes, within the bound the caller gives.
 */
#include "config.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "splice.h"

void
egress_sink_init(struct egress_sink *s, int fd, struct event_base *base, event_callback_fn cb,
    void *arg)
{
	s->fd = fd;
	s->q = NULL;
	s->wr = NULL;
	s->base = base;
	s->cb = cb;
	s->arg = arg;
}

size_t
egress_sink_len(const struct egress_sink *s)
{
	return s->q != NULL ? evbuffer_get_length(s->q) : 0;
}

/* The queue and its write event, made when bytes first wait. */
static int
egress_sink_open(struct egress_sink *s)
{
	if (s->q != NULL)
		return 0;
	if ((s->q = evbuffer_new()) == NULL)
		return -1;
	if ((s->wr = event_new(s->base, s->fd, EV_WRITE | EV_PERSIST, s->cb, s->arg)) == NULL) {
		evbuffer_free(s->q);
		s->q = NULL;
		return -1;
	}
	return 0;
}

int
egress_sink_queue(struct egress_sink *s, const void *p, size_t len, bool arm)
{
	if (len == 0)
		return 0;
	if (egress_sink_open(s) == -1 || evbuffer_add(s->q, p, len) == -1)
		return -1;
	if (arm)
		event_add(s->wr, NULL);
	return 0;
}

int
egress_sink_take(struct egress_sink *s, struct evbuffer *from, bool arm)
{
	if (evbuffer_get_length(from) == 0)
		return 0;
	if (egress_sink_open(s) == -1 || evbuffer_add_buffer(s->q, from) == -1)
		return -1;
	if (arm)
		event_add(s->wr, NULL);
	return 0;
}

int
egress_sink_move(struct egress_sink *s, struct evbuffer *from, size_t n, bool arm)
{
	int moved;

	if (n == 0 || evbuffer_get_length(from) == 0)
		return 0;
	if (egress_sink_open(s) == -1 || (moved = evbuffer_remove_buffer(from, s->q, n)) < 0)
		return -1;
	if (arm && moved > 0)
		event_add(s->wr, NULL);
	return moved;
}

size_t
egress_sink_send(struct egress_sink *s, const void *p, size_t len, bool now, bool arm)
{
	size_t sent = 0;
	ssize_t w;

	if (len == 0)
		return 0;
	if (now && egress_sink_len(s) == 0 &&
	    (w = send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)) > 0)
		sent = (size_t)w;
	if (sent < len && egress_sink_queue(s, (const uint8_t *)p + sent, len - sent, arm) == -1)
		return sent;
	return len;
}

size_t
egress_sink_push(struct egress_sink *s, struct evbuffer *in, size_t n, bool now, bool arm)
{
	size_t sent = 0;
	int w;

	if (n == 0)
		return 0;
	if (now && egress_sink_len(s) == 0 &&
	    (w = evbuffer_write_atmost(in, s->fd, (ev_ssize_t)n)) > 0)
		sent = (size_t)w;
	if (sent < n && (w = egress_sink_move(s, in, n - sent, arm)) > 0)
		sent += (size_t)w;
	return sent;
}

enum egress_splice_res
egress_sink_flush(struct egress_sink *s, size_t bound)
{
	int w;

	if (s->q == NULL)
		return EGRESS_SPLICE_MOVED;
	w = evbuffer_write_atmost(s->q, s->fd, (ev_ssize_t)bound);
	if (w < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ?
		    EGRESS_SPLICE_AGAIN : EGRESS_SPLICE_SEND_ERROR;
	if (evbuffer_get_length(s->q) == 0)
		egress_sink_free(s);
	return EGRESS_SPLICE_MOVED;
}

enum egress_splice_res
egress_sink_written(struct egress_sink *s, size_t bound, struct event *feeder, bool feeder_eof)
{
	enum egress_splice_res r = egress_sink_flush(s, bound);

	if (r == EGRESS_SPLICE_MOVED && egress_sink_len(s) <= bound / 2 && !feeder_eof)
		event_add(feeder, NULL);
	return r;
}

bool
egress_sink_disarm(struct egress_sink *s)
{
	if (s->wr == NULL || !event_pending(s->wr, EV_WRITE, NULL))
		return false;
	event_del(s->wr);
	return true;
}

void
egress_sink_arm(struct egress_sink *s)
{
	if (s->wr != NULL)
		event_add(s->wr, NULL);
}

void
egress_sink_free(struct egress_sink *s)
{
	if (s->wr != NULL)
		event_free(s->wr);
	if (s->q != NULL)
		evbuffer_free(s->q);
	s->wr = NULL;
	s->q = NULL;
}

enum egress_splice_res
egress_splice_read(int fd, struct event *rd, struct egress_sink *dst, uint8_t *scratch,
    size_t bound, size_t *n)
{
	size_t queued = egress_sink_len(dst);
	ssize_t r, w = 0;

	*n = 0;
	if (queued >= bound) {
		event_del(rd);
		return EGRESS_SPLICE_AGAIN;
	}
	r = read(fd, scratch, bound - queued);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ?
		    EGRESS_SPLICE_AGAIN : EGRESS_SPLICE_READ_ERROR;
	if (r == 0) {
		event_del(rd);
		return EGRESS_SPLICE_EOF;
	}
	if (queued == 0) {
		w = send(dst->fd, scratch, (size_t)r, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return EGRESS_SPLICE_SEND_ERROR;
			w = 0;
		}
	}
	if (w < r && egress_sink_queue(dst, scratch + w, (size_t)(r - w), true) == -1) {
		*n = (size_t)w;         /* what reached dst's socket before the queue failed */
		errno = ENOMEM;
		return EGRESS_SPLICE_SEND_ERROR;
	}
	if (egress_sink_len(dst) >= bound)
		event_del(rd);
	*n = (size_t)r;
	return EGRESS_SPLICE_MOVED;
}

size_t
egress_splice_push(struct evbuffer *in, struct bufferevent *dst, size_t n, bool now)
{
	struct evbuffer *out = bufferevent_get_output(dst);
	size_t sent = 0;
	int w, moved;

	if (n == 0)
		return 0;
	if (now && evbuffer_get_length(out) == 0) {
		w = evbuffer_write_atmost(in, bufferevent_getfd(dst), (ev_ssize_t)n);
		if (w > 0)
			sent = (size_t)w;
	}
	if (sent == n)
		return sent;
	moved = evbuffer_remove_buffer(in, out, n - sent);
	return sent + (moved > 0 ? (size_t)moved : 0);
}

bool
egress_splice_shut(bool src_eof, bool *dst_shut, struct egress_sink *dst)
{
	if (src_eof && !*dst_shut && egress_sink_len(dst) == 0) {
		shutdown(dst->fd, SHUT_WR);
		*dst_shut = true;
	}
	return *dst_shut;
}
