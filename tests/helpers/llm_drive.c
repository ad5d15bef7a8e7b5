/*
 * llm_drive: runs pipeline/llm against a (fake) LLM server for the e2e
 * tests, until `kernelbot optimize --proposer llm` exists (branch evolve).
 *
 *   llm_drive chat CONFIG DBDIR STAGE PROMPT [N]
 *       N copies of one request in parallel through llm_chat_many; prints
 *       a JSON array of replies; every attempt recorded in DBDIR's store
 *       and logged (model, status, tokens) on stderr.
 *   llm_drive evolve CONFIG DBDIR PROBLEM OUTDIR [MAX_GENERATIONS]
 *       the llm proposer over the real evaluator (CPU backend) in a small
 *       generation loop; OUTDIR/summary.json, history.json, candidates/.
 *   llm_drive __worker ...   `kernelbot __worker`, which the evaluator runs as
 *       this binary (/proc/self/exe)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "pipeline/optimize/optimize_llm.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "gpu/eval.h"
#include "pipeline/llm/llm.h"

static void
record(void *arg, const struct llm_call *c)
{
	int error;

	log_info("llm call", "model=%s stage=%s status=%s http=%ld attempt=%d "
	    "tokens_in=%lld tokens_out=%lld", c->model, c->stage, c->status,
	    c->http_status, c->attempt, (long long)c->tokens_in,
	    (long long)c->tokens_out);
	if ((error = optimize_llm_record(arg, 0, c)) < 0)
		log_error("llm call not recorded", "error=%s", strerror(-error));
}

static int
chat(const struct llm_config *lc, struct store *s, const char *stage,
    const char *prompt, int n)
{
	struct llm_client cl = { lc, record, s, NULL, NULL };
	struct llm_request *rq = calloc((size_t)n, sizeof(*rq));
	struct llm_reply *rp = calloc((size_t)n, sizeof(*rp));
	json_t *arr = json_array();
	int error;

	for (int i = 0; i < n; i++) {
		rq[i].model = &lc->models[(size_t)i % lc->n_models];
		rq[i].system = "You write kernels.";
		rq[i].user = prompt;
		rq[i].stage = stage;
		rq[i].temperature = -1;
	}
	if ((error = llm_chat_many(&cl, rq, rp, (size_t)n)) < 0) {
		fprintf(stderr, "llm_chat_many: %s\n", strerror(-error));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		json_array_append_new(arr, json_pack("{s:s?,s:s,s:I,s:i,s:I,s:I,s:f,s:f,s:s,s:s}",
		    "text", rp[i].text, "status", rp[i].status,
		    "http_status", (json_int_t)rp[i].http_status, "attempts", rp[i].attempts,
		    "tokens_in", (json_int_t)rp[i].tokens_in, "tokens_out", (json_int_t)rp[i].tokens_out,
		    "cost", rp[i].cost, "latency_s", rp[i].latency_s, "error", rp[i].error,
		    "prompt_sha", rp[i].prompt_sha));
		llm_reply_free(&rp[i]);
	}
	json_dumpf(arr, stdout, JSON_INDENT(1));
	putchar('\n');
	json_decref(arr);
	free(rq);
	free(rp);
	return 0;
}

/* ---- a small generation loop: what pipeline/evolve will do properly ---- */

struct run {
	struct evolve_entry *h;
	size_t n, cap;
	const struct evolve_entry **pop;
	size_t n_pop;
};

static int
by_ms(const void *a, const void *b)
{
	const struct evolve_entry *x = *(const struct evolve_entry *const *)a;
	const struct evolve_entry *y = *(const struct evolve_entry *const *)b;

	return x->ms < y->ms ? -1 : x->ms > y->ms;
}

static void
repopulate(struct run *r)
{
	r->n_pop = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->h[i].correct)
			r->pop[r->n_pop++] = &r->h[i];
	qsort(r->pop, r->n_pop, sizeof(*r->pop), by_ms);
}

static const char *
budget_reason(const struct evolve_budget *b, const struct evolve_spent *s)
{
	if (b->tokens > 0 && s->tokens >= b->tokens)
		return "budget:tokens";
	if (b->dollars > 0 && s->dollars >= b->dollars)
		return "budget:dollars";
	if (b->candidates > 0 && s->candidates >= b->candidates)
		return "budget:candidates";
	if (b->generations > 0 && s->generations >= b->generations)
		return "budget:generations";
	return NULL;
}

static int
evolve(const struct llm_config *lc, struct store *s, const char *problem,
    const char *outdir, int max_gen)
{
	struct llm_proposer_opts po = { 0 };
	struct proposer *p = NULL;
	struct evolve_budget budget = { lc->budget_candidates, lc->budget_generations,
		lc->budget_wall_s, lc->budget_gpu_s, lc->budget_tokens, lc->budget_dollars };
	struct evolve_spent spent = { 0 };
	struct evolve_ctx ctx = { 0 };
	struct run r = { 0 };
	struct buf src = BUF_INIT(1u << 20);
	uint64_t rng = 12345;
	json_t *device = NULL, *cands = json_array(), *gens = json_array();
	const char *stop = NULL;
	char err[512], path[4096];

	po.cfg = lc;
	po.record = record;
	po.record_arg = s;
	if (llm_proposer_new(&po, &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "llm_drive: %s\n", err);
		return 2;
	}
	if (buf_read_file(&src, problem) < 0) {
		fprintf(stderr, "llm_drive: cannot read %s\n", problem);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/candidates", outdir);
	mkdir(outdir, 0755);
	mkdir(path, 0755);
	ctx.problem = problem;
	ctx.problem_source = buf_cstr(&src);
	ctx.backend = "cpu";
	ctx.budget = &budget;
	ctx.spent = &spent;
	ctx.rng = &rng;
	for (int gen = 0; !stop; gen++) {
		struct evolve_candidate out[16] = { 0 };
		const char *paths[16];
		char pbuf[16][4096];
		struct eval_opts eo = EVAL_OPTS_INIT;
		json_t *res = NULL;
		int n, correct = 0;
		double best = -1;

		if (gen >= max_gen) {
			stop = "budget:generations";
			break;
		}
		spent.generations = gen;
		/* tokens and dollars are left to the proposer: it must return 0
		 * once they are spent (what this test driver checks) */
		if ((budget.candidates > 0 && spent.candidates >= budget.candidates) ||
		    (budget.generations > 0 && gen >= budget.generations)) {
			stop = budget_reason(&budget, &spent);
			break;
		}
		ctx.history = r.h;
		ctx.n_history = r.n;
		ctx.population = r.pop;
		ctx.n_population = r.n_pop;
		ctx.device = device;
		n = p->propose(p, &ctx, out, 16, err, sizeof(err));
		if (n < 0) {
			fprintf(stderr, "llm_drive: propose: %s\n", err);
			stop = "error";
			break;
		}
		if (n == 0) {
			stop = budget_reason(&budget, &spent);
			if (!stop)
				stop = "exhausted";
			break;
		}
		if (r.n + (size_t)n > r.cap) {
			r.cap = (r.n + (size_t)n) * 2;
			r.h = realloc(r.h, r.cap * sizeof(*r.h));
			r.pop = realloc(r.pop, r.cap * sizeof(*r.pop));
		}
		for (int i = 0; i < n; i++) {
			FILE *f;
			snprintf(pbuf[i], sizeof(pbuf[i]), "%s/candidates/%04zu.c", outdir,
			    r.n + (size_t)i);
			if (!(f = fopen(pbuf[i], "w")) || fputs(out[i].source, f) < 0 ||
			    fclose(f) != 0) {
				fprintf(stderr, "llm_drive: cannot write %s\n", pbuf[i]);
				return 1;
			}
			paths[i] = pbuf[i];
		}
		eo.problem = problem;
		eo.candidates = paths;
		eo.n_candidates = (size_t)n;
		eo.backend = "cpu";
		eo.trials = 2;
		eo.rounds = 2;
		eo.reps = 3;
		eo.warmup = 1;
		eo.timeout_s = 20;
		eo.baselines = "eager";
		eo.jobs = 2;
		cli_eval_env(&eo.env);
		if (eval_run(&eo, &res, err, sizeof(err)) < 0) {
			fprintf(stderr, "llm_drive: eval: %s\n", err);
			stop = "error";
			break;
		}
		for (int i = 0; i < n; i++) {
			struct evolve_entry *e = &r.h[r.n];
			json_t *one = json_array_get(res, (size_t)i);
			char *sha = malloc(CRYPTO_SHA256_HEX);

			crypto_sha256_hex(out[i].source, strlen(out[i].source), sha);
			e->id = (int)r.n;
			e->generation = gen;
			e->proposer = "llm";
			e->op = out[i].op;
			e->source = out[i].source;
			e->source_sha = sha;
			e->origin = out[i].origin;
			if (eval_cand_parse(one, &e->result, err, sizeof(err)) < 0) {
				fprintf(stderr, "llm_drive: the evaluator's result: %s\n", err);
				return 1;
			}
			e->correct = e->result.correct;
			e->ms = e->correct ? eval_num_or(e->result.t_candidate.median, -1) : -1;
			e->parents[0] = out[i].parents[0];
			e->parents[1] = out[i].parents[1];
			spent.gpu_s += eval_num_or(e->result.eval_s, 0);
			correct += e->correct;
			if (e->correct && (best < 0 || e->ms < best))
				best = e->ms;
			json_array_append_new(cands, json_pack("{s:i,s:i,s:s,s:s,s:[i,i],s:s,s:s,s:s,s:b,s:f,s:O}",
			    "id", e->id, "generation", gen, "proposer", "llm", "op", e->op,
			    "parents", e->parents[0], e->parents[1], "source_sha", sha,
			    "file", pbuf[i] + strlen(outdir) + 1,
			    "status", e->result.status ? e->result.status : "?", "correct", e->correct,
			    "ms", e->ms, "origin", e->origin));
			r.n++;
		}
		if (!device && n > 0)
			device = json_pack("{s:s}", "name", r.h[r.n - (size_t)n].result.device ?
			    r.h[r.n - (size_t)n].result.device : "cpu");
		json_decref(res);
		spent.candidates += n;
		json_array_append_new(gens, json_pack("{s:i,s:i,s:i,s:f}", "generation", gen,
		    "evaluated", n, "correct", correct, "best_ms", best));
		repopulate(&r);
	}
	{
		json_t *sum = json_pack("{s:s,s:s,s:i,s:i,s:s,s:{s:i,s:i,s:f,s:I,s:f,s:i}}",
		    "problem", problem, "status", r.n_pop ? "correct" : "no_correct",
		    "candidates_evaluated", spent.candidates, "generations", spent.generations + 1,
		    "stop_reason", stop, "spent", "candidates", spent.candidates,
		    "generations", spent.generations + 1, "gpu_s", spent.gpu_s,
		    "tokens", (json_int_t)spent.tokens, "dollars", spent.dollars,
		    "malformed", spent.malformed);
		json_t *hist = json_pack("{s:s,s:s,s:o,s:o}", "problem", problem,
		    "backend", "cpu", "generations", gens, "candidates", cands);

		if (r.n_pop)
			json_object_set_new(sum, "best", json_pack("{s:i,s:f,s:s}",
			    "id", r.pop[0]->id, "ms", r.pop[0]->ms, "source", r.pop[0]->source));
		snprintf(path, sizeof(path), "%s/summary.json", outdir);
		json_dump_file(sum, path, JSON_INDENT(1));
		snprintf(path, sizeof(path), "%s/history.json", outdir);
		json_dump_file(hist, path, JSON_INDENT(1));
		json_decref(sum);
		json_decref(hist);
	}
	for (size_t i = 0; i < r.n; i++) {
		free((char *)r.h[i].source_sha);
		free((char *)r.h[i].source);
		json_decref((json_t *)r.h[i].origin);
		eval_cand_clear(&r.h[i].result);
	}
	free(r.h);
	free(r.pop);
	json_decref(device);
	buf_free(&src);
	p->free(p);
	return 0;
}

int
main(int argc, char **argv)
{
	struct config *c = NULL;
	struct llm_config lc;
	struct store *s = NULL;
	char err[512];
	int rc;

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	/* the evaluator runs its workers as "SELF __worker ...": be kernelbot */
	if (argc > 1 && !strcmp(argv[1], "__worker"))
		return cmd_worker(argc - 1, argv + 1);
	if (argc < 4) {
		fprintf(stderr, "usage: llm_drive chat CONFIG DBDIR STAGE PROMPT [N] | "
		    "evolve CONFIG DBDIR PROBLEM OUTDIR [MAX_GENERATIONS]\n");
		return 2;
	}
	if ((rc = config_load_cli("llm_drive", argv[2], CONFIG_NO_SECRETS, &c)) != 0)
		return rc;
	if (llm_config_load(c, &lc, err, sizeof(err)) < 0) {
		fprintf(stderr, "llm_drive: %s\n", err);
		return 2;
	}
	if (store_open(argv[3], 0, &s) < 0) {
		fprintf(stderr, "llm_drive: cannot open the store in %s\n", argv[3]);
		return 1;
	}
	if (!strcmp(argv[1], "chat") && argc >= 6)
		rc = chat(&lc, s, argv[4], argv[5], argc > 6 ? atoi(argv[6]) : 1);
	else if (!strcmp(argv[1], "evolve") && argc >= 6)
		rc = evolve(&lc, s, argv[4], argv[5], argc > 6 ? atoi(argv[6]) : 8);
	else
		rc = 2;
	store_close(s);
	llm_config_free(&lc);
	config_free(c);
	return rc;
}
