/*
 * socks.c: the SOCKS frontends of egressd: SOCKS5 (RFC 1928) with no authentication or
 * username/password (RFC 1929), and SOCKS4 / SOCKS4a (Ying-Da Lee's protocol notes).
 *
 * Trusts nothing it reads: every byte comes from the confined workload. Each function is
 * a pure parser over (buf, len) that the daemon calls again with more bytes; it reads no
 * byte past len, allocates nothing and copies no credential or user id anywhere. Names
 * are trusted to nobody but host_parse; a name it refuses is bad-host, never resolved.
 *
 * Choices where the protocols leave room:
 *  - SOCKS5 method selection prefers no-auth (0x00), then username/password (0x02);
 *    GSSAPI (0x01) is never selected. Any credential is accepted: identity is the
 *    listener the connection came in on, never what the client claims.
 *  - Every SOCKS5 failure after the greeting is a complete 10-byte reply with ATYP 1 and
 *    0.0.0.0:0, so that clients can parse it. A greeting or RFC 1929 failure answers
 *    05 FF or 01 01. A request whose VER is not 5 gets no reply (it is not SOCKS5).
 *  - On a SOCKS5 ERROR, reply/replylen is the whole answer to send, and err->socks_rep
 *    the status byte it carries (REP, 0xFF for "no acceptable method", 0x01 for an
 *    RFC 1929 failure), or -1 when nothing is to be sent.
 *  - SOCKS5 request checks run in wire order: VER, then RSV (must be 0: 01
 *    malformed-request), CMD (BIND, UDP ASSOCIATE and unknown commands: 07 unsupported),
 *    ATYP (not 1, 3 or 4: 08 unsupported). They are answered as soon as the four fixed
 *    bytes are in, without waiting for an address that would be refused anyway.
 *  - ATYP 3 and SOCKS4a names go through host_parse, so "127.0.0.1" sent as a name is an
 *    IPv4 literal (still by_name: the client sent a name) and "2130706433" or a name with
 *    a NUL is bad-host (SOCKS5 REP 02). ATYP 1/4 and SOCKS4 DSTIP are addresses, built
 *    from their bytes; 0.0.0.0 is returned as is for the pipeline to refuse.
 *  - Port 0 is returned as is: the policy refuses it with a receipt.
 *  - SOCKS4: CD 2 (BIND) is unsupported, any other CD but 1 is malformed. USERID and the
 *    4a name are bounded by EGRESS_SOCKS_NAME_MAX bytes before their NUL; a longer one is
 *    malformed rather than waited for. SOCKS4 errors carry socks_rep -1: every refusal
 *    is CD 91, which is what the table says for each of them.
 */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "socks.h"

#define SOCKS5_VERSION 0x05
#define SOCKS5_AUTH_VERSION 0x01      /* RFC 1929 sub-negotiation */
#define SOCKS5_METHOD_NONE 0x00
#define SOCKS5_METHOD_USERPASS 0x02
#define SOCKS5_METHOD_REFUSED 0xff
#define SOCKS5_AUTH_OK 0x00
#define SOCKS5_AUTH_FAIL 0x01

#define SOCKS5_CMD_CONNECT 0x01
#define SOCKS5_CMD_BIND 0x02
#define SOCKS5_CMD_UDP 0x03

#define SOCKS5_ATYP_IPV4 0x01
#define SOCKS5_ATYP_NAME 0x03
#define SOCKS5_ATYP_IPV6 0x04

#define SOCKS5_REP_FAILURE 0x01       /* general failure: malformed request */
#define SOCKS5_REP_NOT_ALLOWED 0x02   /* bad-host, per the SPEC's table */
#define SOCKS5_REP_COMMAND 0x07
#define SOCKS5_REP_ATYP 0x08

#define SOCKS5_REQUEST_FIXED 4        /* VER CMD RSV ATYP */
#define SOCKS5_REPLY_LEN 10

#define SOCKS4_VERSION 0x04
#define SOCKS4_CMD_CONNECT 0x01
#define SOCKS4_CMD_BIND 0x02
#define SOCKS4_FIXED 8                /* VN CD DSTPORT DSTIP */
#define SOCKS4_REPLY_LEN 8

static enum proto_status
socks_fail(struct proto_error *err, enum egress_reason reason, int rep, const char *why)
{
	err->reason = reason;
	err->http_status = egress_reason_http_status(reason);
	err->socks_rep = rep;
	err->why = why;
	return PROTO_ERROR;
}

static uint16_t
socks_port(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* An address host built from wire bytes: canonical text, never a name. */
static void
socks_addr_host(struct host *h, int family, const uint8_t *b)
{
	memset(h, 0, sizeof(*h));
	h->kind = family == AF_INET ? HOST_IPV4 : HOST_IPV6;
	h->addr.family = family;
	memcpy(h->addr.b, b, family == AF_INET ? 4 : 16);
	addr_format(&h->addr, h->name);
}

/* --- SOCKS5 -------------------------------------------------------------------------- */

size_t
socks5_reply(uint8_t rep, uint8_t out[10])
{
	memset(out, 0, SOCKS5_REPLY_LEN);
	out[0] = SOCKS5_VERSION;
	out[1] = rep;
	out[3] = SOCKS5_ATYP_IPV4;
	return SOCKS5_REPLY_LEN;
}

/* A request-stage failure: a complete reply carrying rep, then close. */
static enum proto_status
socks5_refuse(uint8_t reply[10], size_t *replylen, struct proto_error *err,
    enum egress_reason reason, uint8_t rep, const char *why)
{
	*replylen = socks5_reply(rep, reply);
	return socks_fail(err, reason, rep, why);
}

/* Two-byte answers of the greeting and of RFC 1929. */
static void
socks5_pair(uint8_t reply[10], size_t *replylen, uint8_t a, uint8_t b)
{
	reply[0] = a;
	reply[1] = b;
	*replylen = 2;
}

static enum proto_status
socks5_greeting(struct socks5 *s, const uint8_t *buf, size_t len, size_t *consumed,
    uint8_t reply[10], size_t *replylen, struct proto_error *err)
{
	size_t n, i;
	bool none = false, userpass = false;

	if (len < 1)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1, "SOCKS5 greeting: VER is not 5");
	if (len < 2)
		return PROTO_NEED_MORE;
	if ((n = buf[1]) == 0) {
		*consumed = 2;
		socks5_pair(reply, replylen, SOCKS5_VERSION, SOCKS5_METHOD_REFUSED);
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, SOCKS5_METHOD_REFUSED,
		    "SOCKS5 greeting: NMETHODS is 0");
	}
	if (len < 2 + n)
		return PROTO_NEED_MORE;
	*consumed = 2 + n;
	for (i = 0; i < n; i++) {
		if (buf[2 + i] == SOCKS5_METHOD_NONE)
			none = true;
		else if (buf[2 + i] == SOCKS5_METHOD_USERPASS)
			userpass = true;
	}
	if (none) {
		socks5_pair(reply, replylen, SOCKS5_VERSION, SOCKS5_METHOD_NONE);
		s->stage = SOCKS5_REQUEST;
	} else if (userpass) {
		socks5_pair(reply, replylen, SOCKS5_VERSION, SOCKS5_METHOD_USERPASS);
		s->stage = SOCKS5_AUTH;
	} else {
		socks5_pair(reply, replylen, SOCKS5_VERSION, SOCKS5_METHOD_REFUSED);
		return socks_fail(err, EGRESS_UNSUPPORTED, SOCKS5_METHOD_REFUSED,
		    "SOCKS5 greeting: neither no-auth nor username/password offered");
	}
	return PROTO_OK;
}

/* RFC 1929: VER=1 ULEN UNAME PLEN PASSWD. The credential is looked at for its length only. */
static enum proto_status
socks5_auth(struct socks5 *s, const uint8_t *buf, size_t len, size_t *consumed,
    uint8_t reply[10], size_t *replylen, struct proto_error *err)
{
	size_t ulen, plen;

	if (len < 1)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_AUTH_VERSION) {
		socks5_pair(reply, replylen, SOCKS5_AUTH_VERSION, SOCKS5_AUTH_FAIL);
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, SOCKS5_AUTH_FAIL,
		    "SOCKS5 username/password: VER is not 1");
	}
	if (len < 2)
		return PROTO_NEED_MORE;
	if ((ulen = buf[1]) == 0) {
		*consumed = 2;
		socks5_pair(reply, replylen, SOCKS5_AUTH_VERSION, SOCKS5_AUTH_FAIL);
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, SOCKS5_AUTH_FAIL,
		    "SOCKS5 username/password: empty user name");
	}
	if (len < 2 + ulen + 1)
		return PROTO_NEED_MORE;
	if ((plen = buf[2 + ulen]) == 0) {
		*consumed = 3 + ulen;
		socks5_pair(reply, replylen, SOCKS5_AUTH_VERSION, SOCKS5_AUTH_FAIL);
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, SOCKS5_AUTH_FAIL,
		    "SOCKS5 username/password: empty password");
	}
	if (len < 3 + ulen + plen)
		return PROTO_NEED_MORE;
	*consumed = 3 + ulen + plen;
	socks5_pair(reply, replylen, SOCKS5_AUTH_VERSION, SOCKS5_AUTH_OK);
	s->stage = SOCKS5_REQUEST;
	return PROTO_OK;
}

static enum proto_status
socks5_request(struct socks5 *s, const uint8_t *buf, size_t len, size_t *consumed,
    uint8_t reply[10], size_t *replylen, struct socks_request *req, struct proto_error *err)
{
	struct host h;
	const char *why = NULL;
	size_t need, nlen;

	if (len < 1)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1, "SOCKS5 request: VER is not 5");
	if (len < SOCKS5_REQUEST_FIXED)
		return PROTO_NEED_MORE;
	if (buf[2] != 0x00)
		return socks5_refuse(reply, replylen, err, EGRESS_MALFORMED_REQUEST,
		    SOCKS5_REP_FAILURE, "SOCKS5 request: RSV is not 0");
	if (buf[1] == SOCKS5_CMD_BIND || buf[1] == SOCKS5_CMD_UDP)
		return socks5_refuse(reply, replylen, err, EGRESS_UNSUPPORTED,
		    SOCKS5_REP_COMMAND, buf[1] == SOCKS5_CMD_BIND ?
		    "SOCKS5 BIND is not supported" : "SOCKS5 UDP ASSOCIATE is not supported");
	if (buf[1] != SOCKS5_CMD_CONNECT)
		return socks5_refuse(reply, replylen, err, EGRESS_UNSUPPORTED,
		    SOCKS5_REP_COMMAND, "SOCKS5 request: unknown command");

	switch (buf[3]) {
	case SOCKS5_ATYP_IPV4:
		if (len < (need = SOCKS5_REQUEST_FIXED + 4 + 2))
			return PROTO_NEED_MORE;
		socks_addr_host(&h, AF_INET, buf + SOCKS5_REQUEST_FIXED);
		break;
	case SOCKS5_ATYP_IPV6:
		if (len < (need = SOCKS5_REQUEST_FIXED + 16 + 2))
			return PROTO_NEED_MORE;
		socks_addr_host(&h, AF_INET6, buf + SOCKS5_REQUEST_FIXED);
		break;
	case SOCKS5_ATYP_NAME:
		if (len < SOCKS5_REQUEST_FIXED + 1)
			return PROTO_NEED_MORE;
		if ((nlen = buf[SOCKS5_REQUEST_FIXED]) == 0)
			return socks5_refuse(reply, replylen, err, EGRESS_MALFORMED_REQUEST,
			    SOCKS5_REP_FAILURE, "SOCKS5 request: empty name (ATYP 3, LEN 0)");
		if (len < (need = SOCKS5_REQUEST_FIXED + 1 + nlen + 2))
			return PROTO_NEED_MORE;
		if (host_parse((const char *)buf + SOCKS5_REQUEST_FIXED + 1, nlen, &h,
		    &why) == -1) {
			*consumed = need;
			err->raw = buf + SOCKS5_REQUEST_FIXED + 1;
			err->raw_len = nlen;
			err->port = socks_port(buf + need - 2);
			err->has_port = err->port != 0;
			return socks5_refuse(reply, replylen, err, EGRESS_BAD_HOST,
			    SOCKS5_REP_NOT_ALLOWED, why);
		}
		break;
	default:
		return socks5_refuse(reply, replylen, err, EGRESS_UNSUPPORTED, SOCKS5_REP_ATYP,
		    "SOCKS5 request: address type not supported");
	}

	*consumed = need;
	memset(req, 0, sizeof(*req));
	req->version = 5;
	req->by_name = buf[3] == SOCKS5_ATYP_NAME;
	req->host = h;
	req->port = socks_port(buf + need - 2);
	s->stage = SOCKS5_DONE;
	return PROTO_OK;
}

enum proto_status
socks5_step(struct socks5 *s, const uint8_t *buf, size_t len, size_t *consumed,
    uint8_t reply[10], size_t *replylen, struct socks_request *req, struct proto_error *err)
{
	*consumed = 0;
	*replylen = 0;
	memset(err, 0, sizeof(*err));
	err->socks_rep = -1;

	switch (s->stage) {
	case SOCKS5_GREETING:
		return socks5_greeting(s, buf, len, consumed, reply, replylen, err);
	case SOCKS5_AUTH:
		return socks5_auth(s, buf, len, consumed, reply, replylen, err);
	case SOCKS5_REQUEST:
		return socks5_request(s, buf, len, consumed, reply, replylen, req, err);
	case SOCKS5_DONE:
	default:
		/* the request was taken: what follows is tunnel payload, not for us */
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1,
		    "SOCKS5 conversation already complete");
	}
}

/* --- SOCKS4 / SOCKS4a ---------------------------------------------------------------- */

size_t
socks4_reply(uint8_t cd, uint8_t out[8])
{
	memset(out, 0, SOCKS4_REPLY_LEN);
	out[1] = cd;
	return SOCKS4_REPLY_LEN;
}

/*
 * A NUL-terminated field at buf[off..len): 1 with *end at its NUL, 0 when more bytes may
 * complete it, -1 when EGRESS_SOCKS_NAME_MAX bytes came without a NUL.
 */
static int
socks4_field(const uint8_t *buf, size_t len, size_t off, size_t *end)
{
	size_t lim = off + EGRESS_SOCKS_NAME_MAX + 1;   /* the field and its NUL */
	const uint8_t *nul;

	if (lim > len)
		lim = len;
	if (off < lim && (nul = memchr(buf + off, '\0', lim - off)) != NULL) {
		*end = (size_t)(nul - buf);
		return 1;
	}
	return len - off > EGRESS_SOCKS_NAME_MAX ? -1 : 0;
}

enum proto_status
socks4_parse(const uint8_t *buf, size_t len, size_t *consumed, struct socks_request *req,
    struct proto_error *err)
{
	const char *why = NULL;
	size_t uend, nend;
	int r;

	*consumed = 0;
	memset(err, 0, sizeof(*err));
	err->socks_rep = -1;

	if (len < 1)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS4_VERSION)
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1, "SOCKS4: VN is not 4");
	if (len < 2)
		return PROTO_NEED_MORE;
	if (buf[1] == SOCKS4_CMD_BIND)
		return socks_fail(err, EGRESS_UNSUPPORTED, -1, "SOCKS4 BIND is not supported");
	if (buf[1] != SOCKS4_CMD_CONNECT)
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1, "SOCKS4: unknown command");
	if (len < SOCKS4_FIXED)
		return PROTO_NEED_MORE;

	/* USERID: any bytes up to NUL, never looked at nor copied */
	if ((r = socks4_field(buf, len, SOCKS4_FIXED, &uend)) == -1)
		return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1,
		    "SOCKS4: user id longer than EGRESS_SOCKS_NAME_MAX");
	if (r == 0)
		return PROTO_NEED_MORE;

	memset(req, 0, sizeof(*req));
	req->version = 4;
	req->port = socks_port(buf + 2);

	/* SOCKS4a: DSTIP 0.0.0.x, x != 0, announces a name after the user id. */
	if (buf[4] == 0 && buf[5] == 0 && buf[6] == 0 && buf[7] != 0) {
		if ((r = socks4_field(buf, len, uend + 1, &nend)) == -1)
			return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1,
			    "SOCKS4a: host name longer than EGRESS_SOCKS_NAME_MAX");
		if (r == 0)
			return PROTO_NEED_MORE;
		if (nend == uend + 1)
			return socks_fail(err, EGRESS_MALFORMED_REQUEST, -1,
			    "SOCKS4a: empty host name");
		if (host_parse((const char *)buf + uend + 1, nend - uend - 1, &req->host,
		    &why) == -1) {
			err->raw = buf + uend + 1;
			err->raw_len = nend - uend - 1;
			err->port = req->port;
			err->has_port = req->port != 0;
			return socks_fail(err, EGRESS_BAD_HOST, -1, why);
		}
		req->by_name = true;
		*consumed = nend + 1;
		return PROTO_OK;
	}
	socks_addr_host(&req->host, AF_INET, buf + 4);
	*consumed = uend + 1;
	return PROTO_OK;
}
