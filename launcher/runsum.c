/*
 * runsum.c: the end-of-run summary on stderr, from egressd's own accounting of the run's
 * principal (runsup_request_summary), and where a private egressd's public checkpoint
 * key is; and --learn's draft policy, from this run's receipts (the draft writer of
 * egress-policy suggest, policy/suggest.c, over the private egressd's receipts file,
 * which lies outside the sandbox, read for the run's principal only). Trusts egressd's numbers but not the names in them: a host that is not canonical, a reason that is not egressd's form is shown
 * escaped (hex, "(unknown)"), so that no byte from the network reaches the terminal.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "log.h"
#include "run.h"
#include "policy.h"
#include "suggest.h"

struct runsum_dest {
	char key[EGRESS_HOST_MAX + 16];
	bool allowed;
	char reason[32];
	unsigned count;
	unsigned long long up, down;
};

static void
runsum_human(unsigned long long n, char *out, size_t len)
{
	if (n < 10240)
		snprintf(out, len, "%llu B", n);
	else if (n < 10485760ULL)
		snprintf(out, len, "%.1f KiB", (double)n / 1024);
	else
		snprintf(out, len, "%.1f MiB", (double)n / 1048576);
}

/*
 * A destination as the summary shows it. The host must be a canonical name or address
 * (host_parse gives it back unchanged); anything else is shown as "(raw)" and hex, so
 * that no byte from the network (an escape sequence, a newline) reaches the terminal.
 */
static void
runsum_key(const char *host, json_t *port, char *out, size_t len)
{
	char p[16] = "";
	struct host h;
	const char *why;

	if (json_is_integer(port) && json_integer_value(port) >= 0 &&
	    json_integer_value(port) <= 65535)
		snprintf(p, sizeof(p), ":%d", (int)json_integer_value(port));
	if (host == NULL || host[0] == '\0')
		snprintf(out, len, "(no host)%s", p);
	else if (strlen(host) <= EGRESS_HOST_MAX &&
	    host_parse(host, strlen(host), &h, &why) == 0 && strcmp(h.name, host) == 0)
		snprintf(out, len, h.kind == HOST_IPV6 ? "[%s]%s" : "%s%s", host, p);
	else {
		char hex[2 * 32 + 1];
		size_t n = strlen(host) < 32 ? strlen(host) : 32;

		egress_hex((const uint8_t *)host, n, hex);
		snprintf(out, len, "(raw) %s%s%s", hex, n < strlen(host) ? "..." : "", p);
	}
}

/* A reason as egressd names them (lower case, digits, '-'), else "(unknown)". */
static const char *
runsum_reason(const char *r)
{
	if (r == NULL || r[0] == '\0' || strlen(r) > 31 ||
	    strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(r))
		return "(unknown)";
	return r;
}

/*
 * Where a private egressd's public checkpoint key is, and how to use it: the receipts can
 * be checked later by anyone with that file alone (the private half is gone by now).
 */
static void
runsum_pubkey(const struct run_state *rs)
{
	if (rs->lease || rs->pubkey[0] == '\0')
		return;
	fprintf(stderr, "egress-run: checkpoints signed, public key in %s: egressctl receipts "
	    "verify --file %s --pubkey %s checks the receipts with nothing secret\n",
	    run_shown(rs->pubkey), run_shown(rs->receipts), run_shown(rs->pubkey));
}

/*
 * What this run reached and was refused: egressd's own accounting of the run's principal
 * (runsup_request_summary, taken by runsup_stop once its tunnels were closed), never a
 * re-read of the receipts file. rs is what the run set up (run.c's run).
 */
void
runsum_print(const struct run_state *rs)
{
	struct runsum_dest *d;
	json_t *arr, *o;
	json_int_t dropped;
	size_t nd = 0, i;

	if (rs->summary == NULL) {
		log_warnx("egressd gave no summary of the run; egressctl receipts --principal %s "
		    "shows its receipts", run_shown(rs->principal));
		runsum_pubkey(rs);
		return;
	}
	d = xcalloc(RUN_SUMMARY_MAX, sizeof(*d));
	arr = json_object_get(rs->summary, "destinations");
	dropped = json_integer_value(json_object_get(rs->summary, "dropped"));
	json_array_foreach(arr, i, o) {
		json_t *up = json_object_get(o, "bytes_up"), *down = json_object_get(o,
		    "bytes_down"), *count = json_object_get(o, "count");

		if (nd == RUN_SUMMARY_MAX) {
			dropped += json_integer_value(count);
			continue;
		}
		runsum_key(json_string_value(json_object_get(o, "host")),
		    json_object_get(o, "port"), d[nd].key, sizeof(d[nd].key));
		d[nd].allowed = json_is_true(json_object_get(o, "allowed"));
		snprintf(d[nd].reason, sizeof(d[nd].reason), "%s",
		    runsum_reason(json_string_value(json_object_get(o, "reason"))));
		d[nd].count = json_integer_value(count) > 0 ?
		    (unsigned)json_integer_value(count) : 0;
		d[nd].up = json_integer_value(up) > 0 ? (unsigned long long)json_integer_value(up) : 0;
		d[nd].down = json_integer_value(down) > 0 ?
		    (unsigned long long)json_integer_value(down) : 0;
		nd++;
	}
	if (!rs->lease)
		fprintf(stderr, "egress-run: %zu destination%s, receipts in %s (principal %s)\n",
		    nd, nd == 1 ? "" : "s", rs->receipts, run_shown(rs->principal));
	else
		fprintf(stderr, "egress-run: %zu destination%s, receipts kept by the system "
		    "egressd (principal %s)\n", nd, nd == 1 ? "" : "s", run_shown(rs->principal));
	for (i = 0; i < nd; i++) {
		char hup[32], hdown[32];

		if (d[i].allowed) {
			runsum_human(d[i].up, hup, sizeof(hup));
			runsum_human(d[i].down, hdown, sizeof(hdown));
			fprintf(stderr, "  allowed  %-40s %u× %s up, %s down\n", d[i].key,
			    d[i].count, hup, hdown);
		} else
			fprintf(stderr, "  denied   %-40s %u× %s\n", d[i].key, d[i].count,
			    d[i].reason);
	}
	if (dropped > 0)
		fprintf(stderr, "  (%lld more requests to further destinations not listed)\n",
		    (long long)dropped);
	runsum_pubkey(rs);
	free(d);
}


/* --- --learn FILE ---------------------------------------------------------------------- */

static struct stat runsum_learn_st;

/*
 * Opens FILE before anything starts (a path egress-run cannot write is a set-up failure,
 * not a surprise after a long run) and keeps the descriptor: FILE may lie in a folder
 * the workload can write (the current directory is bound read-write), and a symlink it
 * puts there must not redirect the write at the end. Not truncated yet: an old draft
 * stays until this run has a new one.
 */
void
runsum_learn_open(void)
{
	int fd = open(runopt.learn, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
	    O_NONBLOCK, 0644);

	if (fd == -1)
		run_setup_failed("--learn %s: %s", run_shown(runopt.learn), strerror(errno));
	if (fstat(fd, &runsum_learn_st) == -1 || !S_ISREG(runsum_learn_st.st_mode)) {
		close(fd);
		run_setup_failed("--learn %s: not a regular file", run_shown(runopt.learn));
	}
	run.learn_fd = run_high_fd(fd);
}

/* One line on stderr before the command starts, whatever --quiet says. */
void
runsum_learn_announce(void)
{
	fprintf(stderr, "egress-run: learn mode: every public destination is allowed on every "
	    "port (special-purpose addresses still refused%s, every attempt a receipt); the "
	    "draft policy goes to %s at the end\n",
	    runopt.permits.n ? " outside --permit-range" : "", run_shown(runopt.learn));
}

/*
 * The draft of this run's receipts (opens and not-allowlisted denials of its principal)
 * into FILE, once egressd has stopped and written every close. 0, or -1 (said why) when
 * it could not be made or written, or when FILE was replaced during the run.
 */
int
runsum_learn_write(const struct run_state *rs)
{
	struct suggest sg;
	struct stat st;
	char *source, *draft;
	size_t len;
	int rc = 0;

	if (rs->learn_fd == -1)
		return -1;
	suggest_init(&sg, rs->principal);
	if (suggest_file(&sg, rs->receipts) == -1) {
		log_warnx("--learn %s: no draft: the receipts %s could not be read",
		    run_shown(runopt.learn), run_shown(rs->receipts));
		suggest_free(&sg);
		return -1;
	}
	xasprintf(&source, "egress-run --learn from the receipts of principal %s in %s",
	    rs->principal, rs->receipts);
	draft = suggest_draft(&sg, source, &len);
	free(source);
	/* The path must still name the file opened at the start (see runsum_learn_open). */
	if (lstat(runopt.learn, &st) == -1 || st.st_dev != runsum_learn_st.st_dev ||
	    st.st_ino != runsum_learn_st.st_ino) {
		log_warnx("--learn %s: the file was moved or replaced during the run (it lies "
		    "where the workload can write): no draft written; egress-policy suggest "
		    "--principal %s %s writes it", run_shown(runopt.learn), run_shown(rs->principal),
		    run_shown(rs->receipts));
		rc = -1;
	} else if (ftruncate(rs->learn_fd, 0) == -1 ||
	    pwrite(rs->learn_fd, draft, len, 0) != (ssize_t)len || fsync(rs->learn_fd) == -1) {
		log_warnx("--learn %s: %s", run_shown(runopt.learn), strerror(errno));
		rc = -1;
	} else
		fprintf(stderr, "egress-run: draft policy of %zu destination%s written to %s: "
		    "review it, then egress-policy seal %s > POLICY.sealed\n", sg.nobs,
		    sg.nobs == 1 ? "" : "s", run_shown(runopt.learn), run_shown(runopt.learn));
	suggest_free(&sg);
	free(draft);
	return rc;
}
