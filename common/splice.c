/*
 * splice.c: the bounded two-way byte copy of egressd's tunnel and egress-relay (splice.h).
 * Trusts nothing it copies: it only moves bytes, within the bound the caller gives.
 */
#include "config.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "splice.h"

enum egress_splice_res
egress_splice_read(int fd, struct event *rd, struct bufferevent *dst, uint8_t *scratch,
    size_t bound, size_t *n)
{
	struct evbuffer *out = bufferevent_get_output(dst);
	size_t queued = evbuffer_get_length(out);
	ssize_t r, w = 0;

	*n = 0;
	if (queued >= bound) {
		egress_splice_pause(rd, dst, bound);
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
		w = send(bufferevent_getfd(dst), scratch, (size_t)r, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return EGRESS_SPLICE_SEND_ERROR;
			w = 0;
		}
	}
	if (w < r)
		evbuffer_add(out, scratch + w, (size_t)(r - w));
	if (evbuffer_get_length(out) >= bound)
		egress_splice_pause(rd, dst, bound);
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

size_t
egress_splice_send(const void *p, size_t len, struct bufferevent *dst, bool now)
{
	ssize_t w = 0;

	if (now && len > 0 && evbuffer_get_length(bufferevent_get_output(dst)) == 0) {
		w = send(bufferevent_getfd(dst), p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0)
			w = 0;
	}
	if ((size_t)w < len && evbuffer_add(bufferevent_get_output(dst),
	    (const uint8_t *)p + w, len - (size_t)w) == -1)
		return (size_t)w;
	return len;
}

void
egress_splice_pause(struct event *rd, struct bufferevent *dst, size_t bound)
{
	event_del(rd);
	bufferevent_setwatermark(dst, EV_WRITE, bound / 2, 0);
}

void
egress_splice_resume(struct bufferevent *dst)
{
	bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
}

bool
egress_splice_shut(bool src_eof, bool *dst_shut, struct bufferevent *dst)
{
	if (src_eof && !*dst_shut && evbuffer_get_length(bufferevent_get_output(dst)) == 0) {
		shutdown(bufferevent_getfd(dst), SHUT_WR);
		*dst_shut = true;
	}
	return *dst_shut;
}
