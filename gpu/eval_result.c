/*
 * eval_result: an evaluation result's JSON read once, for every caller
 * above gpu/ (gpu/eval_result.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/eval_result.h"
#include "gpu/flags.h"

static int
bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* The member key of o, NULL when absent or null. */
static const json_t *
member(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_null(v) ? NULL : v;
}

/*
 * The member key of o, checked to be of kind 's' (a string), 'n' (a
 * number), 'b' (true or false) or 'o' (an object): 0 and *v (NULL when
 * absent or null), or -EINVAL naming path.
 */
static int
get(const json_t *o, const char *key, const char *path, char kind, const json_t **v, char *err,
    size_t errlen)
{
	int ok;

	if (!(*v = member(o, key)))
		return 0;
	ok = kind == 's' ? json_is_string(*v) : kind == 'n' ? json_is_number(*v) :
	    kind == 'b' ? json_is_boolean(*v) : json_is_object(*v);
	if (!ok)
		return bad(err, errlen, "%s: not %s", path, kind == 's' ? "a string" :
		    kind == 'n' ? "a number" : kind == 'b' ? "true or false" : "an object");
	return 0;
}

static int
get_str(const json_t *o, const char *key, const char *path, const char **out, char *err,
    size_t errlen)
{
	const json_t *v;
	int error = get(o, key, path, 's', &v, err, errlen);

	*out = v && !error ? json_string_value(v) : NULL;
	return error;
}

static int
get_num(const json_t *o, const char *key, const char *path, double *out, char *err,
    size_t errlen)
{
	const json_t *v;
	int error = get(o, key, path, 'n', &v, err, errlen);

	*out = v && !error ? json_number_value(v) : NAN;
	return error;
}

static int
get_bool(const json_t *o, const char *key, const char *path, int *out, char *err,
    size_t errlen)
{
	const json_t *v;
	int error = get(o, key, path, 'b', &v, err, errlen);

	*out = v && !error && json_is_true(v);
	return error;
}

static int
get_object(const json_t *o, const char *key, const char *path, const json_t **out, char *err,
    size_t errlen)
{
	return get(o, key, path, 'o', out, err, errlen);
}

static int
timing(const json_t *rows, const char *key, struct eval_timing *t, char *err, size_t errlen)
{
	char path[64];
	const json_t *row, *runs;
	int error;

	t->median = t->p10 = t->p90 = NAN;
	t->runs = -1;
	snprintf(path, sizeof(path), "timings_ms.%s", key);
	if ((error = get_object(rows, key, path, &row, err, errlen)) < 0 || !row)
		return error;
	t->present = 1;
	t->json = row;
	snprintf(path, sizeof(path), "timings_ms.%s.median", key);
	if ((error = get_num(row, "median", path, &t->median, err, errlen)) < 0)
		return error;
	snprintf(path, sizeof(path), "timings_ms.%s.p10", key);
	if ((error = get_num(row, "p10", path, &t->p10, err, errlen)) < 0)
		return error;
	snprintf(path, sizeof(path), "timings_ms.%s.p90", key);
	if ((error = get_num(row, "p90", path, &t->p90, err, errlen)) < 0)
		return error;
	if ((runs = member(row, "runs"))) {
		if (!json_is_integer(runs))
			return bad(err, errlen, "timings_ms.%s.runs: not an integer", key);
		t->runs = json_integer_value(runs);
	}
	return 0;
}

static int
speedup(const json_t *sp, const char *key, struct eval_speedup *s, char *err, size_t errlen)
{
	char path[64], ci_key[32];
	const json_t *ci;
	int error;

	s->lo = s->hi = NAN;
	snprintf(path, sizeof(path), "speedup.%s", key);
	if ((error = get_num(sp, key, path, &s->x, err, errlen)) < 0)
		return error;
	snprintf(ci_key, sizeof(ci_key), "%s_ci95", key);
	if (!(ci = member(sp, ci_key)))
		return 0;
	if (json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)) ||
	    !json_is_number(json_array_get(ci, 1)))
		return bad(err, errlen, "speedup.%s: not [lo, hi]", ci_key);
	s->lo = json_number_value(json_array_get(ci, 0));
	s->hi = json_number_value(json_array_get(ci, 1));
	return 0;
}

/* An array of strings (flags, errors) into v[0..n). */
static int
strings(const json_t *a, const char *path, const char **v, char *err, size_t errlen)
{
	const json_t *s;
	size_t i;

	json_array_foreach(a, i, s) {
		if (!json_is_string(s))
			return bad(err, errlen, "%s[%zu]: not a string", path, i);
		v[i] = json_string_value(s);
	}
	return 0;
}

static int
checks(const json_t *a, struct eval_check *v, char *err, size_t errlen)
{
	const json_t *o;
	char path[48];
	size_t i;
	int error, passed;

	json_array_foreach(a, i, o) {
		if (!json_is_object(o))
			return bad(err, errlen, "checks[%zu]: not an object", i);
		snprintf(path, sizeof(path), "checks[%zu].name", i);
		if ((error = get_str(o, "name", path, &v[i].name, err, errlen)) < 0)
			return error;
		snprintf(path, sizeof(path), "checks[%zu].detail", i);
		if ((error = get_str(o, "detail", path, &v[i].detail, err, errlen)) < 0)
			return error;
		snprintf(path, sizeof(path), "checks[%zu].passed", i);
		if ((error = get_bool(o, "passed", path, &passed, err, errlen)) < 0)
			return error;
		v[i].passed = member(o, "passed") ? passed : -1;
	}
	return 0;
}

static int
array_or_none(const json_t *o, const char *key, const json_t **out, char *err, size_t errlen)
{
	const json_t *v = member(o, key);

	*out = v;
	if (v && !json_is_array(v))
		return bad(err, errlen, "%s: not an array", key);
	return 0;
}

/* c with nothing parsed: every number absent */
static void
empty(struct eval_cand *c)
{
	struct eval_timing *t[] = { &c->t_candidate, &c->t_eager, &c->t_compile };

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		t[i]->median = t[i]->p10 = t[i]->p90 = NAN;
		t[i]->runs = -1;
	}
	c->vs_eager.x = c->vs_eager.lo = c->vs_eager.hi = NAN;
	c->vs_compile = c->vs_eager;
	c->max_rel_error = c->eval_s = NAN;
}

static int
parse(const json_t *obj, struct eval_cand *c, char *err, size_t errlen)
{
	const json_t *rows, *sp, *fl, *er, *ck, *seed, *ea = NULL;
	const char **fv, **ev, **av;
	struct eval_check *cv;
	size_t nf, ne, nk, na;
	int error;

	if (!json_is_object(obj))
		return bad(err, errlen, "not a JSON object");
	if ((error = get_str(obj, "candidate", "candidate", &c->candidate, err, errlen)) < 0 ||
	    (error = get_str(obj, "status", "status", &c->status, err, errlen)) < 0 ||
	    (error = get_bool(obj, "correct", "correct", &c->correct, err, errlen)) < 0 ||
	    (error = get_bool(obj, "needs_review", "needs_review", &c->needs_review, err, errlen)) < 0 ||
	    (error = get_str(obj, "backend", "backend", &c->backend, err, errlen)) < 0 ||
	    (error = get_str(obj, "arch", "arch", &c->arch, err, errlen)) < 0 ||
	    (error = get_num(obj, "max_rel_error", "max_rel_error", &c->max_rel_error, err, errlen)) < 0 ||
	    (error = get_num(obj, "eval_s", "eval_s", &c->eval_s, err, errlen)) < 0 ||
	    (error = get_object(obj, "device_info", "device_info", &c->device_info, err, errlen)) < 0 ||
	    (error = get_object(obj, "environment", "environment", &c->environment, err, errlen)) < 0)
		return error;
	if (json_is_object(member(obj, "device")))	/* {"name": ...} */
		error = get_str(member(obj, "device"), "name", "device.name", &c->device, err, errlen);
	else
		error = get_str(obj, "device", "device", &c->device, err, errlen);
	if (error < 0)
		return error;
	if (c->device_info &&
	    ((error = get_str(c->device_info, "name", "device_info.name", &c->device_name, err, errlen)) < 0 ||
	    (error = get_str(c->device_info, "torch", "device_info.torch", &c->torch, err, errlen)) < 0))
		return error;
	if ((error = get_object(obj, "timings_ms", "timings_ms", &rows, err, errlen)) < 0 ||
	    (error = timing(rows, "candidate", &c->t_candidate, err, errlen)) < 0 ||
	    (error = timing(rows, "eager", &c->t_eager, err, errlen)) < 0 ||
	    (error = timing(rows, "compile", &c->t_compile, err, errlen)) < 0)
		return error;
	if ((error = get_object(obj, "speedup", "speedup", &sp, err, errlen)) < 0 ||
	    (error = speedup(sp, "eager", &c->vs_eager, err, errlen)) < 0 ||
	    (error = speedup(sp, "compile", &c->vs_compile, err, errlen)) < 0)
		return error;
	c->timed = rows != NULL;
	c->speedup_json = sp;
	if ((seed = member(obj, "seed"))) {
		if (!json_is_integer(seed))
			return bad(err, errlen, "seed: not an integer");
		c->has_seed = 1;
		c->seed = json_integer_value(seed);
		c->seed_json = seed;
	}
	if ((error = array_or_none(obj, "flags", &fl, err, errlen)) < 0 ||
	    (error = array_or_none(obj, "errors", &er, err, errlen)) < 0 ||
	    (error = array_or_none(obj, "checks", &ck, err, errlen)) < 0)
		return error;
	if (c->environment && (ea = member(c->environment, "eval_args")) && !json_is_array(ea))
		return bad(err, errlen, "environment.eval_args: not an array");
	c->flags_json = fl;
	nf = json_array_size(fl);
	ne = json_array_size(er);
	nk = json_array_size(ck);
	na = json_array_size(ea);
	/* one allocation: the check structs first (the strictest alignment) */
	if (!(c->mem_ = calloc(1, nk * sizeof(*cv) + (nf + ne + na + 1) * sizeof(char *))))
		return -ENOMEM;
	cv = c->mem_;
	fv = (const char **)(void *)(cv + nk);
	ev = fv + nf;
	av = ev + ne;
	if ((error = strings(fl, "flags", fv, err, errlen)) < 0 ||
	    (error = strings(er, "errors", ev, err, errlen)) < 0 ||
	    (error = strings(ea, "environment.eval_args", av, err, errlen)) < 0 ||
	    (error = checks(ck, cv, err, errlen)) < 0)
		return error;
	c->eval_args = ea ? av : NULL;
	c->n_eval_args = na;
	c->flags = fv;
	c->n_flags = nf;
	c->errors = ev;
	c->n_errors = ne;
	c->checks = cv;
	c->n_checks = nk;
	return 0;
}

int
eval_cand_parse(const json_t *obj, struct eval_cand *c, char *err, size_t errlen)
{
	int error;

	empty(c);
	if (errlen)
		err[0] = '\0';
	if ((error = parse(obj, c, err, errlen)) < 0) {
		eval_cand_clear(c);
		return error;
	}
	c->json = json_incref((json_t *)obj);
	return 0;
}

void
eval_cand_clear(struct eval_cand *c)
{
	if (!c)
		return;
	free(c->mem_);
	json_decref(c->json);
	empty(c);
}

int
eval_result_parse(const json_t *arr, struct eval_result *r, char *err, size_t errlen)
{
	char why[256];
	int error;

	r->cand = NULL;
	r->n = 0;
	if (!json_is_array(arr))
		return bad(err, errlen, "the evaluation's result is not an array");
	if (json_array_size(arr) && !(r->cand = calloc(json_array_size(arr), sizeof(*r->cand))))
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(arr); i++) {
		if ((error = eval_cand_parse(json_array_get(arr, i), &r->cand[i], why, sizeof(why))) < 0) {
			eval_result_free(r);
			return error == -EINVAL ? bad(err, errlen, "candidate %zu: %s", i, why) : error;
		}
		r->n++;
	}
	return 0;
}

void
eval_result_free(struct eval_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		eval_cand_clear(&r->cand[i]);
	free(r->cand);
	r->cand = NULL;
	r->n = 0;
}

int
eval_result_all_correct(const struct eval_result *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (!r->cand[i].correct)
			return 0;
	return r->n > 0;
}

const char *
eval_cand_flag(const struct eval_cand *c, unsigned use)
{
	for (size_t i = 0; i < c->n_flags; i++)
		if (eval_flag_use(c->flags[i]) & use)
			return c->flags[i];
	return NULL;
}

const char *
eval_cand_thread(const struct eval_cand *c, const char *var)
{
	const json_t *v = json_object_get(json_object_get(c->environment, "threads"), var);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int
eval_cand_has_flag(const struct eval_cand *c, const char *name)
{
	for (size_t i = 0; i < c->n_flags; i++)
		if (!strcmp(c->flags[i], name))
			return 1;
	return 0;
}
