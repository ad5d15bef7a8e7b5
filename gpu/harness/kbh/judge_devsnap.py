"""The judge's copy of a timed run's outputs on CUDA.

A timed run's outputs must reach the judge as they were when the call
returned: a candidate's thread may rewrite them afterwards, finishing
work it skipped inside the timed call. On the CPU (and where this module
cannot work) the worker seals a host copy of each run's snapshot into a
memfd before it replies; on GPU-sized outputs that copy (hundreds of MB
through host memory into a fresh memfd, every run) took most of a timed
run's wall time. Here instead the worker exports each timing set's
snapshot once as shared device memory (its "export": a POSIX file
descriptor from cuMemExportToShareableHandle, passed with the reply), the
judge maps it (Shared), and as each timed run's reply arrives the judge
copies the snapshot into device memory of its own and synchronizes, all
inside its clock of that request: whatever a candidate's thread writes
into the snapshot before the copy is done, it writes while the judge's
clock runs, and nothing it writes later reaches the judge. The candidate
never sees the judge's copy (it is never exported).

The driver API through ctypes (libcuda.so.1, the stable ABI), on the
primary context, which PyTorch's runtime shares."""
import ctypes
import os
import sys

import torch

# CUmemAllocationHandleType, CUmemLocationType, CUmemAccess_flags.
HANDLE_POSIX_FD = 1
LOCATION_DEVICE = 1
ACCESS_RW = 3


class ShareError(Exception):
    pass


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_drv = None


def driver():
    """libcuda.so.1's calls this module uses, loaded once; ShareError
    where there is no driver or it lacks them."""
    global _drv
    if _drv is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise ShareError("no NVIDIA driver: %s" % e)
        u64, sz = ctypes.c_ulonglong, ctypes.c_size_t
        sigs = {
            "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
            "cuMemImportFromShareableHandle": [ctypes.POINTER(u64), ctypes.c_void_p, ctypes.c_int],
            "cuMemAddressReserve": [ctypes.POINTER(u64), sz, sz, u64, u64],
            "cuMemAddressFree": [u64, sz],
            "cuMemMap": [u64, sz, sz, u64, u64],
            "cuMemUnmap": [u64, sz],
            "cuMemSetAccess": [u64, sz, ctypes.POINTER(_Access), sz],
            "cuMemRelease": [u64],
            "cuMemcpyDtoDAsync_v2": [u64, u64, sz, ctypes.c_void_p],
            "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        }
        for name, args in sigs.items():
            try:
                f = getattr(lib, name)
            except AttributeError:
                raise ShareError("libcuda.so.1 lacks %s" % name)
            f.argtypes, f.restype = args, ctypes.c_int
        _drv = lib
    return _drv


_unusable = None


def usable():
    """Whether this process can map a worker's export (the driver and its
    calls load); where not, said once on stderr, and the judge keeps the
    sealed memfds."""
    global _unusable
    if _unusable is None:
        try:
            driver()
            _unusable = ""
        except ShareError as e:
            _unusable = str(e)
            sys.stderr.write("judge: no exported snapshots: %s; sealed memfds\n" % _unusable)
    return not _unusable


def _check(rc, what):
    if rc != 0:
        s = ctypes.c_char_p()
        driver().cuGetErrorString(rc, ctypes.byref(s))
        raise ShareError("%s: %s (%d)" % (what, (s.value or b"?").decode(), rc))


class Shared:
    """One timing set's snapshot, exported by the worker, mapped here for
    reading, and the judge's own copy of it (own: a uint8 tensor of
    `size` bytes; outputs at `offsets`). Takes the descriptor (closes it)."""

    def __init__(self, fd, size, offsets, device):
        self.size, self.offsets, self.device = size, list(offsets), device
        self.ptr, self.handle, self.mapped = 0, 0, False
        d = driver()
        try:
            if not isinstance(size, int) or size <= 0 or any(
                    not isinstance(o, int) or o < 0 or o >= size for o in self.offsets):
                raise ShareError("a malformed export (%r bytes, offsets %r)" % (size, offsets))
            torch.cuda.init()
            with torch.cuda.device(device):
                torch.cuda.current_stream(device)	# the primary context, current here
                h = ctypes.c_ulonglong()
                _check(d.cuMemImportFromShareableHandle(ctypes.byref(h), ctypes.c_void_p(fd),
                                                         HANDLE_POSIX_FD),
                       "cuMemImportFromShareableHandle")
                self.handle = h.value
                p = ctypes.c_ulonglong()
                _check(d.cuMemAddressReserve(ctypes.byref(p), size, 0, 0, 0), "cuMemAddressReserve")
                self.ptr = p.value
                _check(d.cuMemMap(self.ptr, size, 0, self.handle, 0), "cuMemMap")
                self.mapped = True
                dev = ctypes.c_int()
                _check(d.cuDeviceGet(ctypes.byref(dev), device.index or 0), "cuDeviceGet")
                acc = _Access(_Location(LOCATION_DEVICE, dev.value), ACCESS_RW)
                _check(d.cuMemSetAccess(self.ptr, size, ctypes.byref(acc), 1), "cuMemSetAccess")
            self.own = torch.empty(size, dtype=torch.uint8, device=device)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(fd)

    def copy(self, nbytes):
        """The snapshot's first nbytes into the judge's copy; returns when
        the copy is done."""
        if nbytes > self.size:
            raise ShareError("%d bytes of outputs in a %d-byte export" % (nbytes, self.size))
        with torch.cuda.device(self.device):
            st = torch.cuda.current_stream(self.device)
            _check(driver().cuMemcpyDtoDAsync_v2(self.own.data_ptr(), self.ptr, nbytes,
                                                  ctypes.c_void_p(st.cuda_stream)),
                   "cuMemcpyDtoDAsync")
            st.synchronize()

    def close(self):
        if _drv is None:
            return
        if self.mapped:
            torch.cuda.synchronize(self.device)
            _drv.cuMemUnmap(self.ptr, self.size)
            self.mapped = False
        if self.ptr:
            _drv.cuMemAddressFree(self.ptr, self.size)
            self.ptr = 0
        if self.handle:
            _drv.cuMemRelease(self.handle)
            self.handle = 0
        self.own = None
