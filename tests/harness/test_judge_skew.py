"""kbh/judge_skew.py: the refresh's source and windows. Every timed run's
input is rebuilt from windows of a source laid out once; a statistic of
the whole input must move from run to run (a kernel that kept one per
buffer passed the spot checks while the refresh only permuted)."""
import itertools
import math
import os
import random
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))
from kbh import judge_skew as skew  # noqa: E402


def key_of(v):
    """The total order of one value, from its Python form: floats by
    value, -0.0 before +0.0, NaN after everything (before, with its sign
    bit set: the bits' order)."""
    if isinstance(v, float):
        if v != v:
            return (2 if math.copysign(1.0, v) > 0 else 0, 0.0)
        return (1, v, 1 if str(v)[0] != "-" else 0)
    return (1, v, 0)


def layout_of(x):
    """partition()'s layout written out from its definition."""
    vals = x.reshape(-1).tolist()
    n = len(vals)
    q, k = skew.layout(n)
    order = sorted(range(n), key=lambda i: (key_of(vals[i]), i))
    return (order[:k] + sorted(order[k:n - k]) + order[n - k:] +
            sorted(order[k:k + q]) + sorted(order[n - k - q:n - k]))


def test_partition_is_its_definition_for_every_dtype():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(700, generator=g)
    x[::7] = x[3]		# ties: by index
    x[10], x[11], x[12] = 0.0, -0.0, float("nan")
    cases = [x, x.to(torch.float64), x.to(torch.float16), torch.randint(-9, 9, (300,), generator=g),
             torch.randint(0, 2, (64,), generator=g).bool(), torch.randint(0, 255, (40,),
                                                                            generator=g).to(torch.uint8)]
    for t in cases:
        got = skew.partition(t.reshape(-1))
        assert got.tolist() == layout_of(t), t.dtype
        assert got.numel() == skew.source_len(t.numel())
    # bfloat16 has no Python form of its own: through float, exactly.
    b = x.to(torch.bfloat16)
    assert skew.partition(b).tolist() == layout_of(b.float())


def test_windows_rebuild_n_elements_and_drop_both_extremes():
    rng = random.Random(11)
    for n in list(range(4, 200)) + [1000, 4096, 65537, 1 << 20]:
        q, k = skew.layout(n)
        m = skew.source_len(n)
        for _ in range(20 if n < 5000 else 3):
            w = skew.windows(n, rng)
            assert skew.valid(n, m, w), (n, w)
            (s0, l0), (s1, l1), (s2, l2) = zip(w[0::2], w[1::2])
            # The first part but its l1 smallest, its l2 largest and a
            # middle window; then one window of the bands.
            assert 1 <= s0 <= k and s0 + l0 <= s1 and s1 + l1 <= n and n - (s1 + l1) >= 1
            assert n - (s1 + l1) <= k and s2 >= n and s2 + l2 <= m
    assert not skew.valid(10, 15, [0, 5, 5, 4])	# 9 elements
    assert not skew.valid(10, 15, [10, 6, 0, 4])	# past the source
    assert not skew.valid(10, 15, [0, 2] * 5)		# five windows


def test_source_is_the_windows_concatenated_then_permuted():
    rng = random.Random(2)
    for n in (4, 5, 9, 64, 333, 5000):
        src = torch.arange(skew.source_len(n)) * 10
        for _ in range(10):
            w = skew.windows(n, rng)
            a, b = rng.choice([c for c in range(1, n) if torch.gcd(torch.tensor(c),
                                                                    torch.tensor(n)) == 1]), \
                rng.randrange(n)
            cat = torch.cat([src[s:s + ln] for s, ln in zip(w[0::2], w[1::2])])
            e = torch.arange(n)
            assert torch.equal(src[skew.source(n, a, b, w, e)], cat[(a * e + b) % n])
            sub = e[torch.randperm(n)[:n // 2]]
            assert torch.equal(src[skew.source(n, a, b, w, sub)], cat[(a * sub + b) % n])
        # No windows: the input itself, permuted.
        assert torch.equal(skew.source(n, 3 if n % 3 else 1, 1, [], torch.arange(n)),
                           ((3 if n % 3 else 1) * torch.arange(n) + 1) % n)


def test_every_run_moves_the_statistics_of_the_whole_input():
    # What a kernel kept per buffer from one run is out of the float32
    # tolerance (1e-4 + 1e-4 |x|) in almost every other: a global
    # logsumexp, a norm, a mean, the largest and smallest values.
    rng = random.Random(4)
    x = torch.randn(1 << 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    src = x[skew.partition(x)]
    runs = []
    for _ in range(16):
        w = skew.windows(x.numel(), rng)
        runs.append(torch.cat([src[s:s + ln] for s, ln in zip(w[0::2], w[1::2])]))
    assert all(set(r.tolist()) <= set(x.tolist()) for r in runs[:3])
    for name, f in (("logsumexp", lambda y: torch.logsumexp(y, 0)), ("norm", torch.linalg.norm),
                    ("mean", torch.mean), ("max", torch.max), ("min", torch.min)):
        v = [float(f(r)) for r in runs]
        close = sum(abs(a - b) <= 1e-4 + 1e-4 * abs(a) for a, b in itertools.combinations(v, 2))
        assert close <= 6, (name, close, v)	# of 120 pairs
        assert all(abs(u - float(f(x))) > 1e-4 + 1e-4 * abs(u) for u in v), name
    # The extremes a run drops never come back from the bands.
    assert all(float(r.max()) < float(x.max()) and float(r.min()) > float(x.min()) for r in runs)


def test_with_another_draw_the_bands_are_its_values():
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(500, generator=g), torch.randn(500, generator=g)
    n = x.numel()
    q, k = skew.layout(n)
    mine, theirs = layout_of(x), layout_of(y)
    want = mine[:n] + [n + i for i in theirs[n:]]
    assert skew.partition(x, y).tolist() == want
    src = skew.source_of(x, y)
    assert torch.equal(src, torch.cat([x, y])[torch.tensor(want)])
    # The bands hold none of x's values: no run puts one of them in twice.
    assert not set(src[n:].tolist()) & set(x.tolist())
