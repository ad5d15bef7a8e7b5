"""Regenerates tests/fixtures/ops/*.py (the op fixtures are committed; edit
the table here and rerun: python3 tests/harness/gen_op_fixtures.py)."""
import os, textwrap
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "ops")
HDR = '''"""Op fixture: {doc}"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# The graph IR ops this problem must trace to, in order (tests/harness).
EXPECT_OPS = {ops!r}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}

    def forward(self, {args}):
{body}


{globals}

def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''
F = []
def fx(name, doc, ops, body, inputs, args="x", init="pass", globals_="N = 4\nM = 8\n"):
    F.append((name, doc, ops, body, inputs, args, init, globals_))

R2 = "torch.randn(N, M)"
fx("add", "add spelled as operator, torch.add, method, scalars, alpha.", ["add"]*5 + ["mul", "add"],
   "return x + y, torch.add(x, y), x.add(y), x + 2.0, 2.0 + x, torch.add(x, y, alpha=2.0)", f"{R2}, {R2}", "x, y")
fx("sub", "sub spelled as operator, torch.sub, method, reflected scalar, rsub.", ["sub"]*5,
   "return x - y, torch.sub(x, y), x.sub(y), 1.0 - x, torch.rsub(x, y)", f"{R2}, {R2}", "x, y")
fx("mul", "mul spelled as operator, torch.mul, method, scalar.", ["mul"]*4,
   "return x * y, torch.mul(x, y), x.mul(y), 3 * x", f"{R2}, {R2}", "x, y")
fx("div", "div spelled as operator, torch.div, method, scalar, rounding modes.", ["div"]*6,
   "return x / y, torch.div(x, y), x.div(y), x / 2.0, torch.div(x, y, rounding_mode=\"floor\"), x.div(y, rounding_mode=\"trunc\")",
   "torch.randn(N, M), torch.rand(N, M) + 0.5", "x, y")
fx("neg", "neg as unary minus, torch.neg, method.", ["neg"]*3, "return -x, torch.neg(x), x.neg()", R2)
fx("abs", "abs as builtin, torch.abs, method.", ["abs"]*3, "return abs(x), torch.abs(x), x.abs()", R2)
fx("exp", "exp as function and method.", ["exp"]*2, "return torch.exp(x), x.exp()", R2)
fx("log", "log as function and method (positive inputs).", ["log"]*2, "return torch.log(x), x.log()", "torch.rand(N, M) + 0.1")
fx("sqrt", "sqrt as function and method.", ["sqrt"]*2, "return torch.sqrt(x), x.sqrt()", "torch.rand(N, M) + 0.1")
fx("rsqrt", "rsqrt as function and method.", ["rsqrt"]*2, "return torch.rsqrt(x), x.rsqrt()", "torch.rand(N, M) + 0.1")
fx("pow", "pow with scalar exponents: operator, torch.pow, method, square.", ["pow"]*4,
   "return x ** 2, torch.pow(x, 3), x.pow(0.5), torch.square(x)", "torch.rand(N, M) + 0.1")
fx("unary_misc", "other pointwise unary ops.", ["log1p", "expm1", "reciprocal", "sin", "cos", "erf", "floor", "ceil", "sign"],
   "return torch.log1p(x), torch.expm1(x), x.reciprocal(), torch.sin(x), x.cos(), torch.erf(x), x.floor(), torch.ceil(x), x.sign()",
   "torch.rand(N, M) + 0.5")
fx("relu", "relu as torch.relu, F.relu, method, module.", ["relu"]*4,
   "return torch.relu(x), F.relu(x), x.relu(), self.act(x)", R2, init="self.act = nn.ReLU()")
fx("leaky_relu", "leaky_relu as function (default and explicit slope) and module.", ["leaky_relu"]*3,
   "return F.leaky_relu(x), F.leaky_relu(x, 0.2), self.act(x)", R2, init="self.act = nn.LeakyReLU(negative_slope=0.1)")
fx("gelu", "gelu, erf and tanh forms, function and module.", ["gelu"]*4,
   "return F.gelu(x), F.gelu(x, approximate=\"tanh\"), self.a(x), self.b(x)", R2,
   init="self.a = nn.GELU()\n        self.b = nn.GELU(approximate=\"tanh\")")
fx("silu", "silu as function and module.", ["silu"]*2, "return F.silu(x), self.act(x)", R2, init="self.act = nn.SiLU()")
fx("sigmoid", "sigmoid as function, method, module.", ["sigmoid"]*3,
   "return torch.sigmoid(x), x.sigmoid(), self.act(x)", R2, init="self.act = nn.Sigmoid()")
fx("tanh", "tanh as function, method, module.", ["tanh"]*3,
   "return torch.tanh(x), x.tanh(), self.act(x)", R2, init="self.act = nn.Tanh()")
fx("softplus", "softplus with default and explicit beta/threshold, function and module.", ["softplus"]*3,
   "return F.softplus(x), F.softplus(x, beta=2, threshold=10), self.act(x)", "torch.randn(N, M) * 8",
   init="self.act = nn.Softplus(beta=0.5)")
fx("hardtanh", "hardtanh as function and module; relu6 is hardtanh(0, 6).", ["hardtanh"]*4,
   "return F.hardtanh(x), self.a(x), F.relu6(x), self.b(x)", "torch.randn(N, M) * 4",
   init="self.a = nn.Hardtanh(-0.5, 0.5)\n        self.b = nn.ReLU6()")
fx("clamp", "clamp with both bounds, one bound, clip and clamp_min.", ["clamp"]*5,
   "return torch.clamp(x, -0.5, 0.5), x.clamp(min=0.0), x.clamp(max=0.1), torch.clip(x, -1, 1), x.clamp_min(0.2)", R2)
fx("hardswish", "hardswish as function and module.", ["hardswish"]*2, "return F.hardswish(x), self.act(x)",
   "torch.randn(N, M) * 4", init="self.act = nn.Hardswish()")
fx("mish", "mish as function and module.", ["mish"]*2, "return F.mish(x), self.act(x)", R2, init="self.act = nn.Mish()")
fx("activations_misc", "elu, selu, hardsigmoid.", ["elu", "elu", "selu", "hardsigmoid"],
   "return F.elu(x), self.act(x), F.selu(x), F.hardsigmoid(x)", "torch.randn(N, M) * 4", init="self.act = nn.ELU(alpha=0.5)")
fx("where", "where with a tensor and a scalar branch.", ["gt", "where", "gt", "where"],
   "return torch.where(x > 0, x, y), torch.where(x > 0, x, 0.0)", f"{R2}, {R2}", "x, y")
fx("compare", "comparison ops giving bool tensors.", ["eq", "ne", "lt", "le", "gt", "ge", "gt", "gt", "logical_and", "gt", "logical_not", "lt", "logical_or"],
   "return (x == y, x != y, x < y, x <= 0.5, torch.gt(x, y), x.ge(y), torch.logical_and(x > 0, y > 0),\n"
   "                torch.logical_not(x > 0), (x < 1).logical_or(y))",
   "torch.randint(0, 3, (N, M)).float(), torch.randint(0, 3, (N, M)).float()", "x, y")
fx("minimum_maximum", "minimum/maximum, including torch.max/min of two tensors.", ["minimum", "maximum", "maximum", "minimum"],
   "return torch.minimum(x, y), torch.maximum(x, y), torch.max(x, y), torch.min(x, y)", f"{R2}, {R2}", "x, y")
fx("sum", "sum: all, one dim, keepdim, several dims.", ["sum"]*4,
   "return x.sum(), torch.sum(x, dim=1), x.sum(-1, keepdim=True), torch.sum(x, (0, 2))", "torch.randn(2, N, M)")
fx("mean", "mean: all, negative dim, several dims with keepdim.", ["mean"]*3,
   "return x.mean(), torch.mean(x, dim=-1), x.mean(dim=(1, 2), keepdim=True)", "torch.randn(2, N, M)")
fx("amax_amin", "amax/amin, and full max()/min() which are amax/amin.", ["amax", "amin", "amax", "amin"],
   "return torch.amax(x, dim=-1), x.amin(dim=0, keepdim=True), torch.max(x), x.min()", R2)
fx("max_min_dim", "max/min along a dim: tuple nodes read with getitem.", ["max", "getitem", "getitem", "max", "min", "getitem", "getitem"],
   "v, i = torch.max(x, 1)\n        return v, i, x.max(dim=-1).values, x.min(dim=0)[1]", R2)
fx("var_std", "var/std: unbiased default, unbiased=False, correction, keepdim.", ["var", "var", "std", "std"],
   "return torch.var(x, dim=1), x.var(unbiased=False), torch.std(x, dim=-1, keepdim=True), x.std(0, unbiased=False)", R2)
fx("logsumexp", "logsumexp over one and several dims.", ["logsumexp"]*2,
   "return torch.logsumexp(x, dim=-1), x.logsumexp(dim=(0, 1))", "torch.randn(N, M) * 4")
fx("argmax_argmin", "argmax/argmin with dim, keepdim and flattened.", ["argmax", "argmin", "argmax"],
   "return torch.argmax(x, dim=1), x.argmin(dim=-1, keepdim=True), torch.argmax(x)", R2)
fx("softmax", "softmax as torch, F, method and module.", ["softmax"]*4,
   "return torch.softmax(x, dim=-1), F.softmax(x, dim=1), x.softmax(0), self.act(x)", "torch.randn(2, N, M)",
   init="self.act = nn.Softmax(dim=-1)")
fx("log_softmax", "log_softmax as torch, F and module.", ["log_softmax"]*3,
   "return torch.log_softmax(x, -1), F.log_softmax(x, dim=1), self.act(x)", R2, init="self.act = nn.LogSoftmax(dim=-1)")
fx("layer_norm", "layer_norm as module and function, with and without affine.", ["layer_norm"]*3,
   "return self.ln(x), F.layer_norm(x, (M,)), F.layer_norm(x, [M], self.ln.weight, self.ln.bias, 1e-3)", "torch.randn(2, N, M)",
   init="self.ln = nn.LayerNorm(M)\n        with torch.no_grad():\n            self.ln.weight.uniform_(0.5, 1.5)\n            self.ln.bias.uniform_(-0.5, 0.5)")
fx("group_norm", "group_norm as module and function.", ["group_norm"]*2,
   "return self.gn(x), F.group_norm(x, 2)", "torch.randn(2, 4, 5, 5)",
   init="self.gn = nn.GroupNorm(2, 4)\n        with torch.no_grad():\n            self.gn.weight.uniform_(0.5, 1.5)")
fx("instance_norm", "instance_norm: module without/with affine, function; tracked stats become batch_norm.",
   ["instance_norm", "instance_norm", "instance_norm", "batch_norm"],
   "return self.a(x), self.b(x), F.instance_norm(x), self.c(x)", "torch.randn(2, 4, 5, 5)",
   init="self.a = nn.InstanceNorm2d(4)\n        self.b = nn.InstanceNorm2d(4, affine=True)\n        self.c = nn.InstanceNorm2d(4, track_running_stats=True)")
fx("batch_norm", "eval batch_norm: BatchNorm1d, BatchNorm2d and F.batch_norm.", ["batch_norm", "reshape", "batch_norm", "batch_norm"],
   "return self.a(x), self.b(x.view(N, M, 1, 1)), F.batch_norm(x, self.a.running_mean, self.a.running_var)",
   R2, init="self.a = nn.BatchNorm1d(M)\n        self.b = nn.BatchNorm2d(M)\n        with torch.no_grad():\n            for bn in (self.a, self.b):\n                bn.running_mean.uniform_(-0.5, 0.5)\n                bn.running_var.uniform_(0.5, 2.0)\n                bn.weight.uniform_(0.5, 1.5)")
fx("rmsnorm", "RMSNorm written out: pow/mean/add/rsqrt/mul chain.", ["pow", "mean", "add", "rsqrt", "mul", "mul"],
   "return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight", R2,
   init="self.weight = nn.Parameter(torch.rand(M) + 0.5)")
fx("matmul", "matmul as @, torch.matmul, method, torch.mm, batched.", ["matmul"]*5,
   "return x @ y, torch.matmul(x, y), x.matmul(y), torch.mm(x, y), z @ y", "torch.randn(N, M), torch.randn(M, 6), torch.randn(2, N, M)", "x, y, z")
fx("linear", "linear from nn.Linear (with/without bias) and F.linear.", ["linear"]*3,
   "return self.a(x), self.b(x), F.linear(x, self.w)", R2,
   init="self.a = nn.Linear(M, 6)\n        self.b = nn.Linear(M, 6, bias=False)\n        self.w = nn.Parameter(torch.randn(5, M))")
fx("bmm", "bmm as function and method.", ["bmm"]*2, "return torch.bmm(a, b), a.bmm(b)", "torch.randn(2, N, M), torch.randn(2, M, 6)", "a, b")
fx("addmm", "addmm with default and explicit beta/alpha.", ["addmm"]*2,
   "return torch.addmm(c, a, b), torch.addmm(c, a, b, beta=0.5, alpha=2.0)", "torch.randn(6), torch.randn(N, M), torch.randn(M, 6)", "c, a, b")
fx("conv1d", "conv1d from nn.Conv1d and F.conv1d with stride.", ["conv1d"]*2,
   "return self.conv(x), F.conv1d(x, self.conv.weight, stride=2)", "torch.randn(2, 3, 16)", init="self.conv = nn.Conv1d(3, 4, 3, padding=1)")
fx("conv2d", "conv2d: padding, stride+groups without bias, padding='same' with dilation.", ["conv2d"]*3,
   "return self.a(x), self.b(x), self.c(x)", "torch.randn(2, 3, 9, 9)",
   init="self.a = nn.Conv2d(3, 4, 3, padding=1)\n        self.b = nn.Conv2d(3, 6, 3, stride=2, groups=3, bias=False)\n        self.c = nn.Conv2d(3, 4, 3, padding=\"same\", dilation=2)")
fx("max_pool2d", "max_pool2d from module and function with stride/padding/ceil_mode.", ["max_pool2d"]*2,
   "return self.pool(x), F.max_pool2d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True)", "torch.randn(2, 3, 9, 9)",
   init="self.pool = nn.MaxPool2d(2)")
fx("pool1d", "1-d pooling: max_pool1d, avg_pool1d, adaptive_avg_pool1d.", ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d"],
   "return self.pool(x), F.avg_pool1d(x, 2), F.adaptive_avg_pool1d(x, 3)", "torch.randn(2, 3, 12)", init="self.pool = nn.MaxPool1d(3, stride=2)")
fx("avg_pool2d", "avg_pool2d from module and function with count_include_pad=False.", ["avg_pool2d"]*2,
   "return self.pool(x), F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)", "torch.randn(2, 3, 8, 8)",
   init="self.pool = nn.AvgPool2d(2)")
fx("adaptive_avg_pool2d", "adaptive_avg_pool2d: global, explicit size, None entry.", ["adaptive_avg_pool2d"]*3,
   "return self.a(x), F.adaptive_avg_pool2d(x, (2, 3)), self.b(x)", "torch.randn(2, 3, 8, 6)",
   init="self.a = nn.AdaptiveAvgPool2d(1)\n        self.b = nn.AdaptiveAvgPool2d((None, 2))")
fx("cumsum", "cumsum as function and method.", ["cumsum"]*2, "return torch.cumsum(x, dim=-1), x.cumsum(0)", R2)
fx("cross_entropy", "cross_entropy: function, module with label smoothing, sum with ignore_index.", ["cross_entropy"]*3,
   "return F.cross_entropy(logits, t), self.loss(logits, t), F.cross_entropy(logits, t, reduction=\"sum\", ignore_index=1)",
   "torch.randn(N, M), torch.randint(0, M, (N,))", "logits, t", init="self.loss = nn.CrossEntropyLoss(label_smoothing=0.1)")
fx("nll_loss", "nll_loss after log_softmax, function and module.", ["log_softmax", "nll_loss", "nll_loss"],
   "lp = F.log_softmax(x, dim=1)\n        return F.nll_loss(lp, t), self.loss(lp, t)", "torch.randn(N, M), torch.randint(0, M, (N,))", "x, t",
   init="self.loss = nn.NLLLoss(reduction=\"none\")")
fx("mse_loss", "mse_loss as function and module.", ["mse_loss"]*2, "return F.mse_loss(x, y), self.loss(x, y)",
   f"{R2}, {R2}", "x, y", init="self.loss = nn.MSELoss(reduction=\"sum\")")
fx("reshape", "view/reshape spellings; -1 resolved.", ["reshape"]*4,
   "return x.view(2, -1), x.reshape(-1), torch.reshape(x, (2, 2, -1)), x.view(x.size(0), -1, 2)", R2)
fx("permute", "permute as method (varargs, negative dims) and function; a two-dim swap is transpose.", ["transpose", "permute", "permute"],
   "return x.permute(0, 2, 1), torch.permute(x, (2, 0, 1)), x.permute(-1, 0, 1)", "torch.randn(2, N, M)")
fx("transpose", "transpose as method, function with negative dims, t() and .T.", ["transpose", "transpose", "transpose", "permute", "transpose"],
   "return x.transpose(0, 1), torch.transpose(x, -1, -2), y.t(), y.T, x.permute(1, 2, 0)", "torch.randn(2, N, M), torch.randn(N, M)", "x, y")
fx("flatten", "flatten as function, method and module.", ["flatten"]*3,
   "return torch.flatten(x, 1), x.flatten(), self.flat(x)", "torch.randn(2, 3, 4, 5)", init="self.flat = nn.Flatten()")
fx("identities", "contiguous, eval dropout and same-dtype casts vanish.", ["mul", "transpose"],
   "y = F.dropout(self.drop(x), 0.3, training=self.training).float() * 2.0\n        return y.transpose(0, 1).contiguous()",
   R2, init="self.drop = nn.Dropout(0.5)")
fx("squeeze_unsqueeze", "squeeze/unsqueeze spellings, None indexing.", ["unsqueeze", "unsqueeze", "unsqueeze", "squeeze", "squeeze", "squeeze"],
   "return x.unsqueeze(1), torch.unsqueeze(x, -1), x[:, None], y.squeeze(1), torch.squeeze(y), y.squeeze(-2)",
   "torch.randn(N, M), torch.randn(N, 1, M)", "x, y")
fx("slice", "basic indexing: slices, steps, ints, Ellipsis; narrow.", ["slice", "slice", "slice", "select", "select", "slice", "slice", "slice", "select"],
   "return x[:, 1:3], x[1:], x[..., ::2], x[0], x[:, -1], x.narrow(1, 0, 2), x[1:3, 2:][:, 0]", R2)
fx("cat_stack", "cat/concat/stack.", ["cat", "cat", "stack"],
   "return torch.cat([x, y], dim=1), torch.cat((x, y)), torch.stack([x, y], -1)", f"{R2}, {R2}", "x, y")
fx("expand", "expand, expand_as, broadcast_to with -1 resolved.", ["expand"]*3,
   "return x.expand(N, -1), x.expand_as(y), torch.broadcast_to(x, (2, N, M))", f"torch.randn(1, M), {R2}", "x, y")
fx("repeat", "repeat, including a repeat that adds a leading dim.", ["repeat"]*2,
   "return x.repeat(2, 1), x.repeat(1, 2, 1)", R2)
fx("split_chunk", "chunk and split give a tuple node read with getitem.", ["split", "getitem", "getitem", "mul", "split", "getitem"],
   "a, b = x.chunk(2, dim=-1)\n        return a * b, torch.split(x, [3, 5], dim=1)[1]", R2)
fx("size_arith", "shape arithmetic folds to constants.", ["div", "reshape", "mul"],
   "y = x / math.sqrt(x.size(-1))\n        y = y.view(x.shape[0], x.shape[1] // 2, -1)\n        return y * len(x.shape)", R2)
fx("inplace", "in-place ops are functionalized.", ["mul", "add", "relu", "relu", "add"],
   "y = x * 2.0\n        y.add_(1.0)\n        y.relu_()\n        y = F.relu(y, inplace=True)\n        return y + x", R2)
fx("masked_fill", "masked_fill with a causal mask built from a buffer.", ["slice", "slice", "eq", "masked_fill", "softmax"],
   "m = self.tri[:x.size(-1), :x.size(-1)] == 0\n        return torch.softmax(x.masked_fill(m, float(\"-inf\")), dim=-1)",
   "torch.randn(2, M, M)", init="self.register_buffer(\"tri\", torch.tril(torch.ones(16, 16)))")
fx("triu_tril", "triu/tril as function and method.", ["triu", "tril", "triu"],
   "return torch.triu(x), x.tril(-1), x.triu(diagonal=1)", "torch.randn(M, M)")
fx("cast", "dtype casts: double/float/to.", ["to", "mul", "to", "to"],
   "y = x.double() * 2\n        return y.float(), x.to(torch.int64)", R2)
fx("pad", "F.pad constant and reflect.", ["pad", "pad"],
   "return F.pad(x, (1, 2)), F.pad(x, (1, 1, 2, 0), mode=\"reflect\")", "torch.randn(2, 3, 5, 5)")
fx("full", "zeros_like/ones_like/full_like/new_zeros become full.", ["full", "full", "full", "full"],
   "return torch.zeros_like(x), torch.ones_like(x), torch.full_like(x, 2.5), x.new_zeros(3, 2)", R2)
fx("scan_misc", "cumprod and prod.", ["cumprod", "prod", "prod"],
   "return torch.cumprod(x, 1), x.prod(), torch.prod(x, dim=0)", "torch.rand(N, M) + 0.5")
fx("scalar_input", "a non-tensor input is specialized as a constant.", ["mul"],
   "return x * k", f"{R2}, 3", "x, k")
fx("constant_attr", "a plain tensor attribute becomes a 'constant' input.", ["mul", "add"],
   "return x * self.scale_vec + torch.ones(M)", R2, init="self.scale_vec = torch.linspace(0.5, 1.5, M)")

for (name, doc, ops, body, inputs, args, init, globals_) in F:
    body = textwrap.indent(body.replace("\n        ", "\n"), " " * 8)
    init = textwrap.indent(init.replace("\n        ", "\n"), " " * 8)
    src = HDR.format(doc=doc, ops=ops, init=init, args=args, body=body, inputs=inputs, globals=globals_)
    with open(os.path.join(OUT, name + ".py"), "w") as f:
        f.write(src)
print("wrote %d fixtures" % len(F))
