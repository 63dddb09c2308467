/*
 * engine.c: egressd's engine, the process that parses the network (frontends, policy
 * decisions, DNS, connect, SNI guard, relay, quotas), and its side of the channel to the
 * monitor (monitor.c, proto/monwire.h). The monitor execs it with the channel on fd 3;
 * it reads its configuration and the policies of its principals while it still has the
 * rights it was started with and before any network byte, takes the listeners the
 * monitor keeps, then drops to its user (no capabilities, no_new_privs) and serves.
 *
 * It holds no key: receipts go to the monitor in batches, one per event-loop turn, and no
 * connection takes its next step before the monitor has acknowledged that its open or
 * denial is in the kernel: the connection holds itself (conn_hold, conn.c: none of its
 * events runs, no byte of it leaves, no side is shut) and the loop serves the others
 * meanwhile; the acknowledgement, read by the channel's event, releases it. Files it
 * needs once confined (a lease's policy, a principal added by the control socket, the
 * configuration on SIGHUP) are opened by the monitor, which decides
 * whether the engine may have them. Trusts the monitor; the monitor trusts it for
 * nothing it can check.
 */
#include "config.h"

#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "egressd.h"
#include "allow.h"
#include "fdpass.h"

#define ENGINE_CHANNEL 3

bool engine_confined;
static int eng_chan = -1;
static uint8_t eng_buf[MW_BATCH_MAX];
static struct mw_writer eng_w;
static uint64_t eng_first = 1;          /* the engine's number of the batch's first record */
static uint64_t eng_file_seq;           /* the file's seq after the last acknowledged batch */
static struct event *eng_ack_ev;        /* the channel readable: acknowledgements not waited for */

static _Noreturn void
engine_lost(const char *what)
{
	/* The monitor is gone (or spoke out of turn): nothing can be recorded any more. */
	log_error("event=engine-exit detail=\"%s\"", what);
	_exit(1);
}

uint64_t
receipt_seq(void)
{
	return eng_chan == -1 ? receipt_file_seq() : eng_file_seq;
}

/*
 * Batches sent and not yet acknowledged: their last record's number, oldest first
 * (acknowledgements come in order). A batch of closes only holds nothing back (the
 * connection has no next step; its records are in the channel's kernel buffer, which the
 * monitor reads to the end even if the engine dies): the monitor does not answer it. One
 * with an open or a denial is answered; its connections hold themselves until then
 * (conn_hold), and a record no connection holds for (a count of collapsed denials) is
 * waited for at the turn's end, as are all of them when the list is full.
 */
#define ENGINE_UNACKED_MAX 64
static uint64_t eng_unacked[ENGINE_UNACKED_MAX];
static unsigned eng_nunacked;
static unsigned eng_batch_wait;         /* opens and denials in the batch being filled */
static unsigned eng_batch_held;         /* of them, those a connection holds for */

/* The oldest outstanding batch is acknowledged by ack: the file's seq moves on. */
static uint64_t
engine_acked(const struct mw_head *ack, ssize_t n)
{
	if (n != (ssize_t)sizeof(*ack) || ack->magic != MW_MAGIC || ack->type != MW_ACK ||
	    eng_nunacked == 0 || ack->seq != eng_unacked[0])
		engine_lost("no acknowledgement of a receipt batch");
	eng_file_seq = ack->file_seq;
	memmove(eng_unacked, eng_unacked + 1, --eng_nunacked * sizeof(eng_unacked[0]));
	return ack->seq;
}

/*
 * Reads acknowledgements until none is outstanding, then releases the connections they
 * cover (after the loop: a release can write a record, which can send a batch).
 */
static void
engine_wait_acks(void)
{
	struct mw_head ack;
	uint64_t last = 0;
	ssize_t n;

	while (eng_nunacked > 0) {
		do
			n = recv(eng_chan, &ack, sizeof(ack), 0);
		while (n == -1 && errno == EINTR);
		last = engine_acked(&ack, n);
	}
	if (last != 0)
		conn_release(last);
}

/* The channel's read event: the acknowledgements that arrived, and their connections. */
static void
engine_ack_read(evutil_socket_t fd, short what, void *arg)
{
	struct mw_head ack;
	uint64_t last = 0;
	ssize_t n;

	(void)what;
	(void)arg;
	while (eng_nunacked > 0) {
		n = recv(fd, &ack, sizeof(ack), MSG_DONTWAIT);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		last = engine_acked(&ack, n);
	}
	if (last == 0) {
		/* Readable with nothing expected: the monitor closed it, or spoke out of turn. */
		n = recv(fd, &ack, sizeof(ack), MSG_DONTWAIT | MSG_PEEK);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			engine_lost("the monitor closed the channel");
		if (n > 0)
			engine_lost("a message from the monitor out of turn");
		return;
	}
	conn_release(last);
	conn_release_finish();
}

static void
engine_send_batch(bool wait)
{
	unsigned count = eng_w.count;
	/* Closes only, and nothing to wait for: the monitor need not answer. */
	bool noack = eng_batch_wait == 0 && !wait;
	size_t len;

	if (count > 0) {
		if (eng_nunacked == ENGINE_UNACKED_MAX)
			engine_wait_acks();

		len = mw_batch_end(&eng_w, eng_first, noack ? MW_BATCH_NOACK : 0);
		if (egress_fdpass_send(eng_chan, eng_buf, len, -1, -1) != (ssize_t)len)
			engine_lost("cannot send receipts to the monitor");
		if (!noack)
			eng_unacked[eng_nunacked++] = eng_first + count - 1;
		eng_first += count;
		mw_batch_begin(&eng_w, eng_buf, sizeof(eng_buf));
	}
	eng_batch_wait = eng_batch_held = 0;
	if (wait)
		engine_wait_acks();
}

void
engine_flush(void)
{
	if (eng_chan == -1)
		return;
	/* Half-closes a release put off, then the turn's held connections stop. */
	conn_release_finish();
	conn_hold_suspend();
	engine_send_batch(eng_batch_wait > eng_batch_held);
	/* The send may have waited (a record nobody holds for, 64 batches outstanding) and
	 * released connections whose half-close is due: before the poll, not after it. */
	conn_release_finish();
}

bool
engine_waiting(void)
{
	return eng_chan != -1 && eng_batch_wait > eng_batch_held;
}

uint64_t
engine_hold(void)
{
	if (eng_chan == -1 || eng_w.count == 0 || eng_batch_held >= eng_batch_wait)
		return 0;
	eng_batch_held++;
	return eng_first + eng_w.count - 1;
}

void
engine_sync(void)
{
	if (eng_chan != -1)
		engine_send_batch(true);
}

int
receipt_write(const struct receipt *r)
{
	/* No monitor: the daemon's objects in a unit test, which writes the file itself. */
	if (eng_chan == -1)
		return receipt_record(r);
	if (mw_batch_add(&eng_w, r) == -1) {
		/* Full: this batch goes now (still before the connection's next step). */
		engine_send_batch(eng_batch_wait > eng_batch_held);
		if (mw_batch_add(&eng_w, r) == -1) {
			log_error("event=receipt-overflow id=%s", r->id ? r->id : "-");
			return -1;
		}
	}
	/* The next step of an open (bytes) or of a denial (the answer) waits for the monitor. */
	if (r->event != RECEIPT_CLOSE)
		eng_batch_wait++;
	return 0;
}

/* One request and its answer; the turn's receipts go first, so that order holds. */
static int
engine_call(struct mw_req *q, int fd_in, int *fd_out)
{
	struct mw_req *r = xmalloc(sizeof(*r));
	int fd = -1, nfds, truncated;
	ssize_t n;

	engine_send_batch(true);       /* the answer follows every acknowledgement */
	q->h.magic = MW_MAGIC;
	q->h.type = MW_REQ;
	if (egress_fdpass_send(eng_chan, q, sizeof(*q), fd_in, -1) != (ssize_t)sizeof(*q))
		engine_lost("cannot reach the monitor");
	n = egress_fdpass_recv(eng_chan, r, sizeof(*r), &fd, &nfds, &truncated, 0);
	if (n != (ssize_t)sizeof(*r) || truncated || r->h.magic != MW_MAGIC ||
	    r->h.type != MW_REQ || r->op != q->op)
		engine_lost("the monitor's answer is not one");
	memcpy(q, r, sizeof(*q));
	free(r);
	if (fd_out != NULL)
		*fd_out = fd;
	else if (fd != -1)
		close(fd);
	if (q->err != 0) {
		if (fd_out != NULL && *fd_out != -1) {
			close(*fd_out);
			*fd_out = -1;
		}
		errno = q->err;
		return -1;
	}
	return 0;
}

static struct mw_req *
engine_req(enum mw_op op)
{
	struct mw_req *q = xcalloc(1, sizeof(*q));

	q->op = op;
	return q;
}

int
priv_listen(const struct principal_spec *spec, const char *digest, uid_t uid, gid_t gid,
    dev_t *dev, ino_t *ino)
{
	struct mw_req *q;
	struct stat st;
	int fd = -1, e;

	if (eng_chan == -1) {
		/* No monitor (a unit test of the daemon's objects): the operation itself. */
		if ((fd = priv_do_listen(spec->socket, uid, gid, &st)) != -1) {
			*dev = st.st_dev;
			*ino = st.st_ino;
		}
		return fd;
	}
	q = engine_req(MW_LISTEN);

	snprintf(q->name, sizeof(q->name), "%s", spec->name);
	snprintf(q->path, sizeof(q->path), "%s", spec->socket);
	snprintf(q->policy, sizeof(q->policy), "%s", spec->policy_file);
	snprintf(q->digest, sizeof(q->digest), "%s", digest);
	q->uid = (uint32_t)uid;
	q->gid = (uint32_t)gid;
	q->peer_uid = (uint32_t)spec->peer_uid;
	q->flags = (spec->from_conf ? MW_F_FROM_CONF : 0) | (spec->lease ? MW_F_LEASE : 0) |
	    (spec->has_owner ? MW_F_OWNER : 0) | (spec->has_peer_uid ? MW_F_PEER_UID : 0);
	if (engine_call(q, -1, &fd) == 0 && fd == -1) {
		q->err = EPROTO;
		errno = EPROTO;
	}
	e = errno;
	if (q->err == 0) {
		*dev = (dev_t)q->dev;
		*ino = (ino_t)q->ino;
	}
	free(q);
	errno = e;
	return fd;
}

int
priv_unlink(const char *name, const char *path, dev_t dev, ino_t ino)
{
	struct mw_req *q;
	int rc;

	if (eng_chan == -1)
		return priv_do_unlink(path, (uint64_t)dev, (uint64_t)ino);
	q = engine_req(MW_UNLINK);
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->dev = (uint64_t)dev;
	q->ino = (uint64_t)ino;
	rc = engine_call(q, -1, NULL);
	free(q);
	return rc;
}

int
engine_open(const char *path, enum mw_open_kind kind, int peer_fd)
{
	struct mw_req *q;
	int fd = -1, e;

	if (!engine_confined)
		return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	q = engine_req(MW_OPEN);
	q->kind = (uint32_t)kind;
	if (strlen(path) >= sizeof(q->path)) {
		free(q);
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(q->path, sizeof(q->path), "%s", path);
	if (engine_call(q, kind == MW_OPEN_PEER ? peer_fd : -1, &fd) == 0 && fd == -1)
		errno = EPROTO;
	e = errno;
	free(q);
	errno = e;
	return fd;
}

int
engine_open_conf(const char *path)
{
	return engine_open(path, MW_OPEN_CONF, -1);
}

int
engine_open_conf_file(const char *path)
{
	return engine_open(path, MW_OPEN_CONF_FILE, -1);
}

int
engine_conf_first(const char *path)
{
	(void)path;
	if (lseek(ENGINE_CONF_FD, 0, SEEK_SET) == -1)
		return -1;
	return fcntl(ENGINE_CONF_FD, F_DUPFD_CLOEXEC, 0);
}

const char *
engine_maccheck(int fd, const char *path, const char *digest, char *err, size_t errlen)
{
	struct mw_req *q = engine_req(MW_MACCHECK);
	const char *res = NULL;

	snprintf(q->path, sizeof(q->path), "%s", path);
	snprintf(q->digest, sizeof(q->digest), "%s", digest);
	if (engine_call(q, fd, NULL) == -1) {
		/* The monitor's words when it has them (the policy parser's, with the key). */
		snprintf(err, errlen, "%s", q->policy[0] ? q->policy : strerror(q->err));
		res = err;
	}
	free(q);
	return res;
}

/* --- start ----------------------------------------------------------------------------- */

/* The listeners the monitor keeps: control, lease, metrics, then each principal. */
int
engine_adopt_socket(uint32_t kind)
{
	struct mw_req *q = engine_req(MW_ADOPT);
	int fd = -1;

	q->kind = kind;
	if (engine_call(q, -1, &fd) == -1)
		fd = -1;
	free(q);
	return fd;
}

/*
 * Principals that outlived an engine (added by the control socket or egressd.conf): the
 * same listener, the same device and inode; the policy is read again and must have the
 * digest it had when it was added (else the principal is removed: fail closed).
 */
void
engine_adopt_principals(void)
{
	for (uint64_t i = 0;; i++) {
		struct mw_req *q = engine_req(MW_ADOPT);
		struct principal_spec spec;
		struct principal *p;
		char err[512];
		int fd = -1;

		q->kind = MW_ADOPT_PRINCIPAL;
		q->h.seq = i;
		if (engine_call(q, -1, &fd) == -1 || (q->flags & MW_F_LAST)) {
			free(q);
			return;
		}
		memset(&spec, 0, sizeof(spec));
		spec.name = q->name;
		spec.socket = q->path;
		spec.policy_file = q->policy;
		spec.has_owner = (q->flags & MW_F_OWNER) != 0;
		spec.owner_uid = (uid_t)q->uid;
		spec.owner_gid = (gid_t)q->gid;
		spec.has_peer_uid = (q->flags & MW_F_PEER_UID) != 0;
		spec.peer_uid = (uid_t)q->peer_uid;
		spec.from_conf = (q->flags & MW_F_FROM_CONF) != 0;
		spec.open_kind = MW_OPEN_CONF_FILE;
		spec.peer_fd = -1;
		spec.adopted = true;
		spec.adopt_fd = fd;
		spec.adopt_dev = (dev_t)q->dev;
		spec.adopt_ino = (ino_t)q->ino;
		spec.adopt_digest = q->digest;
		if ((p = principal_create(&spec, err, sizeof(err))) == NULL) {
			log_error("event=principal-adopt principal=%s error=\"%s\"", q->name, err);
			close(fd);
			(void)priv_unlink(q->name, q->path, (dev_t)q->dev, (ino_t)q->ino);
		} else {
			p->from_conf = spec.from_conf;
			log_info("event=principal-adopt principal=%s socket=%s", p->name, p->socket);
		}
		free(q);
	}
}

/* The engine's user: `user`, else nobody when started as root; else stays as it is. */
int
engine_drop(const struct conf *conf)
{
	struct passwd *pw;
	uid_t uid = 65534;
	gid_t gid = 65534;

	if (geteuid() == 0) {
		const char *user = conf->user != NULL ? conf->user : "nobody";

		if ((pw = getpwnam(user)) != NULL) {
			uid = pw->pw_uid;
			gid = pw->pw_gid;
		} else if (conf->user != NULL) {
			log_startupx("user %s: no such user", user);
			return -1;
		}
		if (uid == 0) {
			log_startupx("user %s is root: the engine must not be", user);
			return -1;
		}
		if (setgroups(1, &gid) == -1 || setresgid(gid, gid, gid) == -1 ||
		    setresuid(uid, uid, uid) == -1) {
			cap_t none;

			if (conf->user != NULL || geteuid() != 0) {
				log_startupx("dropping to %s: %s", user, strerror(errno));
				return -1;
			}
			/*
			 * Root of a user namespace where nobody is not mapped (egress-run's
			 * private egressd): no other uid to become, so no capability at all;
			 * the seccomp filter keeps it from opening any file.
			 */
			if ((none = cap_init()) == NULL || cap_set_proc(none) == -1) {
				log_startupx("dropping capabilities: %s", strerror(errno));
				return -1;
			}
			cap_free(none);
			log_info("event=engine-user uid=0 detail=\"nobody is not mapped here: "
			    "every capability dropped instead\"");
		} else if (setuid(0) == 0) {
			log_startupx("privileges could be regained; refusing to run");
			return -1;
		}
	}
	/* A change of credentials cleared the parent-death signal: again. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1) {
		log_startupx("prctl: %s", strerror(errno));
		return -1;
	}
	if (getppid() != (pid_t)egressd_pid) {
		log_startupx("the monitor is gone");
		return -1;
	}
	return 0;
}

/* The channel is fd 3 (the monitor's exec); -1 when it is not a socket. */
int
engine_start(void)
{
	int type;
	socklen_t len = sizeof(type);

	if (getsockopt(ENGINE_CHANNEL, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
	    type != SOCK_SEQPACKET) {
		log_startupx("no channel to the monitor on fd %d (egressd -E is started by egressd)",
		    ENGINE_CHANNEL);
		return -1;
	}
	eng_chan = ENGINE_CHANNEL;
	/* The monitor's death ends the engine too, even one stuck in a loop. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() == 1)
		return -1;
	mw_batch_begin(&eng_w, eng_buf, sizeof(eng_buf));
	(void)prctl(PR_SET_NAME, "egressd-engine", 0, 0, 0);
	return 0;
}

/* Serving: the monitor may announce it (READY=1 to systemd). */
void
engine_ready(void)
{
	struct mw_req *q = engine_req(MW_READY);

	if (engine_call(q, -1, NULL) == -1)
		engine_lost("the monitor refused the engine");
	free(q);
	/* From now on acknowledgements are read when they come, between the other events. */
	eng_ack_ev = event_new(egressd_base, eng_chan, EV_READ | EV_PERSIST, engine_ack_read,
	    NULL);
	if (eng_ack_ev == NULL || event_add(eng_ack_ev, NULL) == -1)
		engine_lost("no event for the channel to the monitor");
}

/*
 * The engine's seccomp allow-list: every call it makes once it serves (found by running
 * the whole suite with egressd -S, which reports and refuses with ENOSYS instead of
 * killing). Sockets only of the Internet families (the listeners and the monitor's
 * channel came made); no open of any file (EACCES: a library that looks for one copes,
 * and what the engine reads comes from the monitor as a descriptor); no exec, no ptrace,
 * no process or memory inspection of others, no namespaces, no mounts, no links.
 */
static const struct sbx_allow engine_allowed[] = {
	/* the event loop, descriptors */
	SBX_ALLOW("epoll_wait"), SBX_ALLOW("epoll_pwait"), SBX_ALLOW("epoll_ctl"),
	SBX_ALLOW("read"), SBX_ALLOW("readv"), SBX_ALLOW("write"), SBX_ALLOW("writev"),
	SBX_ALLOW("pread64"), SBX_ALLOW("close"), SBX_ALLOW("fstat"), SBX_ALLOW("newfstatat"),
	SBX_ALLOW("lseek"),
	SBX_ALLOW_ARG("fcntl", 1, F_GETFL, F_SETFL, F_GETFD, F_SETFD),
	SBX_ALLOW_ARG("ioctl", 1, FIONREAD, FIONBIO),
	SBX_ALLOW("pipe2"), SBX_ALLOW("splice"),
	/* sockets: connections out, accepted clients, DNS */
	SBX_ALLOW_ARG("socket", 0, AF_INET, AF_INET6), SBX_ALLOW("connect"), SBX_ALLOW("accept4"),
	SBX_ALLOW("accept"), SBX_ALLOW("bind"), SBX_ALLOW("getsockname"), SBX_ALLOW("getpeername"),
	SBX_ALLOW("setsockopt"), SBX_ALLOW("getsockopt"), SBX_ALLOW("shutdown"),
	SBX_ALLOW("recvfrom"), SBX_ALLOW("recvmsg"), SBX_ALLOW("sendto"), SBX_ALLOW("sendmsg"),
	SBX_ALLOW("sendmmsg"), SBX_ALLOW("recvmmsg"),
	/* memory, time, randomness, signals, threads' locks */
	SBX_ALLOW("brk"), SBX_ALLOW("mmap"), SBX_ALLOW("munmap"), SBX_ALLOW("mremap"),
	SBX_ALLOW("madvise"), SBX_ALLOW("mprotect"), SBX_ALLOW("futex"),
	SBX_ALLOW("clock_gettime"), SBX_ALLOW("gettimeofday"), SBX_ALLOW("time"),
	SBX_ALLOW("clock_nanosleep"), SBX_ALLOW("nanosleep"), SBX_ALLOW("getrandom"),
	SBX_ALLOW("rt_sigaction"), SBX_ALLOW("rt_sigprocmask"), SBX_ALLOW("rt_sigreturn"),
	SBX_ALLOW("sigaltstack"),
	SBX_ALLOW("getpid"), SBX_ALLOW("gettid"), SBX_ALLOW("getppid"), SBX_ALLOW("getuid"),
	SBX_ALLOW("geteuid"), SBX_ALLOW("getgid"), SBX_ALLOW("getegid"),
	SBX_ALLOW("sched_yield"), SBX_ALLOW("prlimit64"), SBX_ALLOW("uname"),
	SBX_ALLOW("exit"), SBX_ALLOW("exit_group"),
	/* no file: the monitor opens what the engine may read */
	SBX_ALLOW_ERR("open", EACCES), SBX_ALLOW_ERR("openat", EACCES),
	SBX_ALLOW_ERR("openat2", EACCES),
};

/*
 * Loads the filter. A refused call kills the engine after its name went to the monitor
 * on the channel (the monitor logs it); with -S (seccomp_log) it is logged on stderr and
 * fails with ENOSYS instead, for finding what a list lacks.
 */
int
engine_confine(bool seccomp_log)
{
	unsigned char r[8];

	/* What needs a file or a first use before the filter: randomness (egressd_new_id). */
	if (RAND_bytes(r, sizeof(r)) != 1) {
		log_startupx("no random bytes");
		return -1;
	}
#ifdef EGRESS_TEST_HOOKS
	/*
	 * Test-only (--enable-debug builds): valgrind knows no seccomp(2), so a callgrind
	 * profile of the engine (bench/README.md) runs it without its filter, said in the log.
	 */
	if (getenv("EGRESS_ENGINE_TEST_UNFILTERED") != NULL) {
		log_warnx("event=engine-unfiltered detail=\"test hook: no seccomp filter\"");
		return 0;
	}
#endif
	if (sbx_allow_install(engine_allowed, sizeof(engine_allowed) / sizeof(engine_allowed[0]),
	    seccomp_log ? SBX_ALLOW_LOG : SBX_ALLOW_KILL, seccomp_log ? 2 : eng_chan,
	    "egressd-engine") == -1) {
		log_startupx("seccomp: the engine's filter did not load");
		return -1;
	}
	return 0;
}
