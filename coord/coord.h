/*
 * coord: the coordinator inside `kernelbot serve` (docs/design.md,
 * "Processes"). One thread drives every piece of work from the store:
 *
 *   push job   claim (lease) -> fetch the mirror -> changed modules ->
 *              check out the commit -> one task per module (step "tasks")
 *              -> pending statuses -> as each task ends: report, branch,
 *              PR, comment, status -> job done
 *   commands   `/kernelbot ...` PR comments: permission and fork checks,
 *              a reaction, the work, an answer
 *   cleanups   closed PRs: their modules lose their PR number
 *   schedule   cron in `schedule:`: re-optimize the delivered modules
 *   new arch   a runner of a GPU architecture no delivered module has
 *              kernels for: re-optimize them for it
 *
 * Everything is in the store before it is acted on, and every action is
 * idempotent (tasks are unique per job and module, deliver() finds the PR
 * by its branch, command answers carry a marker), so `kill -9` at any
 * point and a restart finish the work once. Runners (cli/cmd_runner.c)
 * run the tasks; `serve` starts local ones per `runners:` and restarts
 * them when they exit. docs/operations.md is the user's side of it.
 */
#ifndef KB_COORD_COORD_H
#define KB_COORD_COORD_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "conf/config.h"
#include "coord/cron.h"
#include "store/store.h"

#define COORD_RUNNERS_AUTO	(-1)
#define COORD_MAX_LOCAL		64	/* local runners serve may start */
#define COORD_MAX_SCHEDULES	16
#define COORD_MAX_JOBS		8	/* jobs the coordinator holds at once */
#define COORD_RETRIES		8	/* retries of a failing fetch or publish */
#define COORD_RETRY_BASE_MS	2000	/* the wait before the first retry */
#define COORD_RETRY_MAX_MS	300000	/* doubled each retry, up to this */

/* The `runners:` and `schedule:` sections of the server configuration. */
struct coord_opts {
	int coordinator;	/* 0: this serve only takes webhooks; default 1 */
	int local_runners;	/* COORD_RUNNERS_AUTO, 0 (none) or N */
	int lease_s;		/* task, job and command leases; default 60 */
	int max_attempts;	/* a task's runs before it fails; default 3 */
	int poll_ms;		/* how often idle loops look; default 1000 */
	int timeout_s;		/* one optimize run; default 7200 */
	int work_keep_failed_h;	/* hours a failed task's work dir is kept; default 24 */
	int retries;		/* a job's fetch or a result's publishing; COORD_RETRIES */
	int retry_base_ms, retry_max_ms;	/* backoff: base * 2^(n-1), capped */
	json_t *command;	/* argv run instead of `kernelbot optimize`, or NULL */
	json_t *optimize_args;	/* more arguments for optimize (array) */
	json_t *benchmark_args;	/* more arguments for a benchmark's `kernelbot eval` (array) */
	struct cron schedules[COORD_MAX_SCHEDULES];
	size_t n_schedules;
};

/*
 * Read and check runners: and schedule: from cfg's tree:
 *
 *   runners: auto | none | N           (shorthand for local:)
 *   runners:
 *     local: auto | none | N
 *     coordinator: true                (false: intake only, no coordinator)
 *     lease_s: 60
 *     max_attempts: 3
 *     poll_ms: 1000
 *     timeout_s: 7200
 *     work_keep_failed_h: 24           (0: removed at the next sweep)
 *     retries: 8                       (then the job fails, with the reason)
 *     retry_base_ms: 2000              (2 s, 4 s, 8 s, ... between tries,
 *     retry_max_ms: 300000              at most this)
 *     optimize_args: [--budget, small]
 *     benchmark_args: [--trials, "10"]  (more for a benchmark's eval)
 *     command: [/path/to/program]      (instead of `kernelbot optimize`)
 *   schedule: "0 3 * * 0"              (or a list of them)
 *
 * 0, or -EINVAL with "FILE:LINE: KEY: reason" in err.
 */
int coord_opts_load(const struct config *cfg, struct coord_opts *out,
    char *err, size_t errlen);
void coord_opts_free(struct coord_opts *o);

/*
 * The files of the coordinator and runners under DATA_DIR:
 *   work/job-N/src               a job's checkout, shared read-only by
 *                                the runners running its tasks; removed
 *                                when the job is done
 *   runners/NAME/                one runner's own work area, held by one
 *                                process at a time (the flock of its lock)
 *   runners/NAME/task-T-A/       the work of task T's attempt A: out/
 *                                (optimize --out) and tmp/ (TMPDIR);
 *                                removed once the results are stored, kept
 *                                work_keep_failed_h hours when it failed
 *   results/job-N/task-T-A/      the stored results (out/ renamed), which
 *                                the task's out_dir names and PRs are
 *                                rebuilt from
 * Each 0 or -ENAMETOOLONG.
 */
int coord_job_dir(const char *data_dir, long long job, char *out, size_t len);
int coord_runner_dir(const char *data_dir, const char *name, char *out,
    size_t len);
int coord_results_dir(const char *data_dir, long long job, long long task,
    int attempt, char *out, size_t len);

/* 1 when name is fit for a runner (and its directory): [A-Za-z0-9._-], not "." first, at most 64. */
int coord_runner_name_ok(const char *name);

/*
 * Remove the work directories under DATA_DIR/runners/ that nothing needs:
 * those of finished tasks whose results are stored elsewhere, and those
 * (of failed, stopped or abandoned attempts) last changed more than
 * keep_h hours before now; never one of a running attempt, nor one that
 * still holds a done task's results (they could not be moved). *removed gets
 * how many. 0 or -errno.
 */
int coord_work_sweep(struct store *store, const char *data_dir, int keep_h,
    time_t now, int *removed);

struct coord;

/*
 * Start the coordinator thread and the local runners. config_file is
 * what runners get as --config (NULL: none, they use data_dir). cfg and
 * store must outlive coord_stop(). 0 or -errno with err.
 */
int coord_start(const struct config *cfg, const char *config_file,
    struct store *store, struct coord **out, char *err, size_t errlen);

/* Stop the thread (the job in hand keeps its lease and resumes later) and the runners. */
void coord_stop(struct coord *c);

#endif
