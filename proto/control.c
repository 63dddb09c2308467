/*
 * control.c: both directions of egressd's control protocol (control.h): the verbs, the
 * line framing and the ok/error answer. Requests come from whoever reaches the control
 * or lease socket (egress/control.c decides who that may be), replies from egressd: each
 * side trusts nothing of the other's line but that jansson reads it as one object. No
 * I/O; jansson does the JSON.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

static const char *const ctlproto_verbs[] = {
	[CTLPROTO_STATUS] = "status",
	[CTLPROTO_PRINCIPAL_ADD] = "principal-add",
	[CTLPROTO_PRINCIPAL_REMOVE] = "principal-remove",
	[CTLPROTO_PRINCIPAL_LIST] = "principal-list",
	[CTLPROTO_METRICS] = "metrics",
	[CTLPROTO_LEASE] = "lease",
	[CTLPROTO_SUMMARY] = "summary",
	[CTLPROTO_DEBUG] = "debug",
};

const char *
ctlproto_verb_name(enum ctlproto_verb v)
{
	return v < CTLPROTO_UNKNOWN ? ctlproto_verbs[v] : "unknown";
}

bool
ctlproto_lease_socket(enum ctlproto_verb v)
{
	return v == CTLPROTO_LEASE || v == CTLPROTO_SUMMARY;
}

json_t *
ctlproto_request(enum ctlproto_verb v)
{
	return json_pack("{s:s}", "verb", ctlproto_verb_name(v));
}

json_t *
ctlproto_error(const char *msg)
{
	return json_pack("{s:b,s:s}", "ok", 0, "error", msg);
}

char *
ctlproto_encode(json_t *o, size_t *len)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL, *line;
	size_t n;

	json_decref(o);
	if (s == NULL)
		return NULL;
	/* JSON_COMPACT escapes control characters: the only newline is the one added. */
	n = strlen(s);
	if ((line = realloc(s, n + 2)) == NULL) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*len = n + 1;
	return line;
}

json_t *
ctlproto_decode_request(const char *line, size_t len, enum ctlproto_verb *verb,
    const char **err)
{
	json_error_t jerr;
	json_t *req = json_loadb(line, len, 0, &jerr);
	const char *name;
	size_t i;

	if (req == NULL || !json_is_object(req)) {
		*err = "a request is one JSON object per line";
		json_decref(req);
		return NULL;
	}
	if ((name = json_string_value(json_object_get(req, "verb"))) == NULL) {
		*err = "no verb";
		json_decref(req);
		return NULL;
	}
	*verb = CTLPROTO_UNKNOWN;
	for (i = 0; i < CTLPROTO_UNKNOWN; i++)
		if (strcmp(name, ctlproto_verbs[i]) == 0)
			*verb = (enum ctlproto_verb)i;
	return req;
}

json_t *
ctlproto_decode_reply(const char *line, size_t len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *o = json_loadb(line, len, 0, &jerr);

	if (o == NULL) {
		snprintf(err, errlen, "%s", jerr.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object");
		json_decref(o);
		return NULL;
	}
	return o;
}

bool
ctlproto_reply_ok(json_t *reply, const char **error)
{
	*error = json_string_value(json_object_get(reply, "error"));
	return json_is_true(json_object_get(reply, "ok"));
}
