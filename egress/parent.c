/*
 * parent.c: a parent proxy (parent-proxy in egressd.conf(5)). Every decision is taken as
 * without one: the policy, the quotas, and under `resolve local` the resolution, the
 * classification and the pin (connect.c). Only then, instead of connecting to the pinned
 * address, egressd connects to the parent (its address is the operator's: neither the
 * special-purpose ranges nor egressd's own listener apply to it) and asks
 * `CONNECT <pinned address>:<port>` (under `resolve parent`: `CONNECT <name>:<port>`,
 * the parent resolves). A 2xx answer is the tunnel, which then goes on exactly as a
 * direct one: the reply to the client, the SNI guard on the client's bytes, the open
 * receipt, the relay. Anything else is connect-refused with the parent's status line in
 * the log; no answer within `timeout connect` is connect-timeout.
 *
 * An https:// parent is spoken to over TLS (libevent's OpenSSL bufferevent), its
 * certificate verified against `ca FILE` or the system store and its name (or address)
 * checked; the context is built before the engine is confined (conn_parent_tls_init),
 * because the engine opens no file. Such a tunnel never takes the fast relay, whose own
 * reads and writes would bypass TLS (relay.c).
 *
 * Trusts the parent's answer only as far as proto/parent.c parses it: bounded, its
 * status code alone decides, and the bytes after its head belong to the tunnel (they stay
 * in the upstream's input for the relay). The credential (auth FILE, read by the monitor
 * for the confined engine) goes into the CONNECT request and nowhere else: not the log,
 * not a receipt.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "conn.h"

static SSL_CTX *parent_ctx;             /* https:// parents: made before the confinement */

/*
 * The TLS context of an https:// parent: TLS 1.2 or later, the peer verified against the
 * certificates of `ca FILE` (read by conf.c) or those of the system store's bundle file,
 * loaded now, at once (a lookup by hash later would open files the engine may not).
 * 0, or -1 with err.
 */
int
conn_parent_tls_init(const struct conf *conf, char *err, size_t errlen)
{
	const struct conf_parent *pp = &conf->parent;
	const char *bundle = X509_get_default_cert_file();
	SSL_CTX *ctx;

	if (pp->url == NULL || !pp->tls || parent_ctx != NULL)
		return 0;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		snprintf(err, errlen, "parent-proxy: no TLS context");
		SSL_CTX_free(ctx);
		return -1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (pp->ca_pem != NULL) {
		X509_STORE *store = SSL_CTX_get_cert_store(ctx);
		BIO *bio = BIO_new_mem_buf(pp->ca_pem, (int)pp->ca_pem_len);
		X509 *x;
		unsigned n = 0;

		while (bio != NULL && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
			if (X509_STORE_add_cert(store, x) == 1)
				n++;
			X509_free(x);
		}
		BIO_free(bio);
		ERR_clear_error();
		if (n == 0) {
			snprintf(err, errlen, "parent-proxy ca %s: no certificate loaded",
			    pp->ca_file);
			SSL_CTX_free(ctx);
			return -1;
		}
	} else if (SSL_CTX_load_verify_file(ctx, bundle) != 1) {
		snprintf(err, errlen, "parent-proxy: the system store %s does not load (name a "
		    "ca FILE)", bundle);
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return -1;
	}
	parent_ctx = ctx;
	return 0;
}

/* The upstream of an https:// parent: TLS on fd, the parent's name (or address) checked. */
static struct bufferevent *
conn_parent_tls(struct conn *c, const struct conf_parent *pp, int fd)
{
	struct bufferevent *bev;
	SSL *ssl;

	if (parent_ctx == NULL || (ssl = SSL_new(parent_ctx)) == NULL)
		return NULL;
	if (pp->literal) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), pp->host) != 1) {
			SSL_free(ssl);
			return NULL;
		}
	} else if (SSL_set_tlsext_host_name(ssl, pp->host) != 1 ||
	    SSL_set1_host(ssl, pp->host) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	bev = bufferevent_openssl_socket_new(egressd_base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	/* A parent that closes without close_notify ends its side like a TCP EOF. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	c->parent_tls = true;
	return bev;
}

/* Half-close toward an https:// parent: close_notify first (TLS 1.3 keeps reading). */
void
conn_parent_tls_shut(struct conn *c, struct bufferevent *bev)
{
	SSL *ssl;

	/* Only TLS to a parent: OpenSSL's error queue is not touched for any other tunnel
	 * (its ERR_clear_error cost 840 instructions a guarded setup, callgrind). */
	if (!c->parent_tls || bev != c->ubev)
		return;
	if ((ssl = bufferevent_openssl_get_ssl(bev)) != NULL)
		(void)SSL_shutdown(ssl);
	ERR_clear_error();
}

static const struct conf_parent *
conn_parent_conf(void)
{
	return egressd_conf != NULL && egressd_conf->parent.url != NULL ?
	    &egressd_conf->parent : NULL;
}

bool
conn_parent_wanted(const struct conn *c)
{
	(void)c;
	return conn_parent_conf() != NULL;
}

bool
conn_parent_resolves(const struct conn *c)
{
	const struct conf_parent *pp = conn_parent_conf();

	(void)c;
	return pp != NULL && pp->resolve_parent;
}

/* The ubev is the parent's until its 2xx: gone before any refusal, so that no callback of
 * it runs in the drain. */
static void
conn_parent_fail(struct conn *c, enum egress_reason reason, const char *why)
{
	conn_own_reads_free(c, 1);      /* its read event first: the free closes the fd */
	if (c->ubev != NULL) {
		bufferevent_free(c->ubev);
		c->ubev = NULL;
	}
	conn_deny(c, reason, why, NULL, 0, 0, -1);
}

static void
conn_parent_dns_cb(void *arg, const struct dns_answer *ans)
{
	struct conn *c = arg;
	char why[300];

	c->dq = NULL;
	if (ans->reason != EGRESS_ALLOWED || ans->naddrs == 0) {
		snprintf(why, sizeof(why), "the parent proxy's name: %s",
		    ans->why ? ans->why : "no address");
		conn_deny(c, ans->reason == EGRESS_DNS_TIMEOUT ? EGRESS_CONNECT_TIMEOUT :
		    EGRESS_CONNECT_REFUSED, why, NULL, 0, 0, -1);
		return;
	}
	conn_dial(c, ans->addrs, ans->naddrs);
}

/*
 * The tunnel goes through the parent: the CONNECT's authority is the address egressd
 * chose (c->dial->addrs, the validated and pinned set; an IPv4 one first, the family a
 * parent is most likely to reach), or under resolve parent the name itself; then the
 * parent's own addresses are dialled. In CS_CONNECT, its deadline running.
 */
/*
 * The CONNECT's authority: the chosen address (c->addr_text, "[v6]:port" for IPv6), or
 * the name when the parent resolves. Made when asked, not kept: a tunnel carries no copy.
 */
static void
conn_parent_authority(const struct conn *c, char out[EGRESS_PARENT_AUTHORITY_MAX + 1])
{
	if (c->addr_text[0] != '\0')
		snprintf(out, EGRESS_PARENT_AUTHORITY_MAX + 1,
		    strchr(c->addr_text, ':') != NULL ? "[%s]:%u" : "%s:%u", c->addr_text,
		    (unsigned)c->port);
	else
		snprintf(out, EGRESS_PARENT_AUTHORITY_MAX + 1, "%s:%u", c->host.name,
		    (unsigned)c->port);
}

void
conn_parent_dial(struct conn *c)
{
	const struct conf_parent *pp = conn_parent_conf();
	const struct addr *target = NULL;

	c->via_parent = true;
	c->dial_port = pp->port;
	for (size_t i = 0; i < c->dial->naddrs && target == NULL; i++)
		if (c->dial->addrs[i].family == AF_INET)
			target = &c->dial->addrs[i];
	if (target == NULL && c->dial->naddrs > 0)
		target = &c->dial->addrs[0];
	if (target != NULL)
		addr_format(target, c->addr_text);      /* the CONNECT's (conn_parent_authority) */
	c->dial->naddrs = c->dial->next = 0;
	if (pp->literal) {
		conn_dial(c, &pp->addr, 1);
		return;
	}
	c->dq = dns_resolve(pp->host, (unsigned)conn_settings(c)->timeout_dns,
	    conn_parent_dns_cb, c);
}

/* Connected to the parent (fd): ask it for the tunnel (CONNECT -parent-> PARENT). */
void
conn_parent_start(struct conn *c, int fd)
{
	const struct conf_parent *pp = conn_parent_conf();
	uint8_t req[EGRESS_PARENT_REQUEST_MAX];
	char authority[EGRESS_PARENT_AUTHORITY_MAX + 1];
	size_t n;
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->ubev = pp->tls ? conn_parent_tls(c, pp, fd) :
	    bufferevent_socket_new(egressd_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->ubev == NULL) {
		close(fd);
		conn_deny(c, EGRESS_CONNECT_REFUSED, "no memory for the parent", NULL, 0, 0, -1);
		return;
	}
	if (!pp->tls && !conn_own_reads(c, 1)) {
		conn_deny(c, EGRESS_CONNECT_REFUSED, "no memory for the parent", NULL, 0, 0, -1);
		return;
	}
	conn_parent_authority(c, authority);
	n = parent_connect_request(authority, pp->auth_b64, req, sizeof(req));
	if (n == 0) {
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, "the CONNECT for the parent does "
		    "not fit");
		return;
	}
	conn_transition(c, CE_PARENT);  /* installs the parent's callbacks on ubev */
	bufferevent_write(c->ubev, req, n);
	memset(req, 0, sizeof(req));
	bufferevent_enable(c->ubev, EV_WRITE);
	conn_read_on(c, 1);
	log_debug("event=parent-connect id=%s authority=%s", c->id, authority);
}

/* The parent's answer, as it arrives: a 2xx head starts the tunnel, anything else ends. */
void
conn_parent_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	size_t n = len < EGRESS_PARENT_HEAD_MAX ? len : EGRESS_PARENT_HEAD_MAX;
	struct parent_answer a;
	const uint8_t *buf;
	const char *why;
	char text[128];

	if (c->state != CS_PARENT || n == 0)
		return;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)n)) == NULL) {
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, "no memory for the parent's answer");
		return;
	}
	switch (parent_parse_answer(buf, n, &a, &why)) {
	case PROTO_NEED_MORE:
		return;
	case PROTO_ERROR:
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, why);
		return;
	case PROTO_OK:
		break;
	}
	if (a.status < 200 || a.status > 299) {
		/* The status line is the parent's text: conn_log escapes it (log_value). */
		snprintf(text, sizeof(text), "the parent answered %.*s",
		    (int)(a.line_len < 96 ? a.line_len : 96), (const char *)a.line);
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, text);
		return;
	}
	/* What follows the head is the tunnel's first bytes: left in ubev's input. */
	evbuffer_drain(in, a.head_len);
	evtimer_del(c->timer);
	log_debug("event=parent-tunnel id=%s status=%d", c->id, a.status);
	conn_start_relay(c, -1);
}

void
conn_parent_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	char why[320];

	if (c->state != CS_PARENT || (what & BEV_EVENT_CONNECTED))
		return;                 /* an https:// parent's handshake is done */
	if (c->parent_tls && (what & BEV_EVENT_ERROR)) {
		unsigned long e = bufferevent_get_openssl_error(bev);
		SSL *ssl = bufferevent_openssl_get_ssl(bev);
		long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
		char tls[120] = "";

		if (e != 0)
			ERR_error_string_n(e, tls, sizeof(tls));
		snprintf(why, sizeof(why), "the parent's TLS: %s%s%s", v != X509_V_OK ?
		    X509_verify_cert_error_string(v) : "", v != X509_V_OK && e != 0 ? ": " : "",
		    e != 0 ? tls : (v != X509_V_OK ? "" : strerror(EVUTIL_SOCKET_ERROR())));
		ERR_clear_error();
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, why);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, "the parent closed without answering");
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		snprintf(why, sizeof(why), "the parent: %s", strerror(EVUTIL_SOCKET_ERROR()));
		conn_parent_fail(c, EGRESS_CONNECT_REFUSED, why);
	}
}

/* The deadline of timeout connect passed while the parent had not answered. */
void
conn_parent_timeout(struct conn *c)
{
	conn_parent_fail(c, EGRESS_CONNECT_TIMEOUT, "the parent did not answer in time");
}
