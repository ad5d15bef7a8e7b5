/*
 * store_jobs: the job queue. A job is claimed with a lease; the owner
 * renews it with heartbeats and ends it with finish; a lease that runs
 * out puts the job back in the queue (store_jobs_requeue_expired), so a
 * runner or daemon that dies loses no work.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOB_COLS "id, provider, repo, clone_url, before, sha, trigger, state," \
	" created, updated, lease_owner, coalesce(lease_expires, 0), attempts, payload," \
	" step, error, retries"

static const char SQL_JOB_GET[] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?1";
static const char SQL_JOBS_ALL[] = "SELECT " JOB_COLS " FROM jobs ORDER BY id DESC";
static const char SQL_JOBS_LIMIT[] =
    "SELECT " JOB_COLS " FROM jobs ORDER BY id DESC LIMIT ?1";
/* One statement, so no second owner can slip between the select and the update. */
static const char SQL_JOB_CLAIM[] =
    "UPDATE jobs SET state = 'running', lease_owner = ?1, lease_expires = ?2 + ?3,"
    " attempts = attempts + 1, updated = ?2"
    " WHERE id = (SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1)"
    " RETURNING " JOB_COLS;
static const char SQL_JOB_HEARTBEAT[] =
    "UPDATE jobs SET lease_expires = ?3 + ?4, updated = ?3"
    " WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_JOB_FINISH[] =
    "UPDATE jobs SET state = ?3, lease_owner = NULL, lease_expires = NULL,"
    " updated = ?4 WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_JOB_RELEASE[] =
    "UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires = NULL,"
    " updated = ?3 WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_JOBS_FAIL_EXPIRED[] =
    "UPDATE jobs SET state = 'failed', lease_owner = NULL, lease_expires = NULL,"
    " updated = ?1 WHERE state = 'running' AND lease_expires <= ?1"
    " AND ?2 > 0 AND attempts >= ?2";
static const char SQL_JOBS_REQUEUE_EXPIRED[] =
    "UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires = NULL,"
    " updated = ?1 WHERE state = 'running' AND lease_expires <= ?1";
static const char SQL_JOBS_BY_STATE[] =
    "SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state";

static char *
col_str(sqlite3_stmt *st, int i, int *oom)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	char *p;

	if (!t)
		return NULL;
	if (!(p = strdup((const char *)t)))
		*oom = 1;
	return p;
}

void
store_job_free(struct store_job *j)
{
	if (!j)
		return;
	free(j->provider);
	free(j->repo);
	free(j->clone_url);
	free(j->before);
	free(j->sha);
	free(j->trigger);
	free(j->state);
	free(j->lease_owner);
	free(j->payload);
	free(j->step);
	free(j->error);
	memset(j, 0, sizeof(*j));
}

void
store_jobs_free(struct store_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_job_free(&jobs[i]);
	free(jobs);
}

static int
job_from_row(sqlite3_stmt *st, struct store_job *j)
{
	int oom = 0;

	memset(j, 0, sizeof(*j));
	j->id = sqlite3_column_int64(st, 0);
	j->provider = col_str(st, 1, &oom);
	j->repo = col_str(st, 2, &oom);
	j->clone_url = col_str(st, 3, &oom);
	j->before = col_str(st, 4, &oom);
	j->sha = col_str(st, 5, &oom);
	j->trigger = col_str(st, 6, &oom);
	j->state = col_str(st, 7, &oom);
	j->created = sqlite3_column_int64(st, 8);
	j->updated = sqlite3_column_int64(st, 9);
	j->lease_owner = col_str(st, 10, &oom);
	j->lease_expires = sqlite3_column_int64(st, 11);
	j->attempts = sqlite3_column_int(st, 12);
	j->payload = col_str(st, 13, &oom);
	j->step = col_str(st, 14, &oom);
	j->error = col_str(st, 15, &oom);
	j->retries = sqlite3_column_int(st, 16);
	if (oom) {
		store_job_free(j);
		return -ENOMEM;
	}
	return 0;
}

/* Step a statement expected to give at most one job row. Caller holds the lock. */
static int
one_job(struct store *s, sqlite3_stmt *st, struct store_job *out)
{
	struct store_job j;
	int rc, error;

	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		error = -ENOENT;
	} else if (rc != SQLITE_ROW) {
		error = store_sqlerr(s, rc);
	} else if ((error = job_from_row(st, &j)) == 0) {
		/* RETURNING rows are only final once the statement has run to its end. */
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		if (rc != SQLITE_DONE) {
			error = store_sqlerr(s, rc);
			store_job_free(&j);
		} else {
			*out = j;
		}
	}
	sqlite3_reset(st);
	return error;
}

int
store_job_get(struct store *s, int64_t id, struct store_job *out)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_GET, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		error = one_job(s, st, out);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_jobs_list(struct store *s, size_t limit, struct store_job **out,
    size_t *n)
{
	struct store_job *jobs = NULL, *p;
	size_t count = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	int rc, error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, limit ? SQL_JOBS_LIMIT : SQL_JOBS_ALL, &st)) < 0)
		goto out;
	if (limit)
		sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			cap = cap ? cap * 2 : 16;
			if (!(p = realloc(jobs, cap * sizeof(*p)))) {
				error = -ENOMEM;
				goto out;
			}
			jobs = p;
		}
		if ((error = job_from_row(st, &jobs[count])) < 0)
			goto out;
		count++;
	}
	if (rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
out:
	if (error == 0) {
		*out = jobs;
		*n = count;
	} else {
		store_jobs_free(jobs, count);
	}
	if (st)
		sqlite3_reset(st);
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_job_claim(struct store *s, const char *owner, int lease_s,
    struct store_job *out)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || !*owner || lease_s <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_CLAIM, &st)) == 0) {
		sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, store_now(s));
		sqlite3_bind_int(st, 3, lease_s);
		error = one_job(s, st, out);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_job_heartbeat(struct store *s, int64_t id, const char *owner,
    int lease_s)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || lease_s <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_HEARTBEAT, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, store_now(s));
		sqlite3_bind_int(st, 4, lease_s);
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_job_finish(struct store *s, int64_t id, const char *owner,
    const char *state)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || !state || (strcmp(state, STORE_JOB_DONE) &&
	    strcmp(state, STORE_JOB_FAILED)))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_FINISH, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, state, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, store_now(s));
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_job_release(struct store *s, int64_t id, const char *owner)
{
	sqlite3_stmt *st;
	int error;

	if (!owner)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_RELEASE, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, store_now(s));
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_jobs_requeue_expired(struct store *s, int max_attempts, int *requeued,
    int *failed)
{
	return store_requeue_expired(s, SQL_JOBS_FAIL_EXPIRED, SQL_JOBS_REQUEUE_EXPIRED,
	    max_attempts, requeued, failed);
}

int
store_jobs_count_by_state(struct store *s,
    void (*fn)(const char *state, int64_t n, void *arg), void *arg)
{
	struct timespec until;
	sqlite3_stmt *st;
	int rc, error;

	/* A writer stuck on a hung disk holds the lock: do not join it. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STORE_COUNT_WAIT_MS / 1000;
	until.tv_nsec += (long)(STORE_COUNT_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if ((error = pthread_mutex_timedlock(&s->lock, &until)) != 0)
		return -error;
	if ((error = store_stmt(s, SQL_JOBS_BY_STATE, &st)) < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(st, 0),
		    sqlite3_column_int64(st, 1), arg);
	if (rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}

static const char SQL_JOB_ADD[] =
    "INSERT INTO jobs (provider, repo, clone_url, before, sha, trigger, created,"
    " updated, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)";
static const char SQL_JOB_STEP[] =
    "UPDATE jobs SET step = ?3, error = ?4, updated = ?5"
    " WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_JOB_RETRY[] =
    "UPDATE jobs SET retries = CASE WHEN ?3 IS NULL THEN 0 ELSE retries + 1 END,"
    " error = ?3, updated = ?4"
    " WHERE id = ?1 AND lease_owner = ?2 AND state = 'running' RETURNING retries";

int
store_job_add(struct store *s, const struct store_job_new *j, int64_t *id)
{
	sqlite3_stmt *st;
	int error;

	if (!j->provider || !j->repo || !j->clone_url || !j->sha || !j->trigger ||
	    (j->payload && strlen(j->payload) > STORE_MAX_PAYLOAD))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_ADD, &st)) == 0) {
		store_bind_text(st, 1, j->provider);
		store_bind_text(st, 2, j->repo);
		store_bind_text(st, 3, j->clone_url);
		store_bind_text(st, 4, j->before);
		store_bind_text(st, 5, j->sha);
		store_bind_text(st, 6, j->trigger);
		sqlite3_bind_int64(st, 7, store_now(s));
		store_bind_text(st, 8, j->payload);
		if ((error = store_step_changes(s, st, NULL)) == 0 && id)
			*id = sqlite3_last_insert_rowid(s->db);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_job_set_step(struct store *s, int64_t id, const char *owner,
    const char *step, const char *err)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || !step)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_STEP, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		store_bind_text(st, 3, step);
		store_bind_text(st, 4, err);
		sqlite3_bind_int64(st, 5, store_now(s));
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_job_retry(struct store *s, int64_t id, const char *owner,
    const char *err, int *retries)
{
	sqlite3_stmt *st;
	int rc, error;

	if (!owner)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_JOB_RETRY, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		store_bind_text(st, 3, err);
		sqlite3_bind_int64(st, 4, store_now(s));
		if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (retries)
				*retries = sqlite3_column_int(st, 0);
			rc = sqlite3_step(st);
		} else if (rc == SQLITE_DONE) {
			error = -ESTALE;
		}
		if (error == 0 && rc != SQLITE_DONE)
			error = store_sqlerr(s, rc);
		sqlite3_reset(st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}
