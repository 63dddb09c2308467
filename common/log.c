/*
 * log.c: one log API for every program (see log.h): "prog: message" lines for the
 * command-line programs, logfmt lines (stderr or syslog) for egressd. Trusts the format
 * strings of its callers; messages are cut at 2 KiB.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_progname = "egress";
static enum log_output log_out = LOG_OUT_PREFIX;
static bool log_syslog;
static bool log_debug_on;
/* log_batch: debug and info lines of logfmt on stderr wait here for log_flush. */
static bool log_batching;
static char log_held[16384];
static size_t log_nheld;
static struct timespec log_held_at;     /* CLOCK_MONOTONIC of the oldest line held */

static void
log_write_all(const char *p, size_t n)
{
	for (size_t off = 0; off < n; ) {
		ssize_t w = write(STDERR_FILENO, p + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;          /* nowhere to log to: nothing else to do */
		off += (size_t)w;
	}
}

void
log_flush(void)
{
	if (log_nheld == 0)
		return;
	log_write_all(log_held, log_nheld);
	log_nheld = 0;
}

/* Milliseconds from a to b (b later). */
static long
log_ms_between(const struct timespec *a, const struct timespec *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

long
log_flush_due(void)
{
	struct timespec now;
	long age;

	if (log_nheld == 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	age = log_ms_between(&log_held_at, &now);
	if (age >= LOG_HOLD_MS || age < 0) {
		log_flush();
		return -1;
	}
	return LOG_HOLD_MS - age;
}

void
log_batch(bool on)
{
	static bool registered;

	if (!on)
		log_flush();
	else if (!registered)
		registered = atexit(log_flush) == 0;   /* an exit() anywhere writes them */
	log_batching = on;
}

void
log_init(const char *prog, enum log_output out, bool use_syslog, bool debug)
{
	log_progname = prog;
	log_out = out;
	log_syslog = out == LOG_OUT_LOGFMT && use_syslog;
	log_debug_on = debug;
	if (log_syslog)
		openlog(prog, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

const char *
log_prog(void)
{
	return log_progname;
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
log_emitv(enum log_level lvl, int flags, const char *func, const char *fmt, va_list ap)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };
	/* strerror first: formatting the message may change errno. */
	const char *why = (flags & LOG_EMIT_ERRNO) != 0 ? strerror(errno) : NULL;
	static char stamp[40];
	static time_t stamp_sec = -1;
	char msg[2048], line[2200];
	struct timespec ts;
	struct tm tm;
	size_t o = 0;
	int n;

	if (lvl == LOG_LVL_DEBUG && !log_debug_on)
		return;
	if (func != NULL)
		o = (size_t)snprintf(msg, sizeof(msg), log_out == LOG_OUT_LOGFMT ? "func=%s " :
		    "%s: ", func);
	if (o < sizeof(msg))
		vsnprintf(msg + o, sizeof(msg) - o, fmt, ap);
	if (log_out == LOG_OUT_PREFIX) {
		if (why != NULL)
			fprintf(stderr, "%s: %s: %s\n", log_progname, msg, why);
		else
			fprintf(stderr, "%s: %s\n", log_progname, msg);
		return;
	}
	if (log_syslog) {
		syslog(prio[lvl], "level=%s %s%s%s", names[lvl], msg, why != NULL ? " error=" : "",
		    why != NULL ? why : "");
		return;
	}
	/*
	 * One line, one write(2). The seconds' text is made once a second: gmtime_r and
	 * strftime, and stdio's formatting into an unbuffered stderr, were a sixth of the
	 * engine's instructions per tunnel setup (two lines each; callgrind, bench/README.md).
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != stamp_sec) {
		gmtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		stamp_sec = ts.tv_sec;
	}
	n = snprintf(line, sizeof(line), "time=%s.%03ldZ level=%s %s%s%s\n", stamp,
	    ts.tv_nsec / 1000000, names[lvl], msg, why != NULL ? " error=" : "",
	    why != NULL ? why : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {        /* cut, still one line */
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (log_batching && lvl < LOG_LVL_WARN) {
		if (log_nheld + (size_t)n > sizeof(log_held))
			log_flush();
		if (log_nheld == 0)
			clock_gettime(CLOCK_MONOTONIC, &log_held_at);
		memcpy(log_held + log_nheld, line, (size_t)n);
		log_nheld += (size_t)n;
		return;
	}
	log_flush();                    /* what waited goes first: the order holds */
	log_write_all(line, (size_t)n);
}

void
log_emit(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emitv(lvl, 0, NULL, fmt, ap);
	va_end(ap);
}

void
log_emit_f(enum log_level lvl, int flags, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emitv(lvl, flags, func, fmt, ap);
	va_end(ap);
}

void
log_fatal_at(int status, int flags, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emitv(LOG_LVL_ERROR, flags, func, fmt, ap);
	va_end(ap);
	exit(status);
}

void
log_startupx(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", log_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
log_startupx_atv(const char *file, unsigned line, size_t col, const char *fmt, va_list ap)
{
	if (line == 0)
		fprintf(stderr, "%s: ", file);
	else if (col == 0)
		fprintf(stderr, "%s:%u: ", file, line);
	else
		fprintf(stderr, "%s:%u:%zu: ", file, line, col);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
log_startupx_at(const char *file, unsigned line, size_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_startupx_atv(file, line, col, fmt, ap);
	va_end(ap);
}
