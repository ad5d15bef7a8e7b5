/*
 * wdev_cuda: the CUDA half of wdev (gpu/wdev.h), private to it. The same
 * contracts; the pointers are CUdeviceptr values.
 */
#ifndef KB_GPU_WDEV_CUDA_H
#define KB_GPU_WDEV_CUDA_H

#include "gpu/wdev.h"

struct wdev_cuda;

int wdev_cuda_open(struct wdev_cuda **out, int ordinal, char *name, size_t namelen,
    size_t *l2_bytes, char *err, size_t errlen);
void wdev_cuda_close(struct wdev_cuda *c);
const char *wdev_cuda_error(const struct wdev_cuda *c);
int wdev_cuda_alloc(struct wdev_cuda *c, size_t n, void **p);
/* Page-locked host memory; -ENOMEM when the driver refuses (no message). */
int wdev_cuda_host_alloc(struct wdev_cuda *c, size_t n, void **p);
void wdev_cuda_host_free(struct wdev_cuda *c, void *p);
void wdev_cuda_free(struct wdev_cuda *c, void *p);
/* Device memory another process can map: gpu/wdev.h, wdev_alloc_shared. */
int wdev_cuda_alloc_shared(struct wdev_cuda *c, size_t n, void **p, size_t *size, int *fd);
void wdev_cuda_free_shared(struct wdev_cuda *c, void *p, size_t size);
int wdev_cuda_put(struct wdev_cuda *c, void *dst, const void *src, size_t n);
int wdev_cuda_put_elems(struct wdev_cuda *c, const struct wdev_elem *e, size_t n);
/* Whether wdev_cuda_put_elems uses the scatter kernel (it loaded and passed its trial). */
int wdev_cuda_has_scatter(const struct wdev_cuda *c);
int wdev_cuda_permute(struct wdev_cuda *c, void *dst, const void *src, size_t n, int elsize,
    uint64_t a, uint64_t b);
/* Whether wdev_cuda_permute has its kernel (loaded and passed its trial). */
int wdev_cuda_has_permute(const struct wdev_cuda *c);
int wdev_cuda_xor_normal(struct wdev_cuda *c, void *p, size_t n, int elsize, uint64_t mask);
/* Whether wdev_cuda_xor_normal has its kernel (loaded and passed its trial). */
int wdev_cuda_has_xor_normal(const struct wdev_cuda *c);
int wdev_cuda_get(struct wdev_cuda *c, void *dst, const void *src, size_t n);
/* Device to device, then a context synchronize. */
int wdev_cuda_copy(struct wdev_cuda *c, void *dst, const void *src, size_t n);
int wdev_cuda_fill(struct wdev_cuda *c, void *p, size_t n, int elsize, const unsigned char pat[8]);
int wdev_cuda_sync(struct wdev_cuda *c);
void *wdev_cuda_stream(struct wdev_cuda *c);
int wdev_cuda_call(struct wdev_cuda *c, wdev_forward_fn fn, const DLTensor *in, int nin,
    DLTensor *out, int nout, int *rc, double *ev_ms, double *host_ms);

#endif
