/*
 * fuzz_monwire.c: libFuzzer target for the receipt batches egressd's monitor reads from
 * its engine (proto/monwire.c), the monitor's only parser of bytes the engine chooses.
 * Beyond not crashing: every record accepted is one the engine's encoder writes again
 * and reads back identically, its strings NUL-terminated within their bounds; the input
 * as a request: an accepted one has its strings ended inside their fields and no error.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "monwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[MW_BATCH_MAX];
	struct mw_reader rd, rd2;
	struct mw_record rec, rec2;
	struct mw_writer w;
	const char *why;
	int rc;

	{
		/* The input as a request (the monitor checks one before acting on it). */
		struct mw_req q;

		memset(&q, 0, sizeof(q));
		memcpy(&q, data, size < sizeof(q) ? size : sizeof(q));
		if (mw_req_check(&q, &why) == 0 && (memchr(q.path, 0, sizeof(q.path)) == NULL ||
		    memchr(q.name, 0, sizeof(q.name)) == NULL || q.err != 0))
			abort();
	}
	if (mw_batch_open(&rd, data, size, &why) == -1)
		return 0;
	while ((rc = mw_batch_next(&rd, &rec, &why)) == 1) {
		struct receipt r;
		size_t len;

		if (strlen(rec.id) >= sizeof(rec.id) || strlen(rec.host) >= sizeof(rec.host) ||
		    rec.raw_len > sizeof(rec.raw))
			abort();
		mw_record_receipt(&rec, &r);
		mw_batch_begin(&w, again, sizeof(again));
		if (mw_batch_add(&w, &r) == -1)
			abort();
		len = mw_batch_end(&w, 1, 0);
		if (mw_batch_open(&rd2, again, len, &why) == -1 ||
		    mw_batch_next(&rd2, &rec2, &why) != 1 ||
		    mw_batch_next(&rd2, &rec2, &why) == -1)
			abort();
		mw_batch_open(&rd2, again, len, &why);
		mw_batch_next(&rd2, &rec2, &why);
		if (memcmp(&rec, &rec2, offsetof(struct mw_record, raw)) != 0 ||
		    rec.raw_len != rec2.raw_len || memcmp(rec.raw, rec2.raw, rec.raw_len) != 0 ||
		    rec.port != rec2.port || rec.reason != rec2.reason || rec.count != rec2.count ||
		    strcmp(rec.close, rec2.close) != 0 || strcmp(rec.sni, rec2.sni) != 0 ||
		    strcmp(rec.addr, rec2.addr) != 0 || rec.bytes_up != rec2.bytes_up)
			abort();
	}
	(void)rc;
	return 0;
}
