/*
 * daemon.c: egressd's process-wide state and the helpers every part of the daemon calls
 * (ids, policy files, retired synthetic ranges), apart from egressd.c's main so that the
 * unit tests link the daemon's objects (libegressd.a) with their own main. Trusts the
 * policy files it reads only as far as policy_load's checks (and, with policy-pubkey,
 * policy_sig_check's) go.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "egressd.h"

struct event_base *egressd_base;
const struct conf *egressd_conf;
struct egress_key *egressd_policy_key;
bool egressd_stopping;
time_t egressd_started;
uid_t egressd_uid;
pid_t egressd_pid;
gid_t egressd_gid;

static struct cidr synth_retired[EGRESSD_SYNTH_RETIRED];  /* oldest first */
static size_t nsynth_retired;

/*
 * A connection's id: 8 random bytes in hex. They are drawn 64 ids at a time: each
 * RAND_bytes call also asks getpid(2) (OpenSSL's fork check), a system call of every
 * setup otherwise. Drawn bytes are used once and wiped.
 */
void
egressd_new_id(char out[24])
{
	static uint8_t pool[64 * 8];
	static size_t used = sizeof(pool);

	if (used == sizeof(pool)) {
		if (RAND_bytes(pool, sizeof(pool)) != 1)
			abort();
		used = 0;
	}
	out[0] = 'c';
	out[1] = '-';
	egress_hex(pool + used, 8, out + 2);
	memset(pool + used, 0, 8);
	used += 8;
}

struct policy *
egressd_load_policy(const char *file, char *err, size_t errlen)
{
	return egressd_load_policy_as(file, MW_OPEN_CONF_FILE, -1, err, errlen);
}

/*
 * Reads and loads a policy. The engine holds no policy-key: with one configured, the
 * monitor checks the MAC (its verdict and words are those of policy_load with the key)
 * and the engine then loads the same bytes without it.
 */
struct policy *
egressd_load_policy_as(const char *file, enum mw_open_kind kind, int peer_fd, char *err,
    size_t errlen)
{
	struct policy_diag d;
	struct policy *p;
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd;

	if ((fd = engine_open(file, kind, peer_fd)) == -1) {
		snprintf(err, errlen, "policy %s: %s", file, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > (off_t)EGRESS_POLICY_MAX_BYTES) {
		snprintf(err, errlen, "policy %s: not a regular file of at most %u bytes", file,
		    EGRESS_POLICY_MAX_BYTES);
		close(fd);
		return NULL;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	n = pread(fd, buf, (size_t)st.st_size + 1, 0);
	if (n < 0 || n > st.st_size) {
		snprintf(err, errlen, "policy %s: changed while read", file);
		free(buf);
		close(fd);
		return NULL;
	}
	p = policy_load(file, buf, (size_t)n, egressd_policy_key, &d);
	free(buf);
	if (p == NULL)
		snprintf(err, errlen, "%s", d.nerrors ? d.errors[0] : "invalid policy");
	policy_diag_free(&d);
	if (p != NULL && egressd_policy_key == NULL && egressd_conf != NULL &&
	    egressd_conf->policy_key != NULL) {
		char digest[EGRESS_DIGEST_STRLEN];

		policy_digest(p, digest);
		if (engine_maccheck(fd, file, digest, err, errlen) != NULL) {
			policy_free(p);
			p = NULL;
		}
	}
	/*
	 * policy-pubkey: beside any policy-key (both must hold), a signature by a key whose
	 * private half egressd never sees. err then says which of no seal, no signature or
	 * a signature that does not verify it was.
	 */
	if (p != NULL && egressd_conf != NULL && egressd_conf->npolicy_pubkeys > 0 &&
	    policy_sig_check(p, file, egressd_conf->policy_pubkeys,
	    egressd_conf->npolicy_pubkeys, NULL, err, errlen) != POLICY_SIG_OK) {
		policy_free(p);
		p = NULL;
	}
	close(fd);
	return p;
}

bool
egressd_synth_retired(const struct addr *a)
{
	for (size_t i = 0; i < nsynth_retired; i++)
		if (cidr_contains(&synth_retired[i], a))
			return true;
	return false;
}

/* A synthetic range given up on SIGHUP: its addresses stay bad-host (the oldest goes). */
void
egressd_synth_retire(const struct cidr *range)
{
	if (nsynth_retired == EGRESSD_SYNTH_RETIRED) {
		memmove(synth_retired, synth_retired + 1,
		    (EGRESSD_SYNTH_RETIRED - 1) * sizeof(*synth_retired));
		nsynth_retired--;
	}
	synth_retired[nsynth_retired++] = *range;
}
