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
 *
 * run.c: main, the order of the steps, and the helpers every part uses (the set-up
 * failure that takes down what was started, the programs next to egress-run, files).
 * run.h says which file does what.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "run.h"

struct run_state run = {
	.egressd_pid = -1, .bwrap_pid = -1, .broker_pid = -1, .egressd_child = -1,
	.fd4_chan = -1, .conn = -1, .learn_fd = -1,
};

static int
run_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Stops what runs and removes the runtime folder. */
void
run_cleanup(void)
{
	runsup_stop();
	if (run.rtdir[0] != '\0') {
		nftw(run.rtdir, run_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		run.rtdir[0] = '\0';
	}
}

void
run_setup_failed(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emitv(LOG_LVL_ERROR, 0, NULL, fmt, ap);     /* "egress-run: ..." */
	va_end(ap);
	run_cleanup();
	exit(RUN_EXIT_SETUP);
}

static void
run_find_bindir(void)
{
	ssize_t n = readlink("/proc/self/exe", run.bindir, sizeof(run.bindir) - 1);
	char *slash;

	if (n <= 0)
		run_setup_failed("cannot find my own directory");
	run.bindir[n] = '\0';
	if ((slash = strrchr(run.bindir, '/')) == NULL)
		run_setup_failed("cannot find my own directory");
	*slash = '\0';
}

/* The programs egress-run relies on, next to it (as make install puts them). */
void
run_need_program(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", run.bindir, name);
	if (access(out, X_OK) != 0)
		run_setup_failed("%s not found next to egress-run (in %s): is egress installed?", name,
		    run.bindir);
}

bool
run_find_in_path(const char *name, char *out, size_t len)
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

void
run_write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd == -1 || write(fd, data, len) != (ssize_t)len || close(fd) == -1)
		run_setup_failed("writing %s: %s", path, strerror(errno));
}

uint8_t *
run_read_all(const char *path, size_t *len)
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
 * A value as a message may show it: printable ASCII kept, any other byte as \xHH. The
 * result lives until RUN_SHOWN_MAX more calls: one message may show up to that many values
 * (the order in which a compiler evaluates a call's arguments is not the order written;
 * with two buffers a message showing three once named the third value twice under clang).
 */
#define RUN_SHOWN_MAX 4
const char *
run_shown(const char *v)
{
	static char buf[RUN_SHOWN_MAX][512];
	static unsigned which;
	char *out = buf[which++ % RUN_SHOWN_MAX];
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

/* A descriptor moved to 10 or above, so that placing fd 4 never overwrites it. */
/* Up to max children of pid (its main thread's, /proc/PID/task/PID/children); how many. */
int
run_children(pid_t pid, pid_t *out, int max)
{
	char path[64], buf[1024];
	FILE *fp;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if ((fp = fopen(path, "re")) == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), fp) != NULL) {
		char *save = NULL;

		for (char *tok = strtok_r(buf, " \n", &save); tok != NULL && n < max;
		    tok = strtok_r(NULL, " \n", &save))
			out[n++] = (pid_t)atoi(tok);
	}
	fclose(fp);
	return n;
}

int
run_high_fd(int fd)
{
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	if (hi == -1)
		run_setup_failed("fcntl: %s", strerror(errno));
	close(fd);
	return hi;
}

int
main(int argc, char **argv)
{
	int rc;

	log_init("egress-run", LOG_OUT_PREFIX, false, false);
	runopt_parse(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	run_find_bindir();
	/* SPEC: a NAME has no slash (a file in the current directory is ./FILE). */
	run.lease = runopt.policy != NULL && strchr(runopt.policy, '/') == NULL &&
	    runopt.allow.n == 0;
	{
		/* Everything the run needs is checked before anything starts. */
		char path[PATH_MAX + 16];

		if (!run.lease)
			run_need_program("egressd", path, sizeof(path));
		run_need_program("egress-launch", path, sizeof(path));
		run_need_program("egress-relay", path, sizeof(path));
		if (!runopt.no_fd4)
			run_need_program("egress-broker", path, sizeof(path));
	}
	/* Before the first child: every child of the run ends with egress-run. */
	runguard_start();
	runbox_workload_userns();
	runbox_probe_namespaces();
	runguard_say_unguarded();
	runstate_binds();
	if (runopt.learn != NULL)
		runsum_learn_open();
	if (run.lease) {
		/* A name: a lease from the system egressd, never a silent fallback. */
		if (runopt.resolvers.n || runopt.hosts || runopt.permits.n)
			runopt_usage("--resolver, --hosts and --permit-range configure only a private "
			    "egressd (--allow or --policy FILE)");
		runsup_take_lease();
	} else
		runsup_start_private();
	if (!runopt.no_fd4)
		runsup_start_broker();
	if (runopt.learn != NULL)
		runsum_learn_announce();
	rc = runbox_run();
	/* The tunnels' close receipts are written once egressd sees them end: stop it (or end
	 * the lease) first, then read. */
	runsup_stop();
	if (!runopt.quiet)
		runsum_print(&run);
	if (runopt.learn != NULL && runsum_learn_write(&run) == -1 && rc == 0)
		rc = RUN_EXIT_SETUP;
	run_cleanup();
	return rc;
}

