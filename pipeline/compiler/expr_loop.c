/*
 * Reductions as loops. On the CPU a reduction is a loop nest with an
 * accumulator; the innermost loop is `omp simd` with a reduction clause
 * (NaN tracked beside max/min, since the clause's combiner would drop it),
 * and a reduction outside every parallel loop gets `omp parallel for`.
 * On CUDA, a reduction placed in a scope that the whole team runs
 * uniformly becomes a strided team loop plus a shuffle/shared-memory
 * combine (kb_team_* in the prelude); elsewhere it is a serial loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/expr.h"

static int64_t
lw_reduced(const struct cg_node *an, uint32_t mask)
{
	int64_t c = 1;

	for (int d = 0; d < an->rank; d++)
		if (mask & (1u << d))
			c *= an->shape[d];
	return c;
}

static void
init_text(enum cg_op op, enum ir_dtype dt, char *dst, size_t len)
{
	int fl = ir_dtype_is_float(dt);
	const char *T = cg_ctype(dt);

	switch (op) {
	case CG_RSUM: cgx_literal(0, dt, dst, len); break;
	case CG_RPROD: cgx_literal(1, dt, dst, len); break;
	case CG_RMAX: case CG_RARGMAX:
		if (fl)
			cgx_literal(-INFINITY, dt, dst, len);
		else if (dt == IR_BOOL || dt == IR_U8)
			snprintf(dst, len, "0");
		else
			snprintf(dst, len, "(%s)(-(1ULL << (8 * sizeof(%s) - 1)))", T, T);
		break;
	default:
		if (fl)
			cgx_literal(INFINITY, dt, dst, len);
		else if (dt == IR_BOOL || dt == IR_U8)
			snprintf(dst, len, "255");
		else
			snprintf(dst, len, "(%s)((1ULL << (8 * sizeof(%s) - 1)) - 1)", T, T);
		break;
	}
}

/* The loop nest over the reduced dims; returns the innermost body scope
 * and sets am's reduced rows. */
static struct cg_scope *
open_loops(struct cg_emit *e, struct cg_scope *P, const struct cg_node *an, uint32_t mask,
    const char *clause, int coop, struct cg_map *am, struct cg_scope **first, int *linvar)
{
	struct cg_scope *cur = P;
	int nred = 0, outer = 1;
	int64_t total = 1;

	for (int d = 0; d < an->rank; d++)
		if (mask & (1u << d)) {
			nred++;
			total *= an->shape[d];
		}
	*first = NULL;
	*linvar = -1;
	if (coop) {
		struct cg_scope *L = cg_scope_new(e, P);
		int v, d;
		int64_t stride = 1;
		if (!L)
			return NULL;
		L->uniform = 0;
		v = cg_var_new(e, L, "r");
		if (v < 0)
			return NULL;
		e->var[v].extent = total;
		e->var[v].coop = 1;
		if (e->row_regs && e->row_cache == 2 && total == e->rr_len) {
			/* the register rows' layout (cg.h), fully unrolled */
			const char *x = e->var[v].name;
			buf_printf(&L->head, "#pragma unroll\nfor (int kb_i%d = 0; kb_i%d < %" PRId64 "; kb_i%d++)\n",
			    v, v, total / ((int64_t)e->rr_team * e->vec), v);
			buf_printf(&L->head, "#pragma unroll\nfor (int64_t %s = (int64_t)(kb_lane + kb_i%d * %d) * %d, "
			    "kb_j%d = 0; kb_j%d < %d; kb_j%d++, %s++)", x, v, e->rr_team, e->vec, v, v, e->vec, v, x);
			snprintf(e->var[v].ridx, sizeof(e->var[v].ridx), "kb_i%d * %d + kb_j%d", v, e->vec, v);
		} else if (e->team > 0 && (total + e->team - 1) / e->team <= CG_UNROLL_ALL) {
			/* a few elements a thread: every load in flight at once */
			buf_printf(&L->head, "#pragma unroll\n");
			buf_printf(&L->head, "for (int64_t %s = kb_lane; %s < %" PRId64 "; %s += kb_team)",
			    e->var[v].name, e->var[v].name, total, e->var[v].name);
		} else {
			buf_printf(&L->head, "#pragma unroll %d\n", e->sched->unroll > 1 ? e->sched->unroll : 4);
			buf_printf(&L->head, "for (int64_t %s = kb_lane; %s < %" PRId64 "; %s += kb_team)",
			    e->var[v].name, e->var[v].name, total, e->var[v].name);
		}
		*first = L;
		*linvar = v;
		for (d = an->rank - 1; d >= 0; d--) {
			char text[256];
			int x;
			if (!(mask & (1u << d)))
				continue;
			if (nred == 1) {
				cgx_unit(&am->r[d], v);
				break;
			}
			snprintf(text, sizeof(text), "%s / %" PRId64 " %% %" PRId64, e->var[v].name, stride,
			    an->shape[d]);
			if ((x = cgx_derived(e, L, v, text, an->shape[d])) < 0)
				return NULL;
			e->var[x].coop = 2;
			cgx_unit(&am->r[d], x);
			stride *= an->shape[d];
		}
		return L;
	}
	for (int d = 0, k = 0; d < an->rank; d++) {
		struct cg_scope *L;
		int v, inner;
		if (!(mask & (1u << d)))
			continue;
		k++;
		inner = k == nred;
		if (!(L = cg_scope_new(e, cur)))
			return NULL;
		v = cg_var_new(e, L, "r");
		if (v < 0)
			return NULL;
		e->var[v].extent = an->shape[d];
		if (e->backend == CG_CPU && clause && outer && !cur->par && !cur->in_simd &&
		    total >= CG_CPU_GRAIN) {
			buf_printf(&L->head, "#pragma omp parallel for%s %s\n", inner ? " simd" : "", clause);
			L->par = 1;
			if (inner)
				L->in_simd = 1;
		} else if (e->backend == CG_CPU && clause && inner && !cur->in_simd) {
			buf_printf(&L->head, "#pragma omp simd %s\n", clause);
			L->in_simd = 1;
		} else if (e->backend == CG_CUDA && inner) {
			buf_printf(&L->head, "#pragma unroll %d\n", e->sched->unroll > 1 ? e->sched->unroll : 4);
		}
		outer = 0;
		buf_printf(&L->head, "for (int64_t %s = 0; %s < %" PRId64 "; %s++)", e->var[v].name,
		    e->var[v].name, an->shape[d], e->var[v].name);
		cgx_unit(&am->r[d], v);
		if (!*first)
			*first = L;
		cur = L;
	}
	return cur;
}

static int
close_loops(struct cg_emit *e, struct cg_scope *inner, struct cg_scope *P)
{
	for (struct cg_scope *s = inner; s && s != P; s = s->parent)
		if (cg_scope_close(e, s) < 0)
			return e->error;
	return 0;
}

/* 1 when node w is the max itself, or logsumexp's shift of it,
 * where(|max| == inf, 0, max): the max wherever the max is finite. */
static int
lse_shift(const struct cg *g, int w, int max)
{
	const struct cg_node *W = &g->nodes[w], *c, *a, *k, *z;

	if (w == max)
		return 1;
	if (W->op != CG_WHERE || W->materialize || W->arg[2] != max)
		return 0;
	c = &g->nodes[W->arg[0]];
	z = &g->nodes[W->arg[1]];
	if (c->op != CG_EQ || c->materialize || z->op != CG_CONST || z->f[0] != 0)
		return 0;
	a = &g->nodes[c->arg[0]];
	k = &g->nodes[c->arg[1]];
	return a->op == CG_ABS && a->arg[0] == max && k->op == CG_CONST && isinf(k->f[0]);
}

/* The sum over the same dims of exp(x - max) (or of logsumexp's shift)
 * that the kernel computes beside float max node id: its node, or -1. */
static int
lse_partner(const struct cg_emit *e, int id)
{
	const struct cg *g = e->g;
	const struct cg_node *n = &g->nodes[id];

	for (int j = 0; j < g->n; j++) {
		const struct cg_node *S = &g->nodes[j], *E, *D;
		if (S->op != CG_RSUM || (S->materialize && j != e->root) || S->rmask != n->rmask ||
		    S->i[0] != n->i[0] || S->dtype != n->dtype || S->rank != n->rank)
			continue;
		E = &g->nodes[S->arg[0]];
		if (E->op != CG_EXP || E->materialize)
			continue;
		D = &g->nodes[E->arg[0]];
		if (D->op == CG_SUB && !D->materialize && D->arg[0] == n->arg[0] && lse_shift(g, D->arg[1], id))
			return j;
	}
	return -1;
}

/* The reduced node's operand map: kept dims from m, reduced ones set by
 * open_loops. */
static void
kept_map(const struct cg_node *n, const struct cg_node *an, const struct cg_map *m, struct cg_map *am)
{
	memset(am, 0, sizeof(*am));
	am->rank = an->rank;
	for (int d = 0, j = 0; d < an->rank; d++) {
		if (n->rmask & (1u << d)) {
			if (n->i[0])
				j++;
			continue;
		}
		am->r[d] = m->r[j++];
	}
}

/* The float max whose partner (lse_partner) sum node id is, or -1. */
static int
lse_max_of(const struct cg_emit *e, int id)
{
	const struct cg *g = e->g;
	const struct cg_node *S = &g->nodes[id], *E = &g->nodes[S->arg[0]], *D;
	int w, mx;

	if (S->op != CG_RSUM || E->op != CG_EXP)
		return -1;
	D = &g->nodes[E->arg[0]];
	if (D->op != CG_SUB)
		return -1;
	w = D->arg[1];
	mx = g->nodes[w].op == CG_WHERE ? g->nodes[w].arg[2] : w;
	if (g->nodes[mx].op != CG_RMAX || !ir_dtype_is_float(g->nodes[mx].dtype))
		return -1;
	return lse_partner(e, mx) == id ? mx : -1;
}

/* sum += exp(x - shift) over the reduced dims, in a scope of its own
 * under P. With local (the thread's own max, acc its name) the max reads
 * as that scope's, so whatever is computed from it (logsumexp's shift)
 * stays inside; else head wraps the scope (the pass again, against the
 * row's max) and the team adds up. */
static int
lse_sum_loop(struct cg_emit *e, struct cg_scope *P, const char *head, int max, int sum,
    const struct cg_map *m, const char *macc, const char *acc)
{
	const struct cg_node *S = &e->g->nodes[sum], *an = &e->g->nodes[e->g->nodes[S->arg[0]].arg[0]];
	struct cg_scope *G = cg_scope_new(e, P), *inner, *first;
	struct cg_map am;
	struct cg_val v;
	char x[256];
	int lin, error;

	if (!G)
		return e->error;
	if (head) {
		buf_addstr(&G->head, head);
		cgx_literal(0, S->dtype, x, sizeof(x));
		cg_line(e, G, "%s = %s;", acc, x);
	} else {
		memset(&v, 0, sizeof(v));
		snprintf(v.name, sizeof(v.name), "%s", macc);
		v.scope = G;
		v.dtype = e->g->nodes[max].dtype;
		cgx_memo_add(e, G, max, m, &v);
	}
	kept_map(S, an, m, &am);
	if (!(inner = open_loops(e, G, an, S->rmask, NULL, 1, &am, &first, &lin)))
		return e->error ? e->error : -ENOMEM;
	if ((error = cg_ev(e, inner, S->arg[0], &am, &v)) < 0)
		return error;
	if (v.vec)
		return cg_fail(e, -EAGAIN, "vector lanes inside a reduction");
	cg_line(e, inner, "%s += %s;", acc, cgx_opnd(&v, S->dtype, 0, x, sizeof(x)));
	if ((error = close_loops(e, inner, G)) < 0)
		return error;
	if (head)
		cg_line(e, G, "%s = kb_team_sum(%s);", acc, acc);
	return cg_scope_close(e, G);
}

/*
 * Schedule online: float max node max and its partner sum of
 * exponentials (lse_partner) in one team reduction, at map m in scope P
 * (reached from either node: the other one's value is left for cg_ev to
 * find). Each thread takes its max over its part of the row and the sum
 * of exp(x - that max), and kb_team_lse combines the (max, sum) pairs,
 * rescaling each sum to the larger max: one combine a row instead of
 * two. Where the row's max is not finite (an infinity or a NaN) the sum
 * is taken again against the shift the graph says, as without online, so
 * infinities and NaN come out as they would.
 */
static int
online_pair(struct cg_emit *e, struct cg_scope *s, struct cg_scope *P, int max, int sum,
    const struct cg_map *m, struct cg_val *mv, struct cg_val *sv)
{
	char head[96], zero[64], ninf[64];
	enum ir_dtype dt = e->g->nodes[max].dtype;
	int error;

	/* the max's loop, its team combine left out (lse_local) */
	e->lse_local = max;
	error = cgx_reduce(e, s, max, m, mv);
	e->lse_local = -1;
	if (error < 0)
		return error;
	if (mv->scope != P)
		return cg_fail(e, -EINVAL, "internal: a row's max and sum in different scopes");
	memset(sv, 0, sizeof(*sv));
	snprintf(sv->name, sizeof(sv->name), "a%d", e->ntemps++);
	sv->scope = P;
	sv->dtype = e->g->nodes[sum].dtype;
	cgx_literal(0, sv->dtype, zero, sizeof(zero));
	cgx_literal(-INFINITY, dt, ninf, sizeof(ninf));
	cg_line(e, P, "%s %s = %s;", cg_ctype(sv->dtype), sv->name, zero);
	if ((error = lse_sum_loop(e, P, NULL, max, sum, m, mv->name, sv->name)) < 0)
		return error;
	cg_line(e, P, "if (%s == %s) %s = %s;	/* no finite element: nothing to add */", mv->name, ninf,
	    sv->name, zero);
	cg_line(e, P, "kb_team_lse(%s, %s);", mv->name, sv->name);
	/* from here the max is the row's */
	cgx_memo_add(e, P, max, m, mv);
	snprintf(head, sizeof(head), "if (!isfinite(%s))", mv->name);
	if ((error = lse_sum_loop(e, P, head, max, sum, m, mv->name, sv->name)) < 0)
		return error;
	cgx_memo_add(e, P, sum, m, sv);
	return e->error;
}

/* argmax/argmin's step in the inner loop: the first extreme wins; NaN
 * counts as the extreme, its first one wins. The index is the linear
 * one over the reduced dims, from their maps in am. */
static void
arg_update(struct cg_emit *e, struct cg_scope *inner, const struct cg_node *n,
    const struct cg_node *an, const struct cg_map *am, const char *acc, const char *x, int fl)
{
	struct buf li = BUF_INIT(EXPR_MAX);
	struct cg_aff L;
	int64_t stride = 1;

	memset(&L, 0, sizeof(L));
	for (int d = an->rank - 1; d >= 0; d--)
		if (n->rmask & (1u << d)) {
			cgx_aff_axpy(&L, stride, &am->r[d]);
			stride *= an->shape[d];
		}
	cgx_aff_print(e, &L, &li);
	if (fl)
		cg_line(e, inner, "if (%s %s %sv || (%s != %s && %sv == %sv)) { %sv = %s; %s = %s; }",
		    x, n->op == CG_RARGMAX ? ">" : "<", acc, x, x, acc, acc, acc, x, acc, buf_cstr(&li));
	else
		cg_line(e, inner, "if (%s %s %sv) { %sv = %s; %s = %s; }", x,
		    n->op == CG_RARGMAX ? ">" : "<", acc, acc, x, acc, buf_cstr(&li));
	buf_free(&li);
}

/* The team's combine of a cooperative reduction's accumulator: a float
 * max or min carries its NaN into it (kb_op_nmax), one reduction instead
 * of a second for the flag. */
static void
team_combine(struct cg_emit *e, struct cg_scope *P, const struct cg_node *n, const char *acc, int fl)
{
	switch (n->op) {
	case CG_RSUM: cg_line(e, P, "%s = kb_team_sum(%s);", acc, acc); break;
	case CG_RPROD: cg_line(e, P, "%s = kb_team_prod(%s);", acc, acc); break;
	case CG_RMAX: cg_line(e, P, "%s = kb_team_%smax(%s);", acc, fl ? "n" : "", acc); break;
	case CG_RMIN: cg_line(e, P, "%s = kb_team_%smin(%s);", acc, fl ? "n" : "", acc); break;
	case CG_RARGMAX: cg_line(e, P, "kb_team_argmax(&%sv, &%s);", acc, acc); break;
	default: cg_line(e, P, "kb_team_argmin(&%sv, &%s);", acc, acc); break;
	}
}

/* How many times the loops around scope P run it: the product of the
 * extents of the iteration variables defined at or above it (unknown
 * ones: 1). */
static int64_t
trips(const struct cg_emit *e, const struct cg_scope *P)
{
	int64_t t = 1;

	for (const struct cg_scope *sc = P; sc; sc = sc->parent)
		for (int v = 0; v < e->nvars; v++)
			if (e->var[v].scope == sc && e->var[v].iter && e->var[v].extent > 1) {
				if (t > (INT64_C(1) << 50) / e->var[v].extent)
					return INT64_C(1) << 50;
				t *= e->var[v].extent;
			}
	return t;
}

/* Note reduction id, placed at P, when the loops around P repeat it at a
 * cost past CG_RECOMPUTE_* (cg.h). */
static void
note_recompute(struct cg_emit *e, const struct cg_scope *P, int id)
{
	const struct cg_node *n = &e->g->nodes[id], *an = &e->g->nodes[n->arg[0]];
	int64_t el = ir_numel(n->rank, n->shape), len = lw_reduced(an, n->rmask);
	int64_t t = trips(e, P), floor = e->backend == CG_CUDA ? CG_RECOMPUTE_CUDA : CG_RECOMPUTE_CPU;
	double extra;

	if (e->recompute >= 0 || el < 1 || t <= el || len < 2)
		return;
	extra = (double)(t - el) * (double)len;
	if (extra > (double)el * (double)len && extra >= (double)floor)
		e->recompute = id;
}

int
cgx_reduce(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id], *an = &e->g->nodes[n->arg[0]];
	enum ir_dtype vt = an->dtype, at = n->dtype;
	struct cg_scope *P = NULL, *inner, *first;
	struct cg_map am;
	struct cg_val v;
	char acc[24], init[128], clause[128], x[256];
	int fl = ir_dtype_is_float(vt), coop, lin, error, isarg, lanes = 0;

	for (int d = 0; d < m->rank; d++) {
		if (cgx_aff_vec(e, &m->r[d])) {
			/* column teams: a sum or product per lane (the lanes are
			 * kept dims, adjacent outputs read 16 bytes at a time) */
			if (!e->vec_red || (n->op != CG_RSUM && n->op != CG_RPROD))
				return cg_fail(e, -EAGAIN, "vector lanes through a reduction");
			lanes = 1;
		}
		P = cgx_aff_scope(e, &m->r[d], P);
	}
	P = cgx_deeper(P, cgx_guard_floor(s));
	if (!P)
		P = cgx_outermost(s);
	note_recompute(e, P, id);
	isarg = n->op == CG_RARGMAX || n->op == CG_RARGMIN;
	if (!isarg && n->op != CG_RMAX && n->op != CG_RMIN)
		vt = at;
	coop = e->backend == CG_CUDA && P->uniform;
	if (coop && e->lse_ok && e->sched->online && e->lse_local < 0 && !lanes) {
		/* a row's max and its sum of exponentials: one team combine */
		struct cg_val other;
		int mx = n->op == CG_RMAX && fl ? id : lse_max_of(e, id);
		int sum = mx == id ? lse_partner(e, id) : id;
		if (mx >= 0 && sum >= 0)
			return mx == id ? online_pair(e, s, P, mx, sum, m, out, &other) :
			    online_pair(e, s, P, mx, sum, m, &other, out);
	}
	if (lw_reduced(an, n->rmask) >= CG_LARGE_REDUCTION) {
		if (P->level > e->red_level)
			e->red_level = P->level;
		if (n->rmask & (1u << (an->rank - 1)))
			e->red_rowlike = 1;
		if (lw_reduced(an, n->rmask) > e->red_extent)
			e->red_extent = lw_reduced(an, n->rmask);
	}
	snprintf(acc, sizeof(acc), "a%d", e->ntemps++);
	init_text(n->op, isarg ? an->dtype : at, init, sizeof(init));
	clause[0] = '\0';
	if (isarg) {
		cg_line(e, P, "%s %sv = %s;", cg_ctype(an->dtype), acc, init);
		cg_line(e, P, "int64_t %s = 0;", acc);
	} else if (lanes) {
		cg_line(e, P, "%s %s[KB_VEC]; KB_LANES %s[kb_j] = %s;", cg_ctype(at), acc, acc, init);
	} else {
		cg_line(e, P, "%s %s = %s;", cg_ctype(at), acc, init);
		if (fl && (n->op == CG_RMAX || n->op == CG_RMIN))
			cg_line(e, P, "int %sn = 0;", acc);
		if (n->op == CG_RSUM)
			snprintf(clause, sizeof(clause), "reduction(+:%s)", acc);
		else if (n->op == CG_RPROD)
			snprintf(clause, sizeof(clause), "reduction(*:%s)", acc);
		else if (fl)
			snprintf(clause, sizeof(clause), "reduction(%s:%s) reduction(|:%sn)",
			    n->op == CG_RMAX ? "max" : "min", acc, acc);
		else
			snprintf(clause, sizeof(clause), "reduction(%s:%s)", n->op == CG_RMAX ? "max" : "min", acc);
	}
	/* kept dims come from m; reduced dims from the loops */
	kept_map(n, an, m, &am);
	inner = open_loops(e, P, an, n->rmask, isarg ? NULL : clause, coop, &am, &first, &lin);
	if (!inner)
		return e->error ? e->error : -ENOMEM;
	if (lw_reduced(an, n->rmask) >= CG_LARGE_REDUCTION) {
		/* a long reduction recomputed in every iteration of another's
		 * loop: the outer one's operand deserves its own kernel */
		for (int j = 0; j < e->nred; j++)
			for (struct cg_scope *sc = P; sc; sc = sc->parent)
				if (sc == e->red_loop[j] && e->cut < 0)
					e->cut = e->g->nodes[e->red_node[j]].arg[0];
		if (e->nred < 16) {
			e->red_node[e->nred] = id;
			e->red_loop[e->nred++] = first;
		}
	}
	error = cg_ev(e, inner, n->arg[0], &am, &v);
	if (lw_reduced(an, n->rmask) >= CG_LARGE_REDUCTION && e->nred > 0 &&
	    e->red_node[e->nred - 1] == id)
		e->nred--;
	if (error < 0)
		return error;
	cgx_opnd(&v, vt, lanes, x, sizeof(x));
	if (v.vec && !lanes)
		return cg_fail(e, -EAGAIN, "vector lanes inside a reduction");
	if (lanes) {
		cg_line(e, inner, "KB_LANES %s[kb_j] %s= %s;", acc, n->op == CG_RSUM ? "+" : "*", x);
		if ((error = close_loops(e, inner, P)) < 0)
			return error;
		if (coop)
			cg_line(e, P, "KB_LANES %s[kb_j] = kb_team_%s(%s[kb_j]);", acc,
			    n->op == CG_RSUM ? "sum" : "prod", acc);
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "%s", acc);
		out->scope = P;
		out->vec = 1;
		out->dtype = at;
		return e->error;
	}
	switch (n->op) {
	case CG_RSUM: cg_line(e, inner, "%s += %s;", acc, x); break;
	case CG_RPROD: cg_line(e, inner, "%s *= %s;", acc, x); break;
	case CG_RMAX:
	case CG_RMIN:
		cg_line(e, inner, "%s = %s %s %s ? %s : %s;", acc, x, n->op == CG_RMAX ? ">" : "<", acc, x, acc);
		if (fl)
			cg_line(e, inner, "%sn |= %s != %s;", acc, x, x);
		break;
	default:
		arg_update(e, inner, n, an, &am, acc, x, fl);
		break;
	}
	if ((error = close_loops(e, inner, P)) < 0)
		return error;
	if (fl && (n->op == CG_RMAX || n->op == CG_RMIN))
		cg_line(e, P, "if (%sn) %s = NAN;", acc, acc);
	if (coop && e->lse_local != id)
		team_combine(e, P, n, acc, fl);
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", acc);
	out->scope = P;
	out->dtype = at;
	return e->error;
}

/* Direct convolution, one output element (CPU): the loops over input
 * channels and taps run inside the caller's (vectorized) loop. */
int
cgx_conv(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id];
	const struct cg_node *xn = &e->g->nodes[n->arg[0]], *wn = &e->g->nodes[n->arg[1]];
	int nsp = (int)n->i[CG_CONV_NSP], G = (int)n->i[CG_CONV_GROUPS], gv = -1, error;
	int64_t cin_g = wn->shape[1], cout_g = wn->shape[0] / (G ? G : 1);
	struct cg_scope *P = NULL, *cur;
	struct cg_map xm, wm;
	struct cg_val vx, vw;
	struct buf cond = BUF_INIT(EXPR_MAX);
	char acc[24], zero[64], x[256], w[256];
	int ic;

	for (int d = 0; d < m->rank; d++) {
		if (cgx_aff_vec(e, &m->r[d]))
			return cg_fail(e, -EAGAIN, "vector lanes through a convolution");
		P = cgx_aff_scope(e, &m->r[d], P);
	}
	P = cgx_deeper(P, cgx_guard_floor(s));
	if (!P)
		P = cgx_outermost(s);
	snprintf(acc, sizeof(acc), "a%d", e->ntemps++);
	cgx_literal(0, n->dtype, zero, sizeof(zero));
	cg_line(e, P, "%s %s = %s;", cg_ctype(n->dtype), acc, zero);
	if (G > 1) {
		char text[256];
		int oc = cgx_aff_var(e, P, &m->r[1], n->shape[1]);
		if (oc < 0)
			return e->error;
		snprintf(text, sizeof(text), "%s / %" PRId64, e->var[oc].name, cout_g);
		if ((gv = cgx_derived(e, P, oc, text, G)) < 0)
			return e->error;
	}
	memset(&xm, 0, sizeof(xm));
	memset(&wm, 0, sizeof(wm));
	xm.rank = xn->rank;
	wm.rank = wn->rank;
	xm.r[0] = m->r[0];
	wm.r[0] = m->r[1];
	/* loops: input channel, then the taps */
	cur = P;
	for (int l = 0; l < 1 + nsp; l++) {
		struct cg_scope *L = cg_scope_new(e, cur);
		int64_t ext = l == 0 ? cin_g : wn->shape[2 + l - 1];
		int v;
		if (!L || (v = cg_var_new(e, L, "r")) < 0)
			return e->error ? e->error : -ENOMEM;
		e->var[v].extent = ext;
		buf_printf(&L->head, "for (int64_t %s = 0; %s < %" PRId64 "; %s++)", e->var[v].name,
		    e->var[v].name, ext, e->var[v].name);
		if (l == 0) {
			ic = v;
			cgx_unit(&wm.r[1], v);
			cgx_unit(&xm.r[1], v);
			if (gv >= 0)
				xm.r[1].c[gv] = cin_g;
		} else {
			int j = l - 1, xi, c;
			struct cg_aff row;
			memset(&row, 0, sizeof(row));
			cgx_aff_axpy(&row, n->i[CG_CONV_STRIDE + j], &m->r[2 + j]);
			row.c[v] += n->i[CG_CONV_DIL + j];
			row.k -= n->i[CG_CONV_PAD + j];
			cgx_unit(&wm.r[2 + j], v);
			if (n->i[CG_CONV_PAD + j] == 0) {
				xm.r[2 + j] = row;
			} else {
				if ((xi = cgx_aff_var(e, L, &row, 0)) < 0 ||
				    (c = cgx_clamp_var(e, L, xi, xn->shape[2 + j])) < 0)
					return e->error;
				buf_printf(&cond, "%s(%s >= 0 && %s < %" PRId64 ")", cond.len ? " && " : "",
				    e->var[xi].name, e->var[xi].name, xn->shape[2 + j]);
				cgx_unit(&xm.r[2 + j], c);
			}
		}
		cur = L;
	}
	(void)ic;
	if ((error = cg_ev(e, cur, n->arg[0], &xm, &vx)) < 0 ||
	    (error = cg_ev(e, cur, n->arg[1], &wm, &vw)) < 0)
		return error;
	cgx_opnd(&vx, n->dtype, 0, x, sizeof(x));
	cgx_opnd(&vw, n->dtype, 0, w, sizeof(w));
	if (cond.len)
		cg_line(e, cur, "%s += %s ? %s * %s : %s;", acc, buf_cstr(&cond), x, w, zero);
	else
		cg_line(e, cur, "%s += %s * %s;", acc, x, w);
	buf_free(&cond);
	if ((error = close_loops(e, cur, P)) < 0)
		return error;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", acc);
	out->scope = P;
	out->dtype = n->dtype;
	return e->error;
}
