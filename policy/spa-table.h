/* spa-table.h: the special-purpose address rows generated from the shared data file. */
#ifndef EGRESS_SPA_TABLE_H
#define EGRESS_SPA_TABLE_H

#include "policy.h"

struct spa_row {
	const char *cidr;
	enum addr_action action;
	const char *name;
	const char *file_action;   /* the file's own word: deny, decode, global-ok */
};

extern const struct spa_row spa_rows[];
extern const size_t spa_nrows;

#endif
