"""The judge's side of the reference process (kbh/judge_ref.py): its files
are read as data (no link followed, no FIFO waited on, exact sizes,
checked specs), and the process itself, unsandboxed here, loads a problem
the judge never imports and answers the perturbed-reference requests."""
import os
import sys
import types

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_io as jio  # noqa: E402
from kbh import judge_ref as jref  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def _specs(ts):
    return [{"dtype": jio.dtype_name(t), "shape": list(t.shape)} for t in ts]


def test_round_trip_of_mixed_dtypes(tmp_path):
    ts = [torch.tensor([True, False, True]), torch.randn(3, 5), torch.arange(7, dtype=torch.int64),
          torch.empty(0, 4), torch.randn(2).half()]
    jio.write_set(str(tmp_path / "a.bin"), [("t%d" % i, t) for i, t in enumerate(ts)])
    got = jref.read_tensors(str(tmp_path), "a.bin", _specs(ts), torch.device("cpu"), 1 << 20)
    for a, b in zip(got, ts):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def test_a_link_a_fifo_and_wrong_sizes_are_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"\0" * 16)
    d = tmp_path / "ref"
    d.mkdir()
    os.symlink(str(secret), str(d / "link.bin"))
    os.mkfifo(str(d / "fifo.bin"))
    (d / "short.bin").write_bytes(b"\0" * 12)
    spec = [{"dtype": "float32", "shape": [4]}]
    for name, why in (("link.bin", "link.bin"), ("fifo.bin", "not a regular file"),
                      ("short.bin", "holds 12 bytes, expected 16"), ("none.bin", "none.bin"),
                      ("../secret", "bad file name")):
        with pytest.raises(ValueError, match=why):
            jref.read_tensors(str(d), name, spec, torch.device("cpu"), 1 << 20)


def test_bad_specs_are_refused():
    for specs, why in (([{"dtype": "object", "shape": [1]}], "bad dtype"),
                       ([{"dtype": "float32", "shape": [-1]}], "bad shape"),
                       ([{"dtype": "float32", "shape": [1.5]}], "bad shape"),
                       ([{"dtype": "float32", "shape": [1] * 17}], "bad shape"),
                       ([{"dtype": "float32", "shape": [1 << 20]}], "more than"),
                       ({"dtype": "float32"}, "malformed")):
        with pytest.raises(ValueError, match=why):
            jref.check_specs(specs, 1 << 20, "x.bin")
    got, n = jref.check_specs([{"dtype": "int8", "shape": [3], "offset": 999},
                               {"dtype": "float32", "shape": [2]}], 1 << 20, "x.bin")
    assert n == 11 and [g["offset"] for g in got] == [0, 3]	# offsets are the judge's


def _ctx(tmp_path, problem, **kw):
    ctx = types.SimpleNamespace(
        workdir=str(tmp_path), problem_path=os.path.abspath(problem), sandbox=False,
        backend="cpu", device=torch.device("cpu"), timeout_s=60.0, build_timeout_s=60.0,
        mem_bytes=1 << 30, worker_env={}, kernelbot=None, breakdown={}, module_path=[],
        harness_py=os.path.join(os.path.dirname(jref.__file__), "..", "harness.py"),
        req={"seed": 7})
    ctx.__dict__.update(kw)
    return ctx


def _seed(seed, t):
    return seed + 1 + t


def test_the_reference_process_loads_and_recomputes(tmp_path):
    ctx = _ctx(tmp_path, os.path.join(FIX, "eval", "scale_bias.py"))
    before = set(sys.modules)
    ref = jref.RefProc(ctx, 600)
    try:
        ref.load(7, 2, _seed)
        # Two trials of the main inputs and two declared variants.
        assert [n for n, _ in ctx.state] == ["weight", "bias"] and len(ctx.sets) == 6
        assert [(s["trial"], s["variant"]) for s in ctx.sets] == [(t, v) for t in (0, 1) for v in (0, 1, 2)]
        assert [s["args"][0].shape[0] for s in ctx.sets[:3]] == [64, 7, 129]
        x = ctx.sets[0]["args"][0]
        w, b = (t for _, t in ctx.state)
        assert torch.allclose(ctx.sets[0]["expected"][0], torch.tanh(x) * w + b, atol=1e-6)
        assert not torch.equal(ctx.sets[0]["args"][0], ctx.sets[3]["args"][0])
        # Changes on a pristine copy, then a sample of the outputs.
        v = torch.tensor([3.5, -2.0]).numpy().tobytes().hex()
        pos = torch.tensor([5, 9], dtype=torch.int64).numpy().tobytes().hex()
        out = ref.reference(0, [[0, pos, v]])[0]
        x2 = x.clone()
        x2.view(-1)[5], x2.view(-1)[9] = 3.5, -2.0
        assert torch.allclose(out, torch.tanh(x2) * w + b, atol=1e-6)
        m, n = 10, x.numel()
        smp = ref.reference(0, [], [3, 7, m])[0]
        idx = [(3 % n + j * (7 % n)) % n for j in range(m)]
        assert torch.equal(smp, ctx.sets[0]["expected"][0].reshape(-1)[idx])
        ev = ref.time("eager", [0, 3, 0])
        assert len(ev) == 3 and all(e >= 0 and h >= 0 for e, h in ev)
        # A change past the input's end: refused (the judge's bug, not the
        # problem's; the process does not answer again).
        far = torch.tensor([n], dtype=torch.int64).numpy().tobytes().hex()
        with pytest.raises(jref.RefError, match="a change outside input 0"):
            ref.reference(0, [[0, far, v[:8]]])
    finally:
        ref.close()
    # The judge's interpreter never imported the problem.
    assert not [m for m in set(sys.modules) - before if "scale_bias" in m or m.startswith("kbh_eval")]


def test_a_hanging_import_is_a_load_error_naming_the_stage(tmp_path):
    ctx = _ctx(tmp_path, os.path.join(FIX, "untrusted", "hang_import.py"), timeout_s=3.0)
    ref = jref.RefProc(ctx, 600)
    try:
        with pytest.raises(jref.RefError, match="did not finish importing within 3 s") as e:
            ref.load(7, 1, _seed)
        assert e.value.stage == "load"
        assert ref.w.proc.poll() is not None	# killed
    finally:
        ref.close()
