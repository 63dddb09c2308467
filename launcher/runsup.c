/*
 * runsup.c: the processes around the workload: the private egressd (in its own bwrap,
 * seccomp filter, waited for until its control socket answers), the lease from the
 * system egressd, egress-broker (fd 4), the requests on the connection that holds the
 * run's principal, and their stop at the end. Trusts egressd's replies only as
 * proto/control.c decodes them (bounded lines); a child's pid only from bwrap's info fd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "log.h"
#include "run.h"
#include "control.h"
#include "ctlclient.h"
#include "sandbox.h"

/*
 * Stops the private egressd (it writes the close receipts of what was still open, then
 * exits) and ends the lease; the summary is read after this.
 */
void
runsup_stop(void)
{
	if (run.conn != -1) {
		/*
		 * The sandbox is gone, so egressd is about to see its tunnels end: give it a
		 * moment to write their closes (and count them) before the summary is taken
		 * and the principal ends (which would close what is left as shutdown).
		 */
		for (int tries = 0; tries < 40; tries++) {
			json_decref(run.summary);
			if ((run.summary = runsup_request_summary()) == NULL ||
			    json_integer_value(json_object_get(run.summary, "open")) == 0)
				break;
			usleep(50000);
		}
	}
	if (run.egressd_pid > 0) {
		int status;

		/*
		 * bwrap does not forward signals: egressd, the child of the pid namespace's
		 * init, gets SIGTERM, and only while bwrap has not reaped them (no stale pid).
		 */
		if (waitpid(run.egressd_pid, &status, WNOHANG) == 0 &&
		    (run.egressd_child <= 0 || !runsup_signal_children(run.egressd_child, SIGTERM)))
			kill(run.egressd_pid, SIGTERM);
		for (int i = 0; i < 100 && waitpid(run.egressd_pid, &status, WNOHANG) == 0; i++)
			usleep(50000);
		if (waitpid(run.egressd_pid, &status, WNOHANG) == 0) {
			kill(run.egressd_pid, SIGKILL);     /* bwrap; egressd dies with it */
			waitpid(run.egressd_pid, &status, 0);
		}
		run.egressd_pid = -1;
		run.egressd_child = -1;
	}
	/*
	 * egressd has written its shutdown checkpoint (or is dead): its signing key goes, so
	 * that nobody can sign a forged tail of this run's receipts later.
	 */
	if (run.signkey[0] != '\0') {
		if (unlink(run.signkey) == -1 && errno != ENOENT)
			log_warn("%s", run.signkey);
		run.signkey[0] = '\0';
	}
	if (run.conn != -1) {
		close(run.conn);
		run.conn = -1;
	}
	if (run.broker_pid > 0) {
		int status;

		kill(run.broker_pid, SIGTERM);
		waitpid(run.broker_pid, &status, 0);
		run.broker_pid = -1;
	}
	if (run.fd4_chan != -1) {
		close(run.fd4_chan);
		run.fd4_chan = -1;
	}
}

/*
 * fd 4: a connected AF_UNIX seqpacket socketpair (messages like datagrams, but a seqpacket
 * socket cannot address another socket by its path: see sandbox/sandbox.c); egress-broker
 * holds one end on the host and answers each request with a stream from egressd's native
 * connector; the sandbox gets the other end as descriptor 4.
 *
 * The broker dies with egress-run: the child arms PR_SET_PDEATHSIG before exec (it
 * survives the exec of egress-broker, which is not set-id) and then checks that its parent
 * is still this process, since one that died before the signal was armed sends none. The
 * broker gets that pid (--parent) to check it again after exec; reading getppid() only
 * there would take init for the parent if egress-run died in between. In the run's pid
 * namespace (runguard.c) the parent's pid is 0 as the child sees it (runguard_ppid), dead
 * or alive: there the check cannot fire, and the namespace's end with egress-run is what
 * ends the child.
 */
void
runsup_start_broker(void)
{
	char broker[PATH_MAX + 16], chan[16], ppid[24];
	pid_t self = runguard_ppid();
	int bp[2];

	run_need_program("egress-broker", broker, sizeof(broker));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, bp) == -1)
		run_setup_failed("socketpair: %s", strerror(errno));
	bp[0] = run_high_fd(bp[0]);
	bp[1] = run_high_fd(bp[1]);
	if ((run.broker_pid = fork()) == -1)
		run_setup_failed("fork: %s", strerror(errno));
	if (run.broker_pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != self)
			_exit(RUN_EXIT_SETUP);
		if (fcntl(bp[0], F_SETFD, 0) == -1)
			_exit(RUN_EXIT_SETUP);
		snprintf(chan, sizeof(chan), "%d", bp[0]);
		snprintf(ppid, sizeof(ppid), "%ld", (long)self);
		execl(broker, "egress-broker", "--channel", chan, "--parent", ppid, "--egress",
		    run.sock, "--expect", run.devino, (char *)NULL);
		_exit(RUN_EXIT_SETUP);
	}
	close(bp[0]);
	run.fd4_chan = bp[1];
}

/*
 * bwrap and the options both of its sandboxes share (the private egressd's and the
 * workload's): new user, pid, ipc, uts and cgroup namespaces (and the network's when
 * asked), no nested user namespaces, gone with egress-run, its own session, no capability.
 */
void
runsup_bwrap_base(struct arglist *a, bool unshare_net)
{
	static char bwrap[PATH_MAX];

	if (bwrap[0] == '\0' && !run_find_in_path("bwrap", bwrap, sizeof(bwrap)))
		run_setup_failed("bubblewrap (bwrap) not found: install the Debian package "
		    "bubblewrap; egress-run never runs a command without the sandbox");
	arglist_add(a, bwrap);
	arglist_add(a, "--unshare-user");
	arglist_add(a, "--unshare-pid");
	arglist_add(a, "--unshare-ipc");
	arglist_add(a, "--unshare-uts");
	if (unshare_net)
		arglist_add(a, "--unshare-net");
	arglist_add(a, "--unshare-cgroup-try");
	arglist_add(a, "--disable-userns");
	arglist_add(a, "--die-with-parent");
	arglist_add(a, "--new-session");
	arglist_add(a, "--cap-drop");
	arglist_add(a, "ALL");
}

/*
 * The private egressd's confinement, like the system one's under dist/egressd.service:
 * bwrap with the whole file system read-only but the runtime folder and the receipt
 * file, homes empty, a private /dev, new user, pid, ipc, uts and cgroup namespaces (the network
 * is the host's: egressd's job is to reach it), every capability dropped, no_new_privs,
 * and a seccomp filter (sandbox_daemon_filter_export: sockets only AF_UNIX/INET/INET6, no
 * mounts, modules, ptrace, namespaces...). Paths are the same inside and out, so the
 * sockets egressd creates are where the sandbox and egress-run look for them. --info-fd
 * tells the pid namespace's init, whose child (egressd) gets SIGTERM at the end (bwrap
 * forwards no signal); if egress-run dies, --die-with-parent takes the namespace down.
 */
static void
runsup_egressd_argv(struct arglist *a, const char *egressd, const char *conf, const char *rfile,
    int *filter_fd, int info[2])
{
	static char bin[PATH_MAX], hosts[PATH_MAX], fdarg[16], infoarg[16];
	struct stat st;

	runsup_bwrap_base(a, false);    /* the host's network: reaching it is egressd's job */
	if (realpath(egressd, bin) == NULL)
		run_setup_failed("%s: %s", egressd, strerror(errno));
	if ((*filter_fd = memfd_create("egressd-seccomp", MFD_CLOEXEC)) == -1)
		run_setup_failed("memfd_create: %s", strerror(errno));
	if (sandbox_daemon_filter_export(*filter_fd) == -1 ||
	    lseek(*filter_fd, 0, SEEK_SET) == -1)
		run_setup_failed("cannot build the private egressd's seccomp filter");
	if (pipe2(info, O_CLOEXEC) == -1)
		run_setup_failed("pipe: %s", strerror(errno));
	snprintf(fdarg, sizeof(fdarg), "%d", *filter_fd);
	snprintf(infoarg, sizeof(infoarg), "%d", info[1]);
	arglist_add(a, "--ro-bind");
	arglist_add(a, "/");
	arglist_add(a, "/");
	arglist_add(a, "--dev");
	arglist_add(a, "/dev");
	/* ProtectHome: homes are empty (what egressd needs from one is bound below). */
	if (stat("/home", &st) == 0 && S_ISDIR(st.st_mode)) {
		arglist_add(a, "--tmpfs");
		arglist_add(a, "/home");
	}
	if (stat("/root", &st) == 0 && S_ISDIR(st.st_mode)) {
		arglist_add(a, "--tmpfs");
		arglist_add(a, "/root");
	}
	/*
	 * No tmpfs on /tmp: egressd, its hosts file, a build tree may live there; /tmp is
	 * read-only like the rest. After the homes, since any of these may be in one.
	 */
	arglist_add(a, "--ro-bind");
	arglist_add(a, bin);
	arglist_add(a, bin);
	if (runopt.hosts != NULL) {
		if (realpath(runopt.hosts, hosts) == NULL)
			run_setup_failed("--hosts %s: %s", runopt.hosts, strerror(errno));
		arglist_add(a, "--ro-bind");
		arglist_add(a, hosts);
		arglist_add(a, hosts);
	}
	arglist_add(a, "--bind");
	arglist_add(a, run.rtdir);
	arglist_add(a, run.rtdir);
	arglist_add(a, "--bind");          /* the receipt file alone, not its folder */
	arglist_add(a, rfile);
	arglist_add(a, rfile);
	arglist_add(a, "--seccomp");
	arglist_add(a, fdarg);
	arglist_add(a, "--info-fd");
	arglist_add(a, infoarg);
	arglist_add(a, "--");
	arglist_add(a, bin);
	arglist_add(a, "-c");
	arglist_add(a, conf);
}

/* The "child-pid" bwrap writes on --info-fd (egressd's pid), or -1. */
static pid_t
runsup_info_child_pid(int fd)
{
	char buf[1024];
	size_t len = 0;
	pid_t pid = -1;
	json_t *o;

	for (int waited = 0; waited < RUN_READY_MS && len < sizeof(buf) - 1; waited += 20) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t got;

		if (poll(&pfd, 1, 20) == 0)
			continue;
		if ((got = read(fd, buf + len, sizeof(buf) - 1 - len)) == -1 && errno == EINTR)
			continue;
		if (got <= 0)
			break;          /* bwrap closes it once written, or failed */
		len += (size_t)got;
	}
	buf[len] = '\0';
	if ((o = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL)) != NULL) {
		if (json_is_integer(json_object_get(o, "child-pid")))
			pid = (pid_t)json_integer_value(json_object_get(o, "child-pid"));
		json_decref(o);
	}
	return pid;
}

/*
 * One request on run.conn and its one-line reply (egressd's control protocol,
 * proto/control.h), or NULL when egressd does not answer within wait_ms of silence.
 * Replies are bounded (a summary is at most ~90 KB; CTLPROTO_REPLY_MAX is refused).
 */
static json_t *
runsup_request(json_t *req, int wait_ms)
{
	size_t len;
	char *line = ctlproto_encode(req, &len), *reply = NULL, err[160];
	ssize_t n;
	json_t *o = NULL;

	if (line != NULL && ctlclient_send(run.conn, line, len) == 0 &&
	    (n = ctlclient_recv(run.conn, &reply, CTLPROTO_REPLY_MAX, wait_ms)) != -1)
		o = ctlproto_decode_reply(reply, (size_t)n, err, sizeof(err));
	free(line);
	free(reply);
	return o;
}

/* The private egressd ended before it served: its log, then 125. */
static void __attribute__((noreturn))
runsup_private_died(void)
{
	char logpath[PATH_MAX + 16], line[512];
	FILE *fp;

	run.egressd_pid = -1;
	snprintf(logpath, sizeof(logpath), "%s/egressd.log", run.rtdir);
	if ((fp = fopen(logpath, "re")) != NULL) {
		while (fgets(line, sizeof(line), fp))
			fprintf(stderr, "egressd: %s", run_shown(line));
		fclose(fp);
	}
	run_setup_failed("the private egressd did not start");
}

/*
 * A private egressd for this run, in a 0700 runtime folder, stopped at the end. Its
 * principal is added over its control socket as a lease of that connection, so that
 * egressd keeps this run's summary (control.c: summary) and the principal ends with
 * egress-run.
 */
void
runsup_start_private(void)
{
	struct runpolicy_paths p;
	char err[512];
	struct arglist bwrap_argv = { 0 };
	struct stat st;
	int status, filter_fd, info[2];
	pid_t parent;
	const char *refusal;
	json_t *o, *req;

	runpolicy_private(&p);

	runsup_egressd_argv(&bwrap_argv, p.egressd, p.conf, run.receipts, &filter_fd, info);
	parent = runguard_ppid();
	if ((run.egressd_pid = fork()) == -1)
		run_setup_failed("fork: %s", strerror(errno));
	if (run.egressd_pid == 0) {
		char logpath[PATH_MAX + 16];
		int fd;

		/* Its log goes to the runtime folder; shown only if it fails to start. */
		snprintf(logpath, sizeof(logpath), "%s/egressd.log", run.rtdir);
		if ((fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) != -1)
			dup2(fd, STDERR_FILENO);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		/* Nothing of the terminal: the workload's input is not egressd's to read. */
		if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
		    dup2(fd, STDIN_FILENO) == -1)
			_exit(RUN_EXIT_SETUP);
		setsid();
		/* Until bwrap's --die-with-parent takes over: egressd ends with egress-run. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 || getppid() != parent)
			_exit(RUN_EXIT_SETUP);
		runguard_child_proc();
		/* bwrap inherits the filter and the info pipe, nothing else of ours. */
		if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == -1 ||
		    fcntl(filter_fd, F_SETFD, 0) == -1 || fcntl(info[1], F_SETFD, 0) == -1)
			_exit(RUN_EXIT_SETUP);
		execv(bwrap_argv.list[0], bwrap_argv.list);
		log_warn("%s", bwrap_argv.list[0]);
		_exit(RUN_EXIT_SETUP);
	}
	arglist_free(&bwrap_argv);
	close(filter_fd);
	close(info[1]);
	run.egressd_child = runguard_host_pid(run.egressd_pid, runsup_info_child_pid(info[0]));
	close(info[0]);
	/* Serving once its control socket answers (egressd creates it after the receipts). */
	for (int waited = 0; run.conn == -1; waited += 20) {
		if (waitpid(run.egressd_pid, &status, WNOHANG) == run.egressd_pid)
			runsup_private_died();
		if (waited >= RUN_READY_MS)
			run_setup_failed("the private egressd did not create its control socket "
			    "in time");
		if (stat(p.ctl, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (run.conn = ctlclient_connect(p.ctl)) != -1)
			break;
		usleep(20000);
	}
	req = ctlproto_request(CTLPROTO_PRINCIPAL_ADD);
	json_object_set_new(req, "name", json_string(run.principal));
	json_object_set_new(req, "policy", json_string(p.pol));
	json_object_set_new(req, "lease", json_true());
	o = runsup_request(req, RUN_READY_MS);
	if (o == NULL) {
		if (waitpid(run.egressd_pid, &status, WNOHANG) == run.egressd_pid)
			runsup_private_died();
		run_setup_failed("the private egressd did not answer on its control socket");
	}
	if (!ctlproto_reply_ok(o, &refusal)) {
		snprintf(err, sizeof(err), "%s", refusal ?: "?");
		json_decref(o);
		run_setup_failed("the private egressd refused the run's principal: %s",
		    run_shown(err));
	}
	json_decref(o);
	if (stat(run.sock, &st) == -1 || !S_ISSOCK(st.st_mode))
		run_setup_failed("the private egressd's principal socket %s: %s", run.sock,
		    strerror(errno));
	snprintf(run.devino, sizeof(run.devino), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
}

/* A lease from the system egressd: the principal lives as long as run.conn. */
void
runsup_take_lease(void)
{
	const char *path = runopt.lease_sock ? runopt.lease_sock : RUN_LEASE_SOCK;
	const char *e;
	json_t *o, *req;

	if ((run.conn = ctlclient_connect(path)) == -1)
		run_setup_failed("the system egressd does not answer on %s (%s): a named policy "
		    "needs it", path, strerror(errno));
	req = ctlproto_request(CTLPROTO_LEASE);
	json_object_set_new(req, "policy", json_string(runopt.policy));
	if ((o = runsup_request(req, RUN_READY_MS)) == NULL)
		run_setup_failed("no (readable) lease reply from the system egressd");
	if (!ctlproto_reply_ok(o, &e)) {
		char why[512];

		snprintf(why, sizeof(why), "%s", e ? e : "?");
		json_decref(o);
		run_setup_failed("lease refused: %s", run_shown(why));
	}
	snprintf(run.principal, sizeof(run.principal), "%s",
	    json_string_value(json_object_get(o, "name")) ?: "");
	snprintf(run.sock, sizeof(run.sock), "%s",
	    json_string_value(json_object_get(o, "socket")) ?: "");
	snprintf(run.devino, sizeof(run.devino), "%s",
	    json_string_value(json_object_get(o, "dev_ino")) ?: "");
	json_decref(o);
	if (runopt.receipts != NULL)
		snprintf(run.receipts, sizeof(run.receipts), "%s", runopt.receipts);
}

/*
 * The principal's summary from egressd ({"verb":"summary"} on run.conn): its
 * destinations added up and the connections still open, as egressd counted them for
 * this run. NULL on failure.
 */
json_t *
runsup_request_summary(void)
{
	json_t *o = runsup_request(ctlproto_request(CTLPROTO_SUMMARY), 2000);
	const char *e;

	if (o != NULL && !ctlproto_reply_ok(o, &e)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* Signals the children of a sandbox's init (bwrap's pid 1); false when it found none. */
bool
runsup_signal_children(pid_t init_pid, int sig)
{
	pid_t kids[64];
	int n = run_children(init_pid, kids, sizeof(kids) / sizeof(kids[0]));

	for (int i = 0; i < n; i++)
		kill(kids[i], sig);
	return n > 0;
}
