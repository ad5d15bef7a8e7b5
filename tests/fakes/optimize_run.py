#!/usr/bin/env python3
"""Write a `kernelbot optimize --out DIR` directory for the archive tests.

Until `optimize` lands, this stands for it: the layout is the shared
contract (summary.json, problem.py, ir.json, best/kernel.cu,
best/result.json, history.json, candidates/NNNN.cu).

usage: optimize_run.py DIR PROBLEM.py KERNEL.cu [--ir IR.json] [--ms MS]
           [--cc 9.0] [--status correct|mismatch] [--extra N] [--module PATH]
--extra N adds N more correct candidates (the kernel plus a comment), slower
than the best; one wrong candidate is always there.
"""
import argparse
import hashlib
import json
import os
import shutil


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("problem")
    ap.add_argument("kernel")
    ap.add_argument("--ir")
    ap.add_argument("--ms", type=float, default=0.05)
    ap.add_argument("--cc", default="9.0")
    ap.add_argument("--status", default="correct")
    ap.add_argument("--extra", type=int, default=1)
    ap.add_argument("--module")
    a = ap.parse_args()

    os.makedirs(os.path.join(a.dir, "best"), exist_ok=True)
    os.makedirs(os.path.join(a.dir, "candidates"), exist_ok=True)
    shutil.copy(a.problem, os.path.join(a.dir, "problem.py"))
    if a.ir:
        shutil.copy(a.ir, os.path.join(a.dir, "ir.json"))
    best = open(a.kernel).read()
    open(os.path.join(a.dir, "best", "kernel.cu"), "w").write(best)
    ok = a.status == "correct"
    eager = a.ms * 3
    result = {
        "candidate": "best/kernel.cu", "status": a.status, "correct": ok,
        "backend": "cuda", "device": "NVIDIA H200",
        "timings_ms": {"candidate": {"median": a.ms, "p10": a.ms, "p90": a.ms, "runs": 100},
                       "eager": {"median": eager}, "compile": {"median": a.ms * 2}},
        "speedup": {"eager": eager / a.ms, "eager_ci95": [2.9, 3.1],
                    "compile": 2.0, "compile_ci95": [1.9, 2.1]},
        "checks": [], "flags": [], "errors": [],
    }
    json.dump(result, open(os.path.join(a.dir, "best", "result.json"), "w"), indent=1)

    cands = []

    def cand(text, correct, ms, parents, proposer="llm"):
        i = len(cands)
        f = "candidates/%04d.cu" % i
        open(os.path.join(a.dir, f), "w").write(text)
        cands.append({"id": i, "generation": min(i, 3), "proposer": proposer,
                      "op": "seed" if i == 0 else "rewrite", "parents": parents,
                      "source_sha": sha(text), "file": f,
                      "status": "correct" if correct else "mismatch",
                      "correct": correct, "ms": ms if correct else None,
                      "origin": {"model": "fake-model"} if proposer == "llm" else {}})

    cand(best, ok, a.ms, [], "compiler")
    for n in range(a.extra):
        cand(best + "// variant %d\n" % n, True, a.ms * (2 + n), [0])
    cand(best + "// wrong\n", False, None, [0])

    summary = {
        "problem": os.path.abspath(a.problem), "status": "improved" if ok else "no_correct",
        "best": {"path": "best/kernel.cu", "speedup": {"eager": 3.0, "compile": 2.0}},
        "candidates_evaluated": len(cands), "generations": 2,
        "stop_reason": "budget:candidates", "backend": "cuda",
    }
    if a.module:
        summary["module"] = a.module
    json.dump(summary, open(os.path.join(a.dir, "summary.json"), "w"), indent=1)
    history = {
        "problem": os.path.abspath(a.problem), "problem_sha": sha(open(a.problem).read()),
        "backend": "cuda",
        "device": {"name": "NVIDIA H200", "compute_capability": a.cc},
        "budget": {}, "spent": {}, "stop_reason": "budget:candidates",
        "generations": [], "candidates": cands,
    }
    json.dump(history, open(os.path.join(a.dir, "history.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
