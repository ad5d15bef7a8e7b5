/*
 * optimize: one problem through the search, the way `kernelbot optimize`
 * runs it, for that command and the daemon's jobs: the problem traced to
 * graph IR once, the proposers made from their names (the table that
 * pipeline/llm joins), evolve_run() into one folder of the --out layout
 * (docs/optimize.md). Also the modules of a repository's working tree and
 * the server configuration's budgets section.
 */
#ifndef KB_PIPELINE_OPTIMIZE_OPTIMIZE_H
#define KB_PIPELINE_OPTIMIZE_OPTIMIZE_H

#include <jansson.h>
#include <stddef.h>

#include "conf/config.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"
#include "pipeline/evolve/evolve.h"

#define OPTIMIZE_MAX_MODULES	REPOCFG_MAX_MODULES

/* One problem to optimize. */
struct optimize_module {
	char *path;		/* absolute file */
	char *rel;		/* relative to the repository, NULL for a single problem */
	char *class_name;
	char *entry[3];		/* .kernelbot.yml's init, inputs, variants (a name or a
				   literal list's JSON); NULL: the default */
	char *pypath[HARNESS_PATH_MAX + 1];	/* folders first on its sys.path
				   (absolute; .kernelbot.yml's python_path, --path) */
	char slug[MODULES_MAX_SLUG + 1];	/* repository modules only */
};

/*
 * Module m's folders on its sys.path: dirs (NULL-terminated), each made
 * absolute (realpath). 0, or -errno with err set (a folder that does not
 * exist, more than HARNESS_PATH_MAX).
 */
int optimize_module_pypath(struct optimize_module *m, const char *const *dirs, char *err,
    size_t errlen);

/*
 * Check a comma-separated list of proposer names ("compiler",
 * "compiler,llm"). 0; -EINVAL for an unknown name, -ENOTSUP for one that
 * is not built into this binary ("proposer llm: not built in yet"); err
 * says which.
 */
int optimize_proposers_check(const char *names, char *err, size_t errlen);

/*
 * The `budgets` section of the server configuration into b: candidates,
 * generations, tokens (or llm_tokens), dollars (or llm_usd), gpu_seconds
 * (or gpu_minutes), wall_seconds (or wall_minutes), each a number >= 0 (0:
 * no limit), read by pipeline/llm's reader of the llm and budgets
 * sections; a limit already set in b (a command-line flag) stays. 0, or
 * -EINVAL with "FILE:LINE: budgets.KEY: message" in err (also for a bad
 * llm section).
 */
int optimize_config_budgets(const struct config *cfg, struct evolve_budget *b, char *err,
    size_t errlen);

/*
 * Whether the config gives what the named proposers need: llm needs at
 * least one of llm.models. 0, or -EINVAL with a sentence in err.
 */
int optimize_proposers_configured(const char *names, const struct config *cfg, char *err,
    size_t errlen);

/*
 * The modules of the working tree at root (no git needed): the entries of
 * its .kernelbot.yml `modules` when it has them, else every .py file
 * defining Model, get_init_inputs and get_inputs (hidden folders and
 * __pycache__ skipped); only those among paths (relative to root) when
 * n_paths > 0, and only those of class cls unless it is NULL (a runner's
 * task is one module class). 0 and *out (free with optimize_modules_free),
 * or -EINVAL with a sentence in err: a bad .kernelbot.yml, a named file
 * that is not a module, no module (of that class) at all.
 */
int optimize_repo_modules(const char *root, char **paths, int n_paths, const char *cls,
    struct optimize_module **out, size_t *n_out, char *err, size_t errlen);
void optimize_modules_free(struct optimize_module *m, size_t n);

/*
 * Optimize m into out_dir with base's options (problem, class, out_dir,
 * IR and proposers are filled in here; proposers: checked names). Returns
 * the summary (summary.json's object, the caller's reference; an "error"
 * summary when evolve_run could not start), NULL only on ENOMEM. *ok: the
 * problem got a verified kernel; *usage is set when the options did not
 * fit it (an --out folder that holds other files). A module that does not
 * trace still runs: proposers that need the IR answer "unsupported".
 */
json_t *optimize_module_run(const struct evolve_opts *base, const char *proposers,
    const struct config *cfg, const struct optimize_module *m, const char *out_dir, int *ok,
    int *usage);

/* A summary for a problem that could not be run: status and stop_reason "error". */
json_t *optimize_error_summary(const struct optimize_module *m, const char *backend,
    const char *msg);

#endif
