/*
 * dnswire.h: the part of the DNS wire format (RFC 1035) the sandbox's stub resolver needs:
 * one query's header and question in, one answer out. Pure, bounded, allocation-free; the
 * input is whatever a program in the sandbox sent, trusted for nothing.
 */
#ifndef EGRESS_DNSWIRE_H
#define EGRESS_DNSWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNSWIRE_HEADER 12            /* id, flags, four counts */
#define DNSWIRE_MAX_LABEL 63         /* RFC 1035 2.3.4 */
#define DNSWIRE_MAX_NAME 255         /* wire octets of a name, the root's 0 included */
#define DNSWIRE_MAX_TEXT 254         /* text form: at most 253 octets and a NUL */
/* Header, question (name, type, class) and one A record by pointer (2+2+2+4+2+4). */
#define DNSWIRE_ANSWER_MAX (DNSWIRE_HEADER + DNSWIRE_MAX_NAME + 4 + 16)

#define DNSWIRE_TYPE_A 1
#define DNSWIRE_CLASS_IN 1
#define DNSWIRE_OPCODE_QUERY 0

#define DNSWIRE_NOERROR 0
#define DNSWIRE_FORMERR 1
#define DNSWIRE_SERVFAIL 2
#define DNSWIRE_NXDOMAIN 3
#define DNSWIRE_NOTIMP 4
#define DNSWIRE_REFUSED 5

enum dnswire_status {
	DNSWIRE_QUERY,               /* one question: ask egressd about q->text, q->qtype */
	DNSWIRE_ERROR,               /* answer at once with q->rcode (dnswire_answer) */
	DNSWIRE_DROP,                /* no answer: shorter than a header, or a response */
};

struct dnswire_query {
	uint16_t id;
	uint8_t opcode;              /* 0..15 */
	bool rd;                     /* recursion desired, echoed */
	bool has_question;           /* the question below was read and is echoed */
	uint8_t rcode;               /* DNSWIRE_ERROR: the rcode to answer with */
	uint16_t qtype;
	uint16_t qclass;
	uint8_t wire[DNSWIRE_MAX_NAME];   /* the question's name as sent (case kept) */
	size_t wirelen;
	/*
	 * Text form for egressd: labels joined by '.', ASCII letters in lower case (names
	 * compare without case), no trailing dot. Empty for the root. text_ok is false when
	 * the name has no text form that means the same name (a label with '.' or NUL in
	 * it, or the root): the stub answers NXDOMAIN itself.
	 */
	char text[DNSWIRE_MAX_TEXT];
	size_t textlen;
	bool text_ok;
};

/*
 * Reads one query of len bytes (a UDP datagram, or a TCP message without its length).
 * Opcodes other than QUERY: ERROR with NOTIMP; not exactly one question, a name with a
 * compression pointer or a reserved label type, a label or name over its bound, a
 * question cut short: ERROR with FORMERR; a class other than IN: ERROR with REFUSED
 * (question kept). Whatever follows the question (an EDNS OPT record...) is ignored.
 */
enum dnswire_status dnswire_parse(const uint8_t *buf, size_t len, struct dnswire_query *q);

/*
 * Writes the answer to q into out (at least DNSWIRE_ANSWER_MAX bytes): q's id, opcode and
 * RD, QR and RA set, rcode; q's question when it has one; one A record (ttl, addr4)
 * when addr4 is not NULL, rcode is NOERROR and the question is type A, class IN. Never
 * an OPT record. Returns the length.
 */
size_t dnswire_answer(const struct dnswire_query *q, uint8_t rcode, const uint8_t *addr4,
    uint32_t ttl, uint8_t out[DNSWIRE_ANSWER_MAX]);

#endif
