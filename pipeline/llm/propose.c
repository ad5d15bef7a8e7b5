/*
 * The LLM proposer. One propose() call is one round of parallel requests:
 * the fixes owed to last generation's failures first, then stage 2
 * translations (no correct kernel yet) or stage 3 operators. Which
 * candidate needs a fix, and how many fixes it has had, is read back from
 * the history's origins ({"stage": "fix", "fix_round": n, ...}), so the
 * proposer keeps no bookkeeping that could drift from the loop's.
 */
#include "pipeline/llm/llm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jsonx.h"
#include "pipeline/llm/extract.h"
#include "pipeline/llm/template.h"

#define ERROR_SUMMARY_MAX 3000
#define FEEDBACK_MAX 512
#define MAX_HINTS 64

enum op { OP_TRANSLATE, OP_FIX, OP_REWRITE, OP_EDIT, OP_CROSSOVER, OP_HINT, N_OPS };

static const struct {
	const char *stage, *evolve_op, *file;
} ops[N_OPS] = {
	[OP_TRANSLATE] = { "translate", "seed", "translate.md" },
	[OP_FIX] = { "fix", "fix", "fix.md" },
	[OP_REWRITE] = { "optimize", "rewrite", "optimize.md" },
	[OP_EDIT] = { "edit", "edit", "edit.md" },
	[OP_CROSSOVER] = { "crossover", "crossover", "crossover.md" },
	[OP_HINT] = { "hint", "hint", "optimize.md" },
};
#define SUMMARIZE_FILE "summarize.md"


struct state {
	struct llm_proposer_opts o;
	struct llm_client client;
	char *dir;			/* the templates */
	struct buf tmpl[N_OPS], system, abi_c, abi_cuda, summarize;
	char *hints[MAX_HINTS];
	size_t n_hints;
	char feedback[FEEDBACK_MAX];	/* why the last answer was refused */
	int turn;			/* stage 3 operator rotation */
	int calls;			/* propose() calls so far */
	struct llm_config *owned;	/* llm_proposer_from_config's */
};

/* One planned request. */
struct plan {
	enum op op;
	const struct evolve_entry *a, *b;	/* parents (borrowed) */
	int fix_round;
	const char *hint;
	const struct llm_model *model;
	char *prompt;
	char *error;			/* OP_FIX: the summarized failure */
};

static uint64_t
rng_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static const struct llm_model *
pick_model(const struct llm_config *cfg, uint64_t *rng)
{
	double total = 0, r;

	for (size_t i = 0; i < cfg->n_models; i++)
		total += cfg->models[i].weight;
	r = (double)(rng_next(rng) >> 11) / (double)(1ull << 53) * total;
	for (size_t i = 0; i < cfg->n_models; i++) {
		if (r < cfg->models[i].weight)
			return &cfg->models[i];
		r -= cfg->models[i].weight;
	}
	return &cfg->models[cfg->n_models - 1];
}

char *
llm_error_summary(const struct eval_cand *result, size_t maxlen)
{
	struct buf b = BUF_INIT(maxlen);
	size_t i, n = 0;

	buf_printf(&b, "status: %s\n", result->status ? result->status : "unknown");
	for (i = 0; i < result->n_checks; i++) {
		const struct eval_check *c = &result->checks[i];

		if (c->passed == 1 || n >= 4)
			continue;
		n++;
		buf_printf(&b, "failed check %s: %s\n", c->name ? c->name : "?",
		    c->detail ? c->detail : "");
	}
	n = result->n_errors;
	for (i = 0; i < n; i++) {
		const char *s = result->errors[i];
		size_t room = b.max > b.len ? (b.max - b.len) / (n - i) : 0;

		if (room < 16)
			break;
		if (strlen(s) + 8 > room) {
			/* compile logs end with what matters; messages start with it */
			int tail = result->status && !strcmp(result->status, "compile_error");
			size_t keep = room - 8;
			buf_printf(&b, "%s%.*s%s\n", tail ? "..." : "", (int)keep,
			    tail ? s + strlen(s) - keep : s, tail ? "" : "...");
		} else {
			buf_printf(&b, "%s\n", s);
		}
	}
	{
		char *text = buf_detach(&b, NULL);
		return text ? text : strdup("status: unknown\n");
	}
}

static double
dtype_bytes(const char *d)
{
	if (!strcmp(d, "float64") || !strcmp(d, "int64") || !strcmp(d, "complex64"))
		return 8;
	if (!strcmp(d, "float16") || !strcmp(d, "bfloat16") || !strcmp(d, "int16"))
		return 2;
	if (!strcmp(d, "int8") || !strcmp(d, "uint8") || !strcmp(d, "bool"))
		return 1;
	return 4;
}

/* Bytes of the IR's inputs and outputs: what any kernel must move. */
static double
bytes_moved(const json_t *ir)
{
	const char *lists[] = { "inputs", "outputs" };
	double total = 0;

	for (int l = 0; l < 2; l++) {
		const json_t *t, *d;
		size_t i, j;

		json_array_foreach(json_object_get(ir, lists[l]), i, t) {
			double n = dtype_bytes(jsonx_str(t, "dtype", "float32"));
			json_array_foreach(json_object_get(t, "shape"), j, d)
				n *= (double)json_integer_value(d);
			total += n;
		}
	}
	return total;
}

/*
 * What the prompts said about e's performance, kept on its result for
 * history.json (pipeline/evolve/evolve_json.c copies "profile_feedback"
 * into the candidate's "profile" and "profile_source"). The result is
 * the loop's own object, held for the run; the proposer only annotates it.
 */
static void
note_profile(const struct evolve_entry *e, const char *source, const char *text)
{
	json_t *r = e->result.json;	/* gains a key: gpu/eval_result.h allows it */

	if (json_is_object(r))
		json_object_set_new(r, "profile_feedback", json_pack("{s:s, s:s}",
		    "source", source, "text", text));
}

/* The profile paragraph for a correct entry: the hook's, or timings and
 * the roofline floor. malloc'd. */
static char *
profile_of(struct state *st, const struct evolve_ctx *ctx,
    const struct evolve_entry *e)
{
	struct buf b = BUF_INIT(4096);
	double bw = jsonx_num(ctx->device, "bandwidth_gbs", 0);
	double bytes = ctx->ir ? bytes_moved(ctx->ir) : 0;
	const struct eval_cand *res = &e->result;

	if (st->o.profile) {
		char *p = st->o.profile(st->o.profile_arg, ctx, e);
		if (p) {
			note_profile(e, "ncu", p);
			return p;
		}
	}
	buf_printf(&b, "median %.4g ms", e->ms);
	if (eval_num_or(res->t_eager.median, 0) > 0)
		buf_printf(&b, "; eager PyTorch %.4g ms (speedup %.3gx)", res->t_eager.median,
		    eval_num_or(res->vs_eager.x, 0));
	if (eval_num_or(res->t_compile.median, 0) > 0)
		buf_printf(&b, "; torch.compile %.4g ms", res->t_compile.median);
	if (bytes > 0 && e->ms > 0) {
		buf_printf(&b, "; it moves at least %.4g MB, %.4g GB/s achieved",
		    bytes / 1e6, bytes / (e->ms * 1e6));
		if (bw > 0)
			buf_printf(&b, " of %.4g GB/s measured (%.0f%%); the bandwidth "
			    "floor is %.4g ms", bw, 100 * bytes / (e->ms * 1e6) / bw,
			    bytes / (bw * 1e6));
	}
	for (size_t i = 0; i < res->n_flags; i++)
		buf_printf(&b, "%sflag %s", i ? ", " : "; ", res->flags[i]);
	buf_addstr(&b, ".");
	{
		char *text = buf_detach(&b, NULL);

		if (text)
			note_profile(e, "timings", text);
		return text ? text : strdup("");
	}
}

static json_t *
kernel_obj(struct state *st, const struct evolve_ctx *ctx,
    const struct evolve_entry *e, int with_profile)
{
	json_t *o = json_pack("{s:s,s:i}", "source", e->source, "id", e->id);

	if (o && e->ms >= 0)
		json_object_set_new(o, "ms", json_real(e->ms));
	if (o && with_profile && e->correct) {
		char *p = profile_of(st, ctx, e);
		json_object_set_new(o, "profile", json_string(p ? p : ""));
		free(p);
	}
	return o;
}

static json_t *
gpu_obj(const struct evolve_ctx *ctx)
{
	const json_t *d = ctx->device;
	json_t *g;

	if (!d || !strcmp(ctx->backend, "cpu"))
		return json_null();
	g = json_object();
	json_object_set_new(g, "name", json_string(jsonx_str(d, "name",
	    json_is_string(d) ? json_string_value(d) : "unknown")));
	if (jsonx_int(d, "sm_count", 0) > 0)
		json_object_set_new(g, "sm_count", json_integer(jsonx_int(d, "sm_count", 0)));
	if (jsonx_int(d, "shared_memory_bytes", 0) > 0)
		json_object_set_new(g, "shared_memory_kb",
		    json_integer(jsonx_int(d, "shared_memory_bytes", 0) >> 10));
	if (jsonx_int(d, "l2_bytes", 0) > 0)
		json_object_set_new(g, "l2_mb", json_real(jsonx_int(d, "l2_bytes", 0) / 1048576.0));
	if (jsonx_num(d, "bandwidth_gbs", 0) > 0)
		json_object_set_new(g, "bandwidth_gbs", json_real(jsonx_num(d, "bandwidth_gbs", 0)));
	return g;
}

/* What every prompt may use. */
static json_t *
base_vars(struct state *st, const struct evolve_ctx *ctx, int examples)
{
	int cpu = !strcmp(ctx->backend, "cpu");
	json_t *v = json_object(), *shown = ctx->ir ? json_copy((json_t *)ctx->ir) : NULL;
	char *ir;

	/* variant_graphs repeat the graph once per shape variant for the
	 * compiler; the prompt has the variants' shapes in "variants" */
	json_object_del(shown, "variant_graphs");
	ir = shown ? json_dumps(shown, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	json_decref(shown);

	json_object_set_new(v, "backend", json_string(ctx->backend));
	json_object_set_new(v, "lang", json_string(cpu ? "c" : "cuda"));
	json_object_set_new(v, "file", json_string(cpu ? "kernel.c" : "kernel.cu"));
	json_object_set_new(v, "abi", json_string(buf_cstr(cpu ? &st->abi_c : &st->abi_cuda)));
	json_object_set_new(v, "problem", json_string(ctx->problem_source ?
	    ctx->problem_source : ""));
	json_object_set_new(v, "ir", ir ? json_string(ir) : json_null());
	json_object_set_new(v, "gpu", gpu_obj(ctx));
	json_object_set_new(v, "feedback", json_string(st->feedback));
	if (examples && st->o.retrieve) {
		json_t *ex = st->o.retrieve(st->o.retrieve_arg, ctx, LLM_DEFAULT_EXAMPLES);
		json_t *norm = json_array(), *e;
		size_t i;

		/* own names, so an example's missing field can never show the
		 * current problem's in its place; archive_neighbours() gives
		 * {"problem" (a name), "kernel", "ms", ...} */
		json_array_foreach(json_is_array(ex) ? ex : NULL, i, e) {
			const char *src = jsonx_str(e, "source", jsonx_str(e, "kernel", NULL));
			json_t *x;

			if (!src)
				continue;
			x = json_pack("{s:s,s:s,s:s}", "example_source", src, "example_problem",
			    jsonx_str(e, "problem_source", ""), "example_name",
			    jsonx_str(e, "problem", "an archived problem"));
			if (x && jsonx_num(e, "ms", 0) > 0)
				json_object_set_new(x, "example_ms", json_real(jsonx_num(e, "ms", 0)));
			json_array_append_new(norm, x);
		}
		json_decref(ex);
		json_object_set_new(v, "examples", norm);
	}
	free(ir);
	return v;
}

/* The best correct kernel by another proposer (the graph compiler's). */
static const char *
seed_of(struct state *st, const struct evolve_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_population; i++)
		if (strcmp(ctx->population[i]->proposer, "llm"))
			return ctx->population[i]->source;
	return st->o.seed_source;
}

static int
render_plan(struct state *st, const struct evolve_ctx *ctx, struct plan *p,
    char *err, size_t errlen)
{
	json_t *v = base_vars(st, ctx, p->op != OP_FIX);
	struct buf out = BUF_INIT(LLM_MAX_PROMPT);
	int error;

	switch (p->op) {
	case OP_TRANSLATE:
		if (seed_of(st, ctx))
			json_object_set_new(v, "seed", json_string(seed_of(st, ctx)));
		break;
	case OP_FIX:
		json_object_set_new(v, "kernel", kernel_obj(st, ctx, p->a, 0));
		json_object_set_new(v, "error", json_string(p->error ? p->error : ""));
		json_object_set_new(v, "round", json_integer(p->fix_round));
		break;
	case OP_REWRITE:
	case OP_HINT: {
		/* up to 5 of the fastest, shown slowest first: the model reads the
		 * progression and ends on the best */
		size_t n = ctx->n_population < LLM_MAX_CONTEXT_KERNELS ?
		    ctx->n_population : LLM_MAX_CONTEXT_KERNELS;
		json_t *ks = json_array();

		for (size_t i = n; i-- > 0;) {
			json_t *k = kernel_obj(st, ctx, ctx->population[i], i == 0);
			json_object_set_new(k, "rank", json_integer((json_int_t)(n - i)));
			json_array_append_new(ks, k);
		}
		json_object_set_new(v, "kernels", ks);
		json_object_set_new(v, "hint", p->hint ? json_string(p->hint) : json_null());
		break;
	}
	case OP_EDIT:
		json_object_set_new(v, "kernel", kernel_obj(st, ctx, p->a, 1));
		break;
	case OP_CROSSOVER:
		json_object_set_new(v, "parent_a", kernel_obj(st, ctx, p->a, 0));
		json_object_set_new(v, "parent_b", kernel_obj(st, ctx, p->b, 0));
		break;
	default:
		break;
	}
	if ((error = tmpl_render(buf_cstr(&st->tmpl[p->op]), v, &out, err, errlen)) < 0) {
		char m[512];
		snprintf(m, sizeof(m), "%s", err);
		snprintf(err, errlen, "%s/%s: %s", st->dir, ops[p->op].file, m);
	} else {
		p->prompt = buf_detach(&out, NULL);
	}
	buf_free(&out);
	json_decref(v);
	return error;
}

static int
budget_spent(const struct evolve_ctx *ctx)
{
	const struct evolve_budget *b = ctx->budget;

	return b && ((b->tokens > 0 && ctx->spent->tokens >= b->tokens) ||
	    (b->dollars > 0 && ctx->spent->dollars >= b->dollars));
}

/* Failed LLM candidates of the last generation that are owed a fix. */
static size_t
plan_fixes(struct state *st, const struct evolve_ctx *ctx, struct plan *pl,
    size_t max)
{
	int last = ctx->spent->generations - 1;
	size_t n = 0;

	for (size_t i = ctx->n_history; i-- > 0 && n < max;) {
		const struct evolve_entry *e = &ctx->history[i];
		int round;

		if (e->generation < last)
			break;
		if (e->generation != last || e->correct || strcmp(e->proposer, "llm"))
			continue;
		round = (int)jsonx_int(e->origin, "fix_round", 0) + 1;
		if (round > st->o.cfg->fix_rounds)
			continue;
		pl[n].op = OP_FIX;
		pl[n].a = e;
		pl[n].fix_round = round;
		n++;
	}
	return n;
}

static void
plan_stage3(struct state *st, const struct evolve_ctx *ctx, struct plan *p)
{
	static const enum op cycle[] = { OP_REWRITE, OP_EDIT, OP_CROSSOVER, OP_HINT };
	enum op op = cycle[st->turn++ % 4];

	if (op == OP_CROSSOVER && ctx->n_population < 2)
		op = OP_REWRITE;
	if (op == OP_HINT && st->n_hints == 0)
		op = OP_REWRITE;
	p->op = op;
	p->a = ctx->population[0];
	if (op == OP_CROSSOVER) {
		/* the best and one other, picked at random */
		size_t j = 1 + rng_next(ctx->rng) % (ctx->n_population - 1);
		p->b = ctx->population[j];
	}
	if (op == OP_HINT)
		p->hint = st->hints[rng_next(ctx->rng) % st->n_hints];
}

static json_t *
origin_of(const struct plan *p, const struct llm_reply *r, enum extract_kind k)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:i}",
	    "model", p->model->model, "provider", llm_provider_name(p->model->provider),
	    "stage", ops[p->op].stage, "prompt_sha", r->prompt_sha,
	    "tokens_in", (json_int_t)r->tokens_in, "tokens_out", (json_int_t)r->tokens_out,
	    "cost", r->cost, "attempts", r->attempts);

	if (o && p->op == OP_FIX)
		json_object_set_new(o, "fix_round", json_integer(p->fix_round));
	if (o && p->hint)
		json_object_set_new(o, "hint", json_string(p->hint));
	if (o && k == EXTRACT_EDIT)
		json_object_set_new(o, "answer", json_string("edit"));
	return o;
}

/*
 * The error summarizer: failures whose summary is over llm.summarize_over
 * characters (a long compiler log) are cut down by a model first, all in
 * one parallel round; where that fails, the capped summary stays.
 */
static int
summarize_errors(struct state *st, const struct evolve_ctx *ctx,
    struct plan *pl, size_t n, char *err, size_t errlen)
{
	struct llm_request rq[64];
	struct llm_reply rp[64];
	size_t idx[64], k = 0;
	int error = 0;

	for (size_t i = 0; i < n; i++) {
		if (pl[i].op != OP_FIX)
			continue;
		if (!(pl[i].error = llm_error_summary(&pl[i].a->result, ERROR_SUMMARY_MAX)))
			return -ENOMEM;
		if (st->o.cfg->summarize_over > 0 && k < 64 &&
		    strlen(pl[i].error) > (size_t)st->o.cfg->summarize_over)
			idx[k++] = i;
	}
	if (k == 0)
		return 0;
	memset(rq, 0, sizeof(rq));
	for (size_t j = 0; j < k; j++) {
		struct buf out = BUF_INIT(LLM_MAX_PROMPT);
		json_t *v = json_pack("{s:s}", "error", pl[idx[j]].error);

		if ((error = tmpl_render(buf_cstr(&st->summarize), v, &out, err, errlen)) < 0) {
			json_decref(v);
			buf_free(&out);
			goto out;
		}
		json_decref(v);
		rq[j].model = pick_model(st->o.cfg, ctx->rng);
		rq[j].system = buf_cstr(&st->system);
		rq[j].user = buf_detach(&out, NULL);
		rq[j].stage = "summarize";
		rq[j].temperature = 0;
	}
	if ((error = llm_chat_many(&st->client, rq, rp, k)) < 0) {
		snprintf(err, errlen, "LLM requests: %s", strerror(-error));
		goto out;
	}
	for (size_t j = 0; j < k; j++) {
		struct plan *p = &pl[idx[j]];
		char *text;

		ctx->spent->tokens += rp[j].tokens_in + rp[j].tokens_out;
		ctx->spent->dollars += rp[j].cost;
		if (!strcmp(rp[j].status, "ok") && *rp[j].text &&
		    strlen(rp[j].text) < ERROR_SUMMARY_MAX &&
		    asprintf(&text, "%.*s(summarized)\n%s", (int)strcspn(p->error, "\n") + 1,
		    p->error, rp[j].text) >= 0) {
			free(p->error);
			p->error = text;
		}
		llm_reply_free(&rp[j]);
	}
out:
	for (size_t j = 0; j < k; j++)
		free((char *)rq[j].user);
	return error;
}

static int
llm_propose(struct proposer *pr, const struct evolve_ctx *ctx,
    struct evolve_candidate *out, int max, char *err, size_t errlen)
{
	struct state *st = pr->state;
	struct plan *pl = NULL;
	struct llm_request *rq = NULL;
	struct llm_reply *rp = NULL;
	size_t n, i;
	int got = 0, error = 0;
	int fp32 = 1;

	if (max <= 0 || budget_spent(ctx))
		return 0;
	if (st->calls++ == 0 && st->o.wait_for_seed)
		return 0;
	if (max > st->o.cfg->proposals)
		max = st->o.cfg->proposals;
	if (!(pl = calloc((size_t)max, sizeof(*pl))) ||
	    !(rq = calloc((size_t)max, sizeof(*rq))) ||
	    !(rp = calloc((size_t)max, sizeof(*rp)))) {
		error = -ENOMEM;
		goto out;
	}
	n = plan_fixes(st, ctx, pl, (size_t)max);
	for (; n < (size_t)max; n++) {
		if (ctx->n_population == 0)
			pl[n].op = OP_TRANSLATE;
		else
			plan_stage3(st, ctx, &pl[n]);
	}
	if ((error = summarize_errors(st, ctx, pl, n, err, errlen)) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		pl[i].model = pick_model(st->o.cfg, ctx->rng);
		if ((error = render_plan(st, ctx, &pl[i], err, errlen)) < 0)
			goto out;
		rq[i].model = pl[i].model;
		rq[i].system = buf_cstr(&st->system);
		rq[i].user = pl[i].prompt;
		rq[i].stage = ops[pl[i].op].stage;
		rq[i].temperature = -1;
	}
	if (ctx->ir) {
		const json_t *t;
		size_t j;
		json_array_foreach(json_object_get(ctx->ir, "inputs"), j, t)
			fp32 &= !strcmp(jsonx_str(t, "dtype", "float32"), "float32");
	}
	if ((error = llm_chat_many(&st->client, rq, rp, n)) < 0) {
		snprintf(err, errlen, "LLM requests: %s", strerror(-error));
		goto out;
	}
	st->feedback[0] = '\0';
	for (i = 0; i < n; i++) {
		enum extract_kind kind = EXTRACT_NONE;
		char *src = NULL, why[FEEDBACK_MAX];
		const char *parent = pl[i].a ? pl[i].a->source : NULL;

		ctx->spent->tokens += rp[i].tokens_in + rp[i].tokens_out;
		ctx->spent->dollars += rp[i].cost;
		if (!strcmp(rp[i].status, "malformed"))
			ctx->spent->malformed++;
		if (strcmp(rp[i].status, "ok"))
			continue;
		if (llm_extract(rp[i].text, parent, ctx->backend, fp32, &src, &kind,
		    why, sizeof(why)) < 0) {
			ctx->spent->malformed++;
			snprintf(st->feedback, sizeof(st->feedback), "%s", why);
			continue;
		}
		out[got].source = src;
		/* what the answer was, where the model chose otherwise than asked */
		out[got].op = ops[pl[i].op].evolve_op;
		if (kind == EXTRACT_EDIT && pl[i].op != OP_FIX)
			out[got].op = "edit";
		else if (kind == EXTRACT_BLOCK && pl[i].op == OP_EDIT)
			out[got].op = "rewrite";
		out[got].origin = origin_of(&pl[i], &rp[i], kind);
		out[got].parents[0] = pl[i].a ? pl[i].a->id : -1;
		out[got].parents[1] = pl[i].b ? pl[i].b->id : -1;
		got++;
	}
	/* every call refused for good (no key, 401, 404): the run cannot go
	 * on, and saying so beats a run that ends "exhausted" */
	if (got == 0 && n > 0) {
		for (i = 0; i < n && (!strcmp(rp[i].status, "no_key") ||
		    (!strcmp(rp[i].status, "http_error") && rp[i].http_status < 500 &&
		    rp[i].http_status != 429)); i++)
			;
		if (i == n) {
			snprintf(err, errlen, "every LLM request failed; the first: %s",
			    rp[0].error[0] ? rp[0].error : rp[0].status);
			error = -EIO;
		}
	}
out:
	for (i = 0; pl && i < (size_t)max; i++) {
		free(pl[i].prompt);
		free(pl[i].error);
	}
	for (i = 0; rp && i < (size_t)max; i++)
		llm_reply_free(&rp[i]);
	free(pl);
	free(rq);
	free(rp);
	return error < 0 ? error : got;
}

static void
state_free(struct state *st)
{
	if (!st)
		return;
	for (int i = 0; i < N_OPS; i++)
		buf_free(&st->tmpl[i]);
	buf_free(&st->system);
	buf_free(&st->abi_c);
	buf_free(&st->abi_cuda);
	buf_free(&st->summarize);
	for (size_t i = 0; i < st->n_hints; i++)
		free(st->hints[i]);
	free(st->dir);
	if (st->owned) {
		llm_config_free(st->owned);
		free(st->owned);
	}
	free(st);
}

static void
llm_free(struct proposer *p)
{
	if (!p)
		return;
	state_free(p->state);
	free(p);
}

static int
load_hints(struct state *st, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(TMPL_MAX_BYTES);
	char *line, *save = NULL;
	int error;

	if ((error = tmpl_load(st->dir, "hints.txt", &b, err, errlen)) < 0)
		return error;
	for (line = strtok_r(b.data, "\n", &save); line && st->n_hints < MAX_HINTS;
	    line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ' || *line == '-')
			line++;
		if (!*line || *line == '#')
			continue;
		if (!(st->hints[st->n_hints++] = strdup(line))) {
			buf_free(&b);
			return -ENOMEM;
		}
	}
	buf_free(&b);
	return 0;
}

int
llm_proposer_new(const struct llm_proposer_opts *o, struct proposer **out,
    char *err, size_t errlen)
{
	struct state *st = NULL;
	struct proposer *p = NULL;
	int error = -EINVAL;

	if (!o->cfg || o->cfg->n_models == 0) {
		snprintf(err, errlen, "no LLM models configured (llm.models in the "
		    "server config)");
		return -EINVAL;
	}
	if (!(st = calloc(1, sizeof(*st))) || !(p = calloc(1, sizeof(*p)))) {
		error = -ENOMEM;
		goto fail;
	}
	st->o = *o;
	st->client.cfg = o->cfg;
	st->client.record = o->record;
	st->client.record_arg = o->record_arg;
	st->client.sleep_ms = o->sleep_ms;
	st->client.sleep_arg = o->sleep_arg;
	if (!(st->dir = tmpl_prompts_dir(o->cfg->prompts_dir, err, errlen)))
		goto fail;
	for (int i = 0; i < N_OPS; i++) {
		st->tmpl[i] = (struct buf)BUF_INIT(TMPL_MAX_BYTES);
		if ((error = tmpl_load(st->dir, ops[i].file, &st->tmpl[i], err, errlen)) < 0)
			goto fail;
	}
	if ((error = tmpl_load(st->dir, "system.md", &st->system, err, errlen)) < 0 ||
	    (error = tmpl_load(st->dir, "abi_c.md", &st->abi_c, err, errlen)) < 0 ||
	    (error = tmpl_load(st->dir, "abi_cuda.md", &st->abi_cuda, err, errlen)) < 0 ||
	    (error = tmpl_load(st->dir, SUMMARIZE_FILE, &st->summarize, err, errlen)) < 0 ||
	    (error = load_hints(st, err, errlen)) < 0)
		goto fail;
	p->name = "llm";
	p->state = st;
	p->propose = llm_propose;
	p->free = llm_free;
	*out = p;
	return 0;
fail:
	state_free(st);
	free(p);
	return error;
}

int
llm_proposer_from_config(const struct config *c,
    const struct llm_proposer_opts *o, struct proposer **out, char *err,
    size_t errlen)
{
	struct llm_proposer_opts own = *o;
	struct llm_config *lc = calloc(1, sizeof(*lc));
	int error;

	if (!lc)
		return -ENOMEM;
	if ((error = llm_config_load(c, lc, err, errlen)) < 0) {
		free(lc);
		return error;
	}
	own.cfg = lc;
	if ((error = llm_proposer_new(&own, out, err, errlen)) < 0) {
		llm_config_free(lc);
		free(lc);
		return error;
	}
	((struct state *)(*out)->state)->owned = lc;
	return 0;
}
