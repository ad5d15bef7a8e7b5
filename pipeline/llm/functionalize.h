/*
 * functionalize: the AI CUDA Engineer's stage 1 (docs/design.md,
 * docs/llm.md "Stage 1"). A module torch.fx cannot trace (data-dependent
 * Python control flow, a loop over a tensor's value) goes to a model with
 * prompts/functionalize.md (the module quoted as data, the trace error);
 * the answer's ```python block is a KernelBench-format rewrite that must
 *   1. trace (pipeline/compiler/irload.h), and
 *   2. compute what the original computes: the harness verb "equivalent"
 *      copies the original's state_dict into it (strict), runs both on the
 *      original's get_inputs() for a few fresh seeds and on every declared
 *      input variant, and compares at the fp32 tolerances.
 * Both import model-written code, so both run in the sandbox
 * (gpu/harness.h, harness_call_sandboxed()), shown only the two files; the
 * equivalence check's scratch folder is made in work_dir.
 * A rewrite that fails either goes back to a model with the error, up to
 * llm.fix_rounds more times. Only the IR is used: every candidate is still
 * judged against the ORIGINAL problem.
 */
#ifndef KB_PIPELINE_LLM_FUNCTIONALIZE_H
#define KB_PIPELINE_LLM_FUNCTIONALIZE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/llm/client.h"

#define FUNC_MAX_SOURCE		(1u << 20)	/* bytes of a rewrite */
#define FUNC_EQUIV_SEEDS	3		/* fresh seeds of the check */
#define FUNC_TIMEOUT_S		600		/* one equivalence check */
#define FUNC_MAX_ERROR		2000		/* bytes of feedback */

struct llm_functionalize_opts {
	const struct llm_config *cfg;	/* models, fix_rounds, prompts_dir */
	void (*record)(void *arg, const struct llm_call *call);	/* may be NULL */
	void *record_arg;
	const char *problem;		/* the original problem file */
	const char *class_name;		/* its class, NULL: "Model" */
	const char *trace_error;	/* why it does not trace (irload's err) */
	const char *work_dir;		/* an existing folder for functional.py */
	int64_t max_tokens;		/* stop asking past these; 0: no limit */
	double max_dollars;
};

struct llm_functionalize_result {
	json_t *ir;		/* the rewrite's IR (caller's reference), NULL on failure */
	char *source;		/* the accepted rewrite (malloc'd), NULL on failure */
	char model[128];	/* the model whose rewrite was accepted, or the last asked */
	int attempts;		/* model answers asked for */
	int64_t tokens;		/* all attempts */
	double dollars;
	char error[FUNC_MAX_ERROR];	/* the last rejection, "" on success */
};

/*
 * Ask, check, feed back. 0 with r->ir set (accepted) or r->ir NULL and
 * r->error saying why the last attempt was rejected (the caller proceeds
 * without IR); -EINVAL with err when there is no model or the template
 * cannot be loaded; -ENOMEM. Free r with llm_functionalize_free().
 */
int llm_functionalize(const struct llm_functionalize_opts *o,
    struct llm_functionalize_result *r, char *err, size_t errlen);
void llm_functionalize_free(struct llm_functionalize_result *r);

/*
 * The last complete ```python (or ```py, or untagged) block of answer,
 * malloc'd; NULL when there is none.
 */
char *llm_python_block(const char *answer);

#endif
