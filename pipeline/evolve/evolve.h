/*
 * evolve: the generation loop of `kernelbot optimize` (DESIGN.md section
 * 7), over any proposer. Each generation asks the proposers for
 * candidates, drops those whose source hash was seen before, writes the
 * rest into the run's directory and evaluates them as one batch through
 * eval_run() (gpu/eval.h: one judge, baselines computed once), records
 * every candidate in the history, and keeps a population of the fastest
 * verified ones. It stops when a budget is spent, when no proposer has
 * anything new, or when the best time has not improved for `patience`
 * generations; the summary says which.
 *
 * A proposer is a small vtable. The graph compiler's (schedules that
 * mutate and cross over) lives in pipeline/evolve/prop_compiler.c; the
 * LLM stages (pipeline/llm) are another. A proposer never evaluates
 * anything itself: everything it returns goes through the evaluator, so
 * nothing it says about a kernel is believed.
 */
#ifndef KB_PIPELINE_EVOLVE_EVOLVE_H
#define KB_PIPELINE_EVOLVE_EVOLVE_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One candidate a proposer returns: owned by the loop once returned. */
struct evolve_candidate {
	char *source;		/* the kernel source (malloc'd) */
	json_t *origin;		/* how it was made: {"schedule": {...}} for the
				 * compiler; {"model", "stage", "prompt_sha", ...}
				 * for an LLM; the loop stores it in the history */
	const char *op;		/* "seed", "mutate", "crossover", "rewrite",
				 * "fix", "edit", "hint" (static strings) */
	int parents[2];		/* history ids, -1 when none */
};

/* One evaluated candidate, as proposers see it (all borrowed). */
struct evolve_entry {
	int id;			/* index in the history */
	int generation;
	const char *proposer;	/* its proposer's name */
	const char *op;
	const char *source;
	const char *source_sha;	/* hex SHA-256 of source */
	const json_t *origin;
	const json_t *result;	/* the evaluator's object for it (gpu/eval.h) */
	int correct;
	double ms;		/* timings_ms.candidate.median, < 0 unless correct */
	int parents[2];
};

/* Budgets; 0 means no limit for that one. */
struct evolve_budget {
	int candidates;		/* candidates evaluated */
	int generations;
	double wall_s;		/* whole run */
	double gpu_s;		/* sum of the evaluator's eval_s */
	int64_t tokens;		/* LLM tokens, in + out */
	double dollars;		/* LLM cost */
};

/* What has been spent; proposers add their tokens and dollars. */
struct evolve_spent {
	int candidates, generations;
	double wall_s, gpu_s;
	int64_t tokens;
	double dollars;
	int malformed;		/* proposer answers that held no usable kernel */
};

struct evolve_ctx {
	const char *problem;		/* the problem file (KernelBench format) */
	const char *problem_source;	/* its text */
	const json_t *ir;		/* graph IR (the trace's "ir"), NULL when the
					 * module does not trace */
	const char *backend;		/* "cpu" or "cuda" */
	const json_t *device;		/* the evaluator's "device" object once one
					 * generation has run, else NULL */
	/* the history, in order of evaluation, and the population: correct
	 * entries, fastest first (pointers into the history) */
	const struct evolve_entry *history;
	size_t n_history;
	const struct evolve_entry *const *population;
	size_t n_population;
	const struct evolve_budget *budget;
	struct evolve_spent *spent;
	uint64_t *rng;			/* xorshift state for proposers */
};

struct proposer {
	const char *name;		/* "compiler", "llm" */
	void *state;
	/*
	 * Fill out[0..max) with new candidates for generation ctx->spent->
	 * generations (0 is the seed generation). Return how many (0: nothing
	 * new to offer), or -errno with a sentence in err for a failure that
	 * should stop the run (a spent budget is not one: return 0 and let
	 * the loop see the budget).
	 */
	int (*propose)(struct proposer *p, const struct evolve_ctx *ctx,
	    struct evolve_candidate *out, int max, char *err, size_t errlen);
	void (*free)(struct proposer *p);
};

void evolve_candidate_clear(struct evolve_candidate *c);

#endif
