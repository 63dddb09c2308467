/*
 * fuzz_host.c: libFuzzer target for host_parse (untrusted request targets, SOCKS names,
 * SNI) and, for literals, addr_classify. Properties checked, beyond not crashing:
 * the canonical form parses again to itself, and a parsed literal classifies the same
 * whether given as text or as its canonical text.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host h, again;
	struct addr_verdict v, v2;
	const char *why = NULL;

	if (host_parse((const char *)data, size, &h, &why) == -1) {
		if (why == NULL)
			abort();
		return 0;
	}
	if (host_parse(h.name, strlen(h.name), &again, &why) == -1 ||
	    strcmp(h.name, again.name) != 0 || h.kind != again.kind) {
		fprintf(stderr, "canonical form '%s' does not parse to itself\n", h.name);
		abort();
	}
	for (size_t i = 0; h.name[i] != '\0'; i++)
		if (h.name[i] >= 'A' && h.name[i] <= 'Z')
			abort();
	if (h.kind != HOST_NAME) {
		bool d1 = addr_classify(&h.addr, NULL, 0, &v);
		bool d2 = addr_classify(&again.addr, NULL, 0, &v2);

		if (d1 != d2 || (d1 && (v.range == NULL || v.name == NULL)))
			abort();
	}
	return 0;
}
