/*
 * compiler: the graph compiler, graph IR -> one kernel source in the
 * kernel ABI (docs/design.md), for the CPU (C with OpenMP) or CUDA
 * backend, shaped by a schedule (schedule.h).
 *
 * Coverage is the canonical ops of docs/graph-ir.md that have a kernel
 * meaning; anything else is refused with "unsupported: OP (why)", never
 * compiled to something that might be wrong. Generated kernels check the
 * shapes they were built for and return 2 for others; an IR with
 * variant_graphs gets a version per distinct input-shape set, dispatched
 * on the shapes at entry.
 */
#ifndef KB_PIPELINE_COMPILER_COMPILER_H
#define KB_PIPELINE_COMPILER_COMPILER_H

#include <stddef.h>

#include "pipeline/compiler/ir.h"
#include "pipeline/compiler/schedule.h"

#define COMPILER_MAX_SOURCE	(8u << 20)	/* generated source cap */

/*
 * Generate the kernel source for ir on backend (the schedule's backend
 * field is ignored in favour of it). 0 and *source (NUL-terminated, the
 * caller frees), or: -ENOTSUP with "unsupported: OP ..." in err for an op
 * or form the compiler does not handle; -EINVAL for an inconsistent IR;
 * -E2BIG / -ENOBUFS past a limit; -ENOMEM.
 */
int compiler_emit(const struct ir_graph *ir, const struct schedule *s,
    enum schedule_backend backend, char **source, char *err, size_t errlen);

/* "kernel.c" or "kernel.cu". */
const char *compiler_source_name(enum schedule_backend backend);

#endif
