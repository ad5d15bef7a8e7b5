/*
 * archive_entry: what makes an archive entry valid, archive_add() from an
 * evaluator result, and the JSONL export and import. One validator,
 * entry_check(), serves archive_add() and import alike, so an imported
 * line is held to the same rules as a kernel the bot verified itself.
 */
#include "pipeline/archive/archive.h"
#include "pipeline/archive/archive_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "gpu/flags.h"
#include "common/buf.h"
#include "common/crypto.h"
#include "common/jsonx.h"

#define MAX_NAME 256	/* bytes of problem, arch, device, proposer, model, repo, module */

static int
is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* "sm_90", "sm_90a", "sm_100" for cuda; "cpu" for cpu. */
static int
arch_ok(const char *backend, const char *arch)
{
	const char *p;

	if (!strcmp(backend, "cpu"))
		return !strcmp(arch, "cpu");
	if (strncmp(arch, "sm_", 3))
		return 0;
	for (p = arch + 3; *p >= '0' && *p <= '9'; p++)
		;
	return p - arch >= 5 && p - arch <= 6 && (!*p || (p[0] >= 'a' && p[0] <= 'z' && !p[1]));
}

/* Op names: lowercase words and digits with '_', space-separated. */
static int
ops_ok(const char *ops)
{
	for (const char *p = ops; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		    *p == ' '))
			return 0;
	return 1;
}

static int
short_text(const char *s, int required)
{
	return s ? strlen(s) <= MAX_NAME && (!required || *s) : !required;
}

/* Is a field that should hold JSON of type `type` that (or absent)? */
static int
json_text_ok(const char *text, json_type type)
{
	json_t *v;
	int ok;

	if (!text)
		return 1;
	v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	ok = v && json_typeof(v) == type;
	json_decref(v);
	return ok;
}

/* Valid UTF-8 (or absent): what JSON, and so an export, can carry. */
static int
utf8_ok(const char *s)
{
	json_t *v;

	if (!s)
		return 1;
	v = json_string(s);
	json_decref(v);
	return v != NULL;
}

static int
entry_check(const struct store_archive_entry *e, char *err, size_t errlen)
{
	char sha[CRYPTO_SHA256_HEX];
	const char *bad = NULL;
	const char *const texts[] = { e->problem, e->problem_source, e->kernel,
		e->device, e->proposer, e->model, e->repo, e->module, e->shape_class };

	if (!short_text(e->problem, 1))
		bad = "problem: a name of 1 to 256 bytes is required";
	else if (!e->problem_source || !*e->problem_source ||
	    strlen(e->problem_source) > ARCHIVE_MAX_SOURCE)
		bad = "problem_source: the problem's text (at most 1 MiB) is required";
	else if (!e->kernel || !*e->kernel || strlen(e->kernel) > ARCHIVE_MAX_SOURCE)
		bad = "kernel: the kernel's source (at most 1 MiB) is required";
	else if (!e->backend || (strcmp(e->backend, "cpu") && strcmp(e->backend, "cuda")))
		bad = "backend: \"cpu\" or \"cuda\" is required";
	else if (!e->arch || !arch_ok(e->backend, e->arch))
		bad = "arch: \"cpu\" for the cpu backend, sm_NN (\"sm_90\") for cuda";
	else if (!isfinite(e->ms) || e->ms <= 0)
		bad = "ms: the kernel's median time, a positive number, is required";
	else if (e->ops && (!ops_ok(e->ops) || strlen(e->ops) > BUF_MAX_SMALL))
		bad = "ops: op names (lowercase, '_'), space-separated";
	else if (e->shape_class && strlen(e->shape_class) > MAX_NAME)
		bad = "shape_class: at most 256 bytes";
	else if (!short_text(e->device, 0) || !short_text(e->proposer, 0) ||
	    !short_text(e->model, 0) || !short_text(e->repo, 0) || !short_text(e->module, 0))
		bad = "device, proposer, model, repo and module: at most 256 bytes each";
	else if (!json_text_ok(e->parents, JSON_ARRAY))
		bad = "parents: a JSON array";
	else if (!json_text_ok(e->ir, JSON_OBJECT))
		bad = "ir: a graph IR object";
	else if (e->job < 0)
		bad = "job: a job id";
	for (size_t i = 0; !bad && i < sizeof(texts) / sizeof(texts[0]); i++)
		if (!utf8_ok(texts[i]))
			bad = "texts must be UTF-8 (the problem, the kernel, the names)";
	if (bad) {
		snprintf(err, errlen, "%s", bad);
		return -EINVAL;
	}
	crypto_sha256_hex(e->problem_source, strlen(e->problem_source), sha);
	if (e->problem_sha && strcmp(e->problem_sha, sha)) {
		snprintf(err, errlen, "problem_sha %.64s is not the SHA-256 of problem_source",
		    e->problem_sha);
		return -EINVAL;
	}
	crypto_sha256_hex(e->kernel, strlen(e->kernel), sha);
	if (e->kernel_sha && strcmp(e->kernel_sha, sha)) {
		snprintf(err, errlen, "kernel_sha %.64s is not the SHA-256 of kernel",
		    e->kernel_sha);
		return -EINVAL;
	}
	return 0;
}

/* ---- archive_add ---- */

/*
 * The evaluator's verdict, parsed into *r (eval_cand_clear() it): correct,
 * and no flag that voids its timings.
 */
static int
result_verified(const json_t *obj, struct eval_cand *r, char *err, size_t errlen)
{
	const char *flag;
	char why[256];
	int error;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "no evaluator result");
		return -EINVAL;
	}
	if ((error = eval_cand_parse(obj, r, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "the evaluator's result: %s", error == -EINVAL ? why :
		    strerror(-error));
		return error;
	}
	if (!r->correct || !r->status || strcmp(r->status, "correct")) {
		snprintf(err, errlen, "not a verified kernel: the evaluator's status is "
		    "\"%s\", correct %s", r->status ? r->status : "(none)",
		    r->correct ? "true" : "not true");
		return -EINVAL;
	}
	if ((flag = eval_cand_flag(r, EVAL_FLAG_DISTRUSTED))) {
		snprintf(err, errlen, "the evaluator flagged the kernel %s: "
		    "its times are not archived", flag);
		return -EINVAL;
	}
	return 0;
}

void
archive_built_free(struct archive_built *b)
{
	free(b->ops);
	free(b->shape);
	free(b->ir);
	free(b->parents);
	eval_cand_clear(&b->result);
	memset(b, 0, sizeof(*b));
}

int
archive_build(const struct archive_kernel *k, struct archive_built *b,
    char *err, size_t errlen)
{
	struct store_archive_entry *e = &b->e;
	struct eval_cand *r = &b->result;
	int error;

	memset(b, 0, sizeof(*b));
	if ((error = result_verified(k->result, r, err, errlen)) < 0 ||
	    (k->parents && !json_is_array(k->parents))) {
		if (!error)
			snprintf(err, errlen, "parents: a JSON array");
		archive_built_free(b);
		return error ? error : -EINVAL;
	}
	e->backend = (char *)r->backend;
	e->arch = (char *)(k->arch ? k->arch : e->backend && !strcmp(e->backend, "cpu") ?
	    "cpu" : NULL);
	e->problem = (char *)k->problem;
	e->problem_source = (char *)k->problem_source;
	e->kernel = (char *)k->kernel;
	e->device = (char *)(k->device ? k->device : r->device);
	e->ms = r->t_candidate.median;
	e->eager_ms = r->t_eager.median;
	e->compile_ms = r->t_compile.median;
	e->speedup_eager = r->vs_eager.x;
	e->speedup_eager_lo = r->vs_eager.lo;
	e->speedup_eager_hi = r->vs_eager.hi;
	e->speedup_compile = r->vs_compile.x;
	e->speedup_compile_lo = r->vs_compile.lo;
	e->speedup_compile_hi = r->vs_compile.hi;
	e->proposer = (char *)k->proposer;
	e->model = (char *)k->model;
	e->job = k->job;
	e->repo = (char *)k->repo;
	e->module = (char *)k->module;
	if ((error = entry_check(e, err, errlen)) < 0) {
		archive_built_free(b);
		return error;
	}
	crypto_sha256_hex(e->problem_source, strlen(e->problem_source), b->psha);
	crypto_sha256_hex(e->kernel, strlen(e->kernel), b->ksha);
	e->problem_sha = b->psha;
	e->kernel_sha = b->ksha;
	if ((error = archive_op_signature(k->ir, &b->ops, &b->shape)) < 0 ||
	    (k->ir && !(b->ir = json_dumps(k->ir, JSON_COMPACT))) ||
	    (k->parents && !(b->parents = json_dumps(k->parents, JSON_COMPACT)))) {
		archive_built_free(b);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->ops = b->ops;
	e->shape_class = b->shape;
	e->ir = b->ir;
	e->parents = b->parents;
	return 0;
}

int
archive_add(struct store *s, const struct archive_kernel *k, int64_t *id,
    char *err, size_t errlen)
{
	struct archive_built b;
	int64_t got = 0;
	int error, res = 0;

	if ((error = archive_build(k, &b, err, errlen)) < 0)
		return error;
	if ((error = store_archive_add(s, &b.e, 1, &res, &got)) < 0) {
		snprintf(err, errlen, "the store: %s", store_errmsg(s));
		goto out;
	}
	if (res == -EEXIST)
		snprintf(err, errlen, "already archived as %lld", (long long)got);
	if (id)
		*id = got;
	error = res;
out:
	archive_built_free(&b);
	return error;
}

/* ---- JSON lines ---- */

static json_t *
num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *
parsed_or_null(const char *text)
{
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;

	return v ? v : json_null();
}

json_t *
archive_entry_json(const struct store_archive_entry *e)
{
	json_t *o = json_object();
	struct { const char *key; json_t *v; } f[] = {
		{ "id", json_integer(e->id) },
		{ "created", json_integer(e->created) },
		{ "problem", str_or_null(e->problem) },
		{ "problem_source", str_or_null(e->problem_source) },
		{ "problem_sha", str_or_null(e->problem_sha) },
		{ "ops", str_or_null(e->ops) },
		{ "shape_class", str_or_null(e->shape_class) },
		{ "ir", parsed_or_null(e->ir) },
		{ "backend", str_or_null(e->backend) },
		{ "arch", str_or_null(e->arch) },
		{ "device", str_or_null(e->device) },
		{ "kernel", str_or_null(e->kernel) },
		{ "kernel_sha", str_or_null(e->kernel_sha) },
		{ "ms", num_or_null(e->ms) },
		{ "eager_ms", num_or_null(e->eager_ms) },
		{ "compile_ms", num_or_null(e->compile_ms) },
		{ "speedup_eager", num_or_null(e->speedup_eager) },
		{ "speedup_eager_lo", num_or_null(e->speedup_eager_lo) },
		{ "speedup_eager_hi", num_or_null(e->speedup_eager_hi) },
		{ "speedup_compile", num_or_null(e->speedup_compile) },
		{ "speedup_compile_lo", num_or_null(e->speedup_compile_lo) },
		{ "speedup_compile_hi", num_or_null(e->speedup_compile_hi) },
		{ "proposer", str_or_null(e->proposer) },
		{ "model", str_or_null(e->model) },
		{ "parents", parsed_or_null(e->parents) },
		{ "job", e->job ? json_integer(e->job) : json_null() },
		{ "repo", str_or_null(e->repo) },
		{ "module", str_or_null(e->module) },
	};
	int bad = !o;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!f[i].v || (o && json_object_set_new(o, f[i].key, f[i].v) < 0))
			bad = 1;
		else if (!o)
			json_decref(f[i].v);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * A line's object into an entry whose strings are borrowed from it (ir and
 * parents are re-serialized into *ir / *parents, the caller frees). Every
 * known key must have its type; unknown keys are errors too, so a typo in
 * a hand-edited file is found.
 */
static int
entry_from_json(const json_t *o, struct store_archive_entry *e, char **ir,
    char **parents, char *err, size_t errlen)
{
	static const char *const strs[] = { "problem", "problem_source",
		"problem_sha", "ops", "shape_class", "backend", "arch", "device",
		"kernel", "kernel_sha", "proposer", "model", "repo", "module", NULL };
	static const char *const nums[] = { "ms", "eager_ms", "compile_ms",
		"speedup_eager", "speedup_eager_lo", "speedup_eager_hi",
		"speedup_compile", "speedup_compile_lo", "speedup_compile_hi", NULL };
	char **sf[] = { &e->problem, &e->problem_source, &e->problem_sha, &e->ops,
		&e->shape_class, &e->backend, &e->arch, &e->device, &e->kernel,
		&e->kernel_sha, &e->proposer, &e->model, &e->repo, &e->module };
	double *nf[] = { &e->ms, &e->eager_ms, &e->compile_ms, &e->speedup_eager,
		&e->speedup_eager_lo, &e->speedup_eager_hi, &e->speedup_compile,
		&e->speedup_compile_lo, &e->speedup_compile_hi };
	const char *key;
	json_t *v;

	memset(e, 0, sizeof(*e));
	*ir = *parents = NULL;
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	for (size_t i = 0; nums[i]; i++)
		*nf[i] = NAN;
	json_object_foreach((json_t *)o, key, v) {
		size_t i;
		int known = 0;

		for (i = 0; strs[i] && !known; i++)
			if (!strcmp(key, strs[i])) {
				known = 1;
				if (!json_is_string(v) && !json_is_null(v))
					goto type;
				*sf[i] = (char *)json_string_value(v);
			}
		for (i = 0; nums[i] && !known; i++)
			if (!strcmp(key, nums[i])) {
				known = 1;
				if (!json_is_number(v) && !json_is_null(v))
					goto type;
				*nf[i] = json_is_number(v) ? json_number_value(v) : NAN;
			}
		if (known)
			continue;
		if (!strcmp(key, "id") || !strcmp(key, "created") || !strcmp(key, "job")) {
			if (!json_is_integer(v) && !(json_is_null(v) && strcmp(key, "id")))
				goto type;
			if (!strcmp(key, "created"))
				e->created = json_integer_value(v);
			else if (!strcmp(key, "job"))
				e->job = json_is_integer(v) ? json_integer_value(v) : 0;
		} else if (!strcmp(key, "ir") || !strcmp(key, "parents")) {
			char **dst = !strcmp(key, "ir") ? ir : parents;

			if (json_is_null(v))
				continue;
			if (!(json_is_object(v) && dst == ir) && !(json_is_array(v) && dst == parents))
				goto type;
			if (!(*dst = json_dumps(v, JSON_COMPACT))) {
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
		} else {
			snprintf(err, errlen, "unknown key \"%.64s\"", key);
			return -EINVAL;
		}
		continue;
type:
		snprintf(err, errlen, "%s: wrong type (%s)", key,
		    json_is_string(v) ? "a string" : json_is_number(v) ? "a number" :
		    json_is_null(v) ? "null" : "an object, array or boolean");
		return -EINVAL;
	}
	if (e->created < 0) {
		snprintf(err, errlen, "created: seconds since the epoch");
		return -EINVAL;
	}
	if (!e->problem_sha || !is_hex64(e->problem_sha) || !e->kernel_sha ||
	    !is_hex64(e->kernel_sha)) {
		snprintf(err, errlen, "problem_sha and kernel_sha: 64 lowercase hex digits each");
		return -EINVAL;
	}
	return entry_check(e, err, errlen);
}

struct export_ctx {
	FILE *f;
	size_t n;
	int64_t bad_id;		/* the kernel that could not be made JSON */
};

static int
export_one(const struct store_archive_entry *e, void *arg)
{
	struct export_ctx *x = arg;
	json_t *o = archive_entry_json(e);
	int error = 0;

	if (!o) {
		x->bad_id = e->id;
		return -EILSEQ;
	}
	/* One line per kernel: compact, and newlines in the texts escaped. */
	if (json_dumpf(o, x->f, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0 ||
	    fputc('\n', x->f) == EOF)
		error = -EIO;
	else
		x->n++;
	json_decref(o);
	return error;
}

int
archive_export(struct store *s, FILE *f, size_t *n, char *err, size_t errlen)
{
	struct export_ctx x = { f, 0, 0 };
	int error;

	if ((error = store_archive_each(s, export_one, &x)) < 0) {
		if (error == -EILSEQ)
			snprintf(err, errlen, "kernel %lld cannot be written as JSON (not UTF-8, "
			    "or out of memory)", (long long)x.bad_id);
		else if (error == -EIO && ferror(f))
			snprintf(err, errlen, "cannot write the export");
		else
			snprintf(err, errlen, "%s", store_errmsg(s));
		return error;
	}
	if (fflush(f) == EOF) {
		snprintf(err, errlen, "cannot write the export");
		return -EIO;
	}
	if (n)
		*n = x.n;
	return 0;
}

/*
 * Read the next line into b (without its newline). 1 for a line, 0 at the
 * end, -EFBIG past ARCHIVE_MAX_LINE, -EIO.
 */
static int
next_line(FILE *f, struct buf *b)
{
	char chunk[8192];
	int got = 0;

	buf_reset(b);
	while (fgets(chunk, sizeof(chunk), f)) {
		size_t n = strlen(chunk);
		int end = n && chunk[n - 1] == '\n';

		got = 1;
		if (buf_add(b, chunk, n - end) < 0)
			return -EFBIG;
		if (end)
			return 1;
	}
	if (ferror(f))
		return -EIO;
	return got;
}

static int
blank(const char *s)
{
	return s[strspn(s, " \t\r")] == '\0';
}

/* One pass over the file: validate (batch NULL) or insert through batch. */
struct import_batch {
	json_t *obj[ARCHIVE_IMPORT_BATCH];
	struct store_archive_entry e[ARCHIVE_IMPORT_BATCH];
	char *ir[ARCHIVE_IMPORT_BATCH], *parents[ARCHIVE_IMPORT_BATCH];
	int res[ARCHIVE_IMPORT_BATCH];
	size_t n;
};

static void
batch_clear(struct import_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		json_decref(b->obj[i]);
		free(b->ir[i]);
		free(b->parents[i]);
	}
	b->n = 0;
}

static int
batch_flush(struct store *s, struct import_batch *b,
    struct archive_import_stats *st, char *err, size_t errlen)
{
	int error = 0;

	if (b->n && (error = store_archive_add(s, b->e, b->n, b->res, NULL)) < 0)
		snprintf(err, errlen, "the store: %s", store_errmsg(s));
	for (size_t i = 0; i < b->n && error == 0; i++) {
		if (b->res[i] == -EEXIST)
			st->duplicates++;
		else
			st->added++;
	}
	batch_clear(b);
	return error;
}

static int
import_pass(struct store *s, FILE *f, const char *name, struct import_batch *b,
    struct archive_import_stats *st, char *err, size_t errlen)
{
	struct buf line = BUF_INIT(ARCHIVE_MAX_LINE);
	char why[512];
	size_t lineno = 0;
	int rc, error = 0;

	while ((rc = next_line(f, &line)) > 0) {
		struct store_archive_entry e;
		char *ir = NULL, *parents = NULL;
		json_t *o = NULL;

		lineno++;
		if (blank(buf_cstr(&line)))
			continue;
		if ((error = jsonx_parse(buf_cstr(&line), line.len, &o, why, sizeof(why))) < 0 ||
		    (error = entry_from_json(o, &e, &ir, &parents, why, sizeof(why))) < 0) {
			snprintf(err, errlen, "%s:%zu: %s", name, lineno, why);
			json_decref(o);
			free(ir);
			free(parents);
			goto out;
		}
		st->lines++;
		if (!b) {
			json_decref(o);
			free(ir);
			free(parents);
			continue;
		}
		e.ir = ir;
		e.parents = parents;
		b->obj[b->n] = o;
		b->ir[b->n] = ir;
		b->parents[b->n] = parents;
		b->e[b->n++] = e;
		if (b->n == ARCHIVE_IMPORT_BATCH &&
		    (error = batch_flush(s, b, st, err, errlen)) < 0)
			goto out;
	}
	if (rc < 0) {
		error = rc == -EFBIG ? -EINVAL : rc;
		snprintf(err, errlen, "%s:%zu: %s", name, lineno + 1, rc == -EFBIG ?
		    "line longer than 8 MiB" : "read error");
		goto out;
	}
	if (b)
		error = batch_flush(s, b, st, err, errlen);
out:
	if (b)
		batch_clear(b);
	buf_free(&line);
	return error;
}

int
archive_import(struct store *s, FILE *f, const char *name,
    struct archive_import_stats *stats, char *err, size_t errlen)
{
	struct archive_import_stats st = { 0 };
	struct import_batch *b;
	int error;

	if ((error = import_pass(s, f, name, NULL, &st, err, errlen)) < 0)
		return error;
	if (fseek(f, 0, SEEK_SET) < 0) {
		snprintf(err, errlen, "%s: not a regular file (import reads it twice)", name);
		return -ESPIPE;
	}
	if (!(b = calloc(1, sizeof(*b)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(&st, 0, sizeof(st));
	error = import_pass(s, f, name, b, &st, err, errlen);
	free(b);
	if (stats)
		*stats = st;
	return error;
}
