/*
 * flags: what each flag of an evaluation result means to those who use
 * the result, in one table (gpu/flags.c): whether a correct result with it
 * asks a person for review, whether a search may take it as its best,
 * whether a report gives it a headline speedup, whether the archive keeps
 * it. docs/evaluation.md describes each flag; the judge (kbh/judge_run.py
 * REVIEW_FLAGS) sets needs_review itself for the flags it raises, and the
 * evaluator for every flag marked EVAL_FLAG_REVIEW (eval_flags_review()),
 * so a flag raised anywhere is treated the same.
 */
#ifndef KB_GPU_FLAGS_H
#define KB_GPU_FLAGS_H

#include <jansson.h>

#define EVAL_FLAG_REVIEW	0x1u	/* a correct result asks for review */
#define EVAL_FLAG_BARS_BEST	0x2u	/* a search never takes it as its best */
#define EVAL_FLAG_NO_HEADLINE	0x4u	/* a report gives it no headline speedup */
#define EVAL_FLAG_DISTRUSTED	0x8u	/* the archive refuses the result */

struct eval_flag {
	const char *name;
	unsigned use;		/* EVAL_FLAG_* */
};

/* The table, ended by a NULL name; flags not in it have no such use. */
extern const struct eval_flag eval_flags[];

/* The uses of flag name, 0 for one not in the table. */
unsigned eval_flag_use(const char *name);

/*
 * The first of result's "flags" with any of the uses in use, or NULL.
 * result is an evaluation result object (its "flags" an array of strings).
 */
const char *eval_flag_first(const json_t *result, unsigned use);

/* A correct result with an EVAL_FLAG_REVIEW flag gets "needs_review": true. */
void eval_flags_review(json_t *result);

#endif
