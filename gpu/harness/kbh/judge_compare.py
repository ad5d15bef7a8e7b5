"""Output comparison: shape, dtype, NaN/Inf agreement, allclose with per-
dtype tolerances, and a mismatch summary short enough to feed to an LLM."""
import torch

# docs/design.md, evaluation point 3; a problem may override them
# (request atol/rtol).
DEFAULT_TOL = {torch.float32: 1e-4, torch.float64: 1e-4, torch.float16: 1e-2,
               torch.bfloat16: 1e-2}


def tolerance(dtype, atol=None, rtol=None):
    d = DEFAULT_TOL.get(dtype, 0.0)
    return (d if atol is None else atol), (d if rtol is None else rtol)


# Elements per pass: one pass over both tensors in pieces that stay in
# the cache (CPU), or in a few large launches (a device). The comparison
# of a trial's outputs used to make ten full-size float64 temporaries of
# each: 0.6 s for 4 Mi elements on a busy 2-core host.
CHUNK_CPU = 1 << 16
CHUNK_DEVICE = 1 << 24


def rel_error(out, ref):
    """||out - ref|| / ||ref|| over the elements finite in both (0.0 with
    none; inf where ref is all zero there and out is not)."""
    return _scan(out, ref, 0.0, 0.0)["rel"]


def _scan(out, ref, atol, rtol):
    """One chunked pass over two floating tensors of one shape: the count
    of elements outside atol + rtol * |ref| (finite in both), or whose NaN
    or Inf disagree; those counts; the first and the worst (largest
    |out - ref|, the first of equals) such element's flat index; and the
    relative error."""
    of, ef = out.reshape(-1), ref.reshape(-1)
    step = CHUNK_CPU if ef.device.type == "cpu" else CHUNK_DEVICE
    num2 = den2 = 0.0
    nbad = nnan = ninf = 0
    first = worst = -1
    worst_d = -1.0
    seen_fin = False
    for s in range(0, ef.numel(), step):
        o, e = of[s:s + step].double(), ef[s:s + step].double()
        fin = torch.isfinite(o) & torch.isfinite(e)
        allfin = bool(fin.all())
        d = o - e
        if not allfin:
            zero = torch.zeros_like(d)
            d = torch.where(fin, d, zero)
            ez = torch.where(fin, e, zero)
            seen_fin = seen_fin or bool(fin.any())
        else:
            ez = e
            seen_fin = True
        num2 += float(torch.dot(d, d))
        den2 += float(torch.dot(ez, ez))
        ad = d.abs()
        bad = ad > atol + rtol * ez.abs()
        if not allfin:
            on, en = torch.isnan(o), torch.isnan(e)
            nan_bad = on != en
            inf_bad = (torch.isinf(o) | torch.isinf(e)) & (o != e) & ~on & ~en
            nnan += int(nan_bad.sum())
            ninf += int(inf_bad.sum())
            bad = (bad & fin) | nan_bad | inf_bad
        c = int(bad.sum())
        if c == 0:
            continue
        nbad += c
        if first < 0:
            first = s + int(bad.nonzero()[0])
        masked = torch.where(bad, ad, torch.full_like(ad, -1.0))
        w = int(torch.argmax(masked))
        if float(masked[w]) > worst_d:
            worst_d, worst = float(masked[w]), s + w
    if not seen_fin:
        rel = 0.0
    else:
        num, den = num2 ** 0.5, den2 ** 0.5
        rel = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
    return {"bad": nbad, "nan": nnan, "inf": ninf, "first": first, "worst": worst,
            "worst_diff": max(worst_d, 0.0), "rel": rel}


def _where(t, flat_index):
    idx, rest = [], int(flat_index)
    for d in reversed(t.shape):
        idx.append(rest % d)
        rest //= d
    return list(reversed(idx))


def compare(name, out, ref, atol=None, rtol=None):
    """None when out matches ref, else a one-paragraph summary. Also
    returns the relative error (None when shapes differ)."""
    if tuple(out.shape) != tuple(ref.shape):
        return ("%s: shape %s, expected %s" % (name, list(out.shape), list(ref.shape))), None
    if out.dtype != ref.dtype:
        return ("%s: dtype %s, expected %s" % (name, out.dtype, ref.dtype)), None
    out = out.to(ref.device)
    if not out.is_floating_point():
        bad = out != ref
        if not bool(bad.any()):
            return None, 0.0
        i = int(bad.reshape(-1).nonzero()[0])
        return ("%s: %d of %d elements differ; first at %s: got %s, expected %s"
                % (name, int(bad.sum()), ref.numel(), _where(ref, i),
                   out.reshape(-1)[i].item(), ref.reshape(-1)[i].item())), 0.0
    a, r = tolerance(ref.dtype, atol, rtol)
    sc = _scan(out, ref, a, r)
    rel, nbad = sc["rel"], sc["bad"]
    if nbad == 0:
        return None, rel
    worst, first = sc["worst"], sc["first"]
    parts = ["%s: %d of %d elements (%.3g%%) outside atol=%g rtol=%g"
             % (name, nbad, ref.numel(), 100.0 * nbad / max(1, ref.numel()), a, r)]
    if sc["nan"]:
        parts.append("%d NaN disagreements" % sc["nan"])
    if sc["inf"]:
        parts.append("%d Inf disagreements" % sc["inf"])
    parts.append("max abs error %.6g at %s (got %.6g, expected %.6g)"
                 % (sc["worst_diff"], _where(ref, worst), float(out.reshape(-1)[worst].double()),
                    float(ref.reshape(-1)[worst].double())))
    if first != worst:
        parts.append("first bad element at %s" % _where(ref, first))
    parts.append("relative error %.3g" % rel)
    return "; ".join(parts), rel


def degenerate(outs_a, outs_b):
    """Why a problem's outputs prove little (near-constant, or the same for
    two different input draws), or None."""
    for i, (a, b) in enumerate(zip(outs_a, outs_b)):
        if a.numel() > 1 and torch.equal(a, b):
            return "output %d is identical for two different input draws" % i
        if a.is_floating_point() and a.numel() > 1:
            d = a.double()
            d = d[torch.isfinite(d)]
            if d.numel() > 1 and float(d.std()) <= 1e-6 * max(1.0, float(d.abs().mean())):
                return "output %d is near-constant (std %.3g)" % (i, float(d.std()))
    return None
