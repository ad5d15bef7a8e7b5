#include "webhooks/server.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "webhooks/forges.h"
#include "webhooks/door.h"
#include "webhooks/guard.h"
#include "webhooks/handle.h"
#include "webhooks/health.h"
#include "webhooks/intake.h"
#include "webhooks/metrics.h"

#define WH_METRICS_MAX_BYTES (1u << 20)

struct wh_server {
	struct MHD_Daemon *daemon;
	const struct config *cfg;
	struct store *store;
	struct wh_health *health;
	struct wh_intake *intake;
	struct wh_metrics *metrics;
	struct wh_guard *guard;
	struct wh_door *door;
	struct wh_ctx ctx;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	int inflight;		/* requests between their headers and completion */
	int port;
};

enum route {
	ROUTE_WEBHOOK,
	ROUTE_HEALTHZ,
	ROUTE_METRICS,
	ROUTE_NOT_FOUND,
};

/* Per request: MHD's con_cls. */
struct req {
	enum route route;
	enum config_forge forge;
	struct buf body;
	struct timespec start;
	struct wh_guard_conn *conn;	/* the connection's deadlines and client */
	int too_large;		/* a chunked body passed the limit: drained, then 413 */
	int answered;		/* a response was queued from the headers alone */
	int busy;		/* the memory budget for bodies ran out: drained, then 503 */
};

static const char BUSY_JSON[] =
    "{\"error\":\"busy: too many request bodies in memory; retry later\"}\n";
static const char CROWDED_JSON[] =
    "{\"error\":\"too many requests from this address at once\"}\n";

static double
elapsed_s(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* retry_after: seconds for Retry-After, 0 for none. */
static enum MHD_Result
reply_retry(struct MHD_Connection *c, int status, const char *ctype,
    const char *body, size_t len, const char *allow, int close_conn,
    int retry_after)
{
	char ra[16];
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!(r = MHD_create_response_from_buffer(len, (void *)body,
	    MHD_RESPMEM_MUST_COPY)))
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	/*
	 * Every answer closes its connection, so every request comes through
	 * the door, whose checks of the raw head (door.h) libmicrohttpd cannot
	 * make; a forge opens a connection per delivery anyway.
	 */
	(void)close_conn;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (retry_after > 0) {
		snprintf(ra, sizeof(ra), "%d", retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
reply(struct MHD_Connection *c, int status, const char *ctype,
    const char *body, size_t len, const char *allow, int close_conn)
{
	return reply_retry(c, status, ctype, body, len, allow, close_conn, 0);
}

static enum MHD_Result
reply_json(struct MHD_Connection *c, int status, const char *json,
    const char *allow, int close_conn)
{
	return reply(c, status, "application/json", json, strlen(json), allow,
	    close_conn);
}

static const char *
header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static enum route
route_of(const char *url, enum config_forge *forge)
{
	static const char prefix[] = "/webhooks/";

	/*
	 * The absolute form (RFC 9112 section 3.2.2: "http://host/path", which
	 * a server must accept): its path. The authority is not checked;
	 * neither is Host.
	 */
	if (!strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8)) {
		const char *path = strchr(strstr(url, "//") + 2, '/');

		url = path ? path : "/";
	}
	if (!strncmp(url, prefix, sizeof(prefix) - 1)) {
		for (int f = 0; f < CONFIG_N_FORGES; f++)
			if (!strcmp(url + sizeof(prefix) - 1,
			    config_forge_name((enum config_forge)f))) {
				*forge = (enum config_forge)f;
				return ROUTE_WEBHOOK;
			}
		return ROUTE_NOT_FOUND;
	}
	if (!strcmp(url, "/healthz"))
		return ROUTE_HEALTHZ;
	if (!strcmp(url, "/metrics"))
		return ROUTE_METRICS;
	return ROUTE_NOT_FOUND;
}

/*
 * From memory only: a hung disk must not hang the answer (health.h). The
 * causes are errno names and descriptions and health.c's own text, none
 * with a character JSON would need escaped.
 */
static enum MHD_Result
serve_healthz(struct wh_server *srv, struct MHD_Connection *c)
{
	char cause[WH_HEALTH_CAUSE_MAX], body[WH_HEALTH_CAUSE_MAX + 64];

	if (wh_health_get(srv->health, cause, sizeof(cause)) == 0)
		return reply_json(c, 200, "{\"status\":\"ok\"}\n", NULL, 0);
	snprintf(body, sizeof(body), "{\"status\":\"unavailable\",\"error\":\"%s\"}\n",
	    cause);
	return reply_json(c, 503, body, NULL, 0);
}

static enum MHD_Result
serve_metrics(struct wh_server *srv, struct MHD_Connection *c)
{
	struct buf b = BUF_INIT(WH_METRICS_MAX_BYTES);
	struct wh_guard_stats st;
	enum MHD_Result ret;

	if (srv->guard)
		wh_guard_stats(srv->guard, &st);
	if (wh_metrics_render(srv->metrics, srv->store, &b) < 0 ||
	    (srv->guard && wh_metrics_render_guard(&st, &b) < 0))
		ret = reply_json(c, 503, "{\"error\":\"metrics unavailable\"}\n", NULL, 0);
	else
		ret = reply(c, 200, "text/plain; version=0.0.4; charset=utf-8",
		    buf_cstr(&b), b.len, NULL, 0);
	buf_free(&b);
	return ret;
}

struct header_count {
	const char *name;
	int n;
};

static enum MHD_Result
count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct header_count *h = cls;

	(void)kind;
	(void)value;
	h->n += !strcasecmp(key, h->name);
	return MHD_YES;
}

/*
 * The one value of header name, or NULL; *twice set when it came more
 * than once (a signature, a delivery id or an event named twice is
 * ambiguous: libmicrohttpd hands out the first, and a proxy in front may
 * have judged the last; the tenth outside attack's L2).
 */
static const char *
header_once(struct MHD_Connection *c, const char *name, const char **twice)
{
	struct header_count h = { name, 0 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
	if (h.n > 1 && !*twice)
		*twice = name;
	return header(c, name);
}

/*
 * v without the whitespace after it, which is not part of a field's
 * value (RFC 9110 section 5.5; libmicrohttpd drops only what comes
 * before): in buf when there was some. "push " was an event kernelbot
 * ignored, under the id of the push it repeated (the eighth intake
 * attack). A value too long for buf is left as it came, to be refused.
 */
static const char *
trimmed(const char *v, char *buf, size_t cap)
{
	size_t n = v ? strlen(v) : 0;

	if (!n || (v[n - 1] != ' ' && v[n - 1] != '\t'))
		return v;
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= cap)
		return v;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return buf;
}

static enum MHD_Result
serve_webhook(struct wh_server *srv, struct MHD_Connection *c, struct req *rq)
{
	char ct[256], event[256], delivery[256], signature[512];
	struct wh_request in;
	struct wh_response out;
	const struct wh_forge *f = wh_forge(rq->forge);
	const char *twice = NULL;
	char msg[128];

	memset(&in, 0, sizeof(in));
	in.forge = rq->forge;
	in.content_type = trimmed(header_once(c, MHD_HTTP_HEADER_CONTENT_TYPE, &twice), ct,
	    sizeof(ct));
	in.event = trimmed(header_once(c, f->event_header, &twice), event, sizeof(event));
	in.delivery = trimmed(header_once(c, f->delivery_header, &twice), delivery,
	    sizeof(delivery));
	in.signature = trimmed(header_once(c, f->signature_header, &twice), signature,
	    sizeof(signature));
	if (twice) {
		snprintf(msg, sizeof(msg), "{\"error\":\"more than one %s header\"}\n", twice);
		return reply_json(c, 400, msg, NULL, 1);
	}
	in.body = buf_cstr(&rq->body);
	in.len = rq->body.len;
	wh_handle(&srv->ctx, &in, &out);
	/* What the guard may believe of this client when it makes room. */
	if (out.status == 202)
		wh_guard_accepted(srv->guard, rq->conn);
	return reply_retry(c, out.status, "application/json", out.body,
	    strlen(out.body), NULL, 0, out.retry_after);
}

struct framing {
	int content_length;	/* Content-Length headers seen */
	int transfer_encoding;	/* Transfer-Encoding headers seen */
	int chunked_only;	/* the one Transfer-Encoding is exactly "chunked" */
	int bad_name;		/* a field name that is not a token ("Content-Length :") */
	int host;		/* Host headers seen */
	int bad_host;		/* one that is not uri-host [":" port] */
};


/*
 * A Host value as RFC 9110 section 7.2 and RFC 3986 section 3.2.2 have it:
 * uri-host [":" port], uri-host a name or IPv4 address (unreserved,
 * pct-encoded and sub-delims characters) or a bracketed IPv6 literal
 * (hex digits, colons and dots), port digits up to 65535 (none after the
 * colon is allowed); empty for a target without an authority. "a b",
 * "x:-1", "x:99999999" and "[zz]" are none of them.
 */
static int
host_ok(const char *v)
{
	const char *p = v;
	size_t n;

	if (*p == '[') {
		n = strspn(p + 1, "0123456789abcdefABCDEF:.");
		if (n == 0 || p[1 + n] != ']')
			return 0;
		p += n + 2;
	} else {
		p += strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789-._~!$&'()*+,;=%");
	}
	if (*p == '\0')
		return 1;
	if (*p++ != ':')
		return 0;
	n = strspn(p, "0123456789");
	return p[n] == '\0' && (n == 0 || (n <= 5 && atol(p) <= 65535));
}
static enum MHD_Result
count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (!*key || key[strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789!#$%&'*+-.^_`|~")])
		f->bad_name = 1;
	if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
		f->host++;
		if (value && !host_ok(value))
			f->bad_host = 1;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		f->content_length++;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->transfer_encoding++;
		f->chunked_only = value && !strcasecmp(value, "chunked");
	}
	return MHD_YES;
}

/*
 * RFC 9110 section 5.3: the lines of a list field are one list, joined by
 * commas in order. A proxy may add its own X-Forwarded-For line rather
 * than append to the client's (HAProxy's option forwardfor does), so the
 * address it saw is in the last line, not the first.
 */
struct xff {
	struct buf list;
	int lines;
	int spoilt;		/* out of memory: the client cannot be told */
};

static enum MHD_Result
join_xff(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct xff *x = cls;

	(void)kind;
	if (strcasecmp(key, "X-Forwarded-For") || !value)
		return MHD_YES;
	if ((x->lines++ && buf_addstr(&x->list, ", ") < 0) ||
	    buf_addstr(&x->list, value) < 0)
		x->spoilt = 1;
	return MHD_YES;
}

/*
 * RFC 9112 section 6: a body's length must be unambiguous, or a proxy in
 * front and this server could split the stream into different requests.
 * libmicrohttpd reads the first Content-Length and lets chunked win over
 * it, and takes "Content-Length : 5" as some other field (section 5.1
 * says reject); the whole head is checked here before a byte of body is
 * read. An HTTP/1.0 message with Transfer-Encoding is faulty whatever
 * else it says (section 6.1). NULL when the framing is sound, else the
 * 400 answer.
 */
static const char *
framing_error(struct MHD_Connection *c, const char *version)
{
	struct framing f = { 0, 0, 0, 0, 0, 0 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
	if (f.bad_name)
		return "{\"error\":\"malformed header field name\"}\n";
	/* RFC 9112 section 3.2: HTTP/1.1 needs one Host; no request more than one. */
	if (f.host > 1 || (!f.host && strcmp(version, MHD_HTTP_VERSION_1_0)))
		return "{\"error\":\"an HTTP/1.1 request needs exactly one Host header\"}\n";
	if (f.bad_host)
		return "{\"error\":\"a Host that is no host and port\"}\n";
	if (f.transfer_encoding && !strcmp(version, MHD_HTTP_VERSION_1_0))
		return "{\"error\":\"Transfer-Encoding in an HTTP/1.0 request\"}\n";
	if (f.content_length > 1)
		return "{\"error\":\"more than one Content-Length\"}\n";
	if (f.content_length && f.transfer_encoding)
		return "{\"error\":\"Content-Length with Transfer-Encoding\"}\n";
	if (f.transfer_encoding > 1 || (f.transfer_encoding && !f.chunked_only))
		return "{\"error\":\"Transfer-Encoding other than chunked\"}\n";
	return NULL;
}

/* First call of a request: headers are in, no body yet. */
static enum MHD_Result
begin(struct wh_server *srv, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, void **con_cls)
{
	const struct config_http *h = config_http(srv->cfg);
	struct req *rq = calloc(1, sizeof(*rq));
	const union MHD_ConnectionInfo *ci;
	struct xff xff = { BUF_INIT(h->max_header_bytes), 0, 0 };
	const char *cl, *bad;
	unsigned long long expected = 0;
	int is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	int crowded;

	if (!rq)
		return MHD_NO;
	clock_gettime(CLOCK_MONOTONIC, &rq->start);
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	rq->conn = ci ? ci->socket_context : NULL;
	rq->body = (struct buf)BUF_INIT(h->max_body_bytes);
	rq->route = route_of(url, &rq->forge);
	rq->answered = 1;	/* every path below but the last answers from the headers */
	*con_cls = rq;
	pthread_mutex_lock(&srv->lock);
	srv->inflight++;
	pthread_mutex_unlock(&srv->lock);

	/*
	 * The guard's body deadlines run only for a request that will read
	 * one: a webhook POST. Every other answer comes from the head.
	 */
	MHD_get_connection_values(c, MHD_HEADER_KIND, join_xff, &xff);
	/* The declared length only tells the guard how far along a body is. */
	if ((cl = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH)))
		expected = strtoull(cl, NULL, 10);
	crowded = rq->conn && wh_guard_head(srv->guard, rq->conn,
	    xff.lines && !xff.spoilt ? buf_cstr(&xff.list) : NULL, rq->route == ROUTE_WEBHOOK &&
	    !strcmp(method, "POST"), expected < SIZE_MAX ? (size_t)expected : SIZE_MAX) == -EUSERS;
	buf_free(&xff.list);
	if ((bad = framing_error(c, version)))
		return reply_json(c, 400, bad, NULL, 1);
	if (crowded) {
		log_info("too many requests from one client", "client=%s",
		    wh_guard_client(rq->conn));
		return reply_json(c, 429, CROWDED_JSON, NULL, 1);
	}
	switch (rq->route) {
	case ROUTE_HEALTHZ:
		return is_get ? serve_healthz(srv, c) :
		    reply_json(c, 405, "{\"error\":\"method not allowed\"}\n", "GET, HEAD", 1);
	case ROUTE_METRICS:
		return is_get ? serve_metrics(srv, c) :
		    reply_json(c, 405, "{\"error\":\"method not allowed\"}\n", "GET, HEAD", 1);
	case ROUTE_NOT_FOUND:
		return reply_json(c, 404, "{\"error\":\"not found\"}\n", NULL, 1);
	case ROUTE_WEBHOOK:
		break;
	}
	if (strcmp(method, "POST"))
		return reply_json(c, 405, "{\"error\":\"method not allowed\"}\n", "POST", 1);
	if (!config_forge_secret(srv->cfg, rq->forge, NULL)) {
		wh_metrics_delivery(srv->metrics, config_forge_name(rq->forge),
		    "other", "unconfigured");
		return reply_json(c, 404, "{\"error\":\"this forge's webhook is not configured\"}\n",
		    NULL, 1);
	}
	/* Refuse before reading a byte of a body that cannot fit. */
	if ((cl = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH))) {
		unsigned long long len = strtoull(cl, NULL, 10);
		if (len > h->max_body_bytes) {
			wh_metrics_delivery(srv->metrics, config_forge_name(rq->forge),
			    "other", "too_large");
			return reply_json(c, 413, "{\"error\":\"body too large\"}\n", NULL, 1);
		}
		/* Its buffer grows no larger than what it declares (not twice). */
		rq->body.max = (size_t)len;
	}
	rq->answered = 0;
	return MHD_YES;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct wh_server *srv = cls;
	struct req *rq = *con_cls;

	if (!rq) {
		enum MHD_Result ret = begin(srv, c, url, method, version, con_cls);

		/* Answered from the head: no body deadline while it is sent. */
		if ((rq = *con_cls) && rq->answered && rq->conn)
			wh_guard_body_done(srv->guard, rq->conn);
		return ret;
	}
	if (rq->answered) {
		/* Whatever still arrives for an answered request is dropped unread. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		int keep = !rq->too_large && !rq->busy;

		*upload_data_size = 0;
		/*
		 * Charged as the bytes come, never from Content-Length: a
		 * declared size costs nothing until it is sent, and sending it
		 * is held to the guard's rate and deadline.
		 */
		if (rq->conn && wh_guard_body(srv->guard, rq->conn, n, keep) < 0)
			rq->busy = 1;
		else if (keep && buf_add(&rq->body, upload_data, n) < 0)
			rq->too_large = 1;
		if (keep && (rq->too_large || rq->busy))
			buf_free(&rq->body);
		return MHD_YES;
	}
	if (rq->conn)
		wh_guard_body_done(srv->guard, rq->conn);
	if (rq->too_large || rq->busy) {
		wh_metrics_delivery(srv->metrics, config_forge_name(rq->forge),
		    "other", rq->busy ? "busy" : "too_large");
		return rq->busy ? reply_json(c, 503, BUSY_JSON, NULL, 1) :
		    reply_json(c, 413, "{\"error\":\"body too large\"}\n", NULL, 1);
	}
	return serve_webhook(srv, c, rq);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	static const enum wh_handler handlers[] = { WH_HANDLER_WEBHOOK,
		WH_HANDLER_HEALTHZ, WH_HANDLER_METRICS, WH_HANDLER_OTHER };
	struct wh_server *srv = cls;
	struct req *rq = *con_cls;

	(void)c;
	if (!rq)
		return;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		wh_metrics_request(srv->metrics, handlers[rq->route], elapsed_s(&rq->start));
	buf_free(&rq->body);
	wh_guard_request_done(srv->guard, rq->conn);
	free(rq);
	*con_cls = NULL;
	pthread_mutex_lock(&srv->lock);
	if (--srv->inflight == 0)
		pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->lock);
}

/* Every connection is the guard's from accept to close (guard.h). */
static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct wh_server *srv = cls;
	const union MHD_ConnectionInfo *fd, *addr;
	struct wh_guard_conn *conn;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		/* Before libmicrohttpd closes the socket the guard may shut down. */
		wh_guard_close(srv->guard, *socket_context);
		*socket_context = NULL;
		return;
	}
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!fd || !addr)
		return;
	/* Only the door hands connections over, each with a sound request line. */
	if (wh_guard_adopt(srv->guard, fd->connect_fd, addr->client_addr,
	    addr->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sizeof(struct sockaddr_in), &conn) == -EUSERS)
		log_debug("connection refused: its address holds max_connections_per_ip",
		    "client=%s", wh_guard_client(conn));
	*socket_context = conn;
}

/*
 * A connection with a sound request line, from the door. libmicrohttpd
 * queues it for its thread (on_connection() then) or refuses it at once,
 * closing the socket.
 */
static int
on_door(void *arg, int fd, const struct sockaddr *peer, socklen_t len)
{
	struct wh_server *srv = arg;
	int error;

	if (MHD_add_connection(srv->daemon, fd, peer, len) == MHD_YES)
		return 0;
	error = errno ? -errno : -EINVAL;
	log_debug("connection dropped: over http.max_connections", "errno=%d", -error);
	return error;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512], q[600];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_debug("libmicrohttpd", "detail=%s", log_quote(q, sizeof(q), msg));
}

int
wh_server_start(const struct config *cfg, struct store *store,
    struct wh_server **out, char *err, size_t errlen)
{
	const struct config_http *h = config_http(cfg);
	struct sockaddr_storage ss;
	struct wh_server *srv;
	socklen_t sl;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
	    MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET;
	int error;

	if (config_parse_listen(config_listen(cfg), &ss, &sl) < 0) {
		snprintf(err, errlen, "listen: '%s' is not ADDR:PORT", config_listen(cfg));
		return -EINVAL;
	}
	if (!(srv = calloc(1, sizeof(*srv))))
		return -ENOMEM;
	srv->cfg = cfg;
	srv->store = store;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->idle, NULL);
	if ((error = wh_health_new(store, WH_HEALTH_PROBE_MS,
	    WH_HEALTH_DEADLINE_MS, &srv->health)) < 0 ||
	    (error = wh_intake_new(store, srv->health, WH_HEALTH_DEADLINE_MS,
	    &srv->intake)) < 0 ||
	    (error = wh_metrics_new(&srv->metrics)) < 0 ||
	    (error = wh_guard_new(h, &srv->guard)) < 0) {
		snprintf(err, errlen, "cannot start: %s", strerror(-error));
		goto fail;
	}
	srv->ctx = (struct wh_ctx){ cfg, srv->intake, srv->metrics, srv->health };
	srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)h->threads,
	    /*
	     * The guard keeps max_connections by evicting slow heads; the
	     * sockets it ended stay here until the event loop closes them.
	     * libmicrohttpd splits its limit among its threads and counts a
	     * connection added from outside only once its thread takes it, so
	     * a burst can land more on one thread than its share and be closed
	     * there without an answer. Each thread may hold the whole bound:
	     * the guard is the only limit.
	     */
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)((h->max_connections +
	    h->max_connections / 4 + 16) * h->threads),
	    /* Per address limits are the guard's: it knows trusted proxies. */
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->connection_timeout_s,
	    /*
	     * The head and its fields' records: the door passes no head that
	     * would not fit (WH_DOOR_FIELD_COST). Not more: libmicrohttpd maps
	     * a larger pool for each connection, which under a flood of
	     * connects cost a third of the genuine deliveries (t1028).
	     */
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)h->max_header_bytes,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_END);
	if (!srv->daemon) {
		error = errno ? -errno : -ENOMEM;
		snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(-error));
		goto fail;
	}
	/* libmicrohttpd listens on nothing: connections come from the door. */
	/*
	 * The guard keeps the door's connections within max_connections by
	 * ending those furthest from a request; the door's own bound only
	 * caps the sockets ended and not yet closed on top.
	 */
	if ((error = wh_door_open((struct sockaddr *)&ss, sl, (unsigned)(h->max_connections +
	    h->max_connections / 4 + 16), (size_t)h->max_header_bytes, srv->guard, on_door, srv, &srv->door)) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", config_listen(cfg),
		    strerror(-error));
		goto fail;
	}
	srv->port = wh_door_port(srv->door);
	*out = srv;
	return 0;
fail:
	if (srv->daemon)
		MHD_stop_daemon(srv->daemon);
	wh_guard_free(srv->guard);
	wh_intake_free(srv->intake);
	wh_health_free(srv->health);
	wh_metrics_free(srv->metrics);
	pthread_cond_destroy(&srv->idle);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return error;
}

int
wh_server_port(const struct wh_server *srv)
{
	return srv->port;
}

void
wh_server_quiesce(struct wh_server *srv)
{
	wh_door_close(srv->door);
}

int
wh_server_drain(struct wh_server *srv, int timeout_ms)
{
	struct timespec deadline;
	int error = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&srv->lock);
	while (srv->inflight > 0 && error == 0)
		if (pthread_cond_timedwait(&srv->idle, &srv->lock, &deadline) == ETIMEDOUT)
			error = -ETIMEDOUT;
	if (srv->inflight == 0)
		error = 0;
	pthread_mutex_unlock(&srv->lock);
	return error;
}

void
wh_server_stop(struct wh_server *srv)
{
	if (!srv)
		return;
	wh_door_free(srv->door);
	MHD_stop_daemon(srv->daemon);
	wh_guard_free(srv->guard);
	wh_intake_free(srv->intake);
	wh_health_free(srv->health);
	wh_metrics_free(srv->metrics);
	pthread_cond_destroy(&srv->idle);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
