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

int
compiler_emit(const struct ir_graph *ir, const struct schedule *s,
    enum schedule_backend backend, char **source, char *err, size_t errlen)
{
	struct buf out = BUF_INIT(COMPILER_MAX_SOURCE);
	struct schedule sc = *s;
	struct cg *g = NULL;
	int error;

	err[0] = '\0';
	sc.backend = backend;
	if ((error = cg_lower(ir, &sc, &g, err, errlen)) < 0)
		goto out;
	cg_plan(g, &sc);
	if (backend == SCHED_CUDA)
		error = emit_cuda(g, &sc, &out, err, errlen);
	else
		error = emit_cpu(g, &sc, &out, err, errlen);
	if (error < 0)
		goto out;
	*source = buf_detach(&out, NULL);
out:
	buf_free(&out);
	cg_free(g);
	return error;
}
