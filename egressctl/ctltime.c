/*
 * ctltime.c: egressctl's time arguments (receipts --since/--until), the strict ISO 8601
 * subset and relative times of egressctl(8). The argument is the operator's, but it is
 * parsed as strictly as anything else: fixed field widths, nothing around, every value
 * range-checked. Pure but for time(NULL) for relative times; no allocation. Fuzzed by
 * tests/fuzz/fuzz_ctltime.c, table-tested by tests/unit/check_ctltime.c.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "egressctl.h"

#define CTL_TIME_FRAC_MAX 9           /* fraction digits read; the first 3 are kept */
#define CTL_TIME_SPAN_MAX (100LL * 366 * 86400) /* a relative time: at most 100 years back */
#define CTL_TIME_FRAC_MAX 9           /* fraction digits read; the first 3 are kept */
#define CTL_TIME_SPAN_MAX (100LL * 366 * 86400) /* a relative time: at most 100 years back */

/* Exactly n ASCII digits at p (no sign, no space: sscanf's %d takes both). */
static bool
ctl_digits(const char *p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		*v = *v * 10 + (p[i] - '0');
	}
	return true;
}

static int
ctl_days_in_month(int y, int mo)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[mo - 1];
}

/*
 * A time argument as egressd writes times, "YYYY-MM-DDTHH:MM:SS.mmmZ", so that records
 * compare as strings. Accepted, strictly (fixed field widths, nothing else around):
 *   YYYY-MM-DD                                  midnight UTC
 *   YYYY-MM-DD{T| }hh:mm[:ss[.f]][Z|+hh:mm|-hh:mm|+hhmm|-hhmm|+hh|-hh]
 * with 1 to CTL_TIME_FRAC_MAX fraction digits (milliseconds kept), no zone meaning UTC,
 * and an offset converted to UTC; or relative to now (-90s, -30m, -1h, -2d). Returns -1
 * when it is none of these.
 */
int
ctl_parse_time(const char *arg, char out[32])
{
	struct tm tm;
	time_t t;
	int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, off = 0;

	if (arg[0] == '-') {
		long long v = 0;
		const char *q = arg + 1;

		/*
		 * Digits only (strtoll also took "+5d" and " 5d"), and the bound on the span
		 * in seconds, after its unit: -3000000000d was under a bound on N and then
		 * some 8 million years, a year the form cannot hold.
		 */
		for (; *q >= '0' && *q <= '9'; q++) {
			v = v * 10 + (*q - '0');
			if (v > CTL_TIME_SPAN_MAX)
				return -1;
		}
		if (q == arg + 1 || q[0] == '\0' || q[1] != '\0')
			return -1;
		switch (*q) {
		case 's': break;
		case 'm': v *= 60; break;
		case 'h': v *= 3600; break;
		case 'd': v *= 86400; break;
		default: return -1;
		}
		if (v > CTL_TIME_SPAN_MAX)
			return -1;
		t = time(NULL) - (time_t)v;
		if (gmtime_r(&t, &tm) == NULL)
			return -1;
		y = tm.tm_year + 1900;
		mo = tm.tm_mon + 1;
		d = tm.tm_mday;
		h = tm.tm_hour;
		mi = tm.tm_min;
		sec = tm.tm_sec;
	} else {
		const char *p = arg;

		if (!ctl_digits(p, 4, &y) || p[4] != '-' || !ctl_digits(p + 5, 2, &mo) ||
		    p[7] != '-' || !ctl_digits(p + 8, 2, &d))
			return -1;
		p += 10;
		if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > ctl_days_in_month(y, mo))
			return -1;
		if (*p != '\0') {
			if ((p[0] != 'T' && p[0] != ' ') || !ctl_digits(p + 1, 2, &h) ||
			    p[3] != ':' || !ctl_digits(p + 4, 2, &mi))
				return -1;
			p += 6;
			if (p[0] == ':') {
				if (!ctl_digits(p + 1, 2, &sec))
					return -1;
				p += 3;
				if (p[0] == '.') {
					int digits = 0;

					for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
						if (digits == CTL_TIME_FRAC_MAX)
							return -1;
						if (digits < 3)
							ms = ms * 10 + (*p - '0');
					}
					if (digits == 0)
						return -1;
					for (; digits < 3; digits++)
						ms *= 10;
				}
			}
			if (p[0] == 'Z') {
				p++;
			} else if (p[0] == '+' || p[0] == '-') {
				int oh, om = 0;

				if (!ctl_digits(p + 1, 2, &oh))
					return -1;
				if (p[3] == ':') {
					if (!ctl_digits(p + 4, 2, &om) || p[6] != '\0')
						return -1;
				} else if (p[3] != '\0' && (!ctl_digits(p + 3, 2, &om) ||
				    p[5] != '\0'))
					return -1;
				if (oh > 23 || om > 59)
					return -1;
				off = (p[0] == '-' ? -1 : 1) * (oh * 60 + om);
				p += strlen(p);
			}
			if (*p != '\0' || h > 23 || mi > 59 || sec > 60)
				return -1;
		}
		if (off != 0) {
			/* Local time minus its offset is UTC; timegm carries across days. */
			memset(&tm, 0, sizeof(tm));
			tm.tm_year = y - 1900;
			tm.tm_mon = mo - 1;
			tm.tm_mday = d;
			tm.tm_hour = h;
			tm.tm_min = mi;
			tm.tm_sec = sec;
			if ((t = timegm(&tm)) == (time_t)-1)
				return -1;
			t -= (time_t)off * 60;
			/* The form has four digits of year: 9999-12-31T23:30-01:00 is past it. */
			if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 1970 ||
			    tm.tm_year + 1900 > 9999)
				return -1;
			y = tm.tm_year + 1900;
			mo = tm.tm_mon + 1;
			d = tm.tm_mday;
			h = tm.tm_hour;
			mi = tm.tm_min;
			sec = tm.tm_sec;
		}
	}
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y % 10000, mo % 100, d % 100,
	    h % 100, mi % 100, sec % 100, ms % 1000);
	return 0;
}
