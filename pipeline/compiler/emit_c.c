/*
 * The CPU backend: one C file, one function. Each materialized node is a
 * loop nest: the outer levels (everything a long reduction depends on)
 * are `omp parallel for collapse`, the inner ones end in `omp simd`, and
 * the fused expression (expr.c) fills the body. GEMM is a blocked loop
 * nest; convolution is computed inline (direct) inside its consumer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/compiler/emit.h"
#include "pipeline/compiler/expr.h"
#include "pipeline/compiler/group.h"

/* Loops over the group's iteration space; k outer levels. probe: one
 * plain scope per level, to find where reductions land. par: worth an
 * OpenMP parallel region (enough work to pay for the fork and barrier). */
static int
group_loops(struct cg_emit *e, struct cg_scope *F, int root, int q, const int64_t *shape, int k,
    int probe, int par)
{
	const struct cg_node *n = &e->g->nodes[root];
	struct cg_scope *G, *cur, *open[CG_MAX_RANK + 2];
	int vars[CG_MAX_RANK], nopen = 0, error, outer;
	struct cg_map m;
	struct cg_aff off;
	struct cg_val v;
	struct buf st = BUF_INIT(EXPR_MAX);
	char x[256];

	cg_emit_reset_vars(e);
	e->red_level = 0;
	e->red_rowlike = 0;
	e->red_extent = 0;
	e->root = root;
	if (!(G = cg_scope_new(e, F)))
		return e->error;
	G->level = 0;
	cur = G;
	outer = probe ? 0 : (k > 0 ? k : (q > 1 ? q - 1 : 0));
	if (outer > 0) {
		struct cg_scope *O = cg_scope_new(e, cur);
		if (!O)
			return e->error;
		if (par && ir_numel(outer, shape) > 1) {
			if (outer > 1)
				buf_printf(&O->head, "#pragma omp parallel for collapse(%d)\n", outer);
			else
				buf_printf(&O->head, "#pragma omp parallel for\n");
			O->par = 1;
		}
		for (int i = 0; i < outer; i++) {
			if ((vars[i] = cg_var_new(e, O, "i")) < 0)
				return e->error;
			e->var[vars[i]].extent = shape[i];
			buf_printf(&O->head, "%sfor (int64_t %s = 0; %s < %" PRId64 "; %s++)", i ? "\n" : "",
			    e->var[vars[i]].name, e->var[vars[i]].name, shape[i], e->var[vars[i]].name);
		}
		O->level = outer;
		open[nopen++] = O;
		cur = O;
	}
	for (int i = outer; i < q; i++) {
		struct cg_scope *L = cg_scope_new(e, cur);
		if (!L || (vars[i] = cg_var_new(e, L, "i")) < 0)
			return e->error;
		e->var[vars[i]].extent = shape[i];
		if (!probe && i == q - 1) {
			if (par && !cur->par && q == 1)
				buf_printf(&L->head, "#pragma omp parallel for simd\n");
			else
				buf_printf(&L->head, "#pragma omp simd\n");
			L->in_simd = 1;
			L->par = 1;
		}
		buf_printf(&L->head, "for (int64_t %s = 0; %s < %" PRId64 "; %s++)", e->var[vars[i]].name,
		    e->var[vars[i]].name, shape[i], e->var[vars[i]].name);
		L->level = i + 1;
		open[nopen++] = L;
		cur = L;
	}
	cg_group_root_map(e->g, root, q, shape, vars, &m);
	if ((error = cg_ev(e, cur, root, &m, &v)) < 0)
		return error;
	cg_map_offset(&m, n->rank, n->shape, &off);
	buf_printf(&st, "%s[", e->bufname[root]);
	cgx_aff_print(e, &off, &st);
	cg_line(e, cur, "%s] = %s;", buf_cstr(&st), cgx_opnd(&v, n->dtype, 0, x, sizeof(x)));
	buf_free(&st);
	while (nopen > 0)
		if ((error = cg_scope_close(e, open[--nopen])) < 0)
			return error;
	if (probe)
		return 0;
	return cg_scope_close(e, G);
}

static int
emit_pointwise_group(struct cg_emit *e, struct cg_scope *F, int root)
{
	struct cg_scope *junk;
	int64_t shape[CG_MAX_RANK];
	int q, k, error;
	int64_t work;

	cg_group_shape(e->g, root, &q, shape);
	/* probe in a detached scope, then emit for real */
	if (!(junk = cg_scope_new(e, NULL)))
		return e->error;
	if ((error = group_loops(e, junk, root, q, shape, q, 1, 0)) < 0)
		return error;
	k = e->red_level;
	/* work: the reductions run once per element of the levels above them */
	work = ir_numel(q, shape) + ir_numel(k, shape) * e->red_extent;
	/* a reduction across rows (not along the last dim): vectorize across
	 * the last output dim instead, each lane summing its own column */
	if (k == q && q >= 1 && !e->red_rowlike)
		k = q - 1;
	return group_loops(e, F, root, q, shape, k, 0, work >= CG_CPU_GRAIN);
}

static int
emit_scan(struct cg_emit *e, struct cg_scope *F, int root)
{
	const struct cg_node *n = &e->g->nodes[root];
	int dim = (int)n->i[0], vars[CG_MAX_RANK], error, nout = 0;
	struct cg_scope *G = cg_scope_new(e, F), *O = NULL, *S;
	struct cg_map m;
	struct cg_aff off;
	struct cg_val v;
	struct buf st = BUF_INIT(EXPR_MAX);
	char acc[24], x[256], init[64];

	cg_emit_reset_vars(e);
	e->root = root;
	if (!G)
		return e->error;
	for (int d = 0; d < n->rank; d++)
		nout += d != dim;
	if (nout) {
		int i = 0;
		if (!(O = cg_scope_new(e, G)))
			return e->error;
		if (ir_numel(n->rank, n->shape) >= CG_CPU_GRAIN) {
			buf_printf(&O->head, "#pragma omp parallel for%s", nout > 1 ? "" : "\n");
			if (nout > 1)
				buf_printf(&O->head, " collapse(%d)\n", nout);
			O->par = 1;
		}
		for (int d = 0; d < n->rank; d++) {
			if (d == dim)
				continue;
			if ((vars[d] = cg_var_new(e, O, "i")) < 0)
				return e->error;
			e->var[vars[d]].extent = n->shape[d];
			buf_printf(&O->head, "%sfor (int64_t %s = 0; %s < %" PRId64 "; %s++)", i++ ? "\n" : "",
			    e->var[vars[d]].name, e->var[vars[d]].name, n->shape[d], e->var[vars[d]].name);
		}
	}
	snprintf(acc, sizeof(acc), "a%d", e->ntemps++);
	cgx_literal(n->op == CG_CUMSUM ? 0 : 1, n->dtype, init, sizeof(init));
	cg_line(e, O ? O : G, "%s %s = %s;", cg_ctype(n->dtype), acc, init);
	if (!(S = cg_scope_new(e, O ? O : G)) || (vars[dim] = cg_var_new(e, S, "i")) < 0)
		return e->error;
	e->var[vars[dim]].extent = n->shape[dim];
	buf_printf(&S->head, "for (int64_t %s = 0; %s < %" PRId64 "; %s++)", e->var[vars[dim]].name,
	    e->var[vars[dim]].name, n->shape[dim], e->var[vars[dim]].name);
	cg_map_identity(&m, n->rank, vars);
	if ((error = cg_ev(e, S, n->arg[0], &m, &v)) < 0)
		return error;
	cg_line(e, S, "%s %s= %s;", acc, n->op == CG_CUMSUM ? "+" : "*", cgx_opnd(&v, n->dtype, 0, x, sizeof(x)));
	cg_map_offset(&m, n->rank, n->shape, &off);
	buf_printf(&st, "%s[", e->bufname[root]);
	cgx_aff_print(e, &off, &st);
	cg_line(e, S, "%s] = %s;", buf_cstr(&st), acc);
	buf_free(&st);
	if ((error = cg_scope_close(e, S)) < 0 || (O && (error = cg_scope_close(e, O)) < 0))
		return error;
	return cg_scope_close(e, G);
}

/* The element offsets of batch b in A and B (batch dims may broadcast:
 * stride 0), as C expressions in b. */
static void
batch_offsets(const struct cg_node *n, const int64_t *sa, const int64_t *sb, struct buf *ba,
    struct buf *bb)
{
	int64_t rem = ir_numel(n->rank - 2, n->shape);

	buf_addstr(ba, "0");
	buf_addstr(bb, "0");
	for (int d = 0; d < n->rank - 2; d++) {
		rem /= n->shape[d];
		buf_printf(ba, " + ((b) / %" PRId64 " %% %" PRId64 ") * %" PRId64, rem, n->shape[d], sa[d]);
		buf_printf(bb, " + ((b) / %" PRId64 " %% %" PRId64 ") * %" PRId64, rem, n->shape[d], sb[d]);
	}
}

/* float32: the prelude's kb_sgemm per batch (B packed into strips, a
 * register-blocked 6 x 32 tile). Many small batches: parallel over the
 * batch, each GEMM on one thread; else parallel inside each GEMM. */
static int
emit_sgemm_call(struct cg_emit *e, struct cg_scope *G, int root, int la, int64_t oa, const int64_t *sa,
    int lb, int64_t ob, const int64_t *sb)
{
	const struct cg *g = e->g;
	const struct cg_node *n = &g->nodes[root];
	int r = n->rank;
	int64_t M = n->shape[r - 2], N = n->shape[r - 1], K = g->nodes[n->arg[0]].shape[r - 1];
	int64_t nb = ir_numel(r - 2, n->shape), per = (N + 31) / 32 * 32 * (K ? K : 1);
	int64_t kc = 4 * (int64_t)e->sched->cpu_tile, work = M * N * (K ? K : 1);
	int inner_par = work >= 16 * CG_CPU_GRAIN, outer_par = !inner_par && nb > 1 &&
	    nb * work >= 16 * CG_CPU_GRAIN;
	char alpha[64];
	struct buf ba = BUF_INIT(EXPR_MAX), bb = BUF_INIT(EXPR_MAX);

	cgx_literal(n->f[0], n->dtype, alpha, sizeof(alpha));
	batch_offsets(n, sa, sb, &ba, &bb);
	cg_line(e, G, "/* gemm [%" PRId64 " x] %" PRId64 "x%" PRId64 "x%" PRId64 ", kb_sgemm, k block %" PRId64 " */",
	    nb, M, N, K, kc);
	cg_line(e, G, "float *Bp = aligned_alloc(64, sizeof(float) * %" PRId64 ");",
	    (nb * per + 15) / 16 * 16);
	cg_line(e, G, "if (!Bp)");
	cg_line(e, G, "	{ rc = 3; goto out; }");
	if (outer_par)
		cg_line(e, G, "#pragma omp parallel for schedule(static)");
	cg_line(e, G, "for (int64_t b = 0; b < %" PRId64 "; b++)", nb);
	cg_line(e, G, "	kb_sgemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s + %" PRId64 " + (%s), %" PRId64 ", %" PRId64
	    ", %s + %" PRId64 " + (%s), %" PRId64 ", %" PRId64 ", %s + b * %" PRId64 ", %s, %" PRId64 ", %d, Bp + b * %" PRId64 ");",
	    M, N, K, e->bufname[la], oa, buf_cstr(&ba), sa[r - 2], sa[r - 1],
	    e->bufname[lb], ob, buf_cstr(&bb), sb[r - 2], sb[r - 1],
	    e->bufname[root], M * N, alpha, kc, inner_par, per);
	cg_line(e, G, "free(Bp);");
	buf_free(&ba);
	buf_free(&bb);
	return cg_scope_close(e, G);
}

/* C[b] = alpha * A[b] @ B[b], blocked: 4 rows x TN columns of C stay in
 * an accumulator tile while k runs; B is packed when its rows are not
 * contiguous (a linear layer's transposed weight). */
static int
emit_gemm_cpu(struct cg_emit *e, struct cg_scope *F, int root)
{
	const struct cg *g = e->g;
	const struct cg_node *n = &g->nodes[root];
	int r = n->rank, la, lb;
	int64_t oa, ob, sa[CG_MAX_RANK], sb[CG_MAX_RANK];
	int64_t M = n->shape[r - 2], N = n->shape[r - 1], K = g->nodes[n->arg[0]].shape[r - 1];
	int64_t nb = ir_numel(r - 2, n->shape), TN = e->sched->cpu_tile;
	const char *T = cg_ctype(n->dtype);
	char alpha[64], zero[64];
	struct cg_scope *G;
	int packed;

	if (cg_strided(g, n->arg[0], &la, &oa, sa) < 0 || cg_strided(g, n->arg[1], &lb, &ob, sb) < 0)
		return cg_fail(e, -EINVAL, "internal: GEMM operand is not a strided view");
	if (TN < 8)
		TN = 8;
	if (TN > N)
		TN = N < 8 ? 8 : N;
	cgx_literal(n->f[0], n->dtype, alpha, sizeof(alpha));
	cgx_literal(0, n->dtype, zero, sizeof(zero));
	if (!(G = cg_scope_new(e, F)))
		return e->error;
	if (n->dtype == IR_F32)
		return emit_sgemm_call(e, G, root, la, oa, sa, lb, ob, sb);
	packed = sb[r - 1] != 1;
	cg_line(e, G, "/* gemm [%" PRId64 " x] %" PRId64 "x%" PRId64 "x%" PRId64 ", tile 4x%" PRId64 " */",
	    nb, M, N, K, TN);
	/* batch offsets: batch dims may broadcast (stride 0) */
	{
		struct buf ba = BUF_INIT(EXPR_MAX), bb = BUF_INIT(EXPR_MAX);
		batch_offsets(n, sa, sb, &ba, &bb);
		cg_line(e, G, "#define kb_bofs_a(b) (%s)", buf_cstr(&ba));
		cg_line(e, G, "#define kb_bofs_b(b) (%s)", buf_cstr(&bb));
		buf_free(&ba);
		buf_free(&bb);
	}
	cg_line(e, G, "const %s *A = %s + %" PRId64 ";", T, e->bufname[la], oa);
	if (packed) {
		/* one contiguous [K, N] copy per batch, so the inner loop is unit stride */
		cg_line(e, G, "%s *B = malloc(sizeof(%s) * %" PRId64 ");", T, T, nb * K * N);
		cg_line(e, G, "if (!B)");
		cg_line(e, G, "\t{ rc = 3; goto out; }");
		if (nb * K * N >= CG_CPU_GRAIN)
			cg_line(e, G, "#pragma omp parallel for collapse(2)");
		cg_line(e, G, "for (int64_t b = 0; b < %" PRId64 "; b++)", nb);
		cg_line(e, G, "for (int64_t k = 0; k < %" PRId64 "; k++)", K);
		cg_line(e, G, "\tfor (int64_t j = 0; j < %" PRId64 "; j++)", N);
		cg_line(e, G, "\t\tB[(b * %" PRId64 " + k) * %" PRId64 " + j] = %s[%" PRId64 " + kb_bofs_b(b) + k * %" PRId64 " + j * %" PRId64 "];",
		    K, N, e->bufname[lb], ob, sb[r - 2], sb[r - 1]);
		cg_line(e, G, "#define kb_bofs_bp(b) ((b) * %" PRId64 ")", K * N);
	} else {
		cg_line(e, G, "const %s *B = %s + %" PRId64 ";", T, e->bufname[lb], ob);
		cg_line(e, G, "#define kb_bofs_bp(b) kb_bofs_b(b)");
	}
	if (nb * M * N * K >= 16 * CG_CPU_GRAIN)
		cg_line(e, G, "#pragma omp parallel for collapse(2) schedule(static)");
	cg_line(e, G, "for (int64_t b = 0; b < %" PRId64 "; b++)", nb);
	cg_line(e, G, "for (int64_t m0 = 0; m0 < %" PRId64 "; m0 += 4) {", M);
	cg_line(e, G, "\tconst int64_t mn = %" PRId64 " - m0 < 4 ? %" PRId64 " - m0 : 4;", M, M);
	cg_line(e, G, "\tfor (int64_t n0 = 0; n0 < %" PRId64 "; n0 += %" PRId64 ") {", N, TN);
	cg_line(e, G, "\t\tconst int64_t nn = %" PRId64 " - n0 < %" PRId64 " ? %" PRId64 " - n0 : %" PRId64 ";",
	    N, TN, N, TN);
	cg_line(e, G, "\t\t%s c[4][%" PRId64 "];", T, TN);
	cg_line(e, G, "\t\tfor (int i = 0; i < 4; i++)");
	cg_line(e, G, "\t\t\tfor (int64_t j = 0; j < %" PRId64 "; j++)", TN);
	cg_line(e, G, "\t\t\t\tc[i][j] = %s;", zero);
	cg_line(e, G, "\t\tfor (int64_t k = 0; k < %" PRId64 "; k++) {", K);
	cg_line(e, G, "\t\t\tconst %s *brow = B + kb_bofs_bp(b) + k * %" PRId64 " + n0;", T,
	    packed ? N : sb[r - 2]);
	cg_line(e, G, "\t\t\t%s a[4];", T);
	cg_line(e, G, "\t\t\tfor (int i = 0; i < 4; i++)");
	cg_line(e, G, "\t\t\t\ta[i] = i < mn ? A[kb_bofs_a(b) + (m0 + i) * %" PRId64 " + k * %" PRId64 "] : %s;",
	    sa[r - 2], sa[r - 1], zero);
	cg_line(e, G, "\t\t\tif (nn == %" PRId64 ") {", TN);
	cg_line(e, G, "\t\t\t\t#pragma omp simd");
	cg_line(e, G, "\t\t\t\tfor (int64_t j = 0; j < %" PRId64 "; j++) {", TN);
	cg_line(e, G, "\t\t\t\t\tc[0][j] += a[0] * brow[j];");
	cg_line(e, G, "\t\t\t\t\tc[1][j] += a[1] * brow[j];");
	cg_line(e, G, "\t\t\t\t\tc[2][j] += a[2] * brow[j];");
	cg_line(e, G, "\t\t\t\t\tc[3][j] += a[3] * brow[j];");
	cg_line(e, G, "\t\t\t\t}");
	cg_line(e, G, "\t\t\t} else {");
	cg_line(e, G, "\t\t\t\tfor (int i = 0; i < 4; i++)");
	cg_line(e, G, "\t\t\t\t\tfor (int64_t j = 0; j < nn; j++)");
	cg_line(e, G, "\t\t\t\t\t\tc[i][j] += a[i] * brow[j];");
	cg_line(e, G, "\t\t\t}");
	cg_line(e, G, "\t\t}");
	cg_line(e, G, "\t\tfor (int64_t i = 0; i < mn; i++)");
	cg_line(e, G, "\t\t\tfor (int64_t j = 0; j < nn; j++)");
	cg_line(e, G, "\t\t\t\t%s[(b * %" PRId64 " + m0 + i) * %" PRId64 " + n0 + j] = %s * c[i][j];",
	    e->bufname[root], M, N, alpha);
	cg_line(e, G, "\t}");
	cg_line(e, G, "}");
	cg_line(e, G, "#undef kb_bofs_a");
	cg_line(e, G, "#undef kb_bofs_b");
	cg_line(e, G, "#undef kb_bofs_bp");
	if (packed)
		cg_line(e, G, "free(B);");
	return cg_scope_close(e, G);
}

/* The weight's (C, KH, KW) dims flattened with one stride: its k index. */
static int
conv_weight_flat(const struct cg_node *wn, const int64_t *sw, int64_t *sak)
{
	int64_t want;

	*sak = sw[wn->rank - 1];
	want = *sak * wn->shape[wn->rank - 1];
	for (int d = wn->rank - 2; d >= 1; want *= wn->shape[d], d--)
		if (wn->shape[d] != 1 && sw[d] != want)
			return 0;
	return 1;
}

int
emit_cpu_conv_gemm_ok(const struct cg *g, int id)
{
	const struct cg_node *n = &g->nodes[id];
	int leaf;
	int64_t off, sx[CG_MAX_RANK], sw[CG_MAX_RANK], sak;

	if (n->op != CG_CONV || n->dtype != IR_F32 || n->i[CG_CONV_NSP] < 1 || n->i[CG_CONV_NSP] > 2 ||
	    g->nodes[n->arg[0]].dtype != IR_F32 || g->nodes[n->arg[1]].dtype != IR_F32)
		return 0;
	if (cg_strided(g, n->arg[0], &leaf, &off, sx) < 0 || cg_strided(g, n->arg[1], &leaf, &off, sw) < 0)
		return 0;
	return conv_weight_flat(&g->nodes[n->arg[1]], sw, &sak);
}

/* Convolution (float32, 1-D or 2-D, plan.c materialized it): per image
 * and group, im2col straight into kb_sgemm's packed layout, then the
 * GEMM W[cout_g, cin_g * taps] x col -> out[n, group's channels]. */
static int
emit_conv_cpu(struct cg_emit *e, struct cg_scope *F, int root)
{
	const struct cg *g = e->g;
	const struct cg_node *n = &g->nodes[root];
	const struct cg_node *xn = &g->nodes[n->arg[0]], *wn = &g->nodes[n->arg[1]];
	int nsp = (int)n->i[CG_CONV_NSP], G = (int)n->i[CG_CONV_GROUPS], lx, lw, two = nsp == 2;
	int64_t ox, ow, sx[CG_MAX_RANK], sw[CG_MAX_RANK], sak;
	int64_t cin_g = wn->shape[1], cout_g = wn->shape[0] / (G > 0 ? G : 1), taps = 1, P = 1, K;
	int64_t kc = 4 * (int64_t)e->sched->cpu_tile, per;
	struct cg_scope *S;
	int par;

	if (cg_strided(g, n->arg[0], &lx, &ox, sx) < 0 || cg_strided(g, n->arg[1], &lw, &ow, sw) < 0 ||
	    !conv_weight_flat(wn, sw, &sak) || G < 1)
		return cg_fail(e, -EINVAL, "internal: convolution operands are not strided views");
	for (int j = 0; j < nsp; j++) {
		taps *= wn->shape[2 + j];
		P *= n->shape[2 + j];
	}
	K = cin_g * taps;
	per = (P + 31) / 32 * 32 * (K ? K : 1);
	par = cout_g * P * K >= 16 * CG_CPU_GRAIN;
	if (!(S = cg_scope_new(e, F)))
		return e->error;
	cg_line(e, S, "/* conv%dd: %" PRId64 " images x %d groups of im2col [%" PRId64 " x %" PRId64
	    "] + kb_sgemm M=%" PRId64 ", k block %" PRId64 " */", nsp, n->shape[0], G, K, P, cout_g, kc);
	cg_line(e, S, "float *Bp = aligned_alloc(64, sizeof(float) * %" PRId64 ");", (per + 15) / 16 * 16);
	cg_line(e, S, "if (!Bp)");
	cg_line(e, S, "\t{ rc = 3; goto out; }");
	cg_line(e, S, "for (int64_t n = 0; n < %" PRId64 "; n++)", n->shape[0]);
	cg_line(e, S, "for (int64_t g = 0; g < %d; g++) {", G);
	cg_line(e, S, "\tkb_im2col_pack(%s + %" PRId64 " + n * %" PRId64 " + g * %" PRId64 ", %" PRId64 ", %" PRId64
	    ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	    ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, Bp);",
	    e->bufname[lx], ox, sx[0], cin_g * sx[1], sx[1], two ? sx[2] : 0, sx[1 + nsp],
	    cin_g, two ? xn->shape[2] : 1, xn->shape[1 + nsp],
	    two ? wn->shape[2] : 1, wn->shape[1 + nsp], two ? n->shape[2] : 1, n->shape[1 + nsp],
	    two ? n->i[CG_CONV_STRIDE] : 1, n->i[CG_CONV_STRIDE + nsp - 1],
	    two ? n->i[CG_CONV_PAD] : 0, n->i[CG_CONV_PAD + nsp - 1],
	    two ? n->i[CG_CONV_DIL] : 1, n->i[CG_CONV_DIL + nsp - 1], par);
	cg_line(e, S, "\tkb_sgemm_run(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s + %" PRId64 " + g * %" PRId64 ", %" PRId64
	    ", %" PRId64 ", Bp, %s + (n * %" PRId64 " + g * %" PRId64 ") * %" PRId64 ", 1.0f, %" PRId64 ", %d);",
	    cout_g, P, K, e->bufname[lw], ow, cout_g * sw[0], sw[0], sak,
	    e->bufname[root], n->shape[1], cout_g, P, kc, par);
	cg_line(e, S, "}");
	cg_line(e, S, "free(Bp);");
	return cg_scope_close(e, S);
}

int
emit_cpu(struct emit_version *v, struct emit_src *src, char *err, size_t errlen)
{
	struct cg *g = v->g;
	struct cg_emit e;
	struct cg_scope *F = NULL;
	char (*names)[24] = calloc((size_t)g->n, sizeof(*names));
	const char **ptrs = calloc((size_t)g->n, sizeof(*ptrs));
	struct buf *out = &src->fns;
	int error = -ENOMEM, one = !strcmp(v->fn, "kernelbot_forward");

	cg_emit_init(&e, g, &v->s, CG_CPU, ptrs);
	if (!names || !ptrs)
		goto out;
	emit_buffer_names(g, names, ptrs);
	if (one)
		buf_addstr(out, "\nint kernelbot_forward(const DLTensor *inputs, int n_inputs, DLTensor *outputs,\n"
		    "    int n_outputs, void *stream);\n");
	buf_printf(out, "\n%s\n%s(const DLTensor *inputs, int n_inputs, DLTensor *outputs,\n"
	    "    int n_outputs, void *stream)\n{\n", one ? "int" : "static int", v->fn);
	if (!(F = cg_scope_new(&e, NULL)))
		goto out;
	F->depth = 1;
	cg_line(&e, F, "int rc = 0;");
	cg_line(&e, F, "(void)stream;");
	cg_line(&e, F, "if (n_inputs != %d || n_outputs != %d)", g->n_inputs, g->n_outputs);
	cg_line(&e, F, "\treturn 1;");
	for (int i = 0; i < g->n; i++) {
		const struct cg_node *n = &g->nodes[i];
		struct buf b = BUF_INIT(4096);
		if (n->op != CG_INPUT && n->output < 0)
			continue;
		buf_addstr(&b, "if (");
		emit_tensor_check(g, i, &b);
		buf_addstr(&b, ")");
		cg_line(&e, F, "%s", buf_cstr(&b));
		cg_line(&e, F, "\treturn 2;");
		buf_reset(&b);
		emit_tensor_pointer(g, i, ptrs[i], "restrict ", &b);
		cg_line(&e, F, "%s", buf_cstr(&b));
		cg_line(&e, F, "(void)%s;", ptrs[i]);
		buf_free(&b);
	}
	for (int i = 0; i < g->n; i++) {
		const struct cg_node *n = &g->nodes[i];
		if (!emit_is_scratch(n))
			continue;
		cg_line(&e, F, "%s *%s = malloc(sizeof(%s) * %" PRId64 ");", cg_ctype(n->dtype), ptrs[i],
		    cg_ctype(n->dtype), ir_numel(n->rank, n->shape) ? ir_numel(n->rank, n->shape) : 1);
	}
	for (int i = 0; i < g->n; i++) {
		const struct cg_node *n = &g->nodes[i];
		if (!emit_is_scratch(n))
			continue;
		cg_line(&e, F, "if (!%s)", ptrs[i]);
		cg_line(&e, F, "\t{ rc = 3; goto out; }");
	}
	for (int i = 0; i < g->n && !e.error; i++) {
		const struct cg_node *n = &g->nodes[i];
		struct buf b = BUF_INIT(4096);
		if (!n->materialize || n->op == CG_INPUT)
			continue;
		emit_group_summary(g, i, &b);
		cg_line(&e, F, "/* %s -> %s */", buf_cstr(&b), ptrs[i]);
		buf_free(&b);
		if (n->op == CG_GEMM)
			error = emit_gemm_cpu(&e, F, i);
		else if (n->op == CG_CONV)
			error = emit_conv_cpu(&e, F, i);
		else if (n->op == CG_CUMSUM || n->op == CG_CUMPROD)
			error = emit_scan(&e, F, i);
		else
			error = emit_pointwise_group(&e, F, i);
		if (error < 0)
			break;
	}
	if (e.error) {
		error = e.error;
		v->over_root = e.over_vars ? e.root : -1;
		snprintf(err, errlen, "%s", e.err);
		goto out;
	}
	cg_line(&e, F, "goto out;");
	buf_addstr(&F->body, "out:\n");
	for (int i = 0; i < g->n; i++) {
		const struct cg_node *n = &g->nodes[i];
		if (emit_is_scratch(n))
			cg_line(&e, F, "free(%s);", ptrs[i]);
	}
	cg_line(&e, F, "return rc;");
	buf_add(out, F->body.data, F->body.len);
	if (buf_addstr(out, "}\n") < 0) {
		error = -ENOBUFS;
		snprintf(err, errlen, "generated source too large");
		goto out;
	}
	error = 0;
out:
	if (error == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	v->recompute = e.recompute;
	cg_emit_fini(&e);
	free(names);
	free(ptrs);
	return error;
}
