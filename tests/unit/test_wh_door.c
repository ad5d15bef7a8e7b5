#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "webhooks/door.h"
#include "webhooks/guard.h"
#include "t.h"

static void
line(const char *name, const char *s, size_t n, enum wh_line want)
{
	CHECK_INT(name, wh_door_line_check(s, n), want);
}
#define LINE(name, lit, want) line(name, lit, sizeof(lit) - 1, want)

static void
test_lines(void)
{
	LINE("sound", "POST /webhooks/github HTTP/1.1\r\n", WH_LINE_OK);
	LINE("bare LF", "GET / HTTP/1.0\n", WH_LINE_OK);
	LINE("what follows does not matter", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", WH_LINE_OK);
	LINE("empty lines first", "\r\n\nGET / HTTP/1.1\r\n", WH_LINE_OK);
	LINE("nothing yet", "", WH_LINE_INCOMPLETE);
	LINE("half a method", "PO", WH_LINE_INCOMPLETE);
	LINE("half a target", "POST /web", WH_LINE_INCOMPLETE);
	LINE("half a version", "POST / HTT", WH_LINE_INCOMPLETE);
	LINE("no LF yet", "POST / HTTP/1.1\r", WH_LINE_INCOMPLETE);
	LINE("a CR alone so far", "\r", WH_LINE_INCOMPLETE);
	LINE("no space at all", "GARBAGE\r\n", WH_LINE_BAD);
	LINE("TLS", "\x16\x03\x01\x02\x00", WH_LINE_BAD);
	LINE("two parts", "GET /\r\n", WH_LINE_BAD);
	LINE("two spaces", "GET  / HTTP/1.1\r\n", WH_LINE_BAD);
	LINE("a tab", "GET\t/ HTTP/1.1\r\n", WH_LINE_BAD);
	LINE("control byte in the target", "GET /a\x01 HTTP/1.1\r\n", WH_LINE_BAD);
	LINE("8-bit target", "GET /\xc3\xa9 HTTP/1.1\r\n", WH_LINE_BAD);
	LINE("not HTTP", "GET / FOO/1.1\r\n", WH_LINE_BAD);
	LINE("lowercase http", "GET / http/1.1\r\n", WH_LINE_BAD);
	LINE("version letters", "GET / HTTP/1.x\r\n", WH_LINE_BAD);
	LINE("trailing space", "GET / HTTP/1.1 \r\n", WH_LINE_BAD);
	LINE("CR not before LF", "GET / HTTP/1.1\rX", WH_LINE_BAD);
	LINE("stray CR first", "\rGET", WH_LINE_BAD);
	LINE("method of 33 bytes", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG / HTTP/1.1\r\n", WH_LINE_BAD);
	LINE("method of 32 bytes", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEF / HTTP/1.1\r\n", WH_LINE_OK);
	LINE("a separator in the method", "G(T / HTTP/1.1\r\n", WH_LINE_BAD);
	LINE("an empty method", " / HTTP/1.1\r\n", WH_LINE_BAD);
}

static void
head(const char *name, const char *s, size_t n, enum wh_line want)
{
	CHECK_INT(name, wh_door_head_check(s, n), want);
}
#define HEAD(name, lit, want) head(name, lit, sizeof(lit) - 1, want)

static void
test_heads(void)
{
	HEAD("whole", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", WH_LINE_OK);
	HEAD("no fields", "GET / HTTP/1.1\r\n\r\n", WH_LINE_OK);
	HEAD("bare LFs", "GET / HTTP/1.1\nHost: x\n\n", WH_LINE_OK);
	HEAD("empty lines first", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", WH_LINE_OK);
	HEAD("a value with spaces inside", "GET / HTTP/1.1\r\nX-A: a b\tc\r\n\r\n", WH_LINE_OK);
	HEAD("not ended yet", "GET / HTTP/1.1\r\nHost: x\r\n", WH_LINE_INCOMPLETE);
	HEAD("a CR of the end alone", "GET / HTTP/1.1\r\nHost: x\r\n\r", WH_LINE_INCOMPLETE);
	HEAD("the request line alone", "GET / HTTP/1.1\r\n", WH_LINE_INCOMPLETE);
	HEAD("folded Transfer-Encoding",
	    "POST / HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 2\r\n\r\n",
	    WH_LINE_BAD);
	HEAD("folded second Content-Length",
	    "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length:\r\n 40\r\n\r\n", WH_LINE_BAD);
	HEAD("folded by a tab", "GET / HTTP/1.1\r\nX-A: a\r\n\tb\r\n\r\n", WH_LINE_BAD);
	HEAD("a fold seen before the head ends", "GET / HTTP/1.1\r\nX-A: a\r\n ", WH_LINE_BAD);
	HEAD("a space after the end is body", "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n {",
	    WH_LINE_OK);
	/* Content-Length: 1*DIGIT, at most WH_DOOR_LENGTH_DIGITS, whitespace before only. */
	HEAD("a length after a tab", "POST / HTTP/1.1\r\ncontent-length:\t25\r\n\r\n", WH_LINE_OK);
	HEAD("a length of 18 digits",
	    "POST / HTTP/1.1\r\nContent-Length: 999999999999999999\r\n\r\n", WH_LINE_OK);
	HEAD("a length of 19 digits",
	    "POST / HTTP/1.1\r\nContent-Length: 1000000000000000000\r\n\r\n",
	    WH_LINE_BAD_LENGTH);
	HEAD("a length that is a word", "POST / HTTP/1.1\r\nCONTENT-LENGTH: abc\r\n\r\n",
	    WH_LINE_BAD_LENGTH);
	HEAD("a negative length", "POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
	    WH_LINE_BAD_LENGTH);
	HEAD("a signed length", "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
	    WH_LINE_BAD_LENGTH);
	HEAD("a list of lengths", "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
	    WH_LINE_BAD_LENGTH);
	HEAD("a space after the length", "POST / HTTP/1.1\r\nContent-Length: 5 \r\n\r\n",
	    WH_LINE_BAD_LENGTH);
	HEAD("an empty length", "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", WH_LINE_BAD_LENGTH);
	HEAD("a bad length, judged once the head is in",
	    "POST / HTTP/1.1\r\nContent-Length: x\r\nHost: a\r\n", WH_LINE_INCOMPLETE);
	HEAD("another field's value is not judged", "POST / HTTP/1.1\r\nX-Length: abc\r\n\r\n",
	    WH_LINE_OK);
	/* RFC 9110 section 5.5: no NUL, and no CR but the one before LF. */
	HEAD("a NUL in a value", "GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", WH_LINE_BAD_BYTE);
	HEAD("a bare CR in a value", "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", WH_LINE_BAD_BYTE);
	HEAD("a bare CR, bare LFs", "GET / HTTP/1.1\nX-A: a\rb\n\n", WH_LINE_BAD_BYTE);
	HEAD("CR LF ends are fine", "GET / HTTP/1.1\r\nX-A: a\r\nX-B: b\r\n\r\n", WH_LINE_OK);
	/* RFC 9112 section 5.1: NAME ":" value, NAME a token, nothing before the colon. */
	HEAD("a line without a colon", "GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
	    WH_LINE_BAD_FIELD);
	HEAD("a space before the colon", "POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n",
	    WH_LINE_BAD_FIELD);
	HEAD("an empty name", "GET / HTTP/1.1\r\n: x\r\n\r\n", WH_LINE_BAD_FIELD);
	HEAD("a name not a token", "GET / HTTP/1.1\r\nX(A): x\r\n\r\n", WH_LINE_BAD_FIELD);
	HEAD("an empty value is a field", "GET / HTTP/1.1\r\nX-A:\r\n\r\n", WH_LINE_OK);
	HEAD("a colon in the value is fine", "GET / HTTP/1.1\r\nHost: a:80\r\n\r\n", WH_LINE_OK);
	{
		/* WH_DOOR_FIELDS_MAX header lines, then one more. */
		char many[64 + (WH_DOOR_FIELDS_MAX + 1) * 16];
		size_t n = (size_t)snprintf(many, sizeof(many), "GET / HTTP/1.1\r\n");

		for (int i = 0; i < WH_DOOR_FIELDS_MAX; i++)
			n += (size_t)snprintf(many + n, sizeof(many) - n, "X%d: b\r\n", i % 1000);
		CHECK_INT("as many fields as allowed", wh_door_head_check(many,
		    n + (size_t)snprintf(many + n, sizeof(many) - n, "\r\n")), WH_LINE_OK);
		n += (size_t)snprintf(many + n, sizeof(many) - n, "Y: b\r\n\r\n");
		CHECK_INT("one more", wh_door_head_check(many, n), WH_LINE_TOO_MANY);
	}
}

struct got {
	pthread_mutex_t lock;
	int fd;
	char peer[64];
};

static int
on_handoff(void *arg, int fd, const struct sockaddr *peer, socklen_t len)
{
	struct got *g = arg;

	(void)len;
	pthread_mutex_lock(&g->lock);
	g->fd = fd;
	inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, g->peer,
	    sizeof(g->peer));
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static int
wait_fd(struct got *g)
{
	for (int i = 0; i < 500; i++) {
		int fd;

		pthread_mutex_lock(&g->lock);
		fd = g->fd;
		pthread_mutex_unlock(&g->lock);
		if (fd >= 0)
			return fd;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	return -1;
}

static int
dial(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
test_door(void)
{
	struct config *c = NULL;
	char err[CONFIG_ERR_MAX];
	struct wh_guard *g = NULL;
	struct wh_door *d = NULL;
	struct got got = { PTHREAD_MUTEX_INITIALIZER, -1, "" };
	struct sockaddr_in any;
	char buf[256] = "";
	int cl, fd;
	ssize_t n;

	memset(&any, 0, sizeof(any));
	any.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &any.sin_addr);
	if (!CHECK("config", config_parse("kb.yml", "", 0, CONFIG_NO_SECRETS, &c, err,
	    sizeof(err)) == 0) || !CHECK("guard", wh_guard_new(config_http(c), &g) == 0))
		return;
	if (!CHECK("door opens on port 0", wh_door_open((struct sockaddr *)&any,
	    sizeof(any), 16, 4096, g, on_handoff, &got, &d) == 0))
		return;
	CHECK("a port was bound", wh_door_port(d) > 0);

	/* A sound line in two pieces: handed over with every byte unread. */
	cl = dial(wh_door_port(d));
	(void)!write(cl, "POST /x HT", 10);
	nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	pthread_mutex_lock(&got.lock);
	CHECK("not handed over before the line ends", got.fd < 0);
	pthread_mutex_unlock(&got.lock);
	(void)!write(cl, "TP/1.1\r\nHost: y\r\n\r\n", 19);
	fd = wait_fd(&got);
	CHECK("handed over once the head is in", fd >= 0);
	CHECK_STR("with the peer's address", got.peer, "127.0.0.1");
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	CHECK_INT("nothing consumed", n, 29);
	CHECK("from the first byte", !strncmp(buf, "POST /x HTTP/1.1\r\n", 18));
	close(cl);
	if (fd >= 0)
		close(fd);

	/* obs-fold: 400 from the door, never handed over. */
	got.fd = -1;
	cl = dial(wh_door_port(d));
	(void)!write(cl, "POST /x HTTP/1.1\r\nContent-Length: 2\r\nContent-Length:\r\n 40\r\n\r\n{}",
	    63);
	memset(buf, 0, sizeof(buf));
	n = read(cl, buf, sizeof(buf) - 1);
	CHECK("a folded header line gets 400", n > 0 && !strncmp(buf, "HTTP/1.1 400 ", 13));
	CHECK("saying why", strstr(buf, "obs-fold") != NULL);
	pthread_mutex_lock(&got.lock);
	CHECK("and it was not handed over", got.fd < 0);
	pthread_mutex_unlock(&got.lock);
	close(cl);

	/* A bad line: 400 from the door, never handed over. */
	got.fd = -1;
	cl = dial(wh_door_port(d));
	(void)!write(cl, "HELLO\r\n\r\n", 9);
	memset(buf, 0, sizeof(buf));
	n = read(cl, buf, sizeof(buf) - 1);
	CHECK("a bad line gets 400", n > 0 && !strncmp(buf, "HTTP/1.1 400 ", 13));
	CHECK("saying why", strstr(buf, "malformed request line") != NULL);
	CHECK_INT("then the connection ends", read(cl, buf, sizeof(buf)), 0);
	pthread_mutex_lock(&got.lock);
	CHECK("and it was not handed over", got.fd < 0);
	pthread_mutex_unlock(&got.lock);
	close(cl);

	wh_door_close(d);
	CHECK("closed: nobody listens", dial(wh_door_port(d)) < 0);
	wh_door_free(d);
	wh_guard_free(g);
	config_free(c);
}

/*
 * wh_door_head_scan() a byte at a time, as the door does when a head comes
 * a byte a segment: never a verdict before the whole head's, then the
 * whole head's.
 */
static void
test_head_pieces(void)
{
	static const struct { const char *s; enum wh_line want; } heads[] = {
		{ "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n", WH_LINE_OK },
		{ "\r\nGET / HTTP/1.1\nX-A: a\n\n", WH_LINE_OK },
		{ "POST / HTTP/1.1\r\nContent-Length: x\r\nHost: a\r\n\r\n", WH_LINE_BAD_LENGTH },
		{ "GET / HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", WH_LINE_BAD },
		{ "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", WH_LINE_BAD_BYTE },
		{ "GET / HTTP/1.1\r\nNoColon\r\n\r\n", WH_LINE_BAD_FIELD },
	};

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct wh_head_scan st = { 0, 0, 0, 0, 0, 0 };
		size_t len = strlen(heads[i].s), n;
		enum wh_line got = WH_LINE_INCOMPLETE;

		for (n = 1; n <= len && got == WH_LINE_INCOMPLETE; n++)
			got = wh_door_head_scan(&st, heads[i].s, n);
		CHECK_INT(heads[i].s, got, heads[i].want);
		CHECK_INT("the same as the whole at once", wh_door_head_check(heads[i].s, len), got);
	}
	/* What the guard is told at the handover: the head's bytes and the largest length. */
	{
		static const char h[] = "POST / HTTP/1.1\r\nContent-Length: 12\r\n"
		    "content-length:  7\r\n\r\n{\"a\": 1}";
		struct wh_head_scan st = { 0, 0, 0, 0, 0, 0 };

		CHECK_INT("a head with a body after it", wh_door_head_scan(&st, h, sizeof(h) - 1),
		    WH_LINE_OK);
		CHECK_INT("its bytes, blank line included", (long long)st.head_bytes,
		    (long long)(strstr(h, "{") - h));
		CHECK_INT("the largest Content-Length", (long long)st.length, 12);
	}
	/* The target's query arguments, which libmicrohttpd keeps a record of each. */
	{
		static const struct { const char *s; unsigned args; } q[] = {
			{ "GET /healthz HTTP/1.1\r\n\r\n", 0 },
			{ "GET /healthz? HTTP/1.1\r\n\r\n", 1 },
			{ "GET /x?a&a&b=c HTTP/1.1\r\nX-Q: ?&&&\r\n\r\n", 3 },
			{ "\r\nPOST /w?a=1&b=2&&c HTTP/1.0\r\n\r\n", 4 },
		};

		for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
			struct wh_head_scan st = { 0, 0, 0, 0, 0, 0 };

			wh_door_head_scan(&st, q[i].s, strlen(q[i].s));
			CHECK_INT(q[i].s, st.args, q[i].args);
		}
	}
}

int
main(void)
{
	test_lines();
	test_heads();
	test_head_pieces();
	test_door();
	return t_done("test_wh_door");
}
