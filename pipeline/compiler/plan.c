/*
 * Which nodes get a kernel of their own, how a group's loops are shaped,
 * and strided views for library calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/compiler/cg.h"
#include "pipeline/compiler/group.h"
#include "pipeline/compiler/cuda.h"
#include "pipeline/compiler/emit.h"

int
cg_strided(const struct cg *g, int id, int *leaf, int64_t *off, int64_t *strides)
{
	const struct cg_node *n = &g->nodes[id];
	int64_t as[CG_MAX_RANK], ao, st = 1;

	if (n->op == CG_INPUT || n->materialize) {
		for (int d = n->rank - 1; d >= 0; d--) {
			strides[d] = st;
			st *= n->shape[d];
		}
		*leaf = id;
		*off = 0;
		return 0;
	}
	if (n->op == CG_VIEW) {
		const struct cg_node *an = &g->nodes[n->arg[0]];
		if (cg_strided(g, n->arg[0], leaf, &ao, as) < 0)
			return -1;
		*off = ao;
		for (int d = 0; d < an->rank; d++)
			*off += n->vmap->k[d] * as[d];
		for (int j = 0; j < n->rank; j++) {
			strides[j] = 0;
			for (int d = 0; d < an->rank; d++)
				strides[j] += n->vmap->c[d][j] * as[d];
		}
		return 0;
	}
	if (n->op == CG_RESHAPE) {
		const struct cg_node *an = &g->nodes[n->arg[0]];
		if (cg_strided(g, n->arg[0], leaf, &ao, as) < 0)
			return -1;
		for (int d = an->rank - 1; d >= 0; d--) {
			if (an->shape[d] != 1 && as[d] != st)
				return -1;	/* not contiguous: a reshape would need a copy */
			st *= an->shape[d];
		}
		st = 1;
		for (int d = n->rank - 1; d >= 0; d--) {
			strides[d] = st;
			st *= n->shape[d];
		}
		*off = ao;
		return 0;
	}
	return -1;
}

void
cg_plan(struct cg *g, const struct schedule *s)
{
	int cand = 0;

	for (int i = 0; i < g->n; i++)
		g->nodes[i].materialize = g->nodes[i].output >= 0 || g->nodes[i].keep;
	for (int i = 0; i < g->n; i++) {
		struct cg_node *n = &g->nodes[i];
		int leaf;
		int64_t off, st[CG_MAX_RANK];

		/* CPU convolution: im2col + GEMM (emit_c.c) once its operands
		 * are in memory; inline (direct) it recomputes a computed
		 * operand once per tap and output channel */
		if (n->op == CG_CONV && s->backend == SCHED_CPU && n->dtype == IR_F32 &&
		    n->i[CG_CONV_NSP] >= 1 && n->i[CG_CONV_NSP] <= 2)
			for (int a = 0; a < 2; a++)
				if (cg_strided(g, n->arg[a], &leaf, &off, st) < 0)
					g->nodes[n->arg[a]].materialize = 1;
		if (n->op == CG_CUMSUM || n->op == CG_CUMPROD || n->op == CG_GEMM ||
		    (n->op == CG_CONV && s->backend == SCHED_CUDA) ||
		    (s->backend == SCHED_CPU && emit_cpu_conv_gemm_ok(g, i)))
			n->materialize = 1;
		if (n->op == CG_GEMM || (n->op == CG_CONV && s->backend == SCHED_CUDA))
			for (int a = 0; a < 2; a++)
				if (cg_strided(g, n->arg[a], &leaf, &off, st) < 0)
					g->nodes[n->arg[a]].materialize = 1;
		/* fusion boundaries the search may toggle: shared intermediates */
		if ((cg_is_reduction(n->op) || (cg_is_pointwise(n->op) && n->uses > 1)) &&
		    cand < SCHEDULE_MAX_CUTS) {
			if (s->cuts & (UINT64_C(1) << cand))
				n->materialize = 1;
			cand++;
		}
	}
	/* cuBLAS needs a unit stride in each matrix and one batch stride;
	 * cuDNN contiguous tensors: copy what does not fit */
	for (int i = 0; i < g->n && s->backend == SCHED_CUDA; i++) {
		struct cg_node *n = &g->nodes[i];
		int leaf;
		int64_t off, st[CG_MAX_RANK];
		if (n->op == CG_GEMM) {
			for (int a = 0; a < 2; a++)
				if (cu_gemm_operand_ok(g, i, a) < 0)
					g->nodes[n->arg[a]].materialize = 1;
		} else if (n->op == CG_CONV) {
			for (int a = 0; a < 2; a++) {
				const struct cg_node *an = &g->nodes[n->arg[a]];
				int64_t want = 1;
				int contiguous = cg_strided(g, n->arg[a], &leaf, &off, st) == 0;
				for (int d = an->rank - 1; d >= 0 && contiguous; d--) {
					if (an->shape[d] != 1 && st[d] != want)
						contiguous = 0;
					want *= an->shape[d];
				}
				if (!contiguous)
					g->nodes[n->arg[a]].materialize = 1;
			}
		}
	}
	/* A materialized operand of a GEMM may itself be read through views. */
	for (int i = 0; i < g->n; i++) {
		struct cg_node *n = &g->nodes[i];
		int leaf;
		int64_t off, st[CG_MAX_RANK];
		if (n->op == CG_GEMM || (n->op == CG_CONV && s->backend == SCHED_CUDA))
			for (int a = 0; a < 2; a++)
				if (cg_strided(g, n->arg[a], &leaf, &off, st) < 0)
					g->nodes[n->arg[a]].materialize = 1;
	}
}

/* ------------------------------------------------------------ groups */

/* The common refinement of two shapes with the same number of elements,
 * or -1 when their dims do not nest. */
static int
refine2(int ra, const int64_t *a, int rb, const int64_t *b, int *rq, int64_t *q)
{
	int64_t bound[2 * CG_MAX_RANK + 1];
	int nb = 0, i, j;
	int64_t p;

	bound[nb++] = 1;
	p = 1;
	for (i = ra - 1; i >= 0; i--)
		bound[nb++] = (p *= a[i]);
	p = 1;
	for (i = rb - 1; i >= 0; i--)
		bound[nb++] = (p *= b[i]);
	for (i = 1; i < nb; i++)
		for (j = i; j > 0 && bound[j] < bound[j - 1]; j--) {
			int64_t t = bound[j];
			bound[j] = bound[j - 1];
			bound[j - 1] = t;
		}
	/* unique, then every bound must divide the next */
	for (i = 1, j = 1; i < nb; i++)
		if (bound[i] != bound[j - 1])
			bound[j++] = bound[i];
	nb = j;
	if (nb - 1 > CG_MAX_RANK)
		return -1;
	for (i = 1; i < nb; i++)
		if (bound[i - 1] == 0 || bound[i] % bound[i - 1])
			return -1;
	*rq = nb - 1;
	for (i = 0; i < nb - 1; i++)
		q[i] = bound[nb - 1 - i] / bound[nb - 2 - i];
	return 0;
}

static void
collect_reshapes(const struct cg *g, int id, int root, int *q, int64_t *shape, int depth)
{
	const struct cg_node *n = &g->nodes[id], *r = &g->nodes[root];

	if (depth > 64 || (id != root && (n->materialize || n->op == CG_INPUT)))
		return;
	if (n->rank != r->rank || memcmp(n->shape, r->shape, sizeof(int64_t) * (size_t)n->rank))
		return;
	if (n->op == CG_RESHAPE) {
		const struct cg_node *an = &g->nodes[n->arg[0]];
		int rq;
		int64_t qs[CG_MAX_RANK];
		if (refine2(*q, shape, an->rank, an->shape, &rq, qs) == 0) {
			*q = rq;
			memcpy(shape, qs, sizeof(qs));
		}
		return;
	}
	if (!cg_is_pointwise(n->op) && id != root)
		return;
	for (int a = 0; a < 3; a++)
		if (n->arg[a] >= 0)
			collect_reshapes(g, n->arg[a], root, q, shape, depth + 1);
}

void
cg_group_shape(const struct cg *g, int root, int *q, int64_t *shape)
{
	const struct cg_node *r = &g->nodes[root];

	*q = r->rank;
	memcpy(shape, r->shape, sizeof(int64_t) * CG_MAX_RANK);
	if (cg_is_pointwise(r->op) || r->op == CG_RESHAPE)
		collect_reshapes(g, root, root, q, shape, 0);
	if (ir_numel(*q, shape) != ir_numel(r->rank, r->shape)) {
		*q = r->rank;
		memcpy(shape, r->shape, sizeof(int64_t) * CG_MAX_RANK);
	}
}

void
cg_group_root_map(const struct cg *g, int root, int q, const int64_t *shape, const int *vars,
    struct cg_map *m)
{
	const struct cg_node *r = &g->nodes[root];
	int i = q - 1;

	memset(m, 0, sizeof(*m));
	m->rank = r->rank;
	/* refined dims fill root dims from the innermost out */
	for (int d = r->rank - 1; d >= 0; d--) {
		int64_t have = 1, stride = 1;
		while (i >= 0 && have * shape[i] <= r->shape[d] && r->shape[d] % (have * shape[i]) == 0 &&
		    (have < r->shape[d] || shape[i] == 1)) {
			m->r[d].c[vars[i]] += stride;
			stride *= shape[i];
			have *= shape[i];
			i--;
		}
	}
}

/* ------------------------------------------------------------ cuts */

/* Loop variables and index temps a node adds to the kernel it is
 * inlined into, roughly: one per reduced dim or convolution window dim,
 * one for an index computation, and one per computed node so that long
 * pointwise chains count too. */
static int64_t
own_vars(const struct cg_node *n)
{
	switch (n->op) {
	case CG_VIEW: case CG_RESHAPE: case CG_INPUT: case CG_CONST:
		return 0;
	case CG_CONV:
		return 4 * (n->i[CG_CONV_NSP] + 1) + 1;
	case CG_TAKE: case CG_LOOKUP: case CG_PAD: case CG_CAT:
		return 4 + 1;
	default:
		return cg_is_reduction(n->op) ? 4 * __builtin_popcount(n->rmask) + 1 : 1;
	}
}

int
cg_plan_cut(const struct cg *g, int root)
{
	int64_t *w = calloc((size_t)g->n, sizeof(*w)), total, best_d = -1;
	unsigned char *in = calloc((size_t)g->n, 1);
	int best = -1;

	if (!w || !in || root < 0 || root >= g->n)
		goto out;
	/* args come before their users: weights bottom up, counting a node
	 * once per use, as inlining recomputes it */
	for (int i = 0; i <= root; i++) {
		const struct cg_node *n = &g->nodes[i];
		w[i] = own_vars(n);
		for (int a = 0; a < 3; a++) {
			const struct cg_node *an;
			if (n->arg[a] < 0)
				continue;
			an = &g->nodes[n->arg[a]];
			if (!an->materialize && an->op != CG_INPUT)
				w[i] += w[n->arg[a]];
		}
		if (w[i] > (INT64_C(1) << 40))
			w[i] = INT64_C(1) << 40;
	}
	in[root] = 1;
	for (int i = root; i >= 0; i--) {
		const struct cg_node *n = &g->nodes[i];
		if (!in[i])
			continue;
		for (int a = 0; a < 3; a++)
			if (n->arg[a] >= 0 && !g->nodes[n->arg[a]].materialize &&
			    g->nodes[n->arg[a]].op != CG_INPUT)
				in[n->arg[a]] = 1;
	}
	total = w[root];
	for (int i = 0; i < root; i++) {
		const struct cg_node *n = &g->nodes[i];
		int64_t d;
		if (!in[i] || !own_vars(n) || w[i] <= 0)
			continue;
		d = 2 * w[i] - total;
		d = d < 0 ? -d : d;
		if (best < 0 || d < best_d || (d == best_d && w[i] > w[best])) {
			best = i;
			best_d = d;
		}
	}
out:
	free(w);
	free(in);
	return best;
}
