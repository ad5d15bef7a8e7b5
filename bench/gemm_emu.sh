#!/bin/sh
# Whether cuBLAS's FP32 emulation (CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
# each float split into three bfloat16 parts, the products on tensor
# cores) is faster than plain FP32 on this GPU and accurate enough for
# the judge's fp32 tolerance (atol = rtol = 1e-4 against PyTorch's fp32
# result). The GEMM problems (05, 06, 12, 15) tie eager because both
# sides run cuBLAS's FP32 GEMM; this says whether the emulation could
# break the tie before the compiler offers it as a schedule.
#
#   sh bench/gemm_emu.sh        (GPU host; M N K from SIZES, default the
#                                development problems' GEMMs)
#
# Prints, per size and compute type: the median of 20 calls in ms, the
# TFLOP/s, the largest |C - C_fp64| / (|C_fp64| + 1), and whether every
# element is within 1e-4 + 1e-4 * |C_fp32| of plain FP32's result.
set -eu
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
dir=$(mktemp -d /tmp/kb-gemmemu.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/g.cu" <<'CU'
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { long e_ = (long)(x); if (e_) { fprintf(stderr, "%s: %ld\n", #x, e_); exit(1); } } while (0)

static int cmpf(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

__global__ void widen(const float *s, double *d, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		d[i] = s[i];
}

int main(int argc, char **argv)
{
	int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
	size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
	float *a, *b, *c, *h = (float *)malloc(sizeof(float) * (na > nb ? na : nb));
	float *ref32 = (float *)malloc(sizeof(float) * nc), *got = (float *)malloc(sizeof(float) * nc);
	double *da, *db, *dc, *ref64 = (double *)malloc(sizeof(double) * nc);
	float one = 1.f, zero = 0.f, ms[20];
	double done = 1, dzero = 0;
	cublasHandle_t hd;
	cudaEvent_t e0, e1;
	unsigned long long s = 88172645463325252ull;
	static const struct { const char *name; cublasComputeType_t ct; int strategy; } types[] = {
		{ "fp32", CUBLAS_COMPUTE_32F, -1 },
		{ "emulated_bf16x9 eager", CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUBLAS_EMULATION_STRATEGY_EAGER },
		{ "emulated_bf16x9 performant", CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUBLAS_EMULATION_STRATEGY_PERFORMANT },
		{ "fast_tf32 (for scale)", CUBLAS_COMPUTE_32F_FAST_TF32, -1 },
	};

	CK(cudaMalloc(&a, sizeof(float) * na));
	CK(cudaMalloc(&b, sizeof(float) * nb));
	CK(cudaMalloc(&c, sizeof(float) * nc));
	CK(cudaMalloc(&da, sizeof(double) * na));
	CK(cudaMalloc(&db, sizeof(double) * nb));
	CK(cudaMalloc(&dc, sizeof(double) * nc));
	for (int t = 0; t < 2; t++) {
		size_t cnt = t ? nb : na;
		for (size_t i = 0; i < cnt; i++) {
			s ^= s << 13; s ^= s >> 7; s ^= s << 17;
			h[i] = (float)((s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
		}
		CK(cudaMemcpy(t ? b : a, h, sizeof(float) * cnt, cudaMemcpyHostToDevice));
	}
	widen<<<(unsigned)((na + 255) / 256), 256>>>(a, da, na);
	widen<<<(unsigned)((nb + 255) / 256), 256>>>(b, db, nb);
	CK(cudaGetLastError());
	CK(cublasCreate(&hd));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &done, db, n, da, k, &dzero, dc, n));
	CK(cudaMemcpy(ref64, dc, sizeof(double) * nc, cudaMemcpyDeviceToHost));
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		double worst = 0;
		size_t off = 0;
		int st;

		if (types[t].strategy >= 0)
			CK(cublasSetEmulationStrategy(hd, (cublasEmulationStrategy_t)types[t].strategy));
		for (int r = -3; r < 20; r++) {
			CK(cudaEventRecord(e0, 0));
			st = cublasGemmEx(hd, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_32F, n,
			    a, CUDA_R_32F, k, &zero, c, CUDA_R_32F, n, types[t].ct, CUBLAS_GEMM_DEFAULT);
			if (st) {
				printf("%d %d %d %-28s cublasGemmEx status %d\n", m, n, k, types[t].name, st);
				break;
			}
			CK(cudaEventRecord(e1, 0));
			CK(cudaEventSynchronize(e1));
			if (r >= 0)
				CK(cudaEventElapsedTime(&ms[r], e0, e1));
		}
		if (st)
			continue;
		CK(cudaMemcpy(got, c, sizeof(float) * nc, cudaMemcpyDeviceToHost));
		if (t == 0)
			memcpy(ref32, got, sizeof(float) * nc);
		for (size_t i = 0; i < nc; i++) {
			double e = fabs(got[i] - ref64[i]) / (fabs(ref64[i]) + 1);
			if (e > worst)
				worst = e;
			if (fabs(got[i] - ref32[i]) > 1e-4 + 1e-4 * fabs(ref32[i]))
				off++;
		}
		qsort(ms, 20, sizeof(float), cmpf);
		printf("%d %d %d %-28s median %.3f ms  %.1f TFLOP/s  worst rel err vs fp64 %.3g  "
		    "outside fp32 tolerance: %zu of %zu\n", m, n, k, types[t].name, ms[10],
		    2.0 * m * n * k / (ms[10] * 1e-3) / 1e12, worst, off, nc);
		if (types[t].strategy >= 0)
			CK(cublasSetEmulationStrategy(hd, CUBLAS_EMULATION_STRATEGY_DEFAULT));
	}
	return 0;
}
CU
"$NVCC" -O2 -arch=sm_90 -o "$dir/g" "$dir/g.cu" -lcublas
for size in ${SIZES:-4096x4096x4096 4096x4096x1024 4096x1024x4096}; do
	# shellcheck disable=SC2046
	"$dir/g" $(echo "$size" | tr x ' ')
done
