/*
 * receipt.c: the receipt log. JSON Lines, appended, hash-chained and MACed:
 *
 *   prev = "sha256:" + SHA-256 of the previous line (without its newline), 64 zeros first
 *   mac  = HMAC-SHA256(receipt key, "egress-receipt-1\0" + the line up to ',"mac"')
 *
 * Each record reaches the kernel (write(2)) before the connection takes its next step, so
 * a crash of egressd loses none; fsync is batched on a one-second timer. On start the file
 * is read once: a torn last line gets a repair record, and every open without a close gets
 * a close with close:"daemon-restart". The member order is fixed (docs/receipts.md).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "egressd.h"

#define RECEIPT_LINE_MAX 4096        /* a record never exceeds this */
#define RECEIPT_MAC_CONTEXT "egress-receipt-1"

static int receipt_fd = -1;
static char *receipt_path;
static struct egress_key receipt_key;
static bool receipt_has_key;
static uint64_t receipt_next_seq = 1;
static char receipt_prev[EGRESS_DIGEST_STRLEN] =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";
static struct event *receipt_sync_ev;
static bool receipt_dirty;
static bool receipt_to_syslog;
static uint64_t receipt_rotate_size;     /* 0: only on SIGUSR1 */

void
receipt_set_rotate(uint64_t bytes)
{
	receipt_rotate_size = bytes;
}

/*
 * Reopens the path (after an operator moved the file away, SIGUSR1): the chain goes on
 * from memory; the new file is not read, so live tunnels get no spurious closes.
 */
int
receipt_reopen(void)
{
	int fd;

	if (receipt_path == NULL)
		return -1;
	if ((fd = priv_receipts_open(receipt_path)) == -1) {
		log_error("event=receipts-reopen path=%s error=%s", receipt_path, strerror(errno));
		return -1;
	}
	receipt_flush();
	close(receipt_fd);
	receipt_fd = fd;
	return 0;
}

/* receipts-rotate: past the size, the file becomes PATH.<UTC time> and a new one starts. */
static void
receipt_rotate_if_due(void)
{
	struct stat st;
	char old[PATH_MAX];
	int fd;

	if (receipt_rotate_size == 0 || fstat(receipt_fd, &st) == -1 ||
	    (uint64_t)st.st_size < receipt_rotate_size)
		return;
	receipt_flush();
	if (fdatasync(receipt_fd) == -1 ||
	    (fd = priv_receipts_rotate(receipt_path, old, sizeof(old))) == -1) {
		log_error("event=receipts-rotate path=%s error=%s", receipt_path, strerror(errno));
		return;
	}
	close(receipt_fd);
	receipt_fd = fd;
	log_info("event=receipts-rotate old=%s", old);
}

void
receipt_syslog(bool on)
{
	if (on && !receipt_to_syslog)
		openlog("egressd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	receipt_to_syslog = on;
}

static const char *const receipt_events[] = {
	[RECEIPT_OPEN] = "open",
	[RECEIPT_CLOSE] = "close",
	[RECEIPT_DENY] = "deny",
	[RECEIPT_REPAIR] = "repair",
	[RECEIPT_CHECKPOINT] = "checkpoint",
};

#define RECEIPT_CHECKPOINT_CONTEXT "egress-checkpoint-1"  /* signed with its NUL */
static void *receipt_signer;             /* Ed25519 private key, or NULL */
static uint64_t receipt_signed_seq;      /* seq of the last checkpoint */
static struct event *receipt_ckpt_ev;
static void receipt_checkpoint(const char *detail);

uint64_t
receipt_seq(void)
{
	return receipt_next_seq - 1;
}

struct rbuf {
	char s[RECEIPT_LINE_MAX];
	size_t len;
	bool overflow;
};

static void __attribute__((format(printf, 2, 3)))
rb_printf(struct rbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, sizeof(b->s) - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(b->s) - b->len)
		b->overflow = true;
	else
		b->len += (size_t)n;
}

/* A JSON string member; bytes outside printable ASCII are escaped. */
static void
rb_str(struct rbuf *b, const char *key, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	rb_printf(b, ",\"%s\":\"", key);
	while (*p != '\0' && !b->overflow) {
		size_t run = 0;

		/* Runs of plain bytes are copied as they are; only the rest is formatted. */
		while (p[run] != '\0' && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '"' &&
		    p[run] != '\\')
			run++;
		if (run > 0) {
			if (run >= sizeof(b->s) - b->len) {
				b->overflow = true;
				return;
			}
			memcpy(b->s + b->len, p, run);
			b->len += run;
			p += run;
			continue;
		}
		if (*p == '"' || *p == '\\')
			rb_printf(b, "\\%c", *p);
		else
			rb_printf(b, "\\u%04x", *p);
		p++;
	}
	rb_printf(b, "\"");
}

static void
receipt_now(char out[32])
{
	struct timespec ts;
	struct tm tm;
	char stamp[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%.20s.%03dZ", stamp, (int)(ts.tv_nsec / 1000000) % 1000);
}

static void
receipt_sync_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	receipt_flush();
}

void
receipt_flush(void)
{
	if (receipt_fd != -1 && receipt_dirty) {
		if (fdatasync(receipt_fd) == -1)
			log_error("event=receipt-sync error=%s", strerror(errno));
		receipt_dirty = false;
	}
}

static int
receipt_append(const char *line, size_t len, bool arm_checkpoint)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(receipt_fd, line + off, len - off);

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			log_error("event=receipt-write path=%s error=%s", receipt_path,
			    strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	receipt_dirty = true;
	if (receipt_sync_ev != NULL && !event_pending(receipt_sync_ev, EV_TIMEOUT, NULL)) {
		struct timeval tv = { 1, 0 };

		event_add(receipt_sync_ev, &tv);
	}
	if (arm_checkpoint && receipt_ckpt_ev != NULL &&
	    !event_pending(receipt_ckpt_ev, EV_TIMEOUT, NULL)) {
		struct timeval tv = { 1, 0 };

		event_add(receipt_ckpt_ev, &tv);
	}
	return 0;
}

static void
receipt_ckpt_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	receipt_checkpoint(NULL);
}

int
receipt_signing_key(const char *path)
{
	char err[512];

	if ((receipt_signer = egress_ed25519_load(path, true, err, sizeof(err))) == NULL) {
		fprintf(stderr, "egressd: signing-key %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * A checkpoint: its head is the hash of the line before it (its prev), and its sig the
 * Ed25519 signature over "egress-checkpoint-1\0" + its seq in decimal + head, so that
 * `egressctl receipts verify --pubkey` needs no secret.
 */
static void
receipt_checkpoint(const char *detail)
{
	char head[EGRESS_DIGEST_STRLEN], msg[128], sig[8 + 2 * EGRESS_ED25519_SIGLEN + 1];
	uint8_t raw[EGRESS_ED25519_SIGLEN];
	size_t ctxlen = sizeof(RECEIPT_CHECKPOINT_CONTEXT);   /* with its NUL */
	struct receipt r;
	int n;

	/*
	 * A periodic checkpoint only when something was written since the last one; the
	 * shutdown checkpoint always, so that a file that ends in anything else has lost its
	 * tail, whatever the timing of the last periodic one.
	 */
	if (receipt_signer == NULL || receipt_fd == -1 ||
	    (detail == NULL && receipt_seq() == receipt_signed_seq))
		return;
	memcpy(head, receipt_prev, sizeof(head));
	memcpy(msg, RECEIPT_CHECKPOINT_CONTEXT, ctxlen);
	n = snprintf(msg + ctxlen, sizeof(msg) - ctxlen, "%llu%s",
	    (unsigned long long)receipt_next_seq, head);
	if (n < 0 || (size_t)n >= sizeof(msg) - ctxlen ||
	    egress_ed25519_sign(receipt_signer, msg, ctxlen + (size_t)n, raw) == -1) {
		log_error("event=checkpoint error=\"signing failed\"");
		return;
	}
	memcpy(sig, "ed25519:", 8);
	egress_hex(raw, sizeof(raw), sig + 8);
	memset(&r, 0, sizeof(r));
	r.event = RECEIPT_CHECKPOINT;
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.detail = detail;
	r.head = head;
	r.sig = sig;
	if (receipt_write(&r) == 0)
		receipt_signed_seq = receipt_seq();
}

int
receipt_write(const struct receipt *r)
{
	struct rbuf b;
	char now[32], hex[2 * EGRESS_HOST_INPUT_MAX + 1];
	uint8_t md[EGRESS_SHA256_LEN];

	if (receipt_fd == -1)
		return -1;
	b.len = 0;
	b.overflow = false;
	receipt_now(now);
	rb_printf(&b, "{\"seq\":%llu,\"prev\":\"%s\",\"event\":\"%s\"",
	    (unsigned long long)receipt_next_seq, receipt_prev, receipt_events[r->event]);
	if (r->id)
		rb_str(&b, "id", r->id);
	rb_str(&b, "time", now);
	if (r->principal)
		rb_str(&b, "principal", r->principal);
	if (r->policy)
		rb_str(&b, "policy", r->policy);
	if (r->frontend)
		rb_str(&b, "frontend", r->frontend);
	if (r->host)
		rb_str(&b, "host", r->host);
	if (r->raw != NULL && r->raw_len > 0) {
		size_t n = r->raw_len > EGRESS_HOST_INPUT_MAX ? EGRESS_HOST_INPUT_MAX : r->raw_len;

		egress_hex(r->raw, n, hex);
		rb_str(&b, "raw", hex);
	}
	if (r->port >= 0)
		rb_printf(&b, ",\"port\":%d", r->port);
	if (r->addr)
		rb_str(&b, "addr", r->addr);
	if (r->sni)
		rb_str(&b, "sni", r->sni);
	if (r->event != RECEIPT_REPAIR && r->event != RECEIPT_CHECKPOINT)
		rb_str(&b, "reason", egress_reason_name(r->reason));
	if (r->close)
		rb_str(&b, "close", r->close);
	if (r->detail)
		rb_str(&b, "detail", r->detail);
	if (r->head)
		rb_str(&b, "head", r->head);
	if (r->sig)
		rb_str(&b, "sig", r->sig);
	if (r->bytes_up >= 0)
		rb_printf(&b, ",\"bytes_up\":%lld", (long long)r->bytes_up);
	if (r->bytes_down >= 0)
		rb_printf(&b, ",\"bytes_down\":%lld", (long long)r->bytes_down);
	if (r->duration_ms >= 0)
		rb_printf(&b, ",\"duration_ms\":%lld", (long long)r->duration_ms);
	if (r->count > 1)
		rb_printf(&b, ",\"count\":%u", r->count);
	if (receipt_has_key) {
		char mac[EGRESS_DIGEST_STRLEN];
		size_t ctxlen = sizeof(RECEIPT_MAC_CONTEXT);   /* with its NUL */
		uint8_t *msg = xmalloc(ctxlen + b.len);

		memcpy(msg, RECEIPT_MAC_CONTEXT, ctxlen);
		memcpy(msg + ctxlen, b.s, b.len);
		egress_hmac_sha256(receipt_key.bytes, receipt_key.len, msg, ctxlen + b.len, md);
		free(msg);
		memcpy(mac, "hmac-sha256:", 12);
		egress_hex(md, sizeof(md), mac + 12);
		rb_printf(&b, ",\"mac\":\"%s\"", mac);
	}
	rb_printf(&b, "}");
	if (b.overflow) {
		log_error("event=receipt-overflow id=%s", r->id ? r->id : "-");
		return -1;
	}
	/* The chain covers the line without its newline. */
	egress_sha256(b.s, b.len, md);
	b.s[b.len++] = '\n';
	if (receipt_append(b.s, b.len, r->event != RECEIPT_CHECKPOINT) == -1) {
		b.len--;
		return -1;
	}
	memcpy(receipt_prev, "sha256:", 7);
	egress_hex(md, sizeof(md), receipt_prev + 7);
	receipt_next_seq++;
	receipt_rotate_if_due();
	if (receipt_to_syslog) {
		/* One JSON line per receipt, as written to the file (chain and MAC included). */
		b.s[b.len - 1] = '\0';
		syslog(LOG_INFO, "%s", b.s);
	}
	return 0;
}

/* The string member key of o, or NULL. */
static const char *
jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/*
 * Reads the existing file: finds the chain head, a torn last line, and opens without a
 * close. Records are trusted only as far as needed to continue the chain; verifying it is
 * egressctl's job.
 */
static int
receipt_recover(FILE *fp, json_t *opens, bool *torn, size_t *torn_len)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	uint8_t md[EGRESS_SHA256_LEN];

	*torn = false;
	while ((n = getline(&line, &cap, fp)) > 0) {
		json_t *o;
		json_error_t jerr;
		const char *ev, *id;

		if (line[n - 1] != '\n') {
			*torn = true;             /* a crash cut the last line */
			*torn_len = (size_t)n;
			break;
		}
		line[--n] = '\0';
		egress_sha256(line, (size_t)n, md);
		memcpy(receipt_prev, "sha256:", 7);
		egress_hex(md, sizeof(md), receipt_prev + 7);
		if ((o = json_loadb(line, (size_t)n, 0, &jerr)) == NULL) {
			log_warn("event=receipt-recover problem=unparseable-line");
			receipt_next_seq++;
			continue;
		}
		if (json_is_integer(json_object_get(o, "seq")))
			receipt_next_seq = (uint64_t)json_integer_value(json_object_get(o, "seq")) + 1;
		ev = jstr(o, "event");
		id = jstr(o, "id");
		if (ev != NULL && id != NULL && strcmp(ev, "open") == 0)
			json_object_set(opens, id, o);
		else if (ev != NULL && id != NULL && strcmp(ev, "close") == 0)
			json_object_del(opens, id);
		json_decref(o);
	}
	free(line);
	return ferror(fp) ? -1 : 0;
}

int
receipt_open(const char *path, const char *keyfile, struct event_base *base)
{
	json_t *opens = json_object(), *o;
	const char *id;
	bool torn = false;
	size_t torn_len = 0;
	char err[512];
	FILE *fp;
	int fd;
	unsigned closed = 0;

	if (keyfile != NULL) {
		if (egress_key_load(keyfile, &receipt_key, err, sizeof(err)) == -1) {
			fprintf(stderr, "egressd: receipt-key %s\n", err);
			json_decref(opens);
			return -1;
		}
		receipt_has_key = true;
	}
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		fprintf(stderr, "egressd: receipts %s: %s\n", path, strerror(errno));
		json_decref(opens);
		return -1;
	}
	if ((fp = fdopen(dup(fd), "r")) == NULL || receipt_recover(fp, opens, &torn,
	    &torn_len) == -1) {
		fprintf(stderr, "egressd: receipts %s: cannot read\n", path);
		if (fp)
			fclose(fp);
		close(fd);
		json_decref(opens);
		return -1;
	}
	fclose(fp);
	receipt_fd = fd;
	free(receipt_path);
	receipt_path = xstrdup(path);
	if (torn) {
		struct receipt r;
		char detail[64];

		/* End the torn line so that the repair record stands on its own line. */
		if (receipt_append("\n", 1, false) == -1)
			return -1;
		memset(&r, 0, sizeof(r));
		r.event = RECEIPT_REPAIR;
		r.port = -1;
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
		snprintf(detail, sizeof(detail), "torn-line bytes=%zu", torn_len);
		r.detail = detail;
		if (receipt_write(&r) == -1)
			return -1;
		log_warn("event=receipt-repair detail=\"torn last line of %zu bytes\"", torn_len);
	}
	json_object_foreach(opens, id, o) {
		struct receipt r;
		json_t *port = json_object_get(o, "port");

		memset(&r, 0, sizeof(r));
		r.event = RECEIPT_CLOSE;
		r.id = id;
		r.principal = jstr(o, "principal");
		r.policy = jstr(o, "policy");
		r.frontend = jstr(o, "frontend");
		r.host = jstr(o, "host");
		r.port = json_is_integer(port) ? (int)json_integer_value(port) : -1;
		r.addr = jstr(o, "addr");
		r.sni = jstr(o, "sni");
		r.reason = EGRESS_ALLOWED;
		r.close = "daemon-restart";
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
		if (receipt_write(&r) == -1)
			break;
		closed++;
	}
	json_decref(opens);
	if (closed)
		log_warn("event=receipt-recover closed=%u detail=\"opens left by the previous "
		    "run closed with daemon-restart\"", closed);
	receipt_flush();
	if (base != NULL && receipt_sync_ev == NULL)
		receipt_sync_ev = evtimer_new(base, receipt_sync_cb, NULL);
	if (base != NULL && receipt_signer != NULL && receipt_ckpt_ev == NULL)
		receipt_ckpt_ev = evtimer_new(base, receipt_ckpt_cb, NULL);
	return 0;
}

void
receipt_close(void)
{
	receipt_checkpoint("shutdown");
	if (receipt_ckpt_ev != NULL) {
		event_free(receipt_ckpt_ev);
		receipt_ckpt_ev = NULL;
	}
	egress_ed25519_free(receipt_signer);
	receipt_signer = NULL;
	receipt_flush();
	if (receipt_sync_ev != NULL) {
		event_free(receipt_sync_ev);
		receipt_sync_ev = NULL;
	}
	if (receipt_fd != -1)
		close(receipt_fd);
	receipt_fd = -1;
	egress_key_clear(&receipt_key);
	receipt_has_key = false;
	free(receipt_path);
	receipt_path = NULL;
}
