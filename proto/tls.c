/*
 * tls.c: the ClientHello inspector of egressd's SNI guard (SPEC "egressd / SNI guard",
 * protocol-notes part (b)). tls_scan says what the next unit of the client's byte stream
 * is; egressd compares the name and applies `sni match|required|off`, this file only
 * reports.
 *
 * Trusts nothing it reads: every byte comes from the confined workload and may be split
 * at any offset, fragmented over records on purpose (censorship-evasion tools do it) or
 * crafted to disagree with what an origin server would read. So every length is checked
 * against its container, nothing is read past len, nothing is allocated (a hello split
 * over records is copied into the scratch buffer the caller lends), and a name reaches
 * nothing but host_parse before it is known to be LDH. The function keeps no state: the
 * caller calls again with more bytes, and every answer depends only on the bytes present,
 * so a prefix of a stream answers NEED_MORE or what the whole stream answers.
 *
 * Choices where the SPEC and the notes leave room:
 *  - Record layer: version 3.0 to 3.4 (0x0300..0x0304). Handshake records carry 1..2^14
 *    bytes (RFC 8446 s5.1 forbids empty handshake fragments). ChangeCipherSpec must be the
 *    one byte 0x01 (RFC 8446 s5, RFC 5246 s7.1); anything else is malformed. Other types
 *    end inspection and may be ciphertext, so they are allowed 0..2^14+2048 bytes (the
 *    TLSCiphertext bound of RFC 5246 s6.2.3), and any content type byte with a sound
 *    version and length ends inspection. A header that is not sound (after the first
 *    unit too: "GET " where a record should start) is an error, never the end.
 *  - What is TLS: a stream whose first record is a TLS record, content type 20..24
 *    (change_cipher_spec, alert, handshake, application_data, and heartbeat, RFC 6520)
 *    with record version major 3. Classifying only a handshake record as TLS let six bytes
 *    of ChangeCipherSpec turn a stream into "not TLS", and a foreign hello behind them pass
 *    `sni match` unread. A first byte 0x16 is TLS whatever follows (a bad version is then
 *    an error); a first byte 20, 21, 23 or 24 needs major 3 as well, since servers refuse
 *    any other record version and the rest of the byte range stays open to other
 *    protocols. An SSLv2-format hello (RFC 5246 App. E.2: length with the high bit, then
 *    msg_type 1) is refused as malformed, since it carries no server_name; other bytes
 *    are not TLS.
 *  - Before the first ClientHello, whole ChangeCipherSpec records (the one byte 0x01) are
 *    walked over and become part of the hello's unit, so that they are held and released
 *    with it: nothing reaches the upstream before the hello is judged, and what is held
 *    stays within what the caller bounds (CONN_GUARD_HOLD). Any other record before it
 *    (an alert, application data, heartbeat, an unknown type) is malformed rather than the
 *    end of inspection: no key exists yet, so none of it is ciphertext of this session,
 *    and ending there would leave the only ClientHello unread while a server that skips
 *    such records (OpenSSL ignores warning alerts before a TLS 1.2 handshake) reads it.
 *  - The first unit of a stream must be a ClientHello. A handshake record carrying another
 *    message on the first call is malformed rather than the end of inspection: otherwise
 *    sixteen crafted bytes would let any protocol through `sni required`. On later calls
 *    any other handshake message (ClientKeyExchange, Certificate, ...) ends inspection.
 *  - A ClientHello may span any number of records (each a handshake record) up to
 *    EGRESS_TLS_HELLO_MAX bytes of message; a larger length is refused as soon as its
 *    three bytes are in. The record that completes it must end with it: a ClientHello
 *    coalesced with the start of another handshake message is refused. Clients send
 *    nothing else before the server answers, and judging half a record would leave the
 *    rest of it unjudged.
 *  - Every length inside the hello is exact: trailing bytes after the extensions or
 *    inside server_name are malformed, as is any duplicated extension type (a parser
 *    differential vector, RFC 8446 s4.2). An empty extensions block is accepted (TLS 1.2),
 *    as is a hello without one; both have no SNI.
 *  - server_name: a list of at least one entry, each name_type, a 16-bit length of at
 *    least 1 and the bytes (the layout Go and tlsfuzzer assume for every type); unknown
 *    types are skipped, two host_names are refused (RFC 6066 s3). The host_name must be
 *    LDH and dots, must not end with a dot (strict reading of RFC 6066 s3), must pass
 *    host_parse as a name (an IP literal is refused, RFC 6066 s3), and is reported in its
 *    canonical (lower case) form. When its bytes were not canonical (upper case), raw
 *    points at them too.
 *  - encrypted_client_hello (0xfe0d) and the draft ESNI extension (0xffce) set ech; the
 *    outer name is still reported and is what the caller compares.
 *  - raw points into buf, or into scratch when the hello spanned records; the caller
 *    keeps both until it has logged the result.
 *
 * Known limit (stateless by design): after a ChangeCipherSpec, a TLS 1.2 client resuming a
 * session (abbreviated handshake) sends its Finished encrypted in a handshake record. If
 * its first byte happens to be 0x01 (about 1 in 256: CBC IVs, ChaCha20 ciphertext and
 * OpenSSL's AES-GCM explicit nonces are random; Go's GCM nonce starts 0x00), it is read
 * as a ClientHello and refused, or waited for. Only the server's answer (a
 * HelloRetryRequest or not) tells a TLS 1.3 second ClientHello from that record: the
 * caller sees it, this function does not. Reading every plaintext ClientHello is the
 * fail-closed side: treating an odd-looking one as the end would let a crafted second
 * hello through.
 */
#include "config.h"

#include <string.h>

#include "tls.h"

#define TLS_CT_CHANGE_CIPHER_SPEC 20
#define TLS_CT_ALERT 21
#define TLS_CT_HANDSHAKE 22
#define TLS_CT_APPLICATION_DATA 23
#define TLS_CT_HEARTBEAT 24
#define TLS_CT_FIRST TLS_CT_CHANGE_CIPHER_SPEC   /* content types that make a stream TLS */
#define TLS_CT_LAST TLS_CT_HEARTBEAT

#define TLS_RECORD_HEADER 5            /* type, version (2), length (2) */
#define TLS_VERSION_MAJOR 3
#define TLS_VERSION_MINOR_MAX 4        /* 0x0304, accepted on the record layer */
#define TLS_CIPHERTEXT_MAX (EGRESS_TLS_RECORD_MAX + 2048) /* RFC 5246 s6.2.3 */
#define TLS_CCS_LEN 1
#define TLS_CCS_VALUE 0x01

#define TLS_HS_HEADER 4                /* msg_type, length (3) */
#define TLS_HS_CLIENT_HELLO 1

#define TLS_SSL2_HEADER 3              /* length (2, high bit set), msg_type */
#define TLS_SSL2_LENGTH_BIT 0x80
#define TLS_SSL2_CLIENT_HELLO 1

#define TLS_RANDOM_LEN 32
#define TLS_SESSION_ID_MAX 32
#define TLS_EXT_HEADER 4               /* type, length */
#define TLS_EXT_TYPES 65536            /* extension types, for the duplicate bitmap */
#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH 0xfe0d             /* encrypted_client_hello, RFC 9849 */
#define TLS_EXT_ESNI 0xffce            /* encrypted_server_name, draft */
#define TLS_SNI_ENTRY_HEADER 3         /* name_type, length (2) */
#define TLS_SNI_HOST_NAME 0

/* A bounded reader over a complete message: short means malformed, never "wait". */
struct tls_reader {
	const uint8_t *p;
	size_t left;
};

/* An error carries no name: what was found before it is not to be used. */
static void
tls_fail(struct tls_result *res, const char *why)
{
	res->unit = TLS_ERROR;
	res->reason = EGRESS_SNI_MALFORMED;
	res->why = why;
	res->has_sni = false;
	res->sni[0] = '\0';
	res->ech = false;
	res->raw = NULL;
	res->raw_len = 0;
}

/* An error in the host_name itself: raw points at its bytes for the receipt. */
static int
tls_fail_name(struct tls_result *res, const char *why, const uint8_t *p, size_t n)
{
	tls_fail(res, why);
	res->raw = p;
	res->raw_len = n;
	return -1;
}

static size_t
tls_u16(const uint8_t *p)
{
	return (size_t)p[0] << 8 | (size_t)p[1];
}

static size_t
tls_u24(const uint8_t *p)
{
	return (size_t)p[0] << 16 | (size_t)p[1] << 8 | (size_t)p[2];
}

static int
tls_take(struct tls_reader *r, size_t n, const uint8_t **out)
{
	if (r->left < n)
		return -1;
	if (out != NULL)
		*out = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

static int
tls_take_u8(struct tls_reader *r, size_t *v)
{
	const uint8_t *p;

	if (tls_take(r, 1, &p) == -1)
		return -1;
	*v = p[0];
	return 0;
}

static int
tls_take_u16(struct tls_reader *r, size_t *v)
{
	const uint8_t *p;

	if (tls_take(r, 2, &p) == -1)
		return -1;
	*v = tls_u16(p);
	return 0;
}

/* Takes n bytes as a reader of their own. */
static int
tls_take_sub(struct tls_reader *r, size_t n, struct tls_reader *sub)
{
	const uint8_t *p;

	if (tls_take(r, n, &p) == -1)
		return -1;
	sub->p = p;
	sub->left = n;
	return 0;
}

static bool
tls_ldh(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-';
}

/*
 * Judges the host_name bytes: LDH and dots only, no trailing dot, a name (not an address)
 * by host_parse. Returns 0 with res->sni set, or -1 with res an error pointing at them.
 */
static int
tls_host_name(const uint8_t *p, size_t n, struct tls_result *res)
{
	struct host h;
	const char *why = NULL;
	bool colon = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\0')
			return tls_fail_name(res, "NUL byte in server_name", p, n);
		if (p[i] < 0x20 || p[i] == 0x7f)
			return tls_fail_name(res, "control byte in server_name", p, n);
		if (p[i] >= 0x80)
			return tls_fail_name(res, "non-ASCII byte in server_name (A-labels only)",
			    p, n);
		if (p[i] == ':')
			colon = true;
		else if (!tls_ldh(p[i]) && p[i] != '.')
			return tls_fail_name(res, "character not allowed in server_name "
			    "(letters, digits, hyphen, dot)", p, n);
	}
	if (colon) {
		/* Only to say which: an IPv6 literal or just a stray colon. */
		if (host_parse((const char *)p, n, &h, &why) == 0 && h.kind == HOST_IPV6)
			return tls_fail_name(res, "IP literal in server_name", p, n);
		return tls_fail_name(res, "':' in server_name", p, n);
	}
	if (p[n - 1] == '.')
		return tls_fail_name(res, "trailing dot in server_name", p, n);
	if (host_parse((const char *)p, n, &h, &why) == -1)
		return tls_fail_name(res, why, p, n);
	if (h.kind != HOST_NAME)
		return tls_fail_name(res, "IP literal in server_name", p, n);
	memcpy(res->sni, h.name, sizeof(res->sni));
	res->has_sni = true;
	/* Keep the wire bytes only when they differ from what is reported. */
	if (memcmp(p, h.name, n) != 0) {
		res->raw = p;
		res->raw_len = n;
	}
	return 0;
}

/* The server_name extension (RFC 6066 s3), its data in r. */
static int
tls_server_name(struct tls_reader *r, struct tls_result *res)
{
	struct tls_reader list;
	const uint8_t *name, *host = NULL;
	size_t listlen, type, len, host_len = 0;

	if (tls_take_u16(r, &listlen) == -1) {
		tls_fail(res, "server_name extension shorter than its list length");
		return -1;
	}
	if (listlen != r->left) {
		tls_fail(res, listlen > r->left ? "server_name list longer than its extension" :
		    "trailing bytes in the server_name extension");
		return -1;
	}
	if (listlen == 0) {
		tls_fail(res, "empty server_name list");
		return -1;
	}
	(void)tls_take_sub(r, listlen, &list);
	/* Bound: each entry takes at least TLS_SNI_ENTRY_HEADER + 1 bytes of the list. */
	while (list.left > 0) {
		if (list.left < TLS_SNI_ENTRY_HEADER) {
			tls_fail(res, "truncated server_name entry");
			return -1;
		}
		(void)tls_take_u8(&list, &type);
		(void)tls_take_u16(&list, &len);
		if (len == 0) {
			tls_fail(res, "empty name in server_name");
			return -1;
		}
		if (tls_take(&list, len, &name) == -1) {
			tls_fail(res, "server_name entry longer than its list");
			return -1;
		}
		if (type != TLS_SNI_HOST_NAME)
			continue;       /* unknown name types are skipped, as Go does */
		if (host != NULL) {
			tls_fail(res, "two host names in server_name");
			return -1;
		}
		host = name;
		host_len = len;
	}
	/* Judged only once the list is known to be sound. */
	if (host != NULL)
		return tls_host_name(host, host_len, res);
	return 0;
}

/* The ClientHello body (after its 4-byte header), complete: len bytes at p. */
static int
tls_client_hello(const uint8_t *p, size_t len, struct tls_result *res)
{
	uint64_t seen[TLS_EXT_TYPES / 64];      /* extension types met, for duplicates */
	struct tls_reader r = { p, len }, exts, ext;
	const uint8_t *v;
	size_t n, type;

	if (tls_take(&r, 2, &v) == -1 || v[0] != TLS_VERSION_MAJOR) {
		tls_fail(res, "ClientHello legacy_version is not 3.x");
		return -1;
	}
	if (tls_take(&r, TLS_RANDOM_LEN, NULL) == -1) {
		tls_fail(res, "ClientHello shorter than its random");
		return -1;
	}
	if (tls_take_u8(&r, &n) == -1 || n > TLS_SESSION_ID_MAX ||
	    tls_take(&r, n, NULL) == -1) {
		tls_fail(res, "bad session_id length");
		return -1;
	}
	if (tls_take_u16(&r, &n) == -1 || n < 2 || n % 2 != 0 ||
	    tls_take(&r, n, NULL) == -1) {
		tls_fail(res, "bad cipher_suites length");
		return -1;
	}
	if (tls_take_u8(&r, &n) == -1 || n < 1 || tls_take(&r, n, NULL) == -1) {
		tls_fail(res, "bad compression_methods length");
		return -1;
	}
	if (r.left == 0)
		return 0;               /* no extensions: SSL 3.0 / TLS 1.2 style, no SNI */
	if (tls_take_u16(&r, &n) == -1) {
		tls_fail(res, "truncated extensions length");
		return -1;
	}
	if (n != r.left) {
		tls_fail(res, n > r.left ? "extensions longer than the ClientHello" :
		    "trailing bytes after the extensions");
		return -1;
	}
	(void)tls_take_sub(&r, n, &exts);

	memset(seen, 0, sizeof(seen));
	/* Bound: each extension takes at least TLS_EXT_HEADER bytes of the block. */
	while (exts.left > 0) {
		if (exts.left < TLS_EXT_HEADER) {
			tls_fail(res, "truncated extension header");
			return -1;
		}
		(void)tls_take_u16(&exts, &type);
		(void)tls_take_u16(&exts, &n);
		if (tls_take_sub(&exts, n, &ext) == -1) {
			tls_fail(res, "extension longer than the extensions block");
			return -1;
		}
		if (seen[type / 64] & (UINT64_C(1) << (type % 64))) {
			tls_fail(res, "duplicate extension");
			return -1;
		}
		seen[type / 64] |= UINT64_C(1) << (type % 64);
		switch (type) {
		case TLS_EXT_SERVER_NAME:
			if (tls_server_name(&ext, res) == -1)
				return -1;
			break;
		case TLS_EXT_ECH:
		case TLS_EXT_ESNI:
			res->ech = true;
			break;
		default:
			break;
		}
	}
	return 0;
}

/*
 * Checks as much of the record header at p as the have bytes show, in wire order, so that
 * garbage is refused at once. in_hello: the record continues a ClientHello. Returns 1 when
 * the header is complete and sound (*type, *rlen set), 0 when bytes are missing, -1 on
 * error (res set).
 */
static int
tls_record_header(const uint8_t *p, size_t have, bool in_hello, struct tls_result *res,
    uint8_t *type, size_t *rlen)
{
	size_t max;

	if (have < 1)
		return 0;
	if (in_hello && p[0] != TLS_CT_HANDSHAKE) {
		tls_fail(res, "record of another type inside a ClientHello");
		return -1;
	}
	if (have < 2)
		return 0;
	if (p[1] != TLS_VERSION_MAJOR) {
		tls_fail(res, "record version is not 3.x");
		return -1;
	}
	if (have < 3)
		return 0;
	if (p[2] > TLS_VERSION_MINOR_MAX) {
		tls_fail(res, "record version above 3.4");
		return -1;
	}
	if (have < TLS_RECORD_HEADER)
		return 0;
	*type = p[0];
	*rlen = tls_u16(p + 3);
	switch (*type) {
	case TLS_CT_HANDSHAKE:
		if (*rlen == 0) {
			tls_fail(res, "empty handshake record");
			return -1;
		}
		max = EGRESS_TLS_RECORD_MAX;
		break;
	case TLS_CT_CHANGE_CIPHER_SPEC:
		if (*rlen != TLS_CCS_LEN) {
			tls_fail(res, "ChangeCipherSpec record is not one byte");
			return -1;
		}
		max = TLS_CCS_LEN;
		break;
	default:
		max = TLS_CIPHERTEXT_MAX;       /* may be ciphertext */
		break;
	}
	if (*rlen > max) {
		tls_fail(res, "record longer than the record layer allows");
		return -1;
	}
	return 1;
}

/* The first byte is not a TLS content type: not TLS, or an SSLv2-format hello. */
static void
tls_not_tls(const uint8_t *buf, size_t len, struct tls_result *res)
{
	if (buf[0] & TLS_SSL2_LENGTH_BIT) {
		if (len < TLS_SSL2_HEADER)
			return;         /* NEED_MORE */
		if (buf[2] == TLS_SSL2_CLIENT_HELLO) {
			tls_fail(res, "SSLv2 hello");
			return;
		}
	}
	res->unit = TLS_NOT_TLS;
}

static const char *
tls_before_hello(uint8_t type)
{
	switch (type) {
	case TLS_CT_ALERT:
		return "alert before the ClientHello";
	case TLS_CT_APPLICATION_DATA:
		return "application data before the ClientHello";
	case TLS_CT_HEARTBEAT:
		return "heartbeat before the ClientHello";
	default:
		return "record of another type before the ClientHello";
	}
}

/*
 * The start of a stream: is it TLS, and where does its first handshake record begin after
 * the ChangeCipherSpec records before it? Returns 1 with *skip set (a byte of that record
 * is in buf), 0 when bytes are missing (res NEED_MORE), -1 when res says the answer
 * (NOT_TLS or an error).
 */
static int
tls_first(const uint8_t *buf, size_t len, struct tls_result *res, size_t *skip)
{
	size_t off = 0, rlen;
	uint8_t type;
	int r;

	if (buf[0] < TLS_CT_FIRST || buf[0] > TLS_CT_LAST) {
		tls_not_tls(buf, len, res);
		return res->unit == TLS_NEED_MORE ? 0 : -1;
	}
	if (buf[0] != TLS_CT_HANDSHAKE) {
		if (len < 2)
			return 0;
		if (buf[1] != TLS_VERSION_MAJOR) {
			res->unit = TLS_NOT_TLS;
			return -1;
		}
	}
	/* Bound: every pass moves off past a whole CCS record (6 bytes of buf) or returns. */
	for (;;) {
		if (len - off < 1)
			return 0;
		if (buf[off] == TLS_CT_HANDSHAKE) {
			*skip = off;
			return 1;
		}
		if (buf[off] != TLS_CT_CHANGE_CIPHER_SPEC) {
			tls_fail(res, tls_before_hello(buf[off]));
			return -1;
		}
		r = tls_record_header(buf + off, len - off, false, res, &type, &rlen);
		if (r <= 0)
			return r;
		if (len - off < TLS_RECORD_HEADER + TLS_CCS_LEN)
			return 0;
		if (buf[off + TLS_RECORD_HEADER] != TLS_CCS_VALUE) {
			tls_fail(res, "ChangeCipherSpec value is not 1");
			return -1;
		}
		off += TLS_RECORD_HEADER + TLS_CCS_LEN;
	}
}

void
tls_scan(const uint8_t *buf, size_t len, bool first, uint8_t *scratch,
    size_t scratch_len, struct tls_result *res)
{
	uint8_t hs[TLS_HS_HEADER];  /* the handshake header, gathered across records */
	size_t nhs = 0;             /* bytes of hs known */
	size_t total = 0;           /* header + body of the message, once nhs is 4 */
	size_t got = 0;             /* message bytes in the complete records walked */
	size_t off = 0;             /* where the current record starts in buf */
	size_t skip = 0;            /* first call: the CCS records before the hello */
	size_t rlen = 0, avail, i;
	uint8_t type = 0;
	int r;

	memset(res, 0, sizeof(*res));
	res->unit = TLS_NEED_MORE;
	if (len == 0)
		return;
	if (first) {
		if (tls_first(buf, len, res, &skip) <= 0)
			return;
		/* The hello's records are walked from here; its unit covers the CCS too. */
		buf += skip;
		len -= skip;
	}

	/*
	 * Walks the records that carry the message. Bound: every pass either returns or
	 * moves off past a whole record of at least TLS_RECORD_HEADER + 1 bytes of buf.
	 */
	for (;;) {
		r = tls_record_header(buf + off, len - off, off > 0, res, &type, &rlen);
		if (r <= 0)
			return;
		if (off == 0 && type != TLS_CT_HANDSHAKE) {
			if (type != TLS_CT_CHANGE_CIPHER_SPEC) {
				res->unit = TLS_END;
				return;
			}
			if (len < TLS_RECORD_HEADER + TLS_CCS_LEN)
				return;
			if (buf[TLS_RECORD_HEADER] != TLS_CCS_VALUE) {
				tls_fail(res, "ChangeCipherSpec value is not 1");
				return;
			}
			res->unit = TLS_PASS;
			res->len = TLS_RECORD_HEADER + TLS_CCS_LEN;
			return;
		}
		avail = len - off - TLS_RECORD_HEADER;
		if (avail > rlen)
			avail = rlen;
		/* Message bytes got.. are at the start of this record. */
		while (nhs < TLS_HS_HEADER && nhs - got < avail) {
			hs[nhs] = buf[off + TLS_RECORD_HEADER + (nhs - got)];
			nhs++;
		}
		if (nhs >= 1 && hs[0] != TLS_HS_CLIENT_HELLO) {
			if (first)
				tls_fail(res, "first handshake message is not a ClientHello");
			else
				res->unit = TLS_END;
			return;
		}
		if (nhs == TLS_HS_HEADER) {
			if (tls_u24(hs + 1) > EGRESS_TLS_HELLO_MAX) {
				tls_fail(res, "oversized ClientHello");
				return;
			}
			total = TLS_HS_HEADER + tls_u24(hs + 1);
			if (got + rlen > total) {
				tls_fail(res, "ClientHello coalesced with another message");
				return;
			}
		}
		if (avail < rlen)
			return;
		got += rlen;
		off += TLS_RECORD_HEADER + rlen;
		if (nhs == TLS_HS_HEADER && got == total)
			break;
	}

	if (off == TLS_RECORD_HEADER + total) {
		r = tls_client_hello(buf + TLS_RECORD_HEADER + TLS_HS_HEADER,
		    total - TLS_HS_HEADER, res);
	} else {
		/* Spanning records: reassembled into the caller's scratch. */
		if (scratch == NULL || scratch_len < total) {
			tls_fail(res, "ClientHello larger than the scratch buffer");
			return;
		}
		for (i = 0, got = 0; got < total; i += TLS_RECORD_HEADER + rlen) {
			rlen = tls_u16(buf + i + 3);
			memcpy(scratch + got, buf + i + TLS_RECORD_HEADER, rlen);
			got += rlen;
		}
		r = tls_client_hello(scratch + TLS_HS_HEADER, total - TLS_HS_HEADER, res);
	}
	if (r == -1)
		return;
	res->unit = TLS_HELLO;
	res->len = skip + off;
}

/*
 * HelloRetryRequest (RFC 8446 s4.1.3) is a ServerHello whose random is this constant.
 * The guard reads the server's first 43 bytes (record header, handshake header, version,
 * random) to know whether a second ClientHello is legitimate; only then does it inspect
 * one, so that an encrypted TLS 1.2 Finished is never mistaken for a hello.
 */
static const uint8_t tls_hrr_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65,
	0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2,
	0xc8, 0xa8, 0x33, 0x9c,
};

int
tls_server_hrr(const uint8_t *buf, size_t len)
{
	/* type, version (2), length (2), msg_type, length (3), legacy_version (2), random */
	if (len >= 1 && buf[0] != 0x16)
		return 0;
	if (len >= 6 && buf[5] != 0x02)       /* not a ServerHello */
		return 0;
	if (len < EGRESS_TLS_SERVER_HEAD)
		return -1;
	return memcmp(buf + 11, tls_hrr_random, sizeof(tls_hrr_random)) == 0;
}
