/*
 * egressctl: the operator's tool. Speaks egressd's control protocol (proto/control.h,
 * through common/ctlclient.c) and prints what a person reads. The receipt verbs
 * (receipts.c) read the receipt files themselves and need no egressd.
 *
 * One table of verbs (ctl_cmds: words, handler, operands, usage) drives the parsing, the
 * usage text and whether egressd is reached at all, in the manner of OpenBSD relayctl's
 * parser.c. Trusts egressd's replies only as JSON objects, bounded by CTLPROTO_REPLY_MAX.
 *
 * Exit status: 0 success, 1 egressd refused or failed, 2 usage.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "control.h"
#include "ctlclient.h"
#include "egressctl.h"
#include "log.h"

#define CTL_DEFAULT_SOCK "/run/egress/control.sock"

/*
 * A verb: one or two words, its handler (argv[0] is the last word, the operands follow),
 * the operand count checked before egressd is reached (-1: the handler parses them),
 * and its usage after "egressctl ".
 */
struct ctl_cmd {
	const char *word, *sub;
	int (*run)(int fd, int argc, char **argv);
	bool daemon;                 /* speaks to egressd */
	int operands;
	const char *operands_msg;    /* the usage message when the count is wrong */
	const char *usage;
};

static int ctl_status(int, int, char **);
static int ctl_principal_add(int, int, char **);
static int ctl_principal_remove(int, int, char **);
static int ctl_principal_list(int, int, char **);
static int ctl_lease(int, int, char **);
static int ctl_metrics(int, int, char **);

static const struct ctl_cmd ctl_cmds[] = {
	{ "status", NULL, ctl_status, true, 0, "status takes no operand",
	    "[-s SOCK] status" },
	{ "principal", "add", ctl_principal_add, true, -1, NULL,
	    "[-s SOCK] principal add NAME --policy FILE [--owner UID:GID]\n"
	    "                 [--peer-uid UID] [--lease]" },
	{ "principal", "remove", ctl_principal_remove, true, 1, "principal remove takes NAME",
	    "[-s SOCK] principal remove NAME" },
	{ "principal", "list", ctl_principal_list, true, 0, "principal list takes no operand",
	    "[-s SOCK] principal list" },
	{ "lease", NULL, ctl_lease, true, 1, "lease takes POLICY-NAME",
	    "[-s SOCK] lease POLICY-NAME" },
	{ "metrics", NULL, ctl_metrics, true, 0, "metrics takes no operand",
	    "[-s SOCK] metrics" },
	{ "receipts", NULL, ctl_receipts, false, -1, NULL,
	    "receipts [--file F ...] [--principal P] [--since T] [--until T]\n"
	    "                 [--decision allow|deny] [--reason R] [--host GLOB] [--follow]\n"
	    "                 [--json]" },
	{ "receipts", "verify", ctl_receipts_verify, false, -1, NULL,
	    "receipts verify [--file F ...] [--key FILE]\n"
	    "                 [--pubkey FILE [--complete]]" },
};
#define CTL_NCMDS (sizeof(ctl_cmds) / sizeof(ctl_cmds[0]))

void
ctl_usage(const char *msg)
{
	size_t i;

	if (msg)
		log_warnx("%s", msg);
	for (i = 0; i < CTL_NCMDS; i++)
		fprintf(stderr, "%s %s\n", i == 0 ? "usage: egressctl" : "       egressctl",
		    ctl_cmds[i].usage);
	exit(2);
}

/*
 * The entry for argv: two words where the verb has a second word and argv has it, else
 * the verb's one-word entry; a verb that has only two-word entries needs one of them.
 */
static const struct ctl_cmd *
ctl_lookup(int argc, char **argv, int *words)
{
	const struct ctl_cmd *one = NULL;
	bool known = false;
	size_t i;

	for (i = 0; i < CTL_NCMDS; i++) {
		const struct ctl_cmd *c = &ctl_cmds[i];

		if (strcmp(c->word, argv[0]) != 0)
			continue;
		known = true;
		if (c->sub == NULL)
			one = c;
		else if (argc >= 2 && strcmp(c->sub, argv[1]) == 0) {
			*words = 2;
			return c;
		}
	}
	if (one != NULL) {
		*words = 1;
		return one;
	}
	if (known)
		ctl_usage("principal needs add, remove or list");
	ctl_usage("unknown verb");
}

static int
ctl_connect(const char *path)
{
	int fd = ctlclient_connect(path);

	if (fd == -1 && errno == ENAMETOOLONG)
		ctl_usage("socket path too long");
	if (fd == -1) {
		log_fatalx(1, "%s: %s (is egressd running?)", path, strerror(errno));
	}
	return fd;
}

/* Sends one request and reads one reply line; exits on failure or refusal. */
static json_t *
ctl_call(int fd, json_t *req)
{
	size_t len;
	char *line = ctlproto_encode(req, &len), *reply, err[160];
	const char *refusal;
	ssize_t n;
	json_t *o;

	if (line == NULL || ctlclient_send(fd, line, len) == -1) {
		log_fatal(1, "sending");
	}
	free(line);
	if ((n = ctlclient_recv(fd, &reply, CTLPROTO_REPLY_MAX, -1)) == -1) {
		if (errno == EMSGSIZE)
			log_warnx("reply too long");
		else
			log_fatalx(1, "egressd closed the connection");
	}
	o = ctlproto_decode_reply(reply, (size_t)n, err, sizeof(err));
	free(reply);
	if (o == NULL) {
		log_fatalx(1, "unreadable reply: %s", err);
	}
	if (!ctlproto_reply_ok(o, &refusal)) {
		log_fatalx(1, "egressd: %s", refusal ? refusal : "refused");
	}
	return o;
}

static const char *
ctl_jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static json_int_t
ctl_jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int
ctl_status(int fd, int argc, char **argv)
{
	json_t *o = ctl_call(fd, ctlproto_request(CTLPROTO_STATUS));

	(void)argc;
	(void)argv;

	printf("egressd %s, pid %lld, up %llds%s\n", ctl_jstr(o, "version"), (long long)ctl_jint(o, "pid"),
	    (long long)ctl_jint(o, "uptime_s"),
	    json_is_true(json_object_get(o, "stopping")) ? ", stopping" : "");
	printf("principals:  %lld\n", (long long)ctl_jint(o, "principals"));
	printf("connections: %lld\n", (long long)ctl_jint(o, "connections"));
	printf("receipts:    %s (last seq %lld)\n", ctl_jstr(o, "receipts"),
	    (long long)ctl_jint(o, "receipt_seq"));
	json_decref(o);
	return 0;
}

/* Holds the control connection open: the lease ends when it closes. */
static void
ctl_hold_lease(int fd)
{
	char b;

	while (read(fd, &b, 1) > 0 || errno == EINTR)
		;
}

/* The Prometheus text exposition, as egressd serves it on metrics-listen. */
static int
ctl_metrics(int fd, int argc, char **argv)
{
	json_t *o = ctl_call(fd, ctlproto_request(CTLPROTO_METRICS));
	const char *text = json_string_value(json_object_get(o, "text"));

	(void)argc;
	(void)argv;

	if (text == NULL) {
		log_warnx("egressd sent no metrics");
		json_decref(o);
		return 1;
	}
	fputs(text, stdout);
	json_decref(o);
	return 0;
}

static int
ctl_lease(int fd, int argc, char **argv)
{
	json_t *o, *req = ctlproto_request(CTLPROTO_LEASE);

	(void)argc;
	json_object_set_new(req, "policy", json_string(argv[1]));
	o = ctl_call(fd, req);
	printf("%s %s %s %s\n", ctl_jstr(o, "name"), ctl_jstr(o, "socket"), ctl_jstr(o, "dev_ino"),
	    ctl_jstr(o, "policy"));
	fflush(stdout);
	json_decref(o);
	ctl_hold_lease(fd);
	return 0;
}

static int
ctl_principal_list(int fd, int argc, char **argv)
{
	json_t *o = ctl_call(fd, ctlproto_request(CTLPROTO_PRINCIPAL_LIST));
	json_t *arr = json_object_get(o, "principals"), *p;
	size_t i;

	(void)argc;
	(void)argv;
	printf("%-20s %-36s %-22s %-8s %-6s %s\n", "NAME", "SOCKET", "DEV:INO", "TUNNELS",
	    "LEASE", "POLICY");
	json_array_foreach(arr, i, p)
		printf("%-20s %-36s %-22s %-8lld %-6s %s\n", ctl_jstr(p, "name"),
		    ctl_jstr(p, "socket"), ctl_jstr(p, "dev_ino"), (long long)ctl_jint(p, "tunnels"),
		    json_is_true(json_object_get(p, "lease")) ? "yes" : "no",
		    ctl_jstr(p, "policy"));
	json_decref(o);
	return 0;
}

static int
ctl_principal_remove(int fd, int argc, char **argv)
{
	json_t *req = ctlproto_request(CTLPROTO_PRINCIPAL_REMOVE);

	(void)argc;
	json_object_set_new(req, "name", json_string(argv[1]));
	json_decref(ctl_call(fd, req));
	return 0;
}

static int
ctl_principal_add(int fd, int argc, char **argv)
{
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
		ctl_usage("principal add takes NAME --policy FILE");
	name = argv[1];
	optind = 1;
	while ((ch = getopt_long(argc - 1, argv + 1, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': policy = optarg; break;
		case 'o': owner = optarg; break;
		case 'u':
			peer = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || peer < 0)
				ctl_usage("--peer-uid takes a numeric uid");
			break;
		case 'l': lease = true; break;
		default: ctl_usage(NULL);
		}
	}
	if (policy == NULL || optind != argc - 1)
		ctl_usage("principal add takes NAME --policy FILE");
	/* egressd opens the file itself: hand it an absolute path. */
	if ((abs = realpath(policy, NULL)) == NULL) {
		log_warn("%s", policy);
		return 1;
	}
	req = ctlproto_request(CTLPROTO_PRINCIPAL_ADD);
	json_object_set_new(req, "name", json_string(name));
	json_object_set_new(req, "policy", json_string(abs));
	json_object_set_new(req, "lease", json_boolean(lease));
	free(abs);
	if (owner)
		json_object_set_new(req, "owner", json_string(owner));
	if (peer >= 0)
		json_object_set_new(req, "peer_uid", json_integer(peer));
	o = ctl_call(fd, req);
	printf("%s %s %s %s\n", ctl_jstr(o, "name"), ctl_jstr(o, "socket"), ctl_jstr(o, "dev_ino"),
	    ctl_jstr(o, "policy"));
	fflush(stdout);
	json_decref(o);
	if (lease)
		ctl_hold_lease(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *sock = CTL_DEFAULT_SOCK;
	const struct ctl_cmd *cmd;
	int ch, fd = -1, words;

	log_init(CTL_PROG, LOG_OUT_PREFIX, false, false);
	while ((ch = getopt(argc, argv, "+s:h")) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		default:
			ctl_usage(NULL);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		ctl_usage(NULL);
	if (strcmp(argv[0], "--version") == 0) {
		printf("egressctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	cmd = ctl_lookup(argc, argv, &words);
	argc -= words - 1;
	argv += words - 1;
	if (cmd->operands >= 0 && argc - 1 != cmd->operands)
		ctl_usage(cmd->operands_msg);
	if (cmd->daemon) {
		signal(SIGPIPE, SIG_IGN);
		fd = ctl_connect(sock);
	}
	return cmd->run(fd, argc, argv);
}
