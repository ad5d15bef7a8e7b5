"""Summaries of timing samples and the speedup's confidence interval.

The interval is a paired bootstrap over timing rounds: each round times the
baseline and the candidate back to back on the same input sets, so slow
drifts of the machine cancel within a pair. A resample draws rounds with
replacement and takes median(baseline round medians) / median(candidate
round medians); the 2.5th and 97.5th percentiles of 2000 resamples bound
the interval. The RNG is seeded from the evaluation's seed, so a report
can be reproduced from its seed.
"""
import random
import statistics

BOOTSTRAP = 2000


def quantile(xs, q):
    s = sorted(xs)
    if not s:
        return None
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(samples):
    if not samples:
        return None
    return {"median": statistics.median(samples), "p10": quantile(samples, 0.1),
            "p90": quantile(samples, 0.9), "runs": len(samples)}


def speedup(base_rounds, cand_rounds, seed):
    """(point, [lo, hi]) from paired per-round sample lists, or (None, None)."""
    pairs = [(statistics.median(b), statistics.median(c))
             for b, c in zip(base_rounds, cand_rounds) if b and c]
    if not pairs or any(c <= 0 for _, c in pairs):
        return None, None
    point = statistics.median([b for b, _ in pairs]) / statistics.median([c for _, c in pairs])
    rng = random.Random(seed)
    ratios = []
    for _ in range(BOOTSTRAP):
        pick = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        ratios.append(statistics.median([b for b, _ in pick]) /
                      statistics.median([c for _, c in pick]))
    return point, [quantile(ratios, 0.025), quantile(ratios, 0.975)]
