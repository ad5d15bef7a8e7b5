/*
 * compile: candidate sources to shared objects, in the sandbox (compiler
 * profile), in parallel, through a content-addressed cache.
 *
 *   CUDA: nvcc -O3 -arch=ARCH --shared -Xcompiler -fPIC -lcublas -lcublasLt
 *         (-lcudnn where cuDNN is installed), -Xlinker -rpath=CUDA/lib64
 *   CPU:  cc -O3 -march=native -fopenmp -fno-math-errno -shared -fPIC -lm
 *         (never -ffast-math: NaN and Inf must keep their meaning)
 *
 * The cache key is the sha256 of the source bytes, the flags, the
 * toolchain's identity (the compiler's version output; for the CPU also
 * what -march=native resolves to on this host) and the architecture. A
 * build happens in a scratch directory under the cache and is renamed
 * into place, so concurrent builds of one key are safe; a hit returns
 * without spawning anything.
 */
#ifndef KB_GPU_COMPILE_H
#define KB_GPU_COMPILE_H

#include <stddef.h>

enum compile_backend { COMPILE_CUDA, COMPILE_CPU };

struct compile_req {
	const char *source_path;
	enum compile_backend backend;
	const char *arch;		/* "sm_90"; NULL on CPU */
	int timeout_s;			/* 0 = COMPILE_DEFAULT_TIMEOUT_S */
};

struct compile_result {
	int status;			/* 0 ok, -errno could not run, >0 the compiler failed (its exit status) */
	char *so_path;			/* malloc'ed, inside the cache; NULL unless status is 0 */
	char *log;			/* capped compiler output, malloc'ed, for error feedback; never NULL after compile_batch */
	double seconds;
	int cached;
	char key[65];
};

#define COMPILE_DEFAULT_TIMEOUT_S 120
#define COMPILE_SOURCE_MAX	(4u << 20)	/* a candidate source larger than this is refused */
#define COMPILE_LOG_MAX		(64u << 10)	/* compiler output kept per build */
#define COMPILE_MEM_BYTES	((size_t)8 << 30)	/* memory limit of one build */
#define COMPILE_JOBS_MAX	256

/*
 * Compile n requests in parallel (at most jobs at once; 0 = online CPUs)
 * through the sandbox (compiler profile), caching under cache_dir (created
 * if missing). 0 when all were attempted (see each status: -ENOENT for a
 * missing source or compiler, -EFBIG past COMPILE_SOURCE_MAX, -EINVAL for
 * a bad arch, -ENOTSUP when the sandbox cannot be set up here, with the
 * reason in log), -errno on setup failure (results then untouched). Free
 * each result with compile_result_free().
 *
 * With where()->sandbox_allow_degraded (KERNELBOT_SANDBOX_ALLOW_DEGRADED=1)
 * a build runs where the sandbox lacks a host feature (its log says which).
 */
int compile_batch(const char *cache_dir, const struct compile_req *reqs,
    size_t n, int jobs, struct compile_result *results);

void compile_result_free(struct compile_result *r);

/*
 * The default cache directory: where()->cache (the CLI's: $KERNELBOT_CACHE,
 * else $XDG_CACHE_HOME/kernelbot, else $HOME/.cache/kernelbot), else
 * .cache/kernelbot in the home of the user this runs as.
 */
int compile_default_cache_dir(char **out);

/*
 * The compiler's argv for one build of src into out, with exactly the
 * flags compile_batch uses (above), for builds outside it (the
 * evaluator's unsandboxed developer mode). arch: "sm_90" on CUDA, NULL on
 * the CPU; arch_buf holds the -arch flag. 0, or -errno with why in err
 * when the toolchain is unusable.
 */
int compile_argv(enum compile_backend b, const char *arch, const char *src, const char *out,
    const char **argv, size_t max, char *arch_buf, size_t arch_len, char *err, size_t errlen);

#endif
