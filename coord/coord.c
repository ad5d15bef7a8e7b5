/*
 * coord: the coordinator's thread and its jobs. A job goes through steps
 * recorded in the store (jobs.step): "new" (nothing done yet: fetch,
 * find modules, check out, create the tasks and move to "tasks" in one
 * transaction) and "tasks" (publish each finished task once, marked by
 * tasks.published; done when every task is finished and published). A
 * crash between two steps repeats only idempotent work.
 */
#include "coord/coord_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"

#define COORD_JOB_ATTEMPTS 20		/* a job's leases before it fails */

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Trouble that may pass (the network, the forge, a lock): worth a retry. */
static int
transient(int rc)
{
	return rc == -EIO || rc == -EAGAIN || rc == -EBUSY;
}

/* The wait before retry n (1, 2, ...): retry_base_ms doubled, capped. */
static int64_t
retry_delay_ms(const struct coord_opts *o, int n)
{
	int64_t d = o->retry_base_ms;

	for (int i = 1; i < n && d < o->retry_max_ms; i++)
		d *= 2;
	return d < o->retry_max_ms ? d : o->retry_max_ms;
}

void
coord_nap(struct coord *c, int ms)
{
	while (ms > 0 && !atomic_load(&c->stop)) {
		int step = ms > 100 ? 100 : ms;
		struct timespec ts = { 0, (long)step * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

int
coord_forge(struct coord *c, const char *provider, const char *repo,
    struct forge **out, char *err, size_t errlen)
{
	const json_t *conf = json_object_get(jsonx_path(config_tree(c->cfg),
	    "forges"), provider);

	if (!json_is_object(conf)) {
		snprintf(err, errlen, "no forges.%s in the configuration", provider);
		return -ENOENT;
	}
	return forge_open(jsonx_str(conf, "driver", provider), conf, repo, out,
	    err, errlen);
}

int
coord_mirror(struct coord *c, struct forge *f, const char *repo,
    const char *clone_url, struct gitops_repo **out, char *err, size_t errlen)
{
	struct gitops_cred cred = { NULL, NULL };
	int rc;

	if ((rc = forge_git_cred(f, &cred, err, errlen)) < 0)
		return rc;
	return gitops_mirror(c->data_dir, repo, clone_url, &cred, out, err, errlen);
}

void
coord_status(struct forge *f, const char *sha, enum forge_state st, const char *slug,
    const char *desc)
{
	char ctx[MODULES_MAX_SLUG + 32], err[512];

	if (slug)
		snprintf(ctx, sizeof(ctx), COORD_STATUS_CONTEXT "%s", slug);
	else
		snprintf(ctx, sizeof(ctx), COORD_JOB_CONTEXT);
	if (forge_status_set(f, sha, st, ctx, desc, NULL, err, sizeof(err)) < 0)
		log_warn("cannot set a status", "sha=%.12s context=%s err=\"%s\"",
		    sha, ctx, err);
}

json_t *
coord_job_payload(const struct store_job *j)
{
	json_t *p = NULL;
	char perr[128];

	if (!j->payload || jsonx_parse(j->payload, strlen(j->payload), &p, perr,
	    sizeof(perr)) < 0 || !json_is_object(p)) {
		json_decref(p);
		p = json_object();
	}
	return p;
}

struct repocfg *
coord_repo_config(struct gitops_repo *r, const char *sha)
{
	struct buf b = BUF_INIT(1u << 20);
	struct repocfg *rc = NULL;
	char err[512];

	if (gitops_read_file(r, sha, REPOCFG_FILE, &b, NULL, err, sizeof(err)) < 0 ||
	    repocfg_parse(REPOCFG_FILE, b.data ? b.data : "", b.len, &rc, err,
	    sizeof(err)) < 0)
		repocfg_default(&rc);
	buf_free(&b);
	return rc;
}

/*
 * A finished job's checkout (DIR/src, and a src.tmp left by a crash) is
 * removed, and DIR with it once empty (task results live in
 * DATA_DIR/results/, runners' work in DATA_DIR/runners/; a DIR of an
 * older version still holds task-* results a PR is rebuilt from, and
 * stays).
 */
void
coord_remove_checkout(const char *data_dir, int64_t job)
{
	static const char *const names[] = { "src", "src.tmp", NULL };
	char dir[PATH_MAX], p[PATH_MAX + 16];
	int rc;

	if (coord_job_dir(data_dir, job, dir, sizeof(dir)) < 0)
		return;
	for (const char *const *n = names; *n; n++) {
		snprintf(p, sizeof(p), "%s/%s", dir, *n);
		if ((rc = fsx_rmtree(p)) < 0)
			log_warn("cannot remove a job's checkout", "path=%s err=\"%s\"",
			    p, strerror(-rc));
	}
	if (rmdir(dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
		log_warn("cannot remove a job's directory", "path=%s err=\"%s\"",
		    dir, strerror(errno));
}

/* Check out sha into DIR/src, atomically: a crash leaves src whole or absent. */
static int
checkout(struct coord *c, struct gitops_repo *r, int64_t job, const char *sha,
    char *err, size_t errlen)
{
	char dir[PATH_MAX], src[PATH_MAX + 8], tmp[PATH_MAX + 16];
	struct stat sb;
	int rc;

	if ((rc = coord_job_dir(c->data_dir, job, dir, sizeof(dir))) < 0)
		return rc;
	snprintf(src, sizeof(src), "%s/src", dir);
	if (stat(src, &sb) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/src.tmp", dir);
	/* A half-written src.tmp of a crashed attempt: start over. */
	if ((rc = fsx_rmtree(tmp)) < 0)
		return gitops_fail(rc, err, errlen, "%s: %s", tmp, strerror(-rc));
	if ((rc = gitops_checkout(r, sha, tmp, err, errlen)) < 0)
		return rc;
	if (rename(tmp, src) < 0)
		return gitops_fail(-errno, err, errlen, "%s: %s", src, strerror(errno));
	return 0;
}

/*
 * A job that cannot go on: its error recorded, state failed, and the
 * reason in the commit's "kernelbot" status when a forge is at hand
 * (f may be NULL: no forge could be opened).
 */
static void
job_fail(struct coord *c, const struct store_job *j, struct forge *f,
    const char *why)
{
	char desc[600];
	int rc;

	log_warn("job failed", "job=%lld repo=%s sha=%.12s err=\"%s\"",
	    (long long)j->id, j->repo, j->sha, why);
	if ((rc = store_job_set_step(c->store, j->id, c->owner, "failed", why)) < 0 ||
	    (rc = store_job_finish(c->store, j->id, c->owner, STORE_JOB_FAILED)) < 0)
		log_warn("cannot record a failed job", "job=%lld err=\"%s\"",
		    (long long)j->id, strerror(-rc));
	if (f) {
		snprintf(desc, sizeof(desc), "job %lld failed: %s", (long long)j->id,
		    why);
		coord_status(f, j->sha, FORGE_ERROR, NULL, desc);
	}
}

/*
 * The task specs of a job: the payload's modules for a job the bot made
 * (command, schedule, arch), or the modules the push changed.
 */
static int
job_specs(struct gitops_repo *r, const struct store_job *j, json_t *payload,
    const char *before, json_t **out, char *err, size_t errlen)
{
	struct modules_changes ch = { 0 };
	json_t *mods = json_object_get(payload, "modules"), *v = json_array(), *m;
	size_t i;
	int rc;

	if (json_is_array(mods)) {
		json_array_foreach(mods, i, m)
			json_array_append(v, m);
		*out = v;
		return 0;
	}
	if ((rc = modules_changes(r, before, j->sha, &ch, err, errlen)) < 0) {
		json_decref(v);
		return rc;
	}
	for (i = 0; i < ch.n; i++)
		if (ch.v[i].reason != MODULES_REMOVED)
			json_array_append_new(v, json_pack("{s:s, s:s}", "path",
			    ch.v[i].path, "class", ch.v[i].class_name));
	modules_changes_free(&ch);
	*out = v;
	return 0;
}

/*
 * Step "new": everything up to the tasks, which are created with the
 * step. A failure that may pass (transient()) leaves the job to the
 * caller's retries, with the reason in err; any other fails the job here.
 */
static int
job_start(struct coord *c, struct store_job *j, struct forge *f, char *err,
    size_t errlen)
{
	struct gitops_repo *r = NULL;
	struct store_task_spec *specs = NULL;
	json_t *payload = coord_job_payload(j), *mods = NULL, *m;
	char before[GITOPS_OID_HEX], ref[300];
	char (*slugs)[MODULES_MAX_SLUG + 1] = NULL;
	const char *branch = jsonx_str(payload, "default_branch", "main");
	const char *kind = jsonx_str(payload, "kind", "optimize");
	size_t i, n = 0;
	int fallback = 0, rc;

	snprintf(ref, sizeof(ref), "%s", jsonx_str(payload, "ref", ""));
	if (!ref[0])
		snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	if (j->before) {
		struct gitops_cred cred = { NULL, NULL };

		if ((rc = forge_git_cred(f, &cred, err, errlen)) < 0 ||
		    (rc = gitops_sync_push(c->data_dir, j->repo, j->clone_url, &cred,
		    ref, j->before, j->sha, &r, before, &fallback, err,
		    errlen)) < 0)
			goto out;
	} else {
		snprintf(before, sizeof(before), "%s", GITOPS_ZERO_OID);
		if ((rc = coord_mirror(c, f, j->repo, j->clone_url, &r, err,
		    errlen)) < 0)
			goto out;
		if (!gitops_has_commit(r, j->sha)) {
			rc = gitops_fail(-ENOENT, err, errlen, "commit %.12s is "
			    "not in the repository", j->sha);
			goto out;
		}
	}
	if ((rc = job_specs(r, j, payload, before, &mods, err, errlen)) < 0) {
		/* A bad .kernelbot.yml: say so where the pusher looks. */
		if (rc == -EINVAL) {
			char ctx[] = "kernelbot";

			forge_status_set(f, j->sha, FORGE_ERROR, ctx, err, NULL, NULL, 0);
		}
		goto out;
	}
	n = json_array_size(mods);
	if (n && (!(specs = calloc(n, sizeof(*specs))) ||
	    !(slugs = calloc(n, sizeof(*slugs))))) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach(mods, i, m) {
		specs[i].module = jsonx_str(m, "path", NULL);
		specs[i].class_name = jsonx_str(m, "class", REPOCFG_DEFAULT_CLASS);
		specs[i].backend = jsonx_str(m, "backend", NULL);
		specs[i].arch = jsonx_str(m, "arch", NULL);
		specs[i].kind = kind;
		if (!specs[i].module || modules_slug(specs[i].module,
		    specs[i].class_name, slugs[i]) < 0) {
			rc = gitops_fail(-EINVAL, err, errlen, "bad module %s",
			    specs[i].module ? specs[i].module : "(none)");
			goto out;
		}
		specs[i].slug = slugs[i];
	}
	if (n && (rc = checkout(c, r, j->id, j->sha, err, errlen)) < 0)
		goto out;
	if ((rc = store_tasks_create(c->store, j->id, c->owner, j->repo, j->sha,
	    specs, n, "tasks")) < 0) {
		snprintf(err, errlen, "recording the tasks: %s", strerror(-rc));
		goto out;
	}
	log_info("job tasks created", "job=%lld repo=%s sha=%.12s modules=%zu "
	    "before_fallback=%d", (long long)j->id, j->repo, j->sha, n, fallback);
	/* A benchmark answers on the PR; the head's statuses keep their result. */
	for (i = 0; i < n && strcmp(kind, "benchmark"); i++) {
		char desc[160];

		snprintf(desc, sizeof(desc), "queued: %s (%zu of %zu modules of "
		    "this push)", specs[i].module, i + 1, n);
		coord_status(f, j->sha, FORGE_PENDING, specs[i].slug, desc);
	}
	rc = 0;
out:
	if (rc < 0 && rc != -ESTALE && !transient(rc))
		job_fail(c, j, f, err);
	free(specs);
	free(slugs);
	json_decref(mods);
	json_decref(payload);
	gitops_close(r);
	return rc;
}

static int
task_finished(const struct store_task *t)
{
	return !strcmp(t->state, STORE_TASK_DONE) ||
	    !strcmp(t->state, STORE_TASK_FAILED) ||
	    !strcmp(t->state, STORE_TASK_CANCELLED);
}

/* A running task's pending status names its runner, once per attempt. */
static void
announce(struct coord_held *h, const struct store_job *j,
    const struct store_task *t, size_t done, size_t n, struct forge *f)
{
	int64_t key = (t->id << 8) | (t->attempts & 0xff);
	char desc[200];

	for (size_t i = 0; i < h->n_announced; i++)
		if (h->announced[i] == key)
			return;
	if (h->n_announced == COORD_MAX_ANNOUNCED)
		h->n_announced = 0;
	h->announced[h->n_announced++] = key;
	snprintf(desc, sizeof(desc), "optimizing on %s%s (%zu of %zu modules done)",
	    t->runner ? t->runner : "a runner", t->attempts > 1 ? ", again" : "",
	    done, n);
	coord_status(f, j->sha, FORGE_PENDING, t->slug, desc);
}

/* Step "tasks": publish what finished; 1 when the job is complete. */
static int
job_progress(struct coord *c, struct coord_held *h, struct store_job *j,
    struct forge *f)
{
	struct store_task *v = NULL;
	size_t n = 0, open = 0, done = 0;
	char why[1024];
	int rc;

	if ((rc = store_tasks_of_job(c->store, j->id, &v, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		done += task_finished(&v[i]);
	for (size_t i = 0; i < n && !atomic_load(&c->stop); i++) {
		if (!task_finished(&v[i])) {
			if (!strcmp(v[i].state, STORE_TASK_RUNNING) &&
			    strcmp(v[i].kind, "benchmark"))
				announce(h, j, &v[i], done, n, f);
			open++;
			continue;
		}
		if (v[i].published)
			continue;
		if (h->next_try > mono_ms()) {
			open++;
			continue;
		}
		why[0] = '\0';
		if ((rc = coord_publish(c, j, &v[i], f, why, sizeof(why))) < 0) {
			if (++h->fails <= c->opts.retries) {
				int64_t d = retry_delay_ms(&c->opts, h->fails);

				log_warn("publishing will be retried", "job=%lld "
				    "slug=%s try=%d of=%d in_ms=%lld", (long long)j->id,
				    v[i].slug, h->fails, c->opts.retries + 1,
				    (long long)d);
				h->next_try = mono_ms() + d;
				open++;
				continue;
			}
			/* Given up: the job ends failed with the reason. */
			snprintf(h->error, sizeof(h->error), "publishing %s gave up "
			    "after %d tries: %s", v[i].slug, h->fails, why[0] ? why :
			    strerror(-rc));
		}
		h->fails = 0;
		h->next_try = 0;
		if ((rc = store_task_set_published(c->store, v[i].id)) < 0) {
			open++;
			continue;
		}
	}
	store_tasks_free(v, n);
	return open == 0;
}

/* Work on one held job; 1 when it is no longer held. */
static int
job_advance(struct coord *c, struct coord_held *h)
{
	struct store_job j;
	struct forge *f = NULL;
	char err[1024];
	int rc, released = 0;

	if ((rc = store_job_heartbeat(c->store, h->id, c->owner, c->opts.lease_s)) < 0)
		return 1;	/* lost (expired and taken, or finished) */
	if ((rc = store_job_get(c->store, h->id, &j)) < 0)
		return 0;
	if ((rc = coord_forge(c, j.provider, j.repo, &f, err, sizeof(err))) < 0) {
		job_fail(c, &j, NULL, err);
		released = 1;
		goto out;
	}
	if (!strcmp(j.step, "new")) {
		if (h->next_try > mono_ms())
			goto out;
		err[0] = '\0';
		if ((rc = job_start(c, &j, f, err, sizeof(err))) == 0) {
			/* the count and the last retry's note go: it is under way */
			if (h->fails)
				store_job_retry(c->store, j.id, c->owner, NULL, NULL);
			h->fails = 0;
			h->next_try = 0;
		} else if (!transient(rc)) {
			released = 1;	/* failed, or the lease was lost */
		} else if (h->fails + 1 > c->opts.retries) {
			char why[1200];

			snprintf(why, sizeof(why), "gave up after %d tries: %s",
			    h->fails + 1, err);
			job_fail(c, &j, f, why);
			released = 1;
		} else {
			/*
			 * The remote or the forge is down: again, less and less
			 * often. The count is in the store, so a restart goes on
			 * from it rather than from 0.
			 */
			int n = h->fails + 1;
			int64_t d = retry_delay_ms(&c->opts, n);
			char note[1200];

			snprintf(note, sizeof(note), "try %d of %d failed, next in "
			    "%lld ms: %s", n, c->opts.retries + 1, (long long)d, err);
			log_warn("job step failed; will retry", "job=%lld try=%d of=%d "
			    "in_ms=%lld err=\"%s\"", (long long)j.id, n,
			    c->opts.retries + 1, (long long)d, err);
			if (store_job_retry(c->store, j.id, c->owner, note, &n) < 0)
				n = h->fails + 1;
			h->fails = n;
			h->next_try = mono_ms() + d;
		}
		goto out;
	}
	if ((rc = job_progress(c, h, &j, f)) == 1 && h->error[0]) {
		job_fail(c, &j, f, h->error);
		coord_remove_checkout(c->data_dir, j.id);
		released = 1;
	} else if (rc == 1) {
		if ((rc = store_job_set_step(c->store, j.id, c->owner, "done", NULL)) < 0 ||
		    (rc = store_job_finish(c->store, j.id, c->owner, STORE_JOB_DONE)) < 0)
			log_warn("cannot finish a job", "job=%lld err=\"%s\"",
			    (long long)j.id, strerror(-rc));
		else
			log_info("job done", "job=%lld repo=%s sha=%.12s",
			    (long long)j.id, j.repo, j.sha);
		coord_remove_checkout(c->data_dir, j.id);
		released = 1;
	}
out:
	forge_close(f);
	store_job_free(&j);
	return released;
}

static void
jobs_tick(struct coord *c)
{
	struct store_job j;
	int requeued = 0, failed = 0;

	if (store_jobs_requeue_expired(c->store, COORD_JOB_ATTEMPTS, &requeued,
	    &failed) == 0 && (requeued || failed))
		log_info("expired job leases", "requeued=%d failed=%d", requeued,
		    failed);
	if (store_tasks_requeue_expired(c->store, c->opts.max_attempts, &requeued,
	    &failed) == 0 && (requeued || failed))
		log_info("expired task leases", "requeued=%d failed=%d", requeued,
		    failed);
	while (c->n_held < COORD_MAX_JOBS &&
	    store_job_claim(c->store, c->owner, c->opts.lease_s, &j) == 0) {
		log_info("job claimed", "job=%lld repo=%s sha=%.12s trigger=%s "
		    "step=%s attempt=%d", (long long)j.id, j.repo, j.sha, j.trigger,
		    j.step, j.attempts);
		memset(&c->held[c->n_held], 0, sizeof(c->held[0]));
		/* a fetch that failed before a restart goes on counting */
		if (!strcmp(j.step, "new"))
			c->held[c->n_held].fails = j.retries;
		c->held[c->n_held++].id = j.id;
		store_job_free(&j);
	}
	for (size_t i = 0; i < c->n_held && !atomic_load(&c->stop); ) {
		if (job_advance(c, &c->held[i]))
			c->held[i] = c->held[--c->n_held];
		else
			i++;
	}
}

static void *
coord_main(void *arg)
{
	struct coord *c = arg;

	log_info("coordinator started", "owner=%s", c->owner);
	while (!atomic_load(&c->stop)) {
		coord_commands_tick(c);
		coord_cleanups_tick(c);
		coord_schedule_tick(c, time(NULL));
		coord_arch_tick(c);
		jobs_tick(c);
		coord_nap(c, c->opts.poll_ms);
	}
	/* A clean stop hands the jobs back; a crash leaves them to their leases. */
	for (size_t i = 0; i < c->n_held; i++)
		if (store_job_release(c->store, c->held[i].id, c->owner) == 0)
			log_info("job handed back", "job=%lld", (long long)c->held[i].id);
	c->n_held = 0;
	return NULL;
}

int
coord_start(const struct config *cfg, const char *config_file,
    struct store *store, struct coord **out, char *err, size_t errlen)
{
	struct coord *c = calloc(1, sizeof(*c));
	char host[64] = "localhost";
	ssize_t n;
	int rc;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->store = store;
	if ((rc = coord_opts_load(cfg, &c->opts, err, errlen)) < 0) {
		free(c);
		return rc;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(c->owner, sizeof(c->owner), "coord:%s:%ld", host, (long)getpid());
	snprintf(c->data_dir, sizeof(c->data_dir), "%s", config_data_dir(cfg));
	snprintf(c->config_file, sizeof(c->config_file), "%s",
	    config_file ? config_file : "");
	if ((n = readlink("/proc/self/exe", c->self_exe, sizeof(c->self_exe) - 1)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
		goto fail;
	}
	c->self_exe[n] = '\0';
	if (!c->opts.coordinator) {
		log_info("coordinator off (runners.coordinator: false): only taking "
		    "webhooks", NULL);
	} else if ((rc = pthread_create(&c->thread, NULL, coord_main, c)) != 0) {
		snprintf(err, errlen, "cannot start the coordinator: %s", strerror(rc));
		rc = -rc;
		goto fail;
	} else {
		c->started = 1;
	}
	if ((rc = coord_runners_start(c)) < 0) {
		snprintf(err, errlen, "cannot start the local runners: %s",
		    strerror(-rc));
		coord_stop(c);
		return rc;
	}
	*out = c;
	return 0;
fail:
	coord_opts_free(&c->opts);
	free(c);
	return rc;
}

void
coord_stop(struct coord *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, 1);
	if (c->started)
		pthread_join(c->thread, NULL);
	coord_runners_stop(c);
	coord_opts_free(&c->opts);
	free(c);
}
