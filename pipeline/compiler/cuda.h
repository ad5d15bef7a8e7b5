/*
 * cuda: state shared by the CUDA backend's files (emit_cuda.c: generated
 * kernels; cuda_lib.c: library calls and scans). Internal.
 */
#ifndef KB_PIPELINE_COMPILER_CUDA_H
#define KB_PIPELINE_COMPILER_CUDA_H

#include "pipeline/compiler/cg.h"

struct cu {
	struct cg_emit e;
	struct cg *g;
	const struct schedule *s;
	const char **ptrs;
	struct buf *kern;	/* __global__ kernels */
	struct buf *host;	/* kernelbot_forward's body */
	int nk;			/* kernels so far */
	int cublas, cudnn;	/* libraries the host code uses */
};

/* One line of host code (indented once). */
void cu_hline(struct cu *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cuBLAS strided-batched GEMM for a CG_GEMM node. */
int cu_gemm(struct cu *c, int root);
/* cuDNN forward convolution for a CG_CONV node. */
int cu_conv(struct cu *c, int root);
/* A block per row scan (cumsum/cumprod). */
int cu_scan(struct cu *c, int root);

/* 0 when a GEMM operand can be handed to cuBLAS as it is (unit stride in
 * one of its matrix dims, batch dims collapsible to one stride). */
int cu_gemm_operand_ok(const struct cg *g, int gemm, int operand);

#endif
