"""fx graph (with concrete values) -> graph IR (docs/graph-ir.md).

Walks the traced graph in order. Placeholders and get_attr nodes become IR
inputs; call nodes go through the op table (ops.py), whose binders emit
canonical IR nodes through a Builder. Non-tensor values computed from
constants (size arithmetic, dtype queries) are folded into their users;
identities (contiguous, eval dropout, same-dtype casts) disappear; in-place
ops are functionalized by redirecting later uses of the mutated value.
"""
import inspect

import torch

from . import ops
from .ir import DEVICE, IR_VERSION, Ref, dtype_name, encode, tensor_desc
from .protocol import HarnessError
from .tracer import describe_target, format_line

# Constants with at most this many elements carry their data in the IR.
MAX_INLINE_CONSTANT = 4096


class Builder:
    """What a binder sees: emit canonical nodes for the current fx node."""

    def __init__(self, used_names, input_names):
        self.nodes = []
        self.input_names = input_names
        self.producer = {}          # IR name -> op that produced it
        self.used = used_names      # every name taken so far (inputs, fx nodes, emitted)
        self.node = None            # the fx node being converted
        self.resolved = None        # fx name -> Ref or constant, shared with convert()

    # --- the binder API -------------------------------------------------

    @property
    def value(self):
        """The current fx node's traced value (meta tensor, tuple, ...)."""
        return self.node.meta["kb_val"]

    def describe(self):
        return describe_target(self.node)

    def fail(self, msg):
        raise HarnessError("trace", "%s: %s%s" % (self.describe(), msg, format_line(self.node)))

    def t(self, x):
        if not (isinstance(x, Ref) and x.is_tensor):
            self.fail("expected a tensor argument, got %s" % type(x).__name__)
        return x

    def dim(self, x, d):
        n = max(x.ndim, 1)
        if not isinstance(d, int) or not -n <= d < n:
            self.fail("dim %r out of range for a %d-d tensor" % (d, x.ndim))
        return d % n

    def dims(self, x, d):
        """A reduction's dim argument as a sorted list, or None for all."""
        if d is None:
            return None
        if isinstance(d, (list, tuple, torch.Size)):
            if len(d) == 0:
                return None
            return sorted({self.dim(x, v) for v in d})
        return [self.dim(x, d)]

    def cast(self, x, dtype):
        if dtype is None or dtype == x.dtype:
            return x
        return self.emit("to", [x], {"dtype": dtype})

    def emit(self, op, args, kwargs=None):
        """An intermediate node; its value is computed by running the op's
        implementation on the arguments' meta values."""
        name = self._fresh("%s_%s" % (self.node.name, op))
        value = _run_impl(op, args, kwargs or {})
        if value is None:
            self.fail("internal: could not infer the shape of intermediate %s" % op)
        return self._append(name, op, args, kwargs or {}, value)

    def out(self, op, args, kwargs=None):
        """The node that stands for the current fx node's result."""
        kwargs = kwargs or {}
        value = self.value
        check = _run_impl(op, args, kwargs)
        if check is not None and not _same_meta(check, value):
            self.fail("internal: canonical %s gives %s, traced op gives %s"
                      % (op, _meta_str(check), _meta_str(value)))
        name = self.node.name
        if self.node.meta.get("kb_emitted_final") or name in self.input_names:
            name = self._fresh(name)
        self.node.meta["kb_emitted_final"] = True
        return self._append(name, op, args, kwargs, value)

    def maybe_inplace(self, target, inplace):
        if inplace:
            self.node.meta["kb_mutates"] = target

    # --- internals --------------------------------------------------------

    def _fresh(self, base):
        name, i = base, 1
        while name in self.used:
            name = "%s_%d" % (base, i)
            i += 1
        self.used.add(name)
        return name

    def _append(self, name, op, args, kwargs, value):
        node = {"name": name, "op": op, "args": encode(list(args)),
                "kwargs": {k: encode(v) for k, v in kwargs.items()}}
        if isinstance(value, torch.Tensor):
            node["shape"] = list(value.shape)
            node["dtype"] = dtype_name(value.dtype)
        elif isinstance(value, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in value):
            node["shape"] = None
            node["dtype"] = None
            node["elements"] = [{"shape": list(v.shape), "dtype": dtype_name(v.dtype)} for v in value]
            value = tuple(value)
        else:
            self.fail("internal: op %s has a non-tensor result %r" % (op, type(value).__name__))
        line = self.node.meta.get("kb_line")
        if line:
            node["line"] = line[1]
        self.nodes.append(node)
        self.producer[name] = op
        return Ref(name, value)


def _meta_args(x):
    if isinstance(x, Ref):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(_meta_args(v) for v in x)
    return x


def _run_impl(op, args, kwargs):
    """Run an op's implementation on meta values; None when it cannot run
    there (no meta kernel): the traced value is then trusted."""
    fn = ops.IMPLS.get(op)
    if fn is None:
        raise HarnessError("trace", "internal: no implementation for canonical op %r" % op)
    a = _meta_args(list(args))
    if not all(_on_meta(v) for v in a):
        return None
    try:
        with torch.no_grad():
            return fn(*a, **kwargs)
    except (NotImplementedError, RuntimeError):
        return None


def _on_meta(v):
    if isinstance(v, torch.Tensor):
        return v.device.type == "meta"
    if isinstance(v, (list, tuple)):
        return all(_on_meta(x) for x in v)
    return True


def _same_meta(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_meta(x, y) for x, y in zip(a, b))
    return False


def _meta_str(v):
    if isinstance(v, torch.Tensor):
        return "%s%s" % (dtype_name(v.dtype), list(v.shape))
    if isinstance(v, (tuple, list)):
        return "(%s)" % ", ".join(_meta_str(x) for x in v)
    return type(v).__name__


def _has_ref(x):
    if isinstance(x, Ref):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_ref(v) for v in x)
    if isinstance(x, dict):
        return any(_has_ref(v) for v in x.values())
    return False


def _resolve_arg(a, resolved):
    if isinstance(a, torch.fx.Node):
        return resolved[a.name]
    if isinstance(a, tuple):
        return tuple(_resolve_arg(v, resolved) for v in a)
    if isinstance(a, list):
        return [_resolve_arg(v, resolved) for v in a]
    if isinstance(a, dict):
        return {k: _resolve_arg(v, resolved) for k, v in a.items()}
    if isinstance(a, torch.device):
        return DEVICE
    return a


def _drop_devices(x):
    if x is DEVICE:
        return None
    if isinstance(x, tuple):
        return tuple(_drop_devices(v) for v in x)
    if isinstance(x, list):
        return [_drop_devices(v) for v in x]
    if isinstance(x, dict):
        return {k: _drop_devices(v) for k, v in x.items() if v is not DEVICE and k != "device"}
    return x


def _constant_data(t):
    if t.numel() > MAX_INLINE_CONSTANT:
        return None
    return encode(t.detach().cpu().reshape(-1).tolist())


def convert(graph, model, forward_names, problem_path, class_name, source_sha256, specialized=()):
    """Build the IR dict from a traced graph.

    forward_names: forward's tensor argument names, in order (role "input").
    specialized: forward arguments fixed as constants (non-tensor inputs).
    """
    params = list(model.named_parameters())
    buffers = list(model.named_buffers())
    inputs, resolved = [], {}
    input_names = set()

    def add_input(name, t, role, **extra):
        inputs.append(tensor_desc(name, t, role=role, **extra))
        input_names.add(name)

    fx_nodes = list(graph.nodes)
    placeholders = {n.target: n for n in fx_nodes if n.op == "placeholder"}
    for name in forward_names:
        add_input(name, placeholders[name].meta["kb_val"], "input")
    for name, p in params:
        add_input(name, p, "parameter")
    for name, bf in buffers:
        add_input(name, bf, "buffer")
    param_ids = {id(p): n for n, p in params}
    buffer_ids = {id(bf): n for n, bf in buffers}

    used = set(input_names) | {n.name for n in fx_nodes}
    b = Builder(used, input_names)
    b.resolved = resolved
    outputs = []
    for node in fx_nodes:
        b.node = node
        val = node.meta.get("kb_val")
        if node.op == "placeholder":
            if isinstance(val, torch.Tensor):
                resolved[node.name] = Ref(node.target, val)
            else:
                resolved[node.name] = val
            continue
        if node.op == "get_attr":
            obj = model
            for part in node.target.split("."):
                obj = getattr(obj, part)
            if not isinstance(obj, torch.Tensor):
                resolved[node.name] = obj
                continue
            name = param_ids.get(id(obj)) or buffer_ids.get(id(obj))
            if name is None:
                name = node.target
                if name not in input_names:
                    data = _constant_data(obj)
                    extra = {} if data is None else {"data": data}
                    add_input(name, obj, "constant", **extra)
            resolved[node.name] = Ref(name, val)
            continue
        if node.op == "output":
            outputs = _outputs(b, node, resolved)
            continue
        args = _resolve_arg(node.args, resolved)
        kwargs = _resolve_arg(node.kwargs, resolved)
        if not _has_ref((args, kwargs)) and not isinstance(val, (torch.Tensor, tuple, list)):
            # size arithmetic and other Python on constants: fold it
            resolved[node.name] = val
            continue
        hit = ops.lookup(node)
        if hit is None:
            b.fail("unsupported operation (not in the graph IR's op table)")
        binder, inplace = hit
        if node.op == "call_method":
            args = tuple(args)
        kwargs = _drop_devices(kwargs)
        args = _drop_devices(args)
        try:
            inspect.signature(binder).bind(b, *args, **kwargs)
        except TypeError as e:
            b.fail("arguments not understood: %s" % e)
        result = binder(b, *args, **kwargs)
        mutated = node.meta.get("kb_mutates")
        if inplace:
            mutated = args[0]
        if mutated is not None and isinstance(result, Ref):
            _functionalize(b, mutated, result, resolved)
        resolved[node.name] = result
    ir = {
        "ir_version": IR_VERSION,
        "problem": problem_path,
        "class": class_name,
        "source_sha256": source_sha256,
        "torch_version": str(torch.__version__),
        "inputs": inputs,
        "nodes": b.nodes,
        "outputs": outputs,
    }
    if specialized:
        ir["specialized"] = [{"name": k, "value": encode(v)} for k, v in specialized]
    return ir


def _functionalize(b, mutated, result, resolved):
    """After x.add_(y), every later use of x must see the result."""
    if not isinstance(mutated, Ref):
        b.fail("in-place update of a non-tensor")
    if b.producer.get(mutated.name) in ops.VIEW_OPS:
        b.fail("in-place update of a view (%s) would also change its base tensor; "
               "use the out-of-place op" % b.producer[mutated.name])
    for k, v in list(resolved.items()):
        if v is mutated:
            resolved[k] = result


def _outputs(b, node, resolved):
    out = []

    def walk(a):
        if isinstance(a, torch.fx.Node):
            walk(resolved[a.name])
        elif isinstance(a, (list, tuple)):
            for v in a:
                walk(v)
        elif isinstance(a, Ref) and a.is_tensor:
            out.append({"name": a.name, "shape": list(a.value.shape), "dtype": dtype_name(a.value.dtype)})
        elif isinstance(a, Ref):
            for i in range(len(a.value)):
                name = b._fresh("%s_%d" % (a.name, i))
                r = b._append(name, "getitem", [a, i], {}, a.value[i])
                walk(r)
        else:
            raise HarnessError("trace", "forward() returns a %s, not a tensor (outputs must be "
                                        "tensors or tuples of tensors)" % type(a).__name__)
    walk(node.args[0])
    if not out:
        raise HarnessError("trace", "forward() returns no tensor")
    return out
