#!/usr/bin/python3
"""Trusted test driver for generated CPU kernels, kept for speed: one
process checks all ~100 fixture kernels, where `kernelbot eval` costs a
judge per problem (tests/compiler/check_cpu.sh uses the real evaluator).
Compile kernel.c as the evaluator does, call kernelbot_forward on the
problem's inputs through ctypes/DLPack structs (and every set of its
get_input_variants()), compare with the module's forward. A problem's
get_unmatched_inputs(), when defined, gives shapes the kernel was not
built for: it must return 2 with a message on stderr and write nothing.

usage: run_kernel.py PROBLEM.py KERNEL.c [PROBLEM.py KERNEL.c ...]
                     [--seed N] [--trials N] [--time]
Prints one line per pair, "ok max_abs_err=..." or "FAIL ...", and exits 0
when all passed (one process for many pairs: torch imports once).
Outputs are pre-filled with NaN (integers with a sentinel) so an element
the kernel never writes fails the check; each trial runs the kernel twice
and checks the inputs were not modified.
"""
import argparse
import concurrent.futures
import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch

CC = ["cc", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-I/usr/include"]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DTYPES = {torch.float32: (2, 32), torch.float64: (2, 64), torch.int64: (0, 64), torch.int32: (0, 32),
          torch.int16: (0, 16), torch.int8: (0, 8), torch.uint8: (1, 8), torch.bool: (6, 8)}


def dl(t, keep):
    shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
    keep.append(shape)
    code, bits = DTYPES[t.dtype]
    return DLTensor(ctypes.c_void_p(t.data_ptr()), DLDevice(1, 0), t.dim(), DLDataType(code, bits, 1),
                    shape, None, 0)


def load_problem(path):
    spec = importlib.util.spec_from_file_location("kb_problem", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def abi_inputs(model, inputs, kernel, problem):
    """The IR's input order: forward's tensor arguments, parameters, buffers,
    then tensor constants (module attributes), which the generated kernel's
    header names ("inputs: x w.weight ...")."""
    ins = [x for x in inputs if isinstance(x, torch.Tensor)]
    ins += [p.detach() for _, p in model.named_parameters()] + [b.detach() for _, b in model.named_buffers()]
    names = []
    with open(kernel) as f:
        for line in f:
            if line.startswith(" * inputs:"):
                names = line.split(":", 1)[1].strip().rstrip(".").split()
                break
    for name in names[len(ins):]:
        obj = model
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
            ins.append(obj.detach())
        except AttributeError:
            ins.append(ir_constant(problem, name))
    return ins


def ir_constant(problem, name):
    """A constant fx made up (torch.ones(M) -> _tensor_constant0): its data
    is inline in the problem's IR fixture under tests/fixtures/ir/."""
    base = os.path.splitext(os.path.basename(problem))[0]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "ir",
                        base + ".json")
    with open(path) as f:
        ir = json.load(f)
    for i in ir["inputs"]:
        if i["name"] == name and "data" in i:
            dt = getattr(torch, i["dtype"])
            return torch.tensor([float(v["float"]) if isinstance(v, dict) else v for v in i["data"]],
                                dtype=dt).reshape(i["shape"])
    raise AttributeError("constant %s has no data in %s" % (name, path))


def poison(ref):
    out = torch.empty(ref.shape, dtype=ref.dtype)  # contiguous, whatever the reference's strides
    if ref.dtype.is_floating_point:
        out.fill_(float("nan"))
    elif ref.dtype == torch.bool:
        out.fill_(True)
    else:
        out.fill_(-7777777)
    return out


def compare(out, ref):
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return False, "shape/dtype %s %s vs %s %s" % (out.dtype, list(out.shape), ref.dtype, list(ref.shape))
    if not ref.dtype.is_floating_point:
        bad = (out != ref).sum().item()
        return bad == 0, "%d mismatched elements" % bad
    if not torch.equal(torch.isnan(out), torch.isnan(ref)):
        return False, "NaN positions differ (%d vs %d NaNs)" % (torch.isnan(out).sum(), torch.isnan(ref).sum())
    fin = torch.isfinite(ref)
    if not torch.equal(out[~fin & ~torch.isnan(ref)], ref[~fin & ~torch.isnan(ref)]):
        return False, "Inf positions differ"
    err = (out[fin].double() - ref[fin].double()).abs()
    maxerr = err.max().item() if err.numel() else 0.0
    ok = torch.allclose(out[fin], ref[fin], atol=1e-4, rtol=1e-4)
    return ok, "max_abs_err=%.3g" % maxerr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("items", nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--time", action="store_true")
    a = ap.parse_args()
    if len(a.items) % 2:
        ap.error("arguments come in PROBLEM KERNEL pairs")
    rc = 0
    tmp = tempfile.mkdtemp()
    try:
        # cc is most of the time: build every kernel first, in parallel
        kernels = a.items[1::2]
        sos = [os.path.join(tmp, "k%d.so" % i) for i in range(len(kernels))]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            builds = list(ex.map(lambda ks: subprocess.run(CC + ["-o", ks[1], ks[0]], capture_output=True, text=True),
                                 zip(kernels, sos)))
        for i in range(0, len(a.items), 2):
            a.problem, a.kernel = a.items[i], a.items[i + 1]
            rc |= one(a, builds[i // 2], sos[i // 2])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


def one(a, build, so):
    if build.returncode:
        print("FAIL compile: " + build.stderr[-3000:].replace("\n", " | "))
        return 1
    try:
        r = check(a, so)
    except Exception as e:  # a broken problem file fails its pair, not the batch
        print("FAIL %s: %s: %s" % (a.problem, type(e).__name__, e))
        r = 1
    sys.stdout.flush()
    return r


def input_sets(mod, trials, seed):
    """(label, inputs): the main inputs once per trial, then every declared
    shape variant once: a kernel must be right on each."""
    for trial in range(trials):
        torch.manual_seed(seed * 1000 + trial + 1)
        yield "trial %d" % trial, mod.get_inputs()
    if hasattr(mod, "get_input_variants"):
        torch.manual_seed(seed * 1000 + 999)
        for i, v in enumerate(mod.get_input_variants()):
            yield "input variant %d" % (i + 1), v


def refuses(fwd, model, mod, a):
    """A problem's get_unmatched_inputs(): shapes the kernel was not built
    for. It must return 2, say why on stderr, and write no output."""
    inputs = mod.get_unmatched_inputs()
    with torch.no_grad():
        ref = model(*inputs)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    ins = [t.contiguous() for t in abi_inputs(model, inputs, a.kernel, a.problem)]
    outs = [poison(r) for r in refs]
    keep = []
    din = (DLTensor * max(len(ins), 1))(*[dl(t, keep) for t in ins])
    dout = (DLTensor * len(outs))(*[dl(t, keep) for t in outs])
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            rc = fwd(din, len(ins), dout, len(outs), None)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        said = f.read().decode(errors="replace")
    if rc != 2 or "match none" not in said:
        print("FAIL unmatched shapes: kernel returned %d, stderr %r" % (rc, said[:300]))
        return 1
    if not all(torch.equal(o, poison(r)) or torch.isnan(o).all() for o, r in zip(outs, refs)):
        print("FAIL unmatched shapes: the kernel wrote an output")
        return 1
    return 0


def check(a, so):
    lib = ctypes.CDLL(so)
    fwd = lib.kernelbot_forward
    fwd.restype = ctypes.c_int
    fwd.argtypes = [ctypes.POINTER(DLTensor), ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.c_int,
                    ctypes.c_void_p]
    mod = load_problem(a.problem)
    torch.manual_seed(a.seed)
    model = mod.Model(*mod.get_init_inputs()).eval()
    worst = ""
    timed = None
    for trial, inputs in input_sets(mod, a.trials, a.seed):
        with torch.no_grad():
            ref = model(*inputs)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        ins = [t.contiguous() for t in abi_inputs(model, inputs, a.kernel, a.problem)]
        saved = [t.clone() for t in ins]
        for run in range(2):
            outs = [poison(r) for r in refs]
            keep = []
            din = (DLTensor * max(len(ins), 1))(*[dl(t, keep) for t in ins])
            dout = (DLTensor * len(outs))(*[dl(t, keep) for t in outs])
            rc = fwd(din, len(ins), dout, len(outs), None)
            if rc:
                print("FAIL kernel returned %d on %s" % (rc, trial))
                return 1
            for i, (o, rf) in enumerate(zip(outs, refs)):
                ok, msg = compare(o, rf)
                if not ok:
                    print("FAIL output %d %s run %d: %s" % (i, trial, run, msg))
                    return 1
                worst = msg
        for t, s in zip(ins, saved):
            if not torch.equal(t, s) and not (t.dtype.is_floating_point and
                                               torch.equal(torch.isnan(t), torch.isnan(s))):
                print("FAIL the kernel modified an input")
                return 1
        timed = timed or (inputs, ins, refs)
    if hasattr(mod, "get_unmatched_inputs") and refuses(fwd, model, mod, a) != 0:
        return 1
    line = "ok " + worst
    if a.time:
        inputs, ins, refs = timed
        outs = [poison(r) for r in refs]
        keep = []
        din = (DLTensor * max(len(ins), 1))(*[dl(t, keep) for t in ins])
        dout = (DLTensor * len(outs))(*[dl(t, keep) for t in outs])

        def med(fn, n=10):
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return sorted(ts)[n // 2] * 1e3
        with torch.no_grad():
            te = med(lambda: model(*inputs))
        tk = med(lambda: fwd(din, len(ins), dout, len(outs), None))
        line += " eager_ms=%.3f kernel_ms=%.3f speedup=%.2fx" % (te, tk, te / tk)
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
