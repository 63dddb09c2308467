/*
 * egress-run: the one-command front door. It runs CMD in a bubblewrap sandbox whose only
 * way out is a principal of egressd: a private egressd for this run (--allow, --policy
 * FILE), or a lease from the system egressd (--policy NAME). At the end it prints what
 * the run reached and what it was refused, as egressd added it up for the run's principal
 * (the summary verb on the connection that holds it), never from a file the run could
 * have touched.
 *
 * Trusted host code. It trusts its caller's options only once they are parsed (each value
 * written into a policy or a configuration is checked byte by byte first), the workload
 * not at all: nothing of egress-run's own state (the runtime folder with the private
 * egressd's key and sockets, the receipts) lies under a path bound into the sandbox, which
 * is checked by device and inode. It never runs the workload without the sandbox: a
 * missing bwrap, a missing egressd, any set-up failure is exit 125 with a message.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <grp.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "common.h"
#include "control.h"
#include "ctlclient.h"
#include "sock.h"
#include "policy.h"
#include "sandbox.h"
#include "userns.h"
#include "dnsstub.h"
#include "netcfg.h"

#define RUN_EXIT_SETUP 125
#define RUN_MAX_LIST 4096            /* each of --allow, --rw, --ro, --resolver, --permit-range */
#define RUN_READY_MS 10000           /* the private egressd must be serving within this */
#define RUN_SANDBOX_SOCK "/run/egress.sock"
#define RUN_SANDBOX_BIN "/run/egress-bin"
#define RUN_SANDBOX_HOME "/run/egress-home"  /* HOME inside: a fresh tmpfs, or --home DIR */
#define RUN_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define RUN_LISTEN "127.0.0.1:3128"
#define RUN_LEASE_SOCK "/run/egress/lease.sock"
#define RUN_SUMMARY_MAX 256          /* destinations listed in the summary */

struct list {
	const char **v;              /* grown as options come, at most RUN_MAX_LIST */
	size_t n, cap;
};

static struct {
	const char *policy;
	struct list allow, rw, ro, resolvers, permits;
	struct list setenvs, envs;   /* --setenv NAME=VALUE, --env NAME */
	struct list vars;            /* both in their order: NAME=VALUE, or NAME for --env */
	const char *home;            /* --home DIR */
	const char *receipts;
	const char *hosts;
	const char *lease_sock;
	const char *user;            /* --user: a root run's workload uid */
	bool no_fd4;
	bool no_dns;                 /* no stub resolver, no generated /etc/resolv.conf */
	bool quiet;
	char **cmd;
} opt;

static char bindir[PATH_MAX];
static char rtdir[PATH_MAX];          /* the private runtime folder, 0700 */
static char principal[80];
static char sock[PATH_MAX];
static char devino[64];
static char receipts[PATH_MAX];
static pid_t egressd_pid = -1, bwrap_pid = -1, broker_pid = -1;
static pid_t egressd_child = -1;      /* egressd itself, under egressd_pid (its bwrap) */
static int fd4_chan = -1;             /* the sandbox's end of the broker's channel */
/*
 * The connection to egressd that holds the run's principal: the lease connection to the
 * system egressd, or the private egressd's control socket (the principal is added as a
 * lease of it). The summary is asked for on it.
 */
static int egress_conn = -1;
static bool run_lease;                /* the principal is a lease of the system egressd */
static volatile sig_atomic_t pending_signal;

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "egress-run: %s\n", msg);
	fprintf(stderr,
	    "usage: egress-run [--policy FILE|NAME | --allow HOST:PORT ...] [--rw PATH ...]\n"
	    "                  [--ro PATH ...] [--receipts FILE] [--no-fd4] [--resolver IP:PORT ...]\n"
	    "                  [--hosts FILE] [--permit-range CIDR ...] [--user USER] [--quiet]\n"
	    "                  [--setenv NAME=VALUE ...] [--env NAME ...] [--home DIR] [--no-dns]\n"
	    "                  -- CMD [ARG ...]\n");
	exit(RUN_EXIT_SETUP);
}

static void
list_add(struct list *l, const char *v, const char *what)
{
	if (l->n == RUN_MAX_LIST) {
		fprintf(stderr, "egress-run: more than %d %s\n", RUN_MAX_LIST, what);
		exit(RUN_EXIT_SETUP);
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
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
static json_t *request_summary(void);
static bool signal_children(pid_t init_pid, int sig);
static json_t *run_summary;           /* egressd's summary of the run's principal */

static void
stop_egress(void)
{
	if (egress_conn != -1) {
		/*
		 * The sandbox is gone, so egressd is about to see its tunnels end: give it a
		 * moment to write their closes (and count them) before the summary is taken
		 * and the principal ends (which would close what is left as shutdown).
		 */
		for (int tries = 0; tries < 40; tries++) {
			json_decref(run_summary);
			if ((run_summary = request_summary()) == NULL ||
			    json_integer_value(json_object_get(run_summary, "open")) == 0)
				break;
			usleep(50000);
		}
	}
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
	if (egress_conn != -1) {
		close(egress_conn);
		egress_conn = -1;
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

static void __attribute__((noreturn, format(printf, 1, 2)))
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

/*
 * --- option values ------------------------------------------------------------------
 * Every value egress-run writes into the run's policy or egressd's configuration is
 * parsed first by the parser egressd itself uses (host_parse, cidr_parse,
 * addr_port_parse, policy_load) and written back in its canonical form, so that no byte
 * of an option reaches a file unchecked: a newline in a value would otherwise add a line
 * of its own (another allow, another directive).
 */

/* A value as a message may show it: printable ASCII kept, any other byte as \xHH. */
static const char *
shown(const char *v)
{
	static char buf[2][512];
	static int which;
	char *out = buf[which ^= 1];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)v; *p && o + 5 < sizeof(buf[0]);
	    p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			out[o++] = (char)*p;
		else
			o += (size_t)snprintf(out + o, sizeof(buf[0]) - o, "\\x%02x", *p);
	}
	out[o] = '\0';
	return out;
}

/* A usage error in one option's value: exit 125 before anything started. */
static void __attribute__((noreturn))
bad_value(const char *option, const char *value, const char *why)
{
	fprintf(stderr, "egress-run: %s %s: %s\n", option, shown(value), why);
	exit(RUN_EXIT_SETUP);
}

/*
 * A path egressd's configuration can carry as one field: absolute, printable ASCII
 * without blanks or '#' (egressd.conf(5) splits fields at blanks, ends a line at '#' and
 * refuses control bytes).
 */
static bool
conf_safe_path(const char *s)
{
	if (s[0] != '/')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '#')
			return false;
	return true;
}

/*
 * --allow HOST:PORTS ("[ADDR]:PORTS" for IPv6; PORTS as in a policy: 443, 80,443,
 * 8000-8100) as one policy line, or NULL with *why. The host must be canonical enough for
 * host_parse, the ports only digits, ',' and '-' and then whatever policy_load accepts.
 */
static char *
allow_line(const char *spec, const char **why)
{
	static char err[512];
	struct egress_hostport hp;
	struct policy_diag d;
	struct policy *p;
	struct host h;
	char *line;

	if (egress_hostport_split(spec, strlen(spec), &hp) == -1) {
		*why = "expected HOST:PORT";
		return NULL;
	}
	if (hp.portlen == 0 || strspn(hp.port, "0123456789,-") != hp.portlen) {
		*why = "the port must be 1-65535 (or a list 80,443, or a range LO-HI)";
		return NULL;
	}
	/* host_parse takes "[V6]" with its brackets. */
	if (host_parse(spec, (size_t)(hp.port - 1 - spec), &h, why) == -1)
		return NULL;
	xasprintf(&line, "allow %s %s\n", h.name, hp.port);
	p = policy_load("--allow", (const uint8_t *)line, strlen(line), NULL, &d);
	if (p == NULL) {
		snprintf(err, sizeof(err), "%s", d.nerrors ? d.errors[0] : "invalid");
		policy_diag_free(&d);
		free(line);
		*why = err;
		return NULL;
	}
	policy_diag_free(&d);
	policy_free(p);
	return line;
}

/* --permit-range CIDR in canonical form, or -1 with *why. */
static int
permit_text(const char *v, char out[EGRESS_ADDRSTRLEN + 4], const char **why)
{
	struct cidr c;

	if (cidr_parse(v, strlen(v), &c, why) == -1)
		return -1;
	cidr_format(&c, out);
	return 0;
}

/* --resolver IP[:PORT] ("[IPv6]:PORT") as egressd.conf(5) takes it, or -1 with *why. */
static int
resolver_text(const char *v, char out[EGRESS_ADDRSTRLEN + 8], const char **why)
{
	char text[EGRESS_ADDRSTRLEN];
	struct addr a;
	unsigned port;

	if (addr_port_parse(v, strlen(v), &a, &port, why) == -1)
		return -1;
	addr_format(&a, text);
	snprintf(out, EGRESS_ADDRSTRLEN + 8, a.family == AF_INET6 ? "[%s]:%u" : "%s:%u", text,
	    port ? port : 53);
	return 0;
}

/*
 * What egress-launch sets inside: a user's value of one of these is replaced (EGRESS_*
 * dropped), JAVA_TOOL_OPTIONS excepted, which is kept with the proxy properties appended.
 * GIT_SSH_COMMAND is egress-launch's only with --no-dns (its ProxyCommand); with
 * transparent connections plain ssh works and the user's value (a key, a known_hosts
 * file) is kept.
 */
static bool
env_launch_owns(const char *s, size_t n)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
	    "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "npm_config_proxy",
	    "npm_config_https_proxy", "NODE_USE_ENV_PROXY" };

	if (n >= 7 && strncmp(s, "EGRESS_", 7) == 0)
		return true;
	if (opt.no_dns && n == 15 && memcmp(s, "GIT_SSH_COMMAND", 15) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
			return true;
	return false;
}

/* --setenv NAME=VALUE and --env NAME: NAME a shell name, not HOME; a note for ours. */
static void
check_env_option(const char *option, const char *v, size_t n)
{
	if (!egress_env_name_ok(v, n))
		bad_value(option, v, option[2] == 's' ? "expected NAME=VALUE, NAME a shell "
		    "name (letters, digits and '_', not starting with a digit)" :
		    "expected NAME, a shell name (letters, digits and '_', not starting with a "
		    "digit)");
	if (n == 4 && memcmp(v, "HOME", 4) == 0)
		bad_value(option, v, "HOME inside is egress-run's own writable folder; use "
		    "--home DIR to keep one between runs");
	if (env_launch_owns(v, n) && !opt.quiet)
		fprintf(stderr, "egress-run: %s %.*s: egress-launch sets or removes it inside; "
		    "your value is not used\n", option, (int)n, v);
}

/* Every option value, checked before anything starts (a usage error is exit 125). */
static void
check_options(void)
{
	char buf[EGRESS_ADDRSTRLEN + 8];
	const char *why;

	for (size_t i = 0; i < opt.allow.n; i++) {
		char *line = allow_line(opt.allow.v[i], &why);

		if (line == NULL)
			bad_value("--allow", opt.allow.v[i], why);
		free(line);
	}
	for (size_t i = 0; i < opt.permits.n; i++)
		if (permit_text(opt.permits.v[i], buf, &why) == -1)
			bad_value("--permit-range", opt.permits.v[i], why);
	for (size_t i = 0; i < opt.resolvers.n; i++)
		if (resolver_text(opt.resolvers.v[i], buf, &why) == -1)
			bad_value("--resolver", opt.resolvers.v[i], why);
	/* Paths egressd's configuration names (once made absolute, and with symlinks
	 * resolved, they are checked again where they are written). */
	for (const char *q = opt.hosts; q != NULL && *q; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f || *q == '#')
			bad_value("--hosts", opt.hosts, "a path of printable ASCII without blanks "
			    "or '#' (egressd's configuration carries it)");
	if (opt.receipts != NULL && !conf_safe_path(opt.receipts))
		bad_value("--receipts", opt.receipts, "a path of printable ASCII without blanks "
		    "or '#' (egressd's configuration carries it)");
	for (size_t i = 0; i < opt.setenvs.n; i++) {
		const char *eq = strchr(opt.setenvs.v[i], '=');

		if (eq == NULL)
			bad_value("--setenv", opt.setenvs.v[i], "expected NAME=VALUE");
		check_env_option("--setenv", opt.setenvs.v[i], (size_t)(eq - opt.setenvs.v[i]));
	}
	for (size_t i = 0; i < opt.envs.n; i++)
		check_env_option("--env", opt.envs.v[i], strlen(opt.envs.v[i]));
	if (opt.home != NULL) {
		struct stat st;

		if (stat(opt.home, &st) == -1)
			bad_value("--home", opt.home, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			bad_value("--home", opt.home, "not a directory");
	}
}

/* The run's policy, sealed into the runtime folder (later edits of FILE do not matter). */
static void
make_policy(const char *out)
{
	struct policy_diag d;
	struct policy *p;
	char *text = xstrdup(""), *sealed, *t, *line;
	char cidr[EGRESS_ADDRSTRLEN + 4];
	const char *why;
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
	for (size_t i = 0; i < opt.allow.n; i++) {
		if ((line = allow_line(opt.allow.v[i], &why)) == NULL)
			setup_failed("--allow %s: %s", shown(opt.allow.v[i]), why);
		xasprintf(&t, "%s%s", text, line);
		free(line);
		free(text);
		text = t;
	}
	for (size_t i = 0; i < opt.permits.n; i++) {
		if (permit_text(opt.permits.v[i], cidr, &why) == -1)
			setup_failed("--permit-range %s: %s", shown(opt.permits.v[i]), why);
		xasprintf(&t, "%spermit-range %s\n", text, cidr);
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

/*
 * --- egress-run's own state, out of the sandbox's reach ------------------------------
 * The sandbox sees the host's files only through the paths it binds: the current
 * directory (unless it is /), each --rw and --ro, egress-run's own folder, /usr, /etc and
 * the /bin, /lib... folders. A state path (the runtime folder with the private egressd's
 * key and sockets, the receipts file) would be reachable when it or one of its ancestors
 * is one of them. They are compared by device and inode after symlinks are resolved, so
 * that neither a symlink, a relative path, another spelling nor a bind mount of the same
 * folder hides an overlap, and every mount below a bound path counts as bound too
 * (bind_submounts). A path the sandbox binds must be added in run_binds().
 */
struct run_bind {
	const char *what;            /* for the message: "the current directory", "--rw" */
	char *path;                  /* resolved */
	dev_t dev;
	ino_t ino;
};
static struct run_bind *binds;  /* at most 2 * RUN_MAX_LIST + 10 */
static size_t nbinds;

static void
bind_add(const char *what, const char *path)
{
	char *real = realpath(path, NULL);
	struct stat st;

	/* A path that is not there binds nothing: run_sandbox refuses it. */
	if (real == NULL || stat(real, &st) == -1) {
		free(real);
		return;
	}
	binds = xreallocarray(binds, nbinds + 1, sizeof(*binds));
	binds[nbinds].what = what;
	binds[nbinds].path = real;
	binds[nbinds].dev = st.st_dev;
	binds[nbinds].ino = st.st_ino;
	nbinds++;
}

/* Undoes mountinfo's octal escapes (\040 for a space...) in place. */
static void
mountinfo_unescape(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 3;
		} else
			*o = *s;
	}
	*o = '\0';
}

/*
 * bwrap binds recursively, so a mount below a bound path is seen too: a bind mount of
 * /run/user/UID at ~/proj/mnt shows the runtime folder under the current directory
 * although none of its ancestors is ~/proj. Every mount point below a bound path joins
 * the list; its device and inode are those of the mounted root, so the ancestor walk of
 * bind_covering() finds the state below it. Only the binds made so far are looked under.
 */
static void
bind_submounts(void)
{
	size_t nexplicit = nbinds;
	char *line = NULL;
	size_t cap = 0;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (fp == NULL)
		setup_failed("/proc/self/mountinfo: %s (the state overlap check needs it)",
		    strerror(errno));
	while (getline(&line, &cap, fp) != -1) {
		char *save = NULL, *mp = NULL, *tok = strtok_r(line, " ", &save);

		/* mount id, parent id, major:minor, root, mount point */
		for (int f = 1; tok != NULL && f < 5; f++)
			tok = strtok_r(NULL, " ", &save);
		if ((mp = tok) == NULL)
			continue;
		mountinfo_unescape(mp);
		for (size_t i = 0; i < nexplicit; i++) {
			size_t n = strlen(binds[i].path);

			if (strcmp(binds[i].path, "/") != 0 && strncmp(mp, binds[i].path, n) == 0 &&
			    mp[n] == '/') {
				bind_add(binds[i].what, mp);
				break;
			}
		}
	}
	free(line);
	fclose(fp);
}

/* Every host path the workload's sandbox will bind (run_sandbox, add_usr_links). */
static void
run_binds(void)
{
	static const char *const sys[] = { "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64",
	    "/lib32", "/libx32" };
	char cwd[PATH_MAX];

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		setup_failed("getcwd: %s", strerror(errno));
	if (strcmp(cwd, "/") != 0)
		bind_add("the current directory", cwd);
	for (size_t i = 0; i < opt.rw.n; i++)
		bind_add("--rw", opt.rw.v[i]);
	for (size_t i = 0; i < opt.ro.n; i++)
		if (strcmp(opt.ro.v[i], ".") != 0)
			bind_add("--ro", opt.ro.v[i]);
	if (opt.home != NULL)
		bind_add("--home", opt.home);
	bind_add("egress-run's own folder", bindir);
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		bind_add("the system folder", sys[i]);
	bind_submounts();
}

/*
 * The bound path that contains path (path itself or one of its ancestors is it, by
 * device and inode), NULL when none does. path must exist.
 */
static const struct run_bind *
bind_covering(const char *path)
{
	char *p = realpath(path, NULL);
	const struct run_bind *hit = NULL;

	if (p == NULL)
		setup_failed("%s: %s", path, strerror(errno));
	for (;;) {
		struct stat st;
		char *slash;

		if (stat(p, &st) == 0)
			for (size_t i = 0; i < nbinds && hit == NULL; i++)
				if (binds[i].dev == st.st_dev && binds[i].ino == st.st_ino)
					hit = &binds[i];
		if (hit != NULL || strcmp(p, "/") == 0)
			break;
		slash = strrchr(p, '/');
		slash[slash == p ? 1 : 0] = '\0';
	}
	free(p);
	return hit;
}

/*
 * Refuses (125) when the sandbox would see the state named by what at path, judged by
 * where (path itself, or the folder that will hold it).
 */
static void
state_refuse_bound(const char *what, const char *path, const char *where, const char *hint)
{
	const struct run_bind *b = bind_covering(where);

	if (b != NULL)
		setup_failed("the %s %s lies inside %s %s, which the sandbox binds: the "
		    "workload could read, change or delete it; %s", what, path, b->what, b->path,
		    hint);
}

/*
 * The runtime folder: in the first of $XDG_RUNTIME_DIR, /run/user/UID, /run (root
 * only), $TMPDIR, /tmp, /var/tmp and /dev/shm that is a writable folder egressd's
 * configuration can name, short enough for the sockets in it, and outside every bound
 * path. The sandbox has its own /tmp, /run and /dev, so /tmp is skipped only when the
 * current directory or a --rw/--ro is /tmp or above it.
 */
static void
make_rtdir(void)
{
	const char *cand[7];
	char user_run[64];
	size_t n = 0;

	snprintf(user_run, sizeof(user_run), "/run/user/%u", (unsigned)getuid());
	cand[n++] = getenv("XDG_RUNTIME_DIR");
	cand[n++] = user_run;
	cand[n++] = getuid() == 0 ? "/run" : NULL;
	cand[n++] = getenv("TMPDIR");
	cand[n++] = "/tmp";
	cand[n++] = "/var/tmp";
	cand[n++] = "/dev/shm";
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		/* rtdir/egress-run.XXXXXX/run/run-PID-XXXXXXXX.sock within sun_path (108) */
		if (cand[i] == NULL || !conf_safe_path(cand[i]) || strlen(cand[i]) > 56 ||
		    stat(cand[i], &st) == -1 || !S_ISDIR(st.st_mode) ||
		    access(cand[i], W_OK | X_OK) != 0 || bind_covering(cand[i]) != NULL)
			continue;
		snprintf(rtdir, sizeof(rtdir), "%s/egress-run.XXXXXX", cand[i]);
		if (mkdtemp(rtdir) != NULL) {
			chmod(rtdir, 0700);
			return;
		}
	}
	rtdir[0] = '\0';
	setup_failed("no folder for the private egressd's runtime folder outside what the "
	    "sandbox binds ($XDG_RUNTIME_DIR, /run/user/%u, /tmp, /var/tmp, /dev/shm): set "
	    "XDG_RUNTIME_DIR to a folder outside the current directory and every --rw/--ro",
	    (unsigned)getuid());
}

static const char receipts_hint[] = "pass --receipts FILE outside it (or run from a "
    "folder that does not contain it)";

/*
 * --receipts, else $XDG_STATE_HOME/egress/receipts.jsonl, else
 * ~/.local/state/egress/receipts.jsonl. Its folder is checked against the bound paths
 * before the file is created, so that a refusal leaves nothing behind.
 */
static void
default_receipts(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX], *slash;

	if (opt.receipts != NULL) {
		snprintf(receipts, sizeof(receipts), "%s", opt.receipts);
		snprintf(dir, sizeof(dir), "%s", opt.receipts);
		if ((slash = strrchr(dir, '/')) != NULL)
			slash[slash == dir ? 1 : 0] = '\0';
		state_refuse_bound("receipts file", receipts, dir, receipts_hint);
		return;
	}
	if (state != NULL && state[0] == '/')
		snprintf(dir, sizeof(dir), "%s/egress", state);
	else if (home != NULL && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/egress", home);
	else
		setup_failed("no XDG_STATE_HOME or HOME for the receipts: use --receipts FILE");
	if ((size_t)snprintf(receipts, sizeof(receipts), "%s/receipts.jsonl", dir) >=
	    sizeof(receipts))
		setup_failed("receipts path too long");
	if (!conf_safe_path(receipts))
		setup_failed("the default receipts file %s is not a path egressd's configuration "
		    "can carry (printable ASCII without blanks or '#'): use --receipts FILE",
		    shown(receipts));
	/* Before mkdir: the first existing ancestor tells whether the sandbox sees it. */
	{
		char anc[PATH_MAX];
		struct stat st;

		snprintf(anc, sizeof(anc), "%s", dir);
		while (stat(anc, &st) == -1 && (slash = strrchr(anc, '/')) != NULL)
			slash[slash == anc ? 1 : 0] = '\0';
		state_refuse_bound("default receipts file", receipts, anc, receipts_hint);
	}
	mkdir_p(dir, 0700);
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
 */
static void
bwrap_base(struct arglist *a, bool unshare_net)
{
	static char bwrap[PATH_MAX];

	if (bwrap[0] == '\0' && !find_in_path("bwrap", bwrap, sizeof(bwrap)))
		setup_failed("bubblewrap (bwrap) not found: install the Debian package "
		    "bubblewrap; egress-run never runs a command without the sandbox");
	arglist_add(a, bwrap);
	arglist_add(a, "--unshare-user");
	arglist_add(a, "--unshare-pid");
	arglist_add(a, "--unshare-ipc");
	arglist_add(a, "--unshare-uts");
	if (unshare_net)
		arglist_add(a, "--unshare-net");
	arglist_add(a, "--unshare-cgroup-try");
	arglist_add(a, "--disable-userns");
	arglist_add(a, "--die-with-parent");
	arglist_add(a, "--new-session");
	arglist_add(a, "--cap-drop");
	arglist_add(a, "ALL");
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
egressd_argv(struct arglist *a, const char *egressd, const char *conf, const char *rfile,
    int *filter_fd, int info[2])
{
	static char bin[PATH_MAX], hosts[PATH_MAX], fdarg[16], infoarg[16];
	struct stat st;

	bwrap_base(a, false);    /* the host's network: reaching it is egressd's job */
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
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/");
	arglist_add(a, "/");
	arglist_add(a, "--dev");
	arglist_add(a, "/dev");
	/* ProtectHome: homes are empty (what egressd needs from one is bound below). */
	if (stat("/home", &st) == 0 && S_ISDIR(st.st_mode)) {
		arglist_add(a, "--tmpfs");
		arglist_add(a, "/home");
	}
	if (stat("/root", &st) == 0 && S_ISDIR(st.st_mode)) {
		arglist_add(a, "--tmpfs");
		arglist_add(a, "/root");
	}
	/*
	 * No tmpfs on /tmp: egressd, its hosts file, a build tree may live there; /tmp is
	 * read-only like the rest. After the homes, since any of these may be in one.
	 */
	arglist_add(a, "--ro-bind");
	arglist_add(a, bin);
	arglist_add(a, bin);
	if (opt.hosts != NULL) {
		if (realpath(opt.hosts, hosts) == NULL)
			setup_failed("--hosts %s: %s", opt.hosts, strerror(errno));
		arglist_add(a, "--ro-bind");
		arglist_add(a, hosts);
		arglist_add(a, hosts);
	}
	arglist_add(a, "--bind");
	arglist_add(a, rtdir);
	arglist_add(a, rtdir);
	arglist_add(a, "--bind");          /* the receipt file alone, not its folder */
	arglist_add(a, rfile);
	arglist_add(a, rfile);
	arglist_add(a, "--seccomp");
	arglist_add(a, fdarg);
	arglist_add(a, "--info-fd");
	arglist_add(a, infoarg);
	arglist_add(a, "--");
	arglist_add(a, bin);
	arglist_add(a, "-c");
	arglist_add(a, conf);
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

/*
 * One request on egress_conn and its one-line reply (egressd's control protocol,
 * proto/control.h), or NULL when egressd does not answer within wait_ms of silence.
 * Replies are bounded (a summary is at most ~90 KB; CTLPROTO_REPLY_MAX is refused).
 */
static json_t *
conn_request(json_t *req, int wait_ms)
{
	size_t len;
	char *line = ctlproto_encode(req, &len), *reply = NULL, err[160];
	ssize_t n;
	json_t *o = NULL;

	if (line != NULL && ctlclient_send(egress_conn, line, len) == 0 &&
	    (n = ctlclient_recv(egress_conn, &reply, CTLPROTO_REPLY_MAX, wait_ms)) != -1)
		o = ctlproto_decode_reply(reply, (size_t)n, err, sizeof(err));
	free(line);
	free(reply);
	return o;
}

/* The private egressd ended before it served: its log, then 125. */
static void __attribute__((noreturn))
private_died(void)
{
	char logpath[PATH_MAX + 16], line[512];
	FILE *fp;

	egressd_pid = -1;
	snprintf(logpath, sizeof(logpath), "%s/egressd.log", rtdir);
	if ((fp = fopen(logpath, "re")) != NULL) {
		while (fgets(line, sizeof(line), fp))
			fprintf(stderr, "egressd: %s", shown(line));
		fclose(fp);
	}
	setup_failed("the private egressd did not start");
}

/*
 * A private egressd for this run, in a 0700 runtime folder, stopped at the end. Its
 * principal is added over its control socket as a lease of that connection, so that
 * egressd keeps this run's summary (control.c: summary) and the principal ends with
 * egress-run.
 */
static void
start_private(void)
{
	char egressd[PATH_MAX + 16], conf[PATH_MAX + 16], pol[PATH_MAX + 16];
	char key[PATH_MAX + 16], ctl[PATH_MAX + 32], err[512], res[EGRESS_ADDRSTRLEN + 8];
	char hosts_abs[PATH_MAX], *text, *t;
	const char *why;
	struct arglist bwrap_argv = { 0 };
	uint8_t r[4];
	struct stat st;
	int status, filter_fd, info[2];
	pid_t parent;
	const char *refusal;
	json_t *o, *req;

	need_program("egressd", egressd, sizeof(egressd));
	make_rtdir();
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
		/* Another name of the file may lie anywhere, a bound folder included. */
		if (rst.st_nlink > 1)
			setup_failed("the receipts file %s has %lu names (hard links), which "
			    "egress-run cannot check against the sandbox's paths: use another "
			    "--receipts FILE", receipts, (unsigned long)rst.st_nlink);
		if (realpath(receipts, real) == NULL)
			setup_failed("receipts %s: %s", receipts, strerror(errno));
		snprintf(receipts, sizeof(receipts), "%s", real);
	}
	/* Once both exist, each by itself (a --ro of the file alone, a symlinked folder). */
	state_refuse_bound("runtime folder", rtdir, rtdir, "set XDG_RUNTIME_DIR elsewhere");
	state_refuse_bound("receipts file", receipts, receipts, receipts_hint);
	if (!conf_safe_path(receipts))
		setup_failed("the receipts file %s is not a path egressd's configuration can carry "
		    "(printable ASCII without blanks or '#')", shown(receipts));
	if (RAND_bytes(r, sizeof(r)) != 1)
		setup_failed("no random bytes");
	snprintf(principal, sizeof(principal), "run-%d-", (int)getpid());
	egress_hex(r, sizeof(r), principal + strlen(principal));
	snprintf(pol, sizeof(pol), "%s/policy.sealed", rtdir);
	make_policy(pol);
	snprintf(key, sizeof(key), "%s/receipt.key", rtdir);
	if (egress_key_generate(key, err, sizeof(err)) == -1)
		setup_failed("%s", err);
	if ((size_t)snprintf(sock, sizeof(sock), "%s/run/%s.sock", rtdir, principal) >=
	    sizeof(sock))
		setup_failed("runtime folder path too long");
	snprintf(ctl, sizeof(ctl), "%s/run/control.sock", rtdir);
	/*
	 * Every value below is a checked path (make_rtdir, default_receipts, the realpath
	 * of --hosts) or a value written back from its parse: one line each.
	 */
	xasprintf(&text, "runtime-dir %s/run\ncontrol %s\nreceipts %s\nreceipt-key %s\n"
	    "shutdown-grace 1\n", rtdir, ctl, receipts, key);
	for (size_t i = 0; i < opt.resolvers.n; i++) {
		if (resolver_text(opt.resolvers.v[i], res, &why) == -1)
			setup_failed("--resolver %s: %s", shown(opt.resolvers.v[i]), why);
		xasprintf(&t, "%sresolver %s\n", text, res);
		free(text);
		text = t;
	}
	if (opt.hosts != NULL) {
		if (realpath(opt.hosts, hosts_abs) == NULL)
			setup_failed("--hosts %s: %s", shown(opt.hosts), strerror(errno));
		if (!conf_safe_path(hosts_abs))
			setup_failed("--hosts %s: its real path %s is not one egressd's "
			    "configuration can carry (printable ASCII without blanks or '#')",
			    shown(opt.hosts), shown(hosts_abs));
		xasprintf(&t, "%shosts %s\n", text, hosts_abs);
		free(text);
		text = t;
	}
	snprintf(conf, sizeof(conf), "%s/egressd.conf", rtdir);
	write_file(conf, text, strlen(text), 0600);
	free(text);

	egressd_argv(&bwrap_argv, egressd, conf, receipts, &filter_fd, info);
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
		execv(bwrap_argv.list[0], bwrap_argv.list);
		fprintf(stderr, "egress-run: %s: %s\n", bwrap_argv.list[0], strerror(errno));
		_exit(RUN_EXIT_SETUP);
	}
	arglist_free(&bwrap_argv);
	close(filter_fd);
	close(info[1]);
	egressd_child = info_child_pid(info[0]);
	close(info[0]);
	/* Serving once its control socket answers (egressd creates it after the receipts). */
	for (int waited = 0; egress_conn == -1; waited += 20) {
		if (waitpid(egressd_pid, &status, WNOHANG) == egressd_pid)
			private_died();
		if (waited >= RUN_READY_MS)
			setup_failed("the private egressd did not create its control socket in time");
		if (stat(ctl, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (egress_conn = ctlclient_connect(ctl)) != -1)
			break;
		usleep(20000);
	}
	req = ctlproto_request(CTLPROTO_PRINCIPAL_ADD);
	json_object_set_new(req, "name", json_string(principal));
	json_object_set_new(req, "policy", json_string(pol));
	json_object_set_new(req, "lease", json_true());
	o = conn_request(req, RUN_READY_MS);
	if (o == NULL) {
		if (waitpid(egressd_pid, &status, WNOHANG) == egressd_pid)
			private_died();
		setup_failed("the private egressd did not answer on its control socket");
	}
	if (!ctlproto_reply_ok(o, &refusal)) {
		snprintf(err, sizeof(err), "%s", refusal ?: "?");
		json_decref(o);
		setup_failed("the private egressd refused the run's principal: %s", shown(err));
	}
	json_decref(o);
	if (stat(sock, &st) == -1 || !S_ISSOCK(st.st_mode))
		setup_failed("the private egressd's principal socket %s: %s", sock,
		    strerror(errno));
	snprintf(devino, sizeof(devino), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
}

/* A lease from the system egressd: the principal lives as long as egress_conn. */
static void
take_lease(void)
{
	const char *path = opt.lease_sock ? opt.lease_sock : RUN_LEASE_SOCK;
	const char *e;
	json_t *o, *req;

	if ((egress_conn = ctlclient_connect(path)) == -1)
		setup_failed("the system egressd does not answer on %s (%s): a named policy "
		    "needs it", path, strerror(errno));
	req = ctlproto_request(CTLPROTO_LEASE);
	json_object_set_new(req, "policy", json_string(opt.policy));
	if ((o = conn_request(req, RUN_READY_MS)) == NULL)
		setup_failed("no (readable) lease reply from the system egressd");
	if (!ctlproto_reply_ok(o, &e)) {
		char why[512];

		snprintf(why, sizeof(why), "%s", e ? e : "?");
		json_decref(o);
		setup_failed("lease refused: %s", shown(why));
	}
	snprintf(principal, sizeof(principal), "%s",
	    json_string_value(json_object_get(o, "name")) ?: "");
	snprintf(sock, sizeof(sock), "%s",
	    json_string_value(json_object_get(o, "socket")) ?: "");
	snprintf(devino, sizeof(devino), "%s",
	    json_string_value(json_object_get(o, "dev_ino")) ?: "");
	json_decref(o);
	if (opt.receipts != NULL)
		snprintf(receipts, sizeof(receipts), "%s", opt.receipts);
}

/*
 * The principal's summary from egressd ({"verb":"summary"} on egress_conn): its
 * destinations added up and the connections still open, as egressd counted them for
 * this run. NULL on failure.
 */
static json_t *
request_summary(void)
{
	json_t *o = conn_request(ctlproto_request(CTLPROTO_SUMMARY), 2000);
	const char *e;

	if (o != NULL && !ctlproto_reply_ok(o, &e)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* Mirrors /bin, /lib, … as the host has them: symlinks stay symlinks. */
static void
add_usr_links(struct arglist *a)
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
			arglist_add(a, "--symlink");
			arglist_add(a, targets[i]);
			arglist_add(a, dirs[i]);
		} else if (S_ISDIR(st.st_mode)) {
			arglist_add(a, "--ro-bind");
			arglist_add(a, dirs[i]);
			arglist_add(a, dirs[i]);
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

/*
 * A root run (docs/sandbox.md, "Root runs"): the workload's bind sources are staged by
 * userns_exec() and bwrap binds them from there; src is returned unchanged otherwise.
 */
static struct userns_stage stages[USERNS_STAGE_MAX];
static size_t nstages;
static bool root_run;
static int userns_fd = -1;            /* a root run's workload namespace (userns.c) */

static const char *
bind_src(const char *src, bool idmap)
{
	struct userns_stage *st;

	if (!root_run)
		return src;
	if (nstages == USERNS_STAGE_MAX)
		setup_failed("too many paths to bind");
	st = &stages[nstages];
	st->src = xstrdup(src);
	st->idmap = idmap;
	snprintf(st->dst, sizeof(st->dst), "%s/egress-run.%zu", USERNS_STAGE_DIR, nstages);
	nstages++;
	return st->dst;
}

/*
 * --- can bubblewrap make its namespaces here? ------------------------------------------
 * Unprivileged user namespaces may be off (Debian's kernel.unprivileged_userns_clone=0),
 * limited to none (user.max_user_namespaces=0, per user namespace) or confined by AppArmor
 * (Ubuntu 24.04: kernel.apparmor_restrict_unprivileged_userns=1). bwrap's own message
 * does not name the setting: a trivial bwrap with the same namespaces is run first, as the
 * workload's bwrap will run (in a root run: inside its user namespace), and a failure is
 * said in one line naming the setting, exit 125, before anything started.
 */

/* The first of the settings that is set to refuse, as "name is value", or NULL. */
static const char *
userns_setting(void)
{
	static const struct {
		const char *file, *name, *refuses, *fix;
	} knobs[] = {
		{ "/proc/sys/user/max_user_namespaces", "user.max_user_namespaces", "0",
		    "raise it (sysctl -w user.max_user_namespaces=15000)" },
		{ "/proc/sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone",
		    "0", "set it to 1 (sysctl -w kernel.unprivileged_userns_clone=1)" },
		{ "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		    "kernel.apparmor_restrict_unprivileged_userns", "1",
		    "set it to 0, or give bwrap an AppArmor profile that allows userns" },
	};
	static char msg[256];

	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		char buf[32] = "";
		FILE *fp = fopen(knobs[i].file, "re");

		if (fp == NULL)
			continue;
		if (fgets(buf, sizeof(buf), fp) != NULL)
			buf[strcspn(buf, "\n")] = '\0';
		fclose(fp);
		if (strcmp(buf, knobs[i].refuses) == 0) {
			snprintf(msg, sizeof(msg), "%s is %s: %s", knobs[i].name, buf, knobs[i].fix);
			return msg;
		}
	}
	return NULL;
}

static void __attribute__((noreturn))
userns_refused(const char *detail)
{
	const char *knob = userns_setting();

	if (knob != NULL)
		setup_failed("bubblewrap cannot create user namespaces here: %s", knob);
	setup_failed("bubblewrap cannot create its namespaces here (%s): check "
	    "user.max_user_namespaces, kernel.unprivileged_userns_clone and "
	    "kernel.apparmor_restrict_unprivileged_userns", detail);
}

/*
 * A root run's workload namespace (userns.c): root's workload runs as 65534 (or --user
 * USER); what it writes through the read-write binds lands as root's (idmapped).
 */
static void
workload_userns(void)
{
	char err[256];
	uid_t wuid;
	gid_t wgid;

	root_run = geteuid() == 0;
	if (opt.user != NULL && !root_run)
		setup_failed("--user needs egress-run to run as root");
	if (!root_run)
		return;
	if (userns_target(opt.user, &wuid, &wgid, err, sizeof(err)) == -1)
		setup_failed("%s", err);
	if ((userns_fd = userns_create(wuid, wgid, err, sizeof(err))) == -1) {
		if (userns_setting() != NULL)
			userns_refused(err);
		setup_failed("%s", err);
	}
	userns_fd = high_fd(userns_fd);
}

static void
probe_namespaces(void)
{
	struct arglist args = { 0 }, *a = &args;
	char truebin[PATH_MAX], msg[512];
	int ep[2], status;
	ssize_t n = 0, got;
	pid_t pid;

	if (!find_in_path("true", truebin, sizeof(truebin)))
		snprintf(truebin, sizeof(truebin), "/usr/bin/true");
	bwrap_base(a, true);
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/");
	arglist_add(a, "/");
	arglist_add(a, "--chdir");
	arglist_add(a, "/");
	arglist_add(a, "--");
	arglist_add(a, truebin);
	if (pipe2(ep, O_CLOEXEC) == -1)
		setup_failed("pipe: %s", strerror(errno));
	if ((pid = fork()) == -1)
		setup_failed("fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null == -1 || dup2(null, 0) == -1 || dup2(null, 1) == -1 ||
		    dup2(ep[1], 2) == -1)
			_exit(RUN_EXIT_SETUP);
		if (root_run && (setgroups(0, NULL) == -1 ||
		    setns(userns_fd, CLONE_NEWUSER) == -1 || setresgid(0, 0, 0) == -1 ||
		    setresuid(0, 0, 0) == -1)) {
			fprintf(stderr, "joining the workload's user namespace: %s\n",
			    strerror(errno));
			_exit(RUN_EXIT_SETUP);
		}
		execv(a->list[0], a->list);
		fprintf(stderr, "%s: %s\n", a->list[0], strerror(errno));
		_exit(RUN_EXIT_SETUP);
	}
	arglist_free(a);
	close(ep[1]);
	while (n < (ssize_t)sizeof(msg) - 1 &&
	    ((got = read(ep[0], msg + n, sizeof(msg) - 1 - (size_t)n)) > 0 ||
	    (got == -1 && errno == EINTR)))
		if (got > 0)
			n += got;
	close(ep[0]);
	msg[n] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			setup_failed("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		userns_refused(msg[0] != '\0' ? shown(msg) : "bwrap failed without a message");
}

/*
 * --- the workload's environment --------------------------------------------------------
 * Nothing of the caller's environment enters but TERM, LANG and what --env names. PATH is
 * the caller's (or the user's --setenv PATH) with every folder that does not exist inside
 * left out, HOME is RUN_SANDBOX_HOME. The user's variables travel to egress-launch on a
 * memfd (--env-fd), never in an argv: bwrap's command line is readable by every user of
 * the host, and a --env value is often a token.
 */

/* The host folders bound (or mirrored) at the same path inside, and where they lead. */
struct inside {
	char *path;                  /* as the sandbox names it */
	char *real;                  /* the host folder's real path */
};
static struct inside *insides;
static size_t ninsides;

static void
inside_add(const char *path)
{
	char *real = realpath(path, NULL);

	if (real == NULL)
		return;
	insides = xreallocarray(insides, ninsides + 1, sizeof(*insides));
	insides[ninsides].path = xstrdup(path);
	insides[ninsides].real = real;
	ninsides++;
}

/* path is prefix or lies below it (both absolute, without a trailing '/'). */
static bool
path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strcmp(prefix, "/") == 0)
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * One PATH entry, when it names a folder that exists inside: absolute, no "." or ".."
 * component, lexically below a bound path, a directory on the host whose real path is
 * below a bound folder too (a symlink that leads out of what is bound is left out).
 * Below RUN_SANDBOX_HOME it is looked up in --home DIR. Trailing slashes go.
 */
static bool
path_entry_inside(char *e, const char *home_real)
{
	size_t n = strlen(e);
	char host[PATH_MAX], *real;
	bool ok = false;

	if (e[0] != '/' || strstr(e, "/./") || strstr(e, "/../") || strstr(e, "//"))
		return false;
	while (n > 1 && e[n - 1] == '/')
		e[--n] = '\0';
	if ((n >= 2 && strcmp(e + n - 2, "/.") == 0) || (n >= 3 && strcmp(e + n - 3, "/..") == 0))
		return false;
	if (path_under(e, RUN_SANDBOX_HOME)) {
		if (home_real == NULL || (size_t)snprintf(host, sizeof(host), "%s%s", home_real,
		    e + strlen(RUN_SANDBOX_HOME)) >= sizeof(host) ||
		    (real = realpath(host, NULL)) == NULL)
			return false;
		ok = path_under(real, home_real);
	} else {
		size_t i;
		struct stat st;

		for (i = 0; i < ninsides && !path_under(e, insides[i].path); i++)
			;
		if (i == ninsides || stat(e, &st) == -1 || !S_ISDIR(st.st_mode) ||
		    (real = realpath(e, NULL)) == NULL)
			return false;
		for (i = 0; i < ninsides && !ok; i++)
			ok = path_under(real, insides[i].real);
	}
	if (ok) {
		struct stat st;

		ok = stat(real, &st) == 0 && S_ISDIR(st.st_mode);
	}
	free(real);
	return ok;
}

/* want (a PATH) with only the folders that exist inside, each once; NULL when none. */
static char *
path_filter(const char *want, const char *home_real)
{
	char *copy = xstrdup(want), *save = NULL, *out = NULL, *t;

	for (char *e = strtok_r(copy, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		bool dup = false;

		if (!path_entry_inside(e, home_real))
			continue;
		if (out != NULL) {
			char *o = xstrdup(out), *s2 = NULL;

			for (char *d = strtok_r(o, ":", &s2); d && !dup; d = strtok_r(NULL, ":", &s2))
				dup = strcmp(d, e) == 0;
			free(o);
		}
		if (dup)
			continue;
		xasprintf(&t, "%s%s%s", out ? out : "", out ? ":" : "", e);
		free(out);
		out = t;
	}
	free(copy);
	return out;
}

/*
 * PATH inside: the last --setenv PATH=... or --env PATH, else the caller's, filtered;
 * RUN_DEFAULT_PATH (filtered) when nothing is left; egress-run's own folder last.
 */
static char *
sandbox_path(const char *home_real)
{
	const char *want = getenv("PATH");
	char *kept, *path;

	for (size_t i = 0; i < opt.vars.n; i++) {
		const char *v = opt.vars.v[i];

		if (strncmp(v, "PATH=", 5) == 0)
			want = v + 5;
		else if (strcmp(v, "PATH") == 0)
			want = getenv("PATH");
	}
	if (want == NULL || (kept = path_filter(want, home_real)) == NULL)
		kept = path_filter(RUN_DEFAULT_PATH, home_real);
	xasprintf(&path, "%s%s%s", kept ? kept : "", kept ? ":" : "", RUN_SANDBOX_BIN);
	free(kept);
	return path;
}

/*
 * The sandbox's /etc/resolv.conf, for bwrap's --ro-bind-data (a memfd, no file on disk):
 * only the stub resolver egress-launch starts (dnsstub.h's address). No search list (a
 * short name would be asked as several names, each one a denial), no `options edns0
 * trust-ad` (the stub answers without EDNS and nothing inside validates).
 */
static int
resolv_memfd(void)
{
	static const char conf[] = "# egress-run: the stub resolver of egress-launch\n"
	    "nameserver " DNSSTUB_ADDR "\n";
	int fd = memfd_create("egress-run-resolv", MFD_CLOEXEC);

	if (fd == -1)
		setup_failed("memfd_create: %s", strerror(errno));
	if (write(fd, conf, sizeof(conf) - 1) != (ssize_t)sizeof(conf) - 1 ||
	    lseek(fd, 0, SEEK_SET) == -1)
		setup_failed("writing resolv.conf: %s", strerror(errno));
	return fd;
}

/*
 * bwrap creates the file it binds the data on through the path, and a symbolic
 * /etc/resolv.conf (systemd-resolved's, into /run) points into the sandbox's empty /run:
 * its folder is made there first, so the generated file lands where the link leads.
 */
static void
resolv_bind(struct arglist *a, int fd)
{
	char target[PATH_MAX], fdarg[16];
	ssize_t n = readlink("/etc/resolv.conf", target, sizeof(target) - 1);

	if (n > 0) {
		char *slash;

		target[n] = '\0';
		if (strncmp(target, "/run/", 5) == 0 && (slash = strrchr(target, '/')) != NULL &&
		    slash > target + 4) {
			*slash = '\0';
			arglist_add(a, "--dir");
			arglist_add(a, target);
		}
	}
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	arglist_add(a, "--ro-bind-data");
	arglist_add(a, fdarg);
	arglist_add(a, "/etc/resolv.conf");
}

/*
 * The user's variables for egress-launch's --env-fd: NAME=VALUE\0 each, in the order
 * given (--env NAME takes the caller's value, and nothing when the caller has none).
 * PATH is not among them (sandbox_path), HOME is refused before (check_env_option).
 * A descriptor, sealed against writes, read from its start.
 */
static int
env_memfd(void)
{
	int fd = memfd_create("egress-run-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t total = 0;

	if (fd == -1)
		setup_failed("memfd_create: %s", strerror(errno));
	for (size_t i = 0; i < opt.vars.n; i++) {
		const char *v = opt.vars.v[i], *val = NULL;
		char *rec;
		int len;

		if (strchr(v, '=') == NULL) {
			if ((val = getenv(v)) == NULL)
				continue;
			len = xasprintf(&rec, "%s=%s", v, val);
		} else
			len = xasprintf(&rec, "%s", v);
		if (strncmp(rec, "PATH=", 5) != 0) {
			total += (size_t)len + 1;
			if (total > 1024 * 1024)
				setup_failed("--setenv and --env: more than 1 MiB of variables");
			if (write(fd, rec, (size_t)len + 1) != (ssize_t)len + 1)
				setup_failed("writing the variables: %s", strerror(errno));
		}
		free(rec);
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) ==
	    -1 || lseek(fd, 0, SEEK_SET) == -1)
		setup_failed("sealing the variables: %s", strerror(errno));
	return fd;
}

/*
 * HOME inside (RUN_SANDBOX_HOME) comes after every path of the user's, so that none covers
 * it: refused when one of them is it, above it or below it (bwrap would create its mount
 * point in a host folder, or hide it).
 */
static void
home_clash(const char *what, const char *abs)
{
	if (path_under(RUN_SANDBOX_HOME, abs) || path_under(abs, RUN_SANDBOX_HOME))
		setup_failed("%s %s: HOME inside the sandbox is %s, which it would cover or "
		    "lie in; bind another path", what, abs, RUN_SANDBOX_HOME);
}

static int
run_sandbox(void)
{
	struct arglist args = { 0 }, *a = &args;
	char launch[PATH_MAX + 16], cwd[PATH_MAX], *path_env, *home_real = NULL;
	char launch_in[PATH_MAX], statusfd[16], envfd[16];
	const char *term = getenv("TERM"), *lang = getenv("LANG");
	int env_fd, resolv_fd = -1;
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
	{
		static const char *const sys[] = { "/usr", "/etc", "/bin", "/sbin", "/lib",
		    "/lib64", "/lib32", "/libx32" };

		for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
			inside_add(sys[i]);
	}

	/*
	 * With the stub resolver, the sandbox's network namespace is made by the child that
	 * becomes bwrap (userns_netns: port 53 bindable inside without a capability, which
	 * bwrap's own --unshare-net cannot give under --disable-userns); --no-dns keeps
	 * bwrap's.
	 */
	bwrap_base(a, opt.no_dns);
	arglist_add(a, "--clearenv");
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/usr");
	arglist_add(a, "/usr");
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/etc");
	arglist_add(a, "/etc");
	add_usr_links(a);
	arglist_add(a, "--proc");
	arglist_add(a, "/proc");
	arglist_add(a, "--dev");
	arglist_add(a, "/dev");
	arglist_add(a, "--tmpfs");
	arglist_add(a, "/tmp");
	arglist_add(a, "--tmpfs");
	arglist_add(a, "/run");
	if (!opt.no_dns) {
		/* After /etc and /run: the stub, not the host's resolver, answers inside. */
		resolv_fd = high_fd(resolv_memfd());
		resolv_bind(a, resolv_fd);
	}
	if (strcmp(cwd, "/") != 0) {
		home_clash("the current directory", cwd);
		arglist_add(a, ro_cwd ? "--ro-bind" : "--bind");
		arglist_add(a, bind_src(cwd, !ro_cwd && opt.user == NULL));
		arglist_add(a, cwd);
		inside_add(cwd);
	}
	/* Paths are bound where they are on the host: absolute, symlinks resolved. */
	for (size_t i = 0; i < opt.rw.n; i++) {
		char *abs = realpath(opt.rw.v[i], NULL);

		if (abs == NULL)
			setup_failed("--rw %s: %s", opt.rw.v[i], strerror(errno));
		home_clash("--rw", abs);
		arglist_add(a, "--bind");
		arglist_add(a, bind_src(abs, opt.user == NULL));
		arglist_add(a, abs);
		inside_add(abs);
		free(abs);
	}
	for (size_t i = 0; i < opt.ro.n; i++) {
		char *abs;

		if (strcmp(opt.ro.v[i], ".") == 0)
			continue;
		if ((abs = realpath(opt.ro.v[i], NULL)) == NULL)
			setup_failed("--ro %s: %s", opt.ro.v[i], strerror(errno));
		home_clash("--ro", abs);
		arglist_add(a, "--ro-bind");
		arglist_add(a, bind_src(abs, false));
		arglist_add(a, abs);
		inside_add(abs);
		free(abs);
	}
	/*
	 * HOME: --home DIR read-write (through the idmapped stage of a root run, like --rw),
	 * else a fresh tmpfs of the sandbox's own, mounted by bwrap as the workload's uid.
	 */
	if (opt.home != NULL) {
		if ((home_real = realpath(opt.home, NULL)) == NULL)
			setup_failed("--home %s: %s", opt.home, strerror(errno));
		arglist_add(a, "--bind");
		arglist_add(a, bind_src(home_real, opt.user == NULL));
		arglist_add(a, RUN_SANDBOX_HOME);
	} else {
		arglist_add(a, "--perms");
		arglist_add(a, "0700");
		arglist_add(a, "--tmpfs");
		arglist_add(a, RUN_SANDBOX_HOME);
	}
	path_env = sandbox_path(home_real);
	free(home_real);
	arglist_add(a, "--ro-bind");
	arglist_add(a, bind_src(bindir, false));
	arglist_add(a, RUN_SANDBOX_BIN);
	/* The principal socket last, so that no other mount can cover or replace it. */
	arglist_add(a, "--bind");
	arglist_add(a, bind_src(sock, true));      /* root's 0600 socket, the workload's */
	arglist_add(a, RUN_SANDBOX_SOCK);
	arglist_add(a, "--chdir");
	arglist_add(a, strcmp(cwd, "/") != 0 ? cwd : "/");
	arglist_add(a, "--setenv");
	arglist_add(a, "PATH");
	arglist_add(a, path_env);
	arglist_add(a, "--setenv");
	arglist_add(a, "HOME");
	arglist_add(a, RUN_SANDBOX_HOME);
	if (term) {
		arglist_add(a, "--setenv");
		arglist_add(a, "TERM");
		arglist_add(a, term);
	}
	if (lang) {
		arglist_add(a, "--setenv");
		arglist_add(a, "LANG");
		arglist_add(a, lang);
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
	arglist_add(a, "--json-status-fd");
	arglist_add(a, statusfd);
	arglist_add(a, "--");
	arglist_add(a, launch_in);
	arglist_add(a, "--egress");
	arglist_add(a, RUN_SANDBOX_SOCK);
	arglist_add(a, "--expect");
	arglist_add(a, devino);
	arglist_add(a, "--listen");
	arglist_add(a, RUN_LISTEN);
	arglist_add(a, "--status-fd");
	arglist_add(a, launchfd);
	env_fd = high_fd(env_memfd());
	snprintf(envfd, sizeof(envfd), "%d", env_fd);
	arglist_add(a, "--env-fd");
	arglist_add(a, envfd);
	if (opt.no_dns) {
		arglist_add(a, "--no-dns");
	} else {
		/* Where netcfg_transparent's rule sends every TCP connection outside lo. */
		arglist_add(a, "--transparent");
		arglist_add(a, NETCFG_LISTEN);
	}
	arglist_add(a, "--");
	arglist_addv(a, (const char *const *)opt.cmd);

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
		if (fcntl(sp[1], F_SETFD, 0) == -1 || fcntl(lp[1], F_SETFD, 0) == -1 ||
		    fcntl(env_fd, F_SETFD, 0) == -1 ||
		    (resolv_fd != -1 && fcntl(resolv_fd, F_SETFD, 0) == -1))
			_exit(RUN_EXIT_SETUP);
		/* The broker's channel becomes descriptor 4 (dup2 leaves it inherited). */
		if (fd4_chan != -1 && dup2(fd4_chan, 4) != 4)
			_exit(RUN_EXIT_SETUP);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (root_run)
			userns_exec(userns_fd, stages, nstages, opt.no_dns ? 0 : DNSSTUB_PORT,
			    opt.no_dns ? 0 : NETCFG_PORT, a->list);
		if (!opt.no_dns) {
			char nerr[256];

			if (userns_netns(true, DNSSTUB_PORT, NETCFG_PORT, nerr, sizeof(nerr)) == -1) {
				fprintf(stderr, "egress-run: %s\n", nerr);
				_exit(RUN_EXIT_SETUP);
			}
		}
		execv(a->list[0], a->list);
		fprintf(stderr, "egress-run: %s: %s\n", a->list[0], strerror(errno));
		_exit(RUN_EXIT_SETUP);
	}
	arglist_free(a);
	free(path_env);
	close(env_fd);
	if (resolv_fd != -1)
		close(resolv_fd);
	if (userns_fd != -1) {
		close(userns_fd);
		userns_fd = -1;
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

/*
 * A destination as the summary shows it. The host must be a canonical name or address
 * (host_parse gives it back unchanged); anything else is shown as "(raw)" and hex, so
 * that no byte from the network (an escape sequence, a newline) reaches the terminal.
 */
static void
summary_key(const char *host, json_t *port, char *out, size_t len)
{
	char p[16] = "";
	struct host h;
	const char *why;

	if (json_is_integer(port) && json_integer_value(port) >= 0 &&
	    json_integer_value(port) <= 65535)
		snprintf(p, sizeof(p), ":%d", (int)json_integer_value(port));
	if (host == NULL || host[0] == '\0')
		snprintf(out, len, "(no host)%s", p);
	else if (strlen(host) <= EGRESS_HOST_MAX &&
	    host_parse(host, strlen(host), &h, &why) == 0 && strcmp(h.name, host) == 0)
		snprintf(out, len, h.kind == HOST_IPV6 ? "[%s]%s" : "%s%s", host, p);
	else {
		char hex[2 * 32 + 1];
		size_t n = strlen(host) < 32 ? strlen(host) : 32;

		egress_hex((const uint8_t *)host, n, hex);
		snprintf(out, len, "(raw) %s%s%s", hex, n < strlen(host) ? "..." : "", p);
	}
}

/* A reason as egressd names them (lower case, digits, '-'), else "(unknown)". */
static const char *
summary_reason(const char *r)
{
	if (r == NULL || r[0] == '\0' || strlen(r) > 31 ||
	    strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(r))
		return "(unknown)";
	return r;
}

/*
 * What this run reached and was refused: egressd's own accounting of the run's principal
 * (request_summary, taken by stop_egress once its tunnels were closed), never a re-read
 * of the receipts file.
 */
static void
summary(void)
{
	struct dest *d;
	json_t *arr, *o;
	json_int_t dropped;
	size_t nd = 0, i;

	if (run_summary == NULL) {
		fprintf(stderr, "egress-run: egressd gave no summary of the run; egressctl "
		    "receipts --principal %s shows its receipts\n", shown(principal));
		return;
	}
	d = xcalloc(RUN_SUMMARY_MAX, sizeof(*d));
	arr = json_object_get(run_summary, "destinations");
	dropped = json_integer_value(json_object_get(run_summary, "dropped"));
	json_array_foreach(arr, i, o) {
		json_t *up = json_object_get(o, "bytes_up"), *down = json_object_get(o,
		    "bytes_down"), *count = json_object_get(o, "count");

		if (nd == RUN_SUMMARY_MAX) {
			dropped += json_integer_value(count);
			continue;
		}
		summary_key(json_string_value(json_object_get(o, "host")),
		    json_object_get(o, "port"), d[nd].key, sizeof(d[nd].key));
		d[nd].allowed = json_is_true(json_object_get(o, "allowed"));
		snprintf(d[nd].reason, sizeof(d[nd].reason), "%s",
		    summary_reason(json_string_value(json_object_get(o, "reason"))));
		d[nd].count = json_integer_value(count) > 0 ?
		    (unsigned)json_integer_value(count) : 0;
		d[nd].up = json_integer_value(up) > 0 ? (unsigned long long)json_integer_value(up) : 0;
		d[nd].down = json_integer_value(down) > 0 ?
		    (unsigned long long)json_integer_value(down) : 0;
		nd++;
	}
	if (!run_lease)
		fprintf(stderr, "egress-run: %zu destination%s, receipts in %s (principal %s)\n",
		    nd, nd == 1 ? "" : "s", receipts, shown(principal));
	else
		fprintf(stderr, "egress-run: %zu destination%s, receipts kept by the system "
		    "egressd (principal %s)\n", nd, nd == 1 ? "" : "s", shown(principal));
	for (i = 0; i < nd; i++) {
		char hup[32], hdown[32];

		if (d[i].allowed) {
			human(d[i].up, hup, sizeof(hup));
			human(d[i].down, hdown, sizeof(hdown));
			fprintf(stderr, "  allowed  %-40s %u× %s up, %s down\n", d[i].key,
			    d[i].count, hup, hdown);
		} else
			fprintf(stderr, "  denied   %-40s %u× %s\n", d[i].key, d[i].count,
			    d[i].reason);
	}
	if (dropped > 0)
		fprintf(stderr, "  (%lld more requests to further destinations not listed)\n",
		    (long long)dropped);
	free(d);
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
		{ "user", required_argument, NULL, 'u' },
		{ "setenv", required_argument, NULL, 'e' },
		{ "env", required_argument, NULL, 'E' },
		{ "home", required_argument, NULL, 'O' },
		{ "no-dns", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, rc;

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
		case 'u': opt.user = optarg; break;
		case 'e':
			list_add(&opt.setenvs, optarg, "--setenv");
			list_add(&opt.vars, optarg, "--setenv and --env");
			break;
		case 'E':
			list_add(&opt.envs, optarg, "--env");
			list_add(&opt.vars, optarg, "--setenv and --env");
			break;
		case 'O': opt.home = optarg; break;
		case 'D': opt.no_dns = true; break;
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
	check_options();
	signal(SIGPIPE, SIG_IGN);
	find_bindir();
	/* SPEC: a NAME has no slash (a file in the current directory is ./FILE). */
	run_lease = opt.policy != NULL && strchr(opt.policy, '/') == NULL && opt.allow.n == 0;
	{
		/* Everything the run needs is checked before anything starts. */
		char path[PATH_MAX + 16];

		if (!run_lease)
			need_program("egressd", path, sizeof(path));
		need_program("egress-launch", path, sizeof(path));
		need_program("egress-relay", path, sizeof(path));
		if (!opt.no_fd4)
			need_program("egress-broker", path, sizeof(path));
	}
	workload_userns();
	probe_namespaces();
	run_binds();
	if (run_lease) {
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
