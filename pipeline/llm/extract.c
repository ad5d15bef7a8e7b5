/*
 * Answers are outside input: everything here is bounded, and a malformed
 * answer is a refusal with a reason, never a crash (tests/unit/
 * test_llm_extract.c feeds it garbage).
 */
#include "pipeline/llm/extract.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "gpu/srccheck.h"

struct block {
	const char *start, *end;	/* the content */
	int lang_ok, complete;
};

int
llm_has_entry(const char *src)
{
	const char *p = src;

	while ((p = strstr(p, "kernelbot_forward"))) {
		const char *q = p + strlen("kernelbot_forward");

		if (p > src && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) {
			p = q;
			continue;
		}
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		if (*q == '(')
			return 1;
		p = q;
	}
	return 0;
}

static int
lang_ok(const char *info, size_t n)
{
	static const char *const ok[] = { "cuda", "cu", "c", "cpp", "c++", "cc",
		"cxx", "h", NULL };
	char w[16];
	size_t k = 0;

	while (k < n && k < sizeof(w) - 1 && !isspace((unsigned char)info[k])) {
		w[k] = (char)tolower((unsigned char)info[k]);
		k++;
	}
	w[k] = '\0';
	if (k == 0)
		return 1;
	for (int i = 0; ok[i]; i++)
		if (!strcmp(w, ok[i]))
			return 1;
	return 0;
}

/* The next line [p, *eol) with *next past its newline. */
static const char *
line_end(const char *p, const char **next)
{
	const char *e = strchr(p, '\n');

	if (!e) {
		e = p + strlen(p);
		*next = e;
	} else {
		*next = e + 1;
	}
	return e;
}

static size_t
ticks(const char *p, const char *e)
{
	size_t n = 0;

	while (p + n < e && p[n] == '`')
		n++;
	return n;
}

/* Fenced blocks, in order; at most max. */
static size_t
blocks(const char *text, struct block *out, size_t max)
{
	const char *p = text, *next;
	size_t n = 0;

	while (*p && n < max) {
		const char *e = line_end(p, &next), *s = p;
		size_t t;

		while (s < e && s - p < 3 && *s == ' ')
			s++;
		if ((t = ticks(s, e)) < 3) {
			p = next;
			continue;
		}
		out[n].lang_ok = lang_ok(s + t, (size_t)(e - s - t)) &&
		    !memchr(s + t, '`', (size_t)(e - s - t));
		out[n].start = next;
		out[n].complete = 0;
		p = next;
		while (*p) {
			const char *le = line_end(p, &next), *q = p;
			size_t ct;

			while (q < le && q - p < 3 && *q == ' ')
				q++;
			ct = ticks(q, le);
			while (le > q + ct && (le[-1] == ' ' || le[-1] == '\r'))
				le--;
			if (ct >= t && q + ct == le) {
				out[n].end = p;
				out[n].complete = 1;
				p = next;
				break;
			}
			p = next;
		}
		if (!out[n].complete)
			out[n].end = p;
		n++;
	}
	return n;
}

static char *
dup_range(const char *s, const char *e)
{
	char *p = malloc((size_t)(e - s) + 1);

	if (p) {
		memcpy(p, s, (size_t)(e - s));
		p[e - s] = '\0';
	}
	return p;
}

/* Does the line [p, e) equal marker, trailing blanks and \r aside? */
static int
is_marker(const char *p, const char *e, const char *marker)
{
	size_t n = strlen(marker);

	while (e > p && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\t'))
		e--;
	return (size_t)(e - p) == n && !memcmp(p, marker, n);
}

static size_t
count(const char *hay, const char *needle, const char **first)
{
	size_t n = 0;

	*first = NULL;
	for (const char *p = hay; (p = strstr(p, needle)); p++) {
		if (!n)
			*first = p;
		n++;
	}
	return n;
}

int
llm_apply_edits(const char *answer, const char *parent, char **out, char *why,
    size_t whylen)
{
	char *cur = NULL, *search = NULL, *repl = NULL;
	const char *p = answer, *next;
	int n = 0, error = -ENOENT;

	if (!(cur = strdup(parent ? parent : "")))
		return -ENOMEM;
	snprintf(why, whylen, "no <<<<<<< SEARCH edits in the answer");
	while (*p) {
		const char *e = line_end(p, &next), *s0, *s1, *r0, *r1, *hit;
		struct buf b = BUF_INIT(EXTRACT_MAX_SOURCE);
		size_t hits;

		if (!is_marker(p, e, "<<<<<<< SEARCH")) {
			p = next;
			continue;
		}
		if (++n > EXTRACT_MAX_EDITS) {
			snprintf(why, whylen, "more than %d edits", EXTRACT_MAX_EDITS);
			error = -EINVAL;
			goto out;
		}
		s0 = p = next;
		while (*p && !is_marker(p, line_end(p, &next), "======="))
			p = next;
		s1 = p;
		r0 = p = *p ? next : p;
		while (*p && !is_marker(p, line_end(p, &next), ">>>>>>> REPLACE"))
			p = next;
		r1 = p;
		if (!*p) {
			snprintf(why, whylen, "edit %d is not closed by '=======' and "
			    "'>>>>>>> REPLACE' lines", n);
			error = -EINVAL;
			goto out;
		}
		p = next;
		free(search);
		free(repl);
		search = dup_range(s0, s1);
		repl = dup_range(r0, r1);
		if (!search || !repl) {
			error = -ENOMEM;
			goto out;
		}
		if (!*search) {
			snprintf(why, whylen, "edit %d has an empty SEARCH part", n);
			error = -EINVAL;
			goto out;
		}
		if ((hits = count(cur, search, &hit)) != 1) {
			snprintf(why, whylen, hits ? "the SEARCH text of edit %d occurs "
			    "%zu times in the kernel; quote enough lines to make it unique" :
			    "the SEARCH text of edit %d is not in the kernel (it must "
			    "match the current kernel exactly, whitespace included)", n, hits);
			error = -EINVAL;
			goto out;
		}
		if (buf_add(&b, cur, (size_t)(hit - cur)) < 0 || buf_addstr(&b, repl) < 0 ||
		    buf_addstr(&b, hit + strlen(search)) < 0) {
			buf_free(&b);
			snprintf(why, whylen, "the edited kernel is over %u bytes",
			    EXTRACT_MAX_SOURCE);
			error = -EINVAL;
			goto out;
		}
		free(cur);
		cur = buf_detach(&b, NULL);
		if (!cur) {
			error = -ENOMEM;
			goto out;
		}
	}
	if (n > 0) {
		*out = cur;
		cur = NULL;
		error = 0;
		why[0] = '\0';
	}
out:
	free(cur);
	free(search);
	free(repl);
	return error;
}

/* The static checks that mark exploits: a flagged kernel goes back to the
 * model with the finding instead of costing an evaluation. */
static int
static_ok(const char *src, const char *backend, int fp32, char *why,
    size_t whylen)
{
	json_t *checks = json_array(), *flags = json_array(), *c;
	size_t i;
	int error = 0;

	if (!checks || !flags) {
		error = -ENOMEM;
		goto out;
	}
	if ((error = srccheck_text(src, strlen(src), strcmp(backend, "cpu") ?
	    SRCCHECK_CUDA : SRCCHECK_C, fp32, checks, flags)) < 0) {
		snprintf(why, whylen, "the kernel could not be scanned: %s",
		    strerror(-error));
		error = -EINVAL;
		goto out;
	}
	json_array_foreach(checks, i, c) {
		if (json_is_true(json_object_get(c, "passed")))
			continue;
		snprintf(why, whylen, "the kernel was refused by the static check "
		    "%s: %s", json_string_value(json_object_get(c, "name")),
		    json_string_value(json_object_get(c, "detail")) ?
		    json_string_value(json_object_get(c, "detail")) : "");
		error = -EINVAL;
		break;
	}
out:
	json_decref(checks);
	json_decref(flags);
	return error;
}

int
llm_extract(const char *answer, const char *parent, const char *backend,
    int fp32_problem, char **source, enum extract_kind *kind, char *why,
    size_t whylen)
{
	struct block bl[64];
	size_t n, pick = (size_t)-1;
	char *src = NULL;
	enum extract_kind k = EXTRACT_BLOCK;
	int error;

	if (!answer || !*answer) {
		snprintf(why, whylen, "the answer was empty");
		return -EINVAL;
	}
	if (strstr(answer, "<<<<<<< SEARCH")) {
		if (!parent) {
			snprintf(why, whylen, "the answer holds search/replace edits but "
			    "there was no kernel to edit; answer with the whole kernel");
			return -EINVAL;
		}
		if ((error = llm_apply_edits(answer, parent, &src, why, whylen)) < 0)
			return error == -ENOENT ? -EINVAL : error;
		k = EXTRACT_EDIT;
	} else {
		n = blocks(answer, bl, sizeof(bl) / sizeof(bl[0]));
		for (size_t i = 0; i < n; i++) {
			char *t;

			if (!bl[i].complete || !bl[i].lang_ok)
				continue;
			if (!(t = dup_range(bl[i].start, bl[i].end)))
				return -ENOMEM;
			if (pick == (size_t)-1 || llm_has_entry(t) ||
			    !llm_has_entry(src)) {
				free(src);
				src = t;
				pick = i;
			} else {
				free(t);
			}
		}
		if (!src) {
			snprintf(why, whylen, n ? "no complete ```%s code block in the "
			    "answer (a block must be closed by its fence)" : "no ```%s "
			    "code block in the answer", strcmp(backend, "cpu") ? "cuda" : "c");
			return -EINVAL;
		}
	}
	if (strlen(src) > EXTRACT_MAX_SOURCE) {
		snprintf(why, whylen, "the kernel is over %u bytes", EXTRACT_MAX_SOURCE);
		error = -EINVAL;
	} else if (!llm_has_entry(src)) {
		snprintf(why, whylen, "the kernel does not define kernelbot_forward "
		    "(the ABI's entry point)");
		error = -EINVAL;
	} else {
		error = static_ok(src, backend, fp32_problem, why, whylen);
	}
	if (error < 0) {
		free(src);
		return error;
	}
	*source = src;
	*kind = k;
	return 0;
}
