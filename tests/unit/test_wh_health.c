#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "webhooks/health.h"
#include "webhooks/intake.h"
#include "t.h"

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The state machine alone: no store, no probe. */
static void
test_states(void)
{
	struct wh_health *h = NULL;
	char cause[WH_HEALTH_CAUSE_MAX];

	CHECK_INT("new", wh_health_new(NULL, 0, 300, &h), 0);
	CHECK_INT("healthy at first", wh_health_get(h, cause, sizeof(cause)), 0);
	CHECK_STR("cause ok", cause, "ok");

	wh_health_begin(h, WH_HEALTH_INTAKE);
	CHECK_INT("a write under way is not yet a fault", wh_health_get(h, NULL, 0), 0);
	sleep_ms(400);
	CHECK_INT("a write past the deadline is", wh_health_get(h, cause, sizeof(cause)),
	    -ETIMEDOUT);
	CHECK_STR("its cause", cause, "commit did not finish within 1 s");
	wh_health_end(h, WH_HEALTH_INTAKE, 0);
	CHECK_INT("the write committed: healthy", wh_health_get(h, NULL, 0), 0);

	wh_health_end(h, WH_HEALTH_PROBE, -ENOSPC);
	CHECK_INT("a write failed for space", wh_health_get(h, cause, sizeof(cause)), -ENOSPC);
	CHECK_STR("its cause", cause, "ENOSPC: No space left on device");
	wh_health_end(h, WH_HEALTH_INTAKE, -EINVAL);
	CHECK_INT("a bad row says nothing of the disk", wh_health_get(h, NULL, 0), -ENOSPC);
	wh_health_begin(h, WH_HEALTH_PROBE);
	sleep_ms(400);
	CHECK_INT("a hang wins over the last failure", wh_health_get(h, NULL, 0), -ETIMEDOUT);
	wh_health_end(h, WH_HEALTH_PROBE, -EROFS);
	CHECK_INT("then its own outcome", wh_health_get(h, cause, sizeof(cause)), -EROFS);
	CHECK_STR("EROFS's cause", cause, "EROFS: Read-only file system");
	wh_health_end(h, WH_HEALTH_PROBE, 0);
	CHECK_INT("a commit clears it", wh_health_get(h, NULL, 0), 0);
	wh_health_free(h);
}

static const char PUSH_PAYLOAD[] = "{}";

static void
delivery(struct store_delivery *d, const char *id, const char *sha)
{
	memset(d, 0, sizeof(*d));
	d->provider = "github";
	d->delivery_id = id;
	d->event = "push";
	d->repo = "acme/model";
	d->outcome = "accepted";
	d->work = STORE_WORK_JOB;
	d->clone_url = "https://x/acme/model.git";
	d->sha = sha;
	d->ref = "refs/heads/main";
	d->trigger = "push";
	d->payload = PUSH_PAYLOAD;
}

/*
 * The intake's deadline, with the database locked by another connection
 * (what a hung disk looks like from the committer): the waiter gets
 * -ETIMEDOUT at its deadline, health turns -ETIMEDOUT, and once the lock
 * goes the late commit records the delivery, so its redelivery is a
 * duplicate; nothing was acknowledged that did not commit.
 */
static void
test_intake_deadline(void)
{
	char dir[] = "/tmp/kb-test-health.XXXXXX", path[256], idbuf[32];
	struct store *s = NULL;
	struct wh_health *h = NULL;
	struct wh_intake *in = NULL;
	struct store_delivery d;
	sqlite3 *other = NULL;
	int64_t n = -1;
	double t0;

	if (!mkdtemp(dir) || store_open(dir, 0, &s) < 0 ||
	    wh_health_new(s, 0, 300, &h) < 0 || wh_intake_new(s, h, 300, &in) < 0) {
		CHECK("setup", 0);
		return;
	}
	delivery(&d, "ok-1", "1111111111111111111111111111111111111111");
	CHECK_INT("accepted while the store is free", wh_intake_submit(in, &d), 0);
	CHECK("with a job", d.work_id > 0);

	snprintf(path, sizeof(path), "%s/%s", dir, STORE_DB_NAME);
	CHECK_INT("another connection", sqlite3_open(path, &other), SQLITE_OK);
	CHECK_INT("takes the write lock", sqlite3_exec(other, "BEGIN IMMEDIATE",
	    NULL, NULL, NULL), SQLITE_OK);
	delivery(&d, "late-1", "2222222222222222222222222222222222222222");
	t0 = now_s();
	CHECK_INT("the waiter gives up", wh_intake_submit(in, &d), -ETIMEDOUT);
	CHECK("at its deadline, not the busy timeout (5 s)", now_s() - t0 < 4.0);
	CHECK("nothing acknowledged", d.work_id == 0 && !d.duplicate);
	/* The commit started a little after the waiter's clock: give it that. */
	for (int i = 0; i < 50 && wh_health_get(h, NULL, 0) == 0; i++)
		sleep_ms(100);
	CHECK_INT("health says the commit hangs", wh_health_get(h, NULL, 0), -ETIMEDOUT);
	/* Queued behind the stuck commit: taken off the queue at its deadline. */
	delivery(&d, "queued-1", "3333333333333333333333333333333333333333");
	CHECK_INT("a delivery queued behind it gives up too", wh_intake_submit(in, &d),
	    -ETIMEDOUT);
	sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(other);

	for (int i = 0; i < 100 && wh_health_get(h, NULL, 0) != 0; i++)
		sleep_ms(100);
	CHECK_INT("healthy once the late commit is through", wh_health_get(h, NULL, 0), 0);
	delivery(&d, "late-1", "2222222222222222222222222222222222222222");
	CHECK_INT("the redelivery commits", wh_intake_submit(in, &d), 0);
	CHECK("and is a duplicate of the late commit", d.duplicate);
	delivery(&d, "queued-1", "3333333333333333333333333333333333333333");
	CHECK_INT("the one taken off the queue", wh_intake_submit(in, &d), 0);
	CHECK("is new", !d.duplicate && d.work_id > 0);
	CHECK_INT("jobs", store_count(s, "jobs", &n), 0);
	CHECK_INT("one job each", n, 3);

	/* Strings need live only for the call: the intake copied them. */
	snprintf(idbuf, sizeof(idbuf), "copy-1");
	delivery(&d, idbuf, "4444444444444444444444444444444444444444");
	CHECK_INT("a delivery from a stack buffer", wh_intake_submit(in, &d), 0);

	wh_intake_free(in);
	wh_health_free(h);
	store_close(s);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		printf("# could not remove %s\n", dir);
}

/* The probe writes on its own: a store that takes writes is healthy. */
static void
test_probe(void)
{
	char dir[] = "/tmp/kb-test-probe.XXXXXX", cmd[128];
	struct store *s = NULL;
	struct wh_health *h = NULL;

	if (!mkdtemp(dir) || store_open(dir, 0, &s) < 0 ||
	    wh_health_new(s, 50, 1000, &h) < 0) {
		CHECK("probe setup", 0);
		return;
	}
	sleep_ms(200);
	CHECK_INT("probed: healthy", wh_health_get(h, NULL, 0), 0);
	wh_health_free(h);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
}

int
main(void)
{
	log_set_level(LOG_ERROR);
	test_states();
	test_intake_deadline();
	test_probe();
	return t_done("test_wh_health");
}
