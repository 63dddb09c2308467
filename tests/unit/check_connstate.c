/*
 * check_connstate.c: unit tests for a connection's state table (egress/connstate.c). Every
 * (state, event) pair is checked against the transitions the design allows (conn.h): the
 * sniff chooses a frontend; a frontend's request resolves or connects; the resolution
 * connects; a connect ends in the tunnel, guarded or not (without the guard its open
 * receipt is the way into the relay); the guard opens, then ends in the relay; the relay
 * hands over to the fast relay; every phase before the tunnel may owe an answer (drain).
 * Everything else is refused, in particular any way back, any way out of the fast relay or
 * the drain, a relay without the open receipt, a second open, and an answer once bytes may
 * have flowed. What each state owes (tunnel, open receipt, guard) is checked per state.
 * The half-closes of a tunnel's two directions (OPEN -eof-> EOF_SEEN -shut-> SHUT_SENT)
 * are checked as a table of steps, allowed and refused, with the close cause they leave.
 * Links the state table from libegressd.a alone.
 */
#include "config.h"

#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct allowed {
	enum conn_state from;
	enum conn_event ev;
	enum conn_state to;
};

/* The whole list of allowed transitions: any pair not in it must be refused. */
static const struct allowed allowed[] = {
	{ CS_SNIFF, CE_SNIFF_HTTP, CS_HTTP },
	{ CS_SNIFF, CE_SNIFF_SOCKS5, CS_SOCKS5 },
	{ CS_SNIFF, CE_SNIFF_SOCKS4, CS_SOCKS4 },
	{ CS_SNIFF, CE_SNIFF_NATIVE, CS_NATIVE },
	{ CS_SNIFF, CE_ANSWER, CS_DRAIN },
	{ CS_HTTP, CE_RESOLVE, CS_RESOLVE },
	{ CS_HTTP, CE_CONNECT, CS_CONNECT },
	{ CS_HTTP, CE_ANSWER, CS_DRAIN },
	{ CS_SOCKS5, CE_RESOLVE, CS_RESOLVE },
	{ CS_SOCKS5, CE_CONNECT, CS_CONNECT },
	{ CS_SOCKS5, CE_ANSWER, CS_DRAIN },
	{ CS_SOCKS4, CE_RESOLVE, CS_RESOLVE },
	{ CS_SOCKS4, CE_CONNECT, CS_CONNECT },
	{ CS_SOCKS4, CE_ANSWER, CS_DRAIN },
	{ CS_NATIVE, CE_RESOLVE, CS_RESOLVE },
	{ CS_NATIVE, CE_CONNECT, CS_CONNECT },
	{ CS_NATIVE, CE_ANSWER, CS_DRAIN },
	{ CS_RESOLVE, CE_CONNECT, CS_CONNECT },
	{ CS_RESOLVE, CE_ANSWER, CS_DRAIN },
	{ CS_CONNECT, CE_OPEN, CS_RELAY },
	{ CS_CONNECT, CE_CONNECTED_GUARD, CS_GUARD },
	{ CS_CONNECT, CE_ANSWER, CS_DRAIN },
	{ CS_CONNECT, CE_PARENT, CS_PARENT },
	{ CS_PARENT, CE_OPEN, CS_RELAY },
	{ CS_PARENT, CE_CONNECTED_GUARD, CS_GUARD },
	{ CS_PARENT, CE_ANSWER, CS_DRAIN },
	{ CS_GUARD, CE_OPEN, CS_GUARD_OPEN },
	{ CS_GUARD_OPEN, CE_GUARD_END, CS_RELAY },
	{ CS_RELAY, CE_FAST, CS_FAST },
};

/*
 * Refusals that carry the design (every_pair checks them too; these say why):
 * egressd aborts on any of them rather than move bytes without a receipt.
 */
static const struct refused {
	enum conn_state from;
	enum conn_event ev;
	const char *why;
} refused[] = {
	{ CS_GUARD, CE_GUARD_END, "no relay without the open receipt" },
	{ CS_GUARD, CE_FAST, "the fast relay never reads held bytes" },
	{ CS_GUARD_OPEN, CE_FAST, "the fast relay never reads held bytes" },
	{ CS_CONNECT, CE_FAST, "no fast relay before the tunnel is up" },
	{ CS_CONNECT, CE_GUARD_END, "no guard to end" },
	{ CS_GUARD_OPEN, CE_OPEN, "one open receipt per tunnel" },
	{ CS_RELAY, CE_OPEN, "one open receipt per tunnel" },
	{ CS_FAST, CE_OPEN, "one open receipt per tunnel" },
	{ CS_FAST, CE_FAST, "the fast relay starts once" },
	{ CS_FAST, CE_GUARD_END, "nothing out of the fast relay" },
	{ CS_SNIFF, CE_OPEN, "no open before a decision and a connect" },
	{ CS_RESOLVE, CE_OPEN, "no open before the connect" },
	{ CS_DRAIN, CE_OPEN, "a refused connection never opens" },
	{ CS_GUARD, CE_ANSWER, "a tunnel is never answered again" },
	{ CS_PARENT, CE_PARENT, "one parent per tunnel: no second CONNECT" },
	{ CS_RESOLVE, CE_PARENT, "the parent is asked once connected to it" },
	{ CS_PARENT, CE_FAST, "no fast relay before the parent said yes" },
	{ CS_GUARD_OPEN, CE_ANSWER, "a tunnel is never answered again" },
	{ CS_RELAY, CE_ANSWER, "a tunnel is never answered again" },
	{ CS_FAST, CE_ANSWER, "a tunnel is never answered again" },
	{ CS_RELAY, CE_CONNECTED_GUARD, "the guard comes before the relay, never after" },
};

/* What each state owes: tunnel (closed, never answered), open receipt, guard. */
static const struct owes {
	enum conn_state s;
	bool tunnel, opened, guarded;
} owes[] = {
	{ CS_SNIFF, false, false, false },
	{ CS_HTTP, false, false, false },
	{ CS_SOCKS5, false, false, false },
	{ CS_SOCKS4, false, false, false },
	{ CS_NATIVE, false, false, false },
	{ CS_RESOLVE, false, false, false },
	{ CS_CONNECT, false, false, false },
	{ CS_PARENT, false, false, false },
	{ CS_GUARD, true, false, true },
	{ CS_GUARD_OPEN, true, true, true },
	{ CS_RELAY, true, true, false },
	{ CS_FAST, true, true, false },
	{ CS_DRAIN, false, false, false },
	{ CS_REFUSED, false, false, false },
	{ (enum conn_state)-1, false, false, false },
	{ (enum conn_state)(CS_COUNT + 7), false, false, false },
};

static const struct allowed *
find_allowed(enum conn_state s, enum conn_event ev)
{
	for (size_t i = 0; i < NELEM(allowed); i++)
		if (allowed[i].from == s && allowed[i].ev == ev)
			return &allowed[i];
	return NULL;
}

/* One loop iteration per (state, event) pair: the table says exactly what the list says. */
START_TEST(test_every_pair)
{
	enum conn_state s = (enum conn_state)(_i / CE_COUNT);
	enum conn_event ev = (enum conn_event)(_i % CE_COUNT);
	const struct allowed *a = find_allowed(s, ev);
	enum conn_state got = conn_state_next(s, ev);

	if (a != NULL)
		ck_assert_msg(got == a->to, "%s on %s: %s, want %s", conn_state_name(s),
		    conn_event_name(ev), conn_state_name(got), conn_state_name(a->to));
	else
		ck_assert_msg(got == CS_REFUSED, "%s on %s: %s, want refused", conn_state_name(s),
		    conn_event_name(ev), conn_state_name(got));
}
END_TEST

START_TEST(test_refused)
{
	const struct refused *r = &refused[_i];

	ck_assert_msg(conn_state_next(r->from, r->ev) == CS_REFUSED,
	    "%s on %s: %s, want refused (%s)", conn_state_name(r->from), conn_event_name(r->ev),
	    conn_state_name(conn_state_next(r->from, r->ev)), r->why);
	ck_assert_ptr_null(find_allowed(r->from, r->ev));
}
END_TEST

START_TEST(test_owes)
{
	const struct owes *o = &owes[_i];

	ck_assert_msg(conn_state_tunnel(o->s) == o->tunnel, "%s tunnel", conn_state_name(o->s));
	ck_assert_msg(conn_state_opened(o->s) == o->opened, "%s opened", conn_state_name(o->s));
	ck_assert_msg(conn_state_guarded(o->s) == o->guarded, "%s guarded",
	    conn_state_name(o->s));
}
END_TEST

/*
 * The open receipt is an event: a state that owes a close is entered from one that does
 * not only by CE_OPEN, CE_OPEN always leads to one, and none is ever left for a state
 * that owes less (no second open, no tunnel answered). The fast relay is entered from
 * the relay only.
 */
START_TEST(test_open_event)
{
	for (int s = 0; s < CS_COUNT; s++)
		for (int ev = 0; ev < CE_COUNT; ev++) {
			enum conn_state from = (enum conn_state)s;
			enum conn_state to = conn_state_next(from, (enum conn_event)ev);

			if (to == CS_REFUSED)
				continue;
			if (!conn_state_opened(from) && conn_state_opened(to))
				ck_assert_int_eq(ev, CE_OPEN);
			if (ev == CE_OPEN)
				ck_assert(!conn_state_opened(from) && conn_state_opened(to));
			if (conn_state_opened(from))
				ck_assert(conn_state_opened(to));
			if (conn_state_tunnel(from))
				ck_assert(conn_state_tunnel(to));
			if (to == CS_FAST)
				ck_assert(from == CS_RELAY && ev == CE_FAST);
			/* The guard's state (c->guard) is only let go into the relay. */
			if (conn_state_guarded(from) && !conn_state_guarded(to))
				ck_assert(ev == CE_GUARD_END && to == CS_RELAY);
		}
}
END_TEST

/* No event leads back to the sniff, out of the fast relay or the drain, or into a frontend
 * from anywhere but the sniff. */
START_TEST(test_no_way_back)
{
	for (int s = 0; s < CS_COUNT; s++)
		for (int ev = 0; ev < CE_COUNT; ev++) {
			enum conn_state to = conn_state_next((enum conn_state)s, (enum conn_event)ev);

			ck_assert(to != CS_SNIFF);
			if (s == CS_FAST || s == CS_DRAIN)
				ck_assert(to == CS_REFUSED);
			if (s == CS_RELAY)
				ck_assert(to == CS_REFUSED || to == CS_FAST);
			if (to == CS_HTTP || to == CS_SOCKS5 || to == CS_SOCKS4 || to == CS_NATIVE)
				ck_assert_int_eq(s, CS_SNIFF);
			/* Once bytes may flow (guard, relay) nobody is answered any more. */
			if (conn_state_tunnel((enum conn_state)s))
				ck_assert(ev != CE_ANSWER || to == CS_REFUSED);
		}
}
END_TEST

/* Every state can be reached from the sniff, and every connection can end up answered
 * or relaying: a table with a dead state is a design error. */
START_TEST(test_reachable)
{
	bool seen[CS_COUNT] = { [CS_SNIFF] = true };
	bool grew = true;

	while (grew) {
		grew = false;
		for (int s = 0; s < CS_COUNT; s++) {
			if (!seen[s])
				continue;
			for (int ev = 0; ev < CE_COUNT; ev++) {
				enum conn_state to = conn_state_next((enum conn_state)s,
				    (enum conn_event)ev);

				if (to != CS_REFUSED && !seen[to]) {
					seen[to] = true;
					grew = true;
				}
			}
		}
	}
	for (int s = 0; s < CS_COUNT; s++)
		ck_assert_msg(seen[s], "%s is unreachable", conn_state_name((enum conn_state)s));
}
END_TEST

/* Out of range asks are refused, never read past the table. */
START_TEST(test_bounds)
{
	ck_assert_int_eq(conn_state_next(CS_COUNT, CE_ANSWER), CS_REFUSED);
	ck_assert_int_eq(conn_state_next(CS_SNIFF, CE_COUNT), CS_REFUSED);
	ck_assert_int_eq(conn_state_next((enum conn_state)-1, CE_ANSWER), CS_REFUSED);
	ck_assert_str_eq(conn_state_name(CS_REFUSED), "refused");
	for (int s = 0; s < CS_COUNT; s++)
		ck_assert_ptr_nonnull(conn_state_name((enum conn_state)s));
	for (int ev = 0; ev < CE_COUNT; ev++)
		ck_assert_ptr_nonnull(conn_event_name((enum conn_event)ev));
}
END_TEST

/*
 * The half-closes (conn_halves_step): each row starts from both directions' states and the
 * first EOF, applies one event to one direction, and says whether it is allowed and where
 * both directions and the close cause end up. A refused step changes nothing.
 */
static const struct half_row {
	enum conn_half up, down;
	enum conn_dir first;
	enum conn_dir d;
	enum conn_half_event ev;
	bool ok;
	enum conn_half up_to, down_to;
	const char *cause;          /* conn_halves_first_eof after the step */
	bool done;
	const char *why;
} half_rows[] = {
	{ CH_OPEN, CH_OPEN, CD_NONE, CD_UP, CHE_EOF, true,
	  CH_EOF_SEEN, CH_OPEN, "client-eof", false, "the client's EOF first" },
	{ CH_OPEN, CH_OPEN, CD_NONE, CD_DOWN, CHE_EOF, true,
	  CH_OPEN, CH_EOF_SEEN, "upstream-eof", false, "the upstream's EOF first" },
	{ CH_EOF_SEEN, CH_OPEN, CD_UP, CD_UP, CHE_SHUT, true,
	  CH_SHUT_SENT, CH_OPEN, "client-eof", false, "the client's bytes delivered: shut up" },
	{ CH_SHUT_SENT, CH_OPEN, CD_UP, CD_DOWN, CHE_EOF, true,
	  CH_SHUT_SENT, CH_EOF_SEEN, "client-eof", false, "a second EOF keeps the first cause" },
	{ CH_EOF_SEEN, CH_OPEN, CD_UP, CD_DOWN, CHE_EOF, true,
	  CH_EOF_SEEN, CH_EOF_SEEN, "client-eof", false, "both EOFs before any shut" },
	{ CH_SHUT_SENT, CH_EOF_SEEN, CD_DOWN, CD_UP, CHE_EOF, false,
	  CH_SHUT_SENT, CH_EOF_SEEN, "upstream-eof", false, "no EOF on a shut direction" },
	{ CH_SHUT_SENT, CH_EOF_SEEN, CD_UP, CD_DOWN, CHE_SHUT, true,
	  CH_SHUT_SENT, CH_SHUT_SENT, "client-eof", true, "the last shut: both done" },
	{ CH_EOF_SEEN, CH_EOF_SEEN, CD_DOWN, CD_UP, CHE_SHUT, true,
	  CH_SHUT_SENT, CH_EOF_SEEN, "upstream-eof", false, "shuts in either order" },
	{ CH_OPEN, CH_OPEN, CD_NONE, CD_UP, CHE_SHUT, false,
	  CH_OPEN, CH_OPEN, NULL, false, "no shut before the EOF" },
	{ CH_OPEN, CH_EOF_SEEN, CD_DOWN, CD_UP, CHE_SHUT, false,
	  CH_OPEN, CH_EOF_SEEN, "upstream-eof", false, "the other one's EOF shuts nothing" },
	{ CH_EOF_SEEN, CH_OPEN, CD_UP, CD_UP, CHE_EOF, false,
	  CH_EOF_SEEN, CH_OPEN, "client-eof", false, "one EOF per direction" },
	{ CH_SHUT_SENT, CH_OPEN, CD_UP, CD_UP, CHE_SHUT, false,
	  CH_SHUT_SENT, CH_OPEN, "client-eof", false, "one shut per direction" },
	{ CH_SHUT_SENT, CH_SHUT_SENT, CD_UP, CD_UP, CHE_EOF, false,
	  CH_SHUT_SENT, CH_SHUT_SENT, "client-eof", true, "nothing after both are done" },
	{ CH_SHUT_SENT, CH_SHUT_SENT, CD_UP, CD_DOWN, CHE_SHUT, false,
	  CH_SHUT_SENT, CH_SHUT_SENT, "client-eof", true, "nothing after both are done" },
	{ CH_SHUT_SENT, CH_SHUT_SENT, CD_DOWN, CD_DOWN, CHE_EOF, false,
	  CH_SHUT_SENT, CH_SHUT_SENT, "upstream-eof", true, "nothing after both are done" },
	{ CH_OPEN, CH_OPEN, CD_NONE, CD_NONE, CHE_EOF, false,
	  CH_OPEN, CH_OPEN, NULL, false, "no direction" },
	{ CH_OPEN, CH_OPEN, CD_NONE, (enum conn_dir)7, CHE_EOF, false,
	  CH_OPEN, CH_OPEN, NULL, false, "out of range direction" },
	{ CH_OPEN, CH_OPEN, CD_NONE, CD_UP, CHE_COUNT, false,
	  CH_OPEN, CH_OPEN, NULL, false, "out of range event" },
	{ CH_OPEN, CH_OPEN, CD_NONE, CD_DOWN, (enum conn_half_event)-1, false,
	  CH_OPEN, CH_OPEN, NULL, false, "out of range event" },
};

START_TEST(test_half_close)
{
	const struct half_row *t = &half_rows[_i];
	struct conn_halves hs = { .up = t->up, .down = t->down, .first = t->first };
	const char *cause;

	ck_assert_msg(conn_halves_step(&hs, t->d, t->ev) == t->ok, "%s on %s: %s (%s)",
	    conn_dir_name(t->d), conn_half_event_name(t->ev), t->ok ? "refused" : "allowed",
	    t->why);
	ck_assert_msg(hs.up == t->up_to && hs.down == t->down_to, "up %s down %s (%s)",
	    conn_half_name(hs.up), conn_half_name(hs.down), t->why);
	cause = conn_halves_first_eof(&hs);
	if (t->cause == NULL)
		ck_assert_ptr_null(cause);
	else
		ck_assert_str_eq(cause, t->cause);
	ck_assert_msg(conn_halves_done(&hs) == t->done, "done (%s)", t->why);
	ck_assert(conn_halves_eof(&hs, CD_UP) == (hs.up != CH_OPEN));
	ck_assert(conn_halves_eof(&hs, CD_DOWN) == (hs.down != CH_OPEN));
	/* The table alone says the same of the direction stepped. */
	if (t->d == CD_UP || t->d == CD_DOWN) {
		enum conn_half from = t->d == CD_UP ? t->up : t->down;
		enum conn_half next = conn_half_next(from, t->ev);

		ck_assert_int_eq(next, t->ok ? (t->d == CD_UP ? t->up_to : t->down_to) :
		    CH_REFUSED);
	}
}
END_TEST

static Suite *
connstate_suite(void)
{
	Suite *s = suite_create("connstate");
	TCase *tc;

	tc = tcase_create("every state x event: allowed ones lead where they should, the rest refused");
	tcase_add_loop_test(tc, test_every_pair, 0, CS_COUNT * CE_COUNT);
	suite_add_tcase(s, tc);
	tc = tcase_create("the refusals the design relies on");
	tcase_add_loop_test(tc, test_refused, 0, (int)NELEM(refused));
	suite_add_tcase(s, tc);
	tc = tcase_create("what each state owes: tunnel, open receipt, guard");
	tcase_add_loop_test(tc, test_owes, 0, (int)NELEM(owes));
	suite_add_tcase(s, tc);
	tc = tcase_create("the open receipt and the fast relay are transitions of their own");
	tcase_add_test(tc, test_open_event);
	suite_add_tcase(s, tc);
	tc = tcase_create("no way back, nothing out of the fast relay or drain");
	tcase_add_test(tc, test_no_way_back);
	suite_add_tcase(s, tc);
	tc = tcase_create("every state reachable from the sniff");
	tcase_add_test(tc, test_reachable);
	suite_add_tcase(s, tc);
	tc = tcase_create("out of range");
	tcase_add_test(tc, test_bounds);
	suite_add_tcase(s, tc);
	tc = tcase_create("half-close per direction: eof, then shut, nothing after both");
	tcase_add_loop_test(tc, test_half_close, 0, (int)NELEM(half_rows));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(connstate_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
