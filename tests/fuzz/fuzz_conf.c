/*
 * fuzz_conf.c: libFuzzer target for conf_parse_text (egress/conf.c), egressd.conf(5)'s
 * parser, on bytes without file I/O: the files it names (policy-pubkey) open as /dev/null
 * here, so that no input reads the machine's files. Properties besides "no crash" and no
 * leak (conf_free releases everything): an accepted file keeps its bytes exactly, has a
 * runtime-dir, a control socket and a receipt file that are absolute paths, and every
 * principal a valid name and a socket directly inside runtime-dir that no other principal,
 * nor the control or lease socket, has (one path cannot be two listeners); the
 * same bytes are accepted or refused alike the second time (the parser keeps no state).
 * Its error lines (stderr) go to /dev/null while it parses: stdio's stderr is swapped
 * around the call, libFuzzer's and the sanitizers' reports are not affected.
 */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egressd.h"

#define CONF_FUZZ_MAX 16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *fuzz_null;

static int
fuzz_open_null(const char *path)
{
	(void)path;
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static struct conf *
fuzz_parse(const uint8_t *data, size_t size)
{
	FILE *saved = stderr;
	struct conf *c;

	stderr = fuzz_null;
	c = conf_parse_text("fuzz.conf", (const char *)data, size);
	stderr = saved;
	return c;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf *c, *again;

	if (size > CONF_FUZZ_MAX)
		return 0;
	if (fuzz_null == NULL) {
		if ((fuzz_null = fopen("/dev/null", "w")) == NULL)
			abort();
		conf_opener = fuzz_open_null;
		conf_file_opener = fuzz_open_null;
	}
	c = fuzz_parse(data, size);
	again = fuzz_parse(data, size);
	if ((c == NULL) != (again == NULL))
		abort();
	conf_free(again);
	if (c == NULL)
		return 0;
	if (c->textlen != size || memcmp(c->text, data, size) != 0)
		abort();
	if (c->runtime_dir == NULL || c->runtime_dir[0] != '/' || c->control == NULL ||
	    c->control[0] != '/' || c->receipts == NULL || c->receipts[0] != '/')
		abort();
	for (size_t i = 0; i < c->nprincipals; i++) {
		const struct conf_principal *p = &c->principals[i];

		if (!conf_valid_name(p->name) || p->socket == NULL ||
		    !conf_inside(c->runtime_dir, p->socket) || p->policy == NULL)
			abort();
		if (strcmp(p->socket, c->control) == 0 ||
		    (c->lease != NULL && strcmp(p->socket, c->lease) == 0))
			abort();
		for (size_t k = 0; k < i; k++)
			if (strcmp(p->socket, c->principals[k].socket) == 0)
				abort();
	}
	conf_free(c);
	return 0;
}
