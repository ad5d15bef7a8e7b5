"""The op table's registry: spellings -> binders, ops -> implementations.

See ops/__init__.py for what binders and implementations are."""
import operator

import torch
import torch.nn.functional as F

from ..ir import Ref

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


def as_tensor(x):
    """Numbers become 0-dim tensors where a torch function needs a tensor;
    0-dim tensors promote like Python scalars."""
    return x if isinstance(x, torch.Tensor) else torch.tensor(x)


def is_tensor_ref(x):
    return isinstance(x, Ref) and x.is_tensor


def int_list(x, n):
    """An int or a sequence as a list of n ints."""
    if isinstance(x, (list, tuple, torch.Size)):
        x = [int(v) for v in x]
        return x * n if len(x) == 1 and n > 1 else x
    return [int(x)] * n


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
