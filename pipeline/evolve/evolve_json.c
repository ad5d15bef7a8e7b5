/*
 * The JSON of a run: history.json and summary.json (docs/optimize.md has
 * their keys), built from the loop's state.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/flags.h"
#include "common/jsonx.h"
#include "pipeline/evolve/evolve_int.h"

#define EVO_ERR_SHOWN		300		/* characters of a candidate's first error kept in history */

int
evo_out_path(const struct evo_run *r, char *out, size_t outlen, const char *name)
{
	return evo_join(out, outlen, r->o->out_dir, name);
}

void
evo_cand_file(const struct evo_run *r, int id, char *out, size_t outlen)
{
	snprintf(out, outlen, "candidates/%04d%s", id, r->ext);
}

static json_t *
evo_limit_or_null(double v)
{
	return v > 0 ? json_real(v) : json_null();
}

json_t *
evo_budget_json(const struct evolve_budget *b)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
	    "candidates", b->candidates > 0 ? json_integer(b->candidates) : json_null(),
	    "generations", b->generations > 0 ? json_integer(b->generations) : json_null(),
	    "wall_s", evo_limit_or_null(b->wall_s), "gpu_s", evo_limit_or_null(b->gpu_s),
	    "tokens", b->tokens > 0 ? json_integer(b->tokens) : json_null(),
	    "dollars", evo_limit_or_null(b->dollars));
}

json_t *
evo_spent_json(const struct evo_run *r)
{
	return json_pack("{s:i, s:i, s:f, s:f, s:I, s:f, s:i}",
	    "candidates", r->spent.candidates, "generations", r->spent.generations,
	    "wall_s", r->spent.wall_s, "gpu_s", r->spent.gpu_s,
	    "tokens", (json_int_t)r->spent.tokens, "dollars", r->spent.dollars,
	    "malformed", r->spent.malformed);
}

static json_t *
evo_candidate_json(const struct evo_run *r, const struct evolve_entry *e)
{
	char file[64];
	json_t *parents = json_array();
	const char *first = e->result.n_errors ? e->result.errors[0] : NULL;
	json_t *c;

	evo_cand_file(r, e->id, file, sizeof(file));
	for (int i = 0; i < 2; i++)
		if (e->parents[i] >= 0)
			json_array_append_new(parents, json_integer(e->parents[i]));
	c = json_pack("{s:i, s:i, s:s, s:s, s:o, s:s, s:s, s:s, s:b, s:o, s:O}",
	    "id", e->id, "generation", e->generation, "proposer", e->proposer, "op", e->op,
	    "parents", parents, "source_sha", e->source_sha, "file", file,
	    "status", e->result.status ? e->result.status : "?", "correct", e->correct,
	    "ms", e->correct ? json_real(e->ms) : json_null(),
	    "origin", e->origin ? e->origin : json_null());
	if (c && e->correct)
		json_object_set_new(c, "speedup_eager", isnan(e->result.vs_eager.x) ? json_null() :
		    json_real(e->result.vs_eager.x));
	if (c && evo_barring_flag(&e->result))
		json_object_set_new(c, "excluded", json_string(evo_barring_flag(&e->result)));
	if (c && json_is_object(json_object_get(e->result.json, "profile_feedback"))) {
		/* what the LLM proposer's prompts said about it (pipeline/llm
		 * notes it on the result: not the evaluator's) */
		json_object_set(c, "profile", jsonx_path(e->result.json, "profile_feedback.text"));
		json_object_set(c, "profile_source", jsonx_path(e->result.json, "profile_feedback.source"));
	}
	if (c && first)
		json_object_set_new(c, "error", json_stringn(first,
		    strlen(first) < EVO_ERR_SHOWN ? strlen(first) : EVO_ERR_SHOWN));
	return c;
}

json_t *
evo_history_json(const struct evo_run *r)
{
	json_t *cands = json_array(), *h;

	for (size_t i = 0; i < r->n_hist; i++)
		json_array_append_new(cands, evo_candidate_json(r, &r->hist[i]));
	h = json_pack("{s:s, s:s, s:s, s:O, s:o, s:o, s:s?, s:O, s:o}",
	    "problem", r->o->problem, "problem_sha", r->problem_sha, "backend", r->o->backend,
	    "device", r->device ? r->device : json_null(), "budget", evo_budget_json(&r->o->budget),
	    "spent", evo_spent_json(r), "stop_reason", r->stop_reason, "generations", r->gens,
	    "candidates", cands);
	return h;
}

int
evo_write_history(const struct evo_run *r)
{
	char path[PATH_MAX];
	json_t *h = evo_history_json(r);
	int error;

	if (!h)
		return -ENOMEM;
	if ((error = evo_out_path(r, path, sizeof(path), "history.json")) == 0)
		error = evo_write_json(path, h);
	json_decref(h);
	return error;
}

static json_t *
num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *
ci_or_null(const struct eval_speedup *s)
{
	return isnan(s->lo) ? json_null() : json_pack("[f, f]", s->lo, s->hi);
}

json_t *
evo_summary_json(const struct evo_run *r, const char *status, const struct eval_cand *best,
    int best_id)
{
	json_t *s, *b = json_null();
	char name[32];

	if (best) {
		snprintf(name, sizeof(name), "best/kernel%s", r->ext);
		b = json_pack("{s:s, s:i, s:f, s:{s:o, s:o, s:o, s:o}}", "path", name,
		    "candidate", best_id, "ms", eval_num_or(best->t_candidate.median, 0),
		    "speedup", "eager", num_or_null(best->vs_eager.x),
		    "compile", num_or_null(best->vs_compile.x),
		    "eager_ci95", ci_or_null(&best->vs_eager),
		    "compile_ci95", ci_or_null(&best->vs_compile));
		/* The confirmation's seed and environment: what reproduces the
		 * headline (the coordinator keeps this summary as the task's). */
		if (b && best->seed_json)
			json_object_set(b, "seed", (json_t *)best->seed_json);
		if (b && best->environment)
			json_object_set_new(b, "environment", json_deep_copy(best->environment));
	}
	/* the confirmation's flags: a needs_review best names what to review */
	if (best && b && best->flags_json)
		json_object_set(b, "flags", (json_t *)best->flags_json);
	s = json_pack("{s:s, s:s, s:o, s:i, s:i, s:s, s:s, s:o}", "problem", r->o->problem,
	    "status", status, "best", b, "candidates_evaluated", r->spent.candidates,
	    "generations", r->spent.generations, "stop_reason", r->stop_reason,
	    "backend", r->o->backend, "spent", evo_spent_json(r));
	if (s && !strcmp(status, "unsupported"))
		json_object_set_new(s, "error", json_string(r->unsupported));
	else if (s && r->error[0])
		json_object_set_new(s, "error", json_string(r->error));
	return s;
}

const char *
evo_barring_flag(const struct eval_cand *result)
{
	return eval_cand_flag(result, EVAL_FLAG_BARS_BEST);
}
