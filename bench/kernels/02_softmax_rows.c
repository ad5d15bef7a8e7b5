/*
 * The CPU twin of 02_softmax_rows.cu, for a dry run of
 * bench/eval_throughput.sh on the cpu backend (BACKEND=cpu): softmax over
 * the last dimension. BLOCK (set by bench/gen_variants.py) is the rows
 * per parallel chunk.
 */
#include <dlpack/dlpack.h>
#include <math.h>
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 64
#endif

int
kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{
	int64_t rows = 1, cols;
	const float *x;
	float *y;

	(void)stream;
	if (n_in != 1 || n_out != 1 || in[0].ndim < 1)
		return 1;
	cols = in[0].shape[in[0].ndim - 1];
	for (int d = 0; d < in[0].ndim - 1; d++)
		rows *= in[0].shape[d];
	x = (const float *)in[0].data;
	y = (float *)out[0].data;
#pragma omp parallel for schedule(static, BLOCK)
	for (int64_t r = 0; r < rows; r++) {
		const float *row = x + r * cols;
		float *o = y + r * cols, m = -INFINITY;
		double s = 0;

		for (int64_t c = 0; c < cols; c++)
			m = row[c] > m ? row[c] : m;
		for (int64_t c = 0; c < cols; c++)
			s += (o[c] = expf(row[c] - m));
		for (int64_t c = 0; c < cols; c++)
			o[c] = (float)(o[c] / s);
	}
	return 0;
}
