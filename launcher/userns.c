/*
 * userns.c: the confinement of a root-run egress-run's workload (SPEC "egress-run for real
 * work": the workload never holds the invoking root identity).
 *
 * bwrap run by root maps the workload to uid 0 outside too: with every capability dropped
 * it still owns every file root owns. So, when egress-run is root:
 *
 *  - userns_create() makes a user namespace U owned by root whose only mapping is inside
 *    0 -> outside W (65534, or --user USER's uid and gid). The egress-run child that
 *    becomes bwrap joins U and becomes uid 0 there, i.e. W on the host, with no
 *    supplementary group, before it executes bwrap; bwrap then nests its own user
 *    namespaces under U as it always does (--unshare-user --disable-userns). Nothing in
 *    the sandbox, bwrap included, holds host uid 0 or any capability over root's files
 *    (capabilities in U apply only to files of W). bwrap's --userns FD is not used: it
 *    excludes --unshare-user and --disable-userns, and bwrap switches uid in it only when
 *    --uid differs from its own real uid (0), so a one-uid map would keep host uid 0.
 *  - bwrap, now W, could not reach a bind source below a root-only folder (the 0700
 *    runtime folder holding the principal socket, a current directory under /root). So
 *    before it joins U, the child (still root, in a mount namespace of its own) clones each
 *    source with open_tree(OPEN_TREE_CLONE), idmaps the clones the workload writes through
 *    (the read-write current directory, --rw paths, the principal socket) with U itself
 *    (mount_setattr(MOUNT_ATTR_IDMAP)): through them root's files appear as W's, and what
 *    W creates lands on disk as root's. It attaches the clones on a fresh tmpfs over
 *    USERNS_STAGE_DIR (only in that mount namespace) and bwrap binds them from there. A
 *    file system that cannot idmap fails closed (exit 125, naming --user USER).
 *
 * Trusts: its caller (egress-run, root) for the paths; nothing from the workload, which
 * starts only after all of this.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "netcfg.h"
#include "userns.h"

#define USERNS_EXIT_SETUP 125

/* USER (a name or a number) as uid and primary gid; NULL means nobody (65534:65534). */
int
userns_target(const char *user, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
	struct passwd *pw;
	char *end;
	unsigned long n;

	if (user == NULL) {
		*uid = USERNS_NOBODY;
		*gid = USERNS_NOBODY;
		return 0;
	}
	errno = 0;
	if ((pw = getpwnam(user)) == NULL) {
		n = strtoul(user, &end, 10);
		if (user[0] < '0' || user[0] > '9' || *end != '\0' || n >= 0xffffffffUL ||
		    (pw = getpwuid((uid_t)n)) == NULL) {
			snprintf(err, errlen, "--user %s: no such user", user);
			return -1;
		}
	}
	if (pw->pw_uid == 0) {
		snprintf(err, errlen, "--user %s: the workload may not run as root", user);
		return -1;
	}
	/* A primary group 0 (operator is 11:0 on some systems) would be root's group. */
	if (pw->pw_gid == 0) {
		snprintf(err, errlen, "--user %s: its primary group is root's (gid 0); the "
		    "workload may not run in it", user);
		return -1;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

static int
write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		rc = -1;
	if (close(fd) == -1)
		rc = -1;
	return rc;
}

/* Writes value to /proc/sys/net/ipv4/name, of the current network namespace. */
static int
netns_sysctl(const char *name, const char *value, char *err, size_t errlen)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1 ||
	    write(fd, value, strlen(value)) != (ssize_t)strlen(value)) {
		snprintf(err, errlen, "%s in the sandbox: %s", name, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * The sandbox's network namespace, made here rather than by bwrap's --unshare-net: bwrap
 * runs the workload (egress-launch first) in a user namespace nested below the one that
 * owns the network namespace it makes (--disable-userns adds that level), so nothing
 * inside holds a capability over it, and even CAP_NET_BIND_SERVICE given with --cap-add
 * does not let the stub resolver bind port 53. Made by egress-run's child with the
 * capabilities of its own user namespace, the namespace gets lo up and
 * ip_unprivileged_port_start lowered to low_port (53): a port at or above it needs no
 * capability inside, and the namespace has only lo, so that reaches nothing outside.
 * own_userns: first a user namespace of our own (uid and gid map to themselves, setgroups
 * denied), for a run that is not root's; a root run is already in the workload's (U).
 * transparent_port != 0: then the route and the redirect of transparent connections to
 * 127.0.0.1:transparent_port (netcfg.c), with the same capabilities, which bwrap drops.
 */
int
userns_netns(bool own_userns, int low_port, unsigned transparent_port, char *err,
    size_t errlen)
{
	char map[64], port[16];
	struct ifreq ifr;
	uid_t uid = getuid();
	gid_t gid = getgid();
	int fd;

	if (unshare(own_userns ? CLONE_NEWUSER | CLONE_NEWNET : CLONE_NEWNET) == -1) {
		snprintf(err, errlen, "a network namespace for the sandbox: %s", strerror(errno));
		return -1;
	}
	if (own_userns) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if (write_proc(getpid(), "setgroups", "deny") == -1 ||
		    write_proc(getpid(), "uid_map", map) == -1 ||
		    (snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid),
		    write_proc(getpid(), "gid_map", map)) == -1) {
			snprintf(err, errlen, "mapping the sandbox's user namespace: %s",
			    strerror(errno));
			return -1;
		}
	}
	snprintf(port, sizeof(port), "%d", low_port);
	if (netns_sysctl("ip_unprivileged_port_start", port, err, errlen) == -1)
		return -1;
	/*
	 * A fresh namespace has tcp_tw_reuse 2 (loopback only). Transparent connections
	 * leave from non-loopback addresses, so a workload opening some 500 connections a
	 * second to one destination ran out of ports in TIME_WAIT (bench/README.md); 1
	 * reuses them where TCP timestamps make it safe, as a host would be tuned.
	 */
	if (transparent_port != 0 && netns_sysctl("tcp_tw_reuse", "1", err, errlen) == -1)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1 ||
	    ioctl(fd, SIOCGIFFLAGS, &ifr) == -1 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr)) == -1) {
		snprintf(err, errlen, "lo up in the sandbox: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	if (transparent_port != 0 && netcfg_transparent(transparent_port, err, errlen) == -1)
		return -1;
	return 0;
}

/*
 * A user namespace owned by root with the single mapping 0 -> uid (and 0 -> gid),
 * setgroups denied: made by a short-lived child, held by the descriptor returned.
 */
int
userns_create(uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char map[64], path[64], c;
	int ready[2], hold[2], fd = -1, status;
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) == -1 || pipe2(hold, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		if (unshare(CLONE_NEWUSER) == -1)
			_exit(1);
		if (write(ready[1], "u", 1) != 1)
			_exit(1);
		(void)read(hold[0], &c, 1);     /* until the parent has the namespace */
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) != 1) {
		snprintf(err, errlen, "cannot create a user namespace for the workload");
		goto out;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_proc(pid, "uid_map", map) == -1) {
		snprintf(err, errlen, "writing the workload's uid map: %s", strerror(errno));
		goto out;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_proc(pid, "setgroups", "deny") == -1 ||
	    write_proc(pid, "gid_map", map) == -1) {
		snprintf(err, errlen, "writing the workload's gid map: %s", strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
out:
	close(hold[1]);
	close(ready[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	return fd;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
userns_fail(const char *fmt, ...)
{
	va_list ap;

	/* egress-run's log (log_init in run.c): "egress-run: ..."; _exit, as a child. */
	va_start(ap, fmt);
	log_emitv(LOG_LVL_ERROR, 0, NULL, fmt, ap);
	va_end(ap);
	_exit(USERNS_EXIT_SETUP);
}

/*
 * In the child that becomes bwrap, still root: the staged sources, then U, then bwrap.
 * Returns only by executing bwrap; a failure says why and exits 125.
 */
void
userns_exec(int userns_fd, const struct userns_stage *st, size_t n, int low_port,
    unsigned transparent_port, char *const argv[])
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	extern char **environ;
	int *tree = calloc(n ? n : 1, sizeof(*tree));
	bool *isdir = calloc(n ? n : 1, sizeof(*isdir));
	int bwrap;

	if (tree == NULL || isdir == NULL)
		userns_fail("out of memory");
	/* No supplementary group of root's reaches the sandbox (they would still count). */
	if (setgroups(0, NULL) == -1)
		userns_fail("setgroups: %s", strerror(errno));
	if (unshare(CLONE_NEWNS) == -1 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		userns_fail("a private mount namespace: %s", strerror(errno));
	/* Before the tmpfs covers USERNS_STAGE_DIR: a source (or bwrap) may be under it. */
	if ((bwrap = open(argv[0], O_PATH | O_CLOEXEC)) == -1)
		userns_fail("%s: %s", argv[0], strerror(errno));
	attr.userns_fd = (__u64)userns_fd;
	for (size_t i = 0; i < n; i++) {
		struct stat sb;

		if ((tree[i] = open_tree(AT_FDCWD, st[i].src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
		    AT_RECURSIVE)) == -1 || fstat(tree[i], &sb) == -1)
			userns_fail("%s: %s", st[i].src, strerror(errno));
		isdir[i] = S_ISDIR(sb.st_mode);
		if (st[i].idmap && mount_setattr(tree[i], "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof(attr)) == -1) {
			if (errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)
				userns_fail("%s: its file system does not support idmapped mounts, "
				    "so the workload cannot write there without root's identity; "
				    "run it as a user who owns it with --user USER", st[i].src);
			userns_fail("%s: idmapped mount: %s", st[i].src, strerror(errno));
		}
	}
	if (mount("egress-run", USERNS_STAGE_DIR, "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=0755,size=1m") == -1)
		userns_fail("tmpfs on %s: %s", USERNS_STAGE_DIR, strerror(errno));
	for (size_t i = 0; i < n; i++) {
		int fd;

		if (isdir[i] ? mkdir(st[i].dst, 0755) == -1 :
		    (fd = open(st[i].dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) == -1 ||
		    close(fd) == -1)
			userns_fail("%s: %s", st[i].dst, strerror(errno));
		if (move_mount(tree[i], "", AT_FDCWD, st[i].dst, MOVE_MOUNT_F_EMPTY_PATH) == -1)
			userns_fail("attaching %s: %s", st[i].src, strerror(errno));
		close(tree[i]);
	}
	/* Uid 0 of U is W on the host; the capabilities are U's, over W's files only. */
	if (setns(userns_fd, CLONE_NEWUSER) == -1)
		userns_fail("joining the workload's user namespace: %s", strerror(errno));
	if (setresgid(0, 0, 0) == -1 || setresuid(0, 0, 0) == -1)
		userns_fail("becoming the workload's uid: %s", strerror(errno));
	close(userns_fd);
	if (low_port > 0) {
		char err[256];

		if (userns_netns(false, low_port, transparent_port, err, sizeof(err)) == -1)
			userns_fail("%s", err);
	}
	execveat(bwrap, "", argv, environ, AT_EMPTY_PATH);
	userns_fail("%s: %s", argv[0], strerror(errno));
}
