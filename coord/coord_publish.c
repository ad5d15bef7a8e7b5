/*
 * coord_publish: a finished task's result goes out: an improved one as the
 * module's branch, pull request, comment and status (with its kernels for
 * the other architectures already delivered), anything else as a status,
 * and the module is remembered as delivered.
 */
#include "coord/coord_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "gitops/deliver.h"
#include "gitops/repocfg.h"
#include "pipeline/report/report.h"

/* The out dir that holds summary.json: DIR/<slug>/ for a repository run, else DIR. */
static void
summary_dir(const struct store_task *t, char *out, size_t len)
{
	struct stat sb;
	char p[PATH_MAX * 3];

	snprintf(out, len, "%s", t->out_dir ? t->out_dir : "");
	snprintf(p, sizeof(p), "%s/%s/summary.json", out, t->slug);
	if (t->out_dir && stat(p, &sb) == 0)
		snprintf(out, len, "%s/%s", t->out_dir, t->slug);
}

/* Record that this module now has a PR with kernels for arch. */
static void
remember(struct coord *c, const struct store_job *j, const struct store_task *t,
    const char *branch, const char *dir, long long pr)
{
	struct store_delivered d;
	int rc;

	memset(&d, 0, sizeof(d));
	d.repo = j->repo;
	d.slug = t->slug;
	d.arch = t->ran_arch ? t->ran_arch : "cpu";
	d.provider = j->provider;
	d.clone_url = j->clone_url;
	d.base_branch = (char *)branch;
	d.module = t->module;
	d.class_name = t->class_name;
	d.last_sha = j->sha;
	d.pr = pr;
	d.out_dir = (char *)dir;
	if ((rc = store_delivered_put(c->store, &d)) < 0)
		log_warn("cannot record a delivered module", "slug=%s err=\"%s\"",
		    t->slug, strerror(-rc));
}

int
coord_publish(struct coord *c, const struct store_job *j, const struct store_task *t,
    struct forge *f, char *why, size_t whylen)
{
	struct report_module rm;
	struct report_pr pr;
	struct deliver_req q;
	struct deliver_result res;
	struct store_delivered *others = NULL;
	struct gitops_repo *r = NULL;
	struct repocfg *rcfg = NULL;
	json_t *payload = coord_job_payload(j);
	const char *branch = jsonx_str(payload, "default_branch", "main");
	const char *dirs[16];
	char dir[PATH_MAX * 2], err[1024] = "", desc[200];
	const char *labels[REPOCFG_MAX_LIST + 1], *reviewers[REPOCFG_MAX_LIST + 1];
	size_t n_others = 0, nd = 0, i;
	int rc = 0;

	memset(&pr, 0, sizeof(pr));
	if (t->kind && !strcmp(t->kind, "benchmark")) {
		/* Timings of the PR's kernel: an answer on the PR, not a new result. */
		if ((rc = coord_bench_publish(c, j, t, payload, f)) < 0)
			snprintf(why, whylen, "answering the benchmark: %s",
			    strerror(-rc));
		goto out;
	}
	if (strcmp(t->state, STORE_TASK_DONE)) {
		snprintf(desc, sizeof(desc), "%s: %s", !strcmp(t->state,
		    STORE_TASK_CANCELLED) ? "stopped" : "optimization failed",
		    t->error ? t->error : t->state);
		coord_status(f, j->sha, !strcmp(t->state, STORE_TASK_CANCELLED) ?
		    FORGE_ERROR : FORGE_FAILURE, t->slug, desc);
		goto out;
	}
	summary_dir(t, dir, sizeof(dir));
	dirs[nd++] = dir;
	/* The module's kernels for the other architectures go into the same PR. */
	if (store_delivered_list(c->store, j->repo, t->slug, &others, &n_others) == 0)
		for (i = 0; i < n_others && nd < sizeof(dirs) / sizeof(dirs[0]); i++) {
			char sj[PATH_MAX * 2];
			struct stat sb;

			/* An architecture whose results were deleted drops out of the PR. */
			snprintf(sj, sizeof(sj), "%s/summary.json", others[i].out_dir);
			if (strcmp(others[i].arch, t->ran_arch ? t->ran_arch : "cpu") &&
			    stat(sj, &sb) == 0)
				dirs[nd++] = others[i].out_dir;
		}
	memset(&rm, 0, sizeof(rm));
	rm.repo = j->repo;
	rm.commit = j->sha;
	rm.module_path = t->module;
	rm.module_class = t->class_name;
	rm.slug = t->slug;
	rm.optimize_dirs = dirs;
	rm.n_dirs = nd;
	if ((rc = report_pr_build(&rm, &pr, err, sizeof(err))) < 0) {
		snprintf(desc, sizeof(desc), "no report: %s", err);
		coord_status(f, j->sha, FORGE_ERROR, t->slug, desc);
		log_warn("cannot build the report", "job=%lld slug=%s err=\"%s\"",
		    (long long)j->id, t->slug, err);
		rc = 0;
		goto out;
	}
	if (!pr.improved) {
		/* nothing shipped: never success, which reads as "delivered" */
		coord_status(f, j->sha, FORGE_NEUTRAL, t->slug, pr.status_description ?
		    pr.status_description : "no faster kernel was found");
		goto out;
	}
	if ((rc = coord_mirror(c, f, j->repo, j->clone_url, &r, err,
	    sizeof(err))) < 0)
		goto fail;
	rcfg = coord_repo_config(r, j->sha);
	{
		const json_t *cj = repocfg_json(rcfg), *it;
		size_t k, nl = 0, nr = 0;

		json_array_foreach(json_object_get(cj, "labels"), k, it)
			if (nl < REPOCFG_MAX_LIST)
				labels[nl++] = json_string_value(it);
		json_array_foreach(json_object_get(cj, "reviewers"), k, it)
			if (nr < REPOCFG_MAX_LIST)
				reviewers[nr++] = json_string_value(it);
		labels[nl] = NULL;
		reviewers[nr] = NULL;
	}
	memset(&q, 0, sizeof(q));
	q.repo = r;
	q.forge = f;
	q.base_sha = j->sha;
	q.base_branch = branch;
	q.module_path = t->module;
	q.module_class = t->class_name;
	q.branch_prefix = repocfg_branch_prefix(rcfg);
	q.files = pr.files;
	q.n_files = pr.n_files;
	q.message = pr.message;
	q.title = pr.title;
	q.body = pr.body;
	q.comment = pr.comment;
	q.labels = labels;
	q.reviewers = reviewers;
	snprintf(desc, sizeof(desc), COORD_STATUS_CONTEXT "%s", t->slug);
	q.status_context = desc;
	/* a PR whose kernel awaits review has no verified speedup to succeed with */
	q.status_state = pr.needs_review ? FORGE_NEUTRAL : FORGE_SUCCESS;
	q.status_description = pr.status_description;
	if ((rc = deliver(&q, &res, err, sizeof(err))) < 0)
		goto fail;
	log_info("published", "job=%lld slug=%s branch=%s outcome=%s pr=%lld",
	    (long long)j->id, t->slug, res.branch,
	    gitops_publish_outcome_name(res.push.outcome),
	    res.have_pr ? res.pr.number : 0LL);
	remember(c, j, t, branch, dir, res.have_pr ? res.pr.number : 0);
	goto out;
fail:
	log_warn("publishing failed", "job=%lld slug=%s err=\"%s\"",
	    (long long)j->id, t->slug, err);
	snprintf(why, whylen, "%s", err);
out:
	report_pr_free(&pr);
	repocfg_free(rcfg);
	gitops_close(r);
	store_delivered_list_free(others, n_others);
	json_decref(payload);
	return rc;
}
