/*
 * netcfg.h: the sandbox network namespace's route and nftables redirect for transparent
 * connections (netcfg.c; docs/sandbox.md, "Transparent connections").
 */
#ifndef EGRESS_NETCFG_H
#define EGRESS_NETCFG_H

#include <stddef.h>

#define NETCFG_TABLE "egress"
#define NETCFG_CHAIN "transparent"
/* egress-relay's transparent listener in the sandbox (REDIRECT goes to 127.0.0.1) */
#define NETCFG_PORT 3129
#define NETCFG_STR_(x) #x
#define NETCFG_STR(x) NETCFG_STR_(x)
#define NETCFG_LISTEN "127.0.0.1:" NETCFG_STR(NETCFG_PORT)

/*
 * In the current network namespace (fresh, lo up, with CAP_NET_ADMIN over it): every
 * IPv4 address local, and every TCP connection to one outside 127.0.0.0/8 redirected to
 * 127.0.0.1:port. Returns 0, or -1 with a one-line reason in err.
 */
int netcfg_transparent(unsigned port, char *err, size_t errlen);

#endif
