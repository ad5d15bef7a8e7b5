"""Perturbation of the timing input sets: before every timed run the
worker writes judge-chosen elements into each perturbed input of the set
about to run (outside the timed region), so no timed call sees inputs it
has seen before and a kernel that replays an output it kept (per pointer,
per sampled elements, per hash) returns a stale one. The judge keeps the
perturbed state of each set and computes the expected outputs of that
state for its spot checks (docs/evaluation.md, *Fresh inputs in every
timed run*).

Choices, and why:
- Which inputs: the worker's, forward's arguments and then the model's
  state (named parameters, then buffers: input len(args) + p), floating,
  integer and bool (of more than one element), with values taken from
  the same tensor (so within their valid range: class targets, indices,
  positions). A kernel that keeps a function of a weight or of integer
  positions between calls would otherwise do it once (issue 22). The
  state only where the worker passes those writes on (its hello's
  "state"), and not the state the model computes rather than draws (the
  same bit for bit under a second build with another seed: frequency
  tables, masks, position ids; ctx.state_fixed): a kernel may compute
  it itself.
- Positions: every run, for a tensor of shape
  (d0, ..., dk), N = min(SPREAD, max di) elements, element j at index
  perm_i(j mod di) on axis i, with a permutation per axis (a sample of N
  distinct indices for an axis longer than N) drawn from the system's RNG
  (not the evaluation seed the worker can read). Every index of every axis
  up to SPREAD long holds a changed element, so every row and every
  column of a matrix, every batch entry, channel and spatial line of an
  activation changes in every run: a kernel that keeps its inputs and
  outputs and recomputes only the outputs the changed elements reach
  (incremental recomputation) recomputes outputs that depend on a whole
  slice along one axis (matrix products, reductions, softmax and norms
  over an axis) in full.
- Refresh, inputs of 4 to 2^31 elements without a structure (the
  first REFRESH_TENSORS of a set), where the worker can (its hello's
  "refresh"): before those changes, the whole input rebuilt from
  windows of its source (kbh/judge_skew.py: the set's values laid out
  once, its extremes dropped and a share of band values put in per run,
  so every statistic of the whole input moves), element e from
  (a*e + b) mod n of the windows, a (a unit other than 1 and n - 1), b
  and the windows drawn per run. The spread alone leaves an update by
  linearity ((new - old) * w[p] per changed x[i][p]) the work over the
  number of changes to gain; with every element changed it pays for them
  all. Every value is one the draws have (repeats parted by an ulp or
  so: judge_skew.distinct()).
- Values: a draw from a sample of the input's original values (the
  input's own distribution, so 100 runs of changes do not move the input
  away from get_inputs()'s distribution), or for a floating input without
  structure of the draw after the one the refresh's bands come from
  (change_draw(): the same distribution, and no value that ties with an
  element of the run's input, its own or a band's: an honest top-k
  picks either of two equal values), different from the element's
  current value; with no other value to draw, a one-element input's
  value x (1 + 2^-6) (2^-6 for zero), and an element of a larger input
  stays (never a value get_inputs() does not give). Every timed run of a
  set differs from all earlier states of that set.
- Structure: a pattern (the elements holding a value that is not
  finite or that at least 1/PATTERN_SHARE of them hold: the zeros of a
  triangular, banded or sparse matrix, a mask's -inf), symmetry of the
  last two axes and sorted rows (monotone), found when the pools are
  built. A pattern, and any integer input, placed at random
  (exchangeable: 16 codes, class targets, a relu's zeros) is no
  structure: a refresh keeps it in distribution. A pattern placed by a
  rule (a one-hot, a triangle, padding) is one, and so is the diagonal
  of a square floating input whose magnitudes rank apart from the rest
  (diagonal: a diagonally dominant or positive-definite matrix, a
  distance matrix's zeros; a refresh would scatter it, and an honest
  solve by iteration, or the reference's Cholesky, then fails); integers placed by a
  rule and no pattern (a permutation per row), integers too few to tell
  (EXCH_MIN: sizes carried as a tensor) and sorted rows are kept whole. An honest kernel may exploit what get_inputs() promises
  (skip the zero triangle, read one half, gather a one-hot's row), so
  such an input is not refreshed (a whole permutation moves the
  pattern), its changes go only to free elements (free_positions: still
  every index of every axis that holds one; then random free ones up to
  twice the spread's budget), their values drawn from those, and a
  symmetric input's go to (i, j) and (j, i) alike. An input all pattern
  (placed by a rule) or kept stays. Without a refresh only the changes
  hold against updates by linearity there.
- Chained: the refresh and changes are drawn and sent only in the
  request that runs them (without a refresh the changes accumulate); the
  outputs of future runs are those of inputs that exist only once drawn,
  so computing them ahead costs a forward pass each, as running them
  does (and work outside the timed calls shows as `untimed_work`).
- Open (docs/evaluation.md, residual risks): what never changes is
  still worth computing once: state the model computes, sorted inputs,
  inputs placed by a rule with nothing free to change, state the worker
  does not take (a ModelNew whose state is not the reference's); and a
  table of f at every value an integer input can hold survives its
  permutation (it pays off only against the other inputs' changes).
  Inputs past the first REFRESH_TENSORS refreshable ones of a set get
  the spread alone. A property the structure tests do not see (rows
  summing to 1, a relation between two inputs, each permuted on its own)
  is broken by the refresh for an honest kernel that relies on it."""
import math
import random
import struct

import torch

from kbh import judge_io as jio
from kbh import judge_skew as skew
from kbh.judge_structure import (POOL, SPREAD, _bits, diagonal, exchangeable, fill_positions,  # noqa: F401
                                  free_axes, free_positions, mirror, monotone,
                                  spread_positions, structure)

# What the worker takes: changes per run (WORKER_MAX_PERTURB) and bytes
# per request line (WORKER_LINE_MAX, less room for the rest), gpu/worker.h;
# an entry [arg, position, "hex"] is at most ENTRY_BYTES of JSON.
RUN_MAX = 16384
LINE_BUDGET = 12 << 20
ENTRY_BYTES = 48
# Inputs of fewer elements are refreshed (permuted whole) before every
# run where the worker can: a * e stays below 2^62 in int64.
REFRESH_MAX = 1 << 31
# Draws of a new value for an element before the constant-input rule.
REDRAWS = 16
# Refreshes a run: the worker takes WORKER_MAX_TENSORS (gpu/worker.h).
REFRESH_TENSORS = 256


def perturbed_args(ins):
    """Indices of the inputs that are perturbed (forward's arguments, then
    the model's state: the worker's inputs): the floating ones and the
    integer and bool ones of more than one element."""
    return [j for j, t in enumerate(ins) if not t.is_complex()
            and t.numel() > (0 if t.is_floating_point() else 1)]


def set_inputs(ctx, k):
    """Set k's inputs as the worker holds them: forward's arguments, then
    the model's state (named parameters, then buffers)."""
    return list(ctx.sets[k]["args"]) + [t for _, t in getattr(ctx, "state", None) or []]


def fixed_state(ctx, k):
    """The input indices of set k's state tensors that the model computes
    rather than draws (the same under another seed: frequencies, masks,
    position ids; ctx.state_fixed, from the reference's build): never
    perturbed, a kernel may compute them itself."""
    n = len(ctx.sets[k]["args"])
    fixed = getattr(ctx, "state_fixed", None) or []
    return {n + i for i, f in enumerate(fixed) if f}


def refresh_candidates(ctx, k):
    """The inputs of set k the judge may refresh before a run (each gets a
    source, judge_skew): those without structure, of 4 to REFRESH_MAX
    elements."""
    out = []
    for j, p in pools(ctx)[k].inputs.items():
        n = math.prod(p["shape"]) if p["shape"] else 1
        if 4 <= n < REFRESH_MAX and not pools(ctx)[k].structured(j):
            out.append(j)
    return out


class Pool:
    """Per timing set and perturbed input (forward's arguments, then the
    model's state), shared by the batch's candidates: a sample of its
    original values (where the new values come from) and the structure
    the changes keep."""

    def __init__(self, ins, rng, skip=(), shared=None, others=None):
        """ins: the set's inputs; skip: indices left out; shared: {id of
        a tensor: its entry, None until read} for tensors every set holds;
        others: another set's draw of the same inputs, where a floating
        input without structure takes its new values from (its own values
        put in again would tie with their originals: an honest top-k or
        argmax picks either of two equal values)."""
        self.inputs = {}
        for j in perturbed_args(ins):
            if j in skip:
                continue
            t = ins[j]
            if shared and shared.get(id(t)) is not None:
                # The model's state, the same tensor in every set: read once.
                self.inputs[j] = shared[id(t)]
                continue
            flat = t.detach().reshape(-1)
            n = flat.numel()
            if n <= POOL:
                pos = torch.arange(n, dtype=torch.int64)
            else:
                pos = torch.tensor(sorted(rng.sample(range(n), POOL)), dtype=torch.int64)
            floating = t.is_floating_point()
            mask, sym = structure(t, rng)
            # Sorted rows: no change keeps them (positions, offsets, edges).
            kept = monotone(t)
            if not kept and not sym and (mask is not None or not floating):
                if exchangeable(t, rng):
                    # A pattern placed at random (codes, class targets, a
                    # relu's zeros): a refresh keeps it in distribution.
                    mask = None
                elif mask is None:
                    # Integers placed by a rule the pattern does not name
                    # (a permutation per row): nothing known to keep it.
                    kept = True
            diag = None if kept else diagonal(t, rng, mask)
            if diag is not None:
                # Magnitudes placed on the diagonal by a rule (diagonally
                # dominant, positive-definite): kept as a pattern is.
                mask = diag if mask is None else mask | diag
            free = None if mask is None else ~mask
            if free is not None:
                # New values come from the elements outside the pattern.
                pos = free.nonzero().reshape(-1)
                if pos.numel() > POOL:
                    pos = pos[torch.tensor(sorted(rng.sample(range(pos.numel()), POOL)),
                                           dtype=torch.int64)]
            o = other_draw(others, j, t)
            if o is not None and floating and free is None and not sym and not kept:
                vals = o.detach().reshape(-1)[pos.to(o.device)].cpu()
            else:
                vals = flat[pos.to(flat.device)].cpu()
            # Integers all distinct (a permutation, indices to gather or
            # scatter): a refresh moves them and keeps them distinct; a
            # change or a skewed refresh would put one in twice, and an
            # honest inverse permutation leaves a hole.
            distinct = (not floating and not kept and free is None and n > 1
                        and int(torch.unique(flat).numel()) == n)
            if kept or distinct:
                vals = vals[:0]
            self.inputs[j] = {"vals": vals, "dtype": jio.dtype_name(t),
                              "shape": list(t.shape), "floating": floating,
                              "free": free, "sym": sym, "kept": kept, "distinct": distinct,
                              "axes": None if free is None or kept else free_axes(t.shape, free)}
            if shared and id(t) in shared:
                shared[id(t)] = self.inputs[j]

    def structured(self, j):
        """Whether input j keeps a structure: a pattern, symmetry or order."""
        p = self.inputs[j]
        return p["free"] is not None or p["sym"] or p["kept"]


def next_draw(ctx, k):
    """(k2, inputs): the timing set after k and its inputs, another draw
    of each of k's (the refresh's bands, the changes' new values); (-1,
    None) with one timing set."""
    sets = list(ctx.timing_sets)
    if len(sets) < 2:
        return -1, None
    k2 = sets[(sets.index(k) + 1) % len(sets)]
    return k2, set_inputs(ctx, k2)


def other_draw(others, j, t):
    """others' input j where it is another draw of t (not t itself, as
    the model's state is in every set; of t's shape and dtype), else None."""
    o = others[j] if others is not None and j < len(others) else None
    return o if o is not None and o is not t and o.shape == t.shape and o.dtype == t.dtype else None


def make_sources(ctx):
    """Each timing set's refresh sources (judge_skew) of its
    refresh_candidates(), as sets[k]["source"] {input: flat tensor, where
    the set lives}; a tensor every set holds (the model's state) laid out
    once. The judge writes them for the worker (src<k>.bin)."""
    done = {}
    for k in ctx.timing_sets:
        ins = set_inputs(ctx, k)
        # The bands from the next timing set's draw (judge_skew): -1, own.
        k2, others = next_draw(ctx, k)
        src, bands = {}, {}
        for j in refresh_candidates(ctx, k):
            t = ins[j]
            o = other_draw(others, j, t)
            bands[j] = k2 if o is not None else -1
            if (id(t), bands[j]) not in done:
                done[(id(t), bands[j])] = skew.source_of(t, o)
            src[j] = done[(id(t), bands[j])]
        ctx.sets[k]["source"] = src
        ctx.sets[k]["source_bands"] = bands


def pools(ctx):
    """The batch's pools, one per timing set, built on first use."""
    if getattr(ctx, "perturb_pools", None) is None:
        rng = random.SystemRandom()
        # The state's tensors, the same in every set: read for the first.
        shared = {id(t): None for _, t in getattr(ctx, "state", None) or []}
        ctx.perturb_pools = {k: Pool(set_inputs(ctx, k), rng, fixed_state(ctx, k), shared,
                                     change_draw(ctx, k))
                             for k in ctx.timing_sets}
    return ctx.perturb_pools


def change_draw(ctx, k):
    """The inputs set k's changes take their new values from: the draw
    after the one its refresh's bands come from (next_draw()), so a
    change never puts in a value a band put in the same run (the same
    element of the same draw: a tie in a row, where an honest top-k and
    the reference's may pick different indices); with two timing sets,
    the bands' draw; with one, None."""
    k2, ins = next_draw(ctx, k)
    if k2 < 0:
        return None
    k3, ins3 = next_draw(ctx, k2)
    return ins3 if k3 != k else ins


def pack(run):
    """A run's [input, position, "hex"] changes as the worker takes them
    packed: one [input, "positions", "values"] per input, the positions
    little-endian int64s, in hex (gpu/worker_parse.c): a few strings to
    parse instead of thousands of JSON arrays, in the request the judge's
    clock bounds. Order within an input is kept (a later change wins)."""
    by = {}
    for j, pos, hx in run:
        p, v = by.setdefault(j, ([], []))
        p.append(pos)
        v.append(hx)
    return [[j, struct.pack("<%dq" % len(p), *p).hex(), "".join(v)] for j, (p, v) in by.items()]


class Perturber:
    """One candidate's perturbations: what to send before each timed run,
    and the state each set is in."""

    def __init__(self, ctx, refresh=False, state=False, mask=False):
        self.ctx = ctx
        self.pools = pools(ctx)
        # The worker passes writes to the inputs past forward's arguments
        # on to the kernel (its hello's "state"): the model's state is
        # perturbed as the arguments are.
        self.state = bool(state)
        # The worker permutes whole inputs before a run (its hello's
        # "refresh"): every element of each floating input changes.
        self.refresh = bool(refresh) and getattr(ctx, "perturb", True)
        self.rparams = {}	# k -> {j: (a, b, windows) of the last refresh}
        # The worker masks a refresh (its hello's "refresh_mask";
        # judge_skew.xor_normal): no value comes back whole.
        self.mask = self.refresh and bool(mask)
        self.rmask = {}		# k -> {j: the last refresh's mask, 0 for none}
        self.maskable = {}	# (k, j) -> whether input j of set k takes one
        self.srckeys = {}	# (k, j) -> the source's order keys, sorted
        self.masked = 0		# elements refreshed with a mask, all runs
        self.rset = {}		# k -> the inputs refreshed before every run
        self.rlog = {}		# k -> {j: (positions, values) changed after it}
        self.refreshed = 0	# elements refreshed, all runs
        self.last_refreshed = 0	# ... in the last request
        self.last_refresh = []	# the last request's "refresh"
        self.rng = random.SystemRandom()
        self.now = {}		# k -> {j: the input's current values, flat, on the CPU}
        self.touched = {}	# k -> {j: bool mask of the elements ever changed}
        self.chpos = {}		# k -> {j: [position tensors of the changes, in order]}
        self.runs = 0		# timed runs with at least one change
        self.fresh = 0		# ... of which at a position never changed before
        self.plain = 0		# timed runs with none (nothing to perturb)
        self.sent = 0		# changed elements sent, all runs
        self.most = 0		# ... most in one run
        self.last = 0		# ... in the last request
        self.spots = 0		# spot checks on changed inputs
        self.moved = 0		# ... where the changes moved the expected outputs

    def inputs(self, k):
        """Set k's inputs this candidate's perturbations address: forward's
        arguments, then the model's state where the worker takes it."""
        ins = list(self.ctx.sets[k]["args"])
        return set_inputs(self.ctx, k) if self.state else ins

    def _orig(self, k, j):
        return self.inputs(k)[j].detach().reshape(-1).cpu()

    def _flat(self, k, j):
        """Input j of set k as it is now, flat, on the CPU (built from the
        last refresh and the changes after it when a refresh made it stale)."""
        st = self.now.setdefault(k, {})
        if j not in st:
            orig = self._orig(k, j)
            r = self.rparams.get(k, {}).get(j)
            if r is None:
                st[j] = orig.clone()
            else:
                n = orig.numel()
                st[j] = skew.rebuild(self._source(k, j).cpu(), n, *r, self.rmask[k][j])
                pos, new = self.rlog[k][j]
                st[j][pos] = new
        if j not in self.touched.setdefault(k, {}):
            self.touched[k][j] = torch.zeros(st[j].numel(), dtype=torch.bool)
        return st[j], self.touched[k][j]

    def _refreshable(self, k, j):
        """Whether input j of set k is refreshed before every run: one of
        refresh_candidates() with a source written for the worker, among
        the first REFRESH_TENSORS such inputs of the set this candidate
        perturbs (what the worker refreshes in a run; the same ones every
        run)."""
        if not self.refresh:
            return False
        if k not in self.rset:
            src = self.ctx.sets[k].get("source") or {}
            ok = [i for i in self.perturbed(k) if i in src]
            self.rset[k] = set(ok[:REFRESH_TENSORS])
        return j in self.rset[k]

    def _source(self, k, j):
        """What input j of set k is rebuilt from (judge_skew), where the set lives."""
        return self.ctx.sets[k]["source"][j]

    def _refresh(self, k, j):
        """Draw a run's refresh of input j of set k: [j, a, b], a a unit
        mod n other than 1 and n - 1 (a shift or a reversal of the flat
        index would keep rows together) with g = gcd(a - 1, n) at most
        sqrt(n) (a larger g is a shift on each residue class), and b not a
        multiple of g: e -> (a e + b) mod n then leaves no element in place
        (its fixed points solve (a - 1) e = -b mod n: g of them or none;
        a = 257 on 512 elements left half of them where they were), or one
        where g = 1. Where n has no such unit (4 or 6 elements) a shift by
        b != 0, which fixes none."""
        n = math.prod(self.pools[k].inputs[j]["shape"])
        a = 1
        for _ in range(256):
            c = self.rng.randrange(2, n - 1) if n > 3 else 1
            g = math.gcd(c - 1, n)
            if math.gcd(c, n) == 1 and g * g <= n:
                a = c
                break
        g = math.gcd(a - 1, n)
        b = self.rng.randrange(n)
        while g > 1 and b % g == 0:
            b = self.rng.randrange(n)
        # From windows of its source: the run's own skew of the values;
        # all of them, once each, for distinct integers (Pool).
        wins = [0, n] if self.pools[k].inputs[j].get("distinct") else skew.windows(n, self.rng)
        self.rparams.setdefault(k, {})[j] = (a, b, wins)
        m = self._mask(k, j)
        self.rmask.setdefault(k, {})[j] = m
        self.now.get(k, {}).pop(j, None)
        self.refreshed += n
        self.last_refreshed += n
        self.masked += n if m else 0
        return [j, a, b] + wins + (["%x" % m] if m else [])

    def _in_source(self, k, j, vals):
        """Which of vals (on the CPU) the source of input j of set k
        holds; the source's sorted keys are made once."""
        keys = self.srckeys.get((k, j))
        if keys is None:
            # In the values' own width where that holds them (float32's
            # keys are int32's): a set's keys stay on the device all batch.
            src = self._source(k, j)
            keys = skew.order_key(src)
            if src.is_floating_point() and src.element_size() == 4:
                keys = keys.to(torch.int32)
            keys = self.srckeys[(k, j)] = torch.sort(keys).values
            if keys.is_cuda:
                torch.cuda.empty_cache()
        g = skew.order_key(vals).to(device=keys.device, dtype=keys.dtype)
        i = torch.searchsorted(keys, g).clamp(max=keys.numel() - 1)
        return (keys[i] == g).cpu()

    def _mask(self, k, j):
        """A run's mask for input j of set k (judge_skew.xor_normal): 0
        where the worker has none or the input takes none (masked())."""
        if not self.mask:
            return 0
        if (k, j) not in self.maskable:
            p = self.pools[k].inputs[j]
            self.maskable[(k, j)] = (p["floating"] and not self.pools[k].structured(j) and
                                     skew.masked(p["vals"]))
        if not self.maskable[(k, j)]:
            return 0
        return skew.draw_mask(self.pools[k].inputs[j]["vals"].dtype, self.rng)

    def _apply(self, k, j, pos, new):
        """Record new values at flat positions pos; the run's entries and
        whether one of them had never changed before."""
        flat, seen = self._flat(k, j)
        fresh = bool((~seen[pos]).any())
        flat[pos] = new
        seen[pos] = True
        self.chpos.setdefault(k, {}).setdefault(j, []).append(pos)
        w = 2 * new.element_size()
        hx = jio.to_bytes(new).hex()
        return [[j, p, hx[i * w:(i + 1) * w]] for i, p in enumerate(pos.tolist())], fresh

    def _spread(self, k, j, cap):
        """The floating input's changes for one run (spread_positions),
        after its refresh where there is one."""
        p = self.pools[k].inputs[j]
        if p["vals"].numel() == 0:
            # All of it pattern, or kept: nothing to change; distinct
            # integers: the refresh alone, no change after it.
            if self.rparams.get(k, {}).get(j) is not None and self._refreshable(k, j):
                none = self.inputs(k)[j].detach().reshape(-1)[:0].cpu()
                self.rlog.setdefault(k, {})[j] = (torch.zeros(0, dtype=torch.int64), none)
            return [], False
        if p["sym"]:
            cap = max(1, cap // 2)	# an element and its mirror
        if p["free"] is not None:
            pos = free_positions(p["shape"], p["free"], p["axes"], self.rng, cap)
        else:
            pos = spread_positions(p["shape"], self.rng, cap)
        if self.pools[k].structured(j):
            # No refresh: as many changes as the budget holds.
            pos = fill_positions(pos, math.prod(p["shape"]), p["free"], self.rng, cap)
        if p["sym"]:
            # One of each pair, above the diagonal or on it; the mirror
            # gets the same value below.
            pos = torch.unique(torch.minimum(pos, mirror(pos, p["shape"])))
        r = self.rparams.get(k, {}).get(j) if self._refreshable(k, j) else None
        if r is not None:
            # Gathered where the set lives: a copy of the whole input to
            # the host every run would cost more than the run itself.
            # Unmasked: the mask is a bijection, and the new values take
            # it below.
            src = self._source(k, j)
            now = src[skew.source(math.prod(p["shape"]), *r, pos.to(src.device))].cpu()
        else:
            flat, _ = self._flat(k, j)
            now = flat[pos]
        vals = p["vals"]
        g = torch.Generator().manual_seed(self.rng.getrandbits(63))
        new = vals[torch.randint(vals.numel(), (pos.numel(),), generator=g)]
        same = _bits(new) == _bits(now)
        for _ in range(REDRAWS):
            if not same.any():
                break
            idx = same.nonzero().reshape(-1)
            new[idx] = vals[torch.randint(vals.numel(), (idx.numel(),), generator=g)]
            same = _bits(new) == _bits(now)
        if same.any() and (math.prod(p["shape"] or [1]) > 1 or not p["floating"]):
            # No other value of the draw (a one-hot's ones, the only free
            # value of a pattern): left as they are. A value get_inputs()
            # never gives would fail an honest kernel that relies on what
            # it promises (a gather for a one-hot product).
            pos, new = pos[~same], new[~same]
        elif same.any():
            # A one-element input: a value next to it, still of its sign.
            x = now[same].to(torch.float64)
            x = torch.where(x != 0, x * (1 + 2 ** -6), torch.full_like(x, 2 ** -6))
            new[same] = x.to(new.dtype)
            keep = _bits(new) != _bits(now)	# inf, NaN: nothing near them
            pos, new = pos[keep], new[keep]
        if r is not None:
            # Not a value the source holds where they come from another
            # draw: the refresh may have put it in the same row (an
            # honest top-k breaks the tie otherwise than the reference:
            # 1 row of 80 runs of 512 x 512 held one). Where they are the
            # input's own (one timing set, a pattern's values) all of
            # them are, and stay.
            dup = self._in_source(k, j, new)
            if 2 * int(dup.sum()) < dup.numel():
                pos, new = pos[~dup], new[~dup]
            # Every element replaced: the run's state is the refresh and
            # these, whatever the runs before did. The new values take
            # the run's mask too: a sample of the draws, else.
            new = skew.xor_normal(new, self.rmask[k][j])
            self.rlog.setdefault(k, {})[j] = (pos, new)
            hx, w = jio.to_bytes(new).hex(), 2 * new.element_size()
            return [[j, q, hx[i * w:(i + 1) * w]] for i, q in enumerate(pos.tolist())], True
        if not pos.numel():
            return [], False
        if p["sym"]:
            m = mirror(pos, p["shape"])
            off = m != pos
            pos, new = torch.cat([pos, m[off]]), torch.cat([new, new[off]])
        return self._apply(k, j, pos, new)

    def request(self, sets):
        """The "perturb" field of a time request over sets: one list per run."""
        out = []
        self.last = self.last_refreshed = 0
        self.last_refresh = [[] for _ in sets]
        if not getattr(self.ctx, "perturb", True):
            self.plain += len(sets)
            return [[] for _ in sets]
        for i, k in enumerate(sets):
            run, fresh = [], False
            ins = self.perturbed(k)
            room = max(1, min(RUN_MAX // max(1, len(ins)),
                              LINE_BUDGET // (ENTRY_BYTES * len(sets) * max(1, len(ins)))))
            for j, p in ins.items():
                if self._refreshable(k, j):
                    self.last_refresh[i].append(self._refresh(k, j))
                # A structured input is not refreshed: twice the changes
                # where the worker takes them.
                cap = min((2 if self.pools[k].structured(j) else 1) * SPREAD, room)
                e, f = self._spread(k, j, cap)
                run += e
                fresh = fresh or f
            out.append(run)
            self.sent += len(run)
            self.last += len(run)
            self.most = max(self.most, len(run))
            # A refresh alone changes every element (distinct integers,
            # an id per element, take no change after it): a changed run.
            if run or self.last_refresh[i]:
                self.runs += 1
                self.fresh += fresh or bool(self.last_refresh[i])
            else:
                self.plain += 1
        return out

    def perturbed(self, k):
        """{input index: pool} of set k's inputs this candidate perturbs."""
        n = len(self.ctx.sets[k]["args"])
        return {j: p for j, p in self.pools[k].inputs.items() if self.state or j < n}

    def changed(self, k):
        return bool(self.rparams.get(k)) or any(self.chpos.get(k, {}).values())

    def _positions(self, k, j):
        """The positions of input j of set k ever changed, sorted: the
        runs' lists merged (and kept merged), not a scan of the input."""
        lst = self.chpos.get(k, {}).get(j)
        if not lst:
            return torch.zeros(0, dtype=torch.int64)
        if len(lst) > 1:
            lst[:] = [torch.unique(torch.cat(lst))]
        return lst[0]

    def changes(self, k):
        """Set k's changes so far, [[arg, hex of the int64 positions, hex of
        their values], ...] (little-endian): what the reference process
        applies to its pristine copy of the set. Compact: at 4096 changes
        a run a set holds over 100000 changed elements by its last run."""
        out = []
        for j in sorted(set(self.chpos.get(k, {})) | set(self.rparams.get(k, {}))):
            r = self.rparams.get(k, {}).get(j)
            if r is not None:
                # [arg, a, b, windows, bands, (mask,) positions,
                # values]: the refresh from the pristine input's source
                # (judge_skew; its bands from set `bands`, -1 its own),
                # masked where it was, then the changes of the run after
                # it.
                pos, new = self.rlog[k][j]
                m = self.rmask[k][j]
                out.append([j, r[0], r[1], list(r[2]), self.ctx.sets[k]["source_bands"][j]] +
                           ([m] if m else []) +
                           [jio.to_bytes(pos).hex(), jio.to_bytes(new).hex()])
                continue
            pos = self._positions(k, j)
            if pos.numel():
                out.append([j, jio.to_bytes(pos).hex(), jio.to_bytes(self.now[k][j][pos]).hex()])
        return out

    def args(self, k):
        """Set k's forward arguments in their current, perturbed state (the
        unperturbed tensors themselves for inputs never changed)."""
        args = self.inputs(k)
        for j in set(self.chpos.get(k, {})) | set(self.rparams.get(k, {})):
            flat, _ = self._flat(k, j)
            args[j] = flat.reshape(args[j].shape).to(args[j].device)
        return args

    def values(self, k, idx):
        """Set k's forward arguments in their current state, flat: whole
        where idx[j] is None, else only the elements at flat indices
        idx[j]; a refreshed input's sample is gathered from the pristine
        one, not built whole (a check of 65536 elements of an input of
        millions)."""
        out = []
        for j, t in enumerate(self.inputs(k)):
            ix = idx[j] if j < len(idx) else None
            r = self.rparams.get(k, {}).get(j)
            if r is None or ix is None:
                if r is None and not self.chpos.get(k, {}).get(j):
                    flat = t.reshape(-1)
                else:
                    flat, _ = self._flat(k, j)
                    flat = flat.to(t.device)
                out.append(flat if ix is None else flat[ix.to(flat.device)])
                continue
            src = self._source(k, j)
            ix = ix.to(src.device)
            v = skew.xor_normal(src[skew.source(t.numel(), *r, ix)], self.rmask[k][j])
            pos, new = self.rlog[k][j]
            if pos.numel():
                # The run's changes that fall on sampled indices.
                order = torch.argsort(pos)
                sp = pos[order].to(ix.device)
                at = torch.searchsorted(sp, ix).clamp(max=sp.numel() - 1)
                hit = sp[at] == ix
                v[hit] = new[order].to(v.device)[at[hit]]
            out.append(v)
        return out

    def kept_whole(self):
        """The inputs no run changed (all of them pattern, or sorted rows):
        a kernel may keep a function of them from one call to the next and
        pay for it once (8x over its honest twin, tried from outside), so
        the speedup waits for a person (stale_inputs)."""
        return sorted({j for k in self.pools for j, p in self.perturbed(k).items()
                       if p["vals"].numel() == 0
                       and not (p.get("distinct") and self._refreshable(k, j))})

    def summary(self):
        if not getattr(self.ctx, "perturb", True):
            return ("KERNELBOT_PERTURB=0: %d timed runs on fixed inputs; an output kept per input "
                    "set and replayed would pass the spot checks" % self.plain)
        ins = {j: (k, p) for k in self.pools for j, p in self.perturbed(k).items()}
        kept = {j for j, (k, _) in ins.items() if self.pools[k].structured(j)}
        how = ("every element of each %sinput permuted from the set's values before "
               "every run (%d elements in all%s), then "
               % ("other " if kept else "", self.refreshed,
                  ", %d of them with a mask flipping the low bits of each value, new to the "
                  "candidate" % self.masked if self.masked else "")
               if self.refreshed else "")
        if kept:
            whole = {j for j, (_, p) in ins.items() if p["vals"].numel() == 0}
            how = ("input%s %s kept the structure get_inputs() gave %s (not refreshed; changed "
                   "only outside its pattern, mirrored where symmetric; sorted rows kept%s); "
                   % ("s" if len(kept) > 1 else "", ", ".join(map(str, sorted(kept))),
                      "them" if len(kept) > 1 else "it",
                      "; all pattern or sorted, never changed: %s" % ", ".join(map(str, sorted(whole)))
                      if whole else "")) + how
        nargs = min((len(self.ctx.sets[k]["args"]) for k in self.pools), default=0)
        nstate = len(getattr(self.ctx, "state", None) or [])
        if nstate and self.state:
            fixed = sorted(fixed_state(self.ctx, next(iter(self.pools)))) if self.pools else []
            how += ("inputs %d to %d the model's state (parameters, buffers), changed as the "
                    "arguments are%s; " % (nargs, nargs + nstate - 1,
                                           " but for those the model computes (the same under "
                                           "another seed), never changed: %s"
                                           % ", ".join(map(str, fixed)) if fixed else ""))
        elif nstate:
            how += "the model's state never changed (this worker does not take it); "
        return ("%d timed runs on inputs changed by the judge before the run (%d at a position "
                "never changed before; %s%d elements changed, at most %d in a run, spread over "
                "every index of each input's axes up to %d), %d with nothing to change; the "
                "changes moved the expected outputs at %d of %d spot checks (where they did not, "
                "a replayed output would pass)"
                % (self.runs, self.fresh, how, self.sent, self.most, SPREAD, self.plain,
                   self.moved, self.spots))
