/*
 * The honest kernel for bench/incr/matmul.py: y = x @ w, row by row, the
 * same loop the incremental kernels run on the rows they recompute.
 */
#include <dlpack/dlpack.h>
#include <stdint.h>

static void
row(const float *x, const float *w, float *y, int64_t k, int64_t n)
{
	for (int64_t j = 0; j < n; j++)
		y[j] = 0;
	for (int64_t p = 0; p < k; p++) {
		float a = x[p];
		const float *wr = w + p * n;
		for (int64_t j = 0; j < n; j++)
			y[j] += a * wr[j];
	}
}

int
kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{
	(void)stream;
	if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2)
		return 1;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	const float *x = in[0].data, *w = in[1].data;
	float *y = out[0].data;
	for (int64_t i = 0; i < m; i++)
		row(x + i * k, w, y + i * n, k, n);
	return 0;
}
