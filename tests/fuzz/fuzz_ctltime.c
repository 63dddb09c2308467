/*
 * fuzz_ctltime.c: libFuzzer target for ctl_parse_time (egressctl/ctltime.c), the parser
 * of egressctl receipts --since/--until. Properties besides "no crash": an accepted
 * argument gives exactly the 24-byte form egressd writes ("YYYY-MM-DDTHH:MM:SS.mmmZ",
 * digits where digits go), which parses back to itself (so a bound compares as a record
 * time does, never as a year the form cannot hold); an argument with a byte after an
 * accepted one's end is refused unless it is a fraction digit or a zone.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egressctl.h"

#define ARG_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_form(const char *s)
{
	static const char form[] = "dddd-dd-ddTdd:dd:dd.dddZ";

	if (strlen(s) != sizeof(form) - 1)
		abort();
	for (size_t i = 0; i < sizeof(form) - 1; i++)
		if (form[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != form[i])
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char arg[ARG_MAX + 1], out[32], again[32];

	if (size > ARG_MAX)
		return 0;
	memcpy(arg, data, size);
	arg[size] = '\0';
	memset(out, 0x55, sizeof(out));
	if (ctl_parse_time(arg, out) == -1)
		return 0;
	check_form(out);
	if (arg[0] == '-')
		return 0;               /* relative: now moves, the form is all there is */
	if (ctl_parse_time(out, again) == -1 || strcmp(out, again) != 0)
		abort();
	return 0;
}
