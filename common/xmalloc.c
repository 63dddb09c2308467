/* xmalloc.c: allocation that aborts with a message instead of returning NULL. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void
xmalloc_fail(size_t n)
{
	fprintf(stderr, "out of memory (allocating %zu bytes)\n", n);
	abort();
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		xmalloc_fail(n);
	return p;
}

/*
 * Small blocks by malloc and memset: glibc 2.36's calloc never takes from the thread
 * cache, which holds blocks up to about 1 KiB. Larger ones by calloc, whose fresh pages
 * stay untouched (and out of the RSS) until used.
 */
#define XCALLOC_SMALL 1024

void *
xcalloc(size_t nmemb, size_t size)
{
	size_t n;
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		xmalloc_fail(SIZE_MAX);
	n = nmemb != 0 && size != 0 ? nmemb * size : 1;
	if (n > XCALLOC_SMALL)
		p = calloc(1, n);
	else if ((p = malloc(n)) != NULL)
		memset(p, 0, n);
	if (p == NULL)
		xmalloc_fail(n);
	return p;
}

void *
xreallocarray(void *p, size_t nmemb, size_t size)
{
	void *q;

	if (size != 0 && nmemb > SIZE_MAX / size)
		xmalloc_fail(SIZE_MAX);
	q = realloc(p, nmemb != 0 && size != 0 ? nmemb * size : 1);
	if (q == NULL)
		xmalloc_fail(nmemb * size);
	return q;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0)
		xmalloc_fail(0);
	return n;
}
