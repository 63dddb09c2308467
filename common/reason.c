/*
 * reason.c: the SPEC's reasons, in table order: their names, what each frontend's client
 * sees, and the wire code -(1000 + row) that EGR1 and EGF1 replies carry and libegress
 * returns (egress.h spells those codes out as EGRESS_ERR_*). The one place that maps a
 * reason to a code and back; libegress compiles this file into itself. A code read from
 * a peer is trusted for nothing: one outside the table maps to no reason.
 */
#include "config.h"

#include <string.h>

#include "common.h"

static const char *const reason_names[EGRESS_REASON_COUNT] = {
	[EGRESS_ALLOWED] = "allowed",
	[EGRESS_NOT_ALLOWLISTED] = "not-allowlisted",
	[EGRESS_DENIED_BY_RULE] = "denied-by-rule",
	[EGRESS_MALFORMED_REQUEST] = "malformed-request",
	[EGRESS_BAD_HOST] = "bad-host",
	[EGRESS_PRIVATE_ADDRESS] = "private-address",
	[EGRESS_DNS_FAILURE] = "dns-failure",
	[EGRESS_DNS_TIMEOUT] = "dns-timeout",
	[EGRESS_CONNECT_REFUSED] = "connect-refused",
	[EGRESS_CONNECT_TIMEOUT] = "connect-timeout",
	[EGRESS_QUOTA_CONNECTIONS] = "quota-connections",
	[EGRESS_QUOTA_RATE] = "quota-rate",
	[EGRESS_QUOTA_BYTES] = "quota-bytes",
	[EGRESS_SNI_MISSING] = "sni-missing",
	[EGRESS_SNI_MISMATCH] = "sni-mismatch",
	[EGRESS_SNI_MALFORMED] = "sni-malformed",
	[EGRESS_SNI_ECH] = "sni-ech",
	[EGRESS_NOT_TLS] = "not-tls",
	[EGRESS_UNSUPPORTED] = "unsupported",
	[EGRESS_HANDSHAKE_TIMEOUT] = "handshake-timeout",
	[EGRESS_PEER_UID] = "peer-uid",
	[EGRESS_IDLE_TIMEOUT] = "idle-timeout",
	[EGRESS_SHUTDOWN] = "shutdown",
};

const char *
egress_reason_name(enum egress_reason r)
{
	if ((unsigned)r >= EGRESS_REASON_COUNT)
		return "unknown";
	return reason_names[r];
}

int
egress_reason_from_name(const char *s)
{
	for (int i = 0; i < EGRESS_REASON_COUNT; i++)
		if (strcmp(reason_names[i], s) == 0)
			return i;
	return -1;
}

int32_t
egress_reason_code(enum egress_reason r)
{
	return r == EGRESS_ALLOWED ? 0 : -(EGRESS_REASON_CODE_BASE + (int32_t)r);
}

int
egress_reason_of_code(int32_t code)
{
	if (code == 0)
		return EGRESS_ALLOWED;
	/* -1000 would be allowed spelled as a refusal: not a code anyone sends. */
	if (code > -(EGRESS_REASON_CODE_BASE + 1) ||
	    code < -(EGRESS_REASON_CODE_BASE + EGRESS_REASON_COUNT - 1))
		return -1;
	return (int)(-code - EGRESS_REASON_CODE_BASE);
}

/* The SPEC's table "Reasons and what each client sees", row by row. */
static const struct {
	short http;     /* 0: close without a response */
	short socks5;   /* -1: close without a reply */
	short socks4;
} reason_wire[EGRESS_REASON_COUNT] = {
	[EGRESS_ALLOWED] = { 200, 0x00, 90 },
	[EGRESS_NOT_ALLOWLISTED] = { 403, 0x02, 91 },
	[EGRESS_DENIED_BY_RULE] = { 403, 0x02, 91 },
	[EGRESS_MALFORMED_REQUEST] = { 400, 0x01, 91 },
	[EGRESS_BAD_HOST] = { 400, 0x02, 91 },
	[EGRESS_PRIVATE_ADDRESS] = { 403, 0x02, 91 },
	[EGRESS_DNS_FAILURE] = { 502, 0x04, 91 },
	[EGRESS_DNS_TIMEOUT] = { 504, 0x04, 91 },
	[EGRESS_CONNECT_REFUSED] = { 502, 0x05, 91 },
	[EGRESS_CONNECT_TIMEOUT] = { 504, 0x06, 91 },
	[EGRESS_QUOTA_CONNECTIONS] = { 429, 0x02, 91 },
	[EGRESS_QUOTA_RATE] = { 429, 0x02, 91 },
	[EGRESS_QUOTA_BYTES] = { 429, 0x02, 91 },
	[EGRESS_SNI_MISSING] = { 0, -1, -1 },
	[EGRESS_SNI_MISMATCH] = { 0, -1, -1 },
	[EGRESS_SNI_MALFORMED] = { 0, -1, -1 },
	[EGRESS_SNI_ECH] = { 0, -1, -1 },
	[EGRESS_NOT_TLS] = { 0, -1, -1 },
	[EGRESS_UNSUPPORTED] = { 405, 0x07, 91 },
	[EGRESS_HANDSHAKE_TIMEOUT] = { 408, -1, -1 },
	[EGRESS_PEER_UID] = { 0, -1, -1 },
	[EGRESS_IDLE_TIMEOUT] = { 0, -1, -1 },
	[EGRESS_SHUTDOWN] = { 503, 0x01, 91 },
};

int
egress_reason_http_status(enum egress_reason r)
{
	return (unsigned)r < EGRESS_REASON_COUNT ? reason_wire[r].http : 0;
}

int
egress_reason_socks5(enum egress_reason r)
{
	return (unsigned)r < EGRESS_REASON_COUNT ? reason_wire[r].socks5 : -1;
}

int
egress_reason_socks4(enum egress_reason r)
{
	return (unsigned)r < EGRESS_REASON_COUNT ? reason_wire[r].socks4 : -1;
}

const char *
egress_http_phrase(int status)
{
	switch (status) {
	case 200: return "Connection established";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}
