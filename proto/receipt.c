/*
 * receipt.c: the receipt line, both directions (docs/receipts.md). JSON Lines, each
 * hash-chained to the one before and MACed:
 *
 *   prev = "sha256:" + SHA-256 of the previous line (without its newline), 64 zeros first
 *   mac  = HMAC-SHA256(receipt key, "egress-receipt-1\0" + the line up to ',"mac"')
 *   sig  = Ed25519 over "egress-checkpoint-1\0" + seq in decimal + head (checkpoints)
 *
 * The writer (rcpt_encode) is egressd's: it trusts its struct receipt and escapes every
 * byte outside printable ASCII. The readers (rcpt_scan_line, rcpt_verify_line) trust
 * nothing: lines come from a file anyone with write access may have edited; every line
 * is bounded by RCPT_INPUT_MAX, and a line is believed only as far as its chain, MAC and
 * checkpoint signature go. No I/O and no allocation but jansson's, where the whole line
 * must be checked as JSON (the first line, a torn one, a repair, a checkpoint).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"          /* EGRESS_HOST_INPUT_MAX: how much of a raw host is kept */
#include "receipt.h"

static const char *const rcpt_events[] = {
	[RECEIPT_OPEN] = "open",
	[RECEIPT_CLOSE] = "close",
	[RECEIPT_DENY] = "deny",
	[RECEIPT_REPAIR] = "repair",
	[RECEIPT_CHECKPOINT] = "checkpoint",
};

/* --- writing ---------------------------------------------------------------------- */

struct rcpt_enc {
	struct rcpt_line *b;
	bool overflow;
};

/* Keeps one byte free for the newline the writer adds. */
static void __attribute__((format(printf, 2, 3)))
rcpt_printf(struct rcpt_enc *e, const char *fmt, ...)
{
	struct rcpt_line *b = e->b;
	size_t room = sizeof(b->s) - b->len;
	va_list ap;
	int n;

	if (e->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		e->overflow = true;
	else
		b->len += (size_t)n;
}

/* len bytes as they are (keeping the newline's byte free, as rcpt_printf does). */
static void
rcpt_put(struct rcpt_enc *e, const char *s, size_t len)
{
	struct rcpt_line *b = e->b;

	if (e->overflow)
		return;
	if (len >= sizeof(b->s) - b->len) {
		e->overflow = true;
		return;
	}
	memcpy(b->s + b->len, s, len);
	b->len += len;
}

/* The decimal text of u, after a '-' if neg (egress_u64), not formatted. */
static void
rcpt_digits(struct rcpt_enc *e, unsigned long long u, bool neg)
{
	char buf[EGRESS_U64_LEN];
	const char *d = egress_u64(u, buf);

	if (neg)
		rcpt_put(e, "-", 1);
	rcpt_put(e, d, strlen(d));
}

/* A JSON number member: ,"key":v. */
static void
rcpt_num(struct rcpt_enc *e, const char *key, long long v)
{
	rcpt_put(e, ",\"", 2);
	rcpt_put(e, key, strlen(key));
	rcpt_put(e, "\":", 2);
	rcpt_digits(e, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0);
}

/* The bytes a JSON string holds as they are: printable ASCII but '"' and '\\' (NUL not). */
static const unsigned char rcpt_plain[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/*
 * A JSON string member; bytes outside printable ASCII are escaped. The key (a member name
 * of this file) and the quotes are copied, not formatted: vsnprintf for each was a fifth
 * of the monitor's instructions per record (callgrind, bench/README.md).
 */
static void
rcpt_str(struct rcpt_enc *e, const char *key, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;
	struct rcpt_line *b = e->b;

	rcpt_put(e, ",\"", 2);
	rcpt_put(e, key, strlen(key));
	rcpt_put(e, "\":\"", 3);
	while (*p != '\0' && !e->overflow) {
		size_t run = 0;

		/* Runs of plain bytes are copied as they are; only the rest is formatted. */
		while (rcpt_plain[p[run]])
			run++;
		if (run > 0) {
			if (run >= sizeof(b->s) - b->len) {
				e->overflow = true;
				return;
			}
			memcpy(b->s + b->len, p, run);
			b->len += run;
			p += run;
			continue;
		}
		if (*p == '"' || *p == '\\')
			rcpt_printf(e, "\\%c", *p);
		else
			rcpt_printf(e, "\\u%04x", *p);
		p++;
	}
	rcpt_put(e, "\"", 1);
}

void
rcpt_mac_hex(const struct egress_key *key, const char *body, size_t len,
    char out[RCPT_HEX_LEN + 1])
{
	uint8_t md[EGRESS_SHA256_LEN];

	if (len > RCPT_INPUT_MAX)
		len = RCPT_INPUT_MAX;            /* callers bound their lines first */
	/* The context with its NUL, then the body. */
	egress_hmac_sha256_2(key->bytes, key->len, RCPT_MAC_CONTEXT, sizeof(RCPT_MAC_CONTEXT),
	    body, len, md);
	egress_hex(md, sizeof(md), out);
}

void
rcpt_chain_hash(const char *line, size_t len, char out[RCPT_HASH_STRLEN])
{
	uint8_t md[EGRESS_SHA256_LEN];

	egress_sha256(line, len, md);
	memcpy(out, RCPT_PREV_PREFIX, sizeof(RCPT_PREV_PREFIX) - 1);
	egress_hex(md, sizeof(md), out + sizeof(RCPT_PREV_PREFIX) - 1);
}

int
rcpt_encode(struct rcpt_line *out, const struct receipt *r, uint64_t seq, const char *prev,
    const char *time, const struct egress_key *key)
{
	struct rcpt_enc e = { out, false };
	char hex[2 * EGRESS_HOST_INPUT_MAX + 1];

	out->len = 0;
	rcpt_put(&e, "{\"seq\":", 7);
	rcpt_digits(&e, seq, false);
	rcpt_put(&e, ",\"prev\":\"", 9);
	rcpt_put(&e, prev, strlen(prev));
	rcpt_put(&e, "\",\"event\":\"", 11);
	rcpt_put(&e, rcpt_events[r->event], strlen(rcpt_events[r->event]));
	rcpt_put(&e, "\"", 1);
	if (r->id)
		rcpt_str(&e, "id", r->id);
	rcpt_str(&e, "time", time);
	if (r->principal)
		rcpt_str(&e, "principal", r->principal);
	if (r->policy)
		rcpt_str(&e, "policy", r->policy);
	if (r->frontend)
		rcpt_str(&e, "frontend", r->frontend);
	if (r->host)
		rcpt_str(&e, "host", r->host);
	if (r->raw != NULL && r->raw_len > 0) {
		size_t n = r->raw_len > EGRESS_HOST_INPUT_MAX ? EGRESS_HOST_INPUT_MAX : r->raw_len;

		egress_hex(r->raw, n, hex);
		rcpt_str(&e, "raw", hex);
	}
	if (r->port >= 0)
		rcpt_num(&e, "port", r->port);
	if (r->addr)
		rcpt_str(&e, "addr", r->addr);
	if (r->via)
		rcpt_str(&e, "via", r->via);
	if (r->sni)
		rcpt_str(&e, "sni", r->sni);
	if (r->event != RECEIPT_REPAIR && r->event != RECEIPT_CHECKPOINT)
		rcpt_str(&e, "reason", egress_reason_name(r->reason));
	if (r->close)
		rcpt_str(&e, "close", r->close);
	if (r->detail)
		rcpt_str(&e, "detail", r->detail);
	if (r->head)
		rcpt_str(&e, "head", r->head);
	if (r->sig)
		rcpt_str(&e, "sig", r->sig);
	if (r->bytes_up >= 0)
		rcpt_num(&e, "bytes_up", (long long)r->bytes_up);
	if (r->bytes_down >= 0)
		rcpt_num(&e, "bytes_down", (long long)r->bytes_down);
	if (r->duration_ms >= 0)
		rcpt_num(&e, "duration_ms", (long long)r->duration_ms);
	if (r->count > 1)
		rcpt_num(&e, "count", (long long)r->count);
	if (key != NULL && !e.overflow) {
		char mac[RCPT_HEX_LEN + 1];

		rcpt_mac_hex(key, out->s, out->len, mac);
		rcpt_put(&e, ",\"mac\":\"hmac-sha256:", 20);
		rcpt_put(&e, mac, RCPT_HEX_LEN);
		rcpt_put(&e, "\"", 1);
	}
	rcpt_put(&e, "}", 1);
	/* rcpt_put keeps len below the size: the newline always fits. */
	return e.overflow ? -1 : 0;
}

int
rcpt_checkpoint_msg(uint64_t seq, const char *head, char out[RCPT_CHECKPOINT_MSG_MAX],
    size_t *len)
{
	size_t ctxlen = sizeof(RCPT_CHECKPOINT_CONTEXT);   /* with its NUL */
	int n;

	memcpy(out, RCPT_CHECKPOINT_CONTEXT, ctxlen);
	n = snprintf(out + ctxlen, RCPT_CHECKPOINT_MSG_MAX - ctxlen, "%llu%s",
	    (unsigned long long)seq, head);
	if (n < 0 || (size_t)n >= RCPT_CHECKPOINT_MSG_MAX - ctxlen)
		return -1;
	*len = ctxlen + (size_t)n;
	return 0;
}

void
rcpt_sig_format(const uint8_t raw[EGRESS_ED25519_SIGLEN], char out[RCPT_SIG_STRLEN])
{
	memcpy(out, RCPT_SIG_PREFIX, sizeof(RCPT_SIG_PREFIX) - 1);
	egress_hex(raw, EGRESS_ED25519_SIGLEN, out + sizeof(RCPT_SIG_PREFIX) - 1);
}

static bool
rcpt_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static unsigned
rcpt_nibble(char c)
{
	return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
}

int
rcpt_sig_parse(const char *s, uint8_t raw[EGRESS_ED25519_SIGLEN])
{
	const char *h = s + sizeof(RCPT_SIG_PREFIX) - 1;

	if (strlen(s) != RCPT_SIG_STRLEN - 1 ||
	    memcmp(s, RCPT_SIG_PREFIX, sizeof(RCPT_SIG_PREFIX) - 1) != 0 ||
	    !rcpt_is_hex(h, 2 * EGRESS_ED25519_SIGLEN))
		return -1;
	for (size_t i = 0; i < EGRESS_ED25519_SIGLEN; i++)
		raw[i] = (uint8_t)(rcpt_nibble(h[2 * i]) << 4 | rcpt_nibble(h[2 * i + 1]));
	return 0;
}

int
rcpt_member_needle(const char *key, const char *value, char *out, size_t cap)
{
	const unsigned char *p;
	int n;

	for (p = (const unsigned char *)value; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
			return -1;
	n = snprintf(out, cap, "\"%s\":\"%s\"", key, value);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* --- reading ---------------------------------------------------------------------- */

#define RCPT_MAC_SUFFIX_LEN (sizeof(",\"mac\":\"hmac-sha256:") - 1 + RCPT_HEX_LEN + 2)

/*
 * Scans {"seq":N,"prev":"sha256:HEX","event":"WORD" ... ,"mac":"hmac-sha256:HEX"} without
 * allocating. Returns 0, or -1 when the line does not have egressd's shape (the caller then
 * asks jansson what is wrong). Only printable ASCII is accepted: egressd escapes the rest.
 */
int
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

bool
rcpt_event_is(const struct rcpt_scan *r, const char *ev)
{
	return r->event_len == strlen(ev) && memcmp(r->event, ev, r->event_len) == 0;
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

void
rcpt_verify_init_pubkeys(struct rcpt_verify *v, const struct egress_key *key,
    void *const *pubkeys, size_t n)
{
	memset(v, 0, sizeof(*v));
	memset(v->prev, '0', RCPT_HEX_LEN);
	v->key = key;
	v->pubkeys = pubkeys;
	v->npubkeys = pubkeys != NULL ? n : 0;
	v->pubkey = v->npubkeys > 0 ? pubkeys[0] : NULL;
}

void
rcpt_verify_init(struct rcpt_verify *v, const struct egress_key *key, void *pubkey)
{
	rcpt_verify_init_pubkeys(v, key, NULL, 0);
	if (pubkey != NULL) {
		v->pubkey = pubkey;
		v->pubkeys = &v->pubkey;
		v->npubkeys = 1;
	}
}

/*
 * A signature by any of the keys. Runs follow one another in a file as their keys do in
 * the key file, so the key of the last checkpoint is tried first, then the ones after it:
 * one try per checkpoint in the usual case, not one per key.
 */
static bool
rcpt_sig_ok(struct rcpt_verify *v, const char *msg, size_t msglen,
    const uint8_t raw[EGRESS_ED25519_SIGLEN])
{
	for (size_t i = 0; i < v->npubkeys; i++) {
		size_t k = (v->pub_hint + i) % v->npubkeys;

		if (egress_ed25519_verify(v->pubkeys[k], msg, msglen, raw)) {
			v->pub_hint = k;
			return true;
		}
	}
	return false;
}

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
rcpt_mac_ok(const struct rcpt_verify *v, const char *s, const struct rcpt_scan *r)
{
	char hex[RCPT_HEX_LEN + 1];

	rcpt_mac_hex(v->key, s, r->body_len, hex);
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

/*
 * A checkpoint's head must be the hash of the line before it, and its sig the Ed25519
 * signature over "egress-checkpoint-1\0" + its seq in decimal + head.
 */
static bool
rcpt_checkpoint_ok(struct rcpt_verify *v, const char *file, size_t lineno, const char *s,
    size_t len, const struct rcpt_scan *r)
{
	json_t *o = json_loadb(s, len, JSON_REJECT_DUPLICATES, NULL);
	const char *head = o ? json_string_value(json_object_get(o, "head")) : NULL;
	const char *sig = o ? json_string_value(json_object_get(o, "sig")) : NULL;
	const char *detail = o ? json_string_value(json_object_get(o, "detail")) : NULL;
	uint8_t raw[EGRESS_ED25519_SIGLEN];
	char msg[RCPT_CHECKPOINT_MSG_MAX];
	size_t msglen;

	if (head == NULL || sig == NULL || strlen(head) != RCPT_HASH_STRLEN - 1 ||
	    memcmp(head + sizeof(RCPT_PREV_PREFIX) - 1, v->prev, RCPT_HEX_LEN) ||
	    memcmp(r->prev, v->prev, RCPT_HEX_LEN) != 0) {
		rcpt_break(v, file, lineno, &r->seq, "checkpoint head is not the hash of the "
		    "line before it");
		json_decref(o);
		return false;
	}
	if (rcpt_sig_parse(sig, raw) == -1) {
		rcpt_break(v, file, lineno, &r->seq, "checkpoint without an Ed25519 signature");
		json_decref(o);
		return false;
	}
	if (rcpt_checkpoint_msg(r->seq, head, msg, &msglen) == -1 ||
	    !rcpt_sig_ok(v, msg, msglen, raw)) {
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

static void
rcpt_torn(struct rcpt_verify *v, const char *file, size_t lineno, bool nonl)
{
	v->torn = true;
	v->torn_nonl = nonl;
	v->torn_file = file;
	v->torn_lineno = lineno;
}

void
rcpt_verify_line(struct rcpt_verify *v, const char *file, size_t lineno, const char *s,
    size_t len, bool nonl)
{
	struct rcpt_scan r;
	char hash[RCPT_HASH_STRLEN];
	const char *hex = hash + sizeof(RCPT_PREV_PREFIX) - 1;
	bool ok = len <= RCPT_INPUT_MAX && rcpt_scan_line(s, len, &r) == 0;

	if (v->broken)
		return;
	/*
	 * The scanner checks egressd's shape; jansson checks the whole line where the MAC
	 * or the next line's prev cannot vouch for it: the first line, a torn one, a repair.
	 * (jansson on every line runs at about 95 000 lines/s, the scanner at over 350 000.)
	 */
	if (ok && (!v->started || nonl || v->torn || rcpt_event_is(&r, "repair")))
		ok = rcpt_json_agrees(s, len, &r);
	if (!ok) {
		/* A line egressd did not write whole: only a repair record may follow it. */
		if (v->torn) {
			rcpt_break(v, v->torn_file, v->torn_lineno, NULL, "unparseable line");
			return;
		}
		rcpt_torn(v, file, lineno, nonl);
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
		static const char zeros[] = RCPT_PREV_ZERO;

		if (memcmp(r.prev, zeros + sizeof(RCPT_PREV_PREFIX) - 1, RCPT_HEX_LEN) != 0) {
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
		rcpt_chain_hash(s, len, hash);
		if (memcmp(hex, v->prev, RCPT_HEX_LEN) == 0 || r.seq == v->seq) {
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
		rcpt_torn(v, file, lineno, true);
		return;
	}
	rcpt_chain_hash(s, len, hash);
	memcpy(v->prev_before, v->prev, sizeof(v->prev));
	memcpy(v->prev, hex, RCPT_HEX_LEN);
	v->seq_before = v->seq;
	v->seq = r.seq;
	v->last_len = len;
	v->started = true;
	v->records++;
}

void
rcpt_verify_end(struct rcpt_verify *v, const char *last_file)
{
	if (!v->broken && v->torn)
		rcpt_break(v, v->torn_file, v->torn_lineno, NULL, v->torn_nonl ?
		    "torn line at the end (not repaired)" : "unparseable line");
	if (!v->broken && v->pubkey != NULL && v->checkpoints == 0)
		rcpt_break(v, last_file, 0, NULL, "no checkpoint: nothing is signed "
		    "(is signing-key set in egressd.conf?)");
}
