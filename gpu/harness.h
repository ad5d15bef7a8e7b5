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
 * A harness call that imports repository or LLM-written code ("trace",
 * "equivalent"): the same protocol, run inside the sandbox (gpu/sandbox.h,
 * docs/sandbox.md) with the compiler profile, because such code runs
 * whatever it likes at import.
 */
struct harness_opts {
	const char *const *ro_paths;	/* NULL-terminated: every file or folder the request
					   names that the harness reads (absolute, real paths) */
	const char *tmp_dir;		/* where the call's scratch folder is made and removed;
					   NULL: $TMPDIR, else /tmp */
	size_t mem_bytes;		/* 0: HARNESS_SANDBOX_MEM */
	int gpu;			/* -1: no GPU device at all (trace and equivalence run
					   on the CPU); N: that GPU, CUDA device 0 inside */
	const char *stage;		/* names the call in errors ("trace"); NULL: the verb */
};
#define HARNESS_OPTS_INIT { NULL, NULL, 0, -1, NULL }

#define HARNESS_SANDBOX_MEM	((size_t)16 << 30)	/* a full-size problem's inputs on the CPU */

/*
 * harness_call() for untrusted code. A fresh scratch folder (HOME, TMPDIR
 * and the working directory; the only writable place) is made under
 * o->tmp_dir and removed after the call; the harness, the interpreter (its
 * virtualenv, or its prefix outside /usr) and o->ro_paths are shown
 * read-only; no network, an environment built from nothing, a memory
 * limit, and the deadline (timeout_ms; 0 = SANDBOX_DEFAULT_TIMEOUT_MS)
 * kills the whole process tree. Returns as harness_call(), plus:
 * -ENOTSUP when the host cannot sandbox, err naming the missing features
 * (unless KERNELBOT_EVAL_UNSANDBOXED=1 or KERNELBOT_SANDBOX_ALLOW_DEGRADED=1,
 * the developer fallbacks: then it runs with whatever confinement the host
 * has, and says so on the log); -EACCES when a path
 * of o->ro_paths is not readable by the sandbox's uid. On -ETIMEDOUT err
 * says "STAGE: timed out after N s"; a harness killed by SIGKILL before
 * its deadline (the memory limit, most likely) is -EPROTO saying so.
 */
int harness_call_sandboxed(const json_t *request, int timeout_ms,
    const struct harness_opts *o, json_t **reply, char *err, size_t errlen);

/*
 * A problem's entry points other than the defaults (get_init_inputs,
 * get_inputs, get_input_variants), as .kernelbot.yml's init:, inputs: and
 * variants: give them: each a function name of the problem file, a
 * "module:function" of a module on its path, or a literal list as JSON
 * text (gpu/harness/kbh/entry.py reads all three); NULL for the default.
 * path: folders (absolute) put first on the module's sys.path, so that it
 * imports its own package (a repository's root, its src/), each shown
 * read-only to the sandbox that runs it; NULL-terminated, none: the
 * problem's own folder only.
 */
#define HARNESS_PATH_MAX 8

struct harness_entry {
	const char *init, *inputs, *variants;
	const char *path[HARNESS_PATH_MAX + 1];
};

/*
 * Put e's entry points that are not NULL into a harness request under
 * the keys PREFIX + "init", "inputs", "variants" + SUFFIX: the trace verb
 * takes "init", the judge "init_fn"; and its path as "module_path" (a
 * list), which harness_call_sandboxed() and the judge's reference process
 * show read-only. 0 or -ENOMEM.
 */
int harness_entry_put(json_t *req, const struct harness_entry *e, const char *suffix);

/*
 * The names of the failed checks of a sandbox_run() checks array, with
 * each one's detail ("net_ns (no network namespace: ...); seccomp (...)"),
 * into out. The number of failed checks (0: out is "").
 */
int harness_failed_checks(const json_t *checks, char *out, size_t outlen);

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
