/*
 * budget: the limits of one optimize run of a repository's module: the
 * `budget:` of its .kernelbot.yml (gitops/repocfg.h: candidates,
 * wall_minutes, gpu_minutes, llm_tokens, llm_usd), each capped by the
 * server's `budgets:` (pipeline/optimize/optimize.h's optimize_config_budgets), and the
 * `kernelbot optimize` flags that carry them. A limit the repository does
 * not set stays 0 here: optimize then applies the server's own (it reads
 * the same configuration), so a repository can only lower a limit the
 * server sets, never raise it.
 */
#ifndef KB_PIPELINE_OPTIMIZE_BUDGET_H
#define KB_PIPELINE_OPTIMIZE_BUDGET_H

#include <jansson.h>
#include <stddef.h>

#include "conf/config.h"
#include "pipeline/evolve/evolve.h"

#define BUDGET_MAX_ARGS 10	/* argv entries budget_optimize_args writes at most */
#define BUDGET_ARG_LEN 32

/*
 * repo_budget: the normalized `budget` object of a .kernelbot.yml (NULL:
 * none). out: the repository's limits within the server's. 0, or -EINVAL
 * for a bad `budgets:` section of cfg (err says where).
 */
int budget_for_repo(const struct config *cfg, const json_t *repo_budget,
    struct evolve_budget *out, char *err, size_t errlen);

/*
 * The optimize flags for b's nonzero limits (--budget N, --wall-minutes M,
 * --gpu-minutes M, --llm-tokens N, --llm-usd X) appended to argv at *n
 * (argv must have room for BUDGET_MAX_ARGS more), their text in
 * text[BUDGET_MAX_ARGS][BUDGET_ARG_LEN], which must outlive argv's use.
 */
void budget_optimize_args(const struct evolve_budget *b, const char **argv,
    size_t *n, char text[][BUDGET_ARG_LEN]);

#endif
