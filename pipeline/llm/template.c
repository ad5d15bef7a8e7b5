#include "pipeline/llm/template.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/where.h"

#ifndef KB_DATADIR
#define KB_DATADIR "/usr/local/share/kernelbot"
#endif

struct scope {
	const json_t *v;
	const struct scope *up;
};

struct rctx {
	const char *base;		/* the whole template, for line numbers */
	struct buf *out;
	char *err;
	size_t errlen;
	int depth;
};

static int
line_of(const struct rctx *r, const char *p)
{
	int n = 1;

	for (const char *q = r->base; q < p; q++)
		n += *q == '\n';
	return n;
}

static int fail(struct rctx *r, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct rctx *r, const char *at, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "line %d: %s", line_of(r, at), msg);
	return -EINVAL;
}

static const json_t *
lookup(const struct scope *s, const char *name)
{
	for (; s; s = s->up) {
		const json_t *v;

		if (!strcmp(name, "."))
			return s->v;
		if (json_is_object(s->v) && (v = jsonx_path(s->v, name)))
			return v;
	}
	return NULL;
}

static int
truthy(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return 0;
	if (json_is_string(v))
		return json_string_length(v) > 0;
	if (json_is_number(v))
		return json_number_value(v) != 0;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	return 1;
}

int
tmpl_fence(const char *text, char out[16])
{
	size_t run = 0, longest = 0;

	for (const char *p = text; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	if (longest >= 15)
		return -EINVAL;
	longest = longest < 3 ? 3 : longest + 1;
	memset(out, '`', longest);
	out[longest] = '\0';
	return 0;
}

static int
put_value(struct rctx *r, const char *at, const char *name, const json_t *v,
    const char *filter)
{
	char num[64], fence[16];
	const char *s;
	int error;

	if (json_is_string(v)) {
		s = json_string_value(v);
	} else if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		s = num;
	} else if (json_is_real(v)) {
		snprintf(num, sizeof(num), "%.4g", json_real_value(v));
		s = num;
	} else {
		return fail(r, at, "{{%s}} is not a string or a number", name);
	}
	if (!filter)
		return buf_addstr(r->out, s);
	if (strncmp(filter, "fence", 5) || (filter[5] && filter[5] != ':'))
		return fail(r, at, "unknown filter |%s", filter);
	if (tmpl_fence(s, fence) < 0)
		return fail(r, at, "{{%s}} holds a run of 15 backticks", name);
	if ((error = buf_printf(r->out, "%s%s\n%s", fence,
	    filter[5] ? filter + 6 : "", s)) < 0)
		return error;
	if (*s && s[strlen(s) - 1] != '\n' && (error = buf_addch(r->out, '\n')) < 0)
		return error;
	return buf_addstr(r->out, fence);
}

/* Is [from, to) only blanks? */
static int
blank(const char *from, const char *to)
{
	for (; from < to; from++)
		if (*from != ' ' && *from != '\t')
			return 0;
	return 1;
}

/*
 * A tag at [open, close+2): when it is a standalone section or comment
 * tag, widen it to the whole line (*start back to the line start, *end past
 * the newline).
 */
static void
standalone(const char *lo, const char *hi, const char *open, const char *close,
    const char **start, const char **end)
{
	const char *ls = open, *le = close + 2;

	while (ls > lo && ls[-1] != '\n')
		ls--;
	while (le < hi && *le != '\n')
		le++;
	if (!blank(ls, open) || !blank(close + 2, le))
		return;
	*start = ls;
	*end = le < hi ? le + 1 : le;
}

static int render(struct rctx *r, const char *p, const char *end,
    const struct scope *sc, int missing_ok);

/* Find the {{/name}} that closes a section opened before p. */
static int
find_close(const char *p, const char *end, const char *name, size_t nlen,
    const char **close_open, const char **close_end)
{
	int depth = 1;

	while (p < end) {
		const char *o = strstr(p, "{{"), *c;

		if (!o || o >= end || !(c = strstr(o, "}}")) || c >= end)
			return -1;
		if ((o[2] == '#' || o[2] == '^') && (size_t)(c - o - 3) == nlen &&
		    !strncmp(o + 3, name, nlen))
			depth++;
		if (o[2] == '/' && (size_t)(c - o - 3) == nlen &&
		    !strncmp(o + 3, name, nlen) && --depth == 0) {
			*close_open = o;
			*close_end = c;
			return 0;
		}
		p = c + 2;
	}
	return -1;
}

static int
section(struct rctx *r, const char *tag, const char *body, const char *body_end,
    const char *name, int inverted, const struct scope *sc)
{
	const json_t *v = lookup(sc, name);
	int error = 0;

	if (++r->depth > TMPL_MAX_DEPTH)
		return fail(r, tag, "sections nested deeper than %d", TMPL_MAX_DEPTH);
	if (inverted) {
		if (!truthy(v))
			error = render(r, body, body_end, sc, 1);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;

		json_array_foreach((json_t *)v, i, e) {
			struct scope in = { e, sc };
			if ((error = render(r, body, body_end, &in, 1)) < 0)
				break;
		}
	} else if (truthy(v)) {
		struct scope in = { v, sc };
		error = render(r, body, body_end, json_is_object(v) ? &in : sc, 1);
	}
	r->depth--;
	return error;
}

static int
render(struct rctx *r, const char *p, const char *end, const struct scope *sc,
    int missing_ok)
{
	int error;

	while (p < end) {
		const char *o = strstr(p, "{{"), *c, *start, *after;
		char name[128], *bar;
		size_t nlen;

		if (!o || o >= end)
			return buf_add(r->out, p, (size_t)(end - p));
		if (!(c = strstr(o + 2, "}}")) || c >= end)
			return fail(r, o, "unclosed tag");
		start = o;
		after = c + 2;
		if (o[2] == '#' || o[2] == '^' || o[2] == '!' || o[2] == '/')
			standalone(r->base, end, o, c, &start, &after);
		if ((error = buf_add(r->out, p, (size_t)(start - p))) < 0)
			return error;
		nlen = (size_t)(c - o - 2);
		if (o[2] == '!') {
			p = after;
			continue;
		}
		if (o[2] == '#' || o[2] == '^' || o[2] == '/')
			nlen--;
		if (nlen == 0 || nlen >= sizeof(name))
			return fail(r, o, "bad tag");
		memcpy(name, c - nlen, nlen);
		name[nlen] = '\0';
		if (strchr(name, ' ') || strchr(name, '{'))
			return fail(r, o, "bad tag {{%s}}", name);
		if (o[2] == '/')
			return fail(r, o, "{{/%s}} closes nothing", name);
		if (o[2] == '#' || o[2] == '^') {
			const char *co, *ce, *body = after, *cstart, *cafter;

			if (find_close(after, end, name, nlen, &co, &ce) < 0)
				return fail(r, o, "{{#%s}} is never closed", name);
			cstart = co;
			cafter = ce + 2;
			standalone(r->base, end, co, ce, &cstart, &cafter);
			if ((error = section(r, o, body, cstart, name, o[2] == '^', sc)) < 0)
				return error;
			p = cafter;
			continue;
		}
		{
			const char *filter = NULL;
			const json_t *v;
			char code[48];

			if ((bar = strchr(name, '|'))) {
				*bar = '\0';
				filter = bar + 1;
			}
			v = lookup(sc, name);
			if (filter && !strcmp(filter, "code")) {
				const json_t *lang = lookup(sc, "lang");

				snprintf(code, sizeof(code), "fence:%s",
				    json_is_string(lang) ? json_string_value(lang) : "");
				filter = code;
			}
			if (!v || json_is_null(v)) {
				if (!missing_ok)
					return fail(r, o, "no value for {{%s}}", name);
			} else if ((error = put_value(r, o, name, v, filter)) < 0) {
				return error;
			}
		}
		p = after;
	}
	return 0;
}

int
tmpl_render(const char *tmpl, const json_t *vars, struct buf *out, char *err,
    size_t errlen)
{
	struct scope top = { vars, NULL };
	struct rctx r = { tmpl, out, err, errlen, 0 };
	int error = render(&r, tmpl, tmpl + strlen(tmpl), &top, 0);

	if (error == -ENOBUFS)
		snprintf(err, errlen, "the prompt is over %zu bytes", out->max);
	else if (error == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return error;
}

char *
tmpl_prompts_dir(const char *dir, char *err, size_t errlen)
{
	const char *env = where()->prompts;
	const char *rel[] = { "/prompts", "/../../pipeline/prompts",
		"/../pipeline/prompts", NULL };
	char exe[PATH_MAX], p[PATH_MAX + 64];
	ssize_t n;

	if (dir && *dir)
		return strdup(dir);
	if (env && *env)
		return strdup(env);
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		char *slash;

		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')))
			*slash = '\0';
		for (int i = 0; rel[i]; i++) {
			snprintf(p, sizeof(p), "%s%s/translate.md", exe, rel[i]);
			if (access(p, R_OK) == 0) {
				snprintf(p, sizeof(p), "%s%s", exe, rel[i]);
				return realpath(p, NULL);
			}
		}
	}
	if (access(KB_DATADIR "/prompts/translate.md", R_OK) == 0)
		return strdup(KB_DATADIR "/prompts");
	snprintf(err, errlen, "the prompt templates were not found (next to the "
	    "binary, in the source tree or in %s/prompts); set KERNELBOT_PROMPTS "
	    "or llm.prompts_dir", KB_DATADIR);
	return NULL;
}

int
tmpl_load(const char *dir, const char *name, struct buf *out, char *err,
    size_t errlen)
{
	char path[PATH_MAX];
	int error;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out->max = TMPL_MAX_BYTES;
	if ((error = buf_read_file(out, path)) < 0)
		snprintf(err, errlen, "%s: %s", path,
		    error == -ENOBUFS ? "over 256 KiB" : strerror(-error));
	return error;
}
