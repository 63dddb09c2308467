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

#define LOG_MSG_MAX 2048                /* a message (func= and text) is cut here */

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

/*
 * The logfmt line on stderr is built once, straight into its buffer: the prefix (the
 * time, log_utc_ms), the message, the error, the newline. Formatting the
 * message apart and copying it into the line was a tenth of the engine's instructions per
 * tunnel setup (two lines each; callgrind, bench/README.md).
 */
#define LOG_LINE_MAX 2200

static const char *const log_names[] = { "debug", "info", "warn", "error" };

size_t
log_utc_ms(char out[LOG_UTC_LEN])
{
	/* The seconds' text is made once a second; the milliseconds by hand. */
	static char stamp[24];
	static size_t stamp_len;
	static time_t stamp_sec = -1;
	struct timespec ts;
	struct tm tm;
	long ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != stamp_sec) {
		gmtime_r(&ts.tv_sec, &tm);
		stamp_len = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S.", &tm);
		stamp_sec = ts.tv_sec;
	}
	memcpy(out, stamp, stamp_len);   /* at most 23 + 5 bytes of out's LOG_UTC_LEN */
	ms = ts.tv_nsec / 1000000 % 1000;
	out[stamp_len] = (char)('0' + ms / 100);
	out[stamp_len + 1] = (char)('0' + ms / 10 % 10);
	out[stamp_len + 2] = (char)('0' + ms % 10);
	out[stamp_len + 3] = 'Z';
	out[stamp_len + 4] = '\0';
	return stamp_len + 4;
}

/* Writes "time=... level=L " at line's start; returns its length. */
static size_t
log_prefix(char *line, enum log_level lvl)
{
	size_t o, n;

	memcpy(line, "time=", 5);
	o = 5 + log_utc_ms(line + 5);
	memcpy(line + o, " level=", 7);
	o += 7;
	n = strlen(log_names[lvl]);
	memcpy(line + o, log_names[lvl], n);
	o += n;
	line[o++] = ' ';
	return o;
}

/* What snprintf returned, as the bytes it wrote into cap. */
static size_t
log_wrote(int n, size_t cap)
{
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Ends the line of o bytes (the error, the newline) and holds or writes it. */
static void
log_finish(char *line, size_t o, enum log_level lvl, const char *why)
{
	if (why != NULL)
		o += log_wrote(snprintf(line + o, LOG_LINE_MAX - o, " error=%s", why),
		    LOG_LINE_MAX - o);
	if (o >= LOG_LINE_MAX - 1)      /* cut, still one line */
		o = LOG_LINE_MAX - 2;
	line[o++] = '\n';
	if (log_batching && lvl < LOG_LVL_WARN) {
		if (log_nheld + o > sizeof(log_held))
			log_flush();
		if (log_nheld == 0)
			clock_gettime(CLOCK_MONOTONIC, &log_held_at);
		memcpy(log_held + log_nheld, line, o);
		log_nheld += o;
		return;
	}
	log_flush();                    /* what waited goes first: the order holds */
	log_write_all(line, o);
}

static bool
log_to_lines(void)
{
	return log_out == LOG_OUT_LOGFMT && !log_syslog;
}

void
log_kv(enum log_level lvl, const struct log_kv *kv, size_t n)
{
	char line[LOG_LINE_MAX], msg[LOG_MSG_MAX];
	size_t o = 0, m = 0, len;
	char *p = msg;

	if (lvl == LOG_LVL_DEBUG && !log_debug_on)
		return;
	if (log_to_lines()) {
		m = log_prefix(line, lvl);
		p = line + m;
	}
	/* At most LOG_MSG_MAX - 1 bytes of message, as log_emit's. */
	for (size_t i = 0; i < n && o < LOG_MSG_MAX - 1; i++) {
		if (i > 0)
			p[o++] = ' ';
		for (const char *s = kv[i].k; *s != '\0' && o < LOG_MSG_MAX - 1; s++)
			p[o++] = *s;
		if (o < LOG_MSG_MAX - 1)
			p[o++] = '=';
		len = strlen(kv[i].v);
		if (len > LOG_MSG_MAX - 1 - o)
			len = LOG_MSG_MAX - 1 - o;
		memcpy(p + o, kv[i].v, len);
		o += len;
	}
	if (log_to_lines()) {
		log_finish(line, m + o, lvl, NULL);
		return;
	}
	p[o] = '\0';
	log_emit(lvl, "%s", msg);
}

void
log_emitv(enum log_level lvl, int flags, const char *func, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };
	/* strerror first: formatting the message may change errno. */
	const char *why = (flags & LOG_EMIT_ERRNO) != 0 ? strerror(errno) : NULL;
	char msg[LOG_MSG_MAX], line[LOG_LINE_MAX];
	size_t o = 0, m;

	if (lvl == LOG_LVL_DEBUG && !log_debug_on)
		return;
	if (log_to_lines()) {
		/* func= and the text: at most LOG_MSG_MAX - 1 bytes of message. */
		o = m = log_prefix(line, lvl);
		if (func != NULL)
			o += log_wrote(snprintf(line + o, LOG_MSG_MAX, "func=%s ", func),
			    LOG_MSG_MAX);
		if (o - m < LOG_MSG_MAX - 1)
			o += log_wrote(vsnprintf(line + o, LOG_MSG_MAX - (o - m), fmt, ap),
			    LOG_MSG_MAX - (o - m));
		log_finish(line, o, lvl, why);
		return;
	}
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
	syslog(prio[lvl], "level=%s %s%s%s", log_names[lvl], msg, why != NULL ? " error=" : "",
	    why != NULL ? why : "");
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
