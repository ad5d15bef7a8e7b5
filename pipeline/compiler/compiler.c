#include "pipeline/compiler/compiler.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "pipeline/compiler/cg.h"
#include "pipeline/compiler/emit.h"

const char *
compiler_source_name(enum schedule_backend backend)
{
	return backend == SCHED_CUDA ? "kernel.cu" : "kernel.c";
}

/*
 * The graphs that get a version: the traced one, then each variant graph
 * whose inputs differ from every one before it. The kernel sees tensors
 * only, so variants that differ in a non-tensor argument fixed at trace
 * time could not be told apart: refused. Count, or -ENOTSUP.
 */
static int
versions(const struct ir_graph *ir, const struct ir_graph **gs, int *from, char *err,
    size_t errlen)
{
	const json_t *spec = json_object_get(ir->json, "specialized");
	int nv = 0;

	from[nv] = -1;
	gs[nv++] = ir;
	for (int i = 0; i < ir->n_variants && nv < EMIT_MAX_VERSIONS; i++) {
		const struct ir_graph *x = ir->variants[i];
		const json_t *xs = json_object_get(x->json, "specialized");
		int k = 0;

		/* absent and [] are the same: nothing specialized */
		if ((json_array_size(spec) || json_array_size(xs)) && !json_equal(spec, xs)) {
			snprintf(err, errlen, "unsupported: shape variant %d gives a non-tensor forward "
			    "argument another value (fixed at trace time; the kernel cannot see it)", i + 1);
			return -ENOTSUP;
		}
		while (k < nv && !ir_same_inputs(gs[k], x))
			k++;
		if (k == nv) {
			from[nv] = i;
			gs[nv++] = x;
		}
	}
	return nv;
}

static int
emit_once(struct emit_version *v, const struct ir_graph *ir, struct emit_src *src,
    enum schedule_backend backend, char *err, size_t errlen)
{
	int error;

	/* lowered under v->s: some choices (bn_fold) change the graph */
	cg_free(v->g);
	v->g = NULL;
	v->over_root = -1;
	v->recompute = -1;
	if ((error = cg_lower(ir, &v->s, &v->g, err, errlen)) < 0)
		return error;
	cg_plan(v->g, &v->s);
	for (int i = 0; i < v->ncuts; i++)
		v->g->nodes[v->cuts[i]].materialize = 1;
	if (backend == SCHED_CUDA)
		return emit_cuda(v, src, err, errlen);
	return emit_cpu(v, src, err, errlen);
}

/*
 * One version. A group whose kernel needs more index variables than a
 * kernel has (a whole network fused into its last op) is cut: one of its
 * nodes is materialized and the version emitted again, until every
 * kernel fits. So is a reduction that a kernel repeats at a cost (the
 * cost model of cg.h, CG_RECOMPUTE_*). Lowering is deterministic, so
 * node numbers hold across the attempts.
 */
static int
emit_one(struct emit_version *v, const struct ir_graph *ir, struct emit_src *src,
    enum schedule_backend backend, char *err, size_t errlen)
{
	size_t kl = src->kern.len, fl = src->fns.len;
	int error, cut;

	v->ncuts = 0;
	for (;;) {
		error = emit_once(v, ir, src, backend, err, errlen);
		if (v->ncuts == EMIT_MAX_CUTS)
			break;
		if (error == 0 && v->recompute >= 0)
			cut = v->recompute;	/* cheaper in memory than repeated */
		else if (error != -E2BIG || v->over_root < 0 ||
		    (cut = cg_plan_cut(v->g, v->over_root)) < 0)
			break;
		buf_truncate(&src->kern, kl);
		buf_truncate(&src->fns, fl);
		err[0] = '\0';
		v->cuts[v->ncuts++] = cut;
	}
	if (error < 0 && v->g && v->over_root >= 0) {
		const struct cg_node *r = &v->g->nodes[v->over_root];
		size_t n = strlen(err);
		snprintf(err + n, errlen - n, " (the kernel of node %s, op %s)", r->name ? r->name : "?",
		    cg_op_name(r->op));
	}
	return error;
}

int
compiler_emit(const struct ir_graph *ir, const struct schedule *s,
    enum schedule_backend backend, char **source, char *err, size_t errlen)
{
	struct buf out = BUF_INIT(COMPILER_MAX_SOURCE);
	struct emit_src src = { BUF_INIT(COMPILER_MAX_SOURCE), BUF_INIT(COMPILER_MAX_SOURCE), 0, 0, 0, 0, 0 };
	const struct ir_graph *gs[EMIT_MAX_VERSIONS];
	struct emit_version v[EMIT_MAX_VERSIONS];
	int nv, error, from[EMIT_MAX_VERSIONS];

	err[0] = '\0';
	memset(v, 0, sizeof(v));
	if ((nv = error = versions(ir, gs, from, err, errlen)) < 0)
		goto out;
	for (int i = 0; i < nv; i++) {
		size_t kl = src.kern.len, fl = src.fns.len;
		struct schedule d;

		v[i].s = *s;
		v[i].s.backend = backend;
		snprintf(v[i].prefix, sizeof(v[i].prefix), nv == 1 ? "kb_" : "kb_v%d_", i);
		snprintf(v[i].fn, sizeof(v[i].fn), nv == 1 ? "kernelbot_forward" : "kb_v%d_forward", i);
		error = emit_one(&v[i], gs[i], &src, backend, err, errlen);
		schedule_default(&d, gs[i], backend);
		if (error < 0 && i > 0 && error != -ENOTSUP && error != -EINVAL && error != -ENOMEM &&
		    schedule_cmp(&v[i].s, &d)) {
			/* the search tunes the schedule on the traced shapes; a
			 * variant past a limit with it gets the default instead */
			buf_truncate(&src.kern, kl);
			buf_truncate(&src.fns, fl);
			err[0] = '\0';
			v[i].s = d;
			v[i].fallback = 1;
			error = emit_one(&v[i], gs[i], &src, backend, err, errlen);
		}
		if (error < 0) {
			if (i > 0) {
				size_t n = strlen(err);
				snprintf(err + n, errlen - n, " (in the version for variant_graphs[%d])", from[i]);
			}
			goto out;
		}
	}
	if ((error = emit_source(v, nv, &src, backend == SCHED_CUDA, &out)) < 0) {
		snprintf(err, errlen, "generated source too large");
		goto out;
	}
	*source = buf_detach(&out, NULL);
out:
	for (int i = 0; i < EMIT_MAX_VERSIONS; i++)
		cg_free(v[i].g);
	buf_free(&src.kern);
	buf_free(&src.fns);
	buf_free(&out);
	return error;
}
