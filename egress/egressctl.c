/*
 * egressctl: the operator's tool. Speaks egressd's control protocol (one JSON object per
 * line, see control.c) and prints what a person reads. The receipt verbs (receipts,
 * receipts verify) read the receipt files themselves and need no egressd.
 *
 * Exit status: 0 success, 1 egressd refused or failed, 2 usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "sock.h"

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
	    "       egressctl [-s SOCK] lease POLICY-NAME\n"
	    "       egressctl [-s SOCK] metrics\n"
	    "       egressctl receipts [--file F ...] [--principal P] [--since T] [--until T]\n"
	    "                 [--decision allow|deny] [--reason R] [--host GLOB] [--follow]\n"
	    "                 [--json]\n"
	    "       egressctl receipts verify [--file F ...] [--key FILE]\n"
	    "                 [--pubkey FILE [--complete]]\n");
	exit(2);
}

static int
ctl_connect(const char *path)
{
	int fd;

	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		usage("socket path too long");
	if ((fd = egress_sock_unix_connect(path)) == -1) {
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

/* The Prometheus text exposition, as egressd serves it on metrics-listen. */
static int
cmd_metrics(int fd)
{
	json_t *o = ctl_call(fd, json_pack("{s:s}", "verb", "metrics"));
	const char *text = json_string_value(json_object_get(o, "text"));

	if (text == NULL) {
		fprintf(stderr, "%s: egressd sent no metrics\n", progname);
		json_decref(o);
		return 1;
	}
	fputs(text, stdout);
	json_decref(o);
	return 0;
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

/*
 * The receipt verbs read receipt files (docs/receipts.md) directly; they do not need
 * egressd. The files are untrusted input: every line is bounded by RCPT_LINE_MAX, and
 * a line is believed only as far as its chain and MAC go.
 */
#define RCPT_DEFAULT_FILE "/var/lib/egress/receipts.jsonl"
#define RCPT_LINE_MAX (64 * 1024)          /* egressd writes at most 4096 bytes a line */
#define RCPT_MAC_CONTEXT "egress-receipt-1" /* hashed with its NUL */
#define RCPT_HEX_LEN 64
#define RCPT_PREV_PREFIX "sha256:"
#define RCPT_MAC_SUFFIX_LEN (sizeof(",\"mac\":\"hmac-sha256:") - 1 + RCPT_HEX_LEN + 2)
#define RCPT_MAX_FILES 256

/* What the hand scanner takes from a line written in egressd's fixed member order. */
struct rcpt_scan {
	uint64_t seq;
	const char *prev;        /* RCPT_HEX_LEN hex digits */
	const char *event;
	size_t event_len;
	const char *mac;         /* RCPT_HEX_LEN hex digits, or NULL */
	size_t body_len;         /* the MACed part: the line up to ,"mac" */
};

static bool
rcpt_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/*
 * Scans {"seq":N,"prev":"sha256:HEX","event":"WORD" ... ,"mac":"hmac-sha256:HEX"} without
 * allocating. Returns 0, or -1 when the line does not have egressd's shape (the caller then
 * asks jansson what is wrong). Only printable ASCII is accepted: egressd escapes the rest.
 */
static int
rcpt_scan_line(const char *s, size_t len, struct rcpt_scan *r)
{
	static const char p_seq[] = "{\"seq\":", p_prev[] = ",\"prev\":\"sha256:",
	    p_event[] = "\",\"event\":\"", p_mac[] = ",\"mac\":\"hmac-sha256:";
	size_t i = sizeof(p_seq) - 1, start;

	for (start = 0; start < len; start++)
		if ((unsigned char)s[start] < 0x20 || (unsigned char)s[start] > 0x7e)
			return -1;
	if (len < 2 || s[len - 1] != '}' || len < sizeof(p_seq) ||
	    memcmp(s, p_seq, sizeof(p_seq) - 1) != 0)
		return -1;
	r->seq = 0;
	start = i;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		if (r->seq > (UINT64_MAX - 9) / 10)
			return -1;
		r->seq = r->seq * 10 + (uint64_t)(s[i] - '0');
		i++;
	}
	if (i == start || (s[start] == '0' && i - start > 1))
		return -1;
	if (len - i < sizeof(p_prev) - 1 + RCPT_HEX_LEN + sizeof(p_event) - 1 ||
	    memcmp(s + i, p_prev, sizeof(p_prev) - 1) != 0)
		return -1;
	i += sizeof(p_prev) - 1;
	r->prev = s + i;
	if (!rcpt_is_hex(r->prev, RCPT_HEX_LEN))
		return -1;
	i += RCPT_HEX_LEN;
	if (memcmp(s + i, p_event, sizeof(p_event) - 1) != 0)
		return -1;
	i += sizeof(p_event) - 1;
	r->event = s + i;
	while (i < len && s[i] >= 'a' && s[i] <= 'z')
		i++;
	r->event_len = (size_t)(s + i - r->event);
	if (r->event_len == 0 || i >= len || s[i] != '"')
		return -1;
	r->mac = NULL;
	r->body_len = len - 1;
	if (len - i > RCPT_MAC_SUFFIX_LEN &&
	    memcmp(s + len - RCPT_MAC_SUFFIX_LEN, p_mac, sizeof(p_mac) - 1) == 0) {
		r->mac = s + len - RCPT_MAC_SUFFIX_LEN + sizeof(p_mac) - 1;
		if (!rcpt_is_hex(r->mac, RCPT_HEX_LEN) || r->mac[RCPT_HEX_LEN] != '"')
			return -1;
		r->body_len = len - RCPT_MAC_SUFFIX_LEN;
	}
	return 0;
}

/* Whether jansson reads the line as one object whose seq, prev and event agree with r. */
static bool
rcpt_json_agrees(const char *s, size_t len, const struct rcpt_scan *r)
{
	json_error_t jerr;
	json_t *o = json_loadb(s, len, JSON_REJECT_DUPLICATES, &jerr), *v;
	const char *p, *e;
	bool ok;

	if (o == NULL)
		return false;
	v = json_object_get(o, "seq");
	p = json_string_value(json_object_get(o, "prev"));
	e = json_string_value(json_object_get(o, "event"));
	ok = json_is_object(o) && json_is_integer(v) && json_integer_value(v) >= 0 &&
	    (uint64_t)json_integer_value(v) == r->seq && p != NULL &&
	    strlen(p) == sizeof(RCPT_PREV_PREFIX) - 1 + RCPT_HEX_LEN &&
	    memcmp(p + sizeof(RCPT_PREV_PREFIX) - 1, r->prev, RCPT_HEX_LEN) == 0 && e != NULL &&
	    strlen(e) == r->event_len && memcmp(e, r->event, r->event_len) == 0;
	json_decref(o);
	return ok;
}

static bool
rcpt_event_is(const struct rcpt_scan *r, const char *ev)
{
	return r->event_len == strlen(ev) && memcmp(r->event, ev, r->event_len) == 0;
}

/* The state of the walk along the chain, across files. */
struct rcpt_verify {
	char prev[RCPT_HEX_LEN + 1];        /* hash of the last intact line */
	char prev_before[RCPT_HEX_LEN + 1]; /* hash of the line before that one */
	uint64_t seq, seq_before;           /* seq of those lines; 0: none yet */
	size_t last_len;                    /* length of the last intact line */
	uint64_t records, repaired;
	bool started;
	/* An unparseable line waiting for the repair record that must follow it. */
	bool torn;
	bool torn_nonl;                     /* it had no newline */
	char *torn_file;
	size_t torn_lineno;
	/* The first break. */
	bool broken;
	const char *bad_file;
	size_t bad_lineno;
	uint64_t bad_seq;
	bool bad_has_seq;
	char bad_what[160];
	/* Checkpoints (--pubkey): signatures over the head of the chain. */
	void *pubkey;
	uint64_t checkpoints, covered, last_ckpt_seq;
	bool last_ckpt_shutdown;
	/* The MAC key and the buffer the MAC is computed over. */
	struct egress_key *key;
	uint8_t *msg;
	size_t msg_cap;
};

static bool rcpt_checkpoint_ok(struct rcpt_verify *v, const char *file, size_t lineno,
    const char *s, size_t len, const struct rcpt_scan *r);

static void __attribute__((format(printf, 5, 6)))
rcpt_break(struct rcpt_verify *v, const char *file, size_t lineno, const uint64_t *seq,
    const char *fmt, ...)
{
	va_list ap;

	if (v->broken)
		return;
	v->broken = true;
	v->bad_file = file;
	v->bad_lineno = lineno;
	v->bad_has_seq = seq != NULL;
	v->bad_seq = seq ? *seq : 0;
	va_start(ap, fmt);
	vsnprintf(v->bad_what, sizeof(v->bad_what), fmt, ap);
	va_end(ap);
}

static bool
rcpt_mac_ok(struct rcpt_verify *v, const char *s, const struct rcpt_scan *r)
{
	size_t ctxlen = sizeof(RCPT_MAC_CONTEXT);   /* with its NUL */
	uint8_t md[EGRESS_SHA256_LEN];
	char hex[2 * EGRESS_SHA256_LEN + 1];

	if (ctxlen + r->body_len > v->msg_cap) {
		v->msg_cap = ctxlen + r->body_len;
		v->msg = xreallocarray(v->msg, v->msg_cap, 1);
	}
	memcpy(v->msg, RCPT_MAC_CONTEXT, ctxlen);
	memcpy(v->msg + ctxlen, s, r->body_len);
	egress_hmac_sha256(v->key->bytes, v->key->len, v->msg, ctxlen + r->body_len, md);
	egress_hex(md, sizeof(md), hex);
	return egress_timingsafe_bcmp(hex, r->mac, RCPT_HEX_LEN) == 0;
}

/* "torn-line bytes=N" of a repair record, or -1. */
static long long
rcpt_repair_bytes(const char *s, size_t len)
{
	static const char pat[] = "\"detail\":\"torn-line bytes=";
	const char *p = memmem(s, len, pat, sizeof(pat) - 1);
	long long n = 0;

	if (p == NULL)
		return -1;
	for (p += sizeof(pat) - 1; p < s + len && *p >= '0' && *p <= '9'; p++) {
		if (n > 1000000000LL)
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n;
}

/* One line (without its newline): moves the chain on, or records the first break. */
static void
rcpt_verify_line(struct rcpt_verify *v, const char *file, size_t lineno, char *s, size_t len,
    bool nonl)
{
	struct rcpt_scan r;
	uint8_t md[EGRESS_SHA256_LEN];
	char hash[2 * EGRESS_SHA256_LEN + 1];
	bool ok = len <= RCPT_LINE_MAX && rcpt_scan_line(s, len, &r) == 0;

	/*
	 * The scanner checks egressd's shape; jansson checks the whole line where the MAC
	 * or the next line's prev cannot vouch for it: the first line, a torn one, a repair.
	 * (jansson on every line runs at about 95 000 lines/s, the scanner at over 350 000.)
	 */
	if (ok && (!v->started || nonl || v->torn ||
	    rcpt_event_is(&r, "repair")))
		ok = rcpt_json_agrees(s, len, &r);
	if (!ok) {
		/* A line egressd did not write whole: only a repair record may follow it. */
		if (v->torn) {
			rcpt_break(v, v->torn_file, v->torn_lineno, NULL, "unparseable line");
			return;
		}
		v->torn = true;
		v->torn_nonl = nonl;
		free(v->torn_file);
		v->torn_file = xstrdup(file);
		v->torn_lineno = lineno;
		return;
	}
	if (v->torn) {
		if (!rcpt_event_is(&r, "repair") || memcmp(r.prev, v->prev, RCPT_HEX_LEN) != 0 ||
		    r.seq != v->seq + 1) {
			rcpt_break(v, v->torn_file, v->torn_lineno, NULL,
			    "unparseable line (not followed by its repair record)");
			return;
		}
		v->torn = false;
		v->repaired++;
	} else if (!v->started) {
		if (memcmp(r.prev, "0000000000000000000000000000000000000000000000000000000000000000",
		    RCPT_HEX_LEN) != 0) {
			rcpt_break(v, file, lineno, &r.seq, "the first record's prev is not 64 zeros: "
			    "the chain does not start here (give the files from the first)");
			return;
		}
		if (r.seq != 1) {
			rcpt_break(v, file, lineno, &r.seq, "the first record has seq %llu, not 1",
			    (unsigned long long)r.seq);
			return;
		}
	} else if (rcpt_event_is(&r, "repair") && v->seq_before + 1 == r.seq &&
	    memcmp(r.prev, v->prev_before, RCPT_HEX_LEN) == 0 &&
	    rcpt_repair_bytes(s, len) == (long long)v->last_len) {
		/* The torn line was whole but for its newline: it parsed, and is left out. */
		memcpy(v->prev, v->prev_before, sizeof(v->prev));
		v->seq = v->seq_before;
		v->records--;
		v->repaired++;
	} else {
		egress_sha256(s, len, md);
		egress_hex(md, sizeof(md), hash);
		if (memcmp(hash, v->prev, RCPT_HEX_LEN) == 0 || r.seq == v->seq) {
			rcpt_break(v, file, lineno, &r.seq, "duplicate (seq %llu after %llu)",
			    (unsigned long long)r.seq, (unsigned long long)v->seq);
			return;
		}
		if (r.seq != v->seq + 1) {
			rcpt_break(v, file, lineno, &r.seq, "seq %llu after %llu%s",
			    (unsigned long long)r.seq, (unsigned long long)v->seq,
			    memcmp(r.prev, v->prev, RCPT_HEX_LEN) != 0 ?
			    ": prev does not match the previous line: reordered, deleted or inserted" :
			    "");
			return;
		}
		if (memcmp(r.prev, v->prev, RCPT_HEX_LEN) != 0) {
			rcpt_break(v, file, lineno, &r.seq, "prev does not match the previous line: "
			    "changed, reordered, deleted or inserted");
			return;
		}
	}
	if (v->key != NULL) {
		if (r.mac == NULL) {
			rcpt_break(v, file, lineno, &r.seq, "no MAC");
			return;
		}
		if (!rcpt_mac_ok(v, s, &r)) {
			rcpt_break(v, file, lineno, &r.seq, "bad MAC");
			return;
		}
	}
	if (v->pubkey != NULL && rcpt_event_is(&r, "checkpoint") &&
	    !rcpt_checkpoint_ok(v, file, lineno, s, len, &r))
		return;
	if (nonl) {
		/* Whole, but a crash cut its newline: egressd's restart leaves it out. */
		v->torn = true;
		v->torn_nonl = true;
		free(v->torn_file);
		v->torn_file = xstrdup(file);
		v->torn_lineno = lineno;
		return;
	}
	egress_sha256(s, len, md);
	memcpy(v->prev_before, v->prev, sizeof(v->prev));
	egress_hex(md, sizeof(md), v->prev);
	v->seq_before = v->seq;
	v->seq = r.seq;
	v->last_len = len;
	v->started = true;
	v->records++;
}

/*
 * A checkpoint's head must be the hash of the line before it, and its sig the Ed25519
 * signature over "egress-checkpoint-1\0" + its seq in decimal + head.
 */
static bool
rcpt_checkpoint_ok(struct rcpt_verify *v, const char *file, size_t lineno, const char *s,
    size_t len, const struct rcpt_scan *r)
{
	static const char ctx[] = "egress-checkpoint-1";
	json_t *o = json_loadb(s, len, JSON_REJECT_DUPLICATES, NULL);
	const char *head = o ? json_string_value(json_object_get(o, "head")) : NULL;
	const char *sig = o ? json_string_value(json_object_get(o, "sig")) : NULL;
	const char *detail = o ? json_string_value(json_object_get(o, "detail")) : NULL;
	uint8_t raw[EGRESS_ED25519_SIGLEN];
	char msg[128];
	int n;

	if (head == NULL || sig == NULL || strlen(head) != sizeof(RCPT_PREV_PREFIX) - 1 +
	    RCPT_HEX_LEN || memcmp(head + sizeof(RCPT_PREV_PREFIX) - 1, v->prev, RCPT_HEX_LEN) ||
	    memcmp(r->prev, v->prev, RCPT_HEX_LEN) != 0) {
		rcpt_break(v, file, lineno, &r->seq, "checkpoint head is not the hash of the "
		    "line before it");
		json_decref(o);
		return false;
	}
	if (strlen(sig) != 8 + 2 * EGRESS_ED25519_SIGLEN || memcmp(sig, "ed25519:", 8) != 0 ||
	    !rcpt_is_hex(sig + 8, 2 * EGRESS_ED25519_SIGLEN)) {
		rcpt_break(v, file, lineno, &r->seq, "checkpoint without an Ed25519 signature");
		json_decref(o);
		return false;
	}
	for (size_t i = 0; i < EGRESS_ED25519_SIGLEN; i++) {
		char h[3] = { sig[8 + 2 * i], sig[9 + 2 * i], '\0' };

		raw[i] = (uint8_t)strtoul(h, NULL, 16);
	}
	memcpy(msg, ctx, sizeof(ctx));
	n = snprintf(msg + sizeof(ctx), sizeof(msg) - sizeof(ctx), "%llu%s",
	    (unsigned long long)r->seq, head);
	if (n < 0 || (size_t)n >= sizeof(msg) - sizeof(ctx) ||
	    !egress_ed25519_verify(v->pubkey, msg, sizeof(ctx) + (size_t)n, raw)) {
		rcpt_break(v, file, lineno, &r->seq, "bad checkpoint signature (wrong --pubkey, "
		    "or the chain before it was rewritten)");
		json_decref(o);
		return false;
	}
	v->checkpoints++;
	v->covered = v->records + 1;
	v->last_ckpt_seq = r->seq;
	v->last_ckpt_shutdown = detail != NULL && strcmp(detail, "shutdown") == 0;
	json_decref(o);
	return true;
}

/* Reads one file; returns -1 when it cannot be read. */
static int
rcpt_verify_file(struct rcpt_verify *v, const char *file)
{
	FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;

	if (fp == NULL) {
		fprintf(stderr, "%s: %s: %s\n", progname, file, strerror(errno));
		return -1;
	}
	while (!v->broken && (n = getline(&line, &cap, fp)) > 0) {
		bool nonl = line[n - 1] != '\n';

		lineno++;
		if (!nonl)
			line[--n] = '\0';
		rcpt_verify_line(v, file, lineno, line, (size_t)n, nonl);
	}
	free(line);
	if (ferror(fp)) {
		fprintf(stderr, "%s: %s: read error\n", progname, file);
		if (fp != stdin)
			fclose(fp);
		return -1;
	}
	if (fp != stdin)
		fclose(fp);
	return 0;
}

static int
cmd_receipts_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "key", required_argument, NULL, 'k' },
		{ "pubkey", required_argument, NULL, 'p' },
		{ "complete", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *files[RCPT_MAX_FILES], *keyfile = NULL, *pubfile = NULL;
	size_t nfiles = 0, i;
	struct rcpt_verify v;
	struct egress_key key;
	char err[512];
	bool unreadable = false, complete = false;
	int ch, rc;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (nfiles == RCPT_MAX_FILES)
				usage("too many --file");
			files[nfiles++] = optarg;
			break;
		case 'k': keyfile = optarg; break;
		case 'p': pubfile = optarg; break;
		case 'c': complete = true; break;
		default: usage(NULL);
		}
	}
	if (optind != argc)
		usage("receipts verify takes no operand (use --file)");
	/* Only a signature tells egressd's shutdown checkpoint from one anyone appended. */
	if (complete && pubfile == NULL)
		usage("--complete needs --pubkey");
	if (nfiles == 0)
		files[nfiles++] = RCPT_DEFAULT_FILE;
	memset(&v, 0, sizeof(v));
	memset(v.prev, '0', RCPT_HEX_LEN);
	if (keyfile != NULL) {
		/* A key that cannot be read is a runtime failure (1), not a usage error. */
		if (egress_key_load(keyfile, &key, err, sizeof(err)) == -1) {
			fprintf(stderr, "%s: --key %s\n", progname, err);
			return 1;
		}
		v.key = &key;
	}
	if (pubfile != NULL &&
	    (v.pubkey = egress_ed25519_load(pubfile, false, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s: --pubkey %s\n", progname, err);
		if (v.key)
			egress_key_clear(&key);
		return 1;
	}
	rc = 0;
	for (i = 0; i < nfiles && !v.broken; i++)
		if (rcpt_verify_file(&v, files[i]) == -1) {
			rc = 1;              /* the message says which file */
			unreadable = true;
			break;
		}
	if (!unreadable && !v.broken && v.torn)
		rcpt_break(&v, v.torn_file, v.torn_lineno, NULL, v.torn_nonl ?
		    "torn line at the end (not repaired)" : "unparseable line");
	if (!unreadable && !v.broken && v.pubkey != NULL && v.checkpoints == 0)
		rcpt_break(&v, files[nfiles - 1], 0, NULL, "no checkpoint: nothing is signed "
		    "(is signing-key set in egressd.conf?)");
	if (v.broken) {
		if (v.bad_has_seq)
			printf("%s:%zu: seq %llu: %s\n", v.bad_file, v.bad_lineno,
			    (unsigned long long)v.bad_seq, v.bad_what);
		else
			printf("%s:%zu: %s\n", v.bad_file, v.bad_lineno, v.bad_what);
		printf("%llu records verified before the first break\n",
		    (unsigned long long)v.records);
		rc = 1;
	} else if (!unreadable) {
		printf("%llu records verified%s", (unsigned long long)v.records,
		    v.key ? ", MACs good" : ", chain only (no --key)");
		if (v.repaired)
			printf(", %llu torn line%s repaired", (unsigned long long)v.repaired,
			    v.repaired == 1 ? "" : "s");
		printf("\n");
		if (v.pubkey != NULL)
			printf("%llu checkpoint%s signed, the last at seq %llu%s; %llu record%s "
			    "after it not covered by a signature\n",
			    (unsigned long long)v.checkpoints, v.checkpoints == 1 ? "" : "s",
			    (unsigned long long)v.last_ckpt_seq,
			    v.last_ckpt_shutdown ? " (egressd's shutdown)" : "",
			    (unsigned long long)(v.records - v.covered),
			    v.records - v.covered == 1 ? "" : "s");
		/*
		 * A live file legitimately ends without the shutdown checkpoint; a finished one
		 * (--complete) must, or its tail was cut, even right after a periodic one.
		 */
		if (complete && !(v.last_ckpt_shutdown && v.records == v.covered)) {
			printf("not complete: the last record is not egressd's shutdown "
			    "checkpoint (the tail was cut, or egressd is still writing)\n");
			rc = 1;
		}
	}
	if (v.key)
		egress_key_clear(&key);
	egress_ed25519_free(v.pubkey);
	free(v.torn_file);
	free(v.msg);
	return rc;
}

#define RCPT_TIME_FRAC_MAX 9           /* fraction digits read; the first 3 are kept */

/* Exactly n ASCII digits at p (no sign, no space: sscanf's %d takes both). */
static bool
rcpt_digits(const char *p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		*v = *v * 10 + (p[i] - '0');
	}
	return true;
}

static int
rcpt_days_in_month(int y, int mo)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[mo - 1];
}

/*
 * A time argument as egressd writes times, "YYYY-MM-DDTHH:MM:SS.mmmZ", so that records
 * compare as strings. Accepted, strictly (fixed field widths, nothing else around):
 *   YYYY-MM-DD                                  midnight UTC
 *   YYYY-MM-DD{T| }hh:mm[:ss[.f]][Z|+hh:mm|-hh:mm|+hhmm|-hhmm|+hh|-hh]
 * with 1 to RCPT_TIME_FRAC_MAX fraction digits (milliseconds kept), no zone meaning UTC,
 * and an offset converted to UTC; or relative to now (-90s, -30m, -1h, -2d). Returns -1
 * when it is none of these.
 */
static int
rcpt_parse_time(const char *arg, char out[32])
{
	struct tm tm;
	time_t t;
	int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, off = 0;
	char *end;

	if (arg[0] == '-') {
		long long v;

		errno = 0;
		v = strtoll(arg + 1, &end, 10);
		if (errno != 0 || end == arg + 1 || v < 0 || v > 100LL * 366 * 86400 ||
		    end[0] == '\0' || end[1] != '\0')
			return -1;
		switch (*end) {
		case 's': break;
		case 'm': v *= 60; break;
		case 'h': v *= 3600; break;
		case 'd': v *= 86400; break;
		default: return -1;
		}
		t = time(NULL) - (time_t)v;
		if (gmtime_r(&t, &tm) == NULL)
			return -1;
		y = tm.tm_year + 1900;
		mo = tm.tm_mon + 1;
		d = tm.tm_mday;
		h = tm.tm_hour;
		mi = tm.tm_min;
		sec = tm.tm_sec;
	} else {
		const char *p = arg;

		if (!rcpt_digits(p, 4, &y) || p[4] != '-' || !rcpt_digits(p + 5, 2, &mo) ||
		    p[7] != '-' || !rcpt_digits(p + 8, 2, &d))
			return -1;
		p += 10;
		if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > rcpt_days_in_month(y, mo))
			return -1;
		if (*p != '\0') {
			if ((p[0] != 'T' && p[0] != ' ') || !rcpt_digits(p + 1, 2, &h) ||
			    p[3] != ':' || !rcpt_digits(p + 4, 2, &mi))
				return -1;
			p += 6;
			if (p[0] == ':') {
				if (!rcpt_digits(p + 1, 2, &sec))
					return -1;
				p += 3;
				if (p[0] == '.') {
					int digits = 0;

					for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
						if (digits == RCPT_TIME_FRAC_MAX)
							return -1;
						if (digits < 3)
							ms = ms * 10 + (*p - '0');
					}
					if (digits == 0)
						return -1;
					for (; digits < 3; digits++)
						ms *= 10;
				}
			}
			if (p[0] == 'Z') {
				p++;
			} else if (p[0] == '+' || p[0] == '-') {
				int oh, om = 0;

				if (!rcpt_digits(p + 1, 2, &oh))
					return -1;
				if (p[3] == ':') {
					if (!rcpt_digits(p + 4, 2, &om) || p[6] != '\0')
						return -1;
				} else if (p[3] != '\0' && (!rcpt_digits(p + 3, 2, &om) ||
				    p[5] != '\0'))
					return -1;
				if (oh > 23 || om > 59)
					return -1;
				off = (p[0] == '-' ? -1 : 1) * (oh * 60 + om);
				p += strlen(p);
			}
			if (*p != '\0' || h > 23 || mi > 59 || sec > 60)
				return -1;
		}
		if (off != 0) {
			/* Local time minus its offset is UTC; timegm carries across days. */
			memset(&tm, 0, sizeof(tm));
			tm.tm_year = y - 1900;
			tm.tm_mon = mo - 1;
			tm.tm_mday = d;
			tm.tm_hour = h;
			tm.tm_min = mi;
			tm.tm_sec = sec;
			if ((t = timegm(&tm)) == (time_t)-1)
				return -1;
			t -= (time_t)off * 60;
			if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 1970)
				return -1;
			y = tm.tm_year + 1900;
			mo = tm.tm_mon + 1;
			d = tm.tm_mday;
			h = tm.tm_hour;
			mi = tm.tm_min;
			sec = tm.tm_sec;
		}
	}
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y % 10000, mo % 100, d % 100,
	    h % 100, mi % 100, sec % 100, ms % 1000);
	return 0;
}

struct rcpt_query {
	const char *principal, *reason, *host, *decision;
	char since[32], until[32];
	bool has_since, has_until, json;
	char *needle;            /* a substring every matching line holds, or NULL */
	uint64_t matched, skipped;
};

/* The substring '"key":"value"' that a line holding that member has, when value needs no escape. */
static char *
rcpt_needle(const char *key, const char *value)
{
	const unsigned char *p;
	char *s;

	for (p = (const unsigned char *)value; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
			return NULL;
	xasprintf(&s, "\"%s\":\"%s\"", key, value);
	return s;
}

static const char *
rcpt_jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
rcpt_print_row(json_t *o)
{
	const char *ev = rcpt_jstr(o, "event"), *host = rcpt_jstr(o, "host"),
	    *reason = rcpt_jstr(o, "reason"), *close = rcpt_jstr(o, "close");
	json_t *port = json_object_get(o, "port"), *up = json_object_get(o, "bytes_up"),
	    *down = json_object_get(o, "bytes_down"), *dur = json_object_get(o, "duration_ms"),
	    *count = json_object_get(o, "count");
	char hp[300], dec[160], b_up[24], b_down[24], b_dur[32];

	if (host == NULL && rcpt_jstr(o, "raw") != NULL)
		host = "(raw)";
	if (json_is_integer(port))
		snprintf(hp, sizeof(hp), "%s:%lld", host ? host : "-",
		    (long long)json_integer_value(port));
	else
		snprintf(hp, sizeof(hp), "%s", host ? host : "-");
	if (ev != NULL && strcmp(ev, "deny") == 0 && json_integer_value(count) > 1)
		snprintf(dec, sizeof(dec), "deny/%s x%lld", reason ? reason : "-",
		    (long long)json_integer_value(count));   /* identical denials collapsed */
	else if (ev != NULL && strcmp(ev, "deny") == 0)
		snprintf(dec, sizeof(dec), "deny/%s", reason ? reason : "-");
	else if (ev != NULL && (strcmp(ev, "open") == 0 || strcmp(ev, "close") == 0))
		snprintf(dec, sizeof(dec), "%s/%s%s%s", ev, reason ? reason : "-",
		    close ? "/" : "", close ? close : "");
	else
		snprintf(dec, sizeof(dec), "%s", ev ? ev : "-");
	snprintf(b_up, sizeof(b_up), json_is_integer(up) ? "%lld" : "-",
	    (long long)json_integer_value(up));
	snprintf(b_down, sizeof(b_down), json_is_integer(down) ? "%lld" : "-",
	    (long long)json_integer_value(down));
	snprintf(b_dur, sizeof(b_dur), json_is_integer(dur) ? "%lldms" : "-",
	    (long long)json_integer_value(dur));
	printf("%-24s %-16s %-12s %-32s %-15s %-32s %10s %10s %9s\n",
	    rcpt_jstr(o, "time") ? rcpt_jstr(o, "time") : "-",
	    rcpt_jstr(o, "principal") ? rcpt_jstr(o, "principal") : "-",
	    rcpt_jstr(o, "frontend") ? rcpt_jstr(o, "frontend") : "-", hp,
	    rcpt_jstr(o, "addr") ? rcpt_jstr(o, "addr") : "-", dec, b_up, b_down, b_dur);
}

static bool
rcpt_matches(const struct rcpt_query *q, json_t *o)
{
	const char *s, *ev = rcpt_jstr(o, "event");

	if (q->principal && ((s = rcpt_jstr(o, "principal")) == NULL || strcmp(s, q->principal) != 0))
		return false;
	if (q->reason && ((s = rcpt_jstr(o, "reason")) == NULL || strcmp(s, q->reason) != 0))
		return false;
	if (q->decision) {
		if (ev == NULL)
			return false;
		if (strcmp(q->decision, "deny") == 0 ? strcmp(ev, "deny") != 0 :
		    strcmp(ev, "open") != 0 && strcmp(ev, "close") != 0)
			return false;
	}
	if (q->host && ((s = rcpt_jstr(o, "host")) == NULL || fnmatch(q->host, s, 0) != 0))
		return false;
	if (q->has_since || q->has_until) {
		if ((s = rcpt_jstr(o, "time")) == NULL)
			return false;
		if (q->has_since && strcmp(s, q->since) < 0)
			return false;
		if (q->has_until && strcmp(s, q->until) >= 0)
			return false;
	}
	return true;
}

/* One line (without its newline, NUL-terminated at len): printed when it matches. */
static void
rcpt_query_line(struct rcpt_query *q, const char *file, size_t lineno, char *line, size_t len)
{
	json_error_t jerr;
	json_t *o = NULL;

	/* Most lines of a large file are excluded by a cheap look for the principal. */
	if (q->needle != NULL && strstr(line, q->needle) == NULL)
		return;
	if (len > RCPT_LINE_MAX ||
	    (o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
	    !json_is_object(o)) {
		if (q->skipped++ == 0)
			fprintf(stderr, "%s: %s:%zu: unparseable line skipped "
			    "(egressctl receipts verify says more)\n", progname, file, lineno);
		json_decref(o);
		return;
	}
	if (rcpt_matches(q, o)) {
		q->matched++;
		if (q->json) {
			fwrite(line, 1, len, stdout);
			putchar('\n');
		} else
			rcpt_print_row(o);
	}
	json_decref(o);
}

static int
rcpt_query_file(struct rcpt_query *q, const char *file)
{
	FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int rc = 0;

	if (fp == NULL) {
		fprintf(stderr, "%s: %s: %s\n", progname, file, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) > 0) {
		size_t len = (size_t)n;

		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		rcpt_query_line(q, file, lineno, line, len);
	}
	free(line);
	if (ferror(fp)) {
		fprintf(stderr, "%s: %s: read error\n", progname, file);
		rc = -1;
	}
	if (fp != stdin)
		fclose(fp);
	return rc;
}

/*
 * --follow: reads the last file as egressd appends to it, like tail -F. The file is
 * read by its descriptor so that, when the path comes to name another file (mv and
 * SIGUSR1) or the file gets shorter (copytruncate), what was written to the old one
 * before the switch is still read. Memory is the one line buffer: a line longer than
 * RCPT_LINE_MAX is skipped as unparseable.
 */
#define RCPT_FOLLOW_POLL_MS 200
#define RCPT_FOLLOW_CHUNK (16 * 1024)

struct rcpt_follow {
	const char *path;
	int fd;
	dev_t dev;
	ino_t ino;
	off_t pos;               /* bytes read from fd */
	size_t lineno;
	char *buf;               /* RCPT_LINE_MAX + 1 bytes and a NUL */
	size_t len;              /* bytes of a line not yet ended */
	bool discarding;         /* inside a line too long to keep */
};

static volatile sig_atomic_t rcpt_follow_stop;

static void
rcpt_follow_signal(int sig)
{
	(void)sig;
	rcpt_follow_stop = 1;
}

/* Opens path for following; -1 (errno set) when it cannot be opened. */
static int
rcpt_follow_open(struct rcpt_follow *f)
{
	struct stat st;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return -1;
	}
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->pos = 0;
	f->lineno = 0;
	f->len = 0;
	f->discarding = false;
	return 0;
}

/* Reads fd to its end, handing each whole line on. Returns -1 on a read error. */
static int
rcpt_follow_drain(struct rcpt_query *q, struct rcpt_follow *f)
{
	for (;;) {
		size_t room = RCPT_LINE_MAX + 1 - f->len, start, i;
		ssize_t n;

		if (rcpt_follow_stop)
			return 0;
		if (room > RCPT_FOLLOW_CHUNK)
			room = RCPT_FOLLOW_CHUNK;
		n = read(f->fd, f->buf + f->len, room);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "%s: %s: %s\n", progname, f->path, strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		f->pos += n;
		start = 0;
		for (i = f->len; i < f->len + (size_t)n; i++) {
			if (f->buf[i] != '\n')
				continue;
			f->lineno++;
			f->buf[i] = '\0';
			if (!f->discarding)
				rcpt_query_line(q, f->path, f->lineno, f->buf + start, i - start);
			f->discarding = false;
			start = i + 1;
		}
		f->len += (size_t)n;
		if (start > 0) {
			memmove(f->buf, f->buf + start, f->len - start);
			f->len -= start;
		}
		if (f->len > RCPT_LINE_MAX) {
			/* Too long to be egressd's: say so once, and drop it up to its newline. */
			if (!f->discarding && q->skipped++ == 0)
				fprintf(stderr, "%s: %s:%zu: unparseable line skipped "
				    "(egressctl receipts verify says more)\n", progname, f->path,
				    f->lineno + 1);
			f->discarding = true;
			f->len = 0;
		}
	}
}

/* The end of a file being left: a last line without its newline is torn, and skipped. */
static void
rcpt_follow_close(struct rcpt_query *q, struct rcpt_follow *f)
{
	if (f->len > 0 && !f->discarding && q->skipped++ == 0)
		fprintf(stderr, "%s: %s:%zu: unparseable line skipped "
		    "(egressctl receipts verify says more)\n", progname, f->path, f->lineno + 1);
	close(f->fd);
	f->fd = -1;
}

/* Runs until SIGINT or SIGTERM (0), or a read error (-1). */
static int
rcpt_follow(struct rcpt_query *q, const char *path)
{
	struct rcpt_follow f;
	struct sigaction sa;
	struct stat st;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = rcpt_follow_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	memset(&f, 0, sizeof(f));
	f.path = path;
	if (rcpt_follow_open(&f) == -1) {
		fprintf(stderr, "%s: %s: %s\n", progname, path, strerror(errno));
		return -1;
	}
	f.buf = xmalloc(RCPT_LINE_MAX + 2);
	while (!rcpt_follow_stop) {
		struct timespec ts = { 0, RCPT_FOLLOW_POLL_MS * 1000000L };
		bool moved, shrunk;

		if (rcpt_follow_drain(q, &f) == -1) {
			rc = -1;
			break;
		}
		if (fflush(stdout) == EOF) {
			rc = -1;
			break;
		}
		if (rcpt_follow_stop)
			break;
		nanosleep(&ts, NULL);
		/* A path that names nothing (between mv and the reopen) is not a rotation yet. */
		moved = stat(path, &st) == 0 && (st.st_dev != f.dev || st.st_ino != f.ino);
		shrunk = !moved && fstat(f.fd, &st) == 0 && st.st_size < f.pos;
		if (moved) {
			/* Whatever reached the old file before the switch is still to be read. */
			if (rcpt_follow_drain(q, &f) == -1) {
				rc = -1;
				break;
			}
			rcpt_follow_close(q, &f);
			/* Gone again before we got there: wait for the next one. */
			while (!rcpt_follow_stop && rcpt_follow_open(&f) == -1) {
				if (errno != ENOENT) {
					fprintf(stderr, "%s: %s: %s\n", progname, path, strerror(errno));
					rc = -1;
					break;
				}
				nanosleep(&ts, NULL);
			}
			if (f.fd == -1)
				break;
		} else if (shrunk) {
			if (lseek(f.fd, 0, SEEK_SET) == -1) {
				fprintf(stderr, "%s: %s: %s\n", progname, path, strerror(errno));
				rc = -1;
				break;
			}
			f.pos = 0;
			f.lineno = 0;
			f.len = 0;
			f.discarding = false;
		}
	}
	if (f.fd != -1)
		close(f.fd);
	free(f.buf);
	return rc;
}

static int
cmd_receipts(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "principal", required_argument, NULL, 'p' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "decision", required_argument, NULL, 'd' },
		{ "reason", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "follow", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *files[RCPT_MAX_FILES];
	size_t nfiles = 0, i;
	struct rcpt_query q;
	bool follow = false;
	int ch, rc = 0;

	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return cmd_receipts_verify(argc - 1, argv + 1);
	memset(&q, 0, sizeof(q));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (nfiles == RCPT_MAX_FILES)
				usage("too many --file");
			files[nfiles++] = optarg;
			break;
		case 'p': q.principal = optarg; break;
		case 's':
			if (rcpt_parse_time(optarg, q.since) == -1)
				usage("--since takes an ISO 8601 time or -N[smhd]");
			q.has_since = true;
			break;
		case 'u':
			if (rcpt_parse_time(optarg, q.until) == -1)
				usage("--until takes an ISO 8601 time or -N[smhd]");
			q.has_until = true;
			break;
		case 'd':
			if (strcmp(optarg, "allow") != 0 && strcmp(optarg, "deny") != 0)
				usage("--decision takes allow or deny");
			q.decision = optarg;
			break;
		case 'r': q.reason = optarg; break;
		case 'H': q.host = optarg; break;
		case 'j': q.json = true; break;
		case 'F': follow = true; break;
		default: usage(NULL);
		}
	}
	if (optind != argc)
		usage("receipts takes no operand (use --file)");
	if (nfiles == 0)
		files[nfiles++] = RCPT_DEFAULT_FILE;
	if (q.principal)
		q.needle = rcpt_needle("principal", q.principal);
	else if (q.reason)
		q.needle = rcpt_needle("reason", q.reason);
	else if (q.decision && strcmp(q.decision, "deny") == 0)
		q.needle = rcpt_needle("event", "deny");
	if (!q.json)
		printf("%-24s %-16s %-12s %-32s %-15s %-32s %10s %10s %9s\n", "TIME", "PRINCIPAL",
		    "FRONTEND", "HOST:PORT", "ADDRESS", "DECISION/REASON", "UP", "DOWN", "DURATION");
	if (follow && strcmp(files[nfiles - 1], "-") == 0)
		usage("--follow follows a file, not the standard input");
	for (i = 0; i < nfiles - (follow ? 1 : 0); i++)
		if (rcpt_query_file(&q, files[i]) == -1) {
			rc = 1;
			break;
		}
	/* The last file is read whole by the follower, then followed. */
	if (follow && rc == 0 && rcpt_follow(&q, files[nfiles - 1]) == -1)
		rc = 1;
	free(q.needle);
	if (fflush(stdout) == EOF && errno != EPIPE) {
		fprintf(stderr, "%s: stdout: %s\n", progname, strerror(errno));
		rc = 1;
	}
	return rc;
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
	if (strcmp(argv[0], "receipts") == 0)
		return cmd_receipts(argc, argv);
	if (strcmp(argv[0], "status") != 0 && strcmp(argv[0], "principal") != 0 &&
	    strcmp(argv[0], "lease") != 0 && strcmp(argv[0], "metrics") != 0)
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
	if (strcmp(argv[0], "metrics") == 0) {
		if (argc != 1)
			usage("metrics takes no operand");
		return cmd_metrics(fd);
	}
	return cmd_principal(fd, argc - 1, argv + 1);
}
