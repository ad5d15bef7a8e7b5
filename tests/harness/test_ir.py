"""The IR contract: ABI input order and roles, constant folding, names,
constants, specialized inputs, variants."""
import os

from conftest import FIXTURES, node, ops_of, trace

LN_LINEAR = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 2 * d)
        self.norm = nn.LayerNorm(2 * d)
        self.bn = nn.BatchNorm1d(2 * d)

    def forward(self, x, bias):
        return self.bn(self.norm(self.proj(x)) + bias)


d = 8


def get_inputs():
    return [torch.randn(4, d), torch.randn(2 * d)]


def get_init_inputs():
    return [d]
'''


def test_abi_input_order_and_roles(write_problem):
    r = trace(write_problem(LN_LINEAR), verify="full")
    got = [(i["name"], i["role"], i["shape"], i["dtype"]) for i in r["ir"]["inputs"]]
    assert got == [
        ("x", "input", [4, 8], "float32"),
        ("bias", "input", [16], "float32"),
        ("proj.weight", "parameter", [16, 8], "float32"),
        ("proj.bias", "parameter", [16], "float32"),
        ("norm.weight", "parameter", [16], "float32"),
        ("norm.bias", "parameter", [16], "float32"),
        ("bn.weight", "parameter", [16], "float32"),
        ("bn.bias", "parameter", [16], "float32"),
        ("bn.running_mean", "buffer", [16], "float32"),
        ("bn.running_var", "buffer", [16], "float32"),
        ("bn.num_batches_tracked", "buffer", [], "int64"),
    ]
    assert ops_of(r) == ["linear", "layer_norm", "add", "batch_norm"]
    assert node(r, "add")["args"] == [{"ref": "layer_norm"}, {"ref": "bias"}]


def test_size_arithmetic_is_folded():
    r = trace(os.path.join(FIXTURES, "ops", "size_arith.py"), verify="full")
    assert ops_of(r) == ["div", "reshape", "mul"]
    div, reshape, mul = r["ir"]["nodes"]
    assert div["args"][1] == 8 ** 0.5 and isinstance(div["args"][1], float)
    assert reshape["kwargs"] == {"shape": [4, 4, 2]}
    assert mul["args"][1] == 2


def test_attention_scale_is_a_constant(write_problem):
    path = write_problem('''
        import math
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, q, k):
                return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))

        def get_inputs():
            return [torch.randn(2, 5, 64), torch.randn(2, 5, 64)]

        def get_init_inputs():
            return []
    ''')
    r = trace(path, verify="full")
    assert ops_of(r) == ["transpose", "matmul", "div"]
    assert r["ir"]["nodes"][2]["args"][1] == 8.0


def test_node_names_never_reuse_input_names(write_problem):
    # a parameter called "relu" is never read, so fx is free to call the
    # relu node "relu" too
    path = write_problem('''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.relu = nn.Parameter(torch.zeros(3))

            def forward(self, x):
                return torch.relu(x)

        def get_inputs():
            return [torch.randn(3)]

        def get_init_inputs():
            return []
    ''')
    r = trace(path, verify="full")
    inputs = {i["name"] for i in r["ir"]["inputs"]}
    assert "relu" in inputs
    assert all(n["name"] not in inputs for n in r["ir"]["nodes"])
    assert r["ir"]["outputs"][0]["name"] == r["ir"]["nodes"][0]["name"]


def test_constant_tensors():
    r = trace(os.path.join(FIXTURES, "ops", "constant_attr.py"), verify="full")
    consts = [i for i in r["ir"]["inputs"] if i["role"] == "constant"]
    assert [c["name"] for c in consts] == ["scale_vec", "_tensor_constant0"]
    assert consts[0]["shape"] == [8] and len(consts[0]["data"]) == 8
    assert consts[1]["data"] == [0.5] * 8
    # torch.ones(M) in forward: a full node, not a constant
    assert [n["op"] for n in r["ir"]["nodes"]] == ["mul", "full", "add", "sub"]


def test_scalar_inputs_are_specialized():
    r = trace(os.path.join(FIXTURES, "ops", "scalar_input.py"), verify="full")
    assert [i["name"] for i in r["ir"]["inputs"]] == ["x"]
    assert r["ir"]["specialized"] == [{"name": "k", "value": 3}]
    assert r["ir"]["nodes"][0]["args"] == [{"ref": "x"}, 3]


def test_variants(write_problem):
    path = write_problem('''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=-1)

        def get_inputs():
            return [torch.randn(4, 16)]

        def get_input_variants():
            return [[torch.randn(4, 16)], [torch.randn(1, 16)], [torch.randn(9, 32)]]

        def get_init_inputs():
            return []
    ''')
    r = trace(path)
    assert r["ir"]["variants"] == [
        [{"name": "x", "shape": [4, 16], "dtype": "float32"}],
        [{"name": "x", "shape": [1, 16], "dtype": "float32"}],
        [{"name": "x", "shape": [9, 32], "dtype": "float32"}],
    ]
    # the graph traced at each variant, for the compiler's versions
    graphs = r["ir"]["variant_graphs"]
    assert [g["inputs"] for g in graphs] == [[dict(v[0], role="input")] for v in r["ir"]["variants"]]
    assert [[n["shape"] for n in g["nodes"]] for g in graphs] == [[[4, 16]], [[1, 16]], [[9, 32]]]
    assert [g["outputs"][0]["shape"] for g in graphs] == [[4, 16], [1, 16], [9, 32]]
    assert "variant_graphs_error" not in r["ir"]


def test_variant_that_does_not_trace(write_problem):
    """A variant the forward cannot take leaves variant_graphs out, with
    the reason; the traced graph itself is fine."""
    path = write_problem('''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x.view(4, 16).relu()

        def get_inputs():
            return [torch.randn(64)]

        def get_input_variants():
            return [[torch.randn(32)]]

        def get_init_inputs():
            return []
    ''')
    r = trace(path)
    assert r["ok"], r
    assert "variant_graphs" not in r["ir"]
    assert r["ir"]["variant_graphs_error"].startswith("input variant 1: ")


def test_source_sha256(write_problem):
    import hashlib
    path = write_problem(LN_LINEAR)
    r = trace(path, verify="none")
    with open(path, "rb") as f:
        assert r["ir"]["source_sha256"] == hashlib.sha256(f.read()).hexdigest()


def test_same_request_same_ir(write_problem):
    path = write_problem(LN_LINEAR)
    a, b = trace(path, verify="none"), trace(path, verify="none")
    assert a["ir"] == b["ir"]
