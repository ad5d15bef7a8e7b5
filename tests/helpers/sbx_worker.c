/*
 * sbx_worker: the shape of the evaluator's candidate worker on the CPU
 * backend, for the sandbox and compile tests: read inputs from a read-only
 * directory, lock down, then load the untrusted .so and run it, and write
 * the outputs into scratch.
 *
 *   sbx_worker SO INPUT_DIR OUT_DIR N_OUTPUTS
 *
 * Inputs: INPUT_DIR/a.bin and b.bin, float32. Output k (0-based) goes to
 * OUT_DIR/out<k>.bin with a's length. Exit 0 after a successful call;
 * 2 lockdown failed, 3 load failed, 4 the kernel returned nonzero, 1 other.
 */
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/sandbox.h"

#define MAX_ELEMS (1 << 20)
#define MAX_OUT 4

typedef int (*forward_fn)(const DLTensor *, int, DLTensor *, int, void *);

/* See sbx_exploit.c: LeakSanitizer's ptrace is refused in the sandbox. */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "detect_leaks=0";
}

static long
load(const char *dir, const char *name, float *buf)
{
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "rb")))
		return -1;
	n = fread(buf, sizeof(float), MAX_ELEMS, f);
	fclose(f);
	return (long)n;
}

int
main(int argc, char **argv)
{
	static float a[MAX_ELEMS], b[MAX_ELEMS], out[MAX_OUT][MAX_ELEMS];
	DLTensor in[2], outs[MAX_OUT];
	int64_t shape[1];
	int n_out, rc;
	long n;
	void *h;
	forward_fn f;

	if (argc != 5 || (n_out = atoi(argv[4])) < 1 || n_out > MAX_OUT)
		return 1;
	if ((n = load(argv[2], "a.bin", a)) <= 0 || load(argv[2], "b.bin", b) != n)
		return 1;
	/* Set-up done: from here on the process may not start others. */
	if (sandbox_lockdown() < 0)
		return 2;
	if (!(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) ||
	    !(f = (forward_fn)(uintptr_t)dlsym(h, "kernelbot_forward"))) {
		fprintf(stderr, "sbx_worker: %s\n", dlerror());
		return 3;
	}
	shape[0] = n;
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 2; i++) {
		in[i].data = i ? b : a;
		in[i].ndim = 1;
		in[i].shape = shape;
		in[i].dtype = (DLDataType){ kDLFloat, 32, 1 };
		in[i].device = (DLDevice){ kDLCPU, 0 };
	}
	for (int k = 0; k < n_out; k++) {
		outs[k] = in[0];
		outs[k].data = out[k];
	}
	if ((rc = f(in, 2, outs, n_out, NULL)) != 0)
		return 4;
	for (int k = 0; k < n_out; k++) {
		char path[4096];
		FILE *o;
		snprintf(path, sizeof(path), "%s/out%d.bin", argv[3], k);
		if (!(o = fopen(path, "wb")) || fwrite(out[k], sizeof(float), (size_t)n, o) != (size_t)n)
			return 1;
		fclose(o);
	}
	return 0;
}
