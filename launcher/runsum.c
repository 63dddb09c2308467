/*
 * runsum.c: the end-of-run summary on stderr, from egressd's own accounting of the run's
 * principal (runsup_request_summary), and where a private egressd's public checkpoint
 * key is. Trusts egressd's numbers but not the names in them: a host that is not canonical, a reason that is not egressd's form is shown
 * escaped (hex, "(unknown)"), so that no byte from the network reaches the terminal.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common.h"
#include "log.h"
#include "run.h"
#include "policy.h"

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

