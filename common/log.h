/*
 * log.h: the one log API of every egress program, in the manner of OpenSSH's log.c.
 *
 * Two outputs, chosen once at start by log_init():
 *   LOG_OUT_PREFIX  "prog: message[: strerror(errno)]" on stderr, the command-line
 *                   programs' form (and egressd's until its log is configured);
 *   LOG_OUT_LOGFMT  egressd's log: "time=... level=... message[ error=strerror(errno)]" on
 *                   stderr, or "level=... message..." to syslog(3).
 * log_warn, log_error_errno and log_fatal append strerror(errno); the x forms (and
 * log_error, log_info, log_debug) do not. log_fatal* log at
 * level error and exit with the status given. The _f forms put the calling function's
 * name first. Trusts its callers' format strings; values from outside that may hold spaces
 * or quotes go through log_value() in logfmt.
 */
#ifndef EGRESS_LOG_H
#define EGRESS_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };
enum log_output { LOG_OUT_PREFIX, LOG_OUT_LOGFMT };

/* LOG_EMIT_ERRNO appends strerror(errno) (as the output writes it). */
#define LOG_EMIT_ERRNO 0x1

void log_init(const char *prog, enum log_output out, bool use_syslog, bool debug);
/*
 * log_batch(true): logfmt lines of level debug and info to stderr wait in a 16 KiB buffer
 * until log_flush, or log_flush_due once the oldest of them waited LOG_HOLD_MS: one
 * write(2) for many lines, each still one line. egressd's engine asks log_flush_due at the
 * end of each loop turn and arms a timer for what it returns (the milliseconds until the
 * held lines are due; -1 when none is held), so a line reaches the file within
 * LOG_HOLD_MS, busy or idle. A warning or an error writes what waited, then itself, at
 * once; so does a full buffer, log_batch(false) and exit(). Syslog output is never held.
 */
#define LOG_HOLD_MS 100
void log_batch(bool on);
void log_flush(void);
long log_flush_due(void);
const char *log_prog(void);
void log_emitv(enum log_level lvl, int flags, const char *func, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
void log_emit(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_emit_f(enum log_level lvl, int flags, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void log_fatal_at(int status, int flags, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

/*
 * A line of key=value pairs joined by spaces, made without a format: the per-event lines
 * of egressd's connections (two per tunnel). Values are written as they are: a caller
 * quotes what may need it with log_value. Cut at the same bound as log_emit's messages.
 */
struct log_kv {
	const char *k;
	const char *v;
};
void log_kv(enum log_level lvl, const struct log_kv *kv, size_t n);
/*
 * The UTC time now, RFC 3339 with milliseconds ("2026-12-03T14:54:16.154Z"): the text of
 * the log lines' time= and of the receipts' "time". Returns its length.
 */
#define LOG_UTC_LEN 32
size_t log_utc_ms(char out[LOG_UTC_LEN]);

#define log_debug(...) log_emit(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_emit(LOG_LVL_INFO, __VA_ARGS__)
#define log_error(...) log_emit(LOG_LVL_ERROR, __VA_ARGS__)
/* Level error with strerror(errno), and no exit: a failure the daemon lives through. */
#define log_error_errno(...) log_emit_f(LOG_LVL_ERROR, LOG_EMIT_ERRNO, NULL, __VA_ARGS__)
#define log_warnx(...) log_emit(LOG_LVL_WARN, __VA_ARGS__)
#define log_warn(...) log_emit_f(LOG_LVL_WARN, LOG_EMIT_ERRNO, NULL, __VA_ARGS__)
#define log_warnx_f(...) log_emit_f(LOG_LVL_WARN, 0, __func__, __VA_ARGS__)
#define log_warn_f(...) log_emit_f(LOG_LVL_WARN, LOG_EMIT_ERRNO, __func__, __VA_ARGS__)
#define log_fatalx(status, ...) log_fatal_at((status), 0, NULL, __VA_ARGS__)
#define log_fatal(status, ...) log_fatal_at((status), LOG_EMIT_ERRNO, NULL, __VA_ARGS__)
#define log_fatalx_f(status, ...) log_fatal_at((status), 0, __func__, __VA_ARGS__)
#define log_fatal_f(status, ...) log_fatal_at((status), LOG_EMIT_ERRNO, __func__, __VA_ARGS__)

/* A logfmt value: s itself when it needs no quoting, else a quoted copy in buf. */
/*
 * A start-up diagnostic: "prog: message" on stderr whatever the output chosen, for what
 * a daemon says before it serves (a bad configuration, a socket it cannot create), as
 * sshd does before it detaches: an operator starting it by hand, and systemd's journal,
 * read one plain line. Once serving, every message goes through the calls above.
 */
void log_startupx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A start-up diagnostic about a place in an input file (a configuration, a hosts file),
 * in the compilers' form "file:line:col: message" on stderr whatever the output chosen:
 * the place stands where log_startupx puts the program's name, so that an editor (and a
 * test) finds it at the line's start. col 0 leaves ":col" out; line 0 leaves ":line:col"
 * out ("file: message", for the file as a whole).
 */
void log_startupx_at(const char *file, unsigned line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void log_startupx_atv(const char *file, unsigned line, size_t col, const char *fmt,
    va_list ap) __attribute__((format(printf, 4, 0)));

const char *log_value(const char *s, char *buf, size_t len);

#endif
