/*
 * check_xmalloc.c: unit tests for common/xmalloc.c: xcalloc's blocks are zeroed, small
 * (malloc and memset) and large (calloc) alike, also when the heap hands back a block
 * freed dirty; a count times a size that overflows, or memory that is not there, aborts
 * rather than returning a short or NULL block.
 */
#include "config.h"

#include <check.h>

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* AddressSanitizer reserves more address space than the limit of the second abort case,
 * and answers a refused allocation itself: that case runs without it only. */
#if defined(__SANITIZE_ADDRESS__)
#define XM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XM_ASAN 1
#endif
#endif
#ifdef XM_ASAN
#define XM_ABORT_CASES 1
#else
#define XM_ABORT_CASES 2
#endif

static const struct {
	size_t nmemb, size;
} zero_cases[] = {
	{ 0, 0 }, { 1, 0 }, { 0, 8 }, { 1, 1 }, { 3, 7 }, { 1, 1023 }, { 1, 1024 }, { 1, 1025 },
	{ 16, 64 }, { 17, 64 }, { 1, 200000 }, { 4096, 300 },
};

START_TEST(test_zeroed)
{
	size_t n = zero_cases[_i].nmemb * zero_cases[_i].size;
	unsigned char *p;

	/* A dirty block of the same size freed just before: the next one may be it. */
	p = xmalloc(n ? n : 1);
	memset(p, 0xa5, n ? n : 1);
	free(p);
	p = xcalloc(zero_cases[_i].nmemb, zero_cases[_i].size);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(p[i] == 0, "byte %zu of %zu not zero", i, n);
	free(p);
}
END_TEST

/* _i 0: a product beyond SIZE_MAX; 1: more than the address space limit allows. */
START_TEST(test_abort)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct rlimit rl = { 64 << 20, 64 << 20 };

		close(STDERR_FILENO);
		if (_i == 0)
			(void)xcalloc(SIZE_MAX / 2, 3);
		else {
			setrlimit(RLIMIT_AS, &rl);
			(void)xcalloc(1, (size_t)1 << 30);
		}
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	ck_assert_int_eq(WTERMSIG(st), SIGABRT);
}
END_TEST

static Suite *
xmalloc_suite(void)
{
	Suite *s = suite_create("xmalloc");
	TCase *tc = tcase_create("xcalloc");

	tcase_add_loop_test(tc, test_zeroed, 0, NELEM(zero_cases));
	tcase_add_loop_test(tc, test_abort, 0, XM_ABORT_CASES);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(xmalloc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
