"""The 16 development problems traced at their REAL sizes (marked realsize).

Located at $KERNELBOT_PROBLEMS or ../shared/problems from the repository
root; skipped when absent.
"""
import os

import pytest

from conftest import problems_dir, trace

# problem -> (op sequence, [(input name, role, shape)] in ABI order, output shape)
EXPECT = {
    "01_scale_gelu_bias": (["mul", "gelu", "add"],
                           [("x", "input", [8192, 8192]), ("bias", "parameter", [8192])], [8192, 8192]),
    "02_softmax_rows": (["softmax"], [("x", "input", [4096, 16384])], [4096, 16384]),
    "03_layernorm": (["layer_norm"], [("x", "input", [16384, 4096]), ("ln.weight", "parameter", [4096]),
                                      ("ln.bias", "parameter", [4096])], [16384, 4096]),
    "04_rmsnorm_residual": (["add", "pow", "mean", "add", "rsqrt", "mul", "mul"],
                            [("x", "input", [16384, 4096]), ("residual", "input", [16384, 4096]),
                             ("weight", "parameter", [4096])], [16384, 4096]),
    "05_linear_gelu": (["linear", "gelu"], [("x", "input", [4096, 4096]), ("fc.weight", "parameter", [4096, 4096]),
                                            ("fc.bias", "parameter", [4096])], [4096, 4096]),
    "06_linear_relu_scale_residual": (["linear", "relu", "mul", "add"],
                                      [("x", "input", [8192, 2048]), ("fc.weight", "parameter", [2048, 2048]),
                                       ("fc.bias", "parameter", [2048])], [8192, 2048]),
    "07_conv2d_relu_bias": (["conv2d", "relu", "add"],
                            [("x", "input", [32, 64, 128, 128]), ("bias", "parameter", [128, 1, 1]),
                             ("conv.weight", "parameter", [128, 64, 3, 3]), ("conv.bias", "parameter", [128])],
                            [32, 128, 128, 128]),
    "08_conv2d_batchnorm_silu": (["conv2d", "batch_norm", "silu"],
                                 [("x", "input", [16, 128, 64, 64]), ("conv.weight", "parameter", [128, 128, 3, 3]),
                                  ("bn.weight", "parameter", [128]), ("bn.bias", "parameter", [128]),
                                  ("bn.running_mean", "buffer", [128]), ("bn.running_var", "buffer", [128]),
                                  ("bn.num_batches_tracked", "buffer", [])], [16, 128, 64, 64]),
    "09_mean_tanh": (["mean", "tanh"], [("x", "input", [64, 4096, 1024])], [64, 1024]),
    "10_logsumexp_rows": (["logsumexp"], [("x", "input", [8192, 8192])], [8192]),
    "11_causal_attention": (["transpose", "matmul", "div", "add", "softmax", "matmul"],
                            [("q", "input", [8, 16, 1024, 64]), ("k", "input", [8, 16, 1024, 64]),
                             ("v", "input", [8, 16, 1024, 64]), ("mask", "buffer", [1024, 1024])],
                            [8, 16, 1024, 64]),
    "12_mlp_block": (["linear", "gelu", "linear", "add"],
                     [("x", "input", [4096, 1024]), ("up.weight", "parameter", [4096, 1024]),
                      ("up.bias", "parameter", [4096]), ("down.weight", "parameter", [1024, 4096]),
                      ("down.bias", "parameter", [1024])], [4096, 1024]),
    "13_cross_entropy": (["cross_entropy"], [("logits", "input", [16384, 4096]), ("targets", "input", [16384])], []),
    "14_cumsum": (["cumsum"], [("x", "input", [16384, 4096])], [16384, 4096]),
    "15_linear_groupnorm_swish": (["linear", "group_norm", "sigmoid", "mul"],
                                  [("x", "input", [8192, 2048]), ("fc.weight", "parameter", [2048, 2048]),
                                   ("fc.bias", "parameter", [2048]), ("gn.weight", "parameter", [2048]),
                                   ("gn.bias", "parameter", [2048])], [8192, 2048]),
    "16_maxpool_relu_scale": (["max_pool2d", "sub", "relu", "mul"], [("x", "input", [32, 64, 256, 256])],
                              [32, 64, 128, 128]),
}

# Spot checks of argument conventions on the real problems: (node index, key, value)
KWARGS = {
    "01_scale_gelu_bias": [(0, "args", [{"ref": "x"}, 1.7]), (1, "kwargs", {"approximate": "none"})],
    "02_softmax_rows": [(0, "kwargs", {"dim": 1})],
    "04_rmsnorm_residual": [(1, "args", [{"ref": "add"}, 2]), (2, "kwargs", {"dim": [1], "keepdim": True}),
                            (3, "args", [{"ref": "mean"}, 1e-6])],
    "09_mean_tanh": [(0, "kwargs", {"dim": [1], "keepdim": False})],
    "10_logsumexp_rows": [(0, "kwargs", {"dim": [1], "keepdim": False})],
    "11_causal_attention": [(0, "kwargs", {"dim0": 2, "dim1": 3}), (2, "args", [{"ref": "matmul"}, 8.0]),
                            (4, "kwargs", {"dim": 3})],
    "13_cross_entropy": [(0, "kwargs", {"reduction": "mean", "ignore_index": -100, "label_smoothing": 0.0})],
    "14_cumsum": [(0, "kwargs", {"dim": 1})],
    "15_linear_groupnorm_swish": [(1, "kwargs", {"num_groups": 32, "eps": 1e-5})],
    "16_maxpool_relu_scale": [(0, "kwargs", {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0],
                                             "dilation": [1, 1], "ceil_mode": False}),
                              (1, "args", [{"ref": "max_pool2d"}, 0.3]), (3, "args", [{"ref": "relu"}, 2.0])],
}

@pytest.mark.realsize
@pytest.mark.parametrize("name", sorted(EXPECT))
def test_problem_real_size(name):
    path = os.path.join(problems_dir(), name + ".py")
    if not os.path.isfile(path):
        pytest.skip("development problems not found at %s" % problems_dir())
    # Time per problem is a benchmark (bench/trace_times.sh), not a test:
    # a shared machine under load makes any bound here flaky.
    r = trace(path)
    ops, inputs, out_shape = EXPECT[name]
    ir = r["ir"]
    assert [n["op"] for n in ir["nodes"]] == ops
    got = [(i["name"], i["role"], i["shape"]) for i in ir["inputs"]]
    assert got == inputs
    assert [o["shape"] for o in ir["outputs"]] == [out_shape]
    assert all(i["dtype"] == ("int64" if i["name"] in ("targets", "bn.num_batches_tracked") else "float32")
               for i in ir["inputs"])
    for idx, key, val in KWARGS.get(name, []):
        assert ir["nodes"][idx][key] == val, (idx, key)
    assert r["verify"]["mode"] in ("full", "reduced")
