/*
 * egress-policy: keygen, check, seal, digest, test and diff policies offline, and suggest
 * a draft from receipts. It trusts the files it is given no more than egressd would: they
 * go through the same parser, and a signature is checked by the same library call
 * (policy_sig_check); receipts go through libproto's scanner (suggest.c).
 *
 * Exit status: 0 success (for check: valid; for diff: equal), 1 invalid or failed (for
 * diff: the policies differ), 2 usage (for diff also a policy that does not load).
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
#include "suggest.h"

#define EXIT_INVALID 1
#define EXIT_USAGE 2

static const char *progname = "egress-policy";

static void __attribute__((noreturn))
usage(const char *msg)
{
	if (msg != NULL)
		log_warnx("%s", msg);
	fprintf(stderr,
	    "usage: %s keygen [--ed25519] FILE\n"
	    "       %s check [--key FILE] [--pubkey FILE]... FILE\n"
	    "       %s digest FILE\n"
	    "       %s seal [--key FILE] [--sign-key FILE] FILE\n"
	    "       %s test [--key FILE] [--pubkey FILE]... FILE HOST PORT\n"
	    "       %s suggest [--principal NAME] RECEIPTS...\n"
	    "       %s diff OLD NEW\n",
	    progname, progname, progname, progname, progname, progname, progname);
	exit(EXIT_USAGE);
}

/* Reads a whole file ("-" is stdin), at most one byte past the policy limit. */
static uint8_t *
read_file(const char *path, size_t *len, char id[64])
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
	if (id != NULL)
		policy_include_id(fd, id);
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

/* The options a verb may take (a mask of OPT_*). */
#define OPT_KEY 0x1
#define OPT_SIGN_KEY 0x2
#define OPT_PUBKEY 0x4
#define OPT_ED25519 0x8

struct options {
	const char *key;                /* --key: HMAC key file */
	const char *sign_key;           /* --sign-key: Ed25519 private key (PEM) */
	const char *pubkey[EGRESS_POLICY_MAX_PUBKEYS]; /* --pubkey, repeatable */
	size_t npubkey;
	bool ed25519;                   /* keygen --ed25519 */
	struct egress_key hmac;         /* loaded --key */
	void *sign;                     /* loaded --sign-key */
	void *pub[EGRESS_POLICY_MAX_PUBKEYS];
};

/* Parses the options before the operands; returns the index of the first operand. */
static int
parse_options(int argc, char **argv, const char *verb, unsigned allowed, struct options *o)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "sign-key", required_argument, NULL, 's' },
		{ "pubkey", required_argument, NULL, 'p' },
		{ "ed25519", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		int ch;
		unsigned bit;
		const char *name;
	} bits[] = {
		{ 'k', OPT_KEY, "--key" }, { 's', OPT_SIGN_KEY, "--sign-key" },
		{ 'p', OPT_PUBKEY, "--pubkey" }, { 'e', OPT_ED25519, "--ed25519" },
	};
	char msg[96];
	int ch;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (ch == 'h' || ch == '?' || ch == ':')
			usage(NULL);
		for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
			if (bits[i].ch == ch && (allowed & bits[i].bit) == 0) {
				snprintf(msg, sizeof(msg), "%s takes no %s", verb, bits[i].name);
				usage(msg);
			}
		switch (ch) {
		case 'k':
			o->key = optarg;
			break;
		case 's':
			o->sign_key = optarg;
			break;
		case 'p':
			if (o->npubkey == EGRESS_POLICY_MAX_PUBKEYS) {
				snprintf(msg, sizeof(msg), "at most %d --pubkey",
				    EGRESS_POLICY_MAX_PUBKEYS);
				usage(msg);
			}
			o->pubkey[o->npubkey++] = optarg;
			break;
		case 'e':
			o->ed25519 = true;
			break;
		default:
			usage(NULL);
		}
	}
	return optind;
}

/* Loads the key files the options name; -1 (said why) when one is unusable. */
static int
load_keys(struct options *o)
{
	char err[512];

	if (o->key != NULL && egress_key_load(o->key, &o->hmac, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return -1;
	}
	if (o->sign_key != NULL &&
	    (o->sign = egress_ed25519_load(o->sign_key, true, err, sizeof(err))) == NULL) {
		log_warnx("--sign-key %s", err);
		return -1;
	}
	for (size_t i = 0; i < o->npubkey; i++)
		if ((o->pub[i] = egress_ed25519_load(o->pubkey[i], false, err,
		    sizeof(err))) == NULL) {
			log_warnx("--pubkey %s", err);
			return -1;
		}
	return 0;
}

static void
free_keys(struct options *o)
{
	egress_key_clear(&o->hmac);
	egress_ed25519_free(o->sign);
	o->sign = NULL;
	for (size_t i = 0; i < o->npubkey; i++) {
		egress_ed25519_free(o->pub[i]);
		o->pub[i] = NULL;
	}
}

/*
 * Loads and reports; returns NULL (diagnostics printed) when the policy is refused. With
 * --pubkey keys, a policy without a #sig valid under one of them is refused, and *signer
 * names the key that verified it.
 */
static struct policy *
load_policy(const char *path, const struct options *o, bool warn, const char **signer)
{
	struct policy_diag d;
	struct policy *p;
	const char *name = strcmp(path, "-") == 0 ? "(stdin)" : path;
	uint8_t *buf;
	size_t len, which;
	char why[512];
	/* include NAME from the installed templates (or $EGRESS_TEMPLATE_DIR). */
	struct policy_include_files files = { NULL };
	char id[64];
	const struct policy_includer inc = { policy_include_open, &files, id };

	if ((buf = read_file(path, &len, id)) == NULL)
		return NULL;
	p = policy_load_inc(name, buf, len, o != NULL && o->key != NULL ? &o->hmac : NULL, &inc,
	    &d);
	free(buf);
	for (size_t i = 0; i < d.nerrors; i++)
		fprintf(stderr, "%s\n", d.errors[i]);
	if (d.nerrors >= EGRESS_POLICY_MAX_ERRORS)
		fprintf(stderr, "%s: too many errors, stopped\n", path);
	for (size_t i = 0; warn && i < d.nwarnings; i++)
		fprintf(stderr, "%s\n", d.warnings[i]);
	policy_diag_free(&d);
	if (p != NULL && o != NULL && o->npubkey > 0) {
		if (policy_sig_check(p, name, o->pub, o->npubkey, &which, why,
		    sizeof(why)) != POLICY_SIG_OK) {
			fprintf(stderr, "%s\n", why);
			policy_free(p);
			return NULL;
		}
		if (signer != NULL)
			*signer = o->pubkey[which];
	}
	return p;
}

static int
cmd_keygen(int argc, char **argv)
{
	struct options o;
	char err[512];
	int i = parse_options(argc, argv, "keygen", OPT_ED25519, &o);

	if (argc - i != 1)
		usage("keygen takes one FILE");
	if (o.ed25519) {
		if (egress_ed25519_keygen_pair(argv[i], err, sizeof(err)) == -1) {
			log_warnx("%s", err);
			return EXIT_INVALID;
		}
		log_info("wrote an Ed25519 private key to %s (mode 0600) and its public key to "
		    "%s.pub (mode 0644)", argv[i], argv[i]);
		return 0;
	}
	if (egress_key_generate(argv[i], err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return EXIT_INVALID;
	}
	log_info("wrote a 32-byte key to %s (mode 0600)", argv[i]);
	return 0;
}

static int
cmd_check(int argc, char **argv)
{
	struct options o;
	struct policy *p;
	char digest[EGRESS_DIGEST_STRLEN];
	const char *state, *sig, *signer = NULL;
	int i = parse_options(argc, argv, "check", OPT_KEY | OPT_PUBKEY, &o);

	if (argc - i != 1)
		usage("check takes one FILE");
	if (load_keys(&o) == -1) {
		free_keys(&o);
		return EXIT_USAGE;
	}
	p = load_policy(argv[i], &o, true, &signer);
	free_keys(&o);
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
	if (signer != NULL)
		sig = ", signature verified by ";
	else if (policy_has_sig(p))
		sig = ", signature not checked (no --pubkey)";
	else
		sig = "";      /* unsigned: the line stays what it was before signatures */
	printf("%s: valid, %zu %s, %s, %s%s%s\n", argv[i], policy_rule_count(p),
	    policy_rule_count(p) == 1 ? "host" : "hosts", digest, state, sig,
	    signer != NULL ? signer : "");
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
	if ((p = load_policy(argv[1], NULL, false, NULL)) == NULL)
		return EXIT_INVALID;
	policy_digest(p, digest);
	printf("%s\n", digest);
	policy_free(p);
	return 0;
}

static int
cmd_seal(int argc, char **argv)
{
	struct options o;
	struct policy *p;
	char *out;
	size_t len;
	int i = parse_options(argc, argv, "seal", OPT_KEY | OPT_SIGN_KEY, &o);

	if (argc - i != 1)
		usage("seal takes one FILE");
	if (load_keys(&o) == -1) {
		free_keys(&o);
		return EXIT_USAGE;
	}
	/* The input's own MAC and signature, if any, are not checked: sealing replaces them. */
	if ((p = load_policy(argv[i], NULL, true, NULL)) == NULL) {
		free_keys(&o);
		return EXIT_INVALID;
	}
	out = seal_policy_signed(p, o.key != NULL ? &o.hmac : NULL, o.sign, &len);
	free_keys(&o);
	policy_free(p);
	if (out == NULL) {
		log_warnx("libcrypto: signing the policy failed");
		return EXIT_INVALID;
	}
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
	const char *why;
	char *end, origin[1024];
	unsigned long port;
	enum egress_reason r;

	struct options o;
	int i = parse_options(argc, argv, "test", OPT_KEY | OPT_PUBKEY, &o);

	if (argc - i != 3)
		usage("test takes FILE HOST PORT");
	argv += i - 1;
	errno = 0;
	port = strtoul(argv[3], &end, 10);
	if (argv[3][0] < '0' || argv[3][0] > '9' || *end != '\0' || errno != 0 || port < 1 ||
	    port > 65535)
		usage("PORT must be a number from 1 to 65535");
	if (load_keys(&o) == -1) {
		free_keys(&o);
		return EXIT_USAGE;
	}
	p = load_policy(argv[1], &o, false, NULL);
	free_keys(&o);
	if (p == NULL)
		return EXIT_INVALID;
	if (host_parse(argv[2], strlen(argv[2]), &h, &why) == -1) {
		printf("deny %s - (%s)\n", egress_reason_name(EGRESS_BAD_HOST), why);
		policy_free(p);
		return 0;
	}
	r = policy_decide_origin(p, &h, (uint16_t)port, origin, sizeof(origin));
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
	/* The origin: "FILE:LINE", and for an included rule " (via FILE:LINE, ...)". */
	if (strcmp(origin, "-") != 0)
		printf("%s %s %s\n", r == EGRESS_ALLOWED ? "allow" : "deny",
		    egress_reason_name(r), origin);
	else
		printf("deny %s -\n", egress_reason_name(r));
	policy_free(p);
	return 0;
}

/*
 * suggest [--principal NAME] RECEIPTS...: the draft policy (draft_write) of the opens and
 * not-allowlisted denials in the receipts, on stdout. A line that is not a receipt is
 * skipped with a warning naming FILE:LINE (a torn last line after a crash is one); a file
 * that cannot be read, or in which no line is a receipt, is an error (exit 1, nothing
 * written).
 */
static int
cmd_suggest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "principal", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *principal = NULL;
	struct suggest sg;
	char *source, *draft, *t;
	size_t len;
	int ch, i;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (ch != 'P')
			usage(NULL);
		if (optarg[0] == '\0')
			usage("--principal takes a NAME");
		principal = optarg;
	}
	if (optind >= argc)
		usage("suggest takes one or more RECEIPTS files");
	suggest_init(&sg, principal);
	xasprintf(&source, "egress-policy suggest");
	if (principal != NULL) {
		xasprintf(&t, "%s --principal %s", source, principal);
		free(source);
		source = t;
	}
	for (i = optind; i < argc; i++) {
		if (suggest_file(&sg, argv[i]) == -1) {
			suggest_free(&sg);
			free(source);
			return EXIT_INVALID;
		}
		xasprintf(&t, "%s %s", source, argv[i]);
		free(source);
		source = t;
	}
	if (sg.taken == 0)
		log_warnx("no open and no not-allowlisted denial%s in the receipts: the draft "
		    "allows nothing", principal != NULL ? " of that principal" : "");
	draft = suggest_draft(&sg, source, &len);
	suggest_free(&sg);
	free(source);
	if (fwrite(draft, 1, len, stdout) != len || fflush(stdout) != 0) {
		log_warn("writing the draft");
		free(draft);
		return EXIT_INVALID;
	}
	free(draft);
	return 0;
}

/* --- diff --------------------------------------------------------------------------- */

/*
 * A canonical line split for the diff: allow and deny rules are keyed by verb and host
 * (so that one added port is one "+" line, not a changed line), every other line (the
 * settings) is its own key.
 */
struct diff_line {
	const char *key;              /* "allow HOST", "deny HOST", or the whole line */
	size_t keylen;
	const char *ports;            /* a rule's port list, NULL for a setting */
	size_t portslen;
};

struct diff_range {
	unsigned lo, hi;
};

/* Splits a canonical body (one line per '\n', sorted) into lines. */
static struct diff_line *
diff_lines(const char *body, size_t len, size_t *n)
{
	struct diff_line *v = NULL;
	const char *s = body, *end = body + len;
	size_t cap = 0;

	*n = 0;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl != NULL ? nl : end, *sp;
		struct diff_line l = { s, (size_t)(eol - s), NULL, 0 };

		if (((size_t)(eol - s) > 6 && memcmp(s, "allow ", 6) == 0) ||
		    ((size_t)(eol - s) > 5 && memcmp(s, "deny ", 5) == 0)) {
			size_t vl = s[0] == 'a' ? 6 : 5;     /* "allow " or "deny " */

			if ((sp = memchr(s + vl, ' ', (size_t)(eol - s) - vl)) != NULL) {
				l.keylen = (size_t)(sp - s);
				l.ports = sp + 1;
				l.portslen = (size_t)(eol - sp - 1);
			}
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		v[(*n)++] = l;
		s = nl != NULL ? nl + 1 : end;
	}
	return v;
}

/* A canonical port list ("80,443,8000-8100") as ranges. */
static struct diff_range *
diff_ports(const char *s, size_t len, size_t *n)
{
	struct diff_range *v = NULL;
	const char *end = s + len;
	size_t cap = 0;

	*n = 0;
	while (s < end) {
		struct diff_range r;
		char *e;

		r.lo = r.hi = (unsigned)strtoul(s, &e, 10);
		if (e < end && *e == '-')
			r.hi = (unsigned)strtoul(e + 1, &e, 10);
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		v[(*n)++] = r;
		s = e < end ? e + 1 : end;
	}
	return v;
}

/* Prints "SIGN KEY PORTS" for the ports of a (sorted, disjoint) not in b; true if any. */
static bool
diff_minus(char sign, const struct diff_line *l, const struct diff_line *other)
{
	struct diff_range *a, *b;
	size_t na, nb, j = 0;
	bool any = false;

	a = diff_ports(l->ports, l->portslen, &na);
	b = other != NULL ? diff_ports(other->ports, other->portslen, &nb) : NULL;
	if (other == NULL)
		nb = 0;
	for (size_t i = 0; i < na; i++) {
		unsigned lo = a[i].lo;

		while (lo <= a[i].hi) {
			while (j < nb && b[j].hi < lo)
				j++;
			if (j < nb && b[j].lo <= lo) {
				lo = b[j].hi + 1;    /* covered by b up to b[j].hi */
				continue;
			}
			{
				unsigned hi = j < nb && b[j].lo <= a[i].hi ? b[j].lo - 1 : a[i].hi;

				printf("%c %.*s ", sign, (int)l->keylen, l->key);
				if (lo == hi)
					printf("%u", lo);
				else
					printf("%u-%u", lo, hi);
				/* One line per range: each is a reviewable change of its own. */
				printf("\n");
				any = true;
				lo = hi + 1;
			}
		}
	}
	free(a);
	free(b);
	return any;
}

static int
diff_keycmp(const struct diff_line *a, const struct diff_line *b)
{
	size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
	int c = memcmp(a->key, b->key, n);

	if (c != 0)
		return c;
	return a->keylen < b->keylen ? -1 : a->keylen > b->keylen;
}

/*
 * diff OLD NEW: what NEW allows (denies, sets) that OLD does not, as "+" lines, and the
 * reverse as "-" lines, over the canonical forms (so equal spellings are equal, and an
 * include is compared by the rules it brings). Exit 0 equal, 1 different, 2 usage or a
 * policy that does not load.
 */
static int
cmd_diff(int argc, char **argv)
{
	struct policy *p[2];
	struct diff_line *l[2];
	char *body[2];
	size_t n[2], i = 0, j = 0, blen;
	bool differ = false;

	if (argc != 3)
		usage("diff takes OLD NEW");
	for (int k = 0; k < 2; k++) {
		if ((p[k] = load_policy(argv[1 + k], NULL, false, NULL)) == NULL) {
			if (k == 1)
				policy_free(p[0]);
			return EXIT_USAGE;
		}
	}
	for (int k = 0; k < 2; k++) {
		body[k] = policy_canonical(p[k], &blen);
		l[k] = diff_lines(body[k], blen, &n[k]);      /* the lines point into body */
	}
	while (i < n[0] || j < n[1]) {
		int c = i == n[0] ? 1 : j == n[1] ? -1 : diff_keycmp(&l[0][i], &l[1][j]);

		if (c < 0) {
			if (l[0][i].ports != NULL)
				differ |= diff_minus('-', &l[0][i], NULL);
			else {
				printf("- %.*s\n", (int)l[0][i].keylen, l[0][i].key);
				differ = true;
			}
			i++;
		} else if (c > 0) {
			if (l[1][j].ports != NULL)
				differ |= diff_minus('+', &l[1][j], NULL);
			else {
				printf("+ %.*s\n", (int)l[1][j].keylen, l[1][j].key);
				differ = true;
			}
			j++;
		} else {
			if (l[0][i].ports != NULL && l[1][j].ports != NULL) {
				differ |= diff_minus('-', &l[0][i], &l[1][j]);
				differ |= diff_minus('+', &l[1][j], &l[0][i]);
			}
			i++;
			j++;
		}
	}
	for (int k = 0; k < 2; k++) {
		free(l[k]);
		free(body[k]);
		policy_free(p[k]);
	}
	if (fflush(stdout) != 0)
		return EXIT_USAGE;
	return differ ? EXIT_INVALID : 0;
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
		{ "suggest", cmd_suggest },
		{ "diff", cmd_diff },
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
