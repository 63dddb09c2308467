/*
 * sandbox.h: what egress-launch and egress-relay need to confine themselves and the
 * workload: seccomp filters (libseccomp), capabilities (libcap), no_new_privs.
 */
#ifndef EGRESS_SANDBOX_H
#define EGRESS_SANDBOX_H

#include <stdbool.h>

/*
 * The workload filter of the SPEC: socket() only for AF_INET and AF_INET6 (others fail
 * with EAFNOSUPPORT), socketpair() only for AF_UNIX (EAFNOSUPPORT) and only of types
 * SOCK_STREAM and SOCK_SEQPACKET (ESOCKTNOSUPPORT: a datagram socket could send to any
 * socket by its path), io_uring_setup, ptrace,
 * process_vm_readv/writev, pidfd_getfd, unshare, setns, clone with namespace flags and
 * ioctl TIOCSTI fail with EPERM, clone3 with ENOSYS (its flags cannot be inspected; libc
 * falls back to clone), and a syscall of any ABI but the native one kills the process.
 * log: a violation that would kill is logged by the kernel instead (debugging only).
 * Returns 0, or -1 with a message on stderr (also on an architecture it has no rules for).
 */
int sandbox_workload_filter(bool log);

/*
 * A deny list for egress-launch's stub resolver (launcher/dnsstub.c): new sockets only
 * AF_UNIX, no exec, no ptrace, no binding. egress-relay has an allow list (allow.h).
 */
int sandbox_relay_filter(void);

/*
 * The private egressd's filter (egress-run runs it under bwrap with it): sockets only
 * AF_UNIX, AF_INET, AF_INET6 (others EAFNOSUPPORT); mounts, modules, kexec, bpf, perf,
 * ptrace, namespaces, keyrings, io_uring, clock and host name changes, swap, reboot, ioctl
 * TIOCSTI fail with EPERM, clone3 with ENOSYS; other ABIs kill. Written to fd as BPF
 * (seccomp_export_bpf), not loaded. Returns 0, or -1 with a message on stderr.
 */
int sandbox_daemon_filter_export(int fd);

/* Drops every capability, the bounding set and the ambient set (libcap). */
int sandbox_drop_caps(void);

/* PR_SET_NO_NEW_PRIVS: nothing exec'd later gains privileges. */
int sandbox_no_new_privs(void);

/* The native architecture's name, or NULL when no rule set exists for it. */
const char *sandbox_arch(void);

#endif
