"""Executes a graph IR on real tensors with the op table's implementations.

This is the reference semantics of the IR: verification runs it against
the original module, so a canonicalization mistake (a wrong default, a
dropped argument) shows up as a mismatch instead of a wrong kernel later.
"""
import torch

from . import ops
from .ir import decode


def gather_inputs(ir, model, forward_inputs, constants=None):
    """The IR's inputs in ABI order, as a {name: tensor} dict.

    forward_inputs: get_inputs()'s tensors, in order. constants: tensors
    for role "constant" inputs whose data is not inlined (by name);
    otherwise they are read from the model by attribute path or from the
    inlined data.
    """
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    tensors = [x for x in forward_inputs if isinstance(x, torch.Tensor)]
    env, k = {}, 0
    for spec in ir["inputs"]:
        name, role = spec["name"], spec["role"]
        if role == "input":
            env[name] = tensors[k]
            k += 1
        elif role == "parameter":
            env[name] = params[name]
        elif role == "buffer":
            env[name] = buffers[name]
        else:
            env[name] = _constant(spec, model, constants)
    return env


def _constant(spec, model, constants):
    name = spec["name"]
    if constants and name in constants:
        return constants[name]
    obj = model
    try:
        for part in name.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, torch.Tensor):
            return obj
    except AttributeError:
        pass
    if "data" in spec:
        from .ir import dtype_from_name
        data = decode(spec["data"], {})
        return torch.tensor(data, dtype=dtype_from_name(spec["dtype"])).reshape(spec["shape"])
    raise KeyError("constant %r is neither an attribute of the module nor inlined" % name)


def run(ir, env):
    """Evaluate the IR; returns the list of output tensors."""
    env = dict(env)
    with torch.no_grad():
        for node in ir["nodes"]:
            fn = ops.IMPLS[node["op"]]
            args = decode(node["args"], env)
            kwargs = {k: decode(v, env) for k, v in node["kwargs"].items()}
            env[node["name"]] = fn(*args, **kwargs)
    return [env[o["name"]] for o in ir["outputs"]]
