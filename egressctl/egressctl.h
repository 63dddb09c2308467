/*
 * egressctl.h: what egressctl's files share: usage and the verb handlers the command
 * table (egressctl.c) calls. Private to egressctl/.
 */
#ifndef EGRESSCTL_H
#define EGRESSCTL_H

#define CTL_PROG "egressctl"

/* Prints msg (if any) and the usage of every verb, exits 2. */
void ctl_usage(const char *msg) __attribute__((noreturn));

/* receipts.c: the receipt verbs; argv[0] is the verb's last word. */
int ctl_receipts(int fd, int argc, char **argv);
int ctl_receipts_verify(int fd, int argc, char **argv);

/*
 * ctltime.c: a --since/--until argument as "YYYY-MM-DDTHH:MM:SS.mmmZ" in out (the form
 * egressd writes, so that records compare as strings); -1 when it is not one.
 */
int ctl_parse_time(const char *arg, char out[32]);

#endif
