/*
 * parent.c: egressd's side of a parent proxy's HTTP/1.1 (parent.h): the CONNECT request
 * it writes and the answer head it reads. Trusts nothing of the answer but its shape: the
 * parent is the operator's, yet a compromised or confused one must not make egressd read
 * past a bound, or take header bytes for tunnel bytes or the other way round. Only the
 * status code decides; the headers are checked for bytes no header has and skipped
 * (a 2xx answer to CONNECT has no body, RFC 9110 s9.3.6: what follows the blank line is
 * the tunnel).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "parent.h"

/* A byte a status line or header line may hold: VCHAR, SP, HTAB, obs-text. */
static bool
parent_line_byte(uint8_t ch)
{
	return ch == '\t' || ch >= 0x20 ? ch != 0x7f : false;
}

/* "HTTP/1.x DDD" then nothing, or SP and a reason phrase. */
static int
parent_status_line(const uint8_t *s, size_t n, int *status, const char **why)
{
	if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9' ||
	    s[8] != ' ') {
		*why = "the parent's answer is not HTTP/1.x";
		return -1;
	}
	for (size_t i = 9; i < 12; i++)
		if (s[i] < '0' || s[i] > '9') {
			*why = "the parent's status is not three digits";
			return -1;
		}
	if (n > 12 && s[12] != ' ') {
		*why = "the parent's status is not followed by a space";
		return -1;
	}
	*status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	if (*status < 100 || *status > 599) {
		*why = "the parent's status is out of range";
		return -1;
	}
	return 0;
}

enum proto_status
parent_parse_answer(const uint8_t *buf, size_t len, struct parent_answer *a, const char **why)
{
	size_t lim = len < EGRESS_PARENT_HEAD_MAX ? len : EGRESS_PARENT_HEAD_MAX;
	size_t start = 0;
	bool first = true;

	memset(a, 0, sizeof(*a));
	*why = NULL;
	/* Each pass takes one line (it ends before lim) or stops: at most lim passes. */
	for (size_t i = 0; i < lim; i++) {
		size_t end;

		if (buf[i] == '\r') {
			if (i + 1 >= lim)
				break;          /* its LF may come next */
			if (buf[i + 1] != '\n') {
				*why = "bare CR in the parent's answer";
				return PROTO_ERROR;
			}
			continue;
		}
		if (buf[i] != '\n') {
			if (!parent_line_byte(buf[i])) {
				*why = "control byte in the parent's answer";
				return PROTO_ERROR;
			}
			continue;
		}
		end = i > start && buf[i - 1] == '\r' ? i - 1 : i;
		if (first) {
			if (parent_status_line(buf, end, &a->status, why) == -1)
				return PROTO_ERROR;
			a->line = buf;
			a->line_len = end;
			first = false;
		} else if (end == start) {
			a->head_len = i + 1;
			return PROTO_OK;
		}
		start = i + 1;
	}
	if (len >= EGRESS_PARENT_HEAD_MAX) {
		memset(a, 0, sizeof(*a));
		*why = "the parent's answer head is too large";
		return PROTO_ERROR;
	}
	memset(a, 0, sizeof(*a));
	return PROTO_NEED_MORE;
}

static bool
parent_header_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if ((uint8_t)*s <= 0x20 || (uint8_t)*s >= 0x7f)
			return false;
	return true;
}

size_t
parent_connect_request(const char *authority, const char *auth_b64, uint8_t *out, size_t cap)
{
	char tmp[EGRESS_PARENT_REQUEST_MAX];
	int n;

	if (!parent_header_ok(authority) || strlen(authority) > EGRESS_PARENT_AUTHORITY_MAX ||
	    (auth_b64 != NULL && (!parent_header_ok(auth_b64) ||
	    strlen(auth_b64) >= EGRESS_PARENT_AUTH_B64_MAX)))
		return 0;
	n = snprintf(tmp, sizeof(tmp), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n",
	    authority, authority, auth_b64 ? "Proxy-Authorization: Basic " : "",
	    auth_b64 ? auth_b64 : "", auth_b64 ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(tmp) || (size_t)n > cap) {
		memset(tmp, 0, sizeof(tmp));
		return 0;
	}
	memcpy(out, tmp, (size_t)n);
	memset(tmp, 0, sizeof(tmp));    /* the credential does not stay on the stack */
	return (size_t)n;
}

size_t
parent_base64(const uint8_t *in, size_t n, char *out, size_t cap)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t need = ((n + 2) / 3) * 4, o = 0;

	if (n > (SIZE_MAX / 4) * 3 - 3 || need + 1 > cap)
		return 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = tab[(v >> 18) & 63];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}
