/*
 * check_conf.c: unit tests for egressd.conf's parser on bytes (conf_parse_text,
 * egress/conf.c), one table and one tcase per behaviour: a file that is accepted with
 * its defaults, and the sockets one path cannot be twice (a principal's, the control
 * socket, the lease socket). Each refusal must name its line on stderr, which the tests
 * do not read: what they check is accepted or refused.
 */
#include "config.h"

#include <check.h>

#include <stdlib.h>
#include <string.h>

#include "egressd.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct conf_case {
	const char *group;      /* non-NULL: the row starts a tcase of this name */
	const char *text;
	bool ok;
};

static const struct conf_case cases[] = {
	{ "accepted", NULL, false },
	{ NULL, "principal a policy /a\n", true },
	{ NULL, "runtime-dir /r\nprincipal a socket /r/a.sock policy /a\n"
	    "principal b socket /r/b.sock policy /b\n", true },
	{ NULL, "runtime-dir /r\nlease /r/lease.sock\npolicy-dir /p\nprincipal a policy /a\n",
	    true },
	{ NULL, "principal a socket /elsewhere/a.sock policy /a\n", false },
	/* Found by fuzz_conf: each of these was accepted, and egressd bound one path twice. */
	{ "one_path_one_socket", NULL, false },
	{ NULL, "runtime-dir /r\nprincipal a socket /r/control.sock policy /a\n", false },
	{ NULL, "runtime-dir /r\ncontrol /r/c.sock\nprincipal d policy /a\n", true },
	{ NULL, "runtime-dir /r\ncontrol /r/c.sock\nprincipal c policy /a\n", false },
	{ NULL, "runtime-dir /r\nprincipal control policy /a\n", false },
	{ NULL, "runtime-dir /r\ncontrol /r/c.sock\nprincipal a socket /r/c.sock policy /a\n",
	    false },
	{ NULL, "runtime-dir /r\nprincipal a socket /r/x.sock policy /a\n"
	    "principal b socket /r/x.sock policy /b\n", false },
	{ NULL, "runtime-dir /r\nprincipal a socket /r/b.sock policy /a\n"
	    "principal b policy /b\n", false },
	{ NULL, "runtime-dir /r\nlease /r/l.sock\npolicy-dir /p\n"
	    "principal a socket /r/l.sock policy /a\n", false },
	{ NULL, "runtime-dir /r\ncontrol /r/c.sock\nlease /r/c.sock\npolicy-dir /p\n", false },
};

START_TEST(test_case)
{
	const struct conf_case *c = &cases[_i];
	struct conf *conf = conf_parse_text("check.conf", c->text, strlen(c->text));

	ck_assert_msg((conf != NULL) == c->ok, "%s: %s", c->ok ? "refused" : "accepted",
	    c->text);
	if (conf != NULL) {
		ck_assert_uint_eq(conf->textlen, strlen(c->text));
		ck_assert_ptr_nonnull(conf->control);
	}
	conf_free(conf);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("conf");
	SRunner *sr;
	int failed;

	for (size_t g = 0, end; g < NELEM(cases); g = end) {
		TCase *tc = tcase_create(cases[g].group);

		suite_add_tcase(s, tc);
		for (end = g + 1; end < NELEM(cases) && cases[end].group == NULL; end++)
			continue;
		tcase_add_loop_test(tc, test_case, (int)g + 1, (int)end);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
