/*
 * cg: the compiler's own graph and the expression emitter shared by the
 * backends. Internal to pipeline/compiler/ (compiler.h is the contract).
 *
 * Lowering (lower.c) turns the graph IR into a small set of primitive
 * nodes: pointwise ops, affine views, reshapes, reductions, scans, GEMM and
 * convolution. Composite ops (softmax, norms, losses, pooling) become
 * chains of primitives, so every backend handles them with the same few
 * emitters, and fusion falls out of one rule: everything that is not
 * materialized is recomputed inline where it is used (expr.c).
 */
#ifndef KB_PIPELINE_COMPILER_CG_H
#define KB_PIPELINE_COMPILER_CG_H

#include <stdint.h>

#include "common/buf.h"
#include "pipeline/compiler/ir.h"
#include "pipeline/compiler/schedule.h"

#define CG_MAX_RANK	IR_MAX_RANK
#define CG_MAX_NODES	16384	/* after decomposition */
#define CG_NV		32	/* loop variables and index temps per kernel */
#define CG_ERR_MAX	256
#define CG_LARGE_REDUCTION 64	/* reductions this long get a loop level of their own */
#define CG_CPU_GRAIN	131072	/* CPU: less work than this (elements) runs on one thread */
#define CG_ROW_CACHE_MAX 8	/* rows a CUDA team kernel keeps in shared memory */
/* A reduction inlined where the loops around it run it more often than it
 * has elements (a group norm's statistics read per element of a pooling
 * window, through an index it cannot be hoisted past) is materialized
 * when the repeated work, in elements reduced, passes both what one
 * evaluation of it reduces and this (a kernel launch's worth on CUDA, an
 * OpenMP region's on the CPU): compiler.c. */
#define CG_RECOMPUTE_CPU	(INT64_C(1) << 16)
#define CG_RECOMPUTE_CUDA	(INT64_C(1) << 24)
#define CG_UNROLL_ALL	16	/* CUDA team loops of at most this many steps a thread unroll fully */

enum cg_op {
	CG_INPUT,	/* ABI input number i[0] */
	CG_CONST,	/* the scalar f[0] (or i[0] for integers), broadcast */
	/* unary pointwise: arg[0] */
	CG_NEG, CG_ABS, CG_EXP, CG_LOG, CG_LOG1P, CG_EXPM1, CG_SQRT, CG_RSQRT,
	CG_RECIP, CG_SIN, CG_COS, CG_ERF, CG_FLOOR, CG_CEIL, CG_SIGN,
	CG_SIGMOID, CG_TANH, CG_NOT, CG_RELU, CG_SILU, CG_MISH, CG_HARDSWISH,
	CG_HARDSIGMOID, CG_SELU, CG_GELU, CG_GELU_TANH,
	CG_LEAKY,	/* f[0] slope */
	CG_ELU,		/* f[0] alpha */
	CG_SOFTPLUS,	/* f[0] beta, f[1] threshold */
	CG_CLAMP,	/* f[0] lo if i[0], f[1] hi if i[1] */
	CG_CAST,	/* to the node's dtype */
	CG_POWS,	/* x ** f[0] */
	/* binary pointwise: arg[0], arg[1] (broadcast to the node's shape) */
	CG_ADD, CG_SUB, CG_MUL, CG_DIV, CG_DIV_TRUNC, CG_DIV_FLOOR, CG_POW,
	CG_MAX2, CG_MIN2, CG_EQ, CG_NE, CG_LT, CG_LE, CG_GT, CG_GE, CG_AND, CG_OR,
	CG_WHERE,	/* arg[0] ? arg[1] : arg[2] */
	/* index-dependent pointwise */
	CG_TRIU, CG_TRIL,	/* i[0] diagonal, over the last two dims */
	CG_PAD,		/* arg[0] padded: i[d] = low pad of dim d, f[0] fill */
	CG_CAT,		/* arg[0] ++ arg[1] along dim i[0] */
	CG_LOOKUP,	/* arg[0] (1-D) at index arg[1] (the node's shape) */
	CG_TAKE,	/* arg[0] at dim i[0] indexed by arg[1]; the node's dims are arg[0]'s without i[0] */
	CG_IOTA,	/* f[0] + f[1] * (the index along dim i[0]): arange */
	/* views */
	CG_VIEW,	/* arg index = map(node index), affine */
	CG_RESHAPE,	/* same elements, row-major order */
	/* reductions over the dims in rmask of arg[0]; keepdim in i[0] */
	CG_RSUM, CG_RPROD, CG_RMAX, CG_RMIN, CG_RARGMAX, CG_RARGMIN,
	/* materialized: always a kernel (or library call) of their own */
	CG_CUMSUM, CG_CUMPROD,	/* along dim i[0] */
	CG_GEMM,	/* arg[0] [B.., M, K] x arg[1] [B.., K, N] * f[0] */
	CG_CONV,	/* arg[0] x [N, C, (H,) W], arg[1] w; i[]: see CG_CONV_* */
	CG_N_OPS,
};

/* CG_CONV attributes in i[]: spatial dims, then per dim (2 max) stride, pad, dilation. */
enum { CG_CONV_NSP = 0, CG_CONV_GROUPS = 1, CG_CONV_STRIDE = 2, CG_CONV_PAD = 4,
	CG_CONV_DIL = 6 };

struct cg_vmap {
	int64_t c[CG_MAX_RANK][CG_MAX_RANK];	/* arg dim d = sum_j c[d][j] * out_j + k[d] */
	int64_t k[CG_MAX_RANK];
};

struct cg_node {
	enum cg_op op;
	enum ir_dtype dtype;
	int rank;
	int64_t shape[CG_MAX_RANK];
	int arg[3];		/* operand nodes, -1 when unused */
	double f[3];
	int64_t i[8];
	uint32_t rmask;		/* reductions: reduced dims of arg[0] */
	struct cg_vmap *vmap;	/* CG_VIEW only */
	const char *name;	/* the IR value it stands for, or NULL */
	int output;		/* ABI output number, or -1 */
	int materialize;	/* a kernel of its own writes it to memory */
	int keep;		/* always materialized (a fold step's result, read
				 * by a library call or by every element of its epilogue) */
	int uses;
};

struct cg {
	const struct ir_graph *ir;
	int n;
	struct cg_node *nodes;
	int n_inputs;
	int input_node[IR_MAX_VALUES];	/* ABI input -> node */
	int n_outputs;
	int output_node[IR_MAX_OUTPUTS];
	char err[CG_ERR_MAX];		/* "unsupported: OP ..." and friends */
};

/*
 * Lower an IR graph, with the rewrites the schedule chooses (bn_fold). 0
 * and *out (free with cg_free); -ENOTSUP with "unsupported: OP (why)" in
 * err for an op or form not handled; -EINVAL for an IR that contradicts
 * itself; -E2BIG, -ENOMEM.
 */
int cg_lower(const struct ir_graph *ir, const struct schedule *s, struct cg **out, char *err,
    size_t errlen);
void cg_free(struct cg *g);

/* Mark the nodes that get their own kernel (outputs, library ops, and
 * what the schedule's fusion boundaries ask for). */
void cg_plan(struct cg *g, const struct schedule *s);

/* A node of the group rooted at root to materialize when that group's
 * kernel needs more than CG_NV index variables: the fused node whose
 * inlined expression holds about half of the group's loops. -1 when the
 * group has no node to cut at. */
int cg_plan_cut(const struct cg *g, int root);

int cg_is_pointwise(enum cg_op op);
int cg_is_reduction(enum cg_op op);
const char *cg_op_name(enum cg_op op);

/* Resolve a chain of affine views down to a materialized node: element
 * (idx) of node id lives at leaf[off + sum idx_d * strides[d]]. 0, or -1
 * when a reshape or a computed node is in the way. */
int cg_strided(const struct cg *g, int id, int *leaf, int64_t *off, int64_t *strides);

/* ------------------------------------------------ expression emitter */

struct cg_aff {
	int64_t c[CG_NV];	/* coefficients of the kernel's variables */
	int64_t k;
};

struct cg_map {
	int rank;
	struct cg_aff r[CG_MAX_RANK];
};

struct cg_scope;

enum cg_backend_kind { CG_CPU, CG_CUDA };

struct cg_emit {
	const struct cg *g;
	const struct schedule *sched;
	enum cg_backend_kind backend;
	const char **bufname;		/* node -> pointer expression when materialized */
	unsigned char *used;		/* node -> read or written by the current kernel */
	int nvars;
	struct {
		char name[24];
		struct cg_scope *scope;	/* where it is defined */
		int vec;		/* CUDA: varies across a thread's vector lanes */
		int64_t extent;		/* 0 <= var < extent; 0 when unknown */
		int iter;		/* enumerates an iteration space (a loop's, or a
					 * CUDA kernel's dim from its thread's linear
					 * index), not an index computed from others */
		int coop;		/* CUDA: 1 a team loop's variable (lane + i * team);
					 * 2 derived from one */
		int64_t rowstride;	/* CUDA: a team kernel's inner variable, its
					 * stride in the row's linear index; else 0 */
		char ridx[48];		/* CUDA row_regs: a team loop variable's
					 * element in the thread's register row; "" */
	} var[CG_NV];
	int ntemps;
	struct cg_scope *all;		/* every scope, for freeing */
	int vec_var;			/* CUDA vector lane variable, or -1 */
	int vec;			/* lanes */
	int root;			/* the node the current kernel computes */
	int red_level;			/* deepest root level a large reduction sits at */
	int red_rowlike;		/* a large reduction runs along its input's last dim */
	int64_t red_extent;		/* the longest such reduction */
	int nred;			/* reductions being emitted, outermost first */
	int red_node[16];
	struct cg_scope *red_loop[16];	/* their outermost loop scopes */
	int cut;			/* node to materialize: a long reduction runs inside another's loop */
	/* CUDA team kernels, schedule row_cache: rows that team loops read
	 * whole, kept in shared memory (expr_load.c row_cached). A kernel is
	 * emitted twice: a dry pass collects the rows, the second reads them
	 * from shared memory after a copy loop emitted at their first use. */
	int row_cache;			/* 0 off, 1 collect (dry pass), 2 use */
	struct cg_scope *rc_scope;	/* the team-uniform loop (one row per iteration) */
	int64_t row_len;		/* the inner loop's row length; 0 when none */
	int row_nvars;			/* its variables of extent > 1 */
	int64_t rc_bytes;		/* shared memory bytes per team used */
	/* schedule row_regs: the same rows kept in registers instead. Every
	 * team loop over rr_len elements walks the thread's part of the row
	 * in one layout, element (kb_lane + i * rr_team) * vec + j at
	 * register i * vec + j, fully unrolled (compile-time trip counts),
	 * so a thread only ever reads the elements it loaded itself and the
	 * array stays in registers. */
	int row_regs;			/* 1: rows go to registers (row_cache 1/2 as above) */
	int vec_red;			/* CUDA column teams: sums and products may
					 * carry vector lanes (an accumulator per lane) */
	int rr_team;			/* threads per team, a compile-time constant */
	int64_t rr_len;			/* the row length the layout covers */
	int team;			/* CUDA: threads of a team (kb_team), 0 where
					 * a kernel has none */
	int lse_ok;			/* CUDA: the team is a warp or a block, which
					 * kb_team_lse combines (schedule online) */
	int lse_local;			/* the max whose team combine online_pair
					 * (expr_loop.c) does itself, or -1 */
	char rr_inner[48];		/* the inner loop's register index of lane kb_j */
	int nrc;
	struct {
		int leaf;
		enum ir_dtype dtype;
		struct cg_aff outer;	/* the row's base offset */
		int64_t len;
		int64_t off;		/* bytes into the team's part */
		int filled;		/* its copy loop is emitted */
		int uses;		/* dry pass: reads seen */
		int team_read;		/* dry pass: a team loop reads it whole */
	} rc[CG_ROW_CACHE_MAX];
	int recompute;			/* the first reduction emitted inside loops that
					 * run it more often than it has elements, at a
					 * cost past CG_RECOMPUTE_*; -1 */
	int error;			/* first error (-ENOTSUP ...) */
	int over_vars;			/* that error is CG_NV reached, in root's kernel */
	char err[CG_ERR_MAX];
};

struct cg_val {
	char name[24];		/* temp name or literal */
	struct cg_scope *scope;	/* where it is defined (NULL: a literal) */
	int vec;
	enum ir_dtype dtype;
};

struct cg_scope {
	struct cg_scope *parent;
	struct cg_scope *next_all;
	int depth;		/* indentation */
	int guard;		/* nothing is hoisted above this scope */
	int uniform;		/* CUDA: every thread of the team runs it */
	int in_simd;		/* CPU: inside an omp simd loop */
	int par;		/* CPU: inside an omp parallel loop */
	int level;		/* root loop variables defined at or above it */
	struct buf head;	/* the loop header(s), emitted by close */
	struct buf body;
	int nmemo, capmemo;
	struct cg_memo *memo;
};

void cg_emit_init(struct cg_emit *e, const struct cg *g, const struct schedule *s,
    enum cg_backend_kind backend, const char **bufname);
void cg_emit_fini(struct cg_emit *e);
void cg_emit_reset_vars(struct cg_emit *e);

struct cg_scope *cg_scope_new(struct cg_emit *e, struct cg_scope *parent);
/* Append the scope (header, braces, body) to its parent's body. */
int cg_scope_close(struct cg_emit *e, struct cg_scope *s);
/* Append one line at the scope's indentation. */
void cg_line(struct cg_emit *e, struct cg_scope *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A new loop variable defined in scope s (the caller writes the loop). */
int cg_var_new(struct cg_emit *e, struct cg_scope *s, const char *prefix);

/* The map of a node read at the kernel's variables vars[0..rank). */
void cg_map_identity(struct cg_map *m, int rank, const int *vars);

/* Emit the value of node id at map m, computed at or inside scope s. */
int cg_ev(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out);

/* Emit, at or inside scope s, the reductions in node id's expression at
 * map m that read the graph's inputs only, none of the buffers other
 * kernels write (through pointwise ops and views; cg_ev finds them
 * afterwards): with pdl, what a kernel computes before it waits for the
 * kernels before it. How many, or -errno. */
int cg_ev_input_reductions(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m);

/* Record the first error (printf-style) and return it. */
int cg_fail(struct cg_emit *e, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Type promotion of two dtypes (the wider kind, then the wider size). */
enum ir_dtype cg_promote(enum ir_dtype a, enum ir_dtype b);

/* Bytes per element of a dtype. */
int cg_dtype_size(enum ir_dtype dt);

/* C type of a dtype ("float", "int64_t", ...); NULL when not supported. */
const char *cg_ctype(enum ir_dtype dt);

/* The row-major offset of a map into a contiguous tensor of shape. */
void cg_map_offset(const struct cg_map *m, int rank, const int64_t *shape,
    struct cg_aff *out);

#endif
