/*
 * archive_ingest: a `kernelbot optimize --out DIR` directory into the
 * archive. The best kernel's numbers come from best/result.json (the
 * final confirmation evaluation); the other correct candidates' from
 * history.json. Every file path read comes from JSON in the directory,
 * so each is checked to stay inside it.
 */
#include "pipeline/archive/archive.h"
#include "pipeline/archive/archive_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/crypto.h"
#include "common/jsonx.h"

#define MAX_SUMMARY (1u << 20)
#define MAX_RESULT (4u << 20)
#define MAX_HISTORY (64u << 20)
#define MAX_IR (16u << 20)
#define MAX_SLUGS 4096

/* A path inside the directory: relative, no "..", no odd characters. */
static int
safe_rel(const char *p)
{
	if (!p || !*p || *p == '/' || strlen(p) > 256)
		return 0;
	for (const char *s = p; *s; s++)
		if ((unsigned char)*s < 0x20)
			return 0;
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return 0;
	return 1;
}

static int
read_text(const char *dir, const char *rel, char **out, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(ARCHIVE_MAX_SOURCE);
	char path[PATH_MAX];
	int error;

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", dir, rel);
		return -ENAMETOOLONG;
	}
	if ((error = buf_read_file(&b, path)) < 0) {
		snprintf(err, errlen, "%s: %s", path, error == -EFBIG ?
		    "larger than 1 MiB" : strerror(-error));
		buf_free(&b);
		return error;
	}
	if (strlen(buf_cstr(&b)) != b.len) {
		snprintf(err, errlen, "%s: not a text file (NUL bytes)", path);
		buf_free(&b);
		return -EINVAL;
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

/* Load DIR/REL as JSON; -ENOENT quietly when optional and missing. */
static int
read_json(const char *dir, const char *rel, size_t max, int optional,
    json_t **out, char *err, size_t errlen)
{
	char path[PATH_MAX], why[256];
	int error;

	*out = NULL;
	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", dir, rel);
		return -ENAMETOOLONG;
	}
	if (optional && access(path, F_OK) < 0 && errno == ENOENT)
		return -ENOENT;
	if ((error = jsonx_load_file(path, max, out, why, sizeof(why))) < 0)
		snprintf(err, errlen, "%s: %s", path, why);
	return error;
}

/*
 * The arch of the device object history.json carries: its "arch", else
 * its compute capability: "compute_capability" ("9.0", as the harness's
 * info verb says it) or "cc_major"/"cc_minor" (gpu/device.h's fields).
 * NULL when it says none of them.
 */
static const char *
device_arch(const json_t *dev, char *buf, size_t len)
{
	const char *a = jsonx_str(dev, "arch", NULL), *cc;
	long long major = -1, minor = -1;
	int ma, mi;

	if (a)
		return a;
	cc = jsonx_str(dev, "compute_capability", NULL);
	if (cc && sscanf(cc, "%d.%d", &ma, &mi) == 2) {
		major = ma;
		minor = mi;
	} else if (json_is_integer(json_object_get(dev, "cc_major"))) {
		major = jsonx_int(dev, "cc_major", -1);
		minor = jsonx_int(dev, "cc_minor", -1);
	}
	if (major <= 0 || major >= 100 || minor < 0 || minor >= 10)
		return NULL;
	snprintf(buf, len, "sm_%lld%lld", major, minor);
	return buf;
}

/* history.json's candidate with this source sha, or NULL. */
static json_t *
history_by_sha(const json_t *cands, const char *sha)
{
	size_t i;
	json_t *c;

	json_array_foreach(cands, i, c)
		if (!strcmp(jsonx_str(c, "source_sha", ""), sha))
			return c;
	return NULL;
}

static json_t *
history_by_id(const json_t *cands, json_int_t id)
{
	size_t i;
	json_t *c;

	json_array_foreach(cands, i, c)
		if (json_integer_value(json_object_get(c, "id")) == id &&
		    json_is_integer(json_object_get(c, "id")))
			return c;
	return NULL;
}

/* Parents as kernel shas: run-local ids mean nothing outside the run. */
static json_t *
parent_shas(const json_t *cands, const json_t *c)
{
	json_t *arr = json_array(), *p, *pc;
	size_t i;

	json_array_foreach(json_object_get(c, "parents"), i, p) {
		if (!json_is_integer(p) || !(pc = history_by_id(cands, json_integer_value(p))))
			continue;
		json_array_append_new(arr, json_string(jsonx_str(pc, "source_sha", "")));
	}
	return arr;
}

/* The correct candidates of the history other than the best, fastest first. */
static int
cmp_ms(const void *a, const void *b)
{
	double x = jsonx_num(*(json_t *const *)a, "ms", 0),
	    y = jsonx_num(*(json_t *const *)b, "ms", 0);

	return x < y ? -1 : x > y;
}

/* What one problem's kernels share, and the kernels' own parts. */
struct one {
	const char *dir;
	char *source;			/* problem.py */
	const char *name;
	json_t *summary, *result, *history, *ir;
	struct eval_cand best;		/* result parsed */
	const char *backend, *arch, *device;
	char archbuf[16];
	/* up to per_problem kernels */
	size_t n;
	struct archive_kernel *k;
	struct archive_built *b;
	char **kernel;
	json_t **res, **parents;
};

static void
one_free(struct one *o, size_t cap)
{
	for (size_t i = 0; i < cap; i++) {
		if (o->b)
			archive_built_free(&o->b[i]);
		if (o->kernel)
			free(o->kernel[i]);
		if (o->res)
			json_decref(o->res[i]);
		if (o->parents)
			json_decref(o->parents[i]);
	}
	free(o->k);
	free(o->b);
	free(o->kernel);
	free(o->res);
	free(o->parents);
	free(o->source);
	json_decref(o->summary);
	json_decref(o->result);
	eval_cand_clear(&o->best);
	json_decref(o->history);
	json_decref(o->ir);
}

/* Fill kernel slot o->n from a history entry (NULL for none) and its text. */
static void
fill_kernel(struct one *o, const struct archive_provenance *prov,
    const char *module, const json_t *h, char *text, json_t *result)
{
	const json_t *cands = json_object_get(o->history, "candidates");
	struct archive_kernel *k = &o->k[o->n];

	o->kernel[o->n] = text;
	o->res[o->n] = result;
	o->parents[o->n] = h ? parent_shas(cands, h) : NULL;
	k->problem = o->name;
	k->problem_source = o->source;
	k->ir = o->ir;
	k->kernel = text;
	k->result = result;
	k->arch = o->arch;
	k->device = o->device;
	k->proposer = h ? jsonx_str(h, "proposer", NULL) : NULL;
	k->model = h ? jsonx_str(h, "origin.model", NULL) : NULL;
	k->parents = o->parents[o->n];
	k->job = prov->job;
	k->repo = prov->repo;
	k->module = module;
	o->n++;
}

/*
 * A history candidate's result as archive_add() reads results: verdict
 * and median from the history, speedups and flags where it has them.
 */
static json_t *
history_result(const struct one *o, const json_t *h)
{
	json_t *r = json_pack("{s:b, s:s, s:s, s:{s:{s:f}}}", "correct", 1,
	    "status", "correct", "backend", o->backend, "timings_ms", "candidate",
	    "median", jsonx_num(h, "ms", NAN));

	if (r && json_object_get(h, "speedup"))
		json_object_set(r, "speedup", json_object_get(h, "speedup"));
	if (r && json_object_get(h, "flags"))
		json_object_set(r, "flags", json_object_get(h, "flags"));
	return r;
}

/*
 * After the best (o->k[0]), the problem's other correct candidates in
 * history cands, fastest first, one per source, until o holds cap: each
 * read from o->dir's candidates/ and kept only when its text hashes to
 * the source_sha the history gives it. Those refused are counted in st.
 * 0, or -ENOMEM.
 */
static int
add_others(struct one *o, const struct archive_provenance *prov, const char *module,
    const json_t *cands, const char *best_sha, size_t cap, struct archive_ingest_stats *st)
{
	json_t *h, **others = NULL;
	size_t nothers = 0, i;
	char *text = NULL, why[512];

	if (json_array_size(cands) &&
	    !(others = calloc(json_array_size(cands), sizeof(*others))))
		return -ENOMEM;
	json_array_foreach(cands, i, h)
		if (json_is_true(json_object_get(h, "correct")) &&
		    !strcmp(jsonx_str(h, "status", ""), "correct") &&
		    jsonx_num(h, "ms", 0) > 0 && strcmp(jsonx_str(h, "source_sha", ""), best_sha))
			others[nothers++] = h;
	if (nothers)
		qsort(others, nothers, sizeof(*others), cmp_ms);
	for (i = 0; i < nothers && o->n < cap; i++) {
		const char *rel = jsonx_str(others[i], "file", "");
		char csha[CRYPTO_SHA256_HEX];
		size_t j;

		for (j = 0; j < i && strcmp(jsonx_str(others[j], "source_sha", ""),
		    jsonx_str(others[i], "source_sha", "")); j++)
			;
		if (j < i)
			continue;	/* the same source evaluated twice */
		if (!safe_rel(rel) || strncmp(rel, "candidates/", 11) ||
		    read_text(o->dir, rel, &text, why, sizeof(why)) < 0) {
			st->refused++;
			continue;
		}
		crypto_sha256_hex(text, strlen(text), csha);
		if (strcmp(csha, jsonx_str(others[i], "source_sha", csha))) {
			free(text);
			text = NULL;
			st->refused++;
			continue;
		}
		fill_kernel(o, prov, module, others[i], text, history_result(o, others[i]));
		text = NULL;
		if (archive_build(&o->k[o->n - 1], &o->b[o->n - 1], why, sizeof(why)) < 0) {
			/* Not stored: take the slot back. */
			o->n--;
			free(o->kernel[o->n]);
			json_decref(o->res[o->n]);
			json_decref(o->parents[o->n]);
			o->kernel[o->n] = NULL;
			o->res[o->n] = o->parents[o->n] = NULL;
			st->refused++;
		}
	}
	free(others);
	return 0;
}

static int
ingest_one(struct store *s, const char *dir, const char *slug,
    const struct archive_provenance *prov, struct archive_ingest_stats *st,
    char *err, size_t errlen)
{
	struct one o = { .dir = dir };
	const json_t *best, *cands;
	const char *best_rel, *module, *p;
	char sha[CRYPTO_SHA256_HEX], why[512], name[128];
	size_t cap = prov->per_problem > 0 ? (size_t)prov->per_problem :
	    ARCHIVE_DEFAULT_PER_PROBLEM, i;
	int error, *res = NULL;
	char *text = NULL;

	st->problems++;
	if ((error = read_json(dir, "summary.json", MAX_SUMMARY, 0, &o.summary, err,
	    errlen)) < 0)
		goto out;
	best = json_object_get(o.summary, "best");
	/* a flagged best waits for review: never an exemplar */
	if (!json_is_object(best) || !strcmp(jsonx_str(o.summary, "status", ""), "needs_review")) {
		st->skipped++;
		error = 0;
		goto out;
	}
	best_rel = jsonx_str(best, "path", "");
	if (!safe_rel(best_rel) || strncmp(best_rel, "best/", 5)) {
		snprintf(err, errlen, "%s/summary.json: best.path \"%.80s\" is not a file "
		    "under best/", dir, best_rel);
		error = -EINVAL;
		goto out;
	}
	if ((error = read_text(dir, "problem.py", &o.source, err, errlen)) < 0 ||
	    (error = read_json(dir, "best/result.json", MAX_RESULT, 0, &o.result, err,
	    errlen)) < 0)
		goto out;
	error = read_json(dir, "history.json", MAX_HISTORY, 1, &o.history, err, errlen);
	if (error < 0 && error != -ENOENT)
		goto out;
	if (prov->ir) {
		o.ir = json_incref((json_t *)prov->ir);
	} else {
		error = read_json(dir, "ir.json", MAX_IR, 1, &o.ir, err, errlen);
		if (error < 0 && error != -ENOENT)
			goto out;
		/* The trace's reply ({"ir": ...}) or the IR itself. */
		if (o.ir && json_is_object(json_object_get(o.ir, "ir"))) {
			json_t *inner = json_incref(json_object_get(o.ir, "ir"));

			json_decref(o.ir);
			o.ir = inner;
		}
	}
	if ((error = eval_cand_parse(o.result, &o.best, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s/best/result.json: %s", dir, error == -EINVAL ? why :
		    strerror(-error));
		goto out;
	}
	o.backend = jsonx_str(o.summary, "backend", o.best.backend ? o.best.backend : "?");
	o.device = jsonx_str(o.history, "device.name", NULL);
	if (!o.device)
		o.device = o.best.device;
	o.arch = prov->arch ? prov->arch : !strcmp(o.backend, "cpu") ? "cpu" :
	    device_arch(json_object_get(o.history, "device"), o.archbuf, sizeof(o.archbuf));
	if (!o.arch) {
		snprintf(err, errlen, "%s: history.json's device does not say its GPU "
		    "architecture; give it (--arch sm_90)", dir);
		error = -EINVAL;
		goto out;
	}
	module = prov->module ? prov->module : jsonx_str(o.summary, "module", NULL);
	if (slug) {
		o.name = slug;
	} else {
		p = strrchr(jsonx_str(o.summary, "problem", "problem"), '/');
		snprintf(name, sizeof(name), "%s", p ? p + 1 : jsonx_str(o.summary,
		    "problem", "problem"));
		if (strlen(name) > 3 && !strcmp(name + strlen(name) - 3, ".py"))
			name[strlen(name) - 3] = '\0';
		o.name = name;
	}
	if (!(o.k = calloc(cap, sizeof(*o.k))) || !(o.b = calloc(cap, sizeof(*o.b))) ||
	    !(o.kernel = calloc(cap, sizeof(*o.kernel))) ||
	    !(o.res = calloc(cap, sizeof(*o.res))) ||
	    !(o.parents = calloc(cap, sizeof(*o.parents))) ||
	    !(res = calloc(cap, sizeof(*res)))) {
		error = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	cands = json_object_get(o.history, "candidates");
	if ((error = read_text(dir, best_rel, &text, err, errlen)) < 0)
		goto out;
	crypto_sha256_hex(text, strlen(text), sha);
	fill_kernel(&o, prov, module, history_by_sha(cands, sha), text,
	    json_incref(o.result));
	text = NULL;
	if ((error = archive_build(&o.k[0], &o.b[0], why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s/%s: %s", dir, best_rel, why);
		goto out;
	}
	/* The other correct candidates, fastest first, while there is room. */
	if ((error = add_others(&o, prov, module, cands, sha, cap, st)) < 0)
		goto out;
	{
		struct store_archive_entry *e = calloc(o.n, sizeof(*e));

		if (!e) {
			error = -ENOMEM;
			goto out;
		}
		for (i = 0; i < o.n; i++)
			e[i] = o.b[i].e;
		error = store_archive_add(s, e, o.n, res, NULL);
		free(e);
	}
	if (error < 0) {
		snprintf(err, errlen, "%s: the store: %s", dir, store_errmsg(s));
		goto out;
	}
	for (i = 0; i < o.n; i++) {
		if (res[i] == -EEXIST)
			st->duplicates++;
		else
			st->added++;
	}
out:
	if (error == -ENOMEM && err[0] == '\0')
		snprintf(err, errlen, "out of memory");
	free(text);
	free(res);
	one_free(&o, cap);
	return error;
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
archive_ingest_optimize_dir(struct store *s, const char *dir,
    const struct archive_provenance *prov, struct archive_ingest_stats *stats,
    char *err, size_t errlen)
{
	struct archive_provenance none = ARCHIVE_PROVENANCE_INIT;
	struct archive_ingest_stats st = { 0 };
	char path[PATH_MAX], **slugs = NULL;
	size_t n = 0;
	struct dirent *d;
	struct stat sb;
	DIR *dh = NULL;
	int error = 0;

	err[0] = '\0';
	if (!prov)
		prov = &none;
	if (snprintf(path, sizeof(path), "%s/summary.json", dir) >= (int)sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (stat(path, &sb) == 0) {
		error = ingest_one(s, dir, NULL, prov, &st, err, errlen);
		goto out;
	}
	/* A repository's run: one directory per module slug. */
	if (!(dh = opendir(dir))) {
		error = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if (!(slugs = calloc(MAX_SLUGS, sizeof(*slugs)))) {
		error = -ENOMEM;
		goto out;
	}
	while ((d = readdir(dh)) && n < MAX_SLUGS) {
		if (d->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s/summary.json",
		    dir, d->d_name) >= (int)sizeof(path) || stat(path, &sb) < 0)
			continue;
		if (!(slugs[n] = strdup(d->d_name))) {
			error = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: no summary.json, neither here nor in a "
		    "subdirectory: not a `kernelbot optimize --out` directory", dir);
		error = -ENOENT;
		goto out;
	}
	qsort(slugs, n, sizeof(*slugs), cmp_name);
	for (size_t i = 0; i < n && error == 0; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, slugs[i]) >= (int)sizeof(path)) {
			snprintf(err, errlen, "%s/%s: path too long", dir, slugs[i]);
			error = -ENAMETOOLONG;
			break;
		}
		error = ingest_one(s, path, slugs[i], prov, &st, err, errlen);
	}
out:
	if (error == -ENOMEM && err[0] == '\0')
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; slugs && i < n; i++)
		free(slugs[i]);
	free(slugs);
	if (dh)
		closedir(dh);
	if (stats)
		*stats = st;
	return error;
}
