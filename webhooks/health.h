/*
 * health: whether the store takes writes, kept in memory so /healthz
 * answers without touching the disk, also while it hangs.
 *
 * The writers say when a write starts and how it ended: the intake's
 * committer for each commit, and a probe thread of this module that
 * writes the store's health row when nothing else committed in the last
 * probe interval. The state is the last write's outcome, unless a write
 * has been running past the deadline: then it is -ETIMEDOUT ("commit did
 * not finish within N s"), whatever came before. A write that commits
 * again makes it 0. Failures that say nothing of the disk (-EINVAL,
 * -ENOENT, -ESTALE) leave the state as it is.
 *
 * Changes of state are logged here, once each (warn when the store stops
 * taking writes, naming the cause; info when it takes them again).
 */
#ifndef KB_WEBHOOKS_HEALTH_H
#define KB_WEBHOOKS_HEALTH_H

#include <stddef.h>

#include "store/store.h"

#define WH_HEALTH_PROBE_MS	2000	/* a probe write when none committed for this long */
#define WH_HEALTH_DEADLINE_MS	5000	/* a write running this long is a fault */
#define WH_HEALTH_CAUSE_MAX	128	/* bytes of a cause, with its NUL */

struct wh_health;

enum wh_health_writer {
	WH_HEALTH_PROBE,		/* this module's probe thread */
	WH_HEALTH_INTAKE,		/* the intake's committer */
	WH_HEALTH_N_WRITERS,
};

/*
 * Track store s (borrowed; it must outlive h) and, with probe_ms > 0,
 * start the probe thread. 0, -ENOMEM, -errno of pthread_create.
 */
int wh_health_new(struct store *s, int probe_ms, int deadline_ms,
    struct wh_health **out);

/* Stop the probe (waiting for a write it has in progress) and free h. */
void wh_health_free(struct wh_health *h);

/* A write of w starts, and ends with error (0 or -errno). NULL-safe. */
void wh_health_begin(struct wh_health *h, enum wh_health_writer w);
void wh_health_end(struct wh_health *h, enum wh_health_writer w, int error);

/*
 * The state from memory, never blocking on the store: 0, or -errno with
 * the cause in cause (when not NULL), e.g. "ENOSPC: No space left on
 * device" or "commit did not finish within 5 s".
 */
int wh_health_get(struct wh_health *h, char *cause, size_t len);

/* The deadline, in milliseconds. */
int wh_health_deadline_ms(const struct wh_health *h);

/* The cause text of error (as wh_health_get() writes it) into cause; h may be NULL. */
void wh_health_cause(const struct wh_health *h, int error, char *cause,
    size_t len);

#endif
