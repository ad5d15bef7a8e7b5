"""Perturbation of the timing input sets: before every timed run the
worker writes one judge-chosen element into each perturbed input of the
set about to run (outside the timed region), so no timed call sees inputs
it has seen before and a kernel that replays an output it kept (per
pointer, per sampled elements, per hash) returns a stale one. The judge
keeps the perturbed state of each set and computes the expected outputs
of the final state for its spot checks (docs/evaluation.md, *Fresh inputs
in every timed run*).

Choices, and why:
- Which inputs: forward's floating-point arguments; when it has none, its
  integer (and bool) arguments, with values taken from the same tensor
  (so within their valid range: class targets, indices). Parameters and
  buffers stay: they are the model's, the same for every set.
- Positions: a pool of up to POOL elements per input drawn once per batch;
  each candidate walks its own random order of it (the system's RNG, not
  the evaluation seed the worker can read), so each position is changed at
  most once per set while the pool lasts.
- Values: another pool element's original value (the input's own
  distribution), different from the position's current one. A position
  changed once keeps its new value, so every timed run of a set differs
  from all earlier states of that set at its newly changed position.
- Chained: the changes accumulate and are sent only in the request that
  runs them; the outputs of future runs are those of inputs that exist
  only after all earlier changes, so computing them ahead costs a forward
  pass each, as running them does (and work outside the timed calls shows
  as `untimed_work`)."""
import random

import torch

from kbh import judge_io as jio

POOL = 4096


def perturbed_args(args):
    """Indices of forward's arguments that are perturbed: the floating ones,
    or without any, the integer and bool ones."""
    fl = [j for j, t in enumerate(args) if t.is_floating_point() and t.numel() > 0]
    if fl:
        return fl
    return [j for j, t in enumerate(args) if not t.is_floating_point() and not t.is_complex()
            and t.numel() > 1]


def _elem_bytes(t):
    """Each element of a 1-D tensor as bytes (little-endian)."""
    es = t.element_size()
    b = jio.to_bytes(t)
    return [b[i * es:(i + 1) * es] for i in range(t.numel())]


class Pool:
    """Per timing set and perturbed input: positions and their original
    values (bytes), shared by the batch's candidates."""

    def __init__(self, args, rng):
        self.inputs = {}
        for j in perturbed_args(args):
            flat = args[j].detach().reshape(-1)
            n = flat.numel()
            if n <= POOL:
                pos = torch.arange(n, dtype=torch.int64)
            else:
                pos = torch.tensor(sorted(rng.sample(range(n), POOL)), dtype=torch.int64)
            vals = flat[pos.to(flat.device)].cpu()
            self.inputs[j] = {"pos": pos.tolist(), "orig": _elem_bytes(vals),
                              "dtype": jio.dtype_name(args[j]), "shape": [n],
                              "floating": args[j].is_floating_point()}


def pools(ctx):
    """The batch's pools, one per timing set, built on first use."""
    if getattr(ctx, "perturb_pools", None) is None:
        rng = random.SystemRandom()
        ctx.perturb_pools = {k: Pool(ctx.sets[k]["args"], rng) for k in ctx.timing_sets}
    return ctx.perturb_pools


class Perturber:
    """One candidate's perturbations: what to send before each timed run,
    and the state each set is in."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.pools = pools(ctx)
        self.rng = random.SystemRandom()
        self.order = {}		# (k, j) -> pool indices, shuffled
        self.next = {}		# (k, j) -> how far along order
        self.cur = {}		# k -> {j: {position: bytes}}
        self.runs = 0		# timed runs with at least one change
        self.fresh = 0		# ... of which at a position never changed before
        self.plain = 0		# timed runs with none (nothing to perturb)
        self.spots = 0		# spot checks on changed inputs
        self.moved = 0		# ... where the changes moved the expected outputs

    def _pick(self, k, j):
        p = self.pools[k].inputs[j]
        key = (k, j)
        if key not in self.order:
            o = list(range(len(p["pos"])))
            self.rng.shuffle(o)
            self.order[key], self.next[key] = o, 0
        o = self.order[key]
        i = o[self.next[key] % len(o)]
        fresh = self.next[key] < len(o)
        self.next[key] += 1
        pos = p["pos"][i]
        cur = self.cur.setdefault(k, {}).setdefault(j, {})
        now = cur.get(pos, p["orig"][i])
        seen = {now, p["orig"][i]}
        for _ in range(16):
            v = p["orig"][self.rng.randrange(len(p["orig"]))]
            if v not in seen:
                cur[pos] = v
                return [j, pos, v.hex()], fresh
        if p["floating"]:
            # A constant tensor: a value next to it, still of its sign.
            t = jio.from_bytes(now, p["dtype"], [1]).to(torch.float64)
            x = float(t[0])
            x = x * (1 + 2 ** -6) if x != 0 else 2 ** -6
            v = jio.to_bytes(torch.tensor([x], dtype=jio.BY_NAME[p["dtype"]]))
            if v != now:
                cur[pos] = v
                return [j, pos, v.hex()], fresh
        return None, False

    def request(self, sets):
        """The "perturb" field of a time request over sets: one list per run."""
        out = []
        if not getattr(self.ctx, "perturb", True):
            self.plain += len(sets)
            return [[] for _ in sets]
        for k in sets:
            run, fresh = [], False
            for j in self.pools[k].inputs:
                e, f = self._pick(k, j)
                if e is not None:
                    run.append(e)
                    fresh = fresh or f
            out.append(run)
            if run:
                self.runs += 1
                self.fresh += fresh
            else:
                self.plain += 1
        return out

    def changed(self, k):
        return any(self.cur.get(k, {}).values())

    def changes(self, k):
        """Set k's changes so far, [[arg, position, hex bytes], ...]: what
        the reference process applies to its pristine copy of the set."""
        return [[j, pos, v.hex()] for j, cur in sorted(self.cur.get(k, {}).items())
                for pos, v in cur.items()]

    def args(self, k):
        """Set k's forward arguments in their current, perturbed state (the
        unperturbed tensors themselves for inputs never changed)."""
        args = list(self.ctx.sets[k]["args"])
        for j, cur in self.cur.get(k, {}).items():
            if not cur:
                continue
            p = self.pools[k].inputs[j]
            t = args[j].detach().clone()
            flat = t.reshape(-1)
            pos = torch.tensor(list(cur.keys()), dtype=torch.int64, device=flat.device)
            vals = jio.from_bytes(b"".join(cur.values()), p["dtype"], [len(cur)]).to(flat.device)
            flat[pos] = vals
            args[j] = t
        return args

    def summary(self):
        if not getattr(self.ctx, "perturb", True):
            return ("KERNELBOT_PERTURB=0: %d timed runs on fixed inputs; an output kept per input "
                    "set and replayed would pass the spot checks" % self.plain)
        return ("%d timed runs on inputs changed by the judge before the run (%d at a position "
                "never changed before), %d with nothing to change; the changes moved the expected "
                "outputs at %d of %d spot checks (where they did not, a replayed output would pass)"
                % (self.runs, self.fresh, self.plain, self.moved, self.spots))
