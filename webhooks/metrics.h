/*
 * metrics: the counters behind GET /metrics, rendered in the Prometheus
 * text exposition format (version 0.0.4):
 *
 *   kernelbot_webhook_deliveries_total{provider,event,outcome}  counter
 *   kernelbot_jobs{state}                                       gauge (from the store)
 *   kernelbot_http_request_duration_seconds{handler}            histogram
 *   kernelbot_http_connections, kernelbot_http_buffered_bytes   gauges (the guard)
 *   kernelbot_http_connections_ended_total{reason}              counter (the guard)
 *   kernelbot_http_connections_refused_total{reason}            counter (the guard)
 *
 * Label values are bounded sets (events through wh_event_label()), so no
 * sender can grow the output. Thread-safe.
 */
#ifndef KB_WEBHOOKS_METRICS_H
#define KB_WEBHOOKS_METRICS_H

#include "store/store.h"
#include "common/buf.h"
#include "webhooks/guard.h"

#define WH_METRICS_MAX_SERIES 512	/* distinct (provider, event, outcome) */

/* The handlers of the latency histogram. */
enum wh_handler {
	WH_HANDLER_WEBHOOK,
	WH_HANDLER_HEALTHZ,
	WH_HANDLER_METRICS,
	WH_HANDLER_OTHER,
	WH_N_HANDLERS,
};

struct wh_metrics;

int wh_metrics_new(struct wh_metrics **out);
void wh_metrics_free(struct wh_metrics *m);

/* Count one delivery. The strings must be static (they are kept). */
void wh_metrics_delivery(struct wh_metrics *m, const char *provider,
    const char *event, const char *outcome);

/* Observe one request's duration. */
void wh_metrics_request(struct wh_metrics *m, enum wh_handler h, double seconds);

/* The count of one series (0 if never seen), for tests. */
unsigned long long wh_metrics_get(struct wh_metrics *m, const char *provider,
    const char *event, const char *outcome);

/*
 * Append the exposition to out; job counts are read from s (NULL, or the
 * store busy past STORE_COUNT_WAIT_MS: no jobs metric). 0, -ENOBUFS, or
 * the store's error.
 */
int wh_metrics_render(struct wh_metrics *m, struct store *s, struct buf *out);

/* Append the guard's counters (wh_guard_stats()). 0 or -ENOBUFS. */
int wh_metrics_render_guard(const struct wh_guard_stats *st, struct buf *out);

#endif
