#include "webhooks/guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define GUARD_BUCKETS	1024
#define GUARD_TICK_MS	200
#define GUARD_XFF_MAX	64	/* X-Forwarded-For entries looked at, from the right */

/* A client address: the key of the table, and what it holds. */
struct client {
	int family;
	unsigned char addr[16];
	char text[WH_GUARD_CLIENT_MAX];
	unsigned refs;		/* connections naming it as peer or client */
	unsigned slots;		/* connections (direct) or requests (proxied) */
	unsigned held;		/* connections charged to it for room (make_room()) */
	size_t buffered;	/* body bytes held */
	struct timespec struck_until;	/* struck (struck_room()) until then */
	int struck;		/* on g->struck, holding a reference */
	struct client *struck_next;
	struct client *next;
};

enum conn_state {
	CONN_LINE,		/* in the door, waiting for its request line */
	CONN_HEAD,		/* waiting for a request head */
	CONN_BODY,		/* head in, body arriving */
	CONN_WAIT,		/* being answered: no deadline here */
	CONN_PASS,		/* handed over by the door, not yet taken by the server */
	CONN_DEAD,		/* shut down by the reaper */
};

struct wh_guard_conn {
	int fd;
	struct client *peer;	/* the socket's address */
	struct client *client;	/* who the request is charged to */
	int proxied;		/* peer is a trusted proxy */
	int has_slot;		/* client->slots counts this connection or request */
	struct client *owner;	/* whom it is charged to for room: its peer, or for a
				   proxied one with its head in, its client; NULL: none */
	enum conn_state state;
	struct timespec since;	/* start of the state */
	struct timespec opened;	/* accepted (by the door, for a handed-over one) */
	struct timespec heard;	/* last bytes seen, while the door holds it */
	int in_door;		/* the door reports progress: idle time counts */
	int whole;		/* its whole head is in, not yet read by the server */
	int head_waiting;	/* make_room() found its whole head unread in the socket */
	int passing;		/* handed over, not yet adopted (state PASS, or DEAD) */
	struct timespec passed;	/* when it was handed over */
	size_t received;	/* body bytes of the request so far */
	struct timespec last_rx;	/* the body's last bytes (its start before any) */
	size_t expected;	/* its Content-Length; 0: not known (chunked) */
	size_t charged;		/* of them held, charged to client */
	int large;		/* a body past small_body_bytes: charged outside the reserve */
	struct wh_guard_conn *prev, *next;
};

struct wh_guard {
	const struct config_http *h;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t reaper;
	int stopping;
	unsigned live;		/* connections not shut down */
	struct wh_guard_stats st;	/* counters for /metrics (open, buffered filled in on read) */
	size_t buffered;
	size_t buffered_large;	/* of them, held by large bodies */
	struct client *clients[GUARD_BUCKETS];
	struct client *struck;	/* clients struck, each holding a reference */
	unsigned n_struck;
	struct wh_guard_conn *conns;
};

static void release_request(struct wh_guard *g, struct wh_guard_conn *c);

static const char TIMEOUT_408[] = "HTTP/1.1 408 Request Timeout\r\n"
    "Connection: close\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n"
    "{\"error\":\"request too slow\"}\n";

static double
since_s(const struct timespec *t0, const struct timespec *now)
{
	return (double)(now->tv_sec - t0->tv_sec) + (now->tv_nsec - t0->tv_nsec) / 1e9;
}

static unsigned
client_hash(int family, const unsigned char *addr)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619u;
	return (h ^ (unsigned)family) % GUARD_BUCKETS;
}

/* (family, addr) from a socket address; IPv4-mapped IPv6 becomes IPv4. */
static int
sockaddr_key(const struct sockaddr *sa, socklen_t len, int *family,
    unsigned char addr[16])
{
	memset(addr, 0, 16);
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		*family = AF_INET;
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			*family = AF_INET;
			memcpy(addr, a->s6_addr + 12, 4);
		} else {
			*family = AF_INET6;
			memcpy(addr, a->s6_addr, 16);
		}
		return 0;
	}
	return -EAFNOSUPPORT;
}

int
wh_guard_cidr_match(const struct config_cidr *list, size_t n, int family,
    const void *addr)
{
	const unsigned char *a = addr;

	if (family == AF_INET6 && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)addr)) {
		family = AF_INET;
		a += 12;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned bits = list[i].bits, full = bits / 8, rest = bits % 8;

		if (list[i].family != family || memcmp(list[i].addr, a, full))
			continue;
		if (rest && ((list[i].addr[full] ^ a[full]) & (0xff00u >> rest) & 0xff))
			continue;
		return 1;
	}
	return 0;
}

/*
 * The client entry for an address, made on first use, with one more
 * reference for the caller. An IPv6 client is its /WH_GUARD_V6_PREFIX
 * network, not its address: a host is given a whole /64 and may send
 * from any address in it (the sixth outside attack's F1b), as an IPv4
 * host has one address. Under the lock.
 */
static struct client *
client_get(struct wh_guard *g, int family, const unsigned char addr[16])
{
	unsigned char key[16];
	unsigned b;
	struct client *cl;

	memcpy(key, addr, 16);
	if (family == AF_INET6)
		memset(key + WH_GUARD_V6_PREFIX / 8, 0, 16 - WH_GUARD_V6_PREFIX / 8);
	b = client_hash(family, key);
	for (cl = g->clients[b]; cl; cl = cl->next)
		if (cl->family == family && !memcmp(cl->addr, key, 16)) {
			cl->refs++;
			return cl;
		}
	if (!(cl = calloc(1, sizeof(*cl))))
		return NULL;
	cl->family = family;
	cl->refs = 1;
	memcpy(cl->addr, key, 16);
	if (!inet_ntop(family, key, cl->text, sizeof(cl->text) - 4))
		strcpy(cl->text, "?");
	else if (family == AF_INET6)
		snprintf(cl->text + strlen(cl->text), 5, "/%d", WH_GUARD_V6_PREFIX);
	cl->next = g->clients[b];
	g->clients[b] = cl;
	return cl;
}

/* Drop a reference; the last one frees the entry. Under the lock. */
static void
client_put(struct wh_guard *g, struct client *cl)
{
	struct client **pp;

	if (!cl || --cl->refs)
		return;
	for (pp = &g->clients[client_hash(cl->family, cl->addr)]; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			free(cl);
			return;
		}
}

/*
 * A client whose connection was ended for room before its request line
 * or as a slow body (or at its request line deadline) is struck for
 * WH_GUARD_STRIKE_S: its
 * connections have no grace (room_class()) and its newcomers may end only
 * struck clients' connections (make_room()). A genuine client sends its
 * request line at once and is never struck; a wall of bare connections
 * from many addresses, each reconnecting the moment it is ended, is
 * struck address by address and then neither shelters in the grace nor
 * ends a genuine connection in it (the seventh outside attack's F1: one
 * bare connection from each of 300 addresses, churned at about 5,000
 * connects a second, kept every slot in its grace often enough that 11%
 * to 28% of genuine deliveries were refused; bodies at a legal rate from
 * 300 addresses, whose newcomers ended a forge's heads not yet whole,
 * kept 46 of 893 out). Entries are kept while struck, at most
 * WH_GUARD_STRUCK_MAX; a trusted proxy is never struck (its clients are,
 * by their bodies).
 * Under the lock.
 */
static int
struck(const struct client *cl)
{
	return cl && cl->struck;
}

static void
strike(struct wh_guard *g, struct client *cl, const struct timespec *now)
{
	if (!cl)
		return;
	cl->struck_until = *now;
	cl->struck_until.tv_sec += WH_GUARD_STRIKE_S;
	if (cl->struck || g->n_struck >= WH_GUARD_STRUCK_MAX)
		return;
	cl->struck = 1;
	cl->refs++;
	cl->struck_next = g->struck;
	g->struck = cl;
	g->n_struck++;
	g->st.struck++;
}

/* Let go of the clients whose strike has run out. Under the lock. */
static void
strikes_expire(struct wh_guard *g, const struct timespec *now)
{
	for (struct client **pp = &g->struck; *pp;) {
		struct client *cl = *pp;

		if (since_s(&cl->struck_until, now) < 0) {
			pp = &cl->struck_next;
			continue;
		}
		*pp = cl->struck_next;
		cl->struck = 0;
		g->n_struck--;
		client_put(g, cl);
	}
}

/* Charge c to cl for room (NULL: to nobody). Under the lock. */
static void
set_owner(struct wh_guard_conn *c, struct client *cl)
{
	if (c->owner)
		c->owner->held--;
	if ((c->owner = cl))
		cl->held++;
}

static void
set_state(struct wh_guard_conn *c, enum conn_state st)
{
	c->state = st;
	clock_gettime(CLOCK_MONOTONIC, &c->since);
}

/* Give back the body bytes c holds. Under the lock. */
static void
uncharge(struct wh_guard *g, struct wh_guard_conn *c)
{
	if (c->client) {
		c->client->buffered -= c->charged;
		g->buffered -= c->charged;
		if (c->large)
			g->buffered_large -= c->charged;
	}
	c->charged = 0;
}

/*
 * End a connection from outside its event loop. The 408 is best effort
 * (non-blocking); shutdown() makes the loop see the peer gone. Only in
 * HEAD and BODY state, when the server is not writing to the socket.
 */
static void
kill_conn(struct wh_guard *g, struct wh_guard_conn *c, int answer)
{
	if (answer)
		(void)!send(c->fd, TIMEOUT_408, sizeof(TIMEOUT_408) - 1,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(c->fd, SHUT_RDWR);
	c->state = CONN_DEAD;
	g->live--;
}

/* Is c late? Under the lock. */
static int
conn_late(const struct config_http *h, const struct wh_guard_conn *c,
    const struct timespec *now)
{
	double t = since_s(&c->since, now);

	/* libmicrohttpd's idle timeout, for the time libmicrohttpd does not see. */
	if (c->in_door && (c->state == CONN_LINE || c->state == CONN_HEAD) &&
	    since_s(&c->heard, now) > h->connection_timeout_s)
		return 1;
	switch (c->state) {
	case CONN_LINE:
		return t > (h->head_timeout_s < WH_GUARD_LINE_S ? h->head_timeout_s :
		    WH_GUARD_LINE_S);
	case CONN_HEAD:
		return t > h->head_timeout_s;
	case CONN_BODY:
		if (t > h->request_timeout_s)
			return 1;
		return t > WH_GUARD_BODY_GRACE_S && (double)c->received <
		    (t - WH_GUARD_BODY_GRACE_S) * (double)h->min_body_bytes_per_s;
	case CONN_WAIT:
	case CONN_PASS:
	case CONN_DEAD:
		break;
	}
	return 0;
}

/* Unlink c and give back what it holds. Under the lock. */
static void
conn_drop(struct wh_guard *g, struct wh_guard_conn *c)
{
	release_request(g, c);
	if (c->state != CONN_DEAD)
		g->live--;
	if (c->has_slot && c->peer)
		c->peer->slots--;
	set_owner(c, NULL);
	client_put(g, c->peer);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static void *
reaper(void *arg)
{
	struct wh_guard *g = arg;
	struct timespec now, until;

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		for (struct wh_guard_conn *c = g->conns, *next; c; c = next) {
			next = c->next;
			/*
			 * Handed over and never taken: the server dropped the
			 * socket before it was its (guard.h). Not ours to shut.
			 */
			if (c->passing && since_s(&c->passed, &now) > WH_GUARD_PASS_S)
				conn_drop(g, c);
			else if (conn_late(g->h, c, &now)) {
				if (c->state == CONN_LINE && !c->proxied)
					strike(g, c->owner, &now);
				kill_conn(g, c, 1);
				g->st.ended_late++;
			}
		}
		strikes_expire(g, &now);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += GUARD_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
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
 * nothing for WH_GUARD_FULL_STALL_MS short of its length is slow
 * whatever its average (a body that sends most of a small length at once
 * and then waits for its deadline stays on course by its average for its
 * whole life; a whole body never is). Past WH_GUARD_FULL_FLOOR_MS, a body
 * is also slow whose average is under WH_GUARD_FULL_RATE (or
 * min_body_bytes_per_s, if more) and that is not whole: being on course
 * is not enough for a small one (the sixth intake attack's F1: 10 bytes
 * declared and sent at 2.5 B/s, on course to end in 4 s, a byte every
 * 400 ms, from each of 260 addresses, kept every delivery and /healthz
 * out). A body of unknown length: once past WH_GUARD_FULL_BODY_S. Under
 * the lock.
 */
static int
body_slow(const struct wh_guard *g, const struct wh_guard_conn *c,
    const struct timespec *now)
{
	double t = since_s(&c->since, now), rate = WH_GUARD_FULL_RATE;

	if (t * 1000 < WH_GUARD_FULL_GRACE_MS)
		return 0;
	if (c->expected && c->received < c->expected &&
	    since_s(&c->last_rx, now) * 1000 >= WH_GUARD_FULL_STALL_MS)
		return 1;
	if (!c->expected)
		return t > WH_GUARD_FULL_BODY_S;
	if (t * 1000 < WH_GUARD_FULL_FLOOR_MS) {
		t = WH_GUARD_FULL_FLOOR_MS / 1000.0;
	} else {
		if ((double)g->h->min_body_bytes_per_s > rate)
			rate = (double)g->h->min_body_bytes_per_s;
		if (c->received < c->expected && (double)c->received < t * rate)
			return 1;
	}
	return !c->received ||
	    t * (double)c->expected / (double)c->received > WH_GUARD_FULL_BODY_S;
}

/*
 * The seconds c's body needs to end at its average rate so far, for a
 * body under way past WH_GUARD_FULL_GRACE_MS with a known length and
 * bytes received; else 0 (not a body, or one body_slow() judges). Under
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
	if ((v->state == CONN_LINE || v->state == CONN_HEAD) && !struck(v->owner) &&
	    since_s(&v->opened, now) * 1000 < (v->owner->held == 1 ?
	    WH_GUARD_LONE_GRACE_MS : WH_GUARD_HEAD_GRACE_MS))
		return 0;
	switch (v->state) {
	case CONN_LINE:
		return v->head_waiting ? 1 : 3;
	case CONN_HEAD:
		return v->whole || v->head_waiting ? 1 : 2;
	case CONN_BODY:
		return body_slow(g, v, now);
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
	ssize_t n;

	if (!v->in_door || v->fd < 0)
		return 0;
	n = recv(v->fd, buf, WH_GUARD_PEEK, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return memmem(buf, (size_t)n, "\r\n\r\n", 4) || memmem(buf, (size_t)n, "\n\n", 2);
}

/*
 * Has v earned its slot, as far as its own address's newcomers go
 * (make_room())? A body on course, a request being answered or handed
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
 * (body_slow()); among heads, from the owner holding the most
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
static int
make_room(struct wh_guard *g, struct wh_guard_conn *c)
{
	struct wh_guard_conn *victim, *last;
	unsigned mine = c->owner ? c->owner->held : 0;
	struct timespec now;
	int vclass, deserving = !!c->owner;
	double last_left;

	clock_gettime(CLOCK_MONOTONIC, &now);
	/* c is not in the list yet: its address's others, all earned? */
	for (struct wh_guard_conn *v = g->conns; v && deserving; v = v->next)
		if (v->owner == c->owner && v->state != CONN_DEAD && !earned(g, v, &now))
			deserving = 0;
again:
	victim = last = NULL;
	vclass = 0;
	last_left = 0;
	for (struct wh_guard_conn *v = g->conns; v; v = v->next) {
		int k = room_class(g, v, &now);

		/* A struck newcomer ends only struck clients' connections. */
		if (struck(c->owner) && !struck(v->owner))
			continue;
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
		 * in flight out).
		 */
		if (!((k >= 2 || (k == 1 && v->state == CONN_BODY)) && deserving) &&
		    (v->owner->held < mine ||
		    (k == 1 && v->owner->held == mine &&
		    (v->whole || v->state != CONN_BODY || mine > 1))))
			continue;
		if (!victim || k > vclass || (k == vclass && (k == 1 ?
		    slower(v, victim, &now) : v->owner->held > victim->owner->held ||
		    (v->owner->held == victim->owner->held &&
		    older(&v->opened, &victim->opened))))) {
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
	if (!victim)
		victim = last;
	if (!victim || (c->owner && victim->owner == c->owner && !c->proxied)) {
		kill_conn(g, c, 0);
		g->st.refused_full++;
		return -EUSERS;
	}
	if ((victim->state == CONN_LINE || victim->state == CONN_BODY) &&
	    !(victim->proxied && victim->owner == victim->peer))
		strike(g, victim->owner, &now);
	if (victim->state == CONN_LINE)
		g->st.ended_room_line++;
	else if (victim->state == CONN_BODY)
		g->st.ended_room_body++;
	else
		g->st.ended_room_head++;
	kill_conn(g, victim, 1);
	return 0;
}

int
wh_guard_new(const struct config_http *h, struct wh_guard **out)
{
	struct wh_guard *g = calloc(1, sizeof(*g));
	int error;

	if (!g)
		return -ENOMEM;
	g->h = h;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, NULL);
	if ((error = pthread_create(&g->reaper, NULL, reaper, g))) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return -error;
	}
	*out = g;
	return 0;
}

void
wh_guard_free(struct wh_guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->reaper, NULL);
	/* Only handed over connections the server dropped unseen can be left. */
	while (g->conns)
		conn_drop(g, g->conns);
	for (int b = 0; b < GUARD_BUCKETS; b++)
		while (g->clients[b]) {
			struct client *cl = g->clients[b];

			g->clients[b] = cl->next;
			free(cl);
		}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int
wh_guard_open(struct wh_guard *g, int fd, const struct sockaddr *peer,
    socklen_t len, struct wh_guard_conn **out)
{
	struct wh_guard_conn *c = calloc(1, sizeof(*c));
	unsigned char addr[16];
	int family, error = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	set_state(c, CONN_LINE);
	c->opened = c->since;
	pthread_mutex_lock(&g->lock);
	if (sockaddr_key(peer, len, &family, addr) == 0) {
		if (!(c->peer = client_get(g, family, addr))) {
			pthread_mutex_unlock(&g->lock);
			free(c);
			return -ENOMEM;
		}
		c->proxied = wh_guard_cidr_match(g->h->trusted_proxies,
		    g->h->n_trusted_proxies, family, addr);
	}
	c->client = c->peer;
	/*
	 * A connection handed over on this fd number and never taken: the
	 * server closed that socket unseen, or the number could not be here.
	 */
	for (struct wh_guard_conn *o = g->conns, *next; o; o = next) {
		next = o->next;
		if (o->passing && o->fd == fd)
			conn_drop(g, o);
	}
	g->live++;
	/* A proxy's connections are its clients': they count per request. */
	if (c->peer && !c->proxied) {
		if (c->peer->slots >= g->h->max_connections_per_ip) {
			kill_conn(g, c, 0);
			g->st.refused_addr++;
			error = -EUSERS;
		} else {
			c->peer->slots++;
			c->has_slot = 1;
			set_owner(c, c->peer);
		}
	} else if (c->peer) {
		set_owner(c, c->peer);	/* the proxy's until its head is in */
	}
	if (c->state != CONN_DEAD && g->live > g->h->max_connections)
		error = make_room(g, c);
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	pthread_mutex_unlock(&g->lock);
	*out = c;
	return error;
}

/* Give back the request's bytes and, behind a proxy, its slot. Under the lock. */
static void
release_request(struct wh_guard *g, struct wh_guard_conn *c)
{
	uncharge(g, c);
	c->large = 0;
	c->received = 0;
	if (c->proxied && c->has_slot) {
		c->client->slots--;
		c->has_slot = 0;
	}
	/* Behind a proxy, between requests: the proxy's again. */
	if (c->proxied && c->owner)
		set_owner(c, c->peer);
	if (c->client != c->peer)
		client_put(g, c->client);
	c->client = c->peer;
}

void
wh_guard_close(struct wh_guard *g, struct wh_guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	conn_drop(g, c);
	pthread_mutex_unlock(&g->lock);
}

/*
 * The client named by X-Forwarded-For: the rightmost entry that is not a
 * trusted proxy. 0 with family and addr, or -ENOENT (none, or one that is
 * not an address: the proxy is then the client).
 */
static int
xff_client(const struct config_http *h, const char *xff, int *family,
    unsigned char addr[16])
{
	const char *end = xff + strlen(xff), *p;
	char one[INET6_ADDRSTRLEN + 1];

	for (int i = 0; i < GUARD_XFF_MAX && end > xff; i++, end = p) {
		const char *b, *e;

		for (p = end; p > xff && p[-1] != ','; p--)
			;
		for (b = p; b < end && (*b == ' ' || *b == '\t'); b++)
			;
		for (e = end; e > b && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		if (p > xff)
			p--;	/* past the comma */
		if (e == b)
			continue;
		if ((size_t)(e - b) >= sizeof(one))
			return -ENOENT;
		memcpy(one, b, (size_t)(e - b));
		one[e - b] = '\0';
		memset(addr, 0, 16);
		if (inet_pton(AF_INET, one, addr) == 1) {
			*family = AF_INET;
		} else if (inet_pton(AF_INET6, one, addr) == 1) {
			*family = AF_INET6;
			if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)addr)) {
				memmove(addr, addr + 12, 4);
				memset(addr + 4, 0, 12);
				*family = AF_INET;
			}
		} else {
			return -ENOENT;
		}
		if (!wh_guard_cidr_match(h->trusted_proxies, h->n_trusted_proxies,
		    *family, addr))
			return 0;
	}
	return -ENOENT;
}

int
wh_guard_head(struct wh_guard *g, struct wh_guard_conn *c, const char *xff,
    int with_body, size_t expected)
{
	unsigned char addr[16];
	int family, error = 0;

	pthread_mutex_lock(&g->lock);
	if (c->proxied) {
		struct client *cl = NULL;

		if (xff && xff_client(g->h, xff, &family, addr) == 0)
			cl = client_get(g, family, addr);
		if (cl == c->peer)
			client_put(g, cl);	/* the peer's own reference covers it */
		c->client = cl ? cl : c->peer;
		/* For room, charged to its client from now on (guard.h). */
		if (c->owner)
			set_owner(c, c->client);
		if (c->client->slots >= g->h->max_connections_per_ip) {
			error = -EUSERS;
		} else {
			c->client->slots++;
			c->has_slot = 1;
		}
	}
	if (c->state != CONN_DEAD)
		set_state(c, with_body && !error ? CONN_BODY : CONN_WAIT);
	c->whole = 0;
	c->head_waiting = 0;
	c->received = 0;
	c->last_rx = c->since;
	c->expected = expected;
	c->large = 0;
	pthread_mutex_unlock(&g->lock);
	return error;
}

void
wh_guard_heard(struct wh_guard *g, struct wh_guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->in_door = 1;
	clock_gettime(CLOCK_MONOTONIC, &c->heard);
	pthread_mutex_unlock(&g->lock);
}

void
wh_guard_handing_over(struct wh_guard *g, struct wh_guard_conn *c, int whole)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->passing = 1;
	c->whole = whole;
	c->in_door = 0;
	clock_gettime(CLOCK_MONOTONIC, &c->passed);
	if (c->state != CONN_DEAD)
		set_state(c, CONN_PASS);
	pthread_mutex_unlock(&g->lock);
}

/* Does c's peer have this key? Under the lock. */
static int
same_peer(const struct wh_guard_conn *c, int family, const unsigned char addr[16])
{
	if (!c->peer)
		return family == AF_UNSPEC;
	return c->peer->family == family && !memcmp(c->peer->addr, addr, 16);
}

int
wh_guard_adopt(struct wh_guard *g, int fd, const struct sockaddr *peer,
    socklen_t len, struct wh_guard_conn **out)
{
	struct wh_guard_conn *c;
	unsigned char addr[16];
	int family, error;

	if (sockaddr_key(peer, len, &family, addr) < 0)
		family = AF_UNSPEC;
	pthread_mutex_lock(&g->lock);
	for (c = g->conns; c; c = c->next)
		if (c->passing && c->fd == fd && same_peer(c, family, addr))
			break;
	if (c) {
		c->passing = 0;
		if (c->state != CONN_DEAD)
			set_state(c, CONN_HEAD);
		pthread_mutex_unlock(&g->lock);
		*out = c;
		return 0;
	}
	pthread_mutex_unlock(&g->lock);
	/* Dropped as never taken (WH_GUARD_PASS_S): counted anew. */
	error = wh_guard_open(g, fd, peer, len, out);
	wh_guard_line_done(g, *out);
	return error;
}

void
wh_guard_line_done(struct wh_guard *g, struct wh_guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (c->state == CONN_LINE)
		set_state(c, CONN_HEAD);
	pthread_mutex_unlock(&g->lock);
}

const char *
wh_guard_client(const struct wh_guard_conn *c)
{
	return c && c->client ? c->client->text : "?";
}

/*
 * Would n more bytes of c fit: within max_buffered_bytes in all and, for
 * a large body, within what the reserve for small bodies leaves
 * (guard.h)? Under the lock.
 */
static int
body_fits(const struct wh_guard *g, const struct wh_guard_conn *c, size_t n)
{
	return g->buffered + n <= g->h->max_buffered_bytes && (!c->large ||
	    g->buffered_large + n <= g->h->max_buffered_bytes - g->h->small_body_reserve);
}

/*
 * With the memory for bodies all taken, end the slow bodies of other
 * clients that hold the most of it (body_slow(): not a forge's, which is
 * on course) until n more bytes fit, and give back what they held at
 * once (their memory goes when the server drops their requests, moments
 * later); for a large body short of room outside the reserve, large
 * bodies only (a small one's bytes would not make that room). The third
 * outside attack's F3: 24 MiB sent at once from each of 12 addresses,
 * then 2 KB/s, had 231 of 250 deliveries answered 503. Under the lock.
 */
static void
budget_room(struct wh_guard *g, struct wh_guard_conn *c, size_t n)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	while (!body_fits(g, c, n)) {
		struct wh_guard_conn *victim = NULL;
		int only_large = g->buffered + n <= g->h->max_buffered_bytes;

		for (struct wh_guard_conn *v = g->conns; v; v = v->next)
			if (v != c && v->state == CONN_BODY && v->charged && v->client &&
			    v->client != c->client && (v->large || !only_large) &&
			    body_slow(g, v, &now) && (!victim || v->charged > victim->charged))
				victim = v;
		if (!victim)
			return;
		uncharge(g, victim);
		kill_conn(g, victim, 1);
		g->st.ended_budget++;
	}
}

/* Is c's body large: declared, or (no length declared) received, past small_body_bytes? */
static int
body_large(const struct wh_guard *g, const struct wh_guard_conn *c)
{
	return (c->expected ? c->expected : c->received) > g->h->small_body_bytes;
}

int
wh_guard_body(struct wh_guard *g, struct wh_guard_conn *c, size_t n, int keep)
{
	int error = 0;

	pthread_mutex_lock(&g->lock);
	c->received += n;
	if (n)
		clock_gettime(CLOCK_MONOTONIC, &c->last_rx);
	/* A body without a length is small until it has passed the bound. */
	if (!c->large && body_large(g, c)) {
		c->large = 1;
		if (c->client)
			g->buffered_large += c->charged;
	}
	if (keep && c->client && c->client->buffered + n <= g->h->max_buffered_bytes_per_ip &&
	    !body_fits(g, c, n))
		budget_room(g, c, n);
	if (keep && c->client) {
		if (c->client->buffered + n > g->h->max_buffered_bytes_per_ip) {
			g->st.refused_body_share++;
			error = -ENOBUFS;
		} else if (!body_fits(g, c, n)) {
			if (g->buffered + n > g->h->max_buffered_bytes)
				g->st.refused_body_memory++;
			else
				g->st.refused_body_reserve++;
			error = -ENOBUFS;
		} else {
			c->client->buffered += n;
			g->buffered += n;
			if (c->large)
				g->buffered_large += n;
			c->charged += n;
		}
		/* Refused: the caller drops what the body held. */
		if (error)
			uncharge(g, c);
	}
	pthread_mutex_unlock(&g->lock);
	return error;
}

void
wh_guard_body_done(struct wh_guard *g, struct wh_guard_conn *c)
{
	pthread_mutex_lock(&g->lock);
	if (c->state == CONN_BODY)
		set_state(c, CONN_WAIT);
	pthread_mutex_unlock(&g->lock);
}

void
wh_guard_request_done(struct wh_guard *g, struct wh_guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	release_request(g, c);
	if (c->state != CONN_DEAD)
		set_state(c, CONN_HEAD);
	pthread_mutex_unlock(&g->lock);
}

void
wh_guard_stats(struct wh_guard *g, struct wh_guard_stats *st)
{
	pthread_mutex_lock(&g->lock);
	*st = g->st;
	st->open = g->live;
	st->buffered = g->buffered;
	pthread_mutex_unlock(&g->lock);
}

size_t
wh_guard_buffered(struct wh_guard *g, const struct wh_guard_conn *c)
{
	size_t n;

	pthread_mutex_lock(&g->lock);
	n = c && c->client ? c->client->buffered : g->buffered;
	pthread_mutex_unlock(&g->lock);
	return n;
}
