/*
 * eval_result: the evaluator's result as C. One candidate's verdict is a
 * JSON object at the process boundary (`kernelbot eval --json`, a runner's
 * reply, best/result.json, the store's saved verdict: docs/evaluation.md,
 * "Output"); code above gpu/ reads it through struct eval_cand, parsed
 * here once, not by key path (docs/design.md names the few places that
 * still read a key of it).
 *
 * Ownership: a parsed eval_cand holds a reference to the object it was
 * parsed from, and its strings, arrays and pass-through parts point into
 * that object: they live until eval_cand_clear() and must not be changed
 * in between. The object may gain keys the evaluator never writes (the
 * search notes its profile feedback on it); it must not lose or change
 * the ones parsed.
 *
 * Errors: absent and null members are absent (NAN, -1, NULL, 0); a member
 * of the wrong type is -EINVAL, with its dotted path and what was wrong in
 * err, so a verdict from another process that is not one says why.
 */
#ifndef KB_GPU_EVAL_RESULT_H
#define KB_GPU_EVAL_RESULT_H

#include <jansson.h>
#include <stddef.h>

/* One row of "timings_ms", in milliseconds; NAN and -1 where absent. */
struct eval_timing {
	int present;			/* the row is there (an object) */
	double median, p10, p90;
	long long runs;
	const json_t *json;		/* the row, for a serializer that copies it */
};

/* A speedup over a baseline and its 95% interval; NAN where absent. */
struct eval_speedup {
	double x;
	double lo, hi;			/* both or neither */
};

/* One of "checks": a named check the candidate passed or failed. */
struct eval_check {
	const char *name;		/* NULL: unnamed */
	int passed;			/* 1, 0, or -1 where the judge did not say */
	const char *detail;		/* NULL: none */
};

struct eval_cand {
	const char *candidate;		/* the path evaluated; NULL: not given */
	const char *status;		/* "correct", "mismatch", "compile_error",
					 * "runtime_error", "timeout", "rejected";
					 * NULL: not given */
	int correct;			/* "correct" is true */
	int needs_review;		/* "needs_review" is true (gpu/flags.h) */
	const char *backend, *arch;	/* NULL where absent */
	const char *device;		/* the device's name: "device" as a string,
					 * or its "name" where an object; NULL where
					 * absent */
	const char *device_name;	/* device_info.name, NULL where absent */
	const char *torch;		/* device_info.torch, NULL where absent */
	int timed;			/* "timings_ms" is there */
	struct eval_timing t_candidate, t_eager, t_compile;
	struct eval_speedup vs_eager, vs_compile;
	const char *const *flags;	/* n_flags strings, in the judge's order */
	size_t n_flags;
	const char *const *errors;	/* n_errors messages, for a person or an LLM */
	size_t n_errors;
	const struct eval_check *checks;
	size_t n_checks;
	const char *const *eval_args;	/* environment.eval_args: the `kernelbot eval`
					 * flags that repeat the measurement
					 * (gpu/evalenv.h); NULL where not recorded */
	size_t n_eval_args;
	double max_rel_error;		/* NAN where absent */
	double eval_s;			/* the judge's seconds on it; NAN where absent */
	int has_seed;
	long long seed;			/* the evaluation's seed, below 2^63 */
	/*
	 * Provenance, passed through as the judge wrote it (gpu/evalenv.h,
	 * gpu/device.h) for serializers that copy it whole; NULL where absent.
	 */
	const json_t *environment, *device_info, *speedup_json, *seed_json, *flags_json;
	json_t *json;			/* the object parsed (a reference held) */
	void *mem_;			/* the arrays above, in one allocation */
};

/* A whole evaluation: one eval_cand per candidate, in argument order. */
struct eval_result {
	struct eval_cand *cand;
	size_t n;
};

/*
 * Parse one candidate's object into *c (zeroed first). 0; -EINVAL with
 * err ("timings_ms.eager.median: not a number"), *c then empty; -ENOMEM.
 * Either way eval_cand_clear(c) is safe.
 */
int eval_cand_parse(const json_t *obj, struct eval_cand *c, char *err, size_t errlen);

/* Drop what eval_cand_parse() took; c is then empty. NULL is a no-op. */
void eval_cand_clear(struct eval_cand *c);

/*
 * Parse eval_run()'s array. 0 and *r (eval_result_free() it), or as
 * eval_cand_parse(), err naming the candidate's index.
 */
int eval_result_parse(const json_t *arr, struct eval_result *r, char *err, size_t errlen);
void eval_result_free(struct eval_result *r);

/* 1 when there are candidates and every one is correct. */
int eval_result_all_correct(const struct eval_result *r);

/* The first of c's flags with any of the uses in use (gpu/flags.h), or NULL. */
const char *eval_cand_flag(const struct eval_cand *c, unsigned use);

/*
 * The value of thread variable var (one of evalenv_thread_vars) as the
 * measurement ran with it (environment.threads), NULL where it was unset
 * or not recorded.
 */
const char *eval_cand_thread(const struct eval_cand *c, const char *var);

/* 1 when c carries flag name. */
int eval_cand_has_flag(const struct eval_cand *c, const char *name);

/* v, or def where v is NAN (an absent number). */
static inline double
eval_num_or(double v, double def)
{
	return v == v ? v : def;
}

#endif
