"""Whole blocks as found in model repositories trace and verify."""
import math
import os

from conftest import FIXTURES, ops_of, trace

MODELS = os.path.join(FIXTURES, "models")


def test_gpt_block():
    r = trace(os.path.join(MODELS, "gpt_block.py"))
    assert ops_of(r) == (
        "layer_norm linear split getitem getitem getitem reshape transpose reshape transpose reshape "
        "transpose transpose matmul mul slice slice eq masked_fill softmax matmul transpose reshape linear "
        "add linear mul pow mul add mul tanh add mul linear add linear relu linear relu mean").split()
    # the reduction must keep seq_len < max_seqlen, or the mask slices vanish
    assert r["verify"]["mode"] == "reduced"
    assert r["verify"]["sizes"]["seq_len"] < r["verify"]["sizes"]["max_seqlen"]
    scale = r["ir"]["nodes"][14]
    assert scale["op"] == "mul" and scale["args"][1] == 1.0 / math.sqrt(32)   # folded 1/sqrt(k.size(-1))


def test_resnet_block_functionalizes_inplace_ops():
    r = trace(os.path.join(MODELS, "resnet_block.py"), verify="full")
    assert ops_of(r) == ("conv2d batch_norm relu max_pool2d conv2d batch_norm relu conv2d batch_norm conv2d "
                         "batch_norm add relu adaptive_avg_pool2d flatten linear log_softmax").split()
    assert r["ir"]["outputs"][0]["shape"] == [4, 10]
