/*
 * egress-policy: keygen, check, seal, digest and test policies offline. It trusts the
 * files it is given no more than egressd would: they go through the same parser.
 *
 * Exit status: 0 success (for check: valid), 1 invalid or failed, 2 usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "policy.h"

#define EXIT_INVALID 1
#define EXIT_USAGE 2

static const char *progname = "egress-policy";

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg != NULL)
		log_warnx("%s", msg);
	fprintf(stderr,
	    "usage: %s keygen FILE\n"
	    "       %s check [--key FILE] FILE\n"
	    "       %s digest FILE\n"
	    "       %s seal [--key FILE] FILE\n"
	    "       %s test FILE HOST PORT\n", progname, progname, progname, progname,
	    progname);
	exit(EXIT_USAGE);
}

/* Reads a whole file ("-" is stdin), at most one byte past the policy limit. */
static uint8_t *
read_file(const char *path, size_t *len)
{
	size_t cap = 65536, n = 0;
	uint8_t *buf;
	int fd;

	if (strcmp(path, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		log_warn("%s", path);
		return NULL;
	}
	buf = xmalloc(cap);
	for (;;) {
		ssize_t r;

		if (n == cap) {
			if (cap > EGRESS_POLICY_MAX_BYTES) {
				log_warnx("%s: larger than %u bytes", path,
				    EGRESS_POLICY_MAX_BYTES);
				goto fail;
			}
			cap *= 2;
			buf = xreallocarray(buf, cap, 1);
		}
		r = read(fd, buf + n, cap - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			log_warn("%s", path);
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	*len = n;
	return buf;
fail:
	if (fd != STDIN_FILENO)
		close(fd);
	free(buf);
	return NULL;
}

static int
load_key(const char *path, struct egress_key *key)
{
	char err[512];

	if (egress_key_load(path, key, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return -1;
	}
	return 0;
}

/* Loads and reports; returns NULL (diagnostics printed) when the policy is refused. */
static struct policy *
load_policy(const char *path, const struct egress_key *key, bool warn)
{
	struct policy_diag d;
	struct policy *p;
	uint8_t *buf;
	size_t len;

	if ((buf = read_file(path, &len)) == NULL)
		return NULL;
	p = policy_load(strcmp(path, "-") == 0 ? "(stdin)" : path, buf, len, key, &d);
	free(buf);
	for (size_t i = 0; i < d.nerrors; i++)
		fprintf(stderr, "%s\n", d.errors[i]);
	if (d.nerrors >= EGRESS_POLICY_MAX_ERRORS)
		fprintf(stderr, "%s: too many errors, stopped\n", path);
	for (size_t i = 0; warn && i < d.nwarnings; i++)
		fprintf(stderr, "%s\n", d.warnings[i]);
	policy_diag_free(&d);
	return p;
}

/* Parses --key FILE before the operands; returns the index of the first operand. */
static int
parse_key_option(int argc, char **argv, const char **keyfile)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+k:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			*keyfile = optarg;
			break;
		case 'h':
			usage(NULL);
		default:
			usage(NULL);
		}
	}
	return optind;
}

static int
cmd_keygen(int argc, char **argv)
{
	char err[512];

	if (argc != 2)
		usage("keygen takes one FILE");
	if (egress_key_generate(argv[1], err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return EXIT_INVALID;
	}
	log_info("wrote a 32-byte key to %s (mode 0600)", argv[1]);
	return 0;
}

static int
cmd_check(int argc, char **argv)
{
	const char *keyfile = NULL;
	struct egress_key key;
	struct policy *p;
	char digest[EGRESS_DIGEST_STRLEN];
	const char *state;
	int i = parse_key_option(argc, argv, &keyfile);

	if (argc - i != 1)
		usage("check takes one FILE");
	if (keyfile != NULL && load_key(keyfile, &key) == -1)
		return EXIT_USAGE;
	p = load_policy(argv[i], keyfile ? &key : NULL, true);
	if (keyfile != NULL)
		egress_key_clear(&key);
	if (p == NULL) {
		log_warnx("%s: invalid", argv[i]);
		return EXIT_INVALID;
	}
	policy_digest(p, digest);
	switch (policy_mac_state(p)) {
	case POLICY_UNSEALED: state = "not sealed"; break;
	case POLICY_SEALED_NO_MAC: state = "sealed, digest verified, no MAC"; break;
	case POLICY_SEALED_MAC_UNCHECKED: state = "sealed, digest verified, MAC not checked (no --key)"; break;
	default: state = "sealed, digest and MAC verified"; break;
	}
	printf("%s: valid, %zu %s, %s, %s\n", argv[i], policy_rule_count(p),
	    policy_rule_count(p) == 1 ? "host" : "hosts", digest, state);
	policy_free(p);
	return 0;
}

static int
cmd_digest(int argc, char **argv)
{
	char digest[EGRESS_DIGEST_STRLEN];
	struct policy *p;

	if (argc != 2)
		usage("digest takes one FILE");
	if ((p = load_policy(argv[1], NULL, false)) == NULL)
		return EXIT_INVALID;
	policy_digest(p, digest);
	printf("%s\n", digest);
	policy_free(p);
	return 0;
}

static int
cmd_seal(int argc, char **argv)
{
	const char *keyfile = NULL;
	struct egress_key key;
	struct policy *p;
	char *out;
	size_t len;
	int i = parse_key_option(argc, argv, &keyfile);

	if (argc - i != 1)
		usage("seal takes one FILE");
	if (keyfile != NULL && load_key(keyfile, &key) == -1)
		return EXIT_USAGE;
	/* The input's own MAC, if any, is not checked: sealing replaces it. */
	if ((p = load_policy(argv[i], NULL, true)) == NULL) {
		if (keyfile != NULL)
			egress_key_clear(&key);
		return EXIT_INVALID;
	}
	out = seal_policy(p, keyfile ? &key : NULL, &len);
	if (keyfile != NULL)
		egress_key_clear(&key);
	policy_free(p);
	if (fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0) {
		log_warn("writing the sealed policy");
		free(out);
		return EXIT_INVALID;
	}
	free(out);
	return 0;
}

static int
cmd_test(int argc, char **argv)
{
	struct policy *p;
	struct host h;
	const char *why, *file;
	char *end;
	unsigned long port;
	unsigned line = 0;
	enum egress_reason r;

	if (argc != 4)
		usage("test takes FILE HOST PORT");
	errno = 0;
	port = strtoul(argv[3], &end, 10);
	if (argv[3][0] < '0' || argv[3][0] > '9' || *end != '\0' || errno != 0 || port < 1 ||
	    port > 65535)
		usage("PORT must be a number from 1 to 65535");
	if ((p = load_policy(argv[1], NULL, false)) == NULL)
		return EXIT_INVALID;
	file = argv[1];
	if (host_parse(argv[2], strlen(argv[2]), &h, &why) == -1) {
		printf("deny %s - (%s)\n", egress_reason_name(EGRESS_BAD_HOST), why);
		policy_free(p);
		return 0;
	}
	r = policy_decide(p, &h, (uint16_t)port, &line);
	if (r == EGRESS_ALLOWED && h.kind != HOST_NAME) {
		const struct policy_settings *s = policy_settings(p);
		struct addr_verdict v;

		/* A literal needs no DNS: classify it as egressd would. */
		if (addr_classify(&h.addr, NULL, 0, &v) &&
		    !addr_permitted(&h.addr, &v, s->permit, s->npermit)) {
			printf("deny %s - (%s %s)\n", egress_reason_name(EGRESS_PRIVATE_ADDRESS),
			    v.range, v.name);
			policy_free(p);
			return 0;
		}
	}
	if (line != 0)
		printf("%s %s %s:%u\n", r == EGRESS_ALLOWED ? "allow" : "deny",
		    egress_reason_name(r), file, line);
	else
		printf("deny %s -\n", egress_reason_name(r));
	policy_free(p);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "keygen", cmd_keygen },
		{ "check", cmd_check },
		{ "digest", cmd_digest },
		{ "seal", cmd_seal },
		{ "test", cmd_test },
	};

	log_init("egress-policy", LOG_OUT_PREFIX, false, false);
	if (argc < 2)
		usage(NULL);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		usage(NULL);
	if (strcmp(argv[1], "--version") == 0) {
		printf("egress-policy %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	log_warnx("unknown verb '%s'", argv[1]);
	usage(NULL);
}
