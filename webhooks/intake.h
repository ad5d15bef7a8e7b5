/*
 * intake: group commit in front of store_intake(), with a deadline.
 * Request threads call wh_intake_submit(), which queues a copy of the
 * delivery for the intake's committer thread and waits. The committer
 * commits everything queued so far in one transaction, then wakes the
 * waiters: under load many deliveries share one fsync; with one request
 * at a time it is one transaction per delivery.
 *
 * A waiter gives up at the deadline (the disk hangs): its delivery is
 * taken off the queue if no commit has taken it yet; otherwise the
 * commit in progress may still record it later, and the forge's
 * redelivery is then a duplicate. Either way the answer is an error,
 * never an acknowledgement of what was not committed. Each commit's
 * start and outcome go to the health module (health.h).
 */
#ifndef KB_WEBHOOKS_INTAKE_H
#define KB_WEBHOOKS_INTAKE_H

#include "store/store.h"
#include "webhooks/health.h"

struct wh_intake;

/*
 * Start the committer. The store and health (NULL: none) are borrowed and
 * must outlive the intake. deadline_ms bounds each wh_intake_submit().
 * 0, -ENOMEM, -errno of pthread_create.
 */
int wh_intake_new(struct store *s, struct wh_health *health, int deadline_ms,
    struct wh_intake **out);

/* Commit what is queued, stop the committer and free. NULL-safe. */
void wh_intake_free(struct wh_intake *in);

/*
 * Record one delivery durably; returns when its transaction has committed
 * (or failed), or at the deadline with -ETIMEDOUT. d's results are filled
 * as by store_intake(); the return value is d->error. d is copied: its
 * strings need live only for the call.
 */
int wh_intake_submit(struct wh_intake *in, struct store_delivery *d);

/* Transactions committed so far (to see batching in tests and the benchmark). */
unsigned long wh_intake_commits(struct wh_intake *in);

#endif
