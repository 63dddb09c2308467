/*
 * policy.h: the library every egress decision goes through.
 *
 *  host.c    strict host parsing and canonical form (names, IPv4, IPv6)
 *  addr.c    addresses, CIDR ranges, classification against the special-purpose table
 *  policy.c  the policy language: parser, canonical form, matching
 *  seal.c    digest, HMAC seal, Ed25519 signature and the sealed-file format
 *  include.c the opener the programs hand the parser for include lines (reads files)
 *
 * Everything here but include.c is a pure function of its inputs (no I/O, no global state
 * except the special-purpose table built once and libcrypto's own), bounded, and safe on
 * untrusted bytes.
 */
#ifndef EGRESS_POLICY_H
#define EGRESS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* --- host.c --------------------------------------------------------------------- */

#define EGRESS_HOST_MAX 253        /* octets in a name, trailing dot removed */
#define EGRESS_LABEL_MAX 63        /* octets in a label */
#define EGRESS_HOST_INPUT_MAX 1024 /* longest input host_parse looks at */

enum host_kind {
	HOST_NAME = 1,
	HOST_IPV4,
	HOST_IPV6,
};

struct addr {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t b[16];    /* network order; IPv4 uses b[0..3] */
};

struct host {
	enum host_kind kind;
	char name[EGRESS_HOST_MAX + 1]; /* canonical text: name, dotted quad, RFC 5952 */
	struct addr addr;               /* for HOST_IPV4 and HOST_IPV6 */
};

/*
 * Parses one host (a policy field, a request target, a SOCKS name) into its canonical
 * form. IPv6 may be bracketed. Returns 0, or -1 with *why set to a static message; the
 * caller's reason is then bad-host.
 */
int host_parse(const char *s, size_t len, struct host *h, const char **why);

/* --- addr.c --------------------------------------------------------------------- */

struct cidr {
	struct addr a;
	unsigned plen;     /* 0..32 or 0..128 */
};

#define EGRESS_ADDRSTRLEN 46 /* INET6_ADDRSTRLEN */

/* Strict: IPv4 as four decimal octets without leading zeros, IPv6 per RFC 4291. */
int addr_parse(const char *s, size_t len, struct addr *a);
/*
 * "IP", "IP:PORT" or "[IPv6]:PORT": 0 with *port (0 when none is given), or -1 with *why.
 * Every byte is looked at; nothing else (no space, no newline) is accepted.
 */
int addr_port_parse(const char *s, size_t len, struct addr *a, unsigned *port,
    const char **why);
/* IPv4 dotted quad or RFC 5952 text. */
void addr_format(const struct addr *a, char out[EGRESS_ADDRSTRLEN]);
bool addr_equal(const struct addr *a, const struct addr *b);
/* "a.b.c.d/n" or "v6/n"; host bits must be zero. Returns 0 or -1 with *why. */
int cidr_parse(const char *s, size_t len, struct cidr *c, const char **why);
void cidr_format(const struct cidr *c, char out[EGRESS_ADDRSTRLEN + 4]);
bool cidr_contains(const struct cidr *c, const struct addr *a);

/* What the special-purpose table says of a range. */
enum addr_action {
	ADDR_DENY = 1,   /* refused unless inside a permit-range */
	ADDR_DECODE,     /* the embedded IPv4 is classified instead */
};

struct addr_verdict {
	bool denied;             /* false: global unicast (or decoded to one) */
	const char *range;       /* deciding range, e.g. "127.0.0.0/8"; NULL when global */
	const char *name;        /* its registry name, e.g. "Loopback" */
	bool embedded;           /* an IPv4 was decoded from the IPv6 address */
	bool decided_by_v4;      /* ... and that IPv4 decided (a decode range or nat64) */
	struct addr v4;          /* that IPv4 when embedded */
	char via[EGRESS_ADDRSTRLEN + 4]; /* the IPv6 range it was decoded from */
};

/*
 * Classifies a by longest-prefix match against every range of the special-purpose table
 * (policy/special-purpose-addresses.txt, a copy of the SPEC's shared data). Ranges whose
 * action is decode (IPv4-mapped, NAT64 64:ff9b::/96, 6to4), and the operator's nat64
 * prefixes (RFC 6052 lengths; a non-zero u octet is denied), are classified by the IPv4
 * they carry; so is an ISATAP interface id under an otherwise global prefix. Teredo,
 * local-use NAT64, IPv4-compatible and IPv4-translated addresses are decoded for the
 * report but stay denied (the stricter choice the table allows). IPv6 outside 2000::/3
 * that no range names is denied as reserved. Returns v->denied.
 */
bool addr_classify(const struct addr *a, const struct cidr *nat64, size_t nnat64,
    struct addr_verdict *v);
/* True when a denied address (or the IPv4 it carries) lies in one of the ranges. */
bool addr_permitted(const struct addr *a, const struct addr_verdict *v,
    const struct cidr *permit, size_t npermit);
/* The table as built from the data file, for tests: returns the number of rows. */
size_t addr_table(const struct cidr **ranges, const enum addr_action **actions,
    const char *const **names);

/* --- policy.c ------------------------------------------------------------------- */

#define EGRESS_POLICY_MAX_BYTES (64u << 20) /* largest policy file accepted */
#define EGRESS_POLICY_MAX_LINE 4096         /* longest line */
#define EGRESS_POLICY_MAX_RULES 1000000     /* allow + deny lines */
#define EGRESS_POLICY_MAX_PERMITS 1024      /* permit-range lines */
#define EGRESS_POLICY_MAX_ERRORS 20         /* errors reported before giving up */

enum sni_mode {
	SNI_MATCH = 0,
	SNI_REQUIRED,
	SNI_OFF,
};

#define EGRESS_UNLIMITED UINT64_MAX

struct policy_settings {
	enum sni_mode sni;
	uint64_t quota_connections;   /* concurrent tunnels */
	uint64_t quota_rate;          /* new tunnels per second, EGRESS_UNLIMITED */
	uint64_t quota_bytes;         /* both ways, lifetime, EGRESS_UNLIMITED */
	uint64_t timeout_connect;     /* seconds */
	uint64_t timeout_dns;
	uint64_t timeout_idle;
	uint64_t timeout_handshake;
	uint64_t pin_min;             /* seconds */
	uint64_t pin_max;
	const struct cidr *permit;    /* permit-range exceptions */
	size_t npermit;
};

/* Diagnostics: errors refuse the policy whole, warnings do not. */
struct policy_diag {
	char **errors;                /* "file:line:col: message" */
	size_t nerrors;
	char **warnings;
	size_t nwarnings;
};
void policy_diag_free(struct policy_diag *d);

struct policy;

/*
 * include (egress-policy(5)): "include NAME" names a template, "include ./PATH" or
 * "include ../PATH" a file beside the including one. The parser reads no file itself: it
 * asks the caller's opener for the bytes, so that it stays a pure function of what it is
 * given (unit tests and the fuzzer hand it bytes from memory; the programs pass
 * policy_include_files from policy/include.c). Included files hold only allow, deny and
 * include lines; settings stay the including policy's own.
 */
#define EGRESS_POLICY_MAX_INCLUDE_DEPTH 8   /* nested includes below the top file */
#define EGRESS_POLICY_MAX_INCLUDES 256      /* include files read for one policy */
#define EGRESS_POLICY_MAX_TEMPLATE 64       /* longest template NAME */

struct policy_include_file {
	uint8_t *buf;                 /* the file's bytes (malloc'd; the parser frees them) */
	size_t len;
	char *name;                   /* its name in errors and origins (malloc'd; kept) */
	char id[64];                  /* one file, one id (dev:ino), to refuse a cycle */
};

struct policy_includer {
	/*
	 * Opens what "include TARGET" names in the file called from (its name as the
	 * opener gave it, or the top file's): a template NAME (template true; NAME already
	 * checked to be a plain identifier) or a relative path ("./x", "../x"; the opener
	 * resolves it against from's directory). Returns 0 with *out filled, or -1 with a
	 * message in why.
	 */
	int (*open)(void *arg, const char *from, const char *target, bool template,
	    struct policy_include_file *out, char *why, size_t whylen);
	void *arg;
	const char *top_id;           /* the top file's id when known (NULL: by name only) */
};

/*
 * Parses a policy, plain or sealed. A sealed file (first line "#!egress-policy 1") must
 * carry a digest that matches its body, and its body must be in canonical form; with a key
 * it must carry a MAC made with that key. Without a key a sealed file's MAC is not checked
 * (policy_mac_state says so). A "#sig ed25519:" header must be well formed, but is only
 * read here: policy_sig_check verifies it. Returns NULL when anything is wrong; d lists
 * why.
 */
struct policy *policy_load(const char *file, const uint8_t *buf, size_t len,
    const struct egress_key *key, struct policy_diag *d);
/*
 * The same with an opener for include lines. policy_load is this with inc NULL: an
 * include line is then an error telling the operator to seal the policy (a sealed file
 * holds the expanded rules and never an include). A sealed file's body is never given
 * the opener.
 */
struct policy *policy_load_inc(const char *file, const uint8_t *buf, size_t len,
    const struct egress_key *key, const struct policy_includer *inc, struct policy_diag *d);
void policy_free(struct policy *p);

const struct policy_settings *policy_settings(const struct policy *p);
size_t policy_rule_count(const struct policy *p);

enum policy_mac_state {
	POLICY_UNSEALED = 0,     /* plain text policy */
	POLICY_SEALED_NO_MAC,    /* sealed, digest only */
	POLICY_SEALED_MAC_UNCHECKED, /* sealed with a MAC, no key given */
	POLICY_SEALED_MAC_OK,    /* sealed with a MAC verified with the key */
};
enum policy_mac_state policy_mac_state(const struct policy *p);

/*
 * Decides host:port against the rules (not the address: that is addr_classify's job).
 * Returns EGRESS_ALLOWED, EGRESS_DENIED_BY_RULE or EGRESS_NOT_ALLOWLISTED; *line is the
 * deciding rule's line in the top file (for a rule an include brought in, that include
 * line; policy_decide_origin names the file and line it was written at), 0 when none
 * decided.
 */
enum egress_reason policy_decide(const struct policy *p, const struct host *h, uint16_t port,
    unsigned *line);
/*
 * Decides a name without a port (egressd's DNS verb): EGRESS_ALLOWED when some port is
 * allowed for it (an allow rule matches it there and no deny rule does); else
 * EGRESS_DENIED_BY_RULE when a deny rule matches it on some port, else
 * EGRESS_NOT_ALLOWLISTED. Costs a policy_decide per port range of the matching rules.
 */
enum egress_reason policy_decide_name(const struct policy *p, const struct host *h);
/*
 * policy_decide with the deciding rule's origin in out: "FILE:LINE" for a rule of the
 * top file, "FILE:LINE (via FILE:LINE ...)" for an included one, the include lines that
 * brought it in nearest first; "-" when no rule decided. policy_decide's *line is the
 * line in the top file (for an included rule, its include line).
 */
enum egress_reason policy_decide_origin(const struct policy *p, const struct host *h,
    uint16_t port, char *out, size_t outlen);
/* True when a deny rule matches name:port (for each name of a CNAME chain). */
bool policy_denies(const struct policy *p, const struct host *h, uint16_t port,
    unsigned *line);

/* The canonical body (every line ends in '\n'); caller frees. */
char *policy_canonical(const struct policy *p, size_t *len);
/* "sha256:<64 hex>" of the canonical body. */
void policy_digest(const struct policy *p, char out[EGRESS_DIGEST_STRLEN]);

/* --- include.c: the real opener (the one part of this library that reads files) --- */

/*
 * The programs' opener: templates from dir (policy_template_dir), relative paths joined
 * with the including file's folder. arg is a struct policy_include_files.
 */
struct policy_include_files {
	const char *template_dir;
};
int policy_include_open(void *arg, const char *from, const char *target, bool template,
    struct policy_include_file *out, char *why, size_t whylen);
/* The id policy_include_open gives the file open on fd ("" when fstat fails). */
void policy_include_id(int fd, char id[64]);
/* $EGRESS_TEMPLATE_DIR when set and not empty, else the installed folder. */
const char *policy_template_dir(void);

/* --- seal.c --------------------------------------------------------------------- */

#define EGRESS_SEAL_MAGIC "#!egress-policy 1"

/* The MAC of a canonical body: "hmac-sha256:<64 hex>". */
void seal_mac(const struct egress_key *key, const char *body, size_t len,
    char out[EGRESS_DIGEST_STRLEN]);
/* The digest of a canonical body: "sha256:<64 hex>". */
void seal_digest(const char *body, size_t len, char out[EGRESS_DIGEST_STRLEN]);
/* The sealed file for p (header, then the canonical body); key may be NULL. */
char *seal_policy(const struct policy *p, const struct egress_key *key, size_t *len);
/*
 * The same with a "#sig ed25519:<128 hex>" header after the others when sign_key (an
 * Ed25519 private key from egress_ed25519_load) is not NULL: the signature covers the
 * canonical body, the bytes #digest and #mac cover. NULL only when signing failed.
 */
char *seal_policy_signed(const struct policy *p, const struct egress_key *key, void *sign_key,
    size_t *len);

/* Most public keys a verifier takes (egressd's policy-pubkey, egress-policy --pubkey). */
#define EGRESS_POLICY_MAX_PUBKEYS 16

enum policy_sig_state {
	POLICY_SIG_OK = 0,         /* verified by one of the keys */
	POLICY_SIG_NOT_SEALED,     /* a plain policy: there is no body a signature could cover */
	POLICY_SIG_NONE,           /* sealed, without #sig */
	POLICY_SIG_BAD,            /* #sig verifies under none of the keys */
};
/*
 * Checks p's #sig against each of the n public keys (from egress_ed25519_load). With
 * POLICY_SIG_OK *which is the index of the first key that verifies it; otherwise why
 * (whylen bytes) holds "file:line:column: reason" naming the state and what to do.
 */
enum policy_sig_state policy_sig_check(const struct policy *p, const char *file,
    void *const *pubkeys, size_t n, size_t *which, char *why, size_t whylen);
/* True when p carries a #sig header (checked or not). */
bool policy_has_sig(const struct policy *p);

#endif
