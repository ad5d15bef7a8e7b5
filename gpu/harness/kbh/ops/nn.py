"""Normalization, linear algebra, convolution, pooling, losses."""
import torch
import torch.nn.functional as F

from .registry import IMPLS, as_tensor, impl, int_list, spell


@spell("F.layer_norm", "torch.layer_norm")
def _layer_norm(b, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return b.out("layer_norm", [b.t(input), weight, bias],
                 {"normalized_shape": int_list(normalized_shape, 1), "eps": float(eps)})


impl("layer_norm")(lambda x, w, bias, normalized_shape, eps: F.layer_norm(x, normalized_shape, w, bias, eps))


@spell("F.rms_norm", "torch.rms_norm")
def _rms_norm(b, input, normalized_shape, weight=None, eps=None):
    # Spelled out as the pow/mean/rsqrt chain users write by hand, so the
    # compiler sees one form.
    x = b.t(input)
    n = len(int_list(normalized_shape, 1))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    sq = b.emit("pow", [x, 2])
    ms = b.emit("mean", [sq], {"dim": list(range(x.ndim - n, x.ndim)), "keepdim": True})
    r = b.emit("rsqrt", [b.emit("add", [ms, float(eps)])])
    if weight is None:
        return b.out("mul", [x, r])
    return b.out("mul", [b.emit("mul", [x, r]), weight])


@spell("F.group_norm", "torch.group_norm")
def _group_norm(b, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return b.out("group_norm", [b.t(input), weight, bias], {"num_groups": int(num_groups), "eps": float(eps)})


impl("group_norm")(lambda x, w, bias, num_groups, eps: F.group_norm(x, num_groups, w, bias, eps))


@spell("F.batch_norm")
def _batch_norm(b, input, running_mean, running_var, weight=None, bias=None, training=False,
                momentum=0.1, eps=1e-5):
    if training:
        if running_mean is not None or running_var is not None:
            b.fail("batch_norm in training mode updates its running statistics; "
                   "only inference (eval) batch norm can be a kernel")
        # null running stats: normalize with the batch's own statistics
        return b.out("batch_norm", [b.t(input), None, None, weight, bias], {"eps": float(eps)})
    return b.out("batch_norm", [b.t(input), running_mean, running_var, weight, bias], {"eps": float(eps)})


@spell("torch.batch_norm")
def _batch_norm_t(b, input, weight, bias, running_mean, running_var, training, momentum, eps,
                  cudnn_enabled=True):
    return _batch_norm(b, input, running_mean, running_var, weight, bias, training, momentum, eps)


@impl("batch_norm")
def _batch_norm_impl(x, mean, var, w, bias, eps):
    return F.batch_norm(x, mean, var, w, bias, mean is None, 0.0, eps)


@spell("F.instance_norm")
def _instance_norm(b, input, running_mean=None, running_var=None, weight=None, bias=None,
                   use_input_stats=True, momentum=0.1, eps=1e-5):
    if not use_input_stats:
        # Normalizing with stored statistics is eval batch norm, per channel.
        return b.out("batch_norm", [b.t(input), running_mean, running_var, weight, bias], {"eps": float(eps)})
    if running_mean is not None:
        b.fail("instance_norm with input statistics and running buffers updates the buffers")
    return b.out("instance_norm", [b.t(input), weight, bias], {"eps": float(eps)})


impl("instance_norm")(lambda x, w, bias, eps: F.instance_norm(x, weight=w, bias=bias, eps=eps))


@spell("F.linear", "torch._C._nn.linear")
def _linear(b, input, weight, bias=None):
    return b.out("linear", [b.t(input), weight, bias])


impl("linear")(lambda x, w, bias: F.linear(x, w, bias))


@spell("F.embedding")
def _embedding(b, input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
               scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        b.fail("embedding with max_norm renormalizes the weight in place at every call")
    return b.out("embedding", [b.t(input), b.t(weight)])


@spell("torch.embedding")
def _torch_embedding(b, weight, input, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return b.out("embedding", [b.t(input), b.t(weight)])


impl("embedding")(lambda idx, w: F.embedding(idx, w))


@spell("torch.matmul", "op.matmul", ".matmul", "torch.mm", ".mm")
def _matmul(b, input, other, out=None):
    return b.out("matmul", [b.t(input), b.t(other)])


impl("matmul")(torch.matmul)


@spell("torch.bmm", ".bmm")
def _bmm(b, input, mat2, out=None):
    return b.out("bmm", [b.t(input), b.t(mat2)])


impl("bmm")(torch.bmm)


@spell("torch.addmm", ".addmm")
def _addmm(b, input, mat1, mat2, beta=1, alpha=1, out=None):
    return b.out("addmm", [input, b.t(mat1), b.t(mat2)], {"beta": beta, "alpha": alpha})


impl("addmm")(lambda c, a, m, beta, alpha: torch.addmm(as_tensor(c), a, m, beta=beta, alpha=alpha))


def _conv(n):
    name = "conv%dd" % n

    def bind(b, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        w = b.t(weight)
        dil = int_list(dilation, n)
        if isinstance(padding, str):
            if padding == "valid":
                padding = [0] * n
            elif padding == "same":
                total = [d * (k - 1) for d, k in zip(dil, w.shape[2:])]
                # symmetric only when every total is even; else keep "same"
                padding = [t // 2 for t in total] if all(t % 2 == 0 for t in total) else "same"
            else:
                b.fail("%s padding=%r" % (name, padding))
        else:
            padding = int_list(padding, n)
        return b.out(name, [b.t(input), w, bias], {"stride": int_list(stride, n), "padding": padding,
                                                  "dilation": dil, "groups": int(groups)})
    fn = getattr(F, name)
    IMPLS[name] = lambda x, w, bias, stride, padding, dilation, groups: fn(x, w, bias, stride, padding,
                                                                          dilation, groups)
    return bind


spell("torch.conv1d", "F.conv1d")(_conv(1))
spell("torch.conv2d", "F.conv2d")(_conv(2))


def _max_pool(n):
    name = "max_pool%dd" % n

    def bind(b, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
        if return_indices:
            b.fail("%s with return_indices=True is not supported" % name)
        k = int_list(kernel_size, n)
        s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else int_list(stride, n)
        return b.out(name, [b.t(input)], {"kernel_size": k, "stride": s, "padding": int_list(padding, n),
                                          "dilation": int_list(dilation, n), "ceil_mode": bool(ceil_mode)})
    fn = getattr(F, name)
    IMPLS[name] = lambda x, kernel_size, stride, padding, dilation, ceil_mode: fn(
        x, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode)
    return bind


spell("F.max_pool1d", "F._max_pool1d", "torch.max_pool1d")(_max_pool(1))
spell("F.max_pool2d", "F._max_pool2d", "torch.max_pool2d")(_max_pool(2))


def _avg_pool(n):
    name = "avg_pool%dd" % n

    def bind(b, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
        k = int_list(kernel_size, n)
        s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else int_list(stride, n)
        kw = {"kernel_size": k, "stride": s, "padding": int_list(padding, n), "ceil_mode": bool(ceil_mode),
              "count_include_pad": bool(count_include_pad)}
        if n == 2:
            kw["divisor_override"] = divisor_override
        return b.out(name, [b.t(input)], kw)
    return bind


spell("F.avg_pool1d", "torch.avg_pool1d")(_avg_pool(1))
spell("F.avg_pool2d", "torch._C._nn.avg_pool2d")(_avg_pool(2))
impl("avg_pool1d")(lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad: F.avg_pool1d(
    x, kernel_size, stride, padding, ceil_mode, count_include_pad))
impl("avg_pool2d")(lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override:
                   F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))


def _adaptive_avg_pool(n):
    name = "adaptive_avg_pool%dd" % n

    def bind(b, input, output_size):
        x = b.t(input)
        size = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
        size = [x.shape[x.ndim - n + i] if s is None else int(s) for i, s in enumerate(size)]
        return b.out(name, [x], {"output_size": size})
    fn = getattr(F, name)
    IMPLS[name] = lambda x, output_size: fn(x, output_size)
    return bind


spell("F.adaptive_avg_pool1d", "torch.adaptive_avg_pool1d")(_adaptive_avg_pool(1))
spell("F.adaptive_avg_pool2d", "torch._C._nn.adaptive_avg_pool2d")(_adaptive_avg_pool(2))


def _reduction_arg(b, size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = torch.nn._reduction.legacy_get_string(size_average, reduce, emit_warning=False)
    if reduction not in ("mean", "sum", "none"):
        b.fail("loss reduction=%r is not one of 'mean', 'sum', 'none'" % (reduction,))
    return reduction


@spell("F.cross_entropy")
def _cross_entropy(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    return b.out("cross_entropy", [b.t(input), target, weight],
                 {"reduction": _reduction_arg(b, size_average, reduce, reduction),
                  "ignore_index": int(ignore_index), "label_smoothing": float(label_smoothing)})


@impl("cross_entropy")
def _cross_entropy_impl(x, target, weight, reduction, ignore_index, label_smoothing):
    if label_smoothing:
        return F.cross_entropy(x, target, weight, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=label_smoothing)
    return F.cross_entropy(x, target, weight, ignore_index=ignore_index, reduction=reduction)


@spell("F.nll_loss")
def _nll_loss(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
              reduction="mean"):
    return b.out("nll_loss", [b.t(input), target, weight],
                 {"reduction": _reduction_arg(b, size_average, reduce, reduction),
                  "ignore_index": int(ignore_index)})


impl("nll_loss")(lambda x, target, weight, reduction, ignore_index: F.nll_loss(
    x, target, weight, ignore_index=ignore_index, reduction=reduction))


@spell("F.mse_loss")
def _mse_loss(b, input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    # PyTorch 2.x added a per-element weight; the IR op has none.
    if weight is not None:
        b.fail("mse_loss with a weight is not supported")
    return b.out("mse_loss", [b.t(input), target], {"reduction": _reduction_arg(b, size_average, reduce,
                                                                                reduction)})


impl("mse_loss")(lambda x, t, reduction: F.mse_loss(x, t, reduction=reduction))
