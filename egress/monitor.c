/*
 * monitor.c: egressd's privileged parent, in the manner of OpenSSH's monitor and
 * relayd's parent. It holds the receipt key, the checkpoint signing key and the
 * policy-key, owns the receipts file and its chain, creates and removes the principal,
 * control, lease and metrics sockets, and execs the engine (egressd -E) that does all
 * parsing of network bytes, as an unprivileged user under a seccomp allow-list.
 *
 * It parses nothing from the network. From the engine it reads, as untrusted, fixed-size
 * requests and receipt batches (proto/monwire.h): every record is checked (syntax in
 * mw_batch_next; here: a principal it made a socket for, the engine's numbering without
 * gaps, an open before its close, no open twice), a refused record is logged and never
 * written, and only then is it chained, MACed and written (receipt.c). The engine may add
 * lies; it can neither read a key nor rewrite, remove or reorder what was written.
 *
 * Files the confined engine needs are opened here only when the engine may have them:
 * egressd.conf, a file that egressd.conf names (as the monitor last read it), a file
 * directly inside policy-dir (leases), or, for the control socket, a file opened with the
 * rights of the peer of a connection the engine passes (SO_PEERCRED root or egressd's own
 * uid: what `egressctl principal add --policy` names). Never a key file.
 *
 * When the engine dies, every open it left gets a close with close:"daemon-restart",
 * lease principals go (their connections died with it), and a new engine takes the
 * listeners that stay (same device and inode). When the monitor dies, the engine follows
 * (PR_SET_PDEATHSIG, and EOF on the channel).
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "egressd.h"
#include "fdpass.h"

#define MON_RESTARTS 10                 /* engine starts within MON_RESTART_WINDOW_S */
#define MON_RESTART_WINDOW_S 60

struct mon_principal {
	char name[MW_NAME_MAX + 1];
	char *path, *policy;
	char digest[EGRESS_DIGEST_STRLEN];
	int fd;
	uint64_t dev, ino;
	uint32_t uid, gid, peer_uid, flags;
	TAILQ_ENTRY(mon_principal) entry;
};
static TAILQ_HEAD(, mon_principal) mon_principals = TAILQ_HEAD_INITIALIZER(mon_principals);
static size_t mon_nprincipals;

/* An open without its close: what the daemon-restart close repeats of it. */
struct mon_open {
	char *id, *principal, *policy, *frontend, *host, *addr, *via, *sni;
	uint8_t *raw;
	size_t raw_len;
	int port;
	char blob[];
};
static void *mon_opens;                 /* tsearch tree by id */
static size_t mon_nopens;

static struct conf *mon_conf;           /* as last read (start, SIGHUP) */
static const char *mon_conf_path;
static bool mon_debug, mon_seccomp_log, mon_stopping, mon_ready_sent;
static int mon_exe = -1;                /* this program, for the engine's exec */
static int mon_chan = -1;
static pid_t mon_engine = -1;
static uint64_t mon_next = 1;           /* the engine's number of its next record */
static int mon_ctl = -1, mon_lease = -1, mon_metrics = -1;
static char *mon_ctl_path, *mon_lease_path;   /* as created (SIGHUP changes neither) */
static struct event *mon_chan_ev, *mon_restart_ev;
static struct event *mon_sig[6];
static time_t mon_window_start;
static unsigned mon_window_starts;
static char mon_seccomp[160];           /* the engine's last report of a refused call */
static uint8_t mon_buf[MW_BATCH_MAX + 1];

static void mon_spawn(void);

/* systemd's readiness protocol (Type=notify): one datagram to $NOTIFY_SOCKET. */
static void
mon_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sun.sun_path))
		return;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	if (path[0] == '@')
		sun.sun_path[0] = '\0';          /* an abstract socket */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sun, len);
	close(fd);
}

/* runtime-dir: created 0755 if missing; refused if others could write into it. */
static int
mon_runtime_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		log_startupx("runtime-dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode)) {
		log_startupx("runtime-dir %s is not a directory", dir);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		log_startupx("runtime-dir %s must be owned by uid %u and not "
		    "writable by group or others", dir, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

/* --- the opens the engine left ------------------------------------------------------------ */

static int
mon_open_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mon_open *)a)->id, ((const struct mon_open *)b)->id);
}

static struct mon_open *
mon_open_find(const char *id)
{
	struct mon_open key = { .id = (char *)id };
	void *n = tfind(&key, &mon_opens, mon_open_cmp);

	return n != NULL ? *(struct mon_open **)n : NULL;
}

static char *
mon_pack(char **at, const char *s)
{
	char *p;

	if (s == NULL || *s == '\0')
		return NULL;
	p = *at;
	memcpy(p, s, strlen(s) + 1);
	*at += strlen(s) + 1;
	return p;
}

static void
mon_open_add(const struct mw_record *rec)
{
	size_t n = strlen(rec->id) + strlen(rec->principal) + strlen(rec->policy) +
	    strlen(rec->frontend) + strlen(rec->host) + strlen(rec->addr) + strlen(rec->sni) +
	    strlen(rec->via) + 8 + rec->raw_len;
	struct mon_open *o = xcalloc(1, sizeof(*o) + n);
	char *at = o->blob;

	o->id = mon_pack(&at, rec->id);
	o->principal = mon_pack(&at, rec->principal);
	o->policy = mon_pack(&at, rec->policy);
	o->frontend = mon_pack(&at, rec->frontend);
	o->host = mon_pack(&at, rec->host);
	o->addr = mon_pack(&at, rec->addr);
	o->via = mon_pack(&at, rec->via);
	o->sni = mon_pack(&at, rec->sni);
	if (rec->raw_len > 0) {
		o->raw = (uint8_t *)at;
		memcpy(at, rec->raw, rec->raw_len);
		o->raw_len = rec->raw_len;
	}
	o->port = rec->port;
	if (tsearch(o, &mon_opens, mon_open_cmp) == NULL)
		abort();
	mon_nopens++;
}

static void
mon_open_del(struct mon_open *o)
{
	tdelete(o, &mon_opens, mon_open_cmp);
	free(o);
	mon_nopens--;
}

/* The engine is gone: its opens end as the SPEC says (close:"daemon-restart"). */
static void
mon_close_opens(void)
{
	unsigned closed = 0;

	while (mon_opens != NULL) {
		struct mon_open *o = *(struct mon_open **)mon_opens;
		struct receipt r;

		memset(&r, 0, sizeof(r));
		r.event = RECEIPT_CLOSE;
		r.id = o->id;
		r.principal = o->principal;
		r.policy = o->policy;
		r.frontend = o->frontend;
		r.host = o->host;
		r.raw = o->raw;
		r.raw_len = o->raw_len;
		r.port = o->port;
		r.addr = o->addr;
		r.via = o->via;
		r.sni = o->sni;
		r.reason = EGRESS_ALLOWED;
		r.close = "daemon-restart";
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
		(void)receipt_record(&r);
		mon_open_del(o);
		closed++;
	}
	if (closed)
		log_warnx("event=engine-lost closed=%u detail=\"its open tunnels closed with "
		    "daemon-restart\"", closed);
	receipt_flush();
}

/* --- principals ---------------------------------------------------------------------------- */

static struct mon_principal *
mon_principal_find(const char *name)
{
	struct mon_principal *p;

	TAILQ_FOREACH(p, &mon_principals, entry)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static void
mon_principal_free(struct mon_principal *p, bool unlink_it)
{
	TAILQ_REMOVE(&mon_principals, p, entry);
	mon_nprincipals--;
	if (unlink_it)
		(void)priv_do_unlink(p->path, p->dev, p->ino);
	close(p->fd);
	free(p->path);
	free(p->policy);
	free(p);
}

/* The socket of a request: directly inside runtime-dir, by its last component. */
static const char *
mon_socket_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL || !conf_inside(mon_conf->runtime_dir, path))
		return NULL;
	return priv_name_ok(slash + 1, PATH_MAX) ? slash + 1 : NULL;
}

static int
mon_listen(struct mw_req *q, int *fdp)
{
	struct mon_principal *p;
	struct stat st;
	const char *sock;
	int fd;

	if (!conf_valid_name(q->name) || (sock = mon_socket_name(q->path)) == NULL)
		return EINVAL;
	if (mon_principal_find(q->name) != NULL)
		return EEXIST;
	if (mon_nprincipals >= PRIV_MAX_SOCKETS)
		return EMFILE;
	if ((fd = priv_do_listen(sock, (uid_t)q->uid, (gid_t)q->gid, &st)) == -1)
		return errno;
	p = xcalloc(1, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", q->name);
	p->path = xstrdup(q->path);
	p->policy = xstrdup(q->policy);
	snprintf(p->digest, sizeof(p->digest), "%s", q->digest);
	p->fd = fd;
	p->dev = (uint64_t)st.st_dev;
	p->ino = (uint64_t)st.st_ino;
	p->uid = q->uid;
	p->gid = q->gid;
	p->peer_uid = q->peer_uid;
	p->flags = q->flags & (MW_F_FROM_CONF | MW_F_LEASE | MW_F_OWNER | MW_F_PEER_UID);
	TAILQ_INSERT_TAIL(&mon_principals, p, entry);
	mon_nprincipals++;
	q->dev = p->dev;
	q->ino = p->ino;
	*fdp = fd;
	return 0;
}

static int
mon_unlink(struct mw_req *q)
{
	struct mon_principal *p;

	if ((p = mon_principal_find(q->name)) == NULL)
		return ENOENT;
	if (p->dev != q->dev || p->ino != q->ino)
		return EPERM;
	mon_principal_free(p, true);
	return 0;
}

/* MW_ADOPT: the listeners a new engine takes over (kind 0: principal number seq). */
static int
mon_adopt(struct mw_req *q, int *fdp)
{
	struct mon_principal *p;
	uint64_t i = 0;

	switch (q->kind) {
	case MW_ADOPT_CONTROL:
		*fdp = mon_ctl;
		return 0;
	case MW_ADOPT_LEASE:
		*fdp = mon_lease;
		return mon_lease == -1 ? ENOENT : 0;
	case MW_ADOPT_METRICS:
		*fdp = mon_metrics;
		return mon_metrics == -1 ? ENOENT : 0;
	case MW_ADOPT_PRINCIPAL:
		break;
	default:
		return EINVAL;
	}
	TAILQ_FOREACH(p, &mon_principals, entry)
		if (i++ == q->h.seq)
			break;
	if (p == NULL) {
		q->flags = MW_F_LAST;
		return 0;
	}
	snprintf(q->name, sizeof(q->name), "%s", p->name);
	snprintf(q->path, sizeof(q->path), "%s", p->path);
	snprintf(q->policy, sizeof(q->policy), "%s", p->policy);
	snprintf(q->digest, sizeof(q->digest), "%s", p->digest);
	q->dev = p->dev;
	q->ino = p->ino;
	q->uid = p->uid;
	q->gid = p->gid;
	q->peer_uid = p->peer_uid;
	q->flags = p->flags;
	*fdp = p->fd;
	return 0;
}

/* --- files for the engine ---------------------------------------------------------------- */

static bool
mon_is_key(const struct stat *st)
{
	const char *keys[3] = { mon_conf->receipt_key, mon_conf->signing_key,
	    mon_conf->policy_key };
	struct stat k;

	for (size_t i = 0; i < 3; i++)
		if (keys[i] != NULL && stat(keys[i], &k) == 0 && k.st_dev == st->st_dev &&
		    k.st_ino == st->st_ino)
			return true;
	return false;
}

/* A file egressd.conf names, as the monitor read it last. */
static bool
mon_conf_names(const char *path)
{
	if (mon_conf->hosts != NULL && strcmp(mon_conf->hosts, path) == 0)
		return true;
	/* parent-proxy auth: conf.c refuses it unless its mode is 0600 or stricter. */
	if (mon_conf->parent.auth_file != NULL && strcmp(mon_conf->parent.auth_file, path) == 0)
		return true;
	if (mon_conf->parent.ca_file != NULL && strcmp(mon_conf->parent.ca_file, path) == 0)
		return true;
	for (size_t i = 0; i < mon_conf->npolicy_pubkeys; i++)
		if (strcmp(mon_conf->policy_pubkey_files[i], path) == 0)
			return true;
	for (size_t i = 0; i < mon_conf->nprincipals; i++)
		if (strcmp(mon_conf->principals[i].policy, path) == 0)
			return true;
	return false;
}

/* MW_OPEN_PEER: fd must be a connection on the control socket, its peer root or us. */
static int
mon_peer_ok(int cfd)
{
	struct sockaddr_un mine, theirs;
	socklen_t l1 = sizeof(mine), l2 = sizeof(theirs);
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	if (cfd == -1 || getsockname(cfd, (struct sockaddr *)&mine, &l1) == -1 ||
	    getsockname(mon_ctl, (struct sockaddr *)&theirs, &l2) == -1 || l1 != l2 ||
	    memcmp(&mine, &theirs, l1) != 0)
		return EPERM;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == -1)
		return errno;
	if (cred.uid != 0 && cred.uid != geteuid())
		return EPERM;
	return 0;
}

static int
mon_file(struct mw_req *q, int in_fd, int *fdp)
{
	struct stat st;
	int e, fd;

	switch (q->kind) {
	case MW_OPEN_CONF:
		if (strcmp(q->path, mon_conf_path) != 0)
			return EPERM;
		break;
	case MW_OPEN_CONF_FILE:
		if (!mon_conf_names(q->path))
			return EPERM;
		break;
	case MW_OPEN_POLICY_DIR:
		if (mon_conf->policy_dir == NULL || !conf_inside(mon_conf->policy_dir, q->path))
			return EPERM;
		break;
	case MW_OPEN_PEER:
		if ((e = mon_peer_ok(in_fd)) != 0)
			return e;
		break;
	default:
		return EINVAL;
	}
	if ((fd = open(q->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) == -1)
		return errno;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || mon_is_key(&st)) {
		close(fd);
		return EACCES;
	}
	*fdp = fd;
	return 0;
}

/* MW_MACCHECK: the policy in fd, loaded with the policy-key, has the digest asked. */
static int
mon_maccheck(struct mw_req *q, int fd)
{
	struct policy_diag d;
	struct policy *p;
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	char digest[EGRESS_DIGEST_STRLEN];
	int e = 0;

	if (egressd_policy_key == NULL || fd == -1 || fstat(fd, &st) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_size > (off_t)EGRESS_POLICY_MAX_BYTES)
		return EINVAL;
	buf = xmalloc((size_t)st.st_size + 1);
	n = pread(fd, buf, (size_t)st.st_size + 1, 0);
	if (n < 0 || n > st.st_size) {
		free(buf);
		return EIO;
	}
	p = policy_load(q->path, buf, (size_t)n, egressd_policy_key, &d);
	free(buf);
	if (p == NULL) {
		snprintf(q->policy, sizeof(q->policy), "%s",
		    d.nerrors ? d.errors[0] : "invalid policy");
		e = EACCES;
	} else {
		policy_digest(p, digest);
		if (strcmp(digest, q->digest) != 0) {
			snprintf(q->policy, sizeof(q->policy), "policy changed while read");
			e = EACCES;
		}
		policy_free(p);
	}
	policy_diag_free(&d);
	return e;
}

/* --- the channel ------------------------------------------------------------------------- */

static void
mon_refuse(const char *why, const struct mw_record *rec)
{
	log_error("event=receipt-refused detail=\"%s\" id=%s principal=%s", why,
	    rec != NULL && rec->id[0] ? rec->id : "-",
	    rec != NULL && rec->principal[0] ? rec->principal : "-");
}

/* One batch: each record checked, then written; the answer says how far it got. */
static void
mon_batch(const uint8_t *buf, size_t len)
{
	struct mw_reader rd;
	struct mw_record *rec = xmalloc(sizeof(*rec));
	struct mw_head ack;
	const char *why;
	int rc;

	if (mw_batch_open(&rd, buf, len, &why) == -1) {
		mon_refuse(why, NULL);
		free(rec);
		kill(mon_engine, SIGKILL);      /* out of step: no acknowledgement can follow */
		return;
	}
	if (rd.seq != mon_next) {
		log_error("event=receipt-refused detail=\"batch out of order\" seq=%llu "
		    "expected=%llu", (unsigned long long)rd.seq, (unsigned long long)mon_next);
		free(rec);
		kill(mon_engine, SIGKILL);
		return;
	}
	receipt_batch_begin();
	while ((rc = mw_batch_next(&rd, rec, &why)) == 1) {
		struct mon_open *o = rec->id[0] ? mon_open_find(rec->id) : NULL;
		struct receipt r;

		mon_next = rd.seq;
		if (mon_principal_find(rec->principal) == NULL) {
			mon_refuse("no such principal", rec);
			continue;
		}
		if (rec->event == RECEIPT_OPEN && o != NULL) {
			mon_refuse("open of an id already open", rec);
			continue;
		}
		if (rec->event == RECEIPT_CLOSE && o == NULL) {
			mon_refuse("close without its open", rec);
			continue;
		}
		if (rec->event == RECEIPT_CLOSE && strcmp(rec->close, "daemon-restart") == 0) {
			mon_refuse("daemon-restart is the monitor's", rec);
			continue;
		}
		mw_record_receipt(rec, &r);
		if (receipt_record(&r) == -1)
			continue;
		if (rec->event == RECEIPT_OPEN)
			mon_open_add(rec);
		else if (rec->event == RECEIPT_CLOSE)
			mon_open_del(o);
	}
	if (rc == -1) {
		mon_refuse(why, rec);
		mon_next = rd.seq + rd.left;    /* the rest of this batch is not written */
	}
	/* In the kernel before the acknowledgement: the engine's next step waits for it. */
	(void)receipt_batch_end();
	free(rec);
	if (rd.noack)
		return;                 /* closes only: the engine does not wait for them */
	memset(&ack, 0, sizeof(ack));
	ack.magic = MW_MAGIC;
	ack.type = MW_ACK;
	ack.seq = mon_next - 1;
	ack.file_seq = receipt_file_seq();
#ifdef EGRESS_TEST_HOOKS
	{
		/*
		 * Test-only (--enable-debug): a slow monitor, so that the engine's polls between
		 * an open and its acknowledgement see its connections' events (openturn.sh).
		 */
		const char *ms = getenv("EGRESS_MONITOR_TEST_ACK_DELAY_MS");

		if (ms != NULL && atoi(ms) > 0) {
			struct timespec ts = { 0, (long)(atoi(ms) % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
#endif
	if (send(mon_chan, &ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack))
		log_error_errno("event=monitor-ack");
}

static void
mon_request(struct mw_req *q, int in_fd)
{
	int out = -1, keep = -1, e;

	switch (q->op) {
	case MW_LISTEN:
		e = mon_listen(q, &out);
		break;
	case MW_UNLINK:
		e = mon_unlink(q);
		break;
	case MW_OPEN:
		e = mon_file(q, in_fd, &out);
		keep = out;             /* ours to close once sent */
		break;
	case MW_ADOPT:
		e = mon_adopt(q, &out);
		break;
	case MW_MACCHECK:
		e = mon_maccheck(q, in_fd);
		break;
	case MW_READY:
		e = 0;
		if (!mon_ready_sent) {
			mon_notify("READY=1");
			mon_ready_sent = true;
		}
		log_info("event=engine-ready pid=%d", (int)mon_engine);
		break;
	default:
		e = ENOSYS;
		break;
	}
	q->err = e;
	if (e != 0)
		out = -1;
	if (egress_fdpass_send(mon_chan, q, sizeof(*q), out, -1) == -1)
		log_error_errno("event=monitor-answer");
	if (keep != -1)
		close(keep);
}

static void
mon_engine_lost(void)
{
	struct mon_principal *p, *next;
	int status = 0;

	event_free(mon_chan_ev);
	mon_chan_ev = NULL;
	close(mon_chan);
	mon_chan = -1;
	if (mon_engine > 0) {
		/* EOF first, then the death: make sure, then reap. */
		kill(mon_engine, SIGKILL);
		while (waitpid(mon_engine, &status, 0) == -1 && errno == EINTR)
			;
	}
	if (mon_seccomp[0] != '\0')
		log_error("event=engine-exit pid=%d %s", (int)mon_engine, mon_seccomp);
	else if (WIFSIGNALED(status) && !mon_stopping)
		log_error("event=engine-exit pid=%d signal=%d", (int)mon_engine, WTERMSIG(status));
	else if (!mon_stopping || WEXITSTATUS(status) != 0)
		log_info("event=engine-exit pid=%d status=%d", (int)mon_engine, WEXITSTATUS(status));
	mon_engine = -1;
	mon_seccomp[0] = '\0';
	mon_close_opens();
	/* Leases lived as long as connections that died with the engine. */
	for (p = TAILQ_FIRST(&mon_principals); p != NULL; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (mon_stopping || (p->flags & MW_F_LEASE))
			mon_principal_free(p, true);
	}
	if (mon_stopping) {
		event_base_loopexit(egressd_base, NULL);
		return;
	}
	mon_spawn();
}

static void
mon_chan_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	/* One message per wakeup: the next wakes the loop again (no read that finds none). */
	{
		int in_fd = -1, nfds, truncated;
		ssize_t n = egress_fdpass_recv(fd, mon_buf, sizeof(mon_buf), &in_fd, &nfds,
		    &truncated, MSG_DONTWAIT);
		struct mw_head h;

		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			mon_engine_lost();
			return;
		}
		if (truncated || (size_t)n < sizeof(h)) {
			log_error("event=monitor-refused detail=\"message of a wrong size\"");
			if (in_fd != -1)
				close(in_fd);
			kill(mon_engine, SIGKILL);
			return;
		}
		memcpy(&h, mon_buf, sizeof(h));
		if (h.magic != MW_MAGIC && (size_t)n < sizeof(mon_seccomp) &&
		    memmem(mon_buf, (size_t)n, ": seccomp syscall=", 18) != NULL) {
			/* The engine's SIGSYS handler: the call it was refused, then it dies. */
			const char *at = memmem(mon_buf, (size_t)n, "seccomp ", 8);
			size_t l = (size_t)n - (size_t)(at - (const char *)mon_buf);

			memcpy(mon_seccomp, at, l);
			mon_seccomp[l] = '\0';
			mon_seccomp[strcspn(mon_seccomp, "\n")] = '\0';
			/* The engine's bytes go to the log only as words of the report's shape. */
			for (char *c = mon_seccomp; *c != '\0'; c++)
				if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
				    *c == '=' || *c == '_' || *c == ' '))
					*c = '?';
		} else if (h.magic == MW_MAGIC && h.type == MW_BATCH) {
			mon_batch(mon_buf, (size_t)n);
		} else if (h.magic == MW_MAGIC && h.type == MW_REQ &&
		    (size_t)n == sizeof(struct mw_req)) {
			struct mw_req *q = xmalloc(sizeof(*q));
			const char *why;

			memcpy(q, mon_buf, sizeof(*q));
			if (mw_req_check(q, &why) == -1) {
				log_error("event=monitor-refused op=%u detail=\"%s\"", q->op, why);
				q->err = EINVAL;
				if (egress_fdpass_send(mon_chan, q, sizeof(*q), -1, -1) == -1)
					log_error_errno("event=monitor-answer");
			} else {
				mon_request(q, in_fd);
			}
			free(q);
		} else {
			log_error("event=monitor-refused detail=\"not a message of the channel\"");
			kill(mon_engine, SIGKILL);
		}
		if (in_fd != -1)
			close(in_fd);
	}
}

static void
mon_restart_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	mon_spawn();
}

/* Forks and execs the engine: egressd -E -c FILE, the channel on fd 3. */
static void
mon_spawn(void)
{
	time_t now = time(NULL);
	int sv[2], cfd;
	pid_t pid;

	if (now - mon_window_start >= MON_RESTART_WINDOW_S) {
		mon_window_start = now;
		mon_window_starts = 0;
	}
	if (++mon_window_starts > MON_RESTARTS) {
		log_error("event=engine-restart result=failed detail=\"%u engine starts within "
		    "%d s: giving up\"", MON_RESTARTS, MON_RESTART_WINDOW_S);
		mon_stopping = true;
		event_base_loopexit(egressd_base, NULL);
		return;
	}
	/* The configuration as the monitor read it last: the engine's first read. */
	if ((cfd = memfd_create("egressd.conf", MFD_CLOEXEC)) == -1 ||
	    write(cfd, mon_conf->text, mon_conf->textlen) != (ssize_t)mon_conf->textlen) {
		log_error_errno("event=engine-start");
		if (cfd != -1)
			close(cfd);
		goto later;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		log_error_errno("event=engine-start");
		close(cfd);
		goto later;
	}
	{
		int sz = 1 << 20;

		(void)setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		(void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	if ((pid = fork()) == -1) {
		log_error_errno("event=engine-start");
		close(sv[0]);
		close(sv[1]);
		close(cfd);
		goto later;
	}
	if (pid == 0) {
		char *argv[7] = { "egressd", "-E", "-c", (char *)mon_conf_path };
		int argc = 4;
		sigset_t none;
		extern char **environ;

		if (mon_debug)
			argv[argc++] = "-d";
		if (mon_seccomp_log)
			argv[argc++] = "-S";
		argv[argc] = NULL;

		/* The engine handles these once its handlers exist (engine_run unblocks). */
		sigemptyset(&none);
		sigaddset(&none, SIGTERM);
		sigaddset(&none, SIGINT);
		sigaddset(&none, SIGHUP);
		sigaddset(&none, SIGUSR1);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int exe = fcntl(mon_exe, F_DUPFD, 6), ch = fcntl(sv[1], F_DUPFD, 6);
		int cf = fcntl(cfd, F_DUPFD, 6);

		if (exe == -1 || ch == -1 || cf == -1 || dup2(ch, 3) == -1 || dup2(exe, 4) == -1 ||
		    dup2(cf, ENGINE_CONF_FD) == -1 || fcntl(4, F_SETFD, FD_CLOEXEC) == -1)
			_exit(127);
		if (close_range(6, ~0U, 0) == -1)
			for (int i = 6; i < 1024; i++)
				close(i);
		fexecve(4, argv, environ);
		_exit(127);
	}
	close(sv[1]);
	close(cfd);
	mon_chan = sv[0];
	mon_engine = pid;
	mon_next = 1;
	mon_chan_ev = event_new(egressd_base, mon_chan, EV_READ | EV_PERSIST, mon_chan_cb, NULL);
	event_add(mon_chan_ev, NULL);
	log_info("event=engine-start pid=%d", (int)pid);
	return;
later:
	{
		struct timeval tv = { 1, 0 };

		evtimer_add(mon_restart_ev, &tv);
	}
}

/* --- signals ------------------------------------------------------------------------------ */

static void
mon_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct conf *nc;

	(void)what;
	(void)arg;
	switch (sig) {
	case SIGTERM:
	case SIGINT:
		if (!mon_stopping)
			mon_notify("STOPPING=1");
		mon_stopping = true;
		if (mon_engine > 0)
			kill(mon_engine, SIGTERM);
		else
			event_base_loopexit(egressd_base, NULL);
		break;
	case SIGHUP:
		/* The monitor's copy first: it says which files the engine may open now. */
		if ((nc = conf_load(mon_conf_path)) != NULL) {
			conf_free(mon_conf);
			mon_conf = nc;
			egressd_conf = nc;
		}
		if (mon_engine > 0)
			kill(mon_engine, SIGHUP);
		break;
	case SIGUSR1:
		if (receipt_reopen() == -1)
			log_error("event=receipts-reopen result=failed detail=\"still writing the old "
			    "file\"");
		else
			log_info("event=receipts-reopen result=ok path=%s", mon_conf->receipts);
		break;
	case SIGCHLD:
		/* Reaped where the channel ends (mon_engine_lost). */
		break;
	default:
		break;
	}
}

int
monitor_main(struct conf *conf, const char *file, bool debug, bool seccomp_log)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGCHLD };
	sigset_t startup;
	struct mon_principal *p;

	mon_conf = conf;
	mon_debug = debug;
	mon_seccomp_log = seccomp_log;
	if ((mon_conf_path = realpath(file, NULL)) == NULL) {
		log_startupx("%s: %s", file, strerror(errno));
		return 1;
	}
	/* The conf the engine opens later is this path: no relative path stays ambiguous. */
	free(conf->file);
	conf->file = xstrdup(mon_conf_path);
	sigemptyset(&startup);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&startup, sigs[i]);
	sigprocmask(SIG_BLOCK, &startup, NULL);
	egressd_uid = geteuid();
	egressd_gid = getegid();
	log_init("egressd", LOG_OUT_LOGFMT, conf->log_syslog, debug);
	signal(SIGPIPE, SIG_IGN);
	egressd_started = time(NULL);
	if ((egressd_base = event_base_new()) == NULL) {
		log_startupx("libevent: no event base");
		return 1;
	}
	if ((mon_exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)) == -1) {
		log_startupx("/proc/self/exe: %s", strerror(errno));
		return 1;
	}
	if (conf->signing_key != NULL && receipt_signing_key(conf->signing_key) == -1)
		return 1;
	if (mon_runtime_dir(conf->runtime_dir) == -1 ||
	    receipt_open(conf->receipts, conf->receipt_key, egressd_base) == -1 ||
	    ctl_sockets(conf, &mon_ctl, &mon_lease) == -1)
		return 1;
	mon_ctl_path = xstrdup(conf->control);
	mon_lease_path = conf->lease != NULL ? xstrdup(conf->lease) : NULL;
	if (conf->metrics_listen != NULL && (mon_metrics = metrics_socket(conf->metrics_listen)) == -1)
		return 1;
	if (conf->syslog)
		receipt_syslog(true);
	receipt_set_rotate(conf->receipts_rotate);
	if (chdir(conf->runtime_dir) == -1) {
		log_startupx("runtime-dir %s: %s", conf->runtime_dir, strerror(errno));
		return 1;
	}
	/* Root keeps only what the monitor's jobs need; nobody may ptrace it or read its memory. */
	if (geteuid() == 0 && priv_caps() == -1) {
		log_startupx("capabilities: %s", strerror(errno));
		return 1;
	}
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		mon_sig[i] = evsignal_new(egressd_base, sigs[i], mon_signal_cb, NULL);
		event_add(mon_sig[i], NULL);
	}
	mon_restart_ev = evtimer_new(egressd_base, mon_restart_cb, NULL);
	sigprocmask(SIG_UNBLOCK, &startup, NULL);
	mon_spawn();
	event_base_dispatch(egressd_base);

	if (mon_engine > 0) {
		/* Gave up, or asked to stop before the engine ended: it goes now. */
		kill(mon_engine, SIGKILL);
		waitpid(mon_engine, NULL, 0);
		mon_close_opens();
	}
	while ((p = TAILQ_FIRST(&mon_principals)) != NULL)
		mon_principal_free(p, true);
	if (mon_ctl != -1) {
		close(mon_ctl);
		(void)priv_do_unlink(mon_ctl_path, 0, 0);
	}
	if (mon_lease != -1) {
		close(mon_lease);
		(void)priv_do_unlink(mon_lease_path, 0, 0);
	}
	free(mon_ctl_path);
	free(mon_lease_path);
	if (mon_metrics != -1)
		close(mon_metrics);
	receipt_close();
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		event_free(mon_sig[i]);
	event_free(mon_restart_ev);
	event_base_free(egressd_base);
	log_info("event=stopped");
	conf_free(mon_conf);
	return mon_window_starts > MON_RESTARTS ? 1 : 0;
}
