/*
 * runstate.c: egress-run's own state out of the sandbox's reach: the list of every host
 * path the workload's sandbox binds, the runtime folder and the receipts path, each
 * refused (125) when the sandbox would see it. Trusts no spelling of a path: paths are
 * compared by device and inode after symlinks are resolved, mounts below a bound path
 * included (/proc/self/mountinfo).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "run.h"

static void
runstate_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			run_setup_failed("mkdir %s: %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, mode) == -1 && errno != EEXIST)
		run_setup_failed("mkdir %s: %s", buf, strerror(errno));
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
 * (runstate_bind_submounts). A path the sandbox binds must be added in runstate_binds().
 */
struct run_bind {
	const char *what;            /* for the message: "the current directory", "--rw" */
	char *path;                  /* resolved */
	dev_t dev;
	ino_t ino;
};
static struct {
	struct run_bind *binds;      /* at most 2 * RUN_MAX_LIST + 10 */
	size_t nbinds;
} bound;

/*
 * A system folder that is not there binds nothing. A --rw, --ro or --home that is not
 * there is refused now, not when the sandbox is made: egress-run creates its state files
 * (the receipts, RECEIPTS.pub) after this list is made, and a --rw naming one of them
 * before it existed would bind it unchecked.
 */
static void
runstate_bind_add_opt(const char *what, const char *path, bool must_exist)
{
	char *real = realpath(path, NULL);
	struct stat st;

	if (real == NULL || stat(real, &st) == -1) {
		if (must_exist)
			run_setup_failed("%s %s: %s", what, path, strerror(errno));
		free(real);
		return;
	}
	bound.binds = xreallocarray(bound.binds, bound.nbinds + 1, sizeof(*bound.binds));
	bound.binds[bound.nbinds].what = what;
	bound.binds[bound.nbinds].path = real;
	bound.binds[bound.nbinds].dev = st.st_dev;
	bound.binds[bound.nbinds].ino = st.st_ino;
	bound.nbinds++;
}

static void
runstate_bind_add(const char *what, const char *path)
{
	runstate_bind_add_opt(what, path, false);
}

/* Undoes mountinfo's octal escapes (\040 for a space...) in place. */
static void
runstate_mountinfo_unescape(char *s)
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
 * runstate_bind_covering() finds the state below it. Only the binds made so far are
 * looked under.
 */
static void
runstate_bind_submounts(void)
{
	size_t nexplicit = bound.nbinds;
	char *line = NULL;
	size_t cap = 0;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (fp == NULL)
		run_setup_failed("/proc/self/mountinfo: %s (the state overlap check needs it)",
		    strerror(errno));
	while (getline(&line, &cap, fp) != -1) {
		char *save = NULL, *mp = NULL, *tok = strtok_r(line, " ", &save);

		/* mount id, parent id, major:minor, root, mount point */
		for (int f = 1; tok != NULL && f < 5; f++)
			tok = strtok_r(NULL, " ", &save);
		if ((mp = tok) == NULL)
			continue;
		runstate_mountinfo_unescape(mp);
		for (size_t i = 0; i < nexplicit; i++) {
			size_t n = strlen(bound.binds[i].path);

			if (strcmp(bound.binds[i].path, "/") != 0 &&
			    strncmp(mp, bound.binds[i].path, n) == 0 && mp[n] == '/') {
				runstate_bind_add(bound.binds[i].what, mp);
				break;
			}
		}
	}
	free(line);
	fclose(fp);
}

/* Every host path the workload's sandbox will bind (runbox_run, runbox_usr_links). */
void
runstate_binds(void)
{
	static const char *const sys[] = { "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64",
	    "/lib32", "/libx32" };
	char cwd[PATH_MAX];

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		run_setup_failed("getcwd: %s", strerror(errno));
	if (strcmp(cwd, "/") != 0)
		runstate_bind_add("the current directory", cwd);
	for (size_t i = 0; i < runopt.rw.n; i++)
		runstate_bind_add_opt("--rw", runopt.rw.v[i], true);
	for (size_t i = 0; i < runopt.ro.n; i++)
		if (strcmp(runopt.ro.v[i], ".") != 0)
			runstate_bind_add_opt("--ro", runopt.ro.v[i], true);
	if (runopt.home != NULL)
		runstate_bind_add_opt("--home", runopt.home, true);
	runstate_bind_add("egress-run's own folder", run.bindir);
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		runstate_bind_add("the system folder", sys[i]);
	runstate_bind_submounts();
}

/*
 * The bound path that contains path (path itself or one of its ancestors is it, by
 * device and inode), NULL when none does. path must exist.
 */
static const struct run_bind *
runstate_bind_covering(const char *path)
{
	char *p = realpath(path, NULL);
	const struct run_bind *hit = NULL;

	if (p == NULL)
		run_setup_failed("%s: %s", path, strerror(errno));
	for (;;) {
		struct stat st;
		char *slash;

		if (stat(p, &st) == 0)
			for (size_t i = 0; i < bound.nbinds && hit == NULL; i++)
				if (bound.binds[i].dev == st.st_dev && bound.binds[i].ino == st.st_ino)
					hit = &bound.binds[i];
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
void
runstate_refuse_bound(const char *what, const char *path, const char *where, const char *hint)
{
	const struct run_bind *b = runstate_bind_covering(where);

	if (b != NULL)
		run_setup_failed("the %s %s lies inside %s %s, which the sandbox binds: the "
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
void
runstate_make_rtdir(void)
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
		if (cand[i] == NULL || !runopt_conf_safe_path(cand[i]) || strlen(cand[i]) > 56 ||
		    stat(cand[i], &st) == -1 || !S_ISDIR(st.st_mode) ||
		    access(cand[i], W_OK | X_OK) != 0 || runstate_bind_covering(cand[i]) != NULL)
			continue;
		snprintf(run.rtdir, sizeof(run.rtdir), "%s/egress-run.XXXXXX", cand[i]);
		if (mkdtemp(run.rtdir) != NULL) {
			chmod(run.rtdir, 0700);
			return;
		}
	}
	run.rtdir[0] = '\0';
	run_setup_failed("no folder for the private egressd's runtime folder outside what the "
	    "sandbox binds ($XDG_RUNTIME_DIR, /run/user/%u, /tmp, /var/tmp, /dev/shm): set "
	    "XDG_RUNTIME_DIR to a folder outside the current directory and every --rw/--ro",
	    (unsigned)getuid());
}

const char runstate_receipts_hint[] = "pass --receipts FILE outside it (or run from a "
    "folder that does not contain it)";

/*
 * --receipts, else $XDG_STATE_HOME/egress/receipts.jsonl, else
 * ~/.local/state/egress/receipts.jsonl. Its folder is checked against the bound paths
 * before the file is created, so that a refusal leaves nothing behind.
 */
void
runstate_default_receipts(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX], *slash;

	if (runopt.receipts != NULL) {
		snprintf(run.receipts, sizeof(run.receipts), "%s", runopt.receipts);
		snprintf(dir, sizeof(dir), "%s", runopt.receipts);
		if ((slash = strrchr(dir, '/')) != NULL)
			slash[slash == dir ? 1 : 0] = '\0';
		runstate_refuse_bound("receipts file", run.receipts, dir, runstate_receipts_hint);
		return;
	}
	if (state != NULL && state[0] == '/')
		snprintf(dir, sizeof(dir), "%s/egress", state);
	else if (home != NULL && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/egress", home);
	else
		run_setup_failed("no XDG_STATE_HOME or HOME for the receipts: use --receipts FILE");
	if ((size_t)snprintf(run.receipts, sizeof(run.receipts), "%s/receipts.jsonl", dir) >=
	    sizeof(run.receipts))
		run_setup_failed("receipts path too long");
	if (!runopt_conf_safe_path(run.receipts))
		run_setup_failed("the default receipts file %s is not a path egressd's configuration "
		    "can carry (printable ASCII without blanks or '#'): use --receipts FILE",
		    run_shown(run.receipts));
	/* Before mkdir: the first existing ancestor tells whether the sandbox sees it. */
	{
		char anc[PATH_MAX];
		struct stat st;

		snprintf(anc, sizeof(anc), "%s", dir);
		while (stat(anc, &st) == -1 && (slash = strrchr(anc, '/')) != NULL)
			slash[slash == anc ? 1 : 0] = '\0';
		runstate_refuse_bound("default receipts file", run.receipts, anc,
		    runstate_receipts_hint);
	}
	runstate_mkdir_p(dir, 0700);
}

