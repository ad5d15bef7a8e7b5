"""What a refreshed input is rebuilt from before each timed run.

A refresh that only permuted an input's own values left every function
of their multiset (a sum, a norm, a global logsumexp, the largest value)
the same in every timed run: a kernel that kept such a statistic per
buffer and skipped its reduction passed the spot checks (a global
log_softmax at 4.7x eager where its honest twin ran 0.21x). Fresh draws
would not help: over a million elements such a statistic of one draw is
within tolerance of another's. So each run's multiset is skewed, by an
amount drawn for the run, from a copy of the input the judge lays out
once per timing set (partition(), written to orig<k>.bin for the worker):

    [k smallest, ascending | the rest, in index order | k largest,
     ascending | the q smallest after the k smallest, in index order |
     the q largest before the k largest, in index order]

with k = n / EXTREME_DIV and q = n / BAND_DIV (at least 1 each), n + 2q
elements. A run's windows() take the whole first part but for its l1
smallest, its l2 largest and a window of lm middle elements, and put in
their place l1 + l2 + lm elements of one window of the bands (low, high
or both; never one of the extremes a run drops): the smallest and
largest values change every run, the mean,
the variance and every sum of a function of the values move by a share
of the input drawn for the run (l1, l2 up to n / EXTREME_DIV, lm from
n / MID_MIN_DIV to n / MID_MAX_DIV). The windows, concatenated, are
then permuted (element e from (a e + b) mod n) so the band values are
spread over the input. Every value stays one the input had; the layout
in index order keeps an exchangeable input's values in random order
where the runs place them (sorted runs mapped by an affine permutation
would lay them out on a lattice: a matrix of those is ill-conditioned).

The bands come from another draw of the same input where there is one
(the next timing set's): values of the input's own draw put in twice
would tie with their originals, and an honest top-k or argmax picks
either of two equal values (a row-wise top-k lost 6 of 8192 indices to
such ties). Another draw's values of the same ranks move the statistics
alike and meet the input's own only where two draws share a value. The
model's state, the same in every set, takes its bands from its own
values.

The draw's own repeats stay ties wherever a run places them (float32
randn repeats a few hundred of 2^18 values, and a row-wise top-k whose
honest kernel breaks ties by index lost indices when a run brought two
of them into one row), and an input without another draw has its band
values twice. So the source's equal values are moved apart (distinct()):
in the values' order each one unit in the last place above the one
before it, where no value moves by more than DISTINCT_ULPS; where it
would (bfloat16 or float16 over many elements, a draw of few values),
the ties are the draw's own and stay.

Every value a run places is then one the candidate can know before the
run (the sources are in its worker's memory; the changes come from a
sample of the draws), so a kernel that kept f(x) per value it had seen
(an expensive elementwise f, looked up instead of computed, computed
only on a miss) ran at several times its honest twin and passed. So a
run's refresh may end with a mask (xor_normal()): the low MASK_BITS
bits of every normal float32 or float64 value flipped by a mask drawn
for the run and input (the changes' new values take it too). A value
comes back only where a run draws a mask an earlier one drew (float32:
one of 4095, about 1% of a hundred runs'), else it is new to within
2^-11 of itself: a table of seen values is then worth no more than a
table of f over the top 11 bits of the mantissa, which any kernel may
build on any input and which the tolerance judges like any other
approximation. The flip is a bijection within each binade (distinct
values stay distinct; zeros, subnormals, infinities and NaNs stay),
moves a value by less than 2^-11 of it, and is left out where the
input's nonzero values are few (a mask, class codes held as floats: masked();
a table of every value is honest there) and for 16-bit floats (a table
of all 65536 values is honest).

The same layout is computed by the judge, the reference process and the
tests from the same bits: order_key() orders values totally (-0.0 before
+0.0, NaNs by their bits), ties by index.
"""
import torch

BAND_DIV = 4
EXTREME_DIV = 64
MID_MIN_DIV = 32
MID_MAX_DIV = 8
WINDOWS_MAX = 4		# the worker's limit (gpu/worker_parse.c)
DISTINCT_ULPS = 8	# the most a value is moved to part it from its equals
REBUILD_CHUNK = 1 << 24	# elements rebuilt at a time (rebuild())


# The low bits a refresh's mask may flip, by element size: a value moves
# by less than 2^-11 of itself (see above).
MASK_BITS = {4: 12, 8: 41}
_EXP_BITS = {4: 0x7f800000, 8: 0x7ff0000000000000}


def masked(sample):
    """Whether refreshes of an input take a mask, from a sample of its
    values: float32 or float64, at least half of its nonzero finite values
    distinct, and 16 of them at least. Zeros stay zeros under the mask, so
    they do not count: a relu's output, 70% zeros, took no mask and a
    memo of its other values, all of them back whole in every run, passed
    at 1.8x its honest twin (an outside attack)."""
    if sample.dtype not in (torch.float32, torch.float64):
        return False
    rest = sample[(sample != 0) & torch.isfinite(sample)]
    return rest.numel() >= 16 and int(torch.unique(rest).numel()) * 2 >= rest.numel()


def draw_mask(dtype, rng):
    """A run's mask for an input of dtype: nonzero, below 2^MASK_BITS;
    rng a random.Random (the judge's, seeded from the system)."""
    w = torch.empty(0, dtype=dtype).element_size()
    return rng.randrange(1, 1 << MASK_BITS[w])


def xor_normal(t, m):
    """t (float32 or float64) with the bits of its normal values xor m:
    the worker's wdev_xor_normal. t itself where m is 0."""
    if not m:
        return t
    w = t.element_size()
    bits = t.reshape(-1).view(_bits_dtype(w))
    e = bits & _EXP_BITS[w]
    normal = (e != 0) & (e != _EXP_BITS[w])
    return torch.where(normal, bits ^ m, bits).view(t.dtype).reshape(t.shape)


def layout(n):
    """(q, k): the bands' and the extremes' lengths for n elements."""
    return max(1, n // BAND_DIV), max(1, n // EXTREME_DIV)


def source_len(n):
    """The elements of the source an input of n elements is rebuilt from."""
    return n + 2 * layout(n)[0]


def _bits_dtype(w):
    return {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[w]


def order_key(flat):
    """int64 keys in the values' order: floats by their bits (negative
    ones reversed), integers and bools by value."""
    t = flat.detach().reshape(-1)
    if t.dtype == torch.bool:
        return t.to(torch.int64)
    if not t.is_floating_point():
        return t.to(torch.int64)
    w = t.element_size()
    s = t.view(_bits_dtype(w)).to(torch.int64, copy=True)
    neg = s < 0
    s[neg] ^= (1 << (8 * w - 1)) - 1
    return s


def distinct(src):
    """src (flat) with its equal floating values parted: in order_key()'s
    order, each at least one unit in the last place above the one before
    it, where that moves no value by more than DISTINCT_ULPS and leaves
    every value finite; else src itself (integers, non-finite values,
    dense repeats)."""
    if not src.is_floating_point() or src.numel() < 2:
        return src
    sk, order = torch.sort(order_key(src), stable=True)
    if not bool((sk[1:] == sk[:-1]).any()) or not bool(torch.isfinite(src).all()):
        return src
    # new = cummax(sk - i) + i, a piece at a time (the running maximum
    # carried): in one piece its int64 temporaries were 6 GiB for an
    # input of 2^28 elements, which the device's allocator then kept.
    n, new, carry, most = sk.numel(), torch.empty_like(sk), None, 0
    for s in range(0, n, REBUILD_CHUNK):
        i = torch.arange(s, min(n, s + REBUILD_CHUNK), dtype=torch.int64, device=sk.device)
        c = torch.cummax(sk[s:s + i.numel()] - i, 0).values
        if carry is not None:
            c = torch.maximum(c, carry)
        carry = c[-1].clone()
        c += i
        most = max(most, int((c - sk[s:s + i.numel()]).max()))
        new[s:s + i.numel()] = c
        del i, c
    del sk
    if most > DISTINCT_ULPS:
        return src
    w = src.element_size()
    key = torch.empty_like(new)
    key[order] = new
    del new, order
    neg = key < 0
    key[neg] ^= (1 << (8 * w - 1)) - 1
    del neg
    out = key.to(_bits_dtype(w)).view(src.dtype)
    return out if bool(torch.isfinite(out).all()) else src


def partition(flat, other=None):
    """The flat indices that make flat's source (the layout above): into
    flat, or with other (another draw of the same input, as many
    elements) into flat and other concatenated, the bands then other's."""
    n = flat.numel()
    q, k = layout(n)
    order = torch.sort(order_key(flat), stable=True).indices
    bands, base = order, 0
    if other is not None:
        bands, base = torch.sort(order_key(other), stable=True).indices.to(order.device), n
    by_index = lambda ix: torch.sort(ix).values
    return torch.cat([order[:k], by_index(order[k:n - k]), order[n - k:],
                      base + by_index(bands[k:k + q]), base + by_index(bands[n - k - q:n - k])])


def source_of(flat, other=None):
    """flat's source: its values (and other's, for the bands) laid out,
    equal values parted (distinct()). Its sorts' temporaries, several
    times the input, go back to the device: the judge, its reference
    process and the worker share it, and PyTorch's allocator would keep
    them for this process alone."""
    flat = flat.detach().reshape(-1)
    if other is None:
        out = distinct(flat[partition(flat)])
    else:
        other = other.detach().reshape(-1).to(flat.device)
        out = distinct(torch.cat([flat, other])[partition(flat, other)])
    if flat.is_cuda:
        torch.cuda.empty_cache()
    return out


def windows(n, rng):
    """A run's windows of the source, [start, length, ...] (three), whose
    lengths sum to n; rng a random.Random."""
    q, k = layout(n)
    l1, l2 = rng.randint(1, k), rng.randint(1, k)
    hi = max(0, min(max(1, n // MID_MAX_DIV), 2 * q - l1 - l2, n - 2 * k))
    lm = rng.randint(min(max(1, n // MID_MIN_DIV), hi), hi)
    ms = rng.randint(k, n - k - lm)
    d = l1 + l2 + lm
    return [l1, ms - l1, ms + lm, n - l2 - ms - lm, rng.randint(n, n + 2 * q - d), d]


def valid(n, m, wins):
    """Whether wins ([start, length, ...], at most WINDOWS_MAX) rebuilds n
    elements from a source of m."""
    if len(wins) % 2 or len(wins) > 2 * WINDOWS_MAX:
        return False
    pairs = list(zip(wins[0::2], wins[1::2]))
    return (sum(l for _, l in pairs) == n and
            all(s >= 0 and l >= 0 and s + l <= m for s, l in pairs))


def rebuild(src, n, a, b, wins, m, out=None):
    """A refreshed input, flat (n elements), from its source src (or
    from itself without windows): element e is src[source(n, a, b, wins,
    e)], masked with m: the worker's refresh. Built REBUILD_CHUNK elements
    at a time: the index of a whole input of 2^28 elements in one piece
    took 6 GiB of int64 temporaries on the device. Into out when given
    (n elements of src's dtype, not src's memory)."""
    if out is None:
        out = torch.empty(n, dtype=src.dtype, device=src.device)
    for s in range(0, n, REBUILD_CHUNK):
        e = torch.arange(s, min(n, s + REBUILD_CHUNK), dtype=torch.int64, device=src.device)
        out[s:s + e.numel()] = xor_normal(src[source(n, a, b, wins, e)], m)
    return out


def source(n, a, b, wins, e):
    """The source's indices of the rebuilt input's elements e (an int64
    tensor): element e is the windows' concatenation's (a e + b) mod n."""
    u = (a * e + b) % n
    if not wins:
        return u
    starts = torch.tensor(wins[0::2], dtype=torch.int64, device=e.device)
    lens = torch.tensor(wins[1::2], dtype=torch.int64, device=e.device)
    ends = torch.cumsum(lens, 0)
    w = torch.bucketize(u, ends[:-1], right=True)
    return starts[w] + u - (ends - lens)[w]
