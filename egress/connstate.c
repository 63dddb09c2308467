/*
 * connstate.c: the state table of a connection (conn.h): for every state and event, the
 * next state, or CS_REFUSED; and what each state owes (a tunnel, an open receipt, the
 * guard). conn_transition (conn.c) makes every change of state through it, so that a path
 * the table does not list is a bug caught where it happens, never a connection in a state
 * nobody planned. Pure: no libevent, no allocation; the unit test
 * (tests/unit/check_connstate.c) walks every pair.
 *
 *   SNIFF      -sniff-*-> HTTP | SOCKS5 | SOCKS4 | NATIVE
 *   frontend   -resolve-> RESOLVE   -connect-> CONNECT
 *   RESOLVE    -connect-> CONNECT
 *   CONNECT    -open-> RELAY        (no guard: the open receipt, then the success answer)
 *   CONNECT    -connected-guard-> GUARD
 *   CONNECT    -parent-> PARENT     (parent-proxy: connected to it, CONNECT asked)
 *   PARENT     -open-> RELAY | -connected-guard-> GUARD (the parent's 2xx), as CONNECT
 *   GUARD      -open-> GUARD_OPEN   (a hello passed, the server spoke first, or the end)
 *   GUARD_OPEN -guard-end-> RELAY
 *   RELAY      -fast-> FAST
 *   any state before the tunnel  -answer-> DRAIN
 *
 * The open receipt is an event of its own (CE_OPEN, written by conn_write_open alone), so
 * the table itself says that no state relaying bytes is reached without it: GUARD has no
 * guard-end, only GUARD_OPEN has. RELAY, FAST and DRAIN have no way out but the close
 * (conn_close, conn_free), which ends the connection rather than changing its state.
 *
 * Inside the tunnel each direction's half-close has its own small table (conn_halves_step):
 *
 *   OPEN -eof-> EOF_SEEN -shut-> SHUT_SENT
 *
 * and the connection is done when both directions are SHUT_SENT; the close cause is the
 * direction that reached EOF_SEEN first.
 */
#include "config.h"

#include "conn.h"

#define R CS_REFUSED

/* [state][event]: the events in conn.h's order, one column each. */
static const enum conn_state conn_table[CS_COUNT][CE_COUNT] = {
	/*             http     socks5     socks4     native     resolve    connect
	 *             connected-guard open      guard-end  fast     answer  parent */
	[CS_SNIFF] = { CS_HTTP, CS_SOCKS5, CS_SOCKS4, CS_NATIVE, R,         R,
	               R,        R,        R,         R,        CS_DRAIN, R },
	[CS_HTTP] =  { R,       R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         R,        CS_DRAIN, R },
	[CS_SOCKS5] = { R,      R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         R,        CS_DRAIN, R },
	[CS_SOCKS4] = { R,      R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         R,        CS_DRAIN, R },
	[CS_NATIVE] = { R,      R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         R,        CS_DRAIN, R },
	[CS_RESOLVE] = { R,     R,         R,         R,         R,         CS_CONNECT,
	               R,        R,        R,         R,        CS_DRAIN, R },
	[CS_CONNECT] = { R,     R,         R,         R,         R,         R,
	               CS_GUARD, CS_RELAY, R,         R,        CS_DRAIN, CS_PARENT },
	[CS_PARENT] = { R,      R,         R,         R,         R,         R,
	               CS_GUARD, CS_RELAY, R,         R,        CS_DRAIN, R },
	[CS_GUARD] = { R,       R,         R,         R,         R,         R,
	               R,        CS_GUARD_OPEN, R,    R,        R, R },
	[CS_GUARD_OPEN] = { R,  R,         R,         R,         R,         R,
	               R,        R,        CS_RELAY,  R,        R, R },
	[CS_RELAY] = { R,       R,         R,         R,         R,         R,
	               R,        R,        R,         CS_FAST,  R, R },
	[CS_FAST] =  { R,       R,         R,         R,         R,         R,
	               R,        R,        R,         R,        R, R },
	[CS_DRAIN] = { R,       R,         R,         R,         R,         R,
	               R,        R,        R,         R,        R, R },
};

#undef R

/* What each state owes; the states before the tunnel and the drain owe none of these. */
#define CSF_TUNNEL 0x1u              /* the success answer went out: close, never answer */
#define CSF_OPENED 0x2u              /* the open receipt is written: a close receipt is owed */
#define CSF_GUARD  0x4u              /* the SNI guard inspects the client's bytes */

static const unsigned conn_state_flags[CS_COUNT] = {
	[CS_GUARD] = CSF_TUNNEL | CSF_GUARD,
	[CS_GUARD_OPEN] = CSF_TUNNEL | CSF_GUARD | CSF_OPENED,
	[CS_RELAY] = CSF_TUNNEL | CSF_OPENED,
	[CS_FAST] = CSF_TUNNEL | CSF_OPENED,
};

static const char *const conn_state_names[CS_COUNT] = {
	[CS_SNIFF] = "sniff",
	[CS_HTTP] = "http",
	[CS_SOCKS5] = "socks5",
	[CS_SOCKS4] = "socks4",
	[CS_NATIVE] = "native",
	[CS_RESOLVE] = "resolve",
	[CS_CONNECT] = "connect",
	[CS_PARENT] = "parent",
	[CS_GUARD] = "guard",
	[CS_GUARD_OPEN] = "guard-open",
	[CS_RELAY] = "relay",
	[CS_FAST] = "fast",
	[CS_DRAIN] = "drain",
};

static const char *const conn_event_names[CE_COUNT] = {
	[CE_SNIFF_HTTP] = "sniff-http",
	[CE_SNIFF_SOCKS5] = "sniff-socks5",
	[CE_SNIFF_SOCKS4] = "sniff-socks4",
	[CE_SNIFF_NATIVE] = "sniff-native",
	[CE_RESOLVE] = "resolve",
	[CE_CONNECT] = "connect",
	[CE_CONNECTED_GUARD] = "connected-guard",
	[CE_OPEN] = "open",
	[CE_GUARD_END] = "guard-end",
	[CE_FAST] = "fast",
	[CE_ANSWER] = "answer",
	[CE_PARENT] = "parent",
};

enum conn_state
conn_state_next(enum conn_state s, enum conn_event ev)
{
	if ((unsigned)s >= CS_COUNT || (unsigned)ev >= CE_COUNT)
		return CS_REFUSED;
	return conn_table[s][ev];
}

const char *
conn_state_name(enum conn_state s)
{
	return (unsigned)s < CS_COUNT ? conn_state_names[s] : "refused";
}

const char *
conn_event_name(enum conn_event ev)
{
	return (unsigned)ev < CE_COUNT ? conn_event_names[ev] : "?";
}

static bool
conn_state_has(enum conn_state s, unsigned flag)
{
	return (unsigned)s < CS_COUNT && (conn_state_flags[s] & flag) != 0;
}

bool
conn_state_tunnel(enum conn_state s)
{
	return conn_state_has(s, CSF_TUNNEL);
}

bool
conn_state_opened(enum conn_state s)
{
	return conn_state_has(s, CSF_OPENED);
}

bool
conn_state_guarded(enum conn_state s)
{
	return conn_state_has(s, CSF_GUARD);
}

/*
 * The half-close of each direction: OPEN -eof-> EOF_SEEN -shut-> SHUT_SENT, and nothing
 * else. SHUT_SENT has no way out, so once both directions are there (the connection is
 * done, relay.c closes it) every event is refused.
 */
static const enum conn_half conn_half_table[CH_COUNT][CHE_COUNT] = {
	/*                  eof          shut */
	[CH_OPEN] =      { CH_EOF_SEEN, CH_REFUSED },
	[CH_EOF_SEEN] =  { CH_REFUSED,  CH_SHUT_SENT },
	[CH_SHUT_SENT] = { CH_REFUSED,  CH_REFUSED },
};

static const char *const conn_half_names[CH_COUNT] = {
	[CH_OPEN] = "open",
	[CH_EOF_SEEN] = "eof-seen",
	[CH_SHUT_SENT] = "shut-sent",
};

static const char *const conn_half_event_names[CHE_COUNT] = {
	[CHE_EOF] = "eof",
	[CHE_SHUT] = "shut",
};

enum conn_half
conn_half_next(enum conn_half h, enum conn_half_event ev)
{
	if ((unsigned)h >= CH_COUNT || (unsigned)ev >= CHE_COUNT)
		return CH_REFUSED;
	return conn_half_table[h][ev];
}

const char *
conn_half_name(enum conn_half h)
{
	return (unsigned)h < CH_COUNT ? conn_half_names[h] : "refused";
}

const char *
conn_half_event_name(enum conn_half_event ev)
{
	return (unsigned)ev < CHE_COUNT ? conn_half_event_names[ev] : "?";
}

const char *
conn_dir_name(enum conn_dir d)
{
	return d == CD_UP ? "up" : d == CD_DOWN ? "down" : "none";
}

static enum conn_half *
conn_halves_at(struct conn_halves *hs, enum conn_dir d)
{
	return d == CD_UP ? &hs->up : d == CD_DOWN ? &hs->down : NULL;
}

enum conn_half
conn_halves_get(const struct conn_halves *hs, enum conn_dir d)
{
	return d == CD_UP ? hs->up : d == CD_DOWN ? hs->down : CH_REFUSED;
}

bool
conn_halves_step(struct conn_halves *hs, enum conn_dir d, enum conn_half_event ev)
{
	enum conn_half *h = conn_halves_at(hs, d), next;

	if (h == NULL || conn_halves_done(hs))
		return false;
	next = conn_half_next(*h, ev);
	if (next == CH_REFUSED)
		return false;
	*h = next;
	if (next == CH_EOF_SEEN && hs->first == CD_NONE)
		hs->first = d;
	return true;
}

bool
conn_halves_eof(const struct conn_halves *hs, enum conn_dir d)
{
	enum conn_half h = conn_halves_get(hs, d);

	return h == CH_EOF_SEEN || h == CH_SHUT_SENT;
}

bool
conn_halves_done(const struct conn_halves *hs)
{
	return hs->up == CH_SHUT_SENT && hs->down == CH_SHUT_SENT;
}

const char *
conn_halves_first_eof(const struct conn_halves *hs)
{
	return hs->first == CD_UP ? "client-eof" : hs->first == CD_DOWN ? "upstream-eof" : NULL;
}
