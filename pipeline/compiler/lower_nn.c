/*
 * Convolution, pooling, scans, losses and the shape ops in terms of cg
 * primitives. Pooling is a padded input read through a window view and
 * reduced, so it fuses with whatever surrounds it like any reduction.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/lower.h"

static int
lower_conv(struct lower *L, int nsp)
{
	int x = lw_ref(L, lw_arg(L, 0)), w = lw_ref(L, lw_arg(L, 1)), id, b = -2, fold;
	const json_t *jb = lw_arg(L, 2);
	int64_t st[2], pd[2], dl[2];
	struct cg_node *n;
	struct lw_bn bn;

	if (x < 0 || w < 0)
		return -1;
	if (json_is_string(lw_kw(L, "padding")))
		return LW_UNSUP(L, "unsupported: %s (asymmetric 'same' padding)", L->cur->op), -1;
	if (lw_kwints(L, "stride", st, 2) != nsp || lw_kwints(L, "padding", pd, 2) != nsp ||
	    lw_kwints(L, "dilation", dl, 2) != nsp)
		return lw_lfail(L, -EINVAL, "%s: bad stride/padding/dilation", L->cur->op), -1;
	if (lw_N(L, x)->rank != nsp + 2)
		return LW_UNSUP(L, "unsupported: %s on an unbatched input", L->cur->op), -1;
	if (!ir_dtype_is_float(lw_N(L, x)->dtype))
		return LW_UNSUP(L, "unsupported: %s on integers", L->cur->op), -1;
	if ((fold = lw_bn_find(L, w, &bn)))
		w = lw_bn_weight(L, &bn, w, 0);
	id = lw_nnew(L, CG_CONV, L->cur->dtype, L->cur->rank, L->cur->shape, x, w, -1);
	if (id < 0)
		return -1;
	n = lw_N(L, id);
	n->i[CG_CONV_NSP] = nsp;
	n->i[CG_CONV_GROUPS] = (int64_t)lw_kwnum(L, "groups", 1);
	for (int j = 0; j < nsp; j++) {
		n->i[CG_CONV_STRIDE + j] = st[j];
		n->i[CG_CONV_PAD + j] = pd[j];
		n->i[CG_CONV_DIL + j] = dl[j];
	}
	if (!json_is_null(jb) && jb && (b = lw_ref(L, jb)) < 0)
		return -1;
	if (fold)
		b = lw_bn_bias(L, &bn, b);
	if (b != -2) {
		int64_t shape[CG_MAX_RANK];
		if (b < 0)
			return -1;
		shape[0] = lw_N(L, b)->shape[0];
		for (int j = 0; j < nsp; j++)
			shape[1 + j] = 1;
		id = lw_binary(L, CG_ADD, id, lw_reshape(L, b, 1 + nsp, shape));
	}
	return id;
}

static int
pad(struct lower *L, int x, const int64_t *lo, const int64_t *shape, double fill)
{
	struct cg_node *n;
	int id;

	if (x < 0)
		return -1;
	n = lw_N(L, x);
	id = lw_nnew(L, CG_PAD, n->dtype, n->rank, shape, x, -1, -1);
	if (id >= 0) {
		memcpy(lw_N(L, id)->i, lo, sizeof(int64_t) * (size_t)n->rank);
		lw_N(L, id)->f[0] = fill;
	}
	return id;
}

/* x (padded) read through windows: [.., O.., K..] */
static int
window(struct lower *L, int x, int nsp, const int64_t *O, const int64_t *k, const int64_t *s,
    const int64_t *d)
{
	struct cg_vmap m;
	int64_t shape[CG_MAX_RANK];
	int r;

	if (x < 0)
		return -1;
	r = lw_N(L, x)->rank;
	if (r + nsp > CG_MAX_RANK)
		return lw_lfail(L, -E2BIG, "pooling needs more than %d dims", CG_MAX_RANK), -1;
	memset(&m, 0, sizeof(m));
	for (int dd = 0; dd < r - nsp; dd++) {
		m.c[dd][dd] = 1;
		shape[dd] = lw_N(L, x)->shape[dd];
	}
	for (int j = 0; j < nsp; j++) {
		m.c[r - nsp + j][r - nsp + j] = s[j];
		m.c[r - nsp + j][r + j] = d[j];
		shape[r - nsp + j] = O[j];
		shape[r + j] = k[j];
	}
	return lw_view(L, x, r + nsp, shape, &m);
}

static int
lower_pool(struct lower *L, int nsp, int is_max, int adaptive)
{
	int x = lw_ref(L, lw_arg(L, 0)), r, p, sum, cnt;
	int64_t k[2], s[2], pd[2] = { 0, 0 }, dl[2] = { 1, 1 }, O[2], lo[CG_MAX_RANK] = { 0 };
	int64_t big[CG_MAX_RANK], mid[CG_MAX_RANK];
	int ceil_overhang = 0, include_pad = 1;
	uint32_t mask = 0;
	struct cg_node *n;
	double divisor;

	if (x < 0)
		return -1;
	n = lw_N(L, x);
	r = n->rank;
	if (r < nsp + 1)
		return lw_lfail(L, -EINVAL, "%s: input has too few dims", L->cur->op), -1;
	for (int j = 0; j < nsp; j++)
		O[j] = L->cur->shape[L->cur->rank - nsp + j];
	if (adaptive) {
		for (int j = 0; j < nsp; j++) {
			int64_t I = n->shape[r - nsp + j];
			if (O[j] <= 0 || I % O[j])
				return LW_UNSUP(L, "unsupported: %s with an input size not divisible by the output size",
				    L->cur->op), -1;
			k[j] = s[j] = I / O[j];
		}
	} else {
		if (lw_kwints(L, "kernel_size", k, 2) != nsp || lw_kwints(L, "stride", s, 2) != nsp ||
		    lw_kwints(L, "padding", pd, 2) != nsp)
			return lw_lfail(L, -EINVAL, "%s: bad kernel_size/stride/padding", L->cur->op), -1;
		if (is_max && lw_kwints(L, "dilation", dl, 2) != nsp)
			return lw_lfail(L, -EINVAL, "%s: bad dilation", L->cur->op), -1;
		if (lw_kw(L, "count_include_pad"))
			include_pad = json_is_true(lw_kw(L, "count_include_pad"));
	}
	memcpy(big, n->shape, sizeof(big));
	memcpy(mid, n->shape, sizeof(mid));
	for (int j = 0; j < nsp; j++) {
		int64_t I = n->shape[r - nsp + j], need = (O[j] - 1) * s[j] + dl[j] * (k[j] - 1) + 1;
		mid[r - nsp + j] = I + 2 * pd[j];
		big[r - nsp + j] = need > I + 2 * pd[j] ? need : I + 2 * pd[j];
		ceil_overhang |= need > I + 2 * pd[j];
		lo[r - nsp + j] = pd[j];
		mask |= 1u << (r + j);
	}
	enum ir_dtype dt = n->dtype;
	p = pad(L, x, lo, big, is_max ? -INFINITY : 0.0);
	sum = lw_reduce(L, is_max ? CG_RMAX : CG_RSUM, window(L, p, nsp, O, k, s, dl), mask, 0);
	if (is_max)
		return sum;
	if (lw_kw(L, "divisor_override") && !json_is_null(lw_kw(L, "divisor_override"))) {
		divisor = lw_kwnum(L, "divisor_override", 1);
		return lw_binary(L, CG_DIV, sum, lw_cst(L, divisor, dt));
	}
	if (include_pad && !ceil_overhang) {
		divisor = 1;
		for (int j = 0; j < nsp; j++)
			divisor *= (double)k[j];
		return lw_binary(L, CG_DIV, sum, lw_cst(L, divisor, dt));
	}
	/* PyTorch's divisor: the window's cells inside the padded input (or
	 * inside the input without count_include_pad), counted the same way */
	int ones = lw_nnew(L, CG_CONST, dt, r, n->shape, -1, -1, -1);
	if (ones >= 0)
		lw_N(L, ones)->f[0] = 1.0;
	if (include_pad) {
		int64_t zero[CG_MAX_RANK] = { 0 };
		cnt = pad(L, pad(L, ones, lo, mid, 1.0), zero, big, 0.0);
	} else {
		cnt = pad(L, ones, lo, big, 0.0);
	}
	cnt = lw_reduce(L, CG_RSUM, window(L, cnt, nsp, O, k, s, dl), mask, 0);
	return lw_binary(L, CG_DIV, sum, cnt);
}

static int
lower_nll(struct lower *L, int logp, int t, int w, const char *reduction, int64_t ii)
{
	int valid, tt, g, wt = -2, l, den;
	struct cg_node *nt;
	enum ir_dtype dt;
	uint32_t all;

	if (logp < 0 || t < 0 || w == -1)
		return -1;
	nt = lw_N(L, t);
	if (ir_dtype_is_float(nt->dtype))
		return LW_UNSUP(L, "unsupported: %s with probability (float) targets", L->cur->op), -1;
	if (lw_N(L, logp)->rank != nt->rank + 1)
		return LW_UNSUP(L, "unsupported: %s on an unbatched input", L->cur->op), -1;
	dt = lw_N(L, logp)->dtype;
	valid = lw_binary(L, CG_NE, t, lw_cst(L, (double)ii, nt->dtype));
	tt = lw_where3(L, valid, t, lw_cst(L, 0, nt->dtype));
	g = lw_nnew(L, CG_TAKE, dt, nt->rank, nt->shape, logp, tt, -1);
	if (g >= 0)
		lw_N(L, g)->i[0] = 1;
	l = lw_unary(L, CG_NEG, g);
	if (w >= 0) {
		wt = lw_nnew(L, CG_LOOKUP, dt, nt->rank, nt->shape, w, tt, -1);
		l = lw_binary(L, CG_MUL, l, wt);
	}
	l = lw_where3(L, valid, l, lw_cst(L, 0, dt));
	if (!strcmp(reduction, "none"))
		return l;
	all = nt->rank ? (1u << nt->rank) - 1 : 0;
	if (l < 0)
		return -1;
	if (!all)
		return l;
	if (!strcmp(reduction, "sum"))
		return lw_reduce(L, CG_RSUM, l, all, 0);
	if (w >= 0)
		den = lw_reduce(L, CG_RSUM, lw_where3(L, valid, wt, lw_cst(L, 0, dt)), all, 0);
	else
		den = lw_reduce(L, CG_RSUM, lw_where3(L, valid, lw_cst(L, 1, dt), lw_cst(L, 0, dt)), all, 0);
	return lw_binary(L, CG_DIV, lw_reduce(L, CG_RSUM, l, all, 0), den);
}

/* PyTorch's label smoothing (no class weights): (1 - ls) * nll +
 * ls / C * (-sum_c logp), the second term reduced like the first over the
 * targets that are not ignored. */
static int
smooth(struct lower *L, int logp, int t, int nll, double ls, const char *red, int64_t ii)
{
	struct cg_node *nt = lw_N(L, t);
	enum ir_dtype dt = lw_N(L, logp)->dtype;
	int64_t C = lw_N(L, logp)->shape[1];
	int valid = lw_binary(L, CG_NE, t, lw_cst(L, (double)ii, nt->dtype)), sm;
	uint32_t all = nt->rank ? (1u << nt->rank) - 1 : 0;

	sm = lw_squeeze(L, lw_unary(L, CG_NEG, lw_reduce(L, CG_RSUM, logp, 2u, 1)), 2u);
	sm = lw_where3(L, valid, sm, lw_cst(L, 0, dt));
	if (strcmp(red, "none") && all) {
		int cnt = lw_reduce(L, CG_RSUM, lw_where3(L, valid, lw_cst(L, 1, dt), lw_cst(L, 0, dt)), all, 0);
		sm = lw_reduce(L, CG_RSUM, sm, all, 0);
		if (!strcmp(red, "mean"))
			sm = lw_binary(L, CG_DIV, sm, cnt);
	}
	return lw_binary(L, CG_ADD, lw_binary(L, CG_MUL, nll, lw_cst(L, 1 - ls, dt)),
	    lw_binary(L, CG_MUL, sm, lw_cst(L, ls / (double)C, dt)));
}

static int
opt(struct lower *L, int i)
{
	const json_t *a = lw_arg(L, i);

	return !a || json_is_null(a) ? -2 : lw_ref(L, a);
}

static int
lower_loss(struct lower *L)
{
	const char *red = json_string_value(lw_kw(L, "reduction"));
	int x = lw_ref(L, lw_arg(L, 0)), t = lw_ref(L, lw_arg(L, 1));

	if (!red)
		red = "mean";
	if (x < 0 || t < 0)
		return -1;
	if (!strcmp(L->cur->op, "mse_loss")) {
		int d = lw_binary(L, CG_SUB, x, t), sq = lw_binary(L, CG_MUL, d, d);
		uint32_t all = (1u << lw_N(L, x)->rank) - 1;
		if (!strcmp(red, "none") || !all)
			return sq;
		return !strcmp(red, "sum") ? lw_reduce(L, CG_RSUM, sq, all, 0) : lw_mean(L, sq, all, 0);
	}
	if (!strcmp(L->cur->op, "cross_entropy")) {
		int m, e, s, nll;
		double ls = lw_kwnum(L, "label_smoothing", 0);
		if (lw_N(L, x)->rank < 2)
			return LW_UNSUP(L, "unsupported: cross_entropy on an unbatched input"), -1;
		if (ls != 0 && opt(L, 2) != -2)
			return LW_UNSUP(L, "unsupported: cross_entropy with label_smoothing and class weights"), -1;
		m = lw_reduce(L, CG_RMAX, x, 2u, 1);
		e = lw_binary(L, CG_SUB, x, m);
		s = lw_reduce(L, CG_RSUM, lw_unary(L, CG_EXP, e), 2u, 1);
		x = lw_binary(L, CG_SUB, e, lw_unary(L, CG_LOG, s));
		nll = lower_nll(L, x, t, opt(L, 2), red, (int64_t)lw_kwnum(L, "ignore_index", -100));
		if (ls == 0 || nll < 0)
			return nll;
		return smooth(L, x, t, nll, ls, red, (int64_t)lw_kwnum(L, "ignore_index", -100));
	}
	return lower_nll(L, x, t, opt(L, 2), red, (int64_t)lw_kwnum(L, "ignore_index", -100));
}

static int
lower_cat(struct lower *L, int dim, int stack)
{
	size_t i, n = json_array_size(L->cur->args);
	int acc = -1;

	for (i = 0; i < n; i++) {
		int t = lw_ref(L, lw_arg(L, (int)i)), id;
		int64_t shape[CG_MAX_RANK];
		struct cg_node *a;

		if (t < 0)
			return -1;
		if (stack)
			t = lw_unsqueeze(L, t, dim);
		if (t < 0)
			return -1;
		if (acc < 0) {
			acc = t;
			continue;
		}
		a = lw_N(L, acc);
		memcpy(shape, a->shape, sizeof(shape));
		shape[dim] += lw_N(L, t)->shape[dim];
		id = lw_nnew(L, CG_CAT, a->dtype, a->rank, shape, acc, t, -1);
		if (id < 0)
			return -1;
		lw_N(L, id)->i[0] = dim;
		acc = id;
	}
	if (acc >= 0 && n == 1 && !stack)
		acc = lw_nnew(L, CG_CAST, lw_N(L, acc)->dtype, lw_N(L, acc)->rank, lw_N(L, acc)->shape, acc, -1, -1);
	return acc;
}

static int
slice(struct lower *L, int x, int dim, int64_t start, int64_t step, int64_t len)
{
	struct cg_vmap m;
	int64_t shape[CG_MAX_RANK];
	struct cg_node *n;

	if (x < 0)
		return -1;
	n = lw_N(L, x);
	memset(&m, 0, sizeof(m));
	memcpy(shape, n->shape, sizeof(shape));
	for (int d = 0; d < n->rank; d++)
		m.c[d][d] = d == dim ? step : 1;
	m.k[dim] = start;
	shape[dim] = len;
	return lw_view(L, x, n->rank, shape, &m);
}

static int
lower_repeat(struct lower *L, int x)
{
	int64_t rep[CG_MAX_RANK], shape[CG_MAX_RANK], out[CG_MAX_RANK];
	int R = lw_kwints(L, "repeats", rep, CG_MAX_RANK), r, lead;
	struct cg_vmap m;

	if (x < 0 || R < 0)
		return -1;
	r = lw_N(L, x)->rank;
	lead = R - r;
	if (2 * R > CG_MAX_RANK)
		return LW_UNSUP(L, "unsupported: repeat over more than %d dims", CG_MAX_RANK / 2), -1;
	memset(&m, 0, sizeof(m));
	for (int j = 0; j < R; j++) {
		int64_t sz = j >= lead ? lw_N(L, x)->shape[j - lead] : 1;
		shape[2 * j] = rep[j];
		shape[2 * j + 1] = sz;
		out[j] = rep[j] * sz;
		if (j >= lead)
			m.c[j - lead][2 * j + 1] = 1;
	}
	return lw_reshape(L, lw_view(L, x, 2 * R, shape, &m), R, out);
}

int
lw_nn(struct lower *L, const struct ir_value *v, int i)
{
	const char *op = v->op;
	int x = -1;
	int64_t dims[CG_MAX_RANK];

	if (!strcmp(op, "conv1d") || !strcmp(op, "conv2d"))
		return lower_conv(L, op[4] - '0');
	if (!strcmp(op, "max_pool1d") || !strcmp(op, "max_pool2d"))
		return lower_pool(L, op[8] - '0', 1, 0);
	if (!strcmp(op, "avg_pool1d") || !strcmp(op, "avg_pool2d"))
		return lower_pool(L, op[8] - '0', 0, 0);
	if (!strcmp(op, "adaptive_avg_pool1d") || !strcmp(op, "adaptive_avg_pool2d"))
		return lower_pool(L, op[17] - '0', 0, 1);
	if (!strcmp(op, "cross_entropy") || !strcmp(op, "nll_loss") || !strcmp(op, "mse_loss"))
		return lower_loss(L);
	if (!strcmp(op, "cumsum") || !strcmp(op, "cumprod")) {
		x = lw_ref(L, lw_arg(L, 0));
		if (x < 0)
			return -1;
		x = lw_nnew(L, op[3] == 's' ? CG_CUMSUM : CG_CUMPROD,
		    ir_dtype_is_float(lw_N(L, x)->dtype) ? lw_N(L, x)->dtype : IR_I64,
		    v->rank, v->shape, x, -1, -1);
		if (x >= 0)
			lw_N(L, x)->i[0] = (int64_t)lw_kwnum(L, "dim", 0);
		return x;
	}
	if (!strcmp(op, "cat") || !strcmp(op, "stack"))
		return lower_cat(L, (int)lw_kwnum(L, "dim", 0), op[0] == 's');
	if (!strcmp(op, "getitem")) {
		const json_t *r = lw_arg(L, 0);
		int src = ir_find(L->ir, json_string_value(json_object_get(r, "ref")));
		int64_t k = (int64_t)json_integer_value(lw_arg(L, 1));
		if (src < 0 || !L->ir->v[src].elements || k < 0 || k >= LW_TUPLE_MAX ||
		    k >= (int64_t)json_array_size(L->ir->v[src].elements))
			return lw_lfail(L, -EINVAL, "getitem: not an element of a tuple"), -1;
		return L->tuple[src][k];
	}
	if (!strcmp(op, "split")) {
		int64_t sizes[LW_TUPLE_MAX], start = 0;
		int n = lw_kwints(L, "sizes", sizes, LW_TUPLE_MAX), dim = (int)lw_kwnum(L, "dim", 0);
		x = lw_ref(L, lw_arg(L, 0));
		if (n < 0 || x < 0)
			return LW_UNSUP(L, "unsupported: split into more than %d parts", LW_TUPLE_MAX), -1;
		for (int k = 0; k < n; k++) {
			L->tuple[i][k] = slice(L, x, dim, start, 1, sizes[k]);
			start += sizes[k];
		}
		return -1;
	}
	if (v->elements)
		return LW_UNSUP(L, "unsupported: %s", op), -1;
	x = lw_is_ref(lw_arg(L, 0)) ? lw_ref(L, lw_arg(L, 0)) : -1;
	if (!strcmp(op, "reshape") || !strcmp(op, "flatten"))
		return lw_reshape(L, x, v->rank, v->shape);
	if (!strcmp(op, "expand"))
		return lw_expand(L, x, v->rank, v->shape);
	if (!strcmp(op, "repeat"))
		return lower_repeat(L, x);
	if (!strcmp(op, "permute")) {
		int p[CG_MAX_RANK], n = lw_kwints(L, "dims", dims, CG_MAX_RANK);
		if (n < 0 || x < 0 || n != lw_N(L, x)->rank)
			return lw_lfail(L, -EINVAL, "permute: bad dims"), -1;
		for (int k = 0; k < n; k++)
			p[k] = (int)dims[k];
		return lw_permute(L, x, p);
	}
	if (!strcmp(op, "flip")) {
		/* a view read backwards along dims; kept in memory, so a library
		 * call never sees a negative stride */
		int n = lw_kwints(L, "dims", dims, CG_MAX_RANK), id;
		struct cg_vmap m;
		if (n < 0 || x < 0)
			return lw_lfail(L, -EINVAL, "flip: bad dims"), -1;
		memset(&m, 0, sizeof(m));
		for (int d = 0; d < lw_N(L, x)->rank; d++)
			m.c[d][d] = 1;
		for (int k = 0; k < n; k++) {
			if (dims[k] < 0 || dims[k] >= lw_N(L, x)->rank)
				return lw_lfail(L, -EINVAL, "flip: bad dims"), -1;
			m.c[dims[k]][dims[k]] = -1;
			m.k[dims[k]] = lw_N(L, x)->shape[dims[k]] - 1;
		}
		id = lw_view(L, x, lw_N(L, x)->rank, lw_N(L, x)->shape, &m);
		if (id >= 0)
			lw_N(L, id)->keep = 1;
		return id;
	}
	if (!strcmp(op, "transpose"))
		return lw_transpose(L, x, (int)lw_kwnum(L, "dim0", 0), (int)lw_kwnum(L, "dim1", 1));
	if (!strcmp(op, "squeeze")) {
		int n = lw_kwints(L, "dim", dims, CG_MAX_RANK);
		uint32_t m = 0;
		for (int k = 0; k < n; k++)
			m |= 1u << dims[k];
		return lw_squeeze(L, x, m);
	}
	if (!strcmp(op, "unsqueeze"))
		return lw_unsqueeze(L, x, (int)lw_kwnum(L, "dim", 0));
	if (!strcmp(op, "slice")) {
		int dim = (int)lw_kwnum(L, "dim", 0);
		return slice(L, x, dim, (int64_t)lw_kwnum(L, "start", 0), (int64_t)lw_kwnum(L, "step", 1),
		    v->shape[dim]);
	}
	if (!strcmp(op, "select")) {
		struct cg_vmap m;
		int dim = (int)lw_kwnum(L, "dim", 0);
		if (x < 0)
			return -1;
		memset(&m, 0, sizeof(m));
		for (int d = 0, j = 0; d < lw_N(L, x)->rank; d++) {
			if (d == dim)
				m.k[d] = (int64_t)lw_kwnum(L, "index", 0);
			else
				m.c[d][j++] = 1;
		}
		return lw_view(L, x, v->rank, v->shape, &m);
	}
	if (!strcmp(op, "triu") || !strcmp(op, "tril")) {
		if (x < 0 || lw_N(L, x)->rank < 2)
			return LW_UNSUP(L, "unsupported: %s of a tensor with fewer than 2 dims", op), -1;
		x = lw_unary(L, op[3] == 'u' ? CG_TRIU : CG_TRIL, x);
		if (x >= 0)
			lw_N(L, x)->i[0] = (int64_t)lw_kwnum(L, "diagonal", 0);
		return x;
	}
	if (!strcmp(op, "pad")) {
		int64_t p[2 * CG_MAX_RANK], lo[CG_MAX_RANK] = { 0 };
		const char *mode = json_string_value(lw_kw(L, "mode"));
		int n = lw_kwints(L, "pad", p, 2 * CG_MAX_RANK), r;
		if (x < 0 || n < 0 || n % 2)
			return lw_lfail(L, -EINVAL, "pad: bad pad list"), -1;
		int code = !mode || !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 :
		    !strcmp(mode, "replicate") ? 2 : !strcmp(mode, "circular") ? 3 : -1;
		if (code < 0)
			return LW_UNSUP(L, "unsupported: pad mode %s", mode), -1;
		r = lw_N(L, x)->rank;
		for (int k = 0; k < n; k++)
			if (p[k] < 0)
				return LW_UNSUP(L, "unsupported: pad with negative padding"), -1;
		for (int k = 0; k < n / 2; k++)
			lo[r - 1 - k] = p[2 * k];
		x = pad(L, x, lo, v->shape, lw_kwnum(L, "value", 0));
		if (x >= 0)
			lw_N(L, x)->f[1] = code;
		return x;
	}
	return LW_UNSUP(L, "unsupported: %s", op), -1;
}
