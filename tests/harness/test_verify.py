"""Verification: catches a graph that differs, reduced-size mode, fallbacks."""
import copy
import os

import pytest
import torch.nn.functional as F

from conftest import FIXTURES, trace

from kbh import ops, problem, verify
from kbh.protocol import HarnessError
from kbh.trace import trace_problem

GELU = os.path.join(FIXTURES, "ops", "gelu.py")


def _loaded(path, seed=0):
    p = problem.load(path)
    m = problem.instantiate(p, seed)
    return p, m, trace_problem(p, m, problem.make_inputs(p, seed))


def test_check_passes_on_the_traced_graph():
    p, m, ir = _loaded(GELU)
    report = verify.check(ir, p, m, 0)
    assert [o["max_abs_err"] for o in report] == [0.0] * 4


def test_check_catches_a_changed_kwarg():
    p, m, ir = _loaded(GELU)
    bad = copy.deepcopy(ir)
    bad["nodes"][0]["kwargs"]["approximate"] = "tanh"
    with pytest.raises(HarnessError) as ei:
        verify.check(bad, p, m, 0)
    assert ei.value.stage == "verify"
    assert "output 0 differs from the module: max abs error" in ei.value.message


def test_check_catches_a_wrong_implementation(monkeypatch):
    p, m, ir = _loaded(os.path.join(FIXTURES, "ops", "relu.py"))
    monkeypatch.setitem(ops.IMPLS, "relu", lambda x: x.clamp(min=0.01))
    with pytest.raises(HarnessError) as ei:
        verify.check(ir, p, m, 0)
    assert ei.value.stage == "verify" and "max abs error" in ei.value.message


def test_check_catches_wrong_integer_outputs():
    p, m, ir = _loaded(os.path.join(FIXTURES, "ops", "argmax_argmin.py"))
    bad = copy.deepcopy(ir)
    bad["nodes"][0]["op"] = "argmin"
    with pytest.raises(HarnessError) as ei:
        verify.check(bad, p, m, 0)
    assert "differs from the module in" in ei.value.message


def test_verification_uses_fresh_inputs():
    assert verify.verify_seed(0) != 0 and verify.verify_seed(5) != 5


def test_trace_verb_reports_verify_failure(monkeypatch):
    # a canonicalization bug: gelu's binder drops the approximation
    real = ops.FN_BINDERS[id(F.gelu)]
    monkeypatch.setitem(ops.FN_BINDERS, id(F.gelu),
                        (real[0], lambda b, input, approximate="none": b.out("gelu", [input],
                                                                              {"approximate": "none"}),
                         False))
    with pytest.raises(HarnessError) as ei:
        trace(GELU, verify="full")
    assert ei.value.stage == "verify" and "output 1 differs" in ei.value.message


SCALED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, groups):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.gn = nn.GroupNorm(groups, features)

    def forward(self, x):
        return self.gn(self.fc(x)).relu()


batch = 2048
features = 1024
groups = 16


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, groups]
'''


def test_auto_reduces_large_problems(write_problem):
    r = trace(write_problem(SCALED))
    v = r["verify"]
    assert v["mode"] == "reduced"
    assert v["sizes"] == {"batch": 32, "features": 32}
    assert r["ir"]["inputs"][0]["shape"] == [2048, 1024]


def test_reduced_retries_when_a_shrink_breaks_init(write_problem):
    # groups=48 does not divide 32: the first reduction fails, the next works
    src = SCALED.replace("features = 1024", "features = 3072").replace("groups = 16", "groups = 48")
    r = trace(write_problem(src), verify="reduced")
    v = r["verify"]
    assert v["mode"] == "reduced" and v["sizes"]["features"] in (48, 192)
    assert any("sizes" in n for n in v["notes"])


def test_shape_dependent_control_flow_falls_back_to_full(write_problem):
    path = write_problem('''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                if x.shape[-1] > 64:
                    return x.relu()
                return x.sigmoid()

        features = 128

        def get_inputs():
            return [torch.randn(4, features)]

        def get_init_inputs():
            return []
    ''')
    r = trace(path, verify="reduced")
    assert [n["op"] for n in r["ir"]["nodes"]] == ["relu"]
    assert r["verify"]["mode"] == "full"
    assert any("op sequence differs" in n for n in r["verify"]["notes"])


def test_small_problems_verify_at_full_size():
    assert trace(GELU)["verify"]["mode"] == "full"


def test_verify_none_skips():
    assert trace(GELU, verify="none")["verify"]["mode"] == "none"
