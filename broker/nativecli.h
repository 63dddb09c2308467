/*
 * nativecli.h: the client side of egressd's native connector (EGR1, docs/native.md), for
 * egress-broker (over the principal socket) and egress-connect (over egress-relay).
 */
#ifndef EGRESS_NATIVECLI_H
#define EGRESS_NATIVECLI_H

#include <stdint.h>

/*
 * Sends the EGR1 request for host:port on the connected stream fd and reads exactly the
 * 8-byte reply (never a byte of the tunnel after it) within timeout_ms. Returns 0
 * (allowed: fd is now the tunnel) or a libegress code: egressd's, else
 * EGRESS_ERR_HANDSHAKE_TIMEOUT when no reply came in time, EGRESS_ERR_SHUTDOWN when the
 * connection failed, closed early or answered something that is not EGR1.
 */
int nativecli_handshake(int fd, const char *host, uint16_t port, int timeout_ms);

/*
 * The DNS question verb (docs/native.md), as the sandbox's stub resolver speaks it over
 * its own non-blocking connections: nativecli_question writes the question for qname
 * (text form, 1..255 octets) and qtype (not 0) and returns its length, or 0 when either
 * is out of range; nativecli_answer_parse reads the 18-byte answer, 0 when it is one
 * (magic EGR1, count 0 or 1), -1 otherwise.
 */
#define NATIVECLI_QUESTION_MAX (9 + 255)
#define NATIVECLI_ANSWER 18
struct nativecli_answer {
	int32_t code;                /* 0, or a libegress code */
	uint8_t rcode;               /* the DNS rcode to answer with */
	uint8_t count;               /* 0 or 1: addr and ttl are the A record */
	uint32_t ttl;
	uint8_t addr[4];
};
size_t nativecli_question(uint16_t qtype, const char *qname, size_t qnamelen,
    uint8_t out[NATIVECLI_QUESTION_MAX]);
int nativecli_answer_parse(const uint8_t in[NATIVECLI_ANSWER], struct nativecli_answer *a);

#endif
