/*
 * The expression emitter: the value of a node at a map (an affine index
 * over the kernel's loop variables) as C statements, shared by the CPU and
 * CUDA backends.
 *
 * Everything not materialized is recomputed inline: pointwise ops become
 * one statement each, views compose into the map, reductions become loops.
 * Each statement is placed in the outermost open scope where all it reads
 * is defined, which hoists loop-invariant work (a row's max, a channel's
 * scale) out of inner loops; a memo per scope computes each (node, map)
 * once. This one rule is the fusion: a pointwise chain becomes one loop
 * body, a softmax a row loop with its reductions hoisted, a norm's
 * statistics live in registers next to the loop that uses them.
 */
#include "pipeline/compiler/expr.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct cg_memo {
	int id;
	struct cg_map m;
	struct cg_val v;
};

int
cg_dtype_size(enum ir_dtype dt)
{
	switch (dt) {
	case IR_F64: case IR_I64: return 8;
	case IR_F32: case IR_I32: return 4;
	case IR_F16: case IR_BF16: case IR_I16: return 2;
	default: return 1;
	}
}

const char *
cg_ctype(enum ir_dtype dt)
{
	switch (dt) {
	case IR_F32: return "float";
	case IR_F64: return "double";
	case IR_I64: return "int64_t";
	case IR_I32: return "int32_t";
	case IR_I16: return "int16_t";
	case IR_I8: return "int8_t";
	case IR_U8: return "uint8_t";
	case IR_BOOL: return "uint8_t";
	default: return NULL;
	}
}

int
cg_fail(struct cg_emit *e, int error, const char *fmt, ...)
{
	va_list ap;

	if (e->error)
		return e->error;
	va_start(ap, fmt);
	vsnprintf(e->err, sizeof(e->err), fmt, ap);
	va_end(ap);
	e->error = error;
	return error;
}

void
cg_emit_init(struct cg_emit *e, const struct cg *g, const struct schedule *s,
    enum cg_backend_kind backend, const char **bufname)
{
	memset(e, 0, sizeof(*e));
	e->g = g;
	e->sched = s;
	e->backend = backend;
	e->bufname = bufname;
	e->vec_var = -1;
	e->vec = 1;
	e->root = -1;
	e->cut = -1;
	e->recompute = -1;
	e->lse_local = -1;
	e->used = calloc((size_t)(g->n > 0 ? g->n : 1), 1);
	if (!e->used)
		cg_fail(e, -ENOMEM, "out of memory");
}

static void
scope_free(struct cg_scope *s)
{
	buf_free(&s->head);
	buf_free(&s->body);
	free(s->memo);
	free(s);
}

void
cg_emit_fini(struct cg_emit *e)
{
	struct cg_scope *s, *next;

	for (s = e->all; s; s = next) {
		next = s->next_all;
		scope_free(s);
	}
	e->all = NULL;
	free(e->used);
	e->used = NULL;
}

void
cg_emit_reset_vars(struct cg_emit *e)
{
	e->nvars = 0;
	e->vec_var = -1;
	e->row_cache = 0;
	e->rc_scope = NULL;
	e->row_len = 0;
	e->row_nvars = 0;
	e->row_regs = 0;
	e->vec_red = 0;
	e->rr_team = 0;
	e->team = 0;
	e->rr_len = 0;
	e->rr_inner[0] = '\0';
	e->lse_ok = 0;
}

struct cg_scope *
cg_scope_new(struct cg_emit *e, struct cg_scope *parent)
{
	struct cg_scope *s = calloc(1, sizeof(*s));

	if (!s) {
		cg_fail(e, -ENOMEM, "out of memory");
		return NULL;
	}
	s->head = (struct buf)BUF_INIT(BUF_MAX_DEFAULT);
	s->body = (struct buf)BUF_INIT(BUF_MAX_DEFAULT);
	s->parent = parent;
	if (parent) {
		s->depth = parent->depth + 1;
		s->uniform = parent->uniform;
		s->in_simd = parent->in_simd;
		s->par = parent->par;
		s->level = parent->level;
	}
	s->next_all = e->all;
	e->all = s;
	return s;
}

static void
indent(struct buf *b, int depth)
{
	for (int i = 0; i < depth; i++)
		buf_addch(b, '\t');
}

void
cg_line(struct cg_emit *e, struct cg_scope *s, const char *fmt, ...)
{
	va_list ap;
	int error;

	indent(&s->body, s->depth);
	va_start(ap, fmt);
	error = buf_vprintf(&s->body, fmt, ap);
	va_end(ap);
	if (error < 0 || buf_addch(&s->body, '\n') < 0)
		cg_fail(e, -ENOMEM, "generated code too large");
}

int
cg_scope_close(struct cg_emit *e, struct cg_scope *s)
{
	struct buf *pb = &s->parent->body;
	const char *h = buf_cstr(&s->head);

	/* head lines are written unindented; indent each at the parent's depth */
	while (*h) {
		const char *nl = strchr(h, '\n');
		size_t n = nl ? (size_t)(nl - h) : strlen(h);
		indent(pb, s->parent->depth);
		buf_add(pb, h, n);
		buf_addch(pb, '\n');
		h += n + (nl ? 1 : 0);
	}
	indent(pb, s->parent->depth);
	buf_addstr(pb, "{\n");
	buf_add(pb, s->body.data ? s->body.data : "", s->body.len);
	indent(pb, s->parent->depth);
	if (buf_addstr(pb, "}\n") < 0)
		return cg_fail(e, -ENOMEM, "generated code too large");
	return 0;
}

int
cg_var_new(struct cg_emit *e, struct cg_scope *s, const char *prefix)
{
	int v;

	if (e->nvars >= CG_NV) {
		if (!e->error)
			e->over_vars = 1;
		cg_fail(e, -E2BIG, "unsupported: a kernel needs more than %d index variables", CG_NV);
		return -1;
	}
	v = e->nvars++;
	snprintf(e->var[v].name, sizeof(e->var[v].name), "%s%d", prefix, v);
	e->var[v].scope = s;
	e->var[v].vec = 0;
	e->var[v].extent = 0;
	e->var[v].iter = 1;
	e->var[v].coop = 0;
	e->var[v].rowstride = 0;
	e->var[v].ridx[0] = '\0';
	return v;
}

void
cg_map_identity(struct cg_map *m, int rank, const int *vars)
{
	memset(m, 0, sizeof(*m));
	m->rank = rank;
	for (int d = 0; d < rank; d++)
		m->r[d].c[vars[d]] = 1;
}

void
cgx_aff_print(const struct cg_emit *e, const struct cg_aff *a, struct buf *b)
{
	int first = 1;

	for (int v = 0; v < e->nvars; v++) {
		if (!a->c[v])
			continue;
		if (a->c[v] == 1)
			buf_printf(b, "%s%s", first ? "" : " + ", e->var[v].name);
		else if (a->c[v] == -1)
			buf_printf(b, "%s%s", first ? "-" : " - ", e->var[v].name);
		else if (a->c[v] < 0)
			buf_printf(b, "%s%" PRId64 " * %s", first ? "-" : " - ", -a->c[v], e->var[v].name);
		else
			buf_printf(b, "%s%" PRId64 " * %s", first ? "" : " + ", a->c[v], e->var[v].name);
		first = 0;
	}
	if (first)
		buf_printf(b, "%" PRId64, a->k);
	else if (a->k > 0)
		buf_printf(b, " + %" PRId64, a->k);
	else if (a->k < 0)
		buf_printf(b, " - %" PRId64, -a->k);
}

void
cg_map_offset(const struct cg_map *m, int rank, const int64_t *shape, struct cg_aff *out)
{
	int64_t stride = 1;

	memset(out, 0, sizeof(*out));
	for (int d = rank - 1; d >= 0; d--) {
		if (shape[d] != 1) {
			for (int v = 0; v < CG_NV; v++)
				out->c[v] += m->r[d].c[v] * stride;
			out->k += m->r[d].k * stride;
		}
		stride *= shape[d];
	}
}

/* The deepest scope among the variables a row reads (NULL: none). */
struct cg_scope *
cgx_aff_scope(const struct cg_emit *e, const struct cg_aff *a, struct cg_scope *deepest)
{
	for (int v = 0; v < e->nvars; v++)
		if (a->c[v] && (!deepest || e->var[v].scope->depth > deepest->depth))
			deepest = e->var[v].scope;
	return deepest;
}

int
cgx_aff_vec(const struct cg_emit *e, const struct cg_aff *a)
{
	return e->vec_var >= 0 && a->c[e->vec_var] != 0;
}

struct cg_scope *
cgx_deeper(struct cg_scope *a, struct cg_scope *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a->depth >= b->depth ? a : b;
}

/* Loads may not move above a guard (the enclosing bounds check). */
struct cg_scope *
cgx_guard_floor(struct cg_scope *s)
{
	for (; s; s = s->parent)
		if (s->guard)
			return s;
	return NULL;
}

struct cg_scope *
cgx_outermost(struct cg_scope *s)
{
	while (s->parent && s->parent->parent)
		s = s->parent;
	return s;
}

static int
memo_find(struct cg_scope *s, int id, const struct cg_map *m, struct cg_val *out)
{
	for (; s; s = s->parent)
		for (int i = 0; i < s->nmemo; i++)
			if (s->memo[i].id == id && !memcmp(&s->memo[i].m, m, sizeof(*m))) {
				*out = s->memo[i].v;
				return 1;
			}
	return 0;
}

void
cgx_memo_add(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    const struct cg_val *v)
{
	if (s->nmemo == s->capmemo) {
		int cap = s->capmemo ? 2 * s->capmemo : 16;
		struct cg_memo *nm = realloc(s->memo, sizeof(*nm) * (size_t)cap);
		if (!nm) {
			cg_fail(e, -ENOMEM, "out of memory");
			return;
		}
		s->memo = nm;
		s->capmemo = cap;
	}
	s->memo[s->nmemo].id = id;
	s->memo[s->nmemo].m = *m;
	s->memo[s->nmemo].v = *v;
	s->nmemo++;
}

/* A fresh temp declared in scope s: "T tN = expr;" (vector lanes on CUDA). */
void
cgx_temp(struct cg_emit *e, struct cg_scope *s, enum ir_dtype dt, int vec, const char *expr,
    struct cg_val *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "t%d", e->ntemps++);
	out->scope = s;
	out->vec = vec;
	out->dtype = dt;
	if (vec)
		cg_line(e, s, "%s %s[KB_VEC]; KB_LANES %s[kb_j] = %s;", cg_ctype(dt), out->name,
		    out->name, expr);
	else
		cg_line(e, s, "%s %s = %s;", cg_ctype(dt), out->name, expr);
}

/* An integer index variable defined by expr in scope s. */
int
cgx_index_var(struct cg_emit *e, struct cg_scope *s, const char *expr)
{
	int v = cg_var_new(e, s, "x");

	if (v < 0)
		return -1;
	e->var[v].iter = 0;
	cg_line(e, s, "int64_t %s = %s;", e->var[v].name, expr);
	return v;
}

void
cgx_literal(double x, enum ir_dtype dt, char *dst, size_t len)
{
	if (ir_dtype_is_float(dt)) {
		const char *suf = dt == IR_F32 ? "f" : "";
		if (isnan(x))
			snprintf(dst, len, "%s", dt == IR_F32 ? "NAN" : "(double)NAN");
		else if (isinf(x))
			snprintf(dst, len, "%s%s", x < 0 ? "-" : "", dt == IR_F32 ? "INFINITY" : "(double)INFINITY");
		else if (dt == IR_F32)
			snprintf(dst, len, "%.9gf", (double)(float)x);
		else
			snprintf(dst, len, "%.17g", x);
		/* "1f" is not C: make sure a float literal has a point or exponent */
		if (!isnan(x) && !isinf(x) && !strpbrk(dst, ".e")) {
			size_t n = strlen(dst) - strlen(suf);
			snprintf(dst + n, len - n, ".0%s", suf);
		}
	} else if (dt == IR_BOOL) {
		snprintf(dst, len, "%d", x != 0);
	} else {
		snprintf(dst, len, "INT64_C(%lld)", (long long)x);
	}
}

/* Operand text in the compute type ct, lane-indexed when vector. */
const char *
cgx_opnd(const struct cg_val *v, enum ir_dtype ct, int vec, char *dst, size_t len)
{
	const char *lane = vec && v->vec ? "[kb_j]" : "";

	if (v->dtype == ct || !cg_ctype(ct))
		snprintf(dst, len, "%s%s", v->name, lane);
	else if (ct == IR_BOOL)
		snprintf(dst, len, "(%s%s != 0)", v->name, lane);
	else
		snprintf(dst, len, "(%s)%s%s", cg_ctype(ct), v->name, lane);
	return dst;
}

enum ir_dtype
cg_promote(enum ir_dtype a, enum ir_dtype b)
{
	static const int rank[] = { [IR_DT_NONE] = -1, [IR_BOOL] = 0, [IR_U8] = 1, [IR_I8] = 1,
		[IR_I16] = 2, [IR_I32] = 3, [IR_I64] = 4, [IR_F16] = 5, [IR_BF16] = 5, [IR_F32] = 6,
		[IR_F64] = 7 };
	return rank[a] >= rank[b] ? a : b;
}

/* The arg's map when read by an elementwise node of rank r at m (broadcast). */
void
cgx_bcast_map(const struct cg_node *a, const struct cg_map *m, struct cg_map *out)
{
	int lead = m->rank - a->rank;

	memset(out, 0, sizeof(*out));
	out->rank = a->rank;
	for (int d = 0; d < a->rank; d++)
		if (a->shape[d] != 1)
			out->r[d] = m->r[lead + d];
}

void
cgx_aff_axpy(struct cg_aff *dst, int64_t c, const struct cg_aff *src)
{
	for (int v = 0; v < CG_NV; v++)
		dst->c[v] += c * src->c[v];
	dst->k += c * src->k;
}


/* The map of view n's operand, read where n is read at m. */
static void
view_map(const struct cg_emit *e, const struct cg_node *n, const struct cg_map *m, struct cg_map *am)
{
	const struct cg_node *an = &e->g->nodes[n->arg[0]];

	memset(am, 0, sizeof(*am));
	am->rank = an->rank;
	for (int d = 0; d < an->rank; d++) {
		am->r[d].k = n->vmap->k[d];
		for (int j = 0; j < n->rank; j++)
			if (n->vmap->c[d][j])
				cgx_aff_axpy(&am->r[d], n->vmap->c[d][j], &m->r[j]);
	}
}

/* A pointwise node's operands. */
static int
pw_nargs(const struct cg_node *n)
{
	return n->op == CG_WHERE ? 3 : n->arg[1] >= 0 ? 2 : 1;
}

/* A node the current kernel reads from memory rather than computes. */
static int
is_leaf(const struct cg_emit *e, int id)
{
	const struct cg_node *n = &e->g->nodes[id];

	return n->op == CG_INPUT || n->op == CG_CONST || (e->bufname[id] && n->materialize && id != e->root);
}

enum { MK_WRITTEN = 1, MK_CLEAN = 2, MK_WALKED = 4 };	/* input_reductions' marks */

/* 1 when computing node id reads a buffer another kernel writes (a
 * leaf that is not a graph input or a constant). */
static int
reads_written(const struct cg_emit *e, int id, unsigned char *mark)
{
	const struct cg_node *n = &e->g->nodes[id];
	int r = 0;

	if (mark[id] & (MK_WRITTEN | MK_CLEAN))
		return !!(mark[id] & MK_WRITTEN);
	if (is_leaf(e, id))
		r = n->op != CG_INPUT && n->op != CG_CONST;
	else
		for (int i = 0; i < 3 && !r; i++)
			r = n->arg[i] >= 0 && reads_written(e, n->arg[i], mark);
	mark[id] |= r ? MK_WRITTEN : MK_CLEAN;
	return r;
}

static int
input_reductions(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    unsigned char *mark)
{
	const struct cg_node *n = &e->g->nodes[id];
	struct cg_map am;
	struct cg_val v;
	int error, got = 0;

	/* once a node: a node met again at another map is left to cg_ev */
	if (is_leaf(e, id) || (mark[id] & MK_WALKED))
		return 0;
	mark[id] |= MK_WALKED;
	if (cg_is_reduction(n->op)) {
		if (reads_written(e, id, mark))
			return 0;
		return (error = cg_ev(e, s, id, m, &v)) < 0 ? error : 1;
	}
	if (n->op == CG_VIEW) {
		view_map(e, n, m, &am);
		return input_reductions(e, s, n->arg[0], &am, mark);
	}
	if (!cg_is_pointwise(n->op))
		return 0;
	for (int i = 0; i < pw_nargs(n); i++) {
		cgx_bcast_map(&e->g->nodes[n->arg[i]], m, &am);
		if ((error = input_reductions(e, s, n->arg[i], &am, mark)) < 0)
			return error;
		got += error;
	}
	return got;
}

int
cg_ev_input_reductions(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m)
{
	unsigned char *mark = calloc((size_t)(e->g->n > 0 ? e->g->n : 1), 1);
	int r;

	if (!mark)
		return cg_fail(e, -ENOMEM, "out of memory");
	r = input_reductions(e, s, id, m, mark);
	free(mark);
	return r;
}

int
cg_ev(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m, struct cg_val *out)
{
	const struct cg_node *n = &e->g->nodes[id];
	struct cg_val a[3];
	struct cg_map am;
	int error;

	if (e->error)
		return e->error;
	if (n->op == CG_CONST) {
		memset(out, 0, sizeof(*out));
		cgx_literal(n->f[0], n->dtype, out->name, sizeof(out->name));
		out->dtype = n->dtype;
		return 0;
	}
	if (memo_find(s, id, m, out))
		return 0;
	if (is_leaf(e, id)) {	/* constants returned above */
		struct cg_aff off;
		cg_map_offset(m, n->rank, n->shape, &off);
		error = cgx_load(e, s, id, &off, out);
	} else if (cg_is_pointwise(n->op)) {
		struct cg_scope *at = NULL;
		int vec = 0, na = pw_nargs(n);
		char text[EXPR_MAX];
		for (int i = 0; i < na; i++) {
			cgx_bcast_map(&e->g->nodes[n->arg[i]], m, &am);
			if ((error = cg_ev(e, s, n->arg[i], &am, &a[i])) < 0)
				return error;
			at = cgx_deeper(at, a[i].scope);
			vec |= a[i].vec;
		}
		if (e->backend == CG_CUDA && e->sched->rcp && n->op == CG_DIV &&
		    ir_dtype_is_float(n->dtype) && a[1].scope && !a[1].vec && a[0].scope &&
		    a[0].scope->depth > a[1].scope->depth) {
			/* a divisor fixed for the loop the quotient is in (a
			 * softmax's sum): its reciprocal once, a multiply per
			 * element (1 ulp from the division) */
			struct cg_val r;
			char one[64], x[256], y[256];
			cgx_literal(1, n->dtype, one, sizeof(one));
			snprintf(text, sizeof(text), "%s / %s", one, cgx_opnd(&a[1], n->dtype, 0, y, sizeof(y)));
			cgx_temp(e, a[1].scope, n->dtype, 0, text, &r);
			snprintf(text, sizeof(text), "%s * %s", cgx_opnd(&a[0], n->dtype, vec, x, sizeof(x)), r.name);
		} else if ((error = cgx_pw_text(e, n, a, na, vec, text, sizeof(text))) < 0) {
			return error;
		}
		cgx_temp(e, at ? at : cgx_outermost(s), n->dtype, vec, text, out);
		error = e->error;
	} else if (n->op == CG_VIEW) {
		view_map(e, n, m, &am);
		return cg_ev(e, s, n->arg[0], &am, out);	/* no memo: the arg's own */
	} else {
		error = cgx_special(e, s, id, m, out);
	}
	if (error < 0)
		return error;
	if (out->scope)
		cgx_memo_add(e, out->scope, id, m, out);
	return e->error;
}
