/*
 * store_coord: what the coordinator claims besides jobs (PR-comment
 * commands, closed-PR cleanups), the modules it has delivered kernels for
 * (the re-optimization schedule's list), and its small named clocks.
 * Commands and cleanups are leased like jobs, so a daemon killed while
 * answering one answers it after the restart, once.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CMD_COLS "id, provider, repo, pr, command, args, actor, author_association," \
	" coalesce(comment_id, 0), state, attempts, result, created"
#define CC(type, field) { STORE_COL_##type, offsetof(struct store_command, field) }
static const struct store_col cmd_cols[] = {
	CC(I64, id), CC(STR, provider), CC(STR, repo), CC(I64, pr), CC(STR, command),
	CC(STR, args), CC(STR, actor), CC(STR, author_association),
	CC(I64, comment_id), CC(STR, state), CC(INT, attempts), CC(STR, result),
	CC(I64, created),
};
#define N_CMD_COLS (sizeof(cmd_cols) / sizeof(cmd_cols[0]))

#define CLEAN_COLS "id, provider, repo, pr, head_ref, merged, state, attempts," \
	" result, created, kind"
#define KC(type, field) { STORE_COL_##type, offsetof(struct store_cleanup, field) }
static const struct store_col clean_cols[] = {
	KC(I64, id), KC(STR, provider), KC(STR, repo), KC(I64, pr),
	KC(STR, head_ref), KC(INT, merged), KC(STR, state), KC(INT, attempts),
	KC(STR, result), KC(I64, created), KC(STR, kind),
};
#define N_CLEAN_COLS (sizeof(clean_cols) / sizeof(clean_cols[0]))

#define DLV_COLS "repo, slug, arch, provider, clone_url, base_branch, module, class," \
	" last_sha, coalesce(pr, 0), out_dir, updated"
#define DC(type, field) { STORE_COL_##type, offsetof(struct store_delivered, field) }
static const struct store_col dlv_cols[] = {
	DC(STR, repo), DC(STR, slug), DC(STR, arch), DC(STR, provider),
	DC(STR, clone_url), DC(STR, base_branch), DC(STR, module),
	DC(STR, class_name), DC(STR, last_sha), DC(I64, pr), DC(STR, out_dir),
	DC(I64, updated),
};
#define N_DLV_COLS (sizeof(dlv_cols) / sizeof(dlv_cols[0]))

static const char SQL_CMD_CLAIM[] =
    "UPDATE commands SET state = 'running', lease_owner = ?1,"
    " lease_expires = ?2 + ?3, attempts = attempts + 1"
    " WHERE id = (SELECT id FROM commands WHERE state = 'pending' ORDER BY id LIMIT 1)"
    " RETURNING " CMD_COLS;
static const char SQL_CMD_HEARTBEAT[] =
    "UPDATE commands SET lease_expires = ?3 + ?4"
    " WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_CMD_FINISH[] =
    "UPDATE commands SET state = ?3, result = ?4, lease_owner = NULL,"
    " lease_expires = NULL WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_CMD_FAIL_EXPIRED[] =
    "UPDATE commands SET state = 'failed', lease_owner = NULL, lease_expires = NULL,"
    " result = 'gave up after ' || attempts || ' attempts'"
    " WHERE state = 'running' AND lease_expires <= ?1 AND ?2 > 0 AND attempts >= ?2";
static const char SQL_CMD_REQUEUE_EXPIRED[] =
    "UPDATE commands SET state = 'pending', lease_owner = NULL, lease_expires = NULL"
    " WHERE state = 'running' AND lease_expires <= ?1";
static const char SQL_CMD_LIST[] = "SELECT " CMD_COLS " FROM commands ORDER BY id";
static const char SQL_CLEAN_CLAIM[] =
    "UPDATE cleanups SET state = 'running', lease_owner = ?1,"
    " lease_expires = ?2 + ?3, attempts = attempts + 1"
    " WHERE id = (SELECT id FROM cleanups WHERE state = 'pending'"
    "   OR (state = 'running' AND lease_expires <= ?2) ORDER BY id LIMIT 1)"
    " RETURNING " CLEAN_COLS;
static const char SQL_CLEAN_FINISH[] =
    "UPDATE cleanups SET state = ?3, result = ?4, lease_owner = NULL,"
    " lease_expires = NULL WHERE id = ?1 AND lease_owner = ?2 AND state = 'running'";
static const char SQL_CLEAN_ADD[] =
    "INSERT INTO cleanups (provider, repo, pr, kind, created)"
    " SELECT '', '', 0, ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM cleanups"
    " WHERE kind = ?1 AND state IN ('pending', 'running'))";
static const char SQL_DLV_PUT[] =
    "INSERT INTO delivered (repo, slug, arch, provider, clone_url, base_branch,"
    " module, class, last_sha, pr, out_dir, updated)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, nullif(?10, 0), ?11, ?12)"
    " ON CONFLICT (repo, slug, arch) DO UPDATE SET provider = excluded.provider,"
    " clone_url = excluded.clone_url, base_branch = excluded.base_branch,"
    " module = excluded.module, class = excluded.class,"
    " last_sha = excluded.last_sha, pr = excluded.pr, out_dir = excluded.out_dir,"
    " updated = excluded.updated";
static const char SQL_DLV_LIST[] =
    "SELECT " DLV_COLS " FROM delivered WHERE (?1 IS NULL OR repo = ?1)"
    " AND (?2 IS NULL OR slug = ?2) ORDER BY repo, slug, arch";
static const char SQL_DLV_BY_PR[] =
    "SELECT " DLV_COLS " FROM delivered WHERE repo = ?1 AND pr = ?2"
    " ORDER BY slug, arch";
static const char SQL_DLV_CLEAR_PR[] =
    "UPDATE delivered SET pr = NULL, updated = ?3 WHERE repo = ?1 AND pr = ?2";
static const char SQL_DLV_HAS_ARCH[] =
    "SELECT count(*) FROM delivered WHERE arch = ?1";
static const char SQL_CLOCK_GET[] = "SELECT value FROM coord_clock WHERE name = ?1";
static const char SQL_CLOCK_SET[] =
    "INSERT INTO coord_clock (name, value) VALUES (?1, ?2)"
    " ON CONFLICT (name) DO UPDATE SET value = excluded.value";

void
store_command_free(struct store_command *c)
{
	store_row_free(cmd_cols, N_CMD_COLS, c, sizeof(*c));
}

void
store_commands_free(struct store_command *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_command_free(&v[i]);
	free(v);
}

void
store_cleanup_free(struct store_cleanup *c)
{
	store_row_free(clean_cols, N_CLEAN_COLS, c, sizeof(*c));
}

void
store_delivered_free(struct store_delivered *d)
{
	store_row_free(dlv_cols, N_DLV_COLS, d, sizeof(*d));
}

void
store_delivered_list_free(struct store_delivered *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_delivered_free(&v[i]);
	free(v);
}

/*
 * A claim: the RETURNING row of st into out (size bytes), -ENOENT when
 * nothing was pending. Lock held.
 */
static int
claim_one(struct store *s, sqlite3_stmt *st, const struct store_col *cols,
    size_t ncols, size_t size, void *out)
{
	char *v = NULL;
	size_t n = 0;
	int error;

	if ((error = store_rows(s, st, cols, ncols, size, (void **)&v, &n)) < 0)
		return error;
	if (n == 0) {
		free(v);
		return -ENOENT;
	}
	memcpy(out, v, size);
	for (size_t i = 1; i < n; i++)
		store_row_free(cols, ncols, v + i * size, size);
	free(v);
	return 0;
}

static int
claim(struct store *s, const char *sql, const char *owner, int lease_s,
    const struct store_col *cols, size_t ncols, size_t size, void *out)
{
	sqlite3_stmt *st;
	int error;

	if (!owner || !*owner || lease_s <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, sql, &st)) == 0) {
		store_bind_text(st, 1, owner);
		sqlite3_bind_int64(st, 2, store_now(s));
		sqlite3_bind_int(st, 3, lease_s);
		error = claim_one(s, st, cols, ncols, size, out);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_command_claim(struct store *s, const char *owner, int lease_s,
    struct store_command *out)
{
	return claim(s, SQL_CMD_CLAIM, owner, lease_s, cmd_cols, N_CMD_COLS,
	    sizeof(*out), out);
}

int
store_cleanup_claim(struct store *s, const char *owner, int lease_s,
    struct store_cleanup *out)
{
	return claim(s, SQL_CLEAN_CLAIM, owner, lease_s, clean_cols,
	    N_CLEAN_COLS, sizeof(*out), out);
}

int
store_cleanup_add(struct store *s, const char *kind, int *added)
{
	sqlite3_stmt *st;
	int n = 0, error;

	if (!kind || !strcmp(kind, "pr"))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_CLEAN_ADD, &st)) == 0) {
		store_bind_text(st, 1, kind);
		sqlite3_bind_int64(st, 2, store_now(s));
		error = store_step_changes(s, st, &n);
	}
	pthread_mutex_unlock(&s->lock);
	if (error == 0 && added)
		*added = n;
	return error;
}

static int
finish(struct store *s, const char *sql, int64_t id, const char *owner,
    const char *state, const char *result)
{
	sqlite3_stmt *st;
	int n = 0, error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, sql, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		store_bind_text(st, 3, state);
		store_bind_text(st, 4, result);
		if ((error = store_step_changes(s, st, &n)) == 0 && n != 1)
			error = -ESTALE;
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_command_heartbeat(struct store *s, int64_t id, const char *owner,
    int lease_s)
{
	sqlite3_stmt *st;
	int n = 0, error;

	if (!owner || lease_s <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_CMD_HEARTBEAT, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		store_bind_text(st, 2, owner);
		sqlite3_bind_int64(st, 3, store_now(s));
		sqlite3_bind_int(st, 4, lease_s);
		if ((error = store_step_changes(s, st, &n)) == 0 && n != 1)
			error = -ESTALE;
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_command_finish(struct store *s, int64_t id, const char *owner,
    const char *state, const char *result)
{
	if (!owner || !state || (strcmp(state, "done") && strcmp(state, "refused") &&
	    strcmp(state, "failed")))
		return -EINVAL;
	return finish(s, SQL_CMD_FINISH, id, owner, state, result);
}

int
store_cleanup_finish(struct store *s, int64_t id, const char *owner,
    const char *state, const char *result)
{
	if (!owner || !state || (strcmp(state, "done") && strcmp(state, "failed")))
		return -EINVAL;
	return finish(s, SQL_CLEAN_FINISH, id, owner, state, result);
}

int
store_commands_requeue_expired(struct store *s, int max_attempts)
{
	return store_requeue_expired(s, SQL_CMD_FAIL_EXPIRED, SQL_CMD_REQUEUE_EXPIRED,
	    max_attempts, NULL, NULL);
}

int
store_commands_list(struct store *s, struct store_command **out, size_t *n)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_CMD_LIST, &st)) == 0)
		error = store_rows(s, st, cmd_cols, N_CMD_COLS, sizeof(**out),
		    (void **)out, n);
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_delivered_put(struct store *s, const struct store_delivered *d)
{
	sqlite3_stmt *st;
	int error;

	if (!d->repo || !d->slug || !d->arch || !d->provider || !d->clone_url ||
	    !d->base_branch || !d->module || !d->class_name || !d->last_sha ||
	    !d->out_dir)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_DLV_PUT, &st)) == 0) {
		store_bind_text(st, 1, d->repo);
		store_bind_text(st, 2, d->slug);
		store_bind_text(st, 3, d->arch);
		store_bind_text(st, 4, d->provider);
		store_bind_text(st, 5, d->clone_url);
		store_bind_text(st, 6, d->base_branch);
		store_bind_text(st, 7, d->module);
		store_bind_text(st, 8, d->class_name);
		store_bind_text(st, 9, d->last_sha);
		sqlite3_bind_int64(st, 10, d->pr);
		store_bind_text(st, 11, d->out_dir);
		sqlite3_bind_int64(st, 12, store_now(s));
		error = store_step_changes(s, st, NULL);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_delivered_list(struct store *s, const char *repo, const char *slug,
    struct store_delivered **out, size_t *n)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_DLV_LIST, &st)) == 0) {
		store_bind_text(st, 1, repo);
		store_bind_text(st, 2, slug);
		error = store_rows(s, st, dlv_cols, N_DLV_COLS, sizeof(**out),
		    (void **)out, n);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_delivered_by_pr(struct store *s, const char *repo, int64_t pr,
    struct store_delivered **out, size_t *n)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_DLV_BY_PR, &st)) == 0) {
		store_bind_text(st, 1, repo);
		sqlite3_bind_int64(st, 2, pr);
		error = store_rows(s, st, dlv_cols, N_DLV_COLS, sizeof(**out),
		    (void **)out, n);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_delivered_clear_pr(struct store *s, const char *repo, int64_t pr)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_DLV_CLEAR_PR, &st)) == 0) {
		store_bind_text(st, 1, repo);
		sqlite3_bind_int64(st, 2, pr);
		sqlite3_bind_int64(st, 3, store_now(s));
		error = store_step_changes(s, st, NULL);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

/* One integer from a one-column query with one text parameter. Lock held. */
static int
one_int(struct store *s, const char *sql, const char *arg, int64_t *out)
{
	sqlite3_stmt *st;
	int rc, error;

	if ((error = store_stmt(s, sql, &st)) < 0)
		return error;
	store_bind_text(st, 1, arg);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		error = -ENOENT;
	else
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
	return error;
}

int
store_delivered_has_arch(struct store *s, const char *arch)
{
	int64_t n = 0;
	int error;

	pthread_mutex_lock(&s->lock);
	error = one_int(s, SQL_DLV_HAS_ARCH, arch, &n);
	pthread_mutex_unlock(&s->lock);
	return error < 0 ? error : n > 0;
}

int
store_clock_get(struct store *s, const char *name, int64_t *value)
{
	int error;

	pthread_mutex_lock(&s->lock);
	error = one_int(s, SQL_CLOCK_GET, name, value);
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_clock_set(struct store *s, const char *name, int64_t value)
{
	sqlite3_stmt *st;
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_CLOCK_SET, &st)) == 0) {
		store_bind_text(st, 1, name);
		sqlite3_bind_int64(st, 2, value);
		error = store_step_changes(s, st, NULL);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}
