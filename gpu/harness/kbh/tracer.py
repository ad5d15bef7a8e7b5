"""torch.fx tracing with concrete shapes.

The stock symbolic tracer knows nothing about shapes, so `x.size(-1)`,
`x.shape[0]`, `x.dim()` and Python arithmetic on them become graph nodes,
and a torch.nn module's own `if input.dim() != 4` check stops the trace.
This tracer computes every node's value as it is created, on meta tensors
(shapes and dtypes, no data) with a fallback to real tensors where an op has
no meta kernel, and answers shape queries on proxies with the concrete
values. Size arithmetic is therefore folded while tracing: the graph holds
the constant 8.0, not `sqrt(size(-1))`.

No module is a leaf: torch.nn modules are traced through to the functional
calls they make (F.linear, F.conv2d, F.batch_norm, ...), with parameters and
buffers as get_attr nodes.

Every created node gets:
  node.meta["kb_val"]   the value on the meta device (or a real value when
                        the op has no meta kernel and the result is not a
                        tensor); tuples stay tuples
  node.meta["kb_line"]  (path, lineno, source) of the problem-file line that
                        created it, or None
"""
import inspect
import linecache
import operator
import os
import sys

import torch
import torch.fx
from torch.fx.proxy import Attribute, Proxy

from .protocol import HarnessError, describe_exception

# Tensor metadata that is safe to answer from the meta value: it depends on
# shapes and dtypes only.
_FOLD_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
    "element_size", "is_floating_point", "is_complex", "is_signed",
})
_FOLD_ATTRS = frozenset({
    "shape", "ndim", "dtype", "layout", "is_sparse", "is_quantized", "is_nested",
    "is_mkldnn", "requires_grad", "names",
})


def to_meta(v):
    if isinstance(v, torch.Tensor):
        if v.device.type == "meta":
            return v
        return torch.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device="meta")
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(to_meta(x) for x in v)
    if isinstance(v, tuple):  # torch.return_types.* structseq: keep as a plain tuple
        return tuple(to_meta(x) for x in v)
    if isinstance(v, list):
        return [to_meta(x) for x in v]
    return v


def _node_value(n):
    return n.meta["kb_val"]


class ConcreteProxy(Proxy):
    """A proxy that answers shape/dtype queries with concrete values."""

    def _kb_value(self):
        return self.node.meta.get("kb_val")

    def __getattr__(self, k):
        if k.startswith("__") or k in ("node", "tracer", "_node", "root", "attr"):
            raise AttributeError(k)
        v = self._kb_value()
        if isinstance(v, torch.Tensor):
            if k in _FOLD_METHODS:
                return getattr(v, k)
            if k in _FOLD_ATTRS:
                return getattr(v, k)
        return ConcreteAttribute(self, k)

    def __abs__(self):
        # fx's Proxy has no __abs__; abs(x) is operator.abs like -x is operator.neg
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __len__(self):
        v = self._kb_value()
        if isinstance(v, (torch.Tensor, tuple, list)):
            return len(v)
        return super().__len__()

    def __iter__(self):
        v = self._kb_value()
        if isinstance(v, (torch.Tensor, tuple, list)):
            return iter([self[i] for i in range(len(v))])
        return super().__iter__()


class ConcreteAttribute(Attribute, ConcreteProxy):
    """fx's lazy attribute proxy, with the concrete answers of ConcreteProxy."""

    def _kb_value(self):
        return self.node.meta.get("kb_val")


# Tensor factories: called inside forward they take no tensor, so fx
# records nothing (and a `device=x.device` proxy makes the call fail);
# while tracing they are recorded as nodes of the graph instead, so a
# tensor made in forward is part of the IR (docs/graph-ir.md), not a
# constant read from the module.
_FACTORIES = ("arange", "zeros", "ones", "full", "empty", "eye", "randn", "rand", "randint",
              "randn_like", "rand_like", "randint_like", "randperm", "normal", "bernoulli")


def _has_proxy(x):
    if isinstance(x, Proxy):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_proxy(v) for v in x)
    if isinstance(x, dict):
        return any(_has_proxy(v) for v in x.values())
    return False


class _Factories:
    """While tracing, torch's factories make graph nodes (see _FACTORIES)."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.saved = {}

    def __enter__(self):
        for name in _FACTORIES:
            fn = getattr(torch, name, None)
            if fn is None:
                continue
            self.saved[name] = fn
            setattr(torch, name, self._wrap(fn))
        return self

    def _wrap(self, fn):
        tracer = self.tracer

        def factory(*args, **kwargs):
            if getattr(tracer, "kb_tracing", False) and (
                    _has_proxy((args, kwargs)) or tracer._user_line() is not None):
                return tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        factory.__wrapped__ = fn
        return factory

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(torch, name, fn)
        return False


class ConcreteTracer(torch.fx.Tracer):
    """Tracer that computes each node's value as it records it.

    inputs: {placeholder target: value} for forward's arguments.
    problem_path: used to attribute nodes and errors to user lines.
    """

    # Buffers (e.g. an attention mask) must become graph inputs, not be
    # read eagerly at trace time and baked in as anonymous constants.
    proxy_buffer_attributes = True

    def __init__(self, inputs, problem_path):
        super().__init__()
        self.kb_inputs = inputs
        self.kb_path = os.path.realpath(problem_path) if problem_path else None
        self._attr_meta = {}

    def is_leaf_module(self, m, qualname):
        return False

    def proxy(self, node):
        return ConcreteProxy(node, self)

    def trace(self, root, concrete_args=None):
        self.kb_tracing = True
        try:
            with _Factories(self):
                return super().trace(root, concrete_args)
        finally:
            self.kb_tracing = False

    def _user_line(self):
        if self.kb_path is None:
            return None
        f = sys._getframe(2)
        while f is not None:
            fn = f.f_code.co_filename
            if fn == self.kb_path or (fn.endswith(".py") and os.path.realpath(fn) == self.kb_path):
                return (fn, f.f_lineno, linecache.getline(fn, f.f_lineno).strip())
            f = f.f_back
        return None

    def _attr(self, target):
        return lookup_attr(self.root, target)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["kb_line"] = self._user_line()
        if kind == "placeholder":
            if target not in self.kb_inputs:
                raise HarnessError("trace", "forward() argument %r has no value (variadic forward "
                                   "arguments are not supported)" % target)
            node.meta["kb_val"] = to_meta(self.kb_inputs[target])
        elif kind == "get_attr":
            if target not in self._attr_meta:
                self._attr_meta[target] = to_meta(self._attr(target))
            node.meta["kb_val"] = self._attr_meta[target]
        elif kind in ("call_function", "call_method", "call_module"):
            node.meta["kb_val"] = self._compute(node)
        return node

    def _run(self, node, value_of):
        args = torch.fx.node.map_arg(node.args, value_of)
        kwargs = torch.fx.node.map_arg(node.kwargs, value_of)
        if node.op == "call_function":
            return node.target(*args, **kwargs)
        if node.op == "call_method":
            self_obj, rest = args[0], args[1:]
            return getattr(self_obj, node.target)(*rest, **kwargs)
        mod = self._attr(node.target)
        return mod(*args, **kwargs)

    def _compute(self, node):
        try:
            with torch.no_grad():
                return self._run(node, _node_value)
        except Exception:
            # No meta kernel (or a meta kernel that is stricter than the real
            # one): run the op on real tensors and keep going in meta.
            try:
                return to_meta(self.real_value(node))
            except HarnessError:
                raise
            except Exception as e:
                raise HarnessError("shape", "%s failed during shape propagation: %s%s" % (
                    describe_target(node), describe_exception(e, None), format_line(node)))

    def real_value(self, node):
        """The node's value computed on real tensors (cached)."""
        if "kb_real" in node.meta:
            return node.meta["kb_real"]
        if node.op == "placeholder":
            v = self.kb_inputs[node.target]
        elif node.op == "get_attr":
            v = self._attr(node.target)
        else:
            for a in node.all_input_nodes:
                self.real_value(a)
            with torch.no_grad():
                v = self._run(node, lambda n: n.meta["kb_real"])
        node.meta["kb_real"] = v
        return v


def lookup_attr(root, target):
    """root.<target> without going through nn.Module.__getattr__, which fx
    patches during tracing to hand out proxies."""
    obj = root
    for part in target.split("."):
        if isinstance(obj, torch.nn.Module):
            for table in (obj._parameters, obj._buffers, obj._modules, obj.__dict__):
                if part in table:
                    obj = table[part]
                    break
            else:
                obj = getattr(obj, part)
        else:
            obj = getattr(obj, part)
    return obj


def describe_target(node):
    t = node.target
    if node.op == "call_method":
        return "method .%s()" % t
    if node.op == "call_function":
        mod = getattr(t, "__module__", None) or ""
        nm = getattr(t, "__name__", repr(t))
        if mod.startswith("torch.nn.functional") or mod == "torch.nn.functional":
            return "F.%s" % nm
        if mod in ("_operator", "operator"):
            return "operator.%s" % nm
        if mod.startswith("torch"):
            return "torch.%s" % nm
        return "%s.%s" % (mod, nm) if mod else nm
    return "%s %s" % (node.op, t)


def format_line(node):
    line = node.meta.get("kb_line")
    if not line:
        return ""
    return " (at %s:%d: %s)" % line


def trace(model, inputs, problem_path):
    """Trace model.forward with concrete inputs (a list, in forward's order).

    Returns (graph, tracer). Non-tensor inputs and forward arguments with
    defaults that get_inputs() does not supply are specialized as constants.
    """
    sig = inspect.signature(model.forward)
    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            raise HarnessError("trace", "forward(%s) uses *args/**kwargs/keyword-only arguments, "
                               "which tracing does not support" % ", ".join(str(q) for q in params))
    if len(inputs) > len(params):
        raise HarnessError("inputs", "get_inputs() returned %d inputs but forward() takes %d (%s)"
                           % (len(inputs), len(params), ", ".join(p.name for p in params)))
    feed, concrete = {}, {}
    for i, p in enumerate(params):
        if i < len(inputs):
            if isinstance(inputs[i], torch.Tensor):
                feed[p.name] = inputs[i]
            else:
                concrete[p.name] = inputs[i]
        elif p.default is not p.empty:
            concrete[p.name] = p.default
        else:
            raise HarnessError("inputs", "get_inputs() returned %d inputs but forward() requires "
                               "argument %r" % (len(inputs), p.name))
    # fx makes a placeholder "<name>_1" for a specialized argument.
    for k, v in concrete.items():
        feed[k + "_1"] = v
    tracer = ConcreteTracer(feed, problem_path)
    graph = tracer.trace(model, concrete_args=concrete or None)
    return graph, tracer, list(concrete)
