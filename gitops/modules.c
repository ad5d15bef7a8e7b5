/*
 * gitops/modules.c: module detection by reading text, slugs, and the
 * changed-module computation behind `kernelbot changes`.
 */
#include "gitops/modules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/crypto.h"
#include "common/yamldoc.h"

#define YAMLDOC_MAX_BYTES_FOR_REPOCFG (256u << 10)	/* .kernelbot.yml cap */

/*
 * Walk the lines of text, calling fn on each that starts outside a
 * triple-quoted string. Quote tracking is deliberately simple (no escapes,
 * no nesting): it only has to keep a docstring's "class Model(" from
 * counting.
 */
static int
scan_lines(const char *text, size_t len,
    int (*fn)(const char *line, size_t n, void *arg), void *arg)
{
	const char *p = text, *end = text + len;
	char quote = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (!quote && fn(p, n, arg))
			return 1;
		for (size_t i = 0; i + 3 <= n; i++) {
			char c = p[i];

			if ((c == '"' || c == '\'') && p[i + 1] == c && p[i + 2] == c) {
				if (!quote)
					quote = c;
				else if (quote == c)
					quote = 0;
				i += 2;
			} else if (c == '#' && !quote) {
				break;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

struct def_want {
	const char *kw;		/* "class " or "def " */
	const char *name;
};

static int
line_defines(const char *line, size_t n, void *arg)
{
	const struct def_want *w = arg;
	size_t kl = strlen(w->kw), nl = strlen(w->name), i;

	if (n < kl + nl || memcmp(line, w->kw, kl))
		return 0;
	for (i = kl; i < n && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	if (n - i < nl || memcmp(line + i, w->name, nl))
		return 0;
	for (i += nl; i < n && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	if (i >= n)
		return 0;
	return line[i] == '(' || (line[i] == ':' && w->kw[0] == 'c');
}

static int
defines(const char *text, size_t len, const char *kw, const char *name)
{
	struct def_want w = { kw, name };

	/* MODULE:FUNCTION is another file's: its loader says if it is missing. */
	if (!strcmp(kw, "def ") && strchr(name, ':'))
		return 1;
	return scan_lines(text, len, line_defines, &w);
}

int
modules_defines(const char *text, size_t len, const char *name)
{
	return defines(text, len, "def ", name);
}

int
modules_detect(const char *text, size_t len, const char *cls,
    const char *init, const char *inputs)
{
	if (!cls || !defines(text, len, "class ", cls))
		return 0;
	if (init && !defines(text, len, "def ", init))
		return 0;
	if (inputs && !defines(text, len, "def ", inputs))
		return 0;
	return 1;
}

static size_t
slugify(const char *s, size_t n, char *out, size_t cap, size_t at)
{
	int dash = at > 0;

	for (size_t i = 0; i < n && at < cap; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && at > 0 && at < cap)
				out[at++] = '-';
			dash = 0;
			if (at < cap)
				out[at++] = c;
		} else {
			dash = 1;
		}
	}
	return at;
}

int
modules_slug(const char *path, const char *cls, char out[MODULES_MAX_SLUG + 1])
{
	char tmp[GITOPS_MAX_PATH + REPOCFG_MAX_NAME + 2];
	size_t n = strlen(path), at;

	if (n > 3 && !strcmp(path + n - 3, ".py"))
		n -= 3;
	at = slugify(path, n, tmp, sizeof(tmp) - 1, 0);
	if (at == 0)
		return -EINVAL;
	if (cls && strcmp(cls, REPOCFG_DEFAULT_CLASS))
		at = slugify(cls, strlen(cls), tmp, sizeof(tmp) - 1, at);
	tmp[at] = '\0';
	if (at > MODULES_MAX_SLUG) {
		char hex[CRYPTO_SHA256_HEX];
		struct buf key = BUF_INIT(sizeof(tmp) + 2);

		if (buf_printf(&key, "%s\n%s", path, cls ? cls : "") < 0) {
			buf_free(&key);
			return -EINVAL;
		}
		crypto_init();
		crypto_sha256_hex(key.data, key.len, hex);
		buf_free(&key);
		at = MODULES_MAX_SLUG - 9;
		while (at > 0 && tmp[at - 1] == '-')
			at--;
		snprintf(tmp + at, sizeof(tmp) - at, "-%.8s", hex);
	}
	memcpy(out, tmp, strlen(tmp) + 1);
	return 0;
}

const char *
modules_reason_name(enum modules_reason r)
{
	switch (r) {
	case MODULES_ADDED:
		return "added";
	case MODULES_MODIFIED:
		return "modified";
	case MODULES_CONFIG:
		return "config";
	case MODULES_REMOVED:
		return "removed";
	}
	return "?";
}

/* ---- one side (before or after) of a push ---- */

struct side {
	struct gitops_repo *repo;
	char sha[GITOPS_OID_HEX];
	struct repocfg *cfg;		/* NULL for the empty tree */
	int cfg_present;
	json_t *mods;			/* "PATH\nCLASS" -> spec, for the candidate paths */
	json_t *blobs;			/* PATH -> blob id */
};

static const json_t *
cfg_modules(const struct side *s)
{
	return s->cfg ? json_object_get(repocfg_json(s->cfg), "modules") : NULL;
}

/* Does any selector of s's configuration look at path? */
static int
selected(const struct side *s, const char *path)
{
	const json_t *mods = cfg_modules(s), *m;
	size_t i, n = strlen(path);

	if (!s->cfg)
		return 0;
	if (!mods || json_is_null(mods))
		return n > 3 && !strcmp(path + n - 3, ".py");
	json_array_foreach(mods, i, m) {
		const char *p = json_string_value(json_object_get(m, "path"));
		const char *g = json_string_value(json_object_get(m, "glob"));

		if ((p && !strcmp(p, path)) || (g && repocfg_glob_match(g, path)))
			return 1;
	}
	return 0;
}

static json_t *
spec_for(const json_t *entry, const char *text, size_t len)
{
	json_t *spec = json_object();
	const char *variants;
	int required;

	json_object_set(spec, "class", json_object_get(entry, "class"));
	json_object_set(spec, "init", json_object_get(entry, "init"));
	json_object_set(spec, "inputs", json_object_get(entry, "inputs"));
	variants = json_string_value(json_object_get(entry, "variants"));
	required = json_is_true(json_object_get(entry, "variants_required"));
	json_object_set_new(spec, "variants",
	    variants && (required || modules_defines(text, len, variants)) ?
	    json_string(variants) : json_null());
	json_object_set(spec, "dtype", json_object_get(entry, "dtype"));
	json_object_set(spec, "atol", json_object_get(entry, "atol"));
	json_object_set(spec, "rtol", json_object_get(entry, "rtol"));
	return spec;
}

/* A spec member that names a function (a literal list names none). */
static const char *
func_name(const json_t *entry, const char *key)
{
	return json_string_value(json_object_get(entry, key));
}

/*
 * Why entry does not make text a module, or NULL when it does. Only asked
 * for explicit `path` entries, whose failure is a configuration error.
 */
static const char *
why_not(const json_t *entry, const char *text, size_t len, char *b, size_t n)
{
	const char *cls = func_name(entry, "class");
	const char *keys[] = { "init", "inputs", "variants" };

	if (!defines(text, len, "class ", cls)) {
		snprintf(b, n, "defines no top-level class %s", cls);
		return b;
	}
	for (size_t i = 0; i < 3; i++) {
		const char *f = func_name(entry, keys[i]);

		if (i == 2 && !json_is_true(json_object_get(entry,
		    "variants_required")))
			break;
		if (f && !modules_defines(text, len, f)) {
			snprintf(b, n, "defines no top-level function %s()", f);
			return b;
		}
	}
	return NULL;
}

static void
add_module(struct side *s, const char *path, json_t *spec)
{
	char key[GITOPS_MAX_PATH + REPOCFG_MAX_NAME + 2];

	snprintf(key, sizeof(key), "%s\n%s", path,
	    json_string_value(json_object_get(spec, "class")));
	if (!json_object_get(s->mods, key))
		json_object_set(s->mods, key, spec);
	json_decref(spec);
}

/* Evaluate path on side s: record its blob id and the modules it holds. */
static int
eval_path(struct side *s, const char *path, char *err, size_t errlen)
{
	struct buf text = BUF_INIT(MODULES_MAX_FILE);
	char blob[GITOPS_OID_HEX];
	const json_t *mods, *m;
	size_t i;
	int rc;

	if (!s->cfg || json_object_get(s->blobs, path))
		return 0;
	rc = gitops_read_file(s->repo, s->sha, path, &text, blob, err, errlen);
	if (rc == -ENOENT || rc == -EFBIG) {
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	json_object_set_new(s->blobs, path, json_string(blob));
	mods = cfg_modules(s);
	if (!mods || json_is_null(mods)) {
		if (selected(s, path) && modules_detect(text.data, text.len,
		    REPOCFG_DEFAULT_CLASS, REPOCFG_DEFAULT_INIT,
		    REPOCFG_DEFAULT_INPUTS)) {
			json_t *conv = repocfg_convention_spec();

			add_module(s, path, spec_for(conv, text.data, text.len));
			json_decref(conv);
		}
		goto out;
	}
	json_array_foreach(mods, i, m) {
		const char *p = json_string_value(json_object_get(m, "path"));
		const char *g = json_string_value(json_object_get(m, "glob"));

		if (!(p && !strcmp(p, path)) && !(g && repocfg_glob_match(g, path)))
			continue;
		if (modules_detect(text.data, text.len, func_name(m, "class"),
		    func_name(m, "init"), func_name(m, "inputs")) &&
		    (!json_is_true(json_object_get(m, "variants_required")) ||
		    modules_defines(text.data, text.len, func_name(m, "variants"))))
			add_module(s, path, spec_for(m, text.data, text.len));
	}
out:
	buf_free(&text);
	return rc;
}

/* Every `path` entry at after must name an existing module. */
static int
check_named(struct side *s, char *err, size_t errlen)
{
	const json_t *mods = cfg_modules(s), *m;
	size_t i;

	json_array_foreach(mods, i, m) {
		const char *p = json_string_value(json_object_get(m, "path"));
		struct buf text = BUF_INIT(MODULES_MAX_FILE);
		char why[REPOCFG_MAX_NAME + 64];
		const char *reason = NULL;
		int rc;

		if (!p)
			continue;
		rc = gitops_read_file(s->repo, s->sha, p, &text, NULL, NULL, 0);
		if (rc == -ENOENT)
			reason = "no such file";
		else if (rc == -EFBIG)
			reason = "file too large to be a module";
		else if (rc < 0)
			reason = "cannot be read";
		else
			reason = why_not(m, text.data, text.len, why, sizeof(why));
		buf_free(&text);
		if (reason) {
			snprintf(err, errlen, "%s:%lld: modules[%zu].path: %s: %s",
			    REPOCFG_FILE,
			    json_integer_value(json_object_get(m, "line")), i, p,
			    reason);
			return -EINVAL;
		}
	}
	return 0;
}

/* Read .kernelbot.yml at s->sha; strict (after) or lenient (before). */
static int
side_load(struct side *s, int strict, char *err, size_t errlen)
{
	struct buf text = BUF_INIT(YAMLDOC_MAX_BYTES_FOR_REPOCFG);
	char lerr[512];
	int rc;

	s->mods = json_object();
	s->blobs = json_object();
	if (!s->mods || !s->blobs)
		return -ENOMEM;
	if (!strcmp(s->sha, GITOPS_ZERO_OID))
		return 0;	/* the empty tree: no config, no modules */
	rc = gitops_read_file(s->repo, s->sha, REPOCFG_FILE, &text, NULL, lerr,
	    sizeof(lerr));
	if (rc == -ENOENT) {
		rc = repocfg_default(&s->cfg);
	} else if (rc == -EFBIG && strict) {
		snprintf(err, errlen, "%s: larger than %u bytes", REPOCFG_FILE,
		    YAMLDOC_MAX_BYTES_FOR_REPOCFG);
		rc = -EINVAL;
	} else if (rc < 0 && strict) {
		snprintf(err, errlen, "%s", lerr);
	} else if (rc < 0) {
		rc = repocfg_default(&s->cfg);
	} else {
		s->cfg_present = 1;
		rc = repocfg_parse(REPOCFG_FILE, text.data, text.len, &s->cfg,
		    strict ? err : lerr, strict ? errlen : sizeof(lerr));
		if (rc == -EINVAL && !strict) {
			s->cfg_present = 0;
			rc = repocfg_default(&s->cfg);
		}
	}
	buf_free(&text);
	if (rc == 0 && strict && s->cfg_present)
		rc = check_named(s, err, errlen);
	return rc;
}

static void
side_free(struct side *s)
{
	repocfg_free(s->cfg);
	json_decref(s->mods);
	json_decref(s->blobs);
}

struct collect {
	struct side *a, *b;
	json_t *paths;		/* set: PATH -> true */
};

static int
collect_cb(const char *path, void *arg)
{
	struct collect *c = arg;

	if (selected(c->a, path) || selected(c->b, path))
		json_object_set_new(c->paths, path, json_true());
	return 0;
}

static int
spec_equal(json_t *a, json_t *b)
{
	return json_equal(a, b);
}

static int
add_change(struct modules_changes *c, const char *path, const char *cls,
    enum modules_reason reason, json_t *spec, const char *old_path)
{
	struct modules_change *x, *v;

	v = realloc(c->v, (c->n + 1) * sizeof(*c->v));
	if (!v)
		return -ENOMEM;
	c->v = v;
	x = &c->v[c->n];
	memset(x, 0, sizeof(*x));
	if (modules_slug(path, cls, x->slug) < 0)
		snprintf(x->slug, sizeof(x->slug), "module");
	x->path = strdup(path);
	x->class_name = strdup(cls);
	x->old_path = old_path ? strdup(old_path) : NULL;
	x->reason = reason;
	x->spec = json_incref(spec);
	c->n++;
	if (!x->path || !x->class_name || (old_path && !x->old_path))
		return -ENOMEM;
	return 0;
}

static int
change_cmp(const void *pa, const void *pb)
{
	const struct modules_change *a = pa, *b = pb;
	int c = strcmp(a->path, b->path);

	return c ? c : strcmp(a->class_name, b->class_name);
}

/* Compare the two sides for every candidate path. */
static int
compare(struct side *before, struct side *after, const json_t *renames,
    struct modules_changes *out)
{
	const char *key, *path;
	json_t *spec, *other;
	char p[GITOPS_MAX_PATH];
	int rc;

	json_object_foreach(after->mods, key, spec) {
		const char *nl = strchr(key, '\n');
		const char *cls = nl + 1, *old = NULL;
		json_t *ba, *bb;
		enum modules_reason reason;

		snprintf(p, sizeof(p), "%.*s", (int)(nl - key), key);
		other = json_object_get(before->mods, key);
		ba = json_object_get(before->blobs, p);
		bb = json_object_get(after->blobs, p);
		if (!other) {
			/* Unchanged file that only the config made a module. */
			reason = ba && bb && json_equal(ba, bb) ? MODULES_CONFIG :
			    MODULES_ADDED;
			old = json_string_value(json_object_get(renames, p));
		} else if (!ba || !bb || !json_equal(ba, bb)) {
			reason = MODULES_MODIFIED;
		} else if (!spec_equal(spec, other)) {
			reason = MODULES_CONFIG;
		} else {
			continue;
		}
		if ((rc = add_change(out, p, cls, reason, spec, old)) < 0)
			return rc;
	}
	json_object_foreach(before->mods, key, spec) {
		const char *nl = strchr(key, '\n');

		if (json_object_get(after->mods, key))
			continue;
		snprintf(p, sizeof(p), "%.*s", (int)(nl - key), key);
		if ((rc = add_change(out, p, nl + 1, MODULES_REMOVED, spec,
		    NULL)) < 0)
			return rc;
	}
	(void)path;
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), change_cmp);
	return 0;
}

int
modules_changes(struct gitops_repo *r, const char *before, const char *after,
    struct modules_changes *out, char *err, size_t errlen)
{
	struct side b = { 0 }, a = { 0 };
	struct modules_changes res = { 0 };
	struct gitops_diff diff = { 0 };
	struct collect col = { &b, &a, NULL };
	json_t *renames = json_object();
	const char *path;
	json_t *v;
	int rc, full;

	b.repo = a.repo = r;
	if (!renames || !(col.paths = json_object())) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = gitops_resolve(r, before, b.sha, err, errlen)) < 0 ||
	    (rc = gitops_resolve(r, after, a.sha, err, errlen)) < 0)
		goto out;
	if (!strcmp(a.sha, GITOPS_ZERO_OID)) {
		rc = -EINVAL;
		snprintf(err, errlen, "after must be a commit, not the zero id");
		goto out;
	}
	if ((rc = side_load(&a, 1, err, errlen)) < 0 ||
	    (rc = side_load(&b, 0, err, errlen)) < 0)
		goto out;
	if ((rc = gitops_diff_trees(r, b.sha, a.sha, &diff, err, errlen)) < 0)
		goto out;
	/*
	 * When the selectors changed, a file the push did not touch can
	 * become or stop being a module: look at every selected file then.
	 */
	full = !b.cfg || !json_equal(cfg_modules(&a), cfg_modules(&b));
	if (full) {
		if ((rc = gitops_walk_files(r, a.sha, collect_cb, &col, err,
		    errlen)) < 0 ||
		    (rc = gitops_walk_files(r, b.sha, collect_cb, &col, err,
		    errlen)) < 0)
			goto out;
	}
	for (size_t i = 0; i < diff.n; i++) {
		struct gitops_delta *d = &diff.deltas[i];

		if (d->old_path)
			json_object_set_new(col.paths, d->old_path, json_true());
		if (d->new_path)
			json_object_set_new(col.paths, d->new_path, json_true());
		if (d->status == GITOPS_RENAMED)
			json_object_set_new(renames, d->new_path,
			    json_string(d->old_path));
	}
	json_object_foreach(col.paths, path, v) {
		if ((rc = eval_path(&b, path, err, errlen)) < 0 ||
		    (rc = eval_path(&a, path, err, errlen)) < 0)
			goto out;
	}
	if ((rc = compare(&b, &a, renames, &res)) < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	res.config = a.cfg;
	res.config_present = a.cfg_present;
	a.cfg = NULL;
	*out = res;
	memset(&res, 0, sizeof(res));
out:
	modules_changes_free(&res);
	gitops_diff_free(&diff);
	json_decref(col.paths);
	json_decref(renames);
	side_free(&a);
	side_free(&b);
	return rc;
}

json_t *
modules_changes_json(const struct modules_changes *c)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < c->n; i++) {
		const struct modules_change *x = &c->v[i];
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "path", x->path,
		    "class", x->class_name, "reason",
		    modules_reason_name(x->reason), "slug", x->slug);

		if (!o)
			continue;
		if (x->old_path)
			json_object_set_new(o, "old_path", json_string(x->old_path));
		json_object_update_missing(o, x->spec);
		json_object_del(o, "variants_required");
		json_array_append_new(arr, o);
	}
	return arr;
}

void
modules_changes_free(struct modules_changes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		free(c->v[i].class_name);
		free(c->v[i].old_path);
		json_decref(c->v[i].spec);
	}
	free(c->v);
	repocfg_free(c->config);
	memset(c, 0, sizeof(*c));
}
