/*
 * wdev: the evaluation worker's device, CPU or CUDA, behind one small
 * interface: buffers, transfers, poison fills, cache flushes and the timed
 * call of a candidate's kernelbot_forward.
 *
 * The CUDA side talks to the driver API through dlopen("libcuda.so.1"), so
 * the binary runs on hosts without a driver. It retains the device's
 * primary context and makes it current, so a candidate built with cudart
 * shares it; all work goes on one stream the worker creates, which is the
 * stream passed to the kernel. Everything here happens before the sandbox
 * lockdown: nothing in this module may need a new process or a socket
 * later.
 */
#ifndef KB_GPU_WDEV_H
#define KB_GPU_WDEV_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel ABI: docs/design.md, "The kernel ABI". */
typedef int (*wdev_forward_fn)(const DLTensor *inputs, int n_inputs,
    DLTensor *outputs, int n_outputs, void *stream);

struct wdev;

/* Flush sizes: twice the last-level cache, within these bounds. */
#define WDEV_FLUSH_MIN (8u << 20)
#define WDEV_FLUSH_MAX (512u << 20)
/* sysconf reports a socket's whole L3 on some CPUs; one core reaches far less. */
#define WDEV_CPU_FLUSH_MAX (64u << 20)

/*
 * Open the CPU (cuda = 0) or the CUDA device `ordinal`. 0 and *out, or
 * -errno with a sentence in err (-ENOENT: no driver or no such device).
 */
int wdev_open(struct wdev **out, int cuda, int ordinal, char *err, size_t errlen);
void wdev_close(struct wdev *d);

/* The device as DLPack names it, its name, and the last error's text. */
DLDevice wdev_dl(const struct wdev *d);
const char *wdev_name(const struct wdev *d);
const char *wdev_error(const struct wdev *d);
size_t wdev_flush_bytes(const struct wdev *d);

/* The monotonic clock in milliseconds: the host side of every timing. */
double wdev_now_ms(void);

/* Device memory (n may be 0: a small block is allocated anyway). 0 or -errno. */
int wdev_alloc(struct wdev *d, size_t n, void **p);
void wdev_free(struct wdev *d, void *p);

/*
 * Device memory another process can map: at least n bytes (rounded up to
 * the driver's granularity, the size in *size) and a file descriptor for
 * it in *fd, which the caller passes on (SCM_RIGHTS) and closes. The
 * judge maps it to copy a timed run's snapshot into memory of its own
 * (docs/evaluation.md, "The snapshot"). The memory lives until
 * wdev_free_shared and, in the importer, until it unmaps it. 0, or
 * -EOPNOTSUPP on the CPU or a driver without virtual memory management,
 * or -EIO (see wdev_error).
 */
int wdev_alloc_shared(struct wdev *d, size_t n, void **p, size_t *size, int *fd);
void wdev_free_shared(struct wdev *d, void *p, size_t size);

/*
 * Host memory for transfers (n may be 0): page-locked on CUDA where the
 * driver grants it, so copies run at the bus's speed instead of through
 * the driver's bounce buffers; plain memory otherwise (and on the CPU).
 * Free it with wdev_host_free before wdev_close. 0 or -ENOMEM.
 */
int wdev_host_alloc(struct wdev *d, size_t n, void **p);
void wdev_host_free(struct wdev *d, void *p);

/* Copies between host and device; synchronous. 0 or -EIO (see wdev_error). */
int wdev_put(struct wdev *d, void *dst, const void *src, size_t n);
int wdev_get(struct wdev *d, void *dst, const void *src, size_t n);

/* One element to write: the judge's change of an input before a timed run. */
struct wdev_elem {
	void *dst;		/* the element in a device buffer, aligned to n */
	unsigned char v[8];	/* its new value, little-endian */
	int n;			/* its size: 1, 2, 4 or 8 bytes */
};

/*
 * Write n elements, in order (a later one at the same place wins);
 * synchronous. On CUDA one transfer of the whole list and one scatter on
 * the device, never a copy per element; 0 or -EIO (see wdev_error).
 */
int wdev_put_elems(struct wdev *d, const struct wdev_elem *e, size_t n);

/*
 * dst[e] = src[(a * e + b) mod n] for each of n elements of elsize bytes
 * (1, 2, 4, 8); n < 2^31, a and b below n; dst and src do not overlap.
 * The judge's refresh of an input before a timed run. Synchronous; on
 * CUDA one kernel. -EIO where wdev_can_permute is 0.
 */
int wdev_permute(struct wdev *d, void *dst, const void *src, size_t n, int elsize, uint64_t a,
    uint64_t b);
/* 1 where wdev_permute works (the CPU; CUDA where its kernel passed its trial). */
int wdev_can_permute(const struct wdev *d);

/*
 * The mask of a refresh: bits ^= mask for each of n elements of elsize
 * bytes (4: float32, 8: float64) whose exponent is neither all zeros nor
 * all ones, so zeros, subnormals, infinities and NaNs stay and a normal
 * value stays in its binade where mask is below 2^23 (2^52). After
 * wdev_permute, before the judge's changes. Synchronous; on CUDA one
 * kernel; -EIO where wdev_can_xor_normal is 0. _host: the same on host
 * memory (the CPU's, and what the CUDA kernel's trial is held to).
 */
int wdev_xor_normal(struct wdev *d, void *p, size_t n, int elsize, uint64_t mask);
void wdev_xor_normal_host(void *p, size_t n, int elsize, uint64_t mask);
/* 1 where wdev_xor_normal works (the CPU; CUDA where its kernel passed its trial). */
int wdev_can_xor_normal(const struct wdev *d);

/*
 * How wdev_put_elems writes, for the worker's hello: "stores" (the CPU),
 * "scatter" (the CUDA kernel), "copies" (CUDA, a copy per element: the
 * kernel did not load or failed its trial).
 */
const char *wdev_put_elems_how(const struct wdev *d);

/*
 * Fill n bytes, elements of elsize bytes, with the 8-byte poison pattern
 * pat (an element's bytes repeated; on CUDA an 8-byte element's is filled
 * as a 32-bit word, so its two halves must be equal). The judge draws a
 * pattern per run (docs/evaluation.md, *Poison*). Asynchronous on the
 * stream.
 */
int wdev_poison(struct wdev *d, void *p, size_t n, int elsize, const unsigned char pat[8]);

/*
 * The fixed pattern `which` (0 or 1) for elsize (1, 2, 4, 8) into pat:
 * NaN-like, different for the two runs of a trial. What a request that
 * names no poison gets (the worker protocol by hand).
 */
void wdev_pattern(int elsize, int which, unsigned char pat[8]);

/*
 * Copy n bytes of device memory (the worker's snapshot of a run's
 * outputs); synchronous: done when it returns. 0 or -EIO.
 */
int wdev_copy(struct wdev *d, void *dst, const void *src, size_t n);

/* Evict the last-level cache (L2 on CUDA) with a write of 2x its size. */
int wdev_flush(struct wdev *d);

/* Wait for all work on the device (cuCtxSynchronize). 0 or -EIO. */
int wdev_sync(struct wdev *d);

/*
 * Call fn once: on CUDA between two events on the worker's stream, then a
 * device-wide synchronize; the host clock around all of it. ev_ms is the
 * event time (the host time on CPU). 0 with *rc = fn's return; -EIO when
 * the device failed (an illegal access: the context is lost).
 */
int wdev_call(struct wdev *d, wdev_forward_fn fn, const DLTensor *in, int nin,
    DLTensor *out, int nout, int *rc, double *ev_ms, double *host_ms);

#endif
