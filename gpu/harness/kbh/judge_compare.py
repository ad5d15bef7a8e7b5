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


def rel_error(out, ref):
    o, r = out.double(), ref.double()
    fin = torch.isfinite(o) & torch.isfinite(r)
    if not bool(fin.any()):
        return 0.0
    den = float(torch.linalg.norm(r[fin]))
    num = float(torch.linalg.norm((o - r)[fin]))
    return num / den if den > 0 else (0.0 if num == 0 else float("inf"))


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
    rel = rel_error(out, ref)
    o, e = out.double(), ref.double()
    nan_bad = torch.isnan(o) != torch.isnan(e)
    inf_bad = (torch.isinf(o) | torch.isinf(e)) & (o != e) & ~torch.isnan(o) & ~torch.isnan(e)
    fin = torch.isfinite(o) & torch.isfinite(e)
    diff = torch.where(fin, (o - e).abs(), torch.zeros_like(o))
    close_bad = fin & (diff > a + r * e.abs())
    bad = nan_bad | inf_bad | close_bad
    nbad = int(bad.sum())
    if nbad == 0:
        return None, rel
    flat = diff.reshape(-1)
    worst = int(torch.argmax(torch.where(bad.reshape(-1), flat, torch.full_like(flat, -1.0))))
    first = int(bad.reshape(-1).nonzero()[0])
    parts = ["%s: %d of %d elements (%.3g%%) outside atol=%g rtol=%g"
             % (name, nbad, ref.numel(), 100.0 * nbad / max(1, ref.numel()), a, r)]
    if int(nan_bad.sum()):
        parts.append("%d NaN disagreements" % int(nan_bad.sum()))
    if int(inf_bad.sum()):
        parts.append("%d Inf disagreements" % int(inf_bad.sum()))
    parts.append("max abs error %.6g at %s (got %.6g, expected %.6g)"
                 % (float(flat[worst]), _where(ref, worst), float(o.reshape(-1)[worst]),
                    float(e.reshape(-1)[worst])))
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
