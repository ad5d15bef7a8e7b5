#include "webhooks/door.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define DOOR_EVENTS	64
#define DOOR_METHOD_MAX	32	/* longer than any method worth a handler */
#define DOOR_DRAIN_MAX	(64u << 10)	/* bytes read and dropped before a 400 */
#define DOOR_ACCEPT_MAX	16	/* accepted per wakeup, so ended ones are closed between */
/*
 * Peeks of a head that found more, at most: each reads the head from its
 * start, so a head sent a byte a segment cost the door's thread the
 * square of its length (the tenth outside attack: 30,000 bytes one per
 * segment on each of 5 connections from one address kept every delivery
 * and /healthz out, and the queue of such connections kept it busy for
 * minutes after). A head of max_header_bytes in this many pieces is 128
 * bytes a piece; a client's is one to a few.
 */
#define DOOR_READS_MAX	256
/*
 * The receive buffer of a connection in the door, and after: a peek of
 * the head walks the socket's queue once for each segment it copies
 * from, so a queue of thousands of one-byte segments made one peek take
 * seconds (the same attack: 98% of the door's time in the kernel's
 * tcp_recvmsg_locked). A small buffer makes the kernel collapse such a
 * queue into a few full segments whenever it is full; twice the largest
 * head fits in it. A head handed over, the body gets a larger one.
 */
#define DOOR_RCVBUF_MIN		(64 << 10)
#define DOOR_RCVBUF_BODY	(1 << 20)
/*
 * The accept queue: a flood of connects that fills it makes the kernel
 * drop a genuine sender's SYN, which it sends again only after a second
 * (the third outside attack's F5: p99 1.07 s at 1024 under about 20,000
 * connects a second). The kernel caps it at net.core.somaxconn.
 */
#define DOOR_BACKLOG	4096

/* A connection waiting for its head. */
struct pending {
	int fd;
	int line_in;		/* its request line is in: the guard was told */
	size_t seen;		/* bytes peeked so far */
	unsigned reads;		/* peeks that found more */
	struct wh_head_scan scan;	/* the header lines judged so far */
	struct wh_guard_conn *conn;
	struct sockaddr_storage peer;
	socklen_t len;
	struct pending *prev, *next;
};

struct wh_door {
	int lfd, efd, stop_fd;
	int port;
	unsigned max_pending, n_pending;
	char *peek;		/* max_head bytes, for the door's thread */
	size_t max_head;
	struct wh_guard *guard;
	wh_door_handoff handoff;
	void *arg;
	struct pending *pending;	/* only the door's thread touches the list */
	pthread_t thread;
	int running;
	pthread_mutex_t lock;		/* running */
};

static const char BAD_LINE_JSON[] = "{\"error\":\"malformed request line\"}\n";
#define DOOR_STR(x) #x
#define DOOR_XSTR(x) DOOR_STR(x)
static const char BAD_LENGTH_JSON[] = "{\"error\":\"Content-Length must be a decimal "
    "number of at most " DOOR_XSTR(WH_DOOR_LENGTH_DIGITS) " digits\"}\n";
static const char BAD_BYTE_JSON[] =
    "{\"error\":\"a header line holds a NUL or a CR not before its LF\"}\n";
static const char LONG_LINE_JSON[] = "{\"error\":\"request line too long\"}\n";
static const char LARGE_HEAD_JSON[] = "{\"error\":\"request head too large\"}\n";
static const char BAD_FIELD_JSON[] = "{\"error\":\"malformed header field name\"}\n";
static const char PIECES_JSON[] = "{\"error\":\"request head sent in too many pieces\"}\n";
static const char VERSION_JSON[] = "{\"error\":\"HTTP/1.0 and HTTP/1.1 only\"}\n";
static const char MANY_FIELDS_JSON[] = "{\"error\":\"more than "
    DOOR_XSTR(WH_DOOR_FIELDS_MAX) " header lines\"}\n";
static const char CUT_JSON[] = "{\"error\":\"request head cut short\"}\n";
static const char FOLDED_JSON[] =
    "{\"error\":\"obs-fold: a header line continued on the next is not accepted\"}\n";

static int
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

enum wh_line
wh_door_line_check(const char *buf, size_t n)
{
	static const char version[] = "HTTP/d.d";
	const unsigned char *b = (const unsigned char *)buf;
	size_t i = 0, s;

	while (i < n && (b[i] == '\n' || b[i] == '\r')) {
		if (b[i] == '\r' && i + 1 < n && b[i + 1] != '\n')
			return WH_LINE_BAD;
		i++;
	}
	for (s = i; i < n && is_tchar(b[i]); i++)
		if (i - s >= DOOR_METHOD_MAX)
			return WH_LINE_BAD;
	if (i == n)
		return WH_LINE_INCOMPLETE;
	if (i == s || b[i++] != ' ')
		return WH_LINE_BAD;
	for (s = i; i < n && b[i] > 0x20 && b[i] < 0x7f; i++)
		;
	if (i == n)
		return WH_LINE_INCOMPLETE;
	if (i == s || b[i++] != ' ')
		return WH_LINE_BAD;
	for (size_t k = 0; k < sizeof(version) - 1; k++, i++) {
		if (i == n)
			return WH_LINE_INCOMPLETE;
		if (version[k] == 'd' ? b[i] < '0' || b[i] > '9' : b[i] != version[k])
			return WH_LINE_BAD;
	}
	if (i < n && b[i] == '\r')
		i++;
	if (i == n)
		return WH_LINE_INCOMPLETE;
	return b[i] == '\n' ? WH_LINE_OK : WH_LINE_BAD;
}

/*
 * Is the header line [b, nl) (nl at its LF) a Content-Length whose value
 * is no length: not 1 to WH_DOOR_LENGTH_DIGITS digits after optional
 * whitespace? A name spelt otherwise ("Content-Length :") is the framing
 * check's, in the server.
 */
static int
bad_length(const char *b, const char *nl, size_t *length)
{
	static const char name[] = "content-length:";
	size_t digits = 0, v = 0;

	if ((size_t)(nl - b) < sizeof(name) - 1 || strncasecmp(b, name, sizeof(name) - 1))
		return 0;
	b += sizeof(name) - 1;
	if (nl > b && nl[-1] == '\r')
		nl--;
	while (b < nl && (*b == ' ' || *b == '\t'))
		b++;
	/* Whitespace after the digits: libmicrohttpd takes it for no length. */
	for (; b < nl; b++, digits++) {
		if (*b < '0' || *b > '9')
			return 1;
		if (digits < WH_DOOR_LENGTH_DIGITS)
			v = v * 10 + (size_t)(*b - '0');
	}
	if (digits == 0 || digits > WH_DOOR_LENGTH_DIGITS)
		return 1;
	if (v > *length)
		*length = v;
	return 0;
}

/*
 * Does the header line [b, nl) (nl at its LF) hold a NUL, or a CR that is
 * not the one before its LF? RFC 9110 section 5.5: a field value with
 * CR, LF or NUL is invalid; libmicrohttpd took both as part of the value.
 */
static int
bad_byte(const char *b, const char *nl)
{
	if (nl > b && nl[-1] == '\r')
		nl--;
	return memchr(b, '\0', (size_t)(nl - b)) || memchr(b, '\r', (size_t)(nl - b));
}

/*
 * Is the header line [b, nl) (nl at its LF) not NAME ":" value, NAME one
 * or more token characters (RFC 9112 section 5: no whitespace before the
 * colon; a line without one is no field)? libmicrohttpd answered a line
 * without a colon with its own HTML page.
 */
static int
bad_field(const char *b, const char *nl)
{
	const char *s = b;

	while (b < nl && is_tchar((unsigned char)*b))
		b++;
	return b == s || b == nl || *b != ':';
}

/*
 * The LF that ends the request line in the first n bytes of buf, past
 * the empty lines allowed before it (RFC 9112 section 2.2), or NULL when
 * it has not come; *start (if not NULL) gets where the line starts.
 */
static const char *
line_end(const char *buf, size_t n, const char **start)
{
	const char *b = buf, *end = buf + n;

	while (b < end && (*b == '\r' || *b == '\n'))
		b++;
	if (start)
		*start = b;
	return memchr(b, '\n', (size_t)(end - b));
}

enum wh_line
wh_door_head_scan(struct wh_head_scan *st, const char *buf, size_t n)
{
	const char *b = buf + st->next, *end = buf + n, *nl;

	if (!st->next) {
		const char *line, *q;

		if (!(nl = line_end(buf, n, &line)))
			return WH_LINE_INCOMPLETE;
		/* The target's query arguments: "?a&b" is two. */
		if ((q = memchr(line, '?', (size_t)(nl - line))))
			for (st->args = 1; ++q < nl && *q != ' ';)
				st->args += *q == '&';
		b = nl + 1;
		st->next = (size_t)(b - buf);
	}
	for (; b < end; b = nl + 1) {
		if (*b == ' ' || *b == '\t')
			return WH_LINE_BAD;
		if (*b == '\n' || (*b == '\r' && b + 1 < end && b[1] == '\n')) {
			/* The head is whole. */
			st->head_bytes = (size_t)(b - buf) + (*b == '\r' ? 2 : 1);
			return st->bad_length ? WH_LINE_BAD_LENGTH : WH_LINE_OK;
		}
		if (!(nl = memchr(b, '\n', (size_t)(end - b))))
			break;
		if (bad_byte(b, nl))
			return WH_LINE_BAD_BYTE;
		if (bad_field(b, nl))
			return WH_LINE_BAD_FIELD;
		if (++st->fields > WH_DOOR_FIELDS_MAX)
			return WH_LINE_TOO_MANY;
		st->bad_length |= bad_length(b, nl, &st->length);
		st->next = (size_t)(nl + 1 - buf);
	}
	return WH_LINE_INCOMPLETE;
}

enum wh_line
wh_door_head_check(const char *buf, size_t n)
{
	struct wh_head_scan st = { 0, 0, 0, 0, 0, 0 };

	return wh_door_head_scan(&st, buf, n);
}

/*
 * Is the version of the whole request line in buf HTTP/1.0 or HTTP/1.1
 * (libmicrohttpd answered any other, HTTP/2's preface included, with its
 * own HTML page)?
 */
static int
version_ours(const char *buf, size_t n)
{
	const char *b, *nl = line_end(buf, n, &b);

	if (!nl)
		return 0;
	if (nl > b && nl[-1] == '\r')
		nl--;
	return nl - b >= 8 && (!memcmp(nl - 8, "HTTP/1.1", 8) || !memcmp(nl - 8, "HTTP/1.0", 8));
}

/* The socket's receive buffer, as SO_RCVBUF (the kernel doubles it); best effort. */
static void
set_rcvbuf(int fd, int bytes)
{
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

static void
unlink_pending(struct wh_door *d, struct pending *p)
{
	epoll_ctl(d->efd, EPOLL_CTL_DEL, p->fd, NULL);
	if (p->prev)
		p->prev->next = p->next;
	else
		d->pending = p->next;
	if (p->next)
		p->next->prev = p->prev;
	d->n_pending--;
}

static void
drop(struct wh_door *d, struct pending *p)
{
	unlink_pending(d, p);
	/* The guard lets go of the socket before anyone closes it. */
	wh_guard_close(d->guard, p->conn);
	close(p->fd);
	free(p);
}

/* Read what came (so close() does not reset the answer away), answer, close. */
static void
answer(struct wh_door *d, struct pending *p, const char *status, const char *json,
    size_t jlen)
{
	char head[256], scratch[4096], date[WH_HTTP_DATE_LEN];
	size_t drained = 0;
	ssize_t n;
	int len;

	while (drained < DOOR_DRAIN_MAX && (n = recv(p->fd, scratch, sizeof(scratch),
	    MSG_DONTWAIT)) > 0)
		drained += (size_t)n;
	wh_http_date(date);
	len = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nDate: %s\r\n"
	    "Connection: close\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s", status, date, jlen, json);
	(void)!send(p->fd, head, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(p->fd, SHUT_WR);
	drop(d, p);
}

/*
 * The whole head is in: libmicrohttpd takes the socket in its own
 * thread, later; the guard's connection goes with it, keeping its slot
 * through the gap, so no newcomer slips in and the handover never has to
 * make room; a whole head is not ended for room while it waits there.
 */
static void
hand_over(struct wh_door *d, struct pending *p)
{
	wh_guard_handing_over(d->guard, p->conn, 1, p->scan.head_bytes + p->scan.length);
	unlink_pending(d, p);
	set_rcvbuf(p->fd, DOOR_RCVBUF_BODY);
	if (d->handoff(d->arg, p->fd, (struct sockaddr *)&p->peer, p->len) < 0)
		wh_guard_close(d->guard, p->conn);	/* refused and closed at once */
	free(p);
}

#define ANSWER_400(d, p, json) answer((d), (p), "400 Bad Request", (json), sizeof(json) - 1)

/*
 * The whole head is looked at before libmicrohttpd sees it: it has no
 * raw-byte hook, and it glues an obs-fold continuation onto the field
 * name ("Content-Length:" CRLF " 40" becomes a field
 * "Content-Length40"), which would hide a second Content-Length or a
 * Transfer-Encoding from the framing check. RFC 9112 section 5.2 lets a
 * server reject obs-fold with 400.
 */
static void
on_readable(struct wh_door *d, struct pending *p, unsigned events)
{
	int done = (events & (EPOLLRDHUP | EPOLLHUP)) != 0;	/* nothing more comes */
	int queued = 0;
	ssize_t n;

	/*
	 * What is queued now, and no more: a peek asked for more goes on
	 * copying what arrives while it runs (the socket's backlog is taken
	 * in between), for as long as the client keeps sending one byte at a
	 * time. 1 byte when nothing is: tells an end from nothing new.
	 */
	if (ioctl(p->fd, FIONREAD, &queued) < 0 || queued < 0)
		queued = 0;
	n = recv(p->fd, d->peek, queued ? ((size_t)queued < d->max_head ? (size_t)queued :
	    d->max_head) : 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		drop(d, p);	/* gone, or shut down by the guard's deadline */
		return;
	}
	if ((size_t)n <= p->seen && !done)
		return;		/* nothing new */
	if ((size_t)n > p->seen) {
		p->seen = (size_t)n;
		wh_guard_heard(d->guard, p->conn);
		if (++p->reads > DOOR_READS_MAX) {
			ANSWER_400(d, p, PIECES_JSON);
			return;
		}
	}
	if (!p->line_in) {
		switch (wh_door_line_check(d->peek, (size_t)n)) {
		case WH_LINE_OK:
			if (!version_ours(d->peek, (size_t)n)) {
				answer(d, p, "505 HTTP Version Not Supported", VERSION_JSON,
				    sizeof(VERSION_JSON) - 1);
				return;
			}
			break;
		case WH_LINE_BAD:
		case WH_LINE_BAD_LENGTH:
		case WH_LINE_BAD_BYTE:
		case WH_LINE_BAD_FIELD:
		case WH_LINE_TOO_MANY:
			ANSWER_400(d, p, BAD_LINE_JSON);
			return;
		case WH_LINE_INCOMPLETE:
			/* A request line longer than a head may be. */
			if ((size_t)n == d->max_head)
				answer(d, p, "414 URI Too Long", LONG_LINE_JSON,
				    sizeof(LONG_LINE_JSON) - 1);
			else if (done)
				ANSWER_400(d, p, BAD_LINE_JSON);	/* the client is done sending */
			return;
		}
		p->line_in = 1;
		wh_guard_line_done(d->guard, p->conn);
	}
	switch (wh_door_head_scan(&p->scan, d->peek, (size_t)n)) {
	case WH_LINE_OK:
		if (p->scan.next + ((size_t)p->scan.fields + p->scan.args) * WH_DOOR_FIELD_COST +
		    WH_DOOR_HEAD_SLACK > d->max_head)
			answer(d, p, "431 Request Header Fields Too Large", LARGE_HEAD_JSON,
			    sizeof(LARGE_HEAD_JSON) - 1);
		else
			hand_over(d, p);
		break;
	case WH_LINE_BAD:
		ANSWER_400(d, p, FOLDED_JSON);
		break;
	case WH_LINE_BAD_LENGTH:
		ANSWER_400(d, p, BAD_LENGTH_JSON);
		break;
	case WH_LINE_BAD_BYTE:
		ANSWER_400(d, p, BAD_BYTE_JSON);
		break;
	case WH_LINE_BAD_FIELD:
		ANSWER_400(d, p, BAD_FIELD_JSON);
		break;
	case WH_LINE_TOO_MANY:
		answer(d, p, "431 Request Header Fields Too Large", MANY_FIELDS_JSON,
		    sizeof(MANY_FIELDS_JSON) - 1);
		break;
	case WH_LINE_INCOMPLETE:
		/*
		 * Past max_head: too large. Cut short by the client's end: it can
		 * never be whole, so its slot goes now (handed to libmicrohttpd, it
		 * was held to the head deadline: a part of a head and a close,
		 * from fresh addresses, kept every slot full at 26 connects a
		 * second; the eleventh outside attack).
		 */
		if ((size_t)n == d->max_head)
			answer(d, p, "431 Request Header Fields Too Large", LARGE_HEAD_JSON,
			    sizeof(LARGE_HEAD_JSON) - 1);
		else if (done)
			ANSWER_400(d, p, CUT_JSON);
		break;
	}
}

/*
 * The listening socket is level-triggered: what is left after
 * DOOR_ACCEPT_MAX is taken on the next wakeup, after the connections the
 * guard ended for room (shut down, still open here) have been closed.
 */
static void
on_accept(struct wh_door *d)
{
	for (int i = 0; i < DOOR_ACCEPT_MAX; i++) {
		struct pending *p;
		struct epoll_event ev;
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = accept4(d->lfd, (struct sockaddr *)&ss, &len,
		    SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return;	/* EAGAIN, or EMFILE and the like: the next wakeup retries */
		if (d->n_pending >= d->max_pending || !(p = calloc(1, sizeof(*p)))) {
			close(fd);
			continue;
		}
		set_rcvbuf(fd, d->max_head * 2 > DOOR_RCVBUF_MIN ? (int)d->max_head * 2 :
		    DOOR_RCVBUF_MIN);
		p->fd = fd;
		p->peer = ss;
		p->len = len;
		if (wh_guard_open(d->guard, fd, (struct sockaddr *)&ss, len, &p->conn) < 0) {
			wh_guard_close(d->guard, p->conn);	/* no room for its address */
			close(fd);
			free(p);
			continue;
		}
		wh_guard_heard(d->guard, p->conn);
		ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
		ev.data.ptr = p;
		if (epoll_ctl(d->efd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			wh_guard_close(d->guard, p->conn);
			close(fd);
			free(p);
			continue;
		}
		p->next = d->pending;
		if (d->pending)
			d->pending->prev = p;
		d->pending = p;
		d->n_pending++;
	}
}

static void *
door_thread(void *arg)
{
	struct wh_door *d = arg;
	struct epoll_event evs[DOOR_EVENTS];

	for (;;) {
		int n = epoll_wait(d->efd, evs, DOOR_EVENTS, -1);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &d->stop_fd)
				goto out;
			if (evs[i].data.ptr == &d->lfd)
				on_accept(d);
			else
				on_readable(d, evs[i].data.ptr, evs[i].events);
		}
	}
out:
	while (d->pending)
		drop(d, d->pending);
	return NULL;
}

int
wh_door_open(const struct sockaddr *addr, socklen_t len, unsigned max_pending,
    size_t max_head, struct wh_guard *g, wh_door_handoff handoff, void *arg,
    struct wh_door **out)
{
	struct wh_door *d = calloc(1, sizeof(*d));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct epoll_event ev;
	int one = 1, error;

	if (!d)
		return -ENOMEM;
	d->lfd = d->efd = d->stop_fd = -1;
	d->max_pending = max_pending;
	d->max_head = max_head;
	d->guard = g;
	d->handoff = handoff;
	d->arg = arg;
	pthread_mutex_init(&d->lock, NULL);
	if (!(d->peek = malloc(max_head))) {
		errno = ENOMEM;
		goto fail;
	}
	if ((d->lfd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) < 0 ||
	    setsockopt(d->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(d->lfd, addr, len) < 0 || listen(d->lfd, DOOR_BACKLOG) < 0 ||
	    getsockname(d->lfd, (struct sockaddr *)&ss, &sl) < 0 ||
	    (d->efd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		goto fail;
	d->port = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
	ev.events = EPOLLIN;
	ev.data.ptr = &d->lfd;
	if (epoll_ctl(d->efd, EPOLL_CTL_ADD, d->lfd, &ev) < 0)
		goto fail;
	ev.data.ptr = &d->stop_fd;
	if (epoll_ctl(d->efd, EPOLL_CTL_ADD, d->stop_fd, &ev) < 0)
		goto fail;
	if ((error = pthread_create(&d->thread, NULL, door_thread, d))) {
		errno = error;
		goto fail;
	}
	d->running = 1;
	*out = d;
	return 0;
fail:
	error = -errno;
	wh_door_free(d);
	return error;
}

int
wh_door_port(const struct wh_door *d)
{
	return d->port;
}

void
wh_door_close(struct wh_door *d)
{
	uint64_t one = 1;
	int was;

	pthread_mutex_lock(&d->lock);
	was = d->running;
	d->running = 0;
	pthread_mutex_unlock(&d->lock);
	if (was) {
		(void)!write(d->stop_fd, &one, sizeof(one));
		pthread_join(d->thread, NULL);
	}
	if (d->lfd >= 0)
		close(d->lfd);
	d->lfd = -1;
}

void
wh_door_free(struct wh_door *d)
{
	if (!d)
		return;
	wh_door_close(d);
	if (d->efd >= 0)
		close(d->efd);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	pthread_mutex_destroy(&d->lock);
	free(d->peek);
	free(d);
}
