/*
 * egressd.h: the daemon's components and what each exposes to the others, one section
 * per file (relayd style). Identity is the listener a connection arrived on; nothing a
 * client sends can change it.
 */
#ifndef EGRESS_EGRESSD_H
#define EGRESS_EGRESSD_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>
#include <event2/bufferevent.h>

#include "common.h"
#include "log.h"
#include "sock.h"
#include "policy.h"
#include "receipt.h"
#include "http.h"
#include "native.h"
#include "socks.h"
#include "synth.h"
#include "monwire.h"
#include "parent.h"

#define EGRESSD_MAX_NAT64 16
#define EGRESSD_MAX_PRINCIPALS 4096
#define EGRESSD_NAME_MAX 64          /* principal names: [A-Za-z0-9._-], 1..64 */
#define EGRESSD_MAX_ADDRS 16         /* addresses kept per resolved name */
#define EGRESSD_MAX_CNAMES 8         /* CNAME links in a chain; a longer one is refused */
#define EGRESSD_MAX_CHAIN_NAMES (2 * EGRESSD_MAX_CNAMES) /* the A and the AAAA chain */
#define EGRESSD_PIN_MAX 4096         /* pinned names per principal */
#define EGRESSD_RELAY_BUF (64 * 1024) /* per direction; the reader pauses beyond it */
#define EGRESSD_CONNECT_STAGGER_MS 250 /* RFC 8305 connection attempt delay */
#define EGRESSD_GRACE_DEFAULT 5      /* seconds of drain on SIGTERM */
/*
 * Control connections. The control socket (root) and the lease socket (the lease group)
 * draw on separate slots, so that no member of the group can lock root out; on the lease
 * socket one peer uid (SO_PEERCRED) holds at most EGRESSD_LEASE_PER_UID of them, the last
 * EGRESSD_LEASE_ROOT_SLOTS of its slots are uid 0's alone (root can always lease), and one
 * that holds no lease is closed EGRESSD_LEASE_IDLE_S after its accept, or after its last
 * lease ended, whatever it sends meanwhile (a lease lives as long as its connection, SPEC
 * "Leases"): requests cannot keep a slot, only a lease can.
 */
#define EGRESSD_CTL_CLIENTS 16       /* control socket connections */
#define EGRESSD_LEASE_CLIENTS 128    /* lease socket connections, all uids */
#define EGRESSD_LEASE_ROOT_SLOTS 8   /* ... of which only uid 0 may take these */
#define EGRESSD_LEASE_PER_UID 16     /* lease socket connections of one peer uid */
#define EGRESSD_LEASE_IDLE_S 10      /* a lease connection without a lease, from its accept */
#define EGRESSD_DENY_BURST 100       /* denials per second per principal written one by one */
#define EGRESSD_DENY_SLOTS 256       /* distinct collapsed denials kept per second */
#define EGRESSD_TALLY_MAX 256        /* destinations in a lease's summary */
#define EGRESSD_SYNTH_RETIRED 8      /* earlier synthetic-ranges kept bad-host after SIGHUP */

/* --- conf.c ----------------------------------------------------------------------- */

struct conf_principal {
	char *name;
	char *socket;                /* inside runtime-dir */
	char *policy;                /* file */
	bool has_owner;
	uid_t owner_uid;
	gid_t owner_gid;
	bool has_peer_uid;
	uid_t peer_uid;
	unsigned line;
};

/*
 * parent-proxy URL [auth FILE] [resolve local|parent] [ca FILE]: every tunnel is asked of
 * the parent with CONNECT (egress/parent.c). The credential is kept base64 encoded, the
 * only form egressd sends it in; it is never logged.
 */
struct conf_parent {
	char *url;                   /* as written, for the log; NULL: no parent */
	char host[EGRESS_HOST_MAX + 1]; /* canonical name or formatted address */
	struct addr addr;            /* when the host is an address literal */
	bool literal;
	uint16_t port;
	bool resolve_parent;         /* resolve parent: the parent resolves the names */
	char *auth_file;             /* NULL: no Proxy-Authorization */
	char *auth_b64;              /* base64 of user:password */
	bool tls;                    /* https://: TLS to the parent, its certificate verified */
	char *ca_file;               /* ca FILE; NULL: the system store */
	char *ca_pem;                /* ca FILE's certificates (PEM), read with the file */
	size_t ca_pem_len;
};

struct conf {
	char *file;
	char *text;                  /* the file's bytes as read */
	size_t textlen;
	char *runtime_dir;
	char *control;
	char *lease;
	char *lease_group;
	char *policy_dir;
	char *receipts;
	char *receipt_key;
	char *signing_key;
	char *policy_key;
	/*
	 * policy-pubkey: Ed25519 public keys (egress_ed25519_load), read when the file is
	 * parsed; with any, every policy must carry a #sig valid under one of them.
	 */
	void *policy_pubkeys[EGRESS_POLICY_MAX_PUBKEYS];
	char *policy_pubkey_files[EGRESS_POLICY_MAX_PUBKEYS];
	size_t npolicy_pubkeys;
	char *resolvers;             /* "ip:port,ip:port" for c-ares, or NULL */
	char *hosts;
	struct cidr nat64[EGRESSD_MAX_NAT64];
	size_t nnat64;
	char *user;
	char *metrics_listen;        /* ADDR:PORT, or NULL */
	bool syslog;                 /* each receipt also to syslog(3) */
	bool log_syslog;             /* log syslog: egressd's own log lines to syslog(3) */
	uint64_t receipts_rotate;    /* bytes; 0: only on SIGUSR1 */
	unsigned grace;              /* seconds */
	struct cidr synth_range;     /* synthetic-range: the DNS verb's addresses (IPv4) */
	size_t synth_max;            /* synthetic-max: names per principal */
	struct conf_principal *principals;
	size_t nprincipals;
	struct conf_parent parent;   /* parent-proxy; parent.url NULL: none */
};

/* Parses FILE; NULL with every error printed (file:line:column) to stderr. */
struct conf *conf_load(const char *file);
/* The bytes of a file named file (for messages), parsed as conf_load parses them: no I/O. */
struct conf *conf_parse_text(const char *file, const char *buf, size_t len);
/* When set, conf_load opens its file with this (returns an fd, or -1 with errno). */
extern int (*conf_opener)(const char *path);
/* ... and the files it names (policy-pubkey), when set (the confined engine). */
extern int (*conf_file_opener)(const char *path);
void conf_free(struct conf *c);
/* Valid principal name: 1..EGRESSD_NAME_MAX of [A-Za-z0-9._-], not starting with '.'. */
bool conf_valid_name(const char *name);
/* True when path names an entry directly inside dir (one component, not . or ..). */
bool conf_inside(const char *dir, const char *path);

/* --- receipt.c -------------------------------------------------------------------- */

/* The line itself (layout, chain, MAC, checkpoint): proto/receipt.h. */

/* Opens (creates 0600) the file, repairs a torn tail, closes opens left by a crash. */
int receipt_open(const char *path, const char *keyfile, struct event_base *base);
/*
 * The engine: queues one record for the monitor; engine_flush sends the loop turn's
 * batch and returns when the monitor has written it to the kernel (fsync is batched).
 */
int receipt_write(const struct receipt *r);
/* The monitor: writes one record to the kernel before returning (or, between
 * receipt_batch_begin and receipt_batch_end, with the batch's other lines at its end). */
int receipt_record(const struct receipt *r);
void receipt_batch_begin(void);
int receipt_batch_end(void);
void receipt_flush(void);
/* Also send each receipt line to syslog(3) (LOG_INFO, facility daemon). */
void receipt_syslog(bool on);
/*
 * signing-key: checkpoints, at most every second while records are written and at
 * shutdown, sign the head of the chain with Ed25519. Call before receipt_open.
 */
int receipt_signing_key(const char *path);
/* Reopens the path after rotation (SIGUSR1); the chain continues from memory. */
int receipt_reopen(void);
/* Rotates by itself past this many bytes (receipts-rotate); 0 turns it off. */
void receipt_set_rotate(uint64_t bytes);
void receipt_close(void);
/* The seq of the last line written: the monitor's, or the engine's last acknowledged. */
uint64_t receipt_seq(void);
uint64_t receipt_file_seq(void);

/* --- dns.c ------------------------------------------------------------------------ */

#define DNS_BUCKETS 11
extern const double dns_bucket_le[DNS_BUCKETS];  /* seconds; the last is +Inf */
struct dns_stats {
	uint64_t ok, failure, timeout;
	uint64_t buckets[DNS_BUCKETS];   /* cumulative counts are computed when printed */
	double sum;                      /* seconds */
};
const struct dns_stats *dns_stats(void);

struct dns_answer {
	enum egress_reason reason;   /* EGRESS_ALLOWED, dns-failure, dns-timeout */
	struct addr addrs[EGRESSD_MAX_ADDRS];
	size_t naddrs;
	uint32_t ttl;                /* smallest TTL of the answers and CNAMEs */
	/* Every CNAME target of the answer, canonical, each once, in chain order. */
	char cnames[EGRESSD_MAX_CHAIN_NAMES][EGRESS_HOST_MAX + 1];
	size_t ncnames;
	const char *why;
};
typedef void (*dns_cb)(void *arg, const struct dns_answer *ans);
struct dns_query;

int dns_init(struct event_base *base, const struct conf *conf);
void dns_shutdown(void);
/* Resolves A and AAAA of the absolute name; the callback runs once unless cancelled. */
struct dns_query *dns_resolve(const char *name, unsigned timeout_s, dns_cb cb, void *arg);
void dns_cancel(struct dns_query *q);

/* dnschain.c: the CNAME records of an answer, in the order the answer has them. */
struct dns_chain {
	const char *qname;           /* the name asked, canonical */
	char tail[EGRESS_HOST_MAX + 1]; /* the last record's target; "" before the first */
	unsigned links;              /* of the chain being read, at most EGRESSD_MAX_CNAMES */
};
void dns_chain_init(struct dns_chain *ch, const char *qname);
/*
 * One CNAME record (owner, target) into ans->cnames: both must be canonical names, the
 * owner the name asked (a chain begins: the A and the AAAA answer each have one) or the
 * previous record's target, and no chain longer than EGRESSD_MAX_CNAMES links. Returns 0,
 * or -1 with *why: the answer is then refused as a whole (dns-failure).
 */
int dns_chain_link(struct dns_chain *ch, struct dns_answer *ans, const char *owner,
    const char *target, const char **why);

/* --- principal.c ------------------------------------------------------------------ */

struct conn;
struct ctl_client;

struct pin {
	char *name;
	struct addr addrs[EGRESSD_MAX_ADDRS];
	size_t naddrs;
	int64_t expires_ms;          /* CLOCK_MONOTONIC */
	TAILQ_ENTRY(pin) entry;
};

/* Identical denials past the burst within one second: one record with a count. */
struct deny_slot {
	enum egress_reason reason;
	char host[EGRESS_HOST_MAX + 1];
	int port;
	const char *frontend;
	unsigned count;
};

/* One destination of a lease's summary: what its receipts say, added up. */
struct tally {
	char host[EGRESS_HOST_MAX + 1];         /* "" when the request named none */
	int port;                               /* -1 when it named none */
	bool allowed;                           /* close receipts; else denials */
	enum egress_reason reason;              /* denials: the reason */
	uint64_t count, bytes_up, bytes_down;
};

struct principal {
	char name[EGRESSD_NAME_MAX + 1];
	char *socket;
	char *policy_file;
	struct policy *policy;
	char digest[EGRESS_DIGEST_STRLEN];
	int fd;
	struct event *ev_accept;
	dev_t dev;
	ino_t ino;
	uid_t owner_uid;
	gid_t owner_gid;
	bool has_peer_uid;
	uid_t peer_uid;
	bool from_conf;              /* defined in egressd.conf (SIGHUP manages it) */
	struct ctl_client *lease;    /* lives as long as this control connection */
	unsigned live;               /* tunnels counted against quota connections */
	uint64_t bytes;              /* both ways, lifetime */
	time_t rate_second;
	uint64_t rate_count;
	uint64_t total_allowed, total_denied;
	/* Metrics: what the receipts say, counted (metrics.c). */
	uint64_t denied[EGRESS_REASON_COUNT];  /* deny receipts, collapsed ones counted */
	uint64_t closed[EGRESS_REASON_COUNT];  /* close receipts, by reason */
	uint64_t closed_up, closed_down;       /* bytes of closed tunnels, as in receipts */
	time_t deny_second;
	unsigned deny_count;         /* denials written this second */
	struct tally *tally;         /* a lease's summary: EGRESSD_TALLY_MAX, on first use */
	size_t ntally;
	uint64_t tally_dropped;      /* events past EGRESSD_TALLY_MAX destinations */
	struct deny_slot *slots;     /* EGRESSD_DENY_SLOTS, allocated on first use */
	size_t nslots;
	struct event *deny_flush;
	TAILQ_HEAD(, pin) pins;
	size_t npins;
	struct synth *synth;         /* the DNS verb's names, on the first question */
	uint64_t synth_recycled;     /* names dropped by maps released before this one */
	TAILQ_HEAD(, conn) conns;
	TAILQ_ENTRY(principal) entry;
};
TAILQ_HEAD(principal_list, principal);
extern struct principal_list principals;

/* What a principal is made of: egressd.conf's principal lines, or a control request. */
struct principal_spec {
	const char *name;
	const char *socket;          /* the listener's path */
	const char *policy_file;
	bool has_owner;              /* else egressd's own uid and gid */
	uid_t owner_uid;
	gid_t owner_gid;
	bool has_peer_uid;           /* SO_PEERCRED must say peer_uid */
	uid_t peer_uid;
	bool lease;                  /* lives as long as a control connection */
	bool from_conf;
	/* How the confined engine has the policy file opened (engine_open). */
	enum mw_open_kind open_kind;
	int peer_fd;                 /* MW_OPEN_PEER: the control client's connection */
	/* Adopted from the monitor after an engine restart: the listener it keeps. */
	bool adopted;
	int adopt_fd;
	dev_t adopt_dev;
	ino_t adopt_ino;
	const char *adopt_digest;    /* the policy's digest when it was added */
};
/* The spec of a principal line of egressd.conf. */
struct principal_spec principal_spec_conf(const struct conf_principal *cp);
/* Creates the listener and starts accepting; returns NULL with *err set. */
struct principal *principal_create(const struct principal_spec *spec, char *err,
    size_t errlen);
/* Closes the listener and every tunnel (shutdown receipts), then frees. */
void principal_remove(struct principal *p, const char *why);
/* A lease's summary: adds a close (allowed) or count denials to its destination. */
void principal_tally(struct principal *p, const char *host, int port, bool allowed,
    enum egress_reason reason, uint64_t count, uint64_t up, uint64_t down);
struct principal *principal_find(const char *name);
/* Pin cache: returns the pinned set for name if not expired. */
const struct pin *principal_pin_get(struct principal *p, const char *name);
void principal_pin_put(struct principal *p, const char *name, const struct addr *addrs,
    size_t n, uint32_t ttl);
/* The same at a given CLOCK_MONOTONIC time in ms (egress_mono_ms): for the unit test. */
const struct pin *principal_pin_get_at(struct principal *p, const char *name, int64_t now);
void principal_pin_put_at(struct principal *p, const char *name, const struct addr *addrs,
    size_t n, uint32_t ttl, int64_t now);
/*
 * Past EGRESSD_DENY_BURST denials in a second, identical ones (reason, host, port) are
 * counted instead of written; returns true when this one was counted. The counts are
 * written as one record each when the second ends.
 */
bool principal_deny_collapse(struct principal *p, enum egress_reason reason,
    const char *host, int port, const char *frontend);
/* The same in the second now (time(NULL)): for the unit test. */
bool principal_deny_collapse_at(struct principal *p, enum egress_reason reason,
    const char *host, int port, const char *frontend, time_t now);
/*
 * The flush timer's work at second now: the collapsed denials of a past second are
 * written (true); those of the current second wait for its end (false: the timer is set
 * again). True also when nothing waits.
 */
bool principal_deny_tick_at(struct principal *p, time_t now);

/* --- conn.c ----------------------------------------------------------------------- */

void conn_accept(struct principal *p, int fd);
/* Ends a connection with a receipt (close or deny with reason). */
void conn_abort(struct conn *c, enum egress_reason reason, const char *close_cause);
unsigned conn_count(void);
size_t conn_count_principal(const struct principal *p);

/* --- parent.c --------------------------------------------------------------------- */

/* An https:// parent's TLS context, made before the engine is confined; 0 or -1, err. */
int conn_parent_tls_init(const struct conf *conf, char *err, size_t errlen);

/* --- metrics.c -------------------------------------------------------------------- */

/* The Prometheus text exposition of egressd's counters; caller frees. */
char *metrics_text(size_t *len);
/* metrics-listen: serves GET /metrics over HTTP (libevent's evhttp). */
int metrics_socket(const char *spec);
int metrics_listen(struct event_base *base, const char *spec, int fd);
void metrics_shutdown(void);
/* True when a is the address metrics-listen is bound to (egressd never connects there). */
bool metrics_is_own(const struct addr *a, uint16_t port);

/* --- control.c -------------------------------------------------------------------- */

int ctl_sockets(const struct conf *conf, int *ctl, int *lease);
int ctl_init(struct event_base *base, int ctl_fd, int lease_fd);
void ctl_shutdown(void);
/* A lease holder went away: called by principal_remove to detach. */
void ctl_lease_lost(struct ctl_client *cl, struct principal *p);

/* --- daemon.c (egressd.c has main) ---------------------------------------------- */

extern struct event_base *egressd_base;
extern const struct conf *egressd_conf;
extern struct egress_key *egressd_policy_key;
extern bool egressd_stopping;
/*
 * True when a is in a synthetic-range that a SIGHUP replaced (the last
 * EGRESSD_SYNTH_RETIRED of them): such an address stands for no name any more, yet a
 * client may still hold it, and it must be bad-host rather than a real destination.
 */
bool egressd_synth_retired(const struct addr *a);
/* Called by SIGHUP for the range it replaces. */
void egressd_synth_retire(const struct cidr *range);
extern time_t egressd_started;
/* The uid and gid egressd started with, before `user` drops them: a principal's default
 * owner, so that one added after the drop is owned like one created at start-up. */
extern uid_t egressd_uid;
/* egressd's pid as operators see it: the monitor's (the engine's parent). */
extern pid_t egressd_pid;
extern gid_t egressd_gid;
/*
 * Reads and loads a policy file (with the policy key when configured; with policy-pubkey
 * keys, only when its signature verifies under one of them).
 */
struct policy *egressd_load_policy(const char *file, char *err, size_t errlen);
/* The same, opened as kind says once the engine is confined (engine_open). */
struct policy *egressd_load_policy_as(const char *file, enum mw_open_kind kind, int peer_fd,
    char *err, size_t errlen);
/* A fresh connection id "c-<hex>". */
void egressd_new_id(char out[24]);

/* priv.c: what the monitor does with root's rights (monitor.c calls them). */
#define PRIV_MAX_SOCKETS 4096          /* principal sockets the monitor keeps at once */
bool priv_name_ok(const char *text, size_t cap);
int priv_caps(void);
/* An AF_UNIX listener at path, mode 0600, owned by uid:gid; *st its lstat. -1 with errno. */
int priv_do_listen(const char *path, uid_t uid, gid_t gid, struct stat *st);
/* Removes path if it is a socket, and that one when dev/ino are not both 0. */
int priv_do_unlink(const char *path, uint64_t dev, uint64_t ino);
/* The receipts file opened for appending; rotate renames it to old first. -1 with errno. */
int priv_do_receipts_open(const char *path);
int priv_do_receipts_rotate(const char *path, char *old, size_t oldlen);

/* --- engine.c: the engine's side of the channel to the monitor ------------------------- */

/* True once the engine has dropped its rights: files come only from the monitor then. */
extern bool engine_confined;
/*
 * An AF_UNIX listener for principal p's spec, made by the monitor; -1 with errno. Without a
 * monitor (the daemon's objects in a unit test) these and receipt_write act in-process.
 */
struct principal_spec;
int priv_listen(const struct principal_spec *spec, const char *digest, uid_t uid, gid_t gid,
    dev_t *dev, ino_t *ino);
/* The principal is gone: the monitor removes its socket (that one, by dev/ino). */
int priv_unlink(const char *name, const char *path, dev_t dev, ino_t ino);
/* Opens a file to read: itself before confinement, else asks the monitor (kind). */
int engine_open(const char *path, enum mw_open_kind kind, int peer_fd);
/* egressd.conf itself (conf_opener once confined). */
int engine_open_conf(const char *path);
int engine_open_conf_file(const char *path);
/* The monitor's copy of egressd.conf (fd 5 of the engine's exec), for its first read. */
int engine_conf_first(const char *path);
#define ENGINE_CONF_FD 5
/* policy-key: the monitor's verdict on the policy in fd (NULL: its MAC is good). */
const char *engine_maccheck(int fd, const char *path, const char *digest, char *err,
    size_t errlen);
/*
 * The end of a loop turn: the turn's held connections stop (conn_hold_suspend) and its
 * receipts go to the monitor. It returns at once when every open and denial among them
 * has a connection holding for it; otherwise (a record no connection holds for) when
 * the monitor has written them to the kernel.
 */
void engine_flush(void);
/*
 * True while the turn holds an open or a denial that no connection holds for: no
 * connection's bytes may leave straight from a callback (they are queued).
 */
bool engine_waiting(void);
/*
 * The caller's connection holds for the record just queued (an open or a denial): its
 * number in the engine's stream, which conn_release(n) or a later number releases; 0
 * when nothing needs holding (no monitor: the record is in the file already).
 */
uint64_t engine_hold(void);
/* Sends the turn's receipts and waits for every acknowledgement: at the engine's end. */
void engine_sync(void);
/* conn.c: connections holding for a record (conn_hold). */
void conn_hold_suspend(void);
void conn_release(uint64_t acked);
void conn_release_finish(void);
int engine_start(void);
int engine_adopt_socket(uint32_t kind);
void engine_adopt_principals(void);
int engine_drop(const struct conf *conf);
int engine_confine(bool seccomp_log);
void engine_ready(void);


/* --- monitor.c ------------------------------------------------------------------------ */

int monitor_main(struct conf *conf, const char *file, bool debug, bool seccomp_log);

#endif
