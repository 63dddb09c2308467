/*
 * fuzz_native.c: libFuzzer target for the EGR1 native framing (proto/native.c), every
 * verb (connect, the DNS question, and the transparent connect), both directions. Beyond
 * not crashing: consumed never exceeds the input, an accepted host re-parses to itself,
 * a connect (either kind) has a port and no qtype and a question the reverse, every
 * prefix of an accepted request asks for more, a refusal always has a reason, an answer
 * built for what was parsed is well formed and decodes, and the request the clients'
 * builder writes for what was parsed parses back to the same request. The input read as
 * a reply or an answer decodes within bounds.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "native.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct native_request req, again;
	struct proto_error err;
	size_t consumed = 0, c2;
	enum proto_status st = native_parse(data, size, &consumed, &req, &err);
	const char *why;

	uint8_t out[EGRESS_NATIVE_ANSWER], built[EGRESS_NATIVE_REQUEST_MAX];
	struct native_answer ans;
	int32_t code;
	size_t blen;

	/* The clients' decoders read what egressd sent: any bytes, within bounds. */
	if (size >= EGRESS_NATIVE_REPLY)
		(void)native_reply_parse(data, &code);
	if (size >= EGRESS_NATIVE_ANSWER && native_answer_parse(data, &ans) == 0 &&
	    ans.count > 1)
		abort();
	if (st == PROTO_ERROR && (err.why == NULL || err.reason == EGRESS_ALLOWED))
		abort();
	if (st == PROTO_ERROR && req.verb == EGRESS_NATIVE_QUESTION && err.has_port)
		abort();
	if (st != PROTO_OK)
		return 0;
	if (consumed > size || consumed < EGRESS_NATIVE_HEAD)
		abort();
	/* connect and transparent connect carry a port, a question a qtype. */
	if (req.verb == EGRESS_NATIVE_CONNECT || req.verb == EGRESS_NATIVE_TRANSPARENT ?
	    req.port == 0 || req.qtype != 0 :
	    req.verb != EGRESS_NATIVE_QUESTION || req.qtype == 0 || req.port != 0)
		abort();
	if (native_answer(EGRESS_ALLOWED, &req.host.addr, 1, out) != EGRESS_NATIVE_ANSWER ||
	    out[9] != (req.host.kind == HOST_IPV4))
		abort();
	if (native_answer_parse(out, &ans) != 0 || ans.code != 0 || ans.count != out[9])
		abort();
	blen = native_request_build(req.verb, req.verb == EGRESS_NATIVE_QUESTION ? req.qtype :
	    req.port, req.host.name, strlen(req.host.name), built);
	if (blen == 0 || native_parse(built, blen, &c2, &again, &err) != PROTO_OK ||
	    c2 != blen || again.verb != req.verb || again.port != req.port ||
	    again.qtype != req.qtype || strcmp(again.host.name, req.host.name) != 0)
		abort();
	if (host_parse(req.host.name, strlen(req.host.name), &again.host, &why) == -1 ||
	    strcmp(again.host.name, req.host.name) != 0)
		abort();
	for (size_t cut = 0; cut < consumed; cut += 1 + cut / 8)
		if (native_parse(data, cut, &c2, &again, &err) != PROTO_NEED_MORE)
			abort();
	return 0;
}
