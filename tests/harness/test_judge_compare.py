"""judge_compare: the chunked comparison gives what a whole-tensor one
gives (counts, first and worst element, relative error, the message),
across chunk boundaries, NaN and Inf, integer and bool outputs."""
import math
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))
from kbh import judge_compare as cmp  # noqa: E402


def naive(out, ref, a, r):
    """The comparison's definition, on whole tensors in float64."""
    o, e = out.double().reshape(-1), ref.double().reshape(-1)
    fin = torch.isfinite(o) & torch.isfinite(e)
    nan_bad = torch.isnan(o) != torch.isnan(e)
    inf_bad = (torch.isinf(o) | torch.isinf(e)) & (o != e) & ~torch.isnan(o) & ~torch.isnan(e)
    diff = torch.where(fin, (o - e).abs(), torch.zeros_like(o))
    bad = nan_bad | inf_bad | (fin & (diff > a + r * e.abs()))
    if bool(fin.any()):
        num, den = float(torch.linalg.norm((o - e)[fin])), float(torch.linalg.norm(e[fin]))
        rel = num / den if den > 0 else (0.0 if num == 0 else math.inf)
    else:
        rel = 0.0
    nbad = int(bad.sum())
    first = int(bad.nonzero()[0]) if nbad else -1
    worst = int(torch.argmax(torch.where(bad, diff, torch.full_like(diff, -1.0)))) if nbad else -1
    return nbad, int(nan_bad.sum()), int(inf_bad.sum()), first, worst, rel


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(cmp, "CHUNK_CPU", 97)
    monkeypatch.setattr(cmp, "CHUNK_DEVICE", 97)


def cases():
    g = torch.Generator().manual_seed(7)
    for n, dt in ((1, torch.float32), (96, torch.float32), (1000, torch.float32),
                  (1000, torch.float16), (523, torch.float64), (2048, torch.bfloat16)):
        ref = torch.randn(n, generator=g).to(dt)
        yield "equal", ref.clone(), ref
        out = ref.clone()
        out[n // 2] += 1.0
        yield "one off", out, ref
        if n > 10:
            out = ref.clone()
            out[3] = float("nan")
            out[n - 2] = float("inf")
            ref2 = ref.clone()
            ref2[7] = float("-inf")
            out[7] = float("-inf")
            out[n // 3] += 5.0
            yield "nan inf", out, ref2
            out = (ref.double() + 1e-3 * torch.randn(n, generator=g, dtype=torch.float64)).to(dt)
            yield "noise", out, ref
            yield "all nan", torch.full_like(ref, float("nan")), torch.full_like(ref, float("nan"))
            yield "zero ref", torch.ones_like(ref), torch.zeros_like(ref)
            out = ref.clone()
            out[5] += 2.0
            out[n - 5] += 2.0	# equal worst: the first is reported
            yield "ties", out, ref


CASES = list(cases())


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_chunked_scan_matches_the_definition(small_chunks, case):
    name, out, ref = CASES[case]
    a, r = cmp.tolerance(ref.dtype)
    sc = cmp._scan(out, ref, a, r)
    nbad, nnan, ninf, first, worst, rel = naive(out, ref, a, r)
    assert (sc["bad"], sc["nan"], sc["inf"], sc["first"], sc["worst"]) == \
        (nbad, nnan, ninf, first, worst), name
    assert sc["rel"] == pytest.approx(rel, rel=1e-9, abs=1e-300) or (sc["rel"] == rel == math.inf)
    msg, rel2 = cmp.compare("out0", out.reshape(-1), ref.reshape(-1))
    assert (msg is None) == (nbad == 0), name
    if msg:
        assert "%d of %d elements" % (nbad, ref.numel()) in msg
        if nnan:
            assert "%d NaN disagreements" % nnan in msg
        assert "at [%d]" % worst in msg


def test_shapes_dtypes_and_integers():
    a = torch.arange(12).reshape(3, 4)
    assert cmp.compare("o", a.reshape(4, 3), a)[0].startswith("o: shape [4, 3]")
    assert "dtype" in cmp.compare("o", a.float(), a)[0]
    b = a.clone()
    b[2, 1] = 99
    msg, _ = cmp.compare("o", b, a)
    assert "1 of 12 elements differ; first at [2, 1]: got 99, expected 9" in msg
    assert cmp.compare("o", a > 3, a > 3) == (None, 0.0)
    x = torch.randn(5, 7)
    y = x.clone()
    y[4, 6] += 1
    msg, rel = cmp.compare("o", y, x)
    assert "at [4, 6]" in msg and rel > 0
