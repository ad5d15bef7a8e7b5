/*
 * intake: group commit in front of store_intake(). Request threads call
 * wh_intake_submit(); one of them (the first to find no commit running)
 * commits everything queued so far in one transaction while the others
 * wait, then wakes them. Under load many deliveries share one fsync; with
 * one request at a time it is one transaction per delivery, as before.
 */
#ifndef KB_WEBHOOKS_INTAKE_H
#define KB_WEBHOOKS_INTAKE_H

#include "bot/store.h"

struct wh_intake;

/* The store is borrowed and must outlive the intake. 0 or -ENOMEM. */
int wh_intake_new(struct store *s, struct wh_intake **out);
void wh_intake_free(struct wh_intake *in);

/*
 * Record one delivery durably; returns when its transaction has committed
 * (or failed). d's results are filled as by store_intake(); the return
 * value is d->error.
 */
int wh_intake_submit(struct wh_intake *in, struct store_delivery *d);

/* Transactions committed so far (to see batching in tests and the benchmark). */
unsigned long wh_intake_commits(struct wh_intake *in);

#endif
