/*
 * frontend.c: a connection's request phase. The first bytes choose the frontend (0x05
 * SOCKS5, 0x04 SOCKS4, "EGR1" native, anything else HTTP); its parser (proto/http.c,
 * socks.c, native.c: pure and bounded) reads the request; conn_target sets the target,
 * turning a synthetic address back into its name; the DNS verb is answered from the
 * policy alone. Trusts nothing the client sends beyond what the parsers accept.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "conn.h"


/*
 * Sets the request's target, the one place every frontend goes through. A synthetic
 * address (synthetic-range, also IPv4-mapped in IPv6) is replaced by the name this
 * principal's map holds for it, so that the rules, the resolution with its pinning and
 * checks, the SNI guard and the receipt all see the name; one the map does not hold
 * (never given, recycled, another principal's) is bad-host. Returns false when it refused.
 */
static bool
conn_target(struct conn *c, const struct host *h, uint16_t port)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct addr a;
	const char *name = NULL, *why;
	struct host named;

	c->host = *h;
	c->port = port;
	c->has_host = true;
	if (h->kind == HOST_IPV4)
		a = h->addr;
	else if (h->kind == HOST_IPV6 && memcmp(h->addr.b, mapped, sizeof(mapped)) == 0) {
		memset(&a, 0, sizeof(a));
		a.family = AF_INET;
		memcpy(a.b, h->addr.b + 12, 4);
	} else
		return true;
	/* The configured range, and those a SIGHUP replaced (no map holds them). */
	if (!cidr_contains(&egressd_conf->synth_range, &a) && !egressd_synth_retired(&a))
		return true;
	if (c->p->synth != NULL)
		name = synth_name(c->p->synth, &a);
	if (name == NULL || host_parse(name, strlen(name), &named, &why) == -1) {
		conn_deny(c, EGRESS_BAD_HOST, "synthetic address this principal does not hold",
		    NULL, 0, 0, -1);
		return false;
	}
	c->host = named;
	return true;
}

/*
 * The DNS verb: the answer comes from the policy, never from a resolver. A name some
 * port is allowed for gets its synthetic address (A) or an empty answer (other types);
 * an IP literal the policy allows gets itself; anything else is NXDOMAIN with a deny
 * receipt (conn_deny answers a question with an answer). No receipt for an answer: the
 * connection that follows has its own.
 */
static void
conn_question(struct conn *c, const struct native_request *req)
{
	uint8_t out[EGRESS_NATIVE_ANSWER];
	struct addr a;
	enum egress_reason r;
	bool have = false;

	evtimer_del(c->timer);
	conn_read_pause(c, 0);
	c->host = req->host;
	c->has_host = true;
	if (egressd_stopping) {
		conn_deny(c, EGRESS_SHUTDOWN, "egressd is stopping", NULL, 0, 0, -1);
		return;
	}
	r = policy_decide_name(c->p->policy, &c->host);
	if (r != EGRESS_ALLOWED) {
		conn_deny(c, r, r == EGRESS_DENIED_BY_RULE ? "a deny rule matches the name" :
		    "no rule allows the name on any port", NULL, 0, 0, -1);
		return;
	}
	if (req->qtype == EGRESS_DNS_TYPE_A && c->host.kind == HOST_IPV4) {
		a = c->host.addr;
		have = true;
	} else if (req->qtype == EGRESS_DNS_TYPE_A && c->host.kind == HOST_NAME) {
		if (c->p->synth == NULL)
			c->p->synth = synth_new(&egressd_conf->synth_range,
			    egressd_conf->synth_max);
		have = c->p->synth != NULL && synth_get(c->p->synth, c->host.name, &a) == 0;
	}
	if (have)
		addr_format(&a, c->addr_text);
	log_debug("event=answer principal=%s id=%s frontend=dns host=%s qtype=%u addr=%s",
	    c->p->name, c->id, c->host.name, (unsigned)req->qtype,
	    have ? c->addr_text : "-");
	conn_answer_and_close(c, out, native_answer(EGRESS_ALLOWED, have ? &a : NULL, 1, out));
}

/* A refused request still names its port when the parser read a valid one (bad-host). */
static void
conn_error_port(struct conn *c, const struct proto_error *err)
{
	if (err->has_port) {
		c->port = err->port;
		c->has_port = true;
	}
}

/*
 * The HTTP frontend's name from the bytes so far: http-connect once the request begins
 * with the method CONNECT and its space (after any empty lines), http-forward otherwise
 * (every other method, and a request line whose method is not complete yet). The first byte chose HTTP, so a
 * partial request (handshake-timeout, a close mid-request, a parse error) has one too.
 */
static enum conn_frontend
conn_http_frontend(const uint8_t *data, size_t len)
{
	static const char connect_sp[] = "CONNECT ";

	/* Empty lines before the request line are skipped, as the parser does. */
	while (len >= 2 && data[0] == '\r' && data[1] == '\n') {
		data += 2;
		len -= 2;
	}
	return len >= sizeof(connect_sp) - 1 &&
	    memcmp(data, connect_sp, sizeof(connect_sp) - 1) == 0 ? FE_HTTP_CONNECT :
	    FE_HTTP_FORWARD;
}

static void
conn_http(struct conn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in);
	size_t want = len > EGRESS_HTTP_HEAD_MAX + 1 ? EGRESS_HTTP_HEAD_MAX + 1 : len;
	uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)want);
	struct http_request *req;
	struct proto_error err;
	enum proto_status st;

	/*
	 * The parse resumes where the last read stopped: a head that arrives a byte at a time
	 * costs linear work. Its state lives until the head is complete or refused.
	 */
	if (c->http == NULL) {
		/* The parser clears the request itself on its first call (3.5 KiB): only the
		 * resumable state starts zeroed here. */
		c->http = xmalloc(sizeof(*c->http));
		memset(&c->http->head, 0, sizeof(c->http->head));
	}
	req = &c->http->req;
	memset(&err, 0, sizeof(err));
	st = http_head_parse(&c->http->head, data, want, req, &err);
	/* Named from the request line's start: the empty lines before it are behind us. */
	c->fe = conn_http_frontend(data + c->http->head.start, want - c->http->head.start);
	if (st == PROTO_NEED_MORE)
		return;
	if (st == PROTO_ERROR) {
		free(c->http);
		c->http = NULL;
		conn_error_port(c, &err);
		conn_deny(c, err.reason, err.why, err.raw, err.raw_len, err.http_status, -1);
		return;
	}
	c->fe = req->kind == HTTP_CONNECT ? FE_HTTP_CONNECT : FE_HTTP_FORWARD;
	if (!conn_target(c, &req->host, req->port)) {
		free(c->http);
		c->http = NULL;
		return;
	}
	/* The forwarded Host is the name a synthetic address stood for. */
	req->host = c->host;
	if (req->kind == HTTP_FORWARD) {
		size_t cap = EGRESS_HTTP_HEAD_MAX + 512;

		c->fwd_head = xmalloc(cap);
		c->fwd_head_len = http_forward_head(req, c->fwd_head, cap);
		http_framing_start(&c->framing, req->body, req->content_length);
		if (c->fwd_head_len == 0) {
			free(c->http);
			c->http = NULL;
			conn_deny(c, EGRESS_MALFORMED_REQUEST, "request head too large to forward",
			    NULL, 0, 431, -1);
			return;
		}
	}
	evbuffer_drain(in, req->head_len);
	free(c->http);
	c->http = NULL;
	conn_decide(c);
}

static void
conn_socks5(struct conn *c, struct evbuffer *in)
{
	for (;;) {
		size_t len = evbuffer_get_length(in), consumed = 0, replylen = 0;
		uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)(len > 600 ? 600 : len));
		uint8_t reply[10];
		struct socks_request req;
		struct proto_error err;
		enum proto_status st;

		if (len == 0)
			return;
		memset(&err, 0, sizeof(err));
		st = socks5_step(&c->s5, data, len > 600 ? 600 : len, &consumed, reply, &replylen,
		    &req, &err);
		if (st == PROTO_NEED_MORE)
			return;
		if (st == PROTO_ERROR) {
			/* The parser's own answer (method refusal, REP) goes out as it is. */
			conn_error_port(c, &err);
			conn_deny_receipt(c, err.reason, err.why, err.raw, err.raw_len);
			conn_answer_and_close(c, reply, replylen);
			return;
		}
		evbuffer_drain(in, consumed);
		if (replylen > 0)
			conn_answer(c, reply, replylen);
		if (c->s5.stage == SOCKS5_DONE) {
			if (conn_target(c, &req.host, req.port))
				conn_decide(c);
			return;
		}
	}
}

/* A frontend parsed a complete request of consumed bytes: on to the decision. */
static void
conn_requested(struct conn *c, struct evbuffer *in, size_t consumed, const struct host *h,
    uint16_t port)
{
	evbuffer_drain(in, consumed);
	if (conn_target(c, h, port))
		conn_decide(c);
}

static void
conn_socks4(struct conn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), consumed = 0;
	size_t want = len > 1024 ? 1024 : len;
	uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)want);
	struct socks_request req;
	struct proto_error err;
	enum proto_status st;

	memset(&err, 0, sizeof(err));
	st = socks4_parse(data, want, &consumed, &req, &err);
	if (st == PROTO_NEED_MORE)
		return;
	if (st == PROTO_ERROR) {
		conn_error_port(c, &err);
		conn_deny(c, err.reason, err.why, err.raw, err.raw_len, 0, err.socks_rep);
		return;
	}
	conn_requested(c, in, consumed, &req.host, req.port);
}

static void
conn_native(struct conn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), consumed = 0;
	size_t want = len > EGRESS_NATIVE_HEAD + 255 ? EGRESS_NATIVE_HEAD + 255 : len;
	uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)want);
	struct native_request req;
	struct proto_error err;
	enum proto_status st;

	memset(&err, 0, sizeof(err));
	st = native_parse(data, want, &consumed, &req, &err);
	/* From the verb byte on, a question is answered as one (and its receipts say dns). */
	if (req.verb == EGRESS_NATIVE_QUESTION)
		c->fe = FE_DNS;
	else if (req.verb == EGRESS_NATIVE_TRANSPARENT)
		c->fe = FE_TRANSPARENT;  /* the same pipeline as native: only the name differs */
	if (st == PROTO_NEED_MORE)
		return;
	if (st == PROTO_ERROR) {
		conn_error_port(c, &err);
		conn_deny(c, err.reason, err.why, err.raw, err.raw_len, 0, -1);
		return;
	}
	if (req.verb == EGRESS_NATIVE_QUESTION) {
		evbuffer_drain(in, consumed);
		conn_question(c, &req);
		return;
	}
	conn_requested(c, in, consumed, &req.host, req.port);
}

void
conn_client_read(struct conn *c)
{
	struct evbuffer *in = c->cin;

	if (c->state == CS_SNIFF) {
		uint8_t first;

		if (evbuffer_copyout(in, &first, 1) != 1)
			return;
		if (first == 0x05) {
			conn_transition(c, CE_SNIFF_SOCKS5);
			c->fe = FE_SOCKS5;
		} else if (first == 0x04) {
			conn_transition(c, CE_SNIFF_SOCKS4);
			c->fe = FE_SOCKS4;
		} else if (first == 'E') {
			/*
			 * "EGR1" is the native connector; anything else starting with E is HTTP,
			 * decided at the first byte that differs (until then, no frontend yet).
			 */
			uint8_t magic[4];
			ev_ssize_t n = evbuffer_copyout(in, magic, 4);

			if (n < 4 && memcmp(magic, EGRESS_NATIVE_MAGIC, (size_t)n) == 0)
				return;
			if (n == 4 && memcmp(magic, EGRESS_NATIVE_MAGIC, 4) == 0) {
				conn_transition(c, CE_SNIFF_NATIVE);
				c->fe = FE_NATIVE;
			} else
				conn_transition(c, CE_SNIFF_HTTP);
		} else
			conn_transition(c, CE_SNIFF_HTTP);
	}
	switch (c->state) {
	case CS_HTTP:
		conn_http(c, in);
		break;
	case CS_SOCKS5:
		conn_socks5(c, in);
		break;
	case CS_SOCKS4:
		conn_socks4(c, in);
		break;
	case CS_NATIVE:
		conn_native(c, in);
		break;
	default:
		break;
	}
}
