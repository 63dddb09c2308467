/*
 * runguard.c: nothing that egress-run starts outlives it, even when it is killed with
 * SIGKILL during its start-up.
 *
 * bwrap's --die-with-parent is not enough: bwrap arms it in the sandbox's init late, after
 * that init's mounts, and before them the init waits on an eventfd for bwrap's outer
 * process. egress-run killed in that window left the init running, reparented to the
 * host's init: blocked for ever on that eventfd, or serving as a private egressd with its
 * principal socket (9 such sandboxes in 200 runs of tests/e2e/sandbox-broker.sh).
 *
 * So before its first child, egress-run puts its children in a pid namespace of their own
 * (unshare(CLONE_NEWPID) affects only the children; egress-run stays in the host's). The
 * namespace's init is egress-run's first child: it holds the read end of a pipe whose write
 * end only egress-run keeps (close-on-exec, so that a child holds a copy only between its
 * fork and its exec), and exits when that pipe hangs up, i.e. when egress-run has ended, by
 * any means. When a pid namespace's init ends, the kernel kills every process in it,
 * nested namespaces included (bwrap's sandboxes): no window, no pid to find.
 *
 * A root egress-run unshares the pid namespace itself. Another user may not: it first
 * enters a user namespace that maps only its own uid and gid (identity, setgroups denied),
 * which owns the pid namespace. Files, sockets and credentials seen from outside are
 * unchanged (same uid and gid); egress-run's own children then nest their namespaces
 * under it as before. That is tried first in a throw-away child, so that a refusal
 * (user namespaces disabled, or without capabilities as under Ubuntu's AppArmor
 * restriction, apparmor_restrict_unprivileged_userns) leaves egress-run as it was: the run
 * goes on unguarded (bwrap's own --die-with-parent, as before) and says so in one line;
 * the probe of the sandbox's namespaces then says what else is refused. Once that child
 * succeeded, a failure of the same steps in egress-run itself is a set-up failure (125).
 *
 * Seen from a child in the namespace, egress-run is outside it: getppid() returns 0, and
 * still 0 once egress-run has died (the child is then reparented to a reaper of egress-run's
 * namespace, outside its own). runguard_ppid() is what a child sees; a check of getppid()
 * against it cannot fire in the namespace, whose end is what ends the child. bwrap's outer process finds the sandbox's init by the pid clone() returned, in
 * /proc: the host's /proc counts pids of the host's namespace (bwrap read another
 * process's /proc/N/ns, or none). So each child that executes bwrap first mounts a /proc
 * of the run's namespace over /proc, in a mount namespace of its own (runguard_child_proc).
 * bwrap's "child-pid" (--info-fd, --json-status-fd) is counted in the run's namespace;
 * runguard_host_pid() turns it into a pid of egress-run's /proc.
 *
 * Trusts: nothing but the kernel; it runs before any option is acted on.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "run.h"

/* Pid namespaces are nested at most 32 deep (pid_namespaces(7)), and a sandbox's 2 more. */
#define RUNGUARD_NSPID_MAX 40

static bool guarded;
static int refused;            /* why not, once runguard_start has tried */

/* Writes text to /proc/self/file; -1 on failure. */
static int
runguard_write_self(const char *file, const char *text)
{
	char path[64];
	size_t len = strlen(text);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len)
		rc = -1;
	if (close(fd) == -1)
		rc = -1;
	return rc;
}

/* A user namespace mapping only this uid and gid to themselves, for this process. */
static int
runguard_own_userns(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER) == -1)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (runguard_write_self("uid_map", map) == -1 ||
	    runguard_write_self("setgroups", "deny") == -1)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return runguard_write_self("gid_map", map);
}

/* A /proc of this process's pid namespace over /proc, in a mount namespace of its own. */
static int
runguard_mount_proc(void)
{
	/* Slave, as bwrap makes its own: mounts made on the host later still propagate. */
	if (unshare(CLONE_NEWNS) == -1 ||
	    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == -1 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == -1)
		return -1;
	return 0;
}

/*
 * Enters the namespaces (a user namespace first unless root) and forks one child, which
 * mounts a /proc of the pid namespace as a child that executes bwrap will.
 */
static int
runguard_enter(bool root)
{
	pid_t pid;
	int status;

	if (!root && runguard_own_userns() == -1)
		return -1;
	if (unshare(CLONE_NEWPID) == -1)
		return -1;
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0)
		_exit(runguard_mount_proc() == 0 ? 0 : errno > 0 && errno < 256 ? errno : 255);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	errno = WIFEXITED(status) ? WEXITSTATUS(status) : ECHILD;
	return -1;
}

/*
 * Whether this process may enter the namespaces and mount the /proc: tried in a child,
 * whose namespaces go with it (a user that is not root would otherwise be left in its
 * user namespace by a refusal after it).
 */
static bool
runguard_probe(bool root)
{
	pid_t pid;
	int status;

	if ((pid = fork()) == -1)
		return false;
	if (pid == 0)
		_exit(runguard_enter(root) == 0 ? 0 : errno > 0 && errno < 256 ? errno : 255);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return false;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	errno = WIFEXITED(status) ? WEXITSTATUS(status) : ECHILD;
	return false;
}

/* The namespace's init: reaps what is orphaned to it, ends when egress-run has ended. */
static void __attribute__((noreturn))
runguard_init(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct sigaction sa;

	/* Nothing of egress-run's: no terminal, no file, no socket; the pipe alone. */
	if (dup2(fd, 3) != 3)
		_exit(1);
	pfd.fd = 3;
	if (syscall(SYS_close_range, 4U, ~0U, 0U) == -1)
		_exit(1);
	close(0);
	close(1);
	close(2);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sa.sa_flags = SA_NOCLDWAIT;     /* orphans adopted by this init are reaped */
	sigaction(SIGCHLD, &sa, NULL);
	for (;;) {
		if (poll(&pfd, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pfd.revents != 0)   /* hang-up (or a byte nobody writes): egress-run ended */
			_exit(0);
	}
}

void
runguard_start(void)
{
	bool root = geteuid() == 0;
	int p[2];
	pid_t pid;

	if (!runguard_probe(root)) {
		refused = errno;
		return;
	}
	if (pipe2(p, O_CLOEXEC) == -1)
		run_setup_failed("pipe: %s", strerror(errno));
	if ((!root && runguard_own_userns() == -1) || unshare(CLONE_NEWPID) == -1)
		run_setup_failed("the run's pid namespace: %s", strerror(errno));
	if ((pid = fork()) == -1)
		run_setup_failed("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[1]);
		runguard_init(p[0]);
	}
	close(p[0]);
	/* The write end stays open, unused, until egress-run ends: that is the signal. */
	(void)run_high_fd(p[1]);
	guarded = true;
}

void
runguard_child_proc(void)
{
	if (guarded && runguard_mount_proc() == -1) {
		log_warn("a /proc for the run's pid namespace");
		_exit(RUN_EXIT_SETUP);
	}
}

/*
 * Said once the sandbox's own namespaces are known to work: where they do not, the probe's
 * one line says what to change, and this one would only repeat it.
 */
void
runguard_say_unguarded(void)
{
	if (!guarded && refused != 0)
		log_info("no pid namespace of its own for the run (%s): a sandbox whose set-up "
		    "is under way when egress-run is killed may outlive it", strerror(refused));
}

pid_t
runguard_ppid(void)
{
	return guarded ? 0 : getpid();
}

/*
 * The NSpid line of /proc/WHO/status (WHO a pid or "self"): up to max pids, from the pid
 * namespace of this /proc down to the process's own. Returns how many, or -1.
 */
static int
runguard_nspid(const char *who, long *out, int max)
{
	char path[64], line[256];
	FILE *fp;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/%s/status", who);
	if ((fp = fopen(path, "re")) == NULL)
		return -1;
	while (n == -1 && fgets(line, sizeof(line), fp) != NULL) {
		char *save = NULL;

		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		n = 0;
		for (char *t = strtok_r(line + 6, " \t\n", &save); t != NULL && n < max;
		    t = strtok_r(NULL, " \t\n", &save))
			out[n++] = strtol(t, NULL, 10);
	}
	fclose(fp);
	return n;
}

pid_t
runguard_host_pid(pid_t outer, pid_t ns_pid)
{
	static int depth = -1;      /* egress-run's: NSpid's fields for itself, less one */
	pid_t kids[16];
	long ids[RUNGUARD_NSPID_MAX];
	char who[24];
	int n;

	if (!guarded || ns_pid <= 0)
		return ns_pid;
	if (depth == -1)
		depth = (n = runguard_nspid("self", ids, RUNGUARD_NSPID_MAX)) > 0 ? n - 1 : 0;
	/*
	 * bwrap's outer process (a child of egress-run, in the run's namespace) has one
	 * child: the sandbox's init, whose NSpid has its pid as this /proc counts it at
	 * egress-run's depth, then in the run's namespace, then in its own.
	 */
	n = run_children(outer, kids, sizeof(kids) / sizeof(kids[0]));
	for (int i = 0; i < n; i++) {
		snprintf(who, sizeof(who), "%d", (int)kids[i]);
		if (runguard_nspid(who, ids, RUNGUARD_NSPID_MAX) >= depth + 2 &&
		    ids[depth + 1] == (long)ns_pid)
			return (pid_t)ids[depth];
	}
	return -1;
}
