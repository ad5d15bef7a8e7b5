/*
 * emit: the backends (emit_c.c, emit_cuda.c) and what they share
 * (emit_common.c). Internal to pipeline/compiler/.
 */
#ifndef KB_PIPELINE_COMPILER_EMIT_H
#define KB_PIPELINE_COMPILER_EMIT_H

#include "common/buf.h"
#include "pipeline/compiler/cg.h"

extern const char emit_c_prelude[];
extern const char emit_cuda_prelude[];
extern const char emit_check_fn[];

/* Generate the whole source for a planned graph. 0, or -errno with
 * g->err / err filled ("unsupported: ..."). */
int emit_cpu(struct cg *g, const struct schedule *s, struct buf *out, char *err, size_t errlen);
int emit_cuda(struct cg *g, const struct schedule *s, struct buf *out, char *err, size_t errlen);

/* 1 when the CPU backend computes convolution node id as im2col + GEMM
 * (float32, 1-D/2-D, strided operands): plan.c then materializes it; else
 * it is computed inline (direct) inside its consumer. */
int emit_cpu_conv_gemm_ok(const struct cg *g, int id);

/* The header comment: problem, schedule, and one line per group. */
int emit_header(const struct cg *g, const struct schedule *s, const char *backend, struct buf *out);

/* A one-line summary of the nodes fused into the group rooted at root. */
void emit_group_summary(const struct cg *g, int root, struct buf *b);

/* DLPack dtype code and bits of a dtype. */
void emit_dl_dtype(enum ir_dtype dt, int *code, int *bits);

/* "{2, 3}" */
void emit_shape_literal(int rank, const int64_t *shape, struct buf *b);

/* Names: inputs in0.., outputs out0.., scratch s<node>. */
void emit_buffer_names(const struct cg *g, char (*names)[24], const char **ptrs);

#endif
