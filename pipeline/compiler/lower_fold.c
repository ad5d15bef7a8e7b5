/*
 * bn_fold: an eval-mode batch_norm whose input is read by nothing else
 * and comes straight from a convolution or a linear layer (linear, addmm,
 * a 2-D matmul with or without a bias add after it) is folded into that
 * layer:
 *
 *	s  = gamma / sqrt(running_var + eps)	per output channel
 *	w' = w * s				along the output channel
 *	b' = (b - running_mean) * s + beta
 *	y  = layer(x, w') + b'
 *
 * w' and b' are materialized: a fold step of two small kernels before the
 * library call, and the epilogue that follows it (fused with any pointwise
 * tail, e.g. SiLU) reads one parameter an element where it read four and
 * took an rsqrt. The parameters are kernel inputs that may change between
 * calls, so the fold runs on every call; nothing is kept across calls.
 * Folding rounds differently from normalizing after the layer (one
 * rounding of w * s per weight instead of one of y * s per output), well
 * inside the evaluator's tolerance; the schedule can turn it off.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/compiler/lower.h"

/* Count every {"ref": name} in j (args or kwargs of node user). */
static void
count_refs(struct lower *L, const json_t *j, int user)
{
	const char *k;
	const json_t *v;
	size_t i;
	int id;

	if (lw_is_ref(j)) {
		id = ir_find(L->ir, json_string_value(json_object_get(j, "ref")));
		if (id >= 0) {
			L->uses[id]++;
			L->user[id] = user;
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			count_refs(L, v, user);
	} else if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v)
			count_refs(L, v, user);
	}
}

int
lw_fold_prepare(struct lower *L)
{
	const struct ir_graph *ir = L->ir;
	size_t n = (size_t)ir->n_values;

	if (!(L->uses = calloc(n, sizeof(int))) || !(L->user = calloc(n, sizeof(int))) ||
	    !(L->fold_src = calloc(n, sizeof(int))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		L->fold_src[i] = -1;
	for (int i = ir->n_inputs; i < ir->n_values; i++) {
		count_refs(L, ir->v[i].args, i);
		count_refs(L, ir->v[i].kwargs, i);
	}
	/* an output is read by the caller: its layer's own result is needed */
	for (int o = 0; o < ir->n_outputs; o++)
		L->uses[ir->outputs[o]]++;
	return 0;
}

/* Argument k of IR node v as an already lowered per-channel vector of C
 * elements of dtype dt (below IR value `before`); -2 for null when
 * optional; -1 when it does not qualify. */
static int
channel_param(struct lower *L, const struct ir_value *v, int k, int before, int64_t C,
    enum ir_dtype dt, int optional)
{
	const json_t *a = json_array_get(v->args, (size_t)k);
	const struct cg_node *n;
	int p;

	if (!a || json_is_null(a))
		return optional ? -2 : -1;
	if (!lw_is_ref(a))
		return -1;
	p = ir_find(L->ir, json_string_value(json_object_get(a, "ref")));
	/* lowered already: only values before the layer are */
	if (p < 0 || p >= before || L->node_of[p] < 0)
		return -1;
	n = lw_N(L, L->node_of[p]);
	return n->rank == 1 && n->shape[0] == C && n->dtype == dt ? L->node_of[p] : -1;
}

/* The IR node that is the only reader of value v, when it is an op, else -1. */
static int
only_reader(const struct lower *L, int v, const char *op)
{
	int j = L->user[v];

	/* readers come after what they read: j <= v is no reader at all */
	if (L->uses[v] != 1 || j <= v)
		return -1;
	return strcmp(L->ir->v[j].op, op) ? -1 : j;
}

static int
ref_index(const struct lower *L, const json_t *a)
{
	return lw_is_ref(a) ? ir_find(L->ir, json_string_value(json_object_get(a, "ref"))) : -1;
}

/* 1 and *bn when the only reader of IR value v (the layer's output, or its
 * bias add) is an eval-mode batch_norm over dim 1 of the layer's output
 * that folds into the layer's weight w; the batch_norm is then lowered as
 * the layer. */
static int
bn_after(struct lower *L, int v, int w, struct lw_bn *bn)
{
	const struct ir_value *cur = L->cur, *b;
	int i = (int)(cur - L->ir->v), j = only_reader(L, v, "batch_norm"), mean, var, gamma;
	enum ir_dtype dt = cur->dtype;
	double eps = 1e-5;

	if (j < 0 || w < 0 || ref_index(L, json_array_get(L->ir->v[j].args, 0)) != v)
		return 0;
	b = &L->ir->v[j];
	if (cur->rank < 2 || !ir_dtype_is_float(dt) || b->dtype != dt || lw_N(L, w)->dtype != dt)
		return 0;
	/* both running statistics: inference normalization (else the
	 * batch's own statistics, which depend on the layer's output) */
	mean = channel_param(L, b, 1, i, cur->shape[1], dt, 0);
	var = channel_param(L, b, 2, i, cur->shape[1], dt, 0);
	gamma = channel_param(L, b, 3, i, cur->shape[1], dt, 1);
	bn->beta = channel_param(L, b, 4, i, cur->shape[1], dt, 1);
	if (mean < 0 || var < 0 || gamma == -1 || bn->beta == -1)
		return 0;
	if (b->kwargs && lw_num(json_object_get(b->kwargs, "eps"), &eps) < 0)
		eps = 1e-5;
	bn->mean = mean;
	bn->scale = lw_unary(L, CG_RSQRT, lw_binary(L, CG_ADD, var, lw_cst(L, eps, dt)));
	if (gamma >= 0)
		bn->scale = lw_binary(L, CG_MUL, bn->scale, gamma);
	if (bn->scale < 0)
		return 0;
	L->fold_src[j] = i;
	return 1;
}

int
lw_bn_find(struct lower *L, int w, struct lw_bn *bn)
{
	return L->fold_src && bn_after(L, (int)(L->cur - L->ir->v), w, bn);
}

int
lw_bn_find_bias(struct lower *L, int w, struct lw_bn *bn, int *bias)
{
	const struct ir_value *cur = L->cur, *add;
	int i = (int)(cur - L->ir->v), k, a0, a1, b;
	double alpha = 1;

	if (!L->fold_src || (k = only_reader(L, i, "add")) < 0)
		return 0;
	add = &L->ir->v[k];
	a0 = ref_index(L, json_array_get(add->args, 0));
	a1 = ref_index(L, json_array_get(add->args, 1));
	if (json_array_size(add->args) != 2 || (a0 == i) == (a1 == i) || add->rank != cur->rank ||
	    memcmp(add->shape, cur->shape, sizeof(int64_t) * (size_t)cur->rank))
		return 0;
	if (add->kwargs && lw_num(json_object_get(add->kwargs, "alpha"), &alpha) == 0 && alpha != 1)
		return 0;
	/* a bias per output channel (the last dim of [N, F]) */
	b = channel_param(L, add, a0 == i ? 1 : 0, i, cur->shape[cur->rank - 1], cur->dtype, 0);
	if (b < 0 || !bn_after(L, k, w, bn))
		return 0;
	L->fold_src[k] = i;
	*bias = b;
	return 1;
}

static int
keep(struct lower *L, int id)
{
	if (id >= 0)
		lw_N(L, id)->keep = 1;
	return id;
}

int
lw_bn_weight(struct lower *L, const struct lw_bn *bn, int w, int dim)
{
	int64_t shape[CG_MAX_RANK];
	int r;

	if (w < 0)
		return -1;
	r = lw_N(L, w)->rank;
	for (int d = 0; d < r; d++)
		shape[d] = d == dim ? lw_N(L, bn->scale)->shape[0] : 1;
	return keep(L, lw_binary(L, CG_MUL, w, lw_reshape(L, bn->scale, r, shape)));
}

int
lw_bn_bias(struct lower *L, const struct lw_bn *bn, int b)
{
	int t;

	if (b == -1)
		return -1;
	t = b == -2 ? lw_unary(L, CG_NEG, bn->mean) : lw_binary(L, CG_SUB, b, bn->mean);
	t = lw_binary(L, CG_MUL, t, bn->scale);
	if (bn->beta >= 0)
		t = lw_binary(L, CG_ADD, t, bn->beta);
	return keep(L, t);
}
