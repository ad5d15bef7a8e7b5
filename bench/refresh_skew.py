"""What a timed run's refresh does to an input (kbh/judge_skew.py): the
condition number of an NxN float64 randn matrix rebuilt by a refresh,
median and 90th percentile over TRIALS draws, for the permutation alone,
the skewed windows of the source as laid out (index order), and the same
windows of a source sorted whole (what the layout avoids); then how far a
whole-input statistic moves between runs.

    python3 bench/refresh_skew.py [N] [TRIALS]
"""
import math
import os
import random
import statistics
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "gpu", "harness"))
from kbh import judge_skew as skew  # noqa: E402


def unit(n, rng):
    while True:
        a = rng.randrange(2, n - 1)
        if math.gcd(a, n) == 1 and math.gcd(a - 1, n) ** 2 <= n:
            return a


def rebuild(flat, rng, how):
    n = flat.numel()
    if how == "permutation":
        src, wins = flat, [0, n]
    else:
        idx = skew.partition(flat)
        if how == "sorted source":
            q, k = skew.layout(n)
            order = torch.sort(skew.order_key(flat), stable=True).indices
            idx = torch.cat([order, order[k:k + q], order[n - k - q:n - k]])
        src, wins = flat[idx], skew.windows(n, rng)
    return src[skew.source(n, unit(n, rng), rng.randrange(n), wins, torch.arange(n))]


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 512
    trials = int(argv[2]) if len(argv) > 2 else 30
    rng = random.Random(1)
    torch.manual_seed(1)
    print("condition number of a %dx%d randn matrix after a refresh, %d draws" % (n, n, trials))
    for how in ("permutation", "skewed source (index order)", "sorted source"):
        c = sorted(float(torch.linalg.cond(rebuild(torch.randn(n * n, dtype=torch.float64), rng,
                                                   how).reshape(n, n))) for _ in range(trials))
        print("  %-28s median %10.0f  p90 %10.0f" % (how, statistics.median(c),
                                                   c[int(0.9 * (trials - 1))]))
    x = torch.randn(1 << 20, dtype=torch.float64)
    runs = [rebuild(x, rng, "skewed source (index order)") for _ in range(8)]
    for name, f in (("logsumexp", lambda y: torch.logsumexp(y, 0)), ("norm", torch.linalg.norm),
                    ("max", torch.max)):
        v = [float(f(r)) for r in runs]
        print("  %-10s of 2^20 randn: pristine %.5f, 8 runs %.5f .. %.5f" % (
            name, float(f(x)), min(v), max(v)))


if __name__ == "__main__":
    main(sys.argv)
