/*
 * sandbox.c: seccomp filters, capabilities and no_new_privs for egress-launch and
 * egress-relay. The filters are deny lists on top of an allowed default: the workload is
 * an arbitrary program, so what is closed is exactly what could open another way out
 * (other socket families, io_uring, namespaces, ptrace, terminal injection, other ABIs).
 *
 * AF_UNIX in the workload. socket() is AF_INET/AF_INET6 only, so the workload's AF_UNIX
 * sockets are the ends of its socketpairs and fd 4. An AF_UNIX *datagram* socket, even one
 * of a connected socketpair, sends to any datagram socket named by a path it can see
 * (unix_dgram_sendmsg looks msg_name up whenever one is given; connect() re-targets it),
 * and the current directory is the host's, read-write: a host process listening there
 * would receive what the workload sends, past egressd. A filter cannot close that on
 * datagram sockets: it sees neither an fd's family nor sendmsg's msg_name (behind a
 * pointer), and sendmsg must stay (SCM_RIGHTS on fd 4, and any program's TCP or UDP);
 * refusing sendto with an address would break resolvers and still leave sendmsg; seccomp
 * user notification that checks and then continues is racy (another thread rewrites the
 * msghdr or dup2s another socket onto the fd); Landlock scopes only abstract sockets (the
 * sandbox's own network namespace already isolates those). What the kernel does hold is
 * per socket type: a SOCK_STREAM or SOCK_SEQPACKET socketpair end is connected for good:
 * a destination on send is refused (stream: EISCONN) or ignored (seqpacket), and connect()
 * fails (EISCONN; EPROTOTYPE for another type). So the workload may make only those
 * socketpairs (every other type, SOCK_RAW included, which AF_UNIX turns into a datagram
 * socket, fails with ESOCKTNOSUPPORT), and fd 4 is a seqpacket socketpair (egress-run):
 * messages with boundaries and SCM_RIGHTS as the fd-4 protocol needs, and no way to a path.
 * tests/e2e/sandbox-unix.sh tries every one of these ways against listeners of the host.
 */
#include "config.h"

#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>

#include <seccomp.h>

#include "sandbox.h"

/* Every namespace flag clone(2) and unshare(2) accept. */
#define SANDBOX_NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
	CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDBOX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_ASAN 1
#endif
#ifdef SANDBOX_ASAN
/*
 * Sanitizer builds only: LeakSanitizer stops the world with ptrace at exit, which these
 * programs forbid themselves (seccomp, not dumpable), and then fails the exit status.
 */
int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return 1;
}
#endif

const char *
sandbox_arch(void)
{
	switch (seccomp_arch_native()) {
	case SCMP_ARCH_X86_64:
		return "x86_64";
	case SCMP_ARCH_AARCH64:
		return "aarch64";
	default:
		return NULL;
	}
}

static int
sandbox_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
    const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name), r;

	if (nr == __NR_SCMP_ERROR) {
		fprintf(stderr, "seccomp: no syscall %s on this architecture\n", name);
		return -1;
	}
	if (nr < 0)
		return 0;       /* a pseudo syscall this architecture does not have */
	if ((r = seccomp_rule_add_array(ctx, action, nr, n, cmp)) != 0) {
		fprintf(stderr, "seccomp: rule for %s: %s\n", name, strerror(-r));
		return -1;
	}
	return 0;
}

static scmp_filter_ctx
sandbox_new(bool log)
{
	scmp_filter_ctx ctx;
	const char *arch = sandbox_arch();

	if (arch == NULL) {
		fprintf(stderr, "seccomp: no rule set for this architecture (token %#x): refusing "
		    "to run unconfined\n", seccomp_arch_native());
		return NULL;
	}
	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		fprintf(stderr, "seccomp: cannot initialise a filter\n");
		return NULL;
	}
	/*
	 * Only the native ABI: i386 and x32 syscalls on x86-64 (whose numbers mean other
	 * things) kill the process. seccomp_init adds only the native architecture, and the
	 * bad-architecture action covers both (libseccomp treats x32 as its own architecture).
	 */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    log ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS) != 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) != 0) {
		fprintf(stderr, "seccomp: cannot set filter attributes\n");
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

static int
sandbox_load(scmp_filter_ctx ctx)
{
	int r = seccomp_load(ctx);

	seccomp_release(ctx);
	if (r != 0) {
		fprintf(stderr, "seccomp: cannot load the filter: %s\n", strerror(-r));
		return -1;
	}
	return 0;
}

/* socket(): only the families listed; every other fails with EAFNOSUPPORT. */
static int
sandbox_socket_families(scmp_filter_ctx ctx, const int *allowed, size_t n)
{
	/*
	 * One deny rule per family that is not allowed: libseccomp compares one argument per
	 * rule, and the families in use are few (AF_MAX is below 64).
	 */
	for (int fam = 0; fam < 64; fam++) {
		bool ok = false;
		struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam, 0);

		for (size_t i = 0; i < n; i++)
			if (allowed[i] == fam)
				ok = true;
		if (!ok && sandbox_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &cmp) == -1)
			return -1;
	}
	{
		/* Anything at or above 64 (no such family today) is refused as well. */
		struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_GE, 64, 0);

		if (sandbox_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &cmp) == -1)
			return -1;
	}
	return 0;
}

/* Each syscall named fails with EPERM. */
static int
sandbox_eperm(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sandbox_rule(ctx, SCMP_ACT_ERRNO(EPERM), names[i], 0, NULL) == -1)
			return -1;
	return 0;
}

/*
 * clone with any namespace flag and ioctl TIOCSTI fail with EPERM; clone3 with ENOSYS (it
 * passes its flags in memory the filter cannot read: libc then uses clone).
 */
static int
sandbox_no_ns_no_tiocsti(scmp_filter_ctx ctx)
{
	struct scmp_arg_cmp cmp;

	for (unsigned bit = 0; bit < 32; bit++) {
		unsigned long flag = 1UL << bit;

		if ((SANDBOX_NS_FLAGS & flag) == 0)
			continue;
		cmp = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
		if (sandbox_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &cmp) == -1)
			return -1;
	}
	if (sandbox_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL) == -1)
		return -1;
	cmp = (struct scmp_arg_cmp)SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
	return sandbox_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &cmp);
}

/*
 * socketpair() only for SOCK_STREAM and SOCK_SEQPACKET (see the top of this file): every
 * other type fails with ESOCKTNOSUPPORT. The kernel reads the type as an int and keeps its
 * low four bits as the type (SOCK_TYPE_MASK), the rest being SOCK_NONBLOCK/SOCK_CLOEXEC or
 * EINVAL; so do these rules, whatever the upper half of the argument holds.
 */
#define SANDBOX_SOCK_TYPE_MASK 0xf
static int
sandbox_socketpair_types(scmp_filter_ctx ctx)
{
	for (unsigned t = 0; t <= SANDBOX_SOCK_TYPE_MASK; t++) {
		struct scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, SANDBOX_SOCK_TYPE_MASK, t);

		if (t == SOCK_STREAM || t == SOCK_SEQPACKET)
			continue;
		if (sandbox_rule(ctx, SCMP_ACT_ERRNO(ESOCKTNOSUPPORT), "socketpair", 1, &cmp) == -1)
			return -1;
	}
	return 0;
}

/*
 * No setuid or setgid bit on any file the workload makes or changes. A root run of
 * egress-run maps the workload's writes in the read-write binds to the invoker (root) on
 * the host (idmapped mounts): a file it created and then marked setuid would be a setuid
 * root program on the host, for any local user to run. Owning a file is all chmod asks,
 * so the bits are refused where they are set: chmod, fchmod, fchmodat by their mode;
 * open, openat and creat when they create (O_CREAT, O_TMPFILE) with them; mknod, mknodat,
 * mkdir, mkdirat by their mode. openat2 and fchmodat2 pass their mode in memory or are
 * newer than this filter: ENOSYS, and libc falls back to openat and fchmodat. Writing to
 * an existing setuid file clears the bits (no CAP_FSETID here). Every run gets the rule:
 * a build has no need of setuid files, and one rule for all runs cannot be forgotten.
 */
#ifndef SANDBOX_O_TMPFILE_BIT
#define SANDBOX_O_TMPFILE_BIT 020000000   /* __O_TMPFILE: O_TMPFILE without O_DIRECTORY */
#endif
#ifndef __NR_fchmodat2
#define SANDBOX_NR_FCHMODAT2 452          /* the same number on every Linux architecture */
#else
#define SANDBOX_NR_FCHMODAT2 __NR_fchmodat2
#endif
struct sandbox_mode_call {
	const char *name;
	unsigned mode_arg;               /* which argument holds the mode */
	int flags_arg;                   /* which holds open flags (-1: the mode always counts) */
};

static int
sandbox_no_setid(scmp_filter_ctx ctx)
{
	static const struct sandbox_mode_call calls[] = {
		{ "chmod", 1, -1 }, { "fchmod", 1, -1 }, { "fchmodat", 2, -1 },
		{ "mknod", 1, -1 }, { "mknodat", 2, -1 }, { "mkdir", 1, -1 }, { "mkdirat", 2, -1 },
		{ "creat", 1, -1 }, { "open", 2, 1 }, { "openat", 3, 2 },
	};
	static const scmp_datum_t bits[] = { S_ISUID, S_ISGID };
	static const scmp_datum_t creating[] = { O_CREAT, SANDBOX_O_TMPFILE_BIT };
	int r;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		const struct sandbox_mode_call *c = &calls[i];

		for (size_t b = 0; b < 2; b++) {
			struct scmp_arg_cmp cmp[2] = {
				{ c->mode_arg, SCMP_CMP_MASKED_EQ, bits[b], bits[b] },
			};

			if (c->flags_arg < 0) {
				if (sandbox_rule(ctx, SCMP_ACT_ERRNO(EPERM), c->name, 1, cmp) == -1)
					return -1;
				continue;
			}
			for (size_t f = 0; f < 2; f++) {
				cmp[1] = (struct scmp_arg_cmp){ (unsigned)c->flags_arg,
				    SCMP_CMP_MASKED_EQ, creating[f], creating[f] };
				if (sandbox_rule(ctx, SCMP_ACT_ERRNO(EPERM), c->name, 2, cmp) == -1)
					return -1;
			}
		}
	}
	if (sandbox_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, NULL) == -1)
		return -1;
	/* fchmodat2 by number: libseccomp older than the syscall does not know its name. */
	if ((r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(ENOSYS), SANDBOX_NR_FCHMODAT2, 0,
	    NULL)) != 0) {
		fprintf(stderr, "seccomp: rule for fchmodat2: %s\n", strerror(-r));
		return -1;
	}
	return 0;
}

int
sandbox_workload_filter(bool log)
{
	static const int inet[] = { AF_INET, AF_INET6 };
	static const char *const eperm[] = {
		"io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
		"process_vm_readv", "process_vm_writev", "pidfd_getfd", "unshare", "setns",
	};
	scmp_filter_ctx ctx = sandbox_new(log);
	struct scmp_arg_cmp cmp;

	if (ctx == NULL)
		return -1;
	if (sandbox_socket_families(ctx, inet, 2) == -1)
		goto fail;
	cmp = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0);
	if (sandbox_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socketpair", 1, &cmp) == -1 ||
	    sandbox_socketpair_types(ctx) == -1)
		goto fail;
	if (sandbox_eperm(ctx, eperm, sizeof(eperm) / sizeof(eperm[0])) == -1 ||
	    sandbox_no_ns_no_tiocsti(ctx) == -1 || sandbox_no_setid(ctx) == -1)
		goto fail;
	return sandbox_load(ctx);
fail:
	seccomp_release(ctx);
	return -1;
}

int
sandbox_relay_filter(void)
{
	static const int unixonly[] = { AF_UNIX };
	static const char *const eperm[] = {
		"execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
		"io_uring_setup", "bind", "listen", "unshare", "setns", "pidfd_getfd",
	};
	scmp_filter_ctx ctx = sandbox_new(false);

	if (ctx == NULL)
		return -1;
	if (sandbox_socket_families(ctx, unixonly, 1) == -1 ||
	    sandbox_eperm(ctx, eperm, sizeof(eperm) / sizeof(eperm[0])) == -1)
		goto fail;
	return sandbox_load(ctx);
fail:
	seccomp_release(ctx);
	return -1;
}

/*
 * The private egressd's filter, for `bwrap --seccomp`: what systemd's
 * RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 and SystemCallFilter=@system-service do
 * for the system egressd. Sockets only AF_UNIX, AF_INET, AF_INET6; what a network daemon
 * never needs fails with EPERM; other ABIs kill. execve stays: bwrap installs the filter
 * and then executes egressd.
 */
int
sandbox_daemon_filter_export(int fd)
{
	static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
	static const char *const eperm[] = {
		"io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
		"process_vm_readv", "process_vm_writev", "pidfd_getfd", "unshare", "setns",
		"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
		"fsconfig", "fsmount", "fspick", "mount_setattr", "swapon", "swapoff", "reboot",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
		"acct", "quotactl", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"sethostname", "setdomainname", "syslog", "open_by_handle_at",
		"name_to_handle_at", "fanotify_init", "lookup_dcookie", "vhangup",
	};
	scmp_filter_ctx ctx = sandbox_new(false);
	int r;

	if (ctx == NULL)
		return -1;
	if (sandbox_socket_families(ctx, fams, sizeof(fams) / sizeof(fams[0])) == -1)
		goto fail;
	if (sandbox_eperm(ctx, eperm, sizeof(eperm) / sizeof(eperm[0])) == -1 ||
	    sandbox_no_ns_no_tiocsti(ctx) == -1)
		goto fail;
	if ((r = seccomp_export_bpf(ctx, fd)) != 0) {
		fprintf(stderr, "seccomp: cannot export the filter: %s\n", strerror(-r));
		goto fail;
	}
	seccomp_release(ctx);
	return 0;
fail:
	seccomp_release(ctx);
	return -1;
}

int
sandbox_drop_caps(void)
{
	cap_t none = cap_init();
	int r = 0;

	if (none == NULL)
		return -1;
	/* The bounding set first: dropping from it needs CAP_SETPCAP, held until the end. */
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (CAP_IS_SUPPORTED(c) && cap_drop_bound(c) == -1 && errno != EINVAL &&
		    errno != EPERM) {
			fprintf(stderr, "capabilities: bounding set: %s\n", strerror(errno));
			r = -1;
		}
	}
	if (cap_reset_ambient() == -1 && errno != EINVAL) {
		fprintf(stderr, "capabilities: ambient set: %s\n", strerror(errno));
		r = -1;
	}
	if (cap_set_proc(none) == -1) {
		fprintf(stderr, "capabilities: %s\n", strerror(errno));
		r = -1;
	}
	cap_free(none);
	return r;
}

int
sandbox_no_new_privs(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		fprintf(stderr, "no_new_privs: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}
