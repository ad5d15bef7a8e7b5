/*
 * cuda: state shared by the CUDA backend's files (emit_cuda.c: generated
 * kernels; cuda_lib.c: library calls and scans). Internal.
 */
#ifndef KB_PIPELINE_COMPILER_CUDA_H
#define KB_PIPELINE_COMPILER_CUDA_H

#include "pipeline/compiler/cg.h"
#include "pipeline/compiler/emit.h"

struct cu {
	struct cg_emit e;
	struct cg *g;
	const struct schedule *s;
	const char **ptrs;
	const char *prefix;	/* of the version's kernels and statics (emit.h) */
	struct buf *kern;	/* __global__ kernels */
	struct buf *host;	/* kernelbot_forward's body */
	int nk;			/* kernels so far */
	int nconv;		/* convolutions so far */
	int cublas, cudnn;	/* libraries the host code uses (cublas: CU_LIB_*) */
	int ngemm;		/* cuBLASLt GEMMs so far */
	int scratch;		/* the host code calls kb_scratch */
	int block;		/* threads per block of the group being emitted */
	int rr;			/* its team kernel keeps rows in registers (row_regs) */
	int64_t rr_len;		/* of that length */
	int split;		/* blocks of a cluster that share a row (row_split), 1 */
	int launched;		/* a group kernel comes before the one being emitted */
};

#define CU_LIB_CUBLAS	1	/* struct cu's and emit_src's cublas bits */
#define CU_LIB_CUBLASLT	2

/* One line of host code (indented once). */
void cu_hline(struct cu *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The per-device state (scratch pool, library handles) the versions'
 * host code uses: kb_scratch(), kb_cublas(), kb_cudnn(). */
void cu_lib_prelude(const struct emit_src *src, struct buf *out);
/* The fused attention kernel (a template), emitted once for all versions. */
extern const char cu_attn_kernel[];
/* cuBLAS strided-batched GEMM for a CG_GEMM node; with gemm_algo >= 1,
 * cuBLASLt's heuristic answer of rank gemm_algo - 1 (fp32). */
int cu_gemm(struct cu *c, int root);
/* cuDNN forward convolution for a CG_CONV node. */
int cu_conv(struct cu *c, int root);
/* The whole problem as one fused attention kernel when it is exactly
 * softmax(q k^T / c + mask) v (cuda_attn.c) and the schedule allows it:
 * 1 when emitted, 0 when not (the generic path runs). */
int cu_attention(struct cu *c);
/* A block per row scan (cumsum/cumprod). */
int cu_scan(struct cu *c, int root);
/* The one-pass scan of schedule scan 1 (cuda_scan.c): 1 when emitted, 0
 * when it does not apply (cu_scan's path runs). */
int cu_scan_chunks(struct cu *c, int root);

/* 0 when a GEMM operand can be handed to cuBLAS as it is (unit stride in
 * one of its matrix dims, batch dims collapsible to one stride). */
int cu_gemm_operand_ok(const struct cg *g, int gemm, int operand);

#endif
