/*
 * report: what a pull request of kernelbot holds, built from the
 * `kernelbot optimize --out DIR` directories of one module (one per
 * backend or GPU architecture; the layout is docs/optimize.md's
 * ("Files"): summary.json, best/, history.json, problem.py).
 *
 * The files go under kernels/<slug>/: the kernel source (kernel.cu, or
 * kernel.c for a CPU result; with several architectures one source per
 * architecture, sm_90.cu, sm_80.cu, ...), a drop-in Python module
 * __init__.py (`from kernels.<slug> import load; fast = load(module)`),
 * its pytest test_kernel.py, manifest.json and REPORT.md. The body holds
 * the speedup table with 95% intervals, a mermaid chart of the best time
 * per generation, the verification, the hardware and toolchain, how to
 * reproduce with `kernelbot eval`, and a reviewer checklist.
 *
 * Reading never runs anything: the directories are data. The caller owns
 * the result and frees it with report_pr_free(). Errors: -EINVAL for a
 * bad module description or a malformed optimize directory (err names
 * the file and what is wrong), -ENOENT for a missing summary.json,
 * -ENOMEM; err says which.
 */
#ifndef KB_PIPELINE_REPORT_H
#define KB_PIPELINE_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "gitops/publish.h"	/* struct gitops_file */
#include "gpu/eval_result.h"

struct report_module {
	const char *repo;		/* "owner/name" */
	const char *commit;		/* the commit that was optimized */
	const char *module_path;	/* "models/block.py", repository-relative */
	const char *module_class;	/* NULL = "Model" */
	const char *slug;		/* gitops/modules.h slug: kernels/<slug>/, branch kernelbot/<slug> */
	const char *const *optimize_dirs;	/* `kernelbot optimize --out` dirs for this module, one per backend/architecture */
	size_t n_dirs;
	const char *details_url;	/* NULL or a link for the status */
	/* Added after the first contract; zero-initialize to get the defaults. */
	const char *module_init;	/* NULL = "get_init_inputs" */
	const char *module_inputs;	/* NULL = "get_inputs" */
	double atol, rtol;		/* 0 = the evaluator's per-dtype defaults */
};

struct report_pr {
	struct gitops_file *files;	/* kernels/<slug>/... (owned) */
	size_t n_files;
	char *title, *body, *comment, *message;	/* PR title and body, results comment, commit message */
	char *status_description;	/* one line for the commit status */
	int improved;			/* 0: nothing faster was found: no PR, only the status */
	/*
	 * 1: the PR's best kernel carries a plausibility flag (report_flagged)
	 * and its speedup is not headlined: the PR asks for review, and its
	 * commit status is not success.
	 */
	int needs_review;
};

/*
 * Fill out from the module's optimize directories. On success the caller
 * frees out with report_pr_free(); on error out is left zeroed. When no
 * directory holds an improved result, improved is 0, files is empty and
 * only status_description (and title/message/body, for logs) are set.
 */
int report_pr_build(const struct report_module *m, struct report_pr *out,
    char *err, size_t errlen);

/*
 * The command that repeats the evaluation result (a `kernelbot eval
 * --json` object) of kernel_path against module_path, appended to b on one
 * line without a newline, to be run from the repository root: the thread
 * variables that were set (result.environment.threads, gpu/evalenv.h) as
 * assignments, `kernelbot eval MODULE KERNEL`, the flags it ran with
 * (environment.eval_args: --backend, --seed, ...; for a result without
 * them --backend, --seed and, on CUDA, --sanitize), and --class cls when
 * cls is not NULL or Model and the flags do not name it. Words the shell
 * would read otherwise are single-quoted. 0; -EINVAL (b unchanged) when a
 * recorded value cannot be written on one shell line (a control
 * character); -ENOMEM.
 */
int report_reproduce_cmd(const struct eval_cand *result, const char *module_path, const char *kernel_path,
    const char *backend, const char *cls, struct buf *b);

/* Frees what report_pr_build() allocated; NULL-safe; zeroes p. */
void report_pr_free(struct report_pr *p);

#endif
