/*
 * Stage 1: see pipeline/llm/functionalize.h.
 */
#include "pipeline/llm/functionalize.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/jsonx.h"
#include "gpu/harness.h"
#include "pipeline/compiler/irload.h"
#include "pipeline/llm/llm.h"
#include "pipeline/llm/template.h"

#define FUNC_TEMPLATE "functionalize.md"
#define FUNC_FILE "functional.py"

char *
llm_python_block(const char *answer)
{
	const char *p = answer, *best = NULL, *body = NULL;
	size_t best_len = 0, fence = 0;
	int in_block = 0, is_py = 0;

	while (*p) {
		const char *eol = strchr(p, '\n'), *q = p;
		size_t len = eol ? (size_t)(eol - p) : strlen(p), ticks = 0;

		while (q < p + len && (*q == ' ' || *q == '\t'))
			q++;
		while (q + ticks < p + len && q[ticks] == '`')
			ticks++;
		if (ticks >= 3) {
			const char *rest = q + ticks, *end = p + len;
			size_t rl;

			while (rest < end && (*rest == ' ' || *rest == '\t'))
				rest++;
			while (end > rest && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
				end--;
			rl = (size_t)(end - rest);
			if (in_block && rl == 0 && ticks >= fence) {
				if (is_py) {
					best = body;
					best_len = (size_t)(p - body);
				}
				in_block = 0;
			} else if (!in_block) {
				/* a block of another language is skipped to its close */
				in_block = 1;
				is_py = rl == 0 || (rl == 6 && !strncmp(rest, "python", 6)) ||
				    (rl == 2 && !strncmp(rest, "py", 2));
				body = eol ? eol + 1 : p + len;
				fence = ticks;
			}
		}
		p = eol ? eol + 1 : p + len;
	}
	return best ? strndup(best, best_len) : NULL;
}

static int
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	size_t n = strlen(text);
	int error = 0;

	if (!f)
		return -errno;
	/* the sandbox's uid (nobody, under root) must read it, whatever the umask */
	if (fchmod(fileno(f), 0644) < 0)
		error = -errno;
	if (!error && fwrite(text, 1, n, f) != n)
		error = -EIO;
	if (fclose(f) != 0 && !error)
		error = -errno;
	return error;
}

/* The rewrite at path against the original: its IR, or why not in why. */
static int
check_rewrite(const struct llm_functionalize_opts *o, const char *path, json_t **ir,
    char *why, size_t whylen)
{
	json_t *req = NULL, *reply = NULL;
	struct harness_opts ho = HARNESS_OPTS_INIT;
	char err[2048], orig[PATH_MAX], rewrite[PATH_MAX];
	const char *ro[] = { orig, rewrite, NULL };
	int error;

	if (irload(path, "Model", NULL, ir, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "the rewrite does not trace: %.1500s", err);
		*ir = NULL;
		return -EINVAL;
	}
	/* The sandbox's working directory is its scratch: absolute, real paths. */
	if (!realpath(o->problem, orig) || !realpath(path, rewrite)) {
		error = -errno;
		snprintf(why, whylen, "the equivalence check could not run: %s", strerror(errno));
		goto fail;
	}
	req = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "verb", "equivalent",
	    "problem", orig, "rewrite", rewrite, "class",
	    o->class_name ? o->class_name : "Model", "rewrite_class", "Model",
	    "seeds", FUNC_EQUIV_SEEDS);
	if (!req) {
		error = -ENOMEM;
		goto fail;
	}
	/* Both modules run at import (one is the model's): sandboxed, shown only the two files. */
	ho.ro_paths = ro;
	ho.tmp_dir = o->work_dir;
	ho.stage = "equivalence check";
	if ((error = harness_call_sandboxed(req, FUNC_TIMEOUT_S * 1000, &ho, &reply, err,
	    sizeof(err))) < 0) {
		snprintf(why, whylen, "the equivalence check could not run: %.1500s", err);
		goto fail;
	}
	if (!jsonx_bool(reply, "ok", 0) || !jsonx_bool(reply, "equivalent", 0)) {
		snprintf(why, whylen, "the rewrite is not equivalent to the original: %s",
		    jsonx_str(reply, "error.message", "no message"));
		error = -EINVAL;
		goto fail;
	}
	json_decref(req);
	json_decref(reply);
	return 0;
fail:
	json_decref(req);
	json_decref(reply);
	json_decref(*ir);
	*ir = NULL;
	return error;
}

static int
over_budget(const struct llm_functionalize_opts *o, const struct llm_functionalize_result *r)
{
	return (o->max_tokens > 0 && r->tokens >= o->max_tokens) ||
	    (o->max_dollars > 0 && r->dollars >= o->max_dollars);
}

int
llm_functionalize(const struct llm_functionalize_opts *o, struct llm_functionalize_result *r,
    char *err, size_t errlen)
{
	struct llm_client cl = { o->cfg, o->record, o->record_arg, NULL, NULL };
	struct buf tmpl = BUF_INIT(TMPL_MAX_BYTES), src = BUF_INIT(FUNC_MAX_SOURCE);
	char *dir = NULL, *prev = NULL, path[PATH_MAX];
	int error = 0, rounds;

	memset(r, 0, sizeof(*r));
	if (!o->cfg || !o->cfg->n_models) {
		snprintf(err, errlen, "stage 1 needs llm.models in the server config");
		return -EINVAL;
	}
	if (snprintf(path, sizeof(path), "%s/%s", o->work_dir, FUNC_FILE) >= (int)sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", o->work_dir);
		return -ENAMETOOLONG;
	}
	if (!(dir = tmpl_prompts_dir(o->cfg->prompts_dir, err, errlen)))
		return -EINVAL;
	if ((error = tmpl_load(dir, FUNC_TEMPLATE, &tmpl, err, errlen)) < 0 ||
	    (error = buf_read_file(&src, o->problem)) < 0) {
		if (error != -EINVAL)
			snprintf(err, errlen, "%s: %s", o->problem, strerror(-error));
		error = -EINVAL;
		goto out;
	}
	rounds = 1 + (o->cfg->fix_rounds > 0 ? o->cfg->fix_rounds : 0);
	for (int i = 0; i < rounds && !r->ir && !over_budget(o, r); i++) {
		const struct llm_model *m = &o->cfg->models[(size_t)i % o->cfg->n_models];
		struct buf prompt = BUF_INIT(LLM_MAX_PROMPT);
		struct llm_request rq = { m, NULL, NULL, "functionalize", -1 };
		struct llm_reply rp;
		json_t *v, *ir = NULL;
		char *code;

		v = json_pack("{s:s, s:s, s:s, s:s?, s:i}", "problem", buf_cstr(&src),
		    "trace_error", o->trace_error ? o->trace_error : "",
		    "error", i ? r->error : "", "rewrite", prev, "attempt", i + 1);
		if (!v) {
			error = -ENOMEM;
			goto out;
		}
		error = tmpl_render(buf_cstr(&tmpl), v, &prompt, err, errlen);
		json_decref(v);
		if (error < 0) {
			char m2[512];
			snprintf(m2, sizeof(m2), "%s", err);
			snprintf(err, errlen, "%s/%s: %s", dir, FUNC_TEMPLATE, m2);
			buf_free(&prompt);
			error = -EINVAL;
			goto out;
		}
		rq.user = buf_cstr(&prompt);
		error = llm_chat_many(&cl, &rq, &rp, 1);
		buf_free(&prompt);
		if (error < 0) {
			snprintf(err, errlen, "stage 1: the request could not be sent: %s", strerror(-error));
			goto out;
		}
		r->attempts++;
		r->tokens += rp.tokens_in + rp.tokens_out;
		r->dollars += rp.cost;
		snprintf(r->model, sizeof(r->model), "%s", m->model);
		if (strcmp(rp.status, "ok")) {
			snprintf(r->error, sizeof(r->error), "the model's call failed (%s%s%s)", rp.status,
			    rp.error[0] ? ": " : "", rp.error);
		} else if (!(code = llm_python_block(rp.text))) {
			snprintf(r->error, sizeof(r->error), "the answer held no complete ```python block");
		} else {
			free(prev);
			prev = code;
			if ((error = write_text(path, code)) < 0) {
				snprintf(err, errlen, "%s: %s", path, strerror(-error));
				llm_reply_free(&rp);
				goto out;
			}
			if (check_rewrite(o, path, &ir, r->error, sizeof(r->error)) == 0) {
				r->ir = ir;
				r->error[0] = '\0';
				r->source = prev;
				prev = NULL;
			}
		}
		llm_reply_free(&rp);
	}
	if (!r->ir && !r->error[0])
		snprintf(r->error, sizeof(r->error), "the token or dollar budget was spent");
	error = 0;
out:
	free(prev);
	free(dir);
	buf_free(&tmpl);
	buf_free(&src);
	return error;
}

void
llm_functionalize_free(struct llm_functionalize_result *r)
{
	json_decref(r->ir);
	free(r->source);
	r->ir = NULL;
	r->source = NULL;
}
