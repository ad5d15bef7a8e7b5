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


def tensors_only(what, values):
    if not isinstance(values, (list, tuple)):
        raise ProblemError("%s must return a list, got %s" % (what, type(values).__name__))
    for i, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            raise ProblemError("%s()[%d] is a %s; the kernel ABI passes tensors only"
                               % (what, i, type(v).__name__))
    return list(values)


class Problem:
    def __init__(self, path, cls="Model", init_fn="get_init_inputs",
                 inputs_fn="get_inputs", variants_fn="get_input_variants"):
        self.path = os.path.abspath(path)
        self.mod = load_module(path)
        for what in (cls, init_fn, inputs_fn):
            if not hasattr(self.mod, what):
                raise ProblemError("%s defines no %s" % (self.path, what))
        self.cls = getattr(self.mod, cls)
        self.init_fn = getattr(self.mod, init_fn)
        self.inputs_fn = getattr(self.mod, inputs_fn)
        self.variants_fn = getattr(self.mod, variants_fn, None)
        with open(self.path, "rb") as f:
            self.sha256 = hashlib.sha256(f.read()).hexdigest()

    def init_args(self):
        try:
            args = self.init_fn()
        except Exception as e:
            raise ProblemError("get_init_inputs() failed: %s: %s" % (type(e).__name__, e))
        if not isinstance(args, (list, tuple)):
            raise ProblemError("get_init_inputs must return a list")
        return list(args)

    def build(self, seed, device):
        torch.manual_seed(seed)
        try:
            model = self.cls(*self.init_args())
        except ProblemError:
            raise
        except Exception as e:
            raise ProblemError("%s(...) failed: %s: %s" % (self.cls.__name__, type(e).__name__, e))
        return model.eval().to(device)

    def draw(self, seed, device):
        """[main input list] + the declared variants, under one seed."""
        torch.manual_seed(seed)
        try:
            with device_ctx(device):
                sets = [tensors_only("get_inputs", self.inputs_fn())]
                if self.variants_fn is not None:
                    variants = self.variants_fn()
                    if not isinstance(variants, (list, tuple)):
                        raise ProblemError("get_input_variants must return a list of input lists")
                    for v in variants:
                        sets.append(tensors_only("get_input_variants", v))
        except ProblemError:
            raise
        except Exception as e:
            raise ProblemError("drawing inputs failed: %s: %s" % (type(e).__name__, e))
        return [[t.to(device).contiguous() for t in s] for s in sets]


def arg_names(model, n):
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        params = []
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
