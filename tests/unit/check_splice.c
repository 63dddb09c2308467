/*
 * check_splice.c: unit tests for the bounded copy (common/splice.c) that egressd's fast
 * relay and egress-relay share, on real sockets (AF_UNIX stream pairs) and a real event
 * base: a sink's queue exists only while bytes wait and is freed once they left; a read
 * goes straight to the other socket when nothing waits, else behind what waits; a queue at
 * the bound pauses the reader; EOF, a read error and a send error are told apart; the
 * half-close waits for the queue; a hold disarms and re-arms the write event.
 */
#include "config.h"

#include <check.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "splice.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct event_base *base;
static int src[2], dst[2];              /* [0] ours, [1] the peer's */
static struct event *rd;
static struct egress_sink sink;
static unsigned writes;                 /* the sink's write callback ran */

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	writes++;
	(void)egress_sink_flush(&sink, 1 << 20);
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static void
pair(int sv[2], int sndbuf)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	if (sndbuf > 0)
		ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
		    sizeof(sndbuf)), 0);
}

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	pair(src, 0);
	pair(dst, 4096);                        /* small: a few sends fill it */
	rd = event_new(base, src[0], EV_READ | EV_PERSIST, on_read, NULL);
	event_add(rd, NULL);
	egress_sink_init(&sink, dst[0], base, on_write, NULL);
	writes = 0;
}

static void
teardown(void)
{
	egress_sink_free(&sink);
	event_free(rd);
	for (int i = 0; i < 2; i++) {
		close(src[i]);
		close(dst[i]);
	}
	event_base_free(base);
}

/* Everything the peer of dst can read now. */
static size_t
drain_peer(void)
{
	uint8_t b[65536];
	size_t total = 0;
	ssize_t r;

	while ((r = read(dst[1], b, sizeof(b))) > 0)
		total += (size_t)r;
	return total;
}

/* Fills dst's socket until it takes no more: the next byte for it must wait. */
static void
fill_dst(void)
{
	static const uint8_t b[4096];

	while (send(dst[0], b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
}

START_TEST(test_idle_sink_has_no_queue)
{
	ck_assert_uint_eq(egress_sink_len(&sink), 0);
	ck_assert_ptr_null(sink.q);
	ck_assert_ptr_null(sink.wr);
	ck_assert_int_eq(egress_sink_queue(&sink, "", 0, true), 0);
	ck_assert_ptr_null(sink.q);             /* nothing queued: nothing made */
}
END_TEST

START_TEST(test_queue_flush_frees)
{
	ck_assert_int_eq(egress_sink_queue(&sink, "hello", 5, true), 0);
	ck_assert_uint_eq(egress_sink_len(&sink), 5);
	ck_assert_ptr_nonnull(sink.wr);
	ck_assert(event_pending(sink.wr, EV_WRITE, NULL));
	event_base_loop(base, EVLOOP_ONCE);
	ck_assert_uint_eq(writes, 1);
	ck_assert_uint_eq(drain_peer(), 5);
	ck_assert_ptr_null(sink.q);             /* delivered: the queue and its event went */
	ck_assert_ptr_null(sink.wr);
}
END_TEST

START_TEST(test_read_straight)
{
	uint8_t scratch[1024];
	size_t n = 0;

	ck_assert_int_eq(write(src[1], "abc", 3), 3);
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_MOVED);
	ck_assert_uint_eq(n, 3);
	ck_assert_ptr_null(sink.q);             /* the socket took it all: nothing waits */
	ck_assert_uint_eq(drain_peer(), 3);
	ck_assert(event_pending(rd, EV_READ, NULL));
}
END_TEST

START_TEST(test_read_queues_behind)
{
	uint8_t scratch[1024];
	size_t n = 0;

	fill_dst();
	ck_assert_int_eq(write(src[1], "abc", 3), 3);
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_MOVED);
	ck_assert_uint_eq(n, 3);                /* counted: read, and queued */
	ck_assert_uint_eq(egress_sink_len(&sink), 3);
	ck_assert(event_pending(sink.wr, EV_WRITE, NULL));
	/* More while something waits goes behind it, never straight (order kept). */
	(void)drain_peer();
	ck_assert_int_eq(write(src[1], "de", 2), 2);
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_MOVED);
	ck_assert_uint_eq(egress_sink_len(&sink), 5);
	event_base_loop(base, EVLOOP_ONCE);
	{
		uint8_t b[8];

		ck_assert_int_eq(read(dst[1], b, sizeof(b)), 5);
		ck_assert_mem_eq(b, "abcde", 5);
	}
	ck_assert_ptr_null(sink.q);
}
END_TEST

START_TEST(test_read_pauses_at_bound)
{
	uint8_t scratch[64], big[200];
	size_t n = 0;

	memset(big, 'x', sizeof(big));
	fill_dst();
	ck_assert_int_eq(write(src[1], big, sizeof(big)), (ssize_t)sizeof(big));
	/* Bound 64: one read takes 64, all queued, and the queue is at the bound. */
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_MOVED);
	ck_assert_uint_eq(n, 64);
	ck_assert_uint_eq(egress_sink_len(&sink), 64);
	ck_assert(!event_pending(rd, EV_READ, NULL));   /* paused */
	/* Called again at the bound: nothing read, still paused. */
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_AGAIN);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(egress_sink_len(&sink), 64);
}
END_TEST

START_TEST(test_read_eof_and_again)
{
	uint8_t scratch[64];
	size_t n = 1;

	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_AGAIN);               /* nothing to read yet */
	ck_assert_uint_eq(n, 0);
	shutdown(src[1], SHUT_WR);
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_EOF);
	ck_assert(!event_pending(rd, EV_READ, NULL));   /* a source at its end is not read */
}
END_TEST

START_TEST(test_send_error)
{
	uint8_t scratch[64];
	size_t n = 0;

	close(dst[1]);
	dst[1] = -1;
	ck_assert_int_eq(write(src[1], "abc", 3), 3);
	ck_assert_int_eq(egress_splice_read(src[0], rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_SEND_ERROR);
	ck_assert_int_eq(errno, EPIPE);
	/* And a flush of what waits meets the same. */
	ck_assert_int_eq(egress_sink_queue(&sink, "x", 1, false), 0);
	ck_assert_int_eq(egress_sink_flush(&sink, 64), EGRESS_SPLICE_SEND_ERROR);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_uint_eq(egress_sink_len(&sink), 1);   /* not delivered: still counted as waiting */
}
END_TEST

START_TEST(test_read_error)
{
	uint8_t scratch[64];
	size_t n = 0;
	int fd = open("/dev/null", O_WRONLY);  /* read(2) on it fails: EBADF */

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(egress_splice_read(fd, rd, &sink, scratch, sizeof(scratch), &n),
	    EGRESS_SPLICE_READ_ERROR);
	close(fd);
}
END_TEST

START_TEST(test_shut_waits_for_queue)
{
	bool shut = false;
	uint8_t b[8];

	ck_assert(!egress_splice_shut(false, &shut, &sink));     /* no EOF: nothing */
	ck_assert_int_eq(egress_sink_queue(&sink, "ab", 2, true), 0);
	ck_assert(!egress_splice_shut(true, &shut, &sink));      /* bytes wait: not yet */
	event_base_loop(base, EVLOOP_ONCE);
	ck_assert(egress_splice_shut(true, &shut, &sink));
	ck_assert(shut);
	ck_assert_int_eq(read(dst[1], b, sizeof(b)), 2);
	ck_assert_int_eq(read(dst[1], b, sizeof(b)), 0);         /* then the FIN */
}
END_TEST

START_TEST(test_hold_disarms)
{
	ck_assert(!egress_sink_disarm(&sink));                   /* nothing waits: nothing armed */
	ck_assert_int_eq(egress_sink_queue(&sink, "ab", 2, true), 0);
	ck_assert(egress_sink_disarm(&sink));
	ck_assert(!event_pending(sink.wr, EV_WRITE, NULL));
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(writes, 0);                            /* held: not written */
	ck_assert_uint_eq(egress_sink_len(&sink), 2);
	egress_sink_arm(&sink);
	event_base_loop(base, EVLOOP_ONCE);
	ck_assert_uint_eq(writes, 1);
	ck_assert_uint_eq(drain_peer(), 2);
	/* Queued unarmed (a hold in force): it waits for the arm. */
	ck_assert_int_eq(egress_sink_queue(&sink, "c", 1, false), 0);
	ck_assert(!event_pending(sink.wr, EV_WRITE, NULL));
}
END_TEST

START_TEST(test_take)
{
	struct evbuffer *from = evbuffer_new();

	evbuffer_add(from, "queued", 6);
	ck_assert_int_eq(egress_sink_take(&sink, from, true), 0);
	ck_assert_uint_eq(evbuffer_get_length(from), 0);
	ck_assert_uint_eq(egress_sink_len(&sink), 6);
	ck_assert_int_eq(egress_sink_take(&sink, from, true), 0); /* empty: nothing */
	event_base_loop(base, EVLOOP_ONCE);
	ck_assert_uint_eq(drain_peer(), 6);
	evbuffer_free(from);
}
END_TEST

/* move takes at most n bytes, leaves the rest, arms only when it moved something. */
START_TEST(test_move)
{
	struct evbuffer *from = evbuffer_new();

	ck_assert_int_eq(egress_sink_move(&sink, from, 4, true), 0);     /* nothing there */
	ck_assert_ptr_null(sink.q);
	evbuffer_add(from, "abcdefgh", 8);
	ck_assert_int_eq(egress_sink_move(&sink, from, 0, true), 0);     /* none asked */
	ck_assert_ptr_null(sink.q);
	ck_assert_int_eq(egress_sink_move(&sink, from, 3, false), 3);
	ck_assert_uint_eq(evbuffer_get_length(from), 5);
	ck_assert_uint_eq(egress_sink_len(&sink), 3);
	ck_assert(!event_pending(sink.wr, EV_WRITE, NULL));              /* not armed */
	ck_assert_int_eq(egress_sink_move(&sink, from, 100, true), 5);   /* fewer there */
	ck_assert_uint_eq(evbuffer_get_length(from), 0);
	ck_assert(event_pending(sink.wr, EV_WRITE, NULL));
	event_base_loop(base, EVLOOP_ONCE);
	ck_assert_uint_eq(drain_peer(), 8);
	evbuffer_free(from);
}
END_TEST

/*
 * egress_sink_send and egress_sink_push (a pointer, an evbuffer's front): straight to the
 * socket only when `now` and nothing waits; otherwise, or for what the socket does not
 * take, or after a write error, queued, and armed as asked.
 */
static const struct send_row {
	const char *what;
	bool now, waiting, full, broken, arm;
	size_t straight;                        /* bytes the peer reads at once */
} send_rows[] = {
	{ "now, nothing waits: straight", true, false, false, false, true, 6 },
	{ "not now: queued, armed", false, false, false, false, true, 0 },
	{ "not now, held: queued, not armed", false, false, false, false, false, 0 },
	{ "now, but bytes wait: behind them", true, true, false, false, true, 0 },
	{ "now, the socket full: queued", true, false, true, false, true, 0 },
	{ "now, the peer gone: queued for the write event", true, false, false, true, true, 0 },
};

static void
send_case(const struct send_row *r, bool push)
{
	struct evbuffer *in = evbuffer_new();
	size_t queued0, got;

	if (r->waiting)
		ck_assert_int_eq(egress_sink_queue(&sink, "w", 1, false), 0);
	if (r->full)
		fill_dst();
	if (r->broken)
		ck_assert_int_eq(shutdown(dst[1], SHUT_RD), 0);
	queued0 = egress_sink_len(&sink);
	evbuffer_add(in, "sixbytesmore", 12);
	got = push ? egress_sink_push(&sink, in, 6, r->now, r->arm) :
	    egress_sink_send(&sink, "sixbyt", 6, r->now, r->arm);
	ck_assert_msg(got == 6, "%s: %zu handed on", r->what, got);
	if (push)
		ck_assert_uint_eq(evbuffer_get_length(in), 6);  /* only n taken */
	ck_assert_uint_eq(egress_sink_len(&sink), queued0 + 6 - r->straight);
	if (r->straight == 0)
		ck_assert_msg((event_pending(sink.wr, EV_WRITE, NULL) != 0) == r->arm,
		    "%s: armed %d", r->what, r->arm);
	else
		ck_assert_ptr_null(sink.q);             /* nothing waits: nothing made */
	if (!r->full && !r->broken)
		ck_assert_uint_eq(drain_peer(), r->straight);
	evbuffer_free(in);
}

START_TEST(test_sink_send)
{
	send_case(&send_rows[_i], false);
}
END_TEST

START_TEST(test_sink_push)
{
	send_case(&send_rows[_i], true);
}
END_TEST

/* A bounded flush: one write of at most bound, the rest waits. */
START_TEST(test_flush_bounded)
{
	uint8_t big[3000];

	memset(big, 'y', sizeof(big));
	ck_assert_int_eq(egress_sink_queue(&sink, big, sizeof(big), false), 0);
	ck_assert_int_eq(egress_sink_flush(&sink, 1000), EGRESS_SPLICE_MOVED);
	ck_assert_uint_eq(egress_sink_len(&sink), 2000);
	ck_assert_uint_eq(drain_peer(), 1000);
	fill_dst();
	ck_assert_int_eq(egress_sink_flush(&sink, 1000), EGRESS_SPLICE_AGAIN);
	ck_assert_uint_eq(egress_sink_len(&sink), 2000);
}
END_TEST

/* The write callback's common part: the feeder reads again once half the bound is left. */
START_TEST(test_written_resumes_feeder)
{
	ck_assert_int_eq(egress_sink_queue(&sink, "ab", 2, false), 0);
	event_del(rd);                                           /* paused at the bound */
	ck_assert_int_eq(egress_sink_written(&sink, 64, rd, true), EGRESS_SPLICE_MOVED);
	ck_assert(!event_pending(rd, EV_READ, NULL));            /* its source ended: not */
	ck_assert_uint_eq(drain_peer(), 2);
	ck_assert_int_eq(egress_sink_queue(&sink, "cd", 2, false), 0);
	ck_assert_int_eq(egress_sink_written(&sink, 64, rd, false), EGRESS_SPLICE_MOVED);
	ck_assert(event_pending(rd, EV_READ, NULL));
	ck_assert_ptr_null(sink.q);
}
END_TEST

static Suite *
splice_suite(void)
{
	Suite *s = suite_create("splice");
	struct {
		const char *name;
		const TTest *t;
	} cases[] = {
		{ "an idle sink has no queue", test_idle_sink_has_no_queue },
		{ "queued bytes leave, then the queue is freed", test_queue_flush_frees },
		{ "a read goes straight when nothing waits", test_read_straight },
		{ "a read goes behind what waits", test_read_queues_behind },
		{ "a queue at the bound pauses the reader", test_read_pauses_at_bound },
		{ "EOF and nothing to read", test_read_eof_and_again },
		{ "a send error is not a read error", test_send_error },
		{ "a read error", test_read_error },
		{ "the half-close waits for the queue", test_shut_waits_for_queue },
		{ "a hold disarms the write", test_hold_disarms },
		{ "take moves a bufferevent's output", test_take },
		{ "move takes at most n bytes", test_move },
		{ "a flush is bounded", test_flush_bounded },
		{ "the write resumes the feeder at half the bound", test_written_resumes_feeder },
	};

	for (size_t i = 0; i < NELEM(cases); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, cases[i].t);
		suite_add_tcase(s, tc);
	}
	{
		TCase *tc = tcase_create("a sink's send and push, straight or queued");

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_loop_test(tc, test_sink_send, 0, (int)NELEM(send_rows));
		tcase_add_loop_test(tc, test_sink_push, 0, (int)NELEM(send_rows));
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(splice_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
