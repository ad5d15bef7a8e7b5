"""The judge's problem loader: a KernelBench-format .py loaded by path as a
fresh module, its model built under a seed, its inputs drawn under seeds.

The harness branch has a fuller loader (kbh/problem.py); the lead unifies
them. Kept small and self-contained until then.
"""
import hashlib
import importlib.util
import inspect
import os
import sys

import torch

from kbh import entry


class ProblemError(Exception):
    """The problem itself is unusable: the evaluation cannot start."""


def load_module(path, prefix="kbh_eval"):
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ProblemError("%s: no such file" % path)
    name = "%s_%s" % (prefix, hashlib.sha256(path.encode()).hexdigest()[:12])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise ProblemError("%s: cannot load: %s: %s" % (path, type(e).__name__, e))
    finally:
        sys.path.remove(os.path.dirname(path))
    return mod


def device_ctx(device):
    """Create tensors directly on the device where PyTorch supports it
    (torch >= 2): drawing 64M normals on the CPU costs more than the whole
    GPU evaluation. On 1.13 (CPU only here) a no-op."""
    if device.type != "cpu" and hasattr(torch, "set_default_device"):
        return device
    import contextlib
    return contextlib.nullcontext()


# Python values a problem's inputs may hold beside tensors: the trace
# bakes them into the graph (kbh/tracer.py), so a kernel never receives
# them, and the judge passes them to the reference as they were drawn.
SCALARS = (bool, int, float)


def split_inputs(what, values):
    """(the tensors of an input list, [(position, value)] of its Python
    scalars); ProblemError for anything else."""
    if not isinstance(values, (list, tuple)):
        raise ProblemError("%s must return a list, got %s" % (what, type(values).__name__))
    tensors, scalars = [], []
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            tensors.append(v)
        elif isinstance(v, SCALARS) or v is None:
            scalars.append((i, v))
        else:
            raise ProblemError("%s()[%d] is a %s; the kernel ABI passes tensors (and Python "
                               "numbers, baked into the kernel)" % (what, i, type(v).__name__))
    return tensors, scalars


def with_scalars(tensors, scalars):
    """A forward's argument list: the tensors with the scalars put back at
    their positions."""
    at, it = dict(scalars), iter(tensors)
    return [at[i] if i in at else next(it) for i in range(len(tensors) + len(scalars))]


class Problem:
    def __init__(self, path, cls="Model", init_fn="get_init_inputs",
                 inputs_fn="get_inputs", variants_fn="get_input_variants", module_path=()):
        self.path = os.path.abspath(path)
        try:
            entry.module_path(list(module_path))
        except ValueError as e:
            raise ProblemError(str(e))
        self.mod = load_module(path)
        if not hasattr(self.mod, cls):
            raise ProblemError("%s defines no %s" % (self.path, cls))
        self.cls = getattr(self.mod, cls)
        # Each a function name or a literal list (kbh/entry.py).
        try:
            d = vars(self.mod)
            self.init_fn = entry.resolve(d, "init", init_fn)
            self.inputs_fn = entry.resolve(d, "inputs", inputs_fn)
            self.variants_fn = entry.resolve(d, "variants", variants_fn,
                                             required=variants_fn != "get_input_variants")
        except KeyError as e:
            raise ProblemError("%s defines no %s" % (self.path, e.args[0]))
        except (TypeError, ValueError) as e:
            raise ProblemError("%s: %s" % (self.path, str(e).strip("'\"")))
        with open(self.path, "rb") as f:
            self.sha256 = hashlib.sha256(f.read()).hexdigest()
        # [(position, value)] of the Python numbers among forward's
        # arguments, the same in every draw (split_inputs); None before
        # the first draw, which binds them to the models built before it.
        self.scalars = None
        self.models = []

    def take_scalars(self, what, scalars):
        """Check an input list's scalars against every draw's before."""
        if self.scalars is None:
            self.scalars = scalars
            for m in self.models:
                bind_scalars(m, scalars)
        elif scalars != self.scalars:
            was, now = dict(self.scalars), dict(scalars)
            i = min(set(was.items()) ^ set(now.items()))[0]
            raise ProblemError("%s()[%d] is %r here and %r in another draw: a Python number "
                               "among the inputs is baked into the kernel, so it must be the "
                               "same in every draw and variant (make it a tensor, or a "
                               "constant)" % (what, i, now.get(i, "a tensor"),
                                               was.get(i, "a tensor")))

    def init_args(self):
        try:
            args = self.init_fn()
        except Exception as e:
            raise ProblemError("%s() failed: %s: %s" % (self.init_fn.__name__, type(e).__name__, e))
        if not isinstance(args, (list, tuple)):
            raise ProblemError("%s must return a list" % self.init_fn.__name__)
        return list(args)

    def build(self, seed, device):
        """The model under seed. Where forward's arguments hold Python
        numbers (the first draw says: draw() binds them then), its forward
        takes the tensors only and puts them back (bind_scalars): every
        caller, the baselines included, passes what the kernel gets."""
        torch.manual_seed(seed)
        try:
            model = self.cls(*self.init_args())
        except ProblemError:
            raise
        except Exception as e:
            raise ProblemError("%s(...) failed: %s: %s" % (self.cls.__name__, type(e).__name__, e))
        model = model.eval().to(device)
        self.models.append(model)
        return bind_scalars(model, self.scalars) if self.scalars is not None else model

    def draw(self, seed, device):
        """[main input list] + the declared variants, under one seed."""
        torch.manual_seed(seed)
        try:
            with device_ctx(device):
                lists = [(self.inputs_fn.__name__, self.inputs_fn())]
                if self.variants_fn is not None:
                    variants = self.variants_fn()
                    if not isinstance(variants, (list, tuple)):
                        raise ProblemError("%s must return a list of input lists"
                                           % self.variants_fn.__name__)
                    lists += [(self.variants_fn.__name__, v) for v in variants]
                sets = []
                for what, values in lists:
                    tensors, scalars = split_inputs(what, values)
                    self.take_scalars(what, scalars)
                    sets.append(tensors)
        except ProblemError:
            raise
        except Exception as e:
            raise ProblemError("drawing inputs failed: %s: %s" % (type(e).__name__, e))
        return [[t.to(device).contiguous() for t in s] for s in sets]


def bind_scalars(model, scalars):
    """model, its forward taking the tensors of its arguments only where
    scalars ([(position, value)]) are not empty; the original stays as
    model.kb_forward (arg_names reads its signature)."""
    if scalars:
        inner = model.forward

        def forward(*tensors):
            return inner(*with_scalars(tensors, scalars))
        model.kb_forward, model.kb_scalars = inner, list(scalars)
        model.forward = forward
    return model


def arg_names(model, n):
    """The names of forward's first n tensor arguments."""
    try:
        params = list(inspect.signature(getattr(model, "kb_forward", model.forward)).parameters)
    except (TypeError, ValueError):
        params = []
    skip = {i for i, _ in getattr(model, "kb_scalars", [])}
    params = [p for i, p in enumerate(params) if i not in skip]
    return [params[i] if i < len(params) else "arg%d" % i for i in range(n)]


def state_tensors(model):
    """The ABI's inputs after forward's arguments: named_parameters() then
    named_buffers(), in that order (docs/design.md, "The kernel ABI")."""
    out = [(n, p.detach()) for n, p in model.named_parameters()]
    out += [(n, b.detach()) for n, b in model.named_buffers()]
    return [(n, t.contiguous()) for n, t in out]


def as_outputs(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    raise ProblemError("forward must return a tensor or a tuple of tensors, got %s"
                       % type(value).__name__)
