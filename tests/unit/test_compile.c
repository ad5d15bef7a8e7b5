/*
 * compile: real builds in the sandbox (cc always; nvcc compile-only where
 * the toolkit is installed), the cache, parallel batches, failure paths.
 * The CPU kernel built here is loaded and run, so a wrong build fails.
 */
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/spawn.h"
#include "gpu/compile.h"
#include "gpu/sandbox.h"
#include "t.h"

typedef int (*forward_fn)(const DLTensor *, int, DLTensor *, int, void *);

static char root[64], cache[128], fixtures[600];

static int
run_add(const char *so)
{
	float a[5] = { 1, 2, 3, 4, 5 }, b[5] = { 10, 20, 30, 40, 50 }, c[5] = { 0 };
	int64_t shape[1] = { 5 };
	DLTensor in[2], out[1];
	/* NODELETE: libgomp's idle pool threads must not outlive its code. */
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	forward_fn f;
	int ok;

	if (!h) {
		printf("     dlopen: %s\n", dlerror());
		return 0;
	}
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	for (int i = 0; i < 2; i++) {
		in[i].data = i ? b : a;
		in[i].ndim = 1;
		in[i].shape = shape;
		in[i].dtype = (DLDataType){ kDLFloat, 32, 1 };
		in[i].device = (DLDevice){ kDLCPU, 0 };
	}
	out[0] = in[0];
	out[0].data = c;
	f = (forward_fn)(uintptr_t)dlsym(h, "kernelbot_forward");
	ok = f && f(in, 2, out, 1, NULL) == 0 && c[0] == 11 && c[4] == 55;
	dlclose(h);
	return ok;
}

static int
copy_file(const char *from, const char *to)
{
	char cmd[1500];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd);
}

static int
read_floats(const char *path, float *out, int n)
{
	FILE *f = fopen(path, "rb");
	int got;

	if (!f)
		return -1;
	got = (int)fread(out, sizeof(float), (size_t)n, f);
	fclose(f);
	return got;
}

static int
write_floats(const char *path, const float *v, int n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(v, sizeof(float), (size_t)n, f) == (size_t)n;
	fclose(f);
	chmod(path, 0644);
	return ok ? 0 : -1;
}

/* Run the worker helper on a compiled kernel, sandboxed or bare. */
static int
run_worker(const char *so, const char *inputs, const char *outdir, const char *n_out,
    int sandboxed)
{
	const char *b = getenv("KB_BUILD");
	char worker[PATH_MAX + 16], helpers[PATH_MAX], kernels[300];
	const char *argv[] = { worker, so, inputs, outdir, n_out, NULL };
	const char *ro[] = { helpers, kernels, inputs, NULL };
	struct sandbox_opts so_ = SANDBOX_OPTS_INIT;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	int rc;

	snprintf(worker, sizeof(worker), "%s/tests/helpers", b ? b : "build/default");
	if (!realpath(worker, helpers))
		return -1;
	snprintf(worker, sizeof(worker), "%s/sbx_worker", helpers);
	snprintf(kernels, sizeof(kernels), "%s/kernels", cache);
	so_.profile = SANDBOX_CANDIDATE;
	so_.scratch = outdir;
	so_.ro_paths = ro;
	o.argv = argv;
	o.timeout_ms = 20000;
	rc = sandboxed ? sandbox_run(&so_, &o, &r, NULL) : spawn_run(&o, &r);
	if (rc == 0)
		rc = r.status;
	if (rc != 0)
		printf("     worker: status %d: %s\n", rc, buf_cstr(&r.err));
	spawn_result_free(&r);
	return rc;
}

/*
 * The evaluator's chain on the CPU: compile, then a candidate-profile
 * sandbox running a worker that locks itself down before it loads the
 * kernel. A malicious kernel's attempts are recorded by the kernel itself.
 */
static void
chain_test(void)
{
	struct compile_req req[2];
	struct compile_result res[2];
	char add[700], evil[700], inputs[200], out1[200], out2[200], out3[200], path[300];
	float a[8], b[8], c[8], got[8];
	int ok = 1;

	snprintf(add, sizeof(add), "%s/add/kernel.c", fixtures);
	snprintf(evil, sizeof(evil), "%s/evil/kernel.c", fixtures);
	snprintf(inputs, sizeof(inputs), "%s/inputs", root);
	snprintf(out1, sizeof(out1), "%s/out-add", root);
	snprintf(out2, sizeof(out2), "%s/out-evil", root);
	snprintf(out3, sizeof(out3), "%s/out-bare", root);
	mkdir(inputs, 0755);
	mkdir(out1, 0700);
	mkdir(out2, 0700);
	mkdir(out3, 0777);
	for (int i = 0; i < 8; i++)
		a[i] = (float)i, b[i] = 100.0f * (float)i;
	snprintf(path, sizeof(path), "%s/a.bin", inputs);
	write_floats(path, a, 8);
	snprintf(path, sizeof(path), "%s/b.bin", inputs);
	write_floats(path, b, 8);

	req[0] = (struct compile_req){ add, COMPILE_CPU, NULL, 60 };
	req[1] = (struct compile_req){ evil, COMPILE_CPU, NULL, 60 };
	CHECK_INT("chain: compile batch", compile_batch(cache, req, 2, 2, res), 0);
	CHECK("chain: both build", res[0].status == 0 && res[1].status == 0);
	if (res[0].status || res[1].status) {
		printf("     logs: %s / %s\n", res[0].log, res[1].log);
		goto out;
	}

	CHECK_INT("chain: the worker runs the kernel in the sandbox",
	    run_worker(res[0].so_path, inputs, out1, "1", 1), 0);
	snprintf(path, sizeof(path), "%s/out0.bin", out1);
	CHECK_INT("chain: outputs written to scratch", read_floats(path, c, 8), 8);
	for (int i = 0; i < 8; i++)
		ok &= c[i] == a[i] + b[i];
	CHECK("chain: outputs are right", ok);

	CHECK_INT("chain: a malicious kernel still runs", run_worker(res[1].so_path, inputs, out2, "2", 1), 0);
	snprintf(path, sizeof(path), "%s/out1.bin", out2);
	memset(got, 0, sizeof(got));
	CHECK_INT("chain: its record is there", read_floats(path, got, 8), 8);
	CHECK("chain: fork refused", got[0] == 0);
	CHECK("chain: socket refused", got[1] == 0);
	CHECK("chain: /etc/shadow invisible", got[2] == 0);
	CHECK("chain: /root invisible", got[3] == 0);
	if (geteuid() == 0) {
		/* Control: the lockdown alone stops fork and socket, not files. */
		CHECK_INT("chain: control run bare", run_worker(res[1].so_path, inputs, out3, "2", 0), 0);
		snprintf(path, sizeof(path), "%s/out1.bin", out3);
		memset(got, 0, sizeof(got));
		read_floats(path, got, 8);
		CHECK("chain: control: bare, the kernel reads /etc/shadow", got[2] == 1);
	}
out:
	compile_result_free(&res[0]);
	compile_result_free(&res[1]);
}

int
main(void)
{
	struct compile_req req[4];
	struct compile_result res[4];
	char add[700], broken[700], add_copy[700], cu[700], *dir = NULL, cmd[600];
	const char *src_root = getenv("KB_ROOT");

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	snprintf(fixtures, sizeof(fixtures), "%s/tests/fixtures/kernels", src_root ? src_root : ".");
	snprintf(root, sizeof(root), "/tmp/kb-test-compile-XXXXXX");
	if (!mkdtemp(root))
		return 1;
	snprintf(cache, sizeof(cache), "%s/cache", root);
	snprintf(add, sizeof(add), "%s/add/kernel.c", fixtures);
	snprintf(broken, sizeof(broken), "%s/broken/kernel.c", fixtures);
	snprintf(cu, sizeof(cu), "%s/add_cuda/kernel.cu", fixtures);
	snprintf(add_copy, sizeof(add_copy), "%s/elsewhere.c", root);
	copy_file(add, add_copy);

	/* A CPU build: sandboxed, loadable, right. */
	memset(req, 0, sizeof(req));
	req[0] = (struct compile_req){ add, COMPILE_CPU, NULL, 60 };
	CHECK_INT("cpu: batch runs", compile_batch(cache, req, 1, 0, res), 0);
	CHECK_INT("cpu: builds", res[0].status, 0);
	if (res[0].status)
		printf("     log: %s\n", res[0].log);
	CHECK_INT("cpu: not from the cache", res[0].cached, 0);
	CHECK_INT("cpu: a sha256 key", (int)strlen(res[0].key), 64);
	CHECK("cpu: the .so is in the cache", res[0].so_path &&
	    !strncmp(res[0].so_path, cache, strlen(cache)) && access(res[0].so_path, R_OK) == 0);
	CHECK("cpu: the kernel computes a + b", res[0].so_path && run_add(res[0].so_path));
	{
		struct stat st;
		CHECK("cpu: the cached .so belongs to us", res[0].so_path &&
		    stat(res[0].so_path, &st) == 0 && st.st_uid == geteuid());
	}
	compile_result_free(&res[0]);

	/* The same bytes elsewhere: a cache hit, nothing spawned. */
	req[0].source_path = add_copy;
	{
		/* Any process spawned and reaped adds to our children's page faults. */
		struct rusage before, after;
		getrusage(RUSAGE_CHILDREN, &before);
		CHECK_INT("hit: batch runs", compile_batch(cache, req, 1, 0, res), 0);
		getrusage(RUSAGE_CHILDREN, &after);
		CHECK("hit: nothing was spawned", after.ru_minflt == before.ru_minflt &&
		    after.ru_nvcsw == before.ru_nvcsw);
	}
	CHECK_INT("hit: ok", res[0].status, 0);
	CHECK_INT("hit: from the cache", res[0].cached, 1);
	compile_result_free(&res[0]);

	/* A batch in parallel: a failure, a duplicate, a missing file. */
	{
		FILE *f = fopen(add_copy, "a");
		if (f) {
			fputs("/* changed: a new key */\n", f);
			fclose(f);
		}
	}
	req[0] = (struct compile_req){ broken, COMPILE_CPU, NULL, 60 };
	req[1] = (struct compile_req){ add_copy, COMPILE_CPU, NULL, 60 };
	req[2] = (struct compile_req){ add_copy, COMPILE_CPU, NULL, 60 };
	req[3] = (struct compile_req){ "/no/such/kernel.c", COMPILE_CPU, NULL, 60 };
	CHECK_INT("batch: runs", compile_batch(cache, req, 4, 2, res), 0);
	CHECK("batch: the broken kernel fails with the compiler's status", res[0].status > 0);
	CHECK("batch: ... and its error is in the log", res[0].log &&
	    strstr(res[0].log, "undeclared_identifier_in_kernel"));
	CHECK("batch: no .so for a failure", res[0].so_path == NULL);
	CHECK("batch: the log names kernel.c, not the build directory", res[0].log &&
	    strstr(res[0].log, "kernel.c:") && !strstr(res[0].log, "/tmp/build-"));
	CHECK_INT("batch: the changed kernel builds", res[1].status, 0);
	CHECK("batch: a duplicate shares its key", !strcmp(res[1].key, res[2].key));
	CHECK("batch: ... and its .so", res[1].so_path && res[2].so_path &&
	    !strcmp(res[1].so_path, res[2].so_path));
	CHECK_INT("batch: a missing source is -ENOENT", res[3].status, -ENOENT);
	CHECK("batch: ... with a log line", res[3].log && strstr(res[3].log, "/no/such/kernel.c"));
	for (int i = 0; i < 4; i++)
		compile_result_free(&res[i]);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/tmp')\"", cache);
	CHECK_INT("batch: no build directory is left behind", system(cmd), 0);

	/* CUDA: bad arch refused before anything runs; nvcc compile-only where present. */
	req[0] = (struct compile_req){ cu, COMPILE_CUDA, "sm_90; rm -rf /", 60 };
	CHECK_INT("cuda: batch runs", compile_batch(cache, req, 1, 0, res), 0);
	CHECK_INT("cuda: a bad arch is -EINVAL", res[0].status, -EINVAL);
	compile_result_free(&res[0]);
	if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) {
		req[0].arch = "sm_80";
		CHECK_INT("nvcc: batch runs", compile_batch(cache, req, 1, 0, res), 0);
		CHECK_INT("nvcc: compiles in the sandbox", res[0].status, 0);
		if (res[0].status)
			printf("     log: %s\n", res[0].log);
		CHECK("nvcc: the .so is in the cache", res[0].so_path && access(res[0].so_path, R_OK) == 0);
		if (res[0].so_path) {
			char cmd2[1200];
			snprintf(cmd2, sizeof(cmd2), "readelf -d '%s' | grep -q 'RUNPATH.*cuda'", res[0].so_path);
			CHECK_INT("nvcc: the .so finds the CUDA libraries without ld.so.conf", system(cmd2), 0);
		}
		compile_result_free(&res[0]);
	} else {
		printf("nvcc: not installed here, compile-only test skipped\n");
	}

	chain_test();

	CHECK_INT("a relative cache dir is refused", compile_batch("rel/cache", req, 1, 0, res), -EINVAL);

	/* The default cache directory. */
	setenv("KERNELBOT_CACHE", "/srv/kb-cache", 1);
	cli_where_load();
	CHECK_INT("cache dir: from KERNELBOT_CACHE", compile_default_cache_dir(&dir), 0);
	CHECK_STR("cache dir: KERNELBOT_CACHE", dir, "/srv/kb-cache");
	free(dir);
	unsetenv("KERNELBOT_CACHE");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	cli_where_load();
	compile_default_cache_dir(&dir);
	CHECK_STR("cache dir: XDG_CACHE_HOME", dir, "/xdg/kernelbot");
	free(dir);
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/someone", 1);
	cli_where_load();
	compile_default_cache_dir(&dir);
	CHECK_STR("cache dir: ~/.cache", dir, "/home/someone/.cache/kernelbot");
	free(dir);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("could not remove %s\n", root);
	return t_done("test_compile");
}
