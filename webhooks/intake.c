#include "webhooks/intake.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"

/* A commit this slow eats most of a forge's patience: say so. */
#define WH_INTAKE_SLOW_MS 100

struct pending {
	struct store_delivery *d;
	struct pending *next;
	int done;
};

struct wh_intake {
	struct store *store;
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct pending *head, **tail;	/* waiting for the next commit */
	int committing;
	unsigned long commits;
};

int
wh_intake_new(struct store *s, struct wh_intake **out)
{
	struct wh_intake *in = calloc(1, sizeof(*in));

	if (!in)
		return -ENOMEM;
	in->store = s;
	in->tail = &in->head;
	pthread_mutex_init(&in->lock, NULL);
	pthread_cond_init(&in->done, NULL);
	*out = in;
	return 0;
}

void
wh_intake_free(struct wh_intake *in)
{
	if (!in)
		return;
	pthread_cond_destroy(&in->done);
	pthread_mutex_destroy(&in->lock);
	free(in);
}

/* Take up to STORE_MAX_BATCH queued deliveries, commit them, mark them done. Lock held on entry and exit. */
static void
commit_batch(struct wh_intake *in)
{
	struct store_delivery batch[STORE_MAX_BATCH];
	struct pending *taken[STORE_MAX_BATCH];
	struct timespec t0, t1;
	size_t n = 0;
	double ms;

	while (in->head && n < STORE_MAX_BATCH) {
		struct pending *p = in->head;
		in->head = p->next;
		taken[n] = p;
		batch[n++] = *p->d;
	}
	if (!in->head)
		in->tail = &in->head;
	in->committing = 1;
	pthread_mutex_unlock(&in->lock);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	store_intake(in->store, batch, n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (ms >= WH_INTAKE_SLOW_MS)
		log_warn("slow commit", "deliveries=%zu ms=%.1f", n, ms);

	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < n; i++) {
		*taken[i]->d = batch[i];
		taken[i]->done = 1;
	}
	in->commits++;
	in->committing = 0;
	pthread_cond_broadcast(&in->done);
}

int
wh_intake_submit(struct wh_intake *in, struct store_delivery *d)
{
	struct pending me = { d, NULL, 0 };

	pthread_mutex_lock(&in->lock);
	/*
	 * `me` lives on this stack and is queued by address: safe because this
	 * function returns only after a committer has taken it off the queue.
	 */
	*in->tail = &me;
	// cppcheck-suppress autoVariables
	in->tail = &me.next;
	while (!me.done) {
		if (!in->committing)
			commit_batch(in);
		else
			pthread_cond_wait(&in->done, &in->lock);
	}
	pthread_mutex_unlock(&in->lock);
	return d->error;
}

unsigned long
wh_intake_commits(struct wh_intake *in)
{
	unsigned long n;

	pthread_mutex_lock(&in->lock);
	n = in->commits;
	pthread_mutex_unlock(&in->lock);
	return n;
}
