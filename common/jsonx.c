#include "common/jsonx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
jsonx_parse(const char *data, size_t len, json_t **out, char *err,
    size_t errlen)
{
	json_error_t je;
	json_t *v;

	v = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!v) {
		if (err)
			snprintf(err, errlen, "line %d column %d: %s", je.line,
			    je.column, je.text);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int
jsonx_load_file(const char *path, size_t max, json_t **out, char *err,
    size_t errlen)
{
	struct buf b = BUF_INIT(max);
	int error;

	if ((error = buf_read_file(&b, path)) < 0) {
		if (err)
			snprintf(err, errlen, "%s", strerror(-error));
	} else {
		error = jsonx_parse(buf_cstr(&b), b.len, out, err, errlen);
	}
	buf_free(&b);
	return error;
}

struct dump_ctx {
	struct buf *b;
	int error;
};

static int
dump_cb(const char *p, size_t n, void *arg)
{
	struct dump_ctx *c = arg;

	return (c->error = buf_add(c->b, p, n)) < 0 ? -1 : 0;
}

int
jsonx_dump(const json_t *v, size_t flags, struct buf *b)
{
	struct dump_ctx c = { b, 0 };
	size_t before = b->len;

	if (json_dump_callback(v, dump_cb, &c, flags) < 0) {
		buf_truncate(b, before);
		return c.error < 0 ? c.error : -EINVAL;
	}
	return 0;
}

json_t *
jsonx_path(const json_t *root, const char *path)
{
	const char *p = path, *dot;
	json_t *v = (json_t *)root;
	char key[256];

	while (v && *p) {
		size_t n;

		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(key) || !json_is_object(v))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		v = json_object_get(v, key);
		p = dot ? dot + 1 : p + n;
	}
	return v;
}

const char *
jsonx_str(const json_t *o, const char *path, const char *def)
{
	json_t *v = jsonx_path(o, path);

	return json_is_string(v) ? json_string_value(v) : def;
}

long long
jsonx_int(const json_t *o, const char *path, long long def)
{
	json_t *v = jsonx_path(o, path);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

double
jsonx_num(const json_t *o, const char *path, double def)
{
	json_t *v = jsonx_path(o, path);

	return json_is_number(v) ? json_number_value(v) : def;
}

int
jsonx_bool(const json_t *o, const char *path, int def)
{
	json_t *v = jsonx_path(o, path);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

json_t *
jsonx_strv(const char *const *v)
{
	json_t *a = json_array();

	for (; a && v && *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}
