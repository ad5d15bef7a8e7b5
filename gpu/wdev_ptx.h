#ifndef KB_GPU_WDEV_PTX_H
#define KB_GPU_WDEV_PTX_H

/*
 * The PTX modules of the CUDA worker's own kernels (gpu/wdev_ptx.c), each
 * NUL-terminated for cuModuleLoadData: kb_scatter (wdev_put_elems) and
 * kb_permute (wdev_permute); kb_xor_normal (wdev_xor_normal).
 */
extern const char wdev_ptx[];
extern const char wdev_xor_ptx[];

#endif
