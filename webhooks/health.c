#include "webhooks/health.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"

struct wh_health {
	struct store *store;
	int probe_ms, deadline_ms;
	pthread_mutex_t lock;		/* never held across a write */
	pthread_cond_t wake;		/* the probe's sleep; stop */
	pthread_t probe;
	int probing, stop;
	double started[WH_HEALTH_N_WRITERS];	/* monotonic s; 0: not writing */
	double last_done;		/* when a write last ended, for the probe */
	int error;			/* the last write's outcome */
	int logged;			/* the state last logged */
};

/* -errno values that are about the request, not the disk. */
static int
about_disk(int error)
{
	return error != -EINVAL && error != -ENOENT && error != -ESTALE;
}

/* Lock held. */
static int
state_locked(const struct wh_health *h, double now)
{
	for (int w = 0; w < WH_HEALTH_N_WRITERS; w++)
		if (h->started[w] > 0 &&
		    (now - h->started[w]) * 1000 >= h->deadline_ms)
			return -ETIMEDOUT;
	return h->error;
}

/* Lock held: 1 when state differs from what was logged (now it is). */
static int
changed_locked(struct wh_health *h, int state)
{
	if (state == h->logged)
		return 0;
	h->logged = state;
	return 1;
}

void
wh_health_cause(const struct wh_health *h, int error, char *cause, size_t len)
{
	const char *name;

	if (!cause || !len)
		return;
	if (error == -ETIMEDOUT)
		snprintf(cause, len, "commit did not finish within %d s",
		    ((h ? h->deadline_ms : WH_HEALTH_DEADLINE_MS) + 999) / 1000);
	else if (error == 0)
		snprintf(cause, len, "ok");
	else if ((name = strerrorname_np(-error)))
		snprintf(cause, len, "%s: %s", name, strerrordesc_np(-error));
	else
		snprintf(cause, len, "error %d", -error);
}

static void
log_state(struct wh_health *h, int state)
{
	char cause[WH_HEALTH_CAUSE_MAX], q[WH_HEALTH_CAUSE_MAX + 8];

	if (state == 0) {
		log_info("store takes writes again", NULL);
		return;
	}
	wh_health_cause(h, state, cause, sizeof(cause));
	log_warn("store cannot commit writes", "cause=%s",
	    log_quote(q, sizeof(q), cause));
}

void
wh_health_begin(struct wh_health *h, enum wh_health_writer w)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->started[w] = clock_mono_s();
	pthread_mutex_unlock(&h->lock);
}

void
wh_health_end(struct wh_health *h, enum wh_health_writer w, int error)
{
	double now;
	int state, log;

	if (!h)
		return;
	now = clock_mono_s();
	pthread_mutex_lock(&h->lock);
	h->started[w] = 0;
	h->last_done = now;
	if (error == 0 || about_disk(error))
		h->error = error;
	state = state_locked(h, now);
	log = changed_locked(h, state);
	pthread_mutex_unlock(&h->lock);
	if (log)
		log_state(h, state);
}

int
wh_health_get(struct wh_health *h, char *cause, size_t len)
{
	int state, log;

	pthread_mutex_lock(&h->lock);
	state = state_locked(h, clock_mono_s());
	log = changed_locked(h, state);
	pthread_mutex_unlock(&h->lock);
	if (log)
		log_state(h, state);
	wh_health_cause(h, state, cause, len);
	return state;
}

int
wh_health_deadline_ms(const struct wh_health *h)
{
	return h->deadline_ms;
}

/* The absolute CLOCK_MONOTONIC time ms from now. */
static struct timespec
after_ms(int ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/*
 * The probe writes only when no write ended for probe_ms: under load the
 * intake's commits say all there is to say. A probe that hangs stays
 * "started", which is what makes the state -ETIMEDOUT.
 */
static void *
probe_main(void *arg)
{
	struct wh_health *h = arg;
	struct timespec until;

	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		if ((clock_mono_s() - h->last_done) * 1000 >= h->probe_ms) {
			pthread_mutex_unlock(&h->lock);
			wh_health_begin(h, WH_HEALTH_PROBE);
			wh_health_end(h, WH_HEALTH_PROBE,
			    store_check_writable(h->store));
			pthread_mutex_lock(&h->lock);
		}
		until = after_ms(h->probe_ms / 4 + 1);
		while (!h->stop && pthread_cond_timedwait(&h->wake, &h->lock,
		    &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int
wh_health_new(struct store *s, int probe_ms, int deadline_ms,
    struct wh_health **out)
{
	struct wh_health *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;
	int error;

	if (!h)
		return -ENOMEM;
	h->store = s;
	h->probe_ms = probe_ms;
	h->deadline_ms = deadline_ms > 0 ? deadline_ms : WH_HEALTH_DEADLINE_MS;
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (s && probe_ms > 0) {
		if ((error = pthread_create(&h->probe, NULL, probe_main, h)) != 0) {
			wh_health_free(h);
			return -error;
		}
		h->probing = 1;
	}
	*out = h;
	return 0;
}

void
wh_health_free(struct wh_health *h)
{
	if (!h)
		return;
	if (h->probing) {
		pthread_mutex_lock(&h->lock);
		h->stop = 1;
		pthread_cond_broadcast(&h->wake);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->probe, NULL);
	}
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
