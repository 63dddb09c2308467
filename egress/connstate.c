/*
 * connstate.c: the state table of a connection (conn.h): for every state and event, the
 * next state, or CS_REFUSED. conn_transition (conn.c) makes every change of state through
 * it, so that a path the table does not list is a bug caught where it happens, never a
 * connection in a state nobody planned. Pure: no libevent, no allocation; the unit test
 * (tests/unit/check_connstate.c) walks every pair.
 *
 *   SNIFF     -sniff-*-> HTTP | SOCKS5 | SOCKS4 | NATIVE
 *   frontend  -resolve-> RESOLVE   -connect-> CONNECT
 *   RESOLVE   -connect-> CONNECT
 *   CONNECT   -connected-> RELAY   -connected-guard-> GUARD
 *   GUARD     -guard-end-> RELAY
 *   any state before the tunnel  -answer-> DRAIN
 *
 * RELAY and DRAIN have no way out but the close (conn_close, conn_free), which ends the
 * connection rather than changing its state.
 */
#include "config.h"

#include "conn.h"

#define R CS_REFUSED

/* [state][event]: the events in conn.h's order, one column each. */
static const enum conn_state conn_table[CS_COUNT][CE_COUNT] = {
	/*             http     socks5     socks4     native     resolve    connect
	 *             connected guard     guard-end  answer */
	[CS_SNIFF] = { CS_HTTP, CS_SOCKS5, CS_SOCKS4, CS_NATIVE, R,         R,
	               R,        R,        R,         CS_DRAIN },
	[CS_HTTP] =  { R,       R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         CS_DRAIN },
	[CS_SOCKS5] = { R,      R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         CS_DRAIN },
	[CS_SOCKS4] = { R,      R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         CS_DRAIN },
	[CS_NATIVE] = { R,      R,         R,         R,         CS_RESOLVE, CS_CONNECT,
	               R,        R,        R,         CS_DRAIN },
	[CS_RESOLVE] = { R,     R,         R,         R,         R,         CS_CONNECT,
	               R,        R,        R,         CS_DRAIN },
	[CS_CONNECT] = { R,     R,         R,         R,         R,         R,
	               CS_RELAY, CS_GUARD, R,         CS_DRAIN },
	[CS_GUARD] = { R,       R,         R,         R,         R,         R,
	               R,        R,        CS_RELAY,  R },
	[CS_RELAY] = { R,       R,         R,         R,         R,         R,
	               R,        R,        R,         R },
	[CS_DRAIN] = { R,       R,         R,         R,         R,         R,
	               R,        R,        R,         R },
};

#undef R

static const char *const conn_state_names[CS_COUNT] = {
	[CS_SNIFF] = "sniff",
	[CS_HTTP] = "http",
	[CS_SOCKS5] = "socks5",
	[CS_SOCKS4] = "socks4",
	[CS_NATIVE] = "native",
	[CS_RESOLVE] = "resolve",
	[CS_CONNECT] = "connect",
	[CS_GUARD] = "guard",
	[CS_RELAY] = "relay",
	[CS_DRAIN] = "drain",
};

static const char *const conn_event_names[CE_COUNT] = {
	[CE_SNIFF_HTTP] = "sniff-http",
	[CE_SNIFF_SOCKS5] = "sniff-socks5",
	[CE_SNIFF_SOCKS4] = "sniff-socks4",
	[CE_SNIFF_NATIVE] = "sniff-native",
	[CE_RESOLVE] = "resolve",
	[CE_CONNECT] = "connect",
	[CE_CONNECTED] = "connected",
	[CE_CONNECTED_GUARD] = "connected-guard",
	[CE_GUARD_END] = "guard-end",
	[CE_ANSWER] = "answer",
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
