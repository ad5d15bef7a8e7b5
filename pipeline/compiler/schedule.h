/*
 * schedule: the knobs of one compiled candidate, as a small value that an
 * evolutionary search can mutate, cross over and store as JSON.
 *
 * A schedule never changes what a kernel computes, only how: every value
 * of every field gives a correct kernel (the compiler clamps what does not
 * apply to a problem), so the search can move freely.
 */
#ifndef KB_PIPELINE_COMPILER_SCHEDULE_H
#define KB_PIPELINE_COMPILER_SCHEDULE_H

#include <jansson.h>
#include <stdint.h>

#include "common/buf.h"

struct ir_graph;

enum schedule_backend {
	SCHED_CPU,
	SCHED_CUDA,
};

/* How a reduction is spread over threads (CUDA). */
enum schedule_reduce {
	SCHED_RED_AUTO,		/* by the shape of the reduction */
	SCHED_RED_WARP,		/* one warp per row */
	SCHED_RED_BLOCK,	/* one block per row */
	SCHED_RED_THREAD,	/* one thread per output, serial reduction */
};

#define SCHEDULE_MAX_CUTS	64	/* fusion boundaries the search can toggle */

struct schedule {
	enum schedule_backend backend;
	int block;		/* CUDA threads per block: 64..1024, a power of two */
	int vec;		/* elements per vector access: 1, 2 or 4 (16 bytes of fp32) */
	int unroll;		/* independent iterations per thread: 1..8 */
	enum schedule_reduce reduce;
	int row_cache;		/* CUDA: keep a reduced row in shared memory: 0/1 */
	int row_regs;		/* CUDA: keep a team kernel's row in registers when it fits
				 * (<= 32 elements a thread): 0 no; 1 a block team grows
				 * (to 1024 threads) until a thread holds <= 16; 2 until
				 * <= 32 (half the threads, more blocks an SM). Before
				 * row_cache */
	int row_split;		/* CUDA: blocks of a thread-block cluster (sm_90) that
				 * share a register-held row: 1, 2 or 4. Each holds a
				 * part and they exchange partial reductions through
				 * distributed shared memory, so a long row needs fewer
				 * threads a block and more blocks fit an SM */
	int min_blocks;		/* CUDA team kernels: blocks an SM must hold at once
				 * (__launch_bounds__' second argument, capped at 2048
				 * threads an SM): 0 no hint, 2 or 4; registers a
				 * thread are capped to fit, so one block's loads
				 * overlap another's reductions */
	int rcp;		/* CUDA: a float division by a value fixed for the
				 * quotient's loop multiplies by its reciprocal: 0/1 */
	int stream;		/* CUDA: register rows loaded and outputs stored with
				 * evict-first cache hints (__ldcs/__stcs): 0/1 */
	int scan;		/* CUDA scans: 0 a segment per thread; 1 one pass of
				 * 16-byte chunks with warp-shuffle scans and one
				 * barrier per row */
	int tf32;		/* TF32 tensor cores in GEMM/conv (only if the tolerance allows) */
	int gemm_algo;		/* cuBLASLt heuristic rank: 0..7 */
	int conv_algo;		/* cuDNN algorithm: -1 heuristic, else 0..7 */
	int cpu_tile;		/* CPU GEMM block edge: 16..256 */
	int attn;		/* CUDA: softmax(q k^T / c + mask) v as one fused kernel: 0/1 */
	int bn_fold;		/* eval-mode batch_norm right after a conv or linear is
				 * folded into its weight and bias (a fold step per call,
				 * then the library call and a bias epilogue): 0/1 */
	int pdl;		/* CUDA (sm_90): the compiler's kernels after the first
				 * launch with programmatic dependent launch: each may
				 * start while the one before finishes and waits for
				 * its results (cudaGridDependencySynchronize) before
				 * reading anything: 0/1 */
	int online;		/* CUDA warp and block teams: a float max and the sum
				 * of exp(x - max) beside it (softmax, logsumexp,
				 * cross-entropy) in one team reduction of (max, sum)
				 * pairs, each thread's sum taken against its own max
				 * and rescaled: 0/1 */
	uint64_t cuts;		/* bit i: materialize fusion candidate i (cg_plan) */
};

/*
 * The starting point for a problem on a backend (ir may be NULL: generic
 * defaults).
 */
void schedule_default(struct schedule *s, const struct ir_graph *ir,
    enum schedule_backend backend);

/*
 * One random change to one field. rng is a caller-held xorshift state
 * (nonzero); the same state gives the same change.
 */
void schedule_mutate(struct schedule *s, uint64_t *rng);

/* Each field from a or b at random. */
void schedule_crossover(struct schedule *child, const struct schedule *a,
    const struct schedule *b, uint64_t *rng);

/* A new JSON object for s (the caller's reference), NULL on ENOMEM. */
json_t *schedule_to_json(const struct schedule *s);

/*
 * Read a schedule from JSON: missing fields keep their values in *s
 * (start from schedule_default); unknown fields and out-of-range values
 * are refused. 0, or -EINVAL with a sentence in err (s unchanged).
 */
int schedule_from_json(struct schedule *s, const json_t *j, char *err, size_t errlen);

/* A one-line description for the header of generated code. */
int schedule_describe(const struct schedule *s, struct buf *b);

/*
 * The schedule a generated kernel names in its leading comment (the
 * " * schedule: k=v ..." line schedule_describe wrote), applied over s:
 * 0, -ENOENT when the text has no such line, -EINVAL with the reason in
 * err when the line does not parse.
 */
int schedule_from_source(struct schedule *s, const char *src, char *err, size_t errlen);

/* 0 when a and b are the same schedule. */
int schedule_cmp(const struct schedule *a, const struct schedule *b);

/* The next value of a xorshift64* generator (state nonzero). */
uint64_t schedule_rand(uint64_t *rng);

#endif
