/*
 * server: the HTTP front door over libmicrohttpd (included here only).
 *
 *   POST /webhooks/github | /webhooks/gitlab | /webhooks/gitea  (handle.h)
 *   GET  /healthz   200 {"status":"ok"} while the store takes writes, else
 *                   503 with the cause; from memory (health.h), never the disk
 *   GET  /metrics   Prometheus text format (metrics.h)
 *   anything else   404; a known path with another method 405
 *
 * A malformed request line (door.h) and any request whose body length is
 * ambiguous (RFC 9112 section 6: two Content-Length headers,
 * Content-Length with Transfer-Encoding, a transfer coding other than one
 * "chunked") or with a field name that is not a token gets 400 and the
 * connection is closed. The listening socket is the door's.
 *
 * Limits from the config's http section: body size (413 at once when
 * Content-Length is over it, or as soon as a chunked body passes it),
 * header memory per connection (431), connections in all, idle time per
 * connection; and through the guard (guard.h): head and body deadlines
 * (408), connections or proxied requests per client (429), body bytes in
 * memory per client and in all, charged as they arrive (503), so slow,
 * crowding or huge requests cannot keep genuine deliveries out. Worker
 * threads poll with epoll; a request blocks its thread only while its
 * delivery commits.
 */
#ifndef KB_WEBHOOKS_SERVER_H
#define KB_WEBHOOKS_SERVER_H

#include "conf/config.h"
#include "store/store.h"

struct wh_server;

/*
 * Start listening on config_listen(cfg). cfg and store are borrowed and
 * must outlive the server. 0, or -errno with a message in err.
 */
int wh_server_start(const struct config *cfg, struct store *store,
    struct wh_server **out, char *err, size_t errlen);

/* The port actually bound (useful with port 0). */
int wh_server_port(const struct wh_server *srv);

/* Stop accepting connections; requests already in progress go on. */
void wh_server_quiesce(struct wh_server *srv);

/*
 * Wait until no request is in progress, at most timeout_ms: 0, or
 * -ETIMEDOUT with requests still running.
 */
int wh_server_drain(struct wh_server *srv, int timeout_ms);

/* Close every connection, stop the threads and free the server. */
void wh_server_stop(struct wh_server *srv);

#endif
