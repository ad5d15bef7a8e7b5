#!/usr/bin/python3
"""The table of bench/optimize_gpu.sh: one row per DIR/*/summary.json (the
`kernelbot optimize --out` layout, docs/optimize.md), then the counts and
geometric means of issue #6's "Shows". For a winner with no cuBLAS or
cuDNN call, the percent of the memory roofline (the confirmation's
bandwidth floor over its median, as tests/gpu/compiler_table.py reads it).

usage: optimize_table.py OUT_DIR
"""
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from compiler_table import calls_library, floor_ms  # noqa: E402

ROOFLINE_GOAL = 0.85


def roofline(run_dir, best):
    """floor / median of the confirmed winner, or None (a library call,
    or no confirmation on record)."""
    try:
        with open(os.path.join(run_dir, best.get("path") or "best/kernel.cu")) as f:
            src = f.read()
        with open(os.path.join(run_dir, "best", "result.json")) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return None
    if calls_library(src):
        return None
    fl, ms = floor_ms(r), best.get("ms")
    return fl / ms if fl and ms else None


def interval(ci):
    return "[%.2f, %.2f]" % (ci[0], ci[1]) if ci else "n/a"


def main():
    rows, eager, comp = [], [], []
    n_correct = n_faster = n_beats_compile = 0
    roofs = []
    summaries = sorted(glob.glob(os.path.join(sys.argv[1], "*", "summary.json")))
    for path in summaries:
        with open(path) as f:
            s = json.load(f)
        name = os.path.basename(os.path.dirname(path))
        best = s.get("best") or {}
        sp = best.get("speedup") or {}
        e, c = sp.get("eager"), sp.get("compile")
        roof = roofline(os.path.dirname(path), best) if best else None
        if roof is not None:
            roofs.append(roof)
        if best:
            n_correct += 1
            if e:
                eager.append(e)
            if c:
                comp.append(c)
            if s["status"] == "improved":
                n_faster += 1
            if c and sp.get("compile_ci95") and sp["compile_ci95"][0] > 1:
                n_beats_compile += 1
        rows.append("| %s | %s | %s | %s %s | %s %s | %s | %d | %d | %s | %.0f |" % (
            name, s["status"], "%.4g" % best["ms"] if best else "n/a",
            "%.2fx" % e if e else "n/a", interval(sp.get("eager_ci95")),
            "%.2fx" % c if c else "n/a", interval(sp.get("compile_ci95")),
            "%.0f%%" % (100 * roof) if roof is not None else "-",
            s["candidates_evaluated"], s["generations"], s["stop_reason"],
            s["spent"]["wall_s"]))
    print("| problem | status | best ms | vs eager [95%] | vs torch.compile [95%] | roofline | "
          "candidates | generations | stopped | wall s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    print("\n".join(rows))

    def geo(v):
        return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")
    print()
    print("%d problems: %d correct, %d faster than eager (interval above 1), %d faster than "
          "torch.compile (interval above 1); geometric mean %.2fx over eager (%d), %.2fx over "
          "torch.compile (%d)" % (len(summaries), n_correct, n_faster, n_beats_compile,
                                  geo(eager), len(eager), geo(comp), len(comp)))
    print("memory-bound winners at %d%% of the roofline or above: %d of %d" % (
        100 * ROOFLINE_GOAL, sum(r >= ROOFLINE_GOAL for r in roofs), len(roofs)))
    return 0 if summaries else 1


if __name__ == "__main__":
    sys.exit(main())
