/*
 * monwire.c: receipt events from egressd's engine to its monitor (monwire.h). Encoding
 * (the engine) and the bounded, allocation-free reader (the monitor). The reader trusts
 * nothing: the engine parses the network, and a compromised one may send anything; a
 * record that is not what egressd's own code would send is refused whole.
 *
 * A record: u8 event, u8 members, then each member: u8 tag, u16 length (big endian),
 * that many bytes. Numbers are big-endian unsigned of a fixed width per tag.
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#include "monwire.h"
#include "wire.h"

enum mw_tag {
	MT_ID = 1, MT_PRINCIPAL, MT_POLICY, MT_FRONTEND, MT_HOST, MT_RAW, MT_PORT, MT_ADDR,
	MT_SNI, MT_REASON, MT_CLOSE, MT_UP, MT_DOWN, MT_DURATION, MT_COUNT, MT_VIA, MT_MAX
};

#define EV_O (1u << RECEIPT_OPEN)
#define EV_C (1u << RECEIPT_CLOSE)
#define EV_D (1u << RECEIPT_DENY)

/* Per tag: the events that may carry it, and those that must. */
static const struct {
	unsigned may, must;
	uint16_t min, max;           /* length bounds */
} mw_tags[MT_MAX] = {
	[MT_ID] = { EV_O | EV_C | EV_D, EV_O | EV_C, 3, MW_ID_MAX },
	[MT_PRINCIPAL] = { EV_O | EV_C | EV_D, EV_O | EV_C | EV_D, 1, MW_NAME_MAX },
	[MT_POLICY] = { EV_O | EV_C | EV_D, EV_O | EV_C | EV_D, 71, 71 },
	[MT_FRONTEND] = { EV_O | EV_C | EV_D, 0, 1, MW_WORD_MAX },
	[MT_HOST] = { EV_O | EV_C | EV_D, 0, 1, EGRESS_HOST_MAX },
	[MT_RAW] = { EV_O | EV_C | EV_D, 0, 1, MW_RAW_MAX },
	[MT_PORT] = { EV_O | EV_C | EV_D, 0, 2, 2 },
	[MT_ADDR] = { EV_O | EV_C | EV_D, 0, 2, EGRESS_ADDRSTRLEN - 1 },
	[MT_SNI] = { EV_O | EV_C | EV_D, 0, 1, EGRESS_HOST_MAX },
	[MT_REASON] = { EV_O | EV_C | EV_D, EV_O | EV_C | EV_D, 1, 1 },
	[MT_CLOSE] = { EV_C, EV_C, 1, MW_WORD_MAX },
	[MT_UP] = { EV_C, 0, 8, 8 },
	[MT_DOWN] = { EV_C, 0, 8, 8 },
	[MT_DURATION] = { EV_C | EV_D, 0, 8, 8 },
	[MT_COUNT] = { EV_D, 0, 4, 4 },
	[MT_VIA] = { EV_O | EV_C | EV_D, 0, 1, MW_WORD_MAX },
};

static const char *const mw_frontends[] = {
	"http-connect", "http-forward", "socks5", "socks4", "native", "transparent", "dns",
};
static const char *const mw_closes[] = {
	"client-eof", "upstream-eof", "client-reset", "upstream-reset", "idle-timeout",
	"quota-bytes", "shutdown", "error", "daemon-restart",
};
static const char *const mw_vias[] = { "parent" };

/* --- writing ---------------------------------------------------------------------- */

void
mw_batch_begin(struct mw_writer *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap < MW_BATCH_MAX ? cap : MW_BATCH_MAX;
	w->len = sizeof(struct mw_head);
	w->count = 0;
}

static int
mw_put(struct mw_writer *w, size_t *at, unsigned tag, const void *v, size_t n)
{
	if (n > UINT16_MAX || *at + 3 + n > w->cap)
		return -1;
	w->buf[(*at)++] = (uint8_t)tag;
	wire_put16(w->buf + *at, (uint16_t)n);
	*at += 2;
	memcpy(w->buf + *at, v, n);
	*at += n;
	return 0;
}

static int
mw_put_str(struct mw_writer *w, size_t *at, unsigned tag, const char *s, unsigned *n)
{
	if (s == NULL)
		return 0;
	(*n)++;
	return mw_put(w, at, tag, s, strlen(s));
}

static int
mw_put_u64(struct mw_writer *w, size_t *at, unsigned tag, int64_t v, unsigned *n)
{
	uint8_t b[8];

	if (v < 0)
		return 0;
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
	(*n)++;
	return mw_put(w, at, tag, b, 8);
}

int
mw_batch_add(struct mw_writer *w, const struct receipt *r)
{
	size_t at = w->len + 2;
	unsigned n = 0;
	uint8_t b[4];
	int bad = 0;

	if (w->count >= MW_BATCH_RECORDS || at > w->cap ||
	    (r->event != RECEIPT_OPEN && r->event != RECEIPT_CLOSE && r->event != RECEIPT_DENY))
		return -1;
	bad |= mw_put_str(w, &at, MT_ID, r->id, &n);
	bad |= mw_put_str(w, &at, MT_PRINCIPAL, r->principal, &n);
	bad |= mw_put_str(w, &at, MT_POLICY, r->policy, &n);
	bad |= mw_put_str(w, &at, MT_FRONTEND, r->frontend, &n);
	bad |= mw_put_str(w, &at, MT_HOST, r->host, &n);
	if (r->raw != NULL && r->raw_len > 0) {
		n++;
		bad |= mw_put(w, &at, MT_RAW, r->raw, r->raw_len < MW_RAW_MAX ? r->raw_len :
		    MW_RAW_MAX);
	}
	if (r->port >= 0 && r->port <= 65535) {
		wire_put16(b, (uint16_t)r->port);
		n++;
		bad |= mw_put(w, &at, MT_PORT, b, 2);
	}
	bad |= mw_put_str(w, &at, MT_ADDR, r->addr, &n);
	bad |= mw_put_str(w, &at, MT_VIA, r->via, &n);
	bad |= mw_put_str(w, &at, MT_SNI, r->sni, &n);
	b[0] = (uint8_t)r->reason;
	n++;
	bad |= mw_put(w, &at, MT_REASON, b, 1);
	bad |= mw_put_str(w, &at, MT_CLOSE, r->close, &n);
	bad |= mw_put_u64(w, &at, MT_UP, r->bytes_up, &n);
	bad |= mw_put_u64(w, &at, MT_DOWN, r->bytes_down, &n);
	bad |= mw_put_u64(w, &at, MT_DURATION, r->duration_ms, &n);
	if (r->count > 1) {
		wire_put32(b, r->count);
		n++;
		bad |= mw_put(w, &at, MT_COUNT, b, 4);
	}
	if (bad)
		return -1;
	w->buf[w->len] = (uint8_t)r->event;
	w->buf[w->len + 1] = (uint8_t)n;
	w->len = at;
	w->count++;
	return 0;
}

size_t
mw_batch_end(struct mw_writer *w, uint64_t first_seq, uint64_t flags)
{
	struct mw_head h;

	memset(&h, 0, sizeof(h));
	h.magic = MW_MAGIC;
	h.type = MW_BATCH;
	h.count = (uint16_t)w->count;
	h.seq = first_seq;
	h.file_seq = flags;
	memcpy(w->buf, &h, sizeof(h));
	return w->len;
}

/* --- reading ---------------------------------------------------------------------- */

int
mw_batch_open(struct mw_reader *rd, const uint8_t *buf, size_t len, const char **why)
{
	struct mw_head h;

	if (len < sizeof(h) || len > MW_BATCH_MAX) {
		*why = "batch of a wrong size";
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MW_MAGIC || h.type != MW_BATCH) {
		*why = "not a batch";
		return -1;
	}
	if (h.count == 0 || h.count > MW_BATCH_RECORDS) {
		*why = "batch record count out of range";
		return -1;
	}
	if (h.seq == 0 || h.seq > UINT64_MAX - MW_BATCH_RECORDS) {
		*why = "batch seq out of range";
		return -1;
	}
	if ((h.file_seq & ~(uint64_t)MW_BATCH_NOACK) != 0) {
		*why = "unknown batch flags";
		return -1;
	}
	rd->noack = h.file_seq == MW_BATCH_NOACK;
	rd->p = buf + sizeof(h);
	rd->end = buf + len;
	rd->left = h.count;
	rd->seq = h.seq;
	return 0;
}

/* A canonical name as egressd writes one: lower-case letters, digits, '-', '_', '.' and,
 * for IPv6 literals, ':'; no empty label. */
static bool
mw_host_ok(const char *s, size_t n)
{
	bool colon = memchr(s, ':', n) != NULL;

	if (colon) {
		struct in6_addr a;

		return inet_pton(AF_INET6, s, &a) == 1;
	}
	if (s[0] == '.' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		    ch == '_' || ch == '.'))
			return false;
		if (ch == '.' && s[i + 1] == '.')
			return false;
	}
	return true;
}

static bool
mw_word_in(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

static bool
mw_name_ok(const char *s, size_t n)
{
	if (s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

static bool
mw_hex_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static uint64_t
mw_get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* One member's value into out; -1 with *why. */
static int
mw_member(struct mw_record *out, unsigned tag, const uint8_t *v, size_t n, const char **why)
{
	char *dst = NULL;
	size_t cap = 0;

	switch (tag) {
	case MT_ID: dst = out->id; cap = sizeof(out->id); break;
	case MT_PRINCIPAL: dst = out->principal; cap = sizeof(out->principal); break;
	case MT_POLICY: dst = out->policy; cap = sizeof(out->policy); break;
	case MT_FRONTEND: dst = out->frontend; cap = sizeof(out->frontend); break;
	case MT_HOST: dst = out->host; cap = sizeof(out->host); break;
	case MT_ADDR: dst = out->addr; cap = sizeof(out->addr); break;
	case MT_SNI: dst = out->sni; cap = sizeof(out->sni); break;
	case MT_CLOSE: dst = out->close; cap = sizeof(out->close); break;
	case MT_VIA: dst = out->via; cap = sizeof(out->via); break;
	default: break;
	}
	if (dst != NULL) {
		if (n >= cap || memchr(v, '\0', n) != NULL) {
			*why = "string member too long or with a NUL";
			return -1;
		}
		memcpy(dst, v, n);
		dst[n] = '\0';
	}
	switch (tag) {
	case MT_ID:
		if (n < 3 || dst[0] != 'c' || dst[1] != '-' || !mw_hex_ok(dst + 2, n - 2)) {
			*why = "id is not c-<hex>";
			return -1;
		}
		break;
	case MT_PRINCIPAL:
		if (!mw_name_ok(dst, n)) {
			*why = "principal is not a principal name";
			return -1;
		}
		break;
	case MT_POLICY:
		if (strncmp(dst, "sha256:", 7) != 0 || !mw_hex_ok(dst + 7, n - 7)) {
			*why = "policy is not sha256:<64 hex>";
			return -1;
		}
		break;
	case MT_FRONTEND:
		if (!mw_word_in(dst, mw_frontends, sizeof(mw_frontends) / sizeof(mw_frontends[0]))) {
			*why = "unknown frontend";
			return -1;
		}
		break;
	case MT_HOST:
	case MT_SNI:
		if (!mw_host_ok(dst, n)) {
			*why = "host or sni is not a canonical name";
			return -1;
		}
		break;
	case MT_RAW:
		memcpy(out->raw, v, n);
		out->raw_len = n;
		break;
	case MT_PORT:
		out->port = (int)wire_get16(v);
		break;
	case MT_ADDR: {
		struct in6_addr a6;
		struct in_addr a4;

		if (inet_pton(AF_INET, dst, &a4) != 1 && inet_pton(AF_INET6, dst, &a6) != 1) {
			*why = "addr is not an address";
			return -1;
		}
		break;
	}
	case MT_REASON:
		if (v[0] >= EGRESS_REASON_COUNT) {
			*why = "unknown reason";
			return -1;
		}
		out->reason = (enum egress_reason)v[0];
		break;
	case MT_CLOSE:
		if (!mw_word_in(dst, mw_closes, sizeof(mw_closes) / sizeof(mw_closes[0]))) {
			*why = "unknown close cause";
			return -1;
		}
		break;
	case MT_VIA:
		if (!mw_word_in(dst, mw_vias, sizeof(mw_vias) / sizeof(mw_vias[0]))) {
			*why = "unknown via";
			return -1;
		}
		break;
	case MT_UP:
	case MT_DOWN:
	case MT_DURATION: {
		uint64_t x = mw_get_u64(v);

		if (x > (uint64_t)INT64_MAX) {
			*why = "number out of range";
			return -1;
		}
		if (tag == MT_UP)
			out->bytes_up = (int64_t)x;
		else if (tag == MT_DOWN)
			out->bytes_down = (int64_t)x;
		else
			out->duration_ms = (int64_t)x;
		break;
	}
	case MT_COUNT:
		out->count = wire_get32(v);
		if (out->count < 2) {
			*why = "count below 2";
			return -1;
		}
		break;
	default:
		*why = "unknown member";
		return -1;
	}
	return 0;
}

int
mw_batch_next(struct mw_reader *rd, struct mw_record *out, const char **why)
{
	unsigned ev, members, seen = 0;

	if (rd->left == 0) {
		if (rd->p != rd->end) {
			*why = "bytes after the last record";
			return -1;
		}
		return 0;
	}
	if (rd->end - rd->p < 2) {
		*why = "truncated record";
		return -1;
	}
	ev = rd->p[0];
	members = rd->p[1];
	rd->p += 2;
	if (ev != RECEIPT_OPEN && ev != RECEIPT_CLOSE && ev != RECEIPT_DENY) {
		*why = "event is not open, close or deny";
		return -1;
	}
	if (rd->noack && ev != RECEIPT_CLOSE) {
		*why = "an open or a deny in a batch nobody waits for";
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->event = (enum receipt_event)ev;
	out->port = -1;
	out->bytes_up = out->bytes_down = out->duration_ms = -1;
	for (unsigned i = 0; i < members; i++) {
		unsigned tag;
		size_t n;

		if (rd->end - rd->p < 3) {
			*why = "truncated member";
			return -1;
		}
		tag = rd->p[0];
		n = wire_get16(rd->p + 1);
		rd->p += 3;
		if ((size_t)(rd->end - rd->p) < n) {
			*why = "member longer than the batch";
			return -1;
		}
		if (tag == 0 || tag >= MT_MAX) {
			*why = "unknown member";
			return -1;
		}
		if (seen & (1u << tag)) {
			*why = "member twice";
			return -1;
		}
		if ((mw_tags[tag].may & (1u << ev)) == 0) {
			*why = "member the event does not carry";
			return -1;
		}
		if (n < mw_tags[tag].min || n > mw_tags[tag].max) {
			*why = "member of a wrong length";
			return -1;
		}
		if (mw_member(out, tag, rd->p, n, why) == -1)
			return -1;
		seen |= 1u << tag;
		rd->p += n;
	}
	for (unsigned tag = 1; tag < MT_MAX; tag++)
		if ((mw_tags[tag].must & (1u << ev)) && !(seen & (1u << tag))) {
			*why = "a member the event needs is missing";
			return -1;
		}
	if (out->host[0] != '\0' && out->raw_len > 0) {
		*why = "both host and raw";
		return -1;
	}
	rd->left--;
	rd->seq++;
	return 1;
}

void
mw_record_receipt(const struct mw_record *rec, struct receipt *r)
{
	memset(r, 0, sizeof(*r));
	r->event = rec->event;
	r->id = rec->id[0] ? rec->id : NULL;
	r->principal = rec->principal;
	r->policy = rec->policy;
	r->frontend = rec->frontend[0] ? rec->frontend : NULL;
	r->host = rec->host[0] ? rec->host : NULL;
	r->raw = rec->raw_len ? rec->raw : NULL;
	r->raw_len = rec->raw_len;
	r->port = rec->port;
	r->addr = rec->addr[0] ? rec->addr : NULL;
	r->via = rec->via[0] ? rec->via : NULL;
	r->sni = rec->sni[0] ? rec->sni : NULL;
	r->reason = rec->reason;
	r->close = rec->close[0] ? rec->close : NULL;
	r->bytes_up = rec->bytes_up;
	r->bytes_down = rec->bytes_down;
	r->duration_ms = rec->duration_ms;
	r->count = rec->count;
}

/* --- requests ------------------------------------------------------------------------ */

static bool
mw_terminated(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

static bool
mw_digest_ok(const char *d)
{
	return strlen(d) == 71 && strncmp(d, "sha256:", 7) == 0 && mw_hex_ok(d + 7, 64);
}

int
mw_req_check(const struct mw_req *q, const char **why)
{
	const uint32_t known = MW_F_FROM_CONF | MW_F_LEASE | MW_F_OWNER | MW_F_PEER_UID;

	if (!mw_terminated(q->name, sizeof(q->name)) || !mw_terminated(q->digest,
	    sizeof(q->digest)) || !mw_terminated(q->path, sizeof(q->path)) ||
	    !mw_terminated(q->policy, sizeof(q->policy)) || !mw_terminated(q->text,
	    sizeof(q->text))) {
		*why = "a string member without its end";
		return -1;
	}
	if (q->err != 0) {
		*why = "a request with an error set";
		return -1;
	}
	if ((q->flags & ~known) != 0) {
		*why = "unknown flags";
		return -1;
	}
	switch (q->op) {
	case MW_LISTEN:
		if (q->name[0] == '\0' || !mw_name_ok(q->name, strlen(q->name)) ||
		    q->path[0] != '/' || q->policy[0] != '/' || !mw_digest_ok(q->digest)) {
			*why = "LISTEN needs a principal name, absolute socket and policy paths, a digest";
			return -1;
		}
		break;
	case MW_UNLINK:
		if (q->name[0] == '\0' || !mw_name_ok(q->name, strlen(q->name))) {
			*why = "UNLINK needs a principal name";
			return -1;
		}
		break;
	case MW_OPEN:
		if (q->kind < MW_OPEN_CONF || q->kind > MW_OPEN_PEER || q->path[0] != '/') {
			*why = "OPEN needs a known kind and an absolute path";
			return -1;
		}
		break;
	case MW_ADOPT:
		if (q->kind > MW_ADOPT_METRICS) {
			*why = "ADOPT of an unknown kind";
			return -1;
		}
		break;
	case MW_READY:
		break;
	case MW_MACCHECK:
		if (q->path[0] != '/' || !mw_digest_ok(q->digest)) {
			*why = "MACCHECK needs an absolute path and a digest";
			return -1;
		}
		break;
	default:
		*why = "unknown op";
		return -1;
	}
	return 0;
}
