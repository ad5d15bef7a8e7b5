"""The graph IR's value encoding (docs/graph-ir.md) and small helpers."""
import math

import torch

IR_VERSION = 1


class Ref:
    """A tensor-valued IR name (an input or a node) during construction.

    value: the meta (or real) tensor, or a tuple of tensors for multi-output
    nodes; it gives shapes and dtypes to the op binders.
    """

    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name = name
        self.value = value

    @property
    def is_tensor(self):
        return isinstance(self.value, torch.Tensor)

    @property
    def shape(self):
        return list(self.value.shape)

    @property
    def ndim(self):
        return self.value.dim()

    @property
    def dtype(self):
        return self.value.dtype

    def __repr__(self):
        return "Ref(%s)" % self.name


class _Device:
    """Stands for a tensor's device at trace time; never reaches the IR."""

    def __repr__(self):
        return "DEVICE"


DEVICE = _Device()


def dtype_name(dt):
    return str(dt).replace("torch.", "")


_DTYPES = {dtype_name(getattr(torch, n)): getattr(torch, n) for n in (
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
    "uint8", "bool", "complex64", "complex128")}


def dtype_from_name(name):
    if name not in _DTYPES:
        raise ValueError("unknown dtype %r" % name)
    return _DTYPES[name]


def encode(v):
    """Python value -> JSON value of the IR (see docs/graph-ir.md)."""
    if isinstance(v, Ref):
        return {"ref": v.name}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return {"float": "nan"}
        if math.isinf(v):
            return {"float": "inf" if v > 0 else "-inf"}
        return v
    if isinstance(v, torch.dtype):
        return {"dtype": dtype_name(v)}
    if isinstance(v, (list, tuple, torch.Size)):
        return [encode(x) for x in v]
    raise TypeError("value of type %s cannot be represented in the graph IR" % type(v).__name__)


def decode(v, env):
    """JSON value of the IR -> Python value; refs looked up in env."""
    if isinstance(v, dict):
        if "ref" in v:
            return env[v["ref"]]
        if "float" in v:
            return float(v["float"])
        if "dtype" in v:
            return dtype_from_name(v["dtype"])
        raise ValueError("unknown IR value %r" % (v,))
    if isinstance(v, list):
        return [decode(x, env) for x in v]
    return v


def tensor_desc(name, t, **extra):
    d = {"name": name}
    d.update(extra)
    d["shape"] = list(t.shape)
    d["dtype"] = dtype_name(t.dtype)
    return d


def op_sequence(ir):
    return [n["op"] for n in ir["nodes"]]
