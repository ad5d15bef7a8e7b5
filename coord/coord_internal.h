/*
 * coord_internal: what coord/coord*.c share. Not a contract for anyone else.
 */
#ifndef KB_COORD_COORD_INTERNAL_H
#define KB_COORD_COORD_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "coord/coord.h"
#include "gitops/forge.h"
#include "gitops/gitops.h"
#include "gitops/repocfg.h"

#define COORD_MAX_ANNOUNCED 64	/* running tasks a held job remembers announcing */

struct coord_held {
	int64_t id;
	/* "task T runs attempt A" already in its status: (T << 8) | A */
	int64_t announced[COORD_MAX_ANNOUNCED];
	size_t n_announced;
	int fails;		/* failures in a row of its fetch or of a publish */
	int64_t next_try;	/* monotonic ms before which it waits */
	char error[512];	/* a publish given up: the job ends failed with it */
};

struct coord_runner {
	struct coord *c;
	pthread_t thread;
	int started;
	int gpu;		/* -1: a CPU runner */
	int cpu_index;		/* a CPU runner's number: names HOST-cpu, HOST-cpu1, ... */
	atomic_int pid;		/* the running runner's pid, 0 when none */
};

struct coord {
	const struct config *cfg;
	struct store *store;
	struct coord_opts opts;
	char owner[160];		/* lease owner: coord:HOST:PID */
	char data_dir[PATH_MAX];
	char config_file[PATH_MAX];	/* "" when runners get --data-dir */
	char self_exe[PATH_MAX];
	pthread_t thread;
	int started;
	atomic_int stop;
	struct coord_held held[COORD_MAX_JOBS];
	size_t n_held;
	int swept_at_start;		/* the work sweep was queued since this start */
	struct coord_runner *runners;
	int n_runners;
};

/* Open the forge of provider for repo (forges.PROVIDER, driver: key). */
int coord_forge(struct coord *c, const char *provider, const char *repo,
    struct forge **out, char *err, size_t errlen);

/* The mirror of repo, fetched from clone_url with the forge's credentials. */
int coord_mirror(struct coord *c, struct forge *f, const char *repo,
    const char *clone_url, struct gitops_repo **out, char *err, size_t errlen);

/*
 * Queue a job for modules (a JSON array of {path, class, arch?,
 * backend?}) of repo at rev (a commit id or a ref; NULL: the tip of
 * branch), with trigger and payload extras (pr, kind; may be NULL).
 * branch is the target of the PRs the job's results go to. A commit id
 * the mirror lacks is fetched by id. *sha_out (may be NULL) gets the
 * commit.
 */
int coord_queue(struct coord *c, const char *provider, const char *repo,
    const char *clone_url, const char *branch, const char *rev,
    const char *trigger,
    json_t *modules, const json_t *extra, int64_t *job,
    char sha_out[GITOPS_OID_HEX], char *err, size_t errlen);

/* Remove finished job's checkout (and its directory once empty). */
void coord_remove_checkout(const char *data_dir, int64_t job);

/*
 * Answer a finished benchmark task t of job j with a comment on the PR
 * (payload's "pr"): the fresh speedup table and the device, or why it
 * failed. 0, or -errno to try again later.
 */
int coord_bench_publish(struct coord *c, const struct store_job *j,
    const struct store_task *t, const json_t *payload, struct forge *f);

void coord_commands_tick(struct coord *c);
void coord_cleanups_tick(struct coord *c);
void coord_schedule_tick(struct coord *c, time_t now);
void coord_arch_tick(struct coord *c);

int coord_runners_start(struct coord *c);
void coord_runners_stop(struct coord *c);

#define COORD_STATUS_CONTEXT "kernelbot/"	/* + slug: a module's commit status */
#define COORD_JOB_CONTEXT "kernelbot"	/* the status of the job as a whole */

/* Set a commit status, one short line; slug NULL: the job's own context. */
void coord_status(struct forge *f, const char *sha, enum forge_state st, const char *slug,
    const char *desc);

/* The job's payload as JSON, the caller's (an empty object when it has none). */
json_t *coord_job_payload(const struct store_job *j);

/* The .kernelbot.yml at sha, the caller's (defaults when absent or broken). */
struct repocfg *coord_repo_config(struct gitops_repo *r, const char *sha);

/*
 * Publish one finished task t of job j through forge f (coord_publish.c):
 * an improved result becomes the module's branch, PR, comment and status;
 * anything else only a status. 0 when done (also when there was nothing
 * to publish), -errno to retry later with why set.
 */
int coord_publish(struct coord *c, const struct store_job *j, const struct store_task *t,
    struct forge *f, char *why, size_t whylen);

/* Sleep ms, waking early when the coordinator stops. */
void coord_nap(struct coord *c, int ms);

#endif
