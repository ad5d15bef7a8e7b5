"""The stdin/stdout contract of harness.py, through a real subprocess."""
import json
import os

from conftest import FIXTURES, run_harness

RELU = os.path.join(FIXTURES, "ops", "relu.py")


def test_trace_reply_shape():
    reply, _ = run_harness({"verb": "trace", "problem": RELU})
    assert reply["ok"] is True
    ir = reply["ir"]
    assert ir["ir_version"] == 1
    assert ir["problem"] == RELU and ir["class"] == "Model"
    assert len(ir["source_sha256"]) == 64
    assert ir["inputs"][0] == {"name": "x", "role": "input", "shape": [4, 8], "dtype": "float32"}
    assert [n["op"] for n in ir["nodes"]] == ["relu"] * 4
    assert reply["verify"]["mode"] in ("full", "reduced")


def test_relative_problem_path_is_made_absolute():
    rel = os.path.relpath(RELU)
    reply, _ = run_harness({"verb": "trace", "problem": rel, "verify": "none"})
    assert reply["ir"]["problem"] == os.path.abspath(rel)


def _error(raw=None, **req):
    reply, p = run_harness(req, raw=raw)
    assert reply["ok"] is False, reply
    return reply["error"]


def test_empty_request():
    e = _error(raw="")
    assert e["stage"] == "request" and "empty" in e["message"]


def test_invalid_json():
    e = _error(raw="{not json")
    assert e["stage"] == "request" and "not valid JSON" in e["message"]


def test_request_not_an_object():
    e = _error(raw="[1, 2]")
    assert e["stage"] == "request" and "JSON object" in e["message"]


def test_unknown_verb():
    e = _error(verb="frobnicate", problem=RELU)
    assert e["stage"] == "request" and "unknown verb 'frobnicate'" in e["message"] and "trace" in e["message"]


def test_missing_verb():
    e = _error(problem=RELU)
    assert e["stage"] == "request" and "verb" in e["message"]


def test_missing_problem():
    e = _error(verb="trace")
    assert e["stage"] == "request" and "'problem'" in e["message"]


def test_unknown_field():
    e = _error(verb="trace", problem=RELU, sead=1)
    assert e["stage"] == "request" and "'sead'" in e["message"]


def test_bad_field_types():
    e = _error(verb="trace", problem=RELU, seed="1")
    assert e["stage"] == "request" and "'seed'" in e["message"]
    e = _error(verb="trace", problem=RELU, seed=True)
    assert e["stage"] == "request" and "boolean" in e["message"]
    e = _error(verb="trace", problem=RELU, verify="sometimes")
    assert e["stage"] == "request" and "auto" in e["message"]


def test_missing_file():
    e = _error(verb="trace", problem="/nonexistent/kernelbot/problem.py")
    assert e["stage"] == "load" and "not found" in e["message"]


NOISY = '''
import os
import sys
import torch
import torch.nn as nn

print("import-time print")
os.write(1, b"raw fd 1 write\\n")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        print("init print")

    def forward(self, x):
        print("forward print")
        sys.stdout.write("stdout write\\n")
        return x * 2


def get_inputs():
    print("inputs print")
    return [torch.randn(3, 3)]


def get_init_inputs():
    return []
'''


def test_user_output_never_reaches_stdout(write_problem):
    path = write_problem(NOISY)
    reply, p = run_harness({"verb": "trace", "problem": path, "verify": "full"})
    assert reply["ok"] is True
    err = p.stderr.decode()
    for s in ("import-time print", "raw fd 1 write", "init print", "forward print", "inputs print"):
        assert s in err
        assert s not in p.stdout.decode()


def test_error_reply_exits_zero_and_is_one_line():
    reply, p = run_harness({"verb": "trace", "problem": os.path.join(FIXTURES, "bad", "syntax_error.py")})
    assert p.returncode == 0 and reply["ok"] is False
    assert json.loads(p.stdout.decode()) == reply


def test_reply_has_no_bare_nonfinite_numbers():
    reply, p = run_harness({"verb": "trace", "problem": os.path.join(FIXTURES, "ops", "masked_fill.py")})
    assert reply["ok"] is True
    assert b"Infinity" not in p.stdout and b"NaN" not in p.stdout
    mf = next(n for n in reply["ir"]["nodes"] if n["op"] == "masked_fill")
    assert mf["kwargs"]["value"] == {"float": "-inf"}
