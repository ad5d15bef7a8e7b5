/*
 * store: connection, pragmas, migrations, and the intake transaction.
 * Jobs are in store_jobs.c, the schema in store_schema.c.
 */
#include "store/store_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/fsx.h"
#include "common/log.h"

int64_t
store_now(struct store *s)
{
	return s->now ? s->now(s->now_arg) : (int64_t)time(NULL);
}

void
store_set_clock(struct store *s, int64_t (*now)(void *), void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->now = now;
	s->now_arg = arg;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Why a write failed, for SQLITE_IOERR: SQLite keeps the errno of the
 * failed call only until its next system call (sqlite3_system_errno() is
 * often 0 by the time COMMIT returns), so when it says nothing, one byte
 * written and synced next to the database asks the file system again.
 * -ENOSPC, -EROFS or -EIO.
 */
static int
store_io_cause(struct store *s)
{
	char path[PATH_MAX + 16];
	int e = sqlite3_system_errno(s->db), fd;

	if (e != ENOSPC && e != EDQUOT && e != EROFS && s->path &&
	    (size_t)snprintf(path, sizeof(path), "%s-probe", s->path) < sizeof(path)) {
		e = 0;
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
		    write(fd, "", 1) != 1 || fsync(fd) < 0)
			e = errno;
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
	}
	switch (e) {
	case ENOSPC:
	case EDQUOT:
		return -ENOSPC;
	case EROFS:
		return -EROFS;
	default:
		return -EIO;
	}
}

int
store_sqlerr(struct store *s, int rc)
{
	snprintf(s->errmsg, sizeof(s->errmsg), "%s", sqlite3_errmsg(s->db));
	log_debug("sqlite error", "rc=%d errno=%d err=\"%s\"", rc,
	    sqlite3_system_errno(s->db), s->errmsg);
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
	case SQLITE_PERM:
		return -EROFS;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_CONSTRAINT:
	case SQLITE_TOOBIG:
	case SQLITE_MISMATCH:
		return -EINVAL;
	case SQLITE_IOERR:
		/*
		 * A write the kernel refused: say why, so the log and
		 * /healthz name the disk's fault rather than "I/O error".
		 */
		return store_io_cause(s);
	default:
		return -EIO;
	}
}

const char *
store_errmsg(struct store *s)
{
	return s->errmsg;
}

int
store_exec(struct store *s, const char *sql)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_sqlerr(s, rc);
}

int
store_stmt(struct store *s, const char *sql, sqlite3_stmt **out)
{
	sqlite3_stmt *st;
	int rc;

	for (int i = 0; i < s->n_stmts; i++)
		if (s->stmts[i].sql == sql) {
			sqlite3_reset(s->stmts[i].st);
			sqlite3_clear_bindings(s->stmts[i].st);
			*out = s->stmts[i].st;
			return 0;
		}
	/* More distinct statements than slots is a programmer error. */
	if (s->n_stmts == STORE_MAX_STMTS)
		return -ENOSPC;
	if ((rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    &st, NULL)) != SQLITE_OK)
		return store_sqlerr(s, rc);
	s->stmts[s->n_stmts].sql = sql;
	s->stmts[s->n_stmts].st = st;
	s->n_stmts++;
	*out = st;
	return 0;
}

static int
store_user_version(struct store *s, int *out)
{
	sqlite3_stmt *st = NULL;
	int rc, error = 0;

	if ((rc = sqlite3_prepare_v2(s->db,
	    "SELECT coalesce(max(version), 0) FROM schema_version", -1, &st,
	    NULL)) != SQLITE_OK) {
		error = store_sqlerr(s, rc);
		goto out;
	}
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		error = store_sqlerr(s, rc);
		goto out;
	}
	*out = sqlite3_column_int(st, 0);
out:
	sqlite3_finalize(st);
	return error;
}

/*
 * Each migration is its own IMMEDIATE transaction, and the version is read
 * again inside it: two processes opening a fresh store at once apply each
 * migration once.
 */
static int
store_migrate(struct store *s)
{
	int version, error;

	if ((error = store_exec(s, "CREATE TABLE IF NOT EXISTS schema_version ("
	    "version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)")) < 0)
		return error;
	for (;;) {
		if ((error = store_exec(s, "BEGIN IMMEDIATE")) < 0)
			return error;
		if ((error = store_user_version(s, &version)) < 0)
			goto fail;
		if (version > store_schema_latest()) {
			snprintf(s->errmsg, sizeof(s->errmsg),
			    "database schema version %d is newer than this kernelbot (%d)",
			    version, store_schema_latest());
			error = -EPROTO;
			goto fail;
		}
		if (version == store_schema_latest())
			return store_exec(s, "COMMIT");
		if ((error = store_exec(s, store_schema_migration(version + 1))) < 0)
			goto fail;
		char ins[128];
		snprintf(ins, sizeof(ins), "INSERT INTO schema_version VALUES (%d, %lld)",
		    version + 1, (long long)store_now(s));
		if ((error = store_exec(s, ins)) < 0 ||
		    (error = store_exec(s, "COMMIT")) < 0)
			goto fail;
		log_debug("store migrated", "version=%d", version + 1);
	}
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return error;
}

static int
store_pragmas(struct store *s)
{
	sqlite3_stmt *st = NULL;
	int rc, error;

	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	/* journal_mode answers with the mode it got: a read-only or odd file may refuse WAL. */
	if ((rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st,
	    NULL)) != SQLITE_OK)
		return store_sqlerr(s, rc);
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		error = store_sqlerr(s, rc);
		sqlite3_finalize(st);
		return error;
	}
	if (strcmp((const char *)sqlite3_column_text(st, 0), "wal")) {
		snprintf(s->errmsg, sizeof(s->errmsg), "cannot use WAL mode (got %s)",
		    sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		return -EIO;
	}
	sqlite3_finalize(st);
	/* FULL: NORMAL in WAL mode can lose the last commits on power loss. */
	return store_exec(s, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON");
}


int
store_open(const char *dir, int flags, struct store **out)
{
	struct store *s = NULL;
	char path[PATH_MAX];
	int rc, error = 0;
	int oflags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, STORE_DB_NAME) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if (flags & STORE_OPEN_EXISTING) {
		if (access(path, F_OK) < 0)
			return -errno;
	} else {
		if ((error = fsx_mkdir_p(dir, 0750)) < 0)
			return error;
		oflags |= SQLITE_OPEN_CREATE;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	if (!(s->path = strdup(path))) {
		error = -ENOMEM;
		goto out;
	}
	if ((rc = sqlite3_open_v2(path, &s->db, oflags, NULL)) != SQLITE_OK) {
		error = s->db ? store_sqlerr(s, rc) : -ENOMEM;
		goto out;
	}
	sqlite3_extended_result_codes(s->db, 1);
	if ((error = store_pragmas(s)) < 0 || (error = store_migrate(s)) < 0)
		goto out;
	*out = s;
	s = NULL;
out:
	if (s) {
		log_debug("store open failed", "err=\"%s\"", s->errmsg);
		store_close(s);
	}
	return error;
}

void
store_close(struct store *s)
{
	if (!s)
		return;
	store_checkpointer_stop(s);
	for (int i = 0; i < s->n_stmts; i++)
		sqlite3_finalize(s->stmts[i].st);
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
}

int
store_schema_version(struct store *s)
{
	int v = -1;

	pthread_mutex_lock(&s->lock);
	if (store_user_version(s, &v) < 0)
		v = -1;
	pthread_mutex_unlock(&s->lock);
	return v;
}

static const char SQL_HEALTH[] =
    "INSERT INTO health (id, checked) VALUES (1, ?1)"
    " ON CONFLICT (id) DO UPDATE SET checked = excluded.checked";

int
store_check_writable(struct store *s)
{
	sqlite3_stmt *st;
	int rc, error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_HEALTH, &st)) < 0)
		goto out;
	sqlite3_bind_int64(st, 1, store_now(s));
	if ((rc = sqlite3_step(st)) != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}

static const char SQL_DELIVERY[] =
    "INSERT INTO deliveries (provider, delivery_id, event, repo, received, outcome)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING";
static const char SQL_INTAKE_KEY[] =
    "INSERT INTO intake_keys (provider, repo, key, delivery)"
    " VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING";
/* A replay adds no row: it is counted on the delivery it repeats. */
static const char SQL_DELIVERY_SEEN[] =
    "UPDATE deliveries SET duplicates = duplicates + 1, last_duplicate = ?3"
    " WHERE provider = ?1 AND delivery_id = ?2";
/*
 * An id held by a delivery kernelbot ignored, now asked for work: the
 * row becomes this delivery's (see intake_one). Its id, or no row.
 */
static const char SQL_DELIVERY_TAKE[] =
    "UPDATE deliveries SET event = ?3, repo = ?4, outcome = ?5"
    " WHERE provider = ?1 AND delivery_id = ?2 AND outcome = 'ignored'"
    " RETURNING id";
static const char SQL_KEY_HELD[] =
    "SELECT 1 FROM intake_keys WHERE provider = ?1 AND repo = ?2 AND key = ?3";
static const char SQL_KEY_SEEN[] =
    "UPDATE deliveries SET duplicates = duplicates + 1, last_duplicate = ?4"
    " WHERE id = (SELECT delivery FROM intake_keys"
    " WHERE provider = ?1 AND repo = ?2 AND key = ?3)";
static const char SQL_JOB_NEW[] =
    "INSERT INTO jobs (delivery, provider, repo, clone_url, before, sha, trigger,"
    " created, updated, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9)";
static const char SQL_COMMAND_NEW[] =
    "INSERT INTO commands (delivery, provider, repo, pr, command, args, actor,"
    " author_association, comment_id, created)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
static const char SQL_CLEANUP_NEW[] =
    "INSERT INTO cleanups (delivery, provider, repo, pr, head_ref, merged, created)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

void
store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

#define bind_text store_bind_text

int
store_step_changes(struct store *s, sqlite3_stmt *st, int *changes)
{
	int rc = sqlite3_step(st), error = 0;

	while (rc == SQLITE_ROW)
		rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	else if (changes)
		*changes = sqlite3_changes(s->db);
	sqlite3_reset(st);
	return error;
}

int
store_update_one(struct store *s, sqlite3_stmt *st)
{
	int n = 0, error = store_step_changes(s, st, &n);

	return error < 0 ? error : n == 1 ? 0 : -ESTALE;
}

int
store_requeue_expired(struct store *s, const char *fail_sql, const char *requeue_sql,
    int max_attempts, int *requeued, int *failed)
{
	sqlite3_stmt *st;
	int64_t now;
	int nf = 0, nr = 0, error;

	pthread_mutex_lock(&s->lock);
	now = store_now(s);
	if ((error = store_exec(s, "BEGIN IMMEDIATE")) < 0)
		goto out;
	if ((error = store_stmt(s, fail_sql, &st)) < 0)
		goto rollback;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int(st, 2, max_attempts);
	if ((error = store_step_changes(s, st, &nf)) < 0 ||
	    (error = store_stmt(s, requeue_sql, &st)) < 0)
		goto rollback;
	sqlite3_bind_int64(st, 1, now);
	if ((error = store_step_changes(s, st, &nr)) < 0)
		goto rollback;
	if ((error = store_exec(s, "COMMIT")) == 0) {
		if (requeued)
			*requeued = nr;
		if (failed)
			*failed = nf;
		goto out;
	}
rollback:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_row_read(sqlite3_stmt *st, const struct store_col *cols, size_t n,
    void *obj)
{
	char *base = obj;
	int oom = 0;

	for (size_t i = 0; i < n; i++) {
		void *f = base + cols[i].off;
		const unsigned char *t;

		switch (cols[i].type) {
		case STORE_COL_STR:
			t = sqlite3_column_text(st, (int)i);
			*(char **)f = t ? strdup((const char *)t) : NULL;
			if (t && !*(char **)f)
				oom = 1;
			break;
		case STORE_COL_I64:
			*(int64_t *)f = sqlite3_column_int64(st, (int)i);
			break;
		case STORE_COL_INT:
			*(int *)f = sqlite3_column_int(st, (int)i);
			break;
		}
	}
	if (oom) {
		for (size_t i = 0; i < n; i++)
			if (cols[i].type == STORE_COL_STR) {
				free(*(char **)(base + cols[i].off));
				*(char **)(base + cols[i].off) = NULL;
			}
		return -ENOMEM;
	}
	return 0;
}

void
store_row_free(const struct store_col *cols, size_t n, void *obj, size_t size)
{
	char *base = obj;

	if (!obj)
		return;
	for (size_t i = 0; i < n; i++)
		if (cols[i].type == STORE_COL_STR)
			free(*(char **)(base + cols[i].off));
	memset(obj, 0, size);
}

int
store_rows(struct store *s, sqlite3_stmt *st, const struct store_col *cols,
    size_t ncols, size_t size, void **out, size_t *n)
{
	char *v = NULL, *p;
	size_t count = 0, cap = 0;
	int rc, error = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			cap = cap ? cap * 2 : 8;
			if (!(p = realloc(v, cap * size))) {
				error = -ENOMEM;
				break;
			}
			v = p;
		}
		memset(v + count * size, 0, size);
		if ((error = store_row_read(st, cols, ncols, v + count * size)) < 0)
			break;
		count++;
	}
	if (error == 0 && rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
	if (error < 0) {
		for (size_t i = 0; i < count; i++)
			store_row_free(cols, ncols, v + i * size, size);
		free(v);
		return error;
	}
	*out = v;
	*n = count;
	return 0;
}

static int
step_done(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st), error = 0;

	if (rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
	return error;
}

/* The work row of one delivery; inside its savepoint. */
static int
intake_work(struct store *s, struct store_delivery *d, int64_t delivery,
    int64_t now)
{
	sqlite3_stmt *st;
	int error;

	switch (d->work) {
	case STORE_WORK_NONE:
		return 0;
	case STORE_WORK_JOB:
		if (!d->repo || !d->clone_url || !d->sha || !d->trigger ||
		    (d->payload && strlen(d->payload) > STORE_MAX_PAYLOAD))
			return -EINVAL;
		if ((error = store_stmt(s, SQL_JOB_NEW, &st)) < 0)
			return error;
		sqlite3_bind_int64(st, 1, delivery);
		bind_text(st, 2, d->provider);
		bind_text(st, 3, d->repo);
		bind_text(st, 4, d->clone_url);
		bind_text(st, 5, d->before);
		bind_text(st, 6, d->sha);
		bind_text(st, 7, d->trigger);
		sqlite3_bind_int64(st, 8, now);
		bind_text(st, 9, d->payload);
		break;
	case STORE_WORK_COMMAND:
		if (!d->repo || !d->command || !d->actor)
			return -EINVAL;
		if ((error = store_stmt(s, SQL_COMMAND_NEW, &st)) < 0)
			return error;
		sqlite3_bind_int64(st, 1, delivery);
		bind_text(st, 2, d->provider);
		bind_text(st, 3, d->repo);
		sqlite3_bind_int64(st, 4, d->pr);
		bind_text(st, 5, d->command);
		bind_text(st, 6, d->args ? d->args : "");
		bind_text(st, 7, d->actor);
		bind_text(st, 8, d->author_association);
		sqlite3_bind_int64(st, 9, d->comment_id);
		sqlite3_bind_int64(st, 10, now);
		break;
	case STORE_WORK_CLEANUP:
		if (!d->repo)
			return -EINVAL;
		if ((error = store_stmt(s, SQL_CLEANUP_NEW, &st)) < 0)
			return error;
		sqlite3_bind_int64(st, 1, delivery);
		bind_text(st, 2, d->provider);
		bind_text(st, 3, d->repo);
		sqlite3_bind_int64(st, 4, d->pr);
		bind_text(st, 5, d->head_ref);
		sqlite3_bind_int(st, 6, !!d->merged);
		sqlite3_bind_int64(st, 7, now);
		break;
	default:
		return -EINVAL;
	}
	if ((error = step_done(s, st)) < 0)
		return error;
	d->work_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

/* ASCII lowercase in place, from `from` on: the normal form of a key. */
static char *
fold(char *s, size_t from)
{
	for (char *p = s + from; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

/*
 * The key of what d asks for (see store_intake()), and its repository as
 * keys hold it: 1 with *key and *repo (free both), 0 when d has no key.
 *
 * The key is what the forge means, not how the delivery spells it (the
 * fourth outside attack's F3): a repository's name is the same
 * repository in any case (GitHub, Gitea and GitLab look names up
 * case-insensitively, as allow_repos matches them), and a commit id the
 * same commit in upper or lower hex. The rows keep the spelling the
 * forge sent.
 */
static int
work_key(const struct store_delivery *d, char **key, char **repo)
{
	size_t len;
	int n;

	*key = *repo = NULL;
	if (d->work == STORE_WORK_JOB) {
		if (!d->repo || !d->ref || !d->sha)
			return -EINVAL;
		len = strlen(d->ref) + strlen(d->sha) + 7;
		if (!(*key = malloc(len)))
			return -ENOMEM;
		n = snprintf(*key, len, "push %s ", d->ref);
		snprintf(*key + n, len - (size_t)n, "%s", d->sha);
		fold(*key, (size_t)n);
	} else if (d->work == STORE_WORK_COMMAND && d->comment_id != 0 && d->repo) {
		if (!(*key = malloc(32)))
			return -ENOMEM;
		snprintf(*key, 32, "comment %lld", (long long)d->comment_id);
	} else if (d->work == STORE_WORK_CLEANUP && d->repo) {
		/* One close of one PR at one head: a replay cleans up nothing new. */
		len = 64 + strlen(d->head_ref ? d->head_ref : "") + strlen(d->sha ? d->sha : "");
		if (!(*key = malloc(len)))
			return -ENOMEM;
		n = snprintf(*key, len, "cleanup %lld %d %s ", (long long)d->pr, d->merged,
		    d->head_ref ? d->head_ref : "");
		snprintf(*key + n, len - (size_t)n, "%s", d->sha ? d->sha : "");
		fold(*key, (size_t)n);
	} else if (d->work == STORE_WORK_NONE && d->body_key) {
		/*
		 * The same signed body asks for nothing again, whatever its
		 * id (the sixth intake attack's F2: an ignored event replayed
		 * with new ids added a row each).
		 */
		len = strlen(d->body_key) + 6;
		if (!(*key = malloc(len)))
			return -ENOMEM;
		snprintf(*key, len, "body %s", d->body_key);
		fold(*key, 5);
	} else {
		return 0;
	}
	if (!(*repo = strdup(d->repo ? d->repo : ""))) {
		free(*key);
		*key = NULL;
		return -ENOMEM;
	}
	fold(*repo, 0);
	return 1;
}

/* 1 when a delivery holds key, 0 when none does. */
static int
key_held(struct store *s, const char *provider, const char *repo, const char *key)
{
	sqlite3_stmt *st;
	int rc, error;

	if ((error = store_stmt(s, SQL_KEY_HELD, &st)) < 0)
		return error;
	bind_text(st, 1, provider);
	bind_text(st, 2, repo);
	bind_text(st, 3, key);
	rc = sqlite3_step(st);
	error = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : store_sqlerr(s, rc);
	sqlite3_reset(st);
	return error;
}

/*
 * Claim the key of what d asks for; inside its savepoint, after its
 * delivery row. 1 when another delivery holds it: d is a duplicate, its
 * row is rolled back and the holder's count bumped instead. 0 when d now
 * holds it or has no key.
 */
static int
intake_key(struct store *s, struct store_delivery *d, int64_t delivery,
    int64_t now)
{
	sqlite3_stmt *st;
	char *key, *repo;
	int error;

	if ((error = work_key(d, &key, &repo)) <= 0)
		return error;
	if ((error = store_stmt(s, SQL_INTAKE_KEY, &st)) < 0)
		goto out;
	bind_text(st, 1, d->provider);
	bind_text(st, 2, repo);
	bind_text(st, 3, key);
	sqlite3_bind_int64(st, 4, delivery);
	if ((error = step_done(s, st)) < 0 || sqlite3_changes(s->db) == 1)
		goto out;
	/* a replay: keep no row of it */
	if ((error = store_exec(s, "ROLLBACK TO delivery")) < 0 ||
	    (error = store_stmt(s, SQL_KEY_SEEN, &st)) < 0)
		goto out;
	bind_text(st, 1, d->provider);
	bind_text(st, 2, repo);
	bind_text(st, 3, key);
	sqlite3_bind_int64(st, 4, now);
	if ((error = step_done(s, st)) == 0)
		error = 1;
out:
	free(repo);
	free(key);
	return error;
}

/* A delivery id seen before: count it on that delivery's row. */
static int
intake_seen(struct store *s, const struct store_delivery *d, int64_t now)
{
	sqlite3_stmt *st;
	int error;

	if ((error = store_stmt(s, SQL_DELIVERY_SEEN, &st)) < 0)
		return error;
	bind_text(st, 1, d->provider);
	bind_text(st, 2, d->delivery_id);
	sqlite3_bind_int64(st, 3, now);
	return step_done(s, st);
}

/* d's row under delivery id: 1 and *row, or 0 when that id has one. */
static int
insert_delivery(struct store *s, const struct store_delivery *d, const char *id, int64_t now,
    int64_t *row)
{
	sqlite3_stmt *st;
	int error;

	if ((error = store_stmt(s, SQL_DELIVERY, &st)) < 0)
		return error;
	bind_text(st, 1, d->provider);
	bind_text(st, 2, id);
	bind_text(st, 3, d->event);
	bind_text(st, 4, d->repo);
	sqlite3_bind_int64(st, 5, now);
	bind_text(st, 6, d->outcome);
	if ((error = step_done(s, st)) < 0 || sqlite3_changes(s->db) == 0)
		return error;
	*row = sqlite3_last_insert_rowid(s->db);
	return 1;
}

/*
 * d asks for work under an id whose row holds other work. Neither the id
 * nor the event is signed: a captured signed delivery that kernelbot had
 * not recorded, sent under the id of another genuine one, made that one
 * (and each redelivery of it) a duplicate (the ninth intake attack, 45 of
 * 45). So when no delivery holds d's work yet, d gets a row of its own
 * under ID~KEYHASH (the first 12 hex digits of the SHA-256 of its forge,
 * repository and key; all 64 where those 12 name a row already): 1 and
 * *id. 0 when its work is held (a duplicate).
 */
static int
id_of_other_work(struct store *s, struct store_delivery *d, int64_t now, int64_t *id)
{
	char *key, *repo, hex[CRYPTO_SHA256_HEX], *alt = NULL;
	size_t len;
	int error;

	if ((error = work_key(d, &key, &repo)) <= 0)
		return error;
	if ((error = key_held(s, d->provider, repo, key)) != 0) {
		error = error == 1 ? 0 : error;
		goto out;
	}
	/*
	 * The hash names what the key table does: the forge, the repository
	 * and the key (a key alone is the same in a mirror's repository: the
	 * third intake attack on this lost the mirror's push). A name taken
	 * all the same gets the whole hash.
	 */
	len = strlen(d->provider) + strlen(repo) + strlen(key) + strlen(d->delivery_id) +
	    CRYPTO_SHA256_HEX + 4;
	if (!(alt = malloc(len))) {
		error = -ENOMEM;
		goto out;
	}
	snprintf(alt, len, "%s %s %s", d->provider, repo, key);
	crypto_sha256_hex(alt, strlen(alt), hex);
	for (int full = 0; full < 2; full++) {
		snprintf(alt, len, "%s~%.*s", d->delivery_id, full ? CRYPTO_SHA256_HEX - 1 : 12, hex);
		if ((error = insert_delivery(s, d, alt, now, id)) != 0)
			break;
	}
out:
	free(alt);
	free(repo);
	free(key);
	return error;
}

/* 1 and *id when d took the row of an ignored delivery under its id, 0
 * when the id's row is not such a row. */
static int
take_ignored(struct store *s, const struct store_delivery *d, int64_t *id)
{
	sqlite3_stmt *st;
	int rc, error;

	if ((error = store_stmt(s, SQL_DELIVERY_TAKE, &st)) < 0)
		return error;
	bind_text(st, 1, d->provider);
	bind_text(st, 2, d->delivery_id);
	bind_text(st, 3, d->event);
	bind_text(st, 4, d->repo);
	bind_text(st, 5, d->outcome);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		error = 1;
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
	return error;
}

static int
intake_one(struct store *s, struct store_delivery *d, int64_t now)
{
	int64_t delivery = 0;
	int error;

	d->duplicate = 0;
	d->work_id = 0;
	if (!d->provider || !d->delivery_id || !d->event || !d->outcome)
		return -EINVAL;
	if ((error = store_exec(s, "SAVEPOINT delivery")) < 0)
		return error;
	if ((error = insert_delivery(s, d, d->delivery_id, now, &delivery)) < 0)
		goto fail;
	if (error == 0) {
		/*
		 * The id is taken. By a delivery that asked for nothing, while
		 * this one asks for work: the work is what the id stands for.
		 * Neither the id nor the event header is signed, so a replay of
		 * a signed push under its id and an event kernelbot ignores
		 * ("ping", "push ") took the id first, and the forge's own
		 * delivery, or its redelivery of one refused, came back a
		 * duplicate and was lost (the eighth intake attack). The work
		 * is still claimed by its key below: a replay of work already
		 * done is a duplicate there.
		 */
		if (d->work != STORE_WORK_NONE &&
		    (error = take_ignored(s, d, &delivery)) == 0)
			error = id_of_other_work(s, d, now, &delivery);
		if (error < 0)
			goto fail;
		if (d->work == STORE_WORK_NONE || error == 0) {
			if ((error = intake_seen(s, d, now)) < 0)
				goto fail;
			d->duplicate = 1;
			return store_exec(s, "RELEASE delivery");
		}
	}
	if ((error = intake_key(s, d, delivery, now)) < 0)
		goto fail;
	if (error == 1) {
		d->duplicate = 1;
		return store_exec(s, "RELEASE delivery");
	}
	if ((error = intake_work(s, d, delivery, now)) < 0)
		goto fail;
	return store_exec(s, "RELEASE delivery");
fail:
	d->work_id = 0;
	sqlite3_exec(s->db, "ROLLBACK TO delivery; RELEASE delivery", NULL, NULL, NULL);
	return error;
}

int
store_intake(struct store *s, struct store_delivery *d, size_t n)
{
	int64_t now;
	int error;

	if (n == 0)
		return 0;
	if (n > STORE_MAX_BATCH)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	now = store_now(s);
	if ((error = store_exec(s, "BEGIN IMMEDIATE")) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		d[i].error = intake_one(s, &d[i], now);
	if ((error = store_exec(s, "COMMIT")) < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (error < 0)
		for (size_t i = 0; i < n; i++) {
			d[i].error = error;
			d[i].work_id = 0;
			d[i].duplicate = 0;
		}
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_count(struct store *s, const char *table, int64_t *n)
{
	static const char *const tables[] = { "deliveries", "jobs", "commands",
		"cleanups", "tasks", "runners" };
	static const char *const sql[] = {
		"SELECT count(*) FROM deliveries", "SELECT count(*) FROM jobs",
		"SELECT count(*) FROM commands", "SELECT count(*) FROM cleanups",
		"SELECT count(*) FROM tasks", "SELECT count(*) FROM runners" };
	sqlite3_stmt *st;
	int rc, error = -EINVAL;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (strcmp(table, tables[i]))
			continue;
		if ((error = store_stmt(s, sql[i], &st)) < 0)
			break;
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			*n = sqlite3_column_int64(st, 0);
		else
			error = store_sqlerr(s, rc);
		sqlite3_reset(st);
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}
