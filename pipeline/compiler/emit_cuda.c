#include <errno.h>
#include <stdio.h>

#include "pipeline/compiler/emit.h"

const char emit_cuda_prelude[] = "";

int
emit_cuda(struct cg *g, const struct schedule *s, struct buf *out, char *err, size_t errlen)
{
	(void)g;
	(void)s;
	(void)out;
	snprintf(err, errlen, "unsupported: the CUDA backend is not built yet");
	return -ENOTSUP;
}
