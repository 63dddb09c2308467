/*
 * dns.c: name resolution with c-ares, driven by libevent. Always the absolute name (a
 * trailing dot, ARES_FLAG_NOSEARCH: no search list, no ndots games), DNS only (no
 * /etc/hosts: the operator's own hosts file is read here instead and its answers are
 * validated like any other), A and AAAA. The resolvers are trusted to answer honestly;
 * every answer is still classified by the caller before anything connects to it, and its
 * CNAME records are not trusted to form a chain: dnschain.c checks every one of them
 * (linkage, canonical names, at most EGRESSD_MAX_CNAMES links) and refuses the name
 * otherwise, so that every name of the chain reaches the deny rules.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ares.h>

#include "egressd.h"

#define DNS_MAX_SOCKS 16             /* c-ares sockets watched at once */
#define DNS_HOSTS_MAX 4096           /* names in the operator's hosts file */
#define DNS_HOSTS_TTL 60

struct dns_query {
	dns_cb cb;
	void *arg;                   /* NULL once cancelled */
	struct event *timer;
	bool done;
	struct dns_answer *local;    /* an answer from the hosts file, or one c-ares gave
	                              * inside ares_getaddrinfo: delivered on the next turn */
	bool resolving;              /* inside ares_getaddrinfo (dns_resolve) */
	int64_t start_ms;
	char name[EGRESS_HOST_MAX + 2];  /* absolute: the canonical name and a dot */
	char qname[EGRESS_HOST_MAX + 1]; /* canonical, where every CNAME chain begins */
};

struct dns_sock {
	ares_socket_t fd;
	struct event *ev;
};

struct dns_host {
	char name[EGRESS_HOST_MAX + 1];
	struct addr addrs[EGRESSD_MAX_ADDRS];
	size_t naddrs;
};

static ares_channel dns_channel;
static bool dns_ready;
static struct event_base *dns_base;
static struct event *dns_timer;
static struct dns_sock dns_socks[DNS_MAX_SOCKS];
static struct dns_host *dns_hosts;
static size_t dns_nhosts;

static void dns_rearm(void);

static void
dns_sock_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)arg;
	ares_process_fd(dns_channel, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
	    (what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
	dns_rearm();
}

static void
dns_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	ares_process_fd(dns_channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	dns_rearm();
}

/* c-ares retransmits on its own clock: keep one timer at its next deadline. */
static void
dns_rearm(void)
{
	struct timeval tv, *tvp;

	if (!dns_ready)
		return;
	tvp = ares_timeout(dns_channel, NULL, &tv);
	if (tvp != NULL)
		evtimer_add(dns_timer, tvp);
	else
		evtimer_del(dns_timer);
}

static void
dns_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dns_sock *free_slot = NULL;

	(void)data;
	for (size_t i = 0; i < DNS_MAX_SOCKS; i++) {
		struct dns_sock *s = &dns_socks[i];

		if (s->ev != NULL && s->fd == fd) {
			event_free(s->ev);
			s->ev = NULL;
			free_slot = s;
			break;
		}
		if (s->ev == NULL && free_slot == NULL)
			free_slot = s;
	}
	if (!readable && !writable)
		return;
	if (free_slot == NULL) {
		log_error("event=dns-error detail=\"too many resolver sockets\"");
		return;
	}
	free_slot->fd = fd;
	free_slot->ev = event_new(dns_base, fd,
	    (short)((readable ? EV_READ : 0) | (writable ? EV_WRITE : 0) | EV_PERSIST),
	    dns_sock_cb, NULL);
	event_add(free_slot->ev, NULL);
}

/* The operator's hosts file: "ADDRESS NAME [NAME…]" lines, names canonicalised. */
static int
dns_load_hosts(const char *path)
{
	FILE *fp = fopen(path, "re");
	char line[1024];
	unsigned lineno = 0;

	if (fp == NULL) {
		log_startupx("hosts %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *save = NULL, *tok, *hash = strchr(line, '#');
		struct addr a;

		lineno++;
		if (hash)
			*hash = '\0';
		if ((tok = strtok_r(line, " \t\r\n", &save)) == NULL)
			continue;
		if (addr_parse(tok, strlen(tok), &a) == -1) {
			log_startupx_at(path, lineno, 0, "not an address: %s", tok);
			fclose(fp);
			return -1;
		}
		while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
			struct host h;
			const char *why;
			struct dns_host *dh = NULL;

			if (host_parse(tok, strlen(tok), &h, &why) == -1 || h.kind != HOST_NAME) {
				log_startupx_at(path, lineno, 0, "bad name %s", tok);
				fclose(fp);
				return -1;
			}
			for (size_t i = 0; i < dns_nhosts; i++)
				if (strcmp(dns_hosts[i].name, h.name) == 0)
					dh = &dns_hosts[i];
			if (dh == NULL) {
				if (dns_nhosts >= DNS_HOSTS_MAX) {
					log_startupx_at(path, 0, 0, "more than %d names",
					    DNS_HOSTS_MAX);
					fclose(fp);
					return -1;
				}
				dns_hosts = xreallocarray(dns_hosts, dns_nhosts + 1,
				    sizeof(*dns_hosts));
				dh = &dns_hosts[dns_nhosts++];
				memset(dh, 0, sizeof(*dh));
				snprintf(dh->name, sizeof(dh->name), "%s", h.name);
			}
			if (dh->naddrs < EGRESSD_MAX_ADDRS)
				dh->addrs[dh->naddrs++] = a;
		}
	}
	fclose(fp);
	return 0;
}

int
dns_init(struct event_base *base, const struct conf *conf)
{
	struct ares_options opts;
	int r, mask;

	if ((r = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
		log_startupx("c-ares: %s", ares_strerror(r));
		return -1;
	}
	memset(&opts, 0, sizeof(opts));
	opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	opts.sock_state_cb = dns_state_cb;
	opts.lookups = (char *)"b";          /* DNS only */
	opts.timeout = 2000;                 /* per try, ms; the policy's deadline caps it */
	opts.tries = 3;
	mask = ARES_OPT_FLAGS | ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS | ARES_OPT_TIMEOUTMS |
	    ARES_OPT_TRIES;
	if ((r = ares_init_options(&dns_channel, &opts, mask)) != ARES_SUCCESS) {
		log_startupx("c-ares: %s", ares_strerror(r));
		return -1;
	}
	if (conf->resolvers != NULL &&
	    (r = ares_set_servers_ports_csv(dns_channel, conf->resolvers)) != ARES_SUCCESS) {
		log_startupx("resolvers %s: %s", conf->resolvers, ares_strerror(r));
		ares_destroy(dns_channel);
		return -1;
	}
	if (conf->hosts != NULL && dns_load_hosts(conf->hosts) == -1) {
		ares_destroy(dns_channel);
		return -1;
	}
	dns_base = base;
	dns_timer = evtimer_new(base, dns_timer_cb, NULL);
	dns_ready = true;
	return 0;
}

void
dns_shutdown(void)
{
	if (!dns_ready)
		return;
	dns_ready = false;
	ares_destroy(dns_channel);     /* runs pending callbacks with ARES_EDESTRUCTION */
	for (size_t i = 0; i < DNS_MAX_SOCKS; i++)
		if (dns_socks[i].ev != NULL) {
			event_free(dns_socks[i].ev);
			dns_socks[i].ev = NULL;
		}
	event_free(dns_timer);
	free(dns_hosts);
	dns_hosts = NULL;
	dns_nhosts = 0;
	ares_library_cleanup();
}

/* Resolution latency buckets (seconds), as Prometheus histograms count them. */
const double dns_bucket_le[DNS_BUCKETS] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 1e300 };
static struct dns_stats dns_counts;

const struct dns_stats *
dns_stats(void)
{
	return &dns_counts;
}

static void
dns_observe(const struct dns_query *q, enum egress_reason r)
{
	double sec = (double)(egress_mono_ms() - q->start_ms) / 1000.0;
	size_t i = 0;

	if (r == EGRESS_SHUTDOWN)
		return;
	if (r == EGRESS_ALLOWED)
		dns_counts.ok++;
	else if (r == EGRESS_DNS_TIMEOUT)
		dns_counts.timeout++;
	else
		dns_counts.failure++;
	while (i < DNS_BUCKETS - 1 && sec > dns_bucket_le[i])
		i++;
	dns_counts.buckets[i]++;
	dns_counts.sum += sec;
}

static void
dns_finish(struct dns_query *q, const struct dns_answer *ans)
{
	if (q->done)
		return;
	q->done = true;
	dns_observe(q, ans->reason);
	evtimer_del(q->timer);
	if (q->arg != NULL)
		q->cb(q->arg, ans);
	q->arg = NULL;
}

static void
dns_free(struct dns_query *q)
{
	event_free(q->timer);
	free(q);
}

static void
dns_ares_cb(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct dns_query *q = arg;
	struct dns_answer ans;
	bool first = true;

	(void)timeouts;
	memset(&ans, 0, sizeof(ans));
	if (status == ARES_EDESTRUCTION) {
		ans.reason = EGRESS_SHUTDOWN;
		ans.why = "resolver shut down";
	} else if (status == ARES_ETIMEOUT) {
		ans.reason = EGRESS_DNS_TIMEOUT;
		ans.why = "no answer from the resolvers";
	} else if (status != ARES_SUCCESS || res == NULL) {
		ans.reason = EGRESS_DNS_FAILURE;
		ans.why = ares_strerror(status);
	} else {
		struct dns_chain chain;

		dns_chain_init(&chain, q->qname);
		ans.reason = EGRESS_ALLOWED;
		ans.ttl = UINT32_MAX;
		/*
		 * Every CNAME record is checked, none is dropped: a chain past the bound, or a
		 * record that is not part of the chain, refuses the name (dns-failure) rather
		 * than leave a name of it unjudged by the deny rules.
		 */
		for (struct ares_addrinfo_cname *cn = res->cnames; cn != NULL; cn = cn->next) {
			const char *why;

			if (dns_chain_link(&chain, &ans, cn->alias, cn->name, &why) == -1) {
				ans.reason = EGRESS_DNS_FAILURE;
				ans.why = why;
				break;
			}
			if (cn->ttl >= 0 && (uint32_t)cn->ttl < ans.ttl)
				ans.ttl = (uint32_t)cn->ttl;
		}
		for (struct ares_addrinfo_node *n = res->nodes;
		    ans.reason == EGRESS_ALLOWED && n != NULL; n = n->ai_next) {
			struct addr a;

			memset(&a, 0, sizeof(a));
			if (n->ai_family == AF_INET && n->ai_addrlen >= sizeof(struct sockaddr_in)) {
				a.family = AF_INET;
				memcpy(a.b, &((struct sockaddr_in *)(void *)n->ai_addr)->sin_addr, 4);
			} else if (n->ai_family == AF_INET6 &&
			    n->ai_addrlen >= sizeof(struct sockaddr_in6)) {
				a.family = AF_INET6;
				memcpy(a.b, &((struct sockaddr_in6 *)(void *)n->ai_addr)->sin6_addr,
				    16);
			} else
				continue;
			if (n->ai_ttl >= 0 && (uint32_t)n->ai_ttl < ans.ttl)
				ans.ttl = (uint32_t)n->ai_ttl;
			/*
			 * Every answer is kept for classification, up to the bound; past it the
			 * name is refused rather than judged on a part of its answers.
			 */
			if (ans.naddrs == EGRESSD_MAX_ADDRS) {
				ans.reason = EGRESS_DNS_FAILURE;
				ans.why = "more addresses than egressd keeps";
				break;
			}
			ans.addrs[ans.naddrs++] = a;
			first = false;
		}
		if (ans.reason == EGRESS_ALLOWED && first) {
			ans.reason = EGRESS_DNS_FAILURE;
			ans.why = "no address";
		}
		if (ans.ttl == UINT32_MAX)
			ans.ttl = 0;
	}
	if (res != NULL)
		ares_freeaddrinfo(res);
	if (q->resolving) {
		/*
		 * c-ares answered inside ares_getaddrinfo (a .onion name, no memory): the caller
		 * of dns_resolve has not stored q yet, and its callback must not run before it
		 * has. Delivered on the next loop turn, as a hosts-file answer (dns_resolve).
		 */
		q->local = xmalloc(sizeof(*q->local));
		*q->local = ans;
		return;
	}
	dns_finish(q, &ans);
	dns_free(q);
}

static void
dns_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_query *q = arg;
	struct dns_answer ans;

	(void)fd;
	(void)what;
	if (q->local != NULL) {
		dns_finish(q, q->local);
		free(q->local);
		dns_free(q);
		return;
	}
	memset(&ans, 0, sizeof(ans));
	ans.reason = EGRESS_DNS_TIMEOUT;
	ans.why = "timeout dns reached";
	/* c-ares still owns q and will call dns_ares_cb, which frees it. */
	dns_finish(q, &ans);
}

struct dns_query *
dns_resolve(const char *name, unsigned timeout_s, dns_cb cb, void *arg)
{
	struct dns_query *q = xcalloc(1, sizeof(*q));
	struct ares_addrinfo_hints hints;
	struct timeval tv = { (time_t)timeout_s, 0 };

	q->cb = cb;
	q->arg = arg;
	q->start_ms = egress_mono_ms();
	q->timer = evtimer_new(dns_base, dns_deadline_cb, q);
	snprintf(q->name, sizeof(q->name), "%s.", name);
	snprintf(q->qname, sizeof(q->qname), "%s", name);
	for (size_t i = 0; i < dns_nhosts; i++) {
		if (strcmp(dns_hosts[i].name, name) == 0) {
			/* From the operator's hosts file: answered on the next loop turn. */
			struct timeval now = { 0, 0 };

			q->local = xcalloc(1, sizeof(*q->local));
			q->local->reason = EGRESS_ALLOWED;
			q->local->naddrs = dns_hosts[i].naddrs;
			memcpy(q->local->addrs, dns_hosts[i].addrs, sizeof(q->local->addrs));
			q->local->ttl = DNS_HOSTS_TTL;
			evtimer_add(q->timer, &now);
			return q;
		}
	}
	evtimer_add(q->timer, &tv);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = ARES_AI_NOSORT;
	q->resolving = true;
	ares_getaddrinfo(dns_channel, q->name, NULL, &hints, dns_ares_cb, q);
	q->resolving = false;
	if (q->local != NULL) {
		struct timeval now = { 0, 0 };

		evtimer_add(q->timer, &now);    /* replaces the deadline: delivers q->local */
		return q;
	}
	dns_rearm();
	return q;
}

void
dns_cancel(struct dns_query *q)
{
	if (q == NULL)
		return;
	q->arg = NULL;
	q->done = true;
	evtimer_del(q->timer);
	if (q->local != NULL) {
		/* Not c-ares's: nothing else will free it. */
		free(q->local);
		dns_free(q);
	}
}
