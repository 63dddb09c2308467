/*
 * guard.c: the SNI guard. Once the tunnel is up and the policy says sni match or
 * required, the client's bytes are held until tls_scan (proto/tls.c) classifies them;
 * what passes is released (and counted, conn_account), a refusal is a deny receipt if
 * nothing flowed yet. Trusts nothing the client sends; the server's first bytes are only
 * looked at to know whether it asked for a second ClientHello.
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

#include "conn.h"
#include "splice.h"


/* The guard refuses: a deny receipt if nothing flowed yet, else the tunnel closes. */
void
conn_guard_refuse(struct conn *c, enum egress_reason reason, const char *why,
    const uint8_t *raw, size_t raw_len)
{
	free(c->guard);
	c->guard = NULL;
	if (conn_state_opened(c->state)) {
		conn_log(c, "guard", reason, why);
		conn_close(c, reason, "error");
		return;
	}
	/* Nothing reached the upstream: the attempt is a denial, with the SNI seen. */
	conn_deny_receipt(c, reason, why, raw, raw_len);
	conn_free(c);
}

/*
 * The guard lets go (it passed the client's bytes, or the client ended before sending
 * any): the open receipt if nothing wrote it yet (GUARD -open-> GUARD_OPEN), then on to
 * the relay (GUARD_OPEN -guard-end-> RELAY). False when the connection was closed.
 */
bool
conn_guard_stop(struct conn *c)
{
	free(c->guard);
	c->guard = NULL;
	if (!conn_write_open(c)) {
		conn_close(c, EGRESS_SHUTDOWN, "error");
		return false;
	}
	conn_transition(c, CE_GUARD_END);
	return true;
}

/* The guard is done: the client's bytes flow from now on. */
static void
conn_guard_end(struct conn *c)
{
	if (!conn_guard_stop(c))
		return;
	conn_set_timer(c, (unsigned)conn_settings(c)->timeout_idle);
	conn_fast_start(c);
}

/*
 * Releases n held bytes that passed to the upstream. They count against the byte budget
 * like relayed ones (before, they were counted but never checked: a tunnel whose hello
 * crossed the budget stayed open). False when that closed the connection.
 */
static bool
conn_guard_release(struct conn *c, size_t n)
{
	/* After the open's acknowledgement (conn_write_open): straight to the upstream. */
	size_t moved = conn_push_up(c, n);

	return moved == 0 || conn_account(c, true, moved);
}

/*
 * tls_scan's work area, one for the engine (one thread): each call scans the held bytes
 * from their start, so nothing in it outlives the call but what the result points at,
 * used before the next one. A guard of its own held 32 KiB that calloc zeroed at every
 * setup (a third of the engine's instructions per setup, callgrind).
 */
static uint8_t conn_guard_scratch[EGRESS_TLS_SCRATCH];

void
conn_guard_read(struct conn *c)
{
	struct evbuffer *in = c->cin;
	const struct policy_settings *s = conn_settings(c);
	struct tls_result res;

	for (int units = 0; units < 64; units++) {    /* bounded: a record per unit */
		size_t len = evbuffer_get_length(in);
		uint8_t *data;

		if (len == 0) {
			c->guard->held = false;
			conn_set_timer(c, (unsigned)s->timeout_idle);
			return;
		}
		data = evbuffer_pullup(in, (ev_ssize_t)len);
		if (c->guard->hello_passed && data[0] != 0x14) {
			/*
			 * After a ClientHello only a HelloRetryRequest makes the next handshake
			 * record a hello; until the server's answer is known the bytes wait.
			 */
			if (c->guard->hrr < 0) {
				if (!c->guard->held) {
					c->guard->held = true;
					conn_set_timer(c, (unsigned)s->timeout_handshake);
				}
				return;
			}
			if (c->guard->hrr == 0) {
				conn_guard_end(c);
				return;
			}
		}
		tls_scan(data, len, c->guard->first, conn_guard_scratch,
		    sizeof(conn_guard_scratch), &res);
		switch (res.unit) {
		case TLS_NEED_MORE:
			if (len >= CONN_GUARD_HOLD) {
				conn_guard_refuse(c, EGRESS_SNI_MALFORMED,
				    "ClientHello larger than the guard holds", NULL, 0);
				return;
			}
			if (!c->guard->held) {
				/* Held bytes must complete within the handshake timeout. */
				c->guard->held = true;
				conn_set_timer(c, (unsigned)s->timeout_handshake);
			}
			return;
		case TLS_NOT_TLS:
			if (s->sni == SNI_REQUIRED) {
				conn_guard_refuse(c, EGRESS_NOT_TLS,
				    "the client does not speak TLS and the policy says sni required",
				    NULL, 0);
				return;
			}
			conn_guard_end(c);
			return;
		case TLS_HELLO:
			if (res.has_sni && c->sni == NULL)
				c->sni = xstrdup(res.sni);
			if (res.ech) {
				conn_guard_refuse(c, EGRESS_SNI_ECH,
				    "ClientHello carries encrypted_client_hello", NULL, 0);
				return;
			}
			if (!res.has_sni && c->host.kind == HOST_NAME) {
				conn_guard_refuse(c, EGRESS_SNI_MISSING,
				    "ClientHello without server_name for a name", NULL, 0);
				return;
			}
			if (res.has_sni && strcmp(res.sni, c->host.name) != 0) {
				char why[EGRESS_HOST_MAX + 64];

				if (c->sni != NULL && strcmp(c->sni, res.sni) != 0) {
					free(c->sni);
					c->sni = xstrdup(res.sni);
				}
				snprintf(why, sizeof(why), "server_name %s is not the requested host",
				    res.sni);
				conn_guard_refuse(c, EGRESS_SNI_MISMATCH, why, NULL, 0);
				return;
			}
			if (!conn_write_open(c)) {
				conn_close(c, EGRESS_SHUTDOWN, "error");
				return;
			}
			if (!conn_guard_release(c, res.len))
				return;
			c->guard->first = false;
			c->guard->held = false;
			/* A second hello (after a retry) is the last one a handshake may have. */
			if (c->guard->hello_passed) {
				c->guard->hrr = 0;
			} else {
				c->guard->hello_passed = true;
				c->guard->hrr = -1;
				c->guard->nserver = 0;
			}
			break;
		case TLS_PASS:
			if (!conn_guard_release(c, res.len))
				return;
			c->guard->first = false;
			break;
		case TLS_END:
			conn_guard_end(c);
			return;
		case TLS_ERROR:
		default:
			conn_guard_refuse(c, res.reason ? res.reason : EGRESS_SNI_MALFORMED,
			    res.why ? res.why : "malformed ClientHello", res.raw, res.raw_len);
			return;
		}
	}
}
