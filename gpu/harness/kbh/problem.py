"""Loading a KernelBench-format problem file and instantiating it.

A problem is a .py file defining a module class (default `Model`), a
function giving its constructor arguments (default `get_init_inputs`) and
one giving its forward inputs (default `get_inputs`), optionally
`get_input_variants`. Each load executes the file as a fresh module under a
unique name, so two loads (full size and reduced size) never share state.
"""
import hashlib
import importlib.util
import itertools
import os
import random
import sys

import torch

from . import entry
from .protocol import HarnessError, stage

_counter = itertools.count()


class Problem:
    """A loaded problem file: its module and the named entry points."""

    def __init__(self, path, module, source_sha256, cls, init_fn, inputs_fn, variants_fn,
                 class_name, overrides):
        self.path = path
        self.module = module
        self.source_sha256 = source_sha256
        self.cls = cls
        self.init_fn = init_fn
        self.inputs_fn = inputs_fn
        self.variants_fn = variants_fn
        self.class_name = class_name
        self.overrides = overrides      # {global: value} applied after exec (reduced size)


def _syntax_message(e, path):
    where = "%s:%s" % (e.filename or path, e.lineno)
    if e.offset:
        where += ":%d" % e.offset
    msg = "syntax error in %s: %s" % (where, e.msg)
    if e.text:
        msg += ": %s" % e.text.strip()
    return msg


def load(path, class_name="Model", init_name="get_init_inputs", inputs_name="get_inputs",
         overrides=None, variants_name="get_input_variants", module_path=()):
    """Execute the problem file as a new module and look up its entry points
    (each a function name or a literal list: kbh/entry.py).

    overrides: module-level globals to replace after the file has run (used
    to shrink sizes); get_inputs()/get_init_inputs() read them at call time.
    module_path: folders first on sys.path (entry.module_path).
    """
    if not os.path.isfile(path):
        raise HarnessError("load", "problem file not found: %s" % path)
    with open(path, "rb") as f:
        source = f.read()
    sha = hashlib.sha256(source).hexdigest()
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise HarnessError("load", _syntax_message(e, path))
    except ValueError as e:  # e.g. NUL bytes in the source
        raise HarnessError("load", "cannot compile %s: %s" % (path, e))

    try:
        entry.module_path(list(module_path))
    except ValueError as e:
        raise HarnessError("load", str(e))
    name = "kbh_problem_%d_%d" % (os.getpid(), next(_counter))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered so that pickling, dataclasses and inspect can find it.
    sys.modules[name] = module
    with stage("load", "executing %s" % path, path):
        exec(code, module.__dict__)
    if overrides:
        module.__dict__.update(overrides)

    defined = module.__dict__
    if class_name not in defined:
        classes = sorted(k for k, v in defined.items()
                         if isinstance(v, type) and getattr(v, "__module__", None) == name)
        raise HarnessError("load", "class %r not found in %s (classes defined there: %s)"
                           % (class_name, path, ", ".join(classes) or "none"))
    cls = defined[class_name]
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise HarnessError("load", "%r in %s is not a torch.nn.Module subclass" % (class_name, path))

    def fn(kind, fname, required=True):
        try:
            return entry.resolve(defined, kind, fname, required)
        except KeyError:
            raise HarnessError("load", "function %r not found in %s" % (fname, path))
        except (TypeError, ValueError) as e:
            raise HarnessError("load", "%s in %s" % (str(e).strip("'\""), path))

    prob = Problem(path, module, sha, cls, fn("init", init_name), fn("inputs", inputs_name),
                   fn("variants", variants_name, required=variants_name != "get_input_variants"),
                   class_name, dict(overrides or {}))
    prob.specs = (init_name, inputs_name, variants_name)  # a reload's (verify.py)
    return prob


def seed_all(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % (1 << 32))
    except ImportError:
        pass


def instantiate(problem, seed):
    """Model(*get_init_inputs()) under a fixed seed, in eval mode."""
    init_name = problem.init_fn.__name__
    seed_all(seed)
    with stage("init", "%s() raised" % init_name, problem.path):
        args = problem.init_fn()
    if not isinstance(args, (list, tuple)):
        raise HarnessError("init", "%s() must return a list or tuple of constructor arguments, got %s"
                           % (init_name, type(args).__name__))
    with stage("init", "%s(*%s()) raised" % (problem.class_name, init_name), problem.path):
        model = problem.cls(*args)
        model.eval()
    return model


def _check_inputs(xs, what):
    if not isinstance(xs, (list, tuple)):
        raise HarnessError("inputs", "%s must return a list or tuple of inputs, got %s"
                           % (what, type(xs).__name__))
    for i, x in enumerate(xs):
        if not isinstance(x, (torch.Tensor, int, float, bool, type(None))):
            raise HarnessError("inputs", "%s returned an input of unsupported type %s at index %d "
                               "(tensors and numbers only)" % (what, type(x).__name__, i))
    return list(xs)


def make_inputs(problem, seed):
    """get_inputs() under a fixed seed."""
    what = "%s()" % problem.inputs_fn.__name__
    seed_all(seed)
    with stage("inputs", "%s raised" % what, problem.path):
        xs = problem.inputs_fn()
    return _check_inputs(xs, what)


def make_variants(problem, seed):
    """get_input_variants() under a fixed seed, or None when not defined."""
    if problem.variants_fn is None:
        return None
    seed_all(seed)
    with stage("inputs", "get_input_variants() raised", problem.path):
        vs = problem.variants_fn()
    if not isinstance(vs, (list, tuple)):
        raise HarnessError("inputs", "get_input_variants() must return a list of input lists, got %s"
                           % type(vs).__name__)
    return [_check_inputs(v, "get_input_variants()[%d]" % i) for i, v in enumerate(vs)]


def int_globals(problem):
    """Module-level int globals that look like sizes (bools excluded)."""
    out = {}
    for k, v in problem.module.__dict__.items():
        if k.startswith("__") or type(v) is not int:
            continue
        out[k] = v
    return out
