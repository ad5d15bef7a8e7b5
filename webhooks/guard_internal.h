/*
 * guard_internal: what webhooks/guard.c (connections, clients, deadlines,
 * bodies) and webhooks/guard_room.c (the making of room when the server
 * is full, and the strikes) share: the guard's state and the few calls
 * between them. Everything here is under the guard's lock. Not for other
 * folders or files: guard.h is the guard's interface.
 */
#ifndef KB_WEBHOOKS_GUARD_INTERNAL_H
#define KB_WEBHOOKS_GUARD_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "webhooks/guard.h"

#define GUARD_BUCKETS	1024

/* A client address: the key of the table, and what it holds. */
struct client {
	int family;
	unsigned char addr[16];
	char text[WH_GUARD_CLIENT_MAX];
	unsigned refs;		/* connections naming it as peer or client */
	unsigned slots;		/* connections (direct) or requests (proxied) */
	unsigned held;		/* connections charged to it for room (make_room()) */
	size_t buffered;	/* body bytes held */
	struct timespec struck_until;	/* marks (guard_room.c): struck until then */
	struct timespec vouched_until;	/* ... vouched for until then */
	int struck, vouched;	/* either: on g->marked, holding a reference */
	struct client *marked_next;
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
	int body_waiting;	/* ... or the rest of its body */
	size_t request_bytes;	/* head and declared body, as handed over; 0: not known */
	int passing;		/* handed over, not yet adopted (state PASS, or DEAD) */
	struct timespec passed;	/* when it was handed over */
	size_t received;	/* body bytes of the request so far */
	int gone_seen;		/* the reaper saw the client's end closed (guard.c peer_gone()) */
	size_t gone_at;		/* ... with this much received */
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
	struct client *marked;	/* clients struck or vouched for, each holding a reference */
	unsigned n_struck;
	struct wh_guard_conn *conns;
};

static inline double
since_s(const struct timespec *t0, const struct timespec *now)
{
	return (double)(now->tv_sec - t0->tv_sec) + (now->tv_nsec - t0->tv_nsec) / 1e9;
}

/* guard.c: end c from outside its event loop (a 408 first where answer). */
void guard_kill_conn(struct wh_guard *g, struct wh_guard_conn *c, int answer);
/* guard.c: drop a reference to a client; the last frees it. */
void guard_client_put(struct wh_guard *g, struct client *cl);

/* guard_room.c: the marks on clients (see there). */
int guard_struck(const struct client *cl);
int guard_vouched(const struct client *cl);
void guard_strike(struct wh_guard *g, struct client *cl, const struct timespec *now);
void guard_vouch(struct wh_guard *g, struct client *cl, const struct timespec *now);
void guard_marks_expire(struct wh_guard *g, const struct timespec *now);

/* guard_room.c: is c's body too slow to keep its slot when full. */
int guard_body_slow(const struct wh_guard *g, const struct wh_guard_conn *c,
    const struct timespec *now);

/*
 * guard_room.c: the server is full: make room for newcomer c (guard.h),
 * ending one connection, or refuse c. 0, or -EUSERS (c shut down).
 */
int guard_make_room(struct wh_guard *g, struct wh_guard_conn *c);

#endif
