/*
 * REPORT.md of a run: what a reviewer reads first. Every figure comes from
 * summary.json, history.json and best/result.json, never from elsewhere,
 * so the report cannot say more than the files show.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "pipeline/evolve/evolve.h"
#include "pipeline/evolve/evolve_int.h"

#define REPORT_MAX	(4u << 20)
#define REPORT_TOP	5		/* rows of the fastest candidates */
#define REPORT_ORIGIN_CHARS 160		/* of each one's origin */

static void
ms_cell(struct buf *b, const struct eval_timing *t)
{
	if (!t->present) {
		buf_addstr(b, " n/a | n/a |");
		return;
	}
	buf_printf(b, " %.4g | %.4g to %.4g |", eval_num_or(t->median, 0), eval_num_or(t->p10, 0),
	    eval_num_or(t->p90, 0));
}

static void
speedup_cell(struct buf *b, const struct eval_speedup *s)
{
	if (isnan(s->x)) {
		buf_addstr(b, " n/a | n/a |");
		return;
	}
	buf_printf(b, " %.2fx |", s->x);
	if (!isnan(s->lo))
		buf_printf(b, " [%.2f, %.2f] |", s->lo, s->hi);
	else
		buf_addstr(b, " n/a |");
}

static void
speedup_table(struct buf *b, const struct eval_cand *best, int best_id)
{

	buf_addstr(b, "## Speedup\n\n"
	    "Medians of the confirmation run (best/result.json); the intervals are "
	    "paired bootstrap 95% intervals over its timing rounds.\n\n"
	    "| kernel | median (ms) | p10 to p90 (ms) | vs eager | 95% interval | "
	    "vs torch.compile | 95% interval |\n"
	    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	buf_printf(b, "| best (candidate %d) |", best_id);
	ms_cell(b, &best->t_candidate);
	speedup_cell(b, &best->vs_eager);
	speedup_cell(b, &best->vs_compile);
	buf_addstr(b, "\n| eager PyTorch |");
	ms_cell(b, &best->t_eager);
	buf_addstr(b, " 1.00x | | | |\n| torch.compile |");
	ms_cell(b, &best->t_compile);
	buf_addstr(b, " | | 1.00x | |\n\n");
}

static void
chart(struct buf *b, const json_t *gens)
{
	struct buf xs = BUF_INIT(REPORT_MAX), ys = BUF_INIT(REPORT_MAX);
	size_t i, n = 0;
	json_t *g;

	json_array_foreach(gens, i, g) {
		if (!json_is_number(json_object_get(g, "best_ms")))
			continue;
		buf_printf(&xs, "%s%lld", n ? ", " : "", jsonx_int(g, "generation", 0));
		buf_printf(&ys, "%s%.6g", n ? ", " : "", jsonx_num(g, "best_ms", 0));
		n++;
	}
	buf_addstr(b, "## Best time per generation\n\n");
	if (!n) {
		buf_addstr(b, "No generation produced a correct kernel.\n\n");
	} else {
		buf_printf(b, "```mermaid\nxychart-beta\n"
		    "    title \"Best verified time so far (ms)\"\n"
		    "    x-axis \"generation\" [%s]\n    y-axis \"ms\"\n    line [%s]\n```\n\n",
		    buf_cstr(&xs), buf_cstr(&ys));
	}
	buf_addstr(b, "| generation | evaluated | correct | best so far (ms) |\n| ---: | ---: | ---: | ---: |\n");
	json_array_foreach(gens, i, g) {
		buf_printf(b, "| %lld | %lld | %lld | ", jsonx_int(g, "generation", 0),
		    jsonx_int(g, "evaluated", 0), jsonx_int(g, "correct", 0));
		if (json_is_number(json_object_get(g, "best_ms")))
			buf_printf(b, "%.4g |\n", jsonx_num(g, "best_ms", 0));
		else
			buf_addstr(b, "none |\n");
	}
	buf_addstr(b, "\n");
	buf_free(&xs);
	buf_free(&ys);
}

static void
best_origin(struct buf *b, const json_t *summary, const json_t *history)
{
	long long id = jsonx_int(summary, "best.candidate", -1);
	json_t *c = json_array_get(json_object_get(history, "candidates"), (size_t)id);
	json_t *parents = json_object_get(c, "parents"), *p;
	char *origin;
	size_t i;

	if (!c)
		return;
	buf_printf(b, "## The best kernel\n\n`%s`: candidate %lld (`%s`), generation %lld, "
	    "proposer %s, op %s", jsonx_str(summary, "best.path", "?"), id,
	    jsonx_str(c, "file", "?"), jsonx_int(c, "generation", 0), jsonx_str(c, "proposer", "?"),
	    jsonx_str(c, "op", "?"));
	if (json_array_size(parents)) {
		buf_addstr(b, ", parents");
		json_array_foreach(parents, i, p)
			buf_printf(b, " %lld", (long long)json_integer_value(p));
	}
	buf_addstr(b, ".\n\n");
	origin = json_dumps(json_object_get(c, "origin"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (origin)
		buf_printf(b, "Origin: `%s`\n\n", origin);
	free(origin);
}

static int
by_ms(const void *a, const void *b)
{
	double x = jsonx_num(*(json_t *const *)a, "ms", 0), y = jsonx_num(*(json_t *const *)b, "ms", 0);

	return x < y ? -1 : x > y;
}

/* The fastest verified candidates, to see what the search learned. */
static void
fastest(struct buf *b, const json_t *history)
{
	json_t *cands = json_object_get(history, "candidates"), *c, **v;
	size_t i, n = 0;

	if (!(v = calloc(json_array_size(cands) + 1, sizeof(*v))))
		return;
	json_array_foreach(cands, i, c)
		if (jsonx_bool(c, "correct", 0) && json_is_number(json_object_get(c, "ms")))
			v[n++] = c;
	qsort(v, n, sizeof(*v), by_ms);
	if (n) {
		buf_printf(b, "## Fastest candidates (of %zu verified, %zu evaluated)\n\n"
		    "| candidate | generation | op | median (ms) | vs eager | origin |\n"
		    "| ---: | ---: | --- | ---: | ---: | --- |\n", n, json_array_size(cands));
		for (i = 0; i < n && i < REPORT_TOP; i++) {
			char *o = json_dumps(json_object_get(v[i], "origin"),
			    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
			buf_printf(b, "| %lld | %lld | %s | %.4g | ", jsonx_int(v[i], "id", 0),
			    jsonx_int(v[i], "generation", 0), jsonx_str(v[i], "op", "?"),
			    jsonx_num(v[i], "ms", 0));
			if (json_is_number(json_object_get(v[i], "speedup_eager")))
				buf_printf(b, "%.2fx", jsonx_num(v[i], "speedup_eager", 0));
			buf_printf(b, " | `%.*s%s` |\n", REPORT_ORIGIN_CHARS, o ? o : "null",
			    o && strlen(o) > REPORT_ORIGIN_CHARS ? "..." : "");
			free(o);
		}
		buf_addstr(b, "\n");
	}
	free(v);
}

int
evolve_write_report(const char *path, const json_t *summary, const json_t *history,
    const struct eval_cand *best)
{
	struct buf b = BUF_INIT(REPORT_MAX);
	const json_t *dev = json_object_get(history, "device");
	const json_t *sp = json_object_get(summary, "spent");
	int error;

	buf_printf(&b, "# kernelbot optimize: %s\n\n", jsonx_str(summary, "problem", "?"));
	buf_printf(&b, "- backend: %s; device: %s\n", jsonx_str(summary, "backend", "?"),
	    json_is_string(dev) ? json_string_value(dev) :
	    jsonx_str(dev, "name", "not known (nothing was evaluated)"));
	buf_printf(&b, "- status: **%s**", jsonx_str(summary, "status", "?"));
	if (json_is_string(json_object_get(summary, "error")))
		buf_printf(&b, " (%s)", jsonx_str(summary, "error", ""));
	buf_printf(&b, "\n- stopped: %s\n", jsonx_str(summary, "stop_reason", "?"));
	buf_printf(&b, "- spent: %lld candidates in %lld generations, %.1f s wall, %.1f s of "
	    "evaluation, %lld LLM tokens, $%.2f\n",
	    jsonx_int(sp, "candidates", 0), jsonx_int(sp, "generations", 0),
	    jsonx_num(sp, "wall_s", 0), jsonx_num(sp, "gpu_s", 0), jsonx_int(sp, "tokens", 0),
	    jsonx_num(sp, "dollars", 0));
	buf_addstr(&b, "- budget:");
	{
		const char *k;
		json_t *v;
		int any = 0;
		json_object_foreach(json_object_get(history, "budget"), k, v) {
			if (json_is_null(v))
				continue;
			buf_printf(&b, "%s %s %.6g", any++ ? "," : "", k, json_number_value(v));
		}
		buf_addstr(&b, any ? "\n\n" : " none\n\n");
	}
	if (best && !strcmp(jsonx_str(summary, "status", ""), "needs_review")) {
		/* correct, but its timing is implausible: no speedup is claimed */
		buf_printf(&b, "## Needs review\n\nCandidate %lld is correct, but the evaluator flagged "
		    "its timing:", jsonx_int(summary, "best.candidate", -1));
		for (size_t i = 0; i < best->n_flags; i++)
			buf_printf(&b, "%s `%s`", i ? "," : "", best->flags[i]);
		buf_addstr(&b, ". No correct kernel was free of such a flag; its figures below are "
		    "for review, not a verified speedup.\n\n");
		speedup_table(&b, best, (int)jsonx_int(summary, "best.candidate", -1));
	} else if (best)
		speedup_table(&b, best, (int)jsonx_int(summary, "best.candidate", -1));
	else
		buf_addstr(&b, "## Speedup\n\nNo verified kernel: nothing to compare.\n\n");
	chart(&b, json_object_get(history, "generations"));
	if (best)
		best_origin(&b, summary, history);
	fastest(&b, history);
	buf_addstr(&b, "Every candidate's source is in candidates/, its verdict in history.json.\n");
	error = b.data ? fsx_write_file(path, b.data, b.len) : -ENOMEM;
	buf_free(&b);
	return error;
}
