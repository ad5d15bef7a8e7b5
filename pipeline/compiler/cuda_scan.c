/*
 * The one-pass scan (schedule scan 1): a block per row of a plain,
 * contiguous buffer of 4-byte elements, the row held in registers as
 * 16-byte chunks laid across the block (chunk c of thread t is elements
 * c * 4B + 4t .. +3, so a warp's loads and stores are 512 contiguous
 * bytes), read once and written once.
 *
 * Each thread scans its four elements, a warp scans its threads' totals
 * with shuffles (all chunks at once, independent chains), lane 31 of each
 * warp puts the warp's totals in shared memory, and after one barrier each
 * thread folds the totals that come before each of its chunks in row
 * order. The totals are double-buffered by row parity: row n + 2 writes
 * a buffer after every thread has passed row n + 1's barrier, that is
 * after row n's reads, so one barrier a row is enough.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/cuda.h"
#include "pipeline/compiler/expr.h"

#define KB_SCAN_CHUNKS 8	/* 16-byte chunks a thread holds (32 registers) */

int
cu_scan_chunks(struct cu *c, int root)
{
	const struct cg_node *n = &c->g->nodes[root];
	int dim = (int)n->i[0], mul = n->op == CG_CUMPROD, leaf = -1, id = c->nk, B, CH, NW;
	int64_t L = n->shape[dim], nout, loff = 0, lst[CG_MAX_RANK], ost = L, stride = 1;
	struct buf rin = BUF_INIT(EXPR_MAX), rout = BUF_INIT(EXPR_MAX), *k = c->kern;
	const char *T = cg_ctype(n->dtype), *cs = c->s->stream ? "_cs" : "";
	char init[64], op = mul ? '*' : '+';

	if (!c->s->scan || dim != n->rank - 1 || L < 128 || cg_dtype_size(n->dtype) != 4 ||
	    cg_strided(c->g, n->arg[0], &leaf, &loff, lst) < 0 || lst[dim] != 1 ||
	    c->g->nodes[leaf].dtype != n->dtype)
		return 0;
	/* the block: the schedule's, halved until chunks tile the row,
	 * doubled until a thread holds at most KB_SCAN_CHUNKS */
	for (B = c->s->block; B > 32 && L % (4 * B); B /= 2)
		;
	while (L / (4 * B) > KB_SCAN_CHUNKS && B < 1024 && L % (8 * B) == 0)
		B *= 2;
	CH = (int)(L / (4 * B));
	NW = B / 32;
	if (L % (4 * B) || CH > KB_SCAN_CHUNKS)
		return 0;
	nout = ir_numel(n->rank, n->shape) / L;
	cgx_literal(mul, n->dtype, init, sizeof(init));
	buf_printf(&rin, "%" PRId64, loff);
	buf_addstr(&rout, "0");
	for (int d = n->rank - 1; d >= 0; d--) {
		if (d == dim)
			continue;
		buf_printf(&rin, " + %" PRId64 " * (kb_o / %" PRId64 " %% %" PRId64 ")", lst[d], stride,
		    n->shape[d]);
		buf_printf(&rout, " + %" PRId64 " * (kb_o / %" PRId64 " %% %" PRId64 ")", ost, stride,
		    n->shape[d]);
		ost *= n->shape[d];
		stride *= n->shape[d];
	}
	buf_printf(k, "/* %s along dim %d: one pass, a block per row, %d 16-byte chunks a thread */\n",
	    cg_op_name(n->op), dim, CH);
	buf_printf(k, "__global__ void __launch_bounds__(%d)\n%sk%d(const %s *__restrict__ %s, %s *__restrict__ %s)\n{\n",
	    B, c->prefix, id, T, c->ptrs[leaf], T, c->ptrs[root]);
	buf_printf(k, "\t__shared__ %s kb_wt[2][%d][%d];\n", T, CH, NW);
	buf_printf(k, "\tconst int kb_w = threadIdx.x >> 5, kb_l = threadIdx.x & 31;\n");
	buf_printf(k, "\tint kb_ph = 0;\n");
	buf_printf(k, "\tfor (int64_t kb_o = blockIdx.x; kb_o < %" PRId64 "; kb_o += gridDim.x, kb_ph ^= 1) {\n", nout);
	buf_printf(k, "\t\tconst %s *kb_src = %s + %s + 4 * threadIdx.x;\n", T, c->ptrs[leaf], buf_cstr(&rin));
	buf_printf(k, "\t\t%s *kb_dst = %s + %s + 4 * threadIdx.x;\n", T, c->ptrs[root], buf_cstr(&rout));
	/* rows of a view may start anywhere: 16-byte accesses where this
	 * row's both ends allow, else the same layout one element at a time */
	buf_printf(k, "\t\tconst bool kb_al = ((((uintptr_t)kb_src) | ((uintptr_t)kb_dst)) & 15) == 0;\n");
	buf_printf(k, "\t\t%s kb_v[%d][4], kb_in[%d], kb_cy[%d];\n", T, CH, CH, CH);
	buf_printf(k, "\t\tif (kb_al) {\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_c = 0; kb_c < %d; kb_c++)\n", CH);
	buf_printf(k, "\t\t\t\tkb_load_part%s<%s, 4>(kb_v[kb_c], 0, kb_src + %d * kb_c);\n", cs, T, 4 * B);
	buf_printf(k, "\t\t} else {\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_c = 0; kb_c < %d; kb_c++)\n", CH);
	buf_printf(k, "#pragma unroll\n\t\t\t\tfor (int kb_r = 0; kb_r < 4; kb_r++)\n");
	buf_printf(k, "\t\t\t\t\tkb_v[kb_c][kb_r] = kb_src[%d * kb_c + kb_r];\n", 4 * B);
	buf_printf(k, "\t\t}\n");
	/* the thread's four, then the warp's threads (Hillis-Steele by shuffles) */
	buf_printf(k, "#pragma unroll\n\t\tfor (int kb_c = 0; kb_c < %d; kb_c++) {\n", CH);
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_r = 1; kb_r < 4; kb_r++)\n");
	buf_printf(k, "\t\t\t\tkb_v[kb_c][kb_r] = kb_v[kb_c][kb_r - 1] %c kb_v[kb_c][kb_r];\n", op);
	buf_printf(k, "\t\t\tkb_in[kb_c] = kb_v[kb_c][3];\n\t\t}\n");
	buf_printf(k, "#pragma unroll\n\t\tfor (int kb_s = 1; kb_s < 32; kb_s <<= 1) {\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_c = 0; kb_c < %d; kb_c++) {\n", CH);
	buf_printf(k, "\t\t\t\t%s kb_t = __shfl_up_sync(0xffffffffu, kb_in[kb_c], kb_s);\n", T);
	buf_printf(k, "\t\t\t\tif (kb_l >= kb_s)\n\t\t\t\t\tkb_in[kb_c] = kb_t %c kb_in[kb_c];\n", op);
	buf_printf(k, "\t\t\t}\n\t\t}\n");
	buf_printf(k, "\t\tif (kb_l == 31) {\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_c = 0; kb_c < %d; kb_c++)\n", CH);
	buf_printf(k, "\t\t\t\tkb_wt[kb_ph][kb_c][kb_w] = kb_in[kb_c];\n\t\t}\n");
	buf_printf(k, "\t\t__syncthreads();\n");
	/* what comes before each chunk of this warp: the chunks before it
	 * whole, and this chunk's warps before this one, in row order */
	buf_printf(k, "\t\t%s kb_run = %s;\n", T, init);
	buf_printf(k, "#pragma unroll\n\t\tfor (int kb_c = 0; kb_c < %d; kb_c++) {\n", CH);
	buf_printf(k, "\t\t\tkb_cy[kb_c] = kb_run;\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_x = 0; kb_x < %d; kb_x++) {\n", NW);
	buf_printf(k, "\t\t\t\tif (kb_x == kb_w)\n\t\t\t\t\tkb_cy[kb_c] = kb_run;\n");
	buf_printf(k, "\t\t\t\tkb_run = kb_run %c kb_wt[kb_ph][kb_c][kb_x];\n", op);
	buf_printf(k, "\t\t\t}\n\t\t}\n");
	/* then this thread's place in its warp (the inclusive scan of the
	 * lane before), and its four */
	buf_printf(k, "#pragma unroll\n\t\tfor (int kb_c = 0; kb_c < %d; kb_c++) {\n", CH);
	buf_printf(k, "\t\t\t%s kb_t = __shfl_up_sync(0xffffffffu, kb_in[kb_c], 1);\n", T);
	buf_printf(k, "\t\t\tconst %s kb_b = kb_l ? kb_cy[kb_c] %c kb_t : kb_cy[kb_c];\n", T, op);
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_r = 0; kb_r < 4; kb_r++)\n");
	buf_printf(k, "\t\t\t\tkb_v[kb_c][kb_r] = kb_b %c kb_v[kb_c][kb_r];\n\t\t}\n", op);
	buf_printf(k, "\t\tif (kb_al) {\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_c = 0; kb_c < %d; kb_c++)\n", CH);
	buf_printf(k, "\t\t\t\tkb_store_vec%s(kb_dst + %d * kb_c, kb_v[kb_c]);\n", cs, 4 * B);
	buf_printf(k, "\t\t} else {\n");
	buf_printf(k, "#pragma unroll\n\t\t\tfor (int kb_c = 0; kb_c < %d; kb_c++)\n", CH);
	buf_printf(k, "#pragma unroll\n\t\t\t\tfor (int kb_r = 0; kb_r < 4; kb_r++)\n");
	buf_printf(k, "\t\t\t\t\tkb_dst[%d * kb_c + kb_r] = kb_v[kb_c][kb_r];\n", 4 * B);
	buf_printf(k, "\t\t}\n\t}\n}\n\n");
	cu_hline(c, "%sk%d<<<kb_grid(%" PRId64 ", 1), %d, 0, st>>>(%s, %s);", c->prefix, id, nout, B,
	    c->ptrs[leaf], c->ptrs[root]);
	cu_hline(c, "if ((rc = kb_launch_error()))");
	cu_hline(c, "\tgoto out;");
	buf_free(&rin);
	buf_free(&rout);
	c->nk++;
	return 1;
}
