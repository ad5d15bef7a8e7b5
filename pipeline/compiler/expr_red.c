/*
 * The nodes that need more than one statement: reshapes (index
 * arithmetic), padding and concatenation (clamped reads and a select, so
 * that no read leaves its tensor and vector loops stay branch-free),
 * gathers, triangular masks, reductions (loops on the CPU, a cooperative
 * team loop on CUDA) and direct convolution on the CPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/expr.h"

static struct cg_scope *
place(struct cg_emit *e, struct cg_scope *s, const struct cg_aff *a, struct cg_scope *at)
{
	at = cgx_aff_scope(e, a, at);
	return at ? at : cgx_outermost(s);
}

/* A variable equal to row a (itself when a is one variable). */
int
cgx_aff_var(struct cg_emit *e, struct cg_scope *s, const struct cg_aff *a, int64_t extent)
{
	struct buf b = BUF_INIT(EXPR_MAX);
	int nz = 0, last = -1, v;

	for (int i = 0; i < e->nvars; i++)
		if (a->c[i]) {
			nz++;
			last = i;
		}
	if (nz == 1 && a->c[last] == 1 && a->k == 0)
		return last;
	if (cgx_aff_vec(e, a))
		return cg_fail(e, -EAGAIN, "vector lanes through an index computation"), -1;
	cgx_aff_print(e, a, &b);
	v = cgx_index_var(e, place(e, s, a, NULL), buf_cstr(&b));
	buf_free(&b);
	if (v >= 0)
		e->var[v].extent = extent;
	return v;
}

void
cgx_unit(struct cg_aff *a, int v)
{
	memset(a, 0, sizeof(*a));
	a->c[v] = 1;
}

/* A new variable defined by text (over variable x), in x's scope. */
int
cgx_derived(struct cg_emit *e, struct cg_scope *s, int x, const char *text, int64_t extent)
{
	int v = cgx_index_var(e, e->var[x].scope ? e->var[x].scope : cgx_outermost(s), text);

	if (v >= 0)
		e->var[v].extent = extent;
	return v;
}

int
cgx_clamp_var(struct cg_emit *e, struct cg_scope *s, int x, int64_t n)
{
	char text[EXPR_MAX];
	int v;

	snprintf(text, sizeof(text), "%s < 0 ? 0 : (%s >= %" PRId64 " ? %" PRId64 " : %s)",
	    e->var[x].name, e->var[x].name, n, n - 1, e->var[x].name);
	v = cgx_index_var(e, e->var[x].scope ? e->var[x].scope : cgx_outermost(s), text);
	if (v >= 0)
		e->var[v].extent = n;
	return v;
}

/* Arg index of a reshape read at linear offset L: affine when L is a
 * mixed-radix number whose digits line up with the arg's dims. */
static int
reshape_affine(const struct cg_emit *e, const struct cg_aff *L, const struct cg_node *an,
    struct cg_map *am)
{
	int order[CG_NV], nt = 0;
	int64_t stride = 1;

	if (L->k != 0)
		return -1;
	for (int v = 0; v < e->nvars; v++) {
		if (!L->c[v])
			continue;
		if (L->c[v] < 0 || e->var[v].extent <= 0)
			return -1;
		order[nt++] = v;
	}
	for (int i = 1; i < nt; i++)
		for (int j = i; j > 0 && L->c[order[j]] < L->c[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i + 1 < nt; i++)
		if (L->c[order[i]] * e->var[order[i]].extent > L->c[order[i + 1]])
			return -1;	/* digits overlap: not a mixed-radix number */
	memset(am, 0, sizeof(*am));
	am->rank = an->rank;
	for (int d = an->rank - 1; d >= 0; d--) {
		int64_t lo = stride, hi = stride * an->shape[d];
		for (int i = 0; i < nt; i++) {
			int64_t c = L->c[order[i]], top = c * e->var[order[i]].extent;
			if (c >= hi || top <= lo || an->shape[d] == 1)
				continue;
			if (c < lo || top > hi || c % lo)
				return -1;	/* a digit straddles two dims */
			am->r[d].c[order[i]] = c / lo;
		}
		stride = hi;
	}
	return 0;
}

static int
ev_reshape(struct cg_emit *e, struct cg_scope *s, const struct cg_node *n, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_node *an = &e->g->nodes[n->arg[0]];
	struct cg_aff L;
	struct cg_map am;
	int64_t stride = 1;

	cg_map_offset(m, n->rank, n->shape, &L);
	if (an->op == CG_INPUT || (an->materialize && e->bufname[n->arg[0]] && n->arg[0] != e->root))
		return cgx_load(e, s, n->arg[0], &L, out);
	if (reshape_affine(e, &L, an, &am) < 0) {
		int lin;
		if (cgx_aff_vec(e, &L))
			return cg_fail(e, -EAGAIN, "vector lanes through a reshape");
		lin = cgx_aff_var(e, s, &L, ir_numel(n->rank, n->shape));
		if (lin < 0)
			return e->error;
		memset(&am, 0, sizeof(am));
		am.rank = an->rank;
		for (int d = an->rank - 1; d >= 0; d--) {
			char text[EXPR_MAX];
			const char *ln = e->var[lin].name;
			int v;
			if (an->shape[d] == 1) {
				stride *= an->shape[d];
				continue;
			}
			if (d == 0)
				snprintf(text, sizeof(text), "%s / %" PRId64, ln, stride);
			else if (stride == 1)
				snprintf(text, sizeof(text), "%s %% %" PRId64, ln, an->shape[d]);
			else
				snprintf(text, sizeof(text), "%s / %" PRId64 " %% %" PRId64, ln, stride, an->shape[d]);
			v = cgx_derived(e, s, lin, text, an->shape[d]);
			if (v < 0)
				return e->error;
			cgx_unit(&am.r[d], v);
			stride *= an->shape[d];
		}
	}
	return cg_ev(e, s, n->arg[0], &am, out);
}

static int
ev_pad(struct cg_emit *e, struct cg_scope *s, const struct cg_node *n, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_node *an = &e->g->nodes[n->arg[0]];
	struct buf cond = BUF_INIT(EXPR_MAX);
	struct cg_map am = *m;
	struct cg_scope *at = NULL;
	struct cg_val v;
	char fill[64], text[EXPR_MAX];
	int error, mode = (int)n->f[1];

	for (int d = 0; d < n->rank; d++) {
		int x, c;
		int64_t sz = an->shape[d];
		am.r[d].k -= n->i[d];
		if (n->i[d] == 0 && n->shape[d] == sz)
			continue;
		if ((x = cgx_aff_var(e, s, &am.r[d], 0)) < 0 || e->error)
			return e->error ? e->error : -EINVAL;
		if (mode == 0) {
			buf_printf(&cond, "%s(%s >= 0 && %s < %" PRId64 ")", cond.len ? " && " : "",
			    e->var[x].name, e->var[x].name, sz);
			c = cgx_clamp_var(e, s, x, sz);
		} else {
			/* reflect, replicate or wrap the index into the tensor */
			const char *xn = e->var[x].name;
			if (mode == 1)
				snprintf(text, sizeof(text), "%s < 0 ? -%s : (%s >= %" PRId64 " ? %" PRId64 " - %s : %s)",
				    xn, xn, xn, sz, 2 * (sz - 1), xn, xn);
			else if (mode == 2)
				snprintf(text, sizeof(text), "%s < 0 ? 0 : (%s >= %" PRId64 " ? %" PRId64 " : %s)",
				    xn, xn, sz, sz - 1, xn);
			else
				snprintf(text, sizeof(text), "((%s %% %" PRId64 ") + %" PRId64 ") %% %" PRId64,
				    xn, sz, sz, sz);
			c = cgx_derived(e, s, x, text, sz);
		}
		if (c < 0)
			return e->error;
		at = cgx_deeper(at, e->var[c].scope);
		cgx_unit(&am.r[d], c);
	}
	if ((error = cg_ev(e, s, n->arg[0], &am, &v)) < 0)
		return error;
	if (!cond.len) {
		*out = v;
		return 0;
	}
	cgx_literal(n->f[0], n->dtype, fill, sizeof(fill));
	snprintf(text, sizeof(text), "%s ? %s%s : %s", buf_cstr(&cond), v.name, v.vec ? "[kb_j]" : "",
	    fill);
	buf_free(&cond);
	at = cgx_deeper(at, v.scope);
	cgx_temp(e, at ? at : cgx_outermost(s), n->dtype, v.vec, text, out);
	return e->error;
}

static int
ev_cat(struct cg_emit *e, struct cg_scope *s, const struct cg_node *n, const struct cg_map *m,
    struct cg_val *out)
{
	int dim = (int)n->i[0], x, x0, x1, error;
	int64_t n0 = e->g->nodes[n->arg[0]].shape[dim], n1 = e->g->nodes[n->arg[1]].shape[dim];
	struct cg_map m0 = *m, m1 = *m;
	struct cg_val v0, v1;
	char text[EXPR_MAX];

	if ((x = cgx_aff_var(e, s, &m->r[dim], n->shape[dim])) < 0)
		return e->error;
	snprintf(text, sizeof(text), "%s < %" PRId64 " ? %s : %" PRId64, e->var[x].name, n0,
	    e->var[x].name, n0 - 1);
	x0 = cgx_derived(e, s, x, text, n0);
	snprintf(text, sizeof(text), "%s >= %" PRId64 " ? %s - %" PRId64 " : 0", e->var[x].name, n0,
	    e->var[x].name, n0);
	x1 = cgx_derived(e, s, x, text, n1);
	if (x0 < 0 || x1 < 0)
		return e->error;
	cgx_unit(&m0.r[dim], x0);
	cgx_unit(&m1.r[dim], x1);
	if ((error = cg_ev(e, s, n->arg[0], &m0, &v0)) < 0 ||
	    (error = cg_ev(e, s, n->arg[1], &m1, &v1)) < 0)
		return error;
	snprintf(text, sizeof(text), "%s < %" PRId64 " ? %s%s : %s%s", e->var[x].name, n0,
	    v0.name, v0.vec ? "[kb_j]" : "", v1.name, v1.vec ? "[kb_j]" : "");
	cgx_temp(e, cgx_deeper(cgx_deeper(e->var[x].scope, v0.scope), v1.scope), n->dtype,
	    v0.vec || v1.vec, text, out);
	return e->error;
}

/* take (gather along a dim) and lookup (1-D table) */
static int
ev_gather(struct cg_emit *e, struct cg_scope *s, const struct cg_node *n, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_node *src = &e->g->nodes[n->arg[0]];
	int dim = n->op == CG_TAKE ? (int)n->i[0] : 0, x, error;
	int64_t C = src->shape[dim];
	struct cg_map im, sm;
	struct cg_val t;
	char text[EXPR_MAX];

	cgx_bcast_map(&e->g->nodes[n->arg[1]], m, &im);
	if ((error = cg_ev(e, s, n->arg[1], &im, &t)) < 0)
		return error;
	if (t.vec)
		return cg_fail(e, -EAGAIN, "vector lanes through a gather");
	snprintf(text, sizeof(text), "%s < 0 ? 0 : (%s >= %" PRId64 " ? %" PRId64 " : (int64_t)%s)",
	    t.name, t.name, C, C - 1, t.name);
	if ((x = cgx_index_var(e, t.scope ? t.scope : cgx_outermost(s), text)) < 0)
		return e->error;
	e->var[x].extent = C;
	memset(&sm, 0, sizeof(sm));
	sm.rank = src->rank;
	for (int d = 0, j = 0; d < src->rank; d++) {
		if (d == dim)
			cgx_unit(&sm.r[d], x);
		else if (n->op == CG_TAKE)
			sm.r[d] = m->r[j++];
	}
	return cg_ev(e, s, n->arg[0], &sm, out);
}

static int
ev_tri(struct cg_emit *e, struct cg_scope *s, const struct cg_node *n, const struct cg_map *m,
    struct cg_val *out)
{
	struct cg_val v;
	struct buf b = BUF_INIT(EXPR_MAX);
	struct cg_aff diff = m->r[n->rank - 1];
	char zero[64];
	int error;

	if ((error = cg_ev(e, s, n->arg[0], m, &v)) < 0)
		return error;
	cgx_aff_axpy(&diff, -1, &m->r[n->rank - 2]);
	if (cgx_aff_vec(e, &diff))
		return cg_fail(e, -EAGAIN, "vector lanes through triu/tril");
	buf_addstr(&b, "(");
	cgx_aff_print(e, &diff, &b);
	cgx_literal(0, n->dtype, zero, sizeof(zero));
	buf_printf(&b, ") %s %" PRId64 " ? %s%s : %s", n->op == CG_TRIU ? ">=" : "<=", n->i[0],
	    v.name, v.vec ? "[kb_j]" : "", zero);
	cgx_temp(e, place(e, s, &diff, v.scope), n->dtype, v.vec, buf_cstr(&b), out);
	buf_free(&b);
	return e->error;
}

/* arange: start + step * the index along dim i[0], computed in int64 for
 * integers and in double for floats, as torch does */
static int
ev_iota(struct cg_emit *e, struct cg_scope *s, const struct cg_node *n, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_aff *a = &m->r[n->i[0]];
	struct buf b = BUF_INIT(EXPR_MAX);
	char st[64], sp[64];

	if (cgx_aff_vec(e, a))
		return cg_fail(e, -EAGAIN, "vector lanes through arange");
	if (ir_dtype_is_float(n->dtype)) {
		cgx_literal(n->f[0], IR_F64, st, sizeof(st));
		cgx_literal(n->f[1], IR_F64, sp, sizeof(sp));
		buf_printf(&b, "(%s)(%s + %s * (double)(", cg_ctype(n->dtype), st, sp);
	} else {
		buf_printf(&b, "(%s)(INT64_C(%" PRId64 ") + INT64_C(%" PRId64 ") * (", cg_ctype(n->dtype),
		    (int64_t)n->f[0], (int64_t)n->f[1]);
	}
	cgx_aff_print(e, a, &b);
	buf_addstr(&b, "))");
	cgx_temp(e, place(e, s, a, NULL), n->dtype, 0, buf_cstr(&b), out);
	buf_free(&b);
	return e->error;
}

int
cgx_special(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id];

	switch (n->op) {
	case CG_RESHAPE: return ev_reshape(e, s, n, m, out);
	case CG_PAD: return ev_pad(e, s, n, m, out);
	case CG_CAT: return ev_cat(e, s, n, m, out);
	case CG_TAKE:
	case CG_LOOKUP: return ev_gather(e, s, n, m, out);
	case CG_TRIU:
	case CG_TRIL: return ev_tri(e, s, n, m, out);
	case CG_IOTA: return ev_iota(e, s, n, m, out);
	case CG_CONV:
		if (e->backend == CG_CPU)
			return cgx_conv(e, s, id, m, out);
		break;
	default:
		if (cg_is_reduction(n->op))
			return cgx_reduce(e, s, id, m, out);
		break;
	}
	return cg_fail(e, -EINVAL, "internal: %s (%s) read inline but it must be materialized",
	    cg_op_name(n->op), n->name ? n->name : "?");
}
