#include "gpu/device.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The handful of driver entry points used here, by their stable ABI. */
typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_busid_fn)(char *, int, int);
typedef int (*cu_version_fn)(int *);

enum {
	ATTR_SM_COUNT = 16,
	ATTR_PCI_BUS = 33,
	ATTR_MEM_CLOCK_KHZ = 36,
	ATTR_BUS_WIDTH = 37,
	ATTR_L2 = 38,
	ATTR_PCI_DEVICE = 34,
	ATTR_PCI_DOMAIN = 50,
	ATTR_CC_MAJOR = 75,
	ATTR_CC_MINOR = 76,
	ATTR_SMEM_OPTIN = 97,
};

struct cu_api {
	void *lib;
	cu_init_fn init;
	cu_count_fn count;
	cu_get_fn get;
	cu_name_fn name;
	cu_attr_fn attr;
	cu_mem_fn mem;
	cu_version_fn version;
};

static int
cu_open(struct cu_api *a, char *why, size_t whylen)
{
	memset(a, 0, sizeof(*a));
	if (!(a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		if (why)
			snprintf(why, whylen, "no NVIDIA driver (libcuda.so.1 not loadable)");
		return -ENOENT;
	}
	a->init = (cu_init_fn)dlsym(a->lib, "cuInit");
	a->count = (cu_count_fn)dlsym(a->lib, "cuDeviceGetCount");
	a->get = (cu_get_fn)dlsym(a->lib, "cuDeviceGet");
	a->name = (cu_name_fn)dlsym(a->lib, "cuDeviceGetName");
	a->attr = (cu_attr_fn)dlsym(a->lib, "cuDeviceGetAttribute");
	a->mem = (cu_mem_fn)dlsym(a->lib, "cuDeviceTotalMem_v2");
	a->version = (cu_version_fn)dlsym(a->lib, "cuDriverGetVersion");
	if (!a->init || !a->count || !a->get || !a->name || !a->attr || !a->mem) {
		if (why)
			snprintf(why, whylen, "libcuda.so.1 lacks the device API");
		dlclose(a->lib);
		a->lib = NULL;
		return -ENOSYS;
	}
	return 0;
}

void
gpu_driver_version(char *dst, size_t len)
{
	struct cu_api a;
	int v = 0;

	dst[0] = '\0';
	if (cu_open(&a, NULL, 0) < 0)
		return;
	if (a.version && a.version(&v) == 0 && v > 0)
		snprintf(dst, len, "%d.%d", v / 1000, (v % 1000) / 10);
	dlclose(a.lib);
}

int
gpu_list(struct gpu_device **out, int *n, char *why, size_t whylen)
{
	struct gpu_device *devs = NULL;
	struct cu_api a;
	int count = 0, rc, error = 0;

	*out = NULL;
	*n = 0;
	if (cu_open(&a, why, whylen) < 0)
		return 0;
	if ((rc = a.init(0)) != 0) {
		if (why)
			snprintf(why, whylen, "the NVIDIA driver failed to initialize (CUresult %d)", rc);
		goto out;
	}
	if ((rc = a.count(&count)) != 0 || count <= 0) {
		if (why)
			snprintf(why, whylen, "no CUDA device visible");
		count = 0;
		goto out;
	}
	if (!(devs = calloc((size_t)count, sizeof(*devs)))) {
		error = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < count; i++) {
		struct gpu_device *d = &devs[i];
		int dev, clk = 0, width = 0, dom = 0, bus = 0, slot = 0;

		if (a.get(&dev, i) != 0 || a.name(d->name, sizeof(d->name), dev) != 0 ||
		    a.attr(&d->cc_major, ATTR_CC_MAJOR, dev) != 0 ||
		    a.attr(&d->cc_minor, ATTR_CC_MINOR, dev) != 0 ||
		    a.mem(&d->mem_bytes, dev) != 0) {
			error = -EIO;
			goto out;
		}
		d->index = i;
		a.attr(&d->sm_count, ATTR_SM_COUNT, dev);
		a.attr(&d->l2_bytes, ATTR_L2, dev);
		a.attr(&d->smem_optin_bytes, ATTR_SMEM_OPTIN, dev);
		a.attr(&clk, ATTR_MEM_CLOCK_KHZ, dev);
		a.attr(&width, ATTR_BUS_WIDTH, dev);
		a.attr(&dom, ATTR_PCI_DOMAIN, dev);
		a.attr(&bus, ATTR_PCI_BUS, dev);
		a.attr(&slot, ATTR_PCI_DEVICE, dev);
		snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%04x:%02x:%02x.0",
		    dom, bus, slot);
		/* Double data rate: two transfers per clock. */
		d->peak_bw_gbs = 2.0 * clk * 1e3 * (width / 8.0) / 1e9;
	}
	*out = devs;
	*n = count;
	devs = NULL;
out:
	free(devs);
	dlclose(a.lib);
	return error;
}
