#include "webhooks/guard.h"
#include "webhooks/guard_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define GUARD_TICK_MS	200
#define GUARD_XFF_MAX	64	/* X-Forwarded-For entries looked at, from the right */

static void release_request(struct wh_guard *g, struct wh_guard_conn *c);

static const char TIMEOUT_408_BODY[] = "{\"error\":\"request too slow\"}\n";

void
wh_http_date(char out[WH_HTTP_DATE_LEN])
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul",
	    "Aug", "Sep", "Oct", "Nov", "Dec" };
	time_t t = time(NULL);
	struct tm tm;

	/* Not strftime: its %a and %b follow the locale. */
	gmtime_r(&t, &tm);
	snprintf(out, WH_HTTP_DATE_LEN, "%s, %02u %s %04u %02u:%02u:%02u GMT",
	    days[(unsigned)tm.tm_wday % 7], (unsigned)tm.tm_mday % 100,
	    months[(unsigned)tm.tm_mon % 12], (unsigned)(tm.tm_year + 1900) % 10000,
	    (unsigned)tm.tm_hour % 100, (unsigned)tm.tm_min % 100, (unsigned)tm.tm_sec % 100);
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
void
guard_client_put(struct wh_guard *g, struct client *cl)
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
void
guard_kill_conn(struct wh_guard *g, struct wh_guard_conn *c, int answer)
{
	if (answer) {
		char msg[256], date[WH_HTTP_DATE_LEN];
		int n;

		wh_http_date(date);
		n = snprintf(msg, sizeof(msg), "HTTP/1.1 408 Request Timeout\r\nDate: %s\r\n"
		    "Connection: close\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n%s", date, sizeof(TIMEOUT_408_BODY) - 1,
		    TIMEOUT_408_BODY);
		(void)!send(c->fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
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

/*
 * Has the client of c, a body under way, closed its end with nothing left
 * unread: its body can never be whole. libmicrohttpd waited on such a
 * connection (a whole head, two bytes of its body and a close) until the
 * body's rate deadline, 2 to 3 s (the eleventh outside attack's M2). A
 * peek of one byte; under the lock.
 */
static int
peer_gone(const struct wh_guard_conn *c)
{
	char b;

	return c->fd >= 0 && recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
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
	guard_client_put(g, c->peer);
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
			else if (c->state == CONN_BODY && peer_gone(c)) {
				/*
				 * Twice, a tick apart, with nothing received in
				 * between: libmicrohttpd may have read the last
				 * bytes of a whole body (sent, then the client's
				 * end closed) and not yet handed them over.
				 */
				if (c->gone_seen && c->gone_at == c->received) {
					guard_kill_conn(g, c, 0);
					g->st.ended_gone++;
				}
				c->gone_seen = 1;
				c->gone_at = c->received;
			} else if (conn_late(g->h, c, &now)) {
				if (c->state == CONN_LINE && !c->proxied)
					guard_strike(g, c->owner, &now);
				guard_kill_conn(g, c, 1);
				g->st.ended_late++;
			}
		}
		guard_marks_expire(g, &now);
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
			guard_kill_conn(g, c, 0);
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
		error = guard_make_room(g, c);
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
		guard_client_put(g, c->client);
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
			guard_client_put(g, cl);	/* the peer's own reference covers it */
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
	c->body_waiting = 0;
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
wh_guard_handing_over(struct wh_guard *g, struct wh_guard_conn *c, int whole,
    size_t request_bytes)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->passing = 1;
	c->whole = whole;
	c->request_bytes = request_bytes;
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

void
wh_guard_accepted(struct wh_guard *g, struct wh_guard_conn *c)
{
	struct timespec now;

	if (!c)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&g->lock);
	guard_vouch(g, c->client, &now);
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
 * clients that hold the most of it (guard_body_slow(): not a forge's, which is
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
			    guard_body_slow(g, v, &now) && (!victim || v->charged > victim->charged))
				victim = v;
		if (!victim)
			return;
		uncharge(g, victim);
		guard_kill_conn(g, victim, 1);
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
