#!/usr/bin/env python3
"""Check and time graph-compiler CUDA kernels against eager PyTorch and
torch.compile on a GPU (until `kernelbot eval` lands; then bench/compiler_gpu.sh
switches to it).

usage: compiler_gpu.py [--runs N] [--no-compile] PROBLEM.py KERNEL.so [PROBLEM.py KERNEL.so ...]

For each pair: correctness on fresh inputs (outputs poisoned with NaN,
allclose fp32 atol=rtol=1e-4, max abs error), then the median of
CUDA-event-timed runs with an L2 flush before each, for the kernel, eager
and torch.compile, all on the same stream. The table is printed last.
"""
import argparse
import ctypes
import importlib.util
import math
import statistics
import sys
import traceback

import torch


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DTYPES = {torch.float32: (2, 32), torch.float64: (2, 64), torch.int64: (0, 64), torch.int32: (0, 32),
          torch.uint8: (1, 8), torch.bool: (6, 8)}


def dl(t, keep):
    shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
    keep.append(shape)
    code, bits = DTYPES[t.dtype]
    dev = DLDevice(2 if t.is_cuda else 1, t.device.index or 0)
    return DLTensor(ctypes.c_void_p(t.data_ptr()), dev, t.dim(), DLDataType(code, bits, 1), shape, None, 0)


def load(path):
    spec = importlib.util.spec_from_file_location("kb_problem_%d" % abs(hash(path)), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cuda(x):
    return x.cuda() if isinstance(x, torch.Tensor) else x


_flush = None


def flush_l2():
    global _flush
    if _flush is None:
        _flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    _flush.zero_()


def time_ms(fn, runs):
    stream = torch.cuda.current_stream()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        flush_l2()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        fn()
        b.record(stream)
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def bench(problem, so, runs, use_compile):
    mod = load(problem)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).eval().cuda()
    torch.manual_seed(1)
    inputs = [cuda(x) for x in mod.get_inputs()]
    lib = ctypes.CDLL(so)
    fwd = lib.kernelbot_forward
    fwd.restype = ctypes.c_int
    with torch.no_grad():
        ref = model(*inputs)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    ins = [t.contiguous() for t in [x for x in inputs if isinstance(x, torch.Tensor)] +
           [p.detach() for _, p in model.named_parameters()] + [b.detach() for _, b in model.named_buffers()]]
    outs = []
    for r in refs:
        o = torch.empty(r.shape, dtype=r.dtype, device=r.device)
        o.fill_(float("nan") if r.dtype.is_floating_point else -7)
        outs.append(o)
    keep = []
    din = (DLTensor * max(len(ins), 1))(*[dl(t, keep) for t in ins])
    dout = (DLTensor * len(outs))(*[dl(t, keep) for t in outs])
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def run():
        rc = fwd(din, len(ins), dout, len(outs), stream)
        if rc:
            raise RuntimeError("kernelbot_forward returned %d" % rc)
    run()
    torch.cuda.synchronize()
    err, ok = 0.0, True
    for o, r in zip(outs, refs):
        if r.dtype.is_floating_point:
            same_nan = torch.equal(torch.isnan(o), torch.isnan(r))
            fin = torch.isfinite(r)
            err = max(err, (o[fin].double() - r[fin].double()).abs().max().item() if fin.any() else 0.0)
            ok = ok and same_nan and torch.allclose(o[fin], r[fin], atol=1e-4, rtol=1e-4)
        else:
            ok = ok and torch.equal(o, r)
    with torch.no_grad():
        t_k = time_ms(run, runs)
        t_e = time_ms(lambda: model(*inputs), runs)
        t_c = float("nan")
        if use_compile and hasattr(torch, "compile"):
            try:
                cm = torch.compile(model)
                t_c = time_ms(lambda: cm(*inputs), runs)
            except Exception as e:  # report, keep going
                print("torch.compile failed on %s: %s" % (problem, e), file=sys.stderr)
    return ok, err, t_k, t_e, t_c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("items", nargs="+")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    rows = []
    for i in range(0, len(a.items), 2):
        p, so = a.items[i], a.items[i + 1]
        name = p.rsplit("/", 1)[-1].replace(".py", "")
        try:
            rows.append((name,) + bench(p, so, a.runs, not a.no_compile))
        except Exception as e:
            traceback.print_exc()
            rows.append((name, False, float("nan"), float("nan"), float("nan"), float("nan")))
            print("%s: %s" % (name, e), file=sys.stderr)
        r = rows[-1]
        print("%-34s %s err=%.2e kernel=%.3f eager=%.3f compile=%.3f" % (r[:1] + (("ok" if r[1] else "FAIL"),) + r[2:]),
              flush=True)
    print()
    print("| problem | ok | max err | kernel ms | eager ms | compile ms | vs eager | vs compile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ge, gc = [], []
    for name, ok, err, tk, te, tc in rows:
        se = te / tk if tk == tk and tk > 0 else float("nan")
        sc = tc / tk if tc == tc and tk > 0 else float("nan")
        if ok and se == se:
            ge.append(se)
        if ok and sc == sc:
            gc.append(sc)
        print("| %s | %s | %.1e | %.3f | %.3f | %.3f | %.2fx | %.2fx |" % (name, "yes" if ok else "NO", err, tk, te, tc,
                                                                        se, sc))
    geo = (lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan"))
    print("geomean speedup (correct kernels): %.2fx vs eager (%d), %.2fx vs torch.compile (%d)" %
          (geo(ge), len(ge), geo(gc), len(gc)))


if __name__ == "__main__":
    main()
