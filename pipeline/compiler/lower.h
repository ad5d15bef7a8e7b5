/*
 * lower: helpers shared by the IR -> cg lowering (lower.c builds nodes,
 * lower_ops.c maps each canonical op). Internal to pipeline/compiler/.
 * Every builder returns a node id, or -1 after recording an error in the
 * context (later builders given -1 return -1, so chains need no checks).
 */
#ifndef KB_PIPELINE_COMPILER_LOWER_H
#define KB_PIPELINE_COMPILER_LOWER_H

#include <jansson.h>

#include "pipeline/compiler/cg.h"

#define LW_TUPLE_MAX 64

struct lower {
	struct cg *g;
	const struct ir_graph *ir;
	int *node_of;			/* IR value -> cg node, -1 for tuples */
	int (*tuple)[LW_TUPLE_MAX];	/* IR value -> element nodes */
	const struct ir_value *cur;
	int error;
	/* bn_fold only (else NULL): IR value -> references to it (outputs
	 * count), the last node making one, and the IR value whose lowering
	 * has already applied it (a batch_norm or bias add folded into the
	 * layer before it), else -1 */
	int *uses;
	int *user;
	int *fold_src;
};

/* An eval-mode batch_norm to fold into the layer being lowered. */
struct lw_bn {
	int mean, beta;		/* nodes [C]; beta -2 when absent */
	int scale;		/* gamma / sqrt(var + eps), [C] */
};

#define LW_UNSUP(L, ...) lw_lfail((L), -ENOTSUP, __VA_ARGS__)

int lw_lfail(struct lower *L, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int lw_nnew(struct lower *L, enum cg_op op, enum ir_dtype dt, int rank,
    const int64_t *shape, int a0, int a1, int a2);
struct cg_node *lw_N(struct lower *L, int id);
int lw_cst(struct lower *L, double v, enum ir_dtype dt);
int lw_unary(struct lower *L, enum cg_op op, int a);
void lw_bshape(const struct cg_node *a, const struct cg_node *b, int *rank, int64_t *shape);
enum ir_dtype lw_promote(enum ir_dtype a, enum ir_dtype b);
int lw_binary(struct lower *L, enum cg_op op, int a, int b);
int lw_where3(struct lower *L, int c, int a, int b);
int lw_view(struct lower *L, int a, int rank, const int64_t *shape, const struct cg_vmap *m);
int lw_reshape(struct lower *L, int a, int rank, const int64_t *shape);
int lw_permute(struct lower *L, int a, const int *dims);
int lw_transpose(struct lower *L, int a, int d0, int d1);
int lw_expand(struct lower *L, int a, int rank, const int64_t *shape);
int lw_squeeze(struct lower *L, int a, uint32_t mask);
int lw_unsqueeze(struct lower *L, int a, int dim);
int lw_reduce(struct lower *L, enum cg_op op, int a, uint32_t mask, int keep);
int64_t lw_mask_numel(const struct cg_node *n, uint32_t mask);
int lw_mean(struct lower *L, int a, uint32_t mask, int keep);
int lw_variance(struct lower *L, int a, uint32_t mask, int keep, double correction);
/* The same with the mean (keepdim) already built. */
int lw_variance_mu(struct lower *L, int a, int mu, uint32_t mask, int keep, double correction);

const json_t *lw_arg(const struct lower *L, int i);
const json_t *lw_kw(const struct lower *L, const char *k);
int lw_is_ref(const json_t *v);
int lw_num(const json_t *v, double *out);
int lw_ref(struct lower *L, const json_t *v);
int lw_operand(struct lower *L, const json_t *v, int like);
double lw_kwnum(struct lower *L, const char *k, double def);
int lw_kwints(struct lower *L, const char *k, int64_t *out, int max);
uint32_t lw_dimmask(struct lower *L, int rank);

/* Lower IR value index i (a node); its result node, or -1 for tuples
 * (their elements go to L->tuple[i]) and errors. */
int lw_node(struct lower *L, const struct ir_value *v, int i);

/* bn_fold (lower_fold.c). Count the references to each IR value; 0 or
 * -ENOMEM. */
int lw_fold_prepare(struct lower *L);
/* 1 and *bn when the layer being lowered (L->cur, weight node w) is read
 * only by an eval-mode batch_norm over its dim 1 that can fold into it
 * (the batch_norm then lowers to the layer's result); else 0. */
int lw_bn_find(struct lower *L, int w, struct lw_bn *bn);
/* The same for a 2-D matmul read only by an add of a bias per output
 * channel (*bias, a node [F]) that the batch_norm reads. */
int lw_bn_find_bias(struct lower *L, int w, struct lw_bn *bn, int *bias);
/* The weight w scaled per output channel (its dim dim), materialized. */
int lw_bn_weight(struct lower *L, const struct lw_bn *bn, int w, int dim);
/* The folded bias from the layer's bias term b (-2: none), materialized. */
int lw_bn_bias(struct lower *L, const struct lw_bn *bn, int b);

/* The neural-network and shape ops (lower_nn.c); same contract. */
int lw_nn(struct lower *L, const struct ir_value *v, int i);

#endif
