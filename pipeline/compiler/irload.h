/*
 * irload: the graph IR of a problem, for the commands and proposers that
 * need it (`kernelbot compile`, the compiler proposer of `kernelbot
 * optimize`). A .py problem is traced through the harness (verb "trace",
 * gpu/harness.h) in the sandbox, which is shown only that file: importing
 * it runs its code; anything else is read as graph IR JSON: the "ir" object
 * of `kernelbot trace --json`, or a whole trace reply.
 */
#ifndef KB_PIPELINE_COMPILER_IRLOAD_H
#define KB_PIPELINE_COMPILER_IRLOAD_H

#include <jansson.h>
#include <stddef.h>

#include "gpu/harness.h"

#define IRLOAD_TIMEOUT_S	600		/* one trace */
#define IRLOAD_MAX		(64u << 20)	/* an IR file */

/*
 * Load the IR of path (class_name: the module's class, NULL for "Model";
 * entry: its entry points, NULL for the defaults).
 * 0 and *ir (the caller's reference); -EINVAL with "PATH: trace failed:
 * ..." when the module does not trace; -errno (a missing file, a harness
 * that cannot run, a host that cannot sandbox: harness_call_sandboxed())
 * with a sentence in err ("trace: timed out after 600 s; ..." at the
 * deadline).
 */
int irload(const char *path, const char *class_name, const struct harness_entry *entry,
    json_t **ir, char *err, size_t errlen);

#endif
