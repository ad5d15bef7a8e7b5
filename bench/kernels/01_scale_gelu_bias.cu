/*
 * A correct native kernel for /work/shared/problems/01_scale_gelu_bias.py:
 * y = gelu(x * 1.7) + bias (exact erf GELU, bias broadcast over rows).
 * The scale is a Python float in the module, not an input: it is baked in.
 * BLOCK may be overridden (-DBLOCK=...) so bench/ can make variants that
 * do not share a cache key.
 */
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#define SCALE 1.7f

__device__ __forceinline__ float
gelu(float v)
{
	return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void __launch_bounds__(BLOCK)
scale_gelu_bias4(const float4 *x, const float *bias, float4 *y, int64_t n4, int64_t cols)
{
	int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
	if (i >= n4)
		return;
	float4 v = x[i];
	int64_t c = (i * 4) % cols;
	float4 r;
	r.x = gelu(v.x * SCALE) + bias[c];
	r.y = gelu(v.y * SCALE) + bias[c + 1];
	r.z = gelu(v.z * SCALE) + bias[c + 2];
	r.w = gelu(v.w * SCALE) + bias[c + 3];
	y[i] = r;
}

__global__ void __launch_bounds__(BLOCK)
scale_gelu_bias1(const float *x, const float *bias, float *y, int64_t n, int64_t cols)
{
	int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
	if (i < n)
		y[i] = gelu(x[i] * SCALE) + bias[i % cols];
}

extern "C" int
kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	int64_t cols, n = 1;

	if (n_in != 2 || n_out != 1 || in[0].ndim < 1 || in[1].ndim != 1)
		return 1;
	cols = in[0].shape[in[0].ndim - 1];
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	if (n == 0)
		return 0;
	if (cols % 4 == 0 && (uintptr_t)in[0].data % 16 == 0 && (uintptr_t)out[0].data % 16 == 0) {
		int64_t n4 = n / 4;
		scale_gelu_bias4<<<(unsigned)((n4 + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(
		    (const float4 *)in[0].data, (const float *)in[1].data, (float4 *)out[0].data, n4, cols);
	} else {
		scale_gelu_bias1<<<(unsigned)((n + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(
		    (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, n, cols);
	}
	return cudaGetLastError() != cudaSuccess;
}
