/*
 * parent.c: a parent proxy (parent-proxy in egressd.conf(5)). Every decision is taken as
 * without one: the policy, the quotas, and under `resolve local` the resolution, the
 * classification and the pin (connect.c). Only then, instead of connecting to the pinned
 * address, egressd connects to the parent (its address is the operator's: neither the
 * special-purpose ranges nor egressd's own listener apply to it) and asks
 * `CONNECT <pinned address>:<port>` (under `resolve parent`: `CONNECT <name>:<port>`,
 * the parent resolves). A 2xx answer is the tunnel, which then goes on exactly as a
 * direct one: the reply to the client, the SNI guard on the client's bytes, the open
 * receipt, the relay. Anything else is connect-refused with the parent's status line in
 * the log; no answer within `timeout connect` is connect-timeout.
 *
 * Trusts the parent's answer only as far as proto/parent.c parses it: bounded, its
 * status code alone decides, and the bytes after its head belong to the tunnel (they stay
 * in the upstream's input for the relay). The credential (auth FILE, read by the monitor
 * for the confined engine) goes into the CONNECT request and nowhere else: not the log,
 * not a receipt.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "conn.h"

static const struct conf_parent *
conn_parent_conf(void)
{
	return egressd_conf != NULL && egressd_conf->parent.url != NULL ?
	    &egressd_conf->parent : NULL;
}

bool
conn_parent_wanted(const struct conn *c)
{
	(void)c;
	return conn_parent_conf() != NULL;
}

bool
conn_parent_resolves(const struct conn *c)
{
	const struct conf_parent *pp = conn_parent_conf();

	(void)c;
	return pp != NULL && pp->resolve_parent;
}

/* The ubev is the parent's until its 2xx: gone before any refusal, so that no callback of
 * it runs in the drain. */
static void
conn_parent_fail(struct conn *c, enum egress_reason reason, const char *why)
{
	if (c->ubev != NULL) {
		bufferevent_free(c->ubev);
		c->ubev = NULL;
	}
	conn_deny(c, reason, why, NULL, 0, 0, -1);
}

static void
conn_parent_dns_cb(void *arg, const struct dns_answer *ans)
{
	struct conn *c = arg;
	char why[300];

	c->dq = NULL;
	if (ans->reason != EGRESS_ALLOWED || ans->naddrs == 0) {
		snprintf(why, sizeof(why), "the parent proxy's name: %s",
		    ans->why ? ans->why : "no address");
		conn_deny(c, ans->reason == EGRESS_DNS_TIMEOUT ? EGRESS_CONNECT_TIMEOUT :
		    EGRESS_CONNECT_REFUSED, why, NULL, 0, 0, -1);
		return;
	}
	conn_dial(c, ans->addrs, ans->naddrs);
}

/*
 * The tunnel goes through the parent: the CONNECT's authority is the address egressd
 * chose (c->addrs, the validated and pinned set; an IPv4 one first, the family a parent
 * is most likely to reach), or under resolve parent the name itself; then the parent's
 * own addresses are dialled. In CS_CONNECT, its deadline running.
 */
void
conn_parent_dial(struct conn *c)
{
	const struct conf_parent *pp = conn_parent_conf();
	const struct addr *target = NULL;

	c->via_parent = true;
	c->dial_port = pp->port;
	for (size_t i = 0; i < c->naddrs && target == NULL; i++)
		if (c->addrs[i].family == AF_INET)
			target = &c->addrs[i];
	if (target == NULL && c->naddrs > 0)
		target = &c->addrs[0];
	if (target != NULL) {
		addr_format(target, c->addr_text);
		snprintf(c->parent_authority, sizeof(c->parent_authority),
		    target->family == AF_INET6 ? "[%s]:%u" : "%s:%u", c->addr_text,
		    (unsigned)c->port);
	} else {
		snprintf(c->parent_authority, sizeof(c->parent_authority), "%s:%u", c->host.name,
		    (unsigned)c->port);
	}
	c->naddrs = c->next = 0;
	if (pp->literal) {
		conn_dial(c, &pp->addr, 1);
		return;
	}
	c->dq = dns_resolve(pp->host, (unsigned)conn_settings(c)->timeout_dns,
	    conn_parent_dns_cb, c);
}

/* Connected to the parent (fd): ask it for the tunnel (CONNECT -parent-> PARENT). */
void
conn_parent_start(struct conn *c, int fd)
{
	const struct conf_parent *pp = conn_parent_conf();
	uint8_t req[EGRESS_PARENT_REQUEST_MAX];
	size_t n;
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->ubev = bufferevent_socket_new(egressd_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->ubev == NULL) {
		close(fd);
		conn_deny(c, EGRESS_CONNECT_REFUSED, "no memory for the parent", NULL, 0, 0, -1);
		return;
	}
	n = parent_connect_request(c->parent_authority, pp->auth_b64, req, sizeof(req));
	if (n == 0) {
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, "the CONNECT for the parent does "
		    "not fit");
		return;
	}
	conn_transition(c, CE_PARENT);  /* installs the parent's callbacks on ubev */
	bufferevent_write(c->ubev, req, n);
	memset(req, 0, sizeof(req));
	bufferevent_enable(c->ubev, EV_READ | EV_WRITE);
	log_debug("event=parent-connect id=%s authority=%s", c->id, c->parent_authority);
}

/* The parent's answer, as it arrives: a 2xx head starts the tunnel, anything else ends. */
void
conn_parent_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	size_t n = len < EGRESS_PARENT_HEAD_MAX ? len : EGRESS_PARENT_HEAD_MAX;
	struct parent_answer a;
	const uint8_t *buf;
	const char *why;
	char text[128];

	if (c->state != CS_PARENT || n == 0)
		return;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)n)) == NULL) {
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, "no memory for the parent's answer");
		return;
	}
	switch (parent_parse_answer(buf, n, &a, &why)) {
	case PROTO_NEED_MORE:
		return;
	case PROTO_ERROR:
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, why);
		return;
	case PROTO_OK:
		break;
	}
	if (a.status < 200 || a.status > 299) {
		/* The status line is the parent's text: conn_log escapes it (log_value). */
		snprintf(text, sizeof(text), "the parent answered %.*s",
		    (int)(a.line_len < 96 ? a.line_len : 96), (const char *)a.line);
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, text);
		return;
	}
	/* What follows the head is the tunnel's first bytes: left in ubev's input. */
	evbuffer_drain(in, a.head_len);
	evtimer_del(c->timer);
	log_debug("event=parent-tunnel id=%s status=%d", c->id, a.status);
	conn_start_relay(c, -1);
}

void
conn_parent_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	char why[160];

	(void)bev;
	if (c->state != CS_PARENT)
		return;
	if (what & BEV_EVENT_EOF) {
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, "the parent closed without answering");
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		snprintf(why, sizeof(why), "the parent: %s", strerror(EVUTIL_SOCKET_ERROR()));
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, why);
	}
}

/* The deadline of timeout connect passed while the parent had not answered. */
void
conn_parent_timeout(struct conn *c)
{
	conn_parent_fail(c, EGRESS_CONNECT_TIMEOUT, "the parent did not answer in time");
}
