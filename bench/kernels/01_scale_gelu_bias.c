/*
 * The CPU twin of 01_scale_gelu_bias.cu, for a dry run of
 * bench/eval_throughput.sh on the cpu backend (BACKEND=cpu): y = gelu(x *
 * 1.7) + bias (exact erf GELU, bias broadcast over rows). BLOCK (set by
 * bench/gen_variants.py) is the rows per parallel chunk.
 */
#include <dlpack/dlpack.h>
#include <math.h>
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 64
#endif
#define SCALE 1.7f

int
kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{
	int64_t rows = 1, cols;
	const float *x, *b;
	float *y;

	(void)stream;
	if (n_in != 2 || n_out != 1 || in[0].ndim < 1)
		return 1;
	cols = in[0].shape[in[0].ndim - 1];
	for (int d = 0; d < in[0].ndim - 1; d++)
		rows *= in[0].shape[d];
	x = (const float *)in[0].data;
	b = (const float *)in[1].data;
	y = (float *)out[0].data;
#pragma omp parallel for schedule(static, BLOCK)
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			float v = x[r * cols + c] * SCALE;
			y[r * cols + c] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) + b[c];
		}
	return 0;
}
