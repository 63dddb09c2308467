/*
 * fuzz_native.c: libFuzzer target for the EGR1 native framing, every verb (connect, the
 * DNS question, and the transparent connect). Beyond not crashing: consumed never exceeds the input, an accepted
 * host re-parses to itself, a connect (either kind) has a port and no qtype and a
 * question the reverse, every prefix of an accepted request asks for more, a refusal always has a
 * reason, and an answer built for what was parsed is well formed.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct native_request req, again;
	struct proto_error err;
	size_t consumed = 0, c2;
	enum proto_status st = native_parse(data, size, &consumed, &req, &err);
	const char *why;

	uint8_t out[EGRESS_NATIVE_ANSWER];

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
	if (host_parse(req.host.name, strlen(req.host.name), &again.host, &why) == -1 ||
	    strcmp(again.host.name, req.host.name) != 0)
		abort();
	for (size_t cut = 0; cut < consumed; cut += 1 + cut / 8)
		if (native_parse(data, cut, &c2, &again, &err) != PROTO_NEED_MORE)
			abort();
	return 0;
}
