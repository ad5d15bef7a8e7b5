/*
 * guard_room: the making of room when the server is full (guard.h says
 * the rules: which connection a newcomer may end, in what order) and the
 * strikes on clients whose connections were ended for room. Under the
 * guard's lock, called from webhooks/guard.c.
 */
#include "webhooks/guard_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/*
 * Marks on clients, each for a while: struck or vouched for.
 *
 * A client whose connection was ended for room before its request line
 * or as a slow body (or at its request line deadline) is struck for
 * WH_GUARD_STRIKE_S: its connections have no grace (room_class()), and
 * its heads not whole and slow bodies go first, to any newcomer not
 * struck (guard_make_room()). Not for a 401: a forge's address is shared
 * by all its users, and one pointing a webhook here with a wrong secret
 * struck the address every genuine delivery came from (the ninth outside
 * attack's F2). The seventh outside attack's F1: one
 * bare connection from each of 300 addresses, churned at about 5,000
 * connects a second, kept every slot in its grace often enough that 11%
 * to 28% of genuine deliveries were refused; bodies at a legal rate from
 * 300 addresses, whose newcomers ended a forge's heads not yet whole,
 * kept 46 of 893 out.
 *
 * A client whose delivery was accepted (202: a valid signature on new
 * work, which no one without the secret can send, and no replay earns)
 * is vouched for WH_GUARD_VOUCH_S: its connections without their whole
 * head have WH_GUARD_VOUCHED_GRACE_MS of grace, its newcomers may end
 * any unvouched client's head or slow body, and it is never struck. The
 * eighth outside attack: a forge with several deliveries in flight that
 * connects a moment before it sends (as curl does) held more connections
 * than any attacking address, so its heads were the ones ended, and its
 * newcomers were refused: bare connections, or complete requests with a
 * bad signature after the same pause, from 64 to 1,000 addresses kept
 * 10% to 85% of its deliveries out.
 *
 * Marked entries are kept while marked, holding a reference; at most
 * WH_GUARD_STRUCK_MAX struck at once. A trusted proxy is never struck by
 * its own connections (its clients are, by their requests). Under the
 * lock.
 */
int
guard_struck(const struct client *cl)
{
	return cl && cl->struck;
}

int
guard_vouched(const struct client *cl)
{
	return cl && cl->vouched;
}

/* Keep cl while marked: one reference for the list. */
static void
mark(struct wh_guard *g, struct client *cl)
{
	if (cl->struck || cl->vouched)
		return;
	cl->refs++;
	cl->marked_next = g->marked;
	g->marked = cl;
}

void
guard_strike(struct wh_guard *g, struct client *cl, const struct timespec *now)
{
	if (!cl || cl->vouched)
		return;
	cl->struck_until = *now;
	cl->struck_until.tv_sec += WH_GUARD_STRIKE_S;
	if (cl->struck || g->n_struck >= WH_GUARD_STRUCK_MAX)
		return;
	mark(g, cl);
	cl->struck = 1;
	g->n_struck++;
	g->st.struck++;
}

void
guard_vouch(struct wh_guard *g, struct client *cl, const struct timespec *now)
{
	if (!cl)
		return;
	cl->vouched_until = *now;
	cl->vouched_until.tv_sec += WH_GUARD_VOUCH_S;
	if (cl->vouched)
		return;
	mark(g, cl);
	cl->vouched = 1;
	if (cl->struck) {
		cl->struck = 0;
		g->n_struck--;
	}
}

/* Lift the marks that have run out; let go of clients left unmarked. */
void
guard_marks_expire(struct wh_guard *g, const struct timespec *now)
{
	for (struct client **pp = &g->marked; *pp;) {
		struct client *cl = *pp;

		if (cl->struck && since_s(&cl->struck_until, now) >= 0) {
			cl->struck = 0;
			g->n_struck--;
		}
		if (cl->vouched && since_s(&cl->vouched_until, now) >= 0)
			cl->vouched = 0;
		if (cl->struck || cl->vouched) {
			pp = &cl->marked_next;
			continue;
		}
		*pp = cl->marked_next;
		guard_client_put(g, cl);
	}
}

/*
 * Is c's body too slow to keep its slot when the server is full: under
 * way for WH_GUARD_FULL_GRACE_MS (so a body in its first milliseconds,
 * still on its way behind its head, is never ended), and not on course
 * to end within WH_GUARD_FULL_BODY_S of its head at its average rate so
 * far, its time counted as at least WH_GUARD_FULL_FLOOR_MS (so a body
 * that has just begun is judged by what it sent in that much time)? A
 * body that has received nothing is never on course; one that trickles,
 * or stalls, falls off course as its time grows; one that has received
 * nothing for WH_GUARD_FULL_STALL_MS short of its length (or, chunked,
 * of its last chunk) is slow whatever its average (a body that sends most of a small length at once
 * and then waits for its deadline stays on course by its average for its
 * whole life; a whole body never is). Past WH_GUARD_FULL_FLOOR_MS, a body
 * is also slow whose average is under WH_GUARD_FULL_RATE (or
 * min_body_bytes_per_s, if more) and that is not whole: being on course
 * is not enough for a small one (the sixth intake attack's F1: 10 bytes
 * declared and sent at 2.5 B/s, on course to end in 4 s, a byte every
 * 400 ms, from each of 260 addresses, kept every delivery and /healthz
 * out). A body of unknown length (chunked, not yet at its last chunk)
 * is slow once under way WH_GUARD_FULL_CHUNKED_MS, and before that while
 * it holds less than that long at WH_GUARD_FULL_CHUNKED_RATE (64 KiB):
 * it was slow only past WH_GUARD_FULL_BODY_S, so 60 KB of a 1 MiB chunk
 * at once and then a byte every 3 ms from each of 260 addresses held
 * every slot for 5-7 MB/s and kept 3-37% of a vouched forge's deliveries
 * out (the fifteenth outside attack on the intake), and judged by the
 * declared bodies' rate and a 1 s cap it still kept 40% out at 15 MB/s.
 * Forges send a length; a chunked delivery is whole in its first
 * milliseconds, so holding a slot with one now costs 256 KiB/s. Under
 * the lock.
 */
int
guard_body_slow(const struct wh_guard *g, const struct wh_guard_conn *c,
    const struct timespec *now)
{
	double t = since_s(&c->since, now), rate = WH_GUARD_FULL_RATE;

	if (t * 1000 < WH_GUARD_FULL_GRACE_MS)
		return 0;
	if ((!c->expected || c->received < c->expected) &&
	    since_s(&c->last_rx, now) * 1000 >= WH_GUARD_FULL_STALL_MS)
		return 1;
	if ((double)g->h->min_body_bytes_per_s > rate)
		rate = (double)g->h->min_body_bytes_per_s;
	if (!c->expected) {
		/* Chunked: no length to be on course for; a forge's rate, briefly. */
		return t * 1000 >= WH_GUARD_FULL_CHUNKED_MS ||
		    (double)c->received < WH_GUARD_FULL_CHUNKED_MS / 1000.0 * WH_GUARD_FULL_CHUNKED_RATE;
	}
	if (t * 1000 < WH_GUARD_FULL_FLOOR_MS) {
		t = WH_GUARD_FULL_FLOOR_MS / 1000.0;
	} else if (c->received < c->expected && (double)c->received < t * rate) {
		return 1;
	}
	return !c->received ||
	    t * (double)c->expected / (double)c->received > WH_GUARD_FULL_BODY_S;
}

/*
 * The seconds c's body needs to end at its average rate so far, for a
 * body under way past WH_GUARD_FULL_GRACE_MS with a known length and
 * bytes received; else 0 (not a body, or one guard_body_slow() judges). Under
 * the lock.
 */
static double
body_left_s(const struct wh_guard_conn *c, const struct timespec *now)
{
	double t;

	if (c->state != CONN_BODY || !c->owner ||
	    !c->expected || !c->received || c->received >= c->expected)
		return 0;
	t = since_s(&c->since, now);
	if (t * 1000 < WH_GUARD_FULL_GRACE_MS)
		return 0;
	return t * (double)(c->expected - c->received) / (double)c->received;
}

/*
 * How far a connection is from earning its slot when the server is full:
 * 0 for one that is not to be ended for room (a body on its way at a
 * good rate, a request being answered, one being handed over, a trusted
 * proxy's), else 3 for one without its request line, 2 for one without
 * its whole head, 1 for a slow body or a whole head the server has yet
 * to read (a body about to begin: ended only as a body is, for an
 * address holding fewer). Under the lock.
 */
static int
room_class(const struct wh_guard *g, const struct wh_guard_conn *v,
    const struct timespec *now)
{
	if (!v->owner)
		return 0;
	/*
	 * Not in its first WH_GUARD_HEAD_GRACE_MS: a delivery's head is on
	 * its way behind its connect (the third outside attack's F2: a
	 * newcomer every millisecond took genuine connections in that gap).
	 * Short, so that a flood of connects turns its slots over slower than
	 * that (256 slots: 51,200 connects a second) before it is a wall.
	 * Longer for an owner's only connection: a client on a busy host
	 * (a health check, a forge's delivery from the same machine) can be
	 * scheduled out for milliseconds between its connect and its first
	 * write, and newcomers from many addresses, one each, then ended it
	 * in that gap; a wall of such heads takes a connect from each of 256
	 * addresses every WH_GUARD_LONE_GRACE_MS (5,120 a second).
	 */
	if ((v->state == CONN_LINE || v->state == CONN_HEAD) && !guard_struck(v->owner) &&
	    since_s(&v->opened, now) * 1000 < (guard_vouched(v->owner) ?
	    WH_GUARD_VOUCHED_GRACE_MS : v->owner->held == 1 ?
	    WH_GUARD_LONE_GRACE_MS : WH_GUARD_HEAD_GRACE_MS))
		return 0;
	switch (v->state) {
	case CONN_LINE:
		return v->head_waiting ? 1 : 3;
	case CONN_HEAD:
		return v->whole || v->head_waiting ? 1 : 2;
	case CONN_BODY:
		return v->body_waiting ? 0 : guard_body_slow(g, v, now);
	case CONN_WAIT:
	case CONN_PASS:
	case CONN_DEAD:
		break;
	}
	return 0;
}

static int
older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * Of two in class 1, is a the first to end: a slow body before a whole
 * head not yet read, the lower average rate, then (at an equal rate, as
 * for bodies that have received nothing) the older head?
 */
static int
slower(const struct wh_guard_conn *a, const struct wh_guard_conn *b,
    const struct timespec *now)
{
	if (a->whole != b->whole)
		return b->whole;
	if (a->whole)
		return older(&a->since, &b->since);
	double ra = (double)a->received * since_s(&b->since, now);
	double rb = (double)b->received * since_s(&a->since, now);

	return ra < rb || (ra == rb && older(&a->since, &b->since));
}

/*
 * Is a whole head waiting unread in the socket of v, a connection the door
 * holds (a delivery written at once, which the door has not yet had the
 * time to read on a busy host)? A peek of at most WH_GUARD_PEEK bytes:
 * nothing is consumed. Under the lock.
 */
static int
head_in_socket(const struct wh_guard_conn *v)
{
	char buf[WH_GUARD_PEEK + 1];
	int queued = 0;
	ssize_t n;

	/* What is queued, no more: as the door's peek (webhooks/door.c). */
	if (!v->in_door || v->fd < 0 || ioctl(v->fd, FIONREAD, &queued) < 0 || queued <= 0)
		return 0;
	n = recv(v->fd, buf, (size_t)queued < WH_GUARD_PEEK ? (size_t)queued : WH_GUARD_PEEK,
	    MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return memmem(buf, (size_t)n, "\r\n\r\n", 4) || memmem(buf, (size_t)n, "\n\n", 2);
}

/*
 * Is the rest of v's body waiting unread in its socket (a delivery written
 * at once, its head read and its body not yet, on a busy host)? A count
 * of what is queued, nothing read. Under the lock.
 */
static int
body_in_socket(const struct wh_guard_conn *v)
{
	int queued = 0;

	return v->fd >= 0 && v->expected > v->received &&
	    ioctl(v->fd, FIONREAD, &queued) == 0 && queued > 0 &&
	    (size_t)queued >= v->expected - v->received;
}

/*
 * Has v earned its slot, as far as its own address's newcomers go
 * (guard_make_room())? A body on course, a request being answered or handed
 * over, a head in its first WH_GUARD_HEAD_GRACE_MS, a whole head not yet
 * read (in the door, or waiting in its socket: peeked, once): yes; no
 * request line, a head not whole, or a slow body: no. Under the lock.
 */
static int
earned(const struct wh_guard *g, struct wh_guard_conn *v, const struct timespec *now)
{
	int k = room_class(g, v, now);

	if (k >= 2 && !v->head_waiting && head_in_socket(v)) {
		v->head_waiting = 1;
		k = room_class(g, v, now);
	}
	return !k || (k == 1 && (v->whole || v->head_waiting));
}

/*
 * Full: make room for newcomer c. Connections slots are scarce, and a
 * genuine delivery earns its slot within milliseconds, so the one ended
 * is the one furthest from earning it: first those still without a
 * request line, then those without their whole head, then slow bodies
 * and whole heads the server has yet to read (never one being handed over)
 * (guard_body_slow()); among heads, from the owner holding the most
 * connections, then the oldest; among bodies, the slowest. A connection's
 * owner is its peer, or behind a trusted proxy, once its head is in, the
 * client its X-Forwarded-For names (so a proxy's slow bodies are judged
 * per client, as direct ones are). Only an owner holding at least as
 * many as c's own can lose a head to c, and only one holding more a
 * body (so owners at an equal share cannot churn each other's bodies),
 * except:
 *   - when c is alone from its address: then a slow body from an owner
 *     holding one goes too (one slow body from each of hundreds of
 *     addresses must not keep a forge out);
 *   - when every other connection of c's address has earned its slot
 *     (earned()): then a head without its request line, or not whole,
 *     goes from any owner (one partial request line from each of
 *     hundreds of addresses must not keep out a forge's second
 *     delivery in flight; the fourth outside attack's F2). What goes is
 *     never a genuine delivery's, which has earned its slot, and an
 *     address with a head of its own not earned has no such right.
 * With none of those, the last resort is a body on course from an owner
 * holding more than c's own and more than one: the one with the most
 * time left at its rate (bodies that stay on course, sent again and
 * again from a few addresses, are the attacker's, a forge's are done
 * in milliseconds). When the pick is c's own address, c is refused
 * instead: an address at its share cannot churn its own connections,
 * nor take a slot from an address holding fewer (a forge sending one
 * delivery); a trusted proxy's newcomer may end the proxy's own
 * connections (idle between requests; its clients' are not its own).
 * 0, or -EUSERS when c was refused. Under the lock.
 */
/*
 * Does newcomer c deserve any owner's head not whole or slow body: its
 * client is vouched for, or every other connection of its owner has
 * earned its slot (c is not in the list yet)? Under the lock.
 */
static int
deserves(struct wh_guard *g, const struct wh_guard_conn *c, const struct timespec *now)
{
	if (!c->owner)
		return 0;
	if (guard_vouched(c->owner))
		return 1;
	for (struct wh_guard_conn *v = g->conns; v; v = v->next)
		if (v->owner == c->owner && v->state != CONN_DEAD && !earned(g, v, now))
			return 0;
	return 1;
}

/*
 * Of two candidates, is v (room class k) to go before victim (vclass): a
 * struck client's first; then the higher class; among slow bodies the
 * slower, among heads the owner holding more, then the older.
 */
static int
goes_first(const struct wh_guard_conn *v, int k, const struct wh_guard_conn *victim,
    int vclass, const struct timespec *now)
{
	int sv = guard_struck(v->owner), svic = guard_struck(victim->owner);

	if (sv != svic)
		return sv > svic;
	if (k != vclass)
		return k > vclass;
	if (k == 1)
		return slower(v, victim, now);
	if (v->owner->held != victim->owner->held)
		return v->owner->held > victim->owner->held;
	return older(&v->opened, &victim->opened);
}

/*
 * Is v's body still short of its end: of its Content-Length, or, chunked
 * (no length), not yet at its last chunk (the body's state lasts until
 * then)? A chunk cut short and left there was proven by its rate for
 * seconds (64 KB of it at once) and never partial: from new addresses at
 * 300 connects a second it kept 84% of first deliveries out (the
 * thirteenth outside attack on the intake).
 */
static int
short_of(const struct wh_guard_conn *v)
{
	return v->state == CONN_BODY && (!v->expected || v->received < v->expected);
}

/*
 * Has v yet to show it is a genuine request, though it is in its grace: a
 * head not whole (nor whole and unread in its socket), or a body below
 * WH_GUARD_FULL_RATE so far (its time counted as at least
 * WH_GUARD_FULL_GRACE_MS) or short of its length without a byte for
 * WH_GUARD_YOUNG_STALL_MS, from a client not vouched for. A delivery
 * written at once is past all three in the milliseconds after its
 * connect. The stall counts whatever the average: half of an 8 KiB body
 * sent with its head is above a forge's rate for its first 125 ms, and a
 * wall of such from new addresses, reopened as they went, kept 16-21% of
 * first deliveries out (the twelfth outside attack). Under the lock.
 */
static int
unproven(const struct wh_guard_conn *v, const struct timespec *now)
{
	double t;

	if (!v->owner || guard_vouched(v->owner) || v->whole || v->head_waiting ||
	    v->body_waiting)
		return 0;
	if (v->state == CONN_LINE || v->state == CONN_HEAD)
		return 1;
	if (v->state != CONN_BODY)
		return 0;
	if (short_of(v) && v->received &&
	    since_s(&v->last_rx, now) * 1000 >= WH_GUARD_YOUNG_STALL_MS)
		return 1;
	t = since_s(&v->since, now);
	if (t * 1000 < WH_GUARD_FULL_GRACE_MS)
		t = WH_GUARD_FULL_GRACE_MS / 1000.0;
	return (double)v->received < t * WH_GUARD_FULL_RATE;
}

/*
 * A body short of its length from a client not vouched for, however fast
 * so far, without a byte for WH_GUARD_PARTIAL_MS: a genuine one is whole
 * within milliseconds of its head (the wait covers one whose rest the
 * server has read into its buffer and not yet passed on). Likewise a
 * request handed over and not yet taken by the server, WH_GUARD_PARTIAL_MS
 * after the handover, whose socket holds less than its head and declared
 * body (and less than WH_GUARD_PASS_QUEUED: a large body cannot all
 * queue): at thousands of such a second the server's thread fell behind
 * and they held the slots (the twelfth outside attack). Under the lock.
 */
static int
partial(const struct wh_guard_conn *v, const struct timespec *now)
{
	int queued = 0;

	if (!v->owner || guard_vouched(v->owner))
		return 0;
	if (v->state == CONN_PASS)
		return v->request_bytes && !v->body_waiting &&
		    since_s(&v->passed, now) * 1000 >= WH_GUARD_PARTIAL_MS && v->fd >= 0 &&
		    ioctl(v->fd, FIONREAD, &queued) == 0 && (size_t)queued < v->request_bytes &&
		    queued < WH_GUARD_PASS_QUEUED;
	return short_of(v) && !v->whole && !v->body_waiting &&
	    since_s(&v->last_rx, now) * 1000 >= WH_GUARD_PARTIAL_MS;
}

/*
 * A request of a client not vouched for whose head is in but not yet its
 * body's start: a whole head in the door or its socket, or handed over
 * and not yet adopted. Counted with the unproven (it has shown nothing
 * yet; at thousands of reconnects a second a busy host held a third of
 * the slots so), never ended for it. Under the lock.
 */
static int
on_the_way(const struct wh_guard_conn *v)
{
	return v->owner && !guard_vouched(v->owner) && v->state != CONN_BODY &&
	    (v->whole || v->head_waiting || v->passing);
}

/*
 * The last of all, when nothing else can go and c deserves it: the oldest
 * unproven connection (above), from an owner other than c's, opened
 * WH_GUARD_UNPROVEN_YOUNG_MS ago or more; with none, the oldest partial
 * body (above); with none, the oldest unproven one younger than that. A
 * genuine request's head is on its way in its first milliseconds: ended
 * first, it lost 8-11% of deliveries to 1,600 connections a second from
 * new addresses, each a head with 64 KiB of a 200 KB body and then a byte
 * every 30 ms (partial between bytes; the fourteenth outside attack). The graces
 * keep a genuine request from newcomers while it is on its way, but a
 * wall of connections, each from an address never seen before, kept
 * every slot in its grace, and striking addresses cannot hold one that
 * never reuses an address: newcomers were refused, genuine ones among
 * them (the ninth outside attack: 400 bare connections at once,
 * reconnecting from 127.100-199.x.y; the same with a head and one byte of
 * a tiny body, on course for its first WH_GUARD_FULL_FLOOR_MS). Oldest
 * first, whatever each has sent (a wall of request lines would otherwise
 * end a genuine connection still without its own first), the slots turn
 * over in order: each newcomer keeps its slot while the unproven
 * connections before it are ended, more than max_connections / 2 of them
 * (at the fastest flood of connects on loopback, about 17,000 a second,
 * 8 ms or more), in which a client that sends its request as it connects
 * has it in. Only when unproven connections and partial bodies (with
 * requests on the way, below) hold more than half the slots (half an 8 KiB body sent with its head is proven
 * by its rate for 125 ms and by its last byte for
 * WH_GUARD_YOUNG_STALL_MS, and at thousands of reconnects a second the
 * young ones alone held most slots: the twelfth outside attack): a few are a genuine client's, and keep their grace (a health
 * check scheduled out between its connect and its write, while every
 * other slot holds a body on course). Not struck: a connection in its
 * grace has done nothing wrong. Under the lock.
 */
static struct wh_guard_conn *
oldest_unproven(struct wh_guard *g, const struct wh_guard_conn *c, const struct timespec *now)
{
	for (;;) {
		struct wh_guard_conn *pick = NULL, *part = NULL, *young = NULL;
		unsigned n = 0;

		for (struct wh_guard_conn *v = g->conns; v; v = v->next) {
			int u;

			if (v->owner == c->owner)
				continue;
			if (!((u = unproven(v, now)) || partial(v, now))) {
				n += on_the_way(v);
				continue;
			}
			n++;
			if (u && since_s(&v->opened, now) * 1000 < WH_GUARD_UNPROVEN_YOUNG_MS) {
				if (!young || older(&v->opened, &young->opened))
					young = v;
			} else if (u && (!pick || older(&v->opened, &pick->opened))) {
				pick = v;
			}
			if (!u && (!part || older(&v->opened, &part->opened)))
				part = v;
		}
		if (!pick)
			pick = part ? part : young;
		if (!pick || 2 * n <= g->h->max_connections)
			return NULL;
		/*
		 * A whole head, or the rest of a body, unread in its socket has
		 * earned its slot: looked at once (a request handed over was
		 * judged by its socket already).
		 */
		if (pick->state == CONN_PASS ||
		    (pick->state == CONN_BODY ? !body_in_socket(pick) : !head_in_socket(pick)))
			return pick;
		if (pick->state == CONN_BODY)
			pick->body_waiting = 1;
		else
			pick->head_waiting = 1;
	}
}

int
guard_make_room(struct wh_guard *g, struct wh_guard_conn *c)
{
	struct wh_guard_conn *victim, *last;
	unsigned mine = c->owner ? c->owner->held : 0;
	struct timespec now;
	int vclass, deserving, cstruck = guard_struck(c->owner);
	double last_left;

	clock_gettime(CLOCK_MONOTONIC, &now);
	deserving = deserves(g, c, &now);
again:
	victim = last = NULL;
	vclass = 0;
	last_left = 0;
	for (struct wh_guard_conn *v = g->conns; v; v = v->next) {
		int k = room_class(g, v, &now);

		if (!k) {
			/* The last resort: a body on course from a heavier owner. */
			double left = body_left_s(v, &now);

			if (left > 0 && v->owner->held > (mine > 1 ? mine : 1) &&
			    (!last || left > last_left)) {
				last = v;
				last_left = left;
			}
			continue;
		}
		/*
		 * A body off course may go to an owner at an equal share only
		 * when that share is the newcomer alone (a forge's one delivery
		 * against one slow body from each of many addresses); a head
		 * not whole, or a body off course, to any owner for a newcomer
		 * deserving it (a forge's next delivery, its others on course:
		 * the seventh outside attack's F2, bodies at a legal rate from
		 * 300 addresses, kept 634 of 1392 deliveries of a forge with 4
		 * in flight out); and to any newcomer not struck when its owner
		 * is. A struck newcomer is not kept from ending others': a
		 * genuine client struck once (its connection ended while it
		 * paused before its request line) was then refused for good
		 * against attackers from fresh addresses (the ninth outside
		 * attack).
		 */
		if (!((k >= 2 || (k == 1 && v->state == CONN_BODY)) &&
		    (deserving || (!cstruck && guard_struck(v->owner)))) &&
		    (v->owner->held < mine ||
		    (k == 1 && v->owner->held == mine &&
		    (v->whole || v->state != CONN_BODY || mine > 1))))
			continue;
		if (!victim || goes_first(v, k, victim, vclass, &now)) {
			victim = v;
			vclass = k;
		}
	}
	/*
	 * A head picked for having too little: unless the door has it all and
	 * not yet read (then it has earned its slot like a whole head, and the
	 * pick is made again; each connection is peeked once).
	 */
	if (victim && vclass >= 2 && !victim->head_waiting && head_in_socket(victim)) {
		victim->head_waiting = 1;
		goto again;
	}
	/* ... and a body whose rest is waiting in its socket, likewise. */
	if (victim && victim->state == CONN_BODY && body_in_socket(victim)) {
		victim->body_waiting = 1;
		goto again;
	}
	if (!victim)
		victim = last;
	if (!victim && deserving && (victim = oldest_unproven(g, c, &now))) {
		g->st.ended_room_young++;
		guard_kill_conn(g, victim, 1);
		return 0;
	}
	if (!victim || (c->owner && victim->owner == c->owner && !c->proxied)) {
		guard_kill_conn(g, c, 0);
		g->st.refused_full++;
		return -EUSERS;
	}
	if ((victim->state == CONN_LINE || victim->state == CONN_BODY) &&
	    !(victim->proxied && victim->owner == victim->peer))
		guard_strike(g, victim->owner, &now);
	if (victim->state == CONN_LINE)
		g->st.ended_room_line++;
	else if (victim->state == CONN_BODY)
		g->st.ended_room_body++;
	else
		g->st.ended_room_head++;
	guard_kill_conn(g, victim, 1);
	return 0;
}
