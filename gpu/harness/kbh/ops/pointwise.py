"""Pointwise ops: unary, activations, binary arithmetic and comparisons."""
import operator

import torch
import torch.nn.functional as F

from ..ir import Ref
from .registry import IMPLS, as_tensor, impl, is_tensor_ref, spell


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
        if not (is_tensor_ref(input) or is_tensor_ref(other)):
            b.fail("%s needs a tensor operand" % name)
        return b.out(name, [input, other])
    spell(*spellings, inplace=True)(bind)
    IMPLS[name] = fn_impl


_binary("mul", operator.mul, "torch.mul", "torch.multiply", "op.mul", ".mul", ".multiply")
_binary("pow", operator.pow, "torch.pow", "op.pow", ".pow")
_binary("maximum", lambda a, b: torch.maximum(as_tensor(a), as_tensor(b)), "torch.maximum", ".maximum")
_binary("minimum", lambda a, b: torch.minimum(as_tensor(a), as_tensor(b)), "torch.minimum", ".minimum")
for _cmp, _sp in (("eq", ("torch.eq", "op.eq", ".eq")), ("ne", ("torch.ne", "op.ne", ".ne")),
                  ("lt", ("torch.lt", "torch.less", "op.lt", ".lt")),
                  ("le", ("torch.le", "op.le", ".le")),
                  ("gt", ("torch.gt", "torch.greater", "op.gt", ".gt")),
                  ("ge", ("torch.ge", "op.ge", ".ge"))):
    _binary(_cmp, getattr(operator, _cmp), *_sp)
_binary("logical_and", lambda a, b: torch.logical_and(as_tensor(a), as_tensor(b)), "torch.logical_and", ".logical_and")
_binary("logical_or", lambda a, b: torch.logical_or(as_tensor(a), as_tensor(b)), "torch.logical_or", ".logical_or")


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
    return torch.div(as_tensor(a), b, rounding_mode=rounding_mode)


def _mod(rounding):
    def bind(b, input, other, out=None):
        # a - round(a / b) * b: the floor (remainder, Python's %) or the
        # truncation (fmod) of the quotient, so the result has the sign of
        # the divisor or of the dividend as torch's does
        if not (is_tensor_ref(input) or is_tensor_ref(other)):
            b.fail("%s needs a tensor operand" % ("fmod" if rounding == "trunc" else "remainder"))
        q = b.emit("div", [input, other], {"rounding_mode": rounding})
        return b.out("sub", [input, b.emit("mul", [q, other])])
    return bind


spell("torch.remainder", "op.mod", ".remainder", inplace=True)(_mod("floor"))
spell("torch.fmod", ".fmod", inplace=True)(_mod("trunc"))


@spell("torch.where", ".where")
def _where(b, condition, input=None, other=None):
    if input is None or other is None:
        b.fail("torch.where(condition) with one argument has a data-dependent shape")
    return b.out("where", [condition, input, other])


impl("where")(lambda c, a, b: torch.where(c, as_tensor(a), as_tensor(b)))


@spell("torch.masked_fill", ".masked_fill", inplace=True)
def _masked_fill(b, input, mask, value):
    if isinstance(value, Ref):
        return b.out("where", [mask, value, input])
    return b.out("masked_fill", [b.t(input), mask], {"value": value})


impl("masked_fill")(lambda x, mask, value: x.masked_fill(mask, value))


@spell("torch.square", ".square", inplace=True)
def _square(b, input):
    return b.out("pow", [b.t(input), 2])
