/*
 * fuzz_host.c: libFuzzer target for host_parse (untrusted request targets, SOCKS names,
 * SNI) and, for literals, addr_classify. Properties checked, beyond not crashing:
 * the canonical form parses again to itself, and a parsed literal classifies the same
 * whether given as text or as its canonical text. The same bytes as a resolver's
 * address (addr_port_parse): accepted input has no byte outside [0-9a-fA-F.:[]], and its
 * canonical text parses back to the same address and port.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host h, again;
	struct addr_verdict v, v2;
	const char *why = NULL;

	{
		struct addr a, a2;
		unsigned port, port2;
		char text[EGRESS_ADDRSTRLEN + 8], at[EGRESS_ADDRSTRLEN];

		if (addr_port_parse((const char *)data, size, &a, &port, &why) == 0) {
			for (size_t i = 0; i < size; i++)
				if (strchr("0123456789abcdefABCDEF.:[]", data[i]) == NULL ||
				    data[i] == '\0')
					abort();
			if (port > 65535)
				abort();
			addr_format(&a, at);
			snprintf(text, sizeof(text), a.family == AF_INET6 ? "[%s]:%u" : "%s:%u",
			    at, port ? port : 53);
			if (addr_port_parse(text, strlen(text), &a2, &port2, &why) == -1 ||
			    !addr_equal(&a, &a2) || port2 != (port ? port : 53))
				abort();
		} else if (why == NULL)
			abort();
		why = NULL;
	}
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
