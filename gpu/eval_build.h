/*
 * eval_build: compiling the native candidates of one evaluation, through
 * compile_batch() (gpu/compile.h: a content-addressed cache, a sandboxed
 * compiler, parallel builds).
 *
 * Developer mode (KERNELBOT_EVAL_UNSANDBOXED=1, hosts without the
 * sandbox): the compilers run directly through the spawner, in parallel,
 * without a cache; the evaluation then reports a failed "sandbox" check.
 */
#ifndef KB_GPU_EVAL_BUILD_H
#define KB_GPU_EVAL_BUILD_H

#include <stddef.h>

#define EVAL_BUILD_LOG_MAX (64u << 10)
/* A candidate build's deadline when none is given (kernelbot eval --compile-timeout). */
#define EVAL_BUILD_TIMEOUT_S 120

struct eval_build {
	const char *source;	/* in: kernel.c or kernel.cu */
	int cuda;		/* in: nvcc for the CUDA backend, cc for CPU */
	int timeout_s;		/* in: the compiler's deadline; 0 = EVAL_BUILD_TIMEOUT_S */
	int status;		/* out: 0 built, >0 the compiler failed, <0 -errno could not run */
	char *so_path;		/* out: malloc'ed on success */
	char *log;		/* out: malloc'ed compiler output (may be "") */
	double seconds;
	int cached;
};

/*
 * Build every entry of b (outputs filled per entry; free with
 * eval_build_free). arch: "sm_90" for CUDA (NULL on CPU). workdir: where
 * developer-mode builds put their .so files. 0 when each entry has its
 * outcome; -errno (with err) when the batch could not be attempted.
 */
int eval_build_all(struct eval_build *b, size_t n, const char *arch, const char *workdir,
    int jobs, int unsandboxed, char *err, size_t errlen);

void eval_build_free(struct eval_build *b);

#endif
