/*
 * The CUDA backend: one .cu file; a __global__ kernel per materialized
 * node and a host kernelbot_forward that launches them on the caller's
 * stream, with GEMM on cuBLAS and convolution on cuDNN (cuda_lib.c), and
 * scratch kept per stream (kb_scratch_at), else from a per-device
 * stream-ordered pool (kb_scratch).
 *
 * A group's kernel has one of three shapes, from where its long
 * reductions land (probe) and the schedule:
 *   flat:   no long reduction; a grid-stride loop, KB_VEC lanes per thread
 *           with 16-byte loads and stores where aligned;
 *   team:   one warp or block per outer index; reductions are cooperative
 *           (strided loop + shuffles), the inner dims are spread over the
 *           team, so a row is read once per pass and never leaves L1/L2;
 *   column: reductions over a non-contiguous dim into outputs that each
 *           need nothing but those reductions (09_mean_tanh: a mean over
 *           the middle dim): a 32-wide block per 32 adjacent outputs
 *           (32 x vec for sums and products, a thread's vec adjacent
 *           outputs read 16 bytes at a time), its
 *           threadIdx.y rows splitting each reduction, combined through
 *           shared memory in a fixed order (deterministic); adjacent
 *           threads read adjacent addresses and every SM gets work even
 *           when there are few outputs;
 *   thread: one thread per output with serial reductions (the schedule's
 *           reduce=thread, or reductions with inner dims beside them).
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/compiler/emit.h"
#include "pipeline/compiler/expr.h"
#include "pipeline/compiler/group.h"
#include "pipeline/compiler/cuda.h"

enum cu_mode { CU_FLAT, CU_TEAM, CU_THREAD, CU_COL };

/* Shared memory a block's row cache may take: two blocks still fit an SM
 * of Hopper (227 KiB), so one can load while the other computes. */
#define KB_ROW_CACHE_BYTES (96 * 1024)

/* Bytes of rows a thread may keep in registers (row_regs): 32 floats,
 * half that at 1024 threads, where a thread has 64 registers in all. */
#define KB_ROW_REGS_BYTES 128

/* `reduce: thread` on rows this long (along the last dim) is not taken:
 * a thread a row walks its row alone, and neighbouring threads' loads
 * are a row apart. On the H200 02_softmax_rows' rows of 16384 ran at
 * 778 ms that way against 0.14 ms for a team a row; the search's seed
 * then costs a candidate and tens of seconds. The group gets the warp
 * team instead, the same kernel as `reduce: warp` (one source, judged
 * once). */
#define CU_THREAD_ROW_MAX 1024

void
cu_hline(struct cu *c, const char *fmt, ...)
{
	va_list ap;

	buf_addch(c->host, '\t');
	va_start(ap, fmt);
	buf_vprintf(c->host, fmt, ap);
	va_end(ap);
	buf_addch(c->host, '\n');
}

/* Where the group's long reductions land: one plain scope per level. */
static int
probe(struct cu *c, int root, int q, const int64_t *shape)
{
	struct cg_emit *e = &c->e;
	struct cg_scope *cur = cg_scope_new(e, NULL);
	int vars[CG_MAX_RANK];
	struct cg_map m;
	struct cg_val v;

	cg_emit_reset_vars(e);
	e->root = root;
	e->red_level = 0;
	e->red_rowlike = 0;
	e->red_extent = 0;
	e->vec = 1;
	for (int i = 0; i < q && cur; i++) {
		cur = cg_scope_new(e, cur);
		if (!cur || (vars[i] = cg_var_new(e, cur, "i")) < 0)
			return e->error ? e->error : -ENOMEM;
		e->var[vars[i]].extent = shape[i];
		cur->level = i + 1;
	}
	if (!cur)
		return e->error;
	cg_group_root_map(c->g, root, q, shape, vars, &m);
	return cg_ev(e, cur, root, &m, &v);
}

/* Variables for dims [lo, hi) of shape from the linear index lin (last
 * dim counted in vec-wide slots); the innermost becomes the lane base. */
static int
split_index(struct cg_emit *e, struct cg_scope *S, const char *lin, const int64_t *shape, int lo,
    int hi, int vec, int *vars)
{
	int64_t stride = 1;
	char text[256];

	for (int d = hi - 1; d >= lo; d--) {
		int64_t ext = d == hi - 1 ? shape[d] / vec : shape[d];
		if (d == lo && d == hi - 1)
			snprintf(text, sizeof(text), vec > 1 ? "%s * %d" : "%s", lin, vec);
		else if (d == lo)
			snprintf(text, sizeof(text), "%s / %" PRId64, lin, stride);
		else if (d == hi - 1)
			snprintf(text, sizeof(text), "%s %% %" PRId64 " * %d", lin, ext, vec);
		else
			snprintf(text, sizeof(text), "%s / %" PRId64 " %% %" PRId64, lin, stride, ext);
		if ((vars[d] = cgx_index_var(e, S, text)) < 0)
			return e->error;
		e->var[vars[d]].extent = shape[d];
		e->var[vars[d]].iter = 1;
		stride *= ext;
	}
	return 0;
}

static void
kernel_params(struct cu *c, int root, struct buf *sig, struct buf *args)
{
	for (int i = 0; i < c->g->n; i++) {
		const struct cg_node *n = &c->g->nodes[i];
		if (!c->e.used[i] && i != root)
			continue;
		buf_printf(sig, "%s%s%s *__restrict__ %s", sig->len ? ", " : "", i == root ? "" : "const ",
		    cg_ctype(n->dtype), c->ptrs[i]);
		buf_printf(args, "%s%s", args->len ? ", " : "", c->ptrs[i]);
	}
}

static int
store(struct cu *c, struct cg_scope *S, int root, const struct cg_map *m, const struct cg_val *v,
    const char *guard)
{
	struct cg_emit *e = &c->e;
	const struct cg_node *n = &c->g->nodes[root];
	struct cg_aff off;
	struct buf b = BUF_INIT(EXPR_MAX);
	char x[256];

	/* an output is written once and not read back: evict-first when
	 * the schedule asks (a scratch buffer is read by the next kernel) */
	int cs = c->s->stream && n->output >= 0;

	cg_map_offset(m, n->rank, n->shape, &off);
	cgx_aff_print(e, &off, &b);
	if (v->vec && v->dtype == n->dtype && e->vec_var >= 0 && off.c[e->vec_var] == 1)
		cg_line(e, S, "%s%s%skb_store_vec%s(%s + %s, %s);", guard ? "if (" : "", guard ? guard : "",
		    guard ? ") " : "", cs ? "_cs" : "", c->ptrs[root], buf_cstr(&b), v->name);
	else if (v->vec || (e->vec_var >= 0 && off.c[e->vec_var]))
		/* every lane is written, also when the value is the same for all */
		cg_line(e, S, cs ? "%s%s%sKB_LANES kb_stcs(&%s[%s + kb_j], %s);%s" :
		    "%s%s%sKB_LANES %s[%s + kb_j] = %s;%s", guard ? "if (" : "", guard ? guard : "",
		    guard ? ") { " : "", c->ptrs[root], buf_cstr(&b), cgx_opnd(v, n->dtype, 1, x, sizeof(x)),
		    guard ? " }" : "");
	else
		cg_line(e, S, cs ? "%s%s%skb_stcs(&%s[%s], %s);" : "%s%s%s%s[%s] = %s;", guard ? "if (" : "",
		    guard ? guard : "", guard ? ") " : "", c->ptrs[root], buf_cstr(&b),
		    cgx_opnd(v, n->dtype, 0, x, sizeof(x)));
	buf_free(&b);
	return e->error;
}

/* Scratch kept from call to call, per stream (kb_scratch_at): buffers up
 * to 4 MiB, where the pool's host time per call is worth saving against
 * the kernels' (a module keeps at most KB_SLOTS of them, 64 MiB). */
static int
scratch_kept(const struct cg_node *n)
{
	return ir_numel(n->rank, n->shape) * cg_dtype_size(n->dtype) <= (4 << 20);
}

/* Every register row whose base is the row loop's own index is loaded
 * first, before any other load (a gather's chain) and the first
 * reduction, so its latency overlaps theirs. */
static void
fill_top_rows(struct cg_emit *e, const int *vars, int k)
{
	for (int r = 0; r < e->nrc; r++) {
		int top = 1;
		for (int iv = 0; iv < e->nvars; iv++) {
			int mine = 0;
			for (int d = 0; d < k; d++)
				mine |= vars[d] == iv;
			if (e->rc[r].outer.c[iv] && !mine)
				top = 0;
		}
		if (top)
			cgx_row_fill(e, r);
	}
}

/* A team kernel's loops under K: *op a warp's, a block's or a cluster's
 * loop over the outer indices (kb_o), and where dims are left beside
 * the reductions *ip the team's strided loop over them (kb_n), else
 * NULL; the launch's grid goes into grid. */
static int
team_loops(struct cu *c, struct cg_scope *K, int q, const int64_t *shape, int k, int block_team,
    int vec, int rc_pass, int *vars, struct cg_scope **op, struct cg_scope **ip, char *grid,
    size_t glen)
{
	struct cg_emit *e = &c->e;
	struct cg_scope *O, *I = NULL;
	int64_t nout = ir_numel(k, shape), nin = ir_numel(q - k, shape + k);

	if (block_team && c->split > 1) {
		/* the cluster's blocks are one team: lanes across them,
		 * a row per cluster (cluster ranks are blockIdx.x % split) */
		cg_line(e, K, "const int kb_lane = (int)cooperative_groups::this_cluster().block_rank() * "
		    "blockDim.x + threadIdx.x, kb_team = %d;", c->block * c->split);
		e->team = c->block * c->split;
		cg_line(e, K, "unsigned kb_ph = 0;	/* kb_team_t<3>'s slot */");
	} else if (block_team) {
		/* the launch's block, a constant: a team loop's trip
		 * count is known, so its loads unroll into one batch */
		cg_line(e, K, "const int kb_lane = threadIdx.x, kb_team = %d;", c->block);
		e->team = c->block;
	} else {
		cg_line(e, K, "const int kb_lane = threadIdx.x & 31, kb_team = 32;");
		e->team = 32;
	}
	cg_line(e, K, "(void)kb_team;	/* unused when every loop is in registers */");
	if (!(O = cg_scope_new(e, K)))
		return e->error;
	O->uniform = 1;
	O->level = k;
	if (block_team && c->split > 1)
		buf_printf(&O->head, "for (int64_t kb_o = blockIdx.x / %d; kb_o < %" PRId64 "; kb_o += gridDim.x / %d)",
		    c->split, nout, c->split);
	else if (block_team)
		buf_printf(&O->head, "for (int64_t kb_o = blockIdx.x; kb_o < %" PRId64 "; kb_o += gridDim.x)",
		    nout);
	else
		buf_printf(&O->head, "for (int64_t kb_o = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); "
		    "kb_o < %" PRId64 "; kb_o += (int64_t)gridDim.x * (blockDim.x >> 5))", nout);
	if (k > 0 && split_index(e, O, "kb_o", shape, 0, k, 1, vars) < 0)
		return e->error;
	if (rc_pass && c->rr) {
		e->row_regs = 1;
		e->rr_team = block_team ? c->block * c->split : 32;
		e->rr_len = c->rr_len;
	}
	if (k < q) {
		if (!(I = cg_scope_new(e, O)))
			return e->error;
		I->uniform = 0;
		I->level = q;
		if (rc_pass == 2 && e->row_regs) {
			/* the register rows' layout (cg.h), fully unrolled */
			buf_printf(&I->head, "#pragma unroll\nfor (int64_t kb_ni = 0, kb_n = kb_lane; kb_ni < %"
			    PRId64 "; kb_ni++, kb_n += %d)", nin / vec / e->rr_team, e->rr_team);
			snprintf(e->rr_inner, sizeof(e->rr_inner), vec > 1 ? "kb_ni * %d + kb_j" : "kb_ni",
			    vec);
		} else {
			buf_printf(&I->head, "for (int64_t kb_n = kb_lane; kb_n < %" PRId64 "; kb_n += kb_team)",
			    nin / vec);
		}
		if (split_index(e, I, "kb_n", shape, k, q, vec, vars) < 0)
			return e->error;
		for (int64_t d = q - 1, st = 1; d >= k; st *= shape[d], d--) {
			e->var[vars[d]].rowstride = st;
			e->row_nvars += shape[d] > 1;
		}
		e->row_len = nin;
	}
	if (rc_pass) {
		e->row_cache = rc_pass;
		e->rc_scope = O;
		if (rc_pass == 1)
			e->nrc = 0;
		for (int r = 0; r < e->nrc; r++)
			e->rc[r].filled = 0;
	}
	if (rc_pass == 2 && e->row_regs)
		fill_top_rows(e, vars, k);
	if (block_team && c->split > 1)
		snprintf(grid, glen, "kb_grid(%" PRId64 ", 1) * %d", nout, c->split);
	else
		snprintf(grid, glen, "kb_grid(%" PRId64 ", %d)", nout, block_team ? 1 : c->block / 32);
	*op = O;
	*ip = I;
	return 0;
}

/* The kernel's definition around K's body: KB_VEC and KB_BLOCK_TEAM
 * tell the prelude's team reductions what the team is (2 a column, 3 a
 * cluster, whose reductions take its slot, KB_TEAM_PH). */
static void
kernel_text(struct cu *c, const struct cg_scope *K, int id, const char *sig, enum cu_mode mode,
    int k, int block_team, int cl, int vec)
{
	buf_printf(c->kern, "#define KB_VEC %d\n#define KB_BLOCK_TEAM %d\n", vec,
	    mode == CU_COL ? 2 : cl ? 3 : block_team);
	if (cl)
		buf_printf(c->kern, "#undef KB_TEAM_PH\n#define KB_TEAM_PH , kb_ph\n");
	buf_printf(c->kern, "__global__ void ");
	if (cl)
		buf_printf(c->kern, "__cluster_dims__(%d, 1, 1) ", c->split);
	if (mode == CU_TEAM && k > 0 && c->s->min_blocks > 1 && 2048 / c->block >= 2)
		/* registers capped so that this many blocks fit an SM (not
		 * for a whole-tensor reduction's one block) */
		buf_printf(c->kern, "__launch_bounds__(%d, %d)\n%sk%d(%s)\n{\n", c->block,
		    c->s->min_blocks < 2048 / c->block ? c->s->min_blocks : 2048 / c->block, c->prefix, id, sig);
	else
		buf_printf(c->kern, "__launch_bounds__(%d)\n%sk%d(%s)\n{\n", c->block, c->prefix, id, sig);
	buf_add(c->kern, K->body.data ? K->body.data : "", K->body.len);
	buf_printf(c->kern, "}\n#undef KB_VEC\n#undef KB_BLOCK_TEAM\n");
	if (cl)
		buf_printf(c->kern, "#undef KB_TEAM_PH\n#define KB_TEAM_PH\n");
	buf_printf(c->kern, "\n");
}

/* The launch: past 48 KiB of dynamic shared memory a kernel must
 * opt in, in one statement with it (the launch may be an if's
 * branch); after the first launch, with pdl, through
 * cudaLaunchKernelEx so that it may start before the last ends. */
static void
kernel_launch(struct cu *c, int id, const char *grid, const char *blk, int64_t smem, const char *args,
    struct buf *launch)
{
	if (smem > 48 * 1024)
		buf_printf(launch, "{ if (cudaFuncSetAttribute(%sk%d, cudaFuncAttributeMaxDynamicSharedMemorySize, %"
		    PRId64 ") != cudaSuccess) { (void)cudaGetLastError(); rc = 4; goto out; } ", c->prefix, id, smem);
	if (c->s->pdl && c->launched)
		buf_printf(launch, "kb_launch_pdl(%sk%d, %s, %s, %" PRId64 ", st, %s);", c->prefix, id, grid, blk,
		    smem, args);
	else
		buf_printf(launch, "%sk%d<<<%s, %s, %" PRId64 ", st>>>(%s);", c->prefix, id, grid, blk, smem, args);
	if (smem > 48 * 1024)
		buf_addstr(launch, " }");
}

/* One kernel for the group; its launch goes into *launch. */
static int
group_kernel(struct cu *c, int root, int q, const int64_t *shape, enum cu_mode mode, int k,
    int block_team, int vec, int rc_pass, struct buf *launch)
{
	struct cg_emit *e = &c->e;
	struct cg_scope *K, *O = NULL, *I = NULL, *cur;
	int vars[CG_MAX_RANK], error, id = c->nk;
	int64_t nout = ir_numel(k, shape), smem = 0;
	struct cg_map m;
	struct cg_val v;
	struct buf sig = BUF_INIT(4096), args = BUF_INIT(4096);
	char grid[96], blk[32];
	const char *guard = NULL;
	int cl = mode == CU_TEAM && block_team && c->split > 1;	/* a cluster team */
	int pdl_early;

	cg_emit_reset_vars(e);
	memset(e->used, 0, (size_t)c->g->n);
	e->root = root;
	e->vec = vec;
	snprintf(blk, sizeof(blk), "%d", c->block);
	if (!(K = cg_scope_new(e, NULL)))
		return e->error;
	K->depth = 1;
	/* with pdl, a kernel launched after another one (kb_launch_pdl) may
	 * start before that one ends: it computes its reductions over the
	 * graph's inputs first and only then waits (KB_PDL_WAIT, below), not
	 * where rows are kept (their copies come first) */
	pdl_early = c->s->pdl && c->launched;
	for (int r = 0; pdl_early && rc_pass == 2 && r < e->nrc; r++)
		pdl_early = c->g->nodes[e->rc[r].leaf].op == CG_INPUT;
	if (c->s->pdl)
		cg_line(e, K, pdl_early ? "KB_PDL_TRIGGER();" : "KB_PDL_ENTRY();");
	e->lse_ok = mode == CU_TEAM && !cl;
	if (mode == CU_COL) {
		/* with vec lanes each thread owns vec adjacent outputs and
		 * reads them 16 bytes at a time (sum/prod, cgx_reduce) */
		int64_t nslot = nout / vec, nb = (nslot + 31) / 32;
		cg_line(e, K, "const int kb_lane = threadIdx.y, kb_team = %d;", c->block / 32);
		e->team = c->block / 32;
		if (!(O = cg_scope_new(e, K)))
			return e->error;
		O->uniform = 1;		/* block-uniform: every thread meets every team reduction */
		O->level = q;
		buf_printf(&O->head, "for (int64_t kb_ob = blockIdx.x; kb_ob < %" PRId64 "; kb_ob += gridDim.x)", nb);
		/* the last block's spare columns recompute the last output and store nothing */
		cg_line(e, O, "const int64_t kb_oc = kb_ob * 32 + threadIdx.x;");
		cg_line(e, O, "const int64_t kb_o = kb_oc < %" PRId64 " ? kb_oc : %" PRId64 ";", nslot, nslot - 1);
		if (q > 0 && split_index(e, O, "kb_o", shape, 0, q, vec, vars) < 0)
			return e->error;
		e->vec_red = vec > 1;
		cur = O;
		guard = "kb_lane == 0 && kb_oc == kb_o";
		snprintf(grid, sizeof(grid), "kb_grid(%" PRId64 ", 1)", nb);
		snprintf(blk, sizeof(blk), "dim3(32, %d)", c->block / 32);
	} else if (mode != CU_TEAM) {
		int64_t ns = ir_numel(q, shape) / vec;
		if (!(cur = cg_scope_new(e, K)))
			return e->error;
		buf_printf(&cur->head, "for (int64_t kb_i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; "
		    "kb_i < %" PRId64 "; kb_i += (int64_t)gridDim.x * blockDim.x)", ns);
		cur->level = q;
		if (q > 0 && split_index(e, cur, "kb_i", shape, 0, q, vec, vars) < 0)
			return e->error;
		O = cur;
		snprintf(grid, sizeof(grid), "kb_grid(%" PRId64 ", %d)", ns, c->block);
	} else {
		if ((error = team_loops(c, K, q, shape, k, block_team, vec, rc_pass, vars, &O, &I, grid,
		    sizeof(grid))) < 0)
			return error;
		cur = I ? I : O;
	}
	if (vec > 1 && q > 0 && !(mode == CU_TEAM && k == q))
		e->vec_var = vars[q - 1];
	cg_group_root_map(c->g, root, q, shape, vars, &m);
	if (pdl_early) {
		/* every load lands in O or inside it (cgx_outermost), so a
		 * read of another kernel's buffer comes after the wait; with
		 * nothing to read first, the wait goes before O's loop (K's
		 * lines precede O's text), once a thread */
		if ((error = cg_ev_input_reductions(e, cur, root, &m)) < 0)
			return error;
		cg_line(e, error > 0 ? O : K, "KB_PDL_WAIT();");
	}
	if ((error = cg_ev(e, cur, root, &m, &v)) < 0)
		return error;
	if (mode == CU_TEAM && k == q)
		guard = "kb_lane == 0";
	if ((error = store(c, cur, root, &m, &v, guard)) < 0)
		return error;
	if (e->row_cache == 2 && e->nrc > 0 && !e->row_regs) {
		/* cached rows are read across lanes by the inner loop, and the
		 * next row overwrites them: a barrier before and after it */
		if (I) {
			struct buf h = BUF_INIT(EXPR_MAX);
			buf_printf(&h, "KB_ROW_SYNC();\n%s", buf_cstr(&I->head));
			buf_reset(&I->head);
			buf_addstr(&I->head, buf_cstr(&h));
			buf_free(&h);
		}
	}
	if (I && (error = cg_scope_close(e, I)) < 0)
		return error;
	if (e->row_cache == 2 && e->nrc > 0 && !e->row_regs) {
		if (I)
			cg_line(e, O, "KB_ROW_SYNC();");
		cg_line(e, K, "extern __shared__ __align__(16) unsigned char kb_smem[];");
		cg_line(e, K, "unsigned char *kb_team_smem = kb_smem + %s * %" PRId64 ";",
		    block_team ? "0" : "(threadIdx.x >> 5)", e->rc_bytes);
		for (int r = 0; r < e->nrc; r++)
			cg_line(e, K, "%s *kb_row%d = (%s *)(kb_team_smem + %" PRId64 ");",
			    cg_ctype(e->rc[r].dtype), r, cg_ctype(e->rc[r].dtype), e->rc[r].off);
		smem = e->rc_bytes * (block_team ? 1 : c->block / 32);
	}
	if ((error = cg_scope_close(e, O)) < 0)
		return error;
	if (cl)
		cg_line(e, K, "cooperative_groups::this_cluster().sync();	/* kb_team_t<3>: slots stay readable */");
	kernel_params(c, root, &sig, &args);
	kernel_text(c, K, id, buf_cstr(&sig), mode, k, block_team, cl, vec);
	kernel_launch(c, id, grid, blk, smem, buf_cstr(&args), launch);
	buf_free(&sig);
	buf_free(&args);
	c->nk++;
	return e->error;
}

/* group_kernel, with the row cache's dry pass first when the schedule
 * asks for it (row_regs where emit_group found the row fits registers,
 * else row_cache) and the kernel is a team kernel. */
static int
team_kernel(struct cu *c, int root, int q, const int64_t *shape, enum cu_mode mode, int k,
    int block_team, int vec, struct buf *launch)
{
	struct cg_emit *e = &c->e;
	size_t klen = c->kern->len, llen = launch->len;
	int nk = c->nk, error, n = 0;
	int64_t budget;

	if ((!c->s->row_cache && !c->rr) || mode != CU_TEAM || k == 0)
		return group_kernel(c, root, q, shape, mode, k, block_team, vec, 0, launch);
	if ((error = group_kernel(c, root, q, shape, mode, k, block_team, vec, 1, launch)) < 0)
		return error;
	buf_truncate(c->kern, klen);
	buf_truncate(launch, llen);
	c->nk = nk;
	/* keep rows read more than once, one of them by a team loop (which
	 * covers the row), in order, within the budget */
	budget = block_team ? KB_ROW_CACHE_BYTES : KB_ROW_CACHE_BYTES / (c->block / 32);
	if (c->rr) {
		/* registers: rows of the layout's length read more than once
		 * (every read is the thread's own part), within a thread's
		 * register budget (64 registers a thread at 1024 threads) */
		int team = block_team ? c->block * c->split : 32;
		budget = c->block >= 1024 ? KB_ROW_REGS_BYTES / 2 : KB_ROW_REGS_BYTES;
		e->rc_bytes = 0;
		for (int r = 0; r < e->nrc; r++) {
			int64_t bytes = e->rc[r].len / team * cg_dtype_size(e->rc[r].dtype);
			if (e->rc[r].uses < 2 || e->rc[r].len != c->rr_len || e->rc_bytes + bytes > budget)
				continue;
			e->rc[n] = e->rc[r];
			e->rc_bytes += bytes;
			n++;
		}
		e->nrc = n;
		return group_kernel(c, root, q, shape, mode, k, block_team, vec, 2, launch);
	}
	e->rc_bytes = 0;
	for (int r = 0; r < e->nrc; r++) {
		int64_t pad = (e->rc[r].len * cg_dtype_size(e->rc[r].dtype) + 15) / 16 * 16;
		if (e->rc[r].uses < 2 || !e->rc[r].team_read || e->rc_bytes + pad > budget)
			continue;
		e->rc[n] = e->rc[r];
		e->rc[n].off = e->rc_bytes;
		e->rc_bytes += pad;
		n++;
	}
	e->nrc = n;
	return group_kernel(c, root, q, shape, mode, k, block_team, vec, 2, launch);
}

static int
emit_group(struct cu *c, int root)
{
	struct cg_emit *e = &c->e;
	int64_t shape[CG_MAX_RANK];
	int q, k, error, vec, block_team = 0;
	enum cu_mode mode;
	struct buf l1 = BUF_INIT(8192), l2 = BUF_INIT(8192);
	size_t klen = c->kern->len;

	cg_group_shape(c->g, root, &q, shape);
	if ((error = probe(c, root, q, shape)) < 0)
		return error;
	k = e->red_level;
	if (e->red_extent == 0)
		mode = CU_FLAT;
	else if (k == 0)
		mode = CU_TEAM;		/* a whole-tensor reduction: one block */
	else if (c->s->reduce == SCHED_RED_AUTO && !e->red_rowlike && k == q)
		mode = CU_COL;
	else if ((c->s->reduce == SCHED_RED_THREAD && !(e->red_rowlike &&
	    e->red_extent >= CU_THREAD_ROW_MAX)) ||
	    (c->s->reduce == SCHED_RED_AUTO && !e->red_rowlike))
		mode = CU_THREAD;
	else
		mode = CU_TEAM;
	if (mode == CU_TEAM)
		block_team = c->s->reduce == SCHED_RED_BLOCK ||
		    (c->s->reduce == SCHED_RED_AUTO && (k == 0 || ir_numel(q - k, shape + k) >= 1024 ||
		    e->red_extent >= 2048));
	vec = mode == CU_THREAD || q == 0 ? 1 : c->s->vec;
	if (!(mode == CU_TEAM && k == q)) {
		while (vec > 1 && shape[q - 1] % vec)
			vec >>= 1;
	}
	c->block = c->s->block;
	c->rr = 0;
	c->split = 1;
	if (mode == CU_TEAM && k == 0)
		/* one block does all the work: as many loads in flight as a
		 * block can have */
		c->block = 1024;
	if (mode == CU_TEAM && k > 0 && c->s->row_regs) {
		/* rows in registers when a thread's part is at most 32
		 * elements: a block team grows (to 1024 threads) until it is
		 * at most 16 (row_regs 2: 32, so fewer threads hold a row and
		 * more blocks share an SM), and the layout has no tail. With
		 * row_split the team is that many blocks of a cluster, each
		 * with its part; a split whose layout has a tail is halved. */
		int64_t L = k < q ? ir_numel(q - k, shape + k) : e->red_extent;
		int part = c->s->row_regs == 2 ? 32 : 16;
		for (int split = block_team ? c->s->row_split : 1; split >= 1 && !c->rr; split /= 2) {
			int tb = c->s->block;
			int64_t team;
			if (block_team)
				while (tb < 1024 && L / ((int64_t)tb * split) > part)
					tb *= 2;
			team = block_team ? (int64_t)tb * split : 32;
			if (L > 0 && L % (team * vec) == 0 && L / team <= 32) {
				c->rr = 1;
				c->rr_len = L;
				c->block = tb;
				c->split = split;
			}
		}
	}
	/* no inner loop: only the row cache's copies can be wide */
	if (mode == CU_TEAM && k == q && !c->s->row_cache && !c->rr)
		vec = 1;
	error = team_kernel(c, root, q, shape, mode, k, block_team, vec, &l1);
	if (error == -EAGAIN && vec > 1) {
		/* vector lanes met an index computation: scalar lanes */
		e->error = 0;
		e->over_vars = 0;
		c->kern->len = klen;
		buf_reset(&l1);
		vec = 1;
		error = team_kernel(c, root, q, shape, mode, k, block_team, vec, &l1);
	}
	if (error < 0)
		goto out;
	if (vec > 1) {
		/* the same kernel with scalar accesses, for buffers that are not 16-byte aligned */
		struct buf cond = BUF_INIT(8192);
		if ((error = team_kernel(c, root, q, shape, mode, k, block_team, 1, &l2)) < 0) {
			buf_free(&cond);
			goto out;
		}
		for (int i = 0; i < c->g->n; i++)
			if (e->used[i] || i == root)
				buf_printf(&cond, "%s(uintptr_t)%s %% %d == 0", cond.len ? " && " : "",
				    c->ptrs[i], vec * cg_dtype_size(c->g->nodes[i].dtype));
		cu_hline(c, "if (%s)", buf_cstr(&cond));
		cu_hline(c, "\t%s", buf_cstr(&l1));
		cu_hline(c, "else");
		cu_hline(c, "\t%s", buf_cstr(&l2));
		buf_free(&cond);
	} else {
		cu_hline(c, "%s", buf_cstr(&l1));
	}
	cu_hline(c, "if ((rc = kb_launch_error()))");
	cu_hline(c, "\tgoto out;");
	c->launched = 1;
out:
	buf_free(&l1);
	buf_free(&l2);
	return error;
}


int
emit_cuda(struct emit_version *v, struct emit_src *src, char *err, size_t errlen)
{
	struct cg *g = v->g;
	const struct schedule *s = &v->s;
	struct buf host = BUF_INIT((8u << 20));
	char (*names)[24] = calloc((size_t)g->n, sizeof(*names));
	const char **ptrs = calloc((size_t)g->n, sizeof(*ptrs));
	struct cu c;
	int error = -ENOMEM, fused = 0;

	memset(&c, 0, sizeof(c));
	cg_emit_init(&c.e, g, s, CG_CUDA, ptrs);
	c.g = g;
	c.s = s;
	c.ptrs = ptrs;
	c.prefix = v->prefix;
	c.kern = &src->kern;
	c.host = &host;
	if (!names || !ptrs || c.e.error)
		goto out;
	/* first cut what a nested long reduction asks for (see cgx_reduce) */
	for (int pass = 0, changed = 1; changed && pass < 8; pass++) {
		changed = 0;
		for (int i = 0; i < g->n; i++) {
			int64_t shape[CG_MAX_RANK];
			int q;
			if (!g->nodes[i].materialize || g->nodes[i].op == CG_INPUT || g->nodes[i].op == CG_GEMM ||
			    g->nodes[i].op == CG_CONV)
				continue;
			cg_group_shape(g, i, &q, shape);
			c.e.cut = -1;
			c.e.nred = 0;
			if (probe(&c, i, q, shape) < 0)
				break;
			if (c.e.cut >= 0 && !g->nodes[c.e.cut].materialize) {
				g->nodes[c.e.cut].materialize = 1;
				changed = 1;
			}
		}
	}
	cg_emit_fini(&c.e);
	cg_emit_init(&c.e, g, s, CG_CUDA, ptrs);
	if (c.e.error)
		goto out;
	emit_buffer_names(g, names, ptrs);
	cu_hline(&c, "cudaStream_t st = (cudaStream_t)stream;");
	cu_hline(&c, "int rc = 0;");
	cu_hline(&c, "if (n_inputs != %d || n_outputs != %d)", g->n_inputs, g->n_outputs);
	cu_hline(&c, "\treturn 1;");
	for (int i = 0; i < g->n; i++) {
		const struct cg_node *n = &g->nodes[i];
		struct buf b = BUF_INIT(4096);
		if (n->op != CG_INPUT && n->output < 0)
			continue;
		emit_tensor_check(g, i, &b);
		cu_hline(&c, "if (%s)", buf_cstr(&b));
		cu_hline(&c, "\treturn 2;");
		buf_reset(&b);
		emit_tensor_pointer(g, i, ptrs[i], "", &b);
		cu_hline(&c, "%s", buf_cstr(&b));
		cu_hline(&c, "(void)%s;", ptrs[i]);
		buf_free(&b);
	}
	if ((fused = cu_attention(&c)) < 0) {
		error = fused;
		goto out;
	}
	for (int i = 0; i < g->n && !fused; i++) {
		const struct cg_node *n = &g->nodes[i];
		if (emit_is_scratch(n)) {
			cu_hline(&c, "%s *%s = NULL;", cg_ctype(n->dtype), ptrs[i]);
			cu_hline(&c, "int %s_own = %d;", ptrs[i], !scratch_kept(n));
		}
	}
	/* scratch on the caller's stream: small buffers kept per stream
	 * (kb_scratch_at), the rest from the pool; what is this call's own
	 * is freed stream-ordered */
	for (int i = 0; i < g->n && !fused; i++) {
		const struct cg_node *n = &g->nodes[i];
		int64_t cnt = ir_numel(n->rank, n->shape);
		if (!emit_is_scratch(n))
			continue;
		c.scratch = 1;
		if (scratch_kept(n))
			cu_hline(&c, "if (kb_scratch_at(%d, (void **)&%s, sizeof(%s) * %" PRId64 ", st, &%s_own))",
			    src->nsites++, ptrs[i], cg_ctype(n->dtype), cnt ? cnt : 1, ptrs[i]);
		else
			cu_hline(&c, "if (kb_scratch((void **)&%s, sizeof(%s) * %" PRId64 ", st))",
			    ptrs[i], cg_ctype(n->dtype), cnt ? cnt : 1);
		cu_hline(&c, "\t{ rc = 3; goto out; }");
	}
	for (int i = 0; i < g->n && !c.e.error && !fused; i++) {
		const struct cg_node *n = &g->nodes[i];
		struct buf b = BUF_INIT(4096);
		if (!n->materialize || n->op == CG_INPUT)
			continue;
		emit_group_summary(g, i, &b);
		cu_hline(&c, "/* %s -> %s */", buf_cstr(&b), ptrs[i]);
		buf_printf(c.kern, "/* %s -> %s */\n", buf_cstr(&b), ptrs[i]);
		buf_free(&b);
		if (n->op == CG_GEMM)
			error = cu_gemm(&c, i);
		else if (n->op == CG_CONV)
			error = cu_conv(&c, i);
		else if (n->op == CG_CUMSUM || n->op == CG_CUMPROD)
			error = cu_scan(&c, i);
		else
			error = emit_group(&c, i);
		if (error < 0)
			break;
	}
	if (c.e.error) {
		error = c.e.error;
		v->over_root = c.e.over_vars ? c.e.root : -1;
		snprintf(err, errlen, "%s", c.e.err);
		goto out;
	}
	if (!strcmp(v->fn, "kernelbot_forward"))
		buf_addstr(&src->fns, "extern \"C\" int\nkernelbot_forward(const DLTensor *inputs, int n_inputs, "
		    "DLTensor *outputs,\n    int n_outputs, void *stream)\n{\n");
	else
		buf_printf(&src->fns, "\nstatic int\n%s(const DLTensor *inputs, int n_inputs, DLTensor *outputs,\n"
		    "    int n_outputs, void *stream)\n{\n", v->fn);
	buf_add(&src->fns, host.data, host.len);
	buf_addstr(&src->fns, "out:\n");
	for (int i = 0; i < g->n && !fused; i++) {
		const struct cg_node *n = &g->nodes[i];
		if (emit_is_scratch(n))
			buf_printf(&src->fns, "\tif (%s && %s_own)\n\t\tcudaFreeAsync(%s, st);\n", ptrs[i], ptrs[i],
			    ptrs[i]);
	}
	if (buf_addstr(&src->fns, "\treturn rc;\n}\n") < 0) {
		error = -ENOBUFS;
		snprintf(err, errlen, "generated source too large");
		goto out;
	}
	src->scratch |= c.scratch;
	src->cublas |= c.cublas;
	src->cudnn |= c.cudnn;
	src->attn |= fused;
	error = 0;
out:
	if (error == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	v->recompute = c.e.recompute;
	cg_emit_fini(&c.e);
	buf_free(&host);
	free(names);
	free(ptrs);
	return error;
}
