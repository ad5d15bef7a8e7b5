/*
 * pipeline/report/report_md.c: the markdown of a module's pull request:
 * its body, REPORT.md (the body with every check and generation), the
 * results comment and the one-line headline. Everything printed comes from
 * the optimize directories; text from them (check details, errors, device
 * names) is escaped for tables and code spans, since a kernel's error
 * message is not ours to trust.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonx.h"
#include "gpu/evalenv.h"
#include "gpu/flags.h"
#include "pipeline/report/report_internal.h"

#define CHECK_DETAIL_MAX 300

/* Text for one table cell: no newlines, pipes escaped, cut at max. */
static int
cell(struct buf *b, const char *s, size_t max)
{
	int error = 0;
	size_t n = 0;

	for (; s && *s && error == 0 && n < max; s++, n++) {
		if (*s == '\n' || *s == '\r' || *s == '\t')
			error = buf_addch(b, ' ');
		else if (*s == '|' || *s == '<' || *s == '>' || *s == '`' || *s == '\\')
			error = buf_printf(b, "\\%c", *s);
		else
			error = buf_addch(b, *s);
	}
	if (error == 0 && s && *s)
		error = buf_addstr(b, "...");
	return error;
}

static int
ms(struct buf *b, double v)
{
	if (isnan(v))
		return buf_addstr(b, "n/a");
	return buf_printf(b, "%.4g", v);
}

/* "2.31x [2.20, 2.43]" or "n/a" */
static int
speedup(struct buf *b, const struct eval_speedup *s)
{
	int error;

	if (isnan(s->x))
		return buf_addstr(b, "n/a");
	if ((error = buf_printf(b, "**%.2fx**", s->x)) < 0)
		return error;
	if (!isnan(s->lo))
		error = buf_printf(b, " [%.2f, %.2f]", s->lo, s->hi);
	return error;
}

int
report_flagged(const struct report_dir *d, char *out, size_t len)
{
	/*
	 * The flags that take the headline (gpu/flags.c); side_stream is not
	 * one: a search whose best needs review for it names it below.
	 */
	size_t n = 0, nf = d->result ? d->result->n_flags : 0;

	out[0] = '\0';
	for (size_t i = 0; i < nf; i++) {
		const char *f = d->result->flags[i];

		if ((eval_flag_use(f) & EVAL_FLAG_NO_HEADLINE) && strlen(out) + strlen(f) + 3 < len)
			n += (size_t)snprintf(out + strlen(out), len - strlen(out), "%s%s", n ? ", " : "", f) > 0;
	}
	/* the search said so (side_stream), or said so without naming a flag */
	if (!n && !strcmp(jsonx_str(d->summary, "status", ""), "needs_review")) {
		for (size_t i = 0; i < nf; i++)
			if (!strcmp(d->result->flags[i], "side_stream"))
				n += (size_t)snprintf(out, len, "side_stream") > 0;
		if (!n)
			n += (size_t)snprintf(out, len, "needs_review") > 0;
	}
	return n > 0;
}

int
report_md_headline(const struct report_dir *d, struct buf *b)
{
	const struct eval_cand *r = d->result;
	char flagged[128];
	int error;

	if (report_flagged(d, flagged, sizeof(flagged)))
		return buf_printf(b, "verified kernel on %s, flagged for review: %s", d->device, flagged);
	if ((error = buf_printf(b, "%.2fx vs eager", eval_num_or(r->vs_eager.x, 0))) < 0)
		return error;
	if (!isnan(r->vs_eager.lo) && (error = buf_printf(b, " [%.2f, %.2f]", r->vs_eager.lo,
	    r->vs_eager.hi)) < 0)
		return error;
	if (!isnan(r->vs_compile.x) &&
	    (error = buf_printf(b, ", %.2fx vs torch.compile", r->vs_compile.x)) < 0)
		return error;
	return buf_printf(b, " on %s", d->device);
}

/* "x: 48x256 float32, residual: 48x256 float32", or "(see problem)" */
static int
shapes(struct buf *b, const struct report_dir *d)
{
	const json_t *v, *dim;
	size_t i, j, n = 0;
	int error = 0;

	json_array_foreach(jsonx_path(d->ir, "inputs"), i, v) {
		if (strcmp(jsonx_str(v, "role", ""), "input") != 0)
			continue;
		if (n++ && (error = buf_addstr(b, ", ")) < 0)
			return error;
		if ((error = cell(b, jsonx_str(v, "name", "?"), 40)) < 0 || (error = buf_addstr(b, ": ")) < 0)
			return error;
		json_array_foreach(json_object_get(v, "shape"), j, dim)
			if ((error = buf_printf(b, "%s%lld", j ? "x" : "", json_integer_value(dim))) < 0)
				return error;
		if ((error = buf_addch(b, ' ')) < 0 || (error = cell(b, jsonx_str(v, "dtype", "?"), 16)) < 0)
			return error;
	}
	return n ? 0 : buf_addstr(b, "the problem's `get_inputs()`");
}

static int
table(struct buf *b, const struct report_ctx *c)
{
	int error;

	if ((error = buf_addstr(b, "| backend, device | input shape | eager ms | torch.compile ms | kernel ms "
	    "| speedup vs eager [95% CI] | speedup vs torch.compile [95% CI] |\n"
	    "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++) {
		const struct report_dir *d = &c->d[i];
		const struct eval_cand *r = d->result;

		if (!r)
			continue;
		if ((error = buf_printf(b, "| %s, ", d->backend)) < 0 ||
		    (error = cell(b, d->device, 80)) < 0 ||
		    (d->arch[0] && (error = buf_printf(b, " (%s)", d->arch)) < 0) ||
		    (error = buf_addstr(b, " | ")) < 0 || (error = shapes(b, d)) < 0 ||
		    (error = buf_addstr(b, " | ")) < 0 ||
		    (error = ms(b, r->t_eager.median)) < 0 ||
		    (error = buf_addstr(b, " | ")) < 0 ||
		    (error = ms(b, r->t_compile.median)) < 0 ||
		    (error = buf_addstr(b, " | ")) < 0 ||
		    (error = ms(b, r->t_candidate.median)) < 0 ||
		    (error = buf_addstr(b, " | ")) < 0 || (error = speedup(b, &r->vs_eager)) < 0 ||
		    (error = buf_addstr(b, " | ")) < 0 || (error = speedup(b, &r->vs_compile)) < 0 ||
		    (error = buf_printf(b, " |%s\n", d->file[0] ? "" : " (not shipped: a faster result has this name)")) < 0)
			return error;
	}
	return buf_addstr(b, "\nTimes are medians; the intervals are a paired bootstrap over the timing "
	    "rounds (docs/evaluation.md). n/a: torch.compile is not available with this PyTorch, "
	    "or disagreed with eager.\n");
}

/* xychart of best_ms per generation; nothing when there is no history. */
static int
chart(struct buf *b, const struct report_dir *d)
{
	const json_t *gens = jsonx_path(d->history, "generations"), *g;
	size_t i, n = 0;
	int error;

	json_array_foreach(gens, i, g)
		n += json_is_number(json_object_get(g, "best_ms"));
	if (n == 0)
		return buf_addstr(b, "(no search history)\n");
	if ((error = buf_addstr(b, "```mermaid\nxychart-beta\n    title \"Best kernel time per generation (")) < 0 ||
	    (error = cell(b, d->device, 60)) < 0 ||
	    (error = buf_addstr(b, ")\"\n    x-axis \"generation\" [")) < 0)
		return error;
	n = 0;
	json_array_foreach(gens, i, g)
		if (json_is_number(json_object_get(g, "best_ms")) &&
		    (error = buf_printf(b, "%s%lld", n++ ? ", " : "", jsonx_int(g, "generation", (long long)i))) < 0)
			return error;
	if ((error = buf_addstr(b, "]\n    y-axis \"ms\"\n    line [")) < 0)
		return error;
	n = 0;
	json_array_foreach(gens, i, g)
		if (json_is_number(json_object_get(g, "best_ms")) &&
		    (error = buf_printf(b, "%s%.4g", n++ ? ", " : "", jsonx_num(g, "best_ms", 0))) < 0)
			return error;
	return buf_addstr(b, "]\n```\n");
}

static int
search(struct buf *b, const struct report_dir *d)
{
	const json_t *spent = json_object_get(d->summary, "spent"), *v;
	const char *k;
	int error, first = 1;

	if ((error = buf_printf(b, "\n**%s, ", d->backend)) < 0 || (error = cell(b, d->device, 80)) < 0 ||
	    (error = buf_printf(b, "**: %lld candidate%s in %lld generation%s, stopped by `%s`; spent ",
	    jsonx_int(d->summary, "candidates_evaluated", 0),
	    jsonx_int(d->summary, "candidates_evaluated", 0) == 1 ? "" : "s",
	    jsonx_int(d->summary, "generations", 0), jsonx_int(d->summary, "generations", 0) == 1 ? "" : "s",
	    jsonx_str(d->summary, "stop_reason", "?"))) < 0)
		return error;
	json_object_foreach((json_t *)spent, k, v) {
		if (!json_is_number(v) || json_number_value(v) == 0)
			continue;
		if ((error = buf_printf(b, "%s%s %.4g", first ? "" : ", ", k, json_number_value(v))) < 0)
			return error;
		first = 0;
	}
	if (first && (error = buf_addstr(b, "nothing recorded")) < 0)
		return error;
	if ((error = buf_addstr(b, ".\n\n")) < 0)
		return error;
	return chart(b, d);
}

static int
checks(struct buf *b, const struct report_dir *d, int full)
{
	const struct eval_cand *r = d->result;
	size_t total = r->n_checks, passed = 0;
	int error;

	for (size_t i = 0; i < total; i++)
		passed += r->checks[i].passed == 1;
	if ((error = buf_printf(b, "\n**%s, ", d->backend)) < 0 || (error = cell(b, d->device, 80)) < 0 ||
	    (error = buf_printf(b, "**: %zu of %zu checks passed; largest relative error %.3g; seed %lld "
	    "(`--seed` of the command under Reproduce draws the same inputs).\n\n", passed, total,
	    eval_num_or(r->max_rel_error, 0), r->has_seed ? r->seed : 0)) < 0 ||
	    (error = buf_addstr(b, "| check | result | detail |\n| --- | --- | --- |\n")) < 0)
		return error;
	for (size_t i = 0; i < total; i++) {
		const struct eval_check *v = &r->checks[i];
		const char *name = v->name ? v->name : "?";

		/* the body keeps to correctness; REPORT.md has all */
		if (!full && (!strncmp(name, "static:", 7) || !strncmp(name, "sandbox:", 8)) &&
		    v->passed == 1)
			continue;
		if ((error = buf_addstr(b, "| ")) < 0 || (error = cell(b, name, 80)) < 0 ||
		    (error = buf_printf(b, " | %s | ", v->passed == 1 ? "passed" : "**failed**")) < 0 ||
		    (error = cell(b, v->detail ? v->detail : "", full ? 2000 : CHECK_DETAIL_MAX)) < 0 ||
		    (error = buf_addstr(b, " |\n")) < 0)
			return error;
	}
	return 0;
}

static int
findings(struct buf *b, const struct report_dir *d)
{
	const struct eval_cand *r = d->result;
	size_t i, n = 0;
	int error, sanitized = 0;

	if ((error = buf_printf(b, "\n**%s, ", d->backend)) < 0 || (error = cell(b, d->device, 80)) < 0 ||
	    (error = buf_addstr(b, "**: ")) < 0)
		return error;
	for (i = 0; i < r->n_checks; i++) {
		const struct eval_check *v = &r->checks[i];
		const char *name = v->name ? v->name : "";

		sanitized |= !strncmp(name, "sanitize:", 9);
		if (strncmp(name, "static:", 7) != 0 || v->passed == 1)
			continue;
		if ((error = buf_addstr(b, n++ ? "; " : "")) < 0 || (error = cell(b, name, 80)) < 0 ||
		    (error = buf_addstr(b, " (")) < 0 ||
		    (error = cell(b, v->detail ? v->detail : "", CHECK_DETAIL_MAX)) < 0 ||
		    (error = buf_addch(b, ')')) < 0)
			return error;
	}
	if (n == 0 && (error = buf_addstr(b, "no static-check findings")) < 0)
		return error;
	if ((error = buf_addstr(b, ". Flags: ")) < 0)
		return error;
	n = 0;
	for (i = 0; i < r->n_flags; i++)
		if ((error = buf_addstr(b, n++ ? ", `" : "`")) < 0 ||
		    (error = cell(b, r->flags[i], 60)) < 0 || (error = buf_addch(b, '`')) < 0)
			return error;
	if (n == 0 && (error = buf_addstr(b, "none")) < 0)
		return error;
	return buf_printf(b, ". Sanitizer: %s.\n", sanitized ? "see the `sanitize:*` checks" :
	    !strcmp(d->backend, "cuda") ? "not run on this result" : "not applicable (CPU backend)");
}

/* ", key VALUE" for a string or integer member of o; nothing otherwise. */
static int
env_item(struct buf *b, const json_t *o, const char *key, const char *label, size_t max)
{
	const json_t *v = json_object_get(o, key);
	int error;

	if (!json_is_string(v) && !json_is_integer(v))
		return 0;
	if ((error = buf_printf(b, ", %s ", label)) < 0)
		return error;
	return json_is_string(v) ? cell(b, json_string_value(v), max) :
	    buf_printf(b, "%lld", json_integer_value(v));
}

/*
 * What the confirmation's measurement depended on (result.environment):
 * a reproduction that differs can be told why, the thread settings first.
 */
static int
environment(struct buf *b, const struct report_dir *d)
{
	/* provenance (gpu/evalenv.h), shown as recorded, never interpreted */
	const json_t *env = d->result ? d->result->environment : NULL;
	int error;

	if (!json_is_object(env))
		return 0;
	if ((error = buf_printf(b, "- %s measured with", d->backend)) < 0)
		return error;
	for (size_t i = 0; evalenv_thread_vars[i]; i++) {
		const char *v = eval_cand_thread(d->result, evalenv_thread_vars[i]);

		if ((error = buf_printf(b, "%s %s", i ? "," : "", evalenv_thread_vars[i])) < 0 ||
		    (error = v ? buf_addch(b, '=') : buf_addstr(b, " unset")) < 0 ||
		    (v && (error = cell(b, v, 60)) < 0))
			return error;
	}
	if ((error = env_item(b, env, "torch_threads", "torch threads", 0)) < 0 ||
	    (error = env_item(b, env, "cpu_model", "CPU", 120)) < 0 ||
	    (error = env_item(b, env, "logical_cpus", "logical CPUs", 0)) < 0 ||
	    (error = env_item(b, env, "cpus_allowed", "allowed", 0)) < 0 ||
	    (error = env_item(b, json_object_get(env, "gpu"), "name", "GPU", 80)) < 0 ||
	    (error = env_item(b, json_object_get(env, "gpu"), "driver", "driver", 40)) < 0 ||
	    (error = env_item(b, env, "compiler_version", "compiler", 120)) < 0 ||
	    (error = env_item(b, env, "compile_flags", "flags", 300)) < 0 ||
	    (error = env_item(b, env, "python", "Python", 40)) < 0 ||
	    (error = env_item(b, env, "torch", "PyTorch", 40)) < 0 ||
	    (error = env_item(b, env, "seed_str", "seed", 40)) < 0)
		return error;
	return buf_addch(b, '\n');
}

static int
hardware(struct buf *b, const struct report_dir *d)
{
	const json_t *dev = jsonx_path(d->history, "device"), *tc, *v;
	const char *k;
	int error;

	if ((error = buf_printf(b, "- %s: ", d->backend)) < 0 || (error = cell(b, d->device, 80)) < 0)
		return error;
	json_object_foreach((json_t *)dev, k, v) {
		if (!strcmp(k, "name") || json_is_object(v) || json_is_array(v))
			continue;
		if ((error = buf_addstr(b, ", ")) < 0 || (error = cell(b, k, 40)) < 0 ||
		    (error = buf_addch(b, ' ')) < 0)
			return error;
		if (json_is_string(v))
			error = cell(b, json_string_value(v), 80);
		else if (json_is_integer(v))
			error = buf_printf(b, "%lld", json_integer_value(v));
		else if (json_is_number(v))
			error = buf_printf(b, "%g", json_number_value(v));
		else
			error = buf_addstr(b, json_is_true(v) ? "yes" : "no");
		if (error < 0)
			return error;
	}
	tc = jsonx_path(d->history, "toolchain");
	if (!tc)
		tc = jsonx_path(d->summary, "toolchain");
	json_object_foreach((json_t *)tc, k, v) {
		if (!json_is_string(v))
			continue;
		if ((error = buf_addstr(b, "; ")) < 0 || (error = cell(b, k, 40)) < 0 ||
		    (error = buf_addch(b, ' ')) < 0 || (error = cell(b, json_string_value(v), 120)) < 0)
			return error;
	}
	if ((error = buf_addch(b, '\n')) < 0)
		return error;
	return environment(b, d);
}

static int
usage(struct buf *b, const struct report_ctx *c)
{
	const char *slug = c->m->slug;

	if (c->identifier_slug)
		return buf_printf(b, "```python\nfrom kernels.%s import load\nfast = load(model)   "
		    "# model: your %s instance; fast(*inputs) runs the kernel\n```\n", slug, c->cls);
	return buf_printf(b, "```python\nimport importlib\nfast = importlib.import_module(\"kernels.%s\")"
	    ".load(model)   # model: your %s instance; fast(*inputs) runs the kernel\n```\n", slug, c->cls);
}

int
report_sh_word(struct buf *b, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_-./:,+@%=";
	int error = 0;

	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return -EINVAL;	/* a line break would leave the code block */
	if (*s && strspn(s, safe) == strlen(s))
		return buf_addstr(b, s);
	if ((error = buf_addch(b, '\'')) < 0)
		return error;
	for (; *s && error == 0; s++)
		error = *s == '\'' ? buf_addstr(b, "'\\''") : buf_addch(b, *s);
	return error < 0 ? error : buf_addch(b, '\'');
}

/* 1 when the array of strings holds flag. */
static int
has_arg(const struct eval_cand *r, const char *flag)
{
	for (size_t i = 0; i < r->n_eval_args; i++)
		if (!strcmp(r->eval_args[i], flag))
			return 1;
	return 0;
}

int
report_reproduce_cmd(const struct eval_cand *result, const char *module_path, const char *kernel_path,
    const char *backend, const char *cls, struct buf *b)
{
	size_t i, n0 = b->len;
	int error = 0;

	/* The thread settings in effect, as assignments (an unset one stays unset). */
	for (i = 0; evalenv_thread_vars[i]; i++) {
		const char *val = eval_cand_thread(result, evalenv_thread_vars[i]);

		if (val && ((error = buf_printf(b, "%s=", evalenv_thread_vars[i])) < 0 ||
		    (error = report_sh_word(b, val)) < 0 || (error = buf_addch(b, ' ')) < 0))
			goto out;
	}
	if ((error = buf_addstr(b, "kernelbot eval ")) < 0 ||
	    (error = report_sh_word(b, module_path)) < 0 || (error = buf_addch(b, ' ')) < 0 ||
	    (error = report_sh_word(b, kernel_path)) < 0)
		goto out;
	if (result->n_eval_args) {
		/* the flags the measurement ran with (gpu/evalenv.h) */
		for (i = 0; i < result->n_eval_args; i++)
			if ((error = buf_addch(b, ' ')) < 0 ||
			    (error = report_sh_word(b, result->eval_args[i])) < 0)
				goto out;
	} else {
		/* a result from before the environment was recorded */
		if ((error = buf_addstr(b, " --backend ")) < 0 || (error = report_sh_word(b, backend)) < 0 ||
		    (result->has_seed && (error = buf_printf(b, " --seed %lld", result->seed)) < 0) ||
		    (!strcmp(backend, "cuda") && (error = buf_addstr(b, " --sanitize")) < 0))
			goto out;
	}
	if (cls && strcmp(cls, "Model") && !has_arg(result, "--class") &&
	    ((error = buf_addstr(b, " --class ")) < 0 || (error = report_sh_word(b, cls)) < 0))
		goto out;
out:
	if (error < 0)
		buf_truncate(b, n0);
	return error;
}

int
report_repro_cmd(const struct report_ctx *c, const struct report_dir *d, struct buf *b)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "kernels/%s/%s", c->m->slug, d->file);
	return report_reproduce_cmd(d->result, c->m->module_path, path, d->backend, c->cls, b);
}

static int
reproduce(struct buf *b, const struct report_ctx *c)
{
	const struct report_module *m = c->m;
	int error;

	if ((error = buf_addstr(b, "On the host that measured it, this repeats the measurement with the "
	    "same seed (model parameters and inputs), thread settings and flags; its speedup should "
	    "come out near the interval above (a loaded host moves it). What else it depended on (CPU, GPU and driver, compiler "
	    "and flags, Python, PyTorch) is in the manifest's `environment`.\n\n```sh\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++) {
		const struct report_dir *d = &c->d[i];

		if (!d->file[0])
			continue;
		if ((error = report_repro_cmd(c, d, b)) == -EINVAL)
			error = buf_printf(b, "# kernels/%s/%s: its recorded settings cannot be written "
			    "as a command; see manifest.json", m->slug, d->file);
		if (error < 0 || (error = buf_addch(b, '\n')) < 0)
			return error;
	}
	return buf_printf(b, "python3 -m pytest kernels/%s/test_kernel.py\n```\n", m->slug);
}

static int
generations(struct buf *b, const struct report_dir *d)
{
	const json_t *g;
	size_t i;
	int error;

	if ((error = buf_printf(b, "\n**%s, ", d->backend)) < 0 || (error = cell(b, d->device, 80)) < 0 ||
	    (error = buf_addstr(b, "**\n\n| generation | evaluated | correct | best ms |\n"
	    "| ---: | ---: | ---: | ---: |\n")) < 0)
		return error;
	json_array_foreach(jsonx_path(d->history, "generations"), i, g) {
		if ((error = buf_printf(b, "| %lld | %lld | %lld | ", jsonx_int(g, "generation", (long long)i),
		    jsonx_int(g, "evaluated", 0), jsonx_int(g, "correct", 0))) < 0 ||
		    (error = ms(b, jsonx_num(g, "best_ms", NAN))) < 0 || (error = buf_addstr(b, " |\n")) < 0)
			return error;
	}
	return 0;
}

static int
not_improved(struct buf *b, const struct report_ctx *c)
{
	int error;

	if ((error = buf_printf(b, "## No faster kernel for `%s` (%s)\n\n", c->m->module_path, c->cls)) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++) {
		const struct report_dir *d = &c->d[i];

		if ((error = buf_printf(b, "- %s, ", d->backend)) < 0 || (error = cell(b, d->device, 80)) < 0 ||
		    (error = buf_printf(b, ": `%s` after %lld candidates (stop: `%s`)",
		    jsonx_str(d->summary, "status", "?"), jsonx_int(d->summary, "candidates_evaluated", 0),
		    jsonx_str(d->summary, "stop_reason", "?"))) < 0)
			return error;
		if (json_is_number(jsonx_path(d->summary, "best.speedup.eager")) &&
		    (error = buf_printf(b, "; best %.2fx vs eager", jsonx_num(d->summary, "best.speedup.eager", 0))) < 0)
			return error;
		if (jsonx_str(d->summary, "error", NULL) && ((error = buf_addstr(b, ": ")) < 0 ||
		    (error = cell(b, jsonx_str(d->summary, "error", ""), CHECK_DETAIL_MAX)) < 0))
			return error;
		if ((error = buf_addch(b, '\n')) < 0)
			return error;
	}
	return buf_addstr(b, "\nNo pull request is opened for a module without a faster verified kernel.\n");
}

/* A warning before the table for each result whose speedup is not to be trusted yet. */
static int
flag_notes(struct buf *b, const struct report_ctx *c)
{
	char flagged[128];
	int error;

	for (size_t i = 0; i < c->n; i++) {
		const struct report_dir *d = &c->d[i];

		if (!d->result || !report_flagged(d, flagged, sizeof(flagged)))
			continue;
		if ((error = buf_printf(b, "> **Flagged for review (%s, ", d->backend)) < 0 ||
		    (error = cell(b, d->device, 80)) < 0 ||
		    (error = buf_printf(b, "): `%s`.** The evaluator found this time implausible (over 10x, "
		    "or below what the bytes moved allow at the measured bandwidth); do not trust the "
		    "speedup before re-measuring it on the target hardware.\n\n", flagged)) < 0)
			return error;
	}
	return 0;
}

int
report_md_body(const struct report_ctx *c, int full, struct buf *b)
{
	const struct report_module *m = c->m;
	int error;

	if (c->n_shipped == 0)
		return not_improved(b, c);
	if ((error = buf_printf(b, "## kernelbot: a verified kernel for `%s` (%s)\n\n", m->module_path, c->cls)) < 0 ||
	    (error = buf_printf(b, "Optimized at `%s`%s%s. The kernel%s under `kernels/%s/` passed the "
	    "sandboxed evaluator's correctness trials and is faster than PyTorch eager. "
	    "The drop-in module builds it on first use and falls back to the original module "
	    "where it cannot run (no compiler, another device or shape).\n\n",
	    m->commit ? m->commit : "?", m->repo ? " of " : "", m->repo ? m->repo : "",
	    c->n_shipped > 1 ? "s" : "", m->slug)) < 0 ||
	    (error = buf_addstr(b, "### Speedup\n\n")) < 0 || (error = flag_notes(b, c)) < 0 ||
	    (error = table(b, c)) < 0 ||
	    (error = buf_addstr(b, "\n### Use it\n\n")) < 0 || (error = usage(b, c)) < 0 ||
	    (error = buf_addstr(b, "\n### Search\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++)
		if ((error = search(b, &c->d[i])) < 0)
			return error;
	if ((error = buf_addstr(b, "\n### Verification\n\nEach result was confirmed by a final evaluation: "
	    "fresh random inputs per trial, every declared shape variant, two runs per trial on "
	    "poisoned outputs, inputs checked unchanged, the expected outputs computed only in the "
	    "trusted judge, the candidate in its own sandbox.\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++)
		if (c->d[i].result && (error = checks(b, &c->d[i], full)) < 0)
			return error;
	if ((error = buf_addstr(b, "\n### Static checks and sanitizer\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++)
		if (c->d[i].result && (error = findings(b, &c->d[i])) < 0)
			return error;
	if ((error = buf_addstr(b, "\n### Hardware and toolchain\n\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++)
		if ((error = hardware(b, &c->d[i])) < 0)
			return error;
	if ((error = buf_printf(b, "\nProvenance in `kernels/%s/manifest.json`.\n\n### Reproduce\n\n", m->slug)) < 0 ||
	    (error = reproduce(b, c)) < 0 ||
	    (error = buf_printf(b, "\n### Reviewer checklist\n\n"
	    "- [ ] The kernel source reads as a plausible implementation of the module (no special cases "
	    "for the test inputs, no hard-coded results).\n"
	    "- [ ] The flags and static-check findings above are understood.\n"
	    "- [ ] `python3 -m pytest kernels/%s/test_kernel.py` passes on the target hardware.\n"
	    "- [ ] The measured shapes are the ones used in production (other shapes fall back to the "
	    "original module).\n"
	    "- [ ] The speedup interval's lower end is worth the extra code.\n", m->slug)) < 0)
		return error;
	if (!full)
		return 0;
	if ((error = buf_addstr(b, "\n### Generations\n")) < 0)
		return error;
	for (size_t i = 0; i < c->n; i++)
		if ((error = generations(b, &c->d[i])) < 0)
			return error;
	return 0;
}

int
report_md_comment(const struct report_ctx *c, struct buf *b)
{
	int error;

	if (c->n_shipped == 0)
		return not_improved(b, c);
	if ((error = buf_printf(b, "### kernelbot results for `%s` at `%.12s`\n\n", c->m->module_path,
	    c->m->commit ? c->m->commit : "?")) < 0 || (error = table(b, c)) < 0)
		return error;
	return buf_printf(b, "\nDetails: `kernels/%s/REPORT.md`. Commands: `/kernelbot retry`, "
	    "`/kernelbot benchmark`, `/kernelbot help`.\n", c->m->slug);
}
