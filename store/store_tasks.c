/*
 * store_tasks: the tasks of jobs (one module each) and the runners that
 * take them. A task is leased like a job: a runner that dies loses its
 * lease, the task goes back to the queue (store_tasks_requeue_expired),
 * and after max_attempts it fails instead of looping forever. A cancelled
 * task (`/kernelbot stop`) loses its lease at once, so the runner's next
 * heartbeat gets -ESTALE and it kills the work.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define TASK_COLS "id, job, repo, sha, module, class, slug, backend, arch, kind," \
	" state, lease_owner, coalesce(lease_expires, 0), attempts, runner," \
	" ran_backend, ran_arch, out_dir, summary, error, published, created, updated"

#define TC(type, field) { STORE_COL_##type, offsetof(struct store_task, field) }
static const struct store_col task_cols[] = {
	TC(I64, id), TC(I64, job), TC(STR, repo), TC(STR, sha), TC(STR, module),
	TC(STR, class_name), TC(STR, slug), TC(STR, backend), TC(STR, arch),
	TC(STR, kind), TC(STR, state), TC(STR, lease_owner), TC(I64, lease_expires),
	TC(INT, attempts), TC(STR, runner), TC(STR, ran_backend), TC(STR, ran_arch),
	TC(STR, out_dir), TC(STR, summary), TC(STR, error), TC(INT, published),
	TC(I64, created), TC(I64, updated),
};
#define N_TASK_COLS (sizeof(task_cols) / sizeof(task_cols[0]))

#define RC(type, field) { STORE_COL_##type, offsetof(struct store_runner, field) }
static const struct store_col runner_cols[] = {
	RC(STR, name), RC(STR, host), RC(I64, pid), RC(INT, gpu), RC(STR, backend),
	RC(STR, arch), RC(STR, device), RC(I64, registered), RC(I64, heartbeat),
	RC(I64, task),
};
#define N_RUNNER_COLS (sizeof(runner_cols) / sizeof(runner_cols[0]))

static const char SQL_TASK_NEW[] =
    "INSERT INTO tasks (job, repo, sha, module, class, slug, backend, arch, kind,"
    " created, updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)"
    " ON CONFLICT DO NOTHING";
static const char SQL_TASKS_STEP[] =
    "UPDATE jobs SET step = ?3, updated = ?4"
    " WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_TASK_GET[] = "SELECT " TASK_COLS " FROM tasks WHERE id = ?1";
static const char SQL_TASKS_OF_JOB[] =
    "SELECT " TASK_COLS " FROM tasks WHERE job = ?1 ORDER BY id";
/* One statement: two runners never get the same task. */
static const char SQL_TASK_CLAIM[] =
    "UPDATE tasks SET state = 'running', lease_owner = ?1, lease_expires = ?2 + ?3,"
    " attempts = attempts + 1, runner = ?1, updated = ?2"
    " WHERE id = (SELECT id FROM tasks WHERE state = 'queued'"
    "   AND (backend = 'any' OR backend = ?4) AND (arch = '' OR arch = ?5)"
    "   ORDER BY id LIMIT 1)"
    " RETURNING " TASK_COLS;
static const char SQL_TASK_HEARTBEAT[] =
    "UPDATE tasks SET lease_expires = ?3 + ?4, updated = ?3"
    " WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_TASK_FINISH[] =
    "UPDATE tasks SET state = ?3, ran_backend = ?4, ran_arch = ?5, out_dir = ?6,"
    " summary = ?7, error = ?8, lease_owner = NULL, lease_expires = NULL,"
    " updated = ?9 WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_TASK_RELEASE[] =
    "UPDATE tasks SET state = 'queued', lease_owner = NULL, lease_expires = NULL,"
    " updated = ?3 WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_TASKS_FAIL_EXPIRED[] =
    "UPDATE tasks SET state = 'failed', lease_owner = NULL, lease_expires = NULL,"
    " error = 'its runner stopped heartbeating ' || attempts || ' times',"
    " updated = ?1 WHERE state = 'running' AND lease_expires <= ?1"
    " AND ?2 > 0 AND attempts >= ?2";
static const char SQL_TASKS_REQUEUE_EXPIRED[] =
    "UPDATE tasks SET state = 'queued', lease_owner = NULL, lease_expires = NULL,"
    " updated = ?1 WHERE state = 'running' AND lease_expires <= ?1";
static const char SQL_TASKS_CANCEL[] =
    "UPDATE tasks SET state = 'cancelled', lease_owner = NULL, lease_expires = NULL,"
    " error = 'stopped', updated = ?3"
    " WHERE repo = ?1 AND slug = ?2 AND state IN ('queued', 'running')";
static const char SQL_TASK_PUBLISHED[] =
    "UPDATE tasks SET published = 1, updated = ?2 WHERE id = ?1";
static const char SQL_RUNNER_REGISTER[] =
    "INSERT INTO runners (name, host, pid, gpu, backend, arch, device, registered,"
    " heartbeat) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)"
    " ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
    " gpu = excluded.gpu, backend = excluded.backend, arch = excluded.arch,"
    " device = excluded.device, registered = excluded.registered,"
    " heartbeat = excluded.heartbeat, task = NULL";
static const char SQL_RUNNER_HEARTBEAT[] =
    "UPDATE runners SET heartbeat = ?2, task = nullif(?3, 0) WHERE name = ?1";
static const char SQL_RUNNERS_LIST[] =
    "SELECT name, host, pid, gpu, backend, arch, device, registered, heartbeat,"
    " coalesce(task, 0) FROM runners ORDER BY name";

void
store_task_free(struct store_task *t)
{
	store_row_free(task_cols, N_TASK_COLS, t, sizeof(*t));
}

void
store_tasks_free(struct store_task *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_task_free(&v[i]);
	free(v);
}

void
store_runner_free(struct store_runner *r)
{
	store_row_free(runner_cols, N_RUNNER_COLS, r, sizeof(*r));
}

void
store_runners_free(struct store_runner *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_runner_free(&v[i]);
	free(v);
}

/* At most one task row from st into out: 0, -ENOENT. Lock held. */
static int
one_task(struct store *s, sqlite3_stmt *st, struct store_task *out)
{
	struct store_task *v = NULL;
	size_t n = 0;
	int error;

	if ((error = store_rows(s, st, task_cols, N_TASK_COLS, sizeof(*v),
	    (void **)&v, &n)) < 0)
		return error;
	if (n == 0)
		return -ENOENT;
	*out = v[0];
	for (size_t i = 1; i < n; i++)
		store_task_free(&v[i]);
	free(v);
	return 0;
}

int
store_tasks_create(struct store *s, int64_t job, const char *owner,
    const char *repo, const char *sha, const struct store_task_spec *v,
    size_t n, const char *step)
{
	sqlite3_stmt *st;
	int64_t now;
	int changes = 0, error;

	if (!owner || !repo || !sha || !step)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!v[i].module || !v[i].class_name || !v[i].slug)
			return -EINVAL;
	pthread_mutex_lock(&s->lock);
	now = store_now(s);
	if ((error = store_exec(s, "BEGIN IMMEDIATE")) < 0)
		goto out;
	/* The step first: a job that is no longer ours gets no tasks. */
	if ((error = store_stmt(s, SQL_TASKS_STEP, &st)) < 0)
		goto rollback;
	sqlite3_bind_int64(st, 1, job);
	store_bind_text(st, 2, owner);
	store_bind_text(st, 3, step);
	sqlite3_bind_int64(st, 4, now);
	if ((error = store_step_changes(s, st, &changes)) < 0)
		goto rollback;
	if (changes != 1) {
		error = -ESTALE;
		goto rollback;
	}
	for (size_t i = 0; i < n; i++) {
		if ((error = store_stmt(s, SQL_TASK_NEW, &st)) < 0)
			goto rollback;
		sqlite3_bind_int64(st, 1, job);
		store_bind_text(st, 2, repo);
		store_bind_text(st, 3, sha);
		store_bind_text(st, 4, v[i].module);
		store_bind_text(st, 5, v[i].class_name);
		store_bind_text(st, 6, v[i].slug);
		store_bind_text(st, 7, v[i].backend ? v[i].backend : "any");
		store_bind_text(st, 8, v[i].arch ? v[i].arch : "");
		store_bind_text(st, 9, v[i].kind ? v[i].kind : "optimize");
		sqlite3_bind_int64(st, 10, now);
		if ((error = store_step_changes(s, st, NULL)) < 0)
			goto rollback;
	}
	if ((error = store_exec(s, "COMMIT")) == 0)
		goto out;
rollback:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_task_get(struct store *s, int64_t id, struct store_task *out)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASK_GET, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		error = one_task(s, st, out);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_tasks_of_job(struct store *s, int64_t job, struct store_task **out,
    size_t *n)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASKS_OF_JOB, &st)) == 0) {
		sqlite3_bind_int64(st, 1, job);
		error = store_rows(s, st, task_cols, N_TASK_COLS, sizeof(**out),
		    (void **)out, n);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_task_claim(struct store *s, const char *owner, const char *backend,
    const char *arch, int lease_s, struct store_task *out)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || !*owner || !backend || !arch || lease_s <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASK_CLAIM, &st)) == 0) {
		store_bind_text(st, 1, owner);
		sqlite3_bind_int64(st, 2, store_now(s));
		sqlite3_bind_int(st, 3, lease_s);
		store_bind_text(st, 4, backend);
		store_bind_text(st, 5, arch);
		error = one_task(s, st, out);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_task_heartbeat(struct store *s, int64_t id, const char *owner,
    int lease_s)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || lease_s <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASK_HEARTBEAT, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		sqlite3_bind_int64(st, 3, store_now(s));
		sqlite3_bind_int(st, 4, lease_s);
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_task_finish(struct store *s, int64_t id, const char *owner,
    const struct store_task_result *r)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || !r->state || (strcmp(r->state, STORE_TASK_DONE) &&
	    strcmp(r->state, STORE_TASK_FAILED)))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASK_FINISH, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		store_bind_text(st, 3, r->state);
		store_bind_text(st, 4, r->ran_backend);
		store_bind_text(st, 5, r->ran_arch);
		store_bind_text(st, 6, r->out_dir);
		store_bind_text(st, 7, r->summary);
		store_bind_text(st, 8, r->error);
		sqlite3_bind_int64(st, 9, store_now(s));
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_task_release(struct store *s, int64_t id, const char *owner)
{
	sqlite3_stmt *st;
	int error;

	if (!owner)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASK_RELEASE, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		sqlite3_bind_int64(st, 3, store_now(s));
		error = store_update_one(s, st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_tasks_requeue_expired(struct store *s, int max_attempts, int *requeued,
    int *failed)
{
	return store_requeue_expired(s, SQL_TASKS_FAIL_EXPIRED, SQL_TASKS_REQUEUE_EXPIRED,
	    max_attempts, requeued, failed);
}

int
store_tasks_cancel(struct store *s, const char *repo, const char *slug, int *n)
{
	sqlite3_stmt *st;
	int changes = 0, error;

	if (!repo || !slug)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASKS_CANCEL, &st)) == 0) {
		store_bind_text(st, 1, repo);
		store_bind_text(st, 2, slug);
		sqlite3_bind_int64(st, 3, store_now(s));
		if ((error = store_step_changes(s, st, &changes)) == 0 && n)
			*n = changes;
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_task_set_published(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_TASK_PUBLISHED, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, store_now(s));
		error = store_update_one(s, st);
		if (error == -ESTALE)
			error = -ENOENT;
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_runner_register(struct store *s, const struct store_runner *r)
{
	sqlite3_stmt *st;
	int error;

	if (!r->name || !*r->name || !r->host || !r->backend || !r->arch)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_RUNNER_REGISTER, &st)) == 0) {
		store_bind_text(st, 1, r->name);
		store_bind_text(st, 2, r->host);
		sqlite3_bind_int64(st, 3, r->pid);
		sqlite3_bind_int(st, 4, r->gpu);
		store_bind_text(st, 5, r->backend);
		store_bind_text(st, 6, r->arch);
		store_bind_text(st, 7, r->device ? r->device : "");
		sqlite3_bind_int64(st, 8, store_now(s));
		error = store_step_changes(s, st, NULL);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_runner_heartbeat(struct store *s, const char *name, int64_t task)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_RUNNER_HEARTBEAT, &st)) == 0) {
		store_bind_text(st, 1, name);
		sqlite3_bind_int64(st, 2, store_now(s));
		sqlite3_bind_int64(st, 3, task);
		if ((error = store_update_one(s, st)) == -ESTALE)
			error = -ENOENT;
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_runners_list(struct store *s, struct store_runner **out, size_t *n)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_RUNNERS_LIST, &st)) == 0)
		error = store_rows(s, st, runner_cols, N_RUNNER_COLS, sizeof(**out),
		    (void **)out, n);
	pthread_mutex_unlock(&s->lock);
	return error;
}
