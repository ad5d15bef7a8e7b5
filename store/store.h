/*
 * store: the durable state of kernelbot, one SQLite database in WAL mode
 * (DATA_DIR/kernelbot.db). All SQL of the program lives in store/store*.c.
 *
 * Durability: synchronous=FULL, so a transaction that store_*() reports as
 * committed survives a crash or power loss; the webhook intake answers 202
 * only after store_intake() returns. Schema changes are numbered migrations
 * (store/store_schema.c) applied in one transaction each at open, recorded in
 * schema_version; later modules append migrations there.
 *
 * A struct store is one connection guarded by a mutex: every function may
 * be called from any thread. Strings in returned structs are owned by the
 * struct and freed by the matching *_free(). Errors: -EBUSY (the database
 * stayed locked past the busy timeout), -ENOSPC (disk full), -EROFS (a
 * read-only file system), -EIO (SQLite failed otherwise; the message is
 * logged at debug and kept for store_errmsg()), -ENOENT (no such row or no
 * store), -ESTALE (a lease that is no longer the caller's), -EINVAL.
 */
#ifndef KB_STORE_STORE_H
#define KB_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_DB_NAME		"kernelbot.db"
#define STORE_BUSY_TIMEOUT_MS	5000
#define STORE_MAX_PAYLOAD	(1u << 20)	/* bytes of a job's payload JSON */
#define STORE_MAX_BATCH		256		/* deliveries in one store_intake() */

struct store;

/* store_open flags. */
#define STORE_OPEN_EXISTING 1	/* fail with -ENOENT rather than create */

/*
 * Open (creating DIR and the database when needed, unless
 * STORE_OPEN_EXISTING) and migrate to the current schema. -ENOENT,
 * -EACCES..., -EIO, or -EPROTO when the database is newer than this binary.
 */
int store_open(const char *dir, int flags, struct store **out);
void store_close(struct store *s);

/* The last SQLite error message of this connection ("" if none). */
const char *store_errmsg(struct store *s);

/* The schema version after migrations; the number this binary knows. */
int store_schema_version(struct store *s);
int store_schema_latest(void);

/*
 * The clock the store stamps rows with (seconds since the epoch); tests
 * replace it to move leases through time. NULL restores time(2).
 */
void store_set_clock(struct store *s, int64_t (*now)(void *), void *arg);

/*
 * Move WAL checkpoints off the commit path: from now on a background
 * thread on its own connection copies the WAL into the database every
 * interval_ms, pausing this store's writers only for the last few frames
 * and one fsync (see store_wal.c), so the WAL starts over each round and
 * its file is trimmed to STORE_WAL_MAX_BYTES. Without it, the commit that
 * crosses 1000 WAL pages pays for the checkpoint and its fsyncs, which is
 * the daemon's p99. 0, -EALREADY, -EINVAL, -errno. The daemon calls it;
 * short-lived commands need not.
 */
#define STORE_WAL_MAX_BYTES (64u << 20)
int store_checkpointer_start(struct store *s, int interval_ms);

/* Stop it (store_close() does this too), with a last checkpoint. */
void store_checkpointer_stop(struct store *s);

/* Checkpoints the background thread has run, for tests. */
unsigned long store_checkpoints(struct store *s);

/* A write transaction that commits: 0 while the store is writable. */
int store_check_writable(struct store *s);

/* ---- Intake: deliveries and the work they create ---- */

enum store_work {
	STORE_WORK_NONE,	/* recorded only (ignored events) */
	STORE_WORK_JOB,		/* a push to the default branch */
	STORE_WORK_COMMAND,	/* a "/kernelbot ..." PR comment */
	STORE_WORK_CLEANUP,	/* a closed pull request */
};

/*
 * One verified delivery. The caller fills the inputs; store_intake() fills
 * `duplicate`, `work_id` and `error`. Strings are borrowed for the call;
 * NULL where a field does not apply.
 */
struct store_delivery {
	const char *provider;		/* "github", "gitlab", "gitea" */
	const char *delivery_id;	/* unique per provider */
	const char *event;		/* the provider's event name */
	const char *repo;		/* "owner/name" or NULL */
	const char *outcome;		/* recorded: "accepted", "ignored", ... */
	enum store_work work;
	/* job (sha: also a cleanup's PR head, for its replay key) */
	const char *clone_url, *before, *sha, *trigger, *payload;
	const char *ref;		/* the pushed ref, "refs/heads/main" */
	/* command and cleanup */
	int64_t pr;
	const char *command, *args, *actor, *author_association, *head_ref;
	int64_t comment_id;
	int merged;
	/*
	 * work NONE: what the delivery is whatever its id, or NULL: for the
	 * intake, the event's label and the signed body's SHA-256 (hex)
	 */
	const char *body_key;
	/* results */
	int duplicate;		/* seen before (id or work key): nothing created */
	int64_t work_id;	/* id of the job/command/cleanup row created */
	int error;		/* 0, or -errno for this delivery alone */
};

/*
 * Record n deliveries (n <= STORE_MAX_BATCH) and their work in ONE
 * transaction, committed (fsync'd) before returning: group commit for the
 * intake. Each delivery is its own savepoint, so one bad row fails only
 * itself (d[i].error). Dedup is by (provider, delivery_id), and by what
 * the delivery asks for whatever its id: a job by (provider, repo, ref,
 * sha), a command by (provider, repo, comment_id) when comment_id is not
 * 0, a delivery that asks for nothing by (provider, repo, body_key) when
 * body_key is set (the same signed body under a new id). All hold within the batch, across batches and connections (the
 * keys are unique in the same transaction as the insert) and across
 * restarts. A duplicate creates nothing and adds no row: it is counted on
 * the delivery it repeats (deliveries.duplicates, last_duplicate), so
 * replays cannot grow the store. Returns 0 when the transaction
 * committed (look at each d[i].error), or -errno when nothing was
 * committed (every d[i].error set).
 */
int store_intake(struct store *s, struct store_delivery *d, size_t n);

/* ---- Jobs ---- */

/* Job states: queued -> running -> done | failed; expired leases requeue. */
#define STORE_JOB_QUEUED	"queued"
#define STORE_JOB_RUNNING	"running"
#define STORE_JOB_DONE		"done"
#define STORE_JOB_FAILED	"failed"

struct store_job {
	int64_t id;
	char *provider, *repo, *clone_url, *before, *sha, *trigger, *state;
	int64_t created, updated;	/* seconds since the epoch */
	char *lease_owner;		/* NULL unless running */
	int64_t lease_expires;		/* 0 unless running */
	int attempts;
	char *payload;			/* JSON text or NULL */
	char *step;			/* the coordinator's progress: new, tasks, publish */
	char *error;			/* why it failed, or NULL */
	int retries;			/* failed tries in a row of its fetch */
};

void store_job_free(struct store_job *j);
void store_jobs_free(struct store_job *jobs, size_t n);

/* One job by id: 0, -ENOENT. */
int store_job_get(struct store *s, int64_t id, struct store_job *out);

/*
 * Jobs newest first, at most `limit` (0: all). *out is an array the caller
 * frees with store_jobs_free().
 */
int store_jobs_list(struct store *s, size_t limit, struct store_job **out,
    size_t *n);

/*
 * Take the oldest queued job for `owner` with a lease of lease_s seconds:
 * state running, attempts + 1. -ENOENT when none is queued. Atomic: two
 * owners never get the same job.
 */
int store_job_claim(struct store *s, const char *owner, int lease_s,
    struct store_job *out);

/* Extend the lease to now + lease_s. -ESTALE when owner no longer holds it. */
int store_job_heartbeat(struct store *s, int64_t id, const char *owner,
    int lease_s);

/*
 * Give a running job back to the queue now (a coordinator stopping), so
 * the next one need not wait for the lease to run out. -ESTALE when
 * owner does not hold it. Its attempts stay counted.
 */
int store_job_release(struct store *s, int64_t id, const char *owner);

/*
 * End a running job with state STORE_JOB_DONE or STORE_JOB_FAILED.
 * -ESTALE when owner no longer holds it, -EINVAL for another state.
 */
int store_job_finish(struct store *s, int64_t id, const char *owner,
    const char *state);

/*
 * Put running jobs whose lease has expired back in the queue, or mark
 * them failed once they have had max_attempts attempts (0: no limit).
 * *requeued and *failed (either may be NULL) get the counts.
 */
int store_jobs_requeue_expired(struct store *s, int max_attempts,
    int *requeued, int *failed);

/*
 * Number of jobs in each state, for /metrics: fn is called per state with
 * the store locked, so it must not call the store. -ETIMEDOUT when the
 * store stayed busy for STORE_COUNT_WAIT_MS (a write hung on the disk).
 */
#define STORE_COUNT_WAIT_MS 500
int store_jobs_count_by_state(struct store *s,
    void (*fn)(const char *state, int64_t n, void *arg), void *arg);

/*
 * A job the bot makes itself (a command, the schedule, a new GPU
 * architecture): queued like a push job, with no delivery. payload holds
 * what the coordinator needs ({"modules": [...], "pr": N, ...}).
 */
struct store_job_new {
	const char *provider, *repo, *clone_url, *before, *sha, *trigger;
	const char *payload;
};
int store_job_add(struct store *s, const struct store_job_new *j, int64_t *id);

/*
 * Record the coordinator's step of a job it holds (and an error text, or
 * NULL). -ESTALE when owner no longer holds it.
 */
int store_job_set_step(struct store *s, int64_t id, const char *owner,
    const char *step, const char *error);

/*
 * Count one more failed try of the fetch of a job owner holds, with why
 * as the job's error; *retries (may be NULL) gets the count. why NULL
 * starts the count over and clears the error. -ESTALE when owner no
 * longer holds it.
 */
int store_job_retry(struct store *s, int64_t id, const char *owner,
    const char *why, int *retries);

/* ---- Tasks: one module of one job, run by a runner (store_tasks.c) ---- */

#define STORE_TASK_QUEUED	"queued"
#define STORE_TASK_RUNNING	"running"
#define STORE_TASK_DONE		"done"
#define STORE_TASK_FAILED	"failed"
#define STORE_TASK_CANCELLED	"cancelled"

/* What the coordinator asks for; strings borrowed. */
struct store_task_spec {
	const char *module;		/* repository-relative path */
	const char *class_name;		/* "Model" */
	const char *slug;
	const char *backend;		/* "cpu", "cuda", or NULL/"any" */
	const char *arch;		/* "sm_90", "cpu", or NULL/"" for any */
	const char *kind;		/* "optimize" (NULL) or "benchmark" */
};

struct store_task {
	int64_t id, job;
	char *repo, *sha, *module, *class_name, *slug, *backend, *arch, *kind;
	char *state;
	char *lease_owner;		/* NULL unless running */
	int64_t lease_expires;
	int attempts;
	char *runner;			/* the runner that ran it last */
	char *ran_backend, *ran_arch;	/* where it ran */
	char *out_dir;			/* the optimize --out directory */
	char *summary;			/* summary.json's text, or NULL */
	char *error;
	int published;			/* the coordinator has published its result */
	int64_t created, updated;
};

void store_task_free(struct store_task *t);
void store_tasks_free(struct store_task *v, size_t n);

/*
 * Create the tasks of job (held by owner) and set its step to `step`, in
 * one transaction. Idempotent: a task that exists (same job, module,
 * class, backend, arch) is kept as it is, so a coordinator that crashed
 * after this call and runs it again duplicates nothing. -ESTALE when
 * owner does not hold the job.
 */
int store_tasks_create(struct store *s, int64_t job, const char *owner,
    const char *repo, const char *sha, const struct store_task_spec *v,
    size_t n, const char *step);

int store_task_get(struct store *s, int64_t id, struct store_task *out);

/* The tasks of a job, by id. */
int store_tasks_of_job(struct store *s, int64_t job, struct store_task **out,
    size_t *n);

/*
 * Take the oldest queued task a runner of backend/arch can run (task
 * backend "any" or equal, task arch "" or equal), leased lease_s seconds
 * to owner: running, attempts + 1. -ENOENT when none.
 */
int store_task_claim(struct store *s, const char *owner, const char *backend,
    const char *arch, int lease_s, struct store_task *out);

/*
 * Extend the lease. -ESTALE when owner no longer holds it: its lease ran
 * out, or it was cancelled (`/kernelbot stop`): the runner then kills
 * the work.
 */
int store_task_heartbeat(struct store *s, int64_t id, const char *owner,
    int lease_s);

/* The outcome of a task, for store_task_finish(); strings borrowed. */
struct store_task_result {
	const char *state;		/* STORE_TASK_DONE or STORE_TASK_FAILED */
	const char *ran_backend, *ran_arch;
	const char *out_dir;
	const char *summary;		/* JSON text or NULL */
	const char *error;		/* or NULL */
};

/* End a running task. -ESTALE when owner no longer holds it. */
int store_task_finish(struct store *s, int64_t id, const char *owner,
    const struct store_task_result *r);

/* Give a running task back to the queue (a runner stopping). */
int store_task_release(struct store *s, int64_t id, const char *owner);

/*
 * Requeue running tasks whose lease expired, or fail them (error "lease
 * expired N times") once they have had max_attempts (0: no limit).
 */
int store_tasks_requeue_expired(struct store *s, int max_attempts,
    int *requeued, int *failed);

/*
 * Cancel the queued and running tasks of module slug in repo (running
 * ones lose their lease: the runner's next heartbeat sees -ESTALE).
 * *n gets how many.
 */
int store_tasks_cancel(struct store *s, const char *repo, const char *slug,
    int *n);

/* Mark a finished task's result as published. */
int store_task_set_published(struct store *s, int64_t id);

/* ---- Runners (store_tasks.c) ---- */

struct store_runner {
	char *name, *host;
	int64_t pid;
	int gpu;			/* -1 for a CPU runner */
	char *backend;			/* "cpu", "cuda" */
	char *arch;			/* "cpu", "sm_90" */
	char *device;			/* the device's name */
	int64_t registered, heartbeat;
	int64_t task;			/* what it runs now, 0 if nothing */
};

void store_runner_free(struct store_runner *r);
void store_runners_free(struct store_runner *v, size_t n);

/* Register (or re-register) r->name with the rest of r; times are set here. */
int store_runner_register(struct store *s, const struct store_runner *r);

/* The runner is alive and runs task (0: none). -ENOENT if unregistered. */
int store_runner_heartbeat(struct store *s, const char *name, int64_t task);

int store_runners_list(struct store *s, struct store_runner **out, size_t *n);

/* ---- Commands and cleanups: claimed by the coordinator (store_coord.c) ---- */

struct store_command {
	int64_t id;
	char *provider, *repo;
	int64_t pr;
	char *command, *args, *actor, *author_association;
	int64_t comment_id;
	char *state;		/* pending, running, done, refused, failed */
	int attempts;
	char *result;		/* what the bot answered */
	int64_t created;
};

struct store_cleanup {
	int64_t id;
	char *provider, *repo;
	int64_t pr;
	char *head_ref;
	int merged;
	char *state;		/* pending, running, done, failed */
	int attempts;
	char *result;
	int64_t created;
	char *kind;		/* "pr": a closed PR; "work": sweep the runners' work dirs */
};

void store_command_free(struct store_command *c);
void store_cleanup_free(struct store_cleanup *c);

/* Claim the oldest pending one with a lease: -ENOENT when none. */
int store_command_claim(struct store *s, const char *owner, int lease_s,
    struct store_command *out);
int store_cleanup_claim(struct store *s, const char *owner, int lease_s,
    struct store_cleanup *out);

/*
 * Queue a cleanup of kind (not "pr", whose rows the intake makes) unless
 * one of that kind is pending or running already; *added (may be NULL)
 * gets 1 or 0.
 */
int store_cleanup_add(struct store *s, const char *kind, int *added);

/* Extend the lease; -ESTALE when lost. */
int store_command_heartbeat(struct store *s, int64_t id, const char *owner,
    int lease_s);

/*
 * End one with state "done", "refused" or "failed" (cleanups: done or
 * failed) and the result text. -ESTALE when owner no longer holds it.
 */
int store_command_finish(struct store *s, int64_t id, const char *owner,
    const char *state, const char *result);
int store_cleanup_finish(struct store *s, int64_t id, const char *owner,
    const char *state, const char *result);

/* Expired leases back to pending, or failed after max_attempts (0: no limit). */
int store_commands_requeue_expired(struct store *s, int max_attempts);

int store_commands_list(struct store *s, struct store_command **out,
    size_t *n);
void store_commands_free(struct store_command *v, size_t n);

/* ---- Delivered modules: what has kernels, per architecture ---- */

struct store_delivered {
	char *repo, *slug, *arch;	/* the key */
	char *provider, *clone_url, *base_branch, *module, *class_name;
	char *last_sha;			/* the commit the kernel was made for */
	int64_t pr;			/* its pull request, 0 if none (closed) */
	char *out_dir;			/* the optimize --out directory */
	int64_t updated;
};

void store_delivered_free(struct store_delivered *d);
void store_delivered_list_free(struct store_delivered *v, size_t n);

/* Insert or replace the row of (repo, slug, arch). Strings borrowed. */
int store_delivered_put(struct store *s, const struct store_delivered *d);

/* Rows of repo (NULL: every repo) and slug (NULL: every module). */
int store_delivered_list(struct store *s, const char *repo, const char *slug,
    struct store_delivered **out, size_t *n);

/* The rows whose pull request is pr in repo. */
int store_delivered_by_pr(struct store *s, const char *repo, int64_t pr,
    struct store_delivered **out, size_t *n);

/* Forget pull request pr of repo (closed): its rows keep their kernels. */
int store_delivered_clear_pr(struct store *s, const char *repo, int64_t pr);

/* 1 when some delivered row has arch, 0 when none. */
int store_delivered_has_arch(struct store *s, const char *arch);

/* ---- The coordinator's clocks (schedule minute, arch checks) ---- */

/* 0 and *value, or -ENOENT when name was never set. */
int store_clock_get(struct store *s, const char *name, int64_t *value);
int store_clock_set(struct store *s, const char *name, int64_t value);

/* ---- The kernel archive (stage 4; pipeline/archive/archive.h uses it) ---- */

/*
 * One archived kernel. Doubles are NAN where unknown (JSON null); strings
 * NULL where unknown. As an input (store_archive_add) the strings are
 * borrowed; as an output they are owned and freed by
 * store_archive_entry_free().
 */
struct store_archive_entry {
	int64_t id;			/* output only */
	int64_t created;		/* seconds since the epoch; 0 on input: now */
	char *problem;			/* a short name */
	char *problem_source;		/* the problem file's text */
	char *problem_sha;		/* hex SHA-256 of problem_source */
	char *ops;			/* sorted op names, space-separated ("" if unknown) */
	char *shape_class;		/* "float32 in=2 out=2 n=2^15" ("" if unknown) */
	char *ir;			/* graph IR JSON text or NULL */
	char *backend;			/* "cpu" or "cuda" */
	char *arch;			/* "sm_90", "cpu" */
	char *device;			/* "NVIDIA H200" or NULL */
	char *kernel;			/* the kernel source */
	char *kernel_sha;		/* hex SHA-256 of kernel */
	double ms, eager_ms, compile_ms;	/* medians */
	double speedup_eager, speedup_eager_lo, speedup_eager_hi;
	double speedup_compile, speedup_compile_lo, speedup_compile_hi;
	char *proposer, *model;
	char *parents;			/* JSON array text or NULL */
	int64_t job;			/* 0 if none */
	char *repo, *module;
	double rank;			/* output of store_archive_search: BM25
					 * (lower is better); 0 elsewhere */
};

void store_archive_entry_free(struct store_archive_entry *e);
void store_archive_entries_free(struct store_archive_entry *e, size_t n);

/*
 * Insert n entries in ONE transaction; results[i] (may be NULL) gets 0,
 * -EEXIST for a duplicate of (kernel_sha, arch, problem_sha) (skipped,
 * not an error) or the entry's own -EINVAL; ids[i] (may be NULL) the new
 * or existing row's id. The caller validates; the schema's CHECKs are the
 * last line. Returns 0 when the transaction committed, -errno when nothing
 * was (an entry that fails other than by duplication rolls back all).
 */
int store_archive_add(struct store *s, const struct store_archive_entry *e,
    size_t n, int *results, int64_t *ids);

/* One entry by id: 0, -ENOENT. */
int store_archive_get(struct store *s, int64_t id, struct store_archive_entry *out);

/*
 * Entries newest first, at most limit (0: all), only of arch when arch is
 * non-NULL. With `full` 0 the big texts (problem_source, ir, kernel) are
 * left NULL. *out is freed with store_archive_entries_free().
 */
int store_archive_list(struct store *s, const char *arch, size_t limit,
    int full, struct store_archive_entry **out, size_t *n);

/*
 * Call fn for every entry in id order (full texts), for export; fn returns
 * 0 to go on or -errno to stop with it. The store is locked during the
 * walk, so fn must not call the store.
 */
int store_archive_each(struct store *s,
    int (*fn)(const struct store_archive_entry *e, void *arg), void *arg);

/*
 * Full-text search (FTS5, BM25) over problem source, kernel code and op
 * names. terms are plain words: each is quoted, so no FTS5 syntax in them
 * (quotes, *, NEAR, parentheses, column filters) is ever interpreted.
 * `any`: match entries with any term (OR) rather than all (AND).
 * `ops_only`: match the op names only. Results best first (e.rank),
 * at most limit (1..1000), full texts. No terms with a word character:
 * an empty result.
 */
#define STORE_ARCHIVE_MAX_TERMS 128
int store_archive_search(struct store *s, const char *const *terms,
    size_t nterms, int any, int ops_only, size_t limit,
    struct store_archive_entry **out, size_t *n);

/* Any entry for arch: 1, 0, or -errno. */
int store_archive_has_arch(struct store *s, const char *arch);

/* ---- LLM calls (store/store_llm.c) ---- */

/* One attempt of one LLM request (pipeline/llm/client.h's record hook). */
struct store_llm_call {
	int64_t job;			/* 0: none (a command-line run) */
	const char *model, *provider, *stage, *prompt_sha, *status;
	long http_status;		/* 0: no response */
	int attempt;
	int64_t tokens_in, tokens_out;
	double cost, latency_s;
};

/* Record one; the time is the store's now. 0, -EINVAL, -EIO. */
int store_llm_call_add(struct store *s, const struct store_llm_call *c);

/* Totals over the calls of job (0: all calls): 0 and the sums. */
struct store_llm_totals {
	int64_t calls, tokens_in, tokens_out;
	double cost;
};
int store_llm_totals(struct store *s, int64_t job,
    struct store_llm_totals *out);

/* ---- Counts for tests and tools ---- */

/* Rows in "deliveries", "jobs", "commands", "cleanups", "tasks" or "runners". */
int store_count(struct store *s, const char *table, int64_t *n);

#endif
