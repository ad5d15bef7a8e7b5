/*
 * coord_bench: the answer to `/kernelbot benchmark`. The runner timed the
 * PR's own kernel against the module at the PR's head with `kernelbot
 * eval` (no search; cli/cmd_runner.c); this turns each task's result into
 * a comment on the PR: the speedup table (eager, torch.compile, kernel,
 * 95% intervals), the device, the verification, and how to reproduce. One
 * comment per job and architecture, found again by its marker, so a
 * restart edits it instead of posting twice.
 */
#include "coord/coord_internal.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "gitops/modules.h"
#include "gpu/eval_result.h"
#include "pipeline/report/report.h"

#define BENCH_MARKER "<!-- kernelbot:benchmark:%lld:%s:%s -->"

/* A time in ms, or n/a. */
static void
ms_cell(struct buf *b, const struct eval_timing *t)
{
	if (t->median == t->median)
		buf_printf(b, " %.4g |", t->median);
	else
		buf_addstr(b, " n/a |");
}

/* "**2.00x** [1.90, 2.10]", or n/a. */
static void
speedup_cell(struct buf *b, const struct eval_speedup *s)
{
	if (s->x != s->x) {
		buf_addstr(b, " n/a |");
		return;
	}
	buf_printf(b, " **%.2fx**", s->x);
	if (s->lo == s->lo)
		buf_printf(b, " [%.2f, %.2f]", s->lo, s->hi);
	buf_addstr(b, " |");
}

/*
 * How to repeat this measurement on the runner's host: the thread settings
 * in effect, the seed and the flags the evaluation recorded (pipeline/
 * report/report.h), in a code span; the bare command when the result
 * cannot give one (a backtick would end the span).
 */
static void
reproduce_line(struct buf *b, const struct store_task *t, const char *kernel,
    const struct eval_cand *r, const char *backend)
{
	struct buf cmd = BUF_INIT(1u << 16);

	if (report_reproduce_cmd(r, t->module, kernel, backend, t->class_name, &cmd) == 0 &&
	    !strchr(buf_cstr(&cmd), '`'))
		buf_printf(b, "`%s --json`\n", buf_cstr(&cmd));
	else
		buf_printf(b, "`kernelbot eval %s %s --class %s --backend %s --json`\n", t->module,
		    kernel, t->class_name, backend);
	buf_free(&cmd);
}

/*
 * The comment for a finished benchmark task (summary: bench_summary()'s
 * object; r: its "result", parsed).
 */
static void
bench_body(struct buf *b, const struct store_job *j, const struct store_task *t,
    const json_t *s, const struct eval_cand *r)
{
	const char *kernel = jsonx_str(s, "kernel", "?");
	size_t passed = 0, failed = 0;

	buf_printf(b, "### kernelbot benchmark: `%s`\n\n", t->module);
	buf_printf(b, "Fresh timings of the kernel in this pull request, `%s`, "
	    "against `%s` (class `%s`) at %.12s, by `kernelbot eval` on runner "
	    "`%s`. Nothing was searched or changed.\n\n", kernel, t->module,
	    t->class_name, j->sha, t->runner ? t->runner : "?");
	buf_addstr(b, "| backend, device | input shape | eager ms | torch.compile "
	    "ms | kernel ms | speedup vs eager [95% CI] | speedup vs torch.compile "
	    "[95% CI] |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
	buf_printf(b, "| %s, %s (%s) | the module's `get_inputs()` |",
	    r->backend ? r->backend : jsonx_str(s, "backend", "?"),
	    r->device_name ? r->device_name : r->device ? r->device : "?",
	    r->arch ? r->arch : jsonx_str(s, "arch", "?"));
	ms_cell(b, &r->t_eager);
	ms_cell(b, &r->t_compile);
	ms_cell(b, &r->t_candidate);
	speedup_cell(b, &r->vs_eager);
	speedup_cell(b, &r->vs_compile);
	buf_addstr(b, "\n\nTimes are medians; the intervals are a paired bootstrap "
	    "over the timing rounds. n/a: torch.compile is not available with this "
	    "PyTorch, or disagreed with eager.\n\n");
	for (size_t i = 0; i < r->n_checks; i++) {
		if (r->checks[i].passed == 1)
			passed++;
		else
			failed++;
	}
	buf_printf(b, "**Verification**: %s (%zu checks passed, %zu failed; max "
	    "relative error %.3g).", r->status ? r->status : "?", passed, failed,
	    eval_num_or(r->max_rel_error, 0));
	if (!r->correct)
		buf_addstr(b, " **The kernel does not pass verification at this "
		    "commit: do not merge it as it is.**");
	if (r->n_flags) {
		buf_addstr(b, " Flagged for review:");
		for (size_t i = 0; i < r->n_flags; i++)
			buf_printf(b, "%s `%s`", i ? "," : "", r->flags[i]);
		buf_addch(b, '.');
	}
	buf_printf(b, "\n\n**Device**: %s, %s", r->device_name ? r->device_name :
	    r->device ? r->device : "?", r->arch ? r->arch : "?");
	if (r->torch)
		buf_printf(b, ", PyTorch %s", r->torch);
	buf_addstr(b, ".\n\n**Reproduce**: ");
	reproduce_line(b, t, kernel, r, jsonx_str(s, "backend", "cpu"));
}

int
coord_bench_publish(struct coord *c, const struct store_job *j,
    const struct store_task *t, const json_t *payload, struct forge *f)
{
	struct buf body = BUF_INIT(BUF_MAX_SMALL);
	struct forge_comment cm;
	struct eval_cand r;
	json_t *s = NULL;
	char marker[MODULES_MAX_SLUG + 128], err[1024] = "", perr[128];
	long long pr = (long long)jsonx_int(payload, "pr", 0);
	const char *arch = t->ran_arch ? t->ran_arch : t->arch && t->arch[0] ?
	    t->arch : "any";
	int rc;

	(void)c;
	if (pr <= 0) {
		log_warn("a benchmark without a pull request to answer on",
		    "job=%lld task=%lld", (long long)j->id, (long long)t->id);
		return 0;
	}
	snprintf(marker, sizeof(marker), BENCH_MARKER, (long long)j->id, t->slug,
	    arch);
	if (!strcmp(t->state, STORE_TASK_DONE) && t->summary &&
	    jsonx_parse(t->summary, strlen(t->summary), &s, perr, sizeof(perr)) == 0 &&
	    json_is_object(json_object_get(s, "result"))) {
		if (eval_cand_parse(json_object_get(s, "result"), &r, perr, sizeof(perr)) == 0)
			bench_body(&body, j, t, s, &r);
		else
			buf_printf(&body, "### kernelbot benchmark: `%s`\n\nThe benchmark on "
			    "%s failed: its result: %s\n", t->module, arch, perr);
		eval_cand_clear(&r);
	} else
		buf_printf(&body, "### kernelbot benchmark: `%s`\n\nThe benchmark on "
		    "%s %s: %s\n", t->module, arch, !strcmp(t->state,
		    STORE_TASK_CANCELLED) ? "was stopped" : "failed", t->error ?
		    t->error : t->state);
	json_decref(s);
	rc = forge_comment_upsert(f, pr, marker, buf_cstr(&body), &cm, err,
	    sizeof(err));
	if (rc < 0)
		log_warn("cannot post a benchmark", "job=%lld pr=%lld err=\"%s\"",
		    (long long)j->id, pr, err);
	else
		log_info("benchmark posted", "job=%lld slug=%s arch=%s pr=%lld",
		    (long long)j->id, t->slug, arch, pr);
	buf_free(&body);
	return rc;
}
