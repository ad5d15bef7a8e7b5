/*
 * store_wal: the background WAL checkpointer, on its own connection.
 *
 * SQLite reuses the WAL from its start only when a checkpoint has copied
 * every frame before the next write begins; under steady load a plain
 * background checkpoint never wins that race, the WAL grows without bound,
 * and the only remedies SQLite offers (RESTART, TRUNCATE) make writers wait
 * in the busy handler's sleeps (seconds, measured). So each round has two
 * phases: a PASSIVE checkpoint beside the writers that copies nearly
 * everything, then a second PASSIVE one holding the store's lock, so our
 * writer pauses for just the frames written meanwhile and one fsync, and
 * the next commit starts the WAL over. journal_size_limit trims the file.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"

#define STORE_CHECKPOINT_SLOW_MS 50

struct store_checkpointer {
	sqlite3 *db;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;
	int interval_ms;
	unsigned long runs;
};

static long long
wal_bytes(const char *path)
{
	char wal[4096];
	struct stat st;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	return stat(wal, &st) == 0 ? (long long)st.st_size : 0;
}

static void
checkpoint_once(struct store *s, struct store_checkpointer *c)
{
	struct timespec t0, t1;
	double ms;
	int rc;

	rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
	    NULL, NULL);
	pthread_mutex_lock(&s->lock);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rc == SQLITE_OK)
		rc = sqlite3_wal_checkpoint_v2(c->db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_mutex_unlock(&s->lock);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		log_debug("wal checkpoint failed", "rc=%d", rc);
	/* The writer waited for the second phase: worth a line when it is long. */
	if (ms >= STORE_CHECKPOINT_SLOW_MS)
		log_info("slow wal checkpoint", "ms=%.1f wal_bytes=%lld", ms,
		    wal_bytes(s->path));
	pthread_mutex_lock(&c->lock);
	c->runs++;
	pthread_mutex_unlock(&c->lock);
}

static void *
checkpointer_main(void *arg)
{
	struct store *s = arg;
	struct store_checkpointer *c = s->ckpt;
	struct timespec t;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += (long)(c->interval_ms % 1000) * 1000000L;
		t.tv_sec += c->interval_ms / 1000 + t.tv_nsec / 1000000000L;
		t.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&c->wake, &c->lock, &t);
		if (c->stop)
			break;
		pthread_mutex_unlock(&c->lock);
		checkpoint_once(s, c);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int
store_checkpointer_start(struct store *s, int interval_ms)
{
	struct store_checkpointer *c;
	int rc, error;

	if (s->ckpt)
		return -EALREADY;
	if (interval_ms <= 0)
		return -EINVAL;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->interval_ms = interval_ms;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	if ((rc = sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL)) != SQLITE_OK) {
		error = rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
		goto fail;
	}
	sqlite3_busy_timeout(c->db, STORE_BUSY_TIMEOUT_MS);
	/* FULL here too: the checkpoint's fsyncs are what make the WAL reusable safely. */
	if (sqlite3_exec(c->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK) {
		error = -EIO;
		goto fail;
	}
	pthread_mutex_lock(&s->lock);
	error = store_exec(s, "PRAGMA wal_autocheckpoint=0");
	if (error == 0) {
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit=%u", STORE_WAL_MAX_BYTES);
		error = store_exec(s, sql);
	}
	pthread_mutex_unlock(&s->lock);
	if (error < 0)
		goto fail;
	s->ckpt = c;
	if ((rc = pthread_create(&c->thread, NULL, checkpointer_main, s)) != 0) {
		s->ckpt = NULL;
		error = -rc;
		goto fail;
	}
	return 0;
fail:
	pthread_mutex_lock(&s->lock);
	store_exec(s, "PRAGMA wal_autocheckpoint=1000");
	pthread_mutex_unlock(&s->lock);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return error;
}

void
store_checkpointer_stop(struct store *s)
{
	struct store_checkpointer *c = s->ckpt;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	checkpoint_once(s, c);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
	s->ckpt = NULL;
	pthread_mutex_lock(&s->lock);
	store_exec(s, "PRAGMA wal_autocheckpoint=1000");
	pthread_mutex_unlock(&s->lock);
}

unsigned long
store_checkpoints(struct store *s)
{
	unsigned long n = 0;

	if (s->ckpt) {
		pthread_mutex_lock(&s->ckpt->lock);
		n = s->ckpt->runs;
		pthread_mutex_unlock(&s->ckpt->lock);
	}
	return n;
}
