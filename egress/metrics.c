/*
 * metrics.c: egressd's counters in the Prometheus text exposition format, for
 * `egressctl metrics` (control socket) and, with metrics-listen, GET /metrics over HTTP
 * (libevent's evhttp). The counters count what the receipts say: opens, closes by reason
 * (with the bytes of closed tunnels), denials by reason (collapsed ones counted). Out of
 * descriptors, the HTTP listener pauses (common/accept.c) instead of spinning.
 *
 * It also answers, for conn.c, whether a destination is this listener: egressd must never
 * carry a workload's tunnel to its own /metrics, whatever the policy permits. That answer
 * trusts the kernel (what a bind() says is local) and nothing the workload sent.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "egressd.h"

static struct evhttp *metrics_http;
static struct evconnlistener *metrics_lev;
static void metrics_listen_onoff(bool on, void *arg);
/* Out of descriptors: the HTTP listener pauses too (common/accept.c). */
static struct egress_accept_pause metrics_pause = { .listen = metrics_listen_onoff };
static struct addr metrics_addr;
static struct addr metrics_addr4;    /* the IPv4 a mapped or otherwise embedding address carries */
static bool metrics_has_addr4;
static bool metrics_wild;            /* bound to 0.0.0.0 or :: */
static bool metrics_wild4;           /* ... to an IPv4 wildcard: IPv4 destinations only */
static uint16_t metrics_port;
static bool metrics_on;

static bool
metrics_unspecified(const struct addr *a)
{
	static const uint8_t zero[16];

	return memcmp(a->b, zero, a->family == AF_INET ? 4 : 16) == 0;
}

/*
 * Is a an address of this host? With a wildcard listener every one of them reaches it.
 * The kernel is asked the way connect() will ask it: a bind() to a:0 succeeds exactly
 * for a local address (RTN_LOCAL: any address of any interface, 127.0.0.0/8, AnyIP
 * "local" routes), fails with EADDRNOTAVAIL otherwise. Asked at every check, so an address
 * added later counts at once. Not getifaddrs(3): it needs netlink, which egressd.service
 * (RestrictAddressFamilies) and the private egressd's seccomp filter do not allow, and it
 * misses local routes. Any other failure (no socket, a link-local address without a
 * scope, ip_nonlocal_bind making every bind succeed) counts as local: the cost of a wrong
 * "local" is one refused tunnel to this one port, the cost of a wrong "not local" is a
 * workload reading egressd's own listener.
 */
static bool
metrics_local(const struct addr *a)
{
	static const struct cidr loop4 = { { AF_INET, { 127 } }, 8 };
	static const struct addr loop6 = { AF_INET6, { [15] = 1 } };
	struct sockaddr_storage ss;
	socklen_t sslen;
	int fd, r, e;

	if (cidr_contains(&loop4, a) || addr_equal(a, &loop6))
		return true;
	memset(&ss, 0, sizeof(ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, a->b, 4);
		sslen = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, a->b, 16);
		sslen = sizeof(*sin6);
	}
	if ((fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return true;
	r = bind(fd, (struct sockaddr *)&ss, sslen);
	e = errno;
	close(fd);
	return r == 0 || e != EADDRNOTAVAIL;
}

/* What the listener's address is, once, when it starts listening. */
static void
metrics_own_init(void)
{
	struct addr_verdict v;

	(void)addr_classify(&metrics_addr, egressd_conf->nat64, egressd_conf->nnat64, &v);
	metrics_has_addr4 = v.embedded;
	metrics_addr4 = v.v4;
	metrics_wild = metrics_unspecified(&metrics_addr) ||
	    (metrics_has_addr4 && metrics_unspecified(&metrics_addr4));
	metrics_wild4 = metrics_addr.family == AF_INET || metrics_has_addr4;
}

/* One form of a destination against the listener. */
static bool
metrics_matches(const struct addr *a)
{
	/* connect() to 0.0.0.0 or :: goes to loopback (Linux): it reaches every listener. */
	if (metrics_unspecified(a))
		return true;
	if (metrics_wild) {
		/* 0.0.0.0 takes IPv4 only; :: takes both (IPV6_V6ONLY is not set). */
		if (metrics_wild4 && a->family != AF_INET)
			return false;
		return metrics_local(a);
	}
	return addr_equal(a, &metrics_addr) ||
	    (metrics_has_addr4 && addr_equal(a, &metrics_addr4));
}

bool
metrics_is_own(const struct addr *a, uint16_t port)
{
	struct addr_verdict v;

	if (!metrics_on || port != metrics_port)
		return false;
	if (metrics_matches(a))
		return true;
	/*
	 * ::ffff:127.0.0.1 is 127.0.0.1 to the kernel; the other forms that carry an IPv4
	 * (NAT64, 6to4, Teredo, IPv4-compatible, ISATAP, the operator's nat64-prefix) may
	 * lead back to this host through a translator on it: every form the classification
	 * decodes is compared by the IPv4 it carries.
	 */
	(void)addr_classify(a, egressd_conf->nat64, egressd_conf->nnat64, &v);
	return v.embedded && metrics_matches(&v.v4);
}

static void
metrics_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

char *
metrics_text(size_t *len)
{
	struct evbuffer *b = evbuffer_new();
	const struct dns_stats *d = dns_stats();
	struct principal *p;
	uint64_t cum = 0;
	char *out;
	unsigned np = 0;

	if (b == NULL)
		abort();
	TAILQ_FOREACH(p, &principals, entry)
		np++;
	metrics_head(b, "egress_principals", "gauge", "Principals egressd serves.");
	evbuffer_add_printf(b, "egress_principals %u\n", np);
	metrics_head(b, "egress_connections", "gauge",
	    "Principal connections open, in any phase.");
	evbuffer_add_printf(b, "egress_connections %u\n", conn_count());

	metrics_head(b, "egress_tunnels_active", "gauge",
	    "Tunnels counted against quota connections, by principal.");
	TAILQ_FOREACH(p, &principals, entry)
		evbuffer_add_printf(b, "egress_tunnels_active{principal=\"%s\"} %u\n", p->name,
		    p->live);
	metrics_head(b, "egress_tunnels_opened_total", "counter",
	    "Open receipts, by principal.");
	TAILQ_FOREACH(p, &principals, entry)
		evbuffer_add_printf(b, "egress_tunnels_opened_total{principal=\"%s\"} %llu\n",
		    p->name, (unsigned long long)p->total_allowed);
	metrics_head(b, "egress_tunnels_closed_total", "counter",
	    "Close receipts, by principal and reason.");
	TAILQ_FOREACH(p, &principals, entry)
		for (int r = 0; r < EGRESS_REASON_COUNT; r++)
			if (p->closed[r] != 0)
				evbuffer_add_printf(b, "egress_tunnels_closed_total{principal=\"%s\","
				    "reason=\"%s\"} %llu\n", p->name, egress_reason_name((enum egress_reason)r),
				    (unsigned long long)p->closed[r]);
	metrics_head(b, "egress_denials_total", "counter",
	    "Denials (deny receipts, with their count), by principal and reason.");
	TAILQ_FOREACH(p, &principals, entry)
		for (int r = 0; r < EGRESS_REASON_COUNT; r++)
			if (p->denied[r] != 0)
				evbuffer_add_printf(b, "egress_denials_total{principal=\"%s\","
				    "reason=\"%s\"} %llu\n", p->name, egress_reason_name((enum egress_reason)r),
				    (unsigned long long)p->denied[r]);
	metrics_head(b, "egress_quota_hits_total", "counter",
	    "Quota refusals and quota-bytes closes, by principal and quota.");
	TAILQ_FOREACH(p, &principals, entry) {
		evbuffer_add_printf(b, "egress_quota_hits_total{principal=\"%s\",quota=\"connections\"}"
		    " %llu\n", p->name, (unsigned long long)p->denied[EGRESS_QUOTA_CONNECTIONS]);
		evbuffer_add_printf(b, "egress_quota_hits_total{principal=\"%s\",quota=\"rate\"} %llu\n",
		    p->name, (unsigned long long)p->denied[EGRESS_QUOTA_RATE]);
		evbuffer_add_printf(b, "egress_quota_hits_total{principal=\"%s\",quota=\"bytes\"} %llu\n",
		    p->name, (unsigned long long)(p->denied[EGRESS_QUOTA_BYTES] +
		    p->closed[EGRESS_QUOTA_BYTES]));
	}
	metrics_head(b, "egress_bytes_total", "counter",
	    "Bytes of closed tunnels, as their close receipts count them, by direction.");
	TAILQ_FOREACH(p, &principals, entry) {
		evbuffer_add_printf(b, "egress_bytes_total{principal=\"%s\",direction=\"up\"} %llu\n",
		    p->name, (unsigned long long)p->closed_up);
		evbuffer_add_printf(b, "egress_bytes_total{principal=\"%s\",direction=\"down\"} %llu\n",
		    p->name, (unsigned long long)p->closed_down);
	}
	metrics_head(b, "egress_synthetic_names", "gauge",
	    "Names the principal's synthetic map holds (at most synthetic-max).");
	TAILQ_FOREACH(p, &principals, entry)
		evbuffer_add_printf(b, "egress_synthetic_names{principal=\"%s\"} %zu\n", p->name,
		    p->synth != NULL ? synth_count(p->synth) : 0);
	metrics_head(b, "egress_synthetic_recycled_total", "counter",
	    "Names recycled out of the principal's synthetic map (their addresses bad-host).");
	TAILQ_FOREACH(p, &principals, entry)
		evbuffer_add_printf(b, "egress_synthetic_recycled_total{principal=\"%s\"} %llu\n",
		    p->name, (unsigned long long)(p->synth_recycled +
		    (p->synth != NULL ? synth_recycled(p->synth) : 0)));
	metrics_head(b, "egress_dns_queries_total", "counter", "Name resolutions, by result.");
	evbuffer_add_printf(b, "egress_dns_queries_total{result=\"ok\"} %llu\n",
	    (unsigned long long)d->ok);
	evbuffer_add_printf(b, "egress_dns_queries_total{result=\"failure\"} %llu\n",
	    (unsigned long long)d->failure);
	evbuffer_add_printf(b, "egress_dns_queries_total{result=\"timeout\"} %llu\n",
	    (unsigned long long)d->timeout);
	metrics_head(b, "egress_dns_duration_seconds", "histogram",
	    "Time to resolve a name (A and AAAA), in seconds.");
	for (int i = 0; i < DNS_BUCKETS; i++) {
		cum += d->buckets[i];
		if (i == DNS_BUCKETS - 1)
			evbuffer_add_printf(b, "egress_dns_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
			    (unsigned long long)cum);
		else
			evbuffer_add_printf(b, "egress_dns_duration_seconds_bucket{le=\"%g\"} %llu\n",
			    dns_bucket_le[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(b, "egress_dns_duration_seconds_sum %.6f\n", d->sum);
	evbuffer_add_printf(b, "egress_dns_duration_seconds_count %llu\n",
	    (unsigned long long)cum);
	metrics_head(b, "egress_receipts_written_total", "counter",
	    "Receipt records in the chain (the last seq).");
	evbuffer_add_printf(b, "egress_receipts_written_total %llu\n",
	    (unsigned long long)receipt_seq());
	*len = evbuffer_get_length(b);
	out = xmalloc(*len + 1);
	evbuffer_remove(b, out, *len);
	out[*len] = '\0';
	evbuffer_free(b);
	return out;
}

static void
metrics_http_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *b;
	size_t len;
	char *text;

	(void)arg;
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "only GET");
		return;
	}
	if ((b = evbuffer_new()) == NULL) {
		evhttp_send_error(req, 500, "no memory");
		return;
	}
	text = metrics_text(&len);
	evbuffer_add(b, text, len);
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	    "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
metrics_notfound_cb(struct evhttp_request *req, void *arg)
{
	(void)arg;
	evhttp_send_error(req, 404, "only /metrics");
}

static void
metrics_listen_onoff(bool on, void *arg)
{
	(void)arg;
	if (on) {
		evconnlistener_enable(metrics_lev);
		return;
	}
	evconnlistener_disable(metrics_lev);
	log_warnx("event=accept-paused listener=metrics detail=\"out of descriptors, accepting "
	    "again in %ds\"", EGRESS_ACCEPT_PAUSE_MS / 1000);
}

/*
 * evhttp accepts in libevent's evconnlistener, which on an error it cannot retry (EMFILE
 * among them) calls this and returns with the listener still on and the connection still
 * queued: without the pause the event loop would spin on it.
 */
static void
metrics_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	int e = EVUTIL_SOCKET_ERROR();

	(void)lev;
	(void)arg;
	if (e == EMFILE || e == ENFILE)
		egress_accept_pause(&metrics_pause);
	else
		log_warnx("event=accept-error listener=metrics error=%s", strerror(e));
}

/* The monitor's half: the listening TCP socket of metrics-listen ADDR:PORT. */
int
metrics_socket(const char *spec)
{
	struct egress_hostport hp;
	struct sockaddr_storage ss;
	socklen_t sl;
	struct addr a;
	int fd, on = 1;
	uint16_t port;

	if (egress_hostport_split(spec, strlen(spec), &hp) == -1 ||
	    addr_parse(hp.host, hp.hostlen, &a) == -1) {
		log_startupx("metrics-listen %s: not ADDR:PORT", spec);
		return -1;
	}
	port = (uint16_t)atoi(hp.port);
	memset(&ss, 0, sizeof(ss));
	if (a.family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a.b, 4);
		sl = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a.b, 16);
		sl = sizeof(*sin6);
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&ss, sl) == -1 || listen(fd, 128) == -1) {
		log_startupx("metrics-listen %s: cannot listen: %s", spec, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/* The engine's half: serves GET /metrics on the monitor's socket fd. */
int
metrics_listen(struct event_base *base, const char *spec, int fd)
{
	struct evhttp_bound_socket *bound;
	struct egress_hostport hp;

	if (egress_hostport_split(spec, strlen(spec), &hp) == -1 ||
	    addr_parse(hp.host, hp.hostlen, &metrics_addr) == -1)
		return -1;
	metrics_port = (uint16_t)atoi(hp.port);
	metrics_own_init();
	metrics_pause.base = base;
	if ((metrics_http = evhttp_new(base)) == NULL ||
	    (bound = evhttp_accept_socket_with_handle(metrics_http, fd)) == NULL ||
	    (metrics_lev = evhttp_bound_socket_get_listener(bound)) == NULL ||
	    egress_accept_pause_init(&metrics_pause) == -1) {
		log_startupx("metrics-listen %s: cannot listen", spec);
		return -1;
	}
	evconnlistener_set_error_cb(metrics_lev, metrics_accept_error_cb);
	evhttp_set_allowed_methods(metrics_http, EVHTTP_REQ_GET);
	evhttp_set_timeout(metrics_http, 10);
	evhttp_set_max_headers_size(metrics_http, 8192);
	evhttp_set_max_body_size(metrics_http, 0);
	evhttp_set_cb(metrics_http, "/metrics", metrics_http_cb, NULL);
	evhttp_set_gencb(metrics_http, metrics_notfound_cb, NULL);
	metrics_on = true;
	return 0;
}

void
metrics_shutdown(void)
{
	egress_accept_pause_clear(&metrics_pause);
	if (metrics_http != NULL)
		evhttp_free(metrics_http);
	metrics_http = NULL;
	metrics_lev = NULL;
	metrics_on = false;
}
