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

#define EMIT_MAX_VERSIONS (1 + IR_MAX_VARIANTS)
#define EMIT_MAX_CUTS 256	/* group cuts compiler.c may add to fit CG_NV */

/*
 * One version of the kernel: a graph lowered and planned for one set of
 * input shapes. A source holds one or more. One is kernelbot_forward
 * itself, its symbols prefixed "kb_" as ever; with more, version i is a
 * static kb_v<i>_forward whose symbols start with "kb_v<i>_" (C has no
 * namespaces), and kernelbot_forward dispatches on the input shapes.
 */
struct emit_version {
	struct cg *g;
	struct schedule s;	/* what it was built with */
	int fallback;		/* the search's schedule failed here: the default's */
	int over_root;		/* emission failed: this group's kernel needed more
				 * than CG_NV index variables; else -1 */
	int recompute;		/* a reduction its kernels repeat at a cost
				 * (cg_emit.recompute); else -1 */
	int ncuts;		/* nodes materialized beyond cg_plan's choice, */
	int cuts[EMIT_MAX_CUTS];	/* so that such groups fit (compiler.c) */
	char prefix[16];	/* of its kernels and statics */
	char fn[32];		/* its entry */
};

/*
 * A source under construction: each version appends to kern and fns,
 * and the flags say which shared parts (emitted once, before them) the
 * versions use.
 */
struct emit_src {
	struct buf kern;	/* CUDA: __global__ kernels and their statics */
	struct buf fns;		/* the versions' entry functions */
	int scratch;		/* CUDA: kb_scratch */
	int nsites;		/* CUDA: kb_scratch_at's call sites so far, its keys */
	int cublas, cudnn;	/* CUDA: library handles (cublas: CU_LIB_* bits) */
	int attn;		/* CUDA: the fused attention kernel */
};

/* Append version v (planned) to src. 0, or -errno with err filled
 * ("unsupported: ..."); src may then hold part of it (the caller
 * truncates kern and fns to where they were). */
int emit_cpu(struct emit_version *v, struct emit_src *src, char *err, size_t errlen);
int emit_cuda(struct emit_version *v, struct emit_src *src, char *err, size_t errlen);

/* The whole source: header, the backend's preludes, the versions, and
 * for more than one the dispatching kernelbot_forward. */
int emit_source(const struct emit_version *v, int nv, const struct emit_src *src, int cuda,
    struct buf *out);

/* 1 when the CPU backend computes convolution node id as im2col + GEMM
 * (float32, 1-D/2-D, strided operands): plan.c then materializes it; else
 * it is computed inline (direct) inside its consumer. */
int emit_cpu_conv_gemm_ok(const struct cg *g, int id);

/* "kb_check(&inputs[i], code, bits, rank, (const int64_t[]){...})" for an
 * input or output node: the entry check of its dtype, shape, layout. */
void emit_tensor_check(const struct cg *g, int id, struct buf *b);

/* The entry's pointer to an input or output node's data. */
void emit_tensor_pointer(const struct cg *g, int id, const char *ptr, const char *restrict_kw,
    struct buf *b);

/* 1 for a node a kernel writes that is neither an input nor an output:
 * the entry function's scratch. */
int emit_is_scratch(const struct cg_node *n);

/* A one-line summary of the nodes fused into the group rooted at root. */
void emit_group_summary(const struct cg *g, int root, struct buf *b);

/* DLPack dtype code and bits of a dtype. */
void emit_dl_dtype(enum ir_dtype dt, int *code, int *bits);

/* "{2, 3}" */
void emit_shape_literal(int rank, const int64_t *shape, struct buf *b);

/* Names: inputs in0.., outputs out0.., scratch s<node>. */
void emit_buffer_names(const struct cg *g, char (*names)[24], const char **ptrs);

#endif
