"""Shape ops, indexing, casts, identities, factories, attribute access."""
import torch
import torch.fx
import torch.nn.functional as F

from ..ir import DEVICE, Ref
from .registry import FN_BINDERS, impl, spell


def _out_shape(b):
    return list(b.value.shape)


def _reshape_bind(b, input, *shape):
    x = b.t(input)
    if len(shape) == 1 and isinstance(shape[0], torch.dtype):
        b.fail("view(dtype) reinterprets memory and is not supported")
    if _out_shape(b) == x.shape:
        return x
    return b.out("reshape", [x], {"shape": _out_shape(b)})


spell(".view", ".reshape")(_reshape_bind)


@spell("torch.reshape")
def _reshape_t(b, input, shape):
    return _reshape_bind(b, input, shape)


@spell(".view_as", ".reshape_as")
def _view_as(b, input, other):
    return _reshape_bind(b, input, other.shape)


@spell("torch.unflatten", ".unflatten")
def _unflatten(b, input, dim, sizes):
    return _reshape_bind(b, input, None)


impl("reshape")(lambda x, shape: x.reshape(shape))


@spell("torch.flatten", ".flatten")
def _flatten(b, input, start_dim=0, end_dim=-1):
    x = b.t(input)
    if x.ndim == 0:
        return b.out("reshape", [x], {"shape": [1]})
    s, e = b.dim(x, start_dim), b.dim(x, end_dim)
    if s >= e:
        return x
    return b.out("flatten", [x], {"start_dim": s, "end_dim": e})


impl("flatten")(lambda x, start_dim, end_dim: torch.flatten(x, start_dim, end_dim))


@spell(".permute")
def _permute_m(b, input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    x = b.t(input)
    dims = [b.dim(x, d) for d in dims]
    moved = [i for i, d in enumerate(dims) if d != i]
    if not moved:
        return x
    if len(moved) == 2:
        # a swap of two dims has one canonical spelling: transpose
        return b.out("transpose", [x], {"dim0": moved[0], "dim1": moved[1]})
    return b.out("permute", [x], {"dims": dims})


@spell("torch.flip", ".flip")
def _flip(b, input, *dims):
    x = b.t(input)
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    ds = sorted({b.dim(x, d) for d in dims})
    if not ds:
        return x
    return b.out("flip", [x], {"dims": ds})


impl("flip")(lambda x, dims: torch.flip(x, dims))


@spell("torch.permute")
def _permute_t(b, input, dims):
    return _permute_m(b, input, dims)


impl("permute")(lambda x, dims: x.permute(dims))


@spell("torch.transpose", "torch.swapaxes", "torch.swapdims", ".transpose", ".swapaxes", ".swapdims")
def _transpose(b, input, dim0, dim1):
    x = b.t(input)
    # transpose is symmetric; dim0 < dim1 keeps one spelling per swap
    d0, d1 = sorted((b.dim(x, dim0), b.dim(x, dim1)))
    if d0 == d1:
        return x
    return b.out("transpose", [x], {"dim0": d0, "dim1": d1})


impl("transpose")(lambda x, dim0, dim1: x.transpose(dim0, dim1))


@spell("torch.t", ".t")
def _t_bind(b, input):
    x = b.t(input)
    return x if x.ndim < 2 else _transpose(b, x, 0, 1)


@spell("torch.squeeze", ".squeeze")
def _squeeze(b, input, dim=None):
    x = b.t(input)
    cand = range(x.ndim) if dim is None else [b.dim(x, d) for d in (dim if isinstance(dim, (list, tuple))
                                                                     else [dim])]
    dims = sorted({d for d in cand if x.shape[d] == 1})
    if not dims:
        return x
    return b.out("squeeze", [x], {"dim": dims})


@impl("squeeze")
def _squeeze_impl(x, dim):
    for d in reversed(dim):
        x = x.squeeze(d)
    return x


@spell("torch.unsqueeze", ".unsqueeze")
def _unsqueeze(b, input, dim):
    x = b.t(input)
    n = x.ndim + 1
    if not -n <= dim < n:
        b.fail("unsqueeze dim %d out of range for a %d-d tensor" % (dim, x.ndim))
    return b.out("unsqueeze", [x], {"dim": dim % n})


impl("unsqueeze")(lambda x, dim: x.unsqueeze(dim))


def _expand_bind(b, input, *sizes):
    x = b.t(input)
    if _out_shape(b) == x.shape:
        return x
    return b.out("expand", [x], {"shape": _out_shape(b)})


spell(".expand")(_expand_bind)


@spell(".expand_as")
def _expand_as(b, input, other):
    return _expand_bind(b, input)


@spell("torch.broadcast_to", ".broadcast_to")
def _broadcast_to(b, input, size):
    return _expand_bind(b, input)


impl("expand")(lambda x, shape: x.expand(shape))


@spell(".repeat")
def _repeat(b, input, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, torch.Size)):
        sizes = sizes[0]
    return b.out("repeat", [b.t(input)], {"repeats": [int(s) for s in sizes]})


impl("repeat")(lambda x, repeats: x.repeat(repeats))


@spell("torch.cat", "torch.concat", "torch.concatenate")
def _cat(b, tensors, dim=0, out=None, axis=None):
    ts = [b.t(t) for t in tensors]
    if axis is not None:
        dim = axis
    ref = next((t for t in ts if t.ndim > 0), ts[0])
    return b.out("cat", ts, {"dim": b.dim(ref, dim)})


impl("cat")(lambda *ts, dim: torch.cat(ts, dim))


@spell("torch.stack")
def _stack(b, tensors, dim=0, out=None):
    ts = [b.t(t) for t in tensors]
    n = ts[0].ndim + 1
    return b.out("stack", ts, {"dim": dim % n})


impl("stack")(lambda *ts, dim: torch.stack(ts, dim))


def _split_out(b, x, dim):
    d = b.dim(x, dim)
    sizes = [int(t.shape[d]) for t in b.value]
    return b.out("split", [x], {"sizes": sizes, "dim": d})


@spell("torch.split", ".split")
def _split(b, tensor, split_size_or_sections, dim=0):
    return _split_out(b, b.t(tensor), dim)


@spell("torch.chunk", ".chunk")
def _chunk(b, input, chunks, dim=0):
    return _split_out(b, b.t(input), dim)


impl("split")(lambda x, sizes, dim: tuple(torch.split(x, sizes, dim)))


@spell("torch.narrow", ".narrow")
def _narrow(b, input, dim, start, length):
    x = b.t(input)
    d = b.dim(x, dim)
    start = start % x.shape[d] if start < 0 else start
    return b.out("slice", [x], {"dim": d, "start": start, "end": start + length, "step": 1})


@spell("torch.select", ".select")
def _select(b, input, dim, index):
    x = b.t(input)
    d = b.dim(x, dim)
    return b.out("select", [x], {"dim": d, "index": index % x.shape[d]})


@impl("slice")
def _slice_impl(x, dim, start, end, step):
    return x[(slice(None),) * dim + (slice(start, end, step),)]


impl("select")(lambda x, dim, index: x.select(dim, index))


def _getitem_tensor(b, x, idx):
    """x[idx] as a chain of slice / select / unsqueeze nodes, one dim each."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    for it in items:
        if isinstance(it, Ref) or isinstance(it, (list, torch.Tensor)):
            b.fail("indexing with a tensor or list (advanced indexing) is not supported")
        if not (it is None or it is Ellipsis or isinstance(it, (int, slice))):
            b.fail("unsupported index %r" % (it,))
    n_ell = sum(1 for it in items if it is Ellipsis)
    if n_ell > 1:
        b.fail("an index can have only one Ellipsis")
    used = sum(1 for it in items if isinstance(it, (int, slice)) and not isinstance(it, bool))
    if n_ell:
        i = items.index(Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.ndim - used)
    steps = []
    d = 0
    for it in items:
        if it is None:
            steps.append(("unsqueeze", {"dim": d}))
            d += 1
        elif isinstance(it, slice):
            size = x.shape[d] if d < x.ndim else 0
            start, end, step = it.indices(size)
            if step <= 0:
                b.fail("slices with a negative step are not supported")
            end = max(start, end)
            if (start, end, step) != (0, size, 1):
                steps.append(("slice", {"dim": d, "start": start, "end": end, "step": step}))
            d += 1
        else:
            size = x.shape[d]
            if not -size <= it < size:
                b.fail("index %d out of range for dim %d of size %d" % (it, d, size))
            steps.append(("select", {"dim": d, "index": it % size}))
    # dims are positions in the tensor as it is when that step runs; select
    # removes a dim, which the loop above accounts for by not advancing d
    cur = x
    for i, (op, kw) in enumerate(steps):
        cur = b.out(op, [cur], kw) if i == len(steps) - 1 else b.emit(op, [cur], kw)
    return cur


@spell("op.getitem")
def _getitem(b, obj, idx):
    if isinstance(obj, Ref) and not obj.is_tensor:
        if not isinstance(idx, int):
            b.fail("only integer indexing of a multi-output op is supported")
        n = len(obj.value)
        return b.out("getitem", [obj, idx % n])
    if isinstance(obj, Ref):
        return _getitem_tensor(b, obj, idx)
    if isinstance(obj, (list, tuple)):
        return obj[idx]
    b.fail("cannot index a %s" % type(obj).__name__)


impl("getitem")(lambda t, i: t[i])


@spell("torch.triu", ".triu")
def _triu(b, input, diagonal=0):
    return b.out("triu", [b.t(input)], {"diagonal": int(diagonal)})


@spell("torch.tril", ".tril")
def _tril(b, input, diagonal=0):
    return b.out("tril", [b.t(input)], {"diagonal": int(diagonal)})


impl("triu")(lambda x, diagonal: torch.triu(x, diagonal))
impl("tril")(lambda x, diagonal: torch.tril(x, diagonal))


@spell("F.pad", "torch._C._nn.pad")
def _pad(b, input, pad, mode="constant", value=None):
    if mode == "constant" and value is None:
        value = 0.0
    return b.out("pad", [b.t(input)], {"pad": [int(p) for p in pad], "mode": mode, "value": value})


@impl("pad")
def _pad_impl(x, pad, mode, value):
    if mode == "constant":
        return F.pad(x, pad, mode, value)
    return F.pad(x, pad, mode)


@spell(".contiguous", ".clone", "torch.clone", ".detach", "torch.detach", ".cpu", ".cuda",
       ".requires_grad_", ".detach_")
def _identity(b, input, *args, **kwargs):
    # The IR has value semantics; layout and device are the compiler's choice.
    return b.t(input)


def _dropout(b, input, p=0.5, training=True, inplace=False):
    if training and p > 0:
        b.fail("dropout with training=True is random; pass training=self.training or use nn.Dropout")
    return b.t(input)


spell("F.dropout", "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.alpha_dropout",
      "F.feature_alpha_dropout", "torch.dropout")(_dropout)


def _to_dtype(b, x, dtype):
    return b.cast(x, dtype)


@spell(".to")
def _to(b, input, *args, **kwargs):
    x = b.t(input)
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, Ref):
            dtype = a.dtype
    return _to_dtype(b, x, dtype)


@spell(".type")
def _type(b, input, dtype=None, non_blocking=False):
    if not isinstance(dtype, torch.dtype):
        b.fail("Tensor.type() is only supported with a torch.dtype argument")
    return _to_dtype(b, b.t(input), dtype)


@spell(".type_as")
def _type_as(b, input, other):
    return _to_dtype(b, b.t(input), other.dtype)


for _m, _dt in (("float", torch.float32), ("double", torch.float64), ("half", torch.float16),
                ("bfloat16", torch.bfloat16), ("int", torch.int32), ("long", torch.int64),
                ("bool", torch.bool)):
    spell("." + _m)((lambda dt: lambda b, input, memory_format=None: _to_dtype(b, b.t(input), dt))(_dt))

impl("to")(lambda x, dtype: x.to(dtype))


def _full_like(value_of):
    def bind(b, input, *args, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=False, memory_format=None):
        x = b.t(input)
        value = value_of(args)
        return b.out("full", [], {"shape": x.shape, "value": value, "dtype": dtype or x.dtype})
    return bind


spell("torch.zeros_like")(_full_like(lambda a: 0))
spell("torch.ones_like")(_full_like(lambda a: 1))
spell("torch.full_like")(_full_like(lambda a: a[0]))


def _new_full(value_of):
    def bind(b, input, *args, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
        x = b.t(input)
        value = value_of(args)
        return b.out("full", [], {"shape": _out_shape(b), "value": value, "dtype": dtype or x.dtype})
    return bind


spell(".new_zeros")(_new_full(lambda a: 0))
spell(".new_ones")(_new_full(lambda a: 1))
spell(".new_full")(_new_full(lambda a: a[1]))


def _factory(value_of):
    def bind(b, *args, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, out=None):
        return b.out("full", [], {"shape": _out_shape(b), "value": value_of(args),
                                  "dtype": dtype or b.value.dtype})
    return bind


spell("torch.zeros")(_factory(lambda a: 0))
spell("torch.ones")(_factory(lambda a: 1))
spell("torch.full")(_factory(lambda a: a[1]))
# empty's values are any: zeros are some
spell("torch.empty")(_factory(lambda a: 0))
impl("full")(lambda shape, value, dtype: torch.full(shape, value, dtype=dtype))


@spell("torch.arange")
def _arange(b, *args, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
            out=None):
    if any(isinstance(a, Ref) for a in args) or not 1 <= len(args) <= 3:
        b.fail("arange takes 1 to 3 numbers (end; start, end; start, end, step)")
    start = args[0] if len(args) > 1 else 0
    step = args[2] if len(args) > 2 else 1
    return b.out("arange", [], {"start": start, "step": step, "length": _out_shape(b)[0],
                                "dtype": b.value.dtype})


def _arange_impl(start, step, length, dtype):
    # start + i * step, as torch computes it (in double for floats)
    i = torch.arange(length, dtype=torch.float64 if dtype.is_floating_point else torch.int64)
    return (i * step + start).to(dtype)


impl("arange")(_arange_impl)


def _random(b, *args, **kwargs):
    b.fail("makes a random tensor inside forward: the module's output is then not a function "
           "of its inputs, which no kernel can be checked against (pass the noise as an input, "
           "or draw it in get_inputs())")


spell("torch.randn", "torch.rand", "torch.randint", "torch.randn_like", "torch.rand_like",
      "torch.randint_like", "torch.randperm", "torch.normal", "torch.bernoulli")(_random)


def _data_dependent(b, *args, **kwargs):
    b.fail("reads tensor data into Python, which makes the graph data-dependent")


spell(".item", ".tolist", ".numpy", ".__bool__", ".nonzero", "torch.nonzero")(_data_dependent)


_TUPLE_FIELDS = {"values": 0, "indices": 1}


def _getattr(b, obj, name):
    if not isinstance(obj, Ref):
        return getattr(obj, name)
    if not obj.is_tensor:
        if name in _TUPLE_FIELDS:
            return b.out("getitem", [obj, _TUPLE_FIELDS[name]])
        b.fail("attribute %r of a multi-output op" % name)
    if name == "device":
        return DEVICE
    if name == "T":
        return obj if obj.ndim < 2 else _permute_m(b, obj, list(range(obj.ndim))[::-1])
    if name == "mT":
        return _transpose(b, obj, -2, -1)
    if name == "data":
        return obj
    v = b.value
    if not isinstance(v, torch.Tensor):
        return v            # shape/dtype-like metadata, already concrete
    b.fail("tensor attribute %r is not supported" % name)


FN_BINDERS[id(getattr)] = (getattr, _getattr, False)


def _drop(b, *args, **kwargs):
    return None


# fx's own assertion nodes for specialized (concrete) forward arguments
for _fn in (torch._assert, getattr(torch.fx._symbolic_trace, "_assert_is_none", None)):
    if _fn is not None:
        FN_BINDERS[id(_fn)] = (_fn, _drop, False)
