#include "gpu/eval_build.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/spawn.h"

#include "gpu/compile.h"

#define EVAL_BUILD_MAX_JOBS 64

void
eval_build_free(struct eval_build *b)
{
	free(b->so_path);
	free(b->log);
	b->so_path = b->log = NULL;
}

static int
build_sandboxed(struct eval_build *b, size_t n, const char *arch, int jobs,
    char *err, size_t errlen)
{
	struct compile_req *reqs = calloc(n, sizeof(*reqs));
	struct compile_result *res = calloc(n, sizeof(*res));
	char *cache = NULL;
	int error;

	if (!reqs || !res) {
		error = -ENOMEM;
		goto out;
	}
	if ((error = compile_default_cache_dir(&cache)) < 0) {
		snprintf(err, errlen, "no compile cache directory: %s", strerror(-error));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		reqs[i].source_path = b[i].source;
		reqs[i].backend = b[i].cuda ? COMPILE_CUDA : COMPILE_CPU;
		reqs[i].arch = arch;
		reqs[i].timeout_s = b[i].timeout_s > 0 ? b[i].timeout_s : EVAL_BUILD_TIMEOUT_S;
	}
	if ((error = compile_batch(cache, reqs, n, jobs, res)) < 0) {
		snprintf(err, errlen, "compile_batch: %s", strerror(-error));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		b[i].status = res[i].status;
		b[i].so_path = res[i].so_path ? strdup(res[i].so_path) : NULL;
		b[i].log = strdup(res[i].log ? res[i].log : "");
		b[i].seconds = res[i].seconds;
		b[i].cached = res[i].cached;
		compile_result_free(&res[i]);
	}
out:
	free(cache);
	free(reqs);
	free(res);
	return error;
}

/* --- Developer mode: unsandboxed compiles (KERNELBOT_EVAL_UNSANDBOXED=1) - */

struct pool {
	struct eval_build *b;
	size_t n;
	atomic_size_t next;
	const char *arch, *workdir;
};

static void
build_one(struct pool *p, size_t i)
{
	struct eval_build *b = &p->b[i];
	const char *envp[] = { "PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin",
		"LANG=C", NULL, NULL };
	const char *argv[24];
	char so[4096], tmp[4200], archflag[64], err[256];
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	struct buf log = BUF_INIT(EVAL_BUILD_LOG_MAX);
	int error;

	snprintf(so, sizeof(so), "%s/build%zu.so", p->workdir, i);
	snprintf(tmp, sizeof(tmp), "TMPDIR=%s", p->workdir);
	envp[2] = tmp;
	/* The sandboxed build's compiler and flags (gpu/compile.h), so figures compare. */
	if (b->cuda && !p->arch) {
		b->status = -EINVAL;
		b->log = strdup("no CUDA architecture to build for");
		return;
	}
	if ((error = compile_argv(b->cuda ? COMPILE_CUDA : COMPILE_CPU, b->cuda ? p->arch : NULL,
	    b->source, so, argv, sizeof(argv) / sizeof(argv[0]), archflag, sizeof(archflag),
	    err, sizeof(err))) < 0) {
		b->status = error;
		b->log = strdup(err);
		return;
	}
	o.argv = argv;
	o.envp = envp;
	o.search_path = 1;
	o.timeout_ms = (b->timeout_s > 0 ? b->timeout_s : EVAL_BUILD_TIMEOUT_S) * 1000;
	o.out_max = o.err_max = EVAL_BUILD_LOG_MAX;
	if ((error = spawn_run(&o, &r)) < 0) {
		b->status = error;
		buf_printf(&log, "cannot run %s: %s", argv[0], strerror(-error));
	} else {
		b->status = r.timed_out ? 124 : r.status;
		buf_add_capped(&log, buf_cstr(&r.err), r.err.len);
		buf_add_capped(&log, buf_cstr(&r.out), r.out.len);
		if (r.timed_out)
			buf_printf(&log, "\nkernelbot: the compiler timed out after %d s and was killed",
			    (int)(o.timeout_ms / 1000));
		b->seconds = r.wall_s;
		if (b->status == 0)
			b->so_path = strdup(so);
	}
	b->log = buf_detach(&log, NULL);
	spawn_result_free(&r);
}

static void *
pool_thread(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		build_one(p, i);
	return NULL;
}

int
eval_build_all(struct eval_build *b, size_t n, const char *arch, const char *workdir,
    int jobs, int unsandboxed, char *err, size_t errlen)
{
	pthread_t th[EVAL_BUILD_MAX_JOBS];
	struct pool p = { b, n, 0, arch, workdir };
	int started = 0;

	if (n == 0)
		return 0;
	if (!unsandboxed)
		return build_sandboxed(b, n, arch, jobs, err, errlen);
	if (jobs < 1)
		jobs = 1;
	if (jobs > EVAL_BUILD_MAX_JOBS)
		jobs = EVAL_BUILD_MAX_JOBS;
	if ((size_t)jobs > n)
		jobs = (int)n;
	for (int i = 0; i < jobs; i++)
		if (pthread_create(&th[started], NULL, pool_thread, &p) == 0)
			started++;
	if (started == 0)
		pool_thread(&p);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return 0;
}
