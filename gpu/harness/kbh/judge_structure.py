"""What the judge's changes keep of an input and where they go: the
structure get_inputs() gave it (a pattern, symmetry, sorted rows, a
diagonal placed by a rule, found
when the pools are built; exchangeable() tells a pattern placed at random
from one placed by a rule) and the positions of a run's changes (spread
over every index of every axis, or over the elements outside a pattern).
kbh/judge_perturb.py draws the changes; its docstring says why each
choice.
"""
import math
import random

import torch

POOL = 4096
# Changed elements per input and run: the longest axis up to this
# (4096 elements of 4 bytes: 16 KiB of values per input and run).
SPREAD = 4096
# A value held by at least 1/PATTERN_SHARE of an input's elements (and by
# three: a symmetric matrix holds each of its values twice), or a value
# that is not finite, is part of the input's pattern: the zeros of a
# triangular, banded or sparse matrix, a mask's -inf or 1. Drawn floats
# repeat far less: randn in bfloat16 holds its commonest value at about
# 0.2% of the elements.
PATTERN_SHARE = 64
# Values checked against that share: the commonest repeats of the sample.
PATTERN_CANDIDATES = 16
# Rounds of the spread over the free elements before the rest of their
# indices are covered one slice at a time (SLICE_TRIES random elements of
# the slice, then a scan of it).
FREE_ROUNDS = 8
SLICE_TRIES = 32
# A row of the last axis this long, sorted in every row: kept (monotone).
MONOTONE_MIN = 8
# The exchangeability test (exchangeable): none below EXCH_MIN elements
# (not exchangeable); values counted exactly up to
# EXCH_SAMPLE elements (else the commonest of a sample of that many), the
# EXCH_VALUES commonest tested per axis; a count dispersion below EXCH_LOW
# of a random placement's on EXCH_LOW_DOF degrees of freedom or more is a
# structure (one per row).
EXCH_SAMPLE = 1 << 16
EXCH_MIN = 16
EXCH_VALUES = 8
EXCH_LOW = 0.25
EXCH_LOW_DOF = 16
# The diagonal test (diagonal): a square input's diagonal (of its last
# two axes, DIAG_MIN long or more) whose magnitudes rank among the
# input's further from a half, on average, than DIAG_SIGMAS standard
# deviations of a random placement's mean rank (plus DIAG_SLACK for the
# sample the ranks are read in) is placed by a rule.
DIAG_MIN = 16
DIAG_SIGMAS = 6
DIAG_SLACK = 0.01

def _bits(t):
    """A tensor's elements as integers of their size (compared bit for bit)."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def spread_positions(shape, rng, cap=SPREAD):
    """Flat (C order) indices of N = min(cap, max(shape)) distinct
    elements of a tensor of that shape: element j at index perm_i(j mod
    d_i) on each axis i of length d_i, perm_i a random permutation of the
    axis (of N distinct indices where d_i > N). The draws come from a
    generator seeded with 63 bits of rng (the system's RNG in the judge):
    one system call per run, not one per index."""
    dims = [int(d) for d in shape] or [1]
    n = min(cap, max(dims))
    seed = rng.getrandbits(63)
    g = torch.Generator().manual_seed(seed)
    local = random.Random(seed)
    flat = torch.zeros(n, dtype=torch.int64)
    j = torch.arange(n, dtype=torch.int64)
    stride = 1
    for d in reversed(dims):
        if d <= 4 * n:
            perm = torch.randperm(d, generator=g)[:n]
        else:
            perm = torch.tensor(local.sample(range(d), n), dtype=torch.int64)
        flat += perm[j % perm.numel()] * stride
        stride *= d
    return flat


def structure(t, rng):
    """The structure get_inputs() gave a floating input: a bool mask, flat
    and on the CPU, of the elements that hold a pattern value (None where
    there are none), and whether its last two axes are symmetric, bit for
    bit. The pattern values are found in a sample and counted in the
    whole input: a pass per candidate, no sort of the input."""
    x = t.detach()
    flat = x.reshape(-1)
    n = flat.numel()
    mask = ~torch.isfinite(flat)
    if n <= POOL:
        sample = flat
    else:
        sample = flat[torch.tensor(rng.sample(range(n), POOL), dtype=torch.int64).to(flat.device)]
    sample = sample[torch.isfinite(sample)]
    if sample.numel():
        vals, counts = torch.unique(sample, return_counts=True)
        top = torch.argsort(counts, descending=True)[:PATTERN_CANDIDATES]
        need = max(3, -(-n // PATTERN_SHARE))
        for v, c in zip(vals[top].tolist(), counts[top].tolist()):
            if c < 2:
                break
            m = flat == v
            if int(m.sum()) >= need:
                mask |= m
    sym = False
    if x.dim() >= 2 and x.shape[-1] == x.shape[-2] >= 2:
        b = _bits(x)
        sym = bool((b == b.transpose(-1, -2)).all())
    return (mask.cpu() if bool(mask.any()) else None), sym


def diagonal(t, rng, pattern=None):
    """A flat bool mask (on the CPU) of the diagonal of a floating
    input's last two axes where get_inputs() placed magnitudes there by a
    rule, else None: a diagonally dominant matrix (a solve by iteration
    converges only on one), a positive-definite one (a Cholesky factor
    exists only for one), a distance matrix's zeros. A whole permutation,
    or a change that puts an off-diagonal value there, breaks what an
    honest kernel relies on; the diagonal is kept as a pattern is. The
    ranks of up to POOL diagonal elements' magnitudes are read in a
    sorted sample of up to POOL of the input's (mid-ranks, for ties),
    both outside pattern (structure()'s mask, where given: a triangle's
    zeros would rank any diagonal above them)."""
    if (not t.is_floating_point() or t.dim() < 2 or t.shape[-1] != t.shape[-2]
            or t.shape[-1] < DIAG_MIN):
        return None
    x = t.detach()
    flat = x.reshape(-1)
    diag = x.diagonal(dim1=-2, dim2=-1).reshape(-1)
    if pattern is not None:
        free = ~pattern.to(flat.device)
        diag = diag[~pattern.reshape(t.shape).diagonal(dim1=-2, dim2=-1).reshape(-1).to(diag.device)]
        flat = flat[free]
    n, m = flat.numel(), diag.numel()
    if n > POOL:
        flat = flat[torch.tensor(rng.sample(range(n), POOL), dtype=torch.int64).to(flat.device)]
    if m > POOL:
        diag = diag[torch.tensor(rng.sample(range(m), POOL), dtype=torch.int64).to(diag.device)]
    a = flat.abs().float().cpu()
    a = a[torch.isfinite(a)].sort().values
    d = diag.abs().float().cpu()
    d = d[torch.isfinite(d)]
    if a.numel() < DIAG_MIN or d.numel() < DIAG_MIN:
        return None
    rank = (torch.searchsorted(a, d) + torch.searchsorted(a, d, right=True)).double() / (2 * a.numel())
    sd = math.sqrt(1 / (12 * d.numel()))
    if abs(float(rank.mean()) - 0.5) <= DIAG_SIGMAS * sd + DIAG_SLACK:
        return None
    mask = torch.zeros(t.shape, dtype=torch.bool)
    mask.diagonal(dim1=-2, dim2=-1).fill_(True)
    return mask.reshape(-1)


def monotone(t):
    """Whether every row of the last axis (MONOTONE_MIN long or more) is
    sorted, one way for all, and not constant: positions, bin edges,
    offsets. A change of an element or a permutation would break it."""
    if t.dim() == 0 or t.shape[-1] < MONOTONE_MIN or t.dtype == torch.bool:
        return False
    x = t.detach()
    lo, hi = x[..., 1:], x[..., :-1]
    if bool((lo == hi).all()):
        return False
    return bool((lo >= hi).all()) or bool((lo <= hi).all())


def _spread_ok(r, dof):
    """A dispersion ratio r (observed over expected) on dof degrees of
    freedom that a random placement explains."""
    if r > 1 + max(1.0, 6 * math.sqrt(2 / dof)):
        return False
    return not (dof >= EXCH_LOW_DOF and r < EXCH_LOW)


def exchangeable(t, rng):
    """Whether an input's values look placed at random (what a refresh,
    a permutation of the whole input, keeps in distribution): for each
    axis, the elements along it equal to their neighbour as often as a
    random order gives, and for each of the commonest values, its count
    per slice across the axis as dispersed as a random placement gives
    (a one-hot's one per row, a permutation's value once per row, a
    triangle's counts growing row by row are not). Few values, or a
    pattern (16 codes, a relu's zeros, class targets) placed at random
    are exchangeable; where the tests cannot tell, the input is not."""
    x = _bits(t.detach()) if t.dtype != torch.bool else t.detach().to(torch.uint8)
    dims = [int(d) for d in x.shape] or [1]
    x = x.reshape(dims)
    n = x.numel()
    if n < EXCH_MIN:
        return False	# too few to tell: a shape, strides, a pair of sizes
    flat = x.reshape(-1)
    smp = flat if n <= EXCH_SAMPLE else flat[torch.tensor(
        rng.sample(range(n), EXCH_SAMPLE), dtype=torch.int64).to(flat.device)]
    vals, counts = torch.unique(smp, return_counts=True)
    m = smp.numel()
    sc = counts.to(torch.float64).cpu()
    # Two random elements equal: exact where all are counted, else the
    # sample's estimate.
    q = float((sc * (sc - 1)).sum()) / (m * (m - 1))
    top = torch.argsort(sc, descending=True)[:EXCH_VALUES]
    ndist = vals.numel()
    vals = vals[top.to(vals.device)]
    if m < n:
        sc = torch.tensor([float((flat == v).sum()) for v in vals], dtype=torch.float64)
    else:
        sc = sc[top]
    counts = sc
    for a, d in enumerate(dims):
        if d < 2:
            continue
        pairs = n // d * (d - 1)
        same = int((x.narrow(a, 1, d - 1) == x.narrow(a, 0, d - 1)).sum())
        mu = pairs * q
        if abs(same - mu) > 6 * math.sqrt(mu * (1 - q)) + 0.02 * mu + 2:
            return False
        s = n // d
        if s < 2:
            continue
        obs = exp = 0.0
        dof = 0
        for i in range(vals.numel()):
            c = float(counts[i])
            if c < 2 or c > n - 2:
                continue
            per = (x == vals[i]).movedim(a, 0).reshape(d, -1).sum(1).to(torch.float64).cpu()
            obs += float(((per - c / d) ** 2).sum())
            exp += d * s * (c / n) * (1 - c / n) * (n - s) / (n - 1)
            dof += d - 1
        # The counts of all the values of a slice sum to its size: one
        # value fewer is free.
        dof = min(dof, (d - 1) * (ndist - 1))
        if exp > 0 and not _spread_ok(obs / exp, dof):
            return False
    return True


def _unravel(flat, dims):
    """Per-axis indices of C-order flat positions."""
    out = []
    for d in reversed(dims):
        out.append(flat % d)
        flat = flat // d
    return out[::-1]


def _strides(dims):
    out, s = [], 1
    for d in reversed(dims):
        out.append(s)
        s *= d
    return out[::-1]


def free_axes(shape, free):
    """Per axis, the indices that hold at least one free element (free:
    a flat bool mask, True outside the pattern)."""
    dims = [int(d) for d in shape] or [1]
    free = free.reshape(dims)
    out = []
    for a in range(len(dims)):
        out.append(free.movedim(a, 0).reshape(dims[a], -1).any(1).nonzero().reshape(-1))
    return out


def free_positions(shape, free, axes, rng, cap):
    """Flat indices of at most cap distinct free elements (free: a flat
    bool mask, True outside the pattern) that cover every index of every
    axis holding one, where cap allows: spreads (spread_positions' rule)
    over the indices not covered yet, their elements in the pattern
    dropped, then for each index still uncovered an element of its slice
    (a few random tries, then a scan). axes: free_axes(shape, free)."""
    dims = [int(d) for d in shape] or [1]
    strides = _strides(dims)
    seed = rng.getrandbits(63)
    g = torch.Generator().manual_seed(seed)
    local = random.Random(seed)
    covered = [torch.zeros(d, dtype=torch.bool) for d in dims]
    chosen, total = [], 0

    def take(flat):
        nonlocal total
        for a, ix in enumerate(_unravel(flat, dims)):
            covered[a][ix] = True
        chosen.append(flat)
        total += flat.numel()

    for _ in range(FREE_ROUNDS):
        todo = [ax[~covered[a][ax]] for a, ax in enumerate(axes)]
        n = min(cap - total, max(t.numel() for t in todo))
        if n <= 0:
            break
        flat = torch.zeros(n, dtype=torch.int64)
        j = torch.arange(n, dtype=torch.int64)
        for a, t in enumerate(todo):
            t = t if t.numel() else axes[a]
            if t.numel() <= 4 * n:
                perm = t[torch.randperm(t.numel(), generator=g)[:n]]
            else:
                perm = t[torch.tensor(local.sample(range(t.numel()), n), dtype=torch.int64)]
            flat += perm[j % perm.numel()] * strides[a]
        flat = torch.unique(flat)
        take(flat[free[flat]])
    for a in range(len(dims)):
        todo = axes[a][~covered[a][axes[a]]]
        room = cap - total
        if not todo.numel() or room <= 0:
            continue
        todo = todo[torch.randperm(todo.numel(), generator=g)[:room]]
        flat = todo[:, None] * strides[a]
        for b, ax in enumerate(axes):
            if b != a:
                flat = flat + ax[torch.randint(ax.numel(), (todo.numel(), SLICE_TRIES),
                                               generator=g)] * strides[b]
        ok = free[flat]
        hit = ok.any(1)
        got = flat[torch.arange(todo.numel()), ok.to(torch.uint8).argmax(1)][hit]
        rest, scan = dims[:a] + dims[a + 1:], []
        for v in todo[~hit].tolist():
            at = free.view(dims).select(a, v).reshape(-1).nonzero().reshape(-1)
            ix = [int(i) for i in _unravel(at[local.randrange(at.numel())], rest)]
            ix.insert(a, v)
            scan.append(sum(i * st for i, st in zip(ix, strides)))
        take(torch.cat([got, torch.tensor(scan, dtype=torch.int64)]))
    return torch.unique(torch.cat(chosen)) if chosen else torch.zeros(0, dtype=torch.int64)


def fill_positions(pos, n, free, rng, cap, tries=4):
    """pos with distinct random elements (free ones, where free is not
    None) added up to cap of the n: drawn from all of them where cap is a
    sixteenth of n or more, else a few rounds of draws (as far as those
    find them)."""
    g = torch.Generator().manual_seed(rng.getrandbits(63))
    for _ in range(tries if n > 16 * cap else 1):
        want = min(cap, n) - pos.numel()
        if want <= 0:
            break
        if n > 16 * cap:
            more = torch.unique(torch.randint(n, (2 * want,), generator=g))
        else:
            more = torch.arange(n, dtype=torch.int64)
        if free is not None:
            more = more[free[more]]
        more = more[~torch.isin(more, pos)]
        more = more[torch.randperm(more.numel(), generator=g)[:want]]
        pos = torch.cat([pos, more])
    return pos


def mirror(flat, shape):
    """The flat indices of the elements transposed on the last two axes."""
    d = int(shape[-1])
    i, j = (flat // d) % d, flat % d
    return flat + (j - i) * d + (i - j)
