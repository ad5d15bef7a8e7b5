"""The canonical op table: how each PyTorch spelling maps to an IR op
(binders), and how each IR op executes (IMPLS, used by the interpreter
that verifies the IR against the module).

A binder is called as binder(b, *args, **kwargs) with the traced call's
arguments, tensors replaced by Refs, and returns the Ref of its result (via
b.out(...)), an existing Ref (the op is an identity), or a plain Python
value (folded constant). Binders mirror the PyTorch signatures so that
positional and keyword spellings bind the same way; their job is to put
every op in the ONE convention documented in docs/graph-ir.md: operands in
args, attributes in kwargs with defaults filled, dims non-negative, shapes
concrete.

Spelling names: "torch.x" (torch namespace), "F.x" (torch.nn.functional),
"op.x" (the operator module), ".x" (a Tensor method). Names that do not
exist in the running PyTorch version are skipped.
"""

# Importing the op modules is what registers their spellings.
from . import loss, nn, pointwise, reduce, shape  # noqa: F401
from .registry import FN_BINDERS, IMPLS, METHOD_BINDERS, VIEW_OPS, lookup  # noqa: F401
