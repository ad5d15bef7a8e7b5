/*
 * jsonx: the few helpers kernelbot needs on top of jansson. Every JSON
 * value in the program is a jansson json_t; this module only adds bounded
 * parsing with readable errors, typed getters and dumping into a buf.
 */
#ifndef KB_COMMON_JSONX_H
#define KB_COMMON_JSONX_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"

/*
 * Parse len bytes of JSON (any value at the top). 0 and *out (the caller's
 * reference), or -EINVAL with "line L column C: reason" in err.
 */
int jsonx_parse(const char *data, size_t len, json_t **out, char *err,
    size_t errlen);

/* Read and parse a file of at most max bytes: -EFBIG past it, -errno. */
int jsonx_load_file(const char *path, size_t max, json_t **out, char *err,
    size_t errlen);

/* Serialize v (jansson dump flags) onto b. 0, -ENOBUFS, -ENOMEM. */
int jsonx_dump(const json_t *v, size_t flags, struct buf *b);

/*
 * Typed getters on an object member; a missing member or one of another
 * type yields the default (the getters never fail). `path` may be dotted:
 * "forges.github.token_file" walks nested objects.
 */
json_t *jsonx_path(const json_t *root, const char *path);
const char *jsonx_str(const json_t *o, const char *path, const char *def);
long long jsonx_int(const json_t *o, const char *path, long long def);
double jsonx_num(const json_t *o, const char *path, double def);
int jsonx_bool(const json_t *o, const char *path, int def);

/* A new json array of strings from a NULL-terminated list. */
json_t *jsonx_strv(const char *const *v);

#endif
