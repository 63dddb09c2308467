/*
 * fuzz_control.c: libFuzzer target for ctlproto_decode_request and ctlproto_decode_reply
 * (proto/control.c), what egressd reads from whoever reaches its control and lease
 * sockets, and what egressctl reads back. Properties besides "no crash" (and no leak:
 * every object is released): an accepted request is an object whose "verb" is a string,
 * the verb named exactly when the string is that verb's name (CTLPROTO_UNKNOWN
 * otherwise); an error says what; the request encoded again (one line, its only newline
 * the last byte) decodes to the same verb; a reply is an object or an error text.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data, *err = NULL, *name, *e;
	enum ctlproto_verb verb = CTLPROTO_STATUS, verb2;
	char rerr[256];
	json_t *req, *again, *reply;
	size_t len;
	char *enc;

	if (size > CTLPROTO_REQUEST_MAX)
		return 0;
	req = ctlproto_decode_request(line, size, &verb, &err);
	if (req == NULL) {
		if (err == NULL || err[0] == '\0')
			abort();
	} else {
		if (!json_is_object(req) ||
		    (name = json_string_value(json_object_get(req, "verb"))) == NULL ||
		    verb > CTLPROTO_UNKNOWN)
			abort();
		if (verb == CTLPROTO_UNKNOWN) {
			for (int v = 0; v < CTLPROTO_UNKNOWN; v++)
				if (strcmp(name, ctlproto_verb_name((enum ctlproto_verb)v)) == 0)
					abort();
		} else if (strcmp(name, ctlproto_verb_name(verb)) != 0) {
			abort();
		}
		json_incref(req);
		if ((enc = ctlproto_encode(req, &len)) == NULL)
			abort();
		if (len == 0 || enc[len - 1] != '\n' || memchr(enc, '\n', len - 1) != NULL ||
		    strlen(enc) != len)
			abort();
		if ((again = ctlproto_decode_request(enc, len - 1, &verb2, &err)) == NULL ||
		    verb2 != verb)
			abort();
		json_decref(again);
		free(enc);
		json_decref(req);
	}
	rerr[0] = '\0';
	reply = ctlproto_decode_reply(line, size, rerr, sizeof(rerr));
	if (reply == NULL) {
		if (rerr[0] == '\0')
			abort();
	} else {
		if (!json_is_object(reply))
			abort();
		(void)ctlproto_reply_ok(reply, &e);
		json_decref(reply);
	}
	return 0;
}
