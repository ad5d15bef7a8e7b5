/*
 * evalenv: what a measurement of `kernelbot eval` depended on, as the
 * result's "environment" object (docs/evaluation.md, "Output"), so that a
 * speedup can be reproduced and a reproduction that differs can be told
 * why: the host's CPU and how many logical CPUs it has and this process
 * may use, the thread settings in effect (OMP_NUM_THREADS, OMP_PROC_BIND,
 * OMP_PLACES, MKL_NUM_THREADS, and torch's own count as the judge reports
 * it), the GPU and its driver, the compiler, its version and the flags of
 * the kernel's build, Python and PyTorch, the seed, and the `kernelbot
 * eval` flags that repeat the evaluation.
 *
 * Everything here is read on the C side (the judge only adds what it
 * alone knows: the Python, PyTorch and torch thread count of its reply),
 * so the object is the same for `eval` by hand, `optimize` and the bot.
 */
#ifndef KB_GPU_EVALENV_H
#define KB_GPU_EVALENV_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/device.h"
#include "gpu/eval.h"

/*
 * The environment variables that change a CPU measurement, in the order
 * a reproduce command assigns them. Each is passed to the judge (gpu/
 * harness.c) and to the workers (the request's worker_env) exactly as set
 * here, never defaulted, so that what is recorded is what ran.
 */
extern const char *const evalenv_thread_vars[];

/*
 * The CPU model from the text of /proc/cpuinfo ("model name", else
 * "Hardware" or "Processor", else "cpu model"), into out. 0, or -ENOENT
 * when none of those lines is there (out is then "").
 */
int evalenv_cpu_model(const char *cpuinfo, char *out, size_t len);

/*
 * The `kernelbot eval` flags that repeat an evaluation made with o on
 * backend with seed, as a JSON array of strings: --backend, --seed, and
 * each option that changes what is measured and differs from the
 * default (--trials, --rounds, --reps, --warmup, --baselines, --atol,
 * --rtol, --class, --device, --sanitize). Not the problem, the candidates,
 * --timeout, --jobs or the judge server's switches (none changes a
 * timing). NULL on ENOMEM.
 */
json_t *evalenv_args(const struct eval_opts *o, const char *backend, uint64_t seed);

struct evalenv_in {
	const struct eval_opts *o;
	const char *backend;		/* "cpu" | "cuda" */
	const char *arch;		/* "sm_90" on CUDA, NULL on the CPU */
	const struct gpu_device *gpu;	/* NULL on the CPU */
	const json_t *reply;		/* the judge's reply (python, torch, torch_threads), or NULL */
	uint64_t seed;
	int seed_given;			/* --seed: 1; a fresh one: 0 */
	int native;			/* a kernel.c/.cu was built: record the compiler */
};

/*
 * The "environment" object (keys in docs/evaluation.md). Runs the
 * compiler once for its version (a trusted host tool, as compile.c's
 * identity does); a missing compiler leaves those keys null. NULL on
 * ENOMEM.
 */
json_t *evalenv_json(const struct evalenv_in *in);

#endif
