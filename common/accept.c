/*
 * accept.c: accepting that pauses when descriptors run out, for egressd's principal
 * listeners and egress-relay's (relayd's lesson: accept_reserve). On EMFILE or ENFILE the
 * pending connection stays queued and the listener stays readable, so a level-triggered
 * event loop that simply returns is called again at once and spins at full CPU, logging;
 * instead the owner's listeners are switched off for EGRESS_ACCEPT_PAUSE_MS by a libevent
 * timer and then on again. Trusts its caller's callback; nothing of the peer.
 */
#include "config.h"

#include <errno.h>
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

void
egress_accept_pause(struct egress_accept_pause *ap)
{
	struct timeval tv = { EGRESS_ACCEPT_PAUSE_MS / 1000,
	    (EGRESS_ACCEPT_PAUSE_MS % 1000) * 1000 };

	if (ap->paused)
		return;
	if (ap->timer == NULL &&
	    (ap->timer = evtimer_new(ap->base, accept_resume_cb, ap)) == NULL)
		return;         /* no memory for a timer: accepting goes on, unpaused */
	ap->paused = true;
	ap->listen(false, ap->arg);
	evtimer_add(ap->timer, &tv);
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
