"""Losses written out in the IR's own pointwise ops and reductions (the
ones with an IR op of their own, mse_loss, cross_entropy and nll_loss,
are in nn.py). Each binder emits the element-wise loss up to its last
op, which _finish makes the node's result ('none') or an intermediate
under the reduction. The formulas are PyTorch's, as its ATen code
computes them, so the compiled kernel agrees where PyTorch clamps or
guards (binary_cross_entropy's log floor of -100, kl_div's 0 log 0)."""
from .nn import _reduction_arg
from .reduce import _pnorm
from .registry import spell


def _finish(b, reduction, op, args, kwargs=None, batch=None):
    """The loss's last element-wise op, then its reduction: the op itself
    for 'none', else under a sum or a mean of every element; with batch
    (kl_div's 'batchmean'), the sum divided by it."""
    if reduction == "none":
        return b.out(op, args, kwargs)
    x = b.emit(op, args, kwargs)
    every = {"dim": None, "keepdim": False}
    if batch is not None:
        return b.out("div", [b.emit("sum", [x], every), float(batch)], {"rounding_mode": None})
    return b.out(reduction, [x], every)


def _diff(b, input, target):
    """|input - target|, an intermediate."""
    return b.emit("abs", [b.emit("sub", [b.t(input), b.t(target)])])


def _clamp_min(b, x, lo):
    return b.emit("clamp", [x], {"min": float(lo), "max": None})


@spell("F.l1_loss")
def _l1_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    red = _reduction_arg(b, size_average, reduce, reduction)
    return _finish(b, red, "abs", [b.emit("sub", [b.t(input), b.t(target)])])


@spell("F.smooth_l1_loss")
def _smooth_l1_loss(b, input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    red = _reduction_arg(b, size_average, reduce, reduction)
    beta = float(beta)
    if beta < 0:
        b.fail("smooth_l1_loss with a negative beta")
    if beta == 0:
        return _l1_loss(b, input, target, reduction=red)
    d = _diff(b, input, target)
    quad = b.emit("mul", [b.emit("mul", [d, d]), 0.5 / beta])
    return _finish(b, red, "where", [b.emit("lt", [d, beta]), quad,
                                     b.emit("sub", [d, 0.5 * beta])])


@spell("F.huber_loss")
def _huber_loss(b, input, target, reduction="mean", delta=1.0, weight=None):
    if weight is not None:
        b.fail("huber_loss with a weight is not supported")
    red = _reduction_arg(b, None, None, reduction)
    delta = float(delta)
    d = _diff(b, input, target)
    quad = b.emit("mul", [b.emit("mul", [d, d]), 0.5])
    lin = b.emit("mul", [b.emit("sub", [d, 0.5 * delta]), delta])
    return _finish(b, red, "where", [b.emit("lt", [d, delta]), quad, lin])


@spell("F.kl_div")
def _kl_div(b, input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    x, t = b.t(input), b.t(target)
    batch = None
    if reduction == "batchmean" and size_average is None and reduce is None:
        red, batch = "sum", (x.shape[0] if x.ndim else 1)
    else:
        red = _reduction_arg(b, size_average, reduce, reduction)
    if log_target:
        # exp(t) (t - x)
        return _finish(b, red, "mul", [b.emit("exp", [t]), b.emit("sub", [t, x])], batch=batch)
    # xlogy(t, t) - t x: 0 where t is 0 (t log 1 there), as PyTorch's xlogy.
    tlogt = b.emit("mul", [t, b.emit("log", [b.emit("where", [b.emit("ne", [t, 0.0]), t, 1.0])])])
    return _finish(b, red, "sub", [tlogt, b.emit("mul", [t, x])], batch=batch)


def _unit(b, x, dim, eps):
    """x / max(||x||_2 over dim, eps), an intermediate."""
    n = _clamp_min(b, _pnorm(b, x, 2, [dim], True, final=False), eps)
    return b.emit("div", [x, n], {"rounding_mode": None})


@spell("F.cosine_similarity", "torch.cosine_similarity")
def _cosine_similarity(b, x1, x2, dim=1, eps=1e-8):
    a, c = b.t(x1), b.t(x2)
    if a.ndim != c.ndim:
        b.fail("cosine_similarity of a %d-d and a %d-d tensor" % (a.ndim, c.ndim))
    d = b.dim(a, dim)
    # Each vector over its norm (clamped at eps) first, then the dot.
    prod = b.emit("mul", [_unit(b, a, d, eps), _unit(b, c, d, eps)])
    return b.out("sum", [prod], {"dim": [d], "keepdim": False})


def _pairwise(b, x1, x2, p, eps, keepdim, final):
    """||x1 - x2 + eps||_p over the last dim, as torch.pairwise_distance."""
    a, c = b.t(x1), b.t(x2)
    diff = b.emit("add", [b.emit("sub", [a, c]), float(eps)])
    return _pnorm(b, diff, p, [max(a.ndim, c.ndim, 1) - 1], keepdim, final=final)


@spell("F.pairwise_distance", "torch.pairwise_distance")
def _pairwise_distance(b, x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _pairwise(b, x1, x2, p, eps, keepdim, True)


@spell("F.triplet_margin_loss")
def _triplet_margin_loss(b, anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                         size_average=None, reduce=None, reduction="mean"):
    red = _reduction_arg(b, size_average, reduce, reduction)
    d_pos = _pairwise(b, anchor, positive, p, eps, False, False)
    d_neg = _pairwise(b, anchor, negative, p, eps, False, False)
    if swap:
        d_neg = b.emit("minimum", [d_neg, _pairwise(b, positive, negative, p, eps, False, False)])
    gap = b.emit("sub", [b.emit("add", [d_pos, float(margin)]), d_neg])
    return _finish(b, red, "clamp", [gap], {"min": 0.0, "max": None})


@spell("F.binary_cross_entropy")
def _binary_cross_entropy(b, input, target, weight=None, size_average=None, reduce=None,
                          reduction="mean"):
    red = _reduction_arg(b, size_average, reduce, reduction)
    x, t = b.t(input), b.t(target)
    # -(t max(log x, -100) + (1 - t) max(log(1 - x), -100)), times the weight
    lx = _clamp_min(b, b.emit("log", [x]), -100.0)
    l1x = _clamp_min(b, b.emit("log", [b.emit("sub", [1.0, x])]), -100.0)
    pos = b.emit("add", [b.emit("mul", [t, lx]), b.emit("mul", [b.emit("sub", [1.0, t]), l1x])])
    if weight is None:
        return _finish(b, red, "neg", [pos])
    return _finish(b, red, "mul", [b.emit("neg", [pos]), b.t(weight)])


@spell("F.binary_cross_entropy_with_logits")
def _bce_with_logits(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                     pos_weight=None):
    red = _reduction_arg(b, size_average, reduce, reduction)
    x, t = b.t(input), b.t(target)
    # (1 - t) x + w_p (max(-x, 0) + log1p(exp(-|x|))), w_p = 1 + (pos_weight - 1) t
    soft = b.emit("add", [_clamp_min(b, b.emit("neg", [x]), 0.0),
                          b.emit("log1p", [b.emit("exp", [b.emit("neg", [b.emit("abs", [x])])])])])
    if pos_weight is not None:
        wp = b.emit("add", [b.emit("mul", [b.emit("sub", [b.t(pos_weight), 1.0]), t]), 1.0])
        soft = b.emit("mul", [wp, soft])
    lin = b.emit("mul", [b.emit("sub", [1.0, t]), x])
    if weight is None:
        return _finish(b, red, "add", [lin, soft])
    return _finish(b, red, "mul", [b.emit("add", [lin, soft]), b.t(weight)])


@spell("F.soft_margin_loss")
def _soft_margin_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    red = _reduction_arg(b, size_average, reduce, reduction)
    e = b.emit("exp", [b.emit("neg", [b.emit("mul", [b.t(input), b.t(target)])])])
    return _finish(b, red, "log1p", [e])


@spell("F.margin_ranking_loss")
def _margin_ranking_loss(b, input1, input2, target, margin=0.0, size_average=None, reduce=None,
                         reduction="mean"):
    red = _reduction_arg(b, size_average, reduce, reduction)
    d = b.emit("sub", [b.t(input1), b.t(input2)])
    gap = b.emit("add", [b.emit("neg", [b.emit("mul", [b.t(target), d])]), float(margin)])
    return _finish(b, red, "clamp", [gap], {"min": 0.0, "max": None})


@spell("F.hinge_embedding_loss")
def _hinge_embedding_loss(b, input, target, margin=1.0, size_average=None, reduce=None,
                          reduction="mean"):
    red = _reduction_arg(b, size_average, reduce, reduction)
    x, t = b.t(input), b.t(target)
    # where(t != 1, max(margin - x, 0), 0) + where(t != -1, x, 0)
    far = b.emit("where", [b.emit("ne", [t, 1.0]),
                           _clamp_min(b, b.emit("sub", [float(margin), x]), 0.0), 0.0])
    near = b.emit("where", [b.emit("ne", [t, -1.0]), x, 0.0])
    return _finish(b, red, "add", [far, near])
