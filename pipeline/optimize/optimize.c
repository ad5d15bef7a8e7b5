/*
 * One module through the search, as `kernelbot optimize` runs it: see
 * pipeline/optimize/optimize.h.
 */
#include "pipeline/optimize/optimize.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/optimize/optimize_llm.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"
#include "pipeline/archive/archive.h"
#include "pipeline/compiler/irload.h"
#include "pipeline/llm/client.h"

#define OPTIMIZE_MAX_DEPTH	16	/* folders below the repository root */

/*
 * The proposers `--proposer` can name ("both" is compiler + llm). One that
 * is not built in has no constructor. seeded: the graph compiler runs too,
 * so the LLM evolves its kernels (pipeline/optimize/optimize_llm.h).
 */
struct proposer_kind {
	const char *name;
	int (*make)(const char *backend, const struct config *cfg, int seeded,
	    struct proposer **out, char *err, size_t errlen);
};

/* The archive the compiler proposer seeds from: the configured store's. */
static json_t *
archive_near(void *arg, const struct evolve_ctx *ctx, int k)
{
	json_t *out = NULL;
	char err[256];

	if (archive_neighbours(arg, ctx->problem_source, ctx->ir,
	    strcmp(ctx->backend, "cpu") ? NULL : "cpu", k, &out, err, sizeof(err)) < 0) {
		log_warn("archive retrieval failed", "error=%s", err);
		return NULL;
	}
	return out;
}

static void
archive_close(void *arg)
{
	store_close(arg);
}

/*
 * The graph compiler, with the configured store's archive when there is
 * one: a module optimized before, or one like it, starts from the
 * schedules that won there. No store (none made yet, or not readable) is
 * no archive, not an error.
 */
static int
make_compiler(const char *backend, const struct config *cfg, int seeded,
    struct proposer **out, char *err, size_t errlen)
{
	struct store *st = NULL;
	int error;

	(void)seeded;
	(void)err;
	(void)errlen;
	if ((error = prop_compiler_new(backend, out)) < 0)
		return error;
	if (cfg && (error = store_open(config_data_dir(cfg), STORE_OPEN_EXISTING, &st)) == 0)
		prop_compiler_set_archive(*out, archive_near, st, archive_close);
	else if (cfg)
		log_debug("no archive for the compiler's seeds", "dir=%s error=%s",
		    config_data_dir(cfg), strerror(-error));
	return 0;
}

static int
make_llm(const char *backend, const struct config *cfg, int seeded,
    struct proposer **out, char *err, size_t errlen)
{
	return optimize_llm_new(cfg, backend, seeded, 0, out, err, errlen);
}

static const struct proposer_kind proposer_kinds[] = {
	{ "compiler", make_compiler },
	{ "llm", make_llm },
	{ NULL, NULL },
};

/* ------------------------------------------------------------ budgets.* */

/*
 * One reader of the section, pipeline/llm's (llm_config_load), so that the
 * LLM's names and the first ones here are both accepted: candidates,
 * generations, tokens|llm_tokens, dollars|llm_usd, gpu_seconds|gpu_minutes,
 * wall_seconds|wall_minutes.
 */
int
optimize_config_budgets(const struct config *cfg, struct evolve_budget *b, char *err, size_t errlen)
{
	struct llm_config lc;
	int error;

	if ((error = llm_config_load(cfg, &lc, err, errlen)) < 0)
		return error;
	/* a limit already set (a command-line flag) wins */
	if (!b->candidates)
		b->candidates = lc.budget_candidates;
	if (!b->generations)
		b->generations = lc.budget_generations;
	if (!b->wall_s)
		b->wall_s = lc.budget_wall_s;
	if (!b->gpu_s)
		b->gpu_s = lc.budget_gpu_s;
	if (!b->tokens)
		b->tokens = lc.budget_tokens;
	if (!b->dollars)
		b->dollars = lc.budget_dollars;
	llm_config_free(&lc);
	return 0;
}

int
optimize_proposers_configured(const char *names, const struct config *cfg, char *err,
    size_t errlen)
{
	struct llm_config lc;
	size_t n;

	if (!strstr(names, "llm"))
		return 0;
	if (llm_config_load(cfg, &lc, err, errlen) < 0)
		return -EINVAL;
	n = lc.n_models;
	llm_config_free(&lc);
	if (n == 0) {
		snprintf(err, errlen, "--proposer %s needs llm.models in the server config "
		    "(--config FILE; docs/llm.md)", names);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------ modules of a repository */

static void
module_clear(struct optimize_module *m)
{
	free(m->path);
	free(m->rel);
	free(m->class_name);
	for (int k = 0; k < 3; k++)
		free(m->entry[k]);
	for (int k = 0; m->pypath[k]; k++)
		free(m->pypath[k]);
	memset(m, 0, sizeof(*m));
}

void
optimize_modules_free(struct optimize_module *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		module_clear(&m[i]);
	free(m);
}

int
optimize_module_pypath(struct optimize_module *m, const char *const *dirs, char *err,
    size_t errlen)
{
	char real[PATH_MAX];
	int n = 0;

	for (; *dirs; dirs++) {
		if (n >= HARNESS_PATH_MAX) {
			snprintf(err, errlen, "more than %d folders on a module's path", HARNESS_PATH_MAX);
			return -E2BIG;
		}
		if (!realpath(*dirs, real)) {
			snprintf(err, errlen, "%.300s: %s", *dirs, strerror(errno));
			return -errno;
		}
		if (!(m->pypath[n++] = strdup(real)))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The repository's python_path folders (.kernelbot.yml; default "." and
 * "src"), those that exist (and, run as root, that others may read), as
 * absolute paths inside root, into dirs
 * (the caller frees each). A folder that resolves outside the repository
 * (a link) is an error: it would show the sandbox what is not the
 * repository's. The number of folders, or -errno with err set.
 */
static int
repo_pypath(const char *root, const struct repocfg *rc, char **dirs, char *err, size_t errlen)
{
	const json_t *list = json_object_get(repocfg_json(rc), "python_path"), *v;
	char top[PATH_MAX], want[PATH_MAX], real[PATH_MAX];
	size_t i, len;
	int n = 0, error = 0;

	if (!realpath(root, top)) {
		snprintf(err, errlen, "%.300s: %s", root, strerror(errno));
		return -errno;
	}
	len = strlen(top);
	json_array_foreach(list, i, v) {
		const char *rel = json_string_value(v);
		struct stat st;

		if (n >= HARNESS_PATH_MAX)
			break;
		if (snprintf(want, sizeof(want), "%s/%s", top, rel) >= (int)sizeof(want)) {
			error = -ENAMETOOLONG;
			break;
		}
		if (stat(want, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;	/* the default's src/ where there is none */
		if (!realpath(want, real) || strncmp(real, top, len) ||
		    (real[len] != '\0' && real[len] != '/')) {
			snprintf(err, errlen, "%s: python_path %.200s is not a folder of the "
			    "repository", REPOCFG_FILE, rel);
			error = -EINVAL;
			break;
		}
		/*
		 * Run as root, the sandbox's user is another (nobody): a folder
		 * it may not read would fail every load of the module (the
		 * runner's checkouts are 0750), so it is left off the path, as
		 * before there was one: a module that imports only what sits
		 * beside it still loads.
		 */
		if (geteuid() == 0 && (st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH))
			continue;
		if (!(dirs[n++] = strdup(real))) {
			error = -ENOMEM;
			break;
		}
	}
	if (error == 0)
		return n;
	while (n > 0)
		free(dirs[--n]);
	return error;
}

static int
read_text(const char *path, size_t max, char **out)
{
	struct buf b = BUF_INIT(max);
	int error;

	if ((error = buf_read_file(&b, path)) < 0) {
		buf_free(&b);
		return error;
	}
	*out = b.data ? buf_detach(&b, NULL) : strdup("");
	return *out ? 0 : -ENOMEM;
}

struct walk {
	const char *root;
	const json_t *entries;		/* .kernelbot.yml modules, or NULL: the convention */
	struct optimize_module *v;
	size_t n;
	char err[1024];
};

static int
add_module(struct walk *w, const char *rel, const char *cls, const json_t *e)
{
	static const char *const keys[3] = { "init", "inputs", "variants" };
	char full[PATH_MAX];
	struct optimize_module *m;

	if (w->n >= OPTIMIZE_MAX_MODULES) {
		snprintf(w->err, sizeof(w->err), "more than %d modules", OPTIMIZE_MAX_MODULES);
		return -E2BIG;
	}
	if (!(m = realloc(w->v, (w->n + 1) * sizeof(*m))))
		return -ENOMEM;
	w->v = m;
	m = &w->v[w->n];
	memset(m, 0, sizeof(*m));
	if (snprintf(full, sizeof(full), "%s/%s", w->root, rel) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	if (modules_slug(rel, cls, m->slug) < 0) {
		snprintf(w->err, sizeof(w->err), "%.300s: no slug for this path", rel);
		return -EINVAL;
	}
	m->path = strdup(full);
	m->rel = strdup(rel);
	m->class_name = strdup(cls);
	w->n++;
	/* A literal list travels as its JSON text (kbh/entry.py reads both). */
	for (int k = 0; k < 3; k++) {
		const json_t *v = json_object_get(e, keys[k]);

		if (json_is_string(v) && !(m->entry[k] = strdup(json_string_value(v))))
			return -ENOMEM;
		if (json_is_array(v) && !(m->entry[k] = json_dumps(v, JSON_COMPACT)))
			return -ENOMEM;
	}
	return m->path && m->rel && m->class_name ? 0 : -ENOMEM;
}

/* Whether a repository file is a module, and with which class. */
static int
consider(struct walk *w, const char *rel)
{
	char full[PATH_MAX], *text = NULL;
	size_t i;
	json_t *e;
	int error = 0;

	if (snprintf(full, sizeof(full), "%s/%s", w->root, rel) >= (int)sizeof(full))
		return 0;
	if (read_text(full, MODULES_MAX_FILE, &text) < 0)
		return 0;	/* unreadable or too large: never a module */
	if (!w->entries) {
		if (modules_detect(text, strlen(text), REPOCFG_DEFAULT_CLASS, REPOCFG_DEFAULT_INIT,
		    REPOCFG_DEFAULT_INPUTS))
			error = add_module(w, rel, REPOCFG_DEFAULT_CLASS, NULL);
		goto out;
	}
	json_array_foreach(w->entries, i, e) {
		const char *path = jsonx_str(e, "path", NULL), *glob = jsonx_str(e, "glob", NULL);
		const char *cls = jsonx_str(e, "class", REPOCFG_DEFAULT_CLASS);
		json_t *init = json_object_get(e, "init"), *inputs = json_object_get(e, "inputs");

		if (path ? strcmp(path, rel) : !(glob && repocfg_glob_match(glob, rel)))
			continue;
		if (!modules_detect(text, strlen(text), cls,
		    json_is_string(init) ? json_string_value(init) : NULL,
		    json_is_string(inputs) ? json_string_value(inputs) : NULL)) {
			if (path) {
				snprintf(w->err, sizeof(w->err), "%.300s: named in %s but it does not define "
				    "class %s with its input functions", rel, REPOCFG_FILE, cls);
				error = -EINVAL;
				goto out;
			}
			continue;
		}
		if ((error = add_module(w, rel, cls, e)) < 0)
			goto out;
	}
out:
	free(text);
	return error;
}

static int
walk_dir(struct walk *w, const char *rel, int depth)
{
	char full[PATH_MAX], sub[PATH_MAX];
	struct dirent **ents = NULL;
	int n, error = 0;

	if (depth > OPTIMIZE_MAX_DEPTH)
		return 0;
	snprintf(full, sizeof(full), "%s%s%s", w->root, *rel ? "/" : "", rel);
	if ((n = scandir(full, &ents, NULL, alphasort)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		struct stat st;
		size_t len = strlen(name);

		if (error || name[0] == '.' || !strcmp(name, "__pycache__"))
			continue;
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof(sub))
			continue;
		if (snprintf(full, sizeof(full), "%s/%s", w->root, sub) >= (int)sizeof(full))
			continue;
		if (lstat(full, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			error = walk_dir(w, sub, depth + 1);
		else if (S_ISREG(st.st_mode) && len > 3 && !strcmp(name + len - 3, ".py"))
			error = consider(w, sub);
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return error;
}

int
optimize_repo_modules(const char *root, char **paths, int n_paths, const char *cls,
    struct optimize_module **out, size_t *n_out, char *err, size_t errlen)
{
	struct walk w = { .root = root };
	struct repocfg *rc = NULL;
	char cfgpath[PATH_MAX], *text = NULL, *dirs[HARNESS_PATH_MAX] = { NULL };
	size_t kept = 0;
	int error, n_dirs = 0;

	if (snprintf(cfgpath, sizeof(cfgpath), "%s/%s", root, REPOCFG_FILE) >= (int)sizeof(cfgpath)) {
		snprintf(err, errlen, "%.300s: path too long", root);
		return -ENAMETOOLONG;
	}
	if ((error = read_text(cfgpath, BUF_MAX_SMALL, &text)) == 0) {
		if ((error = repocfg_parse(REPOCFG_FILE, text, strlen(text), &rc, err, errlen)) < 0)
			goto out;
		w.entries = json_object_get(repocfg_json(rc), "modules");
		if (!json_is_array(w.entries))
			w.entries = NULL;
	} else if (error != -ENOENT) {
		snprintf(err, errlen, "%.300s: %s", cfgpath, strerror(-error));
		goto out;
	}
	if ((error = walk_dir(&w, "", 0)) < 0) {
		snprintf(err, errlen, "%.300s: %s", root, w.err[0] ? w.err : strerror(-error));
		goto out;
	}
	for (int p = 0; p < n_paths; p++) {
		const char *want = paths[p];
		int found = 0;
		while (want[0] == '.' && want[1] == '/')
			want += 2;
		for (size_t i = 0; i < w.n; i++)
			found |= !strcmp(w.v[i].rel, want);
		if (!found) {
			snprintf(err, errlen, "%.300s: not a module of %.300s (%s)", paths[p], root,
			    w.entries ? "not matched by " REPOCFG_FILE :
			    "no class Model with get_init_inputs and get_inputs");
			error = -EINVAL;
			goto out;
		}
	}
	for (size_t i = 0; i < w.n; i++) {
		int keep = n_paths == 0;
		for (int p = 0; p < n_paths && !keep; p++) {
			const char *want = paths[p];
			while (want[0] == '.' && want[1] == '/')
				want += 2;
			keep = !strcmp(w.v[i].rel, want);
		}
		if (cls && strcmp(w.v[i].class_name, cls))
			keep = 0;
		if (keep)
			w.v[kept++] = w.v[i];
		else
			module_clear(&w.v[i]);
	}
	w.n = kept;
	if (!w.n && cls) {
		snprintf(err, errlen, "%.300s: no module of class %.100s%s", root, cls,
		    n_paths ? " in the files named" : "");
		error = -EINVAL;
		goto out;
	}
	if (!w.n) {
		snprintf(err, errlen, "%.300s: no PyTorch modules found", root);
		error = -EINVAL;
		goto out;
	}
	/* Every module gets the repository's python_path (none configured: the defaults). */
	if (!rc && (error = repocfg_default(&rc)) < 0)
		goto out;
	if ((n_dirs = repo_pypath(root, rc, dirs, err, errlen)) < 0) {
		error = n_dirs;
		goto out;
	}
	for (size_t i = 0; i < w.n; i++)
		for (int k = 0; k < n_dirs; k++)
			if (!(w.v[i].pypath[k] = strdup(dirs[k]))) {
				error = -ENOMEM;
				goto out;
			}
	*out = w.v;
	*n_out = w.n;
	w.v = NULL;
	w.n = 0;
	error = 0;
out:
	optimize_modules_free(w.v, w.n);
	repocfg_free(rc);
	free(text);
	for (int k = 0; k < n_dirs; k++)
		free(dirs[k]);
	return error;
}

/* ------------------------------------------------------------ one problem */

/*
 * Stage 1's outcome into the run: DIR/functional.py (the accepted
 * rewrite), a paragraph at the end of REPORT.md, and "functionalized" in summary.json (rewritten) and the
 * returned summary; its tokens and dollars are in "spent" already
 * (evolve_opts.tokens_before).
 */
static void
stage1_record(const char *out_dir, const struct llm_functionalize_result *fr, json_t *summary)
{
	char path[PATH_MAX];
	FILE *f;

	json_object_set_new(summary, "functionalized", json_pack("{s:b, s:s, s:i, s:I, s:f, s:s?, s:s?}",
	    "accepted", fr->ir != NULL, "model", fr->model, "attempts", fr->attempts,
	    "tokens", (json_int_t)fr->tokens, "dollars", fr->dollars,
	    "file", fr->source ? "functional.py" : NULL, "error", fr->error[0] ? fr->error : NULL));
	if (fr->source && snprintf(path, sizeof(path), "%s/functional.py", out_dir) < (int)sizeof(path)) {
		int bad = !(f = fopen(path, "w"));

		if (!bad) {
			bad = fputs(fr->source, f) == EOF;
			bad |= fclose(f) != 0;
		}
		if (bad)
			fprintf(stderr, "kernelbot: %s: %s\n", path, strerror(errno));
	}
	if (snprintf(path, sizeof(path), "%s/summary.json", out_dir) < (int)sizeof(path) &&
	    json_dump_file(summary, path, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) < 0)
		fprintf(stderr, "kernelbot: %s: cannot be rewritten\n", path);	/* a reviewer of the report learns where the IR came from */
	if (snprintf(path, sizeof(path), "%s/REPORT.md", out_dir) < (int)sizeof(path) &&
	    (f = fopen(path, "a"))) {
		int bad = fprintf(f, "\n## Stage 1\n\nThe module does not trace with torch.fx. %s "
		    "(%s, %d attempt%s).\n", fr->ir ? "A model's traceable rewrite, checked "
		    "against the original on fresh inputs, gave the graph IR: functional.py" :
		    "No model's rewrite passed the checks, so the search ran without graph IR",
		    fr->model, fr->attempts, fr->attempts == 1 ? "" : "s") < 0;
		if (fclose(f) != 0 || bad)
			fprintf(stderr, "kernelbot: %s: cannot be appended to\n", path);
	}
}

/*
 * The module does not trace and an LLM proposer runs: stage 1 in a
 * private folder (the --out folder must stay empty until evolve_run). 1
 * when it ran (fr filled, *tmpdir to remove), 0 when it could not.
 */
static int
stage1_run(const struct config *cfg, const struct optimize_module *m, const char *irerr,
    struct evolve_opts *eo, struct llm_functionalize_result *fr, char *tmpdir, size_t tmplen)
{
	const char *t = eo->eval_env.tmp_dir;
	char err[1024];

	if (snprintf(tmpdir, tmplen, "%s/kernelbot-stage1-XXXXXX", t && *t ? t : "/tmp") >= (int)tmplen ||
	    !mkdtemp(tmpdir)) {
		fprintf(stderr, "kernelbot: stage 1 skipped: no temporary folder: %s\n", strerror(errno));
		tmpdir[0] = '\0';
		return 0;
	}
	if (optimize_llm_functionalize(cfg, m->path, m->class_name, irerr, tmpdir, &eo->budget,
	    fr, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot: stage 1 skipped: %s\n", err);
		return 0;
	}
	if (!eo->quiet)
		fprintf(stderr, "kernelbot: stage 1: %s after %d attempt%s%s%s\n",
		    fr->ir ? "a traceable rewrite was accepted" : "no rewrite was accepted",
		    fr->attempts, fr->attempts == 1 ? "" : "s", fr->ir ? "" : ": ", fr->ir ? "" : fr->error);
	/* its tokens and dollars are the search's first spending */
	eo->tokens_before = fr->tokens;
	eo->dollars_before = fr->dollars;
	return 1;
}

static void
remove_tmpdir(const char *dir)
{
	char p[PATH_MAX];

	if (!dir[0])
		return;
	if (snprintf(p, sizeof(p), "%s/functional.py", dir) < (int)sizeof(p))
		(void)unlink(p);
	(void)rmdir(dir);
}

json_t *
optimize_error_summary(const struct optimize_module *m, const char *backend, const char *msg)
{
	return json_pack("{s:s, s:s, s:n, s:i, s:i, s:s, s:s, s:s}", "problem", m->path,
	    "status", "error", "best", "candidates_evaluated", 0, "generations", 0,
	    "stop_reason", "error", "backend", backend, "error", msg);
}

json_t *
optimize_module_run(const struct evolve_opts *base, const char *proposers,
    const struct config *cfg, const struct optimize_module *m, const char *out_dir, int *ok,
    int *usage)
{
	struct evolve_opts eo = *base;
	json_t *ir = NULL, *summary = NULL;
	struct llm_functionalize_result fr = { 0 };
	char err[4096], irerr[2048], tmpdir[PATH_MAX] = "";
	int error, n = 0, stage1 = 0;

	*ok = 0;
	err[0] = irerr[0] = '\0';
	eo.problem = m->path;
	eo.class_name = m->class_name;
	eo.entry = (struct harness_entry){ m->entry[0], m->entry[1], m->entry[2], { NULL } };
	for (int k = 0; k < HARNESS_PATH_MAX && m->pypath[k]; k++)
		eo.entry.path[k] = m->pypath[k];
	eo.out_dir = out_dir;
	if (irload(m->path, m->class_name, &eo.entry, &ir, irerr, sizeof(irerr)) < 0) {
		ir = NULL;
		eo.ir_error = irerr;
		if (strstr(proposers, "llm") &&
		    (stage1 = stage1_run(cfg, m, irerr, &eo, &fr, tmpdir, sizeof(tmpdir))) && fr.ir) {
			char fpath[PATH_MAX];

			ir = fr.ir;
			fr.ir = NULL;
			eo.ir_error = NULL;
			/* DIR/ir.json names where the rewrite ends up, not the
			 * temporary folder it was checked in */
			if (snprintf(fpath, sizeof(fpath), "%s/functional.py", out_dir) < (int)sizeof(fpath))
				json_object_set_new(ir, "problem", json_string(fpath));
			json_object_set_new(ir, "functionalized_from", json_string(m->path));
		}
	}
	eo.ir = ir;
	for (const char *p = proposers; *p && n < EVOLVE_MAX_PROPOSERS;) {
		size_t len = strcspn(p, ",");
		for (const struct proposer_kind *k = proposer_kinds; k->name; k++) {
			if (strlen(k->name) != len || strncmp(k->name, p, len))
				continue;
			if ((error = k->make(eo.backend, cfg, strstr(proposers, "compiler") != NULL,
			    &eo.proposers[n], err, sizeof(err))) < 0) {
				if (!err[0] || error == -ENOMEM)
					snprintf(err, sizeof(err), "proposer %s: %s", k->name, strerror(-error));
				summary = optimize_error_summary(m, eo.backend, err);
				goto out;
			}
			if (!strcmp(k->name, "llm"))
				optimize_llm_set_eval(eo.proposers[n], eo.device, eo.have_sandbox_exec,
				    &eo.eval_env);
			eo.shares[n++] = 1;
		}
		p += len + (p[len] == ',');
	}
	eo.n_proposers = (size_t)n;
	if ((error = evolve_run(&eo, &summary, err, sizeof(err))) < 0) {
		*usage |= error == -EEXIST || error == -EINVAL;
		summary = optimize_error_summary(m, eo.backend, err);
		goto out;
	}
	*ok = json_is_object(json_object_get(summary, "best"));
	if (stage1) {
		/* stage1_record reads fr->ir as "accepted": it was moved into ir */
		fr.ir = ir;
		stage1_record(out_dir, &fr, summary);
		fr.ir = NULL;
	}
out:
	for (int i = 0; i < n; i++)
		if (eo.proposers[i] && eo.proposers[i]->free)
			eo.proposers[i]->free(eo.proposers[i]);
	json_decref(ir);
	llm_functionalize_free(&fr);
	remove_tmpdir(tmpdir);
	return summary;
}

int
optimize_proposers_check(const char *names, char *err, size_t errlen)
{
	if (!*names) {
		snprintf(err, errlen, "no proposer named");
		return -EINVAL;
	}
	for (const char *p = names; *p;) {
		size_t len = strcspn(p, ",");
		const struct proposer_kind *k;
		for (k = proposer_kinds; k->name; k++)
			if (strlen(k->name) == len && !strncmp(k->name, p, len))
				break;
		if (!k->name) {
			snprintf(err, errlen, "unknown proposer '%.*s' (compiler, llm)", (int)len, p);
			return -EINVAL;
		}
		if (!k->make) {
			snprintf(err, errlen, "proposer %s: not built in yet", k->name);
			return -ENOTSUP;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

