/*
 * connect.c: the decision and the connect. Policy, then quotas; a name is resolved
 * (c-ares), every CNAME checked against the deny rules, every answer classified (one
 * refused address refuses the name), the set pinned; then the pinned addresses are tried,
 * families interleaved with a 250 ms stagger (RFC 8305), egressd's own listener refused.
 * With a parent-proxy the same decisions are taken, then the parent is dialled instead
 * (parent.c says what is asked of it).
 * Trusts the policy and the resolver's answers only as far as these checks let them.
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

static void conn_connect_next(struct conn *c);
static long conn_classify(struct conn *c, const struct addr *addrs, size_t n,
    struct addr_verdict *v);
static void conn_deny_private(struct conn *c, const struct addr *a,
    const struct addr_verdict *v);
static void conn_connect(struct conn *c, const struct addr *addrs, size_t n);
static void conn_dns_cb(void *arg, const struct dns_answer *ans);

static bool
conn_quota_ok(struct conn *c)
{
	struct principal *p = c->p;
	const struct policy_settings *s = conn_settings(c);
	time_t now = time(NULL);

	if (p->live >= s->quota_connections) {
		conn_deny(c, EGRESS_QUOTA_CONNECTIONS, "concurrent tunnels at the limit", NULL, 0,
		    0, -1);
		return false;
	}
	if (s->quota_bytes != EGRESS_UNLIMITED && p->bytes >= s->quota_bytes) {
		conn_deny(c, EGRESS_QUOTA_BYTES, "byte budget spent", NULL, 0, 0, -1);
		return false;
	}
	if (s->quota_rate != EGRESS_UNLIMITED) {
		if (p->rate_second != now) {
			p->rate_second = now;
			p->rate_count = 0;
		}
		if (p->rate_count >= s->quota_rate) {
			conn_deny(c, EGRESS_QUOTA_RATE, "new tunnels per second over the limit",
			    NULL, 0, 0, -1);
			return false;
		}
		p->rate_count++;
	}
	p->live++;
	c->counted = true;
	return true;
}

/* Every attempt still in flight closed, and the dial state gone (NULL: nothing to do). */
void
conn_dial_free(struct conn *c)
{
	struct conn_dial *d = c->dial;

	if (d == NULL)
		return;
	for (size_t i = 0; i < d->natt; i++) {
		if (d->att[i].fd == -1)
			continue;
		event_free(d->att[i].ev);
		close(d->att[i].fd);
	}
	if (d->stagger != NULL)
		event_free(d->stagger);
	free(d);
	c->dial = NULL;
}

static void
conn_connect_failed_all(struct conn *c)
{
	int e = c->dial->last_errno;
	char why[160];

	conn_dial_free(c);
	snprintf(why, sizeof(why), "%s%s", c->via_parent ? "the parent proxy: " : "",
	    strerror(e));
	if (e == ETIMEDOUT)
		conn_deny(c, EGRESS_CONNECT_TIMEOUT, c->via_parent ? why :
		    "no pinned address answered", NULL, 0, 0, -1);
	else
		conn_deny(c, EGRESS_CONNECT_REFUSED, why, NULL, 0, 0, -1);
}

static void
conn_attempt_done(struct conn *c, size_t i)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (!c->dial->att[i].now &&
	    getsockopt(c->dial->att[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err == 0) {
		int fd = c->dial->att[i].fd;

		event_free(c->dial->att[i].ev);
		c->dial->att[i].fd = -1;
		if (c->via_parent) {
			conn_dial_free(c);
			/* The deadline runs on until the parent answers. */
			conn_parent_start(c, fd);
			return;
		}
		addr_format(&c->dial->att[i].addr, c->addr_text);
		conn_dial_free(c);
		evtimer_del(c->timer);
		conn_start_relay(c, fd);
		return;
	}
	event_free(c->dial->att[i].ev);
	close(c->dial->att[i].fd);
	c->dial->att[i].fd = -1;
	c->dial->last_errno = err;
	c->dial->failed++;
	log_debug("event=connect-failed id=%s error=%s", c->id, strerror(err));
	/* A refusal needs no stagger: try the next address now. */
	if (c->dial->next < c->dial->naddrs)
		conn_connect_next(c);
	else if (c->dial->failed == c->dial->natt)
		conn_connect_failed_all(c);
}

static void
conn_attempt_ready(evutil_socket_t fd, short what, void *arg)
{
	struct attempt *a = arg;

	(void)fd;
	(void)what;
	conn_attempt_done(a->c, (size_t)(a - a->c->dial->att));
}

static void
conn_stagger_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_connect_next(arg);
}

/*
 * egressd's own listener (metrics-listen) is refused whatever the policy permits, as a
 * private-address with the range "metrics-listen". Asked of every address right before
 * its connect(): literal, resolved or pinned (a pin holds for every port, the listener is
 * one port), from every frontend, and after any change of the host's addresses.
 */
static bool
conn_refuse_own(struct conn *c, const struct addr *a)
{
	struct addr_verdict v;
	struct addr own;

	if (!metrics_is_own(a, c->port))
		return false;
	memset(&v, 0, sizeof(v));
	v.denied = true;
	v.range = "metrics-listen";
	v.name = "egressd's own listening address";
	own = *a;               /* a may point into the dial state, freed here */
	conn_dial_free(c);
	conn_deny_private(c, &own, &v);
	return true;
}

static void
conn_connect_next(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct attempt *a;
	int fd;

	/* The parent's address is the operator's: the target's checks were made already. */
	uint16_t port = c->via_parent ? c->dial_port : c->port;

	while (c->dial->next < c->dial->naddrs) {
		const struct addr *ad = &c->dial->addrs[c->dial->next++];

		if (!c->via_parent && conn_refuse_own(c, ad))
			return;

		memset(&ss, 0, sizeof(ss));
		if (ad->family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

			sin->sin_family = AF_INET;
			sin->sin_port = htons(port);
			memcpy(&sin->sin_addr, ad->b, 4);
			sslen = sizeof(*sin);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(port);
			memcpy(&sin6->sin6_addr, ad->b, 16);
			sslen = sizeof(*sin6);
		}
		fd = socket(ad->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1) {
			c->dial->last_errno = errno;
			if (errno == EMFILE || errno == ENFILE)
				break;
			continue;
		}
		if (connect(fd, (struct sockaddr *)&ss, sslen) == -1 && errno != EINPROGRESS) {
			c->dial->last_errno = errno;
			close(fd);
			continue;
		}
		a = &c->dial->att[c->dial->natt++];
		a->fd = fd;
		a->addr = *ad;
		a->c = c;
		a->ev = event_new(egressd_base, fd, EV_WRITE, conn_attempt_ready, a);
		/*
		 * Over loopback (an upstream or a parent proxy on this host) the handshake ran
		 * inside connect(): the attempt is done in this loop turn, without polling
		 * for writability and asking SO_ERROR (2 system calls and a turn fewer).
		 * getpeername is ENOTCONN while the SYN waits for its answer; then one call
		 * was spent against a round trip.
		 */
		a->now = getpeername(fd, (struct sockaddr *)&ss, &sslen) == 0;
		if (a->now)
			event_active(a->ev, EV_WRITE, 1);
		else
			event_add(a->ev, NULL);
		/* RFC 8305: the next address starts after the stagger unless this one fails. */
		if (c->dial->next < c->dial->naddrs) {
			struct timeval tv = { 0, EGRESSD_CONNECT_STAGGER_MS * 1000 };

			if (c->dial->stagger == NULL)
				c->dial->stagger = evtimer_new(egressd_base, conn_stagger_cb, c);
			evtimer_add(c->dial->stagger, &tv);
		}
		return;
	}
	if (c->dial->natt == c->dial->failed)
		conn_connect_failed_all(c);
}

/* Orders addresses IPv6 first, families alternating (RFC 8305 section 4). */
static void
conn_interleave(struct conn *c, const struct addr *in, size_t n)
{
	struct addr v4[EGRESSD_MAX_ADDRS], v6[EGRESSD_MAX_ADDRS];
	size_t n4 = 0, n6 = 0, i4 = 0, i6 = 0;

	for (size_t i = 0; i < n; i++) {
		if (in[i].family == AF_INET6)
			v6[n6++] = in[i];
		else
			v4[n4++] = in[i];
	}
	c->dial->naddrs = 0;
	while (i4 < n4 || i6 < n6) {
		if (i6 < n6)
			c->dial->addrs[c->dial->naddrs++] = v6[i6++];
		if (i4 < n4)
			c->dial->addrs[c->dial->naddrs++] = v4[i4++];
	}
	c->dial->next = 0;
}

static void
conn_connect(struct conn *c, const struct addr *addrs, size_t n)
{
	conn_transition(c, CE_CONNECT);
	c->dial = xcalloc(1, sizeof(*c->dial));
	/* One own address refuses the set, as one private answer does: none is tried. */
	for (size_t i = 0; i < n; i++)
		if (conn_refuse_own(c, &addrs[i]))
			return;
	conn_interleave(c, addrs, n);
	conn_set_timer(c, (unsigned)conn_settings(c)->timeout_connect);
	if (conn_parent_wanted(c)) {
		conn_parent_dial(c);    /* the validated set, or none under resolve parent */
		return;
	}
	conn_connect_next(c);
}

/* Dials addrs (the parent's): the same attempts, stagger and deadline as any connect. */
void
conn_dial(struct conn *c, const struct addr *addrs, size_t n)
{
	if (c->dial == NULL)
		c->dial = xcalloc(1, sizeof(*c->dial));
	conn_interleave(c, addrs, n);
	conn_connect_next(c);
}

/*
 * Every address must be global or inside a permit-range; one refused answer refuses the
 * name (a mixed answer set is itself a rebinding signature). Returns the index of the
 * refused address, or -1.
 */
static long
conn_classify(struct conn *c, const struct addr *addrs, size_t n, struct addr_verdict *v)
{
	const struct conf *conf = egressd_conf;
	const struct policy_settings *s = conn_settings(c);

	for (size_t i = 0; i < n; i++) {
		if (addr_classify(&addrs[i], conf->nat64, conf->nnat64, v) &&
		    !addr_permitted(&addrs[i], v, s->permit, s->npermit))
			return (long)i;
	}
	return -1;
}

static void
conn_deny_private(struct conn *c, const struct addr *a, const struct addr_verdict *v)
{
	char why[256];

	addr_format(a, c->addr_text);
	snprintf(why, sizeof(why), "%s is in %s (%s)%s%s", c->addr_text, v->range, v->name,
	    v->embedded ? " via " : "", v->embedded ? v->via : "");
	conn_deny(c, EGRESS_PRIVATE_ADDRESS, why, NULL, 0, 0, -1);
}

static void
conn_dns_cb(void *arg, const struct dns_answer *ans)
{
	struct conn *c = arg;
	struct addr_verdict v;
	long bad;

	c->dq = NULL;
	if (ans->reason != EGRESS_ALLOWED) {
		conn_deny(c, ans->reason, ans->why, NULL, 0, 0, -1);
		return;
	}
	/* A deny rule applies to every name of the CNAME chain. */
	for (size_t i = 0; i < ans->ncnames; i++) {
		struct host h;
		const char *why;
		unsigned line;

		if (host_parse(ans->cnames[i], strlen(ans->cnames[i]), &h, &why) == -1) {
			conn_deny(c, EGRESS_DNS_FAILURE, "CNAME target is not a valid name", NULL, 0,
			    0, -1);
			return;
		}
		if (policy_denies(c->p->policy, &h, c->port, &line)) {
			char whybuf[300];

			snprintf(whybuf, sizeof(whybuf), "CNAME %s denied by rule line %u", h.name,
			    line);
			conn_deny(c, EGRESS_DENIED_BY_RULE, whybuf, NULL, 0, 0, -1);
			return;
		}
	}
	if ((bad = conn_classify(c, ans->addrs, ans->naddrs, &v)) >= 0) {
		conn_deny_private(c, &ans->addrs[bad], &v);
		return;
	}
	principal_pin_put(c->p, c->host.name, ans->addrs, ans->naddrs, ans->ttl);
	conn_connect(c, ans->addrs, ans->naddrs);
}

void
conn_decide(struct conn *c)
{
	enum egress_reason r;
	unsigned line = 0;
	const struct pin *pin;
	struct addr_verdict v;

	evtimer_del(c->timer);
	conn_read_pause(c, 0);
	if (egressd_stopping) {
		conn_deny(c, EGRESS_SHUTDOWN, "egressd is stopping", NULL, 0, 0, -1);
		return;
	}
	r = policy_decide(c->p->policy, &c->host, c->port, &line);
	if (r != EGRESS_ALLOWED) {
		char why[64];

		if (line)
			snprintf(why, sizeof(why), "rule line %u", line);
		conn_deny(c, r, line ? why : "no rule allows it", NULL, 0, 0, -1);
		return;
	}
	if (!conn_quota_ok(c))
		return;
	if (c->host.kind == HOST_NAME && conn_parent_resolves(c)) {
		/* resolve parent: no resolver hears of the name, the parent resolves it. */
		conn_connect(c, NULL, 0);
		return;
	}
	if (c->host.kind != HOST_NAME) {
		if (conn_classify(c, &c->host.addr, 1, &v) >= 0) {
			conn_deny_private(c, &c->host.addr, &v);
			return;
		}
		conn_connect(c, &c->host.addr, 1);
		return;
	}
	if ((pin = principal_pin_get(c->p, c->host.name)) != NULL) {
		/*
		 * Pinned addresses were classified when they were pinned, under this policy;
		 * whether one is egressd's own listener depends on the port and on the host's
		 * addresses now, so conn_connect asks that again.
		 */
		conn_connect(c, pin->addrs, pin->naddrs);
		return;
	}
	conn_transition(c, CE_RESOLVE);
	c->dq = dns_resolve(c->host.name, (unsigned)conn_settings(c)->timeout_dns, conn_dns_cb,
	    c);
}
