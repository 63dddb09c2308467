/*
 * conf.c: egressd.conf(5). Line based like the policy language: one directive per line,
 * '#' comments, fields separated by blanks. The file is the operator's, but it is parsed
 * as strictly as anything else: every error names file:line:column, any error refuses
 * the whole file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "egressd.h"
#include "fields.h"

#define CONF_MAX_BYTES (1u << 20)
#define CONF_MAX_LINE 4096
#define CONF_MAX_FIELDS 16
#define CONF_MAX_RESOLVERS 8

struct conf_field {
	const char *s;
	size_t len;
	size_t col;
};

struct conf_parse {
	const char *file;
	unsigned line;
	unsigned errors;
	struct conf *c;
	unsigned nresolvers;
};

static void __attribute__((format(printf, 3, 4)))
conf_error(struct conf_parse *cp, size_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_startupx_atv(cp->file, cp->line, col, fmt, ap);
	va_end(ap);
	cp->errors++;
}

bool
conf_valid_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > EGRESSD_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

static char *
field_dup(const struct conf_field *f)
{
	return xstrndup(f->s, f->len);
}

static bool
field_eq(const struct conf_field *f, const char *w)
{
	return f->len == strlen(w) && memcmp(f->s, w, f->len) == 0;
}

/* An absolute path without NUL (the line parser already refused control bytes). */
static int
conf_path(struct conf_parse *cp, const struct conf_field *f, char **out)
{
	if (f->len == 0 || f->s[0] != '/') {
		conf_error(cp, f->col, "expected an absolute path, got '%.*s'", (int)f->len, f->s);
		return -1;
	}
	if (*out != NULL) {
		free(*out);
	}
	*out = field_dup(f);
	return 0;
}

static int
conf_uint(const struct conf_field *f, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (f->len == 0 || f->len > 10)
		return -1;
	for (size_t i = 0; i < f->len; i++) {
		if (f->s[i] < '0' || f->s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(f->s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/* "IP", "IP:PORT", "[IPv6]:PORT" (addr_port_parse): appended to the c-ares server list. */
static int
conf_resolver(struct conf_parse *cp, const struct conf_field *f)
{
	struct addr a;
	unsigned port;
	const char *why;
	char text[EGRESS_ADDRSTRLEN], *entry;

	if (addr_port_parse(f->s, f->len, &a, &port, &why) == -1)
		goto bad;
	if (port == 0)
		port = 53;
	if (++cp->nresolvers > CONF_MAX_RESOLVERS) {
		conf_error(cp, f->col, "more than %d resolvers", CONF_MAX_RESOLVERS);
		return -1;
	}
	addr_format(&a, text);
	if (a.family == AF_INET6)
		xasprintf(&entry, "%s%s[%s]:%u", cp->c->resolvers ? cp->c->resolvers : "",
		    cp->c->resolvers ? "," : "", text, port);
	else
		xasprintf(&entry, "%s%s%s:%u", cp->c->resolvers ? cp->c->resolvers : "",
		    cp->c->resolvers ? "," : "", text, port);
	free(cp->c->resolvers);
	cp->c->resolvers = entry;
	return 0;
bad:
	conf_error(cp, f->col, "expected a resolver address (127.0.0.1, 127.0.0.1:5353, "
	    "[::1]:53), got '%.*s'", (int)f->len, f->s);
	return -1;
}

static int
conf_owner(struct conf_parse *cp, const struct conf_field *f, struct conf_principal *pr)
{
	const char *colon = memchr(f->s, ':', f->len);
	unsigned long uid, gid;

	if (colon == NULL) {
		struct conf_field uf = *f;

		if (conf_uint(&uf, 0x7ffffffe, &uid) == -1)
			goto bad;
		gid = uid;
	} else {
		struct conf_field uf = { f->s, (size_t)(colon - f->s), f->col };
		struct conf_field gf = { colon + 1, f->len - uf.len - 1, f->col };

		if (conf_uint(&uf, 0x7ffffffe, &uid) == -1 ||
		    conf_uint(&gf, 0x7ffffffe, &gid) == -1)
			goto bad;
	}
	pr->has_owner = true;
	pr->owner_uid = (uid_t)uid;
	pr->owner_gid = (gid_t)gid;
	return 0;
bad:
	conf_error(cp, f->col, "expected UID:GID (numbers), got '%.*s'", (int)f->len, f->s);
	return -1;
}

static void
conf_principal(struct conf_parse *cp, const struct conf_field *f, size_t nf)
{
	struct conf *c = cp->c;
	struct conf_principal pr;
	size_t i;

	memset(&pr, 0, sizeof(pr));
	if (nf < 2) {
		conf_error(cp, f[0].col, "expected: principal NAME socket PATH policy FILE "
		    "[owner UID:GID] [peer-uid UID]");
		return;
	}
	pr.name = field_dup(&f[1]);
	pr.line = cp->line;
	if (!conf_valid_name(pr.name)) {
		conf_error(cp, f[1].col, "principal name must be 1-%d of letters, digits, '.', "
		    "'_', '-'", EGRESSD_NAME_MAX);
		goto fail;
	}
	for (i = 0; i < c->nprincipals; i++)
		if (strcmp(c->principals[i].name, pr.name) == 0) {
			conf_error(cp, f[1].col, "principal '%s' already defined on line %u",
			    pr.name, c->principals[i].line);
			goto fail;
		}
	for (i = 2; i < nf; i += 2) {
		if (i + 1 >= nf) {
			conf_error(cp, f[i].col, "'%.*s' needs a value", (int)f[i].len, f[i].s);
			goto fail;
		}
		if (field_eq(&f[i], "socket")) {
			if (conf_path(cp, &f[i + 1], &pr.socket) == -1)
				goto fail;
		} else if (field_eq(&f[i], "policy")) {
			if (conf_path(cp, &f[i + 1], &pr.policy) == -1)
				goto fail;
		} else if (field_eq(&f[i], "owner")) {
			if (conf_owner(cp, &f[i + 1], &pr) == -1)
				goto fail;
		} else if (field_eq(&f[i], "peer-uid")) {
			unsigned long uid;

			if (conf_uint(&f[i + 1], 0x7ffffffe, &uid) == -1) {
				conf_error(cp, f[i + 1].col, "expected a numeric uid");
				goto fail;
			}
			pr.has_peer_uid = true;
			pr.peer_uid = (uid_t)uid;
		} else {
			conf_error(cp, f[i].col, "unknown principal option '%.*s' (expected socket, "
			    "policy, owner or peer-uid)", (int)f[i].len, f[i].s);
			goto fail;
		}
	}
	if (pr.policy == NULL) {
		conf_error(cp, f[0].col, "principal '%s' has no policy", pr.name);
		goto fail;
	}
	if (c->nprincipals >= EGRESSD_MAX_PRINCIPALS) {
		conf_error(cp, f[0].col, "more than %d principals", EGRESSD_MAX_PRINCIPALS);
		goto fail;
	}
	c->principals = xreallocarray(c->principals, c->nprincipals + 1, sizeof(pr));
	c->principals[c->nprincipals++] = pr;
	return;
fail:
	free(pr.name);
	free(pr.socket);
	free(pr.policy);
}

/* policy-pubkey FILE (repeatable): the key is read now, so that -t refuses a bad one. */
static void
conf_policy_pubkey(struct conf_parse *cp, const struct conf_field *f, size_t nf)
{
	struct conf *c = cp->c;
	char *path = NULL, err[512];

	if (nf != 2) {
		conf_error(cp, f[0].col, "expected: policy-pubkey PATH");
		return;
	}
	if (c->npolicy_pubkeys == EGRESS_POLICY_MAX_PUBKEYS) {
		conf_error(cp, f[0].col, "more than %d policy-pubkey lines",
		    EGRESS_POLICY_MAX_PUBKEYS);
		return;
	}
	if (conf_path(cp, &f[1], &path) == -1)
		return;
	if ((c->policy_pubkeys[c->npolicy_pubkeys] = egress_ed25519_load_fd(conf_file_opener ?
	    conf_file_opener(path) : -1, path, false, err, sizeof(err))) == NULL) {
		conf_error(cp, f[1].col, "policy-pubkey %s", err);
		free(path);
	} else {
		c->policy_pubkey_files[c->npolicy_pubkeys++] = path;
	}
}

/*
 * parent-proxy auth FILE: "user:password" on one line (a final newline allowed), a
 * regular file no one but its owner may read (mode 0600 or stricter), read now so that
 * -t refuses a bad one. The confined engine receives it opened by its monitor
 * (conf_file_opener). The credential is never printed: errors say what is wrong with
 * the file, never what it holds.
 */
static int
conf_parent_auth(struct conf_parse *cp, const struct conf_field *f, struct conf_parent *pp)
{
	uint8_t buf[EGRESS_PARENT_AUTH_MAX + 2];
	char b64[EGRESS_PARENT_AUTH_B64_MAX];
	struct stat st;
	ssize_t n;
	size_t len, colon = 0;
	int fd, rc = -1;

	if (conf_path(cp, f, &pp->auth_file) == -1)
		return -1;
	fd = conf_file_opener != NULL ? conf_file_opener(pp->auth_file) :
	    open(pp->auth_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		conf_error(cp, f->col, "parent-proxy auth %s: %s", pp->auth_file, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		conf_error(cp, f->col, "parent-proxy auth %s: not a regular file", pp->auth_file);
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		conf_error(cp, f->col, "parent-proxy auth %s: mode %04o, must be 0600 (readable "
		    "by its owner only)", pp->auth_file, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	len = 0;
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	if (len > EGRESS_PARENT_AUTH_MAX) {
		conf_error(cp, f->col, "parent-proxy auth %s: longer than %d bytes",
		    pp->auth_file, EGRESS_PARENT_AUTH_MAX);
		goto out;
	}
	for (size_t i = 0; i < len; i++) {
		if (buf[i] < 0x20 || buf[i] == 0x7f) {
			conf_error(cp, f->col, "parent-proxy auth %s: one line user:password, "
			    "without control bytes", pp->auth_file);
			goto out;
		}
		if (buf[i] == ':' && colon == 0)
			colon = i;
	}
	/* RFC 7617: the user-id has no colon; the password may have any. */
	if (colon == 0 || colon + 1 == len) {
		conf_error(cp, f->col, "parent-proxy auth %s: expected user:password (both "
		    "non-empty)", pp->auth_file);
		goto out;
	}
	if (parent_base64(buf, len, b64, sizeof(b64)) == 0) {
		conf_error(cp, f->col, "parent-proxy auth %s: too long", pp->auth_file);
		goto out;
	}
	free(pp->auth_b64);
	pp->auth_b64 = xstrdup(b64);
	rc = 0;
out:
	memset(buf, 0, sizeof(buf));
	memset(b64, 0, sizeof(b64));
	close(fd);
	return rc;
}

/*
 * parent-proxy ... ca FILE: the certificates an https:// parent's chain must end in, read
 * now (PEM, at least one certificate, at most 1 MiB) so that -t refuses a bad file and
 * the engine builds its TLS context from these bytes before it is confined.
 */
static int
conf_parent_ca(struct conf_parse *cp, const struct conf_field *f, struct conf_parent *pp)
{
	char *buf = NULL;
	size_t len = 0, cap = 1u << 20;
	ssize_t n;
	unsigned certs = 0;
	BIO *bio;
	X509 *x;
	int fd;

	if (conf_path(cp, f, &pp->ca_file) == -1)
		return -1;
	fd = conf_file_opener != NULL ? conf_file_opener(pp->ca_file) :
	    open(pp->ca_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		conf_error(cp, f->col, "parent-proxy ca %s: %s", pp->ca_file, strerror(errno));
		return -1;
	}
	buf = xmalloc(cap + 1);
	while (len <= cap && (n = read(fd, buf + len, cap + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len > cap) {
		conf_error(cp, f->col, "parent-proxy ca %s: larger than 1 MiB", pp->ca_file);
		free(buf);
		return -1;
	}
	if ((bio = BIO_new_mem_buf(buf, (int)len)) != NULL) {
		while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
			certs++;
			X509_free(x);
		}
		BIO_free(bio);
	}
	ERR_clear_error();
	if (certs == 0) {
		conf_error(cp, f->col, "parent-proxy ca %s: no PEM certificate in it", pp->ca_file);
		free(buf);
		return -1;
	}
	pp->ca_pem = buf;
	pp->ca_pem_len = len;
	return 0;
}

/* parent-proxy http[s]://HOST:PORT[/] [auth FILE] [resolve local|parent] [ca FILE] */
static void
conf_parent(struct conf_parse *cp, const struct conf_field *f, size_t nf)
{
	struct conf_parent *pp = &cp->c->parent, np;
	struct egress_hostport hp;
	struct conf_field pf;
	struct host h;
	unsigned long port;
	const char *why = NULL, *u;
	size_t ulen;
	bool has_ca = false, seen_auth = false, seen_resolve = false;

	memset(&np, 0, sizeof(np));
	if (nf < 2 || nf % 2 != 0) {
		conf_error(cp, f[0].col, "expected: parent-proxy http[s]://HOST:PORT [auth FILE] "
		    "[resolve local|parent] [ca FILE]");
		return;
	}
	if (pp->url != NULL) {
		conf_error(cp, f[0].col, "a second parent-proxy");
		return;
	}
	u = f[1].s;
	ulen = f[1].len;
	if (ulen >= 8 && memcmp(u, "https://", 8) == 0) {
		np.tls = true;
		u += 8;
		ulen -= 8;
	} else if (ulen >= 7 && memcmp(u, "http://", 7) == 0) {
		u += 7;
		ulen -= 7;
	} else {
		conf_error(cp, f[1].col, "expected a parent URL http://HOST:PORT or "
		    "https://HOST:PORT, got '%.*s'", (int)ulen, u);
		return;
	}
	if (ulen > 0 && u[ulen - 1] == '/')
		ulen--;
	if (memchr(u, '/', ulen) != NULL || memchr(u, '@', ulen) != NULL ||
	    egress_hostport_split(u, ulen, &hp) == -1) {
		conf_error(cp, f[1].col, "expected a parent URL http://HOST:PORT (no path, no "
		    "user in the URL: use auth FILE), got '%.*s'", (int)f[1].len, f[1].s);
		return;
	}
	pf.s = hp.port;
	pf.len = hp.portlen;
	pf.col = f[1].col;
	if (conf_uint(&pf, 65535, &port) == -1 || port == 0) {
		conf_error(cp, f[1].col, "the parent URL needs a port (1-65535): http://HOST:PORT");
		return;
	}
	if (host_parse(hp.host, hp.hostlen, &h, &why) == -1 ||
	    (h.kind == HOST_IPV6) != hp.bracketed) {
		conf_error(cp, f[1].col, "bad parent host '%.*s'%s%s", (int)hp.hostlen, hp.host,
		    why ? ": " : "", why ? why : " (an IPv6 address is written in brackets)");
		return;
	}
	snprintf(np.host, sizeof(np.host), "%s", h.name);
	np.literal = h.kind != HOST_NAME;
	np.addr = h.addr;
	np.port = (uint16_t)port;
	for (size_t i = 2; i < nf; i += 2) {
		if (field_eq(&f[i], "auth") && !seen_auth) {
			seen_auth = true;
			if (conf_parent_auth(cp, &f[i + 1], &np) == -1)
				goto fail;
		} else if (field_eq(&f[i], "resolve") && !seen_resolve) {
			seen_resolve = true;
			if (field_eq(&f[i + 1], "parent"))
				np.resolve_parent = true;
			else if (!field_eq(&f[i + 1], "local")) {
				conf_error(cp, f[i + 1].col, "expected: resolve local|parent, got '%.*s'",
				    (int)f[i + 1].len, f[i + 1].s);
				goto fail;
			}
		} else if (field_eq(&f[i], "ca") && !has_ca) {
			has_ca = true;
			if (!np.tls) {
				conf_error(cp, f[i].col, "ca applies to https:// parents only");
				goto fail;
			}
			if (conf_parent_ca(cp, &f[i + 1], &np) == -1)
				goto fail;
		} else {
			conf_error(cp, f[i].col, "unknown or repeated parent-proxy option '%.*s' "
			    "(expected auth, resolve or ca)", (int)f[i].len, f[i].s);
			goto fail;
		}
	}
	np.url = field_dup(&f[1]);
	*pp = np;
	return;
fail:
	free(np.auth_file);
	free(np.ca_file);
	free(np.ca_pem);
	if (np.auth_b64 != NULL)
		memset(np.auth_b64, 0, strlen(np.auth_b64));
	free(np.auth_b64);
}

static void
conf_directive(struct conf_parse *cp, const struct conf_field *f, size_t nf)
{
	struct conf *c = cp->c;
	static const struct {
		const char *word;
		size_t off;
	} paths[] = {
		{ "runtime-dir", offsetof(struct conf, runtime_dir) },
		{ "control", offsetof(struct conf, control) },
		{ "policy-dir", offsetof(struct conf, policy_dir) },
		{ "receipts", offsetof(struct conf, receipts) },
		{ "receipt-key", offsetof(struct conf, receipt_key) },
		{ "signing-key", offsetof(struct conf, signing_key) },
		{ "policy-key", offsetof(struct conf, policy_key) },
		{ "hosts", offsetof(struct conf, hosts) },
	};

	if (field_eq(&f[0], "principal")) {
		conf_principal(cp, f, nf);
		return;
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (!field_eq(&f[0], paths[i].word))
			continue;
		if (nf != 2) {
			conf_error(cp, f[0].col, "expected: %s PATH", paths[i].word);
			return;
		}
		conf_path(cp, &f[1], (char **)((char *)c + paths[i].off));
		return;
	}
	if (field_eq(&f[0], "policy-pubkey")) {
		conf_policy_pubkey(cp, f, nf);
		return;
	}
	if (field_eq(&f[0], "parent-proxy")) {
		conf_parent(cp, f, nf);
		return;
	}
	if (field_eq(&f[0], "lease")) {
		if ((nf != 2 && nf != 4) || (nf == 4 && !field_eq(&f[2], "group"))) {
			conf_error(cp, f[0].col, "expected: lease PATH [group GROUP]");
			return;
		}
		if (conf_path(cp, &f[1], &c->lease) == 0 && nf == 4) {
			free(c->lease_group);
			c->lease_group = field_dup(&f[3]);
		}
		return;
	}
	if (field_eq(&f[0], "resolver")) {
		if (nf != 2)
			conf_error(cp, f[0].col, "expected: resolver ADDRESS[:PORT]");
		else
			conf_resolver(cp, &f[1]);
		return;
	}
	if (field_eq(&f[0], "nat64-prefix")) {
		const char *why;

		if (nf != 2) {
			conf_error(cp, f[0].col, "expected: nat64-prefix IPV6/LENGTH");
			return;
		}
		if (c->nnat64 >= EGRESSD_MAX_NAT64) {
			conf_error(cp, f[0].col, "more than %d nat64 prefixes", EGRESSD_MAX_NAT64);
			return;
		}
		if (cidr_parse(f[1].s, f[1].len, &c->nat64[c->nnat64], &why) == -1) {
			conf_error(cp, f[1].col, "bad prefix: %s", why);
			return;
		}
		if (c->nat64[c->nnat64].a.family != AF_INET6 || (c->nat64[c->nnat64].plen != 32 &&
		    c->nat64[c->nnat64].plen != 40 && c->nat64[c->nnat64].plen != 48 &&
		    c->nat64[c->nnat64].plen != 56 && c->nat64[c->nnat64].plen != 64 &&
		    c->nat64[c->nnat64].plen != 96)) {
			conf_error(cp, f[1].col, "a NAT64 prefix is IPv6 of length 32, 40, 48, "
			    "56, 64 or 96 (RFC 6052)");
			return;
		}
		c->nnat64++;
		return;
	}
	if (field_eq(&f[0], "receipts-rotate")) {
		unsigned long v;
		uint64_t mul = 1;
		struct conf_field vf = nf == 2 ? f[1] : f[0];

		if (nf == 2 && vf.len > 1) {
			switch (vf.s[vf.len - 1]) {
			case 'K': mul = 1ULL << 10; vf.len--; break;
			case 'M': mul = 1ULL << 20; vf.len--; break;
			case 'G': mul = 1ULL << 30; vf.len--; break;
			default: break;
			}
		}
		if (nf != 2 || conf_uint(&vf, 1UL << 30, &v) == -1 || v == 0 ||
		    (uint64_t)v * mul < 4096) {
			conf_error(cp, f[0].col, "expected: receipts-rotate SIZE (at least 4096 bytes; "
			    "K, M, G)");
			return;
		}
		c->receipts_rotate = (uint64_t)v * mul;
		return;
	}
	if (field_eq(&f[0], "syslog")) {
		if (nf != 1)
			conf_error(cp, f[1].col, "syslog takes no value");
		else
			c->syslog = true;
		return;
	}
	if (field_eq(&f[0], "log")) {
		/* Where egressd's own logfmt lines go; receipts are the syslog directive's. */
		if (nf == 2 && field_eq(&f[1], "stderr"))
			c->log_syslog = false;
		else if (nf == 2 && field_eq(&f[1], "syslog"))
			c->log_syslog = true;
		else
			conf_error(cp, nf >= 2 ? f[1].col : f[0].col, "expected: log stderr|syslog");
		return;
	}
	if (field_eq(&f[0], "metrics-listen")) {
		struct addr a;
		struct egress_hostport hp;
		unsigned long port = 0;
		struct conf_field pf;

		if (nf != 2 || egress_hostport_split(f[1].s, f[1].len, &hp) == -1) {
			conf_error(cp, f[0].col, "expected: metrics-listen ADDRESS:PORT");
			return;
		}
		pf.s = hp.port;
		pf.len = hp.portlen;
		pf.col = f[1].col;
		if (addr_parse(hp.host, hp.hostlen, &a) == -1 || conf_uint(&pf, 65535, &port) == -1 ||
		    port == 0) {
			conf_error(cp, f[1].col, "expected ADDRESS:PORT (127.0.0.1:9464, [::1]:9464)");
			return;
		}
		free(c->metrics_listen);
		c->metrics_listen = field_dup(&f[1]);
		return;
	}
	if (field_eq(&f[0], "user")) {
		if (nf != 2)
			conf_error(cp, f[0].col, "expected: user NAME");
		else {
			free(c->user);
			c->user = field_dup(&f[1]);
		}
		return;
	}
	if (field_eq(&f[0], "synthetic-range")) {
		const char *why;
		struct cidr r;

		if (nf != 2) {
			conf_error(cp, f[0].col, "expected: synthetic-range IPV4/LENGTH");
			return;
		}
		if (cidr_parse(f[1].s, f[1].len, &r, &why) == -1) {
			conf_error(cp, f[1].col, "bad range: %s", why);
			return;
		}
		/* IPv4, and room for names: the first and last address are never handed out. */
		if (r.a.family != AF_INET || r.plen < 8 || r.plen > 30) {
			conf_error(cp, f[1].col, "a synthetic range is IPv4 of length 8 to 30");
			return;
		}
		c->synth_range = r;
		return;
	}
	if (field_eq(&f[0], "synthetic-max")) {
		unsigned long v;

		if (nf != 2 || conf_uint(&f[1], SYNTH_MAX_LIMIT, &v) == -1 || v == 0) {
			conf_error(cp, f[0].col, "expected: synthetic-max NAMES (1-%d)",
			    SYNTH_MAX_LIMIT);
			return;
		}
		c->synth_max = (size_t)v;
		return;
	}
	if (field_eq(&f[0], "shutdown-grace")) {
		unsigned long v;
		struct conf_field vf = f[1];

		if (nf == 2 && vf.len > 1 && vf.s[vf.len - 1] == 's')
			vf.len--;
		if (nf != 2 || conf_uint(&vf, 3600, &v) == -1) {
			conf_error(cp, f[0].col, "expected: shutdown-grace SECONDS (0-3600)");
			return;
		}
		c->grace = (unsigned)v;
		return;
	}
	conf_error(cp, f[0].col, "unknown directive '%.*s'", (int)f[0].len, f[0].s);
}

static void
conf_line(struct conf_parse *cp, const char *s, size_t len)
{
	struct fields_field lf[CONF_MAX_FIELDS];
	struct conf_field f[CONF_MAX_FIELDS];
	struct fields_error err;
	int nf;

	if (len > CONF_MAX_LINE) {
		conf_error(cp, 1, "line longer than %d bytes", CONF_MAX_LINE);
		return;
	}
	if (len > 0 && s[len - 1] == '\r')
		len--;                     /* CRLF line endings are accepted */
	if ((nf = fields_split(s, len, lf, CONF_MAX_FIELDS, &err)) == -1) {
		conf_error(cp, err.col, err.why == FIELDS_TOO_MANY ? "too many fields" :
		    "control or non-ASCII byte");
		return;
	}
	/* The directives take conf_field, of the same three members. */
	for (int i = 0; i < nf; i++)
		f[i] = (struct conf_field){ lf[i].s, lf[i].len, lf[i].col };
	if (nf > 0)
		conf_directive(cp, f, (size_t)nf);
}

void
conf_free(struct conf *c)
{
	if (c == NULL)
		return;
	free(c->text);
	for (size_t i = 0; i < c->nprincipals; i++) {
		free(c->principals[i].name);
		free(c->principals[i].socket);
		free(c->principals[i].policy);
	}
	free(c->principals);
	free(c->file);
	free(c->runtime_dir);
	free(c->control);
	free(c->lease);
	free(c->lease_group);
	free(c->policy_dir);
	free(c->receipts);
	free(c->receipt_key);
	free(c->signing_key);
	free(c->policy_key);
	for (size_t i = 0; i < c->npolicy_pubkeys; i++) {
		egress_ed25519_free(c->policy_pubkeys[i]);
		free(c->policy_pubkey_files[i]);
	}
	free(c->resolvers);
	free(c->hosts);
	free(c->user);
	free(c->metrics_listen);
	free(c->parent.url);
	free(c->parent.auth_file);
	free(c->parent.ca_file);
	free(c->parent.ca_pem);
	if (c->parent.auth_b64 != NULL)
		memset(c->parent.auth_b64, 0, strlen(c->parent.auth_b64));
	free(c->parent.auth_b64);
	free(c);
}

/* True when path names an entry directly inside dir. */
bool
conf_inside(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	const char *base;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (strncmp(path, dir, n) != 0 || path[n] != '/')
		return false;
	base = path + n + 1;
	return base[0] != '\0' && strchr(base, '/') == NULL && strcmp(base, ".") != 0 &&
	    strcmp(base, "..") != 0;
}

int (*conf_opener)(const char *path);
int (*conf_file_opener)(const char *path);

/* The file itself, or through the hook (the confined engine asks its monitor). */
static FILE *
conf_open(const char *file)
{
	FILE *fp;
	int fd;

	if (conf_opener == NULL)
		return fopen(file, "re");
	if ((fd = conf_opener(file)) == -1)
		return NULL;
	if ((fp = fdopen(fd, "r")) == NULL)
		close(fd);
	return fp;
}

struct conf *
conf_load(const char *file)
{
	char buf[CONF_MAX_BYTES + 1];
	size_t len;
	FILE *fp;

	if ((fp = conf_open(file)) == NULL) {
		log_startupx_at(file, 0, 0, "%s", strerror(errno));
		return NULL;
	}
	len = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	if (len > CONF_MAX_BYTES) {
		log_startupx_at(file, 0, 0, "larger than %u bytes", CONF_MAX_BYTES);
		return NULL;
	}
	return conf_parse_text(file, buf, len);
}

struct conf *
conf_parse_text(const char *file, const char *buf, size_t len)
{
	struct conf_parse cp;
	struct conf *c;
	const char *s, *end;

	if (len > CONF_MAX_BYTES) {
		log_startupx_at(file, 0, 0, "larger than %u bytes", CONF_MAX_BYTES);
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	memset(&cp, 0, sizeof(cp));
	cp.file = file;
	cp.c = c;
	c->file = xstrdup(file);
	c->grace = EGRESSD_GRACE_DEFAULT;
	(void)cidr_parse(SYNTH_RANGE_DEFAULT, strlen(SYNTH_RANGE_DEFAULT), &c->synth_range,
	    &(const char *){ NULL });
	c->synth_max = SYNTH_MAX_DEFAULT;
	/* The bytes as read: the monitor hands them to its engine (the file may be a FIFO). */
	c->text = xmalloc(len + 1);
	memcpy(c->text, buf, len);
	c->textlen = len;
	for (s = buf, end = buf + len, cp.line = 1; s < end; cp.line++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;

		if (memchr(s, '\0', (size_t)(eol - s)) != NULL)
			conf_error(&cp, 1, "NUL byte");
		else
			conf_line(&cp, s, (size_t)(eol - s));
		s = nl ? nl + 1 : end;
	}
	cp.line = 0;
	if (c->runtime_dir == NULL)
		c->runtime_dir = xstrdup("/run/egress");
	if (c->control == NULL)
		xasprintf(&c->control, "%s/control.sock", c->runtime_dir);
	if (c->receipts == NULL)
		c->receipts = xstrdup("/var/lib/egress/receipts.jsonl");
	for (size_t i = 0; i < c->nprincipals; i++) {
		struct conf_principal *pr = &c->principals[i];

		if (pr->socket == NULL)
			xasprintf(&pr->socket, "%s/%s.sock", c->runtime_dir, pr->name);
		if (!conf_inside(c->runtime_dir, pr->socket)) {
			cp.line = pr->line;
			conf_error(&cp, 1, "socket %s of principal '%s' is not directly inside "
			    "runtime-dir %s", pr->socket, pr->name, c->runtime_dir);
		}
		/* One path is one listener: a second bind would take the first one's place. */
		cp.line = pr->line;
		if (strcmp(pr->socket, c->control) == 0)
			conf_error(&cp, 1, "socket %s of principal '%s' is the control socket",
			    pr->socket, pr->name);
		else if (c->lease != NULL && strcmp(pr->socket, c->lease) == 0)
			conf_error(&cp, 1, "socket %s of principal '%s' is the lease socket",
			    pr->socket, pr->name);
		for (size_t k = 0; k < i; k++)
			if (strcmp(pr->socket, c->principals[k].socket) == 0) {
				conf_error(&cp, 1, "socket %s of principal '%s' is principal '%s''s "
				    "(line %u)", pr->socket, pr->name, c->principals[k].name,
				    c->principals[k].line);
				break;
			}
	}
	if (c->lease != NULL && strcmp(c->lease, c->control) == 0) {
		cp.line = 0;
		conf_error(&cp, 1, "the lease socket %s is the control socket", c->lease);
	}
	if (c->lease != NULL && c->policy_dir == NULL) {
		cp.line = 0;
		conf_error(&cp, 1, "a lease socket needs a policy-dir (the policies leases may name)");
	}
	if (cp.errors != 0) {
		conf_free(c);
		return NULL;
	}
	return c;
}
