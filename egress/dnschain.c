/*
 * dnschain.c: the CNAME records of an answer, checked before any of its names may be
 * judged by the deny rules. Pure: no I/O, no allocation, bounded by EGRESSD_MAX_CNAMES.
 *
 * Trust: nothing. The owner and target names come from the resolver's answer (c-ares
 * decodes the wire form; 1.18 keeps every CNAME record of the answer section in answer
 * order, checks neither owner names nor order, and gives no owner for address records).
 * Every check here fails closed: a record that does not continue the chain, a name that
 * is not canonical, or a chain longer than the bound refuses the whole answer, because a
 * deny rule checked against a part of the chain is not checked at all (a 9-link chain
 * whose 9th name is denied would otherwise pass).
 */
#include "config.h"

#include <string.h>

#include "egressd.h"

/* The bound spelled in the refusal, so that the log line names the number in force. */
#define DNS_CHAIN_STR(x) #x
#define DNS_CHAIN_XSTR(x) DNS_CHAIN_STR(x)

void
dns_chain_init(struct dns_chain *ch, const char *qname)
{
	memset(ch, 0, sizeof(*ch));
	ch->qname = qname;
}

/* The canonical form of a name of the answer, or -1: only a name host_parse accepts. */
static int
dns_chain_name(const char *s, struct host *h)
{
	const char *why;
	size_t len = s != NULL ? strnlen(s, EGRESS_HOST_MAX + 2) : 0;

	/* A longer text is not cut to fit: the cut name is not the one that was resolved. */
	if (len == 0 || len > EGRESS_HOST_MAX + 1)
		return -1;
	if (host_parse(s, len, h, &why) == -1 || h->kind != HOST_NAME)
		return -1;
	return 0;
}

int
dns_chain_link(struct dns_chain *ch, struct dns_answer *ans, const char *owner,
    const char *target, const char **why)
{
	struct host o, t;
	size_t i;

	if (dns_chain_name(owner, &o) == -1) {
		*why = "CNAME owner is not a valid name";
		return -1;
	}
	if (dns_chain_name(target, &t) == -1) {
		*why = "CNAME target is not a valid name";
		return -1;
	}
	/*
	 * c-ares reads the A answer and the AAAA answer into one list, one chain after the
	 * other: a record owned by the name asked begins a chain, every other record must
	 * be owned by the previous record's target. Anything else is a record of no chain
	 * (or a chain out of order) and its owner would escape the deny rules.
	 */
	if (strcmp(o.name, ch->qname) == 0)
		ch->links = 0;
	else if (ch->tail[0] == '\0' || strcmp(o.name, ch->tail) != 0) {
		*why = "CNAME record outside the chain from the name asked";
		return -1;
	}
	if (++ch->links > EGRESSD_MAX_CNAMES) {
		*why = "CNAME chain longer than " DNS_CHAIN_XSTR(EGRESSD_MAX_CNAMES) " links";
		return -1;
	}
	memcpy(ch->tail, t.name, sizeof(ch->tail));
	for (i = 0; i < ans->ncnames; i++)
		if (strcmp(ans->cnames[i], t.name) == 0)
			return 0;   /* the AAAA answer's chain repeats the A answer's */
	if (ans->ncnames == EGRESSD_MAX_CHAIN_NAMES) {
		/* Only a resolver that restarts the chain over and over gets here. */
		*why = "more CNAME targets than egressd keeps";
		return -1;
	}
	memcpy(ans->cnames[ans->ncnames++], t.name, sizeof(ans->cnames[0]));
	return 0;
}
