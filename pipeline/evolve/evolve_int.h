/*
 * evolve_int: helpers shared by the files of pipeline/evolve (not a
 * public contract).
 */
#ifndef KB_PIPELINE_EVOLVE_EVOLVE_INT_H
#define KB_PIPELINE_EVOLVE_EVOLVE_INT_H

#include <jansson.h>
#include <stddef.h>

/* mkdir -p with mode 0755: 0 or -errno. */
int evo_mkdir_p(const char *path);

/*
 * Write len bytes to path through a temporary file in the same folder and
 * a rename, so a crash leaves the old file or the new one, never half of
 * one. 0 or -errno.
 */
int evo_write_file(const char *path, const void *data, size_t len);

/* The same for a JSON value, indented. */
int evo_write_json(const char *path, const json_t *v);

/* "PATH/NAME" into out; -ENAMETOOLONG when it does not fit. */
int evo_join(char *out, size_t outlen, const char *dir, const char *name);

#endif
