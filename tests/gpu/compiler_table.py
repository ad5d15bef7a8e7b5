#!/usr/bin/env python3
"""The table of tests/gpu/compiler-gpu.sh: read OUT/NAME.json (`kernelbot
eval --json` of OUT/NAME.cu) for each problem and print one row each:
status, kernel / eager / torch.compile medians, speedups with their 95%
intervals, and for memory-bound kernels (no cuBLAS or cuDNN call) the
percent of the memory roofline: the time to move all bytes of inputs,
parameters and outputs at the measured copy bandwidth (the "roofline" the
evaluator's bandwidth_floor check states) over the kernel's median. Exits 1 when any problem has no correct
kernel. Standard library only.

usage: compiler_table.py OUT PROBLEM.py...
"""
import json
import math
import os
import re
import sys


def load(out, name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(r, list):
        r = r[0] if r else None
    return r if isinstance(r, dict) else None


def calls_library(src):
    """Whether a kernel's source calls cuBLAS(Lt) or cuDNN: its time is
    then the library's GEMM or convolution, not a memory roofline's."""
    return "cublas" in src or "cudnn.h" in src


def memory_bound(out, name):
    try:
        with open(os.path.join(out, name + ".cu")) as f:
            src = f.read()
    except OSError:
        return False
    return not calls_library(src)


def floor_ms(r):
    """The evaluator's roofline floor: from a device object when it carries
    the bandwidth, else from the bandwidth_floor check's detail."""
    for c in r.get("checks") or []:
        if c.get("name") == "bandwidth_floor":
            m = re.search(r"vs ([0-9.eE+-]+) ms to move", c.get("detail", ""))
            if m:
                return float(m.group(1))
    return None


def med(r, key):
    t = (r.get("timings_ms") or {}).get(key)
    return t.get("median") if isinstance(t, dict) else None


def fmt_ms(x):
    return "%.3f" % x if isinstance(x, (int, float)) else "-"


def fmt_speed(s, key):
    v = s.get(key)
    ci = s.get(key + "_ci95")
    if not isinstance(v, (int, float)):
        return "-"
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci):
        return "%.2fx [%.2f, %.2f]" % (v, ci[0], ci[1])
    return "%.2fx" % v


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    out = sys.argv[1]
    rows, bad, ge, gc = [], [], [], []
    above_eager = above_compile = 0
    for p in sys.argv[2:]:
        name = os.path.basename(p)[:-3] if p.endswith(".py") else os.path.basename(p)
        r = load(out, name)
        if r is None:
            rows.append((name, "no result", "-", "-", "-", "-", "-", "-"))
            bad.append(name)
            continue
        st = r.get("status", "?")
        s = r.get("speedup") or {}
        tk, te, tc = med(r, "candidate"), med(r, "eager"), med(r, "compile")
        roof = "-"
        fl = floor_ms(r)
        if st == "correct" and memory_bound(out, name) and fl and tk:
            roof = "%.0f%%" % (100.0 * fl / tk)
        if st != "correct":
            bad.append(name)
        else:
            if isinstance(s.get("eager"), (int, float)) and s["eager"] > 0:
                ge.append(s["eager"])
                ci = s.get("eager_ci95") or [0, 0]
                above_eager += ci[0] > 1
            if isinstance(s.get("compile"), (int, float)) and s["compile"] > 0:
                gc.append(s["compile"])
                ci = s.get("compile_ci95") or [0, 0]
                above_compile += ci[0] > 1
        if st != "correct" and r.get("errors"):
            st += ": " + str(r["errors"][0]).splitlines()[0][:120]
        rows.append((name, st, fmt_ms(tk), fmt_ms(te), fmt_ms(tc), fmt_speed(s, "eager"),
                     fmt_speed(s, "compile"), roof))
    print()
    print("| problem | status | kernel ms | eager ms | compile ms | vs eager [95%] | vs compile [95%] | roofline |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    print("correct: %d of %d; faster than eager (interval above 1): %d; faster than torch.compile: %d"
          % (len(rows) - len(bad), len(rows), above_eager, above_compile))
    print("geomean speedup of the correct kernels: %.2fx vs eager, %.2fx vs torch.compile"
          % (geomean(ge), geomean(gc)))
    if bad:
        print("compiler-gpu: FAIL: no correct kernel for " + ", ".join(bad))
        return 1
    print("compiler-gpu: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
