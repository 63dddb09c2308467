/*
 * dnsstub.h: the sandbox's stub resolver (dnsstub.c), started by egress-launch.
 */
#ifndef EGRESS_DNSSTUB_H
#define EGRESS_DNSSTUB_H

#define DNSSTUB_ADDR "127.0.0.53"    /* what the sandbox's /etc/resolv.conf names */
#define DNSSTUB_PORT 53

/*
 * Binds UDP and TCP on DNSSTUB_ADDR:DNSSTUB_PORT and pins the principal socket (egress,
 * expect as egress-relay's --egress and --expect) in the caller, so that every failure is
 * the caller's to report; then forks the stub, which drops every capability, becomes
 * non-dumpable, sets no_new_privs, installs sandbox_relay_filter and serves until the
 * caller's process is gone (PR_SET_PDEATHSIG). The caller keeps no descriptor of it.
 * Returns 0, or -1 with a message in err.
 */
int dnsstub_start(const char *egress, const char *expect, char *err, size_t errlen);

#endif
