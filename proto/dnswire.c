/*
 * dnswire.c: one DNS query in, one answer out, for the sandbox's stub resolver
 * (launcher/dnsstub.c). The bytes come from any program in the sandbox and are trusted
 * for nothing: every read is checked against len, every name against the RFC 1035 bounds
 * (63 per label, 255 in all), and no compression pointer is followed (a question has no
 * earlier name to point to, so a pointer there is malformed: FORMERR). Nothing after the
 * question is read: an EDNS OPT record in the additional section is ignored, and the
 * answer carries none, which RFC 6891 section 7 allows a responder that does not do EDNS,
 * and which costs nothing here: an answer is at most DNSWIRE_ANSWER_MAX (287) bytes,
 * under the 512 every client accepts without EDNS.
 */
#include "config.h"

#include <string.h>

#include "dnswire.h"

static uint16_t
dnswire_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void
dnswire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * The name at buf[off..len): copied in wire form to q->wire and in text form to q->text.
 * Returns the offset after it, or 0 when it is malformed.
 */
static size_t
dnswire_name(const uint8_t *buf, size_t len, size_t off, struct dnswire_query *q)
{
	size_t start = off;

	q->textlen = 0;
	q->text_ok = true;
	/* Each turn consumes at least one byte and off - start stays under 255: bounded. */
	for (;;) {
		uint8_t l;

		if (off >= len)
			return 0;
		l = buf[off];
		if ((l & 0xc0) != 0)     /* a pointer (11) or a reserved type (01, 10) */
			return 0;
		if (off - start + 1 + l > DNSWIRE_MAX_NAME)
			return 0;
		if (l == 0)
			break;
		if (off + 1 + l > len)
			return 0;
		if (q->textlen > 0)
			q->text[q->textlen++] = '.';
		for (size_t i = 0; i < l; i++) {
			uint8_t c = buf[off + 1 + i];

			if (c == '.' || c == '\0')
				q->text_ok = false;
			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			/* 255 wire octets make at most 253 text octets: always room. */
			q->text[q->textlen++] = (char)c;
		}
		off += 1 + (size_t)l;
	}
	off++;
	q->wirelen = off - start;
	memcpy(q->wire, buf + start, q->wirelen);
	q->text[q->textlen] = '\0';
	if (q->textlen == 0)
		q->text_ok = false;
	return off;
}

enum dnswire_status
dnswire_parse(const uint8_t *buf, size_t len, struct dnswire_query *q)
{
	size_t off;

	memset(q, 0, sizeof(*q));
	if (len < DNSWIRE_HEADER || (buf[2] & 0x80) != 0)
		return DNSWIRE_DROP;     /* no id to answer with, or a response: never answered */
	q->id = dnswire_get16(buf);
	q->opcode = (uint8_t)((buf[2] >> 3) & 0x0f);
	q->rd = (buf[2] & 0x01) != 0;
	if (q->opcode != DNSWIRE_OPCODE_QUERY) {
		q->rcode = DNSWIRE_NOTIMP;
		return DNSWIRE_ERROR;
	}
	q->rcode = DNSWIRE_FORMERR;
	if (dnswire_get16(buf + 4) != 1 || dnswire_get16(buf + 6) != 0 ||
	    dnswire_get16(buf + 8) != 0)
		return DNSWIRE_ERROR;
	if ((off = dnswire_name(buf, len, DNSWIRE_HEADER, q)) == 0 || len - off < 4) {
		q->wirelen = 0;
		return DNSWIRE_ERROR;
	}
	q->qtype = dnswire_get16(buf + off);
	q->qclass = dnswire_get16(buf + off + 2);
	q->has_question = true;
	if (q->qclass != DNSWIRE_CLASS_IN) {
		q->rcode = DNSWIRE_REFUSED;
		return DNSWIRE_ERROR;
	}
	q->rcode = DNSWIRE_NOERROR;
	return DNSWIRE_QUERY;
}

size_t
dnswire_answer(const struct dnswire_query *q, uint8_t rcode, const uint8_t *addr4,
    uint32_t ttl, uint8_t out[DNSWIRE_ANSWER_MAX])
{
	bool a = addr4 != NULL && rcode == DNSWIRE_NOERROR && q->has_question &&
	    q->qtype == DNSWIRE_TYPE_A && q->qclass == DNSWIRE_CLASS_IN;
	size_t off = DNSWIRE_HEADER;

	dnswire_put16(out, q->id);
	out[2] = (uint8_t)(0x80 | (q->opcode << 3) | (q->rd ? 0x01 : 0));
	out[3] = (uint8_t)(0x80 | (rcode & 0x0f));   /* RA: the stub asks on the client's behalf */
	dnswire_put16(out + 4, q->has_question ? 1 : 0);
	dnswire_put16(out + 6, a ? 1 : 0);
	dnswire_put16(out + 8, 0);
	dnswire_put16(out + 10, 0);
	if (q->has_question) {
		memcpy(out + off, q->wire, q->wirelen);
		off += q->wirelen;
		dnswire_put16(out + off, q->qtype);
		dnswire_put16(out + off + 2, q->qclass);
		off += 4;
	}
	if (a) {
		dnswire_put16(out + off, 0xc000 | DNSWIRE_HEADER);   /* the question's name */
		dnswire_put16(out + off + 2, DNSWIRE_TYPE_A);
		dnswire_put16(out + off + 4, DNSWIRE_CLASS_IN);
		dnswire_put16(out + off + 6, (uint16_t)(ttl >> 16));
		dnswire_put16(out + off + 8, (uint16_t)ttl);
		dnswire_put16(out + off + 10, 4);
		memcpy(out + off + 12, addr4, 4);
		off += 16;
	}
	return off;
}
