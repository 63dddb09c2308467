/*
 * log.c: one logfmt line per event, to stderr or syslog. The caller writes key=value
 * pairs; values that may hold spaces or quotes go through log_value().
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "egressd.h"

static bool log_syslog;
static bool log_debug_on;

void
log_init(bool use_syslog, bool debug)
{
	log_syslog = use_syslog;
	log_debug_on = debug;
	if (use_syslog)
		openlog("egressd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

const char *
log_value(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	bool quote = s[0] == '\0';

	for (const char *p = s; *p != '\0' && !quote; p++)
		if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x21 ||
		    (unsigned char)*p >= 0x7f)
			quote = true;
	if (!quote)
		return s;
	if (len < 3)
		return "\"\"";
	buf[o++] = '"';
	for (const char *p = s; *p != '\0' && o + 5 < len; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

void
log_emit(enum log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };
	char msg[2048], stamp[40];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (lvl == LOG_LVL_DEBUG && !log_debug_on)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(prio[lvl], "level=%s %s", names[lvl], msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "time=%s.%03ldZ level=%s %s\n", stamp, ts.tv_nsec / 1000000, names[lvl],
	    msg);
}
