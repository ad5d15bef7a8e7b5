/*
 * device: the NVIDIA GPUs of this host, read through the driver API
 * (libcuda.so.1, loaded at run time so the binary runs on hosts without a
 * driver). No CUDA context is created.
 *
 * Call it in a process that will not fork children which then use CUDA
 * (the driver is not fork-safe): doctor, or a runner before its work.
 */
#ifndef KB_GPU_DEVICE_H
#define KB_GPU_DEVICE_H

#include <stddef.h>

struct gpu_device {
	int index;			/* ordinal as CUDA numbers it */
	char name[256];
	char pci_bus_id[32];		/* "0000:3b:00.0" */
	int cc_major, cc_minor;		/* compute capability */
	size_t mem_bytes;
	int sm_count;
	int l2_bytes;
	int smem_optin_bytes;		/* shared memory a block may opt into */
	double peak_bw_gbs;		/* from memory clock and bus width: a ceiling, not a measurement */
};

/*
 * List the GPUs. 0 and *out (free() it) with *n >= 0; no driver or no
 * device gives 0 with *n == 0 and the reason in why (may be NULL).
 * -errno only for a broken driver that reports devices it cannot describe.
 */
int gpu_list(struct gpu_device **out, int *n, char *why, size_t whylen);

/* The driver's version as "13.0", or "" when there is no driver. */
void gpu_driver_version(char *dst, size_t len);

#endif
