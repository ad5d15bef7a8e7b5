/*
 * pipeline/report/report.c: read a module's optimize directories and lay
 * out its pull request's files (kernel sources, the drop-in module, its
 * test, manifest.json, REPORT.md). The markdown is report_md.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/version.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "pipeline/report/report_internal.h"

static int
fail(int error, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
fail(int error, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return error;
}

/* A path inside an optimize directory as summary.json names it. */
static int
safe_relpath(const char *p)
{
	if (!p || !*p || *p == '/' || strlen(p) > 256)
		return 0;
	for (const char *s = p; *s; ) {
		size_t n = strcspn(s, "/");

		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.') || n == 0)
			return 0;
		s += n;
		if (*s == '/')
			s++;
	}
	return 1;
}

static int
load_json(const char *dir, const char *name, int required, json_t **out,
    char *err, size_t errlen)
{
	char path[4096], why[256];
	int error;

	*out = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((error = jsonx_load_file(path, REPORT_MAX_JSON, out, why, sizeof(why))) < 0) {
		if (error == -ENOENT && !required)
			return 0;
		return fail(error == -ENOENT ? -ENOENT : -EINVAL, err, errlen,
		    "%s: %s", path, why);
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return fail(-EINVAL, err, errlen, "%s: not a JSON object", path);
	}
	return 0;
}

/* "9.0" -> "sm_90"; "sm_90" and "90" are taken as they are. */
static void
arch_of(const json_t *dev, char out[16])
{
	const char *cc = jsonx_str(dev, "compute_capability", NULL);
	const char *a = jsonx_str(dev, "arch", NULL);
	int major, minor;

	out[0] = '\0';
	if (a && !strncmp(a, "sm_", 3) && strlen(a) < 16 && strspn(a + 3, "0123456789abf") == strlen(a + 3))
		snprintf(out, 16, "%s", a);
	else if (cc && sscanf(cc, "%d.%d", &major, &minor) == 2 && major > 0 && major < 100 &&
	    minor >= 0 && minor < 10)
		snprintf(out, 16, "sm_%d%d", major, minor);
}

static int
read_dir(struct report_dir *d, char *err, size_t errlen)
{
	const char *status, *best_path;
	const json_t *dev;
	json_t *res;
	char path[4096], why[256];
	struct buf b = BUF_INIT(PUBLISH_MAX_FILE_BYTES);
	int error;

	if ((error = load_json(d->path, "summary.json", 1, &d->summary, err, errlen)) < 0 ||
	    (error = load_json(d->path, "history.json", 0, &d->history, err, errlen)) < 0 ||
	    (error = load_json(d->path, "ir.json", 0, &d->ir, err, errlen)) < 0)
		return error;
	status = jsonx_str(d->summary, "status", NULL);
	d->backend = jsonx_str(d->summary, "backend", NULL);
	if (!status)
		return fail(-EINVAL, err, errlen, "%s/summary.json: status: missing", d->path);
	if (!d->backend)
		d->backend = jsonx_str(d->history, "backend", "cpu");
	if (strcmp(d->backend, "cpu") && strcmp(d->backend, "cuda"))
		return fail(-EINVAL, err, errlen, "%s/summary.json: backend: \"%s\" is neither cpu nor cuda",
		    d->path, d->backend);
	dev = jsonx_path(d->history, "device");
	snprintf(d->device, sizeof(d->device), "%s",
	    json_is_string(dev) ? json_string_value(dev) : jsonx_str(dev, "name", "cpu"));
	if (!strcmp(d->backend, "cuda"))
		arch_of(dev, d->arch);
	/*
	 * needs_review: the search's only confirmed kernels are flagged
	 * (docs/optimize.md). They ship in a PR that asks for review, with
	 * no headline speedup (report_flagged), never silently dropped.
	 */
	if (strcmp(status, "improved") != 0 && strcmp(status, "needs_review") != 0)
		return 0;

	/* An improved result must carry its kernel and its confirmation. */
	best_path = jsonx_str(d->summary, "best.path", NULL);
	if (!safe_relpath(best_path))
		return fail(-EINVAL, err, errlen, "%s/summary.json: best.path: %s", d->path,
		    best_path ? "not a path inside the directory" : "missing for an improved result");
	snprintf(path, sizeof(path), "%s/%s", d->path, best_path);
	if ((error = buf_read_file(&b, path)) < 0) {
		buf_free(&b);
		return fail(error == -EFBIG ? -EINVAL : error, err, errlen, "%s: %s", path,
		    error == -EFBIG ? "kernel source too large" : strerror(-error));
	}
	if (buf_addch(&b, '\0') < 0) {
		buf_free(&b);
		return fail(-EINVAL, err, errlen, "%s: kernel source too large", path);
	}
	d->source = buf_detach(&b, &d->source_len);
	d->source_len--;
	crypto_sha256_hex(d->source, d->source_len, d->sha256);
	if ((error = load_json(d->path, "best/result.json", 1, &res, err, errlen)) < 0)
		return error;
	error = eval_cand_parse(res, &d->res, why, sizeof(why));
	json_decref(res);
	if (error < 0)
		return fail(error, err, errlen, "%s/best/result.json: %s", d->path,
		    error == -EINVAL ? why : strerror(-error));
	d->result = &d->res;
	if (!d->result->correct)
		return fail(-EINVAL, err, errlen,
		    "%s/best/result.json: the confirmation evaluation is not correct (status %s)",
		    d->path, d->result->status ? d->result->status : "?");
	if (isnan(d->result->vs_eager.x))
		return fail(-EINVAL, err, errlen, "%s/best/result.json: speedup.eager: missing", d->path);
	if (!d->device[0] || !strcmp(d->device, "cpu"))
		snprintf(d->device, sizeof(d->device), "%s", d->result->device ? d->result->device : "cpu");
	d->improved = 1;
	return 0;
}

const struct report_dir *
report_best(const struct report_ctx *c, int improved_only)
{
	const struct report_dir *best = NULL;

	for (size_t i = 0; i < c->n; i++) {
		const struct report_dir *d = &c->d[i];
		double s = d->result ? eval_num_or(d->result->vs_eager.x, 0) :
		    jsonx_num(d->summary, "best.speedup.eager", 0);

		if (improved_only && !d->improved)
			continue;
		if (!best || s > (best->result ? eval_num_or(best->result->vs_eager.x, 0) :
		    jsonx_num(best->summary, "best.speedup.eager", 0)))
			best = d;
	}
	return best;
}

/*
 * Which improved results ship, under which names: one result is kernel.cu
 * or kernel.c; with several, CUDA sources are named by architecture (the
 * loader picks by compute capability) and the CPU one is kernel.c. Of two
 * results for the same name the faster ships.
 */
static void
name_files(struct report_ctx *c)
{
	size_t improved = 0;

	for (size_t i = 0; i < c->n; i++)
		improved += c->d[i].improved;
	for (size_t i = 0; i < c->n; i++) {
		struct report_dir *d = &c->d[i];
		int cuda = !strcmp(d->backend, "cuda");

		if (!d->improved)
			continue;
		if (improved == 1 || !cuda || !d->arch[0])
			snprintf(d->file, sizeof(d->file), "%s", cuda ? "kernel.cu" : "kernel.c");
		else
			snprintf(d->file, sizeof(d->file), "%s.cu", d->arch);
		for (size_t j = 0; j < i; j++) {
			struct report_dir *o = &c->d[j];

			if (!strcmp(o->file, d->file)) {
				if (eval_num_or(o->result->vs_eager.x, 0) >=
				    eval_num_or(d->result->vs_eager.x, 0)) {
					d->file[0] = '\0';
					break;
				}
				o->file[0] = '\0';
			}
		}
	}
	c->n_shipped = 0;
	for (size_t i = 0; i < c->n; i++)
		c->n_shipped += c->d[i].file[0] != '\0';
}

/* The names of the kernel's inputs from a graph-compiler header, " * inputs: x fc.weight." */
static json_t *
header_inputs(const char *src)
{
	const char *p = strstr(src, "\n * inputs: ");
	const char *end;
	json_t *names;

	if (!p || p - src > 8192)
		return NULL;
	p += strlen("\n * inputs: ");
	if (!(end = strchr(p, '\n')) || end - p > 4096)
		return NULL;
	if (end > p && end[-1] == '.')
		end--;
	names = json_array();
	while (p < end) {
		size_t n = strcspn(p, " ");

		if (p + n > end)
			n = (size_t)(end - p);
		if (n)
			json_array_append_new(names, json_stringn(p, n));
		p += n + 1;
	}
	return names;
}

/* inputs, input_shapes, abi_inputs: what the loader checks a call against. */
static void
manifest_inputs(const struct report_ctx *c, json_t *man)
{
	const struct report_dir *d = report_best(c, 1);
	json_t *acts = json_array(), *shapes = json_array(), *abi = json_array(), *first, *v, *w;
	size_t i, j;

	if (d && d->ir && json_is_array(json_object_get(d->ir, "inputs"))) {
		first = json_array();
		json_array_foreach(json_object_get(d->ir, "inputs"), i, v) {
			const char *role = jsonx_str(v, "role", "");

			json_array_append(abi, json_object_get(v, "name"));
			if (strcmp(role, "input") != 0)
				continue;
			json_array_append_new(acts, json_pack("{s:O,s:O,s:O}", "name", json_object_get(v, "name"),
			    "shape", json_object_get(v, "shape"), "dtype", json_object_get(v, "dtype")));
			json_array_append(first, json_object_get(v, "shape"));
		}
		json_array_append_new(shapes, first);
		json_array_foreach(json_object_get(d->ir, "variants"), i, v) {
			json_t *set = json_array();

			json_array_foreach(v, j, w)
				json_array_append(set, json_object_get(w, "shape"));
			json_array_append_new(shapes, set);
		}
	} else if (d && d->source) {
		json_decref(abi);
		abi = header_inputs(d->source);
	}
	json_object_set_new(man, "inputs", acts);
	json_object_set_new(man, "input_shapes", json_array_size(acts) ? shapes : json_null());
	if (!json_array_size(acts))
		json_decref(shapes);
	json_object_set_new(man, "abi_inputs", abi ? abi : json_null());
}

/* Distinct proposers and models of a search, from history.json's candidates. */
static json_t *
distinct(const json_t *history, const char *key)
{
	json_t *out = json_array(), *v, *w;
	size_t i, j;

	json_array_foreach(json_object_get(history, "candidates"), i, v) {
		json_t *s = json_object_get(v, key);
		int seen = 0;

		if (!json_is_string(s))
			continue;
		json_array_foreach(out, j, w)
			seen |= json_equal(s, w);
		if (!seen && json_array_size(out) < 64)
			json_array_append(out, s);
	}
	return out;
}

/* The history entry of the shipped kernel (same source), or NULL. */
static const json_t *
best_candidate(const struct report_dir *d)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(d->history, "candidates"), i, v)
		if (!strcmp(jsonx_str(v, "source_sha", ""), d->sha256))
			return v;
	return NULL;
}

/* A copy of v for the manifest, or null. */
static json_t *
or_null(const json_t *v)
{
	return v ? json_deep_copy(v) : json_null();
}

static json_t *
manifest_kernel(const struct report_ctx *c, const struct report_dir *d)
{
	static const struct eval_cand none;	/* a result not loaded: all absent */
	const struct eval_cand *r = d->result ? d->result : &none;
	const json_t *cand = best_candidate(d);
	json_t *k = json_pack("{s:s,s:s,s:s,s:s,s:s}", "file", d->file, "backend", d->backend,
	    "sha256", d->sha256, "device", d->device, "optimize_status",
	    jsonx_str(d->summary, "status", "?"));
	const json_t *tc = jsonx_path(d->history, "toolchain");
	const struct { const char *key; const json_t *v; } copy[] = {
		{ "speedup", r->speedup_json },
		{ "device_info", jsonx_path(d->history, "device") },
		{ "toolchain", tc ? tc : jsonx_path(d->summary, "toolchain") },
		{ "op", cand ? json_object_get(cand, "op") : NULL },
		{ "generations", json_object_get(d->summary, "generations") },
		{ "candidates_evaluated", json_object_get(d->summary, "candidates_evaluated") },
		{ "stop_reason", json_object_get(d->summary, "stop_reason") },
		{ "budget", jsonx_path(d->history, "budget") },
		{ "spent", json_object_get(d->summary, "spent") },
		{ "seed", r->seed_json },
		{ "flags", r->flags_json },
		/* what the confirmation's measurement depended on (gpu/evalenv.h) */
		{ "environment", r->environment },
	};
	json_t *times = json_object();
	struct buf cmd = BUF_INIT(1u << 16);

	json_object_set_new(k, "arch", d->arch[0] ? json_string(d->arch) : json_null());
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++)
		json_object_set_new(k, copy[i].key, or_null(copy[i].v));
	json_object_set_new(times, "kernel", or_null(r->t_candidate.json));
	json_object_set_new(times, "eager", or_null(r->t_eager.json));
	json_object_set_new(times, "compile", or_null(r->t_compile.json));
	json_object_set_new(k, "timings_ms", times);
	json_object_set_new(k, "proposer", json_string(jsonx_str(cand, "proposer", "unknown")));
	json_object_set_new(k, "proposers", distinct(d->history, "proposer"));
	json_object_set_new(k, "models", distinct(d->history, "model"));
	/* the body's reproduce line, from the repository root */
	json_object_set_new(k, "reproduce", report_repro_cmd(c, d, &cmd) == 0 ?
	    json_string(buf_cstr(&cmd)) : json_null());
	buf_free(&cmd);
	return k;
}

static json_t *
manifest(const struct report_ctx *c)
{
	const struct report_module *m = c->m;
	json_t *man, *ks = json_array();
	char when[32];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	man = json_pack("{s:i,s:s,s:s,s:s?,s:s?,s:s}", "kernelbot_manifest", 1,
	    "kernelbot_version", KERNELBOT_VERSION, "slug", m->slug, "repo", m->repo,
	    "commit", m->commit, "created_at", when);
	json_object_set_new(man, "module", json_pack("{s:s,s:s,s:s,s:s}", "path", m->module_path,
	    "class", c->cls, "init", m->module_init ? m->module_init : "get_init_inputs",
	    "inputs", m->module_inputs ? m->module_inputs : "get_inputs"));
	if (m->atol > 0 || m->rtol > 0) {
		json_t *tol = json_object();

		if (m->atol > 0)
			json_object_set_new(tol, "atol", json_real(m->atol));
		if (m->rtol > 0)
			json_object_set_new(tol, "rtol", json_real(m->rtol));
		json_object_set_new(man, "tolerance", tol);
	}
	manifest_inputs(c, man);
	for (size_t i = 0; i < c->n; i++)
		if (c->d[i].file[0])
			json_array_append_new(ks, manifest_kernel(c, &c->d[i]));
	json_object_set_new(man, "kernels", ks);
	return man;
}

static int
add_file(struct report_pr *p, const struct report_module *m, const char *name,
    char *data, size_t len)
{
	struct gitops_file *f = &p->files[p->n_files];
	char path[256];

	snprintf(path, sizeof(path), "kernels/%s/%s", m->slug, name);
	if (!(f->path = strdup(path))) {
		free(data);
		return -ENOMEM;
	}
	f->data = data;
	f->len = len;
	f->executable = 0;
	p->n_files++;
	return 0;
}

static int
add_text(struct report_pr *p, const struct report_module *m, const char *name,
    const char *text)
{
	char *copy = strdup(text);

	return copy ? add_file(p, m, name, copy, strlen(copy)) : -ENOMEM;
}

static int
build_files(const struct report_ctx *c, struct report_pr *p)
{
	const struct report_module *m = c->m;
	struct buf b = BUF_INIT(REPORT_MAX_JSON);
	json_t *man = NULL;
	char *data;
	size_t len;
	int error;

	if (!(p->files = calloc(c->n_shipped + 5, sizeof(*p->files))))
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		const struct report_dir *d = &c->d[i];

		if (!d->file[0])
			continue;
		if (!(data = malloc(d->source_len + 1)))
			return -ENOMEM;
		memcpy(data, d->source, d->source_len + 1);
		if ((error = add_file(p, m, d->file, data, d->source_len)) < 0)
			return error;
	}
	if ((error = add_text(p, m, "__init__.py", report_loader_py)) < 0 ||
	    (error = add_text(p, m, "test_kernel.py", report_test_py)) < 0)
		return error;
	if (!(man = manifest(c)))
		return -ENOMEM;
	if ((error = jsonx_dump(man, JSON_INDENT(2) | JSON_SORT_KEYS, &b)) < 0 ||
	    (error = buf_addch(&b, '\n')) < 0)
		goto out;
	data = buf_detach(&b, &len);
	if ((error = add_file(p, m, "manifest.json", data, len)) < 0)
		goto out;
	if ((error = report_md_body(c, 1, &b)) < 0)
		goto out;
	data = buf_detach(&b, &len);
	error = add_file(p, m, "REPORT.md", data, len);
out:
	json_decref(man);
	buf_free(&b);
	return error;
}

static int
detach_into(struct buf *b, char **out)
{
	size_t len;

	if (!b->data && buf_addstr(b, "") < 0)
		return -ENOMEM;
	*out = buf_detach(b, &len);
	return 0;
}

static int
build_text(const struct report_ctx *c, struct report_pr *p)
{
	const struct report_module *m = c->m;
	const struct report_dir *best = report_best(c, 1);
	struct buf b = BUF_INIT(REPORT_MAX_MD);
	int error;

	if (best) {
		int named = strcmp(best->device, "cpu") != 0;	/* "CPU kernel (cpu)" says nothing */

		char flagged[128];
		char speed[sizeof(flagged) + 64];

		/* an implausible speedup is flagged, never headlined
		 * (docs/design.md, evaluation point 6) */
		if ((p->needs_review = report_flagged(best, flagged, sizeof(flagged))))
			snprintf(speed, sizeof(speed), "verified, flagged for review (%s):", flagged);
		else
			snprintf(speed, sizeof(speed), "%.2fx faster", eval_num_or(best->result->vs_eager.x, 0));
		if ((error = buf_printf(&b, "kernelbot: %s %s for %s%s%s%s%s%s", speed,
		    !strcmp(best->backend, "cuda") ? "CUDA kernel" : "CPU kernel", m->module_path,
		    strcmp(c->cls, "Model") ? ":" : "", strcmp(c->cls, "Model") ? c->cls : "",
		    named ? " (" : "", named ? best->device : "", named ? ")" : "")) < 0 ||
		    (error = detach_into(&b, &p->title)) < 0)
			goto out;
		if ((error = buf_printf(&b, "kernels/%s: verified kernel for %s\n\n"
		    "kernelbot found a kernel for %s (class %s) at %.12s that passed its\n"
		    "correctness trials and %s: ", m->slug, m->module_path,
		    m->module_path, c->cls, m->commit ? m->commit : "?", p->needs_review ?
		    "needs review: its timing was flagged" : "is faster than PyTorch eager")) < 0 ||
		    (error = report_md_headline(best, &b)) < 0 ||
		    (error = buf_addstr(&b, ".\nThe drop-in module falls back to the original where the kernel\n"
		    "cannot run; see kernels/")) < 0 || (error = buf_printf(&b, "%s/REPORT.md.\n", m->slug)) < 0 ||
		    (error = detach_into(&b, &p->message)) < 0)
			goto out;
		if ((error = report_md_headline(best, &b)) < 0 ||
		    (error = detach_into(&b, &p->status_description)) < 0)
			goto out;
	} else {
		const struct report_dir *d = report_best(c, 0);
		const char *status = jsonx_str(d->summary, "status", "?");

		if ((error = buf_printf(&b, "kernelbot: no faster kernel for %s", m->module_path)) < 0 ||
		    (error = detach_into(&b, &p->title)) < 0 ||
		    (error = buf_printf(&b, "kernels/%s: nothing to publish for %s\n", m->slug,
		    m->module_path)) < 0 || (error = detach_into(&b, &p->message)) < 0)
			goto out;
		if (!strcmp(status, "not_faster"))
			error = buf_printf(&b, "no faster kernel: best %.2fx vs eager after %lld candidates (%s)",
			    jsonx_num(d->summary, "best.speedup.eager", 0),
			    jsonx_int(d->summary, "candidates_evaluated", 0),
			    jsonx_str(d->summary, "stop_reason", "?"));
		else if (!strcmp(status, "no_correct"))
			error = buf_printf(&b, "no correct kernel in %lld candidates (%s)",
			    jsonx_int(d->summary, "candidates_evaluated", 0),
			    jsonx_str(d->summary, "stop_reason", "?"));
		else
			error = buf_printf(&b, "not optimized (%s): %.200s", status,
			    jsonx_str(d->summary, "error", "no detail"));
		if (error < 0 || (error = detach_into(&b, &p->status_description)) < 0)
			goto out;
	}
	if ((error = report_md_body(c, 0, &b)) < 0 || (error = detach_into(&b, &p->body)) < 0 ||
	    (error = report_md_comment(c, &b)) < 0 || (error = detach_into(&b, &p->comment)) < 0)
		goto out;
out:
	buf_free(&b);
	return error;
}

static int
identifier(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

int
report_pr_build(const struct report_module *m, struct report_pr *out, char *err,
    size_t errlen)
{
	struct report_dir dirs[REPORT_MAX_DIRS];
	struct report_ctx c = { 0 };
	struct report_pr p = { 0 };
	int error = 0;

	memset(out, 0, sizeof(*out));
	if (!m || !m->module_path || !*m->module_path || !m->slug || !*m->slug)
		return fail(-EINVAL, err, errlen, "report: module_path and slug are required");
	if (strlen(m->slug) > 80 || strspn(m->slug, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(m->slug))
		return fail(-EINVAL, err, errlen, "report: slug \"%s\": not a module slug", m->slug);
	if (!m->optimize_dirs || m->n_dirs == 0 || m->n_dirs > REPORT_MAX_DIRS)
		return fail(-EINVAL, err, errlen, "report: %zu optimize directories (1 to %d)",
		    m->n_dirs, REPORT_MAX_DIRS);
	memset(dirs, 0, sizeof(dirs));
	c.m = m;
	c.cls = m->module_class && *m->module_class ? m->module_class : "Model";
	c.d = dirs;
	c.n = m->n_dirs;
	c.identifier_slug = identifier(m->slug);
	for (size_t i = 0; i < c.n; i++) {
		if (!(dirs[i].path = m->optimize_dirs[i])) {
			error = fail(-EINVAL, err, errlen, "report: optimize directory %zu is NULL", i);
			goto out;
		}
		if ((error = read_dir(&dirs[i], err, errlen)) < 0)
			goto out;
	}
	name_files(&c);
	p.improved = c.n_shipped > 0;
	if (p.improved && (error = build_files(&c, &p)) < 0) {
		fail(error, err, errlen, "report: %s", strerror(-error));
		goto out;
	}
	if ((error = build_text(&c, &p)) < 0) {
		fail(error, err, errlen, "report: %s", strerror(-error));
		goto out;
	}
	*out = p;
	memset(&p, 0, sizeof(p));
out:
	report_pr_free(&p);
	for (size_t i = 0; i < c.n; i++) {
		json_decref(dirs[i].summary);
		json_decref(dirs[i].history);
		eval_cand_clear(&dirs[i].res);
		json_decref(dirs[i].ir);
		free(dirs[i].source);
	}
	return error;
}

void
report_pr_free(struct report_pr *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_files; i++) {
		free((char *)p->files[i].path);
		free((void *)p->files[i].data);
	}
	free(p->files);
	free(p->title);
	free(p->body);
	free(p->comment);
	free(p->message);
	free(p->status_description);
	memset(p, 0, sizeof(*p));
}
