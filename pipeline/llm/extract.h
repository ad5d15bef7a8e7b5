/*
 * extract: a kernel out of a model's answer. Either a fenced block (the
 * last complete ```cuda / ```cu / ```c / ```cpp / ```c++ or untagged block
 * that defines the ABI's entry point, kernelbot_forward; else the last
 * complete one of those languages), or search/replace edits applied to the
 * parent kernel:
 *
 *     <<<<<<< SEARCH
 *     exact lines of the parent
 *     =======
 *     their replacement
 *     >>>>>>> REPLACE
 *
 * An edit whose search text is missing from the parent, or found more than
 * once, is refused: a guess would evaluate something nobody proposed. The
 * result must define kernelbot_forward and pass the static checks
 * (gpu/srccheck.h) that mark exploits (side streams, device syncs,
 * threads, timer tampering, file/network access, cached results); the
 * reason for a refusal is a sentence fit to go back to the model.
 */
#ifndef KB_PIPELINE_LLM_EXTRACT_H
#define KB_PIPELINE_LLM_EXTRACT_H

#include <stddef.h>

#define EXTRACT_MAX_EDITS 32
#define EXTRACT_MAX_SOURCE (1u << 20)	/* bytes of an extracted kernel */

enum extract_kind { EXTRACT_NONE, EXTRACT_BLOCK, EXTRACT_EDIT };

/*
 * From answer (NUL-terminated), with parent (may be NULL: edits are then
 * refused) and the backend ("cpu": C, "cuda": CUDA). fp32_problem asks for
 * the precision-downgrade check too. 0 and a malloc'd *source with *kind
 * set; -EINVAL with the reason in why (the answer held no usable kernel);
 * -ENOMEM.
 */
int llm_extract(const char *answer, const char *parent, const char *backend,
    int fp32_problem, char **source, enum extract_kind *kind, char *why,
    size_t whylen);

/* Apply the edits in answer to parent: 0 and *out, or -EINVAL / -ENOENT
 * (no edits in the answer) with why. */
int llm_apply_edits(const char *answer, const char *parent, char **out,
    char *why, size_t whylen);

/* 1 when src defines kernelbot_forward (a name followed by "("). */
int llm_has_entry(const char *src);

#endif
