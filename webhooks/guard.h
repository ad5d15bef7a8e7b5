/*
 * guard: what the HTTP server enforces per connection and per client on
 * top of libmicrohttpd, which only knows idle time and socket addresses:
 *
 *   - a deadline on each request line, min(WH_GUARD_LINE_S,
 *     head_timeout_s) from accept, and on each request head (request
 *     line and headers), head_timeout_s from the request line or the end
 *     of the previous response, so a connection that sends nothing, or
 *     dribbles its head, cannot keep its slot;
 *   - on each body, an average of at least min_body_bytes_per_s after a
 *     grace of WH_GUARD_BODY_GRACE_S, and the whole body within
 *     request_timeout_s of the head;
 *   - per client, at most max_connections_per_ip connections, or, for
 *     clients behind a trusted proxy, requests in progress;
 *   - per client, at most max_buffered_bytes_per_ip of body bytes held in
 *     memory, and max_buffered_bytes for all together. Bytes are charged
 *     as they arrive, never from a declared Content-Length;
 *   - of max_buffered_bytes, small_body_reserve is for small bodies only:
 *     a body declaring more than small_body_bytes (or, without a length,
 *     once it has received more) is large, and large bodies together hold
 *     at most the rest. The reserve has room for a small body on each of
 *     max_connections (capped to leave one largest body beside it), so
 *     however many bodies are under way, large ones on course or small
 *     ones filling the rest, a small body (a forge's delivery, sent at
 *     once) finds room in memory; what can keep it out is connection
 *     slots, below;
 *   - with max_connections open, a new connection ends the one furthest
 *     from earning its slot: one without its request line before one
 *     without its whole head (a trickling head or an idle kept-alive
 *     connection). A whole head has earned its slot: never ended while
 *     the door hands it to libmicrohttpd (it keeps its slot through the
 *     handover), and until libmicrohttpd has read it only as a slow body
 *     is (below), after those. Connections are counted by owner: a
 *     connection's owner is its address, except that one from a trusted
 *     proxy is the proxy's until its head is in and, from then until its
 *     request is done, its client's (below), so a proxy's connections
 *     are ended for room as direct ones are, per client. Among heads,
 *     from the owner holding the most connections, then the oldest; none
 *     in its first WH_GUARD_HEAD_GRACE_MS (WH_GUARD_LONE_GRACE_MS when
 *     its owner holds no other: a client on a busy host may be scheduled
 *     out between its connect and its first write), and none whose whole head
 *     waits unread in its socket (a peek: it has earned its slot). A
 *     head can go to a newcomer from an owner holding at least as many
 *     as the newcomer's own, or from any owner when every other
 *     connection of the newcomer's owner has earned its slot (a whole
 *     head, a body on course, a request being answered, or one in its
 *     grace); the newcomer is refused when the pick is its own owner's
 *     (except a proxy's newcomer, which may end the proxy's own idle
 *     connections). So neither idle connections nor slow heads from any
 *     number of addresses can keep out a new address, nor a forge with
 *     deliveries in flight; an owner at its share cannot churn its own,
 *     and one with a slow head of its own may not end lighter owners'
 *     heads; what any newcomer ends is never a connection that has
 *     earned its slot. A client whose connection was ended for room
 *     before its request line or as a slow body (or at its request line
 *     deadline) is struck for WH_GUARD_STRIKE_S: its connections have no
 *     grace, and its heads not whole and slow bodies go first and to any
 *     newcomer not struck, whatever the counts
 *     (a wall of bare connections from many addresses, reopened the
 *     moment each is ended, is struck address by address; a genuine
 *     client sends its request line at once and is never struck). At
 *     most WH_GUARD_STRUCK_MAX clients are struck at once; a trusted
 *     proxy never is (its clients are, by their bodies). A request
 *     accepted (202) vouches for its client for WH_GUARD_VOUCH_S: its heads not
 *     whole have WH_GUARD_VOUCHED_GRACE_MS, its newcomers may end any
 *     head not whole or slow body, and it is never struck (a forge with
 *     several deliveries in flight, slow to write after its connect,
 *     holds more connections than any attacking address: without this
 *     its heads were the ones ended). Marks on addresses cannot hold
 *     an attacker that never reuses one: with nothing else to end and
 *     connections yet to show they are genuine (a head not whole, or a
 *     body below WH_GUARD_FULL_RATE or short of its length without a
 *     byte for WH_GUARD_YOUNG_STALL_MS, of a client not vouched for, in
 *     its grace or not) holding more than half the slots, a newcomer that
 *     could end any owner's head ends the oldest of them (a wall of
 *     connections each from a new address, kept in their grace: the
 *     slots turn over in order, and a request sent as its connection
 *     opens is in before its turn); those opened under
 *     WH_GUARD_UNPROVEN_YOUNG_MS ago go only after every body short of
 *     its length without a byte for WH_GUARD_PARTIAL_MS (partial: a
 *     genuine request's head is on its way in its first milliseconds).
 *     After heads, a body under way is ended for room when it is slow:
 *     under way for WH_GUARD_FULL_GRACE_MS and, at its average rate so
 *     far (its time counted as at least WH_GUARD_FULL_FLOOR_MS), not on
 *     course to end within WH_GUARD_FULL_BODY_S of its head (one that has
 *     received nothing never is), or short of its length and without a
 *     byte for WH_GUARD_FULL_STALL_MS, or past WH_GUARD_FULL_FLOOR_MS,
 *     not whole and averaging under WH_GUARD_FULL_RATE (or
 *     min_body_bytes_per_s if more: a tiny body trickled is on course
 *     but not a forge's), or of unknown length (chunked) under way for
 *     WH_GUARD_FULL_CHUNKED_MS or holding less than that long at
 *     WH_GUARD_FULL_CHUNKED_RATE; the lowest rate first, then the oldest;
 *     and only for a newcomer whose owner holds fewer connections, or
 *     one alone from its owner against an owner holding one, or one
 *     whose owner's every other connection has earned its slot (a
 *     forge's next delivery, with others in flight). Last,
 *     with nothing else to end, a body on course from an owner holding
 *     more than the newcomer's and more than one: the most time left at
 *     its rate first. A genuine sender's body follows its head at once
 *     and is on course within milliseconds; a head whose body never
 *     comes, trickles, or stalls behind is not, however young. The same
 *     rules make room for /healthz and /metrics: a request from a new
 *     address ends the slowest body, or a head not whole, of those
 *     holding the slots.
 *
 * A client is an IPv4 address or an IPv6 network of WH_GUARD_V6_PREFIX
 * bits (a host is given a /64 and may send from any address in it).
 * The client of a connection from a trusted proxy is the rightmost
 * address of its X-Forwarded-For that is not a trusted proxy (the one the
 * first trusted proxy saw); without such an address it is the proxy. A
 * connection from anywhere else is its own client, whatever its headers
 * say. A proxied request is charged to its client for the per-client
 * share, memory, and room (its owner, above) from its head on.
 *
 * A reaper thread checks the deadlines a few times a second; a late
 * connection gets a 408 and has its socket shut down, which the server's
 * event loop sees as a closed peer and cleans up. The sockets are
 * borrowed: the server must call wh_guard_close() before it closes one.
 * Thread-safe.
 */
#ifndef KB_WEBHOOKS_GUARD_H
#define KB_WEBHOOKS_GUARD_H

#include <stddef.h>
#include <sys/socket.h>

#include "conf/config.h"

#define WH_GUARD_BODY_GRACE_S	2	/* seconds before the body rate counts */
#define WH_GUARD_LINE_S		3	/* seconds from accept to a whole request line */
#define WH_GUARD_FULL_BODY_S	5	/* when full, a body on course to take longer is slow */
#define WH_GUARD_FULL_GRACE_MS	20	/* ... once it has been under way this long */
#define WH_GUARD_FULL_FLOOR_MS	250	/* ... its time counted as at least this */
#define WH_GUARD_FULL_RATE	32768	/* ... and past it, slow under this average (B/s) */
#define WH_GUARD_FULL_STALL_MS	500	/* ... and slow after this long without a byte */
#define WH_GUARD_FULL_CHUNKED_MS 250	/* ... and, of unknown length, once under way this long */
#define WH_GUARD_FULL_CHUNKED_RATE (256 << 10)	/* ... or holding less than that long at this (B/s) */
#define WH_GUARD_YOUNG_STALL_MS	50	/* a body short this long without a byte is unproven */
#define WH_GUARD_PARTIAL_MS	5	/* ... and this long, partial (counted, ended last) */
#define WH_GUARD_UNPROVEN_YOUNG_MS 20	/* an unproven head this young goes after partial bodies */
#define WH_GUARD_PASS_QUEUED	(256 << 10)	/* a handed-over request this queued is not partial */
#define WH_GUARD_PEEK		8192	/* bytes of a socket peeked for an unread whole head */
#define WH_GUARD_HEAD_GRACE_MS	5	/* a head is not ended for room this young */
#define WH_GUARD_LONE_GRACE_MS	50	/* ... nor, its owner holding no other, this young */
#define WH_GUARD_PASS_S		5	/* a handover not taken by then was dropped unseen */
#define WH_GUARD_STRIKE_S	10	/* a client ended without its request line: struck this long */
#define WH_GUARD_VOUCH_S	300	/* a client with a delivery accepted: vouched for this long */
#define WH_GUARD_VOUCHED_GRACE_MS 1000	/* ... its heads not whole not ended for room this young */
#define WH_GUARD_STRUCK_MAX	65536	/* clients struck at once, at most */
#define WH_GUARD_V6_PREFIX	64	/* an IPv6 client is its network of this many bits */
#define WH_GUARD_CLIENT_MAX	50	/* bytes of a client's text form, "/64" and NUL included */

struct wh_guard;
struct wh_guard_conn;

/* h is borrowed and must outlive the guard. 0, -ENOMEM, or -errno of the thread. */
int wh_guard_new(const struct config_http *h, struct wh_guard **out);

/* Stop the reaper and free; every connection must have been closed. NULL-safe. */
void wh_guard_free(struct wh_guard *g);

/*
 * A connection was accepted on fd from peer; its request line deadline
 * starts.
 * With more than max_connections open, room is made as above (408 for
 * the connection ended). *out is always set (NULL only with -ENOMEM) and
 * must be closed. -EUSERS: the peer holds its connections already, or
 * holds the most when there is no room; the socket was shut down.
 */
int wh_guard_open(struct wh_guard *g, int fd, const struct sockaddr *peer,
    socklen_t len, struct wh_guard_conn **out);

/* The connection is going away; releases everything it holds. NULL-safe. */
void wh_guard_close(struct wh_guard *g, struct wh_guard_conn *c);

/*
 * The door got bytes from c (or accepted it): while the door holds a
 * connection, libmicrohttpd's idle timeout cannot see it, so the guard
 * ends one idle for connection_timeout_s (408). NULL-safe.
 */
void wh_guard_heard(struct wh_guard *g, struct wh_guard_conn *c);

/*
 * The door hands c's socket to the server, whose thread takes c over
 * with wh_guard_adopt() when it gets to it: c keeps its slot meanwhile
 * (no gap for a newcomer, no second count), has no deadline and is not
 * ended for room. whole: its whole head is in; then, until the server
 * has read the head (wh_guard_head()), it is ended for room only as a
 * slow body is (for a newcomer whose address holds fewer), after those,
 * or, while it waits, as a partial body when its socket holds less than
 * request_bytes (its head and declared body; 0: not known) WH_GUARD_PARTIAL_MS
 * after the handover (guard_room.c oldest_unproven()). If the server drops the socket unseen,
 * c is dropped WH_GUARD_PASS_S later, or when its fd number comes back
 * to wh_guard_open(). Nobody closes c but its new owner, or the door
 * when the server refused the socket at once. NULL-safe.
 */
void wh_guard_handing_over(struct wh_guard *g, struct wh_guard_conn *c, int whole,
    size_t request_bytes);

/*
 * The server got the socket fd from peer: *out is the connection the door
 * handed over, now in its head's deadline (as after wh_guard_line_done());
 * without one (dropped as never taken), as wh_guard_open() and
 * wh_guard_line_done(). Returns as wh_guard_open().
 */
int wh_guard_adopt(struct wh_guard *g, int fd, const struct sockaddr *peer,
    socklen_t len, struct wh_guard_conn **out);

/*
 * The request line is in (the door checked it): the head deadline starts.
 * NULL-safe.
 */
void wh_guard_line_done(struct wh_guard *g, struct wh_guard_conn *c);

/*
 * The head is in. xff: the X-Forwarded-For list, every line of it joined
 * in order by ", " (NULL when absent),
 * believed only from a trusted proxy. with_body: a body follows, and its
 * deadlines start; else the request waits for its answer. expected: its
 * Content-Length, 0 when not known (for room when full, below). 0, or -EUSERS
 * when the client behind a proxy has max_connections_per_ip requests in
 * progress already (the caller answers 429; the request still ends with
 * wh_guard_request_done()).
 */
int wh_guard_head(struct wh_guard *g, struct wh_guard_conn *c,
    const char *xff, int with_body, size_t expected);

/*
 * c's request was accepted (202: new work under a valid signature): its
 * client is vouched for (guard_room.c). NULL-safe.
 */
void wh_guard_accepted(struct wh_guard *g, struct wh_guard_conn *c);

/* The client's address as text (for logs), valid until the connection closes. */
const char *wh_guard_client(const struct wh_guard_conn *c);

/*
 * What the guard has done, for /metrics (kernelbot_http_* in
 * webhooks/metrics.c): counters since start, and two gauges.
 */
struct wh_guard_stats {
	unsigned long long open;		/* connections not shut down, now */
	unsigned long long buffered;		/* body bytes held, now */
	unsigned long long ended_room_line;	/* ended for room: no request line */
	unsigned long long ended_room_head;	/* ... a head not whole, or unread */
	unsigned long long ended_room_body;	/* ... a slow body */
	unsigned long long ended_room_young;	/* ... a head in its grace, all being young */
	unsigned long long ended_budget;	/* slow bodies ended for the memory for bodies */
	unsigned long long ended_late;		/* ended at a deadline (408) */
	unsigned long long ended_gone;		/* bodies whose client closed before the end */
	unsigned long long refused_full;	/* newcomers refused: nothing to end */
	unsigned long long struck;		/* clients struck (no request line) */
	unsigned long long refused_addr;	/* newcomers refused: their address's share */
	unsigned long long refused_body_share;	/* bodies refused (503): their client's share */
	unsigned long long refused_body_memory;	/* ... max_buffered_bytes all taken */
	unsigned long long refused_body_reserve; /* ... a large body: only the reserve left */
};

void wh_guard_stats(struct wh_guard *g, struct wh_guard_stats *st);

/*
 * n body bytes arrived. keep: they are held in memory, charged to the
 * client and to the total (and, for a large body, to what large bodies
 * hold); when the total, or for a large body the total less the
 * reserve, would pass, slow bodies of other clients holding the most
 * (large ones, for room outside the reserve) are ended (408) and their
 * bytes given back first. 0, or -ENOBUFS when a budget would still pass:
 * nothing charged, and what the body held is given back (the caller
 * drops it and keeps no more of it).
 */
int wh_guard_body(struct wh_guard *g, struct wh_guard_conn *c, size_t n,
    int keep);

/* The body is complete (or will not be read): no body deadline any more. */
void wh_guard_body_done(struct wh_guard *g, struct wh_guard_conn *c);

/*
 * The request is finished: its bytes and its request slot are released,
 * and the next head's deadline starts. NULL-safe.
 */
void wh_guard_request_done(struct wh_guard *g, struct wh_guard_conn *c);

/* Body bytes held by all requests, and by conn's client (tests). */
size_t wh_guard_buffered(struct wh_guard *g, const struct wh_guard_conn *c);

/*
 * Is addr (a struct in_addr or in6_addr of family) in list? IPv4-mapped
 * IPv6 addresses are compared as IPv4.
 */
int wh_guard_cidr_match(const struct config_cidr *list, size_t n, int family,
    const void *addr);

/*
 * Now as an HTTP Date field value (IMF-fixdate, RFC 9110 section 5.6.7,
 * "Sun, 06 Nov 1994 08:49:37 GMT"), for the answers the guard and the
 * door write themselves (libmicrohttpd dates its own).
 */
#define WH_HTTP_DATE_LEN 30
void wh_http_date(char out[WH_HTTP_DATE_LEN]);

#endif
