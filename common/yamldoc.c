#include "common/yamldoc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "common/buf.h"

struct node_line {
	const json_t *node;
	int line;
};

struct member_line {
	const json_t *parent;
	char *key;
	int line;
};

struct yamldoc {
	char *name;
	json_t *root;
	struct node_line *lines;	/* sorted by node address after parsing */
	size_t n_lines, cap_lines;
	struct member_line *members;	/* in document order */
	size_t n_members, cap_members;
};

struct parse_ctx {
	yaml_parser_t parser;
	struct yamldoc *doc;
	char *err;
	size_t errlen;
	char path[512];		/* the dotted key being parsed, for value errors */
	size_t path_len;
};

/* Append ".key" (or "key" at the root) or "[i]" to the path; the old length. */
static size_t
path_push(struct parse_ctx *c, const char *key, size_t index)
{
	size_t old = c->path_len;
	int n;

	if (key)
		n = snprintf(c->path + old, sizeof(c->path) - old, "%s%s",
		    old ? "." : "", key);
	else
		n = snprintf(c->path + old, sizeof(c->path) - old, "[%zu]", index);
	if (n < 0 || (size_t)n >= sizeof(c->path) - old)
		c->path[old] = '\0';	/* too long: the enclosing key is named */
	else
		c->path_len = old + (size_t)n;
	return old;
}

static void
path_pop(struct parse_ctx *c, size_t old)
{
	c->path_len = old;
	c->path[old] = '\0';
}

static int
ctx_error(struct parse_ctx *c, size_t line, size_t col, const char *what)
{
	if (c->err)
		snprintf(c->err, c->errlen, "%s:%zu:%zu: %s", c->doc->name,
		    line + 1, col + 1, what);
	return -EINVAL;
}

/*
 * A number too large for a double (1e400): "NAME:LINE: KEY: ..." like the
 * configuration's own value errors, so the message names the key.
 */
static int
range_error(struct parse_ctx *c, size_t line, size_t col, const char *text)
{
	if (!c->path_len)
		return ctx_error(c, line, col, "value out of range");
	if (c->err)
		snprintf(c->err, c->errlen, "%s:%zu: %s: %.40s is out of range",
		    c->doc->name, line + 1, c->path, text);
	return -EINVAL;
}

static int
note_line(struct yamldoc *d, const json_t *node, size_t line)
{
	if (d->n_lines == d->cap_lines) {
		size_t cap = d->cap_lines ? d->cap_lines * 2 : 64;
		struct node_line *p = realloc(d->lines, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->lines = p;
		d->cap_lines = cap;
	}
	d->lines[d->n_lines++] = (struct node_line){ node, (int)line + 1 };
	return 0;
}

/*
 * jansson's null, true and false are shared singletons, so their lines are
 * kept per mapping member instead of per node.
 */
static int
note_member(struct yamldoc *d, const json_t *parent, const char *key,
    size_t line)
{
	if (d->n_members == d->cap_members) {
		size_t cap = d->cap_members ? d->cap_members * 2 : 64;
		struct member_line *p = realloc(d->members, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->members = p;
		d->cap_members = cap;
	}
	if (!(d->members[d->n_members].key = strdup(key)))
		return -ENOMEM;
	d->members[d->n_members].parent = parent;
	d->members[d->n_members].line = (int)line + 1;
	d->n_members++;
	return 0;
}

static int
match_int(const char *s, long long *out)
{
	char *end;
	int base = 10;
	const char *p = s;

	if (*p == '-' || *p == '+')
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) {
		if (p != s)
			return 0;
		base = p[1] == 'x' ? 16 : 8;
		p += 2;
		s = p;
	}
	if (!*p)
		return 0;
	for (const char *q = p; *q; q++)
		if (!(base == 16 ? (q[0] >= '0' && q[0] <= '9') ||
		    (q[0] >= 'a' && q[0] <= 'f') || (q[0] >= 'A' && q[0] <= 'F') :
		    q[0] >= '0' && q[0] < '0' + (base == 8 ? 8 : 10)))
			return 0;
	errno = 0;
	*out = strtoll(s, &end, base);
	return errno == 0 && *end == '\0';
}

static int
match_float(const char *s, double *out)
{
	const char *p = s;
	int digits = 0;

	if (*p == '-' || *p == '+')
		p++;
	if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) {
		*out = *s == '-' ? -INFINITY : INFINITY;
		return 1;
	}
	if (p == s && (!strcmp(p, ".nan") || !strcmp(p, ".NaN") ||
	    !strcmp(p, ".NAN"))) {
		*out = NAN;
		return 1;
	}
	while (*p >= '0' && *p <= '9')
		p++, digits++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			digits++;
	if (!digits)
		return 0;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p)
		return 0;
	*out = strtod(s, NULL);
	return 1;
}

static json_t *
scalar_value(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	long long i;
	double f;

	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
	    strlen(s) != len)
		return json_stringn(s, len);
	if (!*s || !strcmp(s, "~") || !strcmp(s, "null") ||
	    !strcmp(s, "Null") || !strcmp(s, "NULL"))
		return json_null();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return json_false();
	if (match_int(s, &i))
		return json_integer(i);
	if (match_float(s, &f))
		return json_real(f);	/* jansson refuses non-finite reals: NULL */
	return json_stringn(s, len);
}

static int parse_node(struct parse_ctx *c, yaml_event_t *ev, int depth,
    json_t **out);

static int
next_event(struct parse_ctx *c, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&c->parser, ev))
		return ctx_error(c, c->parser.problem_mark.line,
		    c->parser.problem_mark.column,
		    c->parser.problem ? c->parser.problem : "malformed YAML");
	return 0;
}

static int
parse_mapping(struct parse_ctx *c, int depth, json_t *obj)
{
	yaml_event_t kev, vev;
	json_t *val;
	int error;

	for (;;) {
		if ((error = next_event(c, &kev)) < 0)
			return error;
		if (kev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&kev);
			return 0;
		}
		if (kev.type != YAML_SCALAR_EVENT) {
			error = ctx_error(c, kev.start_mark.line,
			    kev.start_mark.column, "mapping keys must be scalars");
			yaml_event_delete(&kev);
			return error;
		}
		if (json_object_get(obj, (const char *)kev.data.scalar.value)) {
			char what[300];
			snprintf(what, sizeof(what), "duplicate key '%.200s'",
			    (const char *)kev.data.scalar.value);
			error = ctx_error(c, kev.start_mark.line,
			    kev.start_mark.column, what);
			yaml_event_delete(&kev);
			return error;
		}
		if ((error = next_event(c, &vev)) < 0) {
			yaml_event_delete(&kev);
			return error;
		}
		error = note_member(c->doc, obj, (const char *)kev.data.scalar.value,
		    kev.start_mark.line);
		if (error == 0) {
			size_t old = path_push(c, (const char *)kev.data.scalar.value, 0);

			error = parse_node(c, &vev, depth + 1, &val);
			path_pop(c, old);
		} else
			yaml_event_delete(&vev);
		if (error == 0 &&
		    json_object_set_new(obj, (const char *)kev.data.scalar.value, val) < 0)
			error = -ENOMEM;
		yaml_event_delete(&kev);
		if (error < 0)
			return error;
	}
}

static int
parse_sequence(struct parse_ctx *c, int depth, json_t *arr)
{
	yaml_event_t ev;
	json_t *val;
	size_t old;
	int error;

	for (;;) {
		if ((error = next_event(c, &ev)) < 0)
			return error;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		old = path_push(c, NULL, json_array_size(arr));
		error = parse_node(c, &ev, depth + 1, &val);
		path_pop(c, old);
		if (error < 0)
			return error;
		if (json_array_append_new(arr, val) < 0)
			return -ENOMEM;
	}
}

/* Consumes ev (deletes it) and builds the node it starts. */
static int
parse_node(struct parse_ctx *c, yaml_event_t *ev, int depth, json_t **out)
{
	size_t line = ev->start_mark.line, col = ev->start_mark.column;
	json_t *v = NULL;
	int error = 0;

	if (depth > YAMLDOC_MAX_DEPTH) {
		yaml_event_delete(ev);
		return ctx_error(c, line, col, "nesting too deep");
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			error = ctx_error(c, line, col, "anchors are not supported");
		else if (!(v = scalar_value(ev)))
			error = range_error(c, line, col,
			    (const char *)ev->data.scalar.value);
		break;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		if (ev->type == YAML_MAPPING_START_EVENT ?
		    ev->data.mapping_start.anchor != NULL :
		    ev->data.sequence_start.anchor != NULL) {
			error = ctx_error(c, line, col, "anchors are not supported");
			break;
		}
		v = ev->type == YAML_MAPPING_START_EVENT ? json_object() : json_array();
		if (!v)
			error = -ENOMEM;
		else if (ev->type == YAML_MAPPING_START_EVENT)
			error = parse_mapping(c, depth, v);
		else
			error = parse_sequence(c, depth, v);
		break;
	case YAML_ALIAS_EVENT:
		error = ctx_error(c, line, col, "aliases are not supported");
		break;
	default:
		error = ctx_error(c, line, col, "unexpected YAML event");
		break;
	}
	yaml_event_delete(ev);
	if (error == 0 && !json_is_null(v) && !json_is_boolean(v))
		error = note_line(c->doc, v, line);
	if (error < 0) {
		json_decref(v);
		return error;
	}
	*out = v;
	return 0;
}

static int
cmp_node_line(const void *a, const void *b)
{
	const struct node_line *x = a, *y = b;

	return x->node < y->node ? -1 : x->node > y->node;
}

int
yamldoc_parse(const char *name, const char *data, size_t len,
    struct yamldoc **out, char *err, size_t errlen)
{
	struct parse_ctx c = { .err = err, .errlen = errlen };
	yaml_event_t ev;
	int error, started = 0;

	if (!(c.doc = calloc(1, sizeof(*c.doc))) ||
	    !(c.doc->name = strdup(name ? name : "<yaml>"))) {
		free(c.doc);
		return -ENOMEM;
	}
	if (!yaml_parser_initialize(&c.parser)) {
		yamldoc_free(c.doc);
		return -ENOMEM;
	}
	started = 1;
	yaml_parser_set_input_string(&c.parser, (const unsigned char *)data, len);

	/* STREAM-START, then DOCUMENT-START or STREAM-END (empty file). */
	for (;;) {
		if ((error = next_event(&c, &ev)) < 0)
			goto out;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			c.doc->root = json_null();
			break;
		}
		if (ev.type == YAML_STREAM_START_EVENT ||
		    ev.type == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if ((error = parse_node(&c, &ev, 0, &c.doc->root)) < 0)
			goto out;
		if ((error = next_event(&c, &ev)) < 0)
			goto out;
		yaml_event_delete(&ev);	/* DOCUMENT-END */
		if ((error = next_event(&c, &ev)) < 0)
			goto out;
		if (ev.type != YAML_STREAM_END_EVENT) {
			error = ctx_error(&c, ev.start_mark.line,
			    ev.start_mark.column, "only one YAML document is allowed");
			yaml_event_delete(&ev);
			goto out;
		}
		yaml_event_delete(&ev);
		break;
	}
	if (c.doc->n_lines)
		qsort(c.doc->lines, c.doc->n_lines, sizeof(*c.doc->lines), cmp_node_line);
	*out = c.doc;
	c.doc = NULL;
out:
	if (started)
		yaml_parser_delete(&c.parser);
	yamldoc_free(c.doc);
	return error;
}

int
yamldoc_load(const char *path, struct yamldoc **out, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(YAMLDOC_MAX_BYTES);
	int error;

	if ((error = buf_read_regular(&b, path)) == -EFBIG)
		snprintf(err, errlen, "%s: larger than %u bytes", path,
		    YAMLDOC_MAX_BYTES);
	else if (error == -EINVAL)
		snprintf(err, errlen, "%s: not a regular file", path);
	else if (error < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(-error));
	else
		error = yamldoc_parse(path, buf_cstr(&b), b.len, out, err, errlen);
	buf_free(&b);
	return error;
}

json_t *
yamldoc_root(const struct yamldoc *d)
{
	return d->root;
}

const char *
yamldoc_name(const struct yamldoc *d)
{
	return d->name;
}

int
yamldoc_line(const struct yamldoc *d, const json_t *node)
{
	struct node_line key = { node, 0 }, *hit;

	if (!node || !d->n_lines)
		return 0;
	hit = bsearch(&key, d->lines, d->n_lines, sizeof(*d->lines), cmp_node_line);
	return hit ? hit->line : 0;
}

int
yamldoc_member_line(const struct yamldoc *d, const json_t *parent,
    const char *key)
{
	for (size_t i = 0; i < d->n_members; i++)
		if (d->members[i].parent == parent && !strcmp(d->members[i].key, key))
			return d->members[i].line;
	return 0;
}

void
yamldoc_free(struct yamldoc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_members; i++)
		free(d->members[i].key);
	free(d->members);
	json_decref(d->root);
	free(d->lines);
	free(d->name);
	free(d);
}
