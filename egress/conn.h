/*
 * conn.h: one principal connection, shared by the files of its phases (private to
 * egress/ and its tests):
 *
 *   conn.c      core: accept, the state table's transitions, the client's reader for
 *               each state, answers and denials, receipts, byte accounting, close
 *   connstate.c the state table itself (state x event -> next state), pure
 *   frontend.c  sniffing the first bytes, the HTTP, SOCKS5, SOCKS4 and native parsers'
 *               requests, the target (synthetic addresses), the DNS verb
 *   connect.c   the decision (policy, quotas), resolution, classification, connecting
 *   parent.c    a parent proxy: the CONNECT asked of it and its answer (parent-proxy)
 *   guard.c     the SNI guard on the client's first bytes
 *   relay.c     the tunnel: bounded two-way copy, half-close, the fast relay, idle
 *   connread.c  the sockets' reads before the fast relay, ours (no FIONREAD per read):
 *               into the client's input, an upstream bufferevent's, or a sink upstream's
 *               straight to the client (relay.c's conn_up_read)
 *
 * What the client sent is never trusted beyond its parse: the identity is the listener
 * the connection arrived on (struct principal).
 */
#ifndef EGRESS_CONN_H
#define EGRESS_CONN_H

#include "egressd.h"
#include "splice.h"
#include "tls.h"

/*
 * The phases of a connection. Every change of state is an event looked up in the state
 * table (connstate.c) and made by conn_transition, which also installs that state's
 * callbacks (conn_install): there is no other assignment of c->state. What a tunnel owes
 * is part of its state, not a flag beside it: whether its open receipt is written (GUARD
 * vs GUARD_OPEN; RELAY and FAST always have it) and whether the fast relay's own reads
 * carry the bytes (FAST) or connread.c's do (RELAY).
 */
enum conn_state {
	CS_SNIFF = 0,                /* the first bytes choose a frontend */
	CS_HTTP,
	CS_SOCKS5,
	CS_SOCKS4,
	CS_NATIVE,
	CS_RESOLVE,                  /* allowed by name: the resolver is asked */
	CS_CONNECT,                  /* connecting to the pinned addresses (or the parent) */
	CS_PARENT,                   /* connected to the parent proxy: its answer to our
	                              * CONNECT is awaited; nothing of the client's flows */
	CS_GUARD,                    /* tunnel up, client bytes held for the SNI guard, no open
	                              * receipt yet: nothing has flowed either way */
	CS_GUARD_OPEN,               /* the guard still inspects; the open receipt is written
	                              * (a hello passed, or the server spoke first) */
	CS_RELAY,                    /* open; connread.c's reads copy (forwarding, a TLS
	                              * parent, or until the fast relay starts) */
	CS_FAST,                     /* open; the fast relay's own reads copy (fast[]), its
	                              * sinks write (sink[]): no bufferevent is left */
	CS_DRAIN,                    /* an error answer is being written, then close */
	CS_COUNT,
	CS_REFUSED = CS_COUNT,       /* the table's "no such transition" */
};

enum conn_event {
	CE_SNIFF_HTTP = 0,           /* the first bytes are HTTP */
	CE_SNIFF_SOCKS5,             /* ... 0x05 */
	CE_SNIFF_SOCKS4,             /* ... 0x04 */
	CE_SNIFF_NATIVE,             /* ... "EGR1" */
	CE_RESOLVE,                  /* a request allowed for a name that is not pinned */
	CE_CONNECT,                  /* addresses to connect to (literal, pinned, resolved) */
	CE_CONNECTED_GUARD,          /* an attempt connected; the SNI guard inspects */
	CE_OPEN,                     /* the open receipt is written (conn_write_open alone):
	                              * from CONNECT, an attempt connected without the guard */
	CE_GUARD_END,                /* the guard is done (passed, not TLS, the client's EOF) */
	CE_FAST,                     /* the fast relay takes over the copy */
	CE_ANSWER,                   /* an answer owed before the close (refusal, question) */
	CE_PARENT,                   /* connected to the parent: CONNECT is asked of it */
	CE_COUNT,
};

/* The state table: the next state, or CS_REFUSED when ev cannot happen in s. */
enum conn_state conn_state_next(enum conn_state s, enum conn_event ev);
const char *conn_state_name(enum conn_state s);
const char *conn_event_name(enum conn_event ev);
/* What a state owes, from the same file: a tunnel (its success answer is sent: it is never
 * answered again, it ends in conn_close), its open receipt written (a close is owed), the
 * SNI guard inspecting (c->guard is set). False for CS_REFUSED and out of range. */
bool conn_state_tunnel(enum conn_state s);
bool conn_state_opened(enum conn_state s);
bool conn_state_guarded(enum conn_state s);

/*
 * A tunnel's half-closes, one small state per direction (in the manner of haproxy's
 * channels): "up" is client -> upstream, "down" upstream -> client. A direction's reader
 * gets EOF (EOF_SEEN), then once its bytes are delivered the other side's write half is
 * shut (SHUT_SENT). conn_halves_step (connstate.c) makes every change; it refuses what
 * cannot happen (a shut before the EOF, a second EOF or shut, anything once both
 * directions are done), and egressd aborts on a refusal like on conn_transition's. The
 * close cause is the direction whose EOF came first. Zeroed: both OPEN, no EOF yet.
 */
enum conn_dir {
	CD_NONE = 0,                 /* no direction (conn_halves.first before any EOF) */
	CD_UP,                       /* client -> upstream */
	CD_DOWN,                     /* upstream -> client */
};

enum conn_half {
	CH_OPEN = 0,                 /* bytes flow */
	CH_EOF_SEEN,                 /* the reader got EOF; what it read is still delivered */
	CH_SHUT_SENT,                /* shutdown(SHUT_WR) done on the other side, or, for the
	                              * last half, left to the close: finished */
	CH_COUNT,
	CH_REFUSED = CH_COUNT,       /* the table's "no such transition" */
};

enum conn_half_event {
	CHE_EOF = 0,                 /* the direction's reader got EOF */
	CHE_SHUT,                    /* its bytes are delivered: the other side is shut */
	CHE_COUNT,
};

struct conn_halves {
	enum conn_half up, down;
	enum conn_dir first;         /* the direction that reached EOF_SEEN first */
};

/* The half-close table: the next state, or CH_REFUSED when ev cannot happen in h. */
enum conn_half conn_half_next(enum conn_half h, enum conn_half_event ev);
const char *conn_half_name(enum conn_half h);
const char *conn_half_event_name(enum conn_half_event ev);
const char *conn_dir_name(enum conn_dir d);
/* One direction's transition; false (nothing changed) when refused. */
bool conn_halves_step(struct conn_halves *hs, enum conn_dir d, enum conn_half_event ev);
/* The direction's state (CH_REFUSED for no direction). */
enum conn_half conn_halves_get(const struct conn_halves *hs, enum conn_dir d);
/* The direction's reader got EOF (EOF_SEEN or SHUT_SENT). */
bool conn_halves_eof(const struct conn_halves *hs, enum conn_dir d);
/* Both directions finished: both sides' write halves are shut. */
bool conn_halves_done(const struct conn_halves *hs);
/* The close cause of the first EOF: "client-eof", "upstream-eof", or NULL before any. */
const char *conn_halves_first_eof(const struct conn_halves *hs);

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

struct conn;

struct attempt {
	int fd;
	struct event *ev;
	struct addr addr;
	struct conn *c;
	bool now;                    /* connected inside connect() (getpeername said so) */
};

/*
 * The connect attempts of one tunnel (RFC 8305): the addresses in the order tried, the
 * sockets in flight, the stagger timer. Allocated when connecting starts and freed once
 * one attempt won or all failed: an established tunnel does not carry its ~1 KiB.
 */
struct conn_dial {
	struct addr addrs[EGRESSD_MAX_ADDRS];
	size_t naddrs, next;
	struct attempt att[EGRESSD_MAX_ADDRS];
	size_t natt, failed;
	int last_errno;
	struct event *stagger;
};

struct conn {
	TAILQ_ENTRY(conn) entry;
	struct principal *p;
	char id[24];
	enum conn_state state;
	enum conn_frontend fe;
	/* The client (the principal socket) has no bufferevent: its input is cin, filled by
	 * our own reads (connread.c), its write side sink[0], both from the accept on. */
	struct evbuffer *cin;        /* NULL once the fast relay runs (bare) */
	struct bufferevent *ubev;    /* upstream: a parent's, or forwarded to; else NULL */
	struct event *timer;         /* handshake, connect, idle, drain deadlines */
	struct socks5 s5;
	struct host host;
	uint16_t port;
	bool has_host;
	bool has_port;               /* port valid without a host (a bad-host refusal) */
	struct dns_query *dq;
	struct conn_dial *dial;      /* while connecting only (connect.c) */
	char addr_text[EGRESS_ADDRSTRLEN];
	/* parent-proxy: the tunnel is asked of the parent (receipts say "via":"parent"), at
	 * the parent's port; the CONNECT's authority is made from addr_text or the name. */
	bool via_parent;
	bool parent_tls;             /* ubev is TLS to an https:// parent: no fast relay */
	uint16_t dial_port;
	bool counted;                /* in p->live */
	uint64_t bytes_up, bytes_down;
	int64_t start_ms;            /* CLOCK_MONOTONIC */
	int64_t last_activity;       /* CLOCK_MONOTONIC ms */
	struct conn_halves halves;   /* the tunnel's half-closes (relay.c) */
	/* HTTP: the head as it arrives, parsed where the last read stopped. */
	struct conn_http *http;
	/* HTTP forwarding: the head to send upstream, then exactly one body, every client
	 * byte after the head fed once to the framing that says where the body ends. */
	uint8_t *fwd_head;
	size_t fwd_head_len;
	struct http_framing framing;
	/* Our own read event of each socket (connread.c): into the client's input (cin) or
	 * an upstream bufferevent's until the fast relay, then the fast relay's own reads,
	 * 64 KiB at a time, written through when the other side's queue is empty (CONNECT
	 * and SOCKS tunnels, once the guard is done). A sink upstream's (usink) reads
	 * straight to the client (conn_up_read) until the fast relay. NULL for an https
	 * parent's TLS. */
	struct event *fast[2];       /* read events: [0] client, [1] upstream */
	uint8_t rd_want;             /* sides whose reads are on (connread.c), before bare */
	uint8_t rd_keep;             /* of the others, paused: event left registered */
	uint8_t rd_reg;              /* sides whose read event connread.c registered */
	uint32_t rd_hi[2];           /* each side's read bound (conn_read_bound), before bare */
	/* The sockets' write sides without a bufferevent: [0] the client's from its accept
	 * (fd -1 before), [1] a sink upstream's from its connect on (usink), or from
	 * conn_fast_start on (bare), when an upstream bufferevent is freed (ubev NULL).
	 * Their queues exist only while bytes wait (common/splice.c). */
	struct egress_sink sink[2];
	bool bare;                   /* the fast relay: both sides sinks, its own reads */
	/* The upstream of a CONNECT, SOCKS or native tunnel (not a parent's, not forwarding)
	 * is a sink from its connect on (sink[1], read by c->fast[1]): it never has a
	 * bufferevent (ubev NULL). Its reads before the fast relay are conn_up_read's. */
	bool usink;
	/* SNI guard: allocated while it inspects (CS_GUARD, CS_GUARD_OPEN), freed when it ends. */
	struct conn_guard *guard;
	char *sni;                   /* the server_name of the first ClientHello */
	/* Holding for the monitor's acknowledgement of its open or denial (conn_hold). */
	TAILQ_ENTRY(conn) held_entry;
	uint64_t hold;               /* the record's number in the engine's stream; 0: none */
	uint8_t held;                /* enum conn_held */
	uint8_t suspended;           /* what the hold turned off (CONN_SUSP_*, conn.c) */
	bool shut_skipped;           /* conn_half_shut skipped a shutdown while held */
};

enum conn_held { CONN_HELD_NONE, CONN_HELD_WAIT, CONN_HELD_EOF };

/* Side i (0 client, 1 upstream) is written through its sink, not a bufferevent. */
static inline bool
conn_sinked(const struct conn *c, int i)
{
	return i == 0 || c->bare || c->usink;
}

/* What conn_hold and conn_hold_suspend turned off (c->suspended). */
#define CONN_SUSP_READ(i)  (0x01u << (i))       /* 0 client, 1 upstream */
#define CONN_SUSP_WRITE(i) (0x04u << (i))       /* their writes, or the sinks' (bare) */
#define CONN_SUSP_FAST(i)  (0x10u << (i))       /* c->fast[i] */

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
};

extern struct conn *conn_guard_pending;  /* held client bytes to judge after a server read */

/* conn.c */
void conn_transition(struct conn *c, enum conn_event ev);
/* Right after an open or a denial is queued: nothing of c moves until the monitor has it. */
void conn_hold(struct conn *c);
const struct policy_settings *conn_settings(const struct conn *c);
void conn_log(const struct conn *c, const char *event, enum egress_reason reason,
    const char *why);
void conn_set_timer(struct conn *c, unsigned seconds);
void conn_answer_and_close(struct conn *c, const void *out, size_t n);
void conn_deny_receipt(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len);
void conn_deny(struct conn *c, enum egress_reason reason, const char *why, const uint8_t *raw,
    size_t raw_len, int http_status, int socks_rep);
bool conn_write_open(struct conn *c);
bool conn_account(struct conn *c, bool up, size_t n);
void conn_free(struct conn *c);
void conn_close(struct conn *c, enum egress_reason reason, const char *cause);

/* The client's input grew (connread.c): the state's reader takes it. */
void conn_client_readable(struct conn *c);
/* The client's read ended: what is BEV_EVENT_EOF or BEV_EVENT_ERROR (errno set). */
void conn_client_ended(struct conn *c, short what);

/* frontend.c */
void conn_client_read(struct conn *c);

/* connect.c */
void conn_decide(struct conn *c);
void conn_attempts_close(struct conn *c, int keep);
void conn_dial(struct conn *c, const struct addr *addrs, size_t n);

/* parent.c */
bool conn_parent_wanted(const struct conn *c);
bool conn_parent_resolves(const struct conn *c);
void conn_parent_dial(struct conn *c);
void conn_parent_start(struct conn *c, int fd);
void conn_parent_read(struct bufferevent *bev, void *arg);
void conn_parent_event(struct bufferevent *bev, short what, void *arg);
void conn_parent_timeout(struct conn *c);
void conn_parent_tls_shut(struct conn *c, struct bufferevent *bev);
void conn_dial_free(struct conn *c);

/* guard.c */
void conn_guard_read(struct conn *c);
bool conn_guard_stop(struct conn *c);
void conn_guard_refuse(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len);

/* relay.c */
void conn_start_relay(struct conn *c, int fd);
/*
 * egressd's own answer to the client (a method reply, a success answer): straight to its
 * socket when nothing is queued and no receipt of the turn waits for the monitor.
 */
void conn_answer(struct conn *c, const void *p, size_t len);
/*
 * May bytes for dst go straight to its socket in this callback: no receipt of the turn
 * waits for the monitor, and dst is not TLS to a parent (its bytes go through the TLS
 * bufferevent, never the socket).
 */
bool conn_write_now(const struct conn *c, const struct bufferevent *dst);
/* An upstream bufferevent's callbacks (a parent's, forwarding). */
void conn_relay_read(struct bufferevent *bev, void *arg);
void conn_relay_write(struct bufferevent *bev, void *arg);
void conn_relay_event(struct bufferevent *bev, short what, void *arg);
/* The client's, in a tunnel: its bytes grew, its read ended. */
void conn_relay_client_read(struct conn *c);
void conn_relay_client_event(struct conn *c, short what);
/* Any sink's write event (its owner's callback, common/splice.c). */
void conn_sink_write(evutil_socket_t fd, short what, void *arg);
/* len bytes at p for sink i; the bytes handed on (fewer only without memory). */
size_t conn_sink_send(struct conn *c, int i, const void *p, size_t len);
/* A side that saw EOF and is delivered: shut the other way; both done: close. */
void conn_propagate_eof(struct conn *c);
void conn_fast_start(struct conn *c);
/* What waits for side i (0 client, 1 upstream): its sink's queue, or the bufferevent's. */
size_t conn_queued(const struct conn *c, int i);
void conn_fast_read(evutil_socket_t fd, short what, void *arg);
/* A read of a sink upstream before the fast relay (c->usink): to the client's sink. */
void conn_up_read(struct conn *c);
/* n bytes at the front of the client's input to the upstream; the bytes handed on. */
size_t conn_push_up(struct conn *c, size_t n);
extern uint8_t conn_scratch[EGRESSD_RELAY_BUF];  /* the engine's one read buffer */

/* connread.c: side i's reads (0 client, 1 upstream) before the fast relay, ours. */
bool conn_own_reads(struct conn *c, int i);       /* makes c->fast[i]; false: no memory */
void conn_own_reads_free(struct conn *c, int i);  /* frees it (before bare) */
bool conn_sink_reads(struct conn *c, int i);      /* c->fast[i] for sink i's socket */
/* Side i's input holds at most hi bytes before its reads pause (0: no bound). */
void conn_read_bound(struct conn *c, int i, size_t hi);
void conn_read_on(struct conn *c, int i);
void conn_read_off(struct conn *c, int i);
void conn_read_pause(struct conn *c, int i);     /* off, the event left registered */
void conn_read_now(struct conn *c, int i);       /* a read in this loop turn, no poll */
bool conn_reading(const struct conn *c, int i);
void conn_idle_check(struct conn *c);

#endif
