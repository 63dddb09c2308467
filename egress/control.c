/*
 * control.c: the control socket. AF_UNIX stream, mode 0600, owned by egressd's user:
 * only root (or egressd's own user) reaches it, and SO_PEERCRED is checked again. One
 * JSON object per line each way, the verbs and framing of proto/control.h (jansson reads
 * them; nothing is parsed by hand).
 *
 * Answers are {"ok":true,...} or {"ok":false,"error":"..."}. A lease principal lives as
 * long as the control connection that created it.
 *
 * Trusts root on the control socket. On the lease socket trusts nothing but the kernel's
 * SO_PEERCRED: any member of the lease group may connect, so the two sockets draw on
 * separate slots (EGRESSD_CTL_CLIENTS, EGRESSD_LEASE_CLIENTS), one peer uid holds at most
 * EGRESSD_LEASE_PER_UID lease connections, EGRESSD_LEASE_ROOT_SLOTS lease slots are root's
 * alone, and a lease connection that holds no lease is closed EGRESSD_LEASE_IDLE_S after
 * its accept (or after its last lease ended), however many requests it sends. A member of
 * the group can then neither lock root out of either socket nor keep slots without leases.
 * Out of descriptors, both listeners pause together (common/accept.c) instead of spinning.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>
#include <openssl/rand.h>

#include "control.h"
#include "egressd.h"

#define CTL_OUT_MAX (256 * 1024)    /* replies queued to one client before it must read */

struct ctl_client {
	struct bufferevent *bev;
	bool lease_only;             /* arrived on the lease socket */
	uid_t uid;                   /* SO_PEERCRED */
	gid_t gid;
	struct principal *leased[16]; /* principals this connection holds */
	size_t nleased;
	struct event *idle;          /* lease socket: the deadline while it holds no lease */
	TAILQ_ENTRY(ctl_client) entry;
};

static TAILQ_HEAD(, ctl_client) ctl_clients = TAILQ_HEAD_INITIALIZER(ctl_clients);
static size_t ctl_nctl, ctl_nlease;     /* open connections on each socket */
static int ctl_fd = -1, lease_fd = -1;
static struct event *ctl_ev, *lease_ev;
static void ctl_listen_onoff(bool on, void *arg);
/* Out of descriptors: the control and the lease listener pause (common/accept.c). */
static struct egress_accept_pause ctl_pause = { .listen = ctl_listen_onoff };

static void
ctl_reply(struct ctl_client *cl, json_t *o)
{
	size_t len;
	char *s = ctlproto_encode(o, &len);

	if (s != NULL) {
		bufferevent_write(cl->bev, s, len);
		free(s);
	}
}

static void
ctl_error(struct ctl_client *cl, const char *msg)
{
	ctl_reply(cl, ctlproto_error(msg));
}

/*
 * A lease connection that holds no lease has EGRESSD_LEASE_IDLE_S from its accept, or
 * from the end of its last lease, to get one: an absolute deadline, which requests do not
 * move (else a cheap request every few seconds would keep a slot for ever). One that
 * holds a lease has no deadline, since the lease lives exactly as long as the connection.
 * Called after every request: it starts a deadline only where none runs.
 */
static void
ctl_idle_arm(struct ctl_client *cl)
{
	struct timeval tv = { EGRESSD_LEASE_IDLE_S, 0 };

	if (cl->idle == NULL)
		return;
	if (cl->nleased > 0)
		evtimer_del(cl->idle);
	else if (!evtimer_pending(cl->idle, NULL))
		evtimer_add(cl->idle, &tv);
}

static json_t *
ctl_principal_json(const struct principal *p)
{
	char devino[64];
	unsigned tunnels = 0;
	const struct conn *c;

	(void)c;
	snprintf(devino, sizeof(devino), "%llu:%llu", (unsigned long long)p->dev,
	    (unsigned long long)p->ino);
	tunnels = p->live;
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:b,s:I,s:I,s:I}", "name", p->name,
	    "socket", p->socket, "dev_ino", devino, "policy", p->digest, "policy_file",
	    p->policy_file, "owner_uid", (int)p->owner_uid, "tunnels", (int)tunnels, "lease",
	    p->lease != NULL, "allowed", (json_int_t)p->total_allowed, "denied",
	    (json_int_t)p->total_denied, "bytes", (json_int_t)p->bytes);
}

static void
ctl_principal_add(struct ctl_client *cl, json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *policy = json_string_value(json_object_get(req, "policy"));
	const char *owner = json_string_value(json_object_get(req, "owner"));
	json_t *peer = json_object_get(req, "peer_uid");
	bool lease = json_is_true(json_object_get(req, "lease"));
	unsigned long uid = 0, gid = 0;
	char err[512], *path;
	struct principal *p;

	if (name == NULL || policy == NULL) {
		ctl_error(cl, "principal-add needs name and policy");
		return;
	}
	if (!conf_valid_name(name)) {
		ctl_error(cl, "bad principal name (letters, digits, '.', '_', '-'; 1-64)");
		return;
	}
	if (policy[0] != '/') {
		ctl_error(cl, "the policy must be an absolute path");
		return;
	}
	if (owner != NULL) {
		char *end;

		uid = strtoul(owner, &end, 10);
		if (end == owner || (*end != ':' && *end != '\0')) {
			ctl_error(cl, "owner must be UID:GID");
			return;
		}
		gid = uid;
		if (*end == ':') {
			const char *g = end + 1;

			gid = strtoul(g, &end, 10);
			if (end == g || *end != '\0') {
				ctl_error(cl, "owner must be UID:GID");
				return;
			}
		}
	}
	if (peer != NULL && (!json_is_integer(peer) || json_integer_value(peer) < 0)) {
		ctl_error(cl, "peer_uid must be a uid");
		return;
	}
	if (lease && cl->nleased == sizeof(cl->leased) / sizeof(cl->leased[0])) {
		ctl_error(cl, "too many leases on one connection");
		return;
	}
	xasprintf(&path, "%s/%s.sock", egressd_conf->runtime_dir, name);
	p = principal_create(&(struct principal_spec){ .name = name, .socket = path,
	    .policy_file = policy, .has_owner = owner != NULL, .owner_uid = (uid_t)uid,
	    .owner_gid = (gid_t)gid, .has_peer_uid = peer != NULL,
	    .peer_uid = peer ? (uid_t)json_integer_value(peer) : 0, .lease = lease,
	    .open_kind = MW_OPEN_PEER, .peer_fd = bufferevent_getfd(cl->bev) }, err, sizeof(err));
	free(path);
	if (p == NULL) {
		ctl_error(cl, err);
		return;
	}
	if (lease) {
		p->lease = cl;
		cl->leased[cl->nleased++] = p;
	}
	{
		json_t *o = ctl_principal_json(p);

		json_object_set_new(o, "ok", json_true());
		ctl_reply(cl, o);
	}
}

/*
 * lease: a principal for the caller, living as long as this connection, with a sealed
 * policy named from policy-dir (a plain file name: no path is taken from the caller),
 * owned by the caller's SO_PEERCRED uid and gid.
 */
static void
ctl_lease(struct ctl_client *cl, json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "policy"));
	char err[512], pname[EGRESSD_NAME_MAX + 1], *path, *sock;
	uint8_t r[6];
	struct principal *p;
	json_t *o;

	if (egressd_conf->policy_dir == NULL) {
		ctl_error(cl, "no policy-dir configured: leases are off");
		return;
	}
	if (name == NULL || !conf_valid_name(name)) {
		ctl_error(cl, "lease needs the name of a policy in policy-dir (letters, digits, "
		    "'.', '_', '-')");
		return;
	}
	if (cl->nleased == sizeof(cl->leased) / sizeof(cl->leased[0])) {
		ctl_error(cl, "too many leases on one connection");
		return;
	}
	if (RAND_bytes(r, sizeof(r)) != 1) {
		ctl_error(cl, "no random bytes");
		return;
	}
	snprintf(pname, sizeof(pname), "lease-%u-", (unsigned)cl->uid);
	egress_hex(r, sizeof(r), pname + strlen(pname));
	xasprintf(&path, "%s/%s", egressd_conf->policy_dir, name);
	xasprintf(&sock, "%s/%s.sock", egressd_conf->runtime_dir, pname);
	p = principal_create(&(struct principal_spec){ .name = pname, .socket = sock,
	    .policy_file = path, .has_owner = true, .owner_uid = cl->uid, .owner_gid = cl->gid,
	    .lease = true, .open_kind = MW_OPEN_POLICY_DIR }, err, sizeof(err));
	free(path);
	free(sock);
	if (p == NULL) {
		ctl_error(cl, err);
		return;
	}
	if (policy_mac_state(p->policy) == POLICY_UNSEALED) {
		principal_remove(p, "lease-refused");
		ctl_error(cl, "a lease may only name a sealed policy (egress-policy seal)");
		return;
	}
	p->lease = cl;
	cl->leased[cl->nleased++] = p;
	o = ctl_principal_json(p);
	json_object_set_new(o, "ok", json_true());
	ctl_reply(cl, o);
}

/*
 * {"verb":"summary"[,"name":N]}: a leased principal's destinations, added up from its
 * receipts, and its connections still open. On a lease connection only what it holds
 * (the first lease when no name is given); on the control socket any lease by name.
 */
static void
ctl_summary(struct ctl_client *cl, json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	struct principal *p = NULL;
	json_t *arr;

	for (size_t i = 0; i < cl->nleased && p == NULL; i++)
		if (name == NULL || strcmp(cl->leased[i]->name, name) == 0)
			p = cl->leased[i];
	if (p == NULL && name != NULL && !cl->lease_only)
		p = principal_find(name);
	if (p == NULL || p->lease == NULL) {
		ctl_error(cl, name == NULL ? "this connection holds no lease" :
		    "no such lease (a lease connection sees only its own)");
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < p->ntally; i++) {
		const struct tally *t = &p->tally[i];
		json_t *o = json_pack("{s:s,s:b,s:s,s:I,s:I,s:I}", "host", t->host, "allowed",
		    t->allowed, "reason", egress_reason_name(t->reason), "count",
		    (json_int_t)t->count, "bytes_up", (json_int_t)t->bytes_up, "bytes_down",
		    (json_int_t)t->bytes_down);

		if (t->port >= 0)
			json_object_set_new(o, "port", json_integer(t->port));
		json_array_append_new(arr, o);
	}
	ctl_reply(cl, json_pack("{s:b,s:s,s:I,s:o,s:I}", "ok", 1, "principal", p->name, "open",
	    (json_int_t)conn_count_principal(p), "destinations", arr, "dropped", (json_int_t)p->tally_dropped));
}

#ifdef EGRESS_TEST_VERBS
/*
 * {"verb":"debug","what":W}, built only with --enable-debug, for the tests of the
 * engine's confinement (tests/e2e/engine.sh):
 *   open-keys   the engine tries to open each key file of its configuration and says
 *               what open(2) answered (it must never be a descriptor)
 *   forge       the engine sends receipts the monitor must refuse: a close without its
 *               open, an open of a principal it never made, an open twice, a
 *               daemon-restart close of its own
 *   syscall     the engine makes a system call its seccomp filter does not allow
 */
static void
ctl_debug(struct ctl_client *cl, json_t *req)
{
	const char *what = json_string_value(json_object_get(req, "what"));
	const struct conf *c = egressd_conf;

	if (what != NULL && strcmp(what, "open-keys") == 0) {
		const char *keys[3] = { c->receipt_key, c->signing_key, c->policy_key };
		json_t *o = json_object();

		for (size_t i = 0; i < 3; i++) {
			int fd;

			if (keys[i] == NULL)
				continue;
			fd = open(keys[i], O_RDONLY | O_CLOEXEC);
			json_object_set_new(o, keys[i], json_string(fd == -1 ? strerror(errno) :
			    "opened"));
			if (fd != -1)
				close(fd);
		}
		ctl_reply(cl, json_pack("{s:b,s:o}", "ok", 1, "open", o));
	} else if (what != NULL && strcmp(what, "forge") == 0 && !TAILQ_EMPTY(&principals)) {
		struct principal *p = TAILQ_FIRST(&principals);
		struct receipt r;

		memset(&r, 0, sizeof(r));
		r.principal = p->name;
		r.policy = p->digest;
		r.port = -1;
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
		r.event = RECEIPT_CLOSE;
		r.id = "c-dead0001";
		r.close = "client-eof";
		receipt_write(&r);
		r.event = RECEIPT_OPEN;
		r.close = NULL;
		r.id = "c-dead0002";
		r.principal = "no-such-principal";
		receipt_write(&r);
		r.principal = p->name;
		r.id = "c-dead0003";
		receipt_write(&r);
		receipt_write(&r);
		r.event = RECEIPT_CLOSE;
		r.close = "daemon-restart";
		receipt_write(&r);
		r.close = "client-eof";
		receipt_write(&r);
		ctl_reply(cl, json_pack("{s:b}", "ok", 1));
	} else if (what != NULL && strcmp(what, "syscall") == 0) {
		/* Not in the engine's allow-list (not even a sanitizer build's): killed here. */
		long rc = syscall(SYS_getpgid, 0L);

		ctl_reply(cl, json_pack("{s:b,s:I}", "ok", 1, "returned", (json_int_t)rc));
	} else {
		ctl_error(cl, "debug: what is open-keys, forge or syscall");
	}
}
#endif

static void
ctl_dispatch(struct ctl_client *cl, const char *line, size_t len)
{
	enum ctlproto_verb verb;
	const char *why;
	json_t *req = ctlproto_decode_request(line, len, &verb, &why);

	if (req == NULL) {
		ctl_error(cl, why);
		return;
	}
	if (verb == CTLPROTO_LEASE)
		ctl_lease(cl, req);
	else if (verb == CTLPROTO_SUMMARY)
		ctl_summary(cl, req);
	else if (cl->lease_only && !ctlproto_lease_socket(verb))
		ctl_error(cl, "the lease socket serves the lease and summary verbs only");
	else if (verb == CTLPROTO_STATUS) {
		struct principal *p;
		int n = 0;

		TAILQ_FOREACH(p, &principals, entry)
			n++;
		ctl_reply(cl, json_pack("{s:b,s:s,s:i,s:I,s:i,s:i,s:s,s:I,s:b}", "ok", 1,
		    "version", PACKAGE_VERSION, "pid", (int)egressd_pid, "uptime_s",
		    (json_int_t)(time(NULL) - egressd_started), "principals", n, "connections",
		    (int)conn_count(), "receipts", egressd_conf->receipts, "receipt_seq",
		    (json_int_t)receipt_seq(), "stopping", egressd_stopping));
	} else if (verb == CTLPROTO_METRICS) {
		size_t tlen;
		char *text = metrics_text(&tlen);

		ctl_reply(cl, json_pack("{s:b,s:s%}", "ok", 1, "text", text, tlen));
		free(text);
	} else if (verb == CTLPROTO_PRINCIPAL_ADD)
		ctl_principal_add(cl, req);
	else if (verb == CTLPROTO_PRINCIPAL_REMOVE) {
		const char *name = json_string_value(json_object_get(req, "name"));
		struct principal *p = name ? principal_find(name) : NULL;

		if (p == NULL)
			ctl_error(cl, "no such principal");
		else {
			principal_remove(p, "egressctl");
			ctl_reply(cl, json_pack("{s:b}", "ok", 1));
		}
	} else if (verb == CTLPROTO_PRINCIPAL_LIST) {
		json_t *arr = json_array();
		struct principal *p;

		TAILQ_FOREACH(p, &principals, entry)
			json_array_append_new(arr, ctl_principal_json(p));
		ctl_reply(cl, json_pack("{s:b,s:o}", "ok", 1, "principals", arr));
#ifdef EGRESS_TEST_VERBS
	} else if (verb == CTLPROTO_DEBUG) {
		ctl_debug(cl, req);
#endif
	} else
		ctl_error(cl, "unknown verb");
	json_decref(req);
}

static void
ctl_client_free(struct ctl_client *cl)
{
	/* A lease ends with the connection that holds it. */
	while (cl->nleased > 0) {
		struct principal *p = cl->leased[--cl->nleased];

		p->lease = NULL;
		principal_remove(p, "lease-ended");
	}
	TAILQ_REMOVE(&ctl_clients, cl, entry);
	if (cl->lease_only)
		ctl_nlease--;
	else
		ctl_nctl--;
	if (cl->idle != NULL)
		event_free(cl->idle);
	bufferevent_free(cl->bev);
	free(cl);
}

static void
ctl_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_client *cl = arg;

	(void)fd;
	(void)what;
	if (cl->nleased > 0)
		return;
	log_warnx("event=control-closed socket=lease uid=%d why=idle idle_s=%d", (int)cl->uid,
	    EGRESSD_LEASE_IDLE_S);
	ctl_client_free(cl);
}

void
ctl_lease_lost(struct ctl_client *cl, struct principal *p)
{
	for (size_t i = 0; i < cl->nleased; i++)
		if (cl->leased[i] == p) {
			cl->leased[i] = cl->leased[--cl->nleased];
			/* Its last lease removed: from now on an unused connection. */
			ctl_idle_arm(cl);
			return;
		}
}

static void
ctl_read_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_client *cl = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line;
	size_t len;

	/*
	 * A client that sends requests without reading the replies is not served further
	 * until it reads: replies (a summary is up to ~90 KB) never pile up without bound.
	 */
	while (evbuffer_get_length(bufferevent_get_output(bev)) <= CTL_OUT_MAX &&
	    (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
		ctl_dispatch(cl, line, len);
		free(line);
		ctl_idle_arm(cl);
	}
	if (evbuffer_get_length(bufferevent_get_output(bev)) > CTL_OUT_MAX) {
		bufferevent_disable(bev, EV_READ);
		return;
	}
	if (evbuffer_get_length(in) > CTLPROTO_REQUEST_MAX) {
		ctl_error(cl, "request too long");
		ctl_client_free(cl);
	}
}

/* The replies went out: read (and answer) again. */
static void
ctl_write_cb(struct bufferevent *bev, void *arg)
{
	if ((bufferevent_get_enabled(bev) & EV_READ) == 0) {
		bufferevent_enable(bev, EV_READ);
		ctl_read_cb(bev, arg);
	}
}

static void
ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		ctl_client_free(arg);
}

/* Lease connections of one peer uid; bounded by EGRESSD_LEASE_CLIENTS. */
static size_t
ctl_lease_count(uid_t uid)
{
	const struct ctl_client *cl;
	size_t n = 0;

	TAILQ_FOREACH(cl, &ctl_clients, entry)
		if (cl->lease_only && cl->uid == uid)
			n++;
	return n;
}

/* Why a connection may not be served, or NULL. */
static const char *
ctl_refusal(bool lease_only, const struct ucred *cred)
{
	if (!lease_only) {
		/* The control socket is for root and egressd's user. */
		if (cred->uid != 0 && cred->uid != egressd_uid)
			return "not-root";
		return ctl_nctl >= EGRESSD_CTL_CLIENTS ? "slots-full" : NULL;
	}
	/* The lease socket's mode and group say who may lease; these say how much. */
	if (ctl_nlease >= EGRESSD_LEASE_CLIENTS ||
	    (cred->uid != 0 && ctl_nlease >= EGRESSD_LEASE_CLIENTS - EGRESSD_LEASE_ROOT_SLOTS))
		return "slots-full";
	if (ctl_lease_count(cred->uid) >= EGRESSD_LEASE_PER_UID)
		return "uid-cap";
	return NULL;
}

/*
 * The pause's switch for both sockets: one that runs out of descriptors runs out for
 * both (and a pending connection keeps its listener readable, so each must go off).
 */
static void
ctl_listen_onoff(bool on, void *arg)
{
	(void)arg;
	if (on) {
		event_add(ctl_ev, NULL);
		if (lease_ev != NULL)
			event_add(lease_ev, NULL);
		return;
	}
	event_del(ctl_ev);
	if (lease_ev != NULL)
		event_del(lease_ev);
	log_warnx("event=accept-paused listener=control detail=\"out of descriptors, accepting "
	    "again in %ds\"", EGRESS_ACCEPT_PAUSE_MS / 1000);
}

static void
ctl_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct ctl_client *cl;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool lease_only = arg != NULL;
	const char *why;
	int fd;

	(void)what;
	if ((fd = egress_accept(lfd, &ctl_pause)) == -1) {
		if (errno != EMFILE && errno != ENFILE && errno != EAGAIN &&
		    errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
			log_warn("event=accept-error socket=%s", lease_only ? "lease" : "control");
		return;         /* nothing queued, or paused (egress_accept) */
	}
	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		why = "no-peercred";
	else
		why = ctl_refusal(lease_only, &cred);
	if (why != NULL) {
		log_warnx("event=control-refused socket=%s uid=%d why=%s open=%zu max=%d",
		    lease_only ? "lease" : "control", (int)cred.uid, why,
		    lease_only ? ctl_nlease : ctl_nctl, !lease_only ? EGRESSD_CTL_CLIENTS :
		    cred.uid == 0 ? EGRESSD_LEASE_CLIENTS :
		    EGRESSD_LEASE_CLIENTS - EGRESSD_LEASE_ROOT_SLOTS);
		close(fd);
		return;
	}
	cl = xcalloc(1, sizeof(*cl));
	cl->lease_only = lease_only;
	cl->uid = cred.uid;
	cl->gid = cred.gid;
	cl->bev = bufferevent_socket_new(egressd_base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(cl->bev, ctl_read_cb, ctl_write_cb, ctl_event_cb, cl);
	bufferevent_setwatermark(cl->bev, EV_READ, 0, CTLPROTO_REQUEST_MAX + 1);
	bufferevent_enable(cl->bev, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&ctl_clients, cl, entry);
	if (lease_only) {
		ctl_nlease++;
		/* No timer, no deadline: such a connection is not served at all. */
		if ((cl->idle = evtimer_new(egressd_base, ctl_idle_cb, cl)) == NULL) {
			log_warnx("event=control-refused socket=lease uid=%d why=no-memory",
			    (int)cred.uid);
			ctl_client_free(cl);
			return;
		}
		ctl_idle_arm(cl);
	} else
		ctl_nctl++;
}

static int
ctl_listen(const char *path, mode_t mode, gid_t gid, bool set_group)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int fd;

	if (egress_sock_unix_addr(&sun, path) == -1) {
		log_startupx("socket path too long: %s", path);
		return -1;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_startupx("%s exists and is not a socket", path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	old = umask(0177);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    (set_group && lchown(path, (uid_t)-1, gid) == -1) || chmod(path, mode) == -1 ||
	    listen(fd, 16) == -1) {
		umask(old);
		log_startupx("%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

/*
 * The monitor's half: the control socket and, with `lease`, the lease socket (mode 0660,
 * the lease group's), created before the engine exists; *lease_fd is -1 without lease.
 */
int
ctl_sockets(const struct conf *conf, int *ctl, int *lease)
{
	*lease = -1;
	if ((*ctl = ctl_listen(conf->control, 0600, 0, false)) == -1)
		return -1;
	if (conf->lease != NULL) {
		gid_t gid = 0;
		bool set_group = false;

		if (conf->lease_group != NULL) {
			struct group *gr = getgrnam(conf->lease_group);

			if (gr == NULL) {
				log_startupx("lease group %s: no such group",
				    conf->lease_group);
				return -1;
			}
			gid = gr->gr_gid;
			set_group = true;
		}
		if ((*lease = ctl_listen(conf->lease, set_group ? 0660 : 0600, gid,
		    set_group)) == -1)
			return -1;
	}
	return 0;
}

/* The engine's half: serves the listeners the monitor made (lease_fd -1: none). */
int
ctl_init(struct event_base *base, int fd, int lfd)
{
	ctl_fd = fd;
	ctl_pause.base = base;
	if (egress_accept_pause_init(&ctl_pause) == -1) {
		log_startupx("libevent: no timer");
		return -1;
	}
	ctl_ev = event_new(base, ctl_fd, EV_READ | EV_PERSIST, ctl_accept_cb, NULL);
	event_add(ctl_ev, NULL);
	if (lfd != -1) {
		lease_fd = lfd;
		/* A non-NULL argument marks the lease socket. */
		lease_ev = event_new(base, lease_fd, EV_READ | EV_PERSIST, ctl_accept_cb,
		    &lease_fd);
		event_add(lease_ev, NULL);
	}
	return 0;
}

void
ctl_shutdown(void)
{
	struct ctl_client *cl;

	while ((cl = TAILQ_FIRST(&ctl_clients)) != NULL)
		ctl_client_free(cl);
	egress_accept_pause_clear(&ctl_pause);
	if (ctl_ev != NULL)
		event_free(ctl_ev);
	ctl_ev = NULL;
	/* The sockets are the monitor's: it removes them when egressd stops. */
	if (ctl_fd != -1)
		close(ctl_fd);
	ctl_fd = -1;
	if (lease_ev != NULL)
		event_free(lease_ev);
	lease_ev = NULL;
	if (lease_fd != -1)
		close(lease_fd);
	lease_fd = -1;
}
