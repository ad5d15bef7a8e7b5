/*
 * llm: the LLM proposer (docs/design.md, "The pipeline"; the AI CUDA Engineer's
 * stages 2 and 3) behind pipeline/evolve/evolve.h's `struct proposer`,
 * named "llm". docs/llm.md describes the prompts and the rules.
 *
 * Stage 2 (translate): while no correct kernel exists, each generation
 * asks llm.proposals models (picked by weight) to write one from the
 * problem, its graph IR, the GPU's specifications, the graph compiler's
 * kernel when there is one, and retrieved archive examples. A proposal
 * that fails (compile error, mismatch, crash) goes back to a model with
 * the evaluator's summarized errors, up to llm.fix_rounds times.
 *
 * Stage 3 (evolve): once there are correct kernels, the operators take
 * turns: rewrite (up to 5 correct kernels, slowest to fastest, with their
 * times), local edit (search/replace on the best), crossover (two parents
 * with their times), hint (one high-level hint from prompts/hints.txt);
 * every prompt carries a profile summary from the timings and the roofline
 * floor (or the profile hook's text, where ncu runs).
 *
 * Answers that hold no usable kernel are counted in spent->malformed and
 * their reason goes into the next prompt. Tokens and dollars are added to
 * ctx->spent; once a token or dollar budget is spent the proposer returns
 * 0, so the loop stops with budget:tokens / budget:dollars.
 */
#ifndef KB_PIPELINE_LLM_LLM_H
#define KB_PIPELINE_LLM_LLM_H

#include <jansson.h>
#include <stddef.h>

#include "pipeline/evolve/evolve.h"
#include "pipeline/llm/client.h"

#define LLM_MAX_CONTEXT_KERNELS 5	/* correct kernels in a rewrite prompt */
#define LLM_DEFAULT_EXAMPLES 3		/* retrieved archive examples */
#define LLM_MAX_PROMPT (1u << 20)	/* bytes of one rendered prompt */

struct llm_proposer_opts {
	const struct llm_config *cfg;	/* models and settings (borrowed) */
	/* every call attempt (the store's llm_calls); may be NULL */
	void (*record)(void *arg, const struct llm_call *call);
	void *record_arg;
	/*
	 * Retrieval (pipeline/archive's archive_neighbours): up to k solved
	 * problems like ctx's, a new JSON array of {"problem", "source",
	 * "ms", "speedup", ...}, or NULL for none. May be NULL.
	 */
	json_t *(*retrieve)(void *arg, const struct evolve_ctx *ctx, int k);
	void *retrieve_arg;
	/*
	 * Profile of a correct kernel (ncu on a GPU runner: achieved bandwidth
	 * and FLOP rate against the peaks, occupancy, top stall reasons), a
	 * malloc'd paragraph or NULL; NULL hook: the summary from the timings
	 * and the roofline floor.
	 */
	char *(*profile)(void *arg, const struct evolve_ctx *ctx,
	    const struct evolve_entry *e);
	void *profile_arg;
	const char *seed_source;	/* the graph compiler's kernel, or NULL */
	/*
	 * Another proposer (the graph compiler, `--proposer both`) seeds this
	 * one: the first call offers nothing, so stage 3 starts from the
	 * seeds' correct kernels and translate prompts carry their best.
	 */
	int wait_for_seed;
	/* the wait between retries, for tests; NULL: sleep */
	void (*sleep_ms)(void *arg, long ms);
	void *sleep_arg;
};

/*
 * A proposer named "llm" (free it with p->free(p)). -EINVAL with err when
 * the config has no models or the prompt templates cannot be found and
 * rendered; -ENOMEM.
 */
int llm_proposer_new(const struct llm_proposer_opts *o, struct proposer **out,
    char *err, size_t errlen);

/*
 * The same with the models and settings read from a server config's `llm`
 * and `budgets` sections (llm_config_load), owned by the proposer; o->cfg
 * is ignored. -EINVAL with "FILE:LINE: KEY: message" for a bad section.
 */
int llm_proposer_from_config(const struct config *c,
    const struct llm_proposer_opts *o, struct proposer **out, char *err,
    size_t errlen);

/*
 * The evaluator's result for a failed candidate as feedback for a model:
 * its status, failed checks and errors, at most maxlen bytes. malloc'd.
 */
char *llm_error_summary(const struct eval_cand *result, size_t maxlen);

#endif
