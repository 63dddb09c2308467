/*
 * fuzz_fd4.c: libFuzzer target for egress-broker's request datagram validation
 * (fd4_parse_request). Beyond not crashing: an accepted datagram has a port, a host of
 * exactly the announced length without NUL, and rebuilding it from the parsed fields
 * gives the same bytes; a refusal is always malformed-request.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fd4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fd4_request req;
	uint8_t again[EGRESS_FD4_REQUEST_MAX];
	int r = fd4_parse_request(data, size, &req);

	if (r != 0) {
		if (r != EGRESS_MALFORMED_REQUEST)
			abort();
		return 0;
	}
	if (size > EGRESS_FD4_REQUEST_MAX || req.port == 0 || req.hostlen == 0 ||
	    strlen(req.host) != req.hostlen || !req.has_id)
		abort();
	fd4_reply(req.id, 0, again);    /* magic and id, as a reply would carry them */
	if (memcmp(again, data, 8) != 0)
		abort();
	again[8] = (uint8_t)(req.timeout_ms >> 24);
	again[9] = (uint8_t)(req.timeout_ms >> 16);
	again[10] = (uint8_t)(req.timeout_ms >> 8);
	again[11] = (uint8_t)req.timeout_ms;
	again[12] = (uint8_t)(req.port >> 8);
	again[13] = (uint8_t)req.port;
	again[14] = req.hostlen;
	memcpy(again + EGRESS_FD4_REQUEST_HEAD, req.host, req.hostlen);
	if ((size_t)EGRESS_FD4_REQUEST_HEAD + req.hostlen != size || memcmp(again, data, size) != 0)
		abort();
	return 0;
}
