/*
 * The proposer is a thin wrapper: the inner one (pipeline/llm) does the
 * work; this one owns the store its hooks write to and read from, so both
 * live and die together.
 */
#include "pipeline/optimize/optimize_llm.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "conf/config.h"
#include "store/store.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "gpu/profile.h"
#include "pipeline/archive/archive.h"
#include "pipeline/llm/llm.h"

#define PROFILE_CACHE_MAX 256		/* kernels profiled in one job */

/* One kernel's profile: its paragraph, or NULL when it has none. */
struct prof_entry {
	char sha[65];
	char *text;
};

struct wrap {
	struct proposer *inner;
	struct store *store;
	int64_t job;
	int record_failed;		/* logged once */
	/* llm.embeddings, when configured: archive retrieval's embedder */
	struct llm_config lc;
	struct llm_client embed_client;
	int embedder_set;
	/* the profile hook (config `profile`) */
	int profile_force;		/* `profile: ncu` on any backend */
	int device;			/* CUDA ordinal for the profile's evaluation */
	int have_sandbox_exec;
	struct eval_env env;		/* the profile's evaluation's */
	char *ncu;			/* probed once, on first use */
	int ncu_probed;
	char *profile_off;		/* why profiling stopped for this job, or NULL */
	struct prof_entry *prof;
	size_t n_prof;
};

int
optimize_llm_record(struct store *s, int64_t job, const struct llm_call *c)
{
	struct store_llm_call r = { job, c->model, c->provider, c->stage,
		c->prompt_sha, c->status, c->http_status, c->attempt, c->tokens_in,
		c->tokens_out, c->cost, c->latency_s };

	return store_llm_call_add(s, &r);
}

static void
record(void *arg, const struct llm_call *c)
{
	struct wrap *w = arg;
	int error;

	log_debug("llm call", "model=%s stage=%s status=%s http=%ld attempt=%d "
	    "tokens_in=%lld tokens_out=%lld", c->model, c->stage, c->status,
	    c->http_status, c->attempt, (long long)c->tokens_in,
	    (long long)c->tokens_out);
	if ((error = optimize_llm_record(w->store, w->job, c)) < 0 && !w->record_failed++)
		log_error("llm calls are not being recorded", "error=%s store=%s",
		    strerror(-error), store_errmsg(w->store));
}

static json_t *
retrieve(void *arg, const struct evolve_ctx *ctx, int k)
{
	struct wrap *w = arg;
	json_t *out = NULL;
	char err[256];

	if (archive_neighbours(w->store, ctx->problem_source, ctx->ir,
	    strcmp(ctx->backend, "cpu") ? NULL : "cpu", k, &out, err, sizeof(err)) < 0) {
		log_warn("archive retrieval failed", "error=%s", err);
		return NULL;
	}
	return out;
}

/* Whether a failed profile will fail the same way for every kernel. */
static int
profiler_broken(const char *reason)
{
	return strstr(reason, "ERR_NVGPUCTRPERM") || strstr(reason, "did not finish") ||
	    strstr(reason, "not on PATH") || strstr(reason, "could not run") ||
	    strstr(reason, "wrote no report");
}

static char *
profile_kernel(struct wrap *w, const struct evolve_ctx *ctx, const struct evolve_entry *e)
{
	struct profile_opts po = PROFILE_OPTS_INIT;
	struct profile_result res;
	char dir[PATH_MAX], file[PATH_MAX + 16], err[1024];
	const char *t = w->env.tmp_dir;
	char *text = NULL;
	int error;

	if (snprintf(dir, sizeof(dir), "%s/kernelbot-profile-XXXXXX", t && *t ? t : "/tmp") >=
	    (int)sizeof(dir) || !mkdtemp(dir))
		return NULL;
	snprintf(file, sizeof(file), "%s/kernel.%s", dir, strcmp(ctx->backend, "cpu") ? "cu" : "c");
	if (fsx_write_file(file, e->source, strlen(e->source)) < 0) {
		rmdir(dir);
		return NULL;
	}
	po.problem = ctx->problem;
	po.kernel = file;
	po.ncu = w->ncu;
	po.backend = ctx->backend;
	po.device = w->device;
	po.bw_gbs = jsonx_num(ctx->device, "bandwidth_gbs", 0);
	po.have_sandbox_exec = w->have_sandbox_exec;
	po.env = w->env;
	error = profile_run(&po, &res, err, sizeof(err));
	unlink(file);
	rmdir(dir);
	if (error < 0) {
		log_warn("profile failed", "candidate=%d error=%s", e->id, err);
	} else if (!strcmp(res.status, "ok")) {
		text = res.summary;
		res.summary = NULL;
	} else {
		log_info("no profile", "candidate=%d status=%s reason=%s", e->id, res.status,
		    res.reason);
		if (profiler_broken(res.reason)) {
			w->profile_off = strdup(res.reason);
			log_warn("profiling stops for this job: prompts use the timings and the "
			    "roofline floor", "reason=%s", res.reason);
		}
	}
	profile_result_free(&res);
	return text;
}

/*
 * The llm proposer's profile hook: ncu's paragraph for a correct kernel,
 * once per source (cached by its SHA-256); NULL (the timings and the
 * roofline floor) where there is no ncu or it cannot profile.
 */
static char *
profile_hook(void *arg, const struct evolve_ctx *ctx, const struct evolve_entry *e)
{
	struct wrap *w = arg;
	struct prof_entry *pe;
	char why[512];
	size_t i;

	if (w->profile_off || !e->correct || !e->source || !e->source_sha)
		return NULL;
	for (i = 0; i < w->n_prof; i++)
		if (!strcmp(w->prof[i].sha, e->source_sha))
			return w->prof[i].text ? strdup(w->prof[i].text) : NULL;
	if (!w->ncu_probed) {
		w->ncu_probed = 1;
		if (profile_ncu_locate(&w->ncu, why, sizeof(why)) < 0) {
			w->profile_off = strdup(why);
			log_info("no ncu: prompts use the timings and the roofline floor",
			    "reason=%s", why);
			return NULL;
		}
	}
	if (w->n_prof >= PROFILE_CACHE_MAX ||
	    !(pe = realloc(w->prof, (w->n_prof + 1) * sizeof(*pe))))
		return NULL;
	w->prof = pe;
	pe = &w->prof[w->n_prof++];
	snprintf(pe->sha, sizeof(pe->sha), "%s", e->source_sha);
	pe->text = profile_kernel(w, ctx, e);
	return pe->text ? strdup(pe->text) : NULL;
}

int
optimize_llm_profile_mode(const struct config *cfg, const char *backend, int *on, int *force,
    char *err, size_t errlen)
{
	json_t *tree = config_tree(cfg);
	const char *m = jsonx_str(tree, "profile", "auto");

	if ((json_object_get(tree, "profile") && !json_is_string(json_object_get(tree, "profile"))) ||
	    (strcmp(m, "auto") && strcmp(m, "ncu") && strcmp(m, "off")))
		return config_error(cfg, err, errlen, "profile", NULL, "must be auto, ncu or off");
	*force = !strcmp(m, "ncu");
	*on = *force || (!strcmp(m, "auto") && backend && !strcmp(backend, "cuda"));
	return 0;
}

void
optimize_llm_set_eval(struct proposer *p, int device, int have_sandbox_exec,
    const struct eval_env *env)
{
	struct wrap *w = p->state;

	w->device = device;
	w->have_sandbox_exec = have_sandbox_exec;
	w->env = *env;
}

static int
wrap_propose(struct proposer *p, const struct evolve_ctx *ctx,
    struct evolve_candidate *out, int max, char *err, size_t errlen)
{
	struct wrap *w = p->state;

	return w->inner->propose(w->inner, ctx, out, max, err, errlen);
}

static void
wrap_free(struct proposer *p)
{
	struct wrap *w;

	if (!p)
		return;
	w = p->state;
	if (w) {
		if (w->embedder_set)
			archive_set_embedder(NULL);
		if (w->inner)
			w->inner->free(w->inner);
		store_close(w->store);
		llm_config_free(&w->lc);
		for (size_t i = 0; i < w->n_prof; i++)
			free(w->prof[i].text);
		free(w->prof);
		free(w->ncu);
		free(w->profile_off);
		free(w);
	}
	free(p);
}

int
optimize_llm_embedder(const struct config *cfg, struct llm_config *lc,
    struct llm_client *cl, void (*rec)(void *, const struct llm_call *), void *rec_arg,
    char *err, size_t errlen)
{
	struct archive_embedder em = { llm_embed_hook, cl, 0 };
	int error;

	if ((error = llm_config_load(cfg, lc, err, errlen)) < 0)
		return error;
	if (!lc->embed.model)
		return 0;
	memset(cl, 0, sizeof(*cl));
	cl->cfg = lc;
	cl->record = rec;
	cl->record_arg = rec_arg;
	em.dim = (size_t)lc->embed_dim;
	archive_set_embedder(&em);
	return 1;
}

int
optimize_llm_new(const struct config *cfg, const char *backend, int seeded,
    int64_t job, struct proposer **out, char *err, size_t errlen)
{
	struct llm_proposer_opts o = { 0 };
	struct proposer *p = calloc(1, sizeof(*p));
	struct wrap *w = calloc(1, sizeof(*w));
	int error, on = 0;

	if (!p || !w) {
		free(p);
		free(w);
		return -ENOMEM;
	}
	p->name = "llm";
	p->state = w;
	p->propose = wrap_propose;
	p->free = wrap_free;
	w->job = job;
	if ((error = store_open(config_data_dir(cfg), 0, &w->store)) < 0) {
		snprintf(err, errlen, "the store in %s (where LLM calls are recorded): %s",
		    config_data_dir(cfg), strerror(-error));
		goto fail;
	}
	o.record = record;
	o.record_arg = w;
	o.retrieve = retrieve;
	o.retrieve_arg = w;
	if ((error = optimize_llm_embedder(cfg, &w->lc, &w->embed_client, record, w,
	    err, errlen)) < 0)
		goto fail;
	w->embedder_set = error > 0;
	o.wait_for_seed = seeded;
	if ((error = optimize_llm_profile_mode(cfg, backend, &on, &w->profile_force, err, errlen)) < 0)
		goto fail;
	if (on) {
		o.profile = profile_hook;
		o.profile_arg = w;
	}
	if ((error = llm_proposer_from_config(cfg, &o, &w->inner, err, errlen)) < 0)
		goto fail;
	*out = p;
	return 0;
fail:
	wrap_free(p);
	return error;
}

int
optimize_llm_functionalize(const struct config *cfg, const char *problem, const char *class_name,
    const char *trace_error, const char *work_dir, const struct evolve_budget *budget,
    struct llm_functionalize_result *r, char *err, size_t errlen)
{
	struct llm_functionalize_opts o = { 0 };
	struct llm_config lc;
	struct wrap w = { 0 };
	int error;

	memset(r, 0, sizeof(*r));
	if ((error = llm_config_load(cfg, &lc, err, errlen)) < 0)
		return error;
	if ((error = store_open(config_data_dir(cfg), 0, &w.store)) < 0) {
		snprintf(err, errlen, "the store in %s (where LLM calls are recorded): %s",
		    config_data_dir(cfg), strerror(-error));
		llm_config_free(&lc);
		return error;
	}
	o.cfg = &lc;
	o.record = record;
	o.record_arg = &w;
	o.problem = problem;
	o.class_name = class_name;
	o.trace_error = trace_error;
	o.work_dir = work_dir;
	o.max_tokens = budget ? budget->tokens : 0;
	o.max_dollars = budget ? budget->dollars : 0;
	error = llm_functionalize(&o, r, err, errlen);
	store_close(w.store);
	llm_config_free(&lc);
	return error;
}
