/* reason.c: names of the SPEC's reasons, in table order. */
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
