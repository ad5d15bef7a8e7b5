/*
 * door: the listening socket and what happens before libmicrohttpd sees a
 * connection. libmicrohttpd closes a connection whose request line it
 * cannot split (no space in it, TLS bytes on a plain port) without an
 * answer; here each new connection waits, unread (MSG_PEEK), until its
 * first line is in, and a line that is not `METHOD SP TARGET SP
 * HTTP/D.D` (RFC 9112 section 3) gets 400 and is closed. A sound one is
 * handed over as it arrived, not a byte consumed.
 *
 * While it waits, a connection is the guard's like any other (guard.h):
 * per-address limits, the request line deadline (408) and the making of
 * room when the server is full hold from accept.
 * Thread-safe; one thread does the accepting and the waiting.
 */
#ifndef KB_WEBHOOKS_DOOR_H
#define KB_WEBHOOKS_DOOR_H

#include <stddef.h>
#include <sys/socket.h>

#include "webhooks/guard.h"

#define WH_DOOR_PEEK	8192	/* bytes looked at for the first line */

/*
 * Takes a sound connection: fd is the callee's from then on (closed by it
 * whatever happens).
 */
typedef void (*wh_door_handoff)(void *arg, int fd, const struct sockaddr *peer,
    socklen_t len);

struct wh_door;

/*
 * Listen on addr and start the thread. max_pending: sockets held at once
 * (waiting for their first line, or ended by the guard and not yet
 * closed); past it new ones are closed. The guard decides who waits. g is
 * borrowed. 0, or -errno (bind, listen, thread).
 */
int wh_door_open(const struct sockaddr *addr, socklen_t len, unsigned max_pending,
    struct wh_guard *g, wh_door_handoff handoff, void *arg, struct wh_door **out);

/* The port bound. */
int wh_door_port(const struct wh_door *d);

/*
 * Stop listening: the socket is closed and connections still waiting are
 * dropped; those handed over are not touched. The thread ends. Idempotent.
 */
void wh_door_close(struct wh_door *d);

/* wh_door_close() if needed, then free. NULL-safe. */
void wh_door_free(struct wh_door *d);

enum wh_line {
	WH_LINE_INCOMPLETE,	/* sound so far, no end of line yet */
	WH_LINE_OK,		/* a whole, sound request line */
	WH_LINE_BAD,		/* not a request line, whatever follows */
};

/*
 * Judge the first n bytes a client sent. Empty lines before the request
 * line are allowed (RFC 9112 section 2.2); a line ends at LF, with an
 * optional CR before it.
 */
enum wh_line wh_door_line_check(const char *buf, size_t n);

#endif
