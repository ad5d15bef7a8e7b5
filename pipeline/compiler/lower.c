/*
 * IR -> cg: canonical ops become primitives (see cg.h). Composite ops are
 * decomposed the way PyTorch defines them (softmax subtracts the row max,
 * logsumexp guards infinite maxima, var uses the two-pass form), so the
 * generated kernels agree with the reference to rounding.
 */
#include "pipeline/compiler/cg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "pipeline/compiler/lower.h"


int
lw_lfail(struct lower *L, int error, const char *fmt, ...)
{
	va_list ap;

	if (L->error)
		return L->error;
	va_start(ap, fmt);
	vsnprintf(L->g->err, sizeof(L->g->err), fmt, ap);
	va_end(ap);
	L->error = error;
	return error;
}


int
lw_nnew(struct lower *L, enum cg_op op, enum ir_dtype dt, int rank, const int64_t *shape,
    int a0, int a1, int a2)
{
	struct cg *g = L->g;
	struct cg_node *n;

	if (L->error)
		return -1;
	if (g->n >= CG_MAX_NODES) {
		lw_lfail(L, -E2BIG, "the graph needs more than %d primitive nodes", CG_MAX_NODES);
		return -1;
	}
	if (a0 < -1 || a1 < -1 || a2 < -1)
		return -1;
	n = &g->nodes[g->n];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->dtype = dt;
	n->rank = rank;
	if (rank)
		memcpy(n->shape, shape, sizeof(int64_t) * (size_t)rank);
	n->arg[0] = a0;
	n->arg[1] = a1;
	n->arg[2] = a2;
	n->output = -1;
	return g->n++;
}

struct cg_node *
lw_N(struct lower *L, int id)
{
	return &L->g->nodes[id];
}

int
lw_cst(struct lower *L, double v, enum ir_dtype dt)
{
	int id = lw_nnew(L, CG_CONST, dt, 0, NULL, -1, -1, -1);

	if (id >= 0)
		lw_N(L, id)->f[0] = v;
	return id;
}

int
lw_unary(struct lower *L, enum cg_op op, int a)
{
	if (a < 0)
		return -1;
	return lw_nnew(L, op, lw_N(L, a)->dtype, lw_N(L, a)->rank, lw_N(L, a)->shape, a, -1, -1);
}

void
lw_bshape(const struct cg_node *a, const struct cg_node *b, int *rank, int64_t *shape)
{
	int r = a->rank > b->rank ? a->rank : b->rank;

	for (int d = 0; d < r; d++) {
		int da = d - (r - a->rank), db = d - (r - b->rank);
		int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
		shape[d] = sa == 1 ? sb : sa;
	}
	*rank = r;
}

enum ir_dtype
lw_promote(enum ir_dtype a, enum ir_dtype b)
{
	static const int rank[] = { [IR_BOOL] = 0, [IR_U8] = 1, [IR_I8] = 1, [IR_I16] = 2,
		[IR_I32] = 3, [IR_I64] = 4, [IR_F16] = 5, [IR_BF16] = 5, [IR_F32] = 6, [IR_F64] = 7 };
	return rank[a] >= rank[b] ? a : b;
}

/* Binary op; the result dtype is the operands' promotion (comparisons: bool). */
int
lw_binary(struct lower *L, enum cg_op op, int a, int b)
{
	int64_t shape[CG_MAX_RANK];
	int rank;
	enum ir_dtype dt;

	if (a < 0 || b < 0)
		return -1;
	lw_bshape(lw_N(L, a), lw_N(L, b), &rank, shape);
	dt = lw_promote(lw_N(L, a)->dtype, lw_N(L, b)->dtype);
	if (op >= CG_EQ && op <= CG_OR)
		dt = IR_BOOL;
	return lw_nnew(L, op, dt, rank, shape, a, b, -1);
}

int
lw_where3(struct lower *L, int c, int a, int b)
{
	int64_t s1[CG_MAX_RANK], s2[CG_MAX_RANK];
	int r1, r2, id;
	struct cg_node tmp;

	if (c < 0 || a < 0 || b < 0)
		return -1;
	lw_bshape(lw_N(L, a), lw_N(L, b), &r1, s1);
	memset(&tmp, 0, sizeof(tmp));
	tmp.rank = r1;
	memcpy(tmp.shape, s1, sizeof(s1));
	lw_bshape(lw_N(L, c), &tmp, &r2, s2);
	id = lw_nnew(L, CG_WHERE, lw_promote(lw_N(L, a)->dtype, lw_N(L, b)->dtype), r2, s2, c, a, b);
	return id;
}

/* A view with an explicit map; map rows over the new node's dims. */
int
lw_view(struct lower *L, int a, int rank, const int64_t *shape, const struct cg_vmap *m)
{
	int id;

	if (a < 0)
		return -1;
	id = lw_nnew(L, CG_VIEW, lw_N(L, a)->dtype, rank, shape, a, -1, -1);
	if (id < 0)
		return -1;
	if (!(lw_N(L, id)->vmap = malloc(sizeof(*m)))) {
		lw_lfail(L, -ENOMEM, "out of memory");
		return -1;
	}
	*lw_N(L, id)->vmap = *m;
	return id;
}

int
lw_reshape(struct lower *L, int a, int rank, const int64_t *shape)
{
	struct cg_node *n;

	if (a < 0)
		return -1;
	n = lw_N(L, a);
	if (n->rank == rank && !memcmp(n->shape, shape, sizeof(int64_t) * (size_t)rank))
		return a;
	if (ir_numel(rank, shape) != ir_numel(n->rank, n->shape)) {
		lw_lfail(L, -EINVAL, "reshape changes the number of elements");
		return -1;
	}
	return lw_nnew(L, CG_RESHAPE, n->dtype, rank, shape, a, -1, -1);
}

int
lw_permute(struct lower *L, int a, const int *dims)
{
	struct cg_vmap m;
	int64_t shape[CG_MAX_RANK];
	struct cg_node *n;

	if (a < 0)
		return -1;
	n = lw_N(L, a);
	memset(&m, 0, sizeof(m));
	for (int j = 0; j < n->rank; j++) {
		shape[j] = n->shape[dims[j]];
		m.c[dims[j]][j] = 1;
	}
	return lw_view(L, a, n->rank, shape, &m);
}

int
lw_transpose(struct lower *L, int a, int d0, int d1)
{
	int dims[CG_MAX_RANK];

	if (a < 0)
		return -1;
	for (int j = 0; j < lw_N(L, a)->rank; j++)
		dims[j] = j;
	dims[d0] = d1;
	dims[d1] = d0;
	return lw_permute(L, a, dims);
}

/* Broadcast a to (rank, shape): leading dims added, size-1 dims repeated. */
int
lw_expand(struct lower *L, int a, int rank, const int64_t *shape)
{
	struct cg_vmap m;
	struct cg_node *n;
	int lead;

	if (a < 0)
		return -1;
	n = lw_N(L, a);
	if (n->rank == rank && !memcmp(n->shape, shape, sizeof(int64_t) * (size_t)rank))
		return a;
	lead = rank - n->rank;
	if (lead < 0) {
		lw_lfail(L, -EINVAL, "expand to fewer dims");
		return -1;
	}
	memset(&m, 0, sizeof(m));
	for (int d = 0; d < n->rank; d++)
		if (!(n->shape[d] == 1 && shape[lead + d] != 1))
			m.c[d][lead + d] = 1;
	return lw_view(L, a, rank, shape, &m);
}

/* Drop (size-1) dims in mask. */
int
lw_squeeze(struct lower *L, int a, uint32_t mask)
{
	struct cg_vmap m;
	int64_t shape[CG_MAX_RANK];
	struct cg_node *n;
	int j = 0;

	if (a < 0 || !mask)
		return a;
	n = lw_N(L, a);
	memset(&m, 0, sizeof(m));
	for (int d = 0; d < n->rank; d++) {
		if (mask & (1u << d))
			continue;
		m.c[d][j] = 1;
		shape[j++] = n->shape[d];
	}
	return lw_view(L, a, j, shape, &m);
}

int
lw_unsqueeze(struct lower *L, int a, int dim)
{
	struct cg_vmap m;
	int64_t shape[CG_MAX_RANK];
	struct cg_node *n;

	if (a < 0)
		return -1;
	n = lw_N(L, a);
	if (n->rank + 1 > CG_MAX_RANK) {
		lw_lfail(L, -E2BIG, "more than %d dims", CG_MAX_RANK);
		return -1;
	}
	memset(&m, 0, sizeof(m));
	for (int d = 0, j = 0; j < n->rank + 1; j++) {
		if (j == dim) {
			shape[j] = 1;
			continue;
		}
		shape[j] = n->shape[d];
		m.c[d][j] = 1;
		d++;
	}
	return lw_view(L, a, n->rank + 1, shape, &m);
}

/* Reduction over mask with keepdim. */
int
lw_reduce(struct lower *L, enum cg_op op, int a, uint32_t mask, int keep)
{
	int64_t shape[CG_MAX_RANK];
	int r = 0, id;
	struct cg_node *n;
	enum ir_dtype dt;

	if (a < 0)
		return -1;
	n = lw_N(L, a);
	for (int d = 0; d < n->rank; d++) {
		if (mask & (1u << d)) {
			if (keep)
				shape[r++] = 1;
		} else {
			shape[r++] = n->shape[d];
		}
	}
	dt = n->dtype;
	if (op == CG_RARGMAX || op == CG_RARGMIN)
		dt = IR_I64;
	else if ((op == CG_RSUM || op == CG_RPROD) && !ir_dtype_is_float(dt))
		dt = IR_I64;
	id = lw_nnew(L, op, dt, r, shape, a, -1, -1);
	if (id >= 0) {
		lw_N(L, id)->rmask = mask;
		lw_N(L, id)->i[0] = keep;
	}
	return id;
}

int64_t
lw_mask_numel(const struct cg_node *n, uint32_t mask)
{
	int64_t c = 1;

	for (int d = 0; d < n->rank; d++)
		if (mask & (1u << d))
			c *= n->shape[d];
	return c;
}

int
lw_mean(struct lower *L, int a, uint32_t mask, int keep)
{
	int s = lw_reduce(L, CG_RSUM, a, mask, keep);

	if (s < 0)
		return -1;
	return lw_binary(L, CG_DIV, s, lw_cst(L, (double)lw_mask_numel(lw_N(L, a), mask), lw_N(L, s)->dtype));
}

/* Population (or corrected) variance over mask, keepdim. */
int
lw_variance(struct lower *L, int a, uint32_t mask, int keep, double correction)
{
	return lw_variance_mu(L, a, lw_mean(L, a, mask, 1), mask, keep, correction);
}

int
lw_variance_mu(struct lower *L, int a, int mu, uint32_t mask, int keep, double correction)
{
	int d, s;

	d = lw_binary(L, CG_SUB, a, mu);
	s = lw_reduce(L, CG_RSUM, lw_binary(L, CG_MUL, d, d), mask, keep);
	if (s < 0)
		return -1;
	return lw_binary(L, CG_DIV, s, lw_cst(L, (double)lw_mask_numel(lw_N(L, a), mask) - correction,
	    lw_N(L, s)->dtype));
}

/* ------------------------------------------------------------ arguments */

const json_t *
lw_arg(const struct lower *L, int i)
{
	return json_array_get(L->cur->args, (size_t)i);
}

const json_t *
lw_kw(const struct lower *L, const char *k)
{
	return json_object_get(L->cur->kwargs, k);
}

int
lw_is_ref(const json_t *v)
{
	return json_is_object(v) && json_object_get(v, "ref");
}

int
lw_num(const json_t *v, double *out)
{
	const char *s;

	if (json_is_integer(v) || json_is_real(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (json_is_object(v) && (s = json_string_value(json_object_get(v, "float")))) {
		*out = !strcmp(s, "nan") ? NAN : !strcmp(s, "-inf") ? -INFINITY : INFINITY;
		return 0;
	}
	return -1;
}

int
lw_ref(struct lower *L, const json_t *v)
{
	int id;

	if (!lw_is_ref(v)) {
		lw_lfail(L, -EINVAL, "%s: expected a tensor argument", L->cur->op);
		return -1;
	}
	id = ir_find(L->ir, json_string_value(json_object_get(v, "ref")));
	if (id < 0 || L->node_of[id] < 0) {
		lw_lfail(L, -EINVAL, "%s: argument is not a tensor", L->cur->op);
		return -1;
	}
	return L->node_of[id];
}

/* A tensor or a scalar operand; scalars take the dtype of `like`. */
int
lw_operand(struct lower *L, const json_t *v, int like)
{
	double x;
	enum ir_dtype dt;

	if (lw_is_ref(v))
		return lw_ref(L, v);
	if (lw_num(v, &x) < 0) {
		lw_lfail(L, -EINVAL, "%s: operand is neither a tensor nor a number", L->cur->op);
		return -1;
	}
	dt = like >= 0 ? lw_N(L, like)->dtype : IR_F32;
	if (json_is_real(v) && !ir_dtype_is_float(dt))
		dt = IR_F32;
	if (json_is_object(v))
		dt = IR_F32;
	return lw_cst(L, x, dt);
}

double
lw_kwnum(struct lower *L, const char *k, double def)
{
	double x;

	return lw_num(lw_kw(L, k), &x) < 0 ? def : x;
}

int
lw_kwints(struct lower *L, const char *k, int64_t *out, int max)
{
	const json_t *a = lw_kw(L, k), *e;
	size_t i;

	if (json_is_integer(a)) {
		out[0] = json_integer_value(a);
		return 1;
	}
	if (!json_is_array(a) || json_array_size(a) > (size_t)max)
		return -1;
	json_array_foreach(a, i, e) {
		if (!json_is_integer(e))
			return -1;
		out[i] = json_integer_value(e);
	}
	return (int)json_array_size(a);
}

/* A reduction's "dim" kwarg as a mask over rank dims (null: all). */
uint32_t
lw_dimmask(struct lower *L, int rank)
{
	int64_t dims[CG_MAX_RANK];
	int n;
	uint32_t m = 0;

	if (json_is_null(lw_kw(L, "dim")) || !lw_kw(L, "dim"))
		return rank ? (1u << rank) - 1 : 0;
	n = lw_kwints(L, "dim", dims, CG_MAX_RANK);
	if (n < 0) {
		lw_lfail(L, -EINVAL, "%s: bad dim", L->cur->op);
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (dims[i] >= 0 && dims[i] < rank)
			m |= 1u << dims[i];
	return m;
}


int
cg_lower(const struct ir_graph *ir, const struct schedule *s, struct cg **out, char *err,
    size_t errlen)
{
	struct lower L;
	struct cg *g;
	int error = -ENOMEM;

	memset(&L, 0, sizeof(L));
	err[0] = '\0';
	if (!(g = calloc(1, sizeof(*g))) ||
	    !(g->nodes = calloc(CG_MAX_NODES, sizeof(*g->nodes))) ||
	    !(L.node_of = calloc((size_t)ir->n_values, sizeof(int))) ||
	    !(L.tuple = calloc((size_t)ir->n_values, sizeof(*L.tuple)))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	g->ir = ir;
	L.g = g;
	L.ir = ir;
	if (s->bn_fold && lw_fold_prepare(&L) < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < ir->n_values; i++) {
		const struct ir_value *v = &ir->v[i];
		int id;

		L.cur = v;
		if (v->is_input) {
			if (!cg_ctype(v->dtype)) {
				LW_UNSUP(&L, "unsupported: dtype %s (input %s)", ir_dtype_name(v->dtype), v->name);
				break;
			}
			id = lw_nnew(&L, CG_INPUT, v->dtype, v->rank, v->shape, -1, -1, -1);
			if (id < 0)
				break;
			g->nodes[id].i[0] = i;
			g->nodes[id].name = v->name;
			g->input_node[g->n_inputs++] = id;
			L.node_of[i] = id;
			continue;
		}
		if (!v->elements && !cg_ctype(v->dtype)) {
			LW_UNSUP(&L, "unsupported: dtype %s (%s)", ir_dtype_name(v->dtype), v->op);
			break;
		}
		if (L.fold_src && L.fold_src[i] >= 0)
			id = L.node_of[L.fold_src[i]];	/* bn_fold: lowered with its layer */
		else
			id = lw_node(&L, v, i);
		if (L.error)
			break;
		L.node_of[i] = id;
		if (id >= 0) {
			struct cg_node *n = &g->nodes[id];
			if (n->rank != v->rank || memcmp(n->shape, v->shape, sizeof(int64_t) * (size_t)v->rank)) {
				lw_lfail(&L, -EINVAL, "internal: %s lowered to the wrong shape", v->name);
				break;
			}
			if (n->dtype != v->dtype) {
				id = lw_nnew(&L, CG_CAST, v->dtype, v->rank, v->shape, id, -1, -1);
				L.node_of[i] = id;
			}
			if (id >= 0 && !g->nodes[id].name)
				g->nodes[id].name = v->name;
		}
	}
	if (L.error) {
		error = L.error;
		snprintf(err, errlen, "%s", g->err);
		/* which node of the graph, where the message does not say */
		if (error == -ENOTSUP && L.cur && !L.cur->is_input && L.cur->name &&
		    !strstr(err, L.cur->name)) {
			size_t n = strlen(err);
			snprintf(err + n, errlen - n, " (node %s, op %s)", L.cur->name,
			    L.cur->op ? L.cur->op : "?");
		}
		goto out;
	}
	for (int o = 0; o < ir->n_outputs; o++) {
		int id = L.node_of[ir->outputs[o]];

		/* An output that is an input or another output's value gets a
		 * copy node, so that each output buffer has one writer. */
		if (g->nodes[id].op == CG_INPUT || g->nodes[id].output >= 0 ||
		    g->nodes[id].op == CG_CONST)
			id = lw_nnew(&L, CG_CAST, g->nodes[id].dtype, g->nodes[id].rank,
			    g->nodes[id].shape, id, -1, -1);
		if (id < 0) {
			error = L.error ? L.error : -E2BIG;
			snprintf(err, errlen, "%s", g->err);
			goto out;
		}
		g->nodes[id].output = o;
		g->output_node[g->n_outputs++] = id;
	}
	for (int i = 0; i < g->n; i++)
		for (int a = 0; a < 3; a++)
			if (g->nodes[i].arg[a] >= 0)
				g->nodes[g->nodes[i].arg[a]].uses++;
	*out = g;
	g = NULL;
	error = 0;
out:
	cg_free(g);
	free(L.node_of);
	free(L.tuple);
	free(L.uses);
	free(L.user);
	free(L.fold_src);
	return error;
}

void
cg_free(struct cg *g)
{
	if (!g)
		return;
	if (g->nodes)
		for (int i = 0; i < g->n; i++)
			free(g->nodes[i].vmap);
	free(g->nodes);
	free(g);
}
