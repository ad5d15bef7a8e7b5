/*
 * evolve: the generation loop of `kernelbot optimize` (docs/design.md,
 * "The pipeline"), over any proposer. Each generation asks the proposers for
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

#include "gpu/eval.h"

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
	struct eval_cand result;	/* the evaluator's verdict on it (gpu/eval_result.h) */
	int correct;		/* correct, timed and not flagged: in the population */
	/*
	 * Correct and timed, but a plausibility flag (evo_barring_flag) keeps
	 * it out of the population; kept for review, never dropped: a run
	 * whose correct kernels are all flagged ends "needs_review".
	 */
	int flagged;
	double ms;		/* timings_ms.candidate.median, < 0 unless correct or flagged */
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
	const char *ir_error;		/* why ir is NULL ("PATH: trace failed: ...") */
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
	/*
	 * Optional: how many proposals it still means to make whatever the
	 * population does (the compiler's one-field neighbours of the
	 * default not yet drawn). While any proposer has some, the loop does
	 * not call the run converged: each knob gets measured alone before
	 * a flat stretch of breeding ends the search.
	 */
	size_t (*pending)(struct proposer *p);
};

void evolve_candidate_clear(struct evolve_candidate *c);

/* ------------------------------------------------------------ the loop */

#define EVOLVE_MAX_PROPOSERS	4
#define EVOLVE_MAX_PER_GEN	256	/* candidates one generation evaluates */
#define EVOLVE_DEFAULT_PER_GEN	8
#define EVOLVE_DEFAULT_POP	8
#define EVOLVE_DEFAULT_PATIENCE	3
#define EVOLVE_DEFAULT_NOISE	0.03	/* relative gain below which the best "did not improve" */
#define EVOLVE_DEFAULT_CONFIRM_TRIALS 10

/*
 * The evaluator the loop calls, once per generation and once for the
 * confirmation: eval_run() (gpu/eval.h) unless a test injects another.
 */
struct eval_opts;
typedef int (*evolve_eval_fn)(const struct eval_opts *o, json_t **out, char *err,
    size_t errlen);

struct evolve_opts {
	const char *problem;		/* the problem file */
	const char *class_name;		/* NULL: "Model" */
	struct harness_entry entry;	/* its entry points; NULLs: the defaults */
	const char *backend;		/* "cpu" or "cuda" */
	int device;			/* CUDA ordinal */
	const char *out_dir;		/* created when missing; the --out layout */
	struct proposer *proposers[EVOLVE_MAX_PROPOSERS];
	double shares[EVOLVE_MAX_PROPOSERS];	/* of each generation; <= 0 counts as 1 */
	size_t n_proposers;
	int per_generation;		/* candidates asked for per generation */
	int population;			/* fastest correct kept */
	int patience;			/* generations without improvement before "converged" */
	double noise;			/* relative gain that counts as an improvement */
	struct evolve_budget budget;
	/* evaluation */
	int trials, timeout_s;		/* per generation; 0 = gpu/eval.h defaults */
	int rounds, reps, warmup;	/* timing; 0 = the judge's defaults */
	const char *baselines;		/* per generation; NULL = "eager" */
	int confirm_trials;		/* the final confirmation of the best */
	const char *confirm_baselines;	/* NULL = "eager,compile" */
	uint64_t seed;			/* proposers' RNG; 0 = a fresh one */
	const json_t *ir;		/* the problem's graph IR (borrowed), or NULL */
	const char *ir_error;		/* why ir is NULL */
	/* LLM use before the search (stage 1, pipeline/llm/functionalize.h):
	 * the run's spent starts from it, so it counts against the budgets */
	int64_t tokens_before;
	double dollars_before;
	int have_sandbox_exec;		/* passed to eval_opts */
	size_t mem_bytes, disk_bytes;	/* passed to eval_opts (0: its defaults) */
	int runners, build_timeout_s;	/* passed to eval_opts (0: its defaults) */
	struct eval_env eval_env;	/* passed to eval_opts: the CLI fills it
					 * (cli_eval_env); zero: all unset */
	int quiet;			/* no progress lines on stderr */
	evolve_eval_fn eval;		/* NULL: eval_run */
};

#define EVOLVE_OPTS_INIT { .backend = "cpu", .per_generation = EVOLVE_DEFAULT_PER_GEN, \
	.population = EVOLVE_DEFAULT_POP, .patience = EVOLVE_DEFAULT_PATIENCE, \
	.noise = EVOLVE_DEFAULT_NOISE, .confirm_trials = EVOLVE_DEFAULT_CONFIRM_TRIALS }

/*
 * Run the search and write the --out layout into o->out_dir (docs/
 * optimize.md): summary.json, best/, history.json, candidates/,
 * problem.py, REPORT.md. 0 and *summary (the summary.json object, the
 * caller's reference) whatever the outcome of the search: its "status"
 * says "improved", "not_faster", "needs_review" (the only confirmed
 * kernels carry a plausibility flag: best is that kernel, with its
 * flags, for a person to judge), "no_correct", "unsupported" or "error"
 * (a proposer or the evaluator failed mid-run; what was found so far is
 * still written). An earlier run's files in out_dir are replaced; an
 * out_dir that holds other files is -EEXIST. -EINVAL for bad options,
 * -errno when out_dir cannot be written, with a sentence in err; no
 * summary then.
 */
int evolve_run(const struct evolve_opts *o, json_t **summary, char *err, size_t errlen);

/*
 * The graph compiler as a proposer (pipeline/evolve/prop_compiler.c):
 * schedule_default and a few diverse schedules in generation 0, then
 * mutations and crossovers of the population's schedules; origin
 * {"schedule": {...}}. A schedule or a source already tried is never
 * proposed again. Declared shape variants get a kernel version each
 * (the IR's variant_graphs). An op the compiler refuses, or a variant
 * with no graph traced at its shapes, is -ENOTSUP with "unsupported:
 * ..." from propose(). 0 or -ENOMEM.
 */
int prop_compiler_new(const char *backend, struct proposer **out);

/*
 * The archive's retrieval: up to k solved problems most like ctx's, best
 * first, as archive_neighbours() gives them ({"kernel", "backend", ...}),
 * a new reference, or NULL.
 */
typedef json_t *(*evolve_retrieve_fn)(void *arg, const struct evolve_ctx *ctx, int k);

/*
 * Give a compiler proposer an archive: generation 0 then tries the
 * schedules of the nearest compiler kernels for its backend (read from
 * their leading comment) right after the default (op "archive"). arg_free (may be NULL) is called on arg
 * when the proposer is freed or another archive is set.
 */
void prop_compiler_set_archive(struct proposer *p, evolve_retrieve_fn fn, void *arg,
    void (*arg_free)(void *arg));

/* REPORT.md for a finished run (pipeline/evolve/report.c): 0 or -errno. */
int evolve_write_report(const char *path, const json_t *summary, const json_t *history,
    const struct eval_cand *best_result);

#endif
