"""Drop-in module for a kernel found by kernelbot (generated: do not edit).

Usage, from the repository root (where kernels/ is):

    import importlib
    fast = importlib.import_module("kernels.SLUG").load(model)
    y = fast(x)                 # the kernel, or model(x) where it cannot run

(`from kernels.SLUG import load` works too when SLUG is a Python identifier.)

load(module) returns an nn.Module whose forward calls the verified kernel
in this folder (kernel.c, kernel.cu, or one source per GPU architecture,
sm_XY.cu, listed in manifest.json). The kernel is built on first use with
cc or nvcc into a cache ($KERNELBOT_CACHE, else ~/.cache/kernelbot) keyed
by the SHA-256 of its source and build command, then loaded with ctypes
and called through the kernelbot ABI v1 (DLPack tensors: the forward's
tensor arguments, then the module's parameters and buffers in
named_parameters()/named_buffers() order; outputs allocated here).

Where the kernel cannot run, forward() calls the original module instead
and says why once (a RuntimeWarning; also in .fallback_reason): no
compiler, a build or load failure, tensors on another device (a CPU
kernel for CUDA tensors or the reverse), a GPU architecture with no
source, a dtype or input shape the kernel was not verified for, the
module in training mode, autograd recording (call it under
torch.no_grad() or torch.inference_mode()), or a kernel that returned an
error. The first call for each new input signature also runs the original
module once, for the output shapes, and compares: a kernel that disagrees
is never used again for that module.
"""
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(HERE, "manifest.json")) as _f:
    MANIFEST = json.load(_f)

__all__ = ["load", "KernelModule", "MANIFEST"]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DTYPES = {torch.float32: (2, 32), torch.float64: (2, 64), torch.float16: (2, 16),
           torch.bfloat16: (4, 16), torch.int64: (0, 64), torch.int32: (0, 32),
           torch.int16: (0, 16), torch.int8: (0, 8), torch.uint8: (1, 8), torch.bool: (6, 8)}
_KDL_CPU, _KDL_CUDA = 1, 2
_BUILD_LOCK = threading.Lock()


def _cache_dir():
    d = os.environ.get("KERNELBOT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kernelbot")
    os.makedirs(d, exist_ok=True)
    return d


def _dlpack_include():
    """-I for <dlpack/dlpack.h>: the system's, else PyTorch's copy (ATen/dlpack.h)."""
    if os.environ.get("KERNELBOT_INCLUDE"):
        return ["-I" + os.environ["KERNELBOT_INCLUDE"]]
    if os.path.exists("/usr/include/dlpack/dlpack.h"):
        return []
    aten = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "dlpack.h")
    if not os.path.exists(aten):
        return []
    shim = os.path.join(_cache_dir(), "include", "dlpack")
    os.makedirs(shim, exist_ok=True)
    hdr = os.path.join(shim, "dlpack.h")
    if not os.path.exists(hdr):
        with open(hdr + ".tmp", "w") as f:
            f.write('#include "%s"\n' % aten)
        os.replace(hdr + ".tmp", hdr)
    return ["-I" + os.path.dirname(shim)]


def _build_command(kernel, arch, src, out):
    if kernel["backend"] == "cuda":
        nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                        if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
        if not nvcc:
            return None, "nvcc not found (install the CUDA toolkit or put nvcc on PATH)"
        cmd = [nvcc] + _dlpack_include() + ["-O3", "-arch=" + arch, "--shared", "-Xcompiler", "-fPIC",
                                            "-o", out, src, "-lcublas", "-lcublasLt"]
        lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "lib64")
        if os.path.isdir(lib):   # find cuBLAS at load time without ld.so.conf
            cmd += ["-Xlinker", "-rpath=" + lib]
        return cmd, None
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return None, "no C compiler found (cc)"
    return ([cc] + _dlpack_include() + ["-O3", "-march=native", "-fopenmp", "-fno-math-errno",
                                        "-shared", "-fPIC", "-o", out, src, "-lm"], None)


def _build(kernel, arch):
    """The shared object for kernel (a manifest "kernels" entry), built
    once per source and command; (path, None) or (None, why)."""
    src = os.path.join(HERE, kernel["file"])
    with open(src, "rb") as f:
        code = f.read()
    cmd, why = _build_command(kernel, arch, "SRC", "OUT")
    if cmd is None:
        return None, why
    key = hashlib.sha256(code + b"\0" + " ".join(cmd).encode()).hexdigest()
    so = os.path.join(_cache_dir(), key[:2], key + ".so")
    if os.path.exists(so):
        return so, None
    with _BUILD_LOCK:
        if os.path.exists(so):
            return so, None
        os.makedirs(os.path.dirname(so), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="build-", dir=os.path.dirname(so))
        try:
            ext = ".cu" if kernel["backend"] == "cuda" else ".c"
            tsrc, tout = os.path.join(tmp, "kernel" + ext), os.path.join(tmp, "kernel.so")
            with open(tsrc, "wb") as f:
                f.write(code)
            cmd, _ = _build_command(kernel, arch, tsrc, tout)
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            if r.returncode != 0:
                return None, "building %s failed: %s" % (kernel["file"], r.stdout[-2000:])
            os.replace(tout, so)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return so, None


def _arch_of(device):
    major, minor = torch.cuda.get_device_capability(device)
    return "sm_%d%d" % (major, minor)


def _pick(backend, arch):
    """The manifest's kernel for this backend (and GPU architecture): the
    exact architecture, else the newest one not above it (rebuilt for
    this GPU); None when there is none."""
    ks = [k for k in MANIFEST["kernels"] if k["backend"] == backend]
    if backend != "cuda":
        return ks[0] if ks else None

    def num(a):
        try:
            return int(a.split("_", 1)[1])
        except (AttributeError, IndexError, ValueError):
            return 0
    fit = [k for k in ks if num(k.get("arch")) <= num(arch)]
    exact = [k for k in fit if k.get("arch") == arch]
    if exact:
        return exact[0]
    return max(fit, key=lambda k: num(k.get("arch"))) if fit else None


def _dl(t, keep):
    shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
    keep.append(shape)
    code, bits = _DTYPES[t.dtype]
    if t.is_cuda:
        dev = _DLDevice(_KDL_CUDA, t.device.index or 0)
    else:
        dev = _DLDevice(_KDL_CPU, 0)
    return _DLTensor(ctypes.c_void_p(t.data_ptr()), dev, t.dim(), _DLDataType(code, bits, 1), shape, None, 0)


def _tol(dtype):
    t = MANIFEST.get("tolerance") or {}
    if dtype in (torch.float16, torch.bfloat16):
        return t.get("atol", 1e-2), t.get("rtol", 1e-2)
    return t.get("atol", 1e-4), t.get("rtol", 1e-4)


class KernelModule(torch.nn.Module):
    """The original module with forward() running the kernel."""

    def __init__(self, original):
        super().__init__()
        self.original = original
        self.fallback_reason = None
        self.kernel_calls = 0
        self._libs = {}          # (backend, device index) -> kernelbot_forward, or a reason
        self._checked = {}       # input signature -> output specs, or a reason
        self._warned = set()

    def _fallback(self, why, args, kwargs):
        self.fallback_reason = why
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn("kernelbot kernel %s not used: %s; running the original module"
                          % (MANIFEST.get("slug", "?"), why), RuntimeWarning, stacklevel=3)
        return self.original(*args, **kwargs)

    def _function(self, device):
        backend = "cuda" if device.type == "cuda" else "cpu"
        key = (backend, device.index)
        if key not in self._libs:
            arch = _arch_of(device) if backend == "cuda" else None
            kernel = _pick(backend, arch)
            if kernel is None:
                self._libs[key] = "no %s kernel in this folder%s" % (
                    backend, " for %s" % arch if arch else "")
            else:
                so, why = _build(kernel, arch)
                if so is None:
                    self._libs[key] = why
                else:
                    try:
                        fn = ctypes.CDLL(so).kernelbot_forward
                        fn.restype = ctypes.c_int
                        fn.argtypes = [ctypes.POINTER(_DLTensor), ctypes.c_int,
                                       ctypes.POINTER(_DLTensor), ctypes.c_int, ctypes.c_void_p]
                        self._libs[key] = fn
                    except (OSError, AttributeError) as e:
                        self._libs[key] = "loading %s failed: %s" % (kernel["file"], e)
        return self._libs[key]

    def _abi_inputs(self, acts):
        ins = list(acts)
        ins += [p.detach() for _, p in self.original.named_parameters()]
        ins += [b.detach() for _, b in self.original.named_buffers()]
        names = MANIFEST.get("abi_inputs") or []
        for name in names[len(ins):]:
            obj = self.original
            for part in name.split("."):
                obj = getattr(obj, part, None)
            if not isinstance(obj, torch.Tensor):
                return None, "the kernel's input %r is not an attribute of the module" % name
            ins.append(obj.detach())
        if names and len(ins) != len(names):
            return None, "the module has %d inputs for the kernel, which takes %d" % (len(ins), len(names))
        return ins, None

    def _unsupported(self, args, kwargs):
        if kwargs:
            return "keyword arguments"
        if self.original.training:
            return "training mode (the kernel is for inference; call eval())"
        if torch.is_grad_enabled() and (any(isinstance(a, torch.Tensor) and a.requires_grad for a in args) or
                                        any(p.requires_grad for p in self.original.parameters())):
            return "autograd is recording (the kernel has no backward; use torch.no_grad() or torch.inference_mode())"
        acts = [a for a in args if isinstance(a, torch.Tensor)]
        if not acts:
            return "no tensor arguments"
        spec = MANIFEST.get("inputs") or []
        if spec:
            if len(acts) != len(spec):
                return "%d tensor arguments, the kernel was verified with %d" % (len(acts), len(spec))
            for a, s in zip(acts, spec):
                if str(a.dtype).replace("torch.", "") != s["dtype"]:
                    return "input %s is %s, the kernel was verified for %s" % (
                        s["name"], str(a.dtype).replace("torch.", ""), s["dtype"])
            shapes = [list(a.shape) for a in acts]
            verified = MANIFEST.get("input_shapes") or [[s["shape"] for s in spec]]
            if shapes not in verified:
                return "input shapes %s, the kernel was verified for %s" % (shapes, verified)
        devs = {a.device for a in acts} | {p.device for p in self.original.parameters()}
        if len(devs) != 1:
            return "tensors on several devices"
        for a in acts:
            if a.dtype not in _DTYPES:
                return "dtype %s" % a.dtype
        return None

    def forward(self, *args, **kwargs):
        why = self._unsupported(args, kwargs)
        if why:
            return self._fallback(why, args, kwargs)
        acts = [a.contiguous() for a in args if isinstance(a, torch.Tensor)]
        device = acts[0].device
        fn = self._function(device)
        if isinstance(fn, str):
            return self._fallback(fn, args, kwargs)
        ins, why = self._abi_inputs(acts)
        if why:
            return self._fallback(why, args, kwargs)
        ins = [t.contiguous() for t in ins]
        sig = tuple((tuple(t.shape), t.dtype, str(t.device)) for t in ins)
        check = sig not in self._checked
        if check:
            with torch.no_grad():
                ref = self.original(*args)
            refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
            if not all(isinstance(r, torch.Tensor) and r.dtype in _DTYPES for r in refs):
                self._checked[sig] = "outputs that are not tensors of a supported dtype"
            else:
                self._checked[sig] = ([(tuple(r.shape), r.dtype) for r in refs], isinstance(ref, (tuple, list)))
        specs = self._checked[sig]
        if isinstance(specs, str):
            return self._fallback(specs, args, kwargs)
        shapes, many = specs
        outs = [torch.empty(s, dtype=d, device=device) for s, d in shapes]
        keep = []
        din = (_DLTensor * max(len(ins), 1))(*[_dl(t, keep) for t in ins])
        dout = (_DLTensor * len(outs))(*[_dl(t, keep) for t in outs])
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None
        rc = fn(din, len(ins), dout, len(outs), stream)
        if rc != 0:
            self._checked[sig] = "the kernel returned %d for these inputs" % rc
            return self._fallback(self._checked[sig], args, kwargs)
        if check:
            for i, (o, r) in enumerate(zip(outs, refs)):
                atol, rtol = _tol(r.dtype)
                same = torch.allclose(o, r, atol=atol, rtol=rtol, equal_nan=True) if r.dtype.is_floating_point \
                    else torch.equal(o, r)
                if not same:
                    self._checked[sig] = "output %d differs from the original module's" % i
                    self._libs[(device.type, device.index)] = self._checked[sig]
                    return self._fallback(self._checked[sig], args, kwargs)
        self.fallback_reason = None
        self.kernel_calls += 1
        return tuple(outs) if many else outs[0]


def load(module):
    """The module with its forward replaced by the kernel (see the top of
    this file); the module's own parameters are read at every call."""
    return KernelModule(module)
