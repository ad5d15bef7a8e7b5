"""The judge's pure parts: comparison, degenerate problems, statistics,
tensor files, the problem loader."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_compare as cmp  # noqa: E402
from kbh import judge_io as jio  # noqa: E402
from kbh import judge_problem as jp  # noqa: E402
from kbh import judge_stats as stats  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "eval")


def test_compare_within_fp32_tolerance():
    ref = torch.randn(8, 8)
    bad, rel = cmp.compare("out0", ref + 1e-6, ref)
    assert bad is None and rel < 1e-5


def test_compare_reports_worst_element():
    ref = torch.zeros(4, 5)
    out = ref.clone()
    out[2, 3] = 0.5
    bad, rel = cmp.compare("out0", out, ref)
    assert "1 of 20" in bad and "[2, 3]" in bad and "max abs error 0.5" in bad


def test_compare_nan_disagreement_fails():
    ref = torch.ones(3)
    out = ref.clone()
    out[1] = float("nan")
    bad, _ = cmp.compare("out0", out, ref)
    assert bad and "NaN" in bad


def test_compare_matching_nan_and_inf_pass():
    ref = torch.tensor([float("nan"), float("inf"), 1.0])
    assert cmp.compare("out0", ref.clone(), ref)[0] is None


def test_compare_shape_and_dtype():
    assert "shape" in cmp.compare("o", torch.zeros(2, 3), torch.zeros(3, 2))[0]
    assert "dtype" in cmp.compare("o", torch.zeros(2, dtype=torch.float64), torch.zeros(2))[0]


def test_half_tolerance_is_looser():
    ref = torch.ones(4, dtype=torch.float16)
    assert cmp.compare("o", ref + 0.005, ref)[0] is None
    assert cmp.compare("o", ref.float() + 0.005, ref.float())[0] is not None


def test_integer_outputs_compare_exactly():
    ref = torch.arange(6)
    out = ref.clone()
    out[4] = 0
    assert "1 of 6 elements differ" in cmp.compare("o", out, ref)[0]


def test_degenerate():
    a = torch.randn(100)
    assert cmp.degenerate([a], [torch.randn(100)]) is None
    assert "identical" in cmp.degenerate([a], [a.clone()])
    assert "near-constant" in cmp.degenerate([torch.full((50,), 3.0)], [torch.full((50,), 4.0)])


def test_speedup_interval_brackets_point():
    base = [[2.0 + 0.01 * i for i in range(10)] for _ in range(10)]
    cand = [[1.0 + 0.01 * ((i * 7) % 5) for i in range(10)] for _ in range(10)]
    point, ci = stats.speedup(base, cand, 7)
    assert 1.8 < point < 2.1 and ci[0] <= point <= ci[1]


def test_slowdown_of_a_hopeless_candidate():
    assert stats.slowdown([], []) is None
    assert stats.slowdown([[1.0]], [[]]) is None
    base = [[0.2, 0.2], [0.2, 0.2]]
    assert stats.slowdown(base, [[800.0, 780.0], [790.0, 800.0]]) > 1000
    assert abs(stats.slowdown(base, [[0.1, 0.1], [0.1, 0.1]]) - 0.5) < 1e-9
    # only rounds both sides have count
    assert abs(stats.slowdown(base, [[0.4, 0.4]]) - 2.0) < 1e-9


def test_speedup_resists_one_disturbed_round():
    base = [[1.0] * 5, [1.0] * 5]
    cand = [[0.5] * 5, [50.0, 0.5, 0.5, 0.5, 0.5]]
    assert stats.speedup(base, cand, 1)[0] == pytest.approx(2.0)


def test_summary_and_empty():
    s = stats.summary([3.0, 1.0, 2.0])
    assert s["median"] == 2.0 and s["runs"] == 3
    assert stats.summary([]) is None
    assert stats.speedup([], [], 1) == (None, None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.bool, torch.uint8])
def test_tensor_files_round_trip(tmp_path, dtype):
    t = (torch.randn(3, 5) * 4).to(dtype)
    entries = jio.write_set(str(tmp_path / "s.bin"), [("x", t)])
    assert entries[0]["nbytes"] == t.numel() * t.element_size()
    spec = {"dtype": jio.dtype_name(t), "shape": [3, 5], "nbytes": entries[0]["nbytes"]}
    assert torch.equal(jio.read_output(str(tmp_path / "s.bin"), spec, str(tmp_path)), t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.bool, torch.uint8])
def test_staged_files_round_trip(tmp_path, dtype):
    # The CUDA path's reused (pinned) buffer, here unpinned on the CPU: the
    # same bytes as the plain path, and every tensor read is its own.
    st = jio.Staging(torch.device("cpu"), pin=False)
    t = (torch.randn(3, 5) * 4).to(dtype)
    u = (torch.randn(7) * 4).to(dtype)
    entries = jio.write_set(str(tmp_path / "s.bin"), [("x", t), ("y", u)], st)
    jio.write_set(str(tmp_path / "plain.bin"), [("x", t), ("y", u)])
    assert (tmp_path / "s.bin").read_bytes() == (tmp_path / "plain.bin").read_bytes()
    assert entries[1]["offset"] == entries[0]["nbytes"]
    jio.write_set(str(tmp_path / "t.bin"), [("x", t)], st)
    spec = {"dtype": jio.dtype_name(t), "shape": [3, 5], "nbytes": entries[0]["nbytes"]}
    a = jio.read_output(str(tmp_path / "t.bin"), spec, str(tmp_path), st)
    jio.write_set(str(tmp_path / "t2.bin"), [("x", torch.zeros_like(t))], st)
    b = jio.read_output(str(tmp_path / "t2.bin"), spec, str(tmp_path), st)
    assert torch.equal(a, t) and not torch.equal(a, b) and a.dtype == dtype


def test_read_output_refuses_wrong_size_and_foreign_paths(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"\0" * 12)
    spec = {"dtype": "float32", "shape": [4], "nbytes": 16}
    with pytest.raises(ValueError, match="holds 12 bytes"):
        jio.read_output(str(tmp_path / "a.bin"), spec, str(tmp_path))
    other = tmp_path / "sub"
    other.mkdir()
    with pytest.raises(ValueError, match="outside"):
        jio.read_output(str(tmp_path / "a.bin"), dict(spec, nbytes=12, shape=[3]), str(other))


def test_problem_loader_and_abi_order():
    p = jp.Problem(os.path.join(FIX, "scale_bias.py"))
    m = p.build(1, torch.device("cpu"))
    assert [n for n, _ in jp.state_tensors(m)] == ["weight", "bias"]
    sets = p.draw(5, torch.device("cpu"))
    assert [s[0].shape[0] for s in sets] == [64, 7, 129]
    again = p.draw(5, torch.device("cpu"))
    assert torch.equal(sets[0][0], again[0][0])
    assert not torch.equal(sets[0][0], p.draw(6, torch.device("cpu"))[0][0])


def test_problem_loader_errors(tmp_path):
    with pytest.raises(jp.ProblemError, match="no such file"):
        jp.Problem(str(tmp_path / "missing.py"))
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n"
                   "def get_init_inputs():\n    return []\n"
                   "def get_inputs():\n    return ['relu']\n")
    p = jp.Problem(str(bad))
    # A Python number is baked in (tests/harness/test_judge_scalars.py); a string is not.
    with pytest.raises(jp.ProblemError, match=r"get_inputs\(\)\[0\] is a str"):
        p.draw(1, torch.device("cpu"))


class _FakeWorker:
    """Answers "dump" the way the native worker does (gpu/worker.c): the
    whole outputs, or elements (a + j*b) mod n of each, from `outs`, and
    with "inputs" its inputs likewise. Given a model instead of outs, it
    applies a "time" request's perturbations to its copy of set 0 and
    dumps model(inputs), or with stale=True the outputs of the inputs as
    they were first (a kernel replaying what it kept)."""

    def __init__(self, scratch, outs, args=None, model=None, stale=False):
        self.scratch, self.outs, self.reqs = scratch, outs, []
        self.args = [a.clone() for a in args or []]
        self.model, self.first, self.stale = model, outs, stale
        if model is not None:
            self.first = [model(*self.args)]

    def _pick(self, t, req):
        flat = t.reshape(-1)
        if "sample" in req:
            a, b, m = req["sample"]
            n = flat.numel()
            if m < n:
                flat = flat[[(a % n + j * (b % n)) % n for j in range(m)]]
        return flat

    def _write(self, ts, req, tag):
        files = []
        for i, t in enumerate(ts):
            path = os.path.join(self.scratch, "smp_%s%d.bin" % (tag, i))
            jio.write_set(path, [("o", self._pick(t, req))])
            files.append(path)
        return files

    def request(self, req):
        self.reqs.append(req)
        if req["cmd"] == "time":
            for run in req.get("perturb", []):
                for j, e, hx in run:
                    self.args[j].view(-1)[e] = jio.from_bytes(
                        bytes.fromhex(hx), jio.dtype_name(self.args[j]), [1])[0]
            return {"ok": True}
        outs = self.outs
        if self.model is not None:
            outs = self.first if self.stale else [self.model(*self.args)]
        return {"ok": True, "files": self._write(outs, req, "o"), "unwritten": [0] * len(outs),
                "in_files": self._write(self.args[:req.get("inputs", 0)], req, "i")}


def _spot_run(tmp_path, outs, expected, args=(), model=None):
    import types
    from kbh import judge_perturb as jpert
    from kbh import judge_run as jr
    ctx = types.SimpleNamespace(workdir=str(tmp_path), problem_flags=[], atol=None, rtol=None,
                                staging=None, model=model, timing_sets=[0],
                                sets=[{"expected": expected, "specs": jio.out_specs(expected),
                                       "out_bytes": sum(map(jio.nbytes, expected)),
                                       "args": list(args),
                                       "in_specs": [{"name": "x%d" % i, "dtype": jio.dtype_name(a),
                                                     "shape": list(a.shape),
                                                     "nbytes": jio.nbytes(a)}
                                                    for i, a in enumerate(args)]}])


    def reference_outputs(k, changes, sample=None):
        # What the reference process does (kbh/refproc.py): the changes on
        # a pristine copy of the set, forward, the sampled elements.
        a = [t.clone() for t in ctx.sets[k]["args"]]
        for j, hexpos, hexval in changes:
            n = len(hexpos) // 16
            pos = jio.from_bytes(bytes.fromhex(hexpos), "int64", [n])
            a[j].view(-1)[pos] = jio.from_bytes(bytes.fromhex(hexval), jio.dtype_name(a[j]), [n])
        outs = [model(*a)]
        if sample:
            outs = [_FakeWorker._pick(None, o, {"sample": sample}) for o in outs]
        return outs
    ctx.reference_outputs = reference_outputs
    run = jr.CandidateRun(ctx, {"id": 0})
    run.pert = jpert.Perturber(ctx)
    return run, _FakeWorker(run.scratch, outs, args, model)


def _perturbed(tmp_path, stale=False, mutate=False, full=True):
    """A spot check after three timed runs on set 0, each perturbed."""
    x = torch.randn(jr_sample() * 2 + 3)
    model = torch.tanh
    run, w = _spot_run(tmp_path, None, [model(x)], [x], model)
    w.stale = stale
    w.request({"cmd": "time", "sets": [0] * 3, "perturb": run.pert.request([0] * 3)})
    if mutate:
        w.args[0].view(-1)[5] += 1
    run.spot_check(w, 0, 1, full=full)
    return run, w


def jr_sample():
    from kbh import judge_run as jr
    return jr.SPOT_SAMPLE


def test_spot_check_on_perturbed_inputs_honest(tmp_path):
    for full in (True, False):
        run, w = _perturbed(tmp_path, full=full)
        assert w.reqs[-1]["inputs"] == 1 and run.pert.runs == 3
        if full:
            assert run.pert.moved == 1
            continue
        # Sampled: the reference process returns the sampled elements
        # only, so "moved" is judged on them: exactly when a changed
        # position is among the m drawn (about 7 in 8 here).
        a, b, m = w.reqs[-1]["sample"]
        n = jr_sample() * 2 + 3
        drawn = {(a % n + j * (b % n)) % n for j in range(m)}
        changed = run.pert.touched[0][0].nonzero().reshape(-1).tolist()
        hit = any(pos in drawn for pos in changed)
        assert run.pert.moved == int(hit)


def test_spot_check_catches_a_replayed_output(tmp_path):
    from kbh import judge_run as jr
    with pytest.raises(jr.Failed, match="did not match its inputs"):
        _perturbed(tmp_path, stale=True)


def test_spot_check_catches_inputs_changed_in_timing(tmp_path):
    from kbh import judge_run as jr
    with pytest.raises(jr.Failed, match="modified its input x0 during timing"):
        _perturbed(tmp_path, mutate=True)


def test_spot_check_sampled_and_full(tmp_path):
    from kbh import judge_run as jr
    n = jr.SPOT_SAMPLE + 1001           # an output larger than the sample, one smaller
    exp = [torch.randn(n), torch.randn(7)]
    run, w = _spot_run(tmp_path, [e.clone() for e in exp], exp)
    run.spot_check(w, 0, 1, full=False)
    a, b, m = w.reqs[-1]["sample"]
    assert m == jr.SPOT_SAMPLE and __import__("math").gcd(b % n, n) == 1
    run.spot_check(w, 0, 2, full=True)
    assert "sample" not in w.reqs[-1] and run.spot_n == {"full": 1, "sampled": 1, "sealed": 0}


def test_spot_check_sample_catches_skipped_work(tmp_path):
    # A kernel that skips a tenth of the work when timed: a sample of
    # SPOT_SAMPLE elements drawn after the run cannot miss it.
    from kbh import judge_run as jr
    exp = [torch.randn(jr.SPOT_SAMPLE * 4)]
    got = exp[0].clone()
    got[::10] = 0
    run, w = _spot_run(tmp_path, [got], exp)
    with pytest.raises(jr.Failed, match="sampled elements"):
        run.spot_check(w, 0, 1, full=False)
