/*
 * evolve_int: helpers shared by the files of pipeline/evolve (not a
 * public contract).
 */
#ifndef KB_PIPELINE_EVOLVE_EVOLVE_INT_H
#define KB_PIPELINE_EVOLVE_EVOLVE_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/crypto.h"
#include "pipeline/evolve/evolve.h"

/* A JSON value, indented, written whole (fsx_write_file). 0 or -errno. */
int evo_write_json(const char *path, const json_t *v);

/*
 * Make dir ready for a run: created when missing; when it holds an
 * earlier run (history.json or summary.json), that run's files are
 * removed (candidates/NNNN.c|.cu, best/, summary.json, history.json,
 * REPORT.md, problem.py) and nothing else; any other non-empty folder is
 * -EEXIST, left alone. 0 or -errno.
 */
int evo_prepare_dir(const char *dir);

/* "PATH/NAME" into out; -ENAMETOOLONG when it does not fit. */
int evo_join(char *out, size_t outlen, const char *dir, const char *name);

/* The state of one evolve_run() (evolve.c); the JSON is built in evolve_json.c. */
struct evo_run {
	const struct evolve_opts *o;
	struct evolve_ctx ctx;
	struct evolve_spent spent;
	struct evolve_entry *hist;	/* owned: source, source_sha, origin, result */
	size_t n_hist, cap_hist;
	const struct evolve_entry **pop;
	size_t n_pop;
	json_t *gens;			/* history's "generations" */
	json_t *device;
	char *problem_source;
	char problem_sha[CRYPTO_SHA256_HEX];
	const char *ext;		/* ".c" or ".cu" */
	double t0;
	uint64_t rng;
	int disabled[EVOLVE_MAX_PROPOSERS];
	char unsupported[1024];		/* a proposer's -ENOTSUP message */
	char error[2048];		/* what stopped the run with "error" */
	const char *stop_reason;
	int last_improved;		/* generation of the last real improvement, -1 */
	double best_ms;			/* < 0 until something is correct */
};

/* out_dir/name into out: 0 or -ENAMETOOLONG. */
int evo_out_path(const struct evo_run *r, char *out, size_t outlen, const char *name);

/* "candidates/NNNN.c" (or .cu) for history id `id`. */
void evo_cand_file(const struct evo_run *r, int id, char *out, size_t outlen);

/* The budget (null for no limit) and what was spent, as JSON (new references). */
json_t *evo_budget_json(const struct evolve_budget *b);
json_t *evo_spent_json(const struct evo_run *r);

/* history.json's object (a new reference, NULL on ENOMEM), and writing it. */
json_t *evo_history_json(const struct evo_run *r);
int evo_write_history(const struct evo_run *r);
/*
 * The first flag of an evaluator result that bars it from the population
 * and from being the best ("below_bandwidth_floor", "side_stream",
 * "untimed_work": physically implausible, or work the timer did not see),
 * or NULL. Such a kernel stays in the history, marked excluded: a
 * search must not climb on an exploit the checks flagged but did not fail.
 * It is not dropped either: when no unflagged kernel confirms, the
 * flagged ones are confirmed and the run ends "needs_review".
 */
const char *evo_barring_flag(const struct eval_cand *result);

/* summary.json's object; best is the confirmation's verdict or NULL. */
json_t *evo_summary_json(const struct evo_run *r, const char *status, const struct eval_cand *best,
    int best_id);

#endif
