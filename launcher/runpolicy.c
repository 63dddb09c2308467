/*
 * runpolicy.c: the run's policy (--policy FILE and --allow, or --learn's 'allow *', and
 * --permit-range, sealed into the runtime folder) and the private egressd's configuration (runtime folder, control
 * socket, receipts, receipt key, checkpoint key, --resolver, --hosts). Trusts the option values only as
 * runopt.c's parsers give them back, and the paths only once runstate.c checked them
 * against what the sandbox binds: every line it writes is one value of a checked form.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "common.h"
#include "run.h"
#include "policy.h"

/* The run's policy, sealed into the runtime folder (later edits of FILE do not matter). */
static void
runpolicy_make(const char *out)
{
	struct policy_diag d;
	struct policy *p;
	char *text = xstrdup(""), *sealed, *t, *line;
	char cidr[EGRESS_ADDRSTRLEN + 4];
	const char *why;
	size_t len;

	if (runopt.learn != NULL) {
		/*
		 * Learn mode (egress-policy(5), 'allow *'): the rules refuse nothing; the
		 * address check (special-purpose ranges unless --permit-range), pinning, the
		 * SNI guard and the receipts are egressd's as in any run.
		 */
		free(text);
		text = xstrdup("allow * 1-65535\n");
	}
	if (runopt.policy != NULL) {
		uint8_t *buf = run_read_all(runopt.policy, &len);

		if (buf == NULL)
			run_setup_failed("--policy %s: %s", runopt.policy, strerror(errno));
		p = policy_load_inc(runopt.policy, buf, len, NULL, &runopt_includer, &d);
		free(buf);
		if (p == NULL)
			run_setup_failed("--policy %s: %s", runopt.policy,
			    d.nerrors ? d.errors[0] : "invalid");
		policy_diag_free(&d);
		free(text);
		text = policy_canonical(p, &len);
		policy_free(p);
	}
	for (size_t i = 0; i < runopt.allow.n; i++) {
		if ((line = runopt_allow_line(runopt.allow.v[i], &why)) == NULL)
			run_setup_failed("--allow %s: %s", run_shown(runopt.allow.v[i]), why);
		xasprintf(&t, "%s%s", text, line);
		free(line);
		free(text);
		text = t;
	}
	for (size_t i = 0; i < runopt.permits.n; i++) {
		if (runopt_permit_text(runopt.permits.v[i], cidr, &why) == -1)
			run_setup_failed("--permit-range %s: %s", run_shown(runopt.permits.v[i]), why);
		xasprintf(&t, "%spermit-range %s\n", text, cidr);
		free(text);
		text = t;
	}
	/* --allow @NAME lines are "include NAME": sealing expands them (egressd reads none). */
	p = policy_load_inc("(egress-run policy)", (const uint8_t *)text, strlen(text), NULL,
	    &runopt_includer, &d);
	free(text);
	if (p == NULL)
		run_setup_failed("%s", d.nerrors ? d.errors[0] : "invalid policy");
	policy_diag_free(&d);
	sealed = seal_policy(p, NULL, &len);
	policy_free(p);
	run_write_file(out, sealed, len, 0600);
	free(sealed);
}

/*
 * The run's checkpoint key (SPEC "egress-run for real work"): a fresh Ed25519 pair per
 * run, the private half in the runtime folder as egressd's signing-key (deleted once
 * egressd has stopped and written its shutdown checkpoint: runsup_stop), so that nobody
 * can sign a forged tail later; the public half appended to RECEIPTS.pub. Appended, not
 * replaced: runs share a receipts file and go on with its chain, and verifying the whole
 * file takes every run's key. RECEIPTS.pub is egress-run's state like the receipts: one
 * name, a regular file, outside what the sandbox binds (the workload could add a key of
 * its own to it).
 */
static void
runpolicy_signing_key(void)
{
	char err[512], *pem;
	size_t len;
	struct stat st;
	int fd;

	if ((size_t)snprintf(run.pubkey, sizeof(run.pubkey), "%s.pub", run.receipts) >=
	    sizeof(run.pubkey))
		run_setup_failed("the receipts path is too long for its public key file");
	fd = open(run.pubkey, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK | O_NOCTTY, 0644);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		run_setup_failed("public key file %s: %s", run.pubkey, fd == -1 ?
		    strerror(errno) : "not a regular file");
	if (st.st_nlink > 1)
		run_setup_failed("the public key file %s has %lu names (hard links), which "
		    "egress-run cannot check against the sandbox's paths: use another "
		    "--receipts FILE", run.pubkey, (unsigned long)st.st_nlink);
	runstate_refuse_bound("public key file", run.pubkey, run.pubkey,
	    runstate_receipts_hint);
	snprintf(run.signkey, sizeof(run.signkey), "%s/signing.key", run.rtdir);
	if (egress_ed25519_generate(run.signkey, &pem, &len, err, sizeof(err)) == -1)
		run_setup_failed("%s", err);
	if (write(fd, pem, len) != (ssize_t)len || fsync(fd) == -1 || close(fd) == -1)
		run_setup_failed("writing %s: %s", run.pubkey, strerror(errno));
	free(pem);
}

/*
 * The private egressd's files in a fresh runtime folder: the receipts file (created, one
 * name, outside the sandbox), the run's principal name, its sealed policy, a receipt key,
 * the checkpoint key (its public half beside the receipts) and egressd.conf. p gets the paths runsup_start_private starts egressd with.
 */
void
runpolicy_private(struct runpolicy_paths *p)
{
	char key[PATH_MAX + 16], err[512], res[EGRESS_ADDRSTRLEN + 8];
	char hosts_abs[PATH_MAX], *text, *t;
	const char *why;
	uint8_t r[4];

	run_need_program("egressd", p->egressd, sizeof(p->egressd));
	runstate_make_rtdir();
	runstate_default_receipts();
	{
		/*
		 * The private egressd gets this one file read-write, not its folder (which may
		 * be / or a home): it must exist, and its real path is what is bound.
		 */
		char real[PATH_MAX];
		int rfd = open(run.receipts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY, 0600);
		struct stat rst;

		if (rfd == -1 || fstat(rfd, &rst) == -1 || !S_ISREG(rst.st_mode))
			run_setup_failed("receipts %s: %s", run.receipts, rfd == -1 ? strerror(errno) :
			    "not a regular file");
		close(rfd);
		/* Another name of the file may lie anywhere, a bound folder included. */
		if (rst.st_nlink > 1)
			run_setup_failed("the receipts file %s has %lu names (hard links), which "
			    "egress-run cannot check against the sandbox's paths: use another "
			    "--receipts FILE", run.receipts, (unsigned long)rst.st_nlink);
		if (realpath(run.receipts, real) == NULL)
			run_setup_failed("receipts %s: %s", run.receipts, strerror(errno));
		snprintf(run.receipts, sizeof(run.receipts), "%s", real);
	}
	/* Once both exist, each by itself (a --ro of the file alone, a symlinked folder). */
	runstate_refuse_bound("runtime folder", run.rtdir, run.rtdir,
	    "set XDG_RUNTIME_DIR elsewhere");
	runstate_refuse_bound("receipts file", run.receipts, run.receipts, runstate_receipts_hint);
	if (!runopt_conf_safe_path(run.receipts))
		run_setup_failed("the receipts file %s is not a path egressd's configuration "
		    "can carry (printable ASCII without blanks or '#')", run_shown(run.receipts));
	if (RAND_bytes(r, sizeof(r)) != 1)
		run_setup_failed("no random bytes");
	snprintf(run.principal, sizeof(run.principal), "run-%d-", (int)getpid());
	egress_hex(r, sizeof(r), run.principal + strlen(run.principal));
	snprintf(p->pol, sizeof(p->pol), "%s/policy.sealed", run.rtdir);
	runpolicy_make(p->pol);
	snprintf(key, sizeof(key), "%s/receipt.key", run.rtdir);
	if (egress_key_generate(key, err, sizeof(err)) == -1)
		run_setup_failed("%s", err);
	runpolicy_signing_key();
	if ((size_t)snprintf(run.sock, sizeof(run.sock), "%s/run/%s.sock", run.rtdir, run.principal) >=
	    sizeof(run.sock))
		run_setup_failed("runtime folder path too long");
	snprintf(p->ctl, sizeof(p->ctl), "%s/run/control.sock", run.rtdir);
	/*
	 * Every value below is a checked path (runstate_make_rtdir,
	 * runstate_default_receipts, the realpath of --hosts) or a value written back from
	 * its parse: one line each.
	 */
	xasprintf(&text, "runtime-dir %s/run\ncontrol %s\nreceipts %s\nreceipt-key %s\n"
	    "signing-key %s\nshutdown-grace 1\n", run.rtdir, p->ctl, run.receipts, key,
	    run.signkey);
	for (size_t i = 0; i < runopt.resolvers.n; i++) {
		if (runopt_resolver_text(runopt.resolvers.v[i], res, &why) == -1)
			run_setup_failed("--resolver %s: %s", run_shown(runopt.resolvers.v[i]), why);
		xasprintf(&t, "%sresolver %s\n", text, res);
		free(text);
		text = t;
	}
	if (runopt.hosts != NULL) {
		if (realpath(runopt.hosts, hosts_abs) == NULL)
			run_setup_failed("--hosts %s: %s", run_shown(runopt.hosts), strerror(errno));
		if (!runopt_conf_safe_path(hosts_abs))
			run_setup_failed("--hosts %s: its real path %s is not one egressd's "
			    "configuration can carry (printable ASCII without blanks or '#')",
			    run_shown(runopt.hosts), run_shown(hosts_abs));
		xasprintf(&t, "%shosts %s\n", text, hosts_abs);
		free(text);
		text = t;
	}
	snprintf(p->conf, sizeof(p->conf), "%s/egressd.conf", run.rtdir);
	run_write_file(p->conf, text, strlen(text), 0600);
	free(text);
}
