/*
 * control.h: egressd's control protocol (egress/control.c serves it; egressctl and
 * egress-run speak it through common/ctlclient.c). One JSON object per line each way:
 *
 *   {"verb":"status"}
 *   {"verb":"principal-add","name":N,"policy":FILE,"owner":"UID:GID","peer_uid":U,"lease":B}
 *   {"verb":"principal-remove","name":N}
 *   {"verb":"principal-list"}
 *   {"verb":"metrics"}                        -> {"ok":true,"text":"<Prometheus text>"}
 *   {"verb":"lease","policy":NAME}            (also on the lease socket)
 *   {"verb":"summary"[,"name":N]}             a lease's destinations (also on the lease socket)
 *
 * Answers are {"ok":true,...} or {"ok":false,"error":"..."}.
 */
#ifndef EGRESS_PROTO_CONTROL_H
#define EGRESS_PROTO_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define CTLPROTO_REQUEST_MAX 8192        /* one request line */
#define CTLPROTO_REPLY_MAX (1 << 20)     /* one reply line (a summary is at most ~90 KB) */

enum ctlproto_verb {
	CTLPROTO_STATUS,
	CTLPROTO_PRINCIPAL_ADD,
	CTLPROTO_PRINCIPAL_REMOVE,
	CTLPROTO_PRINCIPAL_LIST,
	CTLPROTO_METRICS,
	CTLPROTO_LEASE,
	CTLPROTO_SUMMARY,
	CTLPROTO_DEBUG,                  /* test builds only (--enable-debug): engine probes */
	CTLPROTO_UNKNOWN,                /* a verb string this protocol does not have */
};

const char *ctlproto_verb_name(enum ctlproto_verb v);
/* Whether the lease socket serves v (lease and summary); the control socket serves all. */
bool ctlproto_lease_socket(enum ctlproto_verb v);

/* {"verb":NAME}, for the caller to add the verb's members to. */
json_t *ctlproto_request(enum ctlproto_verb v);
/* {"ok":false,"error":msg}. */
json_t *ctlproto_error(const char *msg);
/* o as one line with its newline (free(3) it); takes o's reference. NULL on failure. */
char *ctlproto_encode(json_t *o, size_t *len);

/*
 * A request line (without its newline): the object and its verb (CTLPROTO_UNKNOWN for a
 * verb string it does not know), or NULL with *err saying what the client got wrong.
 */
json_t *ctlproto_decode_request(const char *line, size_t len, enum ctlproto_verb *verb,
    const char **err);
/* A reply line (without its newline): the object, or NULL with jansson's words in err. */
json_t *ctlproto_decode_reply(const char *line, size_t len, char *err, size_t errlen);
/* Whether egressd said ok; if not, *error is its error member (or NULL). */
bool ctlproto_reply_ok(json_t *reply, const char **error);

#endif
