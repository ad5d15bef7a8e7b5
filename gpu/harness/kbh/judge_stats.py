"""Summaries of timing samples and the speedup's confidence interval.

The interval is a paired bootstrap over timing rounds: each round times the
baseline and the candidate back to back on the same input sets, so slow
drifts of the machine cancel within a pair. A resample draws rounds with
replacement and takes median(its baseline samples) / median(its candidate
samples); the 2.5th and 97.5th percentiles of 2000 resamples bound the
interval. The RNG is seeded from the evaluation's seed, so a report
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


def _pairs(num_rounds, den_rounds):
    """The rounds both sides have samples in, as (num, den) pairs."""
    return [(n, d) for n, d in zip(num_rounds, den_rounds) if n and d]


def _ratio(pairs):
    """median of the pooled first samples / median of the pooled second
    ones, or None when the second median is not positive."""
    d = statistics.median([x for _, ds in pairs for x in ds])
    return statistics.median([x for ns, _ in pairs for x in ns]) / d if d > 0 else None


def speedup(base_rounds, cand_rounds, seed):
    """(point, [lo, hi]) from paired per-round sample lists, or (None, None).
    The statistic is median(baseline samples) / median(candidate samples)
    over the rounds taken: pooled samples keep one disturbed round from
    moving it the way a median of a few round medians would."""
    pairs = _pairs(base_rounds, cand_rounds)
    if not pairs:
        return None, None
    point = _ratio(pairs)
    if point is None:
        return None, None
    rng = random.Random(seed)
    ratios = [_ratio([pairs[rng.randrange(len(pairs))] for _ in pairs]) for _ in range(BOOTSTRAP)]
    ratios = [x for x in ratios if x is not None]
    return point, [quantile(ratios, 0.025), quantile(ratios, 0.975)]


def slowdown(base_rounds, cand_rounds):
    """median(candidate samples) / median(baseline samples) over the
    rounds both have: how many times slower than the baseline the
    candidate is so far; None before both have a sample."""
    pairs = _pairs(cand_rounds, base_rounds)
    return _ratio(pairs) if pairs else None


def drift(fresh, cached_rounds):
    """median(fresh samples) / median(cached samples): 1.0 when the machine
    times eager as it did when the cache entry was made; None if empty."""
    old = [x for rd in cached_rounds or [] for x in rd]
    if not fresh or not old:
        return None
    m = statistics.median(old)
    return statistics.median(fresh) / m if m > 0 else None


def speedup_unpaired(base_rounds, cand_rounds, seed):
    """Like speedup() for baseline rounds not timed beside the candidate
    (the baseline cache's torch.compile figures): base and candidate rounds
    are resampled independently, so the interval also carries the spread
    between the two occasions."""
    base = [b for b in base_rounds or [] if b]
    cand = [c for c in cand_rounds or [] if c]
    if not base or not cand:
        return None, None

    def ratio(bs, cs):
        c = statistics.median([x for r in cs for x in r])
        return statistics.median([x for r in bs for x in r]) / c if c > 0 else None

    point = ratio(base, cand)
    if point is None:
        return None, None
    rng = random.Random(seed)
    ratios = [ratio([base[rng.randrange(len(base))] for _ in base],
                    [cand[rng.randrange(len(cand))] for _ in cand]) for _ in range(BOOTSTRAP)]
    ratios = [x for x in ratios if x is not None]
    return point, [quantile(ratios, 0.025), quantile(ratios, 0.975)]


PRECISION_RESAMPLES = 300


def median_precision(rounds, seed):
    """The half-width of the pooled median's 95% interval over the median
    (a bootstrap over rounds): 0.004 means +-0.4%. None with fewer than
    two rounds."""
    rounds = [rd for rd in rounds if rd]
    if len(rounds) < 2:
        return None
    m = statistics.median([x for rd in rounds for x in rd])
    if m <= 0:
        return None
    rng = random.Random(seed)
    meds = [statistics.median([x for _ in rounds for x in rounds[rng.randrange(len(rounds))]])
            for _ in range(PRECISION_RESAMPLES)]
    return (quantile(meds, 0.975) - quantile(meds, 0.025)) / 2 / m
