/*
 * fuzz_fd4.c: libFuzzer target for EGF1 (proto/fd4.c): egress-broker's request datagram
 * validation (fd4_parse_request) and libegress's reply parser. Beyond not crashing: an
 * accepted datagram has a port, a host of exactly the announced length without NUL, and
 * libegress's builder (fd4_request_build) given the parsed fields writes the same bytes;
 * a refusal is always malformed-request; a reply parses only at its size with its magic.
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
	uint8_t again[FD4_REQUEST_MAX];
	int r = fd4_parse_request(data, size, &req);
	uint32_t id;
	int32_t code;

	/* The input as a reply, as libegress reads one: 12 bytes with the magic, or nothing. */
	if (fd4_reply_parse(data, size, &id, &code) == 0 &&
	    (size != FD4_REPLY_LEN || memcmp(data, FD4_MAGIC, FD4_MAGIC_LEN) != 0))
		abort();
	if (r != 0) {
		if (r != EGRESS_MALFORMED_REQUEST)
			abort();
		return 0;
	}
	if (size > FD4_REQUEST_MAX || req.port == 0 || req.hostlen == 0 ||
	    strlen(req.host) != req.hostlen || !req.has_id)
		abort();
	/* libegress's builder writes exactly these bytes for what was parsed */
	if (fd4_request_build(req.id, req.timeout_ms, req.port, req.host, req.hostlen, again) !=
	    size || memcmp(again, data, size) != 0)
		abort();
	/* and a reply built for it parses back to its id */
	fd4_reply(req.id, -1003, again);
	if (fd4_reply_parse(again, FD4_REPLY_LEN, &id, &code) != 0 || id != req.id ||
	    code != -1003)
		abort();
	return 0;
}
