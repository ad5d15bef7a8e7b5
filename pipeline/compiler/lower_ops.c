/*
 * The canonical ops (gpu/harness/kbh/ops.py, docs/graph-ir.md) in terms of
 * cg primitives. Anything not handled here fails with "unsupported: OP",
 * never with a guess.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/lower.h"

static const struct {
	const char *name;
	enum cg_op op;
} unary_ops[] = {
	{ "neg", CG_NEG }, { "abs", CG_ABS }, { "exp", CG_EXP }, { "log", CG_LOG },
	{ "log1p", CG_LOG1P }, { "expm1", CG_EXPM1 }, { "sqrt", CG_SQRT },
	{ "rsqrt", CG_RSQRT }, { "reciprocal", CG_RECIP }, { "sin", CG_SIN },
	{ "cos", CG_COS }, { "erf", CG_ERF }, { "floor", CG_FLOOR }, { "ceil", CG_CEIL },
	{ "sign", CG_SIGN }, { "sigmoid", CG_SIGMOID }, { "tanh", CG_TANH },
	{ "logical_not", CG_NOT }, { "relu", CG_RELU }, { "silu", CG_SILU },
	{ "mish", CG_MISH }, { "hardswish", CG_HARDSWISH },
	{ "hardsigmoid", CG_HARDSIGMOID }, { "selu", CG_SELU },
};

static const struct {
	const char *name;
	enum cg_op op;
} binary_ops[] = {
	{ "add", CG_ADD }, { "sub", CG_SUB }, { "mul", CG_MUL }, { "maximum", CG_MAX2 },
	{ "minimum", CG_MIN2 }, { "eq", CG_EQ }, { "ne", CG_NE }, { "lt", CG_LT },
	{ "le", CG_LE }, { "gt", CG_GT }, { "ge", CG_GE }, { "logical_and", CG_AND },
	{ "logical_or", CG_OR },
};

/* Elementwise binary with PyTorch's scalar typing: a Python number takes
 * the tensor operand's dtype (a float number with an integer tensor gives
 * float32). The result is cast to the IR's dtype by the caller. */
static int
lower_binary(struct lower *L, enum cg_op op)
{
	const json_t *a = lw_arg(L, 0), *b = lw_arg(L, 1);
	int ia, ib;

	if (lw_is_ref(a)) {
		ia = lw_ref(L, a);
		ib = lw_operand(L, b, ia);
	} else {
		ib = lw_ref(L, b);
		ia = lw_operand(L, a, ib);
	}
	return lw_binary(L, op, ia, ib);
}

static int
lower_pow(struct lower *L)
{
	const json_t *a = lw_arg(L, 0), *b = lw_arg(L, 1);
	double e;

	if (lw_is_ref(a) && !lw_is_ref(b) && lw_num(b, &e) == 0 &&
	    ir_dtype_is_float(lw_N(L, lw_ref(L, a))->dtype)) {
		int id = lw_unary(L, CG_POWS, lw_ref(L, a));
		if (id >= 0)
			lw_N(L, id)->f[0] = e;
		return id;
	}
	return lower_binary(L, CG_POW);
}

static int
lower_div(struct lower *L)
{
	const char *mode = json_string_value(lw_kw(L, "rounding_mode"));
	enum cg_op op = !mode ? CG_DIV : !strcmp(mode, "trunc") ? CG_DIV_TRUNC : CG_DIV_FLOOR;
	int id;

	id = lower_binary(L, op);
	if (id >= 0 && op == CG_DIV && !ir_dtype_is_float(lw_N(L, id)->dtype)) {
		/* int / int is float in PyTorch: compute in the result dtype */
		lw_N(L, id)->dtype = L->cur->dtype;
	}
	return id;
}

static int
lower_where(struct lower *L)
{
	int c = lw_ref(L, lw_arg(L, 0)), a, b;
	const json_t *ja = lw_arg(L, 1), *jb = lw_arg(L, 2);

	if (lw_is_ref(ja)) {
		a = lw_ref(L, ja);
		b = lw_operand(L, jb, a);
	} else if (lw_is_ref(jb)) {
		b = lw_ref(L, jb);
		a = lw_operand(L, ja, b);
	} else {
		a = lw_operand(L, ja, -1);
		b = lw_operand(L, jb, -1);
	}
	if (a >= 0 && b >= 0) {
		/* the IR knows the result dtype; scalars follow it */
		if (lw_N(L, a)->op == CG_CONST)
			lw_N(L, a)->dtype = L->cur->dtype;
		if (lw_N(L, b)->op == CG_CONST)
			lw_N(L, b)->dtype = L->cur->dtype;
	}
	return lw_where3(L, c, a, b);
}

static int
lower_clamp(struct lower *L, const char *klo, const char *khi)
{
	int id = lw_unary(L, CG_CLAMP, lw_ref(L, lw_arg(L, 0)));
	double v;

	if (id < 0)
		return -1;
	if (lw_num(lw_kw(L, klo), &v) == 0) {
		lw_N(L, id)->i[0] = 1;
		lw_N(L, id)->f[0] = v;
	}
	if (lw_num(lw_kw(L, khi), &v) == 0) {
		lw_N(L, id)->i[1] = 1;
		lw_N(L, id)->f[1] = v;
	}
	return id;
}

static int
lower_reduction(struct lower *L, enum cg_op op)
{
	int x = lw_ref(L, lw_arg(L, 0));
	int keep = json_is_true(lw_kw(L, "keepdim"));

	if (x < 0)
		return -1;
	if (!strcmp(L->cur->op, "mean"))
		return lw_mean(L, x, lw_dimmask(L, lw_N(L, x)->rank), keep);
	return lw_reduce(L, op, x, lw_dimmask(L, lw_N(L, x)->rank), keep);
}

/* argmax/argmin: dim=None reduces the flattened tensor. */
static int
lower_arg(struct lower *L, enum cg_op op)
{
	int x = lw_ref(L, lw_arg(L, 0)), keep = json_is_true(lw_kw(L, "keepdim"));
	struct cg_node *n;
	int64_t numel;

	if (x < 0)
		return -1;
	n = lw_N(L, x);
	if (json_is_null(lw_kw(L, "dim")) || !lw_kw(L, "dim")) {
		numel = ir_numel(n->rank, n->shape);
		x = lw_reshape(L, x, 1, &numel);
		x = lw_reduce(L, op, x, 1, 0);
		if (keep && x >= 0) {
			int64_t ones[CG_MAX_RANK];
			for (int d = 0; d < L->cur->rank; d++)
				ones[d] = 1;
			x = lw_reshape(L, x, L->cur->rank, ones);
		}
		return x;
	}
	return lw_reduce(L, op, x, lw_dimmask(L, n->rank), keep);
}

static int
lower_varstd(struct lower *L, int is_std)
{
	int x = lw_ref(L, lw_arg(L, 0)), v;

	if (x < 0)
		return -1;
	v = lw_variance(L, x, lw_dimmask(L, lw_N(L, x)->rank), json_is_true(lw_kw(L, "keepdim")),
	    lw_kwnum(L, "correction", 1));
	return is_std ? lw_unary(L, CG_SQRT, v) : v;
}

/* Drop the dims in mask (kept as size 1 by a keepdim reduction) unless keep. */
static int
maybe_squeeze(struct lower *L, int id, uint32_t mask, int keep)
{
	return keep ? id : lw_squeeze(L, id, mask);
}

static int
lower_logsumexp(struct lower *L, int x, uint32_t mask, int keep)
{
	enum ir_dtype dt;
	int m, mm, s;

	if (x < 0)
		return -1;
	dt = lw_N(L, x)->dtype;
	/* PyTorch replaces an infinite max by 0 so that all -inf rows give -inf, not NaN */
	m = lw_reduce(L, CG_RMAX, x, mask, 1);
	mm = lw_where3(L, lw_binary(L, CG_EQ, lw_unary(L, CG_ABS, m), lw_cst(L, INFINITY, dt)),
	    lw_cst(L, 0, dt), m);
	s = lw_reduce(L, CG_RSUM, lw_unary(L, CG_EXP, lw_binary(L, CG_SUB, x, mm)), mask, 1);
	return maybe_squeeze(L, lw_binary(L, CG_ADD, lw_unary(L, CG_LOG, s), mm), mask, keep);
}

static int
lower_softmax(struct lower *L, int log)
{
	int x = lw_ref(L, lw_arg(L, 0)), m, e, s;
	uint32_t mask;

	if (x < 0)
		return -1;
	mask = lw_dimmask(L, lw_N(L, x)->rank);
	if (lw_N(L, x)->rank == 0)
		return log ? lw_binary(L, CG_SUB, x, x) : lw_binary(L, CG_DIV, x, x);
	m = lw_reduce(L, CG_RMAX, x, mask, 1);
	e = lw_binary(L, CG_SUB, x, m);
	s = lw_reduce(L, CG_RSUM, lw_unary(L, CG_EXP, e), mask, 1);
	if (log)
		return lw_binary(L, CG_SUB, e, lw_unary(L, CG_LOG, s));
	return lw_binary(L, CG_DIV, lw_unary(L, CG_EXP, e), s);
}

/* Per-channel parameter p [C] viewed as [C, 1, ...] against x of rank r (channel dim 1). */
static int
per_channel(struct lower *L, int p, int r)
{
	int64_t shape[CG_MAX_RANK];

	if (p < 0)
		return -1;
	shape[0] = lw_N(L, p)->shape[0];
	for (int d = 1; d < r - 1; d++)
		shape[d] = 1;
	return lw_reshape(L, p, r - 1 > 0 ? r - 1 : 1, shape);
}

static int
opt_ref(struct lower *L, int i)
{
	const json_t *a = lw_arg(L, i);

	return json_is_null(a) || !a ? -2 : lw_ref(L, a);
}

/* y * w + b with optional w, b (-2 = absent). */
static int
affine(struct lower *L, int y, int w, int b)
{
	if (w >= 0)
		y = lw_binary(L, CG_MUL, y, w);
	if (b >= 0)
		y = lw_binary(L, CG_ADD, y, b);
	return (w == -1 || b == -1) ? -1 : y;
}

static int
normalize(struct lower *L, int x, uint32_t mask, double eps)
{
	int mu = lw_mean(L, x, mask, 1), d, var;
	enum ir_dtype dt = lw_N(L, x)->dtype;

	d = lw_binary(L, CG_SUB, x, mu);
	var = lw_variance_mu(L, x, mu, mask, 1, 0);
	return lw_binary(L, CG_MUL, d, lw_unary(L, CG_RSQRT, lw_binary(L, CG_ADD, var, lw_cst(L, eps, dt))));
}

static int
lower_layer_norm(struct lower *L)
{
	int x = lw_ref(L, lw_arg(L, 0)), r;
	int64_t ns[CG_MAX_RANK];
	int n = lw_kwints(L, "normalized_shape", ns, CG_MAX_RANK);
	uint32_t mask = 0;

	if (x < 0 || n < 0)
		return -1;
	r = lw_N(L, x)->rank;
	for (int d = r - n; d < r; d++)
		mask |= 1u << d;
	return affine(L, normalize(L, x, mask, lw_kwnum(L, "eps", 1e-5)), opt_ref(L, 1), opt_ref(L, 2));
}

static int
lower_group_norm(struct lower *L)
{
	int x = lw_ref(L, lw_arg(L, 0)), r, xr, y;
	int64_t G = (int64_t)lw_kwnum(L, "num_groups", 1), rs[3];
	struct cg_node *n;

	if (x < 0)
		return -1;
	n = lw_N(L, x);
	r = n->rank;
	if (r < 2 || G <= 0 || n->shape[1] % G)
		return LW_UNSUP(L, "unsupported: group_norm (channels not divisible by groups)"), -1;
	rs[0] = n->shape[0];
	rs[1] = G;
	rs[2] = ir_numel(r, n->shape) / (n->shape[0] ? n->shape[0] : 1) / G;
	xr = lw_reshape(L, x, 3, rs);
	y = normalize(L, xr, 1u << 2, lw_kwnum(L, "eps", 1e-5));
	y = lw_reshape(L, y, r, n->shape);
	return affine(L, y, opt_ref(L, 1) >= 0 ? per_channel(L, opt_ref(L, 1), r) : -2,
	    opt_ref(L, 2) >= 0 ? per_channel(L, opt_ref(L, 2), r) : -2);
}

static int
lower_instance_norm(struct lower *L)
{
	int x = lw_ref(L, lw_arg(L, 0)), r;
	uint32_t mask = 0;

	if (x < 0)
		return -1;
	r = lw_N(L, x)->rank;
	for (int d = 2; d < r; d++)
		mask |= 1u << d;
	return affine(L, normalize(L, x, mask, lw_kwnum(L, "eps", 1e-5)),
	    opt_ref(L, 1) >= 0 ? per_channel(L, opt_ref(L, 1), r) : -2,
	    opt_ref(L, 2) >= 0 ? per_channel(L, opt_ref(L, 2), r) : -2);
}

static int
lower_batch_norm(struct lower *L)
{
	int x = lw_ref(L, lw_arg(L, 0)), r, mean, var, y;
	double eps = lw_kwnum(L, "eps", 1e-5);
	enum ir_dtype dt;

	if (x < 0)
		return -1;
	r = lw_N(L, x)->rank;
	dt = lw_N(L, x)->dtype;
	if (r < 2)
		return LW_UNSUP(L, "unsupported: batch_norm on a %d-d input", r), -1;
	if (opt_ref(L, 1) == -2) {
		uint32_t mask = 1u;
		for (int d = 2; d < r; d++)
			mask |= 1u << d;
		y = normalize(L, x, mask, eps);
	} else {
		mean = per_channel(L, opt_ref(L, 1), r);
		var = per_channel(L, opt_ref(L, 2), r);
		y = lw_binary(L, CG_MUL, lw_binary(L, CG_SUB, x, mean),
		    lw_unary(L, CG_RSQRT, lw_binary(L, CG_ADD, var, lw_cst(L, eps, dt))));
	}
	return affine(L, y, opt_ref(L, 3) >= 0 ? per_channel(L, opt_ref(L, 3), r) : -2,
	    opt_ref(L, 4) >= 0 ? per_channel(L, opt_ref(L, 4), r) : -2);
}

/* a @ b with PyTorch's matmul rules (1-D operands, broadcast batch dims). */
static int
matmul(struct lower *L, int a, int b, double alpha)
{
	int64_t sa[CG_MAX_RANK], sb[CG_MAX_RANK], so[CG_MAX_RANK];
	int ra, rb, ro, squeeze_m = 0, squeeze_n = 0, id, batch;
	struct cg_node ta, tb;

	if (a < 0 || b < 0)
		return -1;
	if (lw_N(L, a)->rank == 1) {
		a = lw_unsqueeze(L, a, 0);
		squeeze_m = 1;
	}
	if (lw_N(L, b)->rank == 1) {
		b = lw_unsqueeze(L, b, 1);
		squeeze_n = 1;
	}
	if (a < 0 || b < 0)
		return -1;
	ra = lw_N(L, a)->rank;
	rb = lw_N(L, b)->rank;
	if (lw_N(L, a)->shape[ra - 1] != lw_N(L, b)->shape[rb - 2])
		return lw_lfail(L, -EINVAL, "matmul: inner dims differ"), -1;
	/* broadcast the batch dims */
	memset(&ta, 0, sizeof(ta));
	memset(&tb, 0, sizeof(tb));
	ta.rank = ra - 2;
	memcpy(ta.shape, lw_N(L, a)->shape, sizeof(int64_t) * (size_t)ta.rank);
	tb.rank = rb - 2;
	memcpy(tb.shape, lw_N(L, b)->shape, sizeof(int64_t) * (size_t)tb.rank);
	lw_bshape(&ta, &tb, &batch, so);
	ro = batch + 2;
	memcpy(sa, so, sizeof(int64_t) * (size_t)batch);
	memcpy(sb, so, sizeof(int64_t) * (size_t)batch);
	sa[batch] = lw_N(L, a)->shape[ra - 2];
	sa[batch + 1] = lw_N(L, a)->shape[ra - 1];
	sb[batch] = lw_N(L, b)->shape[rb - 2];
	sb[batch + 1] = lw_N(L, b)->shape[rb - 1];
	a = lw_expand(L, a, ro, sa);
	b = lw_expand(L, b, ro, sb);
	so[batch] = sa[batch];
	so[batch + 1] = sb[batch + 1];
	id = lw_nnew(L, CG_GEMM, lw_promote(lw_N(L, a)->dtype, lw_N(L, b)->dtype), ro, so, a, b, -1);
	if (id < 0)
		return -1;
	if (!ir_dtype_is_float(lw_N(L, id)->dtype))
		return LW_UNSUP(L, "unsupported: %s on integer tensors", L->cur->op), -1;
	lw_N(L, id)->f[0] = alpha;
	if (squeeze_n)
		id = lw_squeeze(L, id, 1u << (ro - 1));
	if (squeeze_m)
		id = lw_squeeze(L, id, 1u << (ro - 2));
	return id;
}

static int
lower_linear(struct lower *L)
{
	int x = lw_ref(L, lw_arg(L, 0)), w = lw_ref(L, lw_arg(L, 1)), b = opt_ref(L, 2), y;
	int64_t s2[2];
	struct cg_node *n;
	struct lw_bn bn;
	int fold;

	if (x < 0 || w < 0 || b == -1)
		return -1;
	/* a batch_norm's channels are dim 1: the features only of [N, F] */
	fold = L->cur->rank == 2 && lw_N(L, w)->rank == 2 && lw_bn_find(L, w, &bn);
	if (fold) {
		w = lw_bn_weight(L, &bn, w, 0);
		b = lw_bn_bias(L, &bn, b);
	}
	n = lw_N(L, x);
	if (n->rank > 2) {
		/* fold the leading dims into M: one GEMM, not a batch of them */
		int64_t shape[CG_MAX_RANK];
		memcpy(shape, n->shape, sizeof(shape));
		s2[1] = n->shape[n->rank - 1];
		s2[0] = ir_numel(n->rank, n->shape) / (s2[1] ? s2[1] : 1);
		y = matmul(L, lw_reshape(L, x, 2, s2), lw_transpose(L, w, 0, 1), 1.0);
		shape[n->rank - 1] = lw_N(L, w)->shape[0];
		if (y >= 0)
			y = lw_reshape(L, y, n->rank, shape);
	} else {
		y = matmul(L, x, lw_N(L, w)->rank == 2 ? lw_transpose(L, w, 0, 1) : w, 1.0);
	}
	return b >= 0 ? lw_binary(L, CG_ADD, y, b) : y;
}

/* a @ w; with bn_fold, a 2-D one followed by a batch norm (and maybe a
 * bias add before it) takes them into w and one bias. */
static int
lower_matmul(struct lower *L)
{
	int a = lw_ref(L, lw_arg(L, 0)), w = lw_ref(L, lw_arg(L, 1)), b = -2;
	struct lw_bn bn;
	int fold = L->cur->rank == 2 && w >= 0 && lw_N(L, w)->rank == 2 &&
	    (lw_bn_find_bias(L, w, &bn, &b) || lw_bn_find(L, w, &bn));

	if (!fold)
		return matmul(L, a, w, 1.0);
	w = lw_bn_weight(L, &bn, w, 1);
	b = lw_bn_bias(L, &bn, b);
	return lw_binary(L, CG_ADD, matmul(L, a, w, 1.0), b);
}

/* beta * c + alpha * a @ w (a and w 2-D, so the output is [N, F]). */
static int
lower_addmm(struct lower *L)
{
	double beta = lw_kwnum(L, "beta", 1), alpha = lw_kwnum(L, "alpha", 1);
	int a = lw_ref(L, lw_arg(L, 1)), w = lw_ref(L, lw_arg(L, 2)), y, c = -2;
	struct lw_bn bn;
	int fold = w >= 0 && lw_N(L, w)->rank == 2 && lw_bn_find(L, w, &bn);

	if (fold)
		w = lw_bn_weight(L, &bn, w, 1);
	y = matmul(L, a, w, alpha);
	if (y < 0)
		return -1;
	if (beta != 0) {
		c = lw_operand(L, lw_arg(L, 0), y);
		if (beta != 1)
			c = lw_binary(L, CG_MUL, c, lw_cst(L, beta, lw_N(L, y)->dtype));
	}
	if (fold)
		c = lw_bn_bias(L, &bn, c);
	return c == -2 ? y : lw_binary(L, CG_ADD, c, y);
}

/*
 * embedding(idx, weight [V, D]): out[..., d] = weight[idx[...], d], a take
 * along the table's rows: the table seen (broadcast) as [idx dims.., V, D]
 * and the ids as [idx dims.., 1], read at each output's d.
 */
static int
lower_embedding(struct lower *L, const struct ir_value *v)
{
	int idx = lw_ref(L, lw_arg(L, 0)), w = lw_ref(L, lw_arg(L, 1)), x;
	int64_t shape[CG_MAX_RANK];
	struct cg_node *ni, *nw;
	int r;

	if (idx < 0 || w < 0)
		return -1;
	ni = lw_N(L, idx);
	nw = lw_N(L, w);
	if (nw->rank != 2 || ni->rank + 2 > CG_MAX_RANK || ir_dtype_is_float(ni->dtype))
		return LW_UNSUP(L, "unsupported: embedding of a %d-d table or %d-d ids", nw->rank,
		    ni->rank), -1;
	r = ni->rank;
	memcpy(shape, ni->shape, sizeof(int64_t) * (size_t)r);
	shape[r] = nw->shape[0];
	shape[r + 1] = nw->shape[1];
	w = lw_expand(L, w, r + 2, shape);
	idx = lw_unsqueeze(L, idx, r);
	x = lw_nnew(L, CG_TAKE, v->dtype, v->rank, v->shape, w, idx, -1);
	if (x >= 0)
		lw_N(L, x)->i[0] = r;
	return x;
}

int
lw_node(struct lower *L, const struct ir_value *v, int i)
{
	const char *op = v->op;
	int x;

	for (size_t k = 0; k < sizeof(unary_ops) / sizeof(unary_ops[0]); k++)
		if (!strcmp(op, unary_ops[k].name)) {
			x = lw_ref(L, lw_arg(L, 0));
			if (x >= 0 && !ir_dtype_is_float(lw_N(L, x)->dtype) &&
			    unary_ops[k].op != CG_NEG && unary_ops[k].op != CG_ABS &&
			    unary_ops[k].op != CG_NOT && unary_ops[k].op != CG_SIGN &&
			    unary_ops[k].op != CG_RELU)
				x = lw_nnew(L, CG_CAST, v->dtype, lw_N(L, x)->rank, lw_N(L, x)->shape, x, -1, -1);
			x = lw_unary(L, unary_ops[k].op, x);
			if (x >= 0 && unary_ops[k].op == CG_NOT)
				lw_N(L, x)->dtype = IR_BOOL;
			return x;
		}
	for (size_t k = 0; k < sizeof(binary_ops) / sizeof(binary_ops[0]); k++)
		if (!strcmp(op, binary_ops[k].name))
			return lower_binary(L, binary_ops[k].op);
	if (!strcmp(op, "div"))
		return lower_div(L);
	if (!strcmp(op, "pow"))
		return lower_pow(L);
	if (!strcmp(op, "where"))
		return lower_where(L);
	if (!strcmp(op, "masked_fill")) {
		x = lw_ref(L, lw_arg(L, 0));
		return lw_where3(L, lw_ref(L, lw_arg(L, 1)), lw_operand(L, lw_kw(L, "value"), x), x);
	}
	if (!strcmp(op, "gelu")) {
		const char *a = json_string_value(lw_kw(L, "approximate"));
		return lw_unary(L, a && !strcmp(a, "tanh") ? CG_GELU_TANH : CG_GELU, lw_ref(L, lw_arg(L, 0)));
	}
	if (!strcmp(op, "leaky_relu") || !strcmp(op, "elu")) {
		x = lw_unary(L, op[0] == 'l' ? CG_LEAKY : CG_ELU, lw_ref(L, lw_arg(L, 0)));
		if (x >= 0)
			lw_N(L, x)->f[0] = op[0] == 'l' ? lw_kwnum(L, "negative_slope", 0.01) : lw_kwnum(L, "alpha", 1);
		return x;
	}
	if (!strcmp(op, "softplus")) {
		x = lw_unary(L, CG_SOFTPLUS, lw_ref(L, lw_arg(L, 0)));
		if (x >= 0) {
			lw_N(L, x)->f[0] = lw_kwnum(L, "beta", 1);
			lw_N(L, x)->f[1] = lw_kwnum(L, "threshold", 20);
		}
		return x;
	}
	if (!strcmp(op, "hardtanh"))
		return lower_clamp(L, "min_val", "max_val");
	if (!strcmp(op, "clamp"))
		return lower_clamp(L, "min", "max");
	if (!strcmp(op, "to")) {
		x = lw_ref(L, lw_arg(L, 0));
		return x < 0 ? -1 : lw_nnew(L, CG_CAST, v->dtype, v->rank, v->shape, x, -1, -1);
	}
	if (!strcmp(op, "full")) {
		double val;
		if (lw_num(lw_kw(L, "value"), &val) < 0)
			return lw_lfail(L, -EINVAL, "full: value is not a number"), -1;
		x = lw_nnew(L, CG_CONST, v->dtype, v->rank, v->shape, -1, -1, -1);
		if (x >= 0)
			lw_N(L, x)->f[0] = val;
		return x;
	}
	if (!strcmp(op, "arange")) {
		double start, step;
		if (lw_num(lw_kw(L, "start"), &start) < 0 || lw_num(lw_kw(L, "step"), &step) < 0 ||
		    v->rank != 1)
			return lw_lfail(L, -EINVAL, "arange: start and step are numbers, the result 1-d"), -1;
		x = lw_nnew(L, CG_IOTA, v->dtype, 1, v->shape, -1, -1, -1);
		if (x >= 0) {
			lw_N(L, x)->f[0] = start;
			lw_N(L, x)->f[1] = step;
			lw_N(L, x)->i[0] = 0;
		}
		return x;
	}
	if (!strcmp(op, "embedding"))
		return lower_embedding(L, v);
	if (!strcmp(op, "sum"))
		return lower_reduction(L, CG_RSUM);
	if (!strcmp(op, "mean"))
		return lower_reduction(L, CG_RSUM);
	if (!strcmp(op, "prod"))
		return lower_reduction(L, CG_RPROD);
	if (!strcmp(op, "amax"))
		return lower_reduction(L, CG_RMAX);
	if (!strcmp(op, "amin"))
		return lower_reduction(L, CG_RMIN);
	if (!strcmp(op, "argmax"))
		return lower_arg(L, CG_RARGMAX);
	if (!strcmp(op, "argmin"))
		return lower_arg(L, CG_RARGMIN);
	if (!strcmp(op, "max") || !strcmp(op, "min")) {
		int keep = json_is_true(lw_kw(L, "keepdim"));
		x = lw_ref(L, lw_arg(L, 0));
		if (x < 0)
			return -1;
		uint32_t m = lw_dimmask(L, lw_N(L, x)->rank);
		L->tuple[i][0] = lw_reduce(L, op[1] == 'a' ? CG_RMAX : CG_RMIN, x, m, keep);
		L->tuple[i][1] = lw_reduce(L, op[1] == 'a' ? CG_RARGMAX : CG_RARGMIN, x, m, keep);
		return -1;
	}
	if (!strcmp(op, "var") || !strcmp(op, "std"))
		return lower_varstd(L, op[0] == 's');
	if (!strcmp(op, "logsumexp")) {
		x = lw_ref(L, lw_arg(L, 0));
		return x < 0 ? -1 : lower_logsumexp(L, x, lw_dimmask(L, lw_N(L, x)->rank),
		    json_is_true(lw_kw(L, "keepdim")));
	}
	if (!strcmp(op, "softmax") || !strcmp(op, "log_softmax"))
		return lower_softmax(L, op[0] == 'l');
	if (!strcmp(op, "layer_norm"))
		return lower_layer_norm(L);
	if (!strcmp(op, "group_norm"))
		return lower_group_norm(L);
	if (!strcmp(op, "instance_norm"))
		return lower_instance_norm(L);
	if (!strcmp(op, "batch_norm"))
		return lower_batch_norm(L);
	if (!strcmp(op, "linear"))
		return lower_linear(L);
	if (!strcmp(op, "matmul"))
		return lower_matmul(L);
	if (!strcmp(op, "bmm"))
		return matmul(L, lw_ref(L, lw_arg(L, 0)), lw_ref(L, lw_arg(L, 1)), 1.0);
	if (!strcmp(op, "addmm"))
		return lower_addmm(L);
	return lw_nn(L, v, i);
}
