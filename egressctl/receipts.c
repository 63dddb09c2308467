/*
 * receipts.c: egressctl's receipt verbs, receipts (query, --follow) and receipts verify.
 * They read receipt files (docs/receipts.md) directly and need no egressd. The files are
 * untrusted input: every line is bounded by RCPT_INPUT_MAX, and a line is believed only
 * as far as its chain and MAC go; the line's layout, chain, MAC and checkpoint are
 * proto/receipt.c's, which also walks the chain (rcpt_verify_*). This file reads the
 * files, filters and prints.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "egressctl.h"
#include "log.h"
#include "receipt.h"

#define CTL_RECEIPTS_FILE "/var/lib/egress/receipts.jsonl"
#define CTL_MAX_FILES 256

static int
ctl_verify_file(struct rcpt_verify *v, const char *file)
{
	FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;

	if (fp == NULL) {
		log_warn("%s", file);
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
		log_warnx("%s: read error", file);
		if (fp != stdin)
			fclose(fp);
		return -1;
	}
	if (fp != stdin)
		fclose(fp);
	return 0;
}

int
ctl_receipts_verify(int fd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "key", required_argument, NULL, 'k' },
		{ "pubkey", required_argument, NULL, 'p' },
		{ "complete", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *files[CTL_MAX_FILES], *keyfile = NULL, *pubfile = NULL;
	size_t nfiles = 0, i;
	struct rcpt_verify v;
	struct egress_key key;
	void **pubkeys = NULL;
	size_t npubkeys = 0;
	char err[512];
	bool unreadable = false, complete = false;
	int ch, rc;

	(void)fd;                /* no egressd: the files are read directly */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (nfiles == CTL_MAX_FILES)
				ctl_usage("too many --file");
			files[nfiles++] = optarg;
			break;
		case 'k': keyfile = optarg; break;
		case 'p': pubfile = optarg; break;
		case 'c': complete = true; break;
		default: ctl_usage(NULL);
		}
	}
	if (optind != argc)
		ctl_usage("receipts verify takes no operand (use --file)");
	/* Only a signature tells egressd's shutdown checkpoint from one anyone appended. */
	if (complete && pubfile == NULL)
		ctl_usage("--complete needs --pubkey");
	if (nfiles == 0)
		files[nfiles++] = CTL_RECEIPTS_FILE;
	if (keyfile != NULL) {
		/* A key that cannot be read is a runtime failure (1), not a usage error. */
		if (egress_key_load(keyfile, &key, err, sizeof(err)) == -1) {
			log_warnx("--key %s", err);
			return 1;
		}
	}
	/* One file may hold several keys: egress-run appends one per run (egress-run(1)). */
	if (pubfile != NULL &&
	    (pubkeys = egress_ed25519_load_pubs(pubfile, &npubkeys, err, sizeof(err))) == NULL) {
		log_warnx("--pubkey %s", err);
		if (keyfile != NULL)
			egress_key_clear(&key);
		return 1;
	}
	rcpt_verify_init_pubkeys(&v, keyfile != NULL ? &key : NULL, pubkeys, npubkeys);
	rc = 0;
	for (i = 0; i < nfiles && !v.broken; i++)
		if (ctl_verify_file(&v, files[i]) == -1) {
			rc = 1;              /* the message says which file */
			unreadable = true;
			break;
		}
	if (!unreadable)
		rcpt_verify_end(&v, files[nfiles - 1]);
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
	if (keyfile != NULL)
		egress_key_clear(&key);
	egress_ed25519_free_pubs(pubkeys, npubkeys);
	return rc;
}

struct ctl_query {
	const char *principal, *reason, *host, *decision;
	char since[32], until[32];
	bool has_since, has_until, json;
	const char *needle;      /* a substring every matching line holds, or NULL */
	char needle_buf[256];
	uint64_t matched, skipped;
};

static const char *
ctl_jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
ctl_print_row(json_t *o)
{
	const char *ev = ctl_jstr(o, "event"), *host = ctl_jstr(o, "host"),
	    *reason = ctl_jstr(o, "reason"), *close = ctl_jstr(o, "close");
	json_t *port = json_object_get(o, "port"), *up = json_object_get(o, "bytes_up"),
	    *down = json_object_get(o, "bytes_down"), *dur = json_object_get(o, "duration_ms"),
	    *count = json_object_get(o, "count");
	char hp[300], dec[160], b_up[24], b_down[24], b_dur[32];

	if (host == NULL && ctl_jstr(o, "raw") != NULL)
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
	    ctl_jstr(o, "time") ? ctl_jstr(o, "time") : "-",
	    ctl_jstr(o, "principal") ? ctl_jstr(o, "principal") : "-",
	    ctl_jstr(o, "frontend") ? ctl_jstr(o, "frontend") : "-", hp,
	    ctl_jstr(o, "addr") ? ctl_jstr(o, "addr") : "-", dec, b_up, b_down, b_dur);
}

static bool
ctl_matches(const struct ctl_query *q, json_t *o)
{
	const char *s, *ev = ctl_jstr(o, "event");

	if (q->principal && ((s = ctl_jstr(o, "principal")) == NULL || strcmp(s, q->principal) != 0))
		return false;
	if (q->reason && ((s = ctl_jstr(o, "reason")) == NULL || strcmp(s, q->reason) != 0))
		return false;
	if (q->decision) {
		if (ev == NULL)
			return false;
		if (strcmp(q->decision, "deny") == 0 ? strcmp(ev, "deny") != 0 :
		    strcmp(ev, "open") != 0 && strcmp(ev, "close") != 0)
			return false;
	}
	if (q->host && ((s = ctl_jstr(o, "host")) == NULL || fnmatch(q->host, s, 0) != 0))
		return false;
	if (q->has_since || q->has_until) {
		if ((s = ctl_jstr(o, "time")) == NULL)
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
ctl_query_line(struct ctl_query *q, const char *file, size_t lineno, char *line, size_t len)
{
	json_error_t jerr;
	json_t *o = NULL;

	/* Most lines of a large file are excluded by a cheap look for the principal. */
	if (q->needle != NULL && strstr(line, q->needle) == NULL)
		return;
	if (len > RCPT_INPUT_MAX ||
	    (o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
	    !json_is_object(o)) {
		if (q->skipped++ == 0)
			log_warnx("%s:%zu: unparseable line skipped "
			    "(egressctl receipts verify says more)",
			    file, lineno);
		json_decref(o);
		return;
	}
	if (ctl_matches(q, o)) {
		q->matched++;
		if (q->json) {
			fwrite(line, 1, len, stdout);
			putchar('\n');
		} else
			ctl_print_row(o);
	}
	json_decref(o);
}

static int
ctl_query_file(struct ctl_query *q, const char *file)
{
	FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int rc = 0;

	if (fp == NULL) {
		log_warn("%s", file);
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) > 0) {
		size_t len = (size_t)n;

		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		ctl_query_line(q, file, lineno, line, len);
	}
	free(line);
	if (ferror(fp)) {
		log_warnx("%s: read error", file);
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
 * RCPT_INPUT_MAX is skipped as unparseable.
 */
#define CTL_FOLLOW_POLL_MS 200
#define CTL_FOLLOW_CHUNK (16 * 1024)

struct ctl_follow {
	const char *path;
	int fd;
	dev_t dev;
	ino_t ino;
	off_t pos;               /* bytes read from fd */
	size_t lineno;
	char *buf;               /* RCPT_INPUT_MAX + 1 bytes and a NUL */
	size_t len;              /* bytes of a line not yet ended */
	bool discarding;         /* inside a line too long to keep */
};

static volatile sig_atomic_t ctl_follow_stop;

static void
ctl_follow_signal(int sig)
{
	(void)sig;
	ctl_follow_stop = 1;
}

/* Opens path for following; -1 (errno set) when it cannot be opened. */
static int
ctl_follow_open(struct ctl_follow *f)
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
ctl_follow_drain(struct ctl_query *q, struct ctl_follow *f)
{
	for (;;) {
		size_t room = RCPT_INPUT_MAX + 1 - f->len, start, i;
		ssize_t n;

		if (ctl_follow_stop)
			return 0;
		if (room > CTL_FOLLOW_CHUNK)
			room = CTL_FOLLOW_CHUNK;
		n = read(f->fd, f->buf + f->len, room);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			log_warn("%s", f->path);
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
				ctl_query_line(q, f->path, f->lineno, f->buf + start, i - start);
			f->discarding = false;
			start = i + 1;
		}
		f->len += (size_t)n;
		if (start > 0) {
			memmove(f->buf, f->buf + start, f->len - start);
			f->len -= start;
		}
		if (f->len > RCPT_INPUT_MAX) {
			/* Too long to be egressd's: say so once, and drop it up to its newline. */
			if (!f->discarding && q->skipped++ == 0)
				log_warnx("%s:%zu: unparseable line skipped "
				    "(egressctl receipts verify says more)",
				    f->path, f->lineno + 1);
			f->discarding = true;
			f->len = 0;
		}
	}
}

/* The end of a file being left: a last line without its newline is torn, and skipped. */
static void
ctl_follow_close(struct ctl_query *q, struct ctl_follow *f)
{
	if (f->len > 0 && !f->discarding && q->skipped++ == 0)
		log_warnx("%s:%zu: unparseable line skipped "
		    "(egressctl receipts verify says more)",
		    f->path, f->lineno + 1);
	close(f->fd);
	f->fd = -1;
}

/* Runs until SIGINT or SIGTERM (0), or a read error (-1). */
static int
ctl_follow(struct ctl_query *q, const char *path)
{
	struct ctl_follow f;
	struct sigaction sa;
	struct stat st;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ctl_follow_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	memset(&f, 0, sizeof(f));
	f.path = path;
	if (ctl_follow_open(&f) == -1) {
		log_warn("%s", path);
		return -1;
	}
	f.buf = xmalloc(RCPT_INPUT_MAX + 2);
	while (!ctl_follow_stop) {
		struct timespec ts = { 0, CTL_FOLLOW_POLL_MS * 1000000L };
		bool moved, shrunk;

		if (ctl_follow_drain(q, &f) == -1) {
			rc = -1;
			break;
		}
		if (fflush(stdout) == EOF) {
			rc = -1;
			break;
		}
		if (ctl_follow_stop)
			break;
		nanosleep(&ts, NULL);
		/* A path that names nothing (between mv and the reopen) is not a rotation yet. */
		moved = stat(path, &st) == 0 && (st.st_dev != f.dev || st.st_ino != f.ino);
		shrunk = !moved && fstat(f.fd, &st) == 0 && st.st_size < f.pos;
		if (moved) {
			/* Whatever reached the old file before the switch is still to be read. */
			if (ctl_follow_drain(q, &f) == -1) {
				rc = -1;
				break;
			}
			ctl_follow_close(q, &f);
			/* Gone again before we got there: wait for the next one. */
			while (!ctl_follow_stop && ctl_follow_open(&f) == -1) {
				if (errno != ENOENT) {
					log_warn("%s", path);
					rc = -1;
					break;
				}
				nanosleep(&ts, NULL);
			}
			if (f.fd == -1)
				break;
		} else if (shrunk) {
			if (lseek(f.fd, 0, SEEK_SET) == -1) {
				log_warn("%s", path);
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

int
ctl_receipts(int fd, int argc, char **argv)
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
	const char *files[CTL_MAX_FILES];
	size_t nfiles = 0, i;
	struct ctl_query q;
	bool follow = false;
	int ch, rc = 0;

	(void)fd;                /* no egressd: the files are read directly */
	memset(&q, 0, sizeof(q));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (nfiles == CTL_MAX_FILES)
				ctl_usage("too many --file");
			files[nfiles++] = optarg;
			break;
		case 'p': q.principal = optarg; break;
		case 's':
			if (ctl_parse_time(optarg, q.since) == -1)
				ctl_usage("--since takes an ISO 8601 time or -N[smhd]");
			q.has_since = true;
			break;
		case 'u':
			if (ctl_parse_time(optarg, q.until) == -1)
				ctl_usage("--until takes an ISO 8601 time or -N[smhd]");
			q.has_until = true;
			break;
		case 'd':
			if (strcmp(optarg, "allow") != 0 && strcmp(optarg, "deny") != 0)
				ctl_usage("--decision takes allow or deny");
			q.decision = optarg;
			break;
		case 'r': q.reason = optarg; break;
		case 'H': q.host = optarg; break;
		case 'j': q.json = true; break;
		case 'F': follow = true; break;
		default: ctl_usage(NULL);
		}
	}
	if (optind != argc)
		ctl_usage("receipts takes no operand (use --file)");
	if (nfiles == 0)
		files[nfiles++] = CTL_RECEIPTS_FILE;
	/* Without a needle (a value that needs escapes, or a long one) every line is read. */
	if ((q.principal && rcpt_member_needle("principal", q.principal, q.needle_buf,
	    sizeof(q.needle_buf)) == 0) ||
	    (!q.principal && q.reason && rcpt_member_needle("reason", q.reason, q.needle_buf,
	    sizeof(q.needle_buf)) == 0) ||
	    (!q.principal && !q.reason && q.decision && strcmp(q.decision, "deny") == 0 &&
	    rcpt_member_needle("event", "deny", q.needle_buf, sizeof(q.needle_buf)) == 0))
		q.needle = q.needle_buf;
	if (!q.json)
		printf("%-24s %-16s %-12s %-32s %-15s %-32s %10s %10s %9s\n", "TIME", "PRINCIPAL",
		    "FRONTEND", "HOST:PORT", "ADDRESS", "DECISION/REASON", "UP", "DOWN", "DURATION");
	if (follow && strcmp(files[nfiles - 1], "-") == 0)
		ctl_usage("--follow follows a file, not the standard input");
	for (i = 0; i < nfiles - (follow ? 1 : 0); i++)
		if (ctl_query_file(&q, files[i]) == -1) {
			rc = 1;
			break;
		}
	/* The last file is read whole by the follower, then followed. */
	if (follow && rc == 0 && ctl_follow(&q, files[nfiles - 1]) == -1)
		rc = 1;
	if (fflush(stdout) == EOF && errno != EPIPE) {
		log_warn("stdout");
		rc = 1;
	}
	return rc;
}

