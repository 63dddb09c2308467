/*
 * allow.h: allow-list seccomp filters ("default deny"), in the manner of OpenSSH's
 * sandbox-seccomp-filter.c, for the programs that parse or relay bytes of others and need
 * little: egress-relay, and egressd's engine. A program lists the system calls it needs,
 * each either allowed outright or only for some values of one argument (socket() only for
 * AF_UNIX, fcntl() only for some commands); every other call traps (SIGSYS).
 *
 * The trap is caught by a SIGSYS handler that writes one line to the report descriptor:
 *
 *     PROG: seccomp syscall=NAME nr=NNN action=kill|enosys
 *
 * (NAME from a table the install built with libseccomp beforehand, "?" for a number it
 * does not know), then
 *   SBX_ALLOW_KILL: ends the whole process by SIGSYS, the signal the kernel's own seccomp
 *     kill uses: SIGSYS back to its default action, unblocked, kill(getpid(), SIGSYS); if
 *     that ever returns, exit_group(128 + SIGSYS). A parent sees WIFSIGNALED and
 *     WTERMSIG == SIGSYS, and the name on the report descriptor.
 *   SBX_ALLOW_LOG (debugging, like SANDBOX_SECCOMP_FILTER_DEBUG): the refused call returns
 *     -ENOSYS and the program goes on, so that one run lists every call a list lacks.
 *     x86_64 and aarch64 only (the return register in the ucontext); elsewhere it is KILL.
 *
 * Whatever the table says, the install also allows what the handler and an exit need:
 * write (the report), rt_sigreturn, rt_sigaction, rt_sigprocmask, getpid, kill with
 * SIGSYS, exit, exit_group. A syscall of another ABI (i386 or x32 numbers on x86_64) kills
 * the process outright (no handler: its number means another call). The filter sets
 * no_new_privs.
 *
 * Sanitizer builds (ASan, UBSan, LSan: __SANITIZE_ADDRESS__, or __has_feature under
 * clang) also allow what the sanitizer runtimes call under the filter, found by running
 * the unit tests and the relay's e2e tests under --enable-asan: see sbx_allow_sanitizer
 * in allow.c. Those builds are for tests, never for production.
 */
#ifndef EGRESS_SANDBOX_ALLOW_H
#define EGRESS_SANDBOX_ALLOW_H

#include <stddef.h>
#include <stdint.h>

#define SBX_ALLOW_VALS 8        /* values one argument rule may list */

/*
 * One system call of the list. With nvals 0, the call is allowed (or fails with err)
 * whatever its arguments; else only when argument arg, masked with mask, equals one of
 * vals (one rule per value: libseccomp ORs them). mask 0 means the low 32 bits: the
 * kernel reads an int argument (a socket domain, an fcntl command) from those alone, so a
 * caller cannot slip past a rule with garbage in the upper half, nor is one refused for it.
 * err 0: allowed; else the call fails with that errno instead of trapping (OpenSSH's
 * SC_DENY: for calls a library makes and copes with failing). A name this architecture
 * does not have (open on aarch64, a call newer than libseccomp) is skipped, not fatal.
 */
struct sbx_allow {
	const char *name;
	int err;
	unsigned arg;
	uint64_t mask;
	size_t nvals;
	uint64_t vals[SBX_ALLOW_VALS];
};

#define SBX_ALLOW_NARGS(...) (sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))
/* Allowed whatever its arguments. */
#define SBX_ALLOW(n) { .name = (n) }
/* Allowed when argument a (its low 32 bits) is one of the values. */
#define SBX_ALLOW_ARG(n, a, ...) { .name = (n), .arg = (a), \
	.nvals = SBX_ALLOW_NARGS(__VA_ARGS__), .vals = { __VA_ARGS__ } }
/* Fails with errno e instead of trapping. */
#define SBX_ALLOW_ERR(n, e) { .name = (n), .err = (e) }

enum sbx_allow_mode {
	SBX_ALLOW_KILL,         /* a refused call ends the process (SIGSYS) */
	SBX_ALLOW_LOG,          /* debugging: a refused call is reported, returns ENOSYS */
};

/*
 * Loads the filter of the n entries of t on every thread of the process (TSYNC) and
 * what they start later, after installing the SIGSYS handler (process-wide). report_fd receives the handler's lines
 * (stderr, or a socket to a parent); prog prefixes them (truncated to 63 bytes). Returns
 * 0, or -1 with a message on stderr (no filter loaded then).
 */
int sbx_allow_install(const struct sbx_allow *t, size_t n, enum sbx_allow_mode mode,
    int report_fd, const char *prog);

/*
 * The name of the native syscall nr, or NULL. For a parent that learned a number from a
 * child. The first call builds the table (not thread-safe, allocates); the install builds
 * it too, so that the handler only reads it.
 */
const char *sbx_allow_name(int nr);

#endif
