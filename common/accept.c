/*
 * accept.c: accepting that pauses when descriptors run out, for egressd's principal
 * listeners and egress-relay's (relayd's lesson: accept_reserve). On EMFILE or ENFILE the
 * pending connection stays queued and the listener stays readable, so a level-triggered
 * event loop that simply returns is called again at once and spins at full CPU, logging;
 * instead the owner's listeners are switched off for EGRESS_ACCEPT_PAUSE_MS by a libevent
 * timer and then on again. The timer is allocated up front (egress_accept_pause_init), so
 * that running out cannot also mean having no timer; should it still be missing, the
 * listeners are switched off for good (fail closed) rather than left spinning. Trusts its
 * caller's callback; nothing of the peer.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "common.h"

static void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct egress_accept_pause *ap = arg;

	(void)fd;
	(void)what;
	if (!ap->paused)
		return;
	ap->paused = false;
	ap->listen(true, ap->arg);
}

int
egress_accept_pause_init(struct egress_accept_pause *ap)
{
	if (ap->timer == NULL &&
	    (ap->timer = evtimer_new(ap->base, accept_resume_cb, ap)) == NULL)
		return -1;
	return 0;
}

void
egress_accept_pause(struct egress_accept_pause *ap)
{
	struct timeval tv = { EGRESS_ACCEPT_PAUSE_MS / 1000,
	    (EGRESS_ACCEPT_PAUSE_MS % 1000) * 1000 };

	if (ap->paused)
		return;
	ap->paused = true;
	ap->listen(false, ap->arg);
	if (ap->timer == NULL || evtimer_add(ap->timer, &tv) == -1) {
		/* No timer to switch them on again: off for good beats spinning. */
		fprintf(stderr, "egress: out of descriptors and no timer: accepting stays off\n");
		return;
	}
}

int
egress_accept(int lfd, struct egress_accept_pause *ap)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), e;

	if (fd == -1 && (errno == EMFILE || errno == ENFILE)) {
		e = errno;
		egress_accept_pause(ap);
		errno = e;
	}
	return fd;
}

void
egress_accept_pause_clear(struct egress_accept_pause *ap)
{
	if (ap->timer != NULL)
		event_free(ap->timer);
	ap->timer = NULL;
	ap->paused = false;
}
