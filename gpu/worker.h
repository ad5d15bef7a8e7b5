/*
 * worker: the untrusted side of an evaluation (docs/evaluation.md). One
 * process per candidate, launched by the judge through `kernelbot
 * sandbox-exec`: it sets up the device, locks itself down, and only then
 * loads the candidate's shared object, so the candidate's constructors
 * already run confined. It then answers JSON-line commands on stdin
 * (replies on the original stdout; fd 1 is pointed at stderr so the
 * candidate's prints cannot forge a reply).
 *
 * The worker never sees expected outputs: it reads inputs from the
 * judge's read-only directory, allocates and poisons the outputs, calls
 * kernelbot_forward, and writes what the kernel produced into its scratch
 * for the judge to compare. Before each timed run it writes the judge's
 * chosen input elements ("perturb"), outside the timed region, so no
 * timed call sees inputs it has seen before; a dump can return the
 * inputs' state for the judge to compare with its own copy.
 */
#ifndef KB_GPU_WORKER_H
#define KB_GPU_WORKER_H

#include <stddef.h>

/* Named limits on what the judge's manifest and commands may ask for. */
#define WORKER_MAX_TENSORS 256		/* inputs or outputs of one set (kbh/judge.py TENSORS_MAX) */
#define WORKER_MAX_DIMS 8
#define WORKER_MAX_SETS 4096
#define WORKER_MAX_SLOTS 8		/* input sets resident at once for timing */
#define WORKER_MAX_REPS 100000
#define WORKER_MAX_FDS 16		/* sealed snapshots one time reply carries */
#define WORKER_MAX_PERTURB 16384	/* judge's element changes before one timed run */
#define WORKER_LINE_MAX (16u << 20)	/* one command (a time request's changes) */
#define WORKER_MANIFEST_MAX (16u << 20)
#define WORKER_DEFER_MS 5		/* wait before the second look at outputs */

struct worker_opts {
	const char *so_path;	/* the candidate; NULL with null */
	const char *dir;	/* the judge's input directory (manifest.json) */
	const char *scratch;	/* where output files go */
	int cuda;		/* backend */
	int device;		/* CUDA ordinal as this process sees it */
	int lockdown;		/* 0 only under compute-sanitizer */
	size_t mem_limit;	/* INTERIM unsandboxed runs: address space the
				 * candidate may add beyond the worker's own; 0 = none */
	int null;		/* no candidate: a forward that returns at once,
				 * whose requests the judge times for what a
				 * request holds beside the call (its clock floor) */
};

#define WORKER_OPTS_INIT { NULL, NULL, NULL, 0, 0, 1, 0, 0 }

/*
 * Run the worker until "quit" or end of input. Returns the process exit
 * status: 0 after quit/EOF, 1 after a device failure (reported as a
 * reply), 3 when the candidate could not be loaded (reported), 2 for
 * bad options.
 */
int worker_main(const struct worker_opts *o);

#endif
