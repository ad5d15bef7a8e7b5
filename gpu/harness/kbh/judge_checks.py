"""Which timed runs the judge checks, and the poison of every run
(docs/evaluation.md, *What a check guarantees*).

Checks: after each timed run returns, the judge decides whether to
compare that run's outputs, with probability p (CHECK_FRACTION by
default) drawn from the system's RNG: never from the evaluation seed,
which the worker can read in the manifest, so no schedule of checks can
be computed ahead. Every run of every timing set can be checked, and a
kernel cannot learn of a decision before its run is over (the worker
snapshots the outputs as the call returns). A kernel wrong on K of the
timed runs escapes only if none of those K is checked: (1-p)**K.

Poison: every run (a trial's two runs and every timed run) gets a value
drawn here from one distribution per dtype and sent in the request: a
NaN with a random payload (never the canonical one) for floating types,
random bits of no small magnitude for integers, a byte other than 0 and
1 for bool. A kernel cannot tell trials from timed runs by the poison.
"""
import math
import random

# (1 - 0.8)**5 = 3.2e-4: a kernel that skips work on 5% of 100 timed
# runs (the default 10 rounds of 10) escapes one time in 3000.
CHECK_FRACTION = 0.8
# The fractions of wrong timed runs the result states an escape bound for.
ESCAPE_FRACTIONS = (0.05, 0.5)

# Bits of the exponent (all ones: NaN or infinity) and of the mantissa.
_FLOATS = {"float16": (16, 5, 10), "bfloat16": (16, 8, 7), "float32": (32, 8, 23)}
_INT_BITS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32}


def _nan(bits, exp, man, rng):
    """A NaN of that format: random sign and payload, never zero (that is
    infinity) nor the quiet bit alone (the canonical NaN hardware makes)."""
    while True:
        m = rng.getrandbits(man)
        if m not in (0, 1 << (man - 1)):
            break
    return (rng.getrandbits(1) << (bits - 1)) | (((1 << exp) - 1) << man) | m


def _int(bits, rng):
    """Random bits, not of a small magnitude (0, 1, -1, small indices and
    counts are what integer kernels write)."""
    while True:
        v = rng.getrandbits(bits)
        signed = v - (1 << bits) if v >> (bits - 1) else v
        if bits == 8 and v not in (0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF):
            return v
        if bits > 8 and abs(signed) >= 1 << (bits // 2):
            return v


def poison_value(dtype, rng):
    """One element's poison for dtype (a kernel ABI name), little-endian
    bytes. 8-byte types get one 32-bit word twice: the device fills
    32-bit words (wdev_cuda_fill)."""
    if dtype in _FLOATS:
        bits, exp, man = _FLOATS[dtype]
        return _nan(bits, exp, man, rng).to_bytes(bits // 8, "little")
    if dtype == "float64":
        # The high word's exponent is all ones and the low word (the
        # payload's low half) never zero: a NaN, never the canonical one.
        w = (rng.getrandbits(1) << 31) | (0x7FF << 20) | rng.getrandbits(20)
        return ((w << 32) | w).to_bytes(8, "little")
    if dtype == "int64":
        w = _int(32, rng)
        return ((w << 32) | w).to_bytes(8, "little")
    if dtype == "bool":
        return bytes([rng.randrange(2, 256)])
    bits = _INT_BITS[dtype]
    return _int(bits, rng).to_bytes(bits // 8, "little")


def draw_poison(specs, rng, other=None):
    """One run's poison for outputs specs: a hex string per output (the
    worker protocol's "poison" entry). other: another run's, which every
    value must differ from (a trial's two runs)."""
    out = []
    for i, s in enumerate(specs):
        while True:
            v = poison_value(s["dtype"], rng).hex()
            if other is None or v != other[i]:
                break
        out.append(v)
    return out


class Schedule:
    """One candidate's checks: decide() after every timed run."""

    def __init__(self, p=CHECK_FRACTION, rng=None):
        self.p = min(1.0, max(0.0, float(p)))
        self.rng = rng or random.SystemRandom()
        self.runs = {}		# set -> timed runs
        self.checked = {}	# set -> of which checked by the draw
        self.extra = 0		# checks the draw did not pick (the last full one)

    def decide(self, k):
        """Set k's timed run just returned: whether to check it."""
        self.runs[k] = self.runs.get(k, 0) + 1
        hit = self.p > 0 and self.rng.random() < self.p
        if hit:
            self.checked[k] = self.checked.get(k, 0) + 1
        return hit

    def n_runs(self):
        return sum(self.runs.values())

    def n_checked(self):
        return sum(self.checked.values())

    def escape(self, f):
        """The probability that a kernel wrong on a fraction f of this
        candidate's timed runs (at least one) has none of them checked."""
        k = max(1, math.ceil(f * self.n_runs()))
        return (1.0 - self.p) ** k

    def info(self):
        """The figures for the result (timing.checks)."""
        return {"fraction": self.p, "runs": self.n_runs(), "checked": self.n_checked(),
                "extra": self.extra,
                "by_set": {str(k): [self.checked.get(k, 0), n] for k, n in sorted(self.runs.items())},
                "escape": {str(f): self.escape(f) for f in ESCAPE_FRACTIONS}}

    def summary(self):
        sets = ", ".join("set %s %d/%d" % (k, self.checked.get(k, 0), n)
                         for k, n in sorted(self.runs.items()))
        esc = ", ".join("f = %g: %.2g" % (f, self.escape(f)) for f in ESCAPE_FRACTIONS)
        return ("%d of %d timed runs checked (each with p = %g, decided after the run from the "
                "system's RNG; %s); a kernel wrong on a fraction f of the timed runs escapes with "
                "probability %s" % (self.n_checked(), self.n_runs(), self.p, sets or "none", esc))
