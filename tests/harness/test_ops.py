"""Every op fixture traces to its declared op sequence, and verifies at full
size; spot checks of the one-convention-per-op rules of docs/graph-ir.md."""
import glob
import json
import os
import runpy

import pytest

from conftest import FIXTURES, node, ops_of, trace

OP_FIXTURES = sorted(glob.glob(os.path.join(FIXTURES, "ops", "*.py")))


@pytest.mark.parametrize("path", OP_FIXTURES, ids=lambda p: os.path.basename(p)[:-3])
def test_op_fixture(path):
    reply = trace(path, verify="full")
    assert ops_of(reply) == runpy.run_path(path)["EXPECT_OPS"]
    assert reply["verify"]["mode"] == "full"
    ir = reply["ir"]
    json.dumps(ir, allow_nan=False)
    # names: unique, and nodes never reuse an input's name
    names = [i["name"] for i in ir["inputs"]] + [n["name"] for n in ir["nodes"]]
    assert len(names) == len(set(names))
    # refs point at inputs or earlier nodes only
    seen = {i["name"] for i in ir["inputs"]}
    for n in ir["nodes"]:
        for r in _refs(n["args"]) + _refs(list(n["kwargs"].values())):
            assert r in seen, "%s refers to %s before it exists" % (n["name"], r)
        seen.add(n["name"])
    for o in ir["outputs"]:
        assert o["name"] in seen


def _refs(v):
    if isinstance(v, dict):
        return [v["ref"]] if "ref" in v else []
    if isinstance(v, list):
        return [r for x in v for r in _refs(x)]
    return []


def fx(name, **kw):
    return trace(os.path.join(FIXTURES, "ops", name + ".py"), verify="none", **kw)


def kwargs_of(reply, op):
    return [n["kwargs"] for n in reply["ir"]["nodes"] if n["op"] == op]


def test_softmax_dim_is_non_negative():
    assert kwargs_of(fx("softmax"), "softmax") == [{"dim": 2}, {"dim": 1}, {"dim": 0}, {"dim": 2}]


def test_gelu_approximate_always_present():
    assert [k["approximate"] for k in kwargs_of(fx("gelu"), "gelu")] == ["none", "tanh", "none", "tanh"]


def test_reduction_kwargs():
    assert kwargs_of(fx("sum"), "sum") == [
        {"dim": None, "keepdim": False}, {"dim": [1], "keepdim": False},
        {"dim": [2], "keepdim": True}, {"dim": [0, 2], "keepdim": False}]
    assert kwargs_of(fx("var_std"), "var") == [
        {"dim": [1], "correction": 1, "keepdim": False}, {"dim": None, "correction": 0, "keepdim": False}]


def test_max_with_dim_is_a_tuple_node():
    r = fx("max_min_dim")
    mx = next(n for n in r["ir"]["nodes"] if n["op"] == "max")
    assert mx["shape"] is None and mx["dtype"] is None
    assert mx["elements"] == [{"shape": [4], "dtype": "float32"}, {"shape": [4], "dtype": "int64"}]
    gets = [n for n in r["ir"]["nodes"] if n["op"] == "getitem" and n["args"][0] == {"ref": mx["name"]}]
    assert [g["args"][1] for g in gets] == [0, 1]


def test_reshape_shape_resolved():
    shapes = [k["shape"] for k in kwargs_of(fx("reshape"), "reshape")]
    assert shapes == [[2, 16], [32], [2, 2, 8], [4, 4, 2]]


def test_transpose_dims_non_negative():
    assert kwargs_of(fx("transpose"), "transpose")[1] == {"dim0": 1, "dim1": 2}


def test_conv_kwargs_are_lists():
    k = kwargs_of(fx("conv2d"), "conv2d")
    assert k[0] == {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}
    assert k[1] == {"stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "groups": 3}
    assert k[2]["padding"] == [2, 2]      # "same" with dilation 2 resolved
    conv = [n for n in fx("conv2d")["ir"]["nodes"] if n["op"] == "conv2d"]
    assert conv[1]["args"][2] is None     # bias=False


def test_linear_args():
    r = fx("linear")
    lin = [n["args"] for n in r["ir"]["nodes"] if n["op"] == "linear"]
    assert lin[0] == [{"ref": "x"}, {"ref": "a.weight"}, {"ref": "a.bias"}]
    assert lin[1] == [{"ref": "x"}, {"ref": "b.weight"}, None]
    assert lin[2] == [{"ref": "x"}, {"ref": "w"}, None]


def test_pool_kwargs():
    k = kwargs_of(fx("max_pool2d"), "max_pool2d")
    assert k[0] == {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1],
                    "ceil_mode": False}
    assert k[1]["ceil_mode"] is True and k[1]["stride"] == [2, 2]
    assert kwargs_of(fx("adaptive_avg_pool2d"), "adaptive_avg_pool2d") == [
        {"output_size": [1, 1]}, {"output_size": [2, 3]}, {"output_size": [8, 2]}]


def test_norm_conventions():
    r = fx("batch_norm")
    bn = [n for n in r["ir"]["nodes"] if n["op"] == "batch_norm"][0]
    assert bn["args"] == [{"ref": "x"}, {"ref": "a.running_mean"}, {"ref": "a.running_var"},
                          {"ref": "a.weight"}, {"ref": "a.bias"}]
    assert bn["kwargs"] == {"eps": 1e-5}
    ln = kwargs_of(fx("layer_norm"), "layer_norm")
    assert ln[0] == {"normalized_shape": [8], "eps": 1e-5} and ln[2]["eps"] == 1e-3


def test_loss_kwargs():
    k = kwargs_of(fx("cross_entropy"), "cross_entropy")
    assert k[0] == {"reduction": "mean", "ignore_index": -100, "label_smoothing": 0.0}
    assert k[1]["label_smoothing"] == 0.1
    assert k[2]["reduction"] == "sum" and k[2]["ignore_index"] == 1


def test_slice_convention():
    r = fx("slice")
    k = [(n["op"], n["kwargs"]) for n in r["ir"]["nodes"]]
    assert k[0] == ("slice", {"dim": 1, "start": 1, "end": 3, "step": 1})
    assert k[2] == ("slice", {"dim": 1, "start": 0, "end": 8, "step": 2})
    assert k[4] == ("select", {"dim": 1, "index": 7})


def test_add_alpha_becomes_mul():
    r = fx("add")
    mul = next(n for n in r["ir"]["nodes"] if n["op"] == "mul")
    assert mul["args"] == [{"ref": "y"}, 2.0]
    assert node(r, "add_5")["args"] == [{"ref": "x"}, {"ref": mul["name"]}]


def test_inplace_is_functionalized():
    r = fx("inplace")
    nodes = r["ir"]["nodes"]
    assert [n["args"][0] for n in nodes[1:4]] == [{"ref": "mul"}, {"ref": nodes[1]["name"]},
                                                  {"ref": nodes[2]["name"]}]
    assert nodes[4]["args"] == [{"ref": nodes[3]["name"]}, {"ref": "x"}]


def test_cast_dtype_encoding():
    r = fx("cast")
    assert [n["kwargs"] for n in r["ir"]["nodes"] if n["op"] == "to"] == [
        {"dtype": {"dtype": "float64"}}, {"dtype": {"dtype": "float32"}}, {"dtype": {"dtype": "int64"}}]
    assert r["ir"]["outputs"][1]["dtype"] == "int64"


def test_dropout_and_contiguous_vanish():
    assert ops_of(fx("identities")) == ["mul", "transpose"]
