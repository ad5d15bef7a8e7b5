/*
 * profile: what Nsight Compute says about a correct CUDA candidate, as
 * figures and as a short paragraph for the stage 3 prompts (issue 7,
 * item 5; docs/profile.md).
 *
 * profile_run() evaluates the candidate once more through the evaluator
 * (gpu/eval.h: one trial, one timing round, no baselines) with a
 * "profile" request: the judge starts the candidate's worker again under
 * `ncu --csv --page raw --metrics ...` inside the same sandbox a
 * sanitizer run uses, for one forward call on one input set, so only the
 * candidate's kernels are profiled, never the judge's. The CSV comes back
 * in the evaluator's result and is parsed here.
 *
 * ncu missing, without counter permission (ERR_NVGPUCTRPERM), past its
 * deadline or with no report is not an error of the caller's job: the
 * result says why (status "unavailable" / "failed") and callers fall back
 * to the timings and the roofline floor.
 */
#ifndef KB_GPU_PROFILE_H
#define KB_GPU_PROFILE_H

#include <jansson.h>
#include <stddef.h>

#include "gpu/eval.h"

#define PROFILE_MAX_KERNELS 256		/* distinct kernels kept from one report */
#define PROFILE_MAX_ROWS 4096		/* launches read from one report */
#define PROFILE_MAX_COLUMNS 4096
#define PROFILE_CSV_MAX (4u << 20)
#define PROFILE_SUMMARY_MAX 800		/* bytes of the paragraph, about */
#define PROFILE_TOP 3			/* kernels and stall reasons in the paragraph */
#define PROFILE_LAUNCH_COUNT 64		/* kernel launches ncu profiles at most */
#define PROFILE_DEFAULT_TIMEOUT_S 180	/* the ncu run, replays included */
#define PROFILE_NAME_MAX 96

/* The warp stall reasons read (WarpStateStats' metric family). */
#define PROFILE_N_STALLS 17
extern const char *const profile_stall_names[PROFILE_N_STALLS];

/* One kernel: the launches with the same name, block and grid, merged.
 * A figure the report lacks is NAN (doubles) or -1 (ints). */
struct profile_kernel {
	char name[PROFILE_NAME_MAX];	/* shortened: no return type, no arguments */
	int launches;
	double time_ns;			/* gpu__time_duration.sum, summed over launches */
	double dram_bytes;		/* dram__bytes.sum, summed */
	double dram_pct;		/* dram__throughput % of peak, time-weighted */
	double sm_pct;			/* sm__throughput % of peak, time-weighted */
	double fp32_flop;		/* 2 ffma + fadd + fmul thread instructions, summed */
	double sm_hz;			/* SM clock ncu measured (sm__cycles_elapsed.avg.per_second) */
	int sm_count;			/* launch__sm_count */
	double cc;			/* compute capability, 9.0 */
	double occ_achieved;		/* sm__warps_active % of peak, time-weighted */
	double occ_theoretical;		/* sm__maximum_warps_per_active_cycle_pct */
	int regs;			/* launch__registers_per_thread */
	int block;			/* threads per block */
	long long grid;			/* blocks */
	double smem_block;		/* launch__shared_mem_per_block bytes */
	const char *limiter;		/* "registers", "shared memory", "block size",
					 * "blocks per SM", NULL when unknown */
	double stall[PROFILE_N_STALLS];	/* cycles per issued instruction, time-weighted */
};

struct profile_report {
	struct profile_kernel *k;	/* by time, longest first */
	size_t n;
	size_t rows;			/* launches read */
	int missing;			/* expected metrics absent from the header */
};

#define PROFILE_REPORT_INIT { NULL, 0, 0, 0 }

/*
 * Parse ncu's `--csv --page raw` output (lines before the header and
 * ncu's "==PROF==" lines are skipped; quoted fields, thousands separators,
 * "n/a", scaled units). 0 with r filled (r->n may be 0: no kernel ran);
 * -EPROTO with err for text that is not such a report; -ENOBUFS past the
 * named limits; -ENOMEM.
 */
int profile_parse_csv(const char *text, size_t len, struct profile_report *r,
    char *err, size_t errlen);

void profile_report_free(struct profile_report *r);

/*
 * The paragraph for the prompts (about PROFILE_SUMMARY_MAX bytes): per
 * kernel, top PROFILE_TOP by time, achieved DRAM bandwidth against bw_gbs
 * (the evaluator's measured bandwidth; <= 0: against ncu's peak only),
 * FP32 rate against the peak from SM count x FP32 lanes per SM (by
 * compute capability) x 2 x the SM clock ncu measured, occupancy achieved
 * and theoretical with its limiter, the top stall reasons with their
 * shares. malloc'd; NULL only on ENOMEM.
 */
char *profile_summary(const struct profile_report *r, double bw_gbs);

/* The figures as JSON (a new array of objects; missing figures null). */
json_t *profile_report_json(const struct profile_report *r);

/* Peak FP32 FLOP/s of a kernel's device, or 0 when unknown; lanes gets
 * the FP32 lanes per SM used. */
double profile_fp32_peak(const struct profile_kernel *k, int *lanes);

/* ncu's arguments before the target (a new JSON array of strings). */
json_t *profile_ncu_args(void);

/*
 * Find ncu: $KERNELBOT_NCU, else ncu on PATH, else /usr/local/cuda/bin/ncu;
 * then check that `ncu --version` runs. 0 and a malloc'd path; -ENOENT
 * with the reason in why.
 */
int profile_ncu_locate(char **path, char *why, size_t whylen);

struct profile_opts {
	const char *problem;
	const char *kernel;		/* kernel.cu (or kernel.c: CPU, for tests) */
	const char *ncu;		/* NULL: profile_ncu_locate() */
	const char *backend;		/* NULL: as the evaluator decides */
	int device;
	int timeout_s;			/* the ncu run; 0 = PROFILE_DEFAULT_TIMEOUT_S */
	double bw_gbs;			/* measured bandwidth; 0 = from this evaluation */
	const char *class_name;
	int have_sandbox_exec;		/* eval_opts' */
	struct eval_env env;		/* eval_opts' (cli_eval_env); zero: all unset */
};

#define PROFILE_OPTS_INIT { NULL, NULL, NULL, NULL, 0, 0, 0, NULL, 0, { 0 } }

struct profile_result {
	const char *status;		/* "ok", "unavailable" (no ncu, no permission,
					 * no report), "failed" (the candidate is not
					 * correct, or the evaluator failed) */
	char reason[1024];		/* why, when not ok */
	char *summary;			/* malloc'd paragraph when ok */
	struct profile_report report;
	double bw_gbs;			/* what the summary compared with */
	json_t *command;		/* ncu's argv as the judge ran it, or NULL */
	json_t *eval;			/* the evaluator's object for the candidate, or NULL */
};

/*
 * Profile one kernel. 0 with res filled (read res->status: a missing or
 * refused ncu is 0 with "unavailable"); -EINVAL with err for bad options
 * or a problem the evaluator rejects. Free res with profile_result_free.
 */
int profile_run(const struct profile_opts *o, struct profile_result *res,
    char *err, size_t errlen);

void profile_result_free(struct profile_result *res);

#endif
