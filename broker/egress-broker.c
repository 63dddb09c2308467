/*
 * egress-broker: the trusted host side of the fd-4 channel (SPEC "Sandbox path", fd 4).
 *
 * It holds one end of a connected AF_UNIX SOCK_SEQPACKET socketpair whose other end is the
 * workload's fd 4 (seqpacket, not datagram: a datagram socket in the sandbox could send to
 * any socket by its path, see sandbox/sandbox.c), and serves one request message at a
 * time, in order: it opens a
 * connection to the principal socket (pinned at start by an O_PATH descriptor, connected
 * through /proc/self/fd/N), performs the EGR1 native request, and passes the resulting
 * stream (never an upstream socket of its own) back on the reply socket the request
 * carried. It trusts the workload for nothing: every datagram is bounded and validated
 * (proto/fd4.c), every descriptor it did not ask for is closed, and each request's wait
 * ends at a deadline. It keeps no allowlist: egressd decides.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "sock.h"
#include "egress.h"
#include "fd4.h"
#include "fdpass.h"
#include "nativecli.h"

/* How long an answer may wait for room on a reply socket. */
#define BROKER_REPLY_WAIT_MS 1000
/* How often the broker checks that its parent is still there (besides PDEATHSIG). */
#define BROKER_PARENT_CHECK_MS 1000

static int pinned_fd = -1;              /* O_PATH descriptor of the principal socket */
static char pinned_path[64];            /* "/proc/self/fd/N" */

static void __attribute__((noreturn))
usage(const char *why)
{
	if (why != NULL)
		log_warnx("%s", why);
	fprintf(stderr, "usage: egress-broker --channel FD --egress PATH [--expect DEV:INO] "
	    "[--parent PID]\n");
	exit(2);
}

static void
broker_pin(const char *path, const char *expect)
{
	struct stat st;

	if ((pinned_fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		log_fatal(1, "%s", path);
	}
	if (fstat(pinned_fd, &st) == -1 || !S_ISSOCK(st.st_mode)) {
		log_fatalx(1, "%s is not a socket", path);
	}
	if (expect != NULL) {
		unsigned long long dev, ino;
		char *end;

		errno = 0;
		dev = strtoull(expect, &end, 10);
		if (end == expect || *end != ':' || errno != 0)
			usage("--expect takes DEV:INO");
		ino = strtoull(end + 1, &end, 10);
		if (*end != '\0' || errno != 0)
			usage("--expect takes DEV:INO");
		if ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino) {
			log_fatalx(1, "%s is %llu:%llu, not the expected %s: refused", path,
			    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			    expect);
		}
	}
	snprintf(pinned_path, sizeof(pinned_path), "/proc/self/fd/%d", pinned_fd);
}

/* Returns a stream to egressd for host:port, or -1 with *code set. */
static int
broker_open(const struct fd4_request *req, int *code)
{
	struct sockaddr_un sun;
	struct timeval tv;
	int fd, timeout = fd4_timeout_ms(req->timeout_ms), r;

	if (egress_sock_unix_addr(&sun, pinned_path) == -1 ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		*code = EGRESS_ERR_SHUTDOWN;
		return -1;
	}
	/* a blocking AF_UNIX connect waits for backlog room up to SO_SNDTIMEO */
	tv.tv_sec = timeout / 1000;
	tv.tv_usec = (timeout % 1000) * 1000;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	do
		r = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	while (r == -1 && errno == EINTR);
	if (r == -1) {
		*code = errno == EAGAIN || errno == ETIMEDOUT || errno == EINPROGRESS ?
		    EGRESS_ERR_HANDSHAKE_TIMEOUT : EGRESS_ERR_SHUTDOWN;
		log_warn("connect to the principal socket");
		close(fd);
		return -1;
	}
	memset(&tv, 0, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if ((*code = nativecli_handshake(fd, req->host, req->port, timeout)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
broker_answer(int reply, uint32_t id, int code, int stream)
{
	uint8_t out[EGRESS_FD4_REPLY];
	int fl;

	fd4_reply(id, (int32_t)code, out);
	/* the reply socket is the workload's: never let it hold the broker up */
	if ((fl = fcntl(reply, F_GETFL)) != -1)
		(void)fcntl(reply, F_SETFL, fl | O_NONBLOCK);
	if (egress_fdpass_send(reply, out, sizeof(out), code == 0 ? stream : -1,
	    BROKER_REPLY_WAIT_MS) == -1)
		log_warn("request %u: reply", (unsigned)id);
}

/*
 * Serves one message; returns 1 to go on, 0 when the channel's peer is gone (hup: the
 * poll said so; an empty read then is the end, not an empty message).
 */
static int
broker_serve_one(int chan, bool hup)
{
	uint8_t buf[EGRESS_FD4_REQUEST_MAX + 1];
	struct fd4_request req;
	struct stat st;
	int reply = -1, nfds, trunc, reason, stream, code;
	ssize_t n;

	n = egress_fdpass_recv(chan, buf, sizeof(buf), &reply, &nfds, &trunc, MSG_DONTWAIT);
	if (n == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		if (errno == ECONNREFUSED || errno == ENOTCONN || errno == ECONNRESET)
			return 0;
		log_warn("recv");
		return 0;
	}
	if (reply != -1 && (fstat(reply, &st) == -1 || !S_ISSOCK(st.st_mode))) {
		close(reply);
		reply = -1;
	}
	if (reply == -1) {
		/* nowhere to answer; an empty read after a hang-up is the end of the channel */
		if (n == 0 && nfds == 0)
			return hup ? 0 : 1;
		log_warnx("request without a reply socket: dropped");
		return 1;
	}
	reason = fd4_parse_request(buf, (size_t)n, &req);
	if (trunc || nfds != 1)
		reason = EGRESS_MALFORMED_REQUEST;
	if (reason != 0) {
		log_warnx("malformed request (%zd bytes, %d descriptors)", n, nfds);
		broker_answer(reply, req.has_id ? req.id : 0, egress_reason_code((enum egress_reason)reason), -1);
		close(reply);
		return 1;
	}
	stream = broker_open(&req, &code);
	broker_answer(reply, req.id, code, stream);
	if (stream != -1)
		close(stream);
	close(reply);
	return 1;
}

static void
broker_term(int sig)
{
	(void)sig;
	_exit(0);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "channel", required_argument, NULL, 'c' },
		{ "egress", required_argument, NULL, 'e' },
		{ "expect", required_argument, NULL, 'x' },
		{ "parent", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *egress = NULL, *expect = NULL;
	struct sigaction sa;
	struct pollfd pfd;
	long chan = -1, want_parent = -1;
	char *end;
	pid_t parent = getppid();
	int ch, type;
	socklen_t tl = sizeof(type);

	log_init("egress-broker", LOG_OUT_PREFIX, false, false);
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			errno = 0;
			chan = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 || chan < 0 ||
			    chan > INT_MAX)
				usage("--channel takes a descriptor number");
			break;
		case 'e': egress = optarg; break;
		case 'x': expect = optarg; break;
		case 'p':
			errno = 0;
			want_parent = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    (want_parent != 0 && want_parent < 2) || want_parent > INT_MAX)
				usage("--parent takes a process id, or 0 for a parent outside the "
				    "broker's pid namespace");
			break;
		case 'h': usage(NULL);
		default: usage(NULL);
		}
	}
	if (optind != argc || chan < 0 || egress == NULL)
		usage("--channel and --egress are required");
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || prctl(PR_SET_DUMPABLE, 0) == -1) {
		log_warn("prctl");
		return 1;
	}
	/*
	 * The parent died before PDEATHSIG was armed. Without --parent, "the parent" is
	 * whoever it was at the start of main, which is init already if it died before
	 * that: egress-run passes its pid (and armed PDEATHSIG itself before exec), or 0
	 * when the broker is in egress-run's pid namespace for the run (launcher/runguard.c),
	 * which egress-run is outside: getppid() is 0 then, alive or dead, so the check
	 * cannot fire and the namespace's end is what ends the broker.
	 */
	if (want_parent != -1)
		parent = (pid_t)want_parent;
	if (getppid() != parent)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = broker_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	if (getsockopt((int)chan, SOL_SOCKET, SO_TYPE, &type, &tl) == -1 ||
	    type != SOCK_SEQPACKET) {
		log_warnx("--channel %ld is not a seqpacket socket", chan);
		return 2;
	}
	(void)fcntl((int)chan, F_SETFD, FD_CLOEXEC);
	broker_pin(egress, expect);

	for (;;) {
		pfd.fd = (int)chan;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, BROKER_PARENT_CHECK_MS) == -1 && errno != EINTR) {
			log_warn("poll");
			return 1;
		}
		/*
		 * The broker goes with its parent (PDEATHSIG, and this check), and when every
		 * copy of the sandbox's end is closed (a hang-up on the seqpacket channel).
		 */
		if (getppid() != parent)
			return 0;
		if ((pfd.revents & (POLLERR | POLLNVAL)) != 0 && (pfd.revents & POLLIN) == 0)
			return 0;
		if ((pfd.revents & (POLLIN | POLLHUP)) != 0 &&
		    !broker_serve_one((int)chan, (pfd.revents & POLLHUP) != 0))
			return 0;
	}
}
