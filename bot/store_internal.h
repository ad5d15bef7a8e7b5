/*
 * store_internal: what the bot/store*.c files share and nothing else sees.
 * Later store modules (tasks, candidates, archive) include it to use the
 * connection, the lock and the prepared-statement helpers.
 */
#ifndef KB_BOT_STORE_INTERNAL_H
#define KB_BOT_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "bot/store.h"

#define STORE_MAX_STMTS 32

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

#endif
