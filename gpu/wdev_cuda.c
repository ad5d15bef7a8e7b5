#include "gpu/wdev_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The driver API by its stable ABI; no CUDA headers needed to build. */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

enum {
	CU_STREAM_NON_BLOCKING = 1,
	CU_ATTR_L2_CACHE_SIZE = 38,
};

struct cu {
	void *lib;
	CUresult (*init)(unsigned);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_name)(char *, int, CUdevice);
	CUresult (*device_attr)(int *, int, CUdevice);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*primary_release)(CUdevice);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*ctx_sync)(void);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_sync)(CUstream);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*event_create)(CUevent *, unsigned);
	CUresult (*event_record)(CUevent, CUstream);
	CUresult (*event_elapsed)(float *, CUevent, CUevent);
	CUresult (*event_destroy)(CUevent);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*memset16)(CUdeviceptr, unsigned short, size_t, CUstream);
	CUresult (*memset32)(CUdeviceptr, unsigned int, size_t, CUstream);
	CUresult (*error_string)(CUresult, const char **);
	/* Optional: page-locked host memory (NULL: plain memory is used). */
	CUresult (*mem_alloc_host)(void **, size_t);
	CUresult (*mem_free_host)(void *);
};

struct wdev_cuda {
	struct cu cu;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUevent ev[2];
	int retained;
	char err[512];
};

/* Record "what: driver message (code)" and return -EIO when rc failed. */
static int
cu_check(struct wdev_cuda *c, CUresult rc, const char *what)
{
	const char *msg = NULL;

	if (rc == 0)
		return 0;
	if (c->cu.error_string)
		c->cu.error_string(rc, &msg);
	snprintf(c->err, sizeof(c->err), "%s: %s (CUDA error %d)", what,
	    msg ? msg : "unknown error", rc);
	return -EIO;
}

static void *
sym(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);
	return p || !b ? p : dlsym(lib, b);
}

static int
cu_load(struct cu *cu, char *err, size_t errlen)
{
	struct { void **slot; const char *name, *alt; } t[] = {
		{ (void **)&cu->init, "cuInit", NULL },
		{ (void **)&cu->device_get, "cuDeviceGet", NULL },
		{ (void **)&cu->device_name, "cuDeviceGetName", NULL },
		{ (void **)&cu->device_attr, "cuDeviceGetAttribute", NULL },
		{ (void **)&cu->primary_retain, "cuDevicePrimaryCtxRetain", NULL },
		{ (void **)&cu->primary_release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease" },
		{ (void **)&cu->ctx_set_current, "cuCtxSetCurrent", NULL },
		{ (void **)&cu->ctx_sync, "cuCtxSynchronize", NULL },
		{ (void **)&cu->stream_create, "cuStreamCreate", NULL },
		{ (void **)&cu->stream_sync, "cuStreamSynchronize", NULL },
		{ (void **)&cu->stream_destroy, "cuStreamDestroy_v2", "cuStreamDestroy" },
		{ (void **)&cu->event_create, "cuEventCreate", NULL },
		{ (void **)&cu->event_record, "cuEventRecord", NULL },
		{ (void **)&cu->event_elapsed, "cuEventElapsedTime_v2", "cuEventElapsedTime" },
		{ (void **)&cu->event_destroy, "cuEventDestroy_v2", "cuEventDestroy" },
		{ (void **)&cu->mem_alloc, "cuMemAlloc_v2", NULL },
		{ (void **)&cu->mem_free, "cuMemFree_v2", NULL },
		{ (void **)&cu->htod, "cuMemcpyHtoD_v2", NULL },
		{ (void **)&cu->dtoh, "cuMemcpyDtoH_v2", NULL },
		{ (void **)&cu->dtod, "cuMemcpyDtoD_v2", NULL },
		{ (void **)&cu->memset8, "cuMemsetD8Async", NULL },
		{ (void **)&cu->memset16, "cuMemsetD16Async", NULL },
		{ (void **)&cu->memset32, "cuMemsetD32Async", NULL },
		{ (void **)&cu->error_string, "cuGetErrorString", NULL },
	};

	if (!(cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		snprintf(err, errlen, "no NVIDIA driver (libcuda.so.1 not loadable)");
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!(*t[i].slot = sym(cu->lib, t[i].name, t[i].alt))) {
			snprintf(err, errlen, "libcuda.so.1 lacks %s", t[i].name);
			return -ENOENT;
		}
	cu->mem_alloc_host = (CUresult (*)(void **, size_t))sym(cu->lib, "cuMemAllocHost_v2",
	    "cuMemAllocHost");
	cu->mem_free_host = (CUresult (*)(void *))sym(cu->lib, "cuMemFreeHost", NULL);
	if (!cu->mem_alloc_host || !cu->mem_free_host)
		cu->mem_alloc_host = NULL;
	return 0;
}

int
wdev_cuda_open(struct wdev_cuda **out, int ordinal, char *name, size_t namelen,
    size_t *l2_bytes, char *err, size_t errlen)
{
	struct wdev_cuda *c = calloc(1, sizeof(*c));
	int l2 = 0, error;

	if (!c)
		return -ENOMEM;
	if ((error = cu_load(&c->cu, err, errlen)) < 0)
		goto out;
	if ((error = cu_check(c, c->cu.init(0), "cuInit")) < 0 ||
	    (error = cu_check(c, c->cu.device_get(&c->dev, ordinal), "cuDeviceGet")) < 0 ||
	    (error = cu_check(c, c->cu.device_name(name, (int)namelen, c->dev), "cuDeviceGetName")) < 0 ||
	    (error = cu_check(c, c->cu.device_attr(&l2, CU_ATTR_L2_CACHE_SIZE, c->dev),
		"cuDeviceGetAttribute(L2)")) < 0 ||
	    (error = cu_check(c, c->cu.primary_retain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain")) < 0)
		goto fail;
	c->retained = 1;
	/* The primary context, current: the candidate's cudart attaches to it. */
	if ((error = cu_check(c, c->cu.ctx_set_current(c->ctx), "cuCtxSetCurrent")) < 0 ||
	    (error = cu_check(c, c->cu.stream_create(&c->stream, CU_STREAM_NON_BLOCKING),
		"cuStreamCreate")) < 0 ||
	    (error = cu_check(c, c->cu.event_create(&c->ev[0], 0), "cuEventCreate")) < 0 ||
	    (error = cu_check(c, c->cu.event_create(&c->ev[1], 0), "cuEventCreate")) < 0)
		goto fail;
	*l2_bytes = l2 > 0 ? (size_t)l2 : 0;
	*out = c;
	return 0;
fail:
	snprintf(err, errlen, "%s", c->err);
out:
	wdev_cuda_close(c);
	return error;
}

void
wdev_cuda_close(struct wdev_cuda *c)
{
	if (!c)
		return;
	if (c->ev[0])
		c->cu.event_destroy(c->ev[0]);
	if (c->ev[1])
		c->cu.event_destroy(c->ev[1]);
	if (c->stream)
		c->cu.stream_destroy(c->stream);
	if (c->retained)
		c->cu.primary_release(c->dev);
	/* libcuda stays loaded: unloading a driver with live threads is unsafe. */
	free(c);
}

const char *
wdev_cuda_error(const struct wdev_cuda *c)
{
	return c->err;
}

int
wdev_cuda_alloc(struct wdev_cuda *c, size_t n, void **p)
{
	CUdeviceptr dp = 0;
	int error = cu_check(c, c->cu.mem_alloc(&dp, n), "cuMemAlloc");

	if (error == 0)
		*p = (void *)(uintptr_t)dp;
	return error;
}

void
wdev_cuda_free(struct wdev_cuda *c, void *p)
{
	if (p)
		c->cu.mem_free((CUdeviceptr)(uintptr_t)p);
}

int
wdev_cuda_host_alloc(struct wdev_cuda *c, size_t n, void **p)
{
	*p = NULL;
	if (!c->cu.mem_alloc_host || c->cu.mem_alloc_host(p, n) != 0) {
		*p = NULL;
		return -ENOMEM;
	}
	return 0;
}

void
wdev_cuda_host_free(struct wdev_cuda *c, void *p)
{
	if (p && c->cu.mem_free_host)
		c->cu.mem_free_host(p);
}

/*
 * Host copies go through the legacy default stream, which does not order
 * against our non-blocking stream: synchronize the device first.
 */
int
wdev_cuda_put(struct wdev_cuda *c, void *dst, const void *src, size_t n)
{
	int error;

	if ((error = wdev_cuda_sync(c)) < 0)
		return error;
	return cu_check(c, c->cu.htod((CUdeviceptr)(uintptr_t)dst, src, n), "cuMemcpyHtoD");
}

int
wdev_cuda_get(struct wdev_cuda *c, void *dst, const void *src, size_t n)
{
	int error;

	if ((error = wdev_cuda_sync(c)) < 0)
		return error;
	return cu_check(c, c->cu.dtoh(dst, (CUdeviceptr)(uintptr_t)src, n), "cuMemcpyDtoH");
}

int
wdev_cuda_copy(struct wdev_cuda *c, void *dst, const void *src, size_t n)
{
	int error;

	if ((error = wdev_cuda_sync(c)) < 0)
		return error;
	/* Device to device returns before the copy is done: wait for it. */
	if ((error = cu_check(c, c->cu.dtod((CUdeviceptr)(uintptr_t)dst,
	    (CUdeviceptr)(uintptr_t)src, n), "cuMemcpyDtoD")) < 0)
		return error;
	return wdev_cuda_sync(c);
}

int
wdev_cuda_fill(struct wdev_cuda *c, void *p, size_t n, int elsize, const unsigned char pat[8])
{
	CUdeviceptr dp = (CUdeviceptr)(uintptr_t)p;
	uint32_t w32;
	uint16_t w16;

	/* Tensor byte counts are multiples of their element size. */
	if (elsize >= 4 && n % 4 == 0) {
		memcpy(&w32, pat, 4);
		return cu_check(c, c->cu.memset32(dp, w32, n / 4, c->stream), "cuMemsetD32Async");
	}
	if (elsize == 2 && n % 2 == 0) {
		memcpy(&w16, pat, 2);
		return cu_check(c, c->cu.memset16(dp, w16, n / 2, c->stream), "cuMemsetD16Async");
	}
	return cu_check(c, c->cu.memset8(dp, pat[0], n, c->stream), "cuMemsetD8Async");
}

int
wdev_cuda_sync(struct wdev_cuda *c)
{
	return cu_check(c, c->cu.ctx_sync(), "cuCtxSynchronize");
}

void *
wdev_cuda_stream(struct wdev_cuda *c)
{
	return c->stream;
}

int
wdev_cuda_call(struct wdev_cuda *c, wdev_forward_fn fn, const DLTensor *in, int nin,
    DLTensor *out, int nout, int *rc, double *ev_ms, double *host_ms)
{
	float ms = 0;
	double t0;
	int error;

	/* Poison and flush are queued on the stream: keep them out of the clock. */
	if ((error = wdev_cuda_sync(c)) < 0)
		return error;
	t0 = wdev_now_ms();
	if ((error = cu_check(c, c->cu.event_record(c->ev[0], c->stream), "cuEventRecord")) < 0)
		return error;
	*rc = fn(in, nin, out, nout, c->stream);
	if ((error = cu_check(c, c->cu.event_record(c->ev[1], c->stream), "cuEventRecord")) < 0)
		return error;
	/* Device-wide: work the kernel left on another stream is waited for here. */
	if ((error = wdev_cuda_sync(c)) < 0)
		return error;
	*host_ms = wdev_now_ms() - t0;
	if ((error = cu_check(c, c->cu.event_elapsed(&ms, c->ev[0], c->ev[1]),
	    "cuEventElapsedTime")) < 0)
		return error;
	*ev_ms = ms;
	return 0;
}
