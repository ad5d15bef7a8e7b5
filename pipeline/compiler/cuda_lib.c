/*
 * The CUDA backend's library calls and scans: GEMM through cuBLAS
 * (strided-batched, transposes folded into the call instead of copies),
 * convolution through cuDNN (heuristic algorithm, TF32 only when the
 * schedule allows it), and cumsum/cumprod as a block per row.
 * Handles live in statics, created once; descriptors and workspaces are
 * per call (a cache of scratch, never of results).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/cuda.h"
#include "pipeline/compiler/expr.h"

struct gop {
	int leaf;
	int64_t off;
	int trans;	/* contiguous along rows (the matrix's first dim) */
	int64_t ld;
	int64_t bstride;
};

static int
gemm_operand(const struct cg *g, int id, int r, struct gop *o)
{
	const struct cg_node *n = &g->nodes[id];
	int64_t st[CG_MAX_RANK], R = n->shape[r - 2], C = n->shape[r - 1], sr, sc, prod = 1;
	int found = 0;

	if (cg_strided(g, id, &o->leaf, &o->off, st) < 0)
		return -1;
	sr = st[r - 2];
	sc = st[r - 1];
	if (C == 1)
		sc = 1;
	if (R == 1)
		sr = sc == 1 ? C : sr;
	if (sc == 1 && sr >= C && sr > 0) {
		o->trans = 0;
		o->ld = sr;
	} else if (sr == 1 && sc >= R && sc > 0) {
		o->trans = 1;
		o->ld = sc;
	} else {
		return -1;
	}
	o->bstride = 0;
	for (int d = r - 3; d >= 0; d--) {
		if (n->shape[d] == 1)
			continue;
		if (!found) {
			o->bstride = st[d];
			found = 1;
		} else if (st[d] != o->bstride * prod) {
			return -1;
		}
		prod *= n->shape[d];
	}
	return 0;
}

int
cu_gemm_operand_ok(const struct cg *g, int gemm, int operand)
{
	struct gop o;

	return gemm_operand(g, g->nodes[gemm].arg[operand], g->nodes[gemm].rank, &o);
}

int
cu_gemm(struct cu *c, int root)
{
	const struct cg_node *n = &c->g->nodes[root];
	int r = n->rank, dbl = n->dtype == IR_F64;
	int64_t M = n->shape[r - 2], N = n->shape[r - 1], K = c->g->nodes[n->arg[0]].shape[r - 1];
	int64_t batch = ir_numel(r - 2, n->shape);
	struct gop a, b;

	if (n->dtype != IR_F32 && n->dtype != IR_F64)
		return cg_fail(&c->e, -ENOTSUP, "unsupported: gemm on %s", ir_dtype_name(n->dtype));
	if (gemm_operand(c->g, n->arg[0], r, &a) < 0 || gemm_operand(c->g, n->arg[1], r, &b) < 0)
		return cg_fail(&c->e, -EINVAL, "internal: GEMM operand not in a cuBLAS layout");
	c->cublas = 1;
	/* row-major C = A B is column-major C^T = B^T A^T: B goes first */
	cu_hline(c, "{\t/* gemm %s[%" PRId64 "] = %s x %s: %" PRId64 "x%" PRId64 "x%" PRId64 " */",
	    c->ptrs[root], batch, c->ptrs[a.leaf], c->ptrs[b.leaf], M, N, K);
	cu_hline(c, "\tconst %s alpha = %.17g, beta = 0;", dbl ? "double" : "float", n->f[0]);
	cu_hline(c, "\tif (!kb_cublas && cublasCreate(&kb_cublas) != CUBLAS_STATUS_SUCCESS)");
	cu_hline(c, "\t\t{ rc = 5; goto out; }");
	cu_hline(c, "\tif (cublasSetStream(kb_cublas, st) != CUBLAS_STATUS_SUCCESS ||");
	cu_hline(c, "\t    cublasSetMathMode(kb_cublas, %s) != CUBLAS_STATUS_SUCCESS ||",
	    c->s->tf32 && !dbl ? "CUBLAS_TF32_TENSOR_OP_MATH" : "CUBLAS_PEDANTIC_MATH");
	cu_hline(c, "\t    cublas%sgemmStridedBatched(kb_cublas, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", &alpha,",
	    dbl ? "D" : "S", b.trans ? "CUBLAS_OP_T" : "CUBLAS_OP_N", a.trans ? "CUBLAS_OP_T" : "CUBLAS_OP_N",
	    N, M, K);
	cu_hline(c, "\t    %s + %" PRId64 ", %" PRId64 ", %" PRId64 ", %s + %" PRId64 ", %" PRId64 ", %" PRId64 ",",
	    c->ptrs[b.leaf], b.off, b.ld, b.bstride, c->ptrs[a.leaf], a.off, a.ld, a.bstride);
	cu_hline(c, "\t    &beta, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ") != CUBLAS_STATUS_SUCCESS)",
	    c->ptrs[root], N, M * N, batch);
	cu_hline(c, "\t\t{ rc = 5; goto out; }");
	cu_hline(c, "}");
	return 0;
}

int
cu_conv(struct cu *c, int root)
{
	const struct cg_node *n = &c->g->nodes[root];
	const struct cg_node *x = &c->g->nodes[n->arg[0]], *w = &c->g->nodes[n->arg[1]];
	int nsp = (int)n->i[CG_CONV_NSP], dbl = n->dtype == IR_F64, lx, lw;
	int64_t ox, ow, st[CG_MAX_RANK];
	/* conv1d is conv2d over a height of 1 */
	int64_t H = nsp == 2 ? x->shape[2] : 1, W = x->shape[1 + nsp];
	int64_t KH = nsp == 2 ? w->shape[2] : 1, KW = w->shape[1 + nsp];
	int64_t OH = nsp == 2 ? n->shape[2] : 1, OW = n->shape[1 + nsp];
	int64_t ph = nsp == 2 ? n->i[CG_CONV_PAD] : 0, pw = n->i[CG_CONV_PAD + nsp - 1];
	int64_t sh = nsp == 2 ? n->i[CG_CONV_STRIDE] : 1, sw = n->i[CG_CONV_STRIDE + nsp - 1];
	int64_t dh = nsp == 2 ? n->i[CG_CONV_DIL] : 1, dw = n->i[CG_CONV_DIL + nsp - 1];
	const char *dt = dbl ? "CUDNN_DATA_DOUBLE" : "CUDNN_DATA_FLOAT";

	if (n->dtype != IR_F32 && n->dtype != IR_F64)
		return cg_fail(&c->e, -ENOTSUP, "unsupported: conv on %s", ir_dtype_name(n->dtype));
	if (cg_strided(c->g, n->arg[0], &lx, &ox, st) < 0 || cg_strided(c->g, n->arg[1], &lw, &ow, st) < 0)
		return cg_fail(&c->e, -EINVAL, "internal: conv operand not contiguous");
	c->cudnn = 1;
	cu_hline(c, "{\t/* conv%dd %s = %s * %s via cuDNN */", nsp, c->ptrs[root], c->ptrs[lx], c->ptrs[lw]);
	cu_hline(c, "\tcudnnTensorDescriptor_t xd = NULL, yd = NULL;");
	cu_hline(c, "\tcudnnFilterDescriptor_t wd = NULL;");
	cu_hline(c, "\tcudnnConvolutionDescriptor_t cd = NULL;");
	cu_hline(c, "\tcudnnConvolutionFwdAlgoPerf_t perf[8];");
	cu_hline(c, "\tint found = 0, pick = 0;");
	cu_hline(c, "\tsize_t wsz = 0;");
	cu_hline(c, "\tvoid *ws = NULL;");
	cu_hline(c, "\tconst %s one = 1, zero = 0;", dbl ? "double" : "float");
	cu_hline(c, "\tif (!kb_cudnn && cudnnCreate(&kb_cudnn) != CUDNN_STATUS_SUCCESS)");
	cu_hline(c, "\t\t{ rc = 6; goto out; }");
	cu_hline(c, "\tint ok = cudnnSetStream(kb_cudnn, st) == CUDNN_STATUS_SUCCESS &&");
	cu_hline(c, "\t    cudnnCreateTensorDescriptor(&xd) == CUDNN_STATUS_SUCCESS &&");
	cu_hline(c, "\t    cudnnCreateTensorDescriptor(&yd) == CUDNN_STATUS_SUCCESS &&");
	cu_hline(c, "\t    cudnnCreateFilterDescriptor(&wd) == CUDNN_STATUS_SUCCESS &&");
	cu_hline(c, "\t    cudnnCreateConvolutionDescriptor(&cd) == CUDNN_STATUS_SUCCESS &&");
	cu_hline(c, "\t    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ") == CUDNN_STATUS_SUCCESS &&",
	    dt, x->shape[0], x->shape[1], H, W);
	cu_hline(c, "\t    cudnnSetFilter4dDescriptor(wd, %s, CUDNN_TENSOR_NCHW, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ") == CUDNN_STATUS_SUCCESS &&",
	    dt, w->shape[0], w->shape[1], KH, KW);
	cu_hline(c, "\t    cudnnSetConvolution2dDescriptor(cd, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", CUDNN_CROSS_CORRELATION, %s) == CUDNN_STATUS_SUCCESS &&",
	    ph, pw, sh, sw, dh, dw, dt);
	cu_hline(c, "\t    cudnnSetConvolutionGroupCount(cd, %d) == CUDNN_STATUS_SUCCESS &&", (int)n->i[CG_CONV_GROUPS]);
	cu_hline(c, "\t    cudnnSetConvolutionMathType(cd, %s) == CUDNN_STATUS_SUCCESS &&",
	    c->s->tf32 && !dbl ? "CUDNN_DEFAULT_MATH" : "CUDNN_FMA_MATH");
	cu_hline(c, "\t    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ") == CUDNN_STATUS_SUCCESS &&",
	    dt, n->shape[0], n->shape[1], OH, OW);
	cu_hline(c, "\t    cudnnGetConvolutionForwardAlgorithm_v7(kb_cudnn, xd, wd, cd, yd, 8, &found, perf) == CUDNN_STATUS_SUCCESS;");
	/* the schedule's conv_algo picks among the heuristic's usable answers */
	cu_hline(c, "\tfor (int i = 0, seen = 0; ok && i < found; i++)");
	cu_hline(c, "\t\tif (perf[i].status == CUDNN_STATUS_SUCCESS && seen++ <= %d)", c->s->conv_algo < 0 ? 0 : c->s->conv_algo);
	cu_hline(c, "\t\t\tpick = i;");
	cu_hline(c, "\tok = ok && found > 0 && cudnnGetConvolutionForwardWorkspaceSize(kb_cudnn, xd, wd, cd, yd, perf[pick].algo, &wsz) == CUDNN_STATUS_SUCCESS;");
	cu_hline(c, "\tok = ok && (wsz == 0 || cudaMallocAsync(&ws, wsz, st) == cudaSuccess);");
	cu_hline(c, "\tok = ok && cudnnConvolutionForward(kb_cudnn, &one, xd, %s + %" PRId64 ", wd, %s + %" PRId64 ", cd, perf[pick].algo, ws, wsz, &zero, yd, %s) == CUDNN_STATUS_SUCCESS;",
	    c->ptrs[lx], ox, c->ptrs[lw], ow, c->ptrs[root]);
	cu_hline(c, "\tif (ws)");
	cu_hline(c, "\t\tcudaFreeAsync(ws, st);");
	cu_hline(c, "\tcudnnDestroyTensorDescriptor(xd);");
	cu_hline(c, "\tcudnnDestroyTensorDescriptor(yd);");
	cu_hline(c, "\tcudnnDestroyFilterDescriptor(wd);");
	cu_hline(c, "\tcudnnDestroyConvolutionDescriptor(cd);");
	cu_hline(c, "\tif (!ok)");
	cu_hline(c, "\t\t{ rc = 6; goto out; }");
	cu_hline(c, "}");
	return 0;
}

int
cu_scan(struct cu *c, int root)
{
	struct cg_emit *e = &c->e;
	const struct cg_node *n = &c->g->nodes[root];
	int dim = (int)n->i[0], vars[CG_MAX_RANK], error, id = c->nk, mul = n->op == CG_CUMPROD;
	int64_t L = n->shape[dim], nout = ir_numel(n->rank, n->shape) / (L ? L : 1), shape[CG_MAX_RANK];
	struct cg_scope *K, *O, *P1, *P2;
	struct cg_map m;
	struct cg_val v;
	struct cg_aff off;
	struct buf sig = BUF_INIT(4096), args = BUF_INIT(4096), st = BUF_INIT(EXPR_MAX);
	const char *T = cg_ctype(n->dtype);
	char x[256], init[64], text[256];
	int q = 0;

	cg_emit_reset_vars(e);
	memset(e->used, 0, (size_t)c->g->n);
	e->root = root;
	e->vec = 1;
	cgx_literal(mul, n->dtype, init, sizeof(init));
	if (!(K = cg_scope_new(e, NULL)) || !(O = cg_scope_new(e, K)))
		return e->error;
	K->depth = 1;
	cg_line(e, K, "__shared__ %s kb_part[1024];", T);
	buf_printf(&O->head, "for (int64_t kb_o = blockIdx.x; kb_o < %" PRId64 "; kb_o += gridDim.x)", nout);
	O->uniform = 1;
	/* the row's index: every dim but the scanned one */
	{
		int64_t stride = 1;
		for (int d = n->rank - 1; d >= 0; d--) {
			if (d == dim)
				continue;
			snprintf(text, sizeof(text), "kb_o / %" PRId64 " %% %" PRId64, stride, n->shape[d]);
			if ((vars[d] = cgx_index_var(e, O, text)) < 0)
				return e->error;
			e->var[vars[d]].extent = n->shape[d];
			stride *= n->shape[d];
			shape[q++] = n->shape[d];
		}
	}
	cg_line(e, O, "const int64_t kb_seg = (%" PRId64 " + blockDim.x - 1) / blockDim.x;", L);
	cg_line(e, O, "const int64_t kb_lo = threadIdx.x * kb_seg;");
	cg_line(e, O, "const int64_t kb_hi = kb_lo + kb_seg < %" PRId64 " ? kb_lo + kb_seg : %" PRId64 ";", L, L);
	cg_line(e, O, "%s kb_acc = %s;", T, init);
	/* pass 1: each thread's segment total */
	if (!(P1 = cg_scope_new(e, O)) || (vars[dim] = cg_var_new(e, P1, "i")) < 0)
		return e->error;
	e->var[vars[dim]].extent = L;
	buf_printf(&P1->head, "for (int64_t %s = kb_lo; %s < kb_hi; %s++)", e->var[vars[dim]].name,
	    e->var[vars[dim]].name, e->var[vars[dim]].name);
	P1->uniform = 0;
	cg_map_identity(&m, n->rank, vars);
	if ((error = cg_ev(e, P1, n->arg[0], &m, &v)) < 0)
		return error;
	cg_line(e, P1, "kb_acc %s= %s;", mul ? "*" : "+", cgx_opnd(&v, n->dtype, 0, x, sizeof(x)));
	if ((error = cg_scope_close(e, P1)) < 0)
		return error;
	/* exclusive prefix of the segment totals (Hillis-Steele in shared memory) */
	cg_line(e, O, "kb_part[threadIdx.x] = kb_acc;");
	cg_line(e, O, "__syncthreads();");
	cg_line(e, O, "for (int kb_s = 1; kb_s < blockDim.x; kb_s <<= 1) {");
	cg_line(e, O, "\t%s kb_t = threadIdx.x >= kb_s ? kb_part[threadIdx.x - kb_s] : %s;", T, init);
	cg_line(e, O, "\t__syncthreads();");
	cg_line(e, O, "\tkb_part[threadIdx.x] %s= kb_t;", mul ? "*" : "+");
	cg_line(e, O, "\t__syncthreads();");
	cg_line(e, O, "}");
	cg_line(e, O, "kb_acc = threadIdx.x ? kb_part[threadIdx.x - 1] : %s;", init);
	cg_line(e, O, "__syncthreads();");
	/* pass 2: rescan the segment from its prefix, writing */
	if (!(P2 = cg_scope_new(e, O)) || (vars[dim] = cg_var_new(e, P2, "i")) < 0)
		return e->error;
	e->var[vars[dim]].extent = L;
	buf_printf(&P2->head, "for (int64_t %s = kb_lo; %s < kb_hi; %s++)", e->var[vars[dim]].name,
	    e->var[vars[dim]].name, e->var[vars[dim]].name);
	P2->uniform = 0;
	cg_map_identity(&m, n->rank, vars);
	if ((error = cg_ev(e, P2, n->arg[0], &m, &v)) < 0)
		return error;
	cg_line(e, P2, "kb_acc %s= %s;", mul ? "*" : "+", cgx_opnd(&v, n->dtype, 0, x, sizeof(x)));
	cg_map_offset(&m, n->rank, n->shape, &off);
	cgx_aff_print(e, &off, &st);
	cg_line(e, P2, "%s[%s] = kb_acc;", c->ptrs[root], buf_cstr(&st));
	if ((error = cg_scope_close(e, P2)) < 0 || (error = cg_scope_close(e, O)) < 0)
		return error;
	for (int i = 0; i < c->g->n; i++) {
		if (!e->used[i] && i != root)
			continue;
		buf_printf(&sig, "%s%s%s *__restrict__ %s", sig.len ? ", " : "", i == root ? "" : "const ",
		    cg_ctype(c->g->nodes[i].dtype), c->ptrs[i]);
		buf_printf(&args, "%s%s", args.len ? ", " : "", c->ptrs[i]);
	}
	buf_printf(c->kern, "/* %s along dim %d: a block per row, a segment per thread */\n",
	    cg_op_name(n->op), dim);
	buf_printf(c->kern, "__global__ void __launch_bounds__(%d)\nkb_k%d(%s)\n{\n", c->s->block, id,
	    buf_cstr(&sig));
	buf_add(c->kern, K->body.data ? K->body.data : "", K->body.len);
	buf_printf(c->kern, "}\n\n");
	cu_hline(c, "kb_k%d<<<kb_grid(%" PRId64 ", 1), %d, 0, st>>>(%s);", id, nout, c->s->block,
	    buf_cstr(&args));
	cu_hline(c, "if ((rc = kb_launch_error()))");
	cu_hline(c, "\tgoto out;");
	buf_free(&sig);
	buf_free(&args);
	buf_free(&st);
	c->nk++;
	(void)shape;
	return e->error;
}
