"""The judge's output comparison, before and after: kbh/judge_compare.py
of this tree against the same file at a git revision (default 9494c26,
the whole-tensor comparison), on one output of ROWSxCOLS float32 close to
its reference, interleaved, the median of REPS calls each.

    python3 bench/judge_compare.py [REV] [ROWS COLS] [REPS]
"""
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "gpu", "harness"))
from kbh import judge_compare as now  # noqa: E402


def at(rev):
    src = subprocess.run(["git", "-C", ROOT, "show", rev + ":gpu/harness/kbh/judge_compare.py"],
                         check=True, capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("judge_compare_" + rev, f.name)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    os.unlink(f.name)
    return m


def main(argv):
    rev = argv[0] if argv else "9494c26"
    rows, cols = (int(argv[1]), int(argv[2])) if len(argv) > 2 else (1024, 4096)
    reps = int(argv[3]) if len(argv) > 3 else 5
    before = at(rev)
    ref = torch.randn(rows, cols)
    out = ref + 1e-7 * torch.randn_like(ref)
    got = {"before": [], "now": []}
    for _ in range(reps):
        for name, m in (("before", before), ("now", now)):
            t0 = time.perf_counter()
            r = m.compare("out0", out, ref)
            got[name].append((time.perf_counter() - t0) * 1e3)
            assert r[0] is None
    b, n = statistics.median(got["before"]), statistics.median(got["now"])
    print("judge_compare %dx%d float32, median of %d: %s %.1f ms, now %.1f ms, %.1fx"
          % (rows, cols, reps, rev, b, n, b / n))


if __name__ == "__main__":
    main(sys.argv[1:])
