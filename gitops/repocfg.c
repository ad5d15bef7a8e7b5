/*
 * gitops/repocfg.c: .kernelbot.yml validation. The YAML comes through
 * common/yamldoc, which keeps the line of every node for the errors here.
 */
#include "gitops/repocfg.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/yamldoc.h"

struct repocfg {
	json_t *root;
};

struct ctx {
	const struct yamldoc *doc;
	char *err;
	size_t errlen;
};

/* "NAME:LINE: KEY: reason" (":LINE" left out when unknown). */
static int
cfg_error(struct ctx *x, int line, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
cfg_error(struct ctx *x, int line, const char *key, const char *fmt, ...)
{
	char msg[512], where[32] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(where, sizeof(where), ":%d", line);
	if (x->err && x->errlen)
		snprintf(x->err, x->errlen, "%s%s: %s%s%s",
		    yamldoc_name(x->doc), where, key ? key : "", key ? ": " : "",
		    msg);
	return -EINVAL;
}

static int
member_line(struct ctx *x, const json_t *parent, const char *key)
{
	int line = yamldoc_member_line(x->doc, parent, key);

	return line ? line : yamldoc_line(x->doc, parent);
}

static int
valid_identifier(const char *s)
{
	if (!s || !*s || strlen(s) > REPOCFG_MAX_NAME ||
	    !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/*
 * An entry point's function: a name of the module file, or "MODULE:NAME",
 * a function of another module on the module's path (dotted names).
 */
static int
valid_function(const char *s)
{
	const char *colon = s ? strchr(s, ':') : NULL, *p = s, *end;
	char part[REPOCFG_MAX_NAME + 1];

	if (!colon)
		return valid_identifier(s);
	if ((size_t)(colon - s) > REPOCFG_MAX_NAME || !valid_identifier(colon + 1))
		return 0;
	for (;;) {
		end = memchr(p, '.', (size_t)(colon - p));
		snprintf(part, sizeof(part), "%.*s", (int)((end ? end : colon) - p), p);
		if (!valid_identifier(part))
			return 0;
		if (!end)
			return 1;
		p = end + 1;
	}
}

/* A repository-relative path: no leading '/', no '.' or '..' segments. */
static int
valid_rel_path(const char *p)
{
	const char *seg = p;

	if (!p || !*p || *p == '/' || strlen(p) >= 4096)
		return 0;
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);

		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (!end)
			return 1;
		seg = end + 1;
	}
}

static int
valid_prefix(const char *p)
{
	size_t n = p ? strlen(p) : 0;

	if (n == 0 || n > 64 || p[0] == '/' || p[0] == '-' || p[0] == '.' ||
	    strstr(p, "..") || strstr(p, "//") || strstr(p, "/.") ||
	    strstr(p, "@{"))
		return 0;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '/' || *p == '-' ||
		    *p == '_' || *p == '.'))
			return 0;
	return 1;
}

/* Reject members of obj not in the NULL-terminated list allowed. */
static int
check_keys(struct ctx *x, const json_t *obj, const char *where,
    const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		int ok = 0;
		char name[300];

		for (const char *const *a = allowed; *a; a++)
			if (!strcmp(*a, key))
				ok = 1;
		if (!ok) {
			snprintf(name, sizeof(name), "%s%s%s", where,
			    *where ? "." : "", key);
			return cfg_error(x, member_line(x, obj, key), name,
			    "unknown key");
		}
	}
	return 0;
}

static int
string_list(struct ctx *x, const json_t *parent, const char *key, json_t **out)
{
	json_t *v = json_object_get(parent, key), *arr, *it;
	size_t i;

	if (!v || json_is_null(v)) {
		*out = json_array();
		return 0;
	}
	if (!json_is_array(v))
		return cfg_error(x, member_line(x, parent, key), key,
		    "must be a list of strings");
	if (json_array_size(v) > REPOCFG_MAX_LIST)
		return cfg_error(x, member_line(x, parent, key), key,
		    "more than %d entries", REPOCFG_MAX_LIST);
	arr = json_array();
	json_array_foreach(v, i, it) {
		if (!json_is_string(it) || !json_string_length(it) ||
		    json_string_length(it) > REPOCFG_MAX_NAME ||
		    strpbrk(json_string_value(it), "\n\r,")) {
			json_decref(arr);
			return cfg_error(x, yamldoc_line(x->doc, it) ?
			    yamldoc_line(x->doc, it) : member_line(x, parent, key),
			    key, "entry %zu must be a non-empty name without "
			    "commas or newlines", i + 1);
		}
		json_array_append(arr, it);
	}
	*out = arr;
	return 0;
}

static int
parse_budget(struct ctx *x, const json_t *root, json_t *norm)
{
	static const char *const keys[] = { "candidates", "wall_minutes",
		"gpu_minutes", "llm_tokens", "llm_usd", NULL };
	json_t *b = json_object_get(root, "budget"), *out, *v;
	int rc;

	if (!b || json_is_null(b))
		return 0;
	if (!json_is_object(b))
		return cfg_error(x, member_line(x, root, "budget"), "budget",
		    "must be a mapping of candidates, wall_minutes, gpu_minutes, "
		    "llm_tokens, llm_usd");
	if ((rc = check_keys(x, b, "budget", keys)) < 0)
		return rc;
	out = json_object();
	json_object_set_new(norm, "budget", out);
	if ((v = json_object_get(b, "candidates"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 1000000)
			return cfg_error(x, member_line(x, b, "candidates"),
			    "budget.candidates", "must be an integer from 1 to 1000000");
		json_object_set(out, "candidates", v);
	}
	for (const char *const *k = keys + 1; k < keys + 3; k++) {
		char key[32];

		if (!(v = json_object_get(b, *k)))
			continue;
		snprintf(key, sizeof(key), "budget.%s", *k);
		if (!json_is_number(v) || !(json_number_value(v) > 0) ||
		    !isfinite(json_number_value(v)))
			return cfg_error(x, member_line(x, b, *k), key,
			    "must be a positive number");
		json_object_set_new(out, *k, json_real(json_number_value(v)));
	}
	if ((v = json_object_get(b, "llm_tokens"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > INT_MAX)
			return cfg_error(x, member_line(x, b, "llm_tokens"),
			    "budget.llm_tokens", "must be an integer from 1 to %d",
			    INT_MAX);
		json_object_set(out, "llm_tokens", v);
	}
	if ((v = json_object_get(b, "llm_usd"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 ||
		    !isfinite(json_number_value(v)))
			return cfg_error(x, member_line(x, b, "llm_usd"),
			    "budget.llm_usd", "must be a number >= 0");
		json_object_set_new(out, "llm_usd", json_real(json_number_value(v)));
	}
	return 0;
}

/* init/inputs: a function name, or a literal list of arguments. */
static int
func_or_literal(struct ctx *x, const json_t *m, const char *key,
    const char *where, const char *def, json_t *out)
{
	json_t *v = json_object_get(m, key);
	char name[64];

	snprintf(name, sizeof(name), "%s.%s", where, key);
	if (!v || json_is_null(v)) {
		json_object_set_new(out, key, json_string(def));
		return 0;
	}
	if (json_is_array(v)) {
		json_object_set(out, key, v);
		return 0;
	}
	if (!json_is_string(v) || !valid_function(json_string_value(v)))
		return cfg_error(x, member_line(x, m, key), name,
		    "must be a Python function name, MODULE:FUNCTION or a literal list");
	json_object_set(out, key, v);
	return 0;
}

static const char *
dtype_name(const char *s)
{
	static const char *const map[][2] = {
		{ "float32", "float32" }, { "fp32", "float32" },
		{ "float16", "float16" }, { "fp16", "float16" },
		{ "bfloat16", "bfloat16" }, { "bf16", "bfloat16" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i][0], s))
			return map[i][1];
	return NULL;
}

static int
parse_tol(struct ctx *x, const json_t *m, const char *key, const char *where,
    json_t *out)
{
	json_t *v = json_object_get(m, key);
	char name[64];

	snprintf(name, sizeof(name), "%s.%s", where, key);
	if (!v || json_is_null(v)) {
		json_object_set_new(out, key, json_null());
		return 0;
	}
	if (!json_is_number(v) || json_number_value(v) < 0 ||
	    !isfinite(json_number_value(v)) || json_number_value(v) > 1e6)
		return cfg_error(x, member_line(x, m, key), name,
		    "must be a number >= 0");
	json_object_set_new(out, key, json_real(json_number_value(v)));
	return 0;
}

static const char *
mkey(char *b, size_t n, const char *where, const char *key)
{
	snprintf(b, n, "%s.%s", where, key);
	return b;
}

static int
parse_module(struct ctx *x, const json_t *m, size_t idx, json_t *mods)
{
	static const char *const keys[] = { "path", "glob", "class", "init",
		"inputs", "variants", "dtype", "atol", "rtol", NULL };
	json_t *out, *v, *p, *g;
	char where[32], kbuf[64];
	int rc, line = yamldoc_line(x->doc, m);

	snprintf(where, sizeof(where), "modules[%zu]", idx);
	if (!json_is_object(m))
		return cfg_error(x, line, where,
		    "must be a mapping with path or glob");
	if ((rc = check_keys(x, m, where, keys)) < 0)
		return rc;
	out = json_object();
	json_array_append_new(mods, out);
	json_object_set_new(out, "line", json_integer(line));
	p = json_object_get(m, "path");
	g = json_object_get(m, "glob");
	if ((p && g) || (!p && !g))
		return cfg_error(x, line, where, "needs exactly one of path, glob");
	if (p) {
		if (!json_is_string(p) || !valid_rel_path(json_string_value(p)))
			return cfg_error(x, member_line(x, m, "path"), mkey(kbuf, sizeof(kbuf), where, "path"),
			    "must be a relative path inside the repository");
		json_object_set(out, "path", p);
	} else {
		if (!json_is_string(g) || !valid_rel_path(json_string_value(g)))
			return cfg_error(x, member_line(x, m, "glob"), mkey(kbuf, sizeof(kbuf), where, "glob"),
			    "must be a relative path pattern inside the repository");
		json_object_set(out, "glob", g);
	}
	v = json_object_get(m, "class");
	if (v && !json_is_null(v) && (!json_is_string(v) ||
	    !valid_identifier(json_string_value(v))))
		return cfg_error(x, member_line(x, m, "class"), mkey(kbuf, sizeof(kbuf), where, "class"),
		    "must be a Python class name");
	json_object_set_new(out, "class", json_string(v && json_is_string(v) ?
	    json_string_value(v) : REPOCFG_DEFAULT_CLASS));
	if ((rc = func_or_literal(x, m, "init", where, REPOCFG_DEFAULT_INIT,
	    out)) < 0 ||
	    (rc = func_or_literal(x, m, "inputs", where, REPOCFG_DEFAULT_INPUTS,
	    out)) < 0)
		return rc;
	v = json_object_get(m, "variants");
	if (v && !json_is_null(v)) {
		if (!json_is_array(v) && (!json_is_string(v) || !valid_function(json_string_value(v))))
			return cfg_error(x, member_line(x, m, "variants"), mkey(kbuf, sizeof(kbuf), where, "variants"),
			    "must be a Python function name, MODULE:FUNCTION or a literal list of input lists");
		json_object_set(out, "variants", v);
		json_object_set_new(out, "variants_required", json_true());
	} else {
		json_object_set_new(out, "variants",
		    json_string(REPOCFG_DEFAULT_VARIANTS));
		json_object_set_new(out, "variants_required", json_false());
	}
	v = json_object_get(m, "dtype");
	if (v && !json_is_null(v)) {
		const char *d = json_is_string(v) ?
		    dtype_name(json_string_value(v)) : NULL;

		if (!d)
			return cfg_error(x, member_line(x, m, "dtype"), mkey(kbuf, sizeof(kbuf), where, "dtype"),
			    "'%s' is not one of float32, float16, bfloat16",
			    json_is_string(v) ? json_string_value(v) : "?");
		json_object_set_new(out, "dtype", json_string(d));
	} else {
		json_object_set_new(out, "dtype", json_null());
	}
	if ((rc = parse_tol(x, m, "atol", where, out)) < 0 ||
	    (rc = parse_tol(x, m, "rtol", where, out)) < 0)
		return rc;
	return 0;
}

/* python_path: folders of the repository, "." for its root. */
static int
parse_python_path(struct ctx *x, const json_t *root, json_t *norm)
{
	json_t *v = json_object_get(root, "python_path"), *out, *e;
	size_t i;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > REPOCFG_MAX_PYTHON_PATH)
		return cfg_error(x, member_line(x, root, "python_path"), "python_path",
		    "must be a list of at most %d folders of the repository", REPOCFG_MAX_PYTHON_PATH);
	out = json_array();
	json_object_set_new(norm, "python_path", out);
	json_array_foreach(v, i, e) {
		const char *s = json_is_string(e) ? json_string_value(e) : NULL;

		if (!s || (strcmp(s, ".") && !valid_rel_path(s)))
			return cfg_error(x, member_line(x, root, "python_path"), "python_path",
			    "entry %zu must be a folder relative to the repository (\".\" for its root; "
			    "no \"..\", no leading /)", i);
		json_array_append(out, e);
	}
	return 0;
}

static json_t *
defaults(void)
{
	return json_pack("{s:i, s:s, s:[], s:[], s:{}, s:n, s:[s, s]}", "version", 1,
	    "branch_prefix", REPOCFG_DEFAULT_PREFIX, "labels", "reviewers",
	    "budget", "modules", "python_path", ".", "src");
}

int
repocfg_parse(const char *name, const char *data, size_t len,
    struct repocfg **out, char *err, size_t errlen)
{
	static const char *const keys[] = { "version", "modules",
		"branch_prefix", "budget", "labels", "reviewers", "python_path", NULL };
	struct yamldoc *doc = NULL;
	struct repocfg *c = NULL;
	struct ctx x = { NULL, err, errlen };
	json_t *root, *norm = NULL, *v, *list = NULL;
	size_t i;
	int rc;

	if ((rc = yamldoc_parse(name, data, len, &doc, err, errlen)) < 0)
		return rc;
	x.doc = doc;
	root = yamldoc_root(doc);
	if (!json_is_object(root)) {
		rc = cfg_error(&x, 1, NULL, "must be a mapping with version: 1");
		goto out;
	}
	if ((rc = check_keys(&x, root, "", keys)) < 0)
		goto out;
	norm = defaults();
	v = json_object_get(root, "version");
	if (!v) {
		rc = cfg_error(&x, 1, "version", "missing (write version: 1)");
		goto out;
	}
	if (!json_is_integer(v) || json_integer_value(v) != 1) {
		rc = cfg_error(&x, member_line(&x, root, "version"), "version",
		    "only version 1 is understood");
		goto out;
	}
	if ((v = json_object_get(root, "branch_prefix")) && !json_is_null(v)) {
		if (!json_is_string(v) || !valid_prefix(json_string_value(v))) {
			rc = cfg_error(&x, member_line(&x, root, "branch_prefix"),
			    "branch_prefix", "must be up to 64 characters of "
			    "[A-Za-z0-9/._-] that make a valid branch name");
			goto out;
		}
		json_object_set(norm, "branch_prefix", v);
	}
	if ((rc = string_list(&x, root, "labels", &list)) < 0)
		goto out;
	json_object_set_new(norm, "labels", list);
	if ((rc = string_list(&x, root, "reviewers", &list)) < 0)
		goto out;
	json_object_set_new(norm, "reviewers", list);
	if ((rc = parse_budget(&x, root, norm)) < 0)
		goto out;
	if ((rc = parse_python_path(&x, root, norm)) < 0)
		goto out;
	if ((v = json_object_get(root, "modules")) && !json_is_null(v)) {
		json_t *mods = json_array(), *m;

		json_object_set_new(norm, "modules", mods);
		if (!json_is_array(v)) {
			rc = cfg_error(&x, member_line(&x, root, "modules"), "modules",
			    "must be a list of {path or glob, class, ...}");
			goto out;
		}
		if (json_array_size(v) > REPOCFG_MAX_MODULES) {
			rc = cfg_error(&x, member_line(&x, root, "modules"), "modules",
			    "more than %d entries", REPOCFG_MAX_MODULES);
			goto out;
		}
		json_array_foreach(v, i, m)
			if ((rc = parse_module(&x, m, i, mods)) < 0)
				goto out;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		rc = -ENOMEM;
		goto out;
	}
	c->root = norm;
	norm = NULL;
	*out = c;
out:
	json_decref(norm);
	yamldoc_free(doc);
	return rc;
}

int
repocfg_default(struct repocfg **out)
{
	struct repocfg *c = calloc(1, sizeof(*c));

	if (!c || !(c->root = defaults())) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

const json_t *
repocfg_json(const struct repocfg *c)
{
	return c->root;
}

const char *
repocfg_branch_prefix(const struct repocfg *c)
{
	return json_string_value(json_object_get(c->root, "branch_prefix"));
}

json_t *
repocfg_convention_spec(void)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:b, s:n, s:n, s:n}",
	    "class", REPOCFG_DEFAULT_CLASS, "init", REPOCFG_DEFAULT_INIT,
	    "inputs", REPOCFG_DEFAULT_INPUTS, "variants",
	    REPOCFG_DEFAULT_VARIANTS, "variants_required", 0, "dtype", "atol",
	    "rtol");
}

void
repocfg_free(struct repocfg *c)
{
	if (!c)
		return;
	json_decref(c->root);
	free(c);
}

/* Match one segment pattern against one path segment (no '/' in either). */
static int
seg_match(const char *pat, size_t plen, const char *s, size_t slen)
{
	char p[REPOCFG_MAX_NAME * 4], t[REPOCFG_MAX_NAME * 4];

	if (plen >= sizeof(p) || slen >= sizeof(t))
		return 0;
	memcpy(p, pat, plen);
	p[plen] = '\0';
	memcpy(t, s, slen);
	t[slen] = '\0';
	return fnmatch(p, t, FNM_PERIOD) == 0;
}

int
repocfg_glob_match(const char *glob, const char *path)
{
	const char *gs = strchr(glob, '/'), *ps;
	size_t glen = gs ? (size_t)(gs - glob) : strlen(glob);

	if (glen == 2 && glob[0] == '*' && glob[1] == '*') {
		if (!gs)
			return 1;	/* trailing '**' matches everything below */
		/* A '**' segment matches zero segments, or one and recurses. */
		if (repocfg_glob_match(gs + 1, path))
			return 1;
		ps = strchr(path, '/');
		return ps && repocfg_glob_match(glob, ps + 1);
	}
	ps = strchr(path, '/');
	if (!seg_match(glob, glen, path, ps ? (size_t)(ps - path) : strlen(path)))
		return 0;
	if (!gs || !ps)
		return !gs && !ps;
	return repocfg_glob_match(gs + 1, ps + 1);
}
