"""Checking a graph IR against the module it was traced from.

The IR is executed by the interpreter (interp.py) on FRESH inputs (a seed
other than the tracing seed) and compared with the module's own forward.
"auto" does that at full size when the estimated CPU cost is small, and
otherwise at a reduced size: the problem is reloaded with its module-level
int globals shrunk, re-traced, the reduced graph checked against the
reduced module, and its op sequence required to equal the full-size one
(shape-specialized control flow would show up as a different sequence).
"""
import math
import time

import torch

from . import interp, problem as problem_mod
from .ir import dtype_name, op_sequence
from .protocol import HarnessError, describe_exception

# Absolute/relative tolerance per dtype (docs/design.md, evaluation point 3).
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2, torch.float64: 1e-7}

# "auto" verifies at full size when the estimated CPU seconds of a check
# (generating fresh inputs, then two forwards) is below this. Rates are
# conservative for a small CI machine: torch.randn fills ~3e7 floats/s on
# two cores.
AUTO_FULL_SECONDS = 0.5
FLOP_RATE = 1e10
ELEM_RATE = 1e8
INPUT_RATE = 3e7

# Reductions tried in order for "reduced", until one loads, traces to the
# same op sequence and runs:
#  ("cap", c): every int global above c becomes its largest divisor <= c;
#     cheap and right for power-of-two sizes.
#  ("div", f): every int global divisible by f (with quotient >= 2) is
#     divided by f; ratios are kept, so groups | features keeps holding.
REDUCTIONS = (("cap", 32), ("cap", 64), ("div", 256), ("div", 64), ("div", 16), ("div", 4),
              ("cap", 256))


def verify_seed(seed):
    """The seed for fresh verification inputs: never the tracing seed."""
    return (seed * 7919 + 104729) % (1 << 31)


def estimate_seconds(ir):
    """Rough CPU cost of one forward from the IR (flops and elements)."""
    shapes = {i["name"]: i["shape"] for i in ir["inputs"]}
    flops = elems = 0
    inputs = sum(math.prod(s["shape"]) for s in ir["inputs"] if s["role"] == "input")
    for n in ir["nodes"]:
        shapes[n["name"]] = n["shape"]
        if n["shape"] is None:
            continue
        out = math.prod(n["shape"])
        elems += out
        arg_shapes = [shapes.get(a["ref"]) if isinstance(a, dict) and "ref" in a else None
                      for a in n["args"]]
        op = n["op"]
        if op in ("linear", "matmul", "bmm", "addmm") and arg_shapes:
            a = arg_shapes[1] if op == "addmm" else arg_shapes[0]
            k = a[-1] if a else 1
            flops += 2 * out * k
        elif op in ("conv1d", "conv2d"):
            w = arg_shapes[1]
            flops += 2 * out * math.prod(w[1:])
        else:
            flops += 4 * sum(math.prod(s) for s in arg_shapes if s)
    return inputs / INPUT_RATE + 2 * (flops / FLOP_RATE + elems / ELEM_RATE)


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        r = []
        for v in out:
            r.extend(_flatten(v))
        return r
    raise HarnessError("verify", "forward() returned a %s, not tensors" % type(out).__name__)


def compare(refs, outs):
    """Per-output comparison; returns a list of {max_abs_err, ...} or raises."""
    if len(refs) != len(outs):
        raise HarnessError("verify", "graph gives %d outputs, module gives %d" % (len(outs), len(refs)))
    report = []
    for i, (r, o) in enumerate(zip(refs, outs)):
        if tuple(r.shape) != tuple(o.shape) or r.dtype != o.dtype:
            raise HarnessError("verify", "output %d: graph gives %s%s, module gives %s%s" % (
                i, dtype_name(o.dtype), list(o.shape), dtype_name(r.dtype), list(r.shape)))
        if r.is_floating_point():
            tol = TOLERANCE.get(r.dtype, 1e-4)
            r64, o64 = r.double(), o.double()
            finite = torch.isfinite(r64)
            same_nonfinite = bool(torch.equal(r64[~finite].nan_to_num(0.0, 1.0, -1.0),
                                              o64[~finite].nan_to_num(0.0, 1.0, -1.0)))
            diff = (r64 - o64).abs()[finite & torch.isfinite(o64)]
            err = float(diff.max()) if diff.numel() else 0.0
            rf = r64[finite]
            scale = max(1.0, float(rf.pow(2).mean().sqrt())) if rf.numel() else 1.0
            ok = same_nonfinite and bool(torch.isfinite(o64[finite]).all()) and \
                bool(torch.allclose(o64[finite], rf, rtol=tol, atol=tol * scale))
            if not ok:
                raise HarnessError("verify", "output %d differs from the module: max abs error %.6g "
                                   "(tolerance rtol=%g atol=%g)%s" % (
                                       i, err, tol, tol * scale,
                                       "" if same_nonfinite else "; inf/nan positions differ"))
            report.append({"max_abs_err": err})
        else:
            if not torch.equal(r, o):
                bad = int((r != o).sum())
                raise HarnessError("verify", "output %d differs from the module in %d of %d elements"
                                   % (i, bad, r.numel()))
            report.append({"max_abs_err": 0.0})
    return report


def check(ir, prob, model, seed):
    """Run the IR and the module on fresh inputs and compare."""
    xs = problem_mod.make_inputs(prob, verify_seed(seed))
    env = interp.gather_inputs(ir, model, xs)
    with torch.no_grad():
        try:
            # a module that updates its inputs in place must not change
            # what the graph (run next) sees
            ref = model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs])
        except Exception as e:
            raise HarnessError("verify", "the module's forward failed on fresh inputs: %s"
                               % describe_exception(e, prob.path))
        try:
            outs = interp.run(ir, env)
        except Exception as e:
            raise HarnessError("verify", "running the graph failed: %s" % describe_exception(e))
    return compare(_flatten(ref), outs)


def _shrink(v, cap):
    if v <= cap:
        return v
    return max(d for d in range(1, cap + 1) if v % d == 0)


def reductions(prob):
    """Candidate override dicts, most aggressive first; empty when no int
    global exceeds the smallest cap."""
    g = {k: v for k, v in problem_mod.int_globals(prob).items() if v > 1}
    seen, out = set(), []
    for kind, n in REDUCTIONS:
        if kind == "cap":
            ov = {k: _shrink(v, n) for k, v in g.items() if _shrink(v, n) != v}
        else:
            ov = {k: v // n for k, v in g.items() if v % n == 0 and v // n >= 2}
        key = tuple(sorted(ov.items()))
        if ov and key not in seen:
            seen.add(key)
            out.append(ov)
    return out


def _first_diff(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "at node %d (%s, full size has %s)" % (i, g, w)
    return "in length (%d nodes, full size has %d)" % (len(got), len(want))


def run(mode, ir, prob, model, seed, retrace):
    """Verify per mode; returns the report dict for the reply.

    retrace(problem, model, inputs) -> ir: the same tracing the caller did,
    used on the reduced-size problem.
    """
    t0 = time.monotonic()
    report = {"mode": mode, "seed": verify_seed(seed)}
    if mode == "none":
        report["mode"] = "none"
        return report
    if mode == "auto":
        est = estimate_seconds(ir)
        report["estimated_seconds"] = round(est, 3)
        mode = "full" if est <= AUTO_FULL_SECONDS else "reduced"
    notes = []
    if mode == "reduced":
        want = op_sequence(ir)
        for ov in reductions(prob):
            try:
                init, inputs, variants = prob.specs
                p2 = problem_mod.load(prob.path, prob.class_name, init, inputs, overrides=ov,
                                      variants_name=variants)
                m2 = problem_mod.instantiate(p2, seed)
                x2 = problem_mod.make_inputs(p2, seed)
                ir2 = retrace(p2, m2, x2)
            except HarnessError as e:
                notes.append("sizes %s: %s" % (ov, e.message))
                continue
            got = op_sequence(ir2)
            if got != want:
                notes.append("sizes %s: op sequence differs from the full-size graph %s" % (ov, _first_diff(got, want)))
                continue
            report.update(mode="reduced", sizes=ov, outputs=check(ir2, p2, m2, seed))
            break
        else:
            # No reduction works (or none applies): the full size is the check.
            mode = "full"
    if mode == "full":
        report.update(mode="full", outputs=check(ir, prob, model, seed))
    if notes:
        report["notes"] = notes
    report["seconds"] = round(time.monotonic() - t0, 3)
    return report
