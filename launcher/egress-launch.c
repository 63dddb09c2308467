/*
 * egress-launch: runs inside the sandbox, before the workload. It starts egress-relay
 * and waits until it listens, sets the proxy environment, drops every capability, sets
 * no_new_privs, installs the workload's seccomp filter and execs the workload. It holds
 * no secret: its argv and environment carry only paths and loopback addresses.
 *
 * The relay is started before the filter, so the filter is the workload's alone: the
 * relay runs under its own (sandbox_relay_filter).
 *
 * Unless --no-dns, it also starts the stub resolver (dnsstub.c) on 127.0.0.53:53 before it
 * drops its capabilities (binding port 53 needs CAP_NET_BIND_SERVICE, which egress-run
 * gives the sandbox for this alone); the stub drops its own after binding.
 *
 * With --transparent ADDR:PORT the relay also listens there for the connections that the
 * sandbox's nftables rule redirects (egress-run sets the rule up before bwrap starts;
 * netcfg.c); ALL_PROXY and GIT_SSH_COMMAND are not set then (no client needs SOCKS, and
 * plain ssh works), and a user's GIT_SSH_COMMAND (a key, a known_hosts file) is kept.
 *
 * The user's own variables (egress-run's --setenv and --env) come on --env-fd, a
 * descriptor egress-run filled, so that a caller's value (a token passed with --env) is in
 * no argv: bwrap's command line is readable by every user of the host. They are set first
 * and the proxy environment after, so that none of the user's values replaces one of ours.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "sock.h"
#include "dnsstub.h"
#include "sandbox.h"

#define LAUNCH_READY_MS 5000         /* the relay must listen within this */
#define LAUNCH_DEFAULT_LISTEN "127.0.0.1:3128"
#define LAUNCH_EXIT_USAGE 2          /* the SPEC's usage or configuration error */
#define LAUNCH_EXIT_SETUP 125        /* a step before the command failed (as env(1)) */
#define LAUNCH_ENV_MAX (1024 * 1024) /* --env-fd: the user's variables, NAME=VALUE\0 each */

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg)
		log_warnx("%s", msg);
	fprintf(stderr, "usage: egress-launch --egress PATH [--listen ADDR:PORT] [--expect DEV:INO]\n"
	    "                     [--transparent ADDR:PORT] [--seccomp-log] [--status-fd FD]\n"
	    "                     [--env-fd FD] [--no-dns]\n"
	    "                     -- CMD [ARG ...]\n");
	exit(LAUNCH_EXIT_USAGE);
}

static void __attribute__((noreturn))
fail(const char *what)
{
	log_fatalx(LAUNCH_EXIT_SETUP, "%s", what);
}

/* egress-relay lives next to egress-launch, else in PATH. */
static void
launch_relay_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		char *slash;

		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			snprintf(out, len, "%s/egress-relay", self);
			if (access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, len, "egress-relay");
}

static void
launch_relay(const char *egress, const char *listen_spec, const char *transparent,
    const char *expect)
{
	char relay[PATH_MAX + 16], fdarg[16];
	int p[2];
	pid_t pid;

	launch_relay_path(relay, sizeof(relay));
	if (pipe2(p, O_CLOEXEC) == -1)
		fail("pipe failed");
	/* Keep the pipe clear of 0-4: fd 4 is the broker's channel, closed in the relay. */
	for (int i = 0; i < 2; i++) {
		int hi = fcntl(p[i], F_DUPFD_CLOEXEC, 10);

		if (hi == -1)
			fail("fcntl failed");
		close(p[i]);
		p[i] = hi;
	}
	if ((pid = fork()) == -1)
		fail("fork failed");
	if (pid == 0) {
		const char *argv[14];
		int i = 0;

		/* The relay dies with the launcher's process, which becomes the workload. */
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		close(p[0]);
		if (fcntl(p[1], F_SETFD, 0) == -1)
			_exit(LAUNCH_EXIT_SETUP);
		snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
		argv[i++] = relay;
		argv[i++] = "--listen";
		argv[i++] = listen_spec;
		argv[i++] = "--egress";
		argv[i++] = egress;
		if (transparent != NULL) {
			argv[i++] = "--transparent";
			argv[i++] = transparent;
		}
		if (expect != NULL) {
			argv[i++] = "--expect";
			argv[i++] = expect;
		}
		argv[i++] = "--ready-fd";
		argv[i++] = fdarg;
		argv[i] = NULL;
		/* Keep the relay off the workload's terminal input and off fd 4. */
		close(4);
		if (strchr(relay, '/'))
			execv(relay, (char *const *)argv);
		else
			execvp(relay, (char *const *)argv);
		log_warn("cannot run %s", relay);
		_exit(LAUNCH_EXIT_SETUP);
	}
	close(p[1]);
	{
		struct pollfd pfd = { p[0], POLLIN, 0 };
		char buf[8];
		ssize_t n = 0;

		if (poll(&pfd, 1, LAUNCH_READY_MS) == 1)
			n = read(p[0], buf, sizeof(buf));
		close(p[0]);
		if (n != 6 || memcmp(buf, "ready\n", 6) != 0) {
			int status;

			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail("egress-relay did not start listening");
		}
	}
}

static void
launch_setenv(const char *name, const char *value)
{
	if (setenv(name, value, 1) == -1)
		fail("setenv failed");
}

/*
 * The proxy environment of the SPEC: every common client finds the relay. With
 * transparent connections no client needs ALL_PROXY (names resolve, every TCP connection
 * reaches egressd), and its socks5h:// scheme makes clients without SOCKS support fail at
 * start (Debian 12's httpx): it is left out then, and any value of the user's removed.
 */
static void
launch_environment(const char *listen_spec, bool fd4, bool transparent)
{
	char http[128], socks[128], *java, *host;
	const char *old, *port;
	struct egress_hostport hp;
	char hostbuf[64];

	/* The URLs keep the address as written, brackets and all. */
	snprintf(hostbuf, sizeof(hostbuf), "%s", listen_spec);
	if (egress_hostport_split(hostbuf, strlen(hostbuf), &hp) == -1)
		fail("bad --listen");
	hostbuf[hp.port - 1 - hostbuf] = '\0';
	host = hostbuf;
	port = hp.port;
	snprintf(http, sizeof(http), "http://%s:%s", host, port);
	snprintf(socks, sizeof(socks), "socks5h://%s:%s", host, port);
	launch_setenv("HTTP_PROXY", http);
	launch_setenv("HTTPS_PROXY", http);
	launch_setenv("http_proxy", http);
	launch_setenv("https_proxy", http);
	if (transparent) {
		unsetenv("ALL_PROXY");
		unsetenv("all_proxy");
	} else {
		launch_setenv("ALL_PROXY", socks);
		launch_setenv("all_proxy", socks);
	}
	launch_setenv("NO_PROXY", "localhost,127.0.0.1,::1");
	launch_setenv("no_proxy", "localhost,127.0.0.1,::1");
	launch_setenv("npm_config_proxy", http);
	launch_setenv("npm_config_https_proxy", http);
	launch_setenv("NODE_USE_ENV_PROXY", "1");
	/* The user's JAVA_TOOL_OPTIONS is kept; the proxy properties come after it (the
	 * last of a repeated -D wins). */
	old = getenv("JAVA_TOOL_OPTIONS");
	if (old != NULL && old[0] == '\0')
		old = NULL;
	xasprintf(&java, "%s%s-Dhttp.proxyHost=%s -Dhttp.proxyPort=%s "
	    "-Dhttps.proxyHost=%s -Dhttps.proxyPort=%s", old ? old : "", old ? " " : "", host,
	    port, host, port);
	launch_setenv("JAVA_TOOL_OPTIONS", java);
	free(java);
	launch_setenv("EGRESS_RELAY", listen_spec);
	if (fd4)
		launch_setenv("EGRESS_FD", "4");
	else
		unsetenv("EGRESS_FD");
	/* Plain ssh reaches the host transparently; without that, through the connector. */
	if (!transparent)
		launch_setenv("GIT_SSH_COMMAND", "ssh -o ProxyCommand='egress-connect %h %p'");
}

/*
 * The user's variables from --env-fd: NAME=VALUE records, each ended by a NUL, at most
 * LAUNCH_ENV_MAX bytes in all. Set in order (a later one of the same name wins); EGRESS_*
 * are ours alone and dropped (the rest of ours is set over them by launch_environment).
 */
static void
launch_user_env(int fd)
{
	char *buf = xmalloc(LAUNCH_ENV_MAX + 1), *p, *end, *next;
	size_t len = 0;
	ssize_t n;

	while (len < LAUNCH_ENV_MAX + 1) {
		if ((n = read(fd, buf + len, LAUNCH_ENV_MAX + 1 - len)) == -1 && errno == EINTR)
			continue;
		if (n == -1)
			fail("cannot read --env-fd");
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > LAUNCH_ENV_MAX)
		fail("--env-fd: more than 1 MiB of variables");
	if (len > 0 && buf[len - 1] != '\0')
		fail("--env-fd: a variable without its ending NUL");
	for (p = buf, end = buf + len; p < end; p = next) {
		char *eq = strchr(p, '=');

		next = p + strlen(p) + 1;
		if (eq == NULL || !egress_env_name_ok(p, (size_t)(eq - p)))
			fail("--env-fd: a record that is not NAME=VALUE");
		*eq = '\0';
		if (strncmp(p, "EGRESS_", 7) != 0)
			launch_setenv(p, eq + 1);
	}
	free(buf);
}

/* fd 4 counts when it is an AF_UNIX seqpacket socket (the broker's channel). */
static bool
launch_has_fd4(void)
{
	struct stat st;
	int type;
	socklen_t len = sizeof(type);

	if (fstat(4, &st) == -1 || !S_ISSOCK(st.st_mode))
		return false;
	if (getsockopt(4, SOL_SOCKET, SO_TYPE, &type, &len) == -1)
		return false;
	return type == SOCK_SEQPACKET;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "egress", required_argument, NULL, 'e' },
		{ "listen", required_argument, NULL, 'l' },
		{ "expect", required_argument, NULL, 'x' },
		{ "seccomp-log", no_argument, NULL, 'L' },
		{ "status-fd", required_argument, NULL, 's' },
		{ "env-fd", required_argument, NULL, 'E' },
		{ "no-dns", no_argument, NULL, 'D' },
		{ "transparent", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *egress = NULL, *listen_spec = LAUNCH_DEFAULT_LISTEN, *expect = NULL;
	const char *transparent = NULL;
	bool seccomp_log = false, fd4, dns = true;
	int ch, status_fd = -1, env_fd = -1;
	char *end;

	log_init("egress-launch", LOG_OUT_PREFIX, false, false);
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'e': egress = optarg; break;
		case 'l':
			/* ADDR:PORT; egress-relay checks the rest (loopback, a port). */
			if (strrchr(optarg, ':') == NULL || strlen(optarg) >= 64)
				usage("--listen takes ADDR:PORT");
			listen_spec = optarg;
			break;
		case 't':
			if (strrchr(optarg, ':') == NULL || strlen(optarg) >= 64)
				usage("--transparent takes ADDR:PORT");
			transparent = optarg;
			break;
		case 'x': expect = optarg; break;
		case 'L': seccomp_log = true; break;
		case 'D': dns = false; break;
		case 's':
			status_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || status_fd < 3 || status_fd == 4)
				usage("--status-fd takes a descriptor above 2, not 4");
			/* Never inherited by the relay or the workload. */
			if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) == -1)
				usage("--status-fd is not open");
			break;
		case 'E':
			env_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || env_fd < 3 || env_fd == 4)
				usage("--env-fd takes a descriptor above 2, not 4");
			if (fcntl(env_fd, F_SETFD, FD_CLOEXEC) == -1)
				usage("--env-fd is not open");
			break;
		default: usage(NULL);
		}
	}
	if (egress == NULL || optind >= argc)
		usage(NULL);
	if (sandbox_arch() == NULL)
		fail("no seccomp rule set for this architecture: refusing to run the workload");
	fd4 = launch_has_fd4();
	launch_relay(egress, listen_spec, transparent, expect);
	if (dns) {
		char err[512];

		if (dnsstub_start(egress, expect, err, sizeof(err)) == -1)
			fail(err);
	}
	/* After the relay: none of the user's variables (LD_PRELOAD...) reaches it. */
	if (env_fd != -1)
		launch_user_env(env_fd);
	launch_environment(listen_spec, fd4, transparent != NULL);
	if (sandbox_drop_caps() == -1)
		fail("could not drop capabilities");
	if (sandbox_no_new_privs() == -1)
		fail("could not set no_new_privs");
	if (sandbox_workload_filter(seccomp_log) == -1)
		fail("could not install the workload filter");
	/* Set up: what fails from here on is the command's (126, 127), not the sandbox's. */
	if (status_fd != -1 && write(status_fd, "ok\n", 3) != 3)
		fail("could not report on --status-fd");
	execvp(argv[optind], argv + optind);
	log_warn("%s", argv[optind]);
	return errno == ENOENT ? 127 : 126;
}
