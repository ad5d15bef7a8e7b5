#include "webhooks/intake.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

/* A commit this slow eats most of a forge's patience: say so. */
#define WH_INTAKE_SLOW_MS 100

/*
 * One queued delivery, owned by its waiter and the committer together
 * (refs): a waiter that gives up must not free what a commit in progress
 * still reads. The strings of d point into the same allocation.
 */
struct pending {
	struct store_delivery d;
	struct pending *next;
	int taken;		/* a commit has it */
	int done;		/* d's results are in */
	int refs;
};

struct wh_intake {
	struct store *store;
	struct wh_health *health;
	int deadline_ms;
	pthread_mutex_t lock;
	pthread_cond_t done;		/* a commit ended */
	pthread_cond_t work;		/* something queued, or stop */
	struct pending *head, **tail;	/* waiting for the next commit */
	pthread_t committer;
	int stop;
	unsigned long commits;
};

static const size_t string_fields[] = {
	offsetof(struct store_delivery, provider),
	offsetof(struct store_delivery, delivery_id),
	offsetof(struct store_delivery, event),
	offsetof(struct store_delivery, repo),
	offsetof(struct store_delivery, outcome),
	offsetof(struct store_delivery, clone_url),
	offsetof(struct store_delivery, before),
	offsetof(struct store_delivery, sha),
	offsetof(struct store_delivery, trigger),
	offsetof(struct store_delivery, payload),
	offsetof(struct store_delivery, ref),
	offsetof(struct store_delivery, command),
	offsetof(struct store_delivery, args),
	offsetof(struct store_delivery, actor),
	offsetof(struct store_delivery, author_association),
	offsetof(struct store_delivery, head_ref),
};
#define N_STRING_FIELDS (sizeof(string_fields) / sizeof(string_fields[0]))

static const char **
field(struct store_delivery *d, size_t i)
{
	return (const char **)(void *)((char *)d + string_fields[i]);
}

/* A deep copy of d in one allocation, or NULL. */
static struct pending *
pending_new(const struct store_delivery *d)
{
	struct store_delivery tmp = *d;
	struct pending *p;
	size_t size = sizeof(*p);
	char *at;

	for (size_t i = 0; i < N_STRING_FIELDS; i++)
		if (*field(&tmp, i))
			size += strlen(*field(&tmp, i)) + 1;
	if (!(p = calloc(1, size)))
		return NULL;
	p->d = *d;
	at = (char *)(p + 1);
	for (size_t i = 0; i < N_STRING_FIELDS; i++) {
		const char *v = *field(&tmp, i);
		if (!v)
			continue;
		size_t n = strlen(v) + 1;
		memcpy(at, v, n);
		*field(&p->d, i) = at;
		at += n;
	}
	return p;
}

/* Lock held. */
static void
pending_put(struct pending *p)
{
	if (--p->refs == 0)
		free(p);
}

/* The first disk fault of a batch that committed (a delivery's own), or 0. */
static int
batch_fault(const struct store_delivery *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].error < 0 && d[i].error != -EINVAL)
			return d[i].error;
	return 0;
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
	int error;

	while (in->head && n < STORE_MAX_BATCH) {
		struct pending *p = in->head;
		in->head = p->next;
		p->taken = 1;
		taken[n] = p;
		batch[n++] = p->d;
	}
	if (!in->head)
		in->tail = &in->head;
	pthread_mutex_unlock(&in->lock);

	wh_health_begin(in->health, WH_HEALTH_INTAKE);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	error = store_intake(in->store, batch, n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	wh_health_end(in->health, WH_HEALTH_INTAKE,
	    error < 0 ? error : batch_fault(batch, n));
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (ms >= WH_INTAKE_SLOW_MS)
		log_warn("slow commit", "deliveries=%zu ms=%.1f", n, ms);
	if (error < 0)
		log_debug("commit failed", "deliveries=%zu errno=%d", n, -error);

	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < n; i++) {
		taken[i]->d.error = batch[i].error;
		taken[i]->d.duplicate = batch[i].duplicate;
		taken[i]->d.work_id = batch[i].work_id;
		taken[i]->done = 1;
		pending_put(taken[i]);
	}
	in->commits++;
	pthread_cond_broadcast(&in->done);
}

static void *
committer_main(void *arg)
{
	struct wh_intake *in = arg;

	pthread_mutex_lock(&in->lock);
	for (;;) {
		while (!in->head && !in->stop)
			pthread_cond_wait(&in->work, &in->lock);
		if (!in->head)
			break;
		commit_batch(in);
	}
	pthread_mutex_unlock(&in->lock);
	return NULL;
}

int
wh_intake_new(struct store *s, struct wh_health *health, int deadline_ms,
    struct wh_intake **out)
{
	struct wh_intake *in = calloc(1, sizeof(*in));
	pthread_condattr_t ca;
	int error;

	if (!in)
		return -ENOMEM;
	in->store = s;
	in->health = health;
	in->deadline_ms = deadline_ms > 0 ? deadline_ms : WH_HEALTH_DEADLINE_MS;
	in->tail = &in->head;
	pthread_mutex_init(&in->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&in->done, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&in->work, NULL);
	if ((error = pthread_create(&in->committer, NULL, committer_main, in)) != 0) {
		pthread_cond_destroy(&in->work);
		pthread_cond_destroy(&in->done);
		pthread_mutex_destroy(&in->lock);
		free(in);
		return -error;
	}
	*out = in;
	return 0;
}

void
wh_intake_free(struct wh_intake *in)
{
	if (!in)
		return;
	pthread_mutex_lock(&in->lock);
	in->stop = 1;
	pthread_cond_signal(&in->work);
	pthread_mutex_unlock(&in->lock);
	pthread_join(in->committer, NULL);
	pthread_cond_destroy(&in->work);
	pthread_cond_destroy(&in->done);
	pthread_mutex_destroy(&in->lock);
	free(in);
}

/* Lock held: take p off the queue (no commit has it). */
static void
unqueue(struct wh_intake *in, struct pending *p)
{
	struct pending **pp = &in->head;

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = p->next;
	if (in->tail == &p->next)
		in->tail = pp;
}

int
wh_intake_submit(struct wh_intake *in, struct store_delivery *d)
{
	struct pending *p = pending_new(d);
	struct timespec until;

	d->duplicate = 0;
	d->work_id = 0;
	if (!p)
		return d->error = -ENOMEM;
	p->refs = 2;		/* this waiter and the queue/committer */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += in->deadline_ms / 1000;
	until.tv_nsec += (long)(in->deadline_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&in->lock);
	*in->tail = p;
	in->tail = &p->next;
	pthread_cond_signal(&in->work);
	while (!p->done)
		if (pthread_cond_timedwait(&in->done, &in->lock, &until) == ETIMEDOUT)
			break;
	if (p->done) {
		d->error = p->d.error;
		d->duplicate = p->d.duplicate;
		d->work_id = p->d.work_id;
	} else {
		d->error = -ETIMEDOUT;
		if (!p->taken) {
			unqueue(in, p);
			p->refs--;	/* the queue's: only this waiter's is left */
		}
	}
	pending_put(p);
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
