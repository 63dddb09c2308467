/*
 * receipt.c: egressd's receipt log: the file, its recovery, fsync batching, rotation,
 * syslog and the checkpoint timer. The line itself (layout, chain, MAC and checkpoint
 * contexts) is proto/receipt.c's; this file only keeps the chain's state:
 *
 *   prev = "sha256:" + SHA-256 of the previous line (without its newline), 64 zeros first
 *   mac  = HMAC-SHA256(receipt key, "egress-receipt-1\0" + the line up to ',"mac"')
 *
 * Each record reaches the kernel (write(2)) before the connection takes its next step, so
 * a crash of egressd loses none; fsync is batched on a one-second timer. On start the file
 * is read once: a torn last line gets a repair record, and every open without a close gets
 * a close with close:"daemon-restart". Trusts its own file only as far as needed to go on
 * with the chain (egressctl receipts verify judges it). The member order is fixed
 * (docs/receipts.md).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "egressd.h"

static int receipt_fd = -1;
static char *receipt_path;
static struct egress_key receipt_key;
static bool receipt_has_key;
static uint64_t receipt_next_seq = 1;
static char receipt_prev[RCPT_HASH_STRLEN] = RCPT_PREV_ZERO;
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
	if ((fd = priv_do_receipts_open(receipt_path)) == -1) {
		log_error_errno("event=receipts-reopen path=%s", receipt_path);
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
	    (fd = priv_do_receipts_rotate(receipt_path, old, sizeof(old))) == -1) {
		log_error_errno("event=receipts-rotate path=%s", receipt_path);
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

static void *receipt_signer;             /* Ed25519 private key, or NULL */
static uint64_t receipt_signed_seq;      /* seq of the last checkpoint */
static struct event *receipt_ckpt_ev;
static void receipt_checkpoint(const char *detail);

uint64_t
receipt_file_seq(void)
{
	return receipt_next_seq - 1;
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
			log_error_errno("event=receipt-sync");
		receipt_dirty = false;
	}
}

/*
 * A batch (the monitor's, one per engine batch): the lines go to the kernel in one
 * write at its end instead of one each. The chain in memory moves with every line; if
 * the write fails, it goes back to where the file is, and those lines are lost (logged),
 * as a failed line is without a batch.
 */
#define RECEIPT_PEND_MAX (64 * RCPT_LINE_MAX)
static bool receipt_batching;
static char *receipt_pend;
static size_t receipt_pend_len;
static uint64_t receipt_pend_seq;               /* receipt_next_seq of the file */
static char receipt_pend_prev[RCPT_HASH_STRLEN];

static int
receipt_write_all(const char *line, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(receipt_fd, line + off, len - off);

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			log_error_errno("event=receipt-write path=%s", receipt_path);
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

static int
receipt_pend_flush(void)
{
	int rc = 0;

	if (receipt_pend_len > 0 && receipt_write_all(receipt_pend, receipt_pend_len) == -1) {
		log_error("event=receipt-write lost=%llu detail=\"a batch's lines did not reach "
		    "the file; the chain goes on from the last line written\"",
		    (unsigned long long)(receipt_next_seq - receipt_pend_seq));
		receipt_next_seq = receipt_pend_seq;
		memcpy(receipt_prev, receipt_pend_prev, sizeof(receipt_prev));
		rc = -1;
	}
	receipt_pend_len = 0;
	receipt_pend_seq = receipt_next_seq;
	memcpy(receipt_pend_prev, receipt_prev, sizeof(receipt_prev));
	return rc;
}

void
receipt_batch_begin(void)
{
	if (receipt_pend == NULL)
		receipt_pend = xmalloc(RECEIPT_PEND_MAX);
	receipt_batching = true;
	receipt_pend_len = 0;
	receipt_pend_seq = receipt_next_seq;
	memcpy(receipt_pend_prev, receipt_prev, sizeof(receipt_prev));
}

int
receipt_batch_end(void)
{
	int rc;

	receipt_batching = false;
	rc = receipt_pend_flush();
	receipt_rotate_if_due();
	return rc;
}

static int
receipt_append(const char *line, size_t len, bool arm_checkpoint)
{
	if (receipt_batching) {
		if (receipt_pend_len + len > RECEIPT_PEND_MAX && receipt_pend_flush() == -1)
			return -1;
		memcpy(receipt_pend + receipt_pend_len, line, len);
		receipt_pend_len += len;
	} else if (receipt_write_all(line, len) == -1) {
		return -1;
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
		log_startupx("signing-key %s", err);
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
	char head[RCPT_HASH_STRLEN], msg[RCPT_CHECKPOINT_MSG_MAX], sig[RCPT_SIG_STRLEN];
	uint8_t raw[EGRESS_ED25519_SIGLEN];
	size_t msglen;
	struct receipt r;

	/*
	 * A periodic checkpoint only when something was written since the last one; the
	 * shutdown checkpoint always, so that a file that ends in anything else has lost its
	 * tail, whatever the timing of the last periodic one.
	 */
	if (receipt_signer == NULL || receipt_fd == -1 ||
	    (detail == NULL && receipt_file_seq() == receipt_signed_seq))
		return;
	memcpy(head, receipt_prev, sizeof(head));
	if (rcpt_checkpoint_msg(receipt_next_seq, head, msg, &msglen) == -1 ||
	    egress_ed25519_sign(receipt_signer, msg, msglen, raw) == -1) {
		log_error("event=checkpoint error=\"signing failed\"");
		return;
	}
	rcpt_sig_format(raw, sig);
	memset(&r, 0, sizeof(r));
	r.event = RECEIPT_CHECKPOINT;
	r.port = -1;
	r.bytes_up = r.bytes_down = r.duration_ms = -1;
	r.detail = detail;
	r.head = head;
	r.sig = sig;
	if (receipt_record(&r) == 0)
		receipt_signed_seq = receipt_file_seq();
}

int
receipt_record(const struct receipt *r)
{
	struct rcpt_line b;
	char now[LOG_UTC_LEN];

	if (receipt_fd == -1)
		return -1;
	log_utc_ms(now);
	if (rcpt_encode(&b, r, receipt_next_seq, receipt_prev, now,
	    receipt_has_key ? &receipt_key : NULL) == -1) {
		log_error("event=receipt-overflow id=%s", r->id ? r->id : "-");
		return -1;
	}
	b.s[b.len++] = '\n';
	if (receipt_append(b.s, b.len, r->event != RECEIPT_CHECKPOINT) == -1)
		return -1;
	/* The chain covers the line without its newline. */
	rcpt_chain_hash(b.s, b.len - 1, receipt_prev);
	receipt_next_seq++;
	if (!receipt_batching)
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
		rcpt_chain_hash(line, (size_t)n, receipt_prev);
		if ((o = json_loadb(line, (size_t)n, 0, &jerr)) == NULL) {
			log_warnx("event=receipt-recover problem=unparseable-line");
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
			log_startupx("receipt-key %s", err);
			json_decref(opens);
			return -1;
		}
		receipt_has_key = true;
	}
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		log_startupx("receipts %s: %s", path, strerror(errno));
		json_decref(opens);
		return -1;
	}
	if ((fp = fdopen(dup(fd), "r")) == NULL || receipt_recover(fp, opens, &torn,
	    &torn_len) == -1) {
		log_startupx("receipts %s: cannot read", path);
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
		if (receipt_record(&r) == -1)
			return -1;
		log_warnx("event=receipt-repair detail=\"torn last line of %zu bytes\"", torn_len);
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
		r.via = jstr(o, "via");
		r.sni = jstr(o, "sni");
		r.reason = EGRESS_ALLOWED;
		r.close = "daemon-restart";
		r.bytes_up = r.bytes_down = r.duration_ms = -1;
		if (receipt_record(&r) == -1)
			break;
		closed++;
	}
	json_decref(opens);
	if (closed)
		log_warnx("event=receipt-recover closed=%u detail=\"opens left by the previous "
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
