/*
 * fuzz_receipt.c: libFuzzer target for the receipt line reader and verifier
 * (proto/receipt.c), the input being a receipt file. Beyond not crashing: what the
 * scanner accepts lies inside the line (prev, event, mac, body), the verifier walks the
 * whole input with and without a MAC key and a checkpoint key, never counts more records
 * than lines, and reports a break at a line the input has; and a record encoded with the
 * input as its host scans back to its seq and event and verifies as a chain of one.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "receipt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_walk(const char *s, size_t size, const struct egress_key *key, void *pub)
{
	struct rcpt_verify v;
	size_t lineno = 0, off = 0;

	rcpt_verify_init(&v, key, pub);
	while (off < size) {
		const char *nl = memchr(s + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (s + off)) : size - off;
		struct rcpt_scan r;

		lineno++;
		if (rcpt_scan_line(s + off, len, &r) == 0) {
			if (r.prev < s + off || r.prev + RCPT_HEX_LEN > s + off + len ||
			    r.event + r.event_len > s + off + len || r.body_len > len ||
			    (r.mac != NULL && r.mac + RCPT_HEX_LEN > s + off + len))
				abort();
		}
		rcpt_verify_line(&v, "f", lineno, s + off, len, nl == NULL);
		off += len + (nl ? 1 : 0);
	}
	rcpt_verify_end(&v, "f");
	if (v.records > lineno || (v.broken && v.bad_lineno > lineno))
		abort();
	if (!v.broken && pub != NULL && v.checkpoints == 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void *pub;
	static struct egress_key key;
	char *s, host[256], prev[RCPT_HASH_STRLEN] = RCPT_PREV_ZERO;
	struct rcpt_line b;
	struct rcpt_scan r;
	struct rcpt_verify v;
	struct receipt rec;
	size_t n;

	if (pub == NULL) {
		pub = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
		memset(key.bytes, 0x5a, EGRESS_KEY_MIN);
		key.len = EGRESS_KEY_MIN;
	}
	if (size > 2 * RCPT_INPUT_MAX)
		return 0;
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	fuzz_walk(s, size, NULL, NULL);
	fuzz_walk(s, size, &key, NULL);
	fuzz_walk(s, size, &key, pub);
	free(s);

	/* The encoder's output is the scanner's input: any host bytes, escaped. */
	n = size < sizeof(host) - 1 ? size : sizeof(host) - 1;
	memcpy(host, data, n);
	host[n] = '\0';
	memset(&rec, 0, sizeof(rec));
	rec.event = RECEIPT_DENY;
	rec.id = "c1";
	rec.host = host;
	rec.port = 443;
	rec.reason = EGRESS_NOT_ALLOWLISTED;
	rec.bytes_up = rec.bytes_down = rec.duration_ms = -1;
	if (rcpt_encode(&b, &rec, 1, prev, "2026-12-01T10:00:00.000Z", &key) != 0 ||
	    b.len >= RCPT_LINE_MAX)
		abort();
	if (rcpt_scan_line(b.s, b.len, &r) != 0 || r.seq != 1 || !rcpt_event_is(&r, "deny") ||
	    r.mac == NULL)
		abort();
	rcpt_verify_init(&v, &key, NULL);
	rcpt_verify_line(&v, "f", 1, b.s, b.len, false);
	rcpt_verify_end(&v, "f");
	if (v.broken || v.records != 1)
		abort();
	return 0;
}
