/*
 * store_internal: what the store/store*.c files share and nothing else sees.
 * Later store modules (tasks, candidates, archive) include it to use the
 * connection, the lock and the prepared-statement helpers.
 */
#ifndef KB_STORE_STORE_INTERNAL_H
#define KB_STORE_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_MAX_STMTS 128

struct store_checkpointer;

struct store {
	sqlite3 *db;
	char *path;			/* the database file */
	struct store_checkpointer *ckpt;	/* NULL unless started */
	pthread_mutex_t lock;		/* one user of db at a time */
	int64_t (*now)(void *);
	void *now_arg;
	char errmsg[256];
	/* Prepared once, reused: keyed by the SQL text's address. */
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} stmts[STORE_MAX_STMTS];
	int n_stmts;
};

/* SQL of migration `version` (1-based), NULL past the last. */
const char *store_schema_migration(int version);

/*
 * The cached statement for sql (a string literal: its address is the key),
 * reset and unbound. Caller holds s->lock. 0 or -EIO.
 */
int store_stmt(struct store *s, const char *sql, sqlite3_stmt **out);

/* Translate a SQLite result code into -errno, keeping the message. */
int store_sqlerr(struct store *s, int rc);

/* Run SQL with no results (BEGIN, COMMIT, ...). Caller holds s->lock. */
int store_exec(struct store *s, const char *sql);

int64_t store_now(struct store *s);

/*
 * Rows into structs, by a column map: column i of the statement goes to
 * the field at cols[i].off, of cols[i].type. The coordinator's tables
 * (store_tasks.c, store_coord.c) read their rows this way.
 */
enum store_col_type { STORE_COL_STR, STORE_COL_I64, STORE_COL_INT };
struct store_col {
	enum store_col_type type;
	size_t off;
};

/* Fill obj (zeroed first) from the current row: 0 or -ENOMEM (obj freed). */
int store_row_read(sqlite3_stmt *st, const struct store_col *cols, size_t n,
    void *obj);

/* Free the strings of obj per the map, and zero it. */
void store_row_free(const struct store_col *cols, size_t n, void *obj,
    size_t size);

/*
 * Step st (bound by the caller, lock held) to its end, reading every row
 * into a growing array of size-byte structs: 0 with *out (NULL when no
 * rows) and *n. The statement is reset.
 */
int store_rows(struct store *s, sqlite3_stmt *st, const struct store_col *cols,
    size_t ncols, size_t size, void **out, size_t *n);

/* Bind v or NULL. */
void store_bind_text(sqlite3_stmt *st, int i, const char *v);

/* Step an UPDATE/INSERT to its end; *changes (may be NULL) gets the rows. */
int store_step_changes(struct store *s, sqlite3_stmt *st, int *changes);

/* Step an UPDATE that must touch exactly one row: -ESTALE when it touched
 * none. Lock held. */
int store_update_one(struct store *s, sqlite3_stmt *st);

/*
 * The lease sweep of jobs, tasks and commands, in one transaction: fail_sql (bound
 * to now and max_attempts) fails the expired rows out of attempts, then
 * requeue_sql (bound to now) requeues the other expired ones. *requeued
 * and *failed (may be NULL) get the counts. Takes the lock.
 */
int store_requeue_expired(struct store *s, const char *fail_sql, const char *requeue_sql,
    int max_attempts, int *requeued, int *failed);

#endif
