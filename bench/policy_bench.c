/*
 * policy_bench: how a decision's cost grows with the policy's size. It builds a 10-rule
 * and a 100 000-rule policy, asks both the same questions (host_parse + policy_decide,
 * as egressd does for every request), and prints ns per decision and the ratio. The
 * issue's target: the large policy within 2x of the small one.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

#define BENCH_QUERIES 4096
#define BENCH_ROUNDS 7
#define BENCH_LOOKUPS 2000000

static char queries[BENCH_QUERIES][128];
static uint16_t qports[BENCH_QUERIES];

static struct policy *
bench_policy(size_t nrules)
{
	size_t cap = nrules * 64 + 4096, len = 0;
	char *text = xmalloc(cap);
	struct policy_diag d;
	struct policy *p;

	for (size_t i = 0; i < nrules; i++) {
		if (i % 10 == 9)
			len += (size_t)snprintf(text + len, cap - len,
			    "allow *.w%zu.cdn%zu.example 443\n", i, i % 97);
		else if (i % 10 == 8)
			len += (size_t)snprintf(text + len, cap - len,
			    "deny bad%zu.host%zu.example\n", i, i % 89);
		else
			len += (size_t)snprintf(text + len, cap - len,
			    "allow api%zu.service%zu.example 443,8000-8100\n", i, i % 101);
	}
	p = policy_load("bench", (const uint8_t *)text, len, NULL, &d);
	if (p == NULL) {
		fprintf(stderr, "bench policy refused: %s\n", d.errors[0]);
		exit(1);
	}
	policy_diag_free(&d);
	free(text);
	return p;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Best of BENCH_ROUNDS: ns per decision, parsing the host each time as egressd does. */
static double
bench_run(const struct policy *p, unsigned *allowed)
{
	double best = 1e30;

	for (int r = 0; r < BENCH_ROUNDS; r++) {
		double t0 = now_ns();
		unsigned ok = 0;

		for (size_t i = 0; i < BENCH_LOOKUPS; i++) {
			size_t q = i % BENCH_QUERIES;
			struct host h;
			const char *why;
			unsigned line;

			if (host_parse(queries[q], strlen(queries[q]), &h, &why) == 0 &&
			    policy_decide(p, &h, qports[q], &line) == EGRESS_ALLOWED)
				ok++;
		}
		double dt = (now_ns() - t0) / BENCH_LOOKUPS;
		if (dt < best)
			best = dt;
		*allowed = ok;
	}
	return best;
}

int
main(void)
{
	struct policy *small = bench_policy(10), *large = bench_policy(100000);
	unsigned a_small, a_large;
	double t_small, t_large;

	/* The same questions for both: a third hits an exact rule of the large policy, a
	 * third a wildcard of it, a third nothing; names of realistic length. */
	srand(42);
	for (size_t i = 0; i < BENCH_QUERIES; i++) {
		size_t k = (size_t)rand() % 100000;

		switch (i % 3) {
		case 0:
			k -= k % 10;
			snprintf(queries[i], sizeof(queries[i]), "api%zu.service%zu.example", k,
			    k % 101);
			break;
		case 1:
			k = k - k % 10 + 9;
			snprintf(queries[i], sizeof(queries[i]), "objects.w%zu.cdn%zu.example",
			    k, k % 97);
			break;
		default:
			snprintf(queries[i], sizeof(queries[i]), "unknown%zu.elsewhere.example",
			    k);
			break;
		}
		qports[i] = 443;
	}
	t_small = bench_run(small, &a_small);
	t_large = bench_run(large, &a_large);
	printf("policy_bench: %d decisions per round, best of %d rounds\n", BENCH_LOOKUPS,
	    BENCH_ROUNDS);
	printf("  %7zu hosts: %7.1f ns/decision (%u allowed per round)\n",
	    policy_rule_count(small), t_small, a_small);
	printf("  %7zu hosts: %7.1f ns/decision (%u allowed per round)\n",
	    policy_rule_count(large), t_large, a_large);
	printf("  ratio large/small: %.2f (target <= 2.00)\n", t_large / t_small);
	policy_free(small);
	policy_free(large);
	return 0;
}
