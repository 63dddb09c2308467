/*
 * arglist.c: a growable, NULL-terminated argument vector (OpenSSH's addargs() is the
 * model), so that a command line built from the user's options has no fixed bound to
 * overrun; and the check of an environment variable's name that such a command passes. Each element is a copy; the vector owns it. Trusts nothing: every length is
 * checked before it is used, and allocation failure aborts (xmalloc).
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void
arglist_add(struct arglist *a, const char *s)
{
	if (a->num + 2 > a->nalloc) {
		size_t n = a->nalloc ? a->nalloc * 2 : 32;

		if (n < a->nalloc || n > SIZE_MAX / sizeof(*a->list)) {
			fprintf(stderr, "arglist_add: too many arguments\n");
			abort();
		}
		a->list = xreallocarray(a->list, n, sizeof(*a->list));
		a->nalloc = n;
	}
	a->list[a->num++] = xstrdup(s);
	a->list[a->num] = NULL;
}

void
arglist_addf(struct arglist *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r == -1) {
		fprintf(stderr, "arglist_addf: out of memory\n");
		abort();
	}
	arglist_add(a, s);
	free(s);
}

void
arglist_addv(struct arglist *a, const char *const *v)
{
	for (; *v != NULL; v++)
		arglist_add(a, *v);
}

void
arglist_free(struct arglist *a)
{
	for (size_t i = 0; i < a->num; i++)
		free(a->list[i]);
	free(a->list);
	a->list = NULL;
	a->num = a->nalloc = 0;
}

/* A portable shell name (POSIX: a letter or '_', then letters, digits and '_'). */
bool
egress_env_name_ok(const char *s, size_t n)
{
	if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' &&
	    s[0] <= 'z')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}
