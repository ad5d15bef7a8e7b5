"""The canonical op table: how each PyTorch spelling maps to an IR op
(binders), and how each IR op executes (IMPLS, used by the interpreter
that verifies the IR against the module).

A binder is called as binder(b, *args, **kwargs) with the traced call's
arguments, tensors replaced by Refs, and returns the Ref of its result (via
b.out(...)), an existing Ref (the op is an identity), or a plain Python
value (folded constant). Binders mirror the PyTorch signatures so that
positional and keyword spellings bind the same way; their job is to put
every op in the ONE convention documented in docs/graph-ir.md: operands in
args, attributes in kwargs with defaults filled, dims non-negative, shapes
concrete.

Spelling names: "torch.x" (torch namespace), "F.x" (torch.nn.functional),
"op.x" (the operator module), ".x" (a Tensor method). Names that do not
exist in the running PyTorch version are skipped.
"""
import math
import operator

import torch
import torch.nn.functional as F

from .ir import DEVICE, Ref

FN_BINDERS = {}       # id(callable) -> (callable, binder, inplace)
METHOD_BINDERS = {}   # method name -> (binder, inplace)
IMPLS = {}            # canonical op -> callable(*args, **kwargs)

_NS = {"torch": torch, "F": F, "op": operator}


def _resolve(spelling):
    ns, _, attr = spelling.partition(".")
    obj = _NS[ns]
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def spell(*spellings, inplace=False):
    """Register a binder for the given spellings. A method spelling ".x"
    also registers ".x_" as the in-place form when inplace=True."""
    def deco(binder):
        for s in spellings:
            if s.startswith("."):
                METHOD_BINDERS[s[1:]] = (binder, False)
                if inplace:
                    METHOD_BINDERS[s[1:] + "_"] = (binder, True)
                continue
            fn = _resolve(s)
            if fn is not None:
                FN_BINDERS[id(fn)] = (fn, binder, s.endswith("_"))
        return binder
    return deco


def impl(*names):
    def deco(fn):
        for n in names:
            IMPLS[n] = fn
        return fn
    return deco


def _t(x):
    """Numbers become 0-dim tensors where a torch function needs a tensor;
    0-dim tensors promote like Python scalars."""
    return x if isinstance(x, torch.Tensor) else torch.tensor(x)


def _is_t(x):
    return isinstance(x, Ref) and x.is_tensor


def _scalar(b, x, what):
    if isinstance(x, (bool, int, float)):
        return x
    b.fail("%s must be a number here, got %s" % (what, "a tensor" if isinstance(x, Ref) else type(x).__name__))


def _ints(x, n):
    """An int or a sequence as a list of n ints."""
    if isinstance(x, (list, tuple, torch.Size)):
        x = [int(v) for v in x]
        return x * n if len(x) == 1 and n > 1 else x
    return [int(x)] * n


# ---------------------------------------------------------------- pointwise

_UNARY = {
    # canonical: (spellings, in-place method form exists)
    "neg": ("torch.neg", "torch.negative", "op.neg", ".neg", ".negative"),
    "abs": ("torch.abs", "op.abs", ".abs"),
    "exp": ("torch.exp", ".exp"),
    "log": ("torch.log", ".log"),
    "log1p": ("torch.log1p", ".log1p"),
    "expm1": ("torch.expm1", ".expm1"),
    "sqrt": ("torch.sqrt", ".sqrt"),
    "rsqrt": ("torch.rsqrt", ".rsqrt"),
    "reciprocal": ("torch.reciprocal", ".reciprocal"),
    "sin": ("torch.sin", ".sin"),
    "cos": ("torch.cos", ".cos"),
    "erf": ("torch.erf", "torch.special.erf", ".erf"),
    "floor": ("torch.floor", ".floor"),
    "ceil": ("torch.ceil", ".ceil"),
    "sign": ("torch.sign", ".sign"),
    "sigmoid": ("torch.sigmoid", "F.sigmoid", "torch.special.expit", ".sigmoid"),
    "tanh": ("torch.tanh", "F.tanh", ".tanh"),
    "logical_not": ("torch.logical_not", ".logical_not"),
}


def _unary_binder(name):
    def bind(b, input, out=None):
        return b.out(name, [b.t(input)])
    return bind


for _name, _sp in _UNARY.items():
    spell(*_sp, inplace=True)(_unary_binder(_name))
    IMPLS[_name] = getattr(torch, _name)


@spell("torch.relu", "F.relu", ".relu", inplace=True)
def _relu(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("relu", [b.t(input)])


@spell("torch.relu_", "F.relu_")
def _relu_(b, input):
    return _relu(b, input, True)


@spell("F.relu6")
def _relu6(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("hardtanh", [b.t(input)], {"min_val": 0.0, "max_val": 6.0})


@spell("F.silu")
def _silu(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("silu", [b.t(input)])


@spell("F.mish")
def _mish(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("mish", [b.t(input)])


@spell("F.hardswish")
def _hardswish(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("hardswish", [b.t(input)])


@spell("F.hardsigmoid")
def _hardsigmoid(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("hardsigmoid", [b.t(input)])


@spell("F.selu", "torch.selu")
def _selu(b, input, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("selu", [b.t(input)])


impl("relu")(torch.relu)
impl("silu")(F.silu)
impl("mish")(F.mish)
impl("hardswish")(F.hardswish)
impl("hardsigmoid")(F.hardsigmoid)
impl("selu")(torch.selu)


@spell("F.gelu")
def _gelu(b, input, approximate="none"):
    if approximate not in ("none", "tanh"):
        b.fail("gelu approximate=%r is not one of 'none', 'tanh'" % (approximate,))
    return b.out("gelu", [b.t(input)], {"approximate": approximate})


@impl("gelu")
def _gelu_impl(x, approximate="none"):
    return F.gelu(x, approximate=approximate)


@spell("F.leaky_relu", "torch._C._nn.leaky_relu")
def _leaky_relu(b, input, negative_slope=0.01, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("leaky_relu", [b.t(input)], {"negative_slope": float(negative_slope)})


@spell("F.leaky_relu_")
def _leaky_relu_(b, input, negative_slope=0.01):
    return _leaky_relu(b, input, negative_slope, True)


impl("leaky_relu")(lambda x, negative_slope: F.leaky_relu(x, negative_slope))


@spell("F.elu")
def _elu(b, input, alpha=1.0, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("elu", [b.t(input)], {"alpha": float(alpha)})


impl("elu")(lambda x, alpha: F.elu(x, alpha))


@spell("F.softplus")
def _softplus(b, input, beta=1, threshold=20):
    return b.out("softplus", [b.t(input)], {"beta": float(beta), "threshold": float(threshold)})


impl("softplus")(lambda x, beta, threshold: F.softplus(x, beta, threshold))


@spell("F.hardtanh")
def _hardtanh(b, input, min_val=-1.0, max_val=1.0, inplace=False):
    b.maybe_inplace(input, inplace)
    return b.out("hardtanh", [b.t(input)], {"min_val": float(min_val), "max_val": float(max_val)})


@spell("F.hardtanh_")
def _hardtanh_(b, input, min_val=-1.0, max_val=1.0):
    return _hardtanh(b, input, min_val, max_val, True)


impl("hardtanh")(lambda x, min_val, max_val: F.hardtanh(x, min_val, max_val))


@spell("torch.clamp", "torch.clip", ".clamp", ".clip", inplace=True)
def _clamp(b, input, min=None, max=None, out=None):
    x = b.t(input)
    # Tensor bounds are maximum/minimum, so clamp keeps number-only kwargs.
    if isinstance(min, Ref):
        x = b.emit("maximum", [x, min])
        min = None
    if isinstance(max, Ref):
        x = b.emit("minimum", [x, max])
        max = None
    if min is None and max is None:
        return x
    return b.out("clamp", [x], {"min": min, "max": max})


@spell("torch.clamp_min", ".clamp_min", inplace=True)
def _clamp_min(b, input, min):
    return _clamp(b, input, min=min)


@spell("torch.clamp_max", ".clamp_max", inplace=True)
def _clamp_max(b, input, max):
    return _clamp(b, input, max=max)


impl("clamp")(lambda x, min=None, max=None: torch.clamp(x, min=min, max=max))


def _binary(name, fn_impl, *spellings):
    def bind(b, input, other, out=None):
        if not (_is_t(input) or _is_t(other)):
            b.fail("%s needs a tensor operand" % name)
        return b.out(name, [input, other])
    spell(*spellings, inplace=True)(bind)
    IMPLS[name] = fn_impl


_binary("mul", operator.mul, "torch.mul", "torch.multiply", "op.mul", ".mul", ".multiply")
_binary("pow", operator.pow, "torch.pow", "op.pow", ".pow")
_binary("maximum", lambda a, b: torch.maximum(_t(a), _t(b)), "torch.maximum", ".maximum")
_binary("minimum", lambda a, b: torch.minimum(_t(a), _t(b)), "torch.minimum", ".minimum")
for _cmp, _sp in (("eq", ("torch.eq", "op.eq", ".eq")), ("ne", ("torch.ne", "op.ne", ".ne")),
                  ("lt", ("torch.lt", "torch.less", "op.lt", ".lt")),
                  ("le", ("torch.le", "op.le", ".le")),
                  ("gt", ("torch.gt", "torch.greater", "op.gt", ".gt")),
                  ("ge", ("torch.ge", "op.ge", ".ge"))):
    _binary(_cmp, getattr(operator, _cmp), *_sp)
_binary("logical_and", lambda a, b: torch.logical_and(_t(a), _t(b)), "torch.logical_and", ".logical_and")
_binary("logical_or", lambda a, b: torch.logical_or(_t(a), _t(b)), "torch.logical_or", ".logical_or")


def _scaled(b, other, alpha):
    if alpha == 1:
        return other
    if isinstance(other, Ref):
        return b.emit("mul", [other, alpha])
    return other * alpha


@spell("torch.add", "op.add", ".add", inplace=True)
def _add(b, input, other, alpha=1, out=None):
    return b.out("add", [input, _scaled(b, other, alpha)])


@spell("torch.sub", "torch.subtract", "op.sub", ".sub", ".subtract", inplace=True)
def _sub(b, input, other, alpha=1, out=None):
    return b.out("sub", [input, _scaled(b, other, alpha)])


@spell("torch.rsub", ".rsub")
def _rsub(b, input, other, alpha=1):
    return b.out("sub", [other, _scaled(b, input, alpha)])


IMPLS["add"] = operator.add
IMPLS["sub"] = operator.sub


@spell("torch.div", "torch.divide", "torch.true_divide", "op.truediv", ".div", ".divide",
       ".true_divide", inplace=True)
def _div(b, input, other, rounding_mode=None, out=None):
    if rounding_mode not in (None, "trunc", "floor"):
        b.fail("div rounding_mode=%r is not one of None, 'trunc', 'floor'" % (rounding_mode,))
    return b.out("div", [input, other], {"rounding_mode": rounding_mode})


@spell("torch.floor_divide", "op.floordiv", ".floor_divide")
def _floordiv(b, input, other):
    return b.out("div", [input, other], {"rounding_mode": "floor"})


@impl("div")
def _div_impl(a, b, rounding_mode=None):
    if rounding_mode is None:
        return a / b
    return torch.div(_t(a), b, rounding_mode=rounding_mode)


@spell("torch.where", ".where")
def _where(b, condition, input=None, other=None):
    if input is None or other is None:
        b.fail("torch.where(condition) with one argument has a data-dependent shape")
    return b.out("where", [condition, input, other])


impl("where")(lambda c, a, b: torch.where(c, _t(a), _t(b)))


@spell("torch.masked_fill", ".masked_fill", inplace=True)
def _masked_fill(b, input, mask, value):
    if isinstance(value, Ref):
        return b.out("where", [mask, value, input])
    return b.out("masked_fill", [b.t(input), mask], {"value": value})


impl("masked_fill")(lambda x, mask, value: x.masked_fill(mask, value))


@spell("torch.square", ".square", inplace=True)
def _square(b, input):
    return b.out("pow", [b.t(input), 2])


# --------------------------------------------------------------- reductions

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


# -------------------------------------------------------------------- norms

@spell("F.layer_norm", "torch.layer_norm")
def _layer_norm(b, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return b.out("layer_norm", [b.t(input), weight, bias],
                 {"normalized_shape": _ints(normalized_shape, 1), "eps": float(eps)})


impl("layer_norm")(lambda x, w, bias, normalized_shape, eps: F.layer_norm(x, normalized_shape, w, bias, eps))


@spell("F.rms_norm", "torch.rms_norm")
def _rms_norm(b, input, normalized_shape, weight=None, eps=None):
    # Spelled out as the pow/mean/rsqrt chain users write by hand, so the
    # compiler sees one form.
    x = b.t(input)
    n = len(_ints(normalized_shape, 1))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    sq = b.emit("pow", [x, 2])
    ms = b.emit("mean", [sq], {"dim": list(range(x.ndim - n, x.ndim)), "keepdim": True})
    r = b.emit("rsqrt", [b.emit("add", [ms, float(eps)])])
    if weight is None:
        return b.out("mul", [x, r])
    return b.out("mul", [b.emit("mul", [x, r]), weight])


@spell("F.group_norm", "torch.group_norm")
def _group_norm(b, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return b.out("group_norm", [b.t(input), weight, bias], {"num_groups": int(num_groups), "eps": float(eps)})


impl("group_norm")(lambda x, w, bias, num_groups, eps: F.group_norm(x, num_groups, w, bias, eps))


@spell("F.batch_norm")
def _batch_norm(b, input, running_mean, running_var, weight=None, bias=None, training=False,
                momentum=0.1, eps=1e-5):
    if training:
        if running_mean is not None or running_var is not None:
            b.fail("batch_norm in training mode updates its running statistics; "
                   "only inference (eval) batch norm can be a kernel")
        # null running stats: normalize with the batch's own statistics
        return b.out("batch_norm", [b.t(input), None, None, weight, bias], {"eps": float(eps)})
    return b.out("batch_norm", [b.t(input), running_mean, running_var, weight, bias], {"eps": float(eps)})


@spell("torch.batch_norm")
def _batch_norm_t(b, input, weight, bias, running_mean, running_var, training, momentum, eps,
                  cudnn_enabled=True):
    return _batch_norm(b, input, running_mean, running_var, weight, bias, training, momentum, eps)


@impl("batch_norm")
def _batch_norm_impl(x, mean, var, w, bias, eps):
    return F.batch_norm(x, mean, var, w, bias, mean is None, 0.0, eps)


@spell("F.instance_norm")
def _instance_norm(b, input, running_mean=None, running_var=None, weight=None, bias=None,
                   use_input_stats=True, momentum=0.1, eps=1e-5):
    if not use_input_stats:
        # Normalizing with stored statistics is eval batch norm, per channel.
        return b.out("batch_norm", [b.t(input), running_mean, running_var, weight, bias], {"eps": float(eps)})
    if running_mean is not None:
        b.fail("instance_norm with input statistics and running buffers updates the buffers")
    return b.out("instance_norm", [b.t(input), weight, bias], {"eps": float(eps)})


impl("instance_norm")(lambda x, w, bias, eps: F.instance_norm(x, weight=w, bias=bias, eps=eps))


# ---------------------------------------------------------- linear algebra

@spell("F.linear", "torch._C._nn.linear")
def _linear(b, input, weight, bias=None):
    return b.out("linear", [b.t(input), weight, bias])


impl("linear")(lambda x, w, bias: F.linear(x, w, bias))


@spell("torch.matmul", "op.matmul", ".matmul", "torch.mm", ".mm")
def _matmul(b, input, other, out=None):
    return b.out("matmul", [b.t(input), b.t(other)])


impl("matmul")(torch.matmul)


@spell("torch.bmm", ".bmm")
def _bmm(b, input, mat2, out=None):
    return b.out("bmm", [b.t(input), b.t(mat2)])


impl("bmm")(torch.bmm)


@spell("torch.addmm", ".addmm")
def _addmm(b, input, mat1, mat2, beta=1, alpha=1, out=None):
    return b.out("addmm", [input, b.t(mat1), b.t(mat2)], {"beta": beta, "alpha": alpha})


impl("addmm")(lambda c, a, m, beta, alpha: torch.addmm(_t(c), a, m, beta=beta, alpha=alpha))


def _conv(n):
    name = "conv%dd" % n

    def bind(b, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        w = b.t(weight)
        dil = _ints(dilation, n)
        if isinstance(padding, str):
            if padding == "valid":
                padding = [0] * n
            elif padding == "same":
                total = [d * (k - 1) for d, k in zip(dil, w.shape[2:])]
                # symmetric only when every total is even; else keep "same"
                padding = [t // 2 for t in total] if all(t % 2 == 0 for t in total) else "same"
            else:
                b.fail("%s padding=%r" % (name, padding))
        else:
            padding = _ints(padding, n)
        return b.out(name, [b.t(input), w, bias], {"stride": _ints(stride, n), "padding": padding,
                                                  "dilation": dil, "groups": int(groups)})
    fn = getattr(F, name)
    IMPLS[name] = lambda x, w, bias, stride, padding, dilation, groups: fn(x, w, bias, stride, padding,
                                                                          dilation, groups)
    return bind


spell("torch.conv1d", "F.conv1d")(_conv(1))
spell("torch.conv2d", "F.conv2d")(_conv(2))


def _max_pool(n):
    name = "max_pool%dd" % n

    def bind(b, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
        if return_indices:
            b.fail("%s with return_indices=True is not supported" % name)
        k = _ints(kernel_size, n)
        s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _ints(stride, n)
        return b.out(name, [b.t(input)], {"kernel_size": k, "stride": s, "padding": _ints(padding, n),
                                          "dilation": _ints(dilation, n), "ceil_mode": bool(ceil_mode)})
    fn = getattr(F, name)
    IMPLS[name] = lambda x, kernel_size, stride, padding, dilation, ceil_mode: fn(
        x, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode)
    return bind


spell("F.max_pool1d", "F._max_pool1d", "torch.max_pool1d")(_max_pool(1))
spell("F.max_pool2d", "F._max_pool2d", "torch.max_pool2d")(_max_pool(2))


def _avg_pool(n):
    name = "avg_pool%dd" % n

    def bind(b, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
        k = _ints(kernel_size, n)
        s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _ints(stride, n)
        kw = {"kernel_size": k, "stride": s, "padding": _ints(padding, n), "ceil_mode": bool(ceil_mode),
              "count_include_pad": bool(count_include_pad)}
        if n == 2:
            kw["divisor_override"] = divisor_override
        return b.out(name, [b.t(input)], kw)
    return bind


spell("F.avg_pool1d", "torch.avg_pool1d")(_avg_pool(1))
spell("F.avg_pool2d", "torch._C._nn.avg_pool2d")(_avg_pool(2))
impl("avg_pool1d")(lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad: F.avg_pool1d(
    x, kernel_size, stride, padding, ceil_mode, count_include_pad))
impl("avg_pool2d")(lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override:
                   F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))


def _adaptive_avg_pool(n):
    name = "adaptive_avg_pool%dd" % n

    def bind(b, input, output_size):
        x = b.t(input)
        size = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
        size = [x.shape[x.ndim - n + i] if s is None else int(s) for i, s in enumerate(size)]
        return b.out(name, [x], {"output_size": size})
    fn = getattr(F, name)
    IMPLS[name] = lambda x, output_size: fn(x, output_size)
    return bind


spell("F.adaptive_avg_pool1d", "torch.adaptive_avg_pool1d")(_adaptive_avg_pool(1))
spell("F.adaptive_avg_pool2d", "torch._C._nn.adaptive_avg_pool2d")(_adaptive_avg_pool(2))


# ------------------------------------------------------------------- losses

def _reduction_arg(b, size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = torch.nn._reduction.legacy_get_string(size_average, reduce, emit_warning=False)
    if reduction not in ("mean", "sum", "none"):
        b.fail("loss reduction=%r is not one of 'mean', 'sum', 'none'" % (reduction,))
    return reduction


@spell("F.cross_entropy")
def _cross_entropy(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    return b.out("cross_entropy", [b.t(input), target, weight],
                 {"reduction": _reduction_arg(b, size_average, reduce, reduction),
                  "ignore_index": int(ignore_index), "label_smoothing": float(label_smoothing)})


@impl("cross_entropy")
def _cross_entropy_impl(x, target, weight, reduction, ignore_index, label_smoothing):
    if label_smoothing:
        return F.cross_entropy(x, target, weight, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=label_smoothing)
    return F.cross_entropy(x, target, weight, ignore_index=ignore_index, reduction=reduction)


@spell("F.nll_loss")
def _nll_loss(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
              reduction="mean"):
    return b.out("nll_loss", [b.t(input), target, weight],
                 {"reduction": _reduction_arg(b, size_average, reduce, reduction),
                  "ignore_index": int(ignore_index)})


impl("nll_loss")(lambda x, target, weight, reduction, ignore_index: F.nll_loss(
    x, target, weight, ignore_index=ignore_index, reduction=reduction))


@spell("F.mse_loss")
def _mse_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    return b.out("mse_loss", [b.t(input), target], {"reduction": _reduction_arg(b, size_average, reduce,
                                                                                reduction)})


impl("mse_loss")(lambda x, t, reduction: F.mse_loss(x, t, reduction=reduction))


# ------------------------------------------------------------------- shapes

def _out_shape(b):
    return list(b.value.shape)


def _reshape_bind(b, input, *shape):
    x = b.t(input)
    if len(shape) == 1 and isinstance(shape[0], torch.dtype):
        b.fail("view(dtype) reinterprets memory and is not supported")
    if _out_shape(b) == x.shape:
        return x
    return b.out("reshape", [x], {"shape": _out_shape(b)})


spell(".view", ".reshape")(_reshape_bind)


@spell("torch.reshape")
def _reshape_t(b, input, shape):
    return _reshape_bind(b, input, shape)


@spell(".view_as", ".reshape_as")
def _view_as(b, input, other):
    return _reshape_bind(b, input, other.shape)


@spell("torch.unflatten", ".unflatten")
def _unflatten(b, input, dim, sizes):
    return _reshape_bind(b, input, None)


impl("reshape")(lambda x, shape: x.reshape(shape))


@spell("torch.flatten", ".flatten")
def _flatten(b, input, start_dim=0, end_dim=-1):
    x = b.t(input)
    if x.ndim == 0:
        return b.out("reshape", [x], {"shape": [1]})
    s, e = b.dim(x, start_dim), b.dim(x, end_dim)
    if s >= e:
        return x
    return b.out("flatten", [x], {"start_dim": s, "end_dim": e})


impl("flatten")(lambda x, start_dim, end_dim: torch.flatten(x, start_dim, end_dim))


@spell(".permute")
def _permute_m(b, input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    x = b.t(input)
    dims = [b.dim(x, d) for d in dims]
    moved = [i for i, d in enumerate(dims) if d != i]
    if not moved:
        return x
    if len(moved) == 2:
        # a swap of two dims has one canonical spelling: transpose
        return b.out("transpose", [x], {"dim0": moved[0], "dim1": moved[1]})
    return b.out("permute", [x], {"dims": dims})


@spell("torch.permute")
def _permute_t(b, input, dims):
    return _permute_m(b, input, dims)


impl("permute")(lambda x, dims: x.permute(dims))


@spell("torch.transpose", "torch.swapaxes", "torch.swapdims", ".transpose", ".swapaxes", ".swapdims")
def _transpose(b, input, dim0, dim1):
    x = b.t(input)
    # transpose is symmetric; dim0 < dim1 keeps one spelling per swap
    d0, d1 = sorted((b.dim(x, dim0), b.dim(x, dim1)))
    if d0 == d1:
        return x
    return b.out("transpose", [x], {"dim0": d0, "dim1": d1})


impl("transpose")(lambda x, dim0, dim1: x.transpose(dim0, dim1))


@spell("torch.t", ".t")
def _t_bind(b, input):
    x = b.t(input)
    return x if x.ndim < 2 else _transpose(b, x, 0, 1)


@spell("torch.squeeze", ".squeeze")
def _squeeze(b, input, dim=None):
    x = b.t(input)
    cand = range(x.ndim) if dim is None else [b.dim(x, d) for d in (dim if isinstance(dim, (list, tuple))
                                                                     else [dim])]
    dims = sorted({d for d in cand if x.shape[d] == 1})
    if not dims:
        return x
    return b.out("squeeze", [x], {"dim": dims})


@impl("squeeze")
def _squeeze_impl(x, dim):
    for d in reversed(dim):
        x = x.squeeze(d)
    return x


@spell("torch.unsqueeze", ".unsqueeze")
def _unsqueeze(b, input, dim):
    x = b.t(input)
    n = x.ndim + 1
    if not -n <= dim < n:
        b.fail("unsqueeze dim %d out of range for a %d-d tensor" % (dim, x.ndim))
    return b.out("unsqueeze", [x], {"dim": dim % n})


impl("unsqueeze")(lambda x, dim: x.unsqueeze(dim))


def _expand_bind(b, input, *sizes):
    x = b.t(input)
    if _out_shape(b) == x.shape:
        return x
    return b.out("expand", [x], {"shape": _out_shape(b)})


spell(".expand")(_expand_bind)


@spell(".expand_as")
def _expand_as(b, input, other):
    return _expand_bind(b, input)


@spell("torch.broadcast_to", ".broadcast_to")
def _broadcast_to(b, input, size):
    return _expand_bind(b, input)


impl("expand")(lambda x, shape: x.expand(shape))


@spell(".repeat")
def _repeat(b, input, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, torch.Size)):
        sizes = sizes[0]
    return b.out("repeat", [b.t(input)], {"repeats": [int(s) for s in sizes]})


impl("repeat")(lambda x, repeats: x.repeat(repeats))


@spell("torch.cat", "torch.concat", "torch.concatenate")
def _cat(b, tensors, dim=0, out=None, axis=None):
    ts = [b.t(t) for t in tensors]
    if axis is not None:
        dim = axis
    ref = next((t for t in ts if t.ndim > 0), ts[0])
    return b.out("cat", ts, {"dim": b.dim(ref, dim)})


impl("cat")(lambda *ts, dim: torch.cat(ts, dim))


@spell("torch.stack")
def _stack(b, tensors, dim=0, out=None):
    ts = [b.t(t) for t in tensors]
    n = ts[0].ndim + 1
    return b.out("stack", ts, {"dim": dim % n})


impl("stack")(lambda *ts, dim: torch.stack(ts, dim))


def _split_out(b, x, dim):
    d = b.dim(x, dim)
    sizes = [int(t.shape[d]) for t in b.value]
    return b.out("split", [x], {"sizes": sizes, "dim": d})


@spell("torch.split", ".split")
def _split(b, tensor, split_size_or_sections, dim=0):
    return _split_out(b, b.t(tensor), dim)


@spell("torch.chunk", ".chunk")
def _chunk(b, input, chunks, dim=0):
    return _split_out(b, b.t(input), dim)


impl("split")(lambda x, sizes, dim: tuple(torch.split(x, sizes, dim)))


@spell("torch.narrow", ".narrow")
def _narrow(b, input, dim, start, length):
    x = b.t(input)
    d = b.dim(x, dim)
    start = start % x.shape[d] if start < 0 else start
    return b.out("slice", [x], {"dim": d, "start": start, "end": start + length, "step": 1})


@spell("torch.select", ".select")
def _select(b, input, dim, index):
    x = b.t(input)
    d = b.dim(x, dim)
    return b.out("select", [x], {"dim": d, "index": index % x.shape[d]})


@impl("slice")
def _slice_impl(x, dim, start, end, step):
    return x[(slice(None),) * dim + (slice(start, end, step),)]


impl("select")(lambda x, dim, index: x.select(dim, index))


def _getitem_tensor(b, x, idx):
    """x[idx] as a chain of slice / select / unsqueeze nodes, one dim each."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    for it in items:
        if isinstance(it, Ref) or isinstance(it, (list, torch.Tensor)):
            b.fail("indexing with a tensor or list (advanced indexing) is not supported")
        if not (it is None or it is Ellipsis or isinstance(it, (int, slice))):
            b.fail("unsupported index %r" % (it,))
    n_ell = sum(1 for it in items if it is Ellipsis)
    if n_ell > 1:
        b.fail("an index can have only one Ellipsis")
    used = sum(1 for it in items if isinstance(it, (int, slice)) and not isinstance(it, bool))
    if n_ell:
        i = items.index(Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.ndim - used)
    steps = []
    d = 0
    for it in items:
        if it is None:
            steps.append(("unsqueeze", {"dim": d}))
            d += 1
        elif isinstance(it, slice):
            size = x.shape[d] if d < x.ndim else 0
            start, end, step = it.indices(size)
            if step <= 0:
                b.fail("slices with a negative step are not supported")
            end = max(start, end)
            if (start, end, step) != (0, size, 1):
                steps.append(("slice", {"dim": d, "start": start, "end": end, "step": step}))
            d += 1
        else:
            size = x.shape[d]
            if not -size <= it < size:
                b.fail("index %d out of range for dim %d of size %d" % (it, d, size))
            steps.append(("select", {"dim": d, "index": it % size}))
    # dims are positions in the tensor as it is when that step runs; select
    # removes a dim, which the loop above accounts for by not advancing d
    cur = x
    for i, (op, kw) in enumerate(steps):
        cur = b.out(op, [cur], kw) if i == len(steps) - 1 else b.emit(op, [cur], kw)
    return cur


@spell("op.getitem")
def _getitem(b, obj, idx):
    if isinstance(obj, Ref) and not obj.is_tensor:
        if not isinstance(idx, int):
            b.fail("only integer indexing of a multi-output op is supported")
        n = len(obj.value)
        return b.out("getitem", [obj, idx % n])
    if isinstance(obj, Ref):
        return _getitem_tensor(b, obj, idx)
    if isinstance(obj, (list, tuple)):
        return obj[idx]
    b.fail("cannot index a %s" % type(obj).__name__)


impl("getitem")(lambda t, i: t[i])


@spell("torch.triu", ".triu")
def _triu(b, input, diagonal=0):
    return b.out("triu", [b.t(input)], {"diagonal": int(diagonal)})


@spell("torch.tril", ".tril")
def _tril(b, input, diagonal=0):
    return b.out("tril", [b.t(input)], {"diagonal": int(diagonal)})


impl("triu")(lambda x, diagonal: torch.triu(x, diagonal))
impl("tril")(lambda x, diagonal: torch.tril(x, diagonal))


@spell("F.pad", "torch._C._nn.pad")
def _pad(b, input, pad, mode="constant", value=None):
    if mode == "constant" and value is None:
        value = 0.0
    return b.out("pad", [b.t(input)], {"pad": [int(p) for p in pad], "mode": mode, "value": value})


@impl("pad")
def _pad_impl(x, pad, mode, value):
    if mode == "constant":
        return F.pad(x, pad, mode, value)
    return F.pad(x, pad, mode)


# ------------------------------------------------- identities, casts, misc

@spell(".contiguous", ".clone", "torch.clone", ".detach", "torch.detach", ".cpu", ".cuda",
       ".requires_grad_", ".detach_")
def _identity(b, input, *args, **kwargs):
    # The IR has value semantics; layout and device are the compiler's choice.
    return b.t(input)


def _dropout(b, input, p=0.5, training=True, inplace=False):
    if training and p > 0:
        b.fail("dropout with training=True is random; pass training=self.training or use nn.Dropout")
    return b.t(input)


spell("F.dropout", "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.alpha_dropout",
      "F.feature_alpha_dropout", "torch.dropout")(_dropout)


def _to_dtype(b, x, dtype):
    return b.cast(x, dtype)


@spell(".to")
def _to(b, input, *args, **kwargs):
    x = b.t(input)
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, Ref):
            dtype = a.dtype
    return _to_dtype(b, x, dtype)


@spell(".type")
def _type(b, input, dtype=None, non_blocking=False):
    if not isinstance(dtype, torch.dtype):
        b.fail("Tensor.type() is only supported with a torch.dtype argument")
    return _to_dtype(b, b.t(input), dtype)


@spell(".type_as")
def _type_as(b, input, other):
    return _to_dtype(b, b.t(input), other.dtype)


for _m, _dt in (("float", torch.float32), ("double", torch.float64), ("half", torch.float16),
                ("bfloat16", torch.bfloat16), ("int", torch.int32), ("long", torch.int64),
                ("bool", torch.bool)):
    spell("." + _m)((lambda dt: lambda b, input, memory_format=None: _to_dtype(b, b.t(input), dt))(_dt))

impl("to")(lambda x, dtype: x.to(dtype))


def _full_like(value_of):
    def bind(b, input, *args, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=False, memory_format=None):
        x = b.t(input)
        value = value_of(args)
        return b.out("full", [], {"shape": x.shape, "value": value, "dtype": dtype or x.dtype})
    return bind


spell("torch.zeros_like")(_full_like(lambda a: 0))
spell("torch.ones_like")(_full_like(lambda a: 1))
spell("torch.full_like")(_full_like(lambda a: a[0]))


def _new_full(value_of):
    def bind(b, input, *args, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
        x = b.t(input)
        value = value_of(args)
        return b.out("full", [], {"shape": _out_shape(b), "value": value, "dtype": dtype or x.dtype})
    return bind


spell(".new_zeros")(_new_full(lambda a: 0))
spell(".new_ones")(_new_full(lambda a: 1))
spell(".new_full")(_new_full(lambda a: a[1]))


def _factory(value_of):
    def bind(b, *args, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, out=None):
        return b.out("full", [], {"shape": _out_shape(b), "value": value_of(args),
                                  "dtype": dtype or b.value.dtype})
    return bind


spell("torch.zeros")(_factory(lambda a: 0))
spell("torch.ones")(_factory(lambda a: 1))
spell("torch.full")(_factory(lambda a: a[1]))
impl("full")(lambda shape, value, dtype: torch.full(shape, value, dtype=dtype))


def _data_dependent(b, *args, **kwargs):
    b.fail("reads tensor data into Python, which makes the graph data-dependent")


spell(".item", ".tolist", ".numpy", ".__bool__", ".nonzero", "torch.nonzero")(_data_dependent)


_TUPLE_FIELDS = {"values": 0, "indices": 1}


def _getattr(b, obj, name):
    if not isinstance(obj, Ref):
        return getattr(obj, name)
    if not obj.is_tensor:
        if name in _TUPLE_FIELDS:
            return b.out("getitem", [obj, _TUPLE_FIELDS[name]])
        b.fail("attribute %r of a multi-output op" % name)
    if name == "device":
        return DEVICE
    if name == "T":
        return obj if obj.ndim < 2 else _permute_m(b, obj, list(range(obj.ndim))[::-1])
    if name == "mT":
        return _transpose(b, obj, -2, -1)
    if name == "data":
        return obj
    v = b.value
    if not isinstance(v, torch.Tensor):
        return v            # shape/dtype-like metadata, already concrete
    b.fail("tensor attribute %r is not supported" % name)


FN_BINDERS[id(getattr)] = (getattr, _getattr, False)


def _drop(b, *args, **kwargs):
    return None


# fx's own assertion nodes for specialized (concrete) forward arguments
for _fn in (torch._assert, getattr(torch.fx._symbolic_trace, "_assert_is_none", None)):
    if _fn is not None:
        FN_BINDERS[id(_fn)] = (_fn, _drop, False)


# Ops that return a view of their input: an in-place update through one of
# these would also change the base tensor, which the IR cannot express.
VIEW_OPS = frozenset({"reshape", "flatten", "permute", "transpose", "squeeze", "unsqueeze", "expand",
                      "slice", "select", "getitem", "split"})


def lookup(node):
    """(binder, inplace) for an fx call node, or None when unsupported."""
    if node.op == "call_method":
        return METHOD_BINDERS.get(node.target)
    if node.op == "call_function":
        hit = FN_BINDERS.get(id(node.target))
        if hit is not None and hit[0] is node.target:
            return hit[1], hit[2]
    return None
