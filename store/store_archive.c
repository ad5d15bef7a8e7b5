/*
 * store_archive: the SQL of the kernel archive (migration 2): insert in
 * one transaction, read, list, walk for export, and FTS5 search. What is
 * similar to what is pipeline/archive's business; this file only stores
 * and finds. FTS5 query text is built here and only here, from quoted
 * terms, so no caller's input is ever parsed as FTS5 syntax.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#define ARCHIVE_COLS "a.id, a.created, a.problem, a.problem_source, a.problem_sha," \
	" a.ops, a.shape_class, a.ir, a.backend, a.arch, a.device, a.kernel," \
	" a.kernel_sha, a.ms, a.eager_ms, a.compile_ms, a.speedup_eager," \
	" a.speedup_eager_lo, a.speedup_eager_hi, a.speedup_compile," \
	" a.speedup_compile_lo, a.speedup_compile_hi, a.proposer, a.model," \
	" a.parents, a.job, a.repo, a.module"
/* The same without the big texts, for listings. */
#define ARCHIVE_COLS_BRIEF "a.id, a.created, a.problem, NULL, a.problem_sha," \
	" a.ops, a.shape_class, NULL, a.backend, a.arch, a.device, NULL," \
	" a.kernel_sha, a.ms, a.eager_ms, a.compile_ms, a.speedup_eager," \
	" a.speedup_eager_lo, a.speedup_eager_hi, a.speedup_compile," \
	" a.speedup_compile_lo, a.speedup_compile_hi, a.proposer, a.model," \
	" a.parents, a.job, a.repo, a.module"

/* ON CONFLICT names the unique key alone: a failed CHECK must still fail. */
static const char SQL_ARCHIVE_INSERT[] =
    "INSERT INTO archive (created, problem, problem_source, problem_sha, ops,"
    " shape_class, ir, backend, arch, device, kernel, kernel_sha, ms, eager_ms,"
    " compile_ms, speedup_eager, speedup_eager_lo, speedup_eager_hi,"
    " speedup_compile, speedup_compile_lo, speedup_compile_hi, proposer, model,"
    " parents, job, repo, module) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
    " ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23,"
    " ?24, ?25, ?26, ?27)"
    " ON CONFLICT (kernel_sha, arch, problem_sha) DO NOTHING";
static const char SQL_ARCHIVE_EXISTING[] =
    "SELECT id FROM archive WHERE kernel_sha = ?1 AND arch = ?2 AND problem_sha = ?3";
static const char SQL_ARCHIVE_GET[] =
    "SELECT " ARCHIVE_COLS " FROM archive a WHERE a.id = ?1";
static const char SQL_ARCHIVE_HAS_ARCH[] =
    "SELECT EXISTS (SELECT 1 FROM archive WHERE arch = ?1)";

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

static double
col_num(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN :
	    sqlite3_column_double(st, i);
}

static void
bind_num(sqlite3_stmt *st, int i, double v)
{
	if (isfinite(v))
		sqlite3_bind_double(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

static void
bind_str(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

void
store_archive_entry_free(struct store_archive_entry *e)
{
	if (!e)
		return;
	free(e->problem);
	free(e->problem_source);
	free(e->problem_sha);
	free(e->ops);
	free(e->shape_class);
	free(e->ir);
	free(e->backend);
	free(e->arch);
	free(e->device);
	free(e->kernel);
	free(e->kernel_sha);
	free(e->proposer);
	free(e->model);
	free(e->parents);
	free(e->repo);
	free(e->module);
	memset(e, 0, sizeof(*e));
}

void
store_archive_entries_free(struct store_archive_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_archive_entry_free(&e[i]);
	free(e);
}

/* A row of ARCHIVE_COLS (or _BRIEF), and the rank in column 28 if any. */
static int
entry_from_row(sqlite3_stmt *st, struct store_archive_entry *e)
{
	int oom = 0;

	memset(e, 0, sizeof(*e));
	e->id = sqlite3_column_int64(st, 0);
	e->created = sqlite3_column_int64(st, 1);
	e->problem = col_str(st, 2, &oom);
	e->problem_source = col_str(st, 3, &oom);
	e->problem_sha = col_str(st, 4, &oom);
	e->ops = col_str(st, 5, &oom);
	e->shape_class = col_str(st, 6, &oom);
	e->ir = col_str(st, 7, &oom);
	e->backend = col_str(st, 8, &oom);
	e->arch = col_str(st, 9, &oom);
	e->device = col_str(st, 10, &oom);
	e->kernel = col_str(st, 11, &oom);
	e->kernel_sha = col_str(st, 12, &oom);
	e->ms = col_num(st, 13);
	e->eager_ms = col_num(st, 14);
	e->compile_ms = col_num(st, 15);
	e->speedup_eager = col_num(st, 16);
	e->speedup_eager_lo = col_num(st, 17);
	e->speedup_eager_hi = col_num(st, 18);
	e->speedup_compile = col_num(st, 19);
	e->speedup_compile_lo = col_num(st, 20);
	e->speedup_compile_hi = col_num(st, 21);
	e->proposer = col_str(st, 22, &oom);
	e->model = col_str(st, 23, &oom);
	e->parents = col_str(st, 24, &oom);
	e->job = sqlite3_column_int64(st, 25);
	e->repo = col_str(st, 26, &oom);
	e->module = col_str(st, 27, &oom);
	if (sqlite3_column_count(st) > 28)
		e->rank = sqlite3_column_double(st, 28);
	if (oom) {
		store_archive_entry_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* Insert one entry. Caller holds the lock, inside a transaction. */
static int
insert_one(struct store *s, const struct store_archive_entry *e, int64_t *id)
{
	sqlite3_stmt *st;
	int rc, error;

	if ((error = store_stmt(s, SQL_ARCHIVE_INSERT, &st)) < 0)
		return error;
	sqlite3_bind_int64(st, 1, e->created ? e->created : store_now(s));
	bind_str(st, 2, e->problem);
	bind_str(st, 3, e->problem_source);
	bind_str(st, 4, e->problem_sha);
	bind_str(st, 5, e->ops ? e->ops : "");
	bind_str(st, 6, e->shape_class ? e->shape_class : "");
	bind_str(st, 7, e->ir);
	bind_str(st, 8, e->backend);
	bind_str(st, 9, e->arch);
	bind_str(st, 10, e->device);
	bind_str(st, 11, e->kernel);
	bind_str(st, 12, e->kernel_sha);
	bind_num(st, 13, e->ms);
	bind_num(st, 14, e->eager_ms);
	bind_num(st, 15, e->compile_ms);
	bind_num(st, 16, e->speedup_eager);
	bind_num(st, 17, e->speedup_eager_lo);
	bind_num(st, 18, e->speedup_eager_hi);
	bind_num(st, 19, e->speedup_compile);
	bind_num(st, 20, e->speedup_compile_lo);
	bind_num(st, 21, e->speedup_compile_hi);
	bind_str(st, 22, e->proposer);
	bind_str(st, 23, e->model);
	bind_str(st, 24, e->parents);
	if (e->job)
		sqlite3_bind_int64(st, 25, e->job);
	else
		sqlite3_bind_null(st, 25);
	bind_str(st, 26, e->repo);
	bind_str(st, 27, e->module);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, rc);
	if (sqlite3_changes(s->db) == 1) {
		*id = sqlite3_last_insert_rowid(s->db);
		return 0;
	}
	/* The unique key was there already: find its row. */
	if ((error = store_stmt(s, SQL_ARCHIVE_EXISTING, &st)) < 0)
		return error;
	bind_str(st, 1, e->kernel_sha);
	bind_str(st, 2, e->arch);
	bind_str(st, 3, e->problem_sha);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		error = -EEXIST;
	} else {
		error = rc == SQLITE_DONE ? -EIO : store_sqlerr(s, rc);
	}
	sqlite3_reset(st);
	return error;
}

int
store_archive_add(struct store *s, const struct store_archive_entry *e,
    size_t n, int *results, int64_t *ids)
{
	int error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_exec(s, "BEGIN IMMEDIATE")) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		int64_t id = 0;
		int r = insert_one(s, &e[i], &id);

		if (results)
			results[i] = r;
		if (ids)
			ids[i] = id;
		if (r < 0 && r != -EEXIST) {
			error = r;
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			goto out;
		}
	}
	if ((error = store_exec(s, "COMMIT")) < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_archive_get(struct store *s, int64_t id, struct store_archive_entry *out)
{
	sqlite3_stmt *st;
	int rc, error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_ARCHIVE_GET, &st)) == 0) {
		sqlite3_bind_int64(st, 1, id);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			error = entry_from_row(st, out);
		else
			error = rc == SQLITE_DONE ? -ENOENT : store_sqlerr(s, rc);
		sqlite3_reset(st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}

/*
 * Step st to its end, collecting entries. Caller holds the lock and
 * finalizes st.
 */
static int
collect(struct store *s, sqlite3_stmt *st, struct store_archive_entry **out,
    size_t *n)
{
	struct store_archive_entry *v = NULL, *nv;
	size_t len = 0, cap = 0;
	int rc, error = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(nv = realloc(v, cap * sizeof(*v)))) {
				error = -ENOMEM;
				goto fail;
			}
			v = nv;
		}
		if ((error = entry_from_row(st, &v[len])) < 0)
			goto fail;
		len++;
	}
	if (rc != SQLITE_DONE) {
		error = store_sqlerr(s, rc);
		goto fail;
	}
	*out = v;
	*n = len;
	return 0;
fail:
	store_archive_entries_free(v, len);
	return error;
}

int
store_archive_list(struct store *s, const char *arch, size_t limit, int full,
    struct store_archive_entry **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	char sql[1024];
	int rc, error;

	snprintf(sql, sizeof(sql), "SELECT %s FROM archive a%s ORDER BY a.id DESC LIMIT ?2",
	    full ? ARCHIVE_COLS : ARCHIVE_COLS_BRIEF, arch ? " WHERE a.arch = ?1" : "");
	pthread_mutex_lock(&s->lock);
	if ((rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL)) != SQLITE_OK) {
		error = store_sqlerr(s, rc);
		goto out;
	}
	if (arch)
		bind_str(st, 1, arch);
	sqlite3_bind_int64(st, 2, limit ? (sqlite3_int64)limit : -1);
	error = collect(s, st, out, n);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_archive_each(struct store *s,
    int (*fn)(const struct store_archive_entry *e, void *arg), void *arg)
{
	sqlite3_stmt *st = NULL;
	struct store_archive_entry e;
	int rc, error = 0;

	pthread_mutex_lock(&s->lock);
	if ((rc = sqlite3_prepare_v2(s->db, "SELECT " ARCHIVE_COLS
	    " FROM archive a ORDER BY a.id", -1, &st, NULL)) != SQLITE_OK) {
		error = store_sqlerr(s, rc);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if ((error = entry_from_row(st, &e)) < 0)
			goto out;
		error = fn(&e, arg);
		store_archive_entry_free(&e);
		if (error < 0)
			goto out;
	}
	if (rc != SQLITE_DONE)
		error = store_sqlerr(s, rc);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	return error;
}

/* A term worth a phrase: one with a letter, digit or non-ASCII byte. */
static int
term_has_word(const char *t)
{
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= 'A' && *p <= 'Z') || *p >= 0x80)
			return 1;
	return 0;
}

/*
 * The FTS5 query: every term an FTS5 string ("..." with " doubled), so
 * nothing in it is syntax. 0, -ENOENT when no term has a word, -ENOBUFS.
 */
static int
fts_query(struct buf *q, const char *const *terms, size_t nterms, int any,
    int ops_only)
{
	size_t used = 0;
	int error;

	if (ops_only && (error = buf_addstr(q, "ops : (")) < 0)
		return error;
	for (size_t i = 0; i < nterms && used < STORE_ARCHIVE_MAX_TERMS; i++) {
		if (!terms[i] || !term_has_word(terms[i]))
			continue;
		if (used++ && (error = buf_addstr(q, any ? " OR " : " AND ")) < 0)
			return error;
		if ((error = buf_addch(q, '"')) < 0)
			return error;
		for (const char *p = terms[i]; *p; p++) {
			if (*p == '"' && (error = buf_addch(q, '"')) < 0)
				return error;
			if ((error = buf_addch(q, *p)) < 0)
				return error;
		}
		if ((error = buf_addch(q, '"')) < 0)
			return error;
	}
	if (!used)
		return -ENOENT;
	return ops_only ? buf_addch(q, ')') : 0;
}

int
store_archive_search(struct store *s, const char *const *terms, size_t nterms,
    int any, int ops_only, size_t limit, struct store_archive_entry **out,
    size_t *n)
{
	/* Column weights: op names count most, the problem next, the code least. */
	static const char sql[] = "SELECT " ARCHIVE_COLS ", bm25(archive_fts, 1.0, 0.5, 2.0)"
	    " AS r FROM archive_fts JOIN archive a ON a.id = archive_fts.rowid"
	    " WHERE archive_fts MATCH ?1 ORDER BY r LIMIT ?2";
	struct buf q = BUF_INIT(BUF_MAX_SMALL);
	sqlite3_stmt *st = NULL;
	int rc, error;

	if (limit < 1 || limit > 1000)
		return -EINVAL;
	if ((error = fts_query(&q, terms, nterms, any, ops_only)) < 0) {
		buf_free(&q);
		if (error != -ENOENT)
			return error;
		*out = NULL;
		*n = 0;
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	if ((rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL)) != SQLITE_OK) {
		error = store_sqlerr(s, rc);
		goto out;
	}
	sqlite3_bind_text(st, 1, buf_cstr(&q), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
	error = collect(s, st, out, n);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	buf_free(&q);
	return error;
}

int
store_archive_has_arch(struct store *s, const char *arch)
{
	sqlite3_stmt *st;
	int rc, error;

	if (!arch)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_ARCHIVE_HAS_ARCH, &st)) == 0) {
		bind_str(st, 1, arch);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			error = sqlite3_column_int(st, 0) ? 1 : 0;
		else
			error = store_sqlerr(s, rc);
		sqlite3_reset(st);
	}
	pthread_mutex_unlock(&s->lock);
	return error;
}
