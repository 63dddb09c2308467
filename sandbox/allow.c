/*
 * allow.c: allow-list seccomp filters (allow.h). The default action is SCMP_ACT_TRAP, so
 * every call the list lacks raises SIGSYS, caught here: the handler reports the call and
 * ends the process (or, in the debug mode, makes the call fail with ENOSYS).
 *
 * Trusts: the table the program passes (its own constant list) and libseccomp. The
 * handler trusts only the kernel's siginfo: it reads si_syscall, looks it up in a table
 * built before the filter was loaded, and calls only async-signal-safe functions (no
 * malloc, no stdio), every one of them allowed by the filter itself (sbx_allow_always), so
 * that reporting a refusal can never be refused in turn. A refusal inside the handler
 * (SIGSYS blocked there) makes the kernel reset SIGSYS to its default and kill: the
 * failure mode is still death.
 */
#include "config.h"              /* _GNU_SOURCE: REG_RAX in <sys/ucontext.h> */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <seccomp.h>

#include "allow.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer) || \
    __has_feature(leak_sanitizer)
#define SBX_ALLOW_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SBX_ALLOW_SANITIZER 1
#endif

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1           /* si_code of a seccomp trap (<asm-generic/siginfo.h>) */
#endif

/* Syscall numbers the name table covers: above every native call of x86_64 and aarch64. */
#define SBX_ALLOW_NR_MAX 1024

static const char *sbx_names[SBX_ALLOW_NR_MAX];
static bool sbx_names_built;
static volatile sig_atomic_t sbx_log;      /* SBX_ALLOW_LOG */
static int sbx_report_fd = 2;
static char sbx_prog[64] = "?";

/* What the handler and every exit need, whatever the program's list says. */
static const struct sbx_allow sbx_allow_always[] = {
	SBX_ALLOW("write"), SBX_ALLOW("rt_sigreturn"), SBX_ALLOW("rt_sigaction"),
	SBX_ALLOW("rt_sigprocmask"), SBX_ALLOW("getpid"), SBX_ALLOW("exit"),
	SBX_ALLOW("exit_group"),
	{ .name = "kill", .arg = 1, .nvals = 1, .vals = { SIGSYS } },
};

#ifdef SBX_ALLOW_SANITIZER
/*
 * Sanitizer builds only: what the ASan/UBSan/LSan runtimes call once a program is under
 * its filter, found by running, not guessed: check_allow (whose children end with exit(),
 * so LeakSanitizer's exit-time check runs under the filter) and the relay's e2e tests in
 * a CC=clang --enable-asan build with SBX_ALLOW_LOG and the kernel's log of traps, one
 * round per missing call until none was left.
 */
static const struct sbx_allow sbx_allow_sanitizer[] = {
	/* ASan: its allocator (shadow, quarantine) and the stacks it unpoisons before a
	 * noreturn call such as exit() */
	SBX_ALLOW("mmap"), SBX_ALLOW("munmap"), SBX_ALLOW("mprotect"), SBX_ALLOW("madvise"),
	SBX_ALLOW("sigaltstack"), SBX_ALLOW("gettid"),
	/*
	 * LeakSanitizer's StopTheWorld at exit: PR_SET_PTRACER and PR_GET_DUMPABLE, a tracer
	 * task (clone) that checks its parent is alive (getppid), lists /proc/self/task
	 * (open, getdents, lseek, read, close), attaches and waits for every thread (ptrace,
	 * wait4) while the caller yields and waits on a futex. openat and getdents64 are
	 * those calls on aarch64 (skipped on x86_64, where the runtime used open/getdents).
	 */
	SBX_ALLOW("prctl"), SBX_ALLOW("clone"), SBX_ALLOW("getppid"), SBX_ALLOW("open"),
	SBX_ALLOW("openat"), SBX_ALLOW("getdents"), SBX_ALLOW("getdents64"), SBX_ALLOW("lseek"),
	SBX_ALLOW("read"), SBX_ALLOW("close"), SBX_ALLOW("ptrace"), SBX_ALLOW("wait4"),
	SBX_ALLOW("sched_yield"), SBX_ALLOW("futex"),
};
#endif

/* The names of the native architecture's calls; once (it allocates). */
static void
sbx_names_build(void)
{
	if (sbx_names_built)
		return;
	for (int nr = 0; nr < SBX_ALLOW_NR_MAX; nr++)
		/* libseccomp allocates each; they live as long as the process */
		sbx_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	sbx_names_built = true;
}

const char *
sbx_allow_name(int nr)
{
	sbx_names_build();
	if (nr < 0 || nr >= SBX_ALLOW_NR_MAX)
		return NULL;
	return sbx_names[nr];
}

/* Appends s to b at *off, bounded by cap. Async-signal-safe. */
static void
sbx_put(char *b, size_t *off, size_t cap, const char *s)
{
	while (*s != '\0' && *off < cap)
		b[(*off)++] = *s++;
}

static void
sbx_put_num(char *b, size_t *off, size_t cap, long v)
{
	char d[24];
	size_t n = 0;
	unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;

	do
		d[n++] = (char)('0' + (int)(u % 10));
	while ((u /= 10) != 0 && n < sizeof(d));
	if (v < 0 && *off < cap)
		b[(*off)++] = '-';
	while (n > 0 && *off < cap)
		b[(*off)++] = d[--n];
}

/* Where the handler knows the return register in the ucontext: the debug mode works. */
#if defined(__x86_64__) || defined(__aarch64__)
#define SBX_ALLOW_CAN_LOG 1
#else
#define SBX_ALLOW_CAN_LOG 0
#endif

/* Makes the interrupted call return -ENOSYS. */
static void
sbx_set_enosys(void *ctx)
{
#if defined(__x86_64__)
	((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
#elif defined(__aarch64__)
	((ucontext_t *)ctx)->uc_mcontext.regs[0] = (unsigned long long)-ENOSYS;
#else
	(void)ctx;
#endif
}

static void
sbx_sigsys(int sig, siginfo_t *si, void *ctx)
{
	char line[160];
	size_t off = 0;
	int saved = errno, nr = si->si_code == SYS_SECCOMP ? si->si_syscall : -1;
	const char *name = nr >= 0 && nr < SBX_ALLOW_NR_MAX ? sbx_names[nr] : NULL;
	/*
	 * mode is LOG only where SBX_ALLOW_CAN_LOG (sbx_allow_install); a SIGSYS that is
	 * not a trap (kill -SYS) has no syscall to report and ends the process as it would.
	 */
	bool log = sbx_log && si->si_code == SYS_SECCOMP;
	struct sigaction dfl;
	sigset_t set;

	sbx_put(line, &off, sizeof(line), sbx_prog);
	sbx_put(line, &off, sizeof(line), ": seccomp syscall=");
	sbx_put(line, &off, sizeof(line), name != NULL ? name : "?");
	sbx_put(line, &off, sizeof(line), " nr=");
	sbx_put_num(line, &off, sizeof(line), nr);
	sbx_put(line, &off, sizeof(line), log ? " action=enosys\n" : " action=kill\n");
	(void)!write(sbx_report_fd, line, off);
	if (log) {
		sbx_set_enosys(ctx);
		errno = saved;
		return;
	}
	/* Death by SIGSYS, as the kernel's own seccomp kill. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	(void)sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	(void)sigprocmask(SIG_UNBLOCK, &set, NULL);
	(void)kill(getpid(), sig);
	syscall(SYS_exit_group, 128 + SIGSYS);
}

/* Adds the rules of one entry; a name unknown here is skipped. */
static int
sbx_add(scmp_filter_ctx ctx, const struct sbx_allow *e, bool verbose)
{
	int nr = seccomp_syscall_resolve_name(e->name), r = 0;
	uint32_t action = e->err != 0 ? SCMP_ACT_ERRNO((uint32_t)e->err) : SCMP_ACT_ALLOW;
	uint64_t mask = e->mask != 0 ? e->mask : 0xffffffffu;

	if (nr == __NR_SCMP_ERROR || nr < 0) {
		/* not a call of this architecture (or newer than libseccomp) */
		if (verbose)
			fprintf(stderr, "%s: seccomp: no syscall %s here, skipped\n", sbx_prog,
			    e->name);
		return 0;
	}
	if (e->nvals > SBX_ALLOW_VALS || e->arg > 5) {
		fprintf(stderr, "%s: seccomp: bad rule for %s\n", sbx_prog, e->name);
		return -1;
	}
	if (e->nvals == 0)
		r = seccomp_rule_add(ctx, action, nr, 0);
	for (size_t i = 0; i < e->nvals && r == 0; i++) {
		struct scmp_arg_cmp cmp = { e->arg, SCMP_CMP_MASKED_EQ, mask, e->vals[i] & mask };

		r = seccomp_rule_add_array(ctx, action, nr, 1, &cmp);
	}
	/* -EEXIST: the same rule twice (a program's list and sbx_allow_always) */
	if (r != 0 && r != -EEXIST) {
		fprintf(stderr, "%s: seccomp: rule for %s: %s\n", sbx_prog, e->name, strerror(-r));
		return -1;
	}
	return 0;
}

static int
sbx_add_all(scmp_filter_ctx ctx, const struct sbx_allow *t, size_t n, bool verbose)
{
	for (size_t i = 0; i < n; i++)
		if (sbx_add(ctx, &t[i], verbose) == -1)
			return -1;
	return 0;
}

int
sbx_allow_install(const struct sbx_allow *t, size_t n, enum sbx_allow_mode mode,
    int report_fd, const char *prog)
{
	struct sigaction sa;
	sigset_t set;
	scmp_filter_ctx ctx;
	int r;

	snprintf(sbx_prog, sizeof(sbx_prog), "%s", prog != NULL ? prog : "?");
	if (mode == SBX_ALLOW_LOG && !SBX_ALLOW_CAN_LOG) {
		fprintf(stderr, "%s: seccomp: no debug mode on this architecture: refused calls "
		    "kill\n", sbx_prog);
		mode = SBX_ALLOW_KILL;
	}
	sbx_names_build();
	sbx_report_fd = report_fd;
	sbx_log = mode == SBX_ALLOW_LOG;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sbx_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	if (sigaction(SIGSYS, &sa, NULL) == -1 || sigprocmask(SIG_UNBLOCK, &set, NULL) == -1) {
		fprintf(stderr, "%s: seccomp: SIGSYS handler: %s\n", sbx_prog, strerror(errno));
		return -1;
	}

	if ((ctx = seccomp_init(SCMP_ACT_TRAP)) == NULL) {
		fprintf(stderr, "%s: seccomp: cannot initialise a filter\n", sbx_prog);
		return -1;
	}
	/*
	 * Another ABI's numbers mean other calls: no handler, no name, death. TSYNC: every
	 * thread of the process gets the filter, not only the caller.
	 */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) != 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) != 0) {
		fprintf(stderr, "%s: seccomp: cannot set filter attributes\n", sbx_prog);
		goto fail;
	}
	/*
	 * Debugging: the kernel also logs every trap (audit, dmesg), for the runs where the
	 * report descriptor goes nowhere anyone reads.
	 */
	if (mode == SBX_ALLOW_LOG && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1) != 0)
		fprintf(stderr, "%s: seccomp: no kernel log of traps here\n", sbx_prog);
	if (sbx_add_all(ctx, sbx_allow_always,
	    sizeof(sbx_allow_always) / sizeof(sbx_allow_always[0]), false) == -1 ||
	    sbx_add_all(ctx, t, n, mode == SBX_ALLOW_LOG) == -1)
		goto fail;
#ifdef SBX_ALLOW_SANITIZER
	if (sbx_add_all(ctx, sbx_allow_sanitizer,
	    sizeof(sbx_allow_sanitizer) / sizeof(sbx_allow_sanitizer[0]), false) == -1)
		goto fail;
#endif
	if ((r = seccomp_load(ctx)) != 0) {
		fprintf(stderr, "%s: seccomp: cannot load the filter: %s\n", sbx_prog, strerror(-r));
		goto fail;
	}
	seccomp_release(ctx);
	return 0;
fail:
	seccomp_release(ctx);
	return -1;
}
