"""A problem's entry points as `.kernelbot.yml` names them (`init:`,
`inputs:`, `variants:`): a function of the problem file by name, or a
literal list (JSON text starting with "["). Both loaders use this one
reading (kbh/problem.py for the trace, kbh/judge_problem.py for the judge).

A literal `init` is the constructor's arguments as written. A literal
`inputs` is forward's arguments, each element one of: a number, a bool or
null (a Python value, baked into the kernel like any), a list of
non-negative integers (a float32 tensor of that shape drawn from the
normal distribution), or {"shape": [...], "dtype": NAME} (float types
normal, integer types uniform in [0, 16), bool uniform), drawn under the
caller's seed like get_inputs() would draw them. A literal `variants` is
a list of such input lists.
"""
import json

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
          "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}


def is_literal(spec):
    return isinstance(spec, str) and spec.lstrip().startswith("[")


def _shape(v, where):
    if not (isinstance(v, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                        for d in v)):
        raise ValueError("%s: a shape is a list of non-negative integers, got %s"
                         % (where, json.dumps(v)[:100]))
    return v


def _input(v, where):
    if v is None or isinstance(v, (bool, int, float)):
        return lambda: v
    if isinstance(v, list):
        shape = _shape(v, where)
        return lambda: torch.randn(shape)
    if isinstance(v, dict) and set(v) <= {"shape", "dtype"} and "shape" in v:
        shape = _shape(v["shape"], where)
        name = v.get("dtype", "float32")
        dt = DTYPES.get(name)
        if dt is None:
            raise ValueError("%s: dtype %r is none of %s" % (where, name, ", ".join(DTYPES)))
        if dt.is_floating_point:
            return lambda: torch.randn(shape, dtype=dt)
        if dt == torch.bool:
            return lambda: torch.randint(0, 2, shape).bool()
        return lambda: torch.randint(0, 16, shape, dtype=dt)
    raise ValueError("%s: an input is a number, a bool, null, a shape or {\"shape\", \"dtype\"}, "
                     "got %s" % (where, json.dumps(v)[:100]))


def _inputs(v, where):
    if not isinstance(v, list):
        raise ValueError("%s: a literal list of inputs, got %s" % (where, json.dumps(v)[:100]))
    makers = [_input(x, "%s[%d]" % (where, i)) for i, x in enumerate(v)]
    return lambda: [m() for m in makers]


def literal(kind, spec):
    """A function giving what a literal spec of kind ("init", "inputs",
    "variants") stands for; ValueError naming the element at fault."""
    try:
        v = json.loads(spec)
    except ValueError as e:
        raise ValueError("%s: not a function name nor a JSON list: %s" % (kind, e))
    if not isinstance(v, list):
        raise ValueError("%s: a literal is a list" % kind)
    if kind == "init":
        fn = lambda: list(v)  # noqa: E731
    elif kind == "inputs":
        fn = _inputs(v, "inputs")
    else:
        each = [_inputs(x, "variants[%d]" % i) for i, x in enumerate(v)]
        fn = lambda: [m() for m in each]  # noqa: E731
    fn.__name__ = "the literal %s" % kind
    return fn


def module_path(dirs):
    """Put the request's module_path folders (absolute) first on sys.path,
    for the problem's own imports and MODULE:FUNCTION entry points; kept
    there, as forward may import lazily. ValueError for a bad list."""
    import os
    import sys
    if not isinstance(dirs, list) or not all(isinstance(d, str) and os.path.isabs(d)
                                             for d in dirs):
        raise ValueError("module_path must be a list of absolute folders")
    sys.path[0:0] = [d for d in dirs if d not in sys.path]


def _import_function(spec):
    """MODULE:FUNCTION, a function of a module on the module path
    (another file of the repository: a factory that builds a config object
    the upstream file's class takes). KeyError when it is not there."""
    import importlib
    mod, _, name = spec.partition(":")
    try:
        m = importlib.import_module(mod)
    except ImportError as e:
        raise KeyError("%s (importing %s: %s)" % (spec, mod, e))
    f = getattr(m, name, None)
    if f is None:
        raise KeyError(spec)
    return f


def resolve(defined, kind, spec, required=True):
    """The function spec names in the module namespace defined (or, as
    MODULE:FUNCTION, in a module on the module path), or the literal's;
    None for a name not there when not required. KeyError (a
    name not defined), TypeError (not callable) or ValueError (a bad
    literal), each with a message."""
    if is_literal(spec):
        return literal(kind, spec)
    if ":" in spec:
        f = _import_function(spec)
    else:
        f = defined.get(spec)
    if f is None:
        if required:
            raise KeyError(spec)
        return None
    if not callable(f):
        raise TypeError("%r is not callable" % spec)
    return f
