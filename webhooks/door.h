/*
 * door: the listening socket and what happens before libmicrohttpd sees a
 * connection. libmicrohttpd closes a connection whose request line it
 * cannot split (no space in it, TLS bytes on a plain port) without an
 * answer, and glues an obs-fold continuation onto the field name, where
 * it can hide a second Content-Length or a Transfer-Encoding from the
 * server's framing check. So each new connection waits here, unread
 * (MSG_PEEK), until its head is in: a first line that is not `METHOD SP
 * TARGET SP HTTP/D.D` (RFC 9112 section 3), or a header line continued
 * by one that starts with SP or HT (obs-fold, RFC 9112 section 5.2), a
 * header line with a NUL or a bare CR, or a Content-Length that is no
 * length, gets 400 and is closed; a request line, or a head, longer than
 * max_head gets 414, or 431, each with a JSON body. A sound one is handed
 * over as it arrived, not a byte consumed; so is one cut short, for
 * libmicrohttpd to close. The server answers every request with
 * Connection: close, so every request passes here.
 *
 * While it waits, a connection is the guard's like any other (guard.h):
 * per-address limits, the request line and head deadlines (408) and the
 * making of room when the server is full hold from accept.
 * Thread-safe; one thread does the accepting and the waiting.
 */
#ifndef KB_WEBHOOKS_DOOR_H
#define KB_WEBHOOKS_DOOR_H

#include <stddef.h>
#include <sys/socket.h>

#include "webhooks/guard.h"

/*
 * Takes a sound connection: fd is the callee's from then on (closed by it
 * whatever happens). Its guard connection goes with it (the callee's
 * thread takes it with wh_guard_adopt()). 0, or -errno when the callee
 * refused it at once (the socket is closed and the door closes the guard
 * connection).
 */
typedef int (*wh_door_handoff)(void *arg, int fd, const struct sockaddr *peer,
    socklen_t len);

struct wh_door;

/*
 * Listen on addr and start the thread. max_pending: sockets held at once
 * (waiting for their head, or ended by the guard and not yet closed);
 * past it new ones are closed. The guard decides who waits. max_head:
 * bytes of a head looked at (libmicrohttpd's limit on a head). g is
 * borrowed. 0, or -errno (bind, listen, thread, -ENOMEM).
 */
int wh_door_open(const struct sockaddr *addr, socklen_t len, unsigned max_pending,
    size_t max_head, struct wh_guard *g, wh_door_handoff handoff, void *arg,
    struct wh_door **out);

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
	WH_LINE_BAD_LENGTH,	/* a head with a Content-Length that is no length */
	WH_LINE_BAD_BYTE,	/* a header line with a NUL or a bare CR */
	WH_LINE_BAD_FIELD,	/* a header line that is not NAME: value */
	WH_LINE_TOO_MANY,	/* more than WH_DOOR_FIELDS_MAX header lines */
};

/*
 * Judge the first n bytes a client sent. Empty lines before the request
 * line are allowed (RFC 9112 section 2.2); a line ends at LF, with an
 * optional CR before it.
 */
enum wh_line wh_door_line_check(const char *buf, size_t n);

/*
 * Judge the head in the first n bytes, whose request line is sound
 * (wh_door_line_check()): WH_LINE_OK once the empty line that ends it is
 * in, WH_LINE_BAD for obs-fold (a header line that starts with SP or HT)
 * before it, WH_LINE_BAD_BYTE for a whole header line before it that
 * holds a NUL or a CR not before its LF, WH_LINE_BAD_FIELD for one that
 * is not a token, a colon and a value (no colon, or whitespace before
 * it: RFC 9112 section 5.1), WH_LINE_TOO_MANY past WH_DOOR_FIELDS_MAX
 * header lines, else once it is in
 * WH_LINE_BAD_LENGTH for a Content-Length
 * line whose value is not 1 to WH_DOOR_LENGTH_DIGITS digits (RFC 9110
 * section 8.6: 1*DIGIT; libmicrohttpd answers such a head with its
 * status line and headers twice), else WH_LINE_INCOMPLETE.
 */
#define WH_DOOR_LENGTH_DIGITS	18	/* below 2^63 */
/*
 * What libmicrohttpd can take of a head in its memory for a connection
 * (http.max_header_bytes), measured: it answered 256 lines of 10 bytes,
 * 200 of 100 and 64 of 480 with its own HTML 431. A head passes the door
 * with at most WH_DOOR_FIELDS_MAX header lines, and its bytes and
 * WH_DOOR_FIELD_COST a line within max_header_bytes less
 * WH_DOOR_HEAD_SLACK; the door answers the rest 431 in JSON. A query
 * argument of the request target costs as a line: libmicrohttpd keeps a
 * record of each in the same memory (a 1 KB target of 494 "a&" got no
 * status line, 495 its HTML 431, more a 10 s wait; an outside attack's
 * flood of them kept a few genuine deliveries out).
 */
#define WH_DOOR_FIELDS_MAX	100	/* header lines in a head, at most (WH_LINE_TOO_MANY) */
#define WH_DOOR_FIELD_COST	64	/* ... each line's record, in bytes */
#define WH_DOOR_HEAD_SLACK	2048	/* ... and room for libmicrohttpd's own */
enum wh_line wh_door_head_check(const char *buf, size_t n);

/*
 * The same, a piece at a time: buf holds the first n bytes, more each
 * call, and st (zeroed before the first) remembers the lines already
 * judged, so each call reads only what is new past them.
 */
struct wh_head_scan {
	size_t next;		/* the first header line not yet whole starts here; 0: none yet */
	int bad_length;		/* a Content-Length line that is no length was seen */
	unsigned fields;	/* header lines judged */
	size_t length;		/* the largest Content-Length seen; 0: none */
	size_t head_bytes;	/* the head's, blank line included, once whole */
	unsigned args;		/* the request target's query arguments */
};
enum wh_line wh_door_head_scan(struct wh_head_scan *st, const char *buf, size_t n);

#endif
