/*
 * egress-relay: inside the sandbox, a protocol-blind byte relay from loopback TCP to the
 * principal socket. It parses nothing, resolves nothing, holds no secret and no allowlist:
 * egressd alone decides. It pins the principal socket at start by an O_PATH descriptor and
 * connects through /proc/self/fd/N, so a path replaced or turned into a symlink later is
 * never followed; a start whose identity differs from --expect is refused.
 *
 * Out of descriptors (EMFILE/ENFILE on accept, or on the principal socket's connect) it stops
 * accepting for a second (common/accept.c, the same pause as egressd's) instead of spinning
 * on a listener that stays readable.
 *
 * With --transparent ADDR:PORT it also accepts the connections that the sandbox's nft rule
 * redirected there (docs/sandbox.md "Transparent connections"): for each it reads the
 * original destination (SO_ORIGINAL_DST, set by the kernel, not by the client) and sends
 * egressd an EGR1 transparent connect (verb 2) for that address and port before relaying.
 * Of egressd's side it reads only the 8-byte EGR1 reply; a refusal resets the client, which
 * sees its connect fail as it would elsewhere. The workload's bytes are never parsed.
 *
 * After its set-up (principal socket pinned, listeners bound, event base and signals
 * ready, capabilities dropped) it confines itself with an allow-list seccomp filter
 * (sandbox/allow.c): relay_allowed below is every call it makes from then on, found by
 * running the e2e tests with --seccomp-log; any other call kills it (SIGSYS) with the
 * call's name on stderr. The workload's own filter stays a deny list (sandbox.c): the
 * workload runs arbitrary programs, the relay runs only this loop.
 *
 * Trusts: nothing its clients send (it only copies bytes, with bounded buffers and a fixed
 * number of slots), and the principal socket as pinned at start.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common.h"
#include "log.h"
#include "native.h"
#include "sock.h"
#include "splice.h"
#include "sandbox.h"
#include "allow.h"

#define RELAY_DEFAULT_CONNS 256
#define RELAY_MAX_CONNS 65536
#define RELAY_DEFAULT_BUFFER (64 * 1024)
#define RELAY_MIN_BUFFER 4096
#define RELAY_MAX_BUFFER (16 * 1024 * 1024)

struct relay_conn {
	struct egress_sink out[2];             /* the sockets' write sides (common/splice.c):
	                                        * [0] client, [1] egress */
	struct event *rd[2];                   /* our reads: [0] client, [1] egress */
	bool client_eof, egress_eof;
	bool client_shut, egress_shut;
	uint8_t reply[EGRESS_NATIVE_REPLY];    /* transparent: egressd's EGR1 reply ... */
	size_t reply_need;                     /* ... bytes of it still to come, else 0 */
	struct relay_conn *next, *prev;
};

static struct event_base *base;
static struct egress_pin pinned;        /* the principal socket (common/pin.c) */
static size_t max_conns = RELAY_DEFAULT_CONNS, nconns;
static size_t buffer_max = RELAY_DEFAULT_BUFFER;
static struct relay_conn *conns;
static bool verbose;
static uint8_t *scratch;                /* one read at a time, buffer_max bytes */
static struct event *ev_accept, *ev_taccept;
static void relay_listen_onoff(bool on, void *arg);
static struct egress_accept_pause accept_pause = { .listen = relay_listen_onoff };

/*
 * Every call the relay makes once serving, found by running every e2e test that starts it
 * with --seccomp-log (and a 16 MiB --buffer run for mmap). The only new descriptors are
 * accepted connections (accept4) and AF_UNIX sockets to the pinned principal (socket with
 * that domain alone, connected through /proc/self/fd/N). No open, no bind or listen, no
 * exec, no other family: a compromised relay reaches what it already reached, no more.
 * sbx_allow_install adds what its SIGSYS handler and an exit need (write, the signal calls,
 * exit_group); write is also the --ready-fd line and the log.
 */
static const struct sbx_allow relay_allowed[] = {
	/*
	 * the loop: libevent's epoll back end (its signal pipe is read and written), and its
	 * clock: the vDSO here, the system call where the clock source has no vDSO path (some
	 * VMs). epoll_pwait: aarch64 has no epoll_wait.
	 */
	SBX_ALLOW("epoll_wait"), SBX_ALLOW("epoll_pwait"), SBX_ALLOW("epoll_ctl"),
	SBX_ALLOW("clock_gettime"),
	/* a connection: accepted, its principal side connected and made non-blocking */
	SBX_ALLOW("accept4"), SBX_ALLOW_ARG("socket", 0, AF_UNIX), SBX_ALLOW("connect"),
	SBX_ALLOW_ARG("fcntl", 1, F_SETFL),
	/* TCP_NODELAY, SO_LINGER on a reset; SO_ORIGINAL_DST and getsockname (transparent) */
	SBX_ALLOW("setsockopt"), SBX_ALLOW("getsockopt"), SBX_ALLOW("getsockname"),
	/* bytes: read, send (common/splice.c), writev (libevent's queued output), the end */
	SBX_ALLOW("read"), SBX_ALLOW("sendto"), SBX_ALLOW("writev"), SBX_ALLOW("shutdown"),
	SBX_ALLOW("close"),
	/* memory: malloc's heap, and its maps for large queues (read-write, never exec) */
	SBX_ALLOW("brk"), SBX_ALLOW_ARG("mmap", 2, PROT_READ | PROT_WRITE), SBX_ALLOW("munmap"),
};

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg)
		log_warnx("%s", msg);
	fprintf(stderr, "usage: egress-relay --listen ADDR:PORT --egress PATH [--expect DEV:INO]\n"
	    "                    [--transparent ADDR:PORT] [--max-conns N] [--buffer BYTES]\n"
	    "                    [--ready-fd FD] [--seccomp-log]\n");
	exit(2);
}

/*
 * Ends rc. A transparent connection that ends before egressd said yes (refused, egressd
 * gone, the client's first bytes undeliverable) is reset, whichever path got here first,
 * so that the client's connect-then-read fails like a refused connection, never as an
 * orderly end of data.
 */
static void
relay_free(struct relay_conn *rc)
{
	if (rc->reply_need > 0) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(rc->out[0].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	if (rc->prev)
		rc->prev->next = rc->next;
	else
		conns = rc->next;
	if (rc->next)
		rc->next->prev = rc->prev;
	for (int i = 0; i < 2; i++)
		if (rc->rd[i] != NULL)
			event_free(rc->rd[i]);
	for (int i = 0; i < 2; i++) {
		egress_sink_free(&rc->out[i]);
		close(rc->out[i].fd);
	}
	free(rc);
	nconns--;
}

static void
relay_maybe_done(struct relay_conn *rc)
{
	if (rc->client_shut && rc->egress_shut)
		relay_free(rc);
}

/* After EOF on one side, shut the other's write side once its output is delivered. */
static void
relay_propagate(struct relay_conn *rc)
{
	(void)egress_splice_shut(rc->client_eof, &rc->egress_shut, &rc->out[1]);
	(void)egress_splice_shut(rc->egress_eof, &rc->client_shut, &rc->out[0]);
	relay_maybe_done(rc);
}

/*
 * Transparent: egressd's EGR1 reply first, read here and never relayed. Then the bounded
 * copy (common/splice.c): one read of up to the bound, written straight to the other side
 * when nothing is queued there; the rest is queued, and a full queue pauses this side until
 * the other drains.
 */
static void
relay_read(evutil_socket_t fd, short what, void *arg)
{
	struct relay_conn *rc = arg;
	bool from_client = fd == rc->out[0].fd;
	struct egress_sink *dst = &rc->out[from_client ? 1 : 0];
	struct event *ev = rc->rd[from_client ? 0 : 1];
	size_t n;
	int32_t code = 0;

	(void)what;
	if (!from_client && rc->reply_need > 0) {
		/* egressd's answer to the transparent connect: ours, not the client's. */
		ssize_t r = read(fd, rc->reply + sizeof(rc->reply) - rc->reply_need,
		    rc->reply_need);

		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (r > 0)
			rc->reply_need -= (size_t)r;
		if (r <= 0 || (rc->reply_need == 0 &&
		    (native_reply_parse(rc->reply, &code) == -1 || code != 0))) {
			/* Refused: reset by relay_free (reply_need stays above 0 or it is set
			 * again below). */
			if (verbose && r > 0)
				/* 0: the reply was not EGR1 */
				log_warnx("transparent connect refused (%d)", (int)code);
			rc->reply_need = sizeof(rc->reply);
			relay_free(rc);
		}
		return;
	}
	switch (egress_splice_read(fd, ev, dst, scratch, buffer_max, &n)) {
	case EGRESS_SPLICE_MOVED:
	case EGRESS_SPLICE_AGAIN:
		break;
	case EGRESS_SPLICE_EOF:
		if (from_client)
			rc->client_eof = true;
		else
			rc->egress_eof = true;
		relay_propagate(rc);
		break;
	case EGRESS_SPLICE_READ_ERROR:
	case EGRESS_SPLICE_SEND_ERROR:
		relay_free(rc);
		break;
	}
}

/* A sink's write event: what waits there leaves; once half of the bound is left, the
 * side that feeds it reads again; once nothing is, a pending half-close goes on. */
static void
relay_write(evutil_socket_t fd, short what, void *arg)
{
	struct relay_conn *rc = arg;
	bool to_egress = fd == rc->out[1].fd;
	struct egress_sink *dst = &rc->out[to_egress ? 1 : 0];

	(void)what;
	switch (egress_sink_written(dst, buffer_max, rc->rd[to_egress ? 0 : 1],
	    to_egress ? rc->client_eof : rc->egress_eof)) {
	case EGRESS_SPLICE_SEND_ERROR:
		relay_free(rc);
		return;
	case EGRESS_SPLICE_MOVED:
		break;
	default:
		return;
	}
	relay_propagate(rc);
}

/* Connects to the pinned socket: never by its path, always through the pinned inode. */
static int
relay_connect_egress(void)
{
	return egress_pin_connect(&pinned);
}

static void
relay_listen_onoff(bool on, void *arg)
{
	(void)arg;
	if (on) {
		event_add(ev_accept, NULL);
		if (ev_taccept)
			event_add(ev_taccept, NULL);
		return;
	}
	event_del(ev_accept);
	if (ev_taccept)
		event_del(ev_taccept);
	log_warnx("out of descriptors, accepting again in %d ms", EGRESS_ACCEPT_PAUSE_MS);
}

/*
 * The EGR1 transparent connect for a redirected connection: its original destination as
 * the kernel's NAT recorded it. A connection that was not redirected (one made to the
 * transparent listener itself) has none and is refused: 0 bytes, -1.
 */
static int
relay_transparent_request(int fd, uint8_t out[EGRESS_NATIVE_REQUEST_MAX], size_t *outlen)
{
	struct sockaddr_in dst, self;
	socklen_t dl = sizeof(dst), sl = sizeof(self);
	char host[INET_ADDRSTRLEN];

	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &dl) == -1 ||
	    dst.sin_family != AF_INET ||
	    getsockname(fd, (struct sockaddr *)&self, &sl) == -1 ||
	    (dst.sin_addr.s_addr == self.sin_addr.s_addr && dst.sin_port == self.sin_port) ||
	    inet_ntop(AF_INET, &dst.sin_addr, host, sizeof(host)) == NULL)
		return -1;
	*outlen = native_request_build(EGRESS_NATIVE_TRANSPARENT, ntohs(dst.sin_port), host,
	    strlen(host), out);
	return *outlen == 0 ? -1 : 0;           /* port 0: nothing egressd would allow */
}

static void
relay_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	bool transparent = arg != NULL;

	(void)what;
	for (int i = 0; i < 64; i++) {
		int fd = egress_accept(lfd, &accept_pause), efd, one = 1;
		struct relay_conn *rc;
		uint8_t req[EGRESS_NATIVE_REQUEST_MAX];
		size_t reqlen = 0;

		if (fd == -1)
			return;         /* nothing queued, or paused (egress_accept) */
		if (nconns >= max_conns) {
			/* Over the slot limit: refused at once, never queued. */
			if (verbose)
				log_warnx("all %zu slots busy, refused", max_conns);
			close(fd);
			continue;
		}
		if (transparent && relay_transparent_request(fd, req, &reqlen) == -1) {
			if (verbose)
				log_warnx("transparent: no original destination, refused");
			close(fd);
			continue;
		}
		if ((efd = relay_connect_egress()) == -1) {
			int e = errno;

			close(fd);
			if (e == EMFILE || e == ENFILE) {
				/* accepted, but no descriptor for its other side: pause the same */
				egress_accept_pause(&accept_pause);
				return;
			}
			log_warnx("egress socket: %s", strerror(e));
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		rc = xcalloc(1, sizeof(*rc));
		egress_sink_init(&rc->out[0], fd, base, relay_write, rc);
		egress_sink_init(&rc->out[1], efd, base, relay_write, rc);
		rc->rd[0] = event_new(base, fd, EV_READ | EV_PERSIST, relay_read, rc);
		rc->rd[1] = event_new(base, efd, EV_READ | EV_PERSIST, relay_read, rc);
		/* The request first (the client's bytes follow it unread): queued, written once
		 * egressd's socket is writable. */
		if (rc->rd[0] == NULL || rc->rd[1] == NULL || (transparent &&
		    egress_sink_queue(&rc->out[1], req, reqlen, true) == -1)) {
			for (int k = 0; k < 2; k++)
				if (rc->rd[k] != NULL)
					event_free(rc->rd[k]);
			egress_sink_free(&rc->out[1]);
			close(fd);
			close(efd);
			free(rc);
			continue;
		}
		if (transparent)
			rc->reply_need = sizeof(rc->reply);
		event_add(rc->rd[0], NULL);
		event_add(rc->rd[1], NULL);
		rc->next = conns;
		if (conns)
			conns->prev = rc;
		conns = rc;
		nconns++;
	}
}

/* Loopback only: the relay never listens where anything but the sandbox could reach. */
static int
relay_listen(const char *spec)
{
	struct egress_hostport hp;
	struct sockaddr_storage ss;
	socklen_t sslen;
	uint8_t b[16];
	int family;
	char *end;
	unsigned long port;
	int fd, one = 1;

	if (egress_hostport_split(spec, strlen(spec), &hp) == -1)
		usage("--listen takes ADDR:PORT");
	port = strtoul(hp.port, &end, 10);
	if (hp.portlen == 0 || *end != '\0' || port > 65535)
		usage("--listen: bad port");
	if (egress_ip_parse(hp.host, hp.hostlen, &family, b) == -1)
		usage("--listen: bad address");
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		if (b[0] != 127)
			usage("--listen: only loopback addresses (127.0.0.0/8, ::1)");
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		memcpy(&sin->sin_addr, b, 4);
		sslen = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		static const uint8_t loop6[16] = { [15] = 1 };

		if (memcmp(b, loop6, 16) != 0)
			usage("--listen: only loopback addresses (127.0.0.0/8, ::1)");
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		memcpy(&sin6->sin6_addr, b, 16);
		sslen = sizeof(*sin6);
	}
	if ((fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, (struct sockaddr *)&ss, sslen) == -1 || listen(fd, 128) == -1) {
		log_fatal(1, "listen %s", spec);
	}
	return fd;
}

/* Pins the principal socket; refuses one that is not a socket or not the expected one. */
static void
relay_pin(const char *path, const char *expect)
{
	char err[256];
	int r = egress_pin_open(&pinned, path, expect, err, sizeof(err));

	if (r == -2)
		usage(err);
	if (r == -1) {
		log_fatalx(1, "%s", err);
	}
}

static void
relay_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	event_base_loopexit(base, NULL);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "transparent", required_argument, NULL, 't' },
		{ "egress", required_argument, NULL, 'e' },
		{ "expect", required_argument, NULL, 'x' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "seccomp-log", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen_spec = NULL, *egress = NULL, *expect = NULL, *tspec = NULL;
	struct event *ev_term, *ev_int;
	int ch, lfd, tfd = -1, ready_fd = -1;
	enum sbx_allow_mode filter_mode = SBX_ALLOW_KILL;
	char *end;

	log_init("egress-relay", LOG_OUT_PREFIX, false, false);
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'l': listen_spec = optarg; break;
		case 't': tspec = optarg; break;
		case 'e': egress = optarg; break;
		case 'x': expect = optarg; break;
		case 'm':
			max_conns = strtoul(optarg, &end, 10);
			if (*end != '\0' || max_conns < 1 || max_conns > RELAY_MAX_CONNS)
				usage("--max-conns takes 1 to 65536");
			break;
		case 'b':
			buffer_max = strtoul(optarg, &end, 10);
			if (*end != '\0' || buffer_max < RELAY_MIN_BUFFER ||
			    buffer_max > RELAY_MAX_BUFFER)
				usage("--buffer takes 4096 to 16777216 bytes");
			break;
		case 'r':
			ready_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || ready_fd < 0)
				usage("--ready-fd takes a descriptor");
			break;
		case 'v': verbose = true; break;
		case 'S': filter_mode = SBX_ALLOW_LOG; break;
		default: usage(NULL);
		}
	}
	if (listen_spec == NULL || egress == NULL || optind != argc)
		usage(NULL);
	/* Nobody may read this process's memory or attach to it. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		log_warn("PR_SET_DUMPABLE");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	scratch = xmalloc(buffer_max);
	relay_pin(egress, expect);
	lfd = relay_listen(listen_spec);
	if (tspec != NULL)
		tfd = relay_listen(tspec);
	if ((base = event_base_new()) == NULL) {
		log_warnx("libevent: no event base");
		return 1;
	}
	accept_pause.base = base;
	if (egress_accept_pause_init(&accept_pause) == -1) {
		log_warnx("libevent: no timer");
		return 1;
	}
	ev_accept = event_new(base, lfd, EV_READ | EV_PERSIST, relay_accept_cb, NULL);
	ev_term = evsignal_new(base, SIGTERM, relay_signal_cb, NULL);
	ev_int = evsignal_new(base, SIGINT, relay_signal_cb, NULL);
	event_add(ev_accept, NULL);
	if (tfd != -1) {
		/* arg non-NULL: this listener's connections are transparent ones */
		ev_taccept = event_new(base, tfd, EV_READ | EV_PERSIST, relay_accept_cb, base);
		event_add(ev_taccept, NULL);
	}
	event_add(ev_term, NULL);
	event_add(ev_int, NULL);
	/* It needs no privilege: whatever the sandbox's user namespace granted goes. */
	if (sandbox_drop_caps() == -1 ||
	    sbx_allow_install(relay_allowed, sizeof(relay_allowed) / sizeof(relay_allowed[0]),
	    filter_mode, STDERR_FILENO, "egress-relay") == -1)
		return 1;
#ifdef EGRESS_TEST_HOOKS
	/* Test-only (--enable-debug): a call the list lacks, to see the filter kill. */
	if (getenv("EGRESS_RELAY_TEST_FORBIDDEN") != NULL)
		(void)syscall(SYS_getpgid, 0);
#endif
	/* Listening now: tell whoever waits (egress-launch), then serve. */
	if (ready_fd >= 0) {
		if (write(ready_fd, "ready\n", 6) != 6) {
			log_warn("ready-fd");
			return 1;
		}
		close(ready_fd);
	}
	event_base_dispatch(base);
	while (conns != NULL)
		relay_free(conns);
	egress_accept_pause_clear(&accept_pause);
	event_free(ev_accept);
	if (ev_taccept)
		event_free(ev_taccept);
	if (tfd != -1)
		close(tfd);
	event_free(ev_term);
	event_free(ev_int);
	event_base_free(base);
	close(lfd);
	close(pinned.fd);
	return 0;
}
