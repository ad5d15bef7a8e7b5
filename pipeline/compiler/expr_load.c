/*
 * expr_load: the loads of the expression emitter: a materialized node at
 * an offset row, from global memory, or on CUDA team kernels from the
 * row cache (a row copied to shared memory once) or from registers (a
 * thread's part of the row, loaded once by an unrolled loop).
 */
#include "pipeline/compiler/expr.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Lane 0's offset is a multiple of the vector width for every thread:
 * the vector variable steps by the width and every other term is a
 * multiple of it (buffers themselves are checked at run time). */
static int
aligned(const struct cg_emit *e, const struct cg_aff *off)
{
	if (off->k % e->vec)
		return 0;
	for (int v = 0; v < e->nvars; v++)
		if (v != e->vec_var && off->c[v] % e->vec)
			return 0;
	return 1;
}

/*
 * The row cache of CUDA team kernels (schedule row_cache). A row of a
 * leaf that a team loop (lane + i * team over len elements) reads whole
 * is copied into shared memory once per row, by a loop of the same shape
 * emitted in the team-uniform scope at the row's first use; every later
 * read is from shared memory. Emission order is not execution order (a
 * loop is placed when it closes), which is why the copy loop is separate
 * and emitted at first use: anything that reads the row closes after it.
 * Team loops read back only their own lane's elements (no barrier); the
 * inner loop reads across lanes after the KB_ROW_SYNC group_kernel puts
 * before it. A row is keyed by its leaf and its base offset (terms on
 * variables of the team-uniform scope). So a softmax or a norm reads
 * global memory once. 1 when handled here.
 */
/*
 * Row k of the row cache in registers (schedule row_regs): a thread's
 * part of the row, loaded at its first use by a fully unrolled loop (16
 * bytes at a time where the kernel's buffers and the row's start allow)
 * into an array every team loop of the row indexes with compile-time
 * constants (cg.h: the layout). Nothing is shared between threads, so no
 * barrier. A read that is not in a loop of that layout is left to global
 * memory (0).
 */
/* The fill of register row k: a thread's part, 16 bytes at a time where
 * the kernel's buffers (KB_VEC) and the row's start allow, streaming
 * (evict-first: the row is read from memory once) when the schedule says
 * so. */
void
cgx_row_fill(struct cg_emit *e, int k)
{
	const struct cg_node *n = &e->g->nodes[e->rc[k].leaf];
	const char *T = cg_ctype(n->dtype), *cs = e->sched->stream ? "_cs" : "";
	int w = e->vec, team = e->rr_team, vw = w;
	int64_t npt = e->rc[k].len / team;
	struct buf b = BUF_INIT(EXPR_MAX);

	if (!(cg_dtype_size(n->dtype) * w == 8 || cg_dtype_size(n->dtype) * w == 16) ||
	    e->rc[k].outer.k % w)
		vw = 1;
	for (int v = 0; v < e->nvars; v++)
		if (e->rc[k].outer.c[v] % w)
			vw = 1;
	cgx_aff_print(e, &e->rc[k].outer, &b);
	cg_line(e, e->rc_scope, "%s kb_row%d[%" PRId64 "];", T, k, npt);
	cg_line(e, e->rc_scope, "#pragma unroll");
	cg_line(e, e->rc_scope, "for (int kb_c = 0; kb_c < %" PRId64 "; kb_c++)", npt / w);
	if (vw > 1)
		cg_line(e, e->rc_scope, "\tkb_load_part%s<%s, %d>(kb_row%d, kb_c * %d, %s + %s + "
		    "(int64_t)(kb_lane + kb_c * %d) * %d);", cs, T, w, k, w, e->bufname[e->rc[k].leaf],
		    buf_cstr(&b), team, w);
	else if (e->sched->stream)
		cg_line(e, e->rc_scope, "\tKB_LANES kb_row%d[kb_c * KB_VEC + kb_j] = kb_ldcs(%s + %s + "
		    "(int64_t)(kb_lane + kb_c * %d) * KB_VEC + kb_j);", k, e->bufname[e->rc[k].leaf],
		    buf_cstr(&b), team);
	else
		cg_line(e, e->rc_scope, "\tKB_LANES kb_row%d[kb_c * KB_VEC + kb_j] = %s[%s + "
		    "(int64_t)(kb_lane + kb_c * %d) * KB_VEC + kb_j];", k, e->bufname[e->rc[k].leaf],
		    buf_cstr(&b), team);
	buf_free(&b);
	e->rc[k].filled = 1;
	e->used[e->rc[k].leaf] = 1;
}

/*
 * Row k of the row cache in registers (schedule row_regs): a thread's
 * part of the row, loaded by cgx_row_fill (at the top of the row's loop
 * when group_kernel could put it there, else at its first use) into an
 * array every team loop of the row indexes with compile-time constants
 * (cg.h: the layout). Nothing is shared between threads, so no barrier.
 * A read that is not in a loop of that layout is left to global memory
 * (0).
 */
static int
row_in_regs(struct cg_emit *e, struct cg_scope *at, int id, int k, int coopv, int vec,
    struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id];
	const char *idx;
	struct buf b = BUF_INIT(EXPR_MAX);

	idx = coopv >= 0 ? e->var[coopv].ridx : e->rr_inner;
	if (!idx[0] || (coopv < 0 && e->vec > 1 && !vec))
		return 0;
	if (!e->rc[k].filled)
		cgx_row_fill(e, k);
	buf_printf(&b, "kb_row%d[%s]", k, idx);
	cgx_temp(e, at, n->dtype, coopv < 0 && vec, buf_cstr(&b), out);
	buf_free(&b);
	e->used[id] = 1;
	return 1;
}

static int
row_cached(struct cg_emit *e, struct cg_scope *at, int id, const struct cg_aff *off,
    struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id];
	struct cg_aff outer = *off, inner;
	int coopv = -1, nrow = 0, vec = 0, k;
	int64_t len;
	struct buf b = BUF_INIT(EXPR_MAX);

	if (!e->row_cache || !e->rc_scope)
		return 0;
	memset(&inner, 0, sizeof(inner));
	for (int v = 0; v < e->nvars; v++) {
		if (!off->c[v])
			continue;
		if (e->var[v].coop == 1 && off->c[v] == 1 && coopv < 0) {
			coopv = v;
		} else if (e->var[v].rowstride && off->c[v] == e->var[v].rowstride) {
			nrow += e->var[v].extent > 1;
			vec |= v == e->vec_var;
		} else if (!e->var[v].coop && !e->var[v].rowstride && e->var[v].scope == e->rc_scope) {
			continue;	/* the same for the whole team: part of the base */
		} else {
			return 0;
		}
		inner.c[v] = off->c[v];
		outer.c[v] = 0;
	}
	if (coopv >= 0 && nrow == 0)
		len = e->var[coopv].extent;
	else if (coopv < 0 && nrow > 0 && nrow == e->row_nvars)
		len = e->row_len;
	else
		return 0;
	for (k = 0; k < e->nrc; k++)
		if (e->rc[k].leaf == id && !memcmp(&e->rc[k].outer, &outer, sizeof(outer)))
			break;
	if (e->row_cache == 1) {
		/* dry pass: every row read, how often and whether a team loop
		 * reads it whole (group_kernel keeps what is worth caching) */
		if (k == e->nrc && k < CG_ROW_CACHE_MAX && len > 0) {
			memset(&e->rc[k], 0, sizeof(e->rc[k]));
			e->rc[k].leaf = id;
			e->rc[k].dtype = n->dtype;
			e->rc[k].outer = outer;
			e->rc[k].len = len;
			e->nrc++;
		}
		if (k < e->nrc && e->rc[k].len == len) {
			e->rc[k].uses++;
			e->rc[k].team_read |= coopv >= 0;
		}
		return 0;
	}
	if (k == e->nrc || e->rc[k].len != len)
		return 0;
	if (e->row_regs)
		return row_in_regs(e, at, id, k, coopv, vec, out);
	if (!e->rc[k].filled) {
		int w = e->vec, vw = 1;
		/* 8- or 16-byte copies in the kernel whose buffers the host
		 * checked for that alignment (KB_VEC > 1), when every row
		 * starts at a multiple of the width */
		if (w > 1 && len % w == 0 && (cg_dtype_size(n->dtype) * w == 8 ||
		    cg_dtype_size(n->dtype) * w == 16) && outer.k % w == 0) {
			vw = w;
			for (int v = 0; v < e->nvars; v++)
				if (outer.c[v] % w)
					vw = 1;
		}
		cgx_aff_print(e, &outer, &b);
		cg_line(e, e->rc_scope, "#pragma unroll 4");
		cg_line(e, e->rc_scope, "for (int64_t kb_c = kb_lane; kb_c < %" PRId64 "; kb_c += kb_team)",
		    len / vw);
		if (vw > 1)
			cg_line(e, e->rc_scope, "\t*reinterpret_cast<kb_vec_t<%s, %d> *>(kb_row%d + %d * kb_c) = "
			    "*reinterpret_cast<const kb_vec_t<%s, %d> *>(%s + %s + %d * kb_c);", cg_ctype(n->dtype),
			    vw, k, vw, cg_ctype(n->dtype), vw, e->bufname[id], buf_cstr(&b), vw);
		else
			cg_line(e, e->rc_scope, "\tkb_row%d[kb_c] = %s[%s + kb_c];", k, e->bufname[id], buf_cstr(&b));
		buf_reset(&b);
		e->rc[k].filled = 1;
	}
	if (coopv >= 0) {
		buf_printf(&b, "kb_row%d[%s]", k, e->var[coopv].name);
		cgx_temp(e, at, n->dtype, 0, buf_cstr(&b), out);
	} else if (vec) {
		/* lane 0's index is a multiple of KB_VEC (the vector variable
		 * steps by it, the other strides are multiples of the last
		 * dim), and rows start 16-byte aligned */
		cgx_aff_print(e, &inner, &b);
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "t%d", e->ntemps++);
		out->scope = at;
		out->vec = 1;
		out->dtype = n->dtype;
		cg_line(e, at, "%s %s[KB_VEC]; kb_load_vec(%s, kb_row%d + %s);", cg_ctype(n->dtype),
		    out->name, out->name, k, buf_cstr(&b));
	} else {
		buf_printf(&b, "kb_row%d[", k);
		cgx_aff_print(e, &inner, &b);
		buf_addstr(&b, "]");
		cgx_temp(e, at, n->dtype, 0, buf_cstr(&b), out);
	}
	buf_free(&b);
	e->used[id] = 1;
	return 1;
}

/* Load node id (materialized, contiguous) at the offset row. */
int
cgx_load(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_aff *off, struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id];
	struct cg_scope *at = cgx_deeper(cgx_aff_scope(e, off, NULL), cgx_guard_floor(s));
	struct buf b = BUF_INIT(EXPR_MAX);
	int vec = cgx_aff_vec(e, off);

	if (!at)
		at = cgx_outermost(s);
	if (e->backend == CG_CUDA && row_cached(e, at, id, off, out)) {
		buf_free(&b);
		return e->error;
	}
	if (vec && off->c[e->vec_var] == 1 && e->backend == CG_CUDA && aligned(e, off)) {
		/* contiguous across lanes and lane 0 aligned: one vector load */
		buf_printf(&b, "%s + ", e->bufname[id]);
		cgx_aff_print(e, off, &b);
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "t%d", e->ntemps++);
		out->scope = at;
		out->vec = 1;
		out->dtype = n->dtype;
		cg_line(e, at, "%s %s[KB_VEC]; kb_load_vec(%s, %s);", cg_ctype(n->dtype), out->name,
		    out->name, buf_cstr(&b));
		buf_free(&b);
		e->used[id] = 1;
		return 0;
	}
	e->used[id] = 1;
	buf_printf(&b, "%s[", e->bufname[id]);
	if (vec) {
		/* lanes as kb_j inside the lane loop */
		struct cg_aff base = *off;
		int64_t c = base.c[e->vec_var];
		base.c[e->vec_var] = 0;
		cgx_aff_print(e, &base, &b);
		buf_printf(&b, " + %" PRId64 " * (%s + kb_j)]", c, e->var[e->vec_var].name);
	} else {
		cgx_aff_print(e, off, &b);
		buf_addstr(&b, "]");
	}
	cgx_temp(e, at, n->dtype, vec, buf_cstr(&b), out);
	buf_free(&b);
	return e->error;
}
