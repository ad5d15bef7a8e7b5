/*
 * kernelbot runner: one worker for one GPU (or the CPU). It registers in
 * the store (backend, architecture, device), takes tasks by lease, runs
 * `kernelbot optimize CHECKOUT MODULE --backend B [--device N] --out DIR
 * --json` for each as a subprocess (common/spawn.h: its own process
 * group, a deadline, a group kill), heartbeats while it runs, and records
 * the summary; a benchmark task runs `kernelbot eval` of the PR's kernel
 * instead (no search). It works only in its own area, DATA_DIR/runners/
 * NAME (flock'd for its life, so two runners of one name cannot share
 * it); a finished task's results move to DATA_DIR/results/ and its work
 * directory goes (coord.h has the layout). A runner that dies loses one
 * lease: the coordinator puts the task back in the queue when it expires. A task that loses its lease
 * while running (cancelled by `/kernelbot stop`, or expired) has its
 * subprocess killed at the next heartbeat. Under systemd (Type=notify,
 * kernelbot-runner@.service) it says READY=1 once registered and pings the
 * watchdog from its idle loop and, while optimize runs, from the
 * heartbeat loop that supervises it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pipeline/optimize/budget.h"
#include "cli/cli.h"
#include "conf/config.h"
#include "coord/coord.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/notify.h"
#include "common/spawn.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"
#include "gpu/device.h"
#include "pipeline/archive/archive.h"

#define RUNNER_MAX_ARGS 160
#define RUNNER_ERR_TAIL 400	/* bytes of stderr kept as a task's error */

extern char **environ;

static atomic_int stopping;

struct run_ctx {
	struct store *store;
	const char *name;
	int64_t task;
	int lease_s;
	atomic_int pid;		/* the optimize process group, 0 before it starts */
	atomic_int done;	/* the subprocess has returned */
	atomic_int lost;	/* the lease was lost: the work was killed */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void
runner_usage(FILE *f)
{
	fprintf(f, "usage: kernelbot runner [--config FILE] [--data-dir DIR] "
	    "[--gpu N | --cpu] [--name NAME] [--once]\n\n"
	    "Take optimization tasks from the store and run them. Options [default]:\n"
	    "  --config FILE           the server configuration: data_dir, runners\n"
	    "                          [/etc/kernelbot/kernelbot.yml]\n"
	    "  --data-dir DIR          the store [the configuration's data_dir]\n"
	    "  --gpu N                 run on GPU N [the first GPU]\n"
	    "  --cpu                   run on the CPU [when there is no GPU]\n"
	    "  --name NAME             its name in the store and its work area\n"
	    "                          DATA_DIR/runners/NAME, which one runner holds at\n"
	    "                          a time [HOST-gpuN or HOST-cpu]\n"
	    "  --once                  run at most one task, then exit (0 also when\n"
	    "                          none was queued) [off]\n"
	    "docs/commands/runner.md; runners at work: docs/operations.md.\n");
}

static void
on_signal(int sig)
{
	(void)sig;
	atomic_store(&stopping, 1);
}

static void
started(pid_t pid, void *arg)
{
	struct run_ctx *x = arg;

	atomic_store(&x->pid, (int)pid);
}

/* In the optimize child: die with the runner. */
static int
child_setup(void *arg)
{
	(void)arg;
	return prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ? errno : 0;
}

/*
 * Heartbeat the task and the runner every lease/3 while optimize runs;
 * kill the work when the lease is lost or the runner stops.
 */
static void *
heartbeat(void *arg)
{
	struct run_ctx *x = arg;
	int period_ms = x->lease_s * 1000 / 3, wd_ms = notify_watchdog_ms();

	if (wd_ms > 0 && wd_ms < period_ms)
		period_ms = wd_ms;
	if (period_ms < 100)
		period_ms = 100;
	pthread_mutex_lock(&x->lock);
	while (!atomic_load(&x->done)) {
		struct timespec ts;
		int rc, pid;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += period_ms / 1000;
		ts.tv_nsec += (long)(period_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&x->cond, &x->lock, &ts);
		if (atomic_load(&x->done))
			break;
		pthread_mutex_unlock(&x->lock);
		notify_watchdog();
		rc = store_task_heartbeat(x->store, x->task, x->name, x->lease_s);
		store_runner_heartbeat(x->store, x->name, x->task);
		pid = atomic_load(&x->pid);
		if ((rc == -ESTALE || atomic_load(&stopping)) && pid > 0) {
			if (rc == -ESTALE)
				atomic_store(&x->lost, 1);
			log_info("stopping a task's work", "task=%lld reason=%s",
			    (long long)x->task, rc == -ESTALE ? "lease lost or "
			    "cancelled" : "runner stopping");
			kill(-pid, SIGTERM);
		}
		pthread_mutex_lock(&x->lock);
	}
	pthread_mutex_unlock(&x->lock);
	return NULL;
}


/* summary.json of the run: OUT/<slug>/summary.json or OUT/summary.json. */
static char *
read_summary(const char *out, const char *slug)
{
	struct buf b = BUF_INIT(1u << 20);
	char p[PATH_MAX * 2];
	json_t *j = NULL;
	char perr[128];

	snprintf(p, sizeof(p), "%s/%s/summary.json", out, slug);
	if (buf_read_file(&b, p) < 0) {
		buf_reset(&b);
		snprintf(p, sizeof(p), "%s/summary.json", out);
		if (buf_read_file(&b, p) < 0) {
			buf_free(&b);
			return NULL;
		}
	}
	/* Only JSON goes into the store. */
	if (jsonx_parse(buf_cstr(&b), b.len, &j, perr, sizeof(perr)) < 0) {
		buf_free(&b);
		return NULL;
	}
	json_decref(j);
	return buf_detach(&b, NULL);
}

struct runner {
	const struct config *cfg;
	struct store *store;
	const struct coord_opts *opts;
	const char *config_file, *data_dir, *name;
	const char *backend, *arch;
	int gpu;
	char self[PATH_MAX];
	char area[PATH_MAX];	/* DATA_DIR/runners/NAME, this runner's alone */
};

/*
 * Every verified kernel of the run goes into the archive, for later
 * searches to learn from; a run without one is skipped there, and an
 * archive failure costs the archive an entry, never the task.
 */
static void
archive_result(struct runner *rn, const struct store_task *t, const char *out)
{
	struct archive_provenance prov = ARCHIVE_PROVENANCE_INIT;
	struct archive_ingest_stats st;
	char err[512] = "";
	int rc;

	memset(&st, 0, sizeof(st));
	prov.job = t->job;
	prov.repo = t->repo;
	prov.module = t->module;
	prov.arch = rn->arch;
	if ((rc = archive_ingest_optimize_dir(rn->store, out, &prov, &st, err,
	    sizeof(err))) < 0)
		log_warn("result not archived", "task=%lld err=\"%s\"",
		    (long long)t->id, err);
	else
		log_info("result archived", "task=%lld added=%d duplicates=%d "
		    "skipped=%d", (long long)t->id, st.added, st.duplicates, st.skipped);
}

/*
 * The budget flags of a task: its repository's .kernelbot.yml budget at
 * the job's commit (the checkout src), within the server's budgets:. A
 * file that does not parse (the job would not have got here with one it
 * needed) adds none.
 */
static void
repo_budget_args(struct runner *rn, const struct store_task *t,
    const char *src, const char **argv, size_t *n,
    char text[][BUDGET_ARG_LEN])
{
	struct buf b = BUF_INIT(1u << 20);
	struct repocfg *rc = NULL;
	struct evolve_budget eb;
	char p[PATH_MAX + 32], err[512] = "";

	snprintf(p, sizeof(p), "%s/" REPOCFG_FILE, src);
	if (buf_read_file(&b, p) < 0)
		goto out;
	if (repocfg_parse(REPOCFG_FILE, buf_cstr(&b), b.len, &rc, err,
	    sizeof(err)) < 0 || budget_for_repo(rn->cfg,
	    json_object_get(repocfg_json(rc), "budget"), &eb, err,
	    sizeof(err)) < 0) {
		log_warn("no repository budget", "task=%lld err=\"%s\"",
		    (long long)t->id, err);
		goto out;
	}
	budget_optimize_args(&eb, argv, n, text);
out:
	repocfg_free(rc);
	buf_free(&b);
}

/*
 * The environment of a task's subprocess: ours (our own binary; optimize
 * needs what we were given, the LLM keys among them) with TMPDIR in the
 * task's work directory, so its scratch goes where the sweep finds it.
 */
static const char **
task_env(const char *tmpdir, char *tmpvar, size_t len)
{
	size_t n = 0, k = 0;
	const char **env;

	while (environ[n])
		n++;
	if (!(env = calloc(n + 2, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "TMPDIR=", 7))
			env[k++] = environ[i];
	snprintf(tmpvar, len, "TMPDIR=%s", tmpdir);
	env[k++] = tmpvar;
	env[k] = NULL;
	return env;
}

/*
 * The kernel a benchmark times, as the PR holds it at the job's commit:
 * kernels/SLUG/ARCH.cu or kernel.cu for CUDA, kernel.c for the CPU.
 * 0 with its repository-relative path in rel, or -ENOENT.
 */
static int
bench_kernel(const struct runner *rn, const struct store_task *t,
    const char *src, char *rel, size_t len)
{
	char cand[3][64], p[PATH_MAX * 2];
	struct stat sb;
	size_t nc = 0;

	if (!strcmp(rn->backend, "cuda")) {
		snprintf(cand[nc++], sizeof(cand[0]), "%s.cu", rn->arch);
		snprintf(cand[nc++], sizeof(cand[0]), "kernel.cu");
	} else {
		snprintf(cand[nc++], sizeof(cand[0]), "kernel.c");
	}
	for (size_t i = 0; i < nc; i++) {
		if ((size_t)snprintf(rel, len, "kernels/%.*s/%s", MODULES_MAX_SLUG,
		    t->slug, cand[i]) >= len)
			return -ENAMETOOLONG;
		snprintf(p, sizeof(p), "%s/%s", src, rel);
		if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode))
			return 0;
	}
	return -ENOENT;
}

/*
 * A benchmark's summary: {"kind": "benchmark", "module", "class", "slug",
 * "kernel", "backend", "arch", "result": the evaluator's object}, from
 * eval's stdout, also kept as OUT/result.json. NULL (err set) when eval
 * printed no JSON object.
 */
static char *
bench_summary(const struct runner *rn, const struct store_task *t,
    const char *kernel, const struct spawn_result *res, const char *out,
    char *err, size_t errlen)
{
	json_t *r = NULL, *s;
	char perr[128], p[PATH_MAX * 2];
	char *text = NULL;

	if (jsonx_parse(buf_cstr(&res->out), res->out.len, &r, perr,
	    sizeof(perr)) < 0 || !json_is_object(r)) {
		const char *e = buf_cstr(&res->err);
		size_t len = strlen(e);

		snprintf(err, errlen, "kernelbot eval (status %d) gave no result%s%s",
		    res->status, len ? ": " : "", len > RUNNER_ERR_TAIL ?
		    e + len - RUNNER_ERR_TAIL : e);
		json_decref(r);
		return NULL;
	}
	snprintf(p, sizeof(p), "%s/result.json", out);
	if (fsx_write_file(p, buf_cstr(&res->out), res->out.len) < 0)
		log_warn("cannot keep a benchmark's result", "path=%s", p);
	s = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "kind",
	    "benchmark", "module", t->module, "class", t->class_name, "slug",
	    t->slug, "kernel", kernel, "backend", rn->backend, "arch", rn->arch,
	    "result", r);
	if (s)
		text = json_dumps(s, JSON_COMPACT);
	json_decref(s);
	if (!text)
		snprintf(err, errlen, "out of memory");
	return text;
}

/*
 * Move a finished run's OUT to DATA_DIR/results/job-N/task-T-A (one
 * rename: the same file system). final gets where the results are: the
 * results directory, or OUT when they could not be moved (the work
 * directory then stays, for the sweep).
 */
static void
store_results(struct runner *rn, const struct store_task *t, const char *out,
    char *final, size_t len)
{
	int rc;

	snprintf(final, len, "%s", out);
	if ((rc = coord_results_dir(rn->data_dir, (long long)t->job,
	    (long long)t->id, t->attempts, final, len)) < 0 ||
	    (rc = fsx_mkdir_parents(final, 0750)) < 0 ||
	    (rc = fsx_rmtree(final)) < 0 ||
	    (rename(out, final) < 0 && (rc = -errno) < 0)) {
		log_warn("results left in the work directory", "task=%lld out=%s "
		    "err=\"%s\"", (long long)t->id, out, strerror(-rc));
		snprintf(final, len, "%s", out);
	}
}

/*
 * The command line of task t: kernelbot eval of kernel (a benchmark's:
 * the PR's kernel, relative to src) or optimize (or runners.command)
 * over the checkout src into out, on this runner's device, then
 * runners.optimize_args (benchmark_args) and the repository's budget.
 * argv has RUNNER_MAX_ARGS; dev and text hold what it points to.
 */
static void
task_argv(struct runner *rn, const struct store_task *t, const char *src, const char *out,
    const char *kernel, const char **argv, char dev[16], char text[][BUDGET_ARG_LEN])
{
	const json_t *extra = rn->opts->optimize_args, *it;
	size_t i, n = 0;

	if (kernel) {
		argv[n++] = rn->self;
		argv[n++] = "eval";
		argv[n++] = t->module;
		argv[n++] = kernel;
		argv[n++] = "--class";
		argv[n++] = t->class_name;
		argv[n++] = "--backend";
		argv[n++] = rn->backend;
		argv[n++] = "--json";
		extra = rn->opts->benchmark_args;
	} else if (rn->opts->command) {
		json_array_foreach(rn->opts->command, i, it)
			if (n < RUNNER_MAX_ARGS - 40)
				argv[n++] = json_string_value(it);
	} else {
		argv[n++] = rn->self;
		argv[n++] = "optimize";
	}
	if (!kernel) {
		argv[n++] = src;
		argv[n++] = t->module;
		argv[n++] = "--backend";
		argv[n++] = rn->backend;
		argv[n++] = "--out";
		argv[n++] = out;
		argv[n++] = "--json";
		/* The task's module is one class: the others of its file are other tasks. */
		argv[n++] = "--class";
		argv[n++] = t->class_name;
		if (rn->config_file) {
			argv[n++] = "--config";
			argv[n++] = rn->config_file;
		}
	}
	if (rn->gpu >= 0) {
		snprintf(dev, 16, "%d", rn->gpu);
		argv[n++] = "--device";
		argv[n++] = dev;
	}
	json_array_foreach(extra, i, it)
		if (n < RUNNER_MAX_ARGS - BUDGET_MAX_ARGS - 1)
			argv[n++] = json_string_value(it);
	/* After optimize_args: the repository's budget replaces their defaults. */
	if (!kernel)
		repo_budget_args(rn, t, src, argv, &n, text);
	argv[n] = NULL;
}

/* Run one claimed task to its end and record it. */
static void
run_task(struct runner *rn, struct store_task *t)
{
	struct run_ctx x;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result res;
	struct store_task_result tr;
	pthread_t hb;
	const char *argv[RUNNER_MAX_ARGS], **env = NULL;
	char dir[PATH_MAX], src[PATH_MAX + 8], work[PATH_MAX + 64];
	char out[PATH_MAX + 80], tmp[PATH_MAX + 80], final[PATH_MAX + 80];
	char tmpvar[PATH_MAX + 96], dev[16], kernel[MODULES_MAX_SLUG + 80] = "";
	char err[RUNNER_ERR_TAIL + 128] = "";
	char budget_text[BUDGET_MAX_ARGS][BUDGET_ARG_LEN];
	char *summary = NULL;
	int bench = !strcmp(t->kind, "benchmark");
	int rc, hb_started = 0;

	memset(&res, 0, sizeof(res));
	memset(&tr, 0, sizeof(tr));
	coord_job_dir(rn->data_dir, (long long)t->job, dir, sizeof(dir));
	snprintf(src, sizeof(src), "%s/src", dir);
	/*
	 * This runner's own area, a new directory per attempt: no other
	 * runner writes there, and a killed attempt's leftovers mislead no one.
	 */
	snprintf(work, sizeof(work), "%s/task-%lld-%d", rn->area, (long long)t->id,
	    t->attempts);
	snprintf(out, sizeof(out), "%s/out", work);
	snprintf(tmp, sizeof(tmp), "%s/tmp", work);
	snprintf(final, sizeof(final), "%s", out);
	if ((rc = fsx_rmtree(work)) < 0 || (rc = fsx_mkdir_p(out, 0750)) < 0 ||
	    (rc = fsx_mkdir_p(tmp, 0700)) < 0) {
		snprintf(err, sizeof(err), "cannot make the work directory %.300s: "
		    "%s", work, strerror(-rc));
		goto finish;
	}
	if (!(env = task_env(tmp, tmpvar, sizeof(tmpvar)))) {
		snprintf(err, sizeof(err), "out of memory");
		goto finish;
	}
	if (bench && bench_kernel(rn, t, src, kernel, sizeof(kernel)) < 0) {
		/* The PR's kernel against the module, both at the job's commit: no search. */
		snprintf(err, sizeof(err), "no kernel to benchmark: kernels/%s/ "
		    "has none for %s (%s)", t->slug, rn->arch, rn->backend);
		goto finish;
	}
	task_argv(rn, t, src, out, bench ? kernel : NULL, argv, dev, budget_text);

	memset(&x, 0, sizeof(x));
	x.store = rn->store;
	x.name = rn->name;
	x.task = t->id;
	x.lease_s = rn->opts->lease_s;
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.cond, NULL);
	if (pthread_create(&hb, NULL, heartbeat, &x) == 0)
		hb_started = 1;
	o.argv = argv;
	o.envp = env;
	o.cwd = src;
	o.timeout_ms = rn->opts->timeout_s * 1000;
	o.child_setup = child_setup;
	o.on_start = started;
	o.start_arg = &x;
	o.out_max = 4u << 20;
	log_info("task started", "task=%lld job=%lld module=%s kind=%s attempt=%d "
	    "work=%s", (long long)t->id, (long long)t->job, t->module, t->kind,
	    t->attempts, work);
	notify_status("task %lld: %s (%s), attempt %d", (long long)t->id, t->module,
	    t->repo, t->attempts);
	rc = spawn_run(&o, &res);
	pthread_mutex_lock(&x.lock);
	atomic_store(&x.done, 1);
	pthread_cond_signal(&x.cond);
	pthread_mutex_unlock(&x.lock);
	if (hb_started)
		pthread_join(hb, NULL);
	pthread_cond_destroy(&x.cond);
	pthread_mutex_destroy(&x.lock);
	if (atomic_load(&x.lost)) {
		log_info("task abandoned: its lease is gone", "task=%lld",
		    (long long)t->id);
		goto out;
	}
	if (atomic_load(&stopping)) {
		/* Not the task's fault: give it back for another runner. */
		store_task_release(rn->store, t->id, rn->name);
		goto out;
	}
	if (rc < 0) {
		snprintf(err, sizeof(err), "cannot run %s: %s", argv[0], strerror(-rc));
		goto finish;
	}
	if (bench) {
		summary = bench_summary(rn, t, kernel, &res, out, err, sizeof(err));
	} else if (!(summary = read_summary(out, t->slug))) {
		const char *e = buf_cstr(&res.err);
		size_t len = strlen(e);

		snprintf(err, sizeof(err), "optimize %s (status %d) without a "
		    "summary.json%s%s", res.timed_out ? "timed out" : "ended",
		    res.status, len ? ": " : "", len > RUNNER_ERR_TAIL ?
		    e + len - RUNNER_ERR_TAIL : e);
	}
	if (summary)
		store_results(rn, t, out, final, sizeof(final));
finish:
	tr.state = summary ? STORE_TASK_DONE : STORE_TASK_FAILED;
	tr.ran_backend = rn->backend;
	tr.ran_arch = rn->arch;
	tr.out_dir = final;
	tr.summary = summary;
	tr.error = summary ? NULL : err;
	if (summary && !bench)
		archive_result(rn, t, final);
	if ((rc = store_task_finish(rn->store, t->id, rn->name, &tr)) < 0) {
		log_warn("task result not recorded", "task=%lld err=\"%s\"",
		    (long long)t->id, strerror(-rc));
		goto out;
	}
	log_info("task finished", "task=%lld state=%s%s%s", (long long)t->id,
	    tr.state, summary ? "" : " err=", summary ? "" : err);
	/* Stored: the work goes; a failure's stays runners.work_keep_failed_h for a look. */
	if (strcmp(final, out) && (rc = fsx_rmtree(work)) < 0)
		log_warn("cannot remove a work directory", "path=%s err=\"%s\"",
		    work, strerror(-rc));
	else if (!summary)
		utimensat(AT_FDCWD, work, NULL, 0);	/* the keep time counts from now */
out:
	free(summary);
	free(env);
	spawn_result_free(&res);
}

/*
 * This runner's own work area, DATA_DIR/runners/NAME, locked (flock on
 * its file "lock", held until the runner exits) so that a second runner
 * of the same name on this host cannot work in it too. The lock's fd, or
 * -1 after saying why.
 */
static int
runner_area(const char *data_dir, const char *name, char *area, size_t len)
{
	char lock[PATH_MAX + 8];
	int fd, rc;

	if ((rc = coord_runner_dir(data_dir, name, area, len)) < 0 ||
	    (rc = fsx_mkdir_p(area, 0750)) < 0) {
		fprintf(stderr, "kernelbot runner: cannot make %s/runners/%s: %s\n",
		    data_dir, name, strerror(-rc));
		return -1;
	}
	snprintf(lock, sizeof(lock), "%s/lock", area);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) < 0) {
		fprintf(stderr, "kernelbot runner: %s: %s\n", lock, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			fprintf(stderr, "kernelbot runner: a runner named %s is already "
			    "running with the data directory %s (%s is locked); give "
			    "each runner its own --name\n", name, data_dir, lock);
		else
			fprintf(stderr, "kernelbot runner: %s: %s\n", lock,
			    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Which backend, architecture and device this runner is. */
static int
detect(int want_gpu, int cpu, int *gpu, char *arch, size_t archlen,
    char *device, size_t devlen, const char **backend)
{
	struct gpu_device *gpus = NULL;
	char why[256] = "";
	int n = 0, found = -1;

	if (cpu) {
		*gpu = -1;
		*backend = "cpu";
		snprintf(arch, archlen, "cpu");
		snprintf(device, devlen, "cpu");
		return 0;
	}
	if (gpu_list(&gpus, &n, why, sizeof(why)) < 0)
		n = 0;
	for (int i = 0; i < n; i++)
		if (want_gpu < 0 ? i == 0 : gpus[i].index == want_gpu)
			found = i;
	if (found < 0) {
		free(gpus);
		if (want_gpu >= 0) {
			fprintf(stderr, "kernelbot runner: no GPU %d on this host%s%s\n",
			    want_gpu, why[0] ? ": " : "", why);
			return -ENODEV;
		}
		return detect(-1, 1, gpu, arch, archlen, device, devlen, backend);
	}
	*gpu = gpus[found].index;
	*backend = "cuda";
	snprintf(arch, archlen, "sm_%d%d", gpus[found].cc_major, gpus[found].cc_minor);
	snprintf(device, devlen, "%s", gpus[found].name);
	free(gpus);
	return 0;
}

int
cmd_runner(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "cpu", no_argument, NULL, 'C' },
		{ "name", required_argument, NULL, 'n' },
		{ "once", no_argument, NULL, '1' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_file = NULL, *data_dir = NULL, *name = NULL;
	struct config *cfg = NULL;
	struct store *store = NULL;
	struct coord_opts copts;
	struct store_runner reg;
	struct runner rn;
	struct sigaction sa;
	char err[CONFIG_ERR_MAX], arch[32], device[256], host[64] = "localhost";
	char defname[128];
	int opt, once = 0, cpu = 0, want_gpu = -1, rc = 1, error, lock_fd = -1;
	ssize_t sn;

	memset(&copts, 0, sizeof(copts));
	memset(&rn, 0, sizeof(rn));
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:d:g:Cn:1h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config_file = optarg; break;
		case 'd': data_dir = optarg; break;
		case 'C': cpu = 1; break;
		case 'n': name = optarg; break;
		case '1': once = 1; break;
		case 'g':
			if (cli_parse_int(optarg, 0, INT_MAX, &want_gpu) < 0)
				return cli_usage_error("runner", "--gpu wants a GPU index, "
				    "not '%s'", optarg);
			break;
		case 'h': runner_usage(stdout); return 0;
		default: runner_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("runner", "unexpected argument '%s'", argv[optind]);
	if (cpu && want_gpu >= 0)
		return cli_usage_error("runner", "give --gpu N or --cpu, not both");
	if ((rc = config_load_cli("runner", config_file, CONFIG_NO_SECRETS, &cfg)) != 0)
		return rc;
	rc = EXIT_USAGE;
	if (data_dir && config_set_data_dir(cfg, data_dir) < 0) {
		cli_usage_error("runner", "--data-dir must not be empty");
		goto out;
	}
	if (coord_opts_load(cfg, &copts, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot runner: %s\n", err);
		goto out;
	}
	rc = 1;
	if (detect(want_gpu, cpu, &rn.gpu, arch, sizeof(arch), device,
	    sizeof(device), &rn.backend) < 0)
		goto out;
	rn.arch = arch;
	gethostname(host, sizeof(host) - 1);
	if (!name) {
		if (rn.gpu >= 0)
			snprintf(defname, sizeof(defname), "%s-gpu%d", host, rn.gpu);
		else
			snprintf(defname, sizeof(defname), "%s-cpu", host);
		name = defname;
	}
	if (!coord_runner_name_ok(name)) {
		rc = cli_usage_error("runner", "--name: '%s' is not a runner name "
		    "(letters, digits, '.', '_', '-', at most 64, not starting with "
		    "'.')", name);
		goto out;
	}
	if ((lock_fd = runner_area(config_data_dir(cfg), name, rn.area,
	    sizeof(rn.area))) < 0)
		goto out;
	if ((sn = readlink("/proc/self/exe", rn.self, sizeof(rn.self) - 1)) < 0) {
		fprintf(stderr, "kernelbot runner: /proc/self/exe: %s\n", strerror(errno));
		goto out;
	}
	rn.self[sn] = '\0';
	if ((error = store_open(config_data_dir(cfg), 0, &store)) < 0) {
		fprintf(stderr, "kernelbot runner: cannot open the store in %s: %s\n",
		    config_data_dir(cfg), strerror(-error));
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	memset(&reg, 0, sizeof(reg));
	reg.name = (char *)name;
	reg.host = host;
	reg.pid = getpid();
	reg.gpu = rn.gpu;
	reg.backend = (char *)rn.backend;
	reg.arch = arch;
	reg.device = device;
	if ((error = store_runner_register(store, &reg)) < 0) {
		fprintf(stderr, "kernelbot runner: cannot register: %s\n",
		    strerror(-error));
		goto out;
	}
	log_info("runner registered", "name=%s backend=%s arch=%s device=\"%s\"",
	    name, rn.backend, arch, device);
	notify_ready("waiting for tasks");
	rn.cfg = cfg;
	rn.store = store;
	rn.opts = &copts;
	rn.config_file = config_file;
	rn.data_dir = config_data_dir(cfg);
	rn.name = name;
	while (!atomic_load(&stopping)) {
		struct store_task t;

		store_runner_heartbeat(store, name, 0);
		notify_watchdog();
		error = store_task_claim(store, name, rn.backend, arch, copts.lease_s, &t);
		if (error == 0) {
			run_task(&rn, &t);
			store_task_free(&t);
			notify_status("waiting for tasks");
			if (once)
				break;
			continue;
		}
		if (error != -ENOENT && error != -EBUSY)
			log_warn("cannot claim a task", "err=\"%s\"", strerror(-error));
		if (once)
			break;
		for (int ms = 0; ms < copts.poll_ms && !atomic_load(&stopping) &&
		    (notify_watchdog_ms() < 0 || ms < notify_watchdog_ms()); ms += 50) {
			struct timespec ts = { 0, 50000000L };

			nanosleep(&ts, NULL);
		}
	}
	notify_stopping();
	rc = 0;
out:
	if (lock_fd >= 0)
		close(lock_fd);
	coord_opts_free(&copts);
	store_close(store);
	config_free(cfg);
	return rc;
}
