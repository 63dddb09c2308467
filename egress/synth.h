/*
 * synth.h: per-principal synthetic addresses for the DNS verb (synth.c). Pure and
 * bounded; names are canonical (host_parse), the range an IPv4 CIDR.
 */
#ifndef EGRESS_SYNTH_H
#define EGRESS_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define SYNTH_RANGE_DEFAULT "198.18.0.0/15"   /* RFC 2544 benchmarking, never routed */
#define SYNTH_MAX_DEFAULT 4096
#define SYNTH_MAX_LIMIT 1048576               /* largest synthetic-max accepted */

struct synth;

/*
 * A map over range (IPv4; its first and last address are never handed out when it is
 * /30 or larger) holding at most max names, or fewer when the range is smaller. NULL for
 * a range that is not IPv4 or a max of 0.
 */
struct synth *synth_new(const struct cidr *range, size_t max);
void synth_free(struct synth *s);
/*
 * The address of name: the one it has, or a free one of the range (after recycling the
 * least recently used name when the map is full). Marks name as just used. Returns 0, or
 * -1 for an empty name.
 */
int synth_get(struct synth *s, const char *name, struct addr *out);
/* The name that a holds in this map, or NULL (never given, recycled, outside the range);
 * marks it as just used. The pointer lives until the name is recycled or s is freed. */
const char *synth_name(struct synth *s, const struct addr *a);
/* True when a lies in the range (given or not). */
bool synth_in_range(const struct synth *s, const struct addr *a);
/*
 * A new bound (SIGHUP): min(max, usable addresses) as in synth_new. Shrinking recycles
 * the least recently used names down to it at once, as if later names had pushed them
 * out (their addresses are then free, never another name's until the cursor comes
 * round). Returns how many names it recycled; a max of 0 changes nothing.
 */
size_t synth_set_max(struct synth *s, size_t max);
size_t synth_count(const struct synth *s);
size_t synth_capacity(const struct synth *s);
uint64_t synth_recycled(const struct synth *s);

#endif
