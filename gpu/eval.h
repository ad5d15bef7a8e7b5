/*
 * eval: `kernelbot eval` without the command line. Static checks on each
 * candidate's source, the native candidates compiled in parallel, then one
 * harness call (verb "evaluate": the trusted judge, gpu/harness/kbh/
 * judge.py) for the whole batch with a fresh seed, and the judge's reply
 * merged with compile results and static findings into one JSON object per
 * candidate. The judge keeps eager and torch.compile timings (never expected
 * outputs) in a baseline cache under the compile cache's directory
 * (<cache>/baselines), so a repeat evaluation of a problem skips building
 * torch.compile. By default the judge is a server kept running between
 * evaluations (gpu/judgesrv.h), with a one-shot judge as the fallback.
 * docs/evaluation.md describes the protocol and the output.
 */
#ifndef KB_GPU_EVAL_H
#define KB_GPU_EVAL_H

#include <jansson.h>
#include <stddef.h>

#include "gpu/eval_result.h"
#include "gpu/harness.h"	/* the result as C: parse eval_run()'s array there */

#define EVAL_MAX_CANDIDATES 1024
#define EVAL_DEFAULT_TRIALS 5
#define EVAL_DEFAULT_TIMEOUT_S 60	/* per candidate, after its build */
#define EVAL_MAX_TRIALS 100
#define EVAL_ERROR_CHARS 4000		/* per errors[] entry fed back to an LLM */
#define EVAL_ADAPTIVE_MAX_ROUNDS 30	/* the judge's cap without --rounds (10 x 3) */
#define EVAL_SEED_MASK 0x7fffffffffffffffull	/* seeds are 63 bits, as the judge reads them */

/*
 * What the evaluator takes from the process environment. The library reads
 * no environment variable for these: the CLI fills them, in one place
 * (cli_eval_env() in cli/cli.h), and a caller below the CLI is handed them
 * through its own options. Zero is each variable unset.
 */
struct eval_env {
	const char *tmp_dir;		/* TMPDIR: the working directory's parent;
					 * NULL or "" = /tmp */
	int unsandboxed;		/* KERNELBOT_EVAL_UNSANDBOXED=1: the compiler
					 * and the candidates run unconfined, where no
					 * sandbox is (developer mode; a failed check) */
	int judge_late;			/* KERNELBOT_JUDGE_EARLY=0: neither the judge
					 * server nor an early one-shot judge; one plain
					 * harness call after the compiles */
	int judge_server_off;		/* KERNELBOT_JUDGE_SERVER=0: as eval_opts'
					 * judge_server_off */
	int keep_workdir;		/* KERNELBOT_EVAL_KEEP set (any value): leave
					 * the working directory for a post-mortem */
	int allow_degraded;		/* KERNELBOT_SANDBOX_ALLOW_DEGRADED=1: the
					 * judge runs where the host lacks a sandbox
					 * feature (each missing one a failed check) */
	int spot_sample_set;		/* KERNELBOT_SPOT_SAMPLE set and not empty: */
	long spot_sample;		/* elements per output a spot check before the
					 * last compares (0: all), as strtol reads it */
	int check_fraction_set;		/* KERNELBOT_CHECK_FRACTION, a number from 0
					 * to 1 (other values: unset, with a warning): */
	double check_fraction;		/* the chance a timed run's outputs are checked */
	int perturb_off;		/* KERNELBOT_PERTURB=0: fixed timing inputs */
	double baseline_drift;		/* KERNELBOT_BASELINE_DRIFT, in (0, 100): the
					 * judge's baseline drift limit; 0 = its default */
};

struct eval_opts {
	const char *problem;
	const char *const *candidates;
	size_t n_candidates;
	const char *backend;		/* "cpu", "cuda", NULL = cuda when a GPU is present */
	int device;			/* CUDA ordinal */
	int trials;
	int timeout_s;
	int sanitize;			/* compute-sanitizer memcheck + racecheck on a
					 * correct CUDA candidate: 0 no; 1 yes (no
					 * compute-sanitizer: a failed check); 2 where
					 * the host has it (else a skipped check) */
	int rounds, reps, warmup;	/* timing; 0 = the judge's defaults */
	const char *baselines;		/* "eager,compile" (default), "eager", "none" */
	double atol, rtol;		/* < 0: per-dtype defaults */
	const char *class_name;		/* the problem's module class, "Model" */
	struct harness_entry entry;	/* its entry points; NULLs: the defaults */
	int jobs;			/* parallel compiles; 0 = online CPUs */
	int have_sandbox_exec;		/* this binary has `kernelbot sandbox-exec` */
	int fresh_baselines;		/* ignore the baseline cache; measure and refresh it */
	int judge_server_off;		/* --no-judge-server: a one-shot judge, as
					 * env.judge_server_off */
	const json_t *profile;		/* the judge's "profile" request ({"tool", "args",
					 * "timeout_s"}: gpu/profile.h), or NULL */
	size_t mem_bytes;		/* a worker's memory limit; 0 = eval_default_mem(runners) */
	int runners;			/* evaluations this host runs at once (the default
					 * memory limit's share); 0 = 1 */
	size_t disk_bytes;		/* a worker's scratch quota; 0 = the sandbox's default */
	int build_timeout_s;		/* a native candidate's compile deadline; 0 =
					 * EVAL_BUILD_TIMEOUT_S (gpu/eval_build.h) */
	/*
	 * --seed: the evaluation's seed (below 2^63) instead of a fresh one,
	 * to reproduce a result (its model parameters and every trial's
	 * inputs). Never for a search: a fixed seed is one a kernel could
	 * learn. The spot checks' positions and the timed runs' input changes
	 * come from the system's RNG either way.
	 */
	int seed_given;
	unsigned long long seed;
	struct eval_env env;		/* EVAL_OPTS_INIT: all unset */
};

#define EVAL_OPTS_INIT { NULL, NULL, 0, NULL, 0, EVAL_DEFAULT_TRIALS, \
	EVAL_DEFAULT_TIMEOUT_S, 0, 0, 0, -1, NULL, -1, -1, NULL, { NULL, NULL, NULL, { NULL } }, 0, 0, 0, 0, \
	NULL, 0, 0, 0, 0, 0, 0, { 0 } }

#define EVAL_MEM_CAP ((size_t)32 << 30)	/* the default memory limit's ceiling */
#define EVAL_MEM_FLOOR ((size_t)1 << 30)	/* and its floor */

/*
 * The default memory limit of one worker: 3/4 of the host's memory shared
 * by runners evaluations at once (runners < 1: 1), within
 * [EVAL_MEM_FLOOR, EVAL_MEM_CAP].
 */
size_t eval_default_mem(int runners);

/*
 * Evaluate. Each result carries "seed" and "environment" (gpu/evalenv.h:
 * what the measurement depended on, and the `kernelbot eval` flags that
 * repeat it). 0 and *out (a JSON array, one object per candidate, in order;
 * the caller's reference): the serialization, which a caller reads through
 * eval_result_parse() (gpu/eval_result.h), never by key. -EINVAL: the problem or the options are bad
 * (err says how; exit status 2). Other -errno: the evaluator itself could
 * not run (no harness, no sandbox, a crashed judge; exit status 1).
 */
int eval_run(const struct eval_opts *o, json_t **out, char *err, size_t errlen);

#endif
