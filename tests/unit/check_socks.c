/*
 * check_socks.c: unit tests for the SOCKS frontends (proto/socks.c): SOCKS5 (RFC 1928)
 * with RFC 1929 username/password, and SOCKS4/4a, against SPEC "egressd / Frontends",
 * the reasons table (REP and CD bytes) and the vectors of protocol-notes parts (a.1) and
 * (a.2).
 *
 * Every input is copied into a heap buffer of exactly its length, so that a read past
 * len is an ASan error in --enable-asan builds. Every message is also fed at every split
 * point and followed by payload; whole conversations are delivered byte by byte and all
 * in one buffer.
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socks.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define IN(lit) .in = (lit), .len = sizeof(lit) - 1
#define REPLY(lit) .reply = (lit), .replylen = sizeof(lit) - 1
#define RAW(lit) .raw = (lit), .raw_len = sizeof(lit) - 1

/* Failure replies: complete, ATYP 1, 0.0.0.0:0 (protocol-notes a.1). */
#define R5_01 "\x05\x01\x00\x01\x00\x00\x00\x00\x00\x00"
#define R5_02 "\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00"
#define R5_07 "\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00"
#define R5_08 "\x05\x08\x00\x01\x00\x00\x00\x00\x00\x00"

/* What a client may send before the reply: a TLS ClientHello (early data). */
static const char payload[] = "\x16\x03\x01\x00\x43\x01\x00\x00\x3f\x03\x03\x00\x05\x01";

static const char *
show(const void *v, size_t len, char *buf, size_t cap)
{
	const unsigned char *s = v;
	size_t o = 0, i;

	for (i = 0; i < len && o + 8 < cap; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
			buf[o++] = (char)s[i];
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", s[i]);
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static uint8_t *
exact_copy(const void *s, size_t len)
{
	uint8_t *p = malloc(len == 0 ? 1 : len);

	ck_assert_ptr_nonnull(p);
	if (len > 0)
		memcpy(p, s, len);
	return p;
}

static void
check_host_fixed_point(const struct host *h)
{
	struct host again;
	const char *why = NULL;

	ck_assert_msg(host_parse(h->name, strlen(h->name), &again, &why) == 0,
	    "canonical host \"%s\" does not parse again", h->name);
	ck_assert_str_eq(again.name, h->name);
	ck_assert_int_eq(again.kind, h->kind);
	if (h->kind != HOST_NAME)
		ck_assert(addr_equal(&again.addr, &h->addr));
}

/* --- SOCKS5, one message at a time --------------------------------------------------- */

static const struct s5_case {
	enum socks5_stage stage;     /* where the conversation is */
	const char *in;
	size_t len;
	enum proto_status status;
	const char *reply;
	size_t replylen;
	size_t consumed;             /* OK */
	enum socks5_stage next;      /* OK */
	enum egress_reason reason;   /* ERROR */
	int rep;                     /* ERROR: err->socks_rep */
	enum host_kind hkind;        /* DONE */
	const char *host;
	uint16_t port;
	bool by_name;
	const char *raw;             /* bad-host */
	size_t raw_len;
} s5[] = {
	/* greeting: no-auth preferred, then username/password, never GSSAPI */
	{ SOCKS5_GREETING, IN("\x05\x01\x00"), PROTO_OK, REPLY("\x05\x00"), .consumed = 3,
	  .next = SOCKS5_REQUEST },
	{ SOCKS5_GREETING, IN("\x05\x02\x00\x02"), PROTO_OK, REPLY("\x05\x00"), .consumed = 4,
	  .next = SOCKS5_REQUEST },
	{ SOCKS5_GREETING, IN("\x05\x02\x02\x00"), PROTO_OK, REPLY("\x05\x00"), .consumed = 4,
	  .next = SOCKS5_REQUEST },
	{ SOCKS5_GREETING, IN("\x05\x01\x02"), PROTO_OK, REPLY("\x05\x02"), .consumed = 3,
	  .next = SOCKS5_AUTH },
	{ SOCKS5_GREETING, IN("\x05\x02\x01\x02"), PROTO_OK, REPLY("\x05\x02"), .consumed = 4,
	  .next = SOCKS5_AUTH },
	{ SOCKS5_GREETING, IN("\x05\x04\x80\x01\x03\x00"), PROTO_OK, REPLY("\x05\x00"),
	  .consumed = 6, .next = SOCKS5_REQUEST },
	{ SOCKS5_GREETING, IN("\x05\x03\x02\x02\x02"), PROTO_OK, REPLY("\x05\x02"), .consumed = 5,
	  .next = SOCKS5_AUTH },
	{ SOCKS5_GREETING, IN("\x05\x01\x01"), PROTO_ERROR, REPLY("\x05\xff"),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0xff },
	{ SOCKS5_GREETING, IN("\x05\x01\x80"), PROTO_ERROR, REPLY("\x05\xff"),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0xff },
	{ SOCKS5_GREETING, IN("\x05\x01\xff"), PROTO_ERROR, REPLY("\x05\xff"),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0xff },
	{ SOCKS5_GREETING, IN("\x05\x03\x01\x03\x04"), PROTO_ERROR, REPLY("\x05\xff"),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0xff },
	{ SOCKS5_GREETING, IN("\x05\x00"), PROTO_ERROR, REPLY("\x05\xff"),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = 0xff },
	{ SOCKS5_GREETING, IN("\x04\x01\x00"), PROTO_ERROR, REPLY(""),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = -1 },
	{ SOCKS5_GREETING, IN("\x05\x03\x00"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_GREETING, IN("\x05"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_GREETING, IN(""), PROTO_NEED_MORE, REPLY("") },

	/* RFC 1929: any credential accepted, lengths 1..255 */
	{ SOCKS5_AUTH, IN("\x01\x04" "user" "\x04" "pass"), PROTO_OK, REPLY("\x01\x00"),
	  .consumed = 11, .next = SOCKS5_REQUEST },
	{ SOCKS5_AUTH, IN("\x01\x04" "user" "\x04" "xxxx"), PROTO_OK, REPLY("\x01\x00"),
	  .consumed = 11, .next = SOCKS5_REQUEST },
	{ SOCKS5_AUTH, IN("\x01\x04" "uz3r" "\x08" "p4ssworm"), PROTO_OK, REPLY("\x01\x00"),
	  .consumed = 15, .next = SOCKS5_REQUEST },
	{ SOCKS5_AUTH, IN("\x01\x01" "u" "\x01" "\x00"), PROTO_OK, REPLY("\x01\x00"),
	  .consumed = 5, .next = SOCKS5_REQUEST },
	{ SOCKS5_AUTH, IN("\x01\x00\x04" "pass"), PROTO_ERROR, REPLY("\x01\x01"),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_AUTH, IN("\x01\x04" "user" "\x00"), PROTO_ERROR, REPLY("\x01\x01"),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_AUTH, IN("\x02\x04" "user" "\x04" "pass"), PROTO_ERROR, REPLY("\x01\x01"),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_AUTH, IN("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY("\x01\x01"), .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_AUTH, IN("\x01\x04" "use"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_AUTH, IN("\x01\x04" "user"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_AUTH, IN("\x01\x04" "user" "\x04" "pas"), PROTO_NEED_MORE, REPLY("") },

	/* CONNECT: protocol-notes a.1 vectors */
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50"), PROTO_OK, REPLY(""),
	  .consumed = 10, .next = SOCKS5_DONE, .hkind = HOST_IPV4, .host = "127.0.0.1",
	  .port = 80 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0b" "example.com" "\x01\xbb"), PROTO_OK,
	  REPLY(""), .consumed = 18, .next = SOCKS5_DONE, .hkind = HOST_NAME,
	  .host = "example.com", .port = 443, .by_name = true },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x09" "localhost" "\x00\x50"), PROTO_OK,
	  REPLY(""), .consumed = 16, .next = SOCKS5_DONE, .hkind = HOST_NAME,
	  .host = "localhost", .port = 80, .by_name = true },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	  "\x00\x00\x00\x00\x01\x00\x50"), PROTO_OK, REPLY(""), .consumed = 22,
	  .next = SOCKS5_DONE, .hkind = HOST_IPV6, .host = "::1", .port = 80 },
	/* a literal sent as a name is a literal, never sent to DNS */
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x09" "127.0.0.1" "\x00\x50"), PROTO_OK,
	  REPLY(""), .consumed = 16, .next = SOCKS5_DONE, .hkind = HOST_IPV4,
	  .host = "127.0.0.1", .port = 80, .by_name = true },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x03" "::1" "\x00\x50"), PROTO_OK, REPLY(""),
	  .consumed = 10, .next = SOCKS5_DONE, .hkind = HOST_IPV6, .host = "::1", .port = 80,
	  .by_name = true },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x05" "[::1]" "\x00\x50"), PROTO_OK, REPLY(""),
	  .consumed = 12, .next = SOCKS5_DONE, .hkind = HOST_IPV6, .host = "::1", .port = 80,
	  .by_name = true },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0c" "EXAMPLE.com." "\x01\xbb"), PROTO_OK,
	  REPLY(""), .consumed = 19, .next = SOCKS5_DONE, .hkind = HOST_NAME,
	  .host = "example.com", .port = 443, .by_name = true },
	/* port 0 is returned as is: the policy refuses it */
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0b" "example.com" "\x00\x00"), PROTO_OK,
	  REPLY(""), .consumed = 18, .next = SOCKS5_DONE, .hkind = HOST_NAME,
	  .host = "example.com", .port = 0, .by_name = true },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x01\x00\x00\x00\x00\x00\x00"), PROTO_OK, REPLY(""),
	  .consumed = 10, .next = SOCKS5_DONE, .hkind = HOST_IPV4, .host = "0.0.0.0",
	  .port = 0 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x01\xff\xff\xff\xff\xff\xff"), PROTO_OK, REPLY(""),
	  .consumed = 10, .next = SOCKS5_DONE, .hkind = HOST_IPV4, .host = "255.255.255.255",
	  .port = 65535 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x01\x8c\x52\x70\x04\x00\x16"), PROTO_OK, REPLY(""),
	  .consumed = 10, .next = SOCKS5_DONE, .hkind = HOST_IPV4, .host = "140.82.112.4",
	  .port = 22 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x04\x26\x06\x47\x00\x47\x00\x00\x00\x00\x00\x00\x00"
	  "\x00\x00\x11\x11\x01\xbb"), PROTO_OK, REPLY(""), .consumed = 22, .next = SOCKS5_DONE,
	  .hkind = HOST_IPV6, .host = "2606:4700:4700::1111", .port = 443 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff"
	  "\x7f\x00\x00\x01\x00\x50"), PROTO_OK, REPLY(""), .consumed = 22, .next = SOCKS5_DONE,
	  .hkind = HOST_IPV6, .host = "::ffff:127.0.0.1", .port = 80 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	  "\x00\x00\x00\x00\x00\x50"), PROTO_OK, REPLY(""), .consumed = 22, .next = SOCKS5_DONE,
	  .hkind = HOST_IPV6, .host = "::", .port = 80 },

	/* names host_parse refuses: bad-host, REP 02, raw = the name */
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0a" "2130706433" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("2130706433") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x15" "evil.com\x00.example.com" "\x01\xbb"),
	  PROTO_ERROR, REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02,
	  RAW("evil.com\x00.example.com") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x05" "127.1" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("127.1") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x06" "0x7f.1" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("0x7f.1") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0c" "exa_mple.com" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("exa_mple.com") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x03" "a b" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("a b") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0c" "b\xc3\xbc" "cher.test" "\x00\x50"),
	  PROTO_ERROR, REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02,
	  RAW("b\xc3\xbc" "cher.test") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0b" "example.co\n" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("example.co\n") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0a" "fe80::1%lo" "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW("fe80::1%lo") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x01" "." "\x00\x50"), PROTO_ERROR,
	  REPLY(R5_02), .reason = EGRESS_BAD_HOST, .rep = 0x02, RAW(".") },
	/* malformed: RSV, empty name, VER */
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x00\x01\xbb"), PROTO_ERROR, REPLY(R5_01),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x01\x01\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY(R5_01), .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_REQUEST, IN("\x05\x01\xff\x03\x0b" "example.com" "\x01\xbb"), PROTO_ERROR,
	  REPLY(R5_01), .reason = EGRESS_MALFORMED_REQUEST, .rep = 0x01 },
	{ SOCKS5_REQUEST, IN("\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY(""), .reason = EGRESS_MALFORMED_REQUEST, .rep = -1 },
	{ SOCKS5_REQUEST, IN("\x01\x04" "user" "\x04" "pass"), PROTO_ERROR, REPLY(""),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = -1 },
	/* commands: only CONNECT */
	{ SOCKS5_REQUEST, IN("\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY(R5_07), .reason = EGRESS_UNSUPPORTED, .rep = 0x07 },
	{ SOCKS5_REQUEST, IN("\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"), PROTO_ERROR,
	  REPLY(R5_07), .reason = EGRESS_UNSUPPORTED, .rep = 0x07 },
	{ SOCKS5_REQUEST, IN("\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY(R5_07), .reason = EGRESS_UNSUPPORTED, .rep = 0x07 },
	{ SOCKS5_REQUEST, IN("\x05\x04\x00\x01\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY(R5_07), .reason = EGRESS_UNSUPPORTED, .rep = 0x07 },
	{ SOCKS5_REQUEST, IN("\x05\xff\x00\x01"), PROTO_ERROR, REPLY(R5_07),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0x07 },
	/* address types: 1, 3 and 4 only */
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x02\x7f\x00\x00\x01\x00\x50"), PROTO_ERROR,
	  REPLY(R5_08), .reason = EGRESS_UNSUPPORTED, .rep = 0x08 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x00"), PROTO_ERROR, REPLY(R5_08),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0x08 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x05"), PROTO_ERROR, REPLY(R5_08),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0x08 },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\xff"), PROTO_ERROR, REPLY(R5_08),
	  .reason = EGRESS_UNSUPPORTED, .rep = 0x08 },
	/* incomplete: never read past the buffer */
	{ SOCKS5_REQUEST, IN(""), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x01\x7f\x00"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\x0b" "exam"), PROTO_NEED_MORE, REPLY("") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x03\xff" "example.com" "\x01\xbb"), PROTO_NEED_MORE,
	  REPLY("") },
	{ SOCKS5_REQUEST, IN("\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	  "\x00\x00\x00\x01\x00"), PROTO_NEED_MORE, REPLY("") },
	/* after DONE nothing more is parsed */
	{ SOCKS5_DONE, IN("\x05\x01\x00"), PROTO_ERROR, REPLY(""),
	  .reason = EGRESS_MALFORMED_REQUEST, .rep = -1 },
};

static enum proto_status
s5_run(const struct s5_case *c, const uint8_t *p, size_t len, struct socks5 *s,
    size_t *consumed, uint8_t reply[10], size_t *replylen, struct socks_request *req,
    struct proto_error *err)
{
	memset(s, 0, sizeof(*s));
	s->stage = c->stage;
	memset(req, 0xa5, sizeof(*req));
	memset(err, 0xa5, sizeof(*err));
	memset(reply, 0xa5, 10);
	*consumed = 12345;
	*replylen = 12345;
	return socks5_step(s, p, len, consumed, reply, replylen, req, err);
}

static void
s5_check(const struct s5_case *c, const uint8_t *p, size_t len)
{
	struct socks5 s;
	struct socks_request req;
	struct proto_error err;
	uint8_t reply[10];
	size_t consumed, replylen;
	enum proto_status r = s5_run(c, p, len, &s, &consumed, reply, &replylen, &req, &err);
	char b1[256], b2[256];

	ck_assert_msg(r == c->status, "\"%s\" at stage %d: status %d (%s), expected %d",
	    show(c->in, c->len, b1, sizeof(b1)), c->stage, r,
	    r == PROTO_ERROR ? err.why : "", c->status);
	ck_assert_msg(replylen == c->replylen && memcmp(reply, c->reply, replylen) == 0,
	    "\"%s\": reply \"%s\", expected \"%s\"", show(c->in, c->len, b1, sizeof(b1)),
	    show(reply, replylen <= 10 ? replylen : 10, b2, sizeof(b2)), c->reply);
	ck_assert_uint_le(replylen, 10);
	ck_assert_uint_le(consumed, len);
	switch (r) {
	case PROTO_OK:
		ck_assert_uint_eq(consumed, c->consumed);
		ck_assert_int_eq(s.stage, c->next);
		if (c->next == SOCKS5_DONE) {
			ck_assert_int_eq(req.version, 5);
			ck_assert_int_eq(req.host.kind, c->hkind);
			ck_assert_str_eq(req.host.name, c->host);
			ck_assert_uint_eq(req.port, c->port);
			ck_assert(req.by_name == c->by_name);
			check_host_fixed_point(&req.host);
		}
		break;
	case PROTO_NEED_MORE:
		ck_assert_uint_eq(consumed, 0);
		ck_assert_int_eq(s.stage, c->stage);
		break;
	case PROTO_ERROR:
		ck_assert_msg(err.reason == c->reason, "\"%s\": reason %s, expected %s",
		    show(c->in, c->len, b1, sizeof(b1)), egress_reason_name(err.reason),
		    egress_reason_name(c->reason));
		ck_assert_int_eq(err.socks_rep, c->rep);
		ck_assert_msg(err.why != NULL && err.why[0] != '\0', "refused without a reason");
		/* bad-host names the port that follows the name (the receipt carries it) */
		if (err.reason == EGRESS_BAD_HOST) {
			ck_assert(err.has_port);
			ck_assert_uint_eq(err.port, (unsigned)(p[5 + p[4]] << 8 | p[6 + p[4]]));
		} else
			ck_assert(!err.has_port);
		if (c->raw != NULL) {
			ck_assert_uint_eq(err.raw_len, c->raw_len);
			ck_assert(err.raw >= p && err.raw + err.raw_len <= p + len);
			ck_assert(memcmp(err.raw, c->raw, c->raw_len) == 0);
		}
		/* a request-stage reply is the table's REP for the reason (ATYP: 08) */
		if (c->stage == SOCKS5_REQUEST && replylen == 10 && c->rep != 0x08)
			ck_assert_int_eq(reply[1], egress_reason_socks5(err.reason));
		break;
	}
}

START_TEST(test_s5)
{
	uint8_t *p = exact_copy(s5[_i].in, s5[_i].len);

	s5_check(&s5[_i], p, s5[_i].len);
	free(p);
}
END_TEST

/* Every proper prefix of an accepted message is NEED_MORE, with nothing to send. */
START_TEST(test_s5_split)
{
	const struct s5_case *c = &s5[_i];
	struct socks5 s;
	struct socks_request req;
	struct proto_error err;
	uint8_t reply[10];
	size_t consumed, replylen;
	char b[256];

	for (size_t k = 0; k < c->len; k++) {
		uint8_t *p = exact_copy(c->in, k);
		enum proto_status r = s5_run(c, p, k, &s, &consumed, reply, &replylen, &req, &err);

		if (c->status == PROTO_OK || c->status == PROTO_NEED_MORE) {
			ck_assert_msg(r == PROTO_NEED_MORE,
			    "prefix of %zu bytes of \"%s\": status %d, expected NEED_MORE", k,
			    show(c->in, c->len, b, sizeof(b)), r);
			ck_assert_uint_eq(replylen, 0);
			ck_assert_uint_eq(consumed, 0);
		} else
			ck_assert_int_ne(r, PROTO_OK);
		free(p);
	}
}
END_TEST

/* Followed by more bytes (the next message, early data): one message is taken. */
START_TEST(test_s5_coalesced)
{
	const struct s5_case *c = &s5[_i];
	size_t n = c->len + sizeof(payload) - 1;
	uint8_t *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	memcpy(p, c->in, c->len);
	memcpy(p + c->len, payload, sizeof(payload) - 1);
	if (c->status != PROTO_NEED_MORE)
		s5_check(c, p, n);
	free(p);
}
END_TEST

START_TEST(test_s5_name_lengths)
{
	/* 253 octets (the longest name), 254 with the root dot, 255 too long */
	static const size_t lens[] = { 1, 63, 253, 254, 255 };
	uint8_t buf[4 + 1 + 255 + 2 + sizeof(payload)];
	struct socks5 s;
	struct socks_request req;
	struct proto_error err;
	uint8_t reply[10];
	size_t consumed, replylen, i, j, n;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		n = lens[i];
		memcpy(buf, "\x05\x01\x00\x03", 4);
		buf[4] = (uint8_t)n;
		/* labels of 63 'a' separated by dots; the 254th byte is the root dot */
		for (j = 0; j < n; j++)
			buf[5 + j] = (j % 64 == 63 || j == 253) ? '.' : 'a';
		buf[5 + n] = 0x01;
		buf[6 + n] = 0xbb;
		memset(&s, 0, sizeof(s));
		s.stage = SOCKS5_REQUEST;
		enum proto_status r = socks5_step(&s, buf, 7 + n, &consumed, reply, &replylen,
		    &req, &err);
		if (n <= 254) {
			ck_assert_msg(r == PROTO_OK, "name of %zu bytes: %s", n, err.why);
			ck_assert_uint_eq(consumed, 7 + n);
			ck_assert_uint_eq(strlen(req.host.name), n == 254 ? 253 : n);
			ck_assert_uint_eq(req.port, 443);
		} else {
			ck_assert_int_eq(r, PROTO_ERROR);
			ck_assert_int_eq(err.reason, EGRESS_BAD_HOST);
			ck_assert_uint_eq(replylen, 10);
			ck_assert_int_eq(reply[1], 0x02);
			ck_assert_uint_eq(err.raw_len, 255);
		}
	}
}
END_TEST

START_TEST(test_s5_auth_lengths)
{
	/* curl test742: 255-byte user, 255-byte password */
	uint8_t buf[3 + 255 + 255];
	struct socks5 s;
	struct socks_request req;
	struct proto_error err;
	uint8_t reply[10];
	size_t consumed, replylen, k;

	buf[0] = 0x01;
	buf[1] = 0xff;
	memset(buf + 2, 'a', 255);
	buf[257] = 0xff;
	memset(buf + 258, 'b', 255);
	for (k = 0; k < sizeof(buf); k++) {
		uint8_t *p = exact_copy(buf, k);

		memset(&s, 0, sizeof(s));
		s.stage = SOCKS5_AUTH;
		ck_assert_int_eq(socks5_step(&s, p, k, &consumed, reply, &replylen, &req, &err),
		    PROTO_NEED_MORE);
		free(p);
	}
	memset(&s, 0, sizeof(s));
	s.stage = SOCKS5_AUTH;
	ck_assert_int_eq(socks5_step(&s, buf, sizeof(buf), &consumed, reply, &replylen, &req,
	    &err), PROTO_OK);
	ck_assert_uint_eq(consumed, sizeof(buf));
	ck_assert_uint_eq(replylen, 2);
	ck_assert(memcmp(reply, "\x01\x00", 2) == 0);
	ck_assert_int_eq(s.stage, SOCKS5_REQUEST);
}
END_TEST

/* --- SOCKS5 conversations ------------------------------------------------------------ */

static const struct {
	const char *in;              /* everything the client sends, payload excluded */
	size_t len;
	const char *out;             /* everything egressd answers */
	size_t outlen;
	enum proto_status status;    /* the last step */
	const char *host;            /* DONE */
	uint16_t port;
	enum egress_reason reason;   /* ERROR */
} convs[] = {
	{ "\x05\x01\x00" "\x05\x01\x00\x03\x0b" "example.com" "\x01\xbb", 3 + 18,
	  "\x05\x00", 2, PROTO_OK, "example.com", 443, 0 },
	{ "\x05\x02\x00\x02" "\x05\x01\x00\x01\x8c\x52\x70\x04\x00\x16", 4 + 10,
	  "\x05\x00", 2, PROTO_OK, "140.82.112.4", 22, 0 },
	{ "\x05\x01\x02" "\x01\x04" "user" "\x04" "pass" "\x05\x01\x00\x03\x0b" "example.com"
	  "\x01\xbb", 3 + 11 + 18,
	  "\x05\x02" "\x01\x00", 4, PROTO_OK, "example.com", 443, 0 },
	{ "\x05\x01\x02" "\x01\x04" "uz3r" "\x08" "p4ssworm" "\x05\x01\x00\x04"
	  "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01" "\x1f\x90",
	  3 + 15 + 22, "\x05\x02" "\x01\x00", 4, PROTO_OK, "2001:db8::1", 8080, 0 },
	{ "\x05\x01\x00" "\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", 3 + 10,
	  "\x05\x00" R5_07, 12, PROTO_ERROR, NULL, 0, EGRESS_UNSUPPORTED },
	{ "\x05\x01\x00" "\x05\x01\x00\x03\x0a" "2130706433" "\x00\x50", 3 + 17,
	  "\x05\x00" R5_02, 12, PROTO_ERROR, NULL, 0, EGRESS_BAD_HOST },
	{ "\x05\x01\x02" "\x01\x00\x04" "pass", 3 + 7,
	  "\x05\x02" "\x01\x01", 4, PROTO_ERROR, NULL, 0, EGRESS_MALFORMED_REQUEST },
	{ "\x05\x01\x01", 3, "\x05\xff", 2, PROTO_ERROR, NULL, 0, EGRESS_UNSUPPORTED },
	{ "\x05\x01\x00" "\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50", 3 + 10,
	  "\x05\x00", 2, PROTO_ERROR, NULL, 0, EGRESS_MALFORMED_REQUEST },
};

/*
 * Runs a conversation over data[0..len) delivered in pieces of step bytes (0: all at
 * once), as the daemon would: a window of received, unconsumed bytes, one step per
 * arrival while messages complete. Returns the last status; out collects the replies.
 */
static enum proto_status
conv_run(const uint8_t *data, size_t len, size_t step, uint8_t *out, size_t *outlen,
    struct socks_request *req, struct proto_error *err, size_t *rest)
{
	struct socks5 s = { SOCKS5_GREETING };
	uint8_t reply[10];
	size_t start = 0, have = step == 0 ? len : 0, consumed, replylen;
	enum proto_status r = PROTO_NEED_MORE;
	unsigned steps = 0;

	*outlen = 0;
	for (;;) {
		uint8_t *win = exact_copy(data + start, have - start);

		r = socks5_step(&s, win, have - start, &consumed, reply, &replylen, req, err);
		free(win);
		ck_assert_uint_le(consumed, have - start);
		ck_assert_uint_le(replylen, 10);
		memcpy(out + *outlen, reply, replylen);
		*outlen += replylen;
		ck_assert_uint_lt(++steps, 10000);
		if (r == PROTO_ERROR || (r == PROTO_OK && s.stage == SOCKS5_DONE)) {
			start += consumed;
			break;
		}
		if (r == PROTO_OK) {
			ck_assert_uint_gt(consumed, 0);
			start += consumed;
			continue;
		}
		if (have == len)
			break;
		have = have + step > len ? len : have + step;
	}
	*rest = len - start;
	return r;
}

static void
conv_check(int i, size_t step)
{
	size_t n = convs[i].len + sizeof(payload) - 1, outlen, rest;
	uint8_t *data = malloc(n), out[64];
	struct socks_request req;
	struct proto_error err;
	enum proto_status r;
	char b1[256], b2[256];

	ck_assert_ptr_nonnull(data);
	memcpy(data, convs[i].in, convs[i].len);
	memcpy(data + convs[i].len, payload, sizeof(payload) - 1);
	r = conv_run(data, n, step, out, &outlen, &req, &err, &rest);
	ck_assert_msg(r == convs[i].status, "conversation %d, step %zu: status %d (%s)", i, step,
	    r, r == PROTO_ERROR ? err.why : "");
	ck_assert_msg(outlen == convs[i].outlen && memcmp(out, convs[i].out, outlen) == 0,
	    "conversation %d, step %zu: answered \"%s\", expected \"%s\"", i, step,
	    show(out, outlen, b1, sizeof(b1)), show(convs[i].out, convs[i].outlen, b2, sizeof(b2)));
	if (r == PROTO_OK) {
		ck_assert_str_eq(req.host.name, convs[i].host);
		ck_assert_uint_eq(req.port, convs[i].port);
		/* the early data is left for the SNI guard, untouched */
		ck_assert_uint_eq(rest, sizeof(payload) - 1);
	} else
		ck_assert_int_eq(err.reason, convs[i].reason);
	free(data);
}

START_TEST(test_conv_coalesced)
{
	conv_check(_i, 0);
}
END_TEST

START_TEST(test_conv_bytewise)
{
	conv_check(_i, 1);
	conv_check(_i, 2);
	conv_check(_i, 3);
	conv_check(_i, 7);
}
END_TEST

START_TEST(test_s5_reply)
{
	uint8_t out[10];

	ck_assert_uint_eq(socks5_reply(0x00, out), 10);
	ck_assert(memcmp(out, "\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10) == 0);
	ck_assert_uint_eq(socks5_reply(0x05, out), 10);
	ck_assert(memcmp(out, "\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00", 10) == 0);
	/* every reason with a REP gives a complete reply carrying it */
	for (int r = 0; r < EGRESS_REASON_COUNT; r++) {
		int rep = egress_reason_socks5((enum egress_reason)r);

		if (rep < 0)
			continue;
		ck_assert_uint_eq(socks5_reply((uint8_t)rep, out), 10);
		ck_assert_int_eq(out[0], 5);
		ck_assert_int_eq(out[1], rep);
		ck_assert_int_eq(out[3], 1);
	}
}
END_TEST

/* --- SOCKS4 / SOCKS4a ---------------------------------------------------------------- */

static const struct s4_case {
	const char *in;
	size_t len;
	enum proto_status status;
	size_t consumed;             /* OK */
	enum egress_reason reason;   /* ERROR */
	enum host_kind hkind;        /* OK */
	const char *host;
	uint16_t port;
	bool by_name;
	const char *raw;             /* bad-host */
	size_t raw_len;
} s4[] = {
	/* protocol-notes a.2 vectors */
	{ IN("\x04\x01\x00\x50\x7f\x00\x00\x01\x00"), PROTO_OK, 9, 0, HOST_IPV4, "127.0.0.1", 80 },
	{ IN("\x04\x01\x01\xbb\x00\x00\x00\x01\x00" "example.com\x00"), PROTO_OK, 21, 0,
	  HOST_NAME, "example.com", 443, true },
	{ IN("\x04\x02\x00\x50\x7f\x00\x00\x01\x00"), PROTO_ERROR, 0, EGRESS_UNSUPPORTED },
	/* user ids are skipped, never looked at */
	{ IN("\x04\x01\x00\x16\x8c\x52\x70\x04" "fred\x00"), PROTO_OK, 13, 0, HOST_IPV4,
	  "140.82.112.4", 22 },
	{ IN("\x04\x01\x01\xbb\x00\x00\x00\xff" "fred\x00" "API.GitHub.com.\x00"), PROTO_OK, 29,
	  0, HOST_NAME, "api.github.com", 443, true },
	{ IN("\x04\x01\x01\xbb\x00\x00\x00\x01" "\x01\x02\xff\x00" "example.com\x00"), PROTO_OK,
	  24, 0, HOST_NAME, "example.com", 443, true },
	/* 0.0.0.0 is an address, not the 4a marker: the pipeline refuses it */
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x00\x00"), PROTO_OK, 9, 0, HOST_IPV4, "0.0.0.0", 80 },
	{ IN("\x04\x01\x00\x50\x00\x00\x01\x00\x00"), PROTO_OK, 9, 0, HOST_IPV4, "0.0.1.0", 80 },
	{ IN("\x04\x01\x00\x00\x7f\x00\x00\x01\x00"), PROTO_OK, 9, 0, HOST_IPV4, "127.0.0.1", 0 },
	{ IN("\x04\x01\xff\xff\xff\xff\xff\xff\x00"), PROTO_OK, 9, 0, HOST_IPV4,
	  "255.255.255.255", 65535 },
	/* 4a names go through host_parse: literals stay literals */
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "127.0.0.1\x00"), PROTO_OK, 19, 0,
	  HOST_IPV4, "127.0.0.1", 80, true },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "[::1]\x00"), PROTO_OK, 15, 0,
	  HOST_IPV6, "::1", 80, true },
	/* the name ends at its NUL: what follows is payload, not part of the name */
	{ IN("\x04\x01\x01\xbb\x00\x00\x00\x01\x00" "evil.com\x00.example.com\x00"), PROTO_OK,
	  18, 0, HOST_NAME, "evil.com", 443, true },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "2130706433\x00"), PROTO_ERROR, 0,
	  EGRESS_BAD_HOST, .raw = "2130706433", .raw_len = 10 },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "127.1\x00"), PROTO_ERROR, 0,
	  EGRESS_BAD_HOST, .raw = "127.1", .raw_len = 5 },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "a b\x00"), PROTO_ERROR, 0,
	  EGRESS_BAD_HOST, .raw = "a b", .raw_len = 3 },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "exa_mple.com\x00"), PROTO_ERROR, 0,
	  EGRESS_BAD_HOST, .raw = "exa_mple.com", .raw_len = 12 },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "\xff\xfe\x00"), PROTO_ERROR, 0,
	  EGRESS_BAD_HOST, .raw = "\xff\xfe", .raw_len = 2 },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "\x00"), PROTO_ERROR, 0,
	  EGRESS_MALFORMED_REQUEST },
	/* commands and versions */
	{ IN("\x04\x00\x00\x50\x7f\x00\x00\x01\x00"), PROTO_ERROR, 0, EGRESS_MALFORMED_REQUEST },
	{ IN("\x04\x03\x00\x50\x7f\x00\x00\x01\x00"), PROTO_ERROR, 0, EGRESS_MALFORMED_REQUEST },
	{ IN("\x04\x5a"), PROTO_ERROR, 0, EGRESS_MALFORMED_REQUEST },
	{ IN("\x04\x02"), PROTO_ERROR, 0, EGRESS_UNSUPPORTED },
	{ IN("\x05\x01\x00"), PROTO_ERROR, 0, EGRESS_MALFORMED_REQUEST },
	{ IN("\x00"), PROTO_ERROR, 0, EGRESS_MALFORMED_REQUEST },
	/* incomplete */
	{ IN(""), PROTO_NEED_MORE },
	{ IN("\x04"), PROTO_NEED_MORE },
	{ IN("\x04\x01\x00\x50\x7f\x00\x00"), PROTO_NEED_MORE },
	{ IN("\x04\x01\x00\x50\x7f\x00\x00\x01"), PROTO_NEED_MORE },
	{ IN("\x04\x01\x00\x50\x7f\x00\x00\x01" "fred"), PROTO_NEED_MORE },
	/* 4a marker without its name yet: wait (the handshake timeout ends it) */
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00"), PROTO_NEED_MORE },
	{ IN("\x04\x01\x00\x50\x00\x00\x00\x01\x00" "example"), PROTO_NEED_MORE },
};

static void
s4_check(const struct s4_case *c, const uint8_t *p, size_t len)
{
	struct socks_request req;
	struct proto_error err;
	size_t consumed = 12345;
	enum proto_status r;
	char b[256];

	memset(&req, 0xa5, sizeof(req));
	memset(&err, 0xa5, sizeof(err));
	r = socks4_parse(p, len, &consumed, &req, &err);
	ck_assert_msg(r == c->status, "\"%s\": status %d (%s), expected %d",
	    show(c->in, c->len, b, sizeof(b)), r, r == PROTO_ERROR ? err.why : "", c->status);
	ck_assert_uint_le(consumed, len);
	switch (r) {
	case PROTO_OK:
		ck_assert_uint_eq(consumed, c->consumed);
		ck_assert_int_eq(req.version, 4);
		ck_assert_int_eq(req.host.kind, c->hkind);
		ck_assert_str_eq(req.host.name, c->host);
		ck_assert_uint_eq(req.port, c->port);
		ck_assert(req.by_name == c->by_name);
		check_host_fixed_point(&req.host);
		break;
	case PROTO_NEED_MORE:
		ck_assert_uint_eq(consumed, 0);
		break;
	case PROTO_ERROR:
		ck_assert_msg(err.reason == c->reason, "\"%s\": reason %s, expected %s",
		    show(c->in, c->len, b, sizeof(b)), egress_reason_name(err.reason),
		    egress_reason_name(c->reason));
		ck_assert_msg(err.why != NULL && err.why[0] != '\0', "refused without a reason");
		/* -1: the table's CD, 91 for every refusal */
		ck_assert_int_eq(err.socks_rep, -1);
		/* bad-host names DSTPORT (the receipt carries it) */
		if (err.reason == EGRESS_BAD_HOST) {
			ck_assert(err.has_port);
			ck_assert_uint_eq(err.port, (unsigned)(p[2] << 8 | p[3]));
		} else
			ck_assert(!err.has_port);
		ck_assert_int_eq(egress_reason_socks4(err.reason), 91);
		if (c->raw != NULL) {
			ck_assert_uint_eq(err.raw_len, c->raw_len);
			ck_assert(err.raw >= p && err.raw + err.raw_len <= p + len);
			ck_assert(memcmp(err.raw, c->raw, c->raw_len) == 0);
		}
		break;
	}
}

START_TEST(test_s4)
{
	uint8_t *p = exact_copy(s4[_i].in, s4[_i].len);

	s4_check(&s4[_i], p, s4[_i].len);
	free(p);
}
END_TEST

START_TEST(test_s4_split)
{
	const struct s4_case *c = &s4[_i];
	struct socks_request req;
	struct proto_error err;
	size_t consumed;
	char b[256];

	for (size_t k = 0; k < c->len; k++) {
		uint8_t *p = exact_copy(c->in, k);
		enum proto_status r = socks4_parse(p, k, &consumed, &req, &err);

		if (c->status == PROTO_OK && k >= c->consumed) {
			/* the request ended before the input did */
			ck_assert_int_eq(r, PROTO_OK);
			ck_assert_uint_eq(consumed, c->consumed);
		} else if (c->status != PROTO_ERROR)
			ck_assert_msg(r == PROTO_NEED_MORE,
			    "prefix of %zu bytes of \"%s\": status %d, expected NEED_MORE", k,
			    show(c->in, c->len, b, sizeof(b)), r);
		else
			ck_assert_int_ne(r, PROTO_OK);
		free(p);
	}
}
END_TEST

START_TEST(test_s4_coalesced)
{
	const struct s4_case *c = &s4[_i];
	size_t n = c->len + sizeof(payload) - 1;
	uint8_t *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	memcpy(p, c->in, c->len);
	memcpy(p + c->len, payload, sizeof(payload) - 1);
	if (c->status != PROTO_NEED_MORE)
		s4_check(c, p, n);
	free(p);
}
END_TEST

START_TEST(test_s4_field_limits)
{
	uint8_t buf[8 + 300 + 300];
	struct socks_request req;
	struct proto_error err;
	size_t consumed, n;

	/* a user id of EGRESS_SOCKS_NAME_MAX bytes and its NUL */
	memcpy(buf, "\x04\x01\x00\x50\x7f\x00\x00\x01", 8);
	memset(buf + 8, 'u', EGRESS_SOCKS_NAME_MAX);
	buf[8 + EGRESS_SOCKS_NAME_MAX] = '\0';
	n = 8 + EGRESS_SOCKS_NAME_MAX + 1;
	ck_assert_int_eq(socks4_parse(buf, n, &consumed, &req, &err), PROTO_OK);
	ck_assert_uint_eq(consumed, n);
	/* without its NUL, still possible: wait */
	ck_assert_int_eq(socks4_parse(buf, n - 1, &consumed, &req, &err), PROTO_NEED_MORE);
	/* one byte longer without a NUL: refused, not waited for */
	buf[8 + EGRESS_SOCKS_NAME_MAX] = 'u';
	ck_assert_int_eq(socks4_parse(buf, n, &consumed, &req, &err), PROTO_ERROR);
	ck_assert_int_eq(err.reason, EGRESS_MALFORMED_REQUEST);
	buf[8 + EGRESS_SOCKS_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(socks4_parse(buf, n + 1, &consumed, &req, &err), PROTO_ERROR);

	/* SOCKS4a names: 253 octets fine, 255 bad-host, 256 without NUL malformed */
	memcpy(buf, "\x04\x01\x01\xbb\x00\x00\x00\x01\x00", 9);
	for (size_t len = 253; len <= 256; len++) {
		for (size_t j = 0; j < len; j++)
			buf[9 + j] = (j % 64 == 63) ? '.' : 'a';
		buf[9 + len] = '\0';
		enum proto_status r = socks4_parse(buf, 9 + len + 1, &consumed, &req, &err);
		if (len == 253) {
			ck_assert_int_eq(r, PROTO_OK);
			ck_assert_uint_eq(consumed, 9 + len + 1);
			ck_assert_uint_eq(strlen(req.host.name), 253);
		} else if (len <= EGRESS_SOCKS_NAME_MAX) {
			ck_assert_int_eq(r, PROTO_ERROR);
			ck_assert_int_eq(err.reason, EGRESS_BAD_HOST);
			ck_assert_uint_eq(err.raw_len, len);
		} else {
			ck_assert_int_eq(r, PROTO_ERROR);
			ck_assert_int_eq(err.reason, EGRESS_MALFORMED_REQUEST);
		}
	}
}
END_TEST

START_TEST(test_s4_reply)
{
	uint8_t out[8];

	ck_assert_uint_eq(socks4_reply(90, out), 8);
	ck_assert(memcmp(out, "\x00\x5a\x00\x00\x00\x00\x00\x00", 8) == 0);
	ck_assert_uint_eq(socks4_reply(91, out), 8);
	ck_assert(memcmp(out, "\x00\x5b\x00\x00\x00\x00\x00\x00", 8) == 0);
}
END_TEST

static Suite *
socks_suite(void)
{
	Suite *s = suite_create("socks");
	TCase *tc;

#define LOOP_CASE(name, fn, table) do { \
		tc = tcase_create(name); \
		tcase_add_loop_test(tc, fn, 0, NELEM(table)); \
		suite_add_tcase(s, tc); \
	} while (0)
#define ONE_CASE(name, fn) do { \
		tc = tcase_create(name); \
		tcase_add_test(tc, fn); \
		suite_add_tcase(s, tc); \
	} while (0)

	LOOP_CASE("socks5: one message, status, reply, host", test_s5, s5);
	LOOP_CASE("socks5: every proper prefix is NEED_MORE", test_s5_split, s5);
	LOOP_CASE("socks5: one message taken from coalesced bytes", test_s5_coalesced, s5);
	ONE_CASE("socks5: ATYP 3 name lengths", test_s5_name_lengths);
	ONE_CASE("socks5: RFC 1929 255/255 credentials", test_s5_auth_lengths);
	LOOP_CASE("socks5: conversations all at once", test_conv_coalesced, convs);
	LOOP_CASE("socks5: conversations byte by byte", test_conv_bytewise, convs);
	ONE_CASE("socks5: replies", test_s5_reply);
	LOOP_CASE("socks4: one request, status, host", test_s4, s4);
	LOOP_CASE("socks4: every proper prefix is NEED_MORE", test_s4_split, s4);
	LOOP_CASE("socks4: request followed by payload", test_s4_coalesced, s4);
	ONE_CASE("socks4: user id and 4a name bounds", test_s4_field_limits);
	ONE_CASE("socks4: replies", test_s4_reply);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(socks_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
