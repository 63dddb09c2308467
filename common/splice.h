/*
 * splice.h: the bounded two-way byte copy that egressd's tunnel (egress/relay.c) and
 * egress-relay share. One side's reads are the caller's event on its socket; the other
 * side's queue is a bufferevent's output, bounded: a full queue pauses the reader until
 * the writer drained half of it (its write callback calls egress_splice_resume). Half-close:
 * a side's EOF shuts the other side's write direction once everything queued there left.
 * What the bytes are, who counts them and what ends the connection stay the caller's: a
 * read reports how many bytes moved (the accounting hook) and why it stopped.
 * Trusts nothing it copies; it never looks at the bytes.
 */
#ifndef EGRESS_SPLICE_H
#define EGRESS_SPLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

enum egress_splice_res {
	EGRESS_SPLICE_MOVED,            /* *n bytes read, sent or queued: count them */
	EGRESS_SPLICE_AGAIN,            /* nothing now, or dst full: the reader paused */
	EGRESS_SPLICE_EOF,              /* the source ended its bytes: its reader stopped */
	EGRESS_SPLICE_READ_ERROR,       /* errno of the read from the source */
	EGRESS_SPLICE_SEND_ERROR,       /* errno of the send to dst */
};

/*
 * One read of fd (the source; rd its reader event) of at most bound less what dst queues,
 * into scratch (bound bytes). Sent straight to dst's socket when nothing is queued there
 * (libevent 2.1 would read 4 KiB per call and always queue); the rest is queued. A queue
 * at the bound pauses rd (egress_splice_pause).
 */
enum egress_splice_res egress_splice_read(int fd, struct event *rd, struct bufferevent *dst,
    uint8_t *scratch, size_t bound, size_t *n);
/*
 * Up to n bytes of in, or len bytes at p, for dst: when `now` and nothing is queued in dst's
 * output, straight to dst's socket (one writev or send; a bufferevent's own write costs an
 * epoll_ctl to watch for writability, a poll and an epoll_ctl to stop watching), what the
 * socket does not take queued in dst's output, where a write error also waits for dst's
 * bufferevent to meet it again and report it. Returns the bytes handed on (written or
 * queued). The caller says when bytes may leave now (egressd: no receipt of the turn
 * waiting for the monitor).
 */
size_t egress_splice_push(struct evbuffer *in, struct bufferevent *dst, size_t n, bool now);
size_t egress_splice_send(const void *p, size_t len, struct bufferevent *dst, bool now);
/* Pauses rd until dst's output is down to half the bound (dst's write callback). */
void egress_splice_pause(struct event *rd, struct bufferevent *dst, size_t bound);
/* dst's write callback: the queue drained; the caller adds the reader again. */
void egress_splice_resume(struct bufferevent *dst);
/*
 * Half-close: once src_eof and dst's output is empty, shuts dst's write side (once:
 * *dst_shut). Returns *dst_shut.
 */
bool egress_splice_shut(bool src_eof, bool *dst_shut, struct bufferevent *dst);

#endif
