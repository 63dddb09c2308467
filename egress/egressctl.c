/*
 * egressctl: the operator's tool. Speaks egressd's control protocol (one JSON object per
 * line, see control.c) and prints what a person reads. The receipt verbs come later.
 *
 * Exit status: 0 success, 1 egressd refused or failed, 2 usage.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"

#define CTL_DEFAULT_SOCK "/run/egress/control.sock"
#define CTL_REPLY_MAX (1 << 20)

static const char *progname = "egressctl";

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "%s: %s\n", progname, msg);
	fprintf(stderr,
	    "usage: egressctl [-s SOCK] status\n"
	    "       egressctl [-s SOCK] principal add NAME --policy FILE [--owner UID:GID]\n"
	    "                 [--peer-uid UID] [--lease]\n"
	    "       egressctl [-s SOCK] principal remove NAME\n"
	    "       egressctl [-s SOCK] principal list\n"
	    "       egressctl [-s SOCK] lease POLICY-NAME\n");
	exit(2);
}

static int
ctl_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		usage("socket path too long");
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "%s: %s: %s (is egressd running?)\n", progname, path,
		    strerror(errno));
		exit(1);
	}
	return fd;
}

/* Sends one request and reads one reply line; exits on failure. */
static json_t *
ctl_call(int fd, json_t *req)
{
	char *s = json_dumps(req, JSON_COMPACT), buf[4096];
	size_t len = 0, cap = 0;
	char *reply = NULL;
	json_error_t jerr;
	json_t *o;

	json_decref(req);
	if (s == NULL || write(fd, s, strlen(s)) != (ssize_t)strlen(s) || write(fd, "\n", 1) != 1) {
		fprintf(stderr, "%s: sending: %s\n", progname, strerror(errno));
		exit(1);
	}
	free(s);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		char *nl;

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "%s: egressd closed the connection\n", progname);
			exit(1);
		}
		if (len + (size_t)n + 1 > cap) {
			cap = (len + (size_t)n + 1) * 2;
			if (cap > CTL_REPLY_MAX) {
				fprintf(stderr, "%s: reply too long\n", progname);
				exit(1);
			}
			reply = xreallocarray(reply, cap, 1);
		}
		memcpy(reply + len, buf, (size_t)n);
		len += (size_t)n;
		reply[len] = '\0';
		if ((nl = memchr(reply, '\n', len)) != NULL) {
			len = (size_t)(nl - reply);
			break;
		}
	}
	o = json_loadb(reply, len, 0, &jerr);
	free(reply);
	if (o == NULL) {
		fprintf(stderr, "%s: unreadable reply: %s\n", progname, jerr.text);
		exit(1);
	}
	if (!json_is_true(json_object_get(o, "ok"))) {
		const char *e = json_string_value(json_object_get(o, "error"));

		fprintf(stderr, "%s: egressd: %s\n", progname, e ? e : "refused");
		exit(1);
	}
	return o;
}

static const char *
jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static json_int_t
jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int
cmd_status(int fd)
{
	json_t *o = ctl_call(fd, json_pack("{s:s}", "verb", "status"));

	printf("egressd %s, pid %lld, up %llds%s\n", jstr(o, "version"), (long long)jint(o, "pid"),
	    (long long)jint(o, "uptime_s"),
	    json_is_true(json_object_get(o, "stopping")) ? ", stopping" : "");
	printf("principals:  %lld\n", (long long)jint(o, "principals"));
	printf("connections: %lld\n", (long long)jint(o, "connections"));
	printf("receipts:    %s (last seq %lld)\n", jstr(o, "receipts"),
	    (long long)jint(o, "receipt_seq"));
	json_decref(o);
	return 0;
}

/* Holds the control connection open: the lease ends when it closes. */
static void
hold_lease(int fd)
{
	char b;

	while (read(fd, &b, 1) > 0 || errno == EINTR)
		;
}

static int
cmd_lease(int fd, int argc, char **argv)
{
	json_t *o;

	if (argc != 1)
		usage("lease takes POLICY-NAME");
	o = ctl_call(fd, json_pack("{s:s,s:s}", "verb", "lease", "policy", argv[0]));
	printf("%s %s %s %s\n", jstr(o, "name"), jstr(o, "socket"), jstr(o, "dev_ino"),
	    jstr(o, "policy"));
	fflush(stdout);
	json_decref(o);
	hold_lease(fd);
	return 0;
}

static int
cmd_principal(int fd, int argc, char **argv)
{
	if (argc < 1)
		usage("principal needs add, remove or list");
	if (strcmp(argv[0], "list") == 0) {
		json_t *o = ctl_call(fd, json_pack("{s:s}", "verb", "principal-list"));
		json_t *arr = json_object_get(o, "principals"), *p;
		size_t i;

		if (argc != 1)
			usage("principal list takes no operand");
		printf("%-20s %-36s %-22s %-8s %-6s %s\n", "NAME", "SOCKET", "DEV:INO", "TUNNELS",
		    "LEASE", "POLICY");
		json_array_foreach(arr, i, p)
			printf("%-20s %-36s %-22s %-8lld %-6s %s\n", jstr(p, "name"),
			    jstr(p, "socket"), jstr(p, "dev_ino"), (long long)jint(p, "tunnels"),
			    json_is_true(json_object_get(p, "lease")) ? "yes" : "no",
			    jstr(p, "policy"));
		json_decref(o);
		return 0;
	}
	if (strcmp(argv[0], "remove") == 0) {
		if (argc != 2)
			usage("principal remove takes NAME");
		json_decref(ctl_call(fd, json_pack("{s:s,s:s}", "verb", "principal-remove",
		    "name", argv[1])));
		return 0;
	}
	if (strcmp(argv[0], "add") == 0) {
		static const struct option opts[] = {
			{ "policy", required_argument, NULL, 'p' },
			{ "owner", required_argument, NULL, 'o' },
			{ "peer-uid", required_argument, NULL, 'u' },
			{ "lease", no_argument, NULL, 'l' },
			{ NULL, 0, NULL, 0 },
		};
		const char *policy = NULL, *owner = NULL, *name;
		char *abs = NULL, *end;
		long peer = -1;
		bool lease = false;
		json_t *req, *o;
		int ch;

		if (argc < 2)
			usage("principal add takes NAME --policy FILE");
		name = argv[1];
		optind = 1;
		while ((ch = getopt_long(argc - 1, argv + 1, "+", opts, NULL)) != -1) {
			switch (ch) {
			case 'p': policy = optarg; break;
			case 'o': owner = optarg; break;
			case 'u':
				peer = strtol(optarg, &end, 10);
				if (*optarg == '\0' || *end != '\0' || peer < 0)
					usage("--peer-uid takes a numeric uid");
				break;
			case 'l': lease = true; break;
			default: usage(NULL);
			}
		}
		if (policy == NULL || optind != argc - 1)
			usage("principal add takes NAME --policy FILE");
		/* egressd opens the file itself: hand it an absolute path. */
		if ((abs = realpath(policy, NULL)) == NULL) {
			fprintf(stderr, "%s: %s: %s\n", progname, policy, strerror(errno));
			return 1;
		}
		req = json_pack("{s:s,s:s,s:s,s:b}", "verb", "principal-add", "name", name,
		    "policy", abs, "lease", lease);
		free(abs);
		if (owner)
			json_object_set_new(req, "owner", json_string(owner));
		if (peer >= 0)
			json_object_set_new(req, "peer_uid", json_integer(peer));
		o = ctl_call(fd, req);
		printf("%s %s %s %s\n", jstr(o, "name"), jstr(o, "socket"), jstr(o, "dev_ino"),
		    jstr(o, "policy"));
		fflush(stdout);
		json_decref(o);
		if (lease)
			hold_lease(fd);
		return 0;
	}
	usage("principal needs add, remove or list");
}

int
main(int argc, char **argv)
{
	const char *sock = CTL_DEFAULT_SOCK;
	int ch, fd;

	while ((ch = getopt(argc, argv, "+s:h")) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		default:
			usage(NULL);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(NULL);
	if (strcmp(argv[0], "--version") == 0) {
		printf("egressctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (strcmp(argv[0], "status") != 0 && strcmp(argv[0], "principal") != 0 &&
	    strcmp(argv[0], "lease") != 0)
		usage("unknown verb");
	signal(SIGPIPE, SIG_IGN);
	fd = ctl_connect(sock);
	if (strcmp(argv[0], "status") == 0) {
		if (argc != 1)
			usage("status takes no operand");
		return cmd_status(fd);
	}
	if (strcmp(argv[0], "lease") == 0)
		return cmd_lease(fd, argc - 1, argv + 1);
	return cmd_principal(fd, argc - 1, argv + 1);
}
