/*
 * testdns.c: a tiny DNS server for the end-to-end tests, so that egressd's resolver
 * (c-ares) can be pointed at names the tests choose, hostile answers included.
 *
 * usage: testdns -z ZONEFILE [-a ADDRESS] [-p PORT] [-l QUERYLOG] [-P PIDFILE]
 *
 *   -z  zone file (below); an error in it is reported as file:line, exit status 2
 *   -a  IPv4 or IPv6 address to listen on, UDP and TCP (default 127.0.0.1)
 *   -p  port; 0 (the default) picks a port that is free for both UDP and TCP
 *   -l  append "NAME TYPE\n" per question received (name lower case, no trailing dot,
 *       unusual bytes as \DDD; TYPE is A, AAAA, CNAME or TYPEnn), written at once
 *   -P  write the pid to this file (before the port line appears)
 *
 * Once both sockets listen, exactly one line "port N\n" goes to stdout. The server runs in
 * the foreground until SIGTERM or SIGINT and then exits 0; usage and system errors exit 1.
 *
 * Zone file: one entry a line, '#' starts a comment, fields separated by white space:
 *
 *   NAME A     192.0.2.1      [TTL]     several A and several AAAA per name are fine
 *   NAME AAAA  2001:db8::1    [TTL]     TTL defaults to 60
 *   NAME CNAME target.name    [TTL]     must be the name's only entry (but for EXTRA)
 *   NAME EXTRA other.name               an answer whose chain passes NAME also carries
 *                                       other.name's CNAME record (owner written in full),
 *                                       after NAME's own CNAME or before its addresses:
 *                                       a record of no chain, as a hostile resolver sends
 *   NAME SILENT                         questions are read and never answered
 *   NAME SERVFAIL | NXDOMAIN | REFUSED  that answer for every type
 *
 * Names are case-insensitive, the trailing dot optional, labels of printable ASCII.
 * Unknown names get NXDOMAIN, a known name without the asked type NOERROR and no answer.
 * CNAME chains inside the zone are followed as a recursive resolver would (at most
 * TESTDNS_MAX_CHAIN links, more than egressd accepts, so a loop gives SERVFAIL); a chain that ends outside the zone or
 * on NXDOMAIN gives NXDOMAIN with the CNAMEs, on SERVFAIL or REFUSED gives SERVFAIL, on
 * SILENT no answer. A question of type CNAME gets the CNAME record itself, ANY gets NOERROR
 * and no answer. UDP answers above 512 octets carry TC and no records (EDNS is ignored).
 *
 * Trust: the zone file is the test's own and is trusted to say what it means, but is
 * parsed with bounds all the same. Every packet is untrusted: a question is decoded with
 * bounded loops (compression pointers must point strictly backwards), nothing is
 * allocated per packet, and a TCP client gets a deadline and a slot out of a fixed few.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define TESTDNS_MAX_LINE 1024        /* zone file line, newline excluded */
#define TESTDNS_MAX_FIELDS 4         /* NAME TYPE VALUE TTL */
#define TESTDNS_MAX_RECORDS 10000    /* zone entries, special lines included */
#define TESTDNS_MAX_NAME 255         /* octets of a wire name, RFC 1035 2.3.4 */
#define TESTDNS_MAX_LABEL 63
#define TESTDNS_NAME_TEXT (TESTDNS_MAX_NAME * 4 + 2)  /* every octet may become \DDD */
#define TESTDNS_MAX_TTL 2147483647U  /* RFC 2181 8 */
#define TESTDNS_DEF_TTL 60
#define TESTDNS_MAX_CHAIN 16         /* CNAME links followed; one more is SERVFAIL */
#define TESTDNS_MAX_POINTERS 16      /* compression pointers followed in one name */
#define TESTDNS_UDP_MAX 512          /* RFC 1035 4.2.1; EDNS is not honoured */
#define TESTDNS_MSG_MAX 65535        /* TCP length prefix */
#define TESTDNS_TCP_QUERY_MAX 4096   /* a longer TCP query closes the connection */
#define TESTDNS_MAX_TCP 16           /* clients at once; more wait in the backlog */
#define TESTDNS_TCP_DEADLINE_MS 5000 /* per connection, renewed only by a full answer */
#define TESTDNS_UDP_BURST 64         /* datagrams per wakeup, so TCP is not starved */
#define TESTDNS_BIND_TRIES 16        /* UDP ports tried when TCP cannot have the same */
#define TESTDNS_HDR 12

#define DNS_T_A 1
#define DNS_T_CNAME 5
#define DNS_T_AAAA 28
#define DNS_T_ANY 255
#define DNS_C_IN 1

#define DNS_R_NOERROR 0
#define DNS_R_FORMERR 1
#define DNS_R_SERVFAIL 2
#define DNS_R_NXDOMAIN 3
#define DNS_R_NOTIMP 4
#define DNS_R_REFUSED 5

enum zkind {
	Z_A,
	Z_AAAA,
	Z_CNAME,
	Z_EXTRA,                     /* rdata: a name whose CNAME record rides along */
	Z_SILENT,                    /* this and below: the name's only entry */
	Z_SERVFAIL,
	Z_NXDOMAIN,
	Z_REFUSED,
};

struct zrec {
	uint8_t name[TESTDNS_MAX_NAME];    /* wire form, lower case */
	size_t namelen;
	enum zkind kind;
	uint32_t ttl;
	uint8_t rdata[TESTDNS_MAX_NAME];   /* address, or the CNAME target in wire form */
	size_t rdlen;
};

/* What the zone holds for one name. */
struct zfind {
	bool exists;
	const struct zrec *special;  /* SILENT, SERVFAIL, NXDOMAIN or REFUSED */
	const struct zrec *cname;
};

struct question {
	uint8_t name[TESTDNS_MAX_NAME];    /* as asked, decompressed: echoed back */
	uint8_t lname[TESTDNS_MAX_NAME];   /* lower case: looked up and logged */
	size_t namelen;
	uint16_t qtype;
	uint16_t qclass;
};

enum parse_result {
	PARSE_OK,
	PARSE_DROP,                  /* not worth an answer: too short, or a response */
	PARSE_FORMERR,
	PARSE_NOTIMP,
};

/* Output with a hard cap: a put that does not fit changes nothing and fails. */
struct wbuf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

struct tcpconn {
	int fd;                      /* -1: slot free */
	uint8_t in[2 + TESTDNS_TCP_QUERY_MAX];
	size_t inlen;
	uint8_t out[2 + TESTDNS_MSG_MAX];
	size_t outlen;
	size_t outoff;
	int64_t deadline;            /* monotonic ms */
};

static struct zrec zone[TESTDNS_MAX_RECORDS];
static size_t nzone;
static struct tcpconn conns[TESTDNS_MAX_TCP];
static uint8_t udp_in[TESTDNS_MSG_MAX + 1];
static uint8_t udp_out[TESTDNS_MSG_MAX];
static int querylog_fd = -1;
static volatile sig_atomic_t quit;

static void
usage(void)
{
	fprintf(stderr, "usage: testdns -z zonefile [-a address] [-p port] "
	    "[-l querylog] [-P pidfile]\n");
	exit(1);
}

/* ASCII only: the locale must not change what matches. */
static uint8_t
lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static void
set16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		err(1, "clock_gettime");
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- names ------------------------------------------------------------------------ */

/* Text to lower-case wire form. Returns NULL, or why the name is refused. */
static const char *
name_from_text(const char *s, uint8_t *out, size_t *outlen)
{
	size_t o = 0;

	if (strcmp(s, ".") == 0)
		return "the root name is not supported";
	while (*s != '\0') {
		const char *label = s;
		size_t n;

		for (; *s != '\0' && *s != '.'; s++) {
			/* Fields hold no white space; this keeps out control bytes and 8-bit. */
			if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
				return "name has a byte that is not printable ASCII";
		}
		n = (size_t)(s - label);
		if (n == 0)
			return "name has an empty label";
		if (n > TESTDNS_MAX_LABEL)
			return "label longer than 63 octets";
		if (o + 1 + n + 1 > TESTDNS_MAX_NAME)
			return "name longer than 255 octets";
		out[o++] = (uint8_t)n;
		for (size_t i = 0; i < n; i++)
			out[o++] = lower((uint8_t)label[i]);
		if (*s == '.')
			s++;
	}
	out[o++] = 0;
	*outlen = o;
	return NULL;
}

/*
 * Wire form (already validated) to text for the query log: dots between labels, no
 * trailing dot, and any octet that could confuse a line-based reader as \DDD.
 */
static void
name_to_text(const uint8_t *wire, char *out, size_t outsz)
{
	size_t o = 0, i = 0;

	if (wire[0] == 0) {
		snprintf(out, outsz, ".");
		return;
	}
	while (wire[i] != 0) {
		size_t n = wire[i++];

		if (o > 0)
			out[o++] = '.';
		for (size_t j = 0; j < n; j++, i++) {
			uint8_t c = wire[i];

			/* TESTDNS_NAME_TEXT always suffices; should it not, stop, never misread. */
			if (outsz - o < 6) {
				out[o] = '\0';
				return;
			}
			if (c == '.' || c == '\\') {
				out[o++] = '\\';
				out[o++] = (char)c;
			} else if (c >= 0x21 && c <= 0x7e)
				out[o++] = (char)c;
			else
				o += (size_t)snprintf(out + o, outsz - o, "\\%03u", c);
		}
	}
	out[o] = '\0';
}

/*
 * Decodes the name at *offp of msg into out (uncompressed wire form) and moves *offp past
 * it. Each compression pointer must point before where the previous part of the name was
 * read from, so the walk strictly moves backwards and cannot loop; their number is capped
 * all the same.
 */
static int
name_read(const uint8_t *msg, size_t len, size_t *offp, uint8_t *out, size_t *outlen)
{
	size_t pos = *offp, limit = *offp, end = 0, o = 0;
	unsigned pointers = 0;       /* bounded by TESTDNS_MAX_POINTERS */
	bool jumped = false;

	for (;;) {
		uint8_t b;

		if (pos >= len)
			return -1;
		b = msg[pos];
		if ((b & 0xc0) == 0xc0) {
			size_t target;

			if (len - pos < 2)
				return -1;
			target = (size_t)(b & 0x3f) << 8 | msg[pos + 1];
			if (target >= limit || ++pointers > TESTDNS_MAX_POINTERS)
				return -1;
			if (!jumped)
				end = pos + 2;
			jumped = true;
			pos = limit = target;
			continue;
		}
		if ((b & 0xc0) != 0)
			return -1;   /* 0x40 and 0x80 label types are obsolete (RFC 6891 5) */
		if (b == 0)
			break;
		if (len - pos - 1 < b || o + 1 + b + 1 > TESTDNS_MAX_NAME)
			return -1;
		memcpy(out + o, msg + pos, 1 + (size_t)b);
		o += 1 + (size_t)b;
		pos += 1 + (size_t)b;
	}
	out[o++] = 0;
	*offp = jumped ? end : pos + 1;
	*outlen = o;
	return 0;
}

/* --- zone ------------------------------------------------------------------------- */

static void __attribute__((noreturn))
zone_fail(const char *path, size_t lineno, const char *why, const char *what)
{
	if (what != NULL)
		errx(2, "%s:%zu: %s: %s", path, lineno, why, what);
	errx(2, "%s:%zu: %s", path, lineno, why);
}

/* One line, newline dropped, into buf of TESTDNS_MAX_LINE + 1. 0 at end of file. */
static int
zone_getline(FILE *f, char *buf, const char *path, size_t lineno)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n') {
		/* A NUL would silently cut the line short further on. */
		if (c == '\0')
			zone_fail(path, lineno, "NUL byte in line", NULL);
		if (n == TESTDNS_MAX_LINE)
			zone_fail(path, lineno, "line longer than 1024 bytes", NULL);
		buf[n++] = (char)c;
	}
	if (c == EOF && ferror(f))
		err(2, "%s", path);
	if (c == EOF && n == 0)
		return 0;
	buf[n] = '\0';
	return 1;
}

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool
zone_name_eq(const struct zrec *r, const uint8_t *name, size_t len)
{
	return r->namelen == len && memcmp(r->name, name, len) == 0;
}

static int
zone_kind(const char *s, enum zkind *kind)
{
	static const struct {
		const char *word;
		enum zkind kind;
	} kinds[] = {
		{ "A", Z_A }, { "AAAA", Z_AAAA }, { "CNAME", Z_CNAME }, { "EXTRA", Z_EXTRA },
		{ "SILENT", Z_SILENT }, { "SERVFAIL", Z_SERVFAIL },
		{ "NXDOMAIN", Z_NXDOMAIN }, { "REFUSED", Z_REFUSED },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcasecmp(s, kinds[i].word) == 0) {
			*kind = kinds[i].kind;
			return 0;
		}
	}
	return -1;
}

static int
zone_ttl(const char *s, uint32_t *ttl)
{
	uint32_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint32_t)(*s - '0');
		if (v > TESTDNS_MAX_TTL)
			return -1;
	}
	*ttl = v;
	return 0;
}

static void
zone_line(char *line, const char *path, size_t lineno)
{
	char *field[TESTDNS_MAX_FIELDS], *p, *hash;
	size_t nfield = 0;
	struct zrec *r;
	const char *why;

	if ((hash = strchr(line, '#')) != NULL)
		*hash = '\0';
	for (p = line;;) {
		while (is_blank(*p))
			p++;
		if (*p == '\0')
			break;
		if (nfield == TESTDNS_MAX_FIELDS)
			zone_fail(path, lineno, "too many fields", p);
		field[nfield++] = p;
		while (*p != '\0' && !is_blank(*p))
			p++;
		if (*p != '\0')
			*p++ = '\0';
	}
	if (nfield == 0)
		return;
	if (nzone == TESTDNS_MAX_RECORDS)
		zone_fail(path, lineno, "more than 10000 entries", NULL);
	r = &zone[nzone];
	memset(r, 0, sizeof(*r));
	if ((why = name_from_text(field[0], r->name, &r->namelen)) != NULL)
		zone_fail(path, lineno, why, field[0]);
	if (nfield < 2)
		zone_fail(path, lineno, "missing type after the name", field[0]);
	if (zone_kind(field[1], &r->kind) == -1)
		zone_fail(path, lineno, "unknown type (A AAAA CNAME EXTRA SILENT SERVFAIL "
		    "NXDOMAIN REFUSED)", field[1]);
	if (r->kind >= Z_SILENT && nfield != 2)
		zone_fail(path, lineno, "this type takes no value", field[1]);
	if (r->kind < Z_SILENT && nfield < 3)
		zone_fail(path, lineno, "missing value", field[1]);

	switch (r->kind) {
	case Z_A:
		if (inet_pton(AF_INET, field[2], r->rdata) != 1)
			zone_fail(path, lineno, "not an IPv4 address", field[2]);
		r->rdlen = 4;
		break;
	case Z_AAAA:
		if (inet_pton(AF_INET6, field[2], r->rdata) != 1)
			zone_fail(path, lineno, "not an IPv6 address", field[2]);
		r->rdlen = 16;
		break;
	case Z_CNAME:
	case Z_EXTRA:
		if ((why = name_from_text(field[2], r->rdata, &r->rdlen)) != NULL)
			zone_fail(path, lineno, why, field[2]);
		break;
	default:
		break;
	}
	r->ttl = TESTDNS_DEF_TTL;
	if (nfield == 4 && zone_ttl(field[3], &r->ttl) == -1)
		zone_fail(path, lineno, "TTL is not a number from 0 to 2147483647", field[3]);

	/* A name is either records, or one CNAME, or one special: anything else is unclear. */
	for (size_t i = 0; i < nzone; i++) {
		if (!zone_name_eq(&zone[i], r->name, r->namelen))
			continue;
		if (zone[i].kind >= Z_SILENT || r->kind >= Z_SILENT)
			zone_fail(path, lineno, "SILENT, SERVFAIL, NXDOMAIN and REFUSED must be "
			    "their name's only entry", field[0]);
		if ((zone[i].kind == Z_CNAME && r->kind != Z_EXTRA) ||
		    (r->kind == Z_CNAME && zone[i].kind != Z_EXTRA))
			zone_fail(path, lineno, "a CNAME must be its name's only entry", field[0]);
	}
	nzone++;
}

static void
zone_load(const char *path)
{
	char line[TESTDNS_MAX_LINE + 1];
	size_t lineno;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		err(2, "%s", path);
	for (lineno = 1; zone_getline(f, line, path, lineno); lineno++)
		zone_line(line, path, lineno);
	fclose(f);
}

static void
zone_find(const uint8_t *name, size_t len, struct zfind *zf)
{
	memset(zf, 0, sizeof(*zf));
	for (size_t i = 0; i < nzone; i++) {
		if (!zone_name_eq(&zone[i], name, len))
			continue;
		zf->exists = true;
		if (zone[i].kind >= Z_SILENT)
			zf->special = &zone[i];
		else if (zone[i].kind == Z_CNAME)
			zf->cname = &zone[i];
	}
}

/* --- messages --------------------------------------------------------------------- */

static int
wb_put(struct wbuf *w, const void *data, size_t n)
{
	if (w->cap - w->len < n)
		return -1;
	memcpy(w->p + w->len, data, n);
	w->len += n;
	return 0;
}

static int
wb_put16(struct wbuf *w, size_t v)
{
	uint8_t b[2];

	set16(b, v);
	return wb_put(w, b, sizeof(b));
}

static int
wb_put32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	return wb_put(w, b, sizeof(b));
}

/*
 * Appends one record whose owner name was written earlier at owner_off (the question, or
 * the previous CNAME's target), so it is a compression pointer. *rdata_off tells where
 * this record's data went, for the next link of a chain. Nothing is left on failure.
 */
static int
wb_put_rr(struct wbuf *w, size_t owner_off, const uint8_t *owner, size_t ownerlen,
    const struct zrec *r, size_t *rdata_off)
{
	static const uint16_t types[] = { [Z_A] = DNS_T_A, [Z_AAAA] = DNS_T_AAAA,
	    [Z_CNAME] = DNS_T_CNAME };
	size_t mark = w->len;

	if ((owner_off < 0x4000 ? wb_put16(w, 0xc000 | owner_off) :
	    wb_put(w, owner, ownerlen)) == -1 ||
	    wb_put16(w, types[r->kind]) == -1 ||
	    wb_put16(w, DNS_C_IN) == -1 ||
	    wb_put32(w, r->ttl) == -1 ||
	    wb_put16(w, r->rdlen) == -1)
		goto full;
	*rdata_off = w->len;
	if (wb_put(w, r->rdata, r->rdlen) == -1)
		goto full;
	return 0;
full:
	w->len = mark;
	return -1;
}

/*
 * The EXTRA entries of name: for each, the CNAME record of the name it gives, its owner
 * written in full (it continues nothing before it). Returns -1 when one did not fit.
 */
static int
put_extras(struct wbuf *w, const uint8_t *name, size_t namelen, size_t *ancount)
{
	for (size_t i = 0; i < nzone; i++) {
		struct zfind other;
		size_t rdata_off;

		if (zone[i].kind != Z_EXTRA || !zone_name_eq(&zone[i], name, namelen))
			continue;
		zone_find(zone[i].rdata, zone[i].rdlen, &other);
		if (other.cname == NULL)
			continue;
		if (wb_put_rr(w, 0x4000, other.cname->name, other.cname->namelen, other.cname,
		    &rdata_off) == -1)
			return -1;
		(*ancount)++;
	}
	return 0;
}

static enum parse_result
question_parse(const uint8_t *msg, size_t len, struct question *q)
{
	size_t off = TESTDNS_HDR;

	if (len < TESTDNS_HDR)
		return PARSE_DROP;
	if (msg[2] & 0x80)
		return PARSE_DROP;   /* a response: answering could start a loop */
	if ((msg[2] >> 3 & 0xf) != 0)
		return PARSE_NOTIMP; /* only QUERY */
	if (get16(msg + 4) != 1)
		return PARSE_FORMERR;
	if (name_read(msg, len, &off, q->name, &q->namelen) == -1)
		return PARSE_FORMERR;
	if (len - off < 4)
		return PARSE_FORMERR;
	q->qtype = get16(msg + off);
	q->qclass = get16(msg + off + 2);
	for (size_t i = 0; i < q->namelen; i++)
		q->lname[i] = lower(q->name[i]);
	return PARSE_OK;
}

static void
querylog_write(const struct question *q)
{
	char name[TESTDNS_NAME_TEXT], line[TESTDNS_NAME_TEXT + 16], type[12];
	const char *t;
	size_t off = 0, len;
	int n;

	if (querylog_fd == -1)
		return;
	switch (q->qtype) {
	case DNS_T_A:
		t = "A";
		break;
	case DNS_T_AAAA:
		t = "AAAA";
		break;
	case DNS_T_CNAME:
		t = "CNAME";
		break;
	default:
		snprintf(type, sizeof(type), "TYPE%u", (unsigned)q->qtype);
		t = type;
		break;
	}
	name_to_text(q->lname, name, sizeof(name));
	n = snprintf(line, sizeof(line), "%s %s\n", name, t);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	len = (size_t)n;
	/* One write with O_APPEND: the line lands whole, and at once, for the test to see. */
	while (off < len) {
		ssize_t w = write(querylog_fd, line + off, len - off);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1) {
			warn("query log");
			return;
		}
		off += (size_t)w;
	}
}

/* Header with no sections, for a question that cannot be echoed. msg has a header. */
static size_t
answer_header_only(const uint8_t *msg, uint8_t *out, uint8_t rcode)
{
	memset(out, 0, TESTDNS_HDR);
	out[0] = msg[0];
	out[1] = msg[1];
	out[2] = (uint8_t)(0x80 | (msg[2] & 0x79));  /* QR; opcode and RD copied */
	out[3] = (uint8_t)(0x80 | rcode);            /* RA */
	return TESTDNS_HDR;
}

/*
 * The answer to msg in out (cap octets, at least TESTDNS_UDP_MAX), or 0 for none at all.
 * Over UDP an answer beyond 512 octets shrinks to header and question with TC set.
 */
static size_t
answer(const uint8_t *msg, size_t msglen, uint8_t *out, size_t cap, bool udp)
{
	struct question q;
	struct zfind zf;
	struct wbuf w = { out, 0, cap };
	const uint8_t *name;
	size_t namelen, qend, owner_off = TESTDNS_HDR, rdata_off;
	size_t ancount = 0;
	uint8_t rcode = DNS_R_NOERROR;
	bool tc = false;

	switch (question_parse(msg, msglen, &q)) {
	case PARSE_OK:
		break;
	case PARSE_DROP:
		return 0;
	case PARSE_FORMERR:
		return answer_header_only(msg, out, DNS_R_FORMERR);
	case PARSE_NOTIMP:
		return answer_header_only(msg, out, DNS_R_NOTIMP);
	}
	querylog_write(&q);

	/* Header and question always fit: 12 + 255 + 4 < 512. */
	answer_header_only(msg, out, 0);
	w.len = TESTDNS_HDR;
	(void)wb_put(&w, q.name, q.namelen);
	(void)wb_put16(&w, q.qtype);
	(void)wb_put16(&w, q.qclass);
	qend = w.len;

	if (q.qclass != DNS_C_IN) {
		rcode = DNS_R_REFUSED;
		goto done;
	}
	name = q.lname;
	namelen = q.namelen;
	for (unsigned links = 0;; links++) {  /* bounded by TESTDNS_MAX_CHAIN */
		zone_find(name, namelen, &zf);
		if (zf.special != NULL) {
			switch (zf.special->kind) {
			case Z_SILENT:
				return 0;
			case Z_NXDOMAIN:
				rcode = DNS_R_NXDOMAIN;  /* after CNAMEs, as a resolver says it */
				goto done;
			case Z_REFUSED:
				if (links == 0) {
					rcode = DNS_R_REFUSED;
					goto done;
				}
				/* A resolver refused by the target's server reports SERVFAIL. */
				goto servfail;
			default:
				goto servfail;
			}
		}
		if (!zf.exists) {
			rcode = DNS_R_NXDOMAIN;
			goto done;
		}
		if (q.qtype == DNS_T_CNAME) {
			if (zf.cname != NULL) {
				if (wb_put_rr(&w, owner_off, name, namelen, zf.cname,
				    &rdata_off) == -1)
					tc = true;
				else
					ancount++;
			}
			goto done;
		}
		if (q.qtype == DNS_T_ANY || zf.cname == NULL)
			break;
		if (links == TESTDNS_MAX_CHAIN)
			goto servfail;
		if (wb_put_rr(&w, owner_off, name, namelen, zf.cname, &rdata_off) == -1) {
			tc = true;
			goto done;
		}
		ancount++;
		owner_off = rdata_off;
		if (put_extras(&w, name, namelen, &ancount) == -1) {
			tc = true;
			goto done;
		}
		name = zf.cname->rdata;
		namelen = zf.cname->rdlen;
	}
	if (q.qtype != DNS_T_ANY && put_extras(&w, name, namelen, &ancount) == -1) {
		tc = true;
		goto done;
	}
	for (size_t i = 0; i < nzone && q.qtype != DNS_T_ANY; i++) {
		const struct zrec *r = &zone[i];

		if (!zone_name_eq(r, name, namelen) ||
		    !((r->kind == Z_A && q.qtype == DNS_T_A) ||
		    (r->kind == Z_AAAA && q.qtype == DNS_T_AAAA)))
			continue;
		if (wb_put_rr(&w, owner_off, name, namelen, r, &rdata_off) == -1) {
			tc = true;   /* beyond 64k even for TCP: say so rather than cut silently */
			break;
		}
		ancount++;
	}
	goto done;

servfail:
	rcode = DNS_R_SERVFAIL;
	w.len = qend;
	ancount = 0;
done:
	if (udp && w.len > TESTDNS_UDP_MAX) {
		w.len = qend;
		ancount = 0;
		tc = true;
	}
	if (tc)
		out[2] |= 0x02;
	out[2] |= 0x04;              /* AA */
	out[3] = (uint8_t)(0x80 | rcode);
	set16(out + 4, 1);
	set16(out + 6, ancount);
	return w.len;
}

/* --- sockets ---------------------------------------------------------------------- */

static void
set_nonblock(int fd)
{
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
		err(1, "fcntl");
}

static void
set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/*
 * Binds UDP and TCP to the same port. With port 0 the kernel picks a UDP port, and the
 * TCP socket tries the same number; if that is taken, another UDP port is tried.
 */
static uint16_t
listen_both(struct sockaddr_storage *ss, socklen_t sslen, uint16_t port, int *udp,
    int *tcp)
{
	for (int tries = 0; tries < TESTDNS_BIND_TRIES; tries++) {
		struct sockaddr_storage got;
		socklen_t gotlen = sizeof(got);
		uint16_t p;
		int one = 1;

		if ((*udp = socket(ss->ss_family, SOCK_DGRAM, 0)) == -1)
			err(1, "socket");
		set_port(ss, port);
		if (bind(*udp, (struct sockaddr *)ss, sslen) == -1)
			err(1, "bind udp");
		if (getsockname(*udp, (struct sockaddr *)&got, &gotlen) == -1)
			err(1, "getsockname");
		p = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port :
		    ((struct sockaddr_in6 *)&got)->sin6_port);

		if ((*tcp = socket(ss->ss_family, SOCK_STREAM, 0)) == -1)
			err(1, "socket");
		if (setsockopt(*tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
			err(1, "setsockopt");
		set_port(ss, p);
		if (bind(*tcp, (struct sockaddr *)ss, sslen) == 0) {
			if (listen(*tcp, TESTDNS_MAX_TCP) == -1)
				err(1, "listen");
			set_nonblock(*udp);
			set_nonblock(*tcp);
			return p;
		}
		if (errno != EADDRINUSE || port != 0)
			err(1, "bind tcp port %u", (unsigned)p);
		close(*udp);
		close(*tcp);
	}
	errx(1, "no port free for both UDP and TCP after %d tries", TESTDNS_BIND_TRIES);
}

static void
write_pidfile(const char *path)
{
	char buf[32];
	int fd, n;

	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1)
		err(1, "%s", path);
	if (n < 0 || write(fd, buf, (size_t)n) != n || close(fd) == -1)
		err(1, "%s", path);
}

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void
udp_serve(int fd)
{
	for (int i = 0; i < TESTDNS_UDP_BURST; i++) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t n;
		size_t len;

		n = recvfrom(fd, udp_in, sizeof(udp_in), 0, (struct sockaddr *)&from, &fromlen);
		if (n == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				warn("recvfrom");
			return;
		}
		if ((len = answer(udp_in, (size_t)n, udp_out, sizeof(udp_out), true)) > 0)
			(void)sendto(fd, udp_out, len, 0, (struct sockaddr *)&from, fromlen);
	}
}

static void
tcp_close(struct tcpconn *c)
{
	close(c->fd);
	c->fd = -1;
}

static void
tcp_accept(int lfd, int64_t now)
{
	for (size_t i = 0; i < TESTDNS_MAX_TCP; i++) {
		struct tcpconn *c = &conns[i];
		int fd;

		if (c->fd != -1)
			continue;
		if ((fd = accept(lfd, NULL, NULL)) == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				warn("accept");
			return;
		}
		set_nonblock(fd);
		c->fd = fd;
		c->inlen = c->outlen = c->outoff = 0;
		c->deadline = now + TESTDNS_TCP_DEADLINE_MS;
	}
}

/* Reads only what the current message still needs, so nothing is ever carried over. */
static void
tcp_read(struct tcpconn *c)
{
	size_t need, msglen = 0, len;
	ssize_t n;

	if (c->inlen >= 2)
		msglen = get16(c->in);
	need = c->inlen < 2 ? 2 - c->inlen : 2 + msglen - c->inlen;
	n = recv(c->fd, c->in + c->inlen, need, 0);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		tcp_close(c);
		return;
	}
	c->inlen += (size_t)n;
	if (c->inlen < 2)
		return;
	msglen = get16(c->in);
	if (msglen == 0 || msglen > TESTDNS_TCP_QUERY_MAX) {
		tcp_close(c);
		return;
	}
	if (c->inlen < 2 + msglen)
		return;
	c->inlen = 0;
	if ((len = answer(c->in + 2, msglen, c->out + 2, TESTDNS_MSG_MAX, false)) > 0) {
		set16(c->out, len);
		c->outlen = 2 + len;
		c->outoff = 0;
	}
}

static void
tcp_write(struct tcpconn *c, int64_t now)
{
	ssize_t n;

	n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		tcp_close(c);
		return;
	}
	c->outoff += (size_t)n;
	if (c->outoff == c->outlen) {
		c->outlen = c->outoff = 0;
		c->deadline = now + TESTDNS_TCP_DEADLINE_MS;
	}
}

static void
serve(int udp, int tcp)
{
	struct pollfd pfd[2 + TESTDNS_MAX_TCP];
	size_t slot[2 + TESTDNS_MAX_TCP];  /* pfd index to conns index */
	sigset_t block, orig;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) == -1 || sigaction(SIGINT, &sa, NULL) == -1)
		err(1, "sigaction");
	/* Signals arrive only inside ppoll, so one cannot slip in before it and be lost. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	if (sigprocmask(SIG_BLOCK, &block, &orig) == -1)
		err(1, "sigprocmask");
	sigdelset(&orig, SIGTERM);
	sigdelset(&orig, SIGINT);

	while (!quit) {
		struct timespec ts, *tsp = NULL;
		int64_t now = now_ms(), wait = -1;
		nfds_t n = 0;
		size_t active = 0;

		pfd[n].fd = udp;
		pfd[n++].events = POLLIN;
		for (size_t i = 0; i < TESTDNS_MAX_TCP; i++) {
			struct tcpconn *c = &conns[i];

			if (c->fd == -1)
				continue;
			if (now >= c->deadline) {
				tcp_close(c);
				continue;
			}
			active++;
			if (wait == -1 || c->deadline - now < wait)
				wait = c->deadline - now;
			slot[n] = i;
			pfd[n].fd = c->fd;
			pfd[n++].events = c->outlen > c->outoff ? POLLOUT : POLLIN;
		}
		/* With every slot taken, new clients wait in the backlog, not in a spin. */
		if (active < TESTDNS_MAX_TCP) {
			slot[n] = SIZE_MAX;
			pfd[n].fd = tcp;
			pfd[n++].events = POLLIN;
		}
		if (wait >= 0) {
			ts.tv_sec = (time_t)(wait / 1000);
			ts.tv_nsec = (long)(wait % 1000) * 1000000;
			tsp = &ts;
		}
		if (ppoll(pfd, n, tsp, &orig) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "ppoll");
		}
		now = now_ms();
		if (pfd[0].revents != 0)
			udp_serve(udp);
		for (nfds_t i = 1; i < n; i++) {
			struct tcpconn *c;

			if (pfd[i].revents == 0)
				continue;
			if (slot[i] == SIZE_MAX) {
				tcp_accept(tcp, now);
				continue;
			}
			c = &conns[slot[i]];
			if (pfd[i].revents & POLLNVAL)
				tcp_close(c);
			else if (c->outlen > c->outoff)
				tcp_write(c, now);
			else
				tcp_read(c);
		}
	}
}

int
main(int argc, char *argv[])
{
	const char *zonefile = NULL, *addr = "127.0.0.1", *logfile = NULL, *pidfile = NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	uint16_t port = 0;
	int ch, udp, tcp;

	while ((ch = getopt(argc, argv, "a:l:p:P:z:")) != -1) {
		switch (ch) {
		case 'a':
			addr = optarg;
			break;
		case 'l':
			logfile = optarg;
			break;
		case 'p': {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || v < 0 || v > 65535)
				errx(1, "bad port: %s", optarg);
			port = (uint16_t)v;
			break;
		}
		case 'P':
			pidfile = optarg;
			break;
		case 'z':
			zonefile = optarg;
			break;
		default:
			usage();
		}
	}
	if (zonefile == NULL || optind != argc)
		usage();

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		sslen = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		sslen = sizeof(struct sockaddr_in6);
	} else
		errx(1, "not an IPv4 or IPv6 address: %s", addr);

	for (size_t i = 0; i < TESTDNS_MAX_TCP; i++)
		conns[i].fd = -1;
	zone_load(zonefile);
	if (logfile != NULL && (querylog_fd = open(logfile,
	    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) == -1)
		err(1, "%s", logfile);
	/* A client that vanishes mid-answer must not kill the server. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		err(1, "signal");

	port = listen_both(&ss, sslen, port, &udp, &tcp);
	if (pidfile != NULL)
		write_pidfile(pidfile);
	printf("port %u\n", (unsigned)port);
	if (fflush(stdout) == EOF)
		warn("stdout");

	serve(udp, tcp);
	for (size_t i = 0; i < TESTDNS_MAX_TCP; i++) {
		if (conns[i].fd != -1)
			tcp_close(&conns[i]);
	}
	close(udp);
	close(tcp);
	return 0;
}
