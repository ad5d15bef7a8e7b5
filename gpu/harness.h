/*
 * harness: the C side of gpu/harness/, the Python adapter to PyTorch.
 *
 * One call is one child process: a JSON request on its stdin, one JSON
 * reply on its stdout. The reply's "ok" says whether the verb succeeded;
 * harness_call() fails only when the harness itself could not run or did
 * not answer. The child gets an environment built here (no tokens or keys
 * of the daemon leak into it).
 */
#ifndef KB_GPU_HARNESS_H
#define KB_GPU_HARNESS_H

#include <jansson.h>
#include <stddef.h>

/*
 * Where the interpreter and the entry script are. The interpreter is
 * $KERNELBOT_PYTHON, else the first of python3 on PATH and
 * /usr/bin/python3 that can import torch. The script is $KERNELBOT_HARNESS,
 * else harness/harness.py beside the binary (device bundles), the source
 * tree's gpu/harness/harness.py, then the installed data directory.
 * Found once per process. 0, or -ENOENT with a sentence in err.
 */
int harness_locate(const char **python, const char **script, char *err,
    size_t errlen);

/*
 * Send request, wait for the reply (at most timeout_ms; 0 = no limit).
 * 0 and *reply (the caller's reference); -ETIMEDOUT; -EPROTO when the
 * harness crashed or printed no JSON, with its stderr's tail in err;
 * -ENOENT when no interpreter or script could be found.
 */
int harness_call(const json_t *request, int timeout_ms, json_t **reply,
    char *err, size_t errlen);

/*
 * Run the harness in one of its own modes (`python -u harness.py ARGS...`)
 * with the judge's environment (the same as harness_call()'s child gets),
 * in /, to completion, at most timeout_ms: for a launcher that detaches a judge
 * server and exits. 0 when it exited 0; -ETIMEDOUT; -EPROTO with its
 * stderr's tail in err; -ENOENT as harness_locate().
 */
int harness_launch(const char *const *args, int timeout_ms, char *err,
    size_t errlen);

/*
 * What a judge behaves by besides its request, as text (the caller frees):
 * the interpreter, the script, every .py file of the harness's kbh/ and
 * kbh/ops/ (name, size, mtime), and the environment a judge gets. A judge server
 * serves only callers with the same identity. 0, -ENOENT or -ENOMEM.
 */
int harness_identity(char **out, char *err, size_t errlen);

#endif
