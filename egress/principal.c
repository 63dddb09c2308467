/*
 * principal.c: principals and their listeners. A principal is one AF_UNIX stream socket
 * that egressd creates itself, directly inside runtime-dir (never by following a path a
 * caller chose elsewhere), mode 0600, owned by its owner; its device and inode are
 * reported so that clients can pin it. Whoever can connect to it acts as the principal:
 * the listener is the identity, no secret travels.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "egressd.h"

#define PRINCIPAL_BACKLOG 128

struct principal_list principals = TAILQ_HEAD_INITIALIZER(principals);
static void principal_listen(bool on, void *arg);
/* Out of descriptors: every principal's listener pauses (common/accept.c). */
static struct egress_accept_pause accept_pause = { .listen = principal_listen };

static void principal_accept_cb(evutil_socket_t fd, short what, void *arg);
static void principal_deny_flush(struct principal *p);

struct principal *
principal_find(const char *name)
{
	struct principal *p;

	TAILQ_FOREACH(p, &principals, entry)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

/*
 * The pause's switch for all principals at once: one that runs out of descriptors runs
 * out for all. A stopping egressd accepts nothing again.
 */
static void
principal_listen(bool on, void *arg)
{
	struct principal *p;

	(void)arg;
	if (on && egressd_stopping)
		return;
	TAILQ_FOREACH(p, &principals, entry) {
		if (on)
			event_add(p->ev_accept, NULL);
		else
			event_del(p->ev_accept);
	}
	if (!on)
		log_warnx("event=accept-paused listener=principals detail=\"out of descriptors, "
		    "accepting again in %ds\"", EGRESS_ACCEPT_PAUSE_MS / 1000);
}

static void
principal_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct principal *p = arg;

	/*
	 * One connection per wake-up: the listener's event is level-triggered, so a poll
	 * reports it again while connections wait, and no accept4 is spent to learn that the
	 * queue is empty (one call of every sequential setup). The other listeners and the
	 * tunnels get their turn in between.
	 */
	int fd = egress_accept(lfd, &accept_pause);

	(void)what;
	if (fd != -1) {
		conn_accept(p, fd);
		return;
	}
	if (errno == EMFILE || errno == ENFILE)
		;       /* paused (egress_accept) */
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
	    errno != ECONNABORTED)
		log_warn("event=accept-error principal=%s", p->name);
}

struct principal_spec
principal_spec_conf(const struct conf_principal *cp)
{
	return (struct principal_spec){
		.name = cp->name,
		.socket = cp->socket,
		.policy_file = cp->policy,
		.has_owner = cp->has_owner,
		.owner_uid = cp->owner_uid,
		.owner_gid = cp->owner_gid,
		.has_peer_uid = cp->has_peer_uid,
		.peer_uid = cp->peer_uid,
		.from_conf = true,
		.open_kind = MW_OPEN_CONF_FILE,
	};
}

struct principal *
principal_create(const struct principal_spec *spec, char *err, size_t errlen)
{
	const char *name = spec->name, *socket_path = spec->socket;
	const char *policy_file = spec->policy_file;
	struct principal *p;
	struct policy *pol;

	if (!conf_valid_name(name)) {
		snprintf(err, errlen, "bad principal name '%s'", name);
		return NULL;
	}
	if (principal_find(name) != NULL) {
		snprintf(err, errlen, "principal '%s' exists", name);
		return NULL;
	}
	/* The pause's timer before the first listener, not when descriptors run out. */
	accept_pause.base = egressd_base;
	if (egress_accept_pause_init(&accept_pause) == -1) {
		snprintf(err, errlen, "no memory");
		return NULL;
	}
	if ((pol = egressd_load_policy_as(policy_file, spec->open_kind, spec->peer_fd, err,
	    errlen)) == NULL)
		return NULL;
	p = xcalloc(1, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->socket = xstrdup(socket_path);
	p->policy_file = xstrdup(policy_file);
	p->policy = pol;
	policy_digest(pol, p->digest);
	if (spec->adopt_digest != NULL && strcmp(spec->adopt_digest, p->digest) != 0) {
		snprintf(err, errlen, "policy %s changed while the engine restarted (was %s, is "
		    "%s): the principal is removed", policy_file, spec->adopt_digest, p->digest);
		policy_free(pol);
		free(p->socket);
		free(p->policy_file);
		free(p);
		return NULL;
	}
	/* Not geteuid(): after the drop to `user` that is no longer egressd's own. */
	p->owner_uid = spec->has_owner ? spec->owner_uid : egressd_uid;
	p->owner_gid = spec->has_owner ? spec->owner_gid : egressd_gid;
	p->has_peer_uid = spec->has_peer_uid;
	p->peer_uid = spec->peer_uid;
	TAILQ_INIT(&p->pins);
	TAILQ_INIT(&p->conns);
	if (spec->adopted) {
		p->fd = spec->adopt_fd;
		p->dev = spec->adopt_dev;
		p->ino = spec->adopt_ino;
	} else {
		p->fd = priv_listen(spec, p->digest, p->owner_uid, p->owner_gid, &p->dev, &p->ino);
	}
	if (p->fd == -1) {
		snprintf(err, errlen, "%s: %s", socket_path, errno == EEXIST ?
		    "exists and is not a socket" : strerror(errno));
		policy_free(pol);
		free(p->socket);
		free(p->policy_file);
		free(p);
		return NULL;
	}
	p->ev_accept = event_new(egressd_base, p->fd, EV_READ | EV_PERSIST, principal_accept_cb,
	    p);
	if (!accept_pause.paused)
		event_add(p->ev_accept, NULL);
	TAILQ_INSERT_TAIL(&principals, p, entry);
	log_info("event=principal-add principal=%s socket=%s dev_ino=%llu:%llu policy=%s "
	    "owner=%u:%u", p->name, p->socket, (unsigned long long)p->dev,
	    (unsigned long long)p->ino, p->digest, (unsigned)p->owner_uid,
	    (unsigned)p->owner_gid);
	return p;
}

void
principal_remove(struct principal *p, const char *why)
{
	struct conn *c;
	struct pin *pin;

	TAILQ_REMOVE(&principals, p, entry);
	event_free(p->ev_accept);
	close(p->fd);
	while ((c = TAILQ_FIRST(&p->conns)) != NULL)
		conn_abort(c, EGRESS_SHUTDOWN, "shutdown");
	while ((pin = TAILQ_FIRST(&p->pins)) != NULL) {
		TAILQ_REMOVE(&p->pins, pin, entry);
		free(pin->name);
		free(pin);
	}
	/* Its synthetic names die with it: no other principal ever holds them. */
	synth_free(p->synth);
	p->synth = NULL;
	if (p->lease != NULL)
		ctl_lease_lost(p->lease, p);
	principal_deny_flush(p);
	/* After its receipts (they go first): the monitor then forgets the principal and
	 * unlinks only what is still its socket, never a file someone put in its place. */
	(void)priv_unlink(p->name, p->socket, p->dev, p->ino);
	if (p->deny_flush != NULL)
		event_free(p->deny_flush);
	free(p->slots);
	free(p->tally);
	log_info("event=principal-remove principal=%s why=%s", p->name, why);
	policy_free(p->policy);
	free(p->socket);
	free(p->policy_file);
	free(p);
}

const struct pin *
principal_pin_get(struct principal *p, const char *name)
{
	return principal_pin_get_at(p, name, egress_mono_ms());
}

const struct pin *
principal_pin_get_at(struct principal *p, const char *name, int64_t now)
{
	struct pin *pin, *next;

	for (pin = TAILQ_FIRST(&p->pins); pin != NULL; pin = next) {
		next = TAILQ_NEXT(pin, entry);
		if (pin->expires_ms <= now) {
			TAILQ_REMOVE(&p->pins, pin, entry);
			p->npins--;
			free(pin->name);
			free(pin);
			continue;
		}
		if (strcmp(pin->name, name) == 0)
			return pin;
	}
	return NULL;
}

void
principal_pin_put(struct principal *p, const char *name, const struct addr *addrs, size_t n,
    uint32_t ttl)
{
	principal_pin_put_at(p, name, addrs, n, ttl, egress_mono_ms());
}

void
principal_pin_put_at(struct principal *p, const char *name, const struct addr *addrs,
    size_t n, uint32_t ttl, int64_t now)
{
	const struct policy_settings *s = policy_settings(p->policy);
	uint64_t life = ttl;
	struct pin *pin;

	/* max(TTL, pin min), never beyond pin max: a rebinding name stays where it was. */
	if (life < s->pin_min)
		life = s->pin_min;
	if (life > s->pin_max)
		life = s->pin_max;
	if (life == 0)
		return;
	if (p->npins >= EGRESSD_PIN_MAX) {
		pin = TAILQ_FIRST(&p->pins);           /* the oldest goes */
		TAILQ_REMOVE(&p->pins, pin, entry);
		p->npins--;
		free(pin->name);
		free(pin);
	}
	pin = xcalloc(1, sizeof(*pin));
	pin->name = xstrdup(name);
	memcpy(pin->addrs, addrs, n * sizeof(*addrs));
	pin->naddrs = n;
	pin->expires_ms = now + (int64_t)life * 1000;
	TAILQ_INSERT_TAIL(&p->pins, pin, entry);
	p->npins++;
}

/* Writes the counted denials of the second that ended. */
static void
principal_deny_flush(struct principal *p)
{
	for (size_t i = 0; i < p->nslots; i++) {
		struct deny_slot *d = &p->slots[i];
		struct receipt r;

		memset(&r, 0, sizeof(r));
		r.event = RECEIPT_DENY;
		r.principal = p->name;
		r.policy = p->digest;
		r.frontend = d->frontend;
		r.host = d->host[0] ? d->host : NULL;
		r.port = d->port;
		r.reason = d->reason;
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
		r.count = d->count;
		receipt_write(&r);
		log_info("event=deny principal=%s host=%s port=%d reason=%s count=%u "
		    "detail=\"identical denials collapsed\"", p->name, d->host[0] ? d->host : "-",
		    d->port, egress_reason_name(d->reason), d->count);
	}
	p->nslots = 0;
}

bool
principal_deny_tick_at(struct principal *p, time_t now)
{
	if (p->nslots > 0 && p->deny_second == now)
		return false;   /* this second's: its end writes them, one record each */
	principal_deny_flush(p);
	return true;
}

/*
 * Set at a second's first collapse, for a second later: it fires in a later second (the
 * wall clock's second began before the collapse), and writes what that second left; if
 * the second it fires in has collapsed denials of its own, they wait for its end.
 */
static void
principal_deny_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct principal *p = arg;
	struct timeval now, tv = { 0, 0 };

	(void)fd;
	(void)what;
	if (principal_deny_tick_at(p, time(NULL)))
		return;
	(void)gettimeofday(&now, NULL);
	tv.tv_usec = 1000000 - now.tv_usec + 1000;      /* just past the second's end */
	if (tv.tv_usec >= 1000000) {
		tv.tv_sec = 1;
		tv.tv_usec -= 1000000;
	}
	evtimer_add(p->deny_flush, &tv);
}

bool
principal_deny_collapse(struct principal *p, enum egress_reason reason, const char *host,
    int port, const char *frontend)
{
	return principal_deny_collapse_at(p, reason, host, port, frontend, time(NULL));
}

bool
principal_deny_collapse_at(struct principal *p, enum egress_reason reason, const char *host,
    int port, const char *frontend, time_t now)
{
	struct deny_slot *d;
	struct timeval tv = { 1, 0 };

	if (p->deny_second != now) {
		principal_deny_flush(p);
		p->deny_second = now;
		p->deny_count = 0;
	}
	if (p->deny_count < EGRESSD_DENY_BURST) {
		p->deny_count++;
		return false;
	}
	if (host == NULL)
		host = "";
	for (size_t i = 0; i < p->nslots; i++) {
		d = &p->slots[i];
		if (d->reason == reason && d->port == port && strcmp(d->host, host) == 0) {
			d->count++;
			return true;
		}
	}
	if (p->nslots == EGRESSD_DENY_SLOTS)
		return false;      /* too many distinct ones: each is written as it comes */
	if (p->slots == NULL)
		p->slots = xcalloc(EGRESSD_DENY_SLOTS, sizeof(*p->slots));
	d = &p->slots[p->nslots++];
	d->reason = reason;
	snprintf(d->host, sizeof(d->host), "%s", host);
	d->port = port;
	d->frontend = frontend;
	d->count = 1;
	if (p->deny_flush == NULL)
		p->deny_flush = evtimer_new(egressd_base, principal_deny_flush_cb, p);
	if (!evtimer_pending(p->deny_flush, NULL))
		evtimer_add(p->deny_flush, &tv);
	return true;
}

/*
 * Leases only (egress-run prints it at the end, and an unprivileged lease holder cannot read
 * the receipt file): bounded; past EGRESSD_TALLY_MAX destinations, events are counted as
 * dropped.
 */
void
principal_tally(struct principal *p, const char *host, int port, bool allowed,
    enum egress_reason reason, uint64_t count, uint64_t up, uint64_t down)
{
	struct tally *t = NULL;

	if (p->lease == NULL)
		return;
	if (host == NULL)
		host = "";
	for (size_t i = 0; i < p->ntally && t == NULL; i++)
		if (p->tally[i].allowed == allowed && p->tally[i].port == port &&
		    (allowed || p->tally[i].reason == reason) && strcmp(p->tally[i].host, host) == 0)
			t = &p->tally[i];
	if (t == NULL) {
		if (p->ntally == EGRESSD_TALLY_MAX) {
			p->tally_dropped += count;
			return;
		}
		if (p->tally == NULL)
			p->tally = xcalloc(EGRESSD_TALLY_MAX, sizeof(*p->tally));
		t = &p->tally[p->ntally++];
		snprintf(t->host, sizeof(t->host), "%s", host);
		t->port = port;
		t->allowed = allowed;
		t->reason = allowed ? EGRESS_ALLOWED : reason;
	}
	t->count += count;
	t->bytes_up += up;
	t->bytes_down += down;
}
