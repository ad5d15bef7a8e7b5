/*
 * abi_time: time one kernel in the kernel ABI (docs/design.md) by
 * itself, with no judge: for experiments on hand-made variants of a
 * generated kernel, including ones that leave a stage out and so give
 * wrong outputs (METHOD.md's "time variants that leave one stage out").
 * Never a verdict on a kernel: `kernelbot eval` is that.
 *
 *   nvcc -O2 -arch=sm_90 -o abi_time bench/abi_time.cu -ldl
 *   abi_time KERNEL.so --in f32:16384x4096 --in i64:16384/4096 --out f32: [--reps N] [--sync]
 *
 * --in f32:AxB... is filled with normal floats times 2 (a fixed seed, so
 * every variant sees the same inputs), i64:AxB.../C with integers in
 * [0, C); --out f32:AxB... (f32: for a scalar) is allocated. Before each
 * timed call the L2 is flushed (a 512 MiB memset); the call is timed with
 * CUDA events on the stream it is given. Prints the median, p10 and p90
 * in ms over --reps calls (default 200, after 10 warm-up calls), and the
 * sum of the first output's elements, to compare variants that should
 * agree. --sync waits for the flush before the first event, as the judge
 * does (gpu/wdev_cuda.c): the host's time in kernelbot_forward before its
 * first launch is then inside the measurement, as it is in the judge's;
 * without it the flush hides that time.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_T 8
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "abi_time: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

typedef int (*forward_fn)(const DLTensor *, int, DLTensor *, int, void *);

struct spec {
	int is_int;
	int64_t shape[8], classes;
	int ndim;
};

static int
parse(const char *s, struct spec *sp)
{
	const char *p;
	char *end;

	memset(sp, 0, sizeof(*sp));
	if (!strncmp(s, "f32:", 4))
		sp->is_int = 0;
	else if (!strncmp(s, "i64:", 4))
		sp->is_int = 1;
	else
		return -1;
	p = s + 4;
	while (*p && *p != '/') {
		if (sp->ndim == 8)
			return -1;
		sp->shape[sp->ndim++] = strtoll(p, &end, 10);
		if (end == p || sp->shape[sp->ndim - 1] <= 0)
			return -1;
		p = *end == 'x' ? end + 1 : end;
	}
	if (*p == '/')
		sp->classes = strtoll(p + 1, NULL, 10);
	return sp->is_int && sp->classes <= 0 ? -1 : 0;
}

static int64_t
numel(const struct spec *sp)
{
	int64_t n = 1;

	for (int i = 0; i < sp->ndim; i++)
		n *= sp->shape[i];
	return n;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
make(const struct spec *sp, DLTensor *t, int fill)
{
	int64_t n = numel(sp);
	size_t bytes = (size_t)n * (sp->is_int ? 8 : 4);
	void *h = malloc(bytes), *d;

	if (!h)
		exit(1);
	for (int64_t i = 0; fill && i < n; i++) {
		if (sp->is_int) {
			((int64_t *)h)[i] = (int64_t)(next() % (uint64_t)sp->classes);
		} else {
			double u1 = ((next() >> 11) + 1.0) / 9007199254740993.0;
			double u2 = (next() >> 11) / 9007199254740992.0;
			((float *)h)[i] = (float)(2.0 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
		}
	}
	CK(cudaMalloc(&d, bytes ? bytes : 4));
	if (fill)
		CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
	free(h);
	memset(t, 0, sizeof(*t));
	t->data = d;
	t->device.device_type = kDLCUDA;
	t->ndim = sp->ndim;
	t->dtype.code = sp->is_int ? kDLInt : kDLFloat;
	t->dtype.bits = sp->is_int ? 64 : 32;
	t->dtype.lanes = 1;
	t->shape = (int64_t *)malloc(sizeof(int64_t) * (sp->ndim ? sp->ndim : 1));
	memcpy(t->shape, sp->shape, sizeof(int64_t) * sp->ndim);
}

static int
cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	DLTensor in[MAX_T], out[MAX_T];
	struct spec sp, osp[MAX_T];
	int nin = 0, nout = 0, reps = 200, sync = 0, rc;
	size_t flush_bytes = (size_t)512 << 20;
	void *lib, *flush;
	forward_fn fwd;
	cudaStream_t st;
	cudaEvent_t a, b;
	float *ms;
	double sum = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: abi_time KERNEL.so --in SPEC... --out SPEC... [--reps N] [--sync]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		int is_in = !strcmp(argv[i], "--in"), is_out = !strcmp(argv[i], "--out");

		if ((is_in || is_out) && i + 1 < argc && (is_in ? nin : nout) < MAX_T &&
		    parse(argv[i + 1], is_in ? &sp : &osp[nout]) == 0) {
			if (is_in) {
				make(&sp, &in[nin], 1);
				nin++;
			} else {
				make(&osp[nout], &out[nout], 0);
				nout++;
			}
			i++;
		} else if (!strcmp(argv[i], "--sync")) {
			sync = 1;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else {
			fprintf(stderr, "abi_time: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	if (reps < 1 || !(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) ||
	    !(fwd = (forward_fn)dlsym(lib, "kernelbot_forward"))) {
		fprintf(stderr, "abi_time: %s: %s\n", argv[1], dlerror());
		return 2;
	}
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaMalloc(&flush, flush_bytes));
	ms = (float *)calloc((size_t)reps, sizeof(float));
	for (int r = -10; r < reps; r++) {
		CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, st));
		if (sync)
			CK(cudaStreamSynchronize(st));
		CK(cudaEventRecord(a, st));
		if ((rc = fwd(in, nin, out, nout, st)) != 0) {
			fprintf(stderr, "abi_time: kernelbot_forward returned %d\n", rc);
			return 1;
		}
		CK(cudaEventRecord(b, st));
		CK(cudaEventSynchronize(b));
		CK(cudaGetLastError());
		if (r >= 0)
			CK(cudaEventElapsedTime(&ms[r], a, b));
	}
	qsort(ms, (size_t)reps, sizeof(float), cmp_f);
	if (nout && !osp[0].is_int) {
		int64_t n = numel(&osp[0]);
		float *h = (float *)malloc(sizeof(float) * (size_t)n);

		CK(cudaMemcpy(h, out[0].data, sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost));
		for (int64_t i = 0; i < n; i++)
			sum += h[i];
		free(h);
	}
	printf("%s%s: median %.4f ms, p10 %.4f, p90 %.4f (%d calls); out0 sum %.9g\n", argv[1],
	    sync ? " --sync" : "",
	    ms[reps / 2], ms[reps / 10], ms[reps * 9 / 10], reps, sum);
	return 0;
}
