/*
 * Fused attention for the CUDA backend: softmax(Q K^T / c + M) V as one
 * flash-style kernel, for a problem that is exactly that chain (the
 * graph IR's matmul, transpose, div or mul by a constant, an optional
 * additive mask input, softmax over the last dim, matmul).
 *
 * What it is: fp32 on CUDA cores, exact fp32 arithmetic (no TF32: the
 * fp32 tolerance is tight), a block of 256 threads per 64 query rows of
 * one (batch, head). Q's tile stays in shared memory; for each 64-key tile
 * K (transposed) and V are staged in shared memory, each thread computes
 * a 4x4 block of scores, the row statistics are combined over the 16
 * threads of a row with shuffles (online softmax: running max and sum,
 * the accumulator rescaled), and P goes through shared memory into P V.
 * The score matrix never reaches global memory. A key tile whose mask is
 * -inf everywhere for the block's rows is skipped without loading K or V
 * (the upper triangle of a causal mask): for finite Q and K its scores
 * are all -inf and add nothing; a NaN or infinite score inside such a
 * tile would have made the reference's row NaN (documented limit).
 * Shapes: the leading dims of Q, K and V equal, query and key lengths
 * multiples of 64, head dim 64 or 128; anything else takes the generic
 * path (cuBLAS, a softmax kernel, cuBLAS). Used when the schedule's attn
 * is set (off by default until a GPU run has judged it).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/cuda.h"

const char cu_attn_kernel[] =
"/* fused attention (pipeline/compiler/cuda_attn.c): a block per 64 query\n"
" * rows of one (batch, head), online softmax over 64-key tiles, fp32 */\n"
"#define KB_AT_B 64\n"
"#define KB_AT_P 68\t/* padded row of the transposed tiles */\n"
"template <int D, int MODE>\t/* MODE: 0 none, 1 divide by c, 2 multiply by c */\n"
"__global__ void __launch_bounds__(256)\n"
"kb_attn(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,\n"
"    const float *__restrict__ mask, float *__restrict__ o, int64_t lq, int64_t lk, float c)\n"
"{\n"
"\textern __shared__ __align__(16) float kb_at[];\n"
"\tfloat *qt = kb_at;\t\t\t/* [D][KB_AT_P]: Q tile, transposed */\n"
"\tfloat *kt = qt + D * KB_AT_P;\t\t/* [D][KB_AT_P]: K tile, transposed */\n"
"\tfloat *vs = kt + D * KB_AT_P;\t\t/* [64][D + 4]: V tile */\n"
"\tfloat *ps = vs + KB_AT_B * (D + 4);\t/* [64][KB_AT_P]: P tile */\n"
"\tconst int tx = threadIdx.x & 15, ty = threadIdx.x >> 4, DT = D / 16;\n"
"\tconst int64_t bh = blockIdx.y, r0 = (int64_t)blockIdx.x * KB_AT_B;\n"
"\tconst float *qb = q + bh * lq * D, *kb = k + bh * lk * D, *vb = v + bh * lk * D;\n"
"\tfloat acc[4][D / 16], m[4], l[4];\n"
"\n"
"#pragma unroll\n"
"\tfor (int i = 0; i < 4; i++) {\n"
"\t\tm[i] = -INFINITY;\n"
"\t\tl[i] = 0.0f;\n"
"#pragma unroll\n"
"\t\tfor (int d = 0; d < DT; d++)\n"
"\t\t\tacc[i][d] = 0.0f;\n"
"\t}\n"
"\tfor (int x = threadIdx.x; x < KB_AT_B * D; x += 256) {\n"
"\t\tint r = x / D, d = x % D;\n"
"\t\tqt[d * KB_AT_P + r] = qb[(r0 + r) * D + d];\n"
"\t}\n"
"\tfor (int64_t c0 = 0; c0 < lk; c0 += KB_AT_B) {\n"
"\t\tfloat s[4][4], mk[4][4];\n"
"\t\tint dead = 1;\n"
"\t\tif (mask) {\n"
"#pragma unroll\n"
"\t\t\tfor (int i = 0; i < 4; i++)\n"
"#pragma unroll\n"
"\t\t\t\tfor (int j = 0; j < 4; j++) {\n"
"\t\t\t\t\tmk[i][j] = mask[(r0 + ty * 4 + i) * lk + c0 + tx * 4 + j];\n"
"\t\t\t\t\tdead &= mk[i][j] == -INFINITY;\n"
"\t\t\t\t}\n"
"\t\t} else {\n"
"\t\t\tdead = 0;\n"
"\t\t}\n"
"\t\t/* also the barrier before the tiles are overwritten */\n"
"\t\tif (__syncthreads_and(dead))\n"
"\t\t\tcontinue;\n"
"\t\tfor (int x = threadIdx.x; x < KB_AT_B * D; x += 256) {\n"
"\t\t\tint r = x / D, d = x % D;\n"
"\t\t\tkt[d * KB_AT_P + r] = kb[(c0 + r) * D + d];\n"
"\t\t\tvs[r * (D + 4) + d] = vb[(c0 + r) * D + d];\n"
"\t\t}\n"
"\t\t__syncthreads();\n"
"#pragma unroll\n"
"\t\tfor (int i = 0; i < 4; i++)\n"
"#pragma unroll\n"
"\t\t\tfor (int j = 0; j < 4; j++)\n"
"\t\t\t\ts[i][j] = 0.0f;\n"
"#pragma unroll 8\n"
"\t\tfor (int d = 0; d < D; d++) {\n"
"\t\t\tfloat4 a = *reinterpret_cast<const float4 *>(&qt[d * KB_AT_P + ty * 4]);\n"
"\t\t\tfloat4 b = *reinterpret_cast<const float4 *>(&kt[d * KB_AT_P + tx * 4]);\n"
"\t\t\tfloat av[4] = { a.x, a.y, a.z, a.w }, bv[4] = { b.x, b.y, b.z, b.w };\n"
"#pragma unroll\n"
"\t\t\tfor (int i = 0; i < 4; i++)\n"
"#pragma unroll\n"
"\t\t\t\tfor (int j = 0; j < 4; j++)\n"
"\t\t\t\t\ts[i][j] = fmaf(av[i], bv[j], s[i][j]);\n"
"\t\t}\n"
"#pragma unroll\n"
"\t\tfor (int i = 0; i < 4; i++) {\n"
"\t\t\tfloat mx = -INFINITY, sum = 0.0f, mnew, corr;\n"
"\t\t\tint nan = 0;\n"
"#pragma unroll\n"
"\t\t\tfor (int j = 0; j < 4; j++) {\n"
"\t\t\t\tif (MODE == 1)\n"
"\t\t\t\t\ts[i][j] = s[i][j] / c;\n"
"\t\t\t\telse if (MODE == 2)\n"
"\t\t\t\t\ts[i][j] = s[i][j] * c;\n"
"\t\t\t\tif (mask)\n"
"\t\t\t\t\ts[i][j] += mk[i][j];\n"
"\t\t\t\tmx = s[i][j] > mx ? s[i][j] : mx;\n"
"\t\t\t\tnan |= s[i][j] != s[i][j];\n"
"\t\t\t}\n"
"#pragma unroll\n"
"\t\t\tfor (int off = 8; off > 0; off >>= 1) {\n"
"\t\t\t\tfloat om = __shfl_xor_sync(0xffffffffu, mx, off);\n"
"\t\t\t\tmx = om > mx ? om : mx;\n"
"\t\t\t\tnan |= __shfl_xor_sync(0xffffffffu, nan, off);\n"
"\t\t\t}\n"
"\t\t\tmnew = nan ? NAN : (m[i] > mx ? m[i] : mx);\n"
"\t\t\tif (mnew == -INFINITY) {\n"
"\t\t\t\t/* every score so far is -inf: nothing to add yet */\n"
"\t\t\t\tcorr = 1.0f;\n"
"#pragma unroll\n"
"\t\t\t\tfor (int j = 0; j < 4; j++)\n"
"\t\t\t\t\ts[i][j] = 0.0f;\n"
"\t\t\t} else {\n"
"\t\t\t\tcorr = expf(m[i] - mnew);\n"
"#pragma unroll\n"
"\t\t\t\tfor (int j = 0; j < 4; j++) {\n"
"\t\t\t\t\ts[i][j] = expf(s[i][j] - mnew);\n"
"\t\t\t\t\tsum += s[i][j];\n"
"\t\t\t\t}\n"
"\t\t\t}\n"
"#pragma unroll\n"
"\t\t\tfor (int off = 8; off > 0; off >>= 1)\n"
"\t\t\t\tsum += __shfl_xor_sync(0xffffffffu, sum, off);\n"
"\t\t\tm[i] = mnew;\n"
"\t\t\tl[i] = l[i] * corr + sum;\n"
"#pragma unroll\n"
"\t\t\tfor (int d = 0; d < DT; d++)\n"
"\t\t\t\tacc[i][d] *= corr;\n"
"\t\t\t*reinterpret_cast<float4 *>(&ps[(ty * 4 + i) * KB_AT_P + tx * 4]) =\n"
"\t\t\t    make_float4(s[i][0], s[i][1], s[i][2], s[i][3]);\n"
"\t\t}\n"
"\t\t__syncthreads();\n"
"#pragma unroll 4\n"
"\t\tfor (int j = 0; j < KB_AT_B; j++) {\n"
"\t\t\tfloat p[4];\n"
"#pragma unroll\n"
"\t\t\tfor (int i = 0; i < 4; i++)\n"
"\t\t\t\tp[i] = ps[(ty * 4 + i) * KB_AT_P + j];\n"
"#pragma unroll\n"
"\t\t\tfor (int d4 = 0; d4 < DT; d4 += 4) {\n"
"\t\t\t\tfloat4 w = *reinterpret_cast<const float4 *>(&vs[j * (D + 4) + tx * DT + d4]);\n"
"#pragma unroll\n"
"\t\t\t\tfor (int i = 0; i < 4; i++) {\n"
"\t\t\t\t\tacc[i][d4] = fmaf(p[i], w.x, acc[i][d4]);\n"
"\t\t\t\t\tacc[i][d4 + 1] = fmaf(p[i], w.y, acc[i][d4 + 1]);\n"
"\t\t\t\t\tacc[i][d4 + 2] = fmaf(p[i], w.z, acc[i][d4 + 2]);\n"
"\t\t\t\t\tacc[i][d4 + 3] = fmaf(p[i], w.w, acc[i][d4 + 3]);\n"
"\t\t\t\t}\n"
"\t\t\t}\n"
"\t\t}\n"
"\t}\n"
"\t/* a row with every score -inf is 0 / 0 = NaN, as softmax gives */\n"
"#pragma unroll\n"
"\tfor (int i = 0; i < 4; i++)\n"
"#pragma unroll\n"
"\t\tfor (int d = 0; d < DT; d++)\n"
"\t\t\to[(bh * lq + r0 + ty * 4 + i) * D + tx * DT + d] = acc[i][d] / l[i];\n"
"}\n\n";

/* The value a ref operand names, or -1. */
static int
ref_of(const struct ir_graph *ir, const json_t *args, size_t i)
{
	const json_t *r = json_object_get(json_array_get(args, i), "ref");

	return json_is_string(r) ? ir_find(ir, json_string_value(r)) : -1;
}

static int
is_op(const struct ir_graph *ir, int v, const char *op)
{
	return v >= 0 && !ir->v[v].is_input && ir->v[v].op && !strcmp(ir->v[v].op, op);
}

static int
is_f32_input(const struct ir_graph *ir, int v)
{
	return v >= 0 && v < ir->n_inputs && ir->v[v].dtype == IR_F32;
}

struct attn {
	int q, k, v, mask;	/* IR input indexes; mask -1 when none */
	int mode;		/* 0 none, 1 divide, 2 multiply */
	double c;
	int nodes;		/* IR nodes of the chain */
};

/* The chain from the single output back to the inputs, or -1. */
static int
match(const struct ir_graph *ir, struct attn *a)
{
	int out, s, x, y, g, t, u, w;
	const json_t *cv;

	memset(a, 0, sizeof(*a));
	a->mask = -1;
	if (ir->n_outputs != 1 || !is_op(ir, out = ir->outputs[0], "matmul"))
		return -1;
	if (!is_op(ir, s = ref_of(ir, ir->v[out].args, 0), "softmax") ||
	    !is_f32_input(ir, a->v = ref_of(ir, ir->v[out].args, 1)))
		return -1;
	if (json_integer_value(json_object_get(ir->v[s].kwargs, "dim")) != ir->v[s].rank - 1)
		return -1;
	a->nodes = 2;
	x = ref_of(ir, ir->v[s].args, 0);
	if (is_op(ir, x, "add")) {
		u = ref_of(ir, ir->v[x].args, 0);
		w = ref_of(ir, ir->v[x].args, 1);
		if (is_f32_input(ir, w) && !is_f32_input(ir, u)) {
			y = u;
			a->mask = w;
		} else if (is_f32_input(ir, u) && !is_f32_input(ir, w)) {
			y = w;
			a->mask = u;
		} else {
			return -1;
		}
		a->nodes++;
	} else {
		y = x;
	}
	g = y;
	if (is_op(ir, y, "div") || is_op(ir, y, "mul")) {
		int div = is_op(ir, y, "div");
		if (div && !json_is_null(json_object_get(ir->v[y].kwargs, "rounding_mode")))
			return -1;
		cv = json_array_get(ir->v[y].args, 1);
		g = ref_of(ir, ir->v[y].args, 0);
		if (!div && !json_is_number(cv)) {
			cv = json_array_get(ir->v[y].args, 0);
			g = ref_of(ir, ir->v[y].args, 1);
		}
		if (!json_is_number(cv))
			return -1;
		a->c = json_number_value(cv);
		a->mode = div ? 1 : 2;
		a->nodes++;
	}
	if (!is_op(ir, g, "matmul") || !is_f32_input(ir, a->q = ref_of(ir, ir->v[g].args, 0)) ||
	    !is_op(ir, t = ref_of(ir, ir->v[g].args, 1), "transpose") ||
	    !is_f32_input(ir, a->k = ref_of(ir, ir->v[t].args, 0)))
		return -1;
	{
		int r = ir->v[t].rank;
		json_int_t d0 = json_integer_value(json_object_get(ir->v[t].kwargs, "dim0"));
		json_int_t d1 = json_integer_value(json_object_get(ir->v[t].kwargs, "dim1"));
		if (!((d0 == r - 2 && d1 == r - 1) || (d0 == r - 1 && d1 == r - 2)))
			return -1;
	}
	a->nodes += 2;
	/* nothing else in the graph: every intermediate has this one use */
	if (ir->n_values - ir->n_inputs != a->nodes)
		return -1;
	return 0;
}

/* Shapes the kernel handles; 0 or -1. */
static int
shapes_ok(const struct ir_graph *ir, const struct attn *a, int64_t *bh, int64_t *lq, int64_t *lk,
    int64_t *d)
{
	const struct ir_value *q = &ir->v[a->q], *k = &ir->v[a->k], *v = &ir->v[a->v];
	int r = q->rank;

	if (r < 3 || k->rank != r || v->rank != r)
		return -1;
	for (int i = 0; i < r - 2; i++)
		if (k->shape[i] != q->shape[i] || v->shape[i] != q->shape[i])
			return -1;
	*bh = ir_numel(r - 2, q->shape);
	*lq = q->shape[r - 2];
	*lk = k->shape[r - 2];
	*d = q->shape[r - 1];
	if (k->shape[r - 1] != *d || v->shape[r - 2] != *lk || v->shape[r - 1] != *d)
		return -1;
	if ((*d != 64 && *d != 128) || *lq % 64 || *lk % 64 || *lq == 0 || *lk == 0 ||
	    *bh < 1 || *bh > 65535 || *lq / 64 > INT32_MAX)
		return -1;
	if (a->mask >= 0) {
		const struct ir_value *m = &ir->v[a->mask];
		if (m->rank < 2 || m->shape[m->rank - 2] != *lq || m->shape[m->rank - 1] != *lk)
			return -1;
		for (int i = 0; i < m->rank - 2; i++)
			if (m->shape[i] != 1)
				return -1;
	}
	return 0;
}

int
cu_attention(struct cu *c)
{
	const struct cg *g = c->g;
	const struct ir_graph *ir = g->ir;
	struct attn a;
	int64_t bh, lq, lk, d, smem;
	char cbuf[64];

	if (!c->s->attn || !ir || match(ir, &a) < 0 || shapes_ok(ir, &a, &bh, &lq, &lk, &d) < 0)
		return 0;
	if (a.mode && (!isfinite(a.c) || (a.mode == 1 && a.c == 0)))
		return 0;
	/* floats: Q and K transposed, V, P */
	smem = (int64_t)sizeof(float) * (2 * d * 68 + 64 * (d + 4) + 64 * 68);
	snprintf(cbuf, sizeof(cbuf), "(float)%.17g", a.mode ? a.c : 1.0);
	cu_hline(c, "/* softmax(q k^T%s%s%s) v as one fused attention kernel */",
	    a.mode == 1 ? " / " : a.mode == 2 ? " * " : "", a.mode ? cbuf : "", a.mask >= 0 ? " + mask" : "");
	cu_hline(c, "if (cudaFuncSetAttribute(kb_attn<%d, %d>, cudaFuncAttributeMaxDynamicSharedMemorySize, %"
	    PRId64 ") != cudaSuccess)", (int)d, a.mode, smem);
	cu_hline(c, "\t{ (void)cudaGetLastError(); rc = 4; goto out; }");
	cu_hline(c, "kb_attn<%d, %d><<<dim3(%" PRId64 ", %" PRId64 "), 256, %" PRId64 ", st>>>(%s, %s, %s, %s, %s, %"
	    PRId64 ", %" PRId64 ", %s);", (int)d, a.mode, lq / 64, bh, smem,
	    c->ptrs[g->input_node[a.q]], c->ptrs[g->input_node[a.k]], c->ptrs[g->input_node[a.v]],
	    a.mask >= 0 ? c->ptrs[g->input_node[a.mask]] : "NULL", c->ptrs[g->output_node[0]], lq, lk, cbuf);
	cu_hline(c, "if ((rc = kb_launch_error()))");
	cu_hline(c, "\tgoto out;");
	return 1;
}
