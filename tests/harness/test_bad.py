"""Broken problems give ok:false with the right stage and a specific message."""
import os

import pytest

from conftest import FIXTURES, run_harness, trace_error

BAD = os.path.join(FIXTURES, "bad")

CASES = [
    # fixture, stage, substrings the message must contain
    ("syntax_error", "load", ["syntax error", "syntax_error.py:9", "if x is None"]),
    ("missing_get_inputs", "load", ["function 'get_inputs' not found"]),
    ("missing_model", "load", ["class 'Model' not found", "Net"]),
    ("import_error", "load", ["ModuleNotFoundError", "kernelbot_no_such_module", "import_error.py:5"]),
    ("init_raises", "init", ["Model(*get_init_inputs())", "ValueError", "features must be even",
                             "init_raises.py:9"]),
    ("inputs_not_list", "inputs", ["get_inputs() must return a list or tuple", "Tensor"]),
    ("inputs_arity", "inputs", ["forward() requires argument 'y'"]),
    ("data_dependent", "trace", ["data-dependent control flow", "TraceError", "data_dependent.py:8",
                                 "if x.sum() > 0:"]),
    ("item", "trace", [".item()", "data-dependent", "item.py:8"]),
    ("unsupported_op", "trace", ["torch.sort", "unsupported operation", "unsupported_op.py:8"]),
    ("random_in_forward", "trace", ["torch.randn", "random tensor inside forward",
                                    "random_in_forward.py:8"]),
    ("shape_error", "shape", ["matmul", "cannot be multiplied", "shape_error.py:8"]),
]


@pytest.mark.parametrize("name,stage,needles", CASES, ids=[c[0] for c in CASES])
def test_bad_fixture(name, stage, needles):
    err = trace_error(os.path.join(BAD, name + ".py"))
    assert err.stage == stage, err.message
    for n in needles:
        assert n in err.message, "%r not in %r" % (n, err.message)


def test_every_bad_fixture_is_covered():
    names = {f[:-3] for f in os.listdir(BAD) if f.endswith(".py")}
    assert names == {c[0] for c in CASES}


def test_bad_fixture_through_subprocess():
    reply, _ = run_harness({"verb": "trace", "problem": os.path.join(BAD, "data_dependent.py")})
    assert reply == {"ok": False, "error": {"stage": "trace", "message": reply["error"]["message"]}}
    assert "if x.sum() > 0:" in reply["error"]["message"]


def test_custom_names_for_class_and_functions(write_problem):
    path = write_problem('''
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x.relu()

        def make_inputs():
            return [torch.randn(2, 3)]

        def make_args():
            return []
    ''')
    from conftest import trace
    r = trace(path, **{"class": "Net", "init": "make_args", "inputs": "make_inputs"})
    assert r["ir"]["class"] == "Net" and [n["op"] for n in r["ir"]["nodes"]] == ["relu"]
    err = trace_error(path, **{"class": "Net", "init": "make_args"})
    assert err.stage == "load" and "'get_inputs' not found" in err.message


def test_not_a_module(write_problem):
    path = write_problem('''
        class Model:
            pass

        def get_inputs():
            return []

        def get_init_inputs():
            return []
    ''')
    err = trace_error(path)
    assert err.stage == "load" and "not a torch.nn.Module subclass" in err.message


def test_get_inputs_raises(write_problem):
    path = write_problem('''
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x

        def get_inputs():
            return [undefined_name]

        def get_init_inputs():
            return []
    ''')
    err = trace_error(path)
    assert err.stage == "inputs" and "get_inputs() raised: NameError" in err.message
