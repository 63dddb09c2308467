/*
 * splice.h: the bounded two-way byte copy that egressd's tunnel (egress/relay.c) and
 * egress-relay share. One side's reads are the caller's event on its socket; the other
 * side's queue is a sink's (below), bounded: a full queue pauses the reader until the
 * writer drained half of it (the sink's write callback adds the reader again). Half-close:
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
 * A socket's write side without a bufferevent (egressd's fast relay, egress-relay's whole
 * copy): bytes go straight to fd; what it does not take waits in q, which exists (with wr,
 * the event that writes it once fd takes more) only while bytes wait. An idle side is an
 * int and a few pointers, where a bufferevent and its two evbuffers cost ~1 KiB
 * (bench/README.md, "where an idle tunnel's memory goes").
 */
struct egress_sink {
	int fd;
	struct evbuffer *q;             /* NULL: nothing waits */
	struct event *wr;               /* made with q; its callback is the owner's (cb) */
	struct event_base *base;
	event_callback_fn cb;           /* calls egress_sink_flush, then what the owner does */
	void *arg;
};

void egress_sink_init(struct egress_sink *s, int fd, struct event_base *base,
    event_callback_fn cb, void *arg);
size_t egress_sink_len(const struct egress_sink *s);
/*
 * Queues len bytes at p, or everything in from, behind what waits; arm: wr is added (off
 * while the owner holds the side). -1: no memory (nothing queued).
 */
int egress_sink_queue(struct egress_sink *s, const void *p, size_t len, bool arm);
int egress_sink_take(struct egress_sink *s, struct evbuffer *from, bool arm);
/* At most n bytes of from, moved behind what waits: how many, or -1 (no memory). */
int egress_sink_move(struct egress_sink *s, struct evbuffer *from, size_t n, bool arm);
/*
 * len bytes at p, or n bytes at the front of in (drained as they go): when `now` and
 * nothing waits, straight to the socket (one send or writev); what it does not take is
 * queued (armed when arm), and so are the bytes after a write error other than EAGAIN,
 * so that the write event meets the error and reports it, as a bufferevent's would (the
 * sinks' counterparts of egress_splice_push). Returns the bytes
 * handed on: fewer only when no memory was left for the queue.
 */
size_t egress_sink_send(struct egress_sink *s, const void *p, size_t len, bool now, bool arm);
size_t egress_sink_push(struct egress_sink *s, struct evbuffer *in, size_t n, bool now,
    bool arm);
/*
 * wr's callback calls this: one write of what waits, up to bound. MOVED (the rest, if any,
 * waits; once nothing does, q and wr are freed), AGAIN, or SEND_ERROR (errno).
 */
enum egress_splice_res egress_sink_flush(struct egress_sink *s, size_t bound);
/*
 * The common part of wr's callback: the flush, then, once half the bound or less waits,
 * the reader that feeds s (feeder, paused at the bound by egress_splice_read) is added
 * again, unless its source ended (feeder_eof). Returns the flush's result: on MOVED the
 * owner goes on with a half-close that waited; on SEND_ERROR it ends the connection.
 */
enum egress_splice_res egress_sink_written(struct egress_sink *s, size_t bound,
    struct event *feeder, bool feeder_eof);
/* A hold: wr off (true when it was on), and on again. */
bool egress_sink_disarm(struct egress_sink *s);
void egress_sink_arm(struct egress_sink *s);
/* q and wr freed; fd stays the owner's. */
void egress_sink_free(struct egress_sink *s);

/*
 * One read of fd (the source; rd its reader event) of at most bound less what dst queues,
 * into scratch (bound bytes), sent straight to dst's socket when nothing waits there; the
 * rest waits in dst (armed). A queue at the bound pauses rd (event_del): the owner's wr
 * callback adds it again once half of it left. *n: the bytes read (MOVED), or, on a
 * SEND_ERROR of ENOMEM, the bytes sent before the queue failed (0 on any other error).
 */
enum egress_splice_res egress_splice_read(int fd, struct event *rd, struct egress_sink *dst,
    uint8_t *scratch, size_t bound, size_t *n);
/*
 * Up to n bytes of in for dst (egressd's upstream bufferevent, a parent's or a forwarded
 * request's): when `now` and nothing is queued in dst's output, straight to dst's socket
 * (one writev; a bufferevent's own write costs an epoll_ctl to watch for writability, a
 * poll and an epoll_ctl to stop watching), what the socket does not take queued in dst's
 * output, where a write error also waits for dst's bufferevent to meet it again and report
 * it. Returns the bytes handed on (written or queued). The caller says when bytes may leave
 * now (egressd: no receipt of the turn waiting for the monitor).
 */
size_t egress_splice_push(struct evbuffer *in, struct bufferevent *dst, size_t n, bool now);
/*
 * Half-close: once src_eof and nothing waits in dst, shuts dst's write side (once:
 * *dst_shut). Returns *dst_shut.
 */
bool egress_splice_shut(bool src_eof, bool *dst_shut, struct egress_sink *dst);

#endif
