#include "webhooks/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const double bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

static const char *const handler_names[WH_N_HANDLERS] = { "webhook",
	"healthz", "metrics", "other" };

struct series {
	const char *provider, *event, *outcome;
	unsigned long long n;
};

struct histogram {
	unsigned long long buckets[N_BOUNDS];	/* non-cumulative; summed when rendered */
	unsigned long long count;
	double sum;
};

struct wh_metrics {
	pthread_mutex_t lock;
	struct series series[WH_METRICS_MAX_SERIES];
	size_t n_series;
	unsigned long long dropped;	/* past WH_METRICS_MAX_SERIES */
	struct histogram hist[WH_N_HANDLERS];
};

int
wh_metrics_new(struct wh_metrics **out)
{
	struct wh_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

void
wh_metrics_free(struct wh_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct series *
find(struct wh_metrics *m, const char *provider, const char *event,
    const char *outcome)
{
	for (size_t i = 0; i < m->n_series; i++) {
		struct series *s = &m->series[i];
		if (!strcmp(s->provider, provider) && !strcmp(s->event, event) &&
		    !strcmp(s->outcome, outcome))
			return s;
	}
	return NULL;
}

void
wh_metrics_delivery(struct wh_metrics *m, const char *provider,
    const char *event, const char *outcome)
{
	struct series *s;

	pthread_mutex_lock(&m->lock);
	if ((s = find(m, provider, event, outcome))) {
		s->n++;
	} else if (m->n_series < WH_METRICS_MAX_SERIES) {
		s = &m->series[m->n_series++];
		*s = (struct series){ provider, event, outcome, 1 };
	} else {
		m->dropped++;
	}
	pthread_mutex_unlock(&m->lock);
}

unsigned long long
wh_metrics_get(struct wh_metrics *m, const char *provider, const char *event,
    const char *outcome)
{
	struct series *s;
	unsigned long long n;

	pthread_mutex_lock(&m->lock);
	n = (s = find(m, provider, event, outcome)) ? s->n : 0;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void
wh_metrics_request(struct wh_metrics *m, enum wh_handler h, double seconds)
{
	struct histogram *hi;

	if (h >= WH_N_HANDLERS)
		h = WH_HANDLER_OTHER;
	hi = &m->hist[h];
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < N_BOUNDS; i++)
		if (seconds <= bounds[i]) {
			hi->buckets[i]++;
			break;
		}
	hi->count++;
	hi->sum += seconds;
	pthread_mutex_unlock(&m->lock);
}

struct job_counts {
	long long queued, running, done, failed, other;
};

static void
count_state(const char *state, int64_t n, void *arg)
{
	struct job_counts *c = arg;

	if (!strcmp(state, STORE_JOB_QUEUED))
		c->queued = n;
	else if (!strcmp(state, STORE_JOB_RUNNING))
		c->running = n;
	else if (!strcmp(state, STORE_JOB_DONE))
		c->done = n;
	else if (!strcmp(state, STORE_JOB_FAILED))
		c->failed = n;
	else
		c->other += n;
}

/*
 * Label values here come from fixed sets of plain names, never from
 * requests, so they need no escaping.
 */
int
wh_metrics_render(struct wh_metrics *m, struct store *s, struct buf *out)
{
	struct job_counts jc = { 0, 0, 0, 0, 0 };
	int error = 0;

	/* The store busy past its wait (a hung disk): the rest still answers. */
	if (s && (error = store_jobs_count_by_state(s, count_state, &jc)) < 0) {
		if (error != -ETIMEDOUT)
			return error;
		s = NULL;
		error = 0;
	}
	pthread_mutex_lock(&m->lock);
	error |= buf_addstr(out,
	    "# HELP kernelbot_webhook_deliveries_total Webhook deliveries by provider, event and outcome.\n"
	    "# TYPE kernelbot_webhook_deliveries_total counter\n");
	for (size_t i = 0; i < m->n_series; i++)
		error |= buf_printf(out,
		    "kernelbot_webhook_deliveries_total{provider=\"%s\",event=\"%s\",outcome=\"%s\"} %llu\n",
		    m->series[i].provider, m->series[i].event,
		    m->series[i].outcome, m->series[i].n);
	error |= buf_printf(out,
	    "# HELP kernelbot_webhook_series_dropped_total Deliveries not counted because the series limit was reached.\n"
	    "# TYPE kernelbot_webhook_series_dropped_total counter\n"
	    "kernelbot_webhook_series_dropped_total %llu\n", m->dropped);
	if (s)
		error |= buf_printf(out,
		    "# HELP kernelbot_jobs Jobs in the store by state.\n"
		    "# TYPE kernelbot_jobs gauge\n"
		    "kernelbot_jobs{state=\"queued\"} %lld\n"
		    "kernelbot_jobs{state=\"running\"} %lld\n"
		    "kernelbot_jobs{state=\"done\"} %lld\n"
		    "kernelbot_jobs{state=\"failed\"} %lld\n",
		    jc.queued, jc.running, jc.done, jc.failed);
	error |= buf_addstr(out,
	    "# HELP kernelbot_http_request_duration_seconds Time from a request's headers to its response, by handler.\n"
	    "# TYPE kernelbot_http_request_duration_seconds histogram\n");
	for (int h = 0; h < WH_N_HANDLERS; h++) {
		unsigned long long cum = 0;
		for (size_t i = 0; i < N_BOUNDS; i++) {
			cum += m->hist[h].buckets[i];
			error |= buf_printf(out,
			    "kernelbot_http_request_duration_seconds_bucket{handler=\"%s\",le=\"%g\"} %llu\n",
			    handler_names[h], bounds[i], cum);
		}
		error |= buf_printf(out,
		    "kernelbot_http_request_duration_seconds_bucket{handler=\"%s\",le=\"+Inf\"} %llu\n"
		    "kernelbot_http_request_duration_seconds_sum{handler=\"%s\"} %.6f\n"
		    "kernelbot_http_request_duration_seconds_count{handler=\"%s\"} %llu\n",
		    handler_names[h], m->hist[h].count, handler_names[h],
		    m->hist[h].sum, handler_names[h], m->hist[h].count);
	}
	pthread_mutex_unlock(&m->lock);
	return error ? -ENOBUFS : 0;
}

int
wh_metrics_render_guard(const struct wh_guard_stats *st, struct buf *out)
{
	int error = 0;

	error |= buf_printf(out,
	    "# HELP kernelbot_http_connections Connections the server holds now.\n"
	    "# TYPE kernelbot_http_connections gauge\n"
	    "kernelbot_http_connections %llu\n"
	    "# HELP kernelbot_http_buffered_bytes Request body bytes held in memory now.\n"
	    "# TYPE kernelbot_http_buffered_bytes gauge\n"
	    "kernelbot_http_buffered_bytes %llu\n", st->open, st->buffered);
	error |= buf_printf(out,
	    "# HELP kernelbot_http_connections_ended_total Connections the server ended before "
	    "their request was answered, by reason.\n"
	    "# TYPE kernelbot_http_connections_ended_total counter\n"
	    "kernelbot_http_connections_ended_total{reason=\"room_no_request_line\"} %llu\n"
	    "kernelbot_http_connections_ended_total{reason=\"room_head\"} %llu\n"
	    "kernelbot_http_connections_ended_total{reason=\"room_slow_body\"} %llu\n"
	    "kernelbot_http_connections_ended_total{reason=\"room_young\"} %llu\n"
	    "kernelbot_http_connections_ended_total{reason=\"body_memory\"} %llu\n"
	    "kernelbot_http_connections_ended_total{reason=\"deadline\"} %llu\n"
	    "kernelbot_http_connections_ended_total{reason=\"client_closed\"} %llu\n",
	    st->ended_room_line, st->ended_room_head, st->ended_room_body, st->ended_room_young,
	    st->ended_budget,
	    st->ended_late, st->ended_gone);
	error |= buf_printf(out,
	    "# HELP kernelbot_http_connections_refused_total New connections closed at once, by reason.\n"
	    "# TYPE kernelbot_http_connections_refused_total counter\n"
	    "kernelbot_http_connections_refused_total{reason=\"full\"} %llu\n"
	    "kernelbot_http_connections_refused_total{reason=\"address_share\"} %llu\n",
	    st->refused_full, st->refused_addr);
	error |= buf_printf(out,
	    "# HELP kernelbot_http_clients_struck_total Clients whose connection was ended "
	    "before its request line, so denied the grace of a new connection for a while.\n"
	    "# TYPE kernelbot_http_clients_struck_total counter\n"
	    "kernelbot_http_clients_struck_total %llu\n", st->struck);
	error |= buf_printf(out,
	    "# HELP kernelbot_http_bodies_refused_total Request bodies refused room in memory "
	    "(drained, then 503), by reason.\n"
	    "# TYPE kernelbot_http_bodies_refused_total counter\n"
	    "kernelbot_http_bodies_refused_total{reason=\"address_share\"} %llu\n"
	    "kernelbot_http_bodies_refused_total{reason=\"memory\"} %llu\n"
	    "kernelbot_http_bodies_refused_total{reason=\"small_body_reserve\"} %llu\n",
	    st->refused_body_share, st->refused_body_memory, st->refused_body_reserve);
	return error ? -ENOBUFS : 0;
}
