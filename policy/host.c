/*
 * host.c: strict host parsing. Input is untrusted (request targets, SOCKS fields, SNI,
 * policy files); the output is the one canonical spelling every later step compares.
 *
 * A name is lower-cased, loses one trailing dot, and must be LDH labels of 1..63 octets,
 * at most 253 octets in all, A-labels only. A host whose last label is numeric (all digits,
 * or 0x and hex) is an address and must be exactly four decimal octets without leading
 * zeros: 2130706433, 0x7f.1, 0177.0.0.1, 127.1 and 1.2.3 are refused, never resolved, so
 * no resolver or libc can read them as something else. IPv6 follows RFC 4291 and is
 * written back per RFC 5952; zone identifiers are refused.
 */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "policy.h"

static bool
host_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
host_is_hex(char c)
{
	return host_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The WHATWG URL rule: a last label of digits or 0x-hex makes the host numeric. */
static bool
host_label_numeric(const char *l, size_t n)
{
	size_t i = 0;

	if (n == 0)
		return false;
	if (n >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
		for (i = 2; i < n; i++)
			if (!host_is_hex(l[i]))
				return false;
		return true;
	}
	for (i = 0; i < n; i++)
		if (!host_is_digit(l[i]))
			return false;
	return true;
}

static int
host_parse_name(const char *s, size_t len, struct host *h, const char **why)
{
	size_t i, label = 0;

	if (len > EGRESS_HOST_MAX) {
		*why = "name longer than 253 octets";
		return -1;
	}
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '.') {
			if (label == 0) {
				*why = "empty label";
				return -1;
			}
			if (s[i - 1] == '-') {
				*why = "label ends with a hyphen";
				return -1;
			}
			label = 0;
			h->name[i] = '.';
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || host_is_digit(c) || c == '-')) {
			*why = c == '_' ? "underscore in name (letters, digits, hyphen only)" :
			    c == '*' ? "wildcard is not a host" :
			    "character not allowed in a name (letters, digits, hyphen only)";
			return -1;
		}
		if (c == '-' && label == 0) {
			*why = "label starts with a hyphen";
			return -1;
		}
		if (++label > EGRESS_LABEL_MAX) {
			*why = "label longer than 63 octets";
			return -1;
		}
		h->name[i] = c;
	}
	if (label == 0) {
		*why = "empty label";
		return -1;
	}
	if (s[len - 1] == '-') {
		*why = "label ends with a hyphen";
		return -1;
	}
	h->name[len] = '\0';
	h->kind = HOST_NAME;
	memset(&h->addr, 0, sizeof(h->addr));
	return 0;
}

int
host_parse(const char *s, size_t len, struct host *h, const char **why)
{
	const char *last;
	size_t i;
	bool colon = false;

	memset(h, 0, sizeof(*h));
	if (len == 0) {
		*why = "empty host";
		return -1;
	}
	if (len > EGRESS_HOST_INPUT_MAX) {
		*why = "host longer than 1024 bytes";
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\0') {
			*why = "NUL byte in host";
			return -1;
		}
		if (c < 0x20 || c == 0x7f) {
			*why = "control byte in host";
			return -1;
		}
		if (c >= 0x80) {
			*why = "non-ASCII byte in host (internationalised names only as A-labels, xn--)";
			return -1;
		}
		if (c == '%') {
			*why = "'%' in host (zone identifiers and percent-encoding are refused)";
			return -1;
		}
		if (c == '@') {
			*why = "'@' in host (no userinfo)";
			return -1;
		}
		if (c == ' ') {
			*why = "space in host";
			return -1;
		}
		if (c == ':')
			colon = true;
	}

	if (s[0] == '[' || s[len - 1] == ']') {
		if (len < 3 || s[0] != '[' || s[len - 1] != ']') {
			*why = "unbalanced brackets";
			return -1;
		}
		s++;
		len -= 2;
		if (memchr(s, ':', len) == NULL) {
			*why = "brackets around something other than an IPv6 address";
			return -1;
		}
	}
	if (colon) {
		if (addr_parse(s, len, &h->addr) == -1 || h->addr.family != AF_INET6) {
			*why = "not a valid IPv6 address";
			return -1;
		}
		h->kind = HOST_IPV6;
		addr_format(&h->addr, h->name);
		return 0;
	}

	/* One trailing dot is the root; a numeric host may not have one. */
	if (len > 1 && s[len - 1] == '.') {
		last = s + len - 1;
		while (last > s && last[-1] != '.')
			last--;
		if (host_label_numeric(last, (size_t)(s + len - 1 - last))) {
			*why = "numeric host with a trailing dot";
			return -1;
		}
		len--;
	}
	last = s + len;
	while (last > s && last[-1] != '.')
		last--;
	if (host_label_numeric(last, (size_t)(s + len - last))) {
		if (addr_parse(s, len, &h->addr) == -1 || h->addr.family != AF_INET) {
			*why = "numeric host that is not four decimal octets without leading zeros";
			return -1;
		}
		h->kind = HOST_IPV4;
		addr_format(&h->addr, h->name);
		return 0;
	}
	return host_parse_name(s, len, h, why);
}
