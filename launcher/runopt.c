/*
 * runopt.c: egress-run's command line and the check of every option value before
 * anything starts (a usage error is exit 125). Trusts nothing of the values: each one a
 * policy or egressd's configuration will carry is parsed by the parser egressd itself
 * uses and written back in its canonical form (runpolicy.c writes them).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "run.h"
#include "sock.h"
#include "policy.h"

struct runopt runopt;

void
runopt_usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "egress-run: %s\n", msg);
	fprintf(stderr,
	    "usage: egress-run [--policy FILE|NAME | --allow HOST:PORT|@TEMPLATE ... | --learn FILE]\n"
	    "                  [--rw PATH ...]\n"
	    "                  [--ro PATH ...] [--receipts FILE] [--no-fd4] [--resolver IP:PORT ...]\n"
	    "                  [--hosts FILE] [--permit-range CIDR ...] [--user USER] [--quiet]\n"
	    "                  [--setenv NAME=VALUE ...] [--env NAME ...] [--home DIR] [--no-dns]\n"
	    "                  -- CMD [ARG ...]\n");
	exit(RUN_EXIT_SETUP);
}

static void
runopt_list_add(struct runopt_list *l, const char *v, const char *what)
{
	if (l->n == RUN_MAX_LIST) {
		log_fatalx(RUN_EXIT_SETUP, "more than %d %s", RUN_MAX_LIST, what);
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->n++] = v;
}

/*
 * --- option values ------------------------------------------------------------------
 * Every value egress-run writes into the run's policy or egressd's configuration is
 * parsed first by the parser egressd itself uses (host_parse, cidr_parse,
 * addr_port_parse, policy_load) and written back in its canonical form, so that no byte
 * of an option reaches a file unchecked: a newline in a value would otherwise add a line
 * of its own (another allow, another directive).
 */

/* A usage error in one option's value: exit 125 before anything started. */
static void __attribute__((noreturn))
runopt_bad_value(const char *option, const char *value, const char *why)
{
	log_fatalx(RUN_EXIT_SETUP, "%s %s: %s", option, run_shown(value), why);
}

/*
 * A path egressd's configuration can carry as one field: absolute, printable ASCII
 * without blanks or '#' (egressd.conf(5) splits fields at blanks, ends a line at '#' and
 * refuses control bytes).
 */
bool
runopt_conf_safe_path(const char *s)
{
	if (s[0] != '/')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '#')
			return false;
	return true;
}

/*
 * include lines of the run's policy (--policy FILE's own, and --allow @NAME): templates
 * from the installed folder (or $EGRESS_TEMPLATE_DIR), relative paths beside FILE.
 */
static struct policy_include_files runopt_files;
const struct policy_includer runopt_includer = { policy_include_open, &runopt_files, NULL };

/*
 * --allow HOST:PORTS ("[ADDR]:PORTS" for IPv6; PORTS as in a policy: 443, 80,443,
 * 8000-8100) as one policy line, or NULL with *why. The host must be canonical enough for
 * host_parse, the ports only digits, ',' and '-' and then whatever policy_load accepts.
 * --allow @NAME is the line "include NAME": the template's rules (egress-policy(5)); NAME is
 * checked by the parser (a plain name, the template must exist and load).
 */
char *
runopt_allow_line(const char *spec, const char **why)
{
	static char err[512];
	struct egress_hostport hp;
	struct policy_diag d;
	struct policy *p;
	struct host h;
	char *line;

	if (spec[0] == '@') {
		/*
		 * A template name only: "./x" or "../x" would be "include" of a file, and a
		 * blank or '#' would make the line say something else.
		 */
		if (spec[1] == '\0' || strspn(spec + 1, "abcdefghijklmnopqrstuvwxyz0123456789-_") !=
		    strlen(spec + 1)) {
			*why = "bad template name: expected @NAME, a template's plain name of "
			    "lower-case letters, digits, '-' and '_' (pypi, npm, go, ...)";
			return NULL;
		}
		xasprintf(&line, "include %s\n", spec + 1);
		p = policy_load_inc("--allow", (const uint8_t *)line, strlen(line), NULL,
		    &runopt_includer, &d);
		goto loaded;
	}
	if (egress_hostport_split(spec, strlen(spec), &hp) == -1) {
		*why = "expected HOST:PORT or @TEMPLATE";
		return NULL;
	}
	if (hp.portlen == 0 || strspn(hp.port, "0123456789,-") != hp.portlen) {
		*why = "the port must be 1-65535 (or a list 80,443, or a range LO-HI)";
		return NULL;
	}
	/* host_parse takes "[V6]" with its brackets. */
	if (host_parse(spec, (size_t)(hp.port - 1 - spec), &h, why) == -1)
		return NULL;
	xasprintf(&line, "allow %s %s\n", h.name, hp.port);
	p = policy_load("--allow", (const uint8_t *)line, strlen(line), NULL, &d);
loaded:
	if (p == NULL) {
		snprintf(err, sizeof(err), "%s", d.nerrors ? d.errors[0] : "invalid");
		policy_diag_free(&d);
		free(line);
		*why = err;
		return NULL;
	}
	policy_diag_free(&d);
	policy_free(p);
	return line;
}

/* --permit-range CIDR in canonical form, or -1 with *why. */
int
runopt_permit_text(const char *v, char out[EGRESS_ADDRSTRLEN + 4], const char **why)
{
	struct cidr c;

	if (cidr_parse(v, strlen(v), &c, why) == -1)
		return -1;
	cidr_format(&c, out);
	return 0;
}

/* --resolver IP[:PORT] ("[IPv6]:PORT") as egressd.conf(5) takes it, or -1 with *why. */
int
runopt_resolver_text(const char *v, char out[EGRESS_ADDRSTRLEN + 8], const char **why)
{
	char text[EGRESS_ADDRSTRLEN];
	struct addr a;
	unsigned port;

	if (addr_port_parse(v, strlen(v), &a, &port, why) == -1)
		return -1;
	addr_format(&a, text);
	snprintf(out, EGRESS_ADDRSTRLEN + 8, a.family == AF_INET6 ? "[%s]:%u" : "%s:%u", text,
	    port ? port : 53);
	return 0;
}

/*
 * What egress-launch sets inside: a user's value of one of these is replaced (EGRESS_*
 * dropped), JAVA_TOOL_OPTIONS excepted, which is kept with the proxy properties appended.
 * GIT_SSH_COMMAND is egress-launch's only with --no-dns (its ProxyCommand); with
 * transparent connections plain ssh works and the user's value (a key, a known_hosts
 * file) is kept.
 */
static bool
runopt_env_launch_owns(const char *s, size_t n)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
	    "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "npm_config_proxy",
	    "npm_config_https_proxy", "NODE_USE_ENV_PROXY" };

	if (n >= 7 && strncmp(s, "EGRESS_", 7) == 0)
		return true;
	if (runopt.no_dns && n == 15 && memcmp(s, "GIT_SSH_COMMAND", 15) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
			return true;
	return false;
}

/* --setenv NAME=VALUE and --env NAME: NAME a shell name, not HOME; a note for ours. */
static void
runopt_check_env(const char *option, const char *v, size_t n)
{
	if (!egress_env_name_ok(v, n))
		runopt_bad_value(option, v, option[2] == 's' ? "expected NAME=VALUE, NAME a shell "
		    "name (letters, digits and '_', not starting with a digit)" :
		    "expected NAME, a shell name (letters, digits and '_', not starting with a "
		    "digit)");
	if (n == 4 && memcmp(v, "HOME", 4) == 0)
		runopt_bad_value(option, v, "HOME inside is egress-run's own writable folder; use "
		    "--home DIR to keep one between runs");
	if (runopt_env_launch_owns(v, n) && !runopt.quiet)
		log_warnx("%s %.*s: egress-launch sets or removes it inside; your value is not "
		    "used", option, (int)n, v);
}

/* Every option value, checked before anything starts (a usage error is exit 125). */
static void
runopt_check(void)
{
	char buf[EGRESS_ADDRSTRLEN + 8];
	const char *why;

	for (size_t i = 0; i < runopt.allow.n; i++) {
		char *line = runopt_allow_line(runopt.allow.v[i], &why);

		if (line == NULL)
			runopt_bad_value("--allow", runopt.allow.v[i], why);
		free(line);
	}
	for (size_t i = 0; i < runopt.permits.n; i++)
		if (runopt_permit_text(runopt.permits.v[i], buf, &why) == -1)
			runopt_bad_value("--permit-range", runopt.permits.v[i], why);
	for (size_t i = 0; i < runopt.resolvers.n; i++)
		if (runopt_resolver_text(runopt.resolvers.v[i], buf, &why) == -1)
			runopt_bad_value("--resolver", runopt.resolvers.v[i], why);
	/* Paths egressd's configuration names (once made absolute, and with symlinks
	 * resolved, they are checked again where they are written). */
	for (const char *q = runopt.hosts; q != NULL && *q; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f || *q == '#')
			runopt_bad_value("--hosts", runopt.hosts, "a path of printable ASCII "
			    "without blanks or '#' (egressd's configuration carries it)");
	if (runopt.receipts != NULL && !runopt_conf_safe_path(runopt.receipts))
		runopt_bad_value("--receipts", runopt.receipts, "a path of printable ASCII "
		    "without blanks or '#' (egressd's configuration carries it)");
	for (size_t i = 0; i < runopt.setenvs.n; i++) {
		const char *eq = strchr(runopt.setenvs.v[i], '=');

		if (eq == NULL)
			runopt_bad_value("--setenv", runopt.setenvs.v[i], "expected NAME=VALUE");
		runopt_check_env("--setenv", runopt.setenvs.v[i], (size_t)(eq - runopt.setenvs.v[i]));
	}
	for (size_t i = 0; i < runopt.envs.n; i++)
		runopt_check_env("--env", runopt.envs.v[i], strlen(runopt.envs.v[i]));
	if (runopt.home != NULL) {
		struct stat st;

		if (stat(runopt.home, &st) == -1)
			runopt_bad_value("--home", runopt.home, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			runopt_bad_value("--home", runopt.home, "not a directory");
	}
}

/*
 * The command line into runopt, every value checked: returns only when the run can start
 * (a usage error is exit 125 with a message).
 */
void
runopt_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "learn", required_argument, NULL, 'l' },
		{ "allow", required_argument, NULL, 'a' },
		{ "rw", required_argument, NULL, 'w' },
		{ "ro", required_argument, NULL, 'r' },
		{ "receipts", required_argument, NULL, 'R' },
		{ "no-fd4", no_argument, NULL, '4' },
		{ "resolver", required_argument, NULL, 's' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "permit-range", required_argument, NULL, 'P' },
		{ "lease-socket", required_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "user", required_argument, NULL, 'u' },
		{ "setenv", required_argument, NULL, 'e' },
		{ "env", required_argument, NULL, 'E' },
		{ "home", required_argument, NULL, 'O' },
		{ "no-dns", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': runopt.policy = optarg; break;
		case 'l': runopt.learn = optarg; break;
		case 'a': runopt_list_add(&runopt.allow, optarg, "--allow"); break;
		case 'w': runopt_list_add(&runopt.rw, optarg, "--rw"); break;
		case 'r': runopt_list_add(&runopt.ro, optarg, "--ro"); break;
		case 'R': runopt.receipts = optarg; break;
		case '4': runopt.no_fd4 = true; break;
		case 's': runopt_list_add(&runopt.resolvers, optarg, "--resolver"); break;
		case 'H': runopt.hosts = optarg; break;
		case 'P': runopt_list_add(&runopt.permits, optarg, "--permit-range"); break;
		case 'L': runopt.lease_sock = optarg; break;
		case 'q': runopt.quiet = true; break;
		case 'u': runopt.user = optarg; break;
		case 'e':
			runopt_list_add(&runopt.setenvs, optarg, "--setenv");
			runopt_list_add(&runopt.vars, optarg, "--setenv and --env");
			break;
		case 'E':
			runopt_list_add(&runopt.envs, optarg, "--env");
			runopt_list_add(&runopt.vars, optarg, "--setenv and --env");
			break;
		case 'O': runopt.home = optarg; break;
		case 'D': runopt.no_dns = true; break;
		default: runopt_usage(NULL);
		}
	}
	if (optind >= argc)
		runopt_usage("no command");
	runopt.cmd = argv + optind;
	/*
	 * --learn is a run of its own policy (allow * 1-65535): another policy beside it
	 * would either be ignored or make the draft describe less than the run allowed.
	 */
	if (runopt.learn != NULL && (runopt.policy != NULL || runopt.allow.n != 0))
		runopt_usage("--learn runs with a policy of its own (every public destination): "
		    "it takes no --policy or --allow");
	if (runopt.learn != NULL && runopt.learn[0] == '\0')
		runopt_usage("--learn takes a FILE");
	if (runopt.policy == NULL && runopt.allow.n == 0 && runopt.learn == NULL)
		runopt_usage("give --allow HOST:PORT (or @TEMPLATE), --policy FILE|NAME or "
		    "--learn FILE");
	if (runopt.receipts != NULL && runopt.receipts[0] != '/') {
		static char abs[PATH_MAX];
		char cwd[PATH_MAX];

		if (getcwd(cwd, sizeof(cwd)) == NULL)
			runopt_usage("getcwd failed");
		if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, runopt.receipts) >= sizeof(abs))
			runopt_usage("--receipts: path too long");
		runopt.receipts = abs;
	}
	runopt_check();
}
