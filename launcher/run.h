/*
 * run.h: egress-run's modules and the state they share. egress-run is one program in
 * files by role: run.c (main, the helpers every part uses), runopt.c (the options and
 * their validation), runpolicy.c (the run's policy and the private egressd's
 * configuration), runstate.c (the runtime folder, the receipts path and their overlap
 * with what the sandbox binds), runsup.c (egressd, the lease, egress-broker: started,
 * asked, stopped), runbox.c (the workload's bubblewrap sandbox and its signals), runsum.c
 * (the end-of-run summary), runguard.c (a pid namespace for the run's children, so that
 * none outlives egress-run).
 *
 * Trusted host code; what each part trusts is said at the top of its file.
 */
#ifndef EGRESS_RUN_H
#define EGRESS_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "common.h"
#include "policy.h"

#define RUN_EXIT_SETUP 125
#define RUN_MAX_LIST 4096            /* each of --allow, --rw, --ro, --resolver, --permit-range */
#define RUN_READY_MS 10000           /* the private egressd must be serving within this */
#define RUN_SANDBOX_SOCK "/run/egress.sock"
#define RUN_SANDBOX_BIN "/run/egress-bin"
#define RUN_SANDBOX_HOME "/run/egress-home"  /* HOME inside: a fresh tmpfs, or --home DIR */
#define RUN_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define RUN_LISTEN "127.0.0.1:3128"
#define RUN_LEASE_SOCK "/run/egress/lease.sock"
#define RUN_SUMMARY_MAX 256          /* destinations listed in the summary */

struct runopt_list {
	const char **v;              /* grown as options come, at most RUN_MAX_LIST */
	size_t n, cap;
};

/* The command line, as runopt_parse leaves it (every value checked). */
struct runopt {
	const char *policy;
	const char *learn;           /* --learn FILE: the draft policy goes there */
	struct runopt_list allow, rw, ro, resolvers, permits;
	struct runopt_list setenvs, envs;   /* --setenv NAME=VALUE, --env NAME */
	struct runopt_list vars;     /* both in their order: NAME=VALUE, or NAME for --env */
	const char *home;            /* --home DIR */
	const char *receipts;
	const char *hosts;
	const char *lease_sock;
	const char *user;            /* --user: a root run's workload uid */
	bool no_fd4;
	bool no_dns;                 /* no stub resolver, no generated /etc/resolv.conf */
	bool quiet;
	char **cmd;
};
extern struct runopt runopt;

/* What the run set up and must take down (run.c defines it; -1: nothing there). */
struct run_state {
	char bindir[PATH_MAX];
	char rtdir[PATH_MAX];        /* the private runtime folder, 0700 */
	char principal[80];
	char sock[PATH_MAX];
	char devino[64];
	char receipts[PATH_MAX];
	/*
	 * A private egressd's checkpoint key: the private half in the runtime folder
	 * (deleted once egressd has stopped), the public half appended to pubkey.
	 */
	char signkey[PATH_MAX + 16];
	char pubkey[PATH_MAX + 8];   /* RECEIPTS.pub; empty for a lease */
	pid_t egressd_pid, bwrap_pid, broker_pid;
	pid_t egressd_child;         /* egressd itself, under egressd_pid (its bwrap) */
	int fd4_chan;                /* the sandbox's end of the broker's channel */
	/*
	 * The connection to egressd that holds the run's principal: the lease connection to
	 * the system egressd, or the private egressd's control socket (the principal is added
	 * as a lease of it). The summary is asked for on it.
	 */
	int conn;
	bool lease;                  /* the principal is a lease of the system egressd */
	int learn_fd;                /* --learn FILE, opened before the workload starts */
	json_t *summary;             /* egressd's summary of the run's principal */
};
extern struct run_state run;

/* run.c */
void run_setup_failed(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
void run_cleanup(void);
void run_need_program(const char *name, char *out, size_t len);
bool run_find_in_path(const char *name, char *out, size_t len);
void run_write_file(const char *path, const char *data, size_t len, mode_t mode);
uint8_t *run_read_all(const char *path, size_t *len);
/* At most 4 values shown in one message (run.c). */
const char *run_shown(const char *v);
int run_high_fd(int fd);
int run_children(pid_t pid, pid_t *out, int max);

/* runopt.c */
void runopt_parse(int argc, char **argv);
void runopt_usage(const char *msg) __attribute__((noreturn));
bool runopt_conf_safe_path(const char *s);
char *runopt_allow_line(const char *spec, const char **why);
/* The opener of include lines in the run's policy (templates, paths beside --policy). */
extern const struct policy_includer runopt_includer;
int runopt_permit_text(const char *v, char out[EGRESS_ADDRSTRLEN + 4], const char **why);
int runopt_resolver_text(const char *v, char out[EGRESS_ADDRSTRLEN + 8], const char **why);

/* runpolicy.c: the private egressd's files, written into the runtime folder */
struct runpolicy_paths {
	char egressd[PATH_MAX + 16];     /* the program */
	char conf[PATH_MAX + 16];        /* its configuration */
	char pol[PATH_MAX + 16];         /* the run's sealed policy */
	char ctl[PATH_MAX + 32];         /* its control socket, once it serves */
};
void runpolicy_private(struct runpolicy_paths *p);

/* runstate.c */
extern const char runstate_receipts_hint[];
void runstate_binds(void);
void runstate_refuse_bound(const char *what, const char *path, const char *where,
    const char *hint);
void runstate_make_rtdir(void);
void runstate_default_receipts(void);

/* runsup.c */
void runsup_stop(void);
void runsup_start_broker(void);
void runsup_bwrap_base(struct arglist *a, bool unshare_net);
void runsup_start_private(void);
void runsup_take_lease(void);
json_t *runsup_request_summary(void);
bool runsup_signal_children(pid_t init_pid, int sig);

/* runguard.c: the run's children in a pid namespace that ends with egress-run */
void runguard_start(void);
void runguard_say_unguarded(void);
/* What a child's getppid() says while egress-run lives (0 in the run's namespace). */
pid_t runguard_ppid(void);
void runguard_child_proc(void);      /* in a child, before it executes bwrap */
pid_t runguard_host_pid(pid_t outer, pid_t ns_pid);

/* runbox.c */
void runbox_workload_userns(void);
void runbox_probe_namespaces(void);
int runbox_run(void);

/* runsum.c */
void runsum_print(const struct run_state *rs);
void runsum_learn_open(void);
void runsum_learn_announce(void);
int runsum_learn_write(const struct run_state *rs);

#endif
