/*
 * userns.c: how egress-run, run as root, keeps root's identity out of the workload: a user
 * namespace of its own that maps the workload to an unprivileged uid, and the sandbox's
 * bind sources prepared by root in a private mount namespace (idmapped where the workload
 * writes). See docs/sandbox.md, "Root runs".
 */
#ifndef EGRESS_USERNS_H
#define EGRESS_USERNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define USERNS_NOBODY 65534          /* the default workload uid and gid of a root run */
#define USERNS_STAGE_DIR "/tmp"      /* where the staged sources appear to bwrap */
#define USERNS_STAGE_MAX 8200        /* cwd, --rw, --ro (4096 each), bindir, socket */

struct userns_stage {
	char *src;                   /* the host path, absolute */
	char dst[48];                /* USERNS_STAGE_DIR/egress-run.N */
	bool idmap;                  /* seen through the map: root's files are the workload's */
};

int userns_target(const char *user, uid_t *uid, gid_t *gid, char *err, size_t errlen);
int userns_create(uid_t uid, gid_t gid, char *err, size_t errlen);
/* low_port > 0: in U, a network namespace for the sandbox first (userns_netns). */
void userns_exec(int userns_fd, const struct userns_stage *st, size_t n, int low_port,
    unsigned transparent_port, char *const argv[]) __attribute__((noreturn));
/*
 * A network namespace for the sandbox, made before bwrap (which then runs without
 * --unshare-net): lo up, ports from low_port on bindable without a capability.
 * own_userns: in a user namespace of its own first (a run that is not root's).
 * transparent_port != 0: transparent connections redirected there (netcfg_transparent).
 * Returns 0, or -1 with a message in err.
 */
int userns_netns(bool own_userns, int low_port, unsigned transparent_port, char *err,
    size_t errlen);

#endif
