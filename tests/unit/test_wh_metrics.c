#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "webhooks/metrics.h"
#include "t.h"

int
main(void)
{
	struct wh_metrics *m;
	struct buf b = BUF_INIT(1u << 20), small = BUF_INIT(64);
	char name[32];
	const char *t;

	if (wh_metrics_new(&m) < 0)
		return 1;
	wh_metrics_delivery(m, "github", "push", "accepted");
	wh_metrics_delivery(m, "github", "push", "accepted");
	wh_metrics_delivery(m, "gitlab", "Push Hook", "rejected");
	wh_metrics_request(m, WH_HANDLER_WEBHOOK, 0.003);
	wh_metrics_request(m, WH_HANDLER_WEBHOOK, 0.2);
	wh_metrics_request(m, WH_HANDLER_WEBHOOK, 42.0);
	CHECK_INT("render", wh_metrics_render(m, NULL, &b), 0);
	t = buf_cstr(&b);
	CHECK("counter line", strstr(t, "kernelbot_webhook_deliveries_total{provider=\"github\",event=\"push\",outcome=\"accepted\"} 2\n"));
	CHECK("label with a space", strstr(t, "event=\"Push Hook\",outcome=\"rejected\"} 1\n"));
	CHECK("TYPE lines", strstr(t, "# TYPE kernelbot_webhook_deliveries_total counter\n") &&
	    strstr(t, "# TYPE kernelbot_http_request_duration_seconds histogram\n"));
	CHECK("bucket below the first sample", strstr(t, "{handler=\"webhook\",le=\"0.0025\"} 0\n"));
	CHECK("cumulative bucket", strstr(t, "{handler=\"webhook\",le=\"0.005\"} 1\n"));
	CHECK("cumulative bucket 0.25", strstr(t, "{handler=\"webhook\",le=\"0.25\"} 2\n"));
	CHECK("last finite bucket misses the outlier", strstr(t, "{handler=\"webhook\",le=\"10\"} 2\n"));
	CHECK("+Inf has everything", strstr(t, "{handler=\"webhook\",le=\"+Inf\"} 3\n"));
	CHECK("count", strstr(t, "kernelbot_http_request_duration_seconds_count{handler=\"webhook\"} 3\n"));
	CHECK("sum", strstr(t, "kernelbot_http_request_duration_seconds_sum{handler=\"webhook\"} 42.203000\n"));
	CHECK("no jobs metric without a store", !strstr(t, "kernelbot_jobs"));
	CHECK("every line ends in a newline", t[b.len - 1] == '\n');
	CHECK_INT("render into a too small buffer fails", wh_metrics_render(m, NULL, &small), -ENOBUFS);

	/* the series table is bounded: 2 series so far, 522 more offered, 12 do not fit */
	for (int i = 0; i < WH_METRICS_MAX_SERIES + 10; i++) {
		static char names[WH_METRICS_MAX_SERIES + 10][16];
		snprintf(names[i], sizeof(names[i]), "o%d", i);
		wh_metrics_delivery(m, "gitea", "push", names[i]);
	}
	snprintf(name, sizeof(name), "o%d", 0);
	CHECK_INT("early series counted", wh_metrics_get(m, "gitea", "push", name), 1);
	buf_reset(&b);
	wh_metrics_render(m, NULL, &b);
	CHECK("dropped series counted", strstr(buf_cstr(&b), "\nkernelbot_webhook_series_dropped_total 12\n"));

	/* The guard's counters. */
	{
		struct wh_guard_stats st = { .open = 7, .buffered = 4096, .ended_room_body = 3,
			.ended_late = 11, .refused_full = 2, .refused_body_reserve = 5 };

		buf_reset(&b);
		CHECK_INT("guard render", wh_metrics_render_guard(&st, &b), 0);
		t = buf_cstr(&b);
		CHECK("open connections", strstr(t, "\nkernelbot_http_connections 7\n"));
		CHECK("bytes held", strstr(t, "\nkernelbot_http_buffered_bytes 4096\n"));
		CHECK("slow bodies ended",
		    strstr(t, "kernelbot_http_connections_ended_total{reason=\"room_slow_body\"} 3\n"));
		CHECK("deadlines", strstr(t, "kernelbot_http_connections_ended_total{reason=\"deadline\"} 11\n"));
		CHECK("refused when full",
		    strstr(t, "kernelbot_http_connections_refused_total{reason=\"full\"} 2\n"));
		CHECK("typed", strstr(t, "# TYPE kernelbot_http_connections_ended_total counter\n"));
		CHECK("large bodies refused for the reserve of small ones", strstr(t,
		    "kernelbot_http_bodies_refused_total{reason=\"small_body_reserve\"} 5\n"));
	}
	buf_free(&b);
	buf_free(&small);
	wh_metrics_free(m);
	return t_done("test_wh_metrics");
}
