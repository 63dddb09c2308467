/*
 * egress-run: the one-command front door. It runs CMD in a bubblewrap sandbox whose only
 * way out is a principal of egressd: a private egressd for this run (--allow, --policy
 * FILE), or a lease from the system egressd (--policy NAME). At the end it prints what
 * the run reached and what it was refused, from the receipts.
 *
 * Trusted host code. It never runs the workload without the sandbox: a missing bwrap, a
 * missing egressd, any set-up failure is exit 125 with a message.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "common.h"
#include "policy.h"
#include "sandbox.h"

#define RUN_EXIT_SETUP 125
#define RUN_MAX_LIST 64              /* --allow, --rw, --ro, --resolver, --permit-range */
#define RUN_READY_MS 10000           /* the private egressd must be serving within this */
#define RUN_SANDBOX_SOCK "/run/egress.sock"
#define RUN_SANDBOX_BIN "/run/egress-bin"
#define RUN_LISTEN "127.0.0.1:3128"
#define RUN_LEASE_SOCK "/run/egress/lease.sock"
#define RUN_SUMMARY_MAX 256          /* destinations listed in the summary */

struct list {
	const char *v[RUN_MAX_LIST];
	size_t n;
};

static struct {
	const char *policy;
	struct list allow, rw, ro, resolvers, permits;
	const char *receipts;
	const char *hosts;
	const char *lease_sock;
	bool no_fd4;
	bool quiet;
	char **cmd;
} opt;

static char bindir[PATH_MAX];
static char rtdir[PATH_MAX];          /* the private runtime folder, 0700 */
static char principal[80];
static char sock[PATH_MAX];
static char devino[64];
static char receipts[PATH_MAX];
static off_t receipts_start;
static pid_t egressd_pid = -1, bwrap_pid = -1, broker_pid = -1;
static pid_t egressd_child = -1;      /* egressd itself, under egressd_pid (its bwrap) */
static int fd4_chan = -1;             /* the sandbox's end of the broker's channel */
static int lease_fd = -1;
static volatile sig_atomic_t pending_signal;

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "egress-run: %s\n", msg);
	fprintf(stderr,
	    "usage: egress-run [--policy FILE|NAME | --allow HOST:PORT ...] [--rw PATH ...]\n"
	    "                  [--ro PATH ...] [--receipts FILE] [--no-fd4] [--resolver IP:PORT ...]\n"
	    "                  [--hosts FILE] [--permit-range CIDR ...] [--quiet] -- CMD [ARG ...]\n");
	exit(RUN_EXIT_SETUP);
}

static void
list_add(struct list *l, const char *v, const char *what)
{
	if (l->n == RUN_MAX_LIST) {
		fprintf(stderr, "egress-run: more than %d %s\n", RUN_MAX_LIST, what);
		exit(RUN_EXIT_SETUP);
	}
	l->v[l->n++] = v;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * Stops the private egressd (it writes the close receipts of what was still open, then
 * exits) and ends the lease; the summary is read after this.
 */
static json_t *lease_request_summary(void);
static bool signal_children(pid_t init_pid, int sig);
static json_t *lease_summary;         /* the system egressd's summary of the lease */

static void
stop_egress(void)
{
	if (egressd_pid > 0) {
		int status;

		/*
		 * bwrap does not forward signals: egressd, the child of the pid namespace's
		 * init, gets SIGTERM, and only while bwrap has not reaped them (no stale pid).
		 */
		if (waitpid(egressd_pid, &status, WNOHANG) == 0 &&
		    (egressd_child <= 0 || !signal_children(egressd_child, SIGTERM)))
			kill(egressd_pid, SIGTERM);
		for (int i = 0; i < 100 && waitpid(egressd_pid, &status, WNOHANG) == 0; i++)
			usleep(50000);
		if (waitpid(egressd_pid, &status, WNOHANG) == 0) {
			kill(egressd_pid, SIGKILL);     /* bwrap; egressd dies with it */
			waitpid(egressd_pid, &status, 0);
		}
		egressd_pid = -1;
		egressd_child = -1;
	}
	if (lease_fd != -1) {
		/*
		 * The sandbox is gone, so egressd is about to see its tunnels end: give it a
		 * moment to write their closes before the lease ends (which would close what
		 * is left as shutdown).
		 */
		for (int tries = 0; tries < 40; tries++) {
			json_decref(lease_summary);
			if ((lease_summary = lease_request_summary()) == NULL ||
			    json_integer_value(json_object_get(lease_summary, "open")) == 0)
				break;
			usleep(50000);
		}
		close(lease_fd);
		lease_fd = -1;
	}
	if (broker_pid > 0) {
		int status;

		kill(broker_pid, SIGTERM);
		waitpid(broker_pid, &status, 0);
		broker_pid = -1;
	}
	if (fd4_chan != -1) {
		close(fd4_chan);
		fd4_chan = -1;
	}
}

/* Stops what runs and removes the runtime folder. */
static void
cleanup(void)
{
	stop_egress();
	if (rtdir[0] != '\0') {
		nftw(rtdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		rtdir[0] = '\0';
	}
}

static void __attribute__((noreturn))
setup_failed(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "egress-run: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	cleanup();
	exit(RUN_EXIT_SETUP);
}

static void
find_bindir(void)
{
	ssize_t n = readlink("/proc/self/exe", bindir, sizeof(bindir) - 1);
	char *slash;

	if (n <= 0)
		setup_failed("cannot find my own directory");
	bindir[n] = '\0';
	if ((slash = strrchr(bindir, '/')) == NULL)
		setup_failed("cannot find my own directory");
	*slash = '\0';
}

/* The programs egress-run relies on, next to it (as make install puts them). */
static void
need_program(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", bindir, name);
	if (access(out, X_OK) != 0)
		setup_failed("%s not found next to egress-run (in %s): is egress installed?", name,
		    bindir);
}

static bool
find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX * 4];
	char *save = NULL, *dir;

	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", dir, name);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

static void
write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd == -1 || write(fd, data, len) != (ssize_t)len || close(fd) == -1)
		setup_failed("writing %s: %s", path, strerror(errno));
}

static uint8_t *
read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "re");
	uint8_t *buf;
	long n;

	if (fp == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == -1 || (n = ftell(fp)) < 0 ||
	    (unsigned long)n > EGRESS_POLICY_MAX_BYTES || fseek(fp, 0, SEEK_SET) == -1) {
		fclose(fp);
		return NULL;
	}
	buf = xmalloc((size_t)n + 1);
	*len = fread(buf, 1, (size_t)n, fp);
	fclose(fp);
	return buf;
}

/* "HOST:PORT", IPv6 as "[ADDR]:PORT": checked as egressd would, then an allow line. */
static void
allow_line(const char *spec, char **text)
{
	const char *colon = strrchr(spec, ':');
	struct host h;
	const char *why;
	char *end, *line;
	unsigned long port;
	size_t hlen;

	if (colon == NULL)
		setup_failed("--allow %s: expected HOST:PORT", spec);
	hlen = (size_t)(colon - spec);
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
		setup_failed("--allow %s: the port must be 1-65535", spec);
	if (host_parse(spec, hlen, &h, &why) == -1)
		setup_failed("--allow %s: %s", spec, why);
	xasprintf(&line, "%sallow %s %lu\n", *text, h.name, port);
	free(*text);
	*text = line;
}

/* The run's policy, sealed into the runtime folder (later edits of FILE do not matter). */
static void
make_policy(const char *out)
{
	struct policy_diag d;
	struct policy *p;
	char *text = xstrdup(""), *sealed, *t;
	size_t len;

	if (opt.policy != NULL) {
		uint8_t *buf = read_all(opt.policy, &len);

		if (buf == NULL)
			setup_failed("--policy %s: %s", opt.policy, strerror(errno));
		p = policy_load(opt.policy, buf, len, NULL, &d);
		free(buf);
		if (p == NULL)
			setup_failed("--policy %s: %s", opt.policy,
			    d.nerrors ? d.errors[0] : "invalid");
		policy_diag_free(&d);
		free(text);
		text = policy_canonical(p, &len);
		policy_free(p);
	}
	for (size_t i = 0; i < opt.allow.n; i++)
		allow_line(opt.allow.v[i], &text);
	for (size_t i = 0; i < opt.permits.n; i++) {
		xasprintf(&t, "%spermit-range %s\n", text, opt.permits.v[i]);
		free(text);
		text = t;
	}
	p = policy_load("(egress-run policy)", (const uint8_t *)text, strlen(text), NULL, &d);
	free(text);
	if (p == NULL)
		setup_failed("%s", d.nerrors ? d.errors[0] : "invalid policy");
	policy_diag_free(&d);
	sealed = seal_policy(p, NULL, &len);
	policy_free(p);
	write_file(out, sealed, len, 0600);
	free(sealed);
}

static void
mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			setup_failed("mkdir %s: %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, mode) == -1 && errno != EEXIST)
		setup_failed("mkdir %s: %s", buf, strerror(errno));
}

static void
default_receipts(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX];

	if (opt.receipts != NULL) {
		snprintf(receipts, sizeof(receipts), "%s", opt.receipts);
		return;
	}
	if (state != NULL && state[0] == '/')
		snprintf(dir, sizeof(dir), "%s/egress", state);
	else if (home != NULL && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/egress", home);
	else
		setup_failed("no XDG_STATE_HOME or HOME for the receipts: use --receipts FILE");
	mkdir_p(dir, 0700);
	if ((size_t)snprintf(receipts, sizeof(receipts), "%s/receipts.jsonl", dir) >=
	    sizeof(receipts))
		setup_failed("receipts path too long");
}

/* A descriptor moved to 10 or above, so that placing fd 4 never overwrites it. */
static int
high_fd(int fd)
{
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	if (hi == -1)
		setup_failed("fcntl: %s", strerror(errno));
	close(fd);
	return hi;
}

/*
 * fd 4: a connected AF_UNIX seqpacket socketpair (messages like datagrams, but a seqpacket
 * socket cannot address another socket by its path: see sandbox/sandbox.c); egress-broker
 * holds one end on the host and answers each request with a stream from egressd's native
 * connector; the sandbox gets the other end as descriptor 4.
 *
 * The broker dies with egress-run: the child arms PR_SET_PDEATHSIG before exec (it
 * survives the exec of egress-broker, which is not set-id) and then checks that its parent
 * is still this process, since one that died before the signal was armed sends none. The
 * broker gets that pid (--parent) to check it again after exec; reading getppid() only
 * there would take init for the parent if egress-run died in between.
 */
static void
start_broker(void)
{
	char broker[PATH_MAX + 16], chan[16], ppid[24];
	pid_t self = getpid();
	int bp[2];

	need_program("egress-broker", broker, sizeof(broker));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, bp) == -1)
		setup_failed("socketpair: %s", strerror(errno));
	bp[0] = high_fd(bp[0]);
	bp[1] = high_fd(bp[1]);
	if ((broker_pid = fork()) == -1)
		setup_failed("fork: %s", strerror(errno));
	if (broker_pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != self)
			_exit(RUN_EXIT_SETUP);
		if (fcntl(bp[0], F_SETFD, 0) == -1)
			_exit(RUN_EXIT_SETUP);
		snprintf(chan, sizeof(chan), "%d", bp[0]);
		snprintf(ppid, sizeof(ppid), "%ld", (long)self);
		execl(broker, "egress-broker", "--channel", chan, "--parent", ppid, "--egress", sock,
		    "--expect", devino, (char *)NULL);
		_exit(RUN_EXIT_SETUP);
	}
	close(bp[0]);
	fd4_chan = bp[1];
}

/*
 * bwrap and the options both of its sandboxes share (the private egressd's and the
 * workload's): new user, pid, ipc, uts and cgroup namespaces (and the network's when
 * asked), no nested user namespaces, gone with egress-run, its own session, no capability.
 * Returns how many arguments it wrote.
 */
static size_t
bwrap_base(const char **argv, bool unshare_net)
{
	static char bwrap[PATH_MAX];
	size_t n = 0;

	if (bwrap[0] == '\0' && !find_in_path("bwrap", bwrap, sizeof(bwrap)))
		setup_failed("bubblewrap (bwrap) not found: install the Debian package "
		    "bubblewrap; egress-run never runs a command without the sandbox");
	argv[n++] = bwrap;
	argv[n++] = "--unshare-user";
	argv[n++] = "--unshare-pid";
	argv[n++] = "--unshare-ipc";
	argv[n++] = "--unshare-uts";
	if (unshare_net)
		argv[n++] = "--unshare-net";
	argv[n++] = "--unshare-cgroup-try";
	argv[n++] = "--disable-userns";
	argv[n++] = "--die-with-parent";
	argv[n++] = "--new-session";
	argv[n++] = "--cap-drop";
	argv[n++] = "ALL";
	return n;
}

/*
 * The private egressd's confinement, like the system one's under dist/egressd.service:
 * bwrap with the whole file system read-only but the runtime folder and the receipt
 * file, homes empty, a private /dev, new user, pid, ipc, uts and cgroup namespaces (the network
 * is the host's: egressd's job is to reach it), every capability dropped, no_new_privs,
 * and a seccomp filter (sandbox_daemon_filter_export: sockets only AF_UNIX/INET/INET6, no
 * mounts, modules, ptrace, namespaces...). Paths are the same inside and out, so the
 * sockets egressd creates are where the sandbox and egress-run look for them. --info-fd
 * tells the pid namespace's init, whose child (egressd) gets SIGTERM at the end (bwrap
 * forwards no signal); if egress-run dies, --die-with-parent takes the namespace down.
 */
static void
egressd_argv(const char **argv, const char *egressd, const char *conf, const char *rfile,
    int *filter_fd, int info[2])
{
	static char bin[PATH_MAX], hosts[PATH_MAX], fdarg[16], infoarg[16];
	size_t n;
	struct stat st;

	n = bwrap_base(argv, false);    /* the host's network: reaching it is egressd's job */
	if (realpath(egressd, bin) == NULL)
		setup_failed("%s: %s", egressd, strerror(errno));
	if ((*filter_fd = memfd_create("egressd-seccomp", MFD_CLOEXEC)) == -1)
		setup_failed("memfd_create: %s", strerror(errno));
	if (sandbox_daemon_filter_export(*filter_fd) == -1 ||
	    lseek(*filter_fd, 0, SEEK_SET) == -1)
		setup_failed("cannot build the private egressd's seccomp filter");
	if (pipe2(info, O_CLOEXEC) == -1)
		setup_failed("pipe: %s", strerror(errno));
	snprintf(fdarg, sizeof(fdarg), "%d", *filter_fd);
	snprintf(infoarg, sizeof(infoarg), "%d", info[1]);
	argv[n++] = "--ro-bind";
	argv[n++] = "/";
	argv[n++] = "/";
	argv[n++] = "--dev";
	argv[n++] = "/dev";
	/* ProtectHome: homes are empty (what egressd needs from one is bound below). */
	if (stat("/home", &st) == 0 && S_ISDIR(st.st_mode)) {
		argv[n++] = "--tmpfs";
		argv[n++] = "/home";
	}
	if (stat("/root", &st) == 0 && S_ISDIR(st.st_mode)) {
		argv[n++] = "--tmpfs";
		argv[n++] = "/root";
	}
	/*
	 * No tmpfs on /tmp: egressd, its hosts file, a build tree may live there; /tmp is
	 * read-only like the rest. After the homes, since any of these may be in one.
	 */
	argv[n++] = "--ro-bind";
	argv[n++] = bin;
	argv[n++] = bin;
	if (opt.hosts != NULL) {
		if (realpath(opt.hosts, hosts) == NULL)
			setup_failed("--hosts %s: %s", opt.hosts, strerror(errno));
		argv[n++] = "--ro-bind";
		argv[n++] = hosts;
		argv[n++] = hosts;
	}
	argv[n++] = "--bind";
	argv[n++] = rtdir;
	argv[n++] = rtdir;
	argv[n++] = "--bind";          /* the receipt file alone, not its folder */
	argv[n++] = rfile;
	argv[n++] = rfile;
	argv[n++] = "--seccomp";
	argv[n++] = fdarg;
	argv[n++] = "--info-fd";
	argv[n++] = infoarg;
	argv[n++] = "--";
	argv[n++] = bin;
	argv[n++] = "-c";
	argv[n++] = conf;
	argv[n] = NULL;
}

/* The "child-pid" bwrap writes on --info-fd (egressd's pid), or -1. */
static pid_t
info_child_pid(int fd)
{
	char buf[1024];
	size_t len = 0;
	pid_t pid = -1;
	json_t *o;

	for (int waited = 0; waited < RUN_READY_MS && len < sizeof(buf) - 1; waited += 20) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t got;

		if (poll(&pfd, 1, 20) == 0)
			continue;
		if ((got = read(fd, buf + len, sizeof(buf) - 1 - len)) == -1 && errno == EINTR)
			continue;
		if (got <= 0)
			break;          /* bwrap closes it once written, or failed */
		len += (size_t)got;
	}
	buf[len] = '\0';
	if ((o = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL)) != NULL) {
		if (json_is_integer(json_object_get(o, "child-pid")))
			pid = (pid_t)json_integer_value(json_object_get(o, "child-pid"));
		json_decref(o);
	}
	return pid;
}

/* A private egressd for this run, in a 0700 runtime folder, stopped at the end. */
static void
start_private(void)
{
	char egressd[PATH_MAX + 16], conf[PATH_MAX + 16], pol[PATH_MAX + 16];
	char key[PATH_MAX + 16], err[512], *text, *t;
	const char *base = getenv("XDG_RUNTIME_DIR");
	const char *bwrap_argv[64];
	uint8_t r[4];
	struct stat st;
	int status, filter_fd, info[2];
	pid_t parent;

	need_program("egressd", egressd, sizeof(egressd));
	snprintf(rtdir, sizeof(rtdir), "%s/egress-run.XXXXXX",
	    base && base[0] == '/' && access(base, W_OK) == 0 ? base : "/tmp");
	if (mkdtemp(rtdir) == NULL) {
		rtdir[0] = '\0';
		setup_failed("cannot create a runtime folder: %s", strerror(errno));
	}
	chmod(rtdir, 0700);
	if (RAND_bytes(r, sizeof(r)) != 1)
		setup_failed("no random bytes");
	snprintf(principal, sizeof(principal), "run-%d-", (int)getpid());
	egress_hex(r, sizeof(r), principal + strlen(principal));
	snprintf(pol, sizeof(pol), "%s/policy.sealed", rtdir);
	make_policy(pol);
	snprintf(key, sizeof(key), "%s/receipt.key", rtdir);
	if (egress_key_generate(key, err, sizeof(err)) == -1)
		setup_failed("%s", err);
	default_receipts();
	{
		/*
		 * The private egressd gets this one file read-write, not its folder (which may
		 * be / or a home): it must exist, and its real path is what is bound.
		 */
		char real[PATH_MAX];
		int rfd = open(receipts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY, 0600);
		struct stat rst;

		if (rfd == -1 || fstat(rfd, &rst) == -1 || !S_ISREG(rst.st_mode))
			setup_failed("receipts %s: %s", receipts, rfd == -1 ? strerror(errno) :
			    "not a regular file");
		close(rfd);
		if (realpath(receipts, real) == NULL)
			setup_failed("receipts %s: %s", receipts, strerror(errno));
		snprintf(receipts, sizeof(receipts), "%s", real);
	}
	if ((size_t)snprintf(sock, sizeof(sock), "%s/run/%s.sock", rtdir, principal) >=
	    sizeof(sock))
		setup_failed("runtime folder path too long");
	xasprintf(&text, "runtime-dir %s/run\nreceipts %s\nreceipt-key %s\n"
	    "shutdown-grace 1\nprincipal %s policy %s\n", rtdir, receipts, key, principal, pol);
	for (size_t i = 0; i < opt.resolvers.n; i++) {
		xasprintf(&t, "%sresolver %s\n", text, opt.resolvers.v[i]);
		free(text);
		text = t;
	}
	if (opt.hosts != NULL) {
		char abs[PATH_MAX];

		if (realpath(opt.hosts, abs) == NULL)
			setup_failed("--hosts %s: %s", opt.hosts, strerror(errno));
		xasprintf(&t, "%shosts %s\n", text, abs);
		free(text);
		text = t;
	}
	snprintf(conf, sizeof(conf), "%s/egressd.conf", rtdir);
	write_file(conf, text, strlen(text), 0600);
	free(text);
	if (stat(receipts, &st) == 0)
		receipts_start = st.st_size;

	egressd_argv(bwrap_argv, egressd, conf, receipts, &filter_fd, info);
	parent = getpid();
	if ((egressd_pid = fork()) == -1)
		setup_failed("fork: %s", strerror(errno));
	if (egressd_pid == 0) {
		char logpath[PATH_MAX + 16];
		int fd;

		/* Its log goes to the runtime folder; shown only if it fails to start. */
		snprintf(logpath, sizeof(logpath), "%s/egressd.log", rtdir);
		if ((fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) != -1)
			dup2(fd, STDERR_FILENO);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		/* Nothing of the terminal: the workload's input is not egressd's to read. */
		if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
		    dup2(fd, STDIN_FILENO) == -1)
			_exit(RUN_EXIT_SETUP);
		setsid();
		/* Until bwrap's --die-with-parent takes over: egressd ends with egress-run. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 || getppid() != parent)
			_exit(RUN_EXIT_SETUP);
		/* bwrap inherits the filter and the info pipe, nothing else of ours. */
		if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == -1 ||
		    fcntl(filter_fd, F_SETFD, 0) == -1 || fcntl(info[1], F_SETFD, 0) == -1)
			_exit(RUN_EXIT_SETUP);
		execv(bwrap_argv[0], (char *const *)bwrap_argv);
		fprintf(stderr, "egress-run: %s: %s\n", bwrap_argv[0], strerror(errno));
		_exit(RUN_EXIT_SETUP);
	}
	close(filter_fd);
	close(info[1]);
	egressd_child = info_child_pid(info[0]);
	close(info[0]);
	/* Serving once the principal socket exists (egressd creates it after the receipts). */
	for (int waited = 0; waited < RUN_READY_MS; waited += 20) {
		if (waitpid(egressd_pid, &status, WNOHANG) == egressd_pid) {
			char logpath[PATH_MAX + 16], line[512];
			FILE *fp;

			egressd_pid = -1;
			snprintf(logpath, sizeof(logpath), "%s/egressd.log", rtdir);
			if ((fp = fopen(logpath, "re")) != NULL) {
				while (fgets(line, sizeof(line), fp))
					fprintf(stderr, "egressd: %s", line);
				fclose(fp);
			}
			setup_failed("the private egressd did not start");
		}
		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
			snprintf(devino, sizeof(devino), "%llu:%llu", (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino);
			return;
		}
		usleep(20000);
	}
	setup_failed("the private egressd did not create its socket in time");
}

/* A lease from the system egressd: the principal lives as long as lease_fd. */
static void
take_lease(void)
{
	struct sockaddr_un sun;
	json_t *req, *o;
	json_error_t jerr;
	char buf[4096], *s;
	size_t len = 0;
	const char *path = opt.lease_sock ? opt.lease_sock : RUN_LEASE_SOCK;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		setup_failed("lease socket path too long");
	memcpy(sun.sun_path, path, strlen(path));
	if ((lease_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(lease_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		setup_failed("the system egressd does not answer on %s (%s): a named policy "
		    "needs it", path, strerror(errno));
	req = json_pack("{s:s,s:s}", "verb", "lease", "policy", opt.policy);
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (s == NULL || write(lease_fd, s, strlen(s)) != (ssize_t)strlen(s) ||
	    write(lease_fd, "\n", 1) != 1)
		setup_failed("lease request: %s", strerror(errno));
	free(s);
	while (len < sizeof(buf) - 1) {
		ssize_t n = read(lease_fd, buf + len, sizeof(buf) - 1 - len);

		if (n <= 0)
			setup_failed("the system egressd closed the lease connection");
		len += (size_t)n;
		if (memchr(buf, '\n', len))
			break;
	}
	buf[len] = '\0';
	if ((o = json_loads(buf, 0, &jerr)) == NULL)
		setup_failed("unreadable lease reply");
	if (!json_is_true(json_object_get(o, "ok"))) {
		const char *e = json_string_value(json_object_get(o, "error"));
		char why[512];

		snprintf(why, sizeof(why), "%s", e ? e : "?");
		json_decref(o);
		setup_failed("lease refused: %s", why);
	}
	snprintf(principal, sizeof(principal), "%s",
	    json_string_value(json_object_get(o, "name")) ?: "");
	snprintf(sock, sizeof(sock), "%s",
	    json_string_value(json_object_get(o, "socket")) ?: "");
	snprintf(devino, sizeof(devino), "%s",
	    json_string_value(json_object_get(o, "dev_ino")) ?: "");
	json_decref(o);
	if (opt.receipts != NULL) {
		struct stat st;

		snprintf(receipts, sizeof(receipts), "%s", opt.receipts);
		if (stat(receipts, &st) == 0)
			receipts_start = st.st_size;
	}
}

/*
 * The lease's summary from the system egressd ({"verb":"summary"} on the lease
 * connection): its destinations added up and the connections still open. The receipt file
 * is root's, so this is how an unprivileged run learns what it reached. NULL on failure.
 */
static json_t *
lease_request_summary(void)
{
	static const char req[] = "{\"verb\":\"summary\"}\n";
	size_t cap = 64 * 1024, len = 0, max = 1024 * 1024;
	char *buf = xmalloc(cap);
	json_t *o = NULL;

	if (write(lease_fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		goto out;
	for (;;) {
		struct pollfd pfd = { .fd = lease_fd, .events = POLLIN };
		ssize_t n;

		if (memchr(buf, '\n', len) != NULL)
			break;
		if (len == cap) {
			if (cap == max)
				goto out;
			cap *= 2;
			buf = xreallocarray(buf, cap, 1);
		}
		if (poll(&pfd, 1, 2000) != 1)
			goto out;
		if ((n = read(lease_fd, buf + len, cap - len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto out;
		len += (size_t)n;
	}
	o = json_loadb(buf, (size_t)((char *)memchr(buf, '\n', len) - buf), 0, NULL);
	if (o != NULL && !json_is_true(json_object_get(o, "ok"))) {
		json_decref(o);
		o = NULL;
	}
out:
	free(buf);
	return o;
}

/* Mirrors /bin, /lib, … as the host has them: symlinks stay symlinks. */
static void
add_usr_links(const char **argv, size_t *n)
{
	static const char *const dirs[] = { "/bin", "/sbin", "/lib", "/lib64", "/lib32",
	    "/libx32" };
	static char targets[6][PATH_MAX];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct stat st;
		ssize_t len;

		if (lstat(dirs[i], &st) == -1)
			continue;
		if (S_ISLNK(st.st_mode) &&
		    (len = readlink(dirs[i], targets[i], sizeof(targets[i]) - 1)) > 0) {
			targets[i][len] = '\0';
			argv[(*n)++] = "--symlink";
			argv[(*n)++] = targets[i];
			argv[(*n)++] = dirs[i];
		} else if (S_ISDIR(st.st_mode)) {
			argv[(*n)++] = "--ro-bind";
			argv[(*n)++] = dirs[i];
			argv[(*n)++] = dirs[i];
		}
	}
}

static void
forward_signal(int sig)
{
	pending_signal = sig;
}

/* Signals the children of a sandbox's init (bwrap's pid 1); false when it found none. */
static bool
signal_children(pid_t init_pid, int sig)
{
	char path[64], buf[256];
	FILE *fp;
	bool sent = false;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)init_pid,
	    (int)init_pid);
	if ((fp = fopen(path, "re")) != NULL) {
		if (fgets(buf, sizeof(buf), fp) != NULL) {
			char *save = NULL;

			for (char *tok = strtok_r(buf, " \n", &save); tok;
			    tok = strtok_r(NULL, " \n", &save)) {
				kill((pid_t)atoi(tok), sig);
				sent = true;
			}
		}
		fclose(fp);
	}
	return sent;
}

/* The workload is the child of the sandbox's init (bwrap's pid 1, child-pid). */
static void
signal_workload(pid_t init_pid, int sig)
{
	if (!signal_children(init_pid, sig) && bwrap_pid > 0)
		kill(bwrap_pid, sig);
}

static int
run_sandbox(void)
{
	const char *argv[64 + 6 * RUN_MAX_LIST];
	size_t n = 0;
	char launch[PATH_MAX + 16], cwd[PATH_MAX], path_env[PATH_MAX * 2];
	char launch_in[PATH_MAX], statusfd[16];
	const char *home = getenv("HOME"), *term = getenv("TERM"), *lang = getenv("LANG");
	bool ro_cwd = false;
	int sp[2], lp[2], status;
	char launchfd[16];
	bool launched = false;
	pid_t init_pid = -1;
	struct sigaction sa;
	FILE *js;

	need_program("egress-launch", launch, sizeof(launch));
	need_program("egress-relay", launch_in, sizeof(launch_in));
	snprintf(launch_in, sizeof(launch_in), "%s/egress-launch", RUN_SANDBOX_BIN);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		setup_failed("getcwd: %s", strerror(errno));
	for (size_t i = 0; i < opt.ro.n; i++)
		if (strcmp(opt.ro.v[i], ".") == 0)
			ro_cwd = true;
	snprintf(path_env, sizeof(path_env), "%s:%s",
	    getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin", RUN_SANDBOX_BIN);

	n = bwrap_base(argv, true);
	argv[n++] = "--clearenv";
	argv[n++] = "--ro-bind";
	argv[n++] = "/usr";
	argv[n++] = "/usr";
	argv[n++] = "--ro-bind";
	argv[n++] = "/etc";
	argv[n++] = "/etc";
	add_usr_links(argv, &n);
	argv[n++] = "--proc";
	argv[n++] = "/proc";
	argv[n++] = "--dev";
	argv[n++] = "/dev";
	argv[n++] = "--tmpfs";
	argv[n++] = "/tmp";
	argv[n++] = "--tmpfs";
	argv[n++] = "/run";
	if (strcmp(cwd, "/") != 0) {
		argv[n++] = ro_cwd ? "--ro-bind" : "--bind";
		argv[n++] = cwd;
		argv[n++] = cwd;
	}
	/* Paths are bound where they are on the host: absolute, symlinks resolved. */
	for (size_t i = 0; i < opt.rw.n; i++) {
		char *abs = realpath(opt.rw.v[i], NULL);

		if (abs == NULL)
			setup_failed("--rw %s: %s", opt.rw.v[i], strerror(errno));
		argv[n++] = "--bind";
		argv[n++] = abs;
		argv[n++] = abs;
	}
	for (size_t i = 0; i < opt.ro.n; i++) {
		char *abs;

		if (strcmp(opt.ro.v[i], ".") == 0)
			continue;
		if ((abs = realpath(opt.ro.v[i], NULL)) == NULL)
			setup_failed("--ro %s: %s", opt.ro.v[i], strerror(errno));
		argv[n++] = "--ro-bind";
		argv[n++] = abs;
		argv[n++] = abs;
	}
	argv[n++] = "--ro-bind";
	argv[n++] = bindir;
	argv[n++] = RUN_SANDBOX_BIN;
	/* The principal socket last, so that no other mount can cover or replace it. */
	argv[n++] = "--bind";
	argv[n++] = sock;
	argv[n++] = RUN_SANDBOX_SOCK;
	argv[n++] = "--chdir";
	argv[n++] = strcmp(cwd, "/") != 0 ? cwd : "/";
	argv[n++] = "--setenv";
	argv[n++] = "PATH";
	argv[n++] = path_env;
	if (home) {
		argv[n++] = "--setenv";
		argv[n++] = "HOME";
		argv[n++] = home;
	}
	if (term) {
		argv[n++] = "--setenv";
		argv[n++] = "TERM";
		argv[n++] = term;
	}
	if (lang) {
		argv[n++] = "--setenv";
		argv[n++] = "LANG";
		argv[n++] = lang;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		setup_failed("socketpair: %s", strerror(errno));
	sp[1] = high_fd(sp[1]);
	snprintf(statusfd, sizeof(statusfd), "%d", sp[1]);
	/* egress-launch says on this pipe that the sandbox is set up and the command is about
	 * to run: without it, a failure is the sandbox's (125), not the command's. */
	if (pipe2(lp, O_CLOEXEC) == -1)
		setup_failed("pipe: %s", strerror(errno));
	lp[1] = high_fd(lp[1]);
	snprintf(launchfd, sizeof(launchfd), "%d", lp[1]);
	argv[n++] = "--json-status-fd";
	argv[n++] = statusfd;
	argv[n++] = "--";
	argv[n++] = launch_in;
	argv[n++] = "--egress";
	argv[n++] = RUN_SANDBOX_SOCK;
	argv[n++] = "--expect";
	argv[n++] = devino;
	argv[n++] = "--listen";
	argv[n++] = RUN_LISTEN;
	argv[n++] = "--status-fd";
	argv[n++] = launchfd;
	argv[n++] = "--";
	for (char **c = opt.cmd; *c != NULL && n < sizeof(argv) / sizeof(argv[0]) - 1; c++)
		argv[n++] = *c;
	argv[n] = NULL;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if ((bwrap_pid = fork()) == -1)
		setup_failed("fork: %s", strerror(errno));
	if (bwrap_pid == 0) {
		/* Only 0, 1, 2 (and 4, the broker's channel, when wired) enter the sandbox:
		 * everything else is close-on-exec, whatever its number; bwrap's status
		 * descriptor and egress-launch's are cleared again (egress-launch closes its
		 * own before the workload runs). */
		if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
			_exit(RUN_EXIT_SETUP);
		if (fcntl(sp[1], F_SETFD, 0) == -1 || fcntl(lp[1], F_SETFD, 0) == -1)
			_exit(RUN_EXIT_SETUP);
		/* The broker's channel becomes descriptor 4 (dup2 leaves it inherited). */
		if (fd4_chan != -1 && dup2(fd4_chan, 4) != 4)
			_exit(RUN_EXIT_SETUP);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "egress-run: %s: %s\n", argv[0], strerror(errno));
		_exit(RUN_EXIT_SETUP);
	}
	close(sp[1]);
	close(lp[1]);
	if (fd4_chan != -1) {
		close(fd4_chan);        /* the sandbox holds it now */
		fd4_chan = -1;
	}
	js = fdopen(sp[0], "r");
	for (;;) {
		char line[1024];
		int exit_code = -1;

		if (pending_signal) {
			int sig = pending_signal;

			pending_signal = 0;
			if (init_pid > 0)
				signal_workload(init_pid, sig);
			else
				kill(bwrap_pid, sig);
		}
		if (js != NULL && fgets(line, sizeof(line), js) != NULL) {
			json_t *o = json_loads(line, 0, NULL);

			if (o != NULL) {
				if (json_is_integer(json_object_get(o, "child-pid")))
					init_pid = (pid_t)json_integer_value(json_object_get(o,
					    "child-pid"));
				if (json_is_integer(json_object_get(o, "exit-code")))
					exit_code = (int)json_integer_value(json_object_get(o,
					    "exit-code"));
				json_decref(o);
			}
			(void)exit_code;
			continue;
		}
		if (js != NULL && !feof(js) && errno == EINTR) {
			clearerr(js);
			continue;
		}
		break;
	}
	if (js != NULL)
		fclose(js);
	while (waitpid(bwrap_pid, &status, 0) == -1) {
		if (errno != EINTR)
			setup_failed("waitpid: %s", strerror(errno));
		if (pending_signal) {
			int sig = pending_signal;

			pending_signal = 0;
			if (init_pid > 0)
				signal_workload(init_pid, sig);
		}
	}
	bwrap_pid = -1;
	{
		char ok[4];

		launched = read(lp[0], ok, sizeof(ok)) == 3 && memcmp(ok, "ok\n", 3) == 0;
		close(lp[0]);
	}
	if (init_pid <= 0 || !launched)
		return RUN_EXIT_SETUP;      /* bwrap or egress-launch failed (they said why) */
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

struct dest {
	char key[EGRESS_HOST_MAX + 16];
	bool allowed;
	char reason[32];
	unsigned count;
	unsigned long long up, down;
};

static void
human(unsigned long long n, char *out, size_t len)
{
	if (n < 10240)
		snprintf(out, len, "%llu B", n);
	else if (n < 10485760ULL)
		snprintf(out, len, "%.1f KiB", (double)n / 1024);
	else
		snprintf(out, len, "%.1f MiB", (double)n / 1048576);
}

static void summary_print(const struct dest *d, size_t nd);
static void summary_lease(struct dest *d);

/* What this run reached and was refused, from its receipts. */
static void
summary(void)
{
	struct dest *d = xcalloc(RUN_SUMMARY_MAX, sizeof(*d));
	size_t nd = 0, total = 0;
	char *line = NULL;
	size_t cap = 0;
	FILE *fp;

	if (lease_summary != NULL) {
		summary_lease(d);
		free(d);
		return;
	}
	if (receipts[0] == '\0' || (fp = fopen(receipts, "re")) == NULL) {
		fprintf(stderr, "egress-run: no receipts to summarise (%s); egressctl receipts "
		    "--principal %s shows them\n", receipts[0] ? strerror(errno) :
		    "the system egressd keeps them", principal);
		free(d);
		return;
	}
	fseeko(fp, receipts_start, SEEK_SET);
	while (getline(&line, &cap, fp) > 0) {
		json_t *o = json_loads(line, 0, NULL);
		const char *ev, *pr, *host, *reason;
		json_t *port;
		char key[EGRESS_HOST_MAX + 16];
		bool allowed;
		struct dest *x = NULL;

		if (o == NULL)
			continue;
		ev = json_string_value(json_object_get(o, "event"));
		pr = json_string_value(json_object_get(o, "principal"));
		host = json_string_value(json_object_get(o, "host"));
		reason = json_string_value(json_object_get(o, "reason"));
		port = json_object_get(o, "port");
		if (ev == NULL || pr == NULL || strcmp(pr, principal) != 0 ||
		    strcmp(ev, "open") == 0) {
			json_decref(o);
			continue;
		}
		allowed = strcmp(ev, "close") == 0;
		snprintf(key, sizeof(key), "%s:%lld", host ? host : "(no host)",
		    json_is_integer(port) ? (long long)json_integer_value(port) : 0LL);
		for (size_t i = 0; i < nd; i++)
			if (d[i].allowed == allowed && strcmp(d[i].key, key) == 0 &&
			    (allowed || strcmp(d[i].reason, reason ? reason : "") == 0))
				x = &d[i];
		if (x == NULL && nd < RUN_SUMMARY_MAX) {
			x = &d[nd++];
			snprintf(x->key, sizeof(x->key), "%s", key);
			x->allowed = allowed;
			snprintf(x->reason, sizeof(x->reason), "%s", allowed ? "allowed" :
			    reason ? reason : "?");
		}
		if (x != NULL) {
			json_t *c = json_object_get(o, "count");

			x->count += json_is_integer(c) ? (unsigned)json_integer_value(c) : 1;
			x->up += (unsigned long long)json_integer_value(json_object_get(o,
			    "bytes_up"));
			x->down += (unsigned long long)json_integer_value(json_object_get(o,
			    "bytes_down"));
		}
		total++;
		json_decref(o);
	}
	free(line);
	fclose(fp);
	fprintf(stderr, "egress-run: %zu destination%s, receipts in %s (principal %s)\n", nd,
	    nd == 1 ? "" : "s", receipts, principal);
	summary_print(d, nd);
	free(d);
}

/* The lines of the summary, one per destination. */
static void
summary_print(const struct dest *d, size_t nd)
{
	for (size_t i = 0; i < nd; i++) {
		char up[32], down[32];

		if (d[i].allowed) {
			human(d[i].up, up, sizeof(up));
			human(d[i].down, down, sizeof(down));
			fprintf(stderr, "  allowed  %-40s %u× %s up, %s down\n", d[i].key,
			    d[i].count, up, down);
		} else
			fprintf(stderr, "  denied   %-40s %u× %s\n", d[i].key, d[i].count,
			    d[i].reason);
	}
}

/* A lease's summary, from the system egressd's reply (lease_request_summary). */
static void
summary_lease(struct dest *d)
{
	json_t *arr = json_object_get(lease_summary, "destinations"), *o;
	json_int_t dropped = json_integer_value(json_object_get(lease_summary, "dropped"));
	size_t nd = 0, i;

	json_array_foreach(arr, i, o) {
		const char *host = json_string_value(json_object_get(o, "host"));
		const char *reason = json_string_value(json_object_get(o, "reason"));
		json_t *port = json_object_get(o, "port");

		if (nd == RUN_SUMMARY_MAX)
			break;
		snprintf(d[nd].key, sizeof(d[nd].key), "%s:%lld",
		    host != NULL && host[0] != '\0' ? host : "(no host)",
		    json_is_integer(port) ? (long long)json_integer_value(port) : 0LL);
		d[nd].allowed = json_is_true(json_object_get(o, "allowed"));
		snprintf(d[nd].reason, sizeof(d[nd].reason), "%s", reason ? reason : "?");
		d[nd].count = (unsigned)json_integer_value(json_object_get(o, "count"));
		d[nd].up = (unsigned long long)json_integer_value(json_object_get(o, "bytes_up"));
		d[nd].down = (unsigned long long)json_integer_value(json_object_get(o,
		    "bytes_down"));
		nd++;
	}
	fprintf(stderr, "egress-run: %zu destination%s, receipts kept by the system egressd "
	    "(principal %s)\n", nd, nd == 1 ? "" : "s", principal);
	summary_print(d, nd);
	if (dropped > 0)
		fprintf(stderr, "  (%lld more requests to further destinations not listed)\n",
		    (long long)dropped);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "allow", required_argument, NULL, 'a' },
		{ "rw", required_argument, NULL, 'w' },
		{ "ro", required_argument, NULL, 'r' },
		{ "receipts", required_argument, NULL, 'R' },
		{ "no-fd4", no_argument, NULL, '4' },
		{ "resolver", required_argument, NULL, 's' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "permit-range", required_argument, NULL, 'P' },
		{ "lease-socket", required_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, rc;
	bool lease;

	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': opt.policy = optarg; break;
		case 'a': list_add(&opt.allow, optarg, "--allow"); break;
		case 'w': list_add(&opt.rw, optarg, "--rw"); break;
		case 'r': list_add(&opt.ro, optarg, "--ro"); break;
		case 'R': opt.receipts = optarg; break;
		case '4': opt.no_fd4 = true; break;
		case 's': list_add(&opt.resolvers, optarg, "--resolver"); break;
		case 'H': opt.hosts = optarg; break;
		case 'P': list_add(&opt.permits, optarg, "--permit-range"); break;
		case 'L': opt.lease_sock = optarg; break;
		case 'q': opt.quiet = true; break;
		default: usage(NULL);
		}
	}
	if (optind >= argc)
		usage("no command");
	opt.cmd = argv + optind;
	if (opt.policy == NULL && opt.allow.n == 0)
		usage("give --allow HOST:PORT or --policy FILE|NAME");
	if (opt.receipts != NULL && opt.receipts[0] != '/') {
		static char abs[PATH_MAX];
		char cwd[PATH_MAX];

		if (getcwd(cwd, sizeof(cwd)) == NULL)
			usage("getcwd failed");
		if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, opt.receipts) >= sizeof(abs))
			usage("--receipts: path too long");
		opt.receipts = abs;
	}
	signal(SIGPIPE, SIG_IGN);
	find_bindir();
	/* SPEC: a NAME has no slash (a file in the current directory is ./FILE). */
	lease = opt.policy != NULL && strchr(opt.policy, '/') == NULL && opt.allow.n == 0;
	{
		/* Everything the run needs is checked before anything starts. */
		char path[PATH_MAX + 16];

		if (!lease)
			need_program("egressd", path, sizeof(path));
		need_program("egress-launch", path, sizeof(path));
		need_program("egress-relay", path, sizeof(path));
		if (!opt.no_fd4)
			need_program("egress-broker", path, sizeof(path));
	}
	if (lease) {
		/* A name: a lease from the system egressd, never a silent fallback. */
		if (opt.resolvers.n || opt.hosts || opt.permits.n)
			usage("--resolver, --hosts and --permit-range configure only a private "
			    "egressd (--allow or --policy FILE)");
		take_lease();
	} else
		start_private();
	if (!opt.no_fd4)
		start_broker();
	rc = run_sandbox();
	/* The tunnels' close receipts are written once egressd sees them end: stop it (or end
	 * the lease) first, then read. */
	stop_egress();
	if (!opt.quiet)
		summary();
	cleanup();
	return rc;
}
