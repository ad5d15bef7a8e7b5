#!/bin/sh
# What compute-sanitizer costs on a library GEMM, tool by tool: the
# judge runs memcheck and racecheck on every winner, and a cuBLAS SGEMM
# of 4096^3 (05_linear_gelu) took over 5 minutes. Times one cublasSgemm
# of N^3 plain, under memcheck, under racecheck, and under racecheck with
# the kernel filter that keeps only the caller's own kernels, for each N.
#
#   N="1024 2048" CAP=90 sh bench/sanitize_cost.sh     (GPU host)
#
# Prints one line per run: N, tool, exit status, wall seconds. A run over
# CAP seconds is killed (status 124).
set -u
SAN=${KERNELBOT_COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CAP=${CAP:-90}
dir=$(mktemp -d /tmp/kb-sancost.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/gemm.cu" <<'CU'
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { int e_ = (int)(x); if (e_) { fprintf(stderr, "%s: %d\n", #x, e_); exit(1); } } while (0)

__global__ void scale_own(float *p, int n, float s)
{
	__shared__ float t[256];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	t[threadIdx.x] = i < n ? p[i] : 0.f;
	__syncthreads();
	if (i < n)
		p[i] = t[threadIdx.x] * s;
}

int main(int argc, char **argv)
{
	int n = atoi(argv[1]);
	size_t sz = (size_t)n * n * sizeof(float);
	float *a, *b, *c, one = 1.f, zero = 0.f;
	cublasHandle_t h;

	CK(cudaMalloc(&a, sz));
	CK(cudaMalloc(&b, sz));
	CK(cudaMalloc(&c, sz));
	CK(cudaMemset(a, 0, sz));
	CK(cudaMemset(b, 0, sz));
	CK(cublasCreate(&h));
	CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
	scale_own<<<(n * n + 255) / 256, 256>>>(c, n * n, 2.f);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cublasDestroy(h));
	puts("ok");
	return 0;
}
CU
if ! "$NVCC" -O2 -arch=sm_90 -o "$dir/gemm" "$dir/gemm.cu" -lcublas >"$dir/nvcc.log" 2>&1; then
	cat "$dir/nvcc.log"
	exit 1
fi
echo "sanitizer: $("$SAN" --version 2>&1 | tail -n 1)"
"$SAN" --help 2>&1 | grep -i -A6 -- '--kernel-name' | head -n 40
timed() {	# N label cmd...
	n=$1 label=$2
	shift 2
	t0=$(date +%s.%N)
	timeout -k 5 "$CAP" "$@" >"$dir/run.log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	printf '%s %-28s exit %3d %8.2f s  %s\n' "$n" "$label" "$rc" \
		"$(awk "BEGIN { print $t1 - $t0 }")" "$(grep -c 'Hazard\|Invalid\|ERROR SUMMARY' "$dir/run.log") findings-lines"
	[ "$rc" -ne 0 ] && tail -n 5 "$dir/run.log"
}
for n in ${N:-1024 2048}; do
	timed "$n" plain "$dir/gemm" "$n"
	timed "$n" memcheck "$SAN" --tool memcheck "$dir/gemm" "$n"
	timed "$n" racecheck "$SAN" --tool racecheck "$dir/gemm" "$n"
	timed "$n" "racecheck own kernels" "$SAN" --tool racecheck --kernel-name kns=scale_own "$dir/gemm" "$n"
	timed "$n" "memcheck own kernels" "$SAN" --tool memcheck --kernel-name kns=scale_own "$dir/gemm" "$n"
done
