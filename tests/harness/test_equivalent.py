"""The equivalent verb: a stage-1 rewrite must compute what the original does."""
import os
import textwrap

from conftest import FIXTURES, run_harness

S1 = os.path.join(FIXTURES, "stage1")
LOOP = os.path.join(S1, "loop.py")


def _eq(rewrite, problem=LOOP, **kw):
    req = {"verb": "equivalent", "problem": problem, "rewrite": rewrite}
    req.update(kw)
    reply, _ = run_harness(req)
    return reply


def test_the_good_rewrite_is_equivalent_on_every_seed():
    r = _eq(os.path.join(S1, "rewrite_good.py"), seeds=4)
    assert r["ok"] and r["equivalent"]
    assert [c["case"] for c in r["cases"]] == ["seed 1", "seed 2", "seed 3", "seed 4"]


def test_a_changed_constant_is_caught():
    r = _eq(os.path.join(S1, "rewrite_wrong.py"))
    assert not r["ok"]
    assert r["error"]["stage"] == "verify"
    assert "seed 1: output 0 differs from the original: max abs error 0.5" in r["error"]["message"]


def test_renamed_parameters_are_refused(tmp_path):
    src = open(os.path.join(S1, "rewrite_good.py")).read().replace("self.weight", "self.w")
    p = tmp_path / "renamed.py"
    p.write_text(src)
    r = _eq(str(p))
    assert not r["ok"]
    assert "parameters and buffers differ" in r["error"]["message"]


def test_every_input_variant_is_checked(tmp_path):
    # the rewrite hard-codes the row count: right at get_inputs(), wrong at a variant
    orig = tmp_path / "orig.py"
    orig.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return x.sum(0)
        def get_inputs():
            return [torch.randn(8, 4)]
        def get_input_variants():
            return [[torch.randn(3, 4)]]
        def get_init_inputs():
            return []
    """))
    rw = tmp_path / "rw.py"
    rw.write_text(orig.read_text().replace("return x.sum(0)", "return x[:8].sum(0) if x.shape[0] == 8 "
                                           "else x[:2].sum(0)"))
    r = _eq(str(rw), problem=str(orig))
    assert not r["ok"]
    assert r["error"]["message"].startswith("input variant 1: output 0 differs")


def test_a_bad_seed_count_is_a_request_error():
    r = _eq(os.path.join(S1, "rewrite_good.py"), seeds=0)
    assert not r["ok"] and r["error"]["stage"] == "request"
