"""Reductions, scans, softmax."""
import torch

from ..ir import Ref
from .registry import IMPLS, impl, spell


def _reduction(name):
    def bind(b, input, dim=None, keepdim=False, dtype=None, out=None):
        x = b.cast(b.t(input), dtype)
        return b.out(name, [x], {"dim": b.dims(x, dim), "keepdim": bool(keepdim)})
    IMPLS[name] = lambda x, dim, keepdim: (getattr(torch, name)(x) if dim is None and not keepdim
                                          else getattr(torch, name)(x, dim=dim if dim is not None else
                                                                    list(range(x.dim())), keepdim=keepdim))
    return bind


spell("torch.sum", ".sum")(_reduction("sum"))
spell("torch.mean", ".mean")(_reduction("mean"))
spell("torch.amax", ".amax")(_reduction("amax"))
spell("torch.amin", ".amin")(_reduction("amin"))


@spell("torch.prod", ".prod")
def _prod(b, input, dim=None, keepdim=False, dtype=None):
    x = b.cast(b.t(input), dtype)
    return b.out("prod", [x], {"dim": None if dim is None else b.dim(x, dim), "keepdim": bool(keepdim)})


impl("prod")(lambda x, dim, keepdim: torch.prod(x) if dim is None else torch.prod(x, dim, keepdim))


def _minmax(name):
    full, pair, elem = "a" + name, name, "maximum" if name == "max" else "minimum"

    def bind(b, input, dim=None, keepdim=False, other=None, out=None):
        if isinstance(dim, Ref):
            dim, other = None, dim
        if other is not None:
            return b.out(elem, [input, other])
        x = b.t(input)
        if dim is None:
            return b.out(full, [x], {"dim": None, "keepdim": False})
        # (values, indices): a tuple node, read with getitem
        return b.out(pair, [x], {"dim": b.dim(x, dim), "keepdim": bool(keepdim)})
    IMPLS[pair] = lambda x, dim, keepdim: tuple(getattr(torch, name)(x, dim, keepdim))
    return bind


spell("torch.max", ".max")(_minmax("max"))
spell("torch.min", ".min")(_minmax("min"))


def _arg(name):
    def bind(b, input, dim=None, keepdim=False):
        x = b.t(input)
        return b.out(name, [x], {"dim": None if dim is None else b.dim(x, dim), "keepdim": bool(keepdim)})
    IMPLS[name] = lambda x, dim, keepdim: getattr(torch, name)(x, dim, keepdim)
    return bind


spell("torch.argmax", ".argmax")(_arg("argmax"))
spell("torch.argmin", ".argmin")(_arg("argmin"))


def _var(name):
    def bind(b, input, dim=None, unbiased=None, keepdim=False, correction=None, out=None):
        if isinstance(dim, bool):          # var(x, unbiased)
            dim, unbiased = None, dim
        if correction is None:
            correction = 0 if unbiased is False else 1
        x = b.t(input)
        return b.out(name, [x], {"dim": b.dims(x, dim), "correction": correction,
                                 "keepdim": bool(keepdim)})

    def run(x, dim, correction, keepdim):
        if dim is None:
            dim = list(range(x.dim()))
        if correction in (0, 1):           # the overload both 1.13 and 2.x have
            return getattr(torch, name)(x, dim, bool(correction), keepdim)
        return getattr(torch, name)(x, dim, correction=correction, keepdim=keepdim)
    IMPLS[name] = run
    return bind


spell("torch.var", ".var")(_var("var"))
spell("torch.std", ".std")(_var("std"))


@spell("torch.logsumexp", ".logsumexp", "torch.special.logsumexp")
def _logsumexp(b, input, dim, keepdim=False, out=None):
    x = b.t(input)
    return b.out("logsumexp", [x], {"dim": b.dims(x, dim), "keepdim": bool(keepdim)})


impl("logsumexp")(lambda x, dim, keepdim: torch.logsumexp(x, dim, keepdim))


def _scan(name):
    def bind(b, input, dim, dtype=None, out=None):
        x = b.cast(b.t(input), dtype)
        return b.out(name, [x], {"dim": b.dim(x, dim)})
    IMPLS[name] = lambda x, dim: getattr(torch, name)(x, dim)
    return bind


spell("torch.cumsum", ".cumsum", inplace=True)(_scan("cumsum"))
spell("torch.cumprod", ".cumprod", inplace=True)(_scan("cumprod"))


def _softmax_dim(b, x, dim, stacklevel):
    if dim is None:
        # PyTorch's legacy implicit dim (F._get_softmax_dim)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return b.dim(x, dim)


def _softmax(name):
    def bind_f(b, input, dim=None, _stacklevel=3, dtype=None):
        x = b.cast(b.t(input), dtype)
        return b.out(name, [x], {"dim": _softmax_dim(b, x, dim, _stacklevel)})

    def bind_t(b, input, dim, dtype=None):
        x = b.cast(b.t(input), dtype)
        return b.out(name, [x], {"dim": b.dim(x, dim)})
    spell("F." + name)(bind_f)
    spell("torch." + name, "torch.special." + name, "." + name)(bind_t)
    IMPLS[name] = lambda x, dim: getattr(torch, name)(x, dim)


_softmax("softmax")
_softmax("log_softmax")


def _pnorm(b, x, p, dim, keepdim, final=True):
    """A vector p-norm over dim (all dims for None) from the IR's own ops:
    the current node's result (final), else an intermediate."""
    kw = {"dim": b.dims(x, dim), "keepdim": bool(keepdim)}
    mk = b.out if final else b.emit
    if not x.dtype.is_floating_point:
        b.fail("norm of an integer tensor")
    if p in (None, "fro", 2, 2.0):
        return mk("sqrt", [b.emit("sum", [b.emit("mul", [x, x])], kw)])
    if p in (float("inf"), "inf"):
        return mk("amax", [b.emit("abs", [x])], kw)
    if p in (float("-inf"), "-inf"):
        return mk("amin", [b.emit("abs", [x])], kw)
    if p in (1, 1.0):
        return mk("sum", [b.emit("abs", [x])], kw)
    if not isinstance(p, (int, float)) or p == 0:
        b.fail("norm with p=%r (p-norms with p > 0, inf and -inf are supported)" % (p,))
    return mk("pow", [b.emit("sum", [b.emit("pow", [b.emit("abs", [x]), float(p)])], kw),
                      1.0 / float(p)])


@spell("F.normalize")
def _normalize(b, input, p=2.0, dim=1, eps=1e-12, out=None):
    x = b.t(input)
    n = b.emit("clamp", [_pnorm(b, x, p, dim, True, final=False)], {"min": float(eps), "max": None})
    return b.out("div", [x, n], {"rounding_mode": None})


@spell("torch.norm", ".norm")
def _norm(b, input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    x = b.cast(b.t(input), dtype)
    return _pnorm(b, x, p, dim, keepdim)


@spell("torch.linalg.vector_norm")
def _vector_norm(b, x, ord=2, dim=None, keepdim=False, out=None, dtype=None):
    return _pnorm(b, b.cast(b.t(x), dtype), ord, dim, keepdim)


@spell("torch.linalg.norm")
def _linalg_norm(b, input, ord=None, dim=None, keepdim=False, out=None, dtype=None):
    x = b.cast(b.t(input), dtype)
    nd = x.ndim if dim is None else (len(dim) if isinstance(dim, (list, tuple)) else 1)
    if ord is not None and nd != 1:
        b.fail("linalg.norm with ord=%r over %d dims is a matrix norm" % (ord, nd))
    return _pnorm(b, x, ord, dim, keepdim)



def _emit_perm(b, x, dims):
    """x with its dims in this order, as an intermediate (canonical: a swap
    of two dims is transpose)."""
    moved = [i for i, d in enumerate(dims) if d != i]
    if not moved:
        return x
    if len(moved) == 2:
        return b.emit("transpose", [x], {"dim0": moved[0], "dim1": moved[1]})
    return b.emit("permute", [x], {"dims": list(dims)})


@spell("torch.einsum")
def _einsum(b, equation, *operands):
    """einsum as the products and sums it means: each operand's dims put
    in one order of all the letters (missing ones as size 1), the
    operands multiplied (broadcast), the letters not in the output summed,
    the rest put in the output's order. A contraction of two operands
    is then a reduction over an inline product, which the compiler fuses
    (not a library GEMM)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or not operands:
        b.fail("einsum needs an equation and operands")
    eq = equation.replace(" ", "")
    if "." in eq:
        b.fail("einsum with '...' is not supported")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        b.fail("einsum: %d operands for %d terms" % (len(operands), len(ins)))
    letters = []
    for t in ins:
        if len(set(t)) != len(t):
            b.fail("einsum: a letter repeated within one operand (%r: a diagonal)" % t)
        letters += [c for c in t if c not in letters]
    if not arrow:
        # implicit output: the letters that appear once, in alphabetical order
        out = "".join(sorted(c for c in letters if lhs.count(c) == 1))
    if len(set(out)) != len(out) or any(c not in letters for c in out):
        b.fail("einsum: output %r is not letters of the inputs, each once" % out)
    order = list(out) + [c for c in letters if c not in out]
    acc = None
    for t, x in zip(ins, operands):
        x = b.t(x)
        if x.ndim != len(t):
            b.fail("einsum: term %r for a %d-d operand" % (t, x.ndim))
        present = [c for c in order if c in t]
        x = _emit_perm(b, x, [t.index(c) for c in present])
        for i, c in enumerate(order):
            if c not in t:
                x = b.emit("unsqueeze", [x], {"dim": i})
        acc = x if acc is None else b.emit("mul", [acc, x])
    red = list(range(len(out), len(order)))
    if red:
        acc = b.emit("sum", [acc], {"dim": red, "keepdim": False})
    return acc
