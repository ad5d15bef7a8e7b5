/*
 * optimize_llm: the `llm` proposer of `kernelbot optimize` (and later of
 * the daemon's jobs): pipeline/llm's proposer with the server config's
 * models, every call attempt recorded in the store's llm_calls table, and
 * the archive's nearest solved problems (pipeline/archive) retrieved into
 * the stage 2 and 3 prompts. The store is the config's data_dir; it is
 * opened with the proposer and closed by its free().
 */
#ifndef KB_PIPELINE_OPTIMIZE_OPTIMIZE_LLM_H
#define KB_PIPELINE_OPTIMIZE_OPTIMIZE_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/evolve/evolve.h"
#include "pipeline/llm/client.h"
#include "pipeline/llm/functionalize.h"

struct config;

/*
 * A proposer named "llm". seeded: another proposer (the graph compiler,
 * `--proposer both`) runs beside it and its kernels seed the LLM's
 * evolution. job: the store's job id the calls belong to, 0 for none.
 * 0; -EINVAL with "FILE:LINE: KEY: message" or another sentence in err
 * (no models, a bad section, missing templates); -errno when the store
 * cannot be opened.
 */
int optimize_llm_new(const struct config *cfg, const char *backend, int seeded,
    int64_t job, struct proposer **out, char *err, size_t errlen);

/*
 * llm.embeddings, when the config has it: lc loaded from cfg, cl a client
 * over it (rec/rec_arg its record hook), and the archive's embedder set
 * to llm_embed_hook(cl) (pipeline/archive/archive.h), which the caller
 * clears (archive_set_embedder(NULL)) before lc and cl go. 1 when set, 0
 * when the config has no embeddings endpoint (lc is loaded either way;
 * free it with llm_config_free()), -errno with err on a bad config.
 */
int optimize_llm_embedder(const struct config *cfg, struct llm_config *lc,
    struct llm_client *cl, void (*rec)(void *, const struct llm_call *), void *rec_arg,
    char *err, size_t errlen);

/*
 * The config's `profile`: auto (ncu on the cuda backend), ncu (on any
 * backend: the CPU one has no ncu, tests give a fake), off. *on: profile
 * on this backend (NULL: none named); *force: `ncu`. 0, or -EINVAL with
 * "FILE:LINE: profile: must be auto, ncu or off".
 */
int optimize_llm_profile_mode(const struct config *cfg, const char *backend,
    int *on, int *force, char *err, size_t errlen);

/*
 * How the profile hook's evaluations run: the job's CUDA ordinal
 * (--device; 0 by default), eval_opts' have_sandbox_exec and env (copied;
 * its tmp_dir, borrowed, is also where the hook writes the kernel it
 * profiles). p: a proposer from optimize_llm_new.
 */
void optimize_llm_set_eval(struct proposer *p, int device, int have_sandbox_exec,
    const struct eval_env *env);

/*
 * Record one call attempt (the client's record hook's argument) in the
 * store's llm_calls for job (0: none). 0 or -errno (store_llm_call_add).
 */
struct store;
int optimize_llm_record(struct store *s, int64_t job, const struct llm_call *c);

/*
 * Stage 1 for a module that does not trace (pipeline/llm/functionalize.h)
 * with the server config's models, every call recorded in the store as
 * above; the rewrite is written to work_dir/functional.py while it is
 * checked. budget: its token and dollar limits (0: none) bound the
 * attempts. 0 with r filled (r->ir NULL: no rewrite was accepted); -errno
 * with a sentence in err.
 */
int optimize_llm_functionalize(const struct config *cfg, const char *problem,
    const char *class_name, const char *trace_error, const char *work_dir,
    const struct evolve_budget *budget, struct llm_functionalize_result *r,
    char *err, size_t errlen);

#endif
