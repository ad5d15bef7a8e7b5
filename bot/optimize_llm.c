/*
 * The proposer is a thin wrapper: the inner one (pipeline/llm) does the
 * work; this one owns the store its hooks write to and read from, so both
 * live and die together.
 */
#include "bot/optimize_llm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bot/config.h"
#include "bot/store.h"
#include "common/log.h"
#include "pipeline/archive/archive.h"
#include "pipeline/llm/llm.h"

struct wrap {
	struct proposer *inner;
	struct store *store;
	int64_t job;
	int record_failed;		/* logged once */
	/* llm.embeddings, when configured: archive retrieval's embedder */
	struct llm_config lc;
	struct llm_client embed_client;
	int embedder_set;
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
	int error;

	(void)backend;
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
