/*
 * scratch_streams: the compiler's kept scratch (kb_scratch_at) under the
 * ways a caller uses a module, for tests/gpu/scratch-gpu.sh. KERNEL.so is
 * a cross-entropy kernel in the kernel ABI: logits f32 [ROWS, COLS],
 * targets i64 [ROWS], a scalar f32 loss out; its row losses are scratch
 * between two kernels.
 *
 *   scratch_streams KERNEL.so ROWS COLS
 *
 * Two input sets X and Y get reference losses, one call at a time. Then:
 *   streams   X on one stream and Y on another, interleaved, 200 calls
 *             each, every result copied aside on its stream: a buffer
 *             shared between the streams shows as wrong losses;
 *   slots     24 streams, more than a module keeps buffers for, one
 *             call each: those past the slots take the pool's path;
 *   capture   a call captured into a CUDA graph (scratch from the pool,
 *             as graph nodes), replayed twice on X and, after Y is copied
 *             into X's buffers, on Y.
 * Every loss must equal its reference bit for bit (the kernels' combine
 * order is fixed). Prints one line per check; exit 0 when all pass, 1
 * when one fails, 2 on a setup error.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "scratch_streams: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
	    cudaGetErrorString(e_)); exit(2); } } while (0)

#define CALLS 200
#define STREAMS 24

typedef int (*forward_fn)(const DLTensor *, int, DLTensor *, int, void *);

static forward_fn fwd;
static int64_t rows, cols;

struct set {
	float *x;
	int64_t *t;
};

static DLTensor
tensor(void *p, DLDataTypeCode code, int bits, int ndim, int64_t *shape)
{
	DLTensor d;

	memset(&d, 0, sizeof(d));
	d.data = p;
	d.device.device_type = kDLCUDA;
	d.device.device_id = 0;
	d.ndim = ndim;
	d.dtype.code = (uint8_t)code;
	d.dtype.bits = (uint8_t)bits;
	d.dtype.lanes = 1;
	d.shape = shape;
	return d;
}

/* One call: the loss of set s into *loss (device), on st. */
static void
call(const struct set *s, float *loss, cudaStream_t st)
{
	int64_t xs[2] = { rows, cols }, ts[1] = { rows };
	DLTensor in[2], out[1];
	int rc;

	in[0] = tensor(s->x, kDLFloat, 32, 2, xs);
	in[1] = tensor(s->t, kDLInt, 64, 1, ts);
	out[0] = tensor(loss, kDLFloat, 32, 0, NULL);
	if ((rc = fwd(in, 2, out, 1, st)) != 0) {
		fprintf(stderr, "scratch_streams: kernelbot_forward returned %d\n", rc);
		exit(2);
	}
}

static void
fill(struct set *s, uint64_t seed)
{
	size_t n = (size_t)(rows * cols);
	float *hx = (float *)malloc(n * sizeof(float));
	int64_t *ht = (int64_t *)malloc((size_t)rows * sizeof(int64_t));

	if (!hx || !ht)
		exit(2);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		hx[i] = (float)((seed >> 40) & 0xffff) / 8192.0f - 4.0f;
	}
	for (int64_t r = 0; r < rows; r++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		ht[r] = (int64_t)((seed >> 33) % (uint64_t)cols);
	}
	CK(cudaMalloc(&s->x, n * sizeof(float)));
	CK(cudaMalloc(&s->t, (size_t)rows * sizeof(int64_t)));
	CK(cudaMemcpy(s->x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(s->t, ht, (size_t)rows * sizeof(int64_t), cudaMemcpyHostToDevice));
	free(hx);
	free(ht);
}

/* Losses d[0..n) against want[i % 2]: how many differ. */
static int
wrong(const float *d, int n, const float want[2])
{
	float *h = (float *)malloc((size_t)n * sizeof(float));
	int bad = 0;

	if (!h)
		exit(2);
	CK(cudaMemcpy(h, d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		bad += memcmp(&h[i], &want[i % 2], sizeof(float)) != 0;
	free(h);
	return bad;
}

static int
check(const char *what, int bad, int n)
{
	printf("%s %s (%d of %d losses wrong)\n", bad ? "FAIL" : "ok  ", what, bad, n);
	return bad != 0;
}

int
main(int argc, char **argv)
{
	struct set set[2];
	cudaStream_t st[STREAMS];
	float ref[2], *res, *tmp;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	void *lib;
	int fails = 0;

	if (argc != 4 || (rows = atoll(argv[2])) < 1 || (cols = atoll(argv[3])) < 1) {
		fprintf(stderr, "usage: scratch_streams KERNEL.so ROWS COLS\n");
		return 2;
	}
	if (!(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) ||
	    !(fwd = (forward_fn)dlsym(lib, "kernelbot_forward"))) {
		fprintf(stderr, "scratch_streams: %s: %s\n", argv[1], dlerror());
		return 2;
	}
	fill(&set[0], 1);
	fill(&set[1], 2);
	for (int i = 0; i < STREAMS; i++)
		CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
	CK(cudaMalloc(&res, sizeof(float) * 2 * CALLS));
	CK(cudaMalloc(&tmp, sizeof(float) * STREAMS));

	/* references, one call at a time */
	for (int k = 0; k < 2; k++) {
		call(&set[k], tmp, st[0]);
		CK(cudaStreamSynchronize(st[0]));
		CK(cudaMemcpy(&ref[k], tmp, sizeof(float), cudaMemcpyDeviceToHost));
	}
	if (memcmp(&ref[0], &ref[1], sizeof(float)) == 0) {
		fprintf(stderr, "scratch_streams: X and Y have the same loss, nothing to tell apart\n");
		return 2;
	}

	/* two streams interleaved: results at even (X) and odd (Y) slots */
	for (int i = 0; i < CALLS; i++) {
		for (int k = 0; k < 2; k++) {
			call(&set[k], tmp + k, st[k]);
			CK(cudaMemcpyAsync(res + 2 * i + k, tmp + k, sizeof(float), cudaMemcpyDeviceToDevice,
			    st[k]));
		}
	}
	CK(cudaDeviceSynchronize());
	fails += check("two streams, interleaved calls", wrong(res, 2 * CALLS, ref), 2 * CALLS);

	/* more streams than the module keeps buffers for */
	for (int i = 0; i < STREAMS; i++)
		call(&set[i % 2], tmp + i, st[i]);
	CK(cudaDeviceSynchronize());
	fails += check("24 streams, past the kept slots", wrong(tmp, STREAMS, ref), STREAMS);

	/* a captured call, replayed on X (slots 0 and 2), then on Y copied
	 * into X's buffers (slot 1) */
	CK(cudaStreamBeginCapture(st[1], cudaStreamCaptureModeThreadLocal));
	call(&set[0], tmp, st[1]);
	CK(cudaStreamEndCapture(st[1], &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 2; i++) {
		CK(cudaGraphLaunch(ge, st[1]));
		CK(cudaMemcpyAsync(res + 2 * i, tmp, sizeof(float), cudaMemcpyDeviceToDevice, st[1]));
	}
	CK(cudaMemcpyAsync(set[0].x, set[1].x, sizeof(float) * (size_t)(rows * cols),
	    cudaMemcpyDeviceToDevice, st[1]));
	CK(cudaMemcpyAsync(set[0].t, set[1].t, sizeof(int64_t) * (size_t)rows, cudaMemcpyDeviceToDevice,
	    st[1]));
	CK(cudaGraphLaunch(ge, st[1]));
	CK(cudaMemcpyAsync(res + 1, tmp, sizeof(float), cudaMemcpyDeviceToDevice, st[1]));
	CK(cudaStreamSynchronize(st[1]));
	fails += check("a captured call, replayed on new inputs", wrong(res, 3, ref), 3);
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	CK(cudaGetLastError());
	return fails ? 1 : 0;
}
