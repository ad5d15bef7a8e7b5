/*
 * group: the loop space of one materialized node (plan.c). Internal to
 * pipeline/compiler/.
 *
 * A group iterates over its root's elements, refined where the fused
 * expression reshapes (group norm reads [N, C] as [N, G, C/G]), so that
 * every index stays affine and statistics hoist to the right loop.
 */
#ifndef KB_PIPELINE_COMPILER_GROUP_H
#define KB_PIPELINE_COMPILER_GROUP_H

#include "pipeline/compiler/cg.h"

/* The iteration shape (rank *q) for the group rooted at root. */
void cg_group_shape(const struct cg *g, int root, int *q, int64_t *shape);

/* The root's map over the iteration variables vars[0..q). */
void cg_group_root_map(const struct cg *g, int root, int q, const int64_t *shape,
    const int *vars, struct cg_map *m);

#endif
