/*
 * runbox.c: the workload's sandbox: the probe that bubblewrap can make its namespaces
 * here, a root run's user namespace (userns.c), the bwrap command line (binds, HOME,
 * PATH, the environment on a memfd, /etc/resolv.conf for the stub resolver), and the
 * wait for the workload with the signals forwarded to it. Trusts nothing the workload
 * writes: its status lines from bwrap (--json-status-fd) are only read for the child's
 * pid, and its exit status decides only egress-run's own.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "log.h"
#include "run.h"
#include "userns.h"
#include "dnsstub.h"
#include "netcfg.h"

/* The host folders bound (or mirrored) at the same path inside, and where they lead. */
struct runbox_inside {
	char *path;                  /* as the sandbox names it */
	char *real;                  /* the host folder's real path */
};

/* The workload's sandbox as it is being made (a root run's stages, the folders inside). */
static struct {
	struct userns_stage stages[USERNS_STAGE_MAX];
	size_t nstages;
	bool root_run;
	int userns_fd;               /* a root run's workload namespace (userns.c) */
	struct runbox_inside *insides;
	size_t ninsides;
} box = { .userns_fd = -1 };
static volatile sig_atomic_t pending_signal;

/* Mirrors /bin, /lib, … as the host has them: symlinks stay symlinks. */
static void
runbox_usr_links(struct arglist *a)
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
runbox_forward_signal(int sig)
{
	pending_signal = sig;
}

/*
 * The workload is the child of the sandbox's init (bwrap's pid 1, child-pid, counted in
 * the run's pid namespace: its host pid is found when a signal is to be sent).
 */
static void
runbox_signal_workload(pid_t init_pid, int sig)
{
	pid_t host = runguard_host_pid(run.bwrap_pid, init_pid);

	if ((host <= 0 || !runsup_signal_children(host, sig)) && run.bwrap_pid > 0)
		kill(run.bwrap_pid, sig);
}

/*
 * A root run (docs/sandbox.md, "Root runs"): the workload's bind sources are staged by
 * userns_exec() and bwrap binds them from there; src is returned unchanged otherwise.
 */
static const char *
runbox_bind_src(const char *src, bool idmap)
{
	struct userns_stage *st;

	if (!box.root_run)
		return src;
	if (box.nstages == USERNS_STAGE_MAX)
		run_setup_failed("too many paths to bind");
	st = &box.stages[box.nstages];
	st->src = xstrdup(src);
	st->idmap = idmap;
	snprintf(st->dst, sizeof(st->dst), "%s/egress-run.%zu", USERNS_STAGE_DIR, box.nstages);
	box.nstages++;
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
runbox_userns_setting(void)
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
runbox_userns_refused(const char *detail)
{
	const char *knob = runbox_userns_setting();

	if (knob != NULL)
		run_setup_failed("bubblewrap cannot create user namespaces here: %s", knob);
	run_setup_failed("bubblewrap cannot create its namespaces here (%s): check "
	    "user.max_user_namespaces, kernel.unprivileged_userns_clone and "
	    "kernel.apparmor_restrict_unprivileged_userns", detail);
}

/*
 * A root run's workload namespace (userns.c): root's workload runs as 65534 (or --user
 * USER); what it writes through the read-write binds lands as root's (idmapped).
 */
void
runbox_workload_userns(void)
{
	char err[256];
	uid_t wuid;
	gid_t wgid;

	box.root_run = geteuid() == 0;
	if (runopt.user != NULL && !box.root_run)
		run_setup_failed("--user needs egress-run to run as root");
	if (!box.root_run)
		return;
	if (userns_target(runopt.user, &wuid, &wgid, err, sizeof(err)) == -1)
		run_setup_failed("%s", err);
	if ((box.userns_fd = userns_create(wuid, wgid, err, sizeof(err))) == -1) {
		if (runbox_userns_setting() != NULL)
			runbox_userns_refused(err);
		run_setup_failed("%s", err);
	}
	box.userns_fd = run_high_fd(box.userns_fd);
}

void
runbox_probe_namespaces(void)
{
	struct arglist args = { 0 }, *a = &args;
	char truebin[PATH_MAX], msg[512];
	int ep[2], status;
	ssize_t n = 0, got;
	pid_t pid;

	if (!run_find_in_path("true", truebin, sizeof(truebin)))
		snprintf(truebin, sizeof(truebin), "/usr/bin/true");
	runsup_bwrap_base(a, true);
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/");
	arglist_add(a, "/");
	arglist_add(a, "--chdir");
	arglist_add(a, "/");
	arglist_add(a, "--");
	arglist_add(a, truebin);
	if (pipe2(ep, O_CLOEXEC) == -1)
		run_setup_failed("pipe: %s", strerror(errno));
	if ((pid = fork()) == -1)
		run_setup_failed("fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null == -1 || dup2(null, 0) == -1 || dup2(null, 1) == -1 ||
		    dup2(ep[1], 2) == -1)
			_exit(RUN_EXIT_SETUP);
		runguard_child_proc();
		if (box.root_run && (setgroups(0, NULL) == -1 ||
		    setns(box.userns_fd, CLONE_NEWUSER) == -1 || setresgid(0, 0, 0) == -1 ||
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
			run_setup_failed("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		runbox_userns_refused(msg[0] != '\0' ? run_shown(msg) :
		    "bwrap failed without a message");
}

/*
 * --- the workload's environment --------------------------------------------------------
 * Nothing of the caller's environment enters but TERM, LANG and what --env names. PATH is
 * the caller's (or the user's --setenv PATH) with every folder that does not exist inside
 * left out, HOME is RUN_SANDBOX_HOME. The user's variables travel to egress-launch on a
 * memfd (--env-fd), never in an argv: bwrap's command line is readable by every user of
 * the host, and a --env value is often a token.
 */

static void
runbox_inside_add(const char *path)
{
	char *real = realpath(path, NULL);

	if (real == NULL)
		return;
	box.insides = xreallocarray(box.insides, box.ninsides + 1, sizeof(*box.insides));
	box.insides[box.ninsides].path = xstrdup(path);
	box.insides[box.ninsides].real = real;
	box.ninsides++;
}

/* path is prefix or lies below it (both absolute, without a trailing '/'). */
static bool
runbox_path_under(const char *path, const char *prefix)
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
runbox_path_entry_inside(char *e, const char *home_real)
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
	if (runbox_path_under(e, RUN_SANDBOX_HOME)) {
		if (home_real == NULL || (size_t)snprintf(host, sizeof(host), "%s%s", home_real,
		    e + strlen(RUN_SANDBOX_HOME)) >= sizeof(host) ||
		    (real = realpath(host, NULL)) == NULL)
			return false;
		ok = runbox_path_under(real, home_real);
	} else {
		size_t i;
		struct stat st;

		for (i = 0; i < box.ninsides && !runbox_path_under(e, box.insides[i].path); i++)
			;
		if (i == box.ninsides || stat(e, &st) == -1 || !S_ISDIR(st.st_mode) ||
		    (real = realpath(e, NULL)) == NULL)
			return false;
		for (i = 0; i < box.ninsides && !ok; i++)
			ok = runbox_path_under(real, box.insides[i].real);
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
runbox_path_filter(const char *want, const char *home_real)
{
	char *copy = xstrdup(want), *save = NULL, *out = NULL, *t;

	for (char *e = strtok_r(copy, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		bool dup = false;

		if (!runbox_path_entry_inside(e, home_real))
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
runbox_sandbox_path(const char *home_real)
{
	const char *want = getenv("PATH");
	char *kept, *path;

	for (size_t i = 0; i < runopt.vars.n; i++) {
		const char *v = runopt.vars.v[i];

		if (strncmp(v, "PATH=", 5) == 0)
			want = v + 5;
		else if (strcmp(v, "PATH") == 0)
			want = getenv("PATH");
	}
	if (want == NULL || (kept = runbox_path_filter(want, home_real)) == NULL)
		kept = runbox_path_filter(RUN_DEFAULT_PATH, home_real);
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
runbox_resolv_memfd(void)
{
	static const char conf[] = "# egress-run: the stub resolver of egress-launch\n"
	    "nameserver " DNSSTUB_ADDR "\n";
	int fd = memfd_create("egress-run-resolv", MFD_CLOEXEC);

	if (fd == -1)
		run_setup_failed("memfd_create: %s", strerror(errno));
	if (write(fd, conf, sizeof(conf) - 1) != (ssize_t)sizeof(conf) - 1 ||
	    lseek(fd, 0, SEEK_SET) == -1)
		run_setup_failed("writing resolv.conf: %s", strerror(errno));
	return fd;
}

/*
 * bwrap creates the file it binds the data on through the path, and a symbolic
 * /etc/resolv.conf (systemd-resolved's, into /run) points into the sandbox's empty /run:
 * its folder is made there first, so the generated file lands where the link leads.
 */
static void
runbox_resolv_bind(struct arglist *a, int fd)
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
 * PATH is not among them (runbox_sandbox_path), HOME is refused before (runopt_check_env).
 * A descriptor, sealed against writes, read from its start.
 */
static int
runbox_env_memfd(void)
{
	int fd = memfd_create("egress-run-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t total = 0;

	if (fd == -1)
		run_setup_failed("memfd_create: %s", strerror(errno));
	for (size_t i = 0; i < runopt.vars.n; i++) {
		const char *v = runopt.vars.v[i], *val = NULL;
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
				run_setup_failed("--setenv and --env: more than 1 MiB of variables");
			if (write(fd, rec, (size_t)len + 1) != (ssize_t)len + 1)
				run_setup_failed("writing the variables: %s", strerror(errno));
		}
		free(rec);
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) ==
	    -1 || lseek(fd, 0, SEEK_SET) == -1)
		run_setup_failed("sealing the variables: %s", strerror(errno));
	return fd;
}

/*
 * HOME inside (RUN_SANDBOX_HOME) comes after every path of the user's, so that none covers
 * it: refused when one of them is it, above it or below it (bwrap would create its mount
 * point in a host folder, or hide it).
 */
static void
runbox_home_clash(const char *what, const char *abs)
{
	if (runbox_path_under(RUN_SANDBOX_HOME, abs) || runbox_path_under(abs, RUN_SANDBOX_HOME))
		run_setup_failed("%s %s: HOME inside the sandbox is %s, which it would cover or "
		    "lie in; bind another path", what, abs, RUN_SANDBOX_HOME);
}

int
runbox_run(void)
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

	run_need_program("egress-launch", launch, sizeof(launch));
	run_need_program("egress-relay", launch_in, sizeof(launch_in));
	snprintf(launch_in, sizeof(launch_in), "%s/egress-launch", RUN_SANDBOX_BIN);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		run_setup_failed("getcwd: %s", strerror(errno));
	for (size_t i = 0; i < runopt.ro.n; i++)
		if (strcmp(runopt.ro.v[i], ".") == 0)
			ro_cwd = true;
	{
		static const char *const sys[] = { "/usr", "/etc", "/bin", "/sbin", "/lib",
		    "/lib64", "/lib32", "/libx32" };

		for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
			runbox_inside_add(sys[i]);
	}

	/*
	 * With the stub resolver, the sandbox's network namespace is made by the child that
	 * becomes bwrap (userns_netns: port 53 bindable inside without a capability, which
	 * bwrap's own --unshare-net cannot give under --disable-userns); --no-dns keeps
	 * bwrap's.
	 */
	runsup_bwrap_base(a, runopt.no_dns);
	arglist_add(a, "--clearenv");
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/usr");
	arglist_add(a, "/usr");
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/etc");
	arglist_add(a, "/etc");
	runbox_usr_links(a);
	arglist_add(a, "--proc");
	arglist_add(a, "/proc");
	arglist_add(a, "--dev");
	arglist_add(a, "/dev");
	arglist_add(a, "--tmpfs");
	arglist_add(a, "/tmp");
	arglist_add(a, "--tmpfs");
	arglist_add(a, "/run");
	if (!runopt.no_dns) {
		/* After /etc and /run: the stub, not the host's resolver, answers inside. */
		resolv_fd = run_high_fd(runbox_resolv_memfd());
		runbox_resolv_bind(a, resolv_fd);
	}
	if (strcmp(cwd, "/") != 0) {
		runbox_home_clash("the current directory", cwd);
		arglist_add(a, ro_cwd ? "--ro-bind" : "--bind");
		arglist_add(a, runbox_bind_src(cwd, !ro_cwd && runopt.user == NULL));
		arglist_add(a, cwd);
		runbox_inside_add(cwd);
	}
	/* Paths are bound where they are on the host: absolute, symlinks resolved. */
	for (size_t i = 0; i < runopt.rw.n; i++) {
		char *abs = realpath(runopt.rw.v[i], NULL);

		if (abs == NULL)
			run_setup_failed("--rw %s: %s", runopt.rw.v[i], strerror(errno));
		runbox_home_clash("--rw", abs);
		arglist_add(a, "--bind");
		arglist_add(a, runbox_bind_src(abs, runopt.user == NULL));
		arglist_add(a, abs);
		runbox_inside_add(abs);
		free(abs);
	}
	for (size_t i = 0; i < runopt.ro.n; i++) {
		char *abs;

		if (strcmp(runopt.ro.v[i], ".") == 0)
			continue;
		if ((abs = realpath(runopt.ro.v[i], NULL)) == NULL)
			run_setup_failed("--ro %s: %s", runopt.ro.v[i], strerror(errno));
		runbox_home_clash("--ro", abs);
		arglist_add(a, "--ro-bind");
		arglist_add(a, runbox_bind_src(abs, false));
		arglist_add(a, abs);
		runbox_inside_add(abs);
		free(abs);
	}
	/*
	 * HOME: --home DIR read-write (through the idmapped stage of a root run, like --rw),
	 * else a fresh tmpfs of the sandbox's own, mounted by bwrap as the workload's uid.
	 */
	if (runopt.home != NULL) {
		if ((home_real = realpath(runopt.home, NULL)) == NULL)
			run_setup_failed("--home %s: %s", runopt.home, strerror(errno));
		arglist_add(a, "--bind");
		arglist_add(a, runbox_bind_src(home_real, runopt.user == NULL));
		arglist_add(a, RUN_SANDBOX_HOME);
	} else {
		arglist_add(a, "--perms");
		arglist_add(a, "0700");
		arglist_add(a, "--tmpfs");
		arglist_add(a, RUN_SANDBOX_HOME);
	}
	path_env = runbox_sandbox_path(home_real);
	free(home_real);
	arglist_add(a, "--ro-bind");
	arglist_add(a, runbox_bind_src(run.bindir, false));
	arglist_add(a, RUN_SANDBOX_BIN);
	/* The principal socket last, so that no other mount can cover or replace it. */
	arglist_add(a, "--bind");
	arglist_add(a, runbox_bind_src(run.sock, true));      /* root's 0600 socket, the workload's */
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
		run_setup_failed("socketpair: %s", strerror(errno));
	sp[1] = run_high_fd(sp[1]);
	snprintf(statusfd, sizeof(statusfd), "%d", sp[1]);
	/* egress-launch says on this pipe that the sandbox is set up and the command is about
	 * to run: without it, a failure is the sandbox's (125), not the command's. */
	if (pipe2(lp, O_CLOEXEC) == -1)
		run_setup_failed("pipe: %s", strerror(errno));
	lp[1] = run_high_fd(lp[1]);
	snprintf(launchfd, sizeof(launchfd), "%d", lp[1]);
	arglist_add(a, "--json-status-fd");
	arglist_add(a, statusfd);
	arglist_add(a, "--");
	arglist_add(a, launch_in);
	arglist_add(a, "--egress");
	arglist_add(a, RUN_SANDBOX_SOCK);
	arglist_add(a, "--expect");
	arglist_add(a, run.devino);
	arglist_add(a, "--listen");
	arglist_add(a, RUN_LISTEN);
	arglist_add(a, "--status-fd");
	arglist_add(a, launchfd);
	env_fd = run_high_fd(runbox_env_memfd());
	snprintf(envfd, sizeof(envfd), "%d", env_fd);
	arglist_add(a, "--env-fd");
	arglist_add(a, envfd);
	if (runopt.no_dns) {
		arglist_add(a, "--no-dns");
	} else {
		/* Where netcfg_transparent's rule sends every TCP connection outside lo. */
		arglist_add(a, "--transparent");
		arglist_add(a, NETCFG_LISTEN);
	}
	arglist_add(a, "--");
	arglist_addv(a, (const char *const *)runopt.cmd);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = runbox_forward_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if ((run.bwrap_pid = fork()) == -1)
		run_setup_failed("fork: %s", strerror(errno));
	if (run.bwrap_pid == 0) {
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
		if (run.fd4_chan != -1 && dup2(run.fd4_chan, 4) != 4)
			_exit(RUN_EXIT_SETUP);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		runguard_child_proc();
		if (box.root_run)
			userns_exec(box.userns_fd, box.stages, box.nstages,
			    runopt.no_dns ? 0 : DNSSTUB_PORT, runopt.no_dns ? 0 : NETCFG_PORT,
			    a->list);
		if (!runopt.no_dns) {
			char nerr[256];

			if (userns_netns(true, DNSSTUB_PORT, NETCFG_PORT, nerr, sizeof(nerr)) == -1) {
				log_warnx("%s", nerr);
				_exit(RUN_EXIT_SETUP);
			}
		}
		execv(a->list[0], a->list);
		log_warn("%s", a->list[0]);
		_exit(RUN_EXIT_SETUP);
	}
	arglist_free(a);
	free(path_env);
	close(env_fd);
	if (resolv_fd != -1)
		close(resolv_fd);
	if (box.userns_fd != -1) {
		close(box.userns_fd);
		box.userns_fd = -1;
	}
	close(sp[1]);
	close(lp[1]);
	if (run.fd4_chan != -1) {
		close(run.fd4_chan);        /* the sandbox holds it now */
		run.fd4_chan = -1;
	}
	js = fdopen(sp[0], "r");
	for (;;) {
		char line[1024];
		int exit_code = -1;

		if (pending_signal) {
			int sig = pending_signal;

			pending_signal = 0;
			if (init_pid > 0)
				runbox_signal_workload(init_pid, sig);
			else
				kill(run.bwrap_pid, sig);
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
	while (waitpid(run.bwrap_pid, &status, 0) == -1) {
		if (errno != EINTR)
			run_setup_failed("waitpid: %s", strerror(errno));
		if (pending_signal) {
			int sig = pending_signal;

			pending_signal = 0;
			if (init_pid > 0)
				runbox_signal_workload(init_pid, sig);
		}
	}
	run.bwrap_pid = -1;
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

