/*
 * expr: internals of the expression emitter shared by expr.c (placement,
 * memo), expr_load.c (loads: global memory, the row cache, registers),
 * expr_ops.c (pointwise text) and expr_red.c (reshapes, padding, gathers,
 * reductions). Internal to pipeline/compiler/.
 */
#ifndef KB_PIPELINE_COMPILER_EXPR_H
#define KB_PIPELINE_COMPILER_EXPR_H

#include "pipeline/compiler/cg.h"

#define EXPR_MAX 1024	/* one statement's text */

void cgx_aff_print(const struct cg_emit *e, const struct cg_aff *a, struct buf *b);
struct cg_scope *cgx_aff_scope(const struct cg_emit *e, const struct cg_aff *a,
    struct cg_scope *deepest);
int cgx_aff_vec(const struct cg_emit *e, const struct cg_aff *a);
void cgx_aff_axpy(struct cg_aff *dst, int64_t c, const struct cg_aff *src);
struct cg_scope *cgx_deeper(struct cg_scope *a, struct cg_scope *b);
struct cg_scope *cgx_guard_floor(struct cg_scope *s);
struct cg_scope *cgx_outermost(struct cg_scope *s);
void cgx_temp(struct cg_emit *e, struct cg_scope *s, enum ir_dtype dt, int vec,
    const char *expr, struct cg_val *out);
int cgx_index_var(struct cg_emit *e, struct cg_scope *s, const char *expr);
void cgx_literal(double x, enum ir_dtype dt, char *dst, size_t len);
const char *cgx_opnd(const struct cg_val *v, enum ir_dtype ct, int vec, char *dst, size_t len);
void cgx_bcast_map(const struct cg_node *a, const struct cg_map *m, struct cg_map *out);
/* Load register row k (e->rc[k], schedule row_regs) into kb_row<k> in
 * the team-uniform scope, once. */
void cgx_row_fill(struct cg_emit *e, int k);
int cgx_load(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_aff *off,
    struct cg_val *out);

/* A variable equal to row a (a itself when it is one variable), with a
 * known extent (0: unknown). -1 after an error. */
int cgx_aff_var(struct cg_emit *e, struct cg_scope *s, const struct cg_aff *a, int64_t extent);
/* Variable x clamped to [0, n). */
int cgx_clamp_var(struct cg_emit *e, struct cg_scope *s, int x, int64_t n);
/* A variable defined by text over variable x, in x's scope. */
int cgx_derived(struct cg_emit *e, struct cg_scope *s, int x, const char *text, int64_t extent);
void cgx_unit(struct cg_aff *a, int v);

/* Node id at map m is v from scope s inward (cg_ev finds it there). */
void cgx_memo_add(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    const struct cg_val *v);

/* Reductions and (CPU) direct convolution: expr_loop.c. */
int cgx_reduce(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out);
int cgx_conv(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out);

/* The C expression of a pointwise node over its evaluated operands. */
int cgx_pw_text(struct cg_emit *e, const struct cg_node *n, const struct cg_val *a, int na,
    int vec, char *text, size_t len);

/* Nodes that are neither loads, pointwise nor views. */
int cgx_special(struct cg_emit *e, struct cg_scope *s, int id, const struct cg_map *m,
    struct cg_val *out);

#endif
