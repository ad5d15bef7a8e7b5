/*
 * yamldoc: YAML files read into a jansson tree, so configuration code reads
 * one kind of tree whatever the file format, while every node keeps the
 * line it came from for error messages ("kernelbot.yml:12: listen: ...").
 *
 * YAML 1.2 core schema for plain scalars (null, true/false, integers,
 * floats, .inf/.nan); quoted and block scalars are always strings.
 * Anchors and aliases are refused (they make small files expand without
 * bound), as are duplicate keys and non-scalar keys.
 */
#ifndef KB_COMMON_YAMLDOC_H
#define KB_COMMON_YAMLDOC_H

#include <jansson.h>
#include <stddef.h>

struct yamldoc;

#define YAMLDOC_MAX_BYTES (1u << 20)
#define YAMLDOC_MAX_DEPTH 64

/*
 * Parse a YAML document from memory; `name` is used in error messages.
 * An empty document gives a null root. 0, or -EINVAL with
 * "NAME:LINE:COL: reason" in err; -ENOMEM.
 */
int yamldoc_parse(const char *name, const char *data, size_t len,
    struct yamldoc **out, char *err, size_t errlen);

/*
 * Read and parse a regular file of at most YAMLDOC_MAX_BYTES: -EFBIG past
 * it; -EINVAL with "PATH: not a regular file" for a FIFO, socket or device
 * (refused at once, never waited on).
 */
int yamldoc_load(const char *path, struct yamldoc **out, char *err,
    size_t errlen);

/* The tree; borrowed, lives as long as the document. */
json_t *yamldoc_root(const struct yamldoc *d);

/* The document's name as given to parse/load. */
const char *yamldoc_name(const struct yamldoc *d);

/*
 * The 1-based line where node starts, 0 if it is not from this document or
 * is null/true/false (jansson shares those; use yamldoc_member_line).
 */
int yamldoc_line(const struct yamldoc *d, const json_t *node);

/* The line of member `key` of mapping `parent`, 0 if there is none. */
int yamldoc_member_line(const struct yamldoc *d, const json_t *parent,
    const char *key);

void yamldoc_free(struct yamldoc *d);

#endif
