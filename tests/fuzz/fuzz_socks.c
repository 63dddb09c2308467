/*
 * fuzz_socks.c: libFuzzer target for the SOCKS frontends (proto/socks.c): one SOCKS4/4a
 * request, and SOCKS5 conversations. Properties checked, beyond not crashing and not
 * reading past the input (ASan):
 *  - consumed never exceeds what was given, a reply is at most 10 bytes, an OK step
 *    consumes something, an ERROR carries a why;
 *  - an accepted host re-parses to itself;
 *  - a SOCKS5 conversation ends the same way, with the same replies and the same bytes
 *    left over, whether the input comes all at once or one byte at a time;
 *  - the request stage and the RFC 1929 stage are also run on the input directly, so the
 *    fuzzer need not first find a valid greeting.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socks.h"

#define FUZZ_STEPS_MAX 4            /* greeting, auth, request, and one more refused */
#define FUZZ_OUT_MAX (FUZZ_STEPS_MAX * 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_check_host(const struct socks_request *req)
{
	struct host h;
	const char *why = NULL;

	if (host_parse(req->host.name, strlen(req->host.name), &h, &why) == -1 ||
	    strcmp(h.name, req->host.name) != 0 || h.kind != req->host.kind) {
		fprintf(stderr, "host '%s' does not re-parse to itself\n", req->host.name);
		abort();
	}
	if (h.kind != HOST_NAME && !addr_equal(&h.addr, &req->host.addr))
		abort();
}

struct fuzz_conv {
	enum proto_status status;
	enum socks5_stage stage;
	uint8_t out[FUZZ_OUT_MAX];
	size_t outlen;
	size_t used;                /* bytes of the input the conversation took */
	struct socks_request req;
};

/* Feeds data in pieces of step bytes (0: all at once), as the daemon would. */
static void
fuzz_conversation(const uint8_t *data, size_t size, size_t step, struct fuzz_conv *c)
{
	struct socks5 s = { SOCKS5_GREETING };
	struct proto_error err;
	uint8_t reply[10];
	size_t have = step == 0 ? size : (step < size ? step : size), consumed, replylen;
	unsigned steps = 0;

	memset(c, 0, sizeof(*c));
	for (;;) {
		c->status = socks5_step(&s, data + c->used, have - c->used, &consumed, reply,
		    &replylen, &c->req, &err);
		if (consumed > have - c->used || replylen > 10)
			abort();
		if (++steps > size + FUZZ_STEPS_MAX + 1)
			abort();
		if (c->status == PROTO_OK) {
			if (consumed == 0 || c->outlen / 10 >= FUZZ_STEPS_MAX)
				abort();
			memcpy(c->out + c->outlen, reply, replylen);
			c->outlen += replylen;
			c->used += consumed;
			if (s.stage == SOCKS5_DONE) {
				if (replylen != 0 || c->req.version != 5)
					abort();
				fuzz_check_host(&c->req);
				break;
			}
			continue;
		}
		if (c->status == PROTO_ERROR) {
			if (err.why == NULL)
				abort();
			memcpy(c->out + c->outlen, reply, replylen);
			c->outlen += replylen;
			break;
		}
		if (consumed != 0 || replylen != 0)
			abort();
		if (have == size)
			break;
		have = step == 0 || have + step > size ? size : have + step;
	}
	c->stage = s.stage;
}

static void
fuzz_one_stage(const uint8_t *data, size_t size, enum socks5_stage stage)
{
	struct socks5 s = { stage };
	struct socks_request req;
	struct proto_error err;
	uint8_t reply[10];
	size_t consumed, replylen;
	enum proto_status r;

	r = socks5_step(&s, data, size, &consumed, reply, &replylen, &req, &err);
	if (consumed > size || replylen > 10)
		abort();
	if (r == PROTO_ERROR && err.why == NULL)
		abort();
	if (r == PROTO_OK && s.stage == SOCKS5_DONE)
		fuzz_check_host(&req);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_conv whole, bytewise;
	struct socks_request req;
	struct proto_error err;
	size_t consumed;

	switch (socks4_parse(data, size, &consumed, &req, &err)) {
	case PROTO_OK:
		if (consumed > size || consumed < 9 || req.version != 4)
			abort();
		fuzz_check_host(&req);
		break;
	case PROTO_ERROR:
		if (err.why == NULL)
			abort();
		if (err.raw != NULL && (err.raw < data || err.raw + err.raw_len > data + size))
			abort();
		break;
	default:
		if (consumed != 0)
			abort();
		break;
	}

	fuzz_conversation(data, size, 0, &whole);
	fuzz_conversation(data, size, 1, &bytewise);
	if (whole.status != bytewise.status || whole.stage != bytewise.stage ||
	    whole.outlen != bytewise.outlen || memcmp(whole.out, bytewise.out, whole.outlen) != 0 ||
	    (whole.status == PROTO_OK && (whole.used != bytewise.used ||
	    strcmp(whole.req.host.name, bytewise.req.host.name) != 0 ||
	    whole.req.port != bytewise.req.port))) {
		fprintf(stderr, "conversation differs: whole %d, byte by byte %d\n", whole.status,
		    bytewise.status);
		abort();
	}

	fuzz_one_stage(data, size, SOCKS5_AUTH);
	fuzz_one_stage(data, size, SOCKS5_REQUEST);
	return 0;
}
