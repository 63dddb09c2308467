/*
 * include.c: the opener the programs (egress-policy, egress-run) hand policy_load_inc, so
 * that "include NAME" reads $(datadir)/egress/templates/NAME.policy and "include ./PATH"
 * a file beside the including one. The parser itself reads no file; this is the one part
 * of libpolicy that does I/O, and egressd does not use it (a policy with include lines is
 * sealed before egressd loads it).
 *
 * Trusts nothing it reads: the bytes go to the parser like the top file's. It trusts the
 * template NAME only as far as the parser checked it (a plain identifier, so it names a
 * file of the template folder and nothing else), and the folder named by
 * $EGRESS_TEMPLATE_DIR as the invoking user's own choice (these programs run with the
 * caller's rights; tests point it at the source tree's templates/).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"

#ifndef EGRESS_TEMPLATE_DIR
#define EGRESS_TEMPLATE_DIR "/usr/local/share/egress/templates"
#endif

const char *
policy_template_dir(void)
{
	const char *dir = getenv("EGRESS_TEMPLATE_DIR");

	return dir != NULL && dir[0] != '\0' ? dir : EGRESS_TEMPLATE_DIR;
}

/*
 * Removes "." and "name/.." components in place, lexically: "sub/../c.policy" is
 * "c.policy", so that one file has one name in messages, and the parser's cycle check by
 * name sees the top file again (its check by dev:ino covers any other spelling). A ".."
 * that would climb above the start stays.
 */
static void
include_clean(char *path)
{
	char *seg[EGRESS_POLICY_MAX_LINE / 2 + 2], *out = path, *s = path;
	size_t n = 0, keep = 0;        /* keep: leading ".." components, never removed */
	bool abs = path[0] == '/';
	size_t slashes = 0;

	for (const char *c = path; *c != '\0'; c++)
		slashes += *c == '/';
	if (slashes + 1 > sizeof(seg) / sizeof(seg[0]))
		return;                /* left as it is: the kernel resolves it the same */
	if (abs)
		s++;
	while (*s != '\0') {
		char *e = strchr(s, '/');

		if (e != NULL)
			*e = '\0';
		if (strcmp(s, ".") == 0 || *s == '\0')
			;
		else if (strcmp(s, "..") == 0 && n > keep)
			n--;
		else {
			if (strcmp(s, "..") == 0 && !abs)
				keep++;
			if (strcmp(s, "..") != 0 || !abs)
				seg[n++] = s;
		}
		if (e == NULL)
			break;
		s = e + 1;
	}
	if (abs)
		*out++ = '/';
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(seg[i]);

		memmove(out, seg[i], l);
		out += l;
		if (i + 1 < n)
			*out++ = '/';
	}
	*out = '\0';
}

/* The path "include TARGET" in from names: from's folder joined with TARGET. */
static char *
include_path(const struct policy_include_files *f, const char *from, const char *target,
    bool template)
{
	const char *slash = strrchr(from, '/');
	char *path;

	if (template)
		xasprintf(&path, "%s/%s.policy", f->template_dir != NULL ? f->template_dir :
		    policy_template_dir(), target);
	else {
		if (strncmp(target, "./", 2) == 0)
			target += 2;      /* "dir/x", not "dir/./x", in messages */
		if (slash == NULL)
			path = xstrdup(target);
		else
			xasprintf(&path, "%.*s/%s", (int)(slash - from), from, target);
		include_clean(path);
		if (path[0] == '\0') {
			free(path);
			path = xstrdup(".");
		}
	}
	return path;
}

int
policy_include_open(void *arg, const char *from, const char *target, bool template,
    struct policy_include_file *out, char *why, size_t whylen)
{
	const struct policy_include_files *f = arg;
	char *path = include_path(f, from, target, template);
	struct stat st;
	ssize_t n;
	int fd;

	memset(out, 0, sizeof(*out));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) == -1) {
		if (errno == ENOENT && template)
			snprintf(why, whylen, "no such template in %s",
			    f->template_dir != NULL ? f->template_dir : policy_template_dir());
		else
			snprintf(why, whylen, "%s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > (off_t)EGRESS_POLICY_MAX_BYTES) {
		snprintf(why, whylen, "%s: not a regular file of at most %u bytes", path,
		    EGRESS_POLICY_MAX_BYTES);
		goto fail;
	}
	out->buf = xmalloc((size_t)st.st_size + 1);
	/* One byte more than its size: a file that grows while read is noticed. */
	n = pread(fd, out->buf, (size_t)st.st_size + 1, 0);
	if (n < 0 || n > st.st_size) {
		snprintf(why, whylen, "%s: %s", path, n < 0 ? strerror(errno) :
		    "changed while read");
		free(out->buf);
		out->buf = NULL;
		goto fail;
	}
	out->len = (size_t)n;
	out->name = path;
	policy_include_id(fd, out->id);
	close(fd);
	return 0;
fail:
	close(fd);
	free(path);
	return -1;
}

void
policy_include_id(int fd, char id[64])
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		id[0] = '\0';
	else
		snprintf(id, 64, "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
}
