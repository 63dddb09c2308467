/*
 * egressd: the network egress broker. main() checks egressd.conf (-t) and becomes the
 * monitor (monitor.c: keys, receipts file, sockets), which execs this program again as
 * the engine (-E, below: frontends, decisions, DNS, relay, as an unprivileged user under
 * an allow-list seccomp filter). The engine's signal handlers are here: SIGTERM drains,
 * SIGHUP re-reads the principals of the file (the monitor forwards both).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "egressd.h"

static struct conf *conf_current;
static struct event *ev_term, *ev_int, *ev_hup, *ev_grace, *ev_drain, *ev_log;

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: egressd [-dSt] -c FILE\n");
	exit(2);
}

static void
egressd_exit_if_drained(void)
{
	if (egressd_stopping && conn_count() == 0)
		event_base_loopexit(egressd_base, NULL);
}

static void
drain_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	egressd_exit_if_drained();
}

/* The held log lines are due (log_flush_due): an idle engine writes them too. */
static void
log_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	log_flush();
}

/*
 * The end of a loop turn: the turn's log lines wait (at most LOG_HOLD_MS) with those of
 * the turns before, and go in one write(2); a timer writes them when no turn comes.
 * Writing them every turn was one call per tunnel setup (bench/README.md, issue 17).
 */
static void
log_turn_end(void)
{
	long ms = log_flush_due();
	struct timeval tv;

	if (ms < 0 || (ev_log != NULL && evtimer_pending(ev_log, NULL)))
		return;
	if (ev_log == NULL) {
		log_flush();            /* no timer (out of memory at start): every turn */
		return;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000 + 1000;        /* past the due time, not before */
	evtimer_add(ev_log, &tv);
}

static void
grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct principal *p;
	struct conn *c;

	(void)fd;
	(void)what;
	(void)arg;
	/* The grace period is over: whatever is left closes with shutdown receipts. */
	TAILQ_FOREACH(p, &principals, entry)
		while ((c = TAILQ_FIRST(&p->conns)) != NULL)
			conn_abort(c, EGRESS_SHUTDOWN, "shutdown");
	event_base_loopexit(egressd_base, NULL);
}

static void
term_cb(evutil_socket_t sig, short what, void *arg)
{
	struct principal *p;
	struct timeval grace = { (time_t)egressd_conf->grace, 0 }, tick = { 0, 100000 };

	(void)what;
	(void)arg;
	if (egressd_stopping)
		return;
	egressd_stopping = true;
	log_info("event=stopping signal=%d connections=%u grace_s=%u", (int)sig, conn_count(),
	    egressd_conf->grace);
	TAILQ_FOREACH(p, &principals, entry)
		event_del(p->ev_accept);
	ev_grace = evtimer_new(egressd_base, grace_cb, NULL);
	evtimer_add(ev_grace, &grace);
	ev_drain = event_new(egressd_base, -1, EV_PERSIST, drain_cb, NULL);
	event_add(ev_drain, &tick);
	egressd_exit_if_drained();
}

static bool
egressd_cidr_equal(const struct cidr *a, const struct cidr *b)
{
	return a->plen == b->plen && addr_equal(&a->a, &b->a);
}

/*
 * SIGHUP, synthetic-range and synthetic-max (nc validated both). A handed-out address
 * either keeps its name or stops meaning one; it never silently becomes another name's.
 * A new max applies to every live map at once (a lower one recycles the least recently
 * used names, bad-host from then on). A new range releases every live map (its
 * addresses are bad-host: the range is remembered as retired); the next question of a
 * principal makes a map of the new range. Clients hold answers for TTL 1 only.
 */
static void
egressd_synth_reload(const struct conf *nc)
{
	struct principal *p;
	char text[EGRESS_ADDRSTRLEN];

	addr_format(&nc->synth_range.a, text);
	if (!egressd_cidr_equal(&conf_current->synth_range, &nc->synth_range)) {
		egressd_synth_retire(&conf_current->synth_range);
		TAILQ_FOREACH(p, &principals, entry) {
			size_t n;

			if (p->synth == NULL)
				continue;
			n = synth_count(p->synth);
			p->synth_recycled += synth_recycled(p->synth) + n;
			synth_free(p->synth);
			p->synth = NULL;
			log_info("event=reload principal=%s synthetic-range=%s/%u released=%zu",
			    p->name, text, (unsigned)nc->synth_range.plen, n);
		}
	} else if (conf_current->synth_max != nc->synth_max) {
		TAILQ_FOREACH(p, &principals, entry)
			if (p->synth != NULL)
				log_info("event=reload principal=%s synthetic-max=%zu recycled=%zu",
				    p->name, nc->synth_max, synth_set_max(p->synth, nc->synth_max));
	}
	if (!egressd_cidr_equal(&conf_current->synth_range, &nc->synth_range) ||
	    conf_current->synth_max != nc->synth_max)
		log_info("event=reload synthetic-range=%s/%u synthetic-max=%zu", text,
		    (unsigned)nc->synth_range.plen, nc->synth_max);
	conf_current->synth_range = nc->synth_range;
	conf_current->synth_max = nc->synth_max;
}

/* Two strings, either of them NULL, the same. */
static bool
egressd_same_str(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/* The parent-proxy settings of a and b the same: the line, the credential, the CA bytes. */
static bool
egressd_same_parent(const struct conf_parent *a, const struct conf_parent *b)
{
	return egressd_same_str(a->url, b->url) && a->resolve_parent == b->resolve_parent &&
	    egressd_same_str(a->auth_b64, b->auth_b64) &&
	    egressd_same_str(a->ca_file, b->ca_file) && a->ca_pem_len == b->ca_pem_len &&
	    (a->ca_pem_len == 0 || memcmp(a->ca_pem, b->ca_pem, a->ca_pem_len) == 0);
}

/*
 * SIGHUP: principals of the file appear and disappear; a live one keeps its policy; the
 * synthetic settings apply at once (egressd_synth_reload). The rest of the running
 * configuration stays as it started; a changed parent-proxy (its line, the credential in
 * its auth file, its ca file) is said in the log, since it applies only at the next start.
 */
static void
hup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct conf *nc;
	struct principal *p, *next;
	char err[512];

	(void)sig;
	(void)what;
	(void)arg;
	if ((nc = conf_load(conf_current->file)) == NULL) {
		log_error("event=reload result=failed detail=\"configuration invalid, kept the "
		    "running one\"");
		return;
	}
	for (p = TAILQ_FIRST(&principals); p != NULL; p = next) {
		bool keep = false;

		next = TAILQ_NEXT(p, entry);
		if (!p->from_conf)
			continue;
		for (size_t i = 0; i < nc->nprincipals; i++)
			if (strcmp(nc->principals[i].name, p->name) == 0)
				keep = true;
		if (!keep)
			principal_remove(p, "reload");
	}
	egressd_synth_reload(nc);
	if (!egressd_same_parent(&conf_current->parent, &nc->parent))
		log_warnx("event=reload detail=\"parent-proxy changed (its line, its auth file's "
		    "credential or its ca file): the running one stays until egressd restarts\"");
	for (size_t i = 0; i < nc->nprincipals; i++) {
		struct conf_principal *cp = &nc->principals[i];
		struct principal_spec spec;

		if ((p = principal_find(cp->name)) != NULL) {
			struct policy *np = egressd_load_policy(cp->policy, err, sizeof(err));
			char d[EGRESS_DIGEST_STRLEN];

			if (np != NULL) {
				policy_digest(np, d);
				if (strcmp(d, p->digest) != 0 || strcmp(cp->policy, p->policy_file))
					log_warnx("event=reload principal=%s detail=\"policy "
					    "changed; the sealed policy in force stays until the principal "
					    "is removed and added again\"", p->name);
				policy_free(np);
			}
			continue;
		}
		spec = principal_spec_conf(cp);
		p = principal_create(&spec, err, sizeof(err));
		if (p == NULL)
			log_error("event=reload principal=%s error=\"%s\"", cp->name, err);
		else
			p->from_conf = true;
	}
	conf_free(nc);
	log_info("event=reload result=ok");
}

/*
 * The engine (egressd -E, exec'd by the monitor with the channel on fd 3): reads the
 * configuration and its principals' policies, takes the monitor's listeners, drops to
 * its user and serves until SIGTERM. Each loop turn ends with the turn's receipts
 * acknowledged by the monitor (engine_flush), before any callback of the next turn.
 */
/* SIGTERM, SIGINT, SIGHUP and SIGUSR1 blocked (the set in *set) until handlers exist. */
static void
egressd_block_startup(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigprocmask(SIG_BLOCK, set, NULL);
}

static int
engine_run(const char *file, bool debug, bool seccomp_log)
{
	sigset_t startup;
	char err[512];
	int ctl, lease, rc;

	/*
	 * libevent's allocations through malloc, before any other call of it: its calloc
	 * then zeroes what malloc gave, and glibc 2.36's calloc never takes from the
	 * thread cache (a dozen of a tunnel's allocations are libevent's; callgrind).
	 */
	event_set_mem_functions(malloc, realloc, free);
	egressd_block_startup(&startup);
	/* Exec'd before the drop: the monitor's uid and gid, a principal's default owner. */
	egressd_uid = geteuid();
	egressd_gid = getegid();
	egressd_pid = getppid();
	if (engine_start() == -1)
		return 1;
	/* The bytes the monitor read (a FIFO cannot be read twice), under the file's name. */
	conf_opener = engine_conf_first;
	conf_current = conf_load(file);
	conf_opener = NULL;
	close(ENGINE_CONF_FD);
	if (conf_current == NULL)
		return 2;
	egressd_conf = conf_current;
	log_init("egressd", LOG_OUT_LOGFMT, conf_current->log_syslog, debug);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);       /* the monitor's: it owns the receipts file */
	egressd_started = time(NULL);
	{
		/* The epoll changelist folds the add/del pairs of a relay into one epoll_ctl. */
		struct event_config *cfg = event_config_new();

		if (cfg != NULL)
			event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		egressd_base = cfg != NULL ? event_base_new_with_config(cfg) : NULL;
		if (cfg != NULL)
			event_config_free(cfg);
	}
	if (egressd_base == NULL) {
		log_startupx("libevent: no event base");
		return 1;
	}
	if (dns_init(egressd_base, conf_current) == -1)
		return 1;
	/* An https:// parent's TLS context reads its certificates now: the engine opens no
	 * file once confined. */
	if (conn_parent_tls_init(conf_current, err, sizeof(err)) == -1) {
		log_startupx("%s", err);
		return 1;
	}
	ctl = engine_adopt_socket(MW_ADOPT_CONTROL);
	lease = engine_adopt_socket(MW_ADOPT_LEASE);
	if (ctl == -1 || ctl_init(egressd_base, ctl, lease) == -1)
		return 1;
	if (conf_current->metrics_listen != NULL &&
	    metrics_listen(egressd_base, conf_current->metrics_listen,
	    engine_adopt_socket(MW_ADOPT_METRICS)) == -1)
		return 1;
	engine_adopt_principals();
	for (size_t i = 0; i < conf_current->nprincipals; i++) {
		struct conf_principal *cp = &conf_current->principals[i];
		struct principal_spec spec = principal_spec_conf(cp);
		struct principal *p;

		if (principal_find(cp->name) != NULL)
			continue;       /* adopted: it outlived the engine before this one */
		if ((p = principal_create(&spec, err, sizeof(err))) == NULL) {
			log_startupx("principal %s: %s", cp->name, err);
			return 1;
		}
		p->from_conf = true;
	}
	if (engine_drop(conf_current) == -1 || engine_confine(seccomp_log) == -1)
		return 1;
	conf_opener = engine_open_conf;
	conf_file_opener = engine_open_conf_file;
	engine_confined = true;
	ev_term = evsignal_new(egressd_base, SIGTERM, term_cb, NULL);
	ev_int = evsignal_new(egressd_base, SIGINT, term_cb, NULL);
	ev_hup = evsignal_new(egressd_base, SIGHUP, hup_cb, NULL);
	event_add(ev_term, NULL);
	event_add(ev_int, NULL);
	event_add(ev_hup, NULL);
	ev_log = evtimer_new(egressd_base, log_cb, NULL);
	sigprocmask(SIG_UNBLOCK, &startup, NULL);
	engine_ready();
	log_info("event=started version=%s pid=%d engine=%d principals=%zu control=%s "
	    "receipts=%s", PACKAGE_VERSION, (int)egressd_pid, (int)getpid(),
	    conf_current->nprincipals, conf_current->control, conf_current->receipts);
	log_batch(true);
	for (;;) {
		rc = event_base_loop(egressd_base, EVLOOP_ONCE);
		engine_flush();
		log_turn_end();
		if (rc != 0 || event_base_got_exit(egressd_base) ||
		    event_base_got_break(egressd_base))
			break;
	}
	log_batch(false);

	/* Stop: remaining principals and their tunnels get shutdown receipts. */
	while (!TAILQ_EMPTY(&principals))
		principal_remove(TAILQ_FIRST(&principals), "shutdown");
	ctl_shutdown();
	metrics_shutdown();
	dns_shutdown();
	engine_sync();
	event_free(ev_term);
	event_free(ev_int);
	event_free(ev_hup);
	if (ev_log)
		event_free(ev_log);
	if (ev_grace)
		event_free(ev_grace);
	if (ev_drain)
		event_free(ev_drain);
	event_base_free(egressd_base);
	log_info("event=stopped");
	conf_free(conf_current);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *file = NULL;
	bool check = false, debug = false, engine = false, seccomp_log = false;
	struct egress_key pkey;
	char err[512];
	int ch, rc;

	sigset_t startup;

	/* logfmt on stderr until the configuration names the log's place and level. */
	log_init("egressd", LOG_OUT_LOGFMT, false, false);
	/*
	 * Until the handlers exist, SIGTERM, SIGINT, SIGHUP and SIGUSR1 wait (blocked) instead
	 * of killing egressd halfway through start-up with its sockets created; they are
	 * handled as soon as the loop can (the monitor's, or the engine's).
	 */
	egressd_block_startup(&startup);
	while ((ch = getopt(argc, argv, "c:dESt")) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'd':
			debug = true;
			break;
		case 'E':
			engine = true;
			break;
		case 'S':
			seccomp_log = true;
			break;
		case 't':
			check = true;
			break;
		default:
			usage();
		}
	}
	if (file == NULL || optind != argc || (engine && check))
		usage();
	if (engine)
		return engine_run(file, debug, seccomp_log);
	if ((conf_current = conf_load(file)) == NULL)
		return 2;
	egressd_conf = conf_current;
	if (conf_current->policy_key != NULL) {
		if (egress_key_load(conf_current->policy_key, &pkey, err, sizeof(err)) == -1) {
			log_startupx("policy-key %s", err);
			return 2;
		}
		egressd_policy_key = &pkey;
	}
	/* Every principal's policy must load now: a bad one refuses the configuration. */
	for (size_t i = 0; i < conf_current->nprincipals; i++) {
		struct policy *p = egressd_load_policy(conf_current->principals[i].policy, err,
		    sizeof(err));

		if (p == NULL) {
			log_startupx_at(file, conf_current->principals[i].line, 0, "principal %s: %s",
			    conf_current->principals[i].name, err);
			return 2;
		}
		policy_free(p);
	}
	if (check) {
		printf("%s: configuration ok, %zu principals\n", file, conf_current->nprincipals);
		return 0;
	}
	/* The monitor owns the configuration from here (SIGHUP replaces it). */
	rc = monitor_main(conf_current, file, debug, seccomp_log);
	if (egressd_policy_key != NULL)
		egress_key_clear(&pkey);
	return rc;
}
