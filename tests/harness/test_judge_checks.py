"""The judge's check schedule and per-run poison (kbh/judge_checks.py), and
how timing uses them: a request per timed run, each followed by a check
the judge decides on only after the run returned."""
import os
import random
import sys
import types

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_checks as jchk  # noqa: E402
from kbh import judge_io as jio  # noqa: E402


def _with_reference(ctx, model):
    """What the reference process does for a spot check (kbh/refproc.py):
    the judge's changes on a pristine copy of the set, the forward, and
    the sampled elements (a + j*b) mod n of each output of n > m."""
    def reference_outputs(k, changes, sample=None):
        a = [t.clone() for t in ctx.sets[k]["args"]]
        for j, hexpos, hexval in changes:
            n = len(hexpos) // 16
            pos = jio.from_bytes(bytes.fromhex(hexpos), "int64", [n])
            a[j].view(-1)[pos] = jio.from_bytes(bytes.fromhex(hexval), jio.dtype_name(a[j]), [n])
        outs = [model(*a)]
        if sample:
            sa, sb, m = sample
            picked = []
            for o in outs:
                n = o.numel()
                if n > m:
                    idx = (sa % n + torch.arange(m, dtype=torch.int64) * (sb % n)) % n
                    picked.append(o.reshape(-1)[idx])
                else:
                    picked.append(o)
            outs = picked
        return outs
    ctx.reference_outputs = reference_outputs
    return ctx


def test_every_set_checked_at_about_p():
    s = jchk.Schedule()
    assert s.p == jchk.CHECK_FRACTION == 0.8
    for i in range(3000):
        s.decide(i % 3)
    info = s.info()
    assert info["runs"] == 3000 and set(info["by_set"]) == {"0", "1", "2"}
    assert all(c > 0 for c, n in info["by_set"].values())
    # 3000 draws at p = 0.8: the share's standard deviation is 0.0073;
    # 0.03 is four of them (a chance failure of about 6e-5).
    assert abs(info["checked"] / 3000 - 0.8) < 0.03
    for c, n in info["by_set"].values():
        assert abs(c / n - 0.8) < 0.06


def test_decisions_not_derivable_from_a_seed():
    # The evaluation seed is in the manifest the worker reads: seeding
    # Python's RNG with it (or anything) must not reproduce the schedule.
    runs = []
    for _ in range(2):
        random.seed(1234)
        torch.manual_seed(1234)
        s = jchk.Schedule()
        runs.append([s.decide(0) for _ in range(256)])
    assert isinstance(jchk.Schedule().rng, random.SystemRandom)
    # Two equal sequences of 256 draws at p = 0.8: about 2^-180.
    assert runs[0] != runs[1]


def test_escape_bound_at_the_defaults():
    s = jchk.Schedule(0.8)
    for i in range(100):
        s.decide(i % 3)
    assert s.escape(0.05) == pytest.approx(0.2 ** 5) and s.escape(0.05) <= 1e-3
    assert s.escape(0.5) == pytest.approx(0.2 ** 50)
    assert "escapes with probability f = 0.05: 0.00032" in s.summary()


def test_fraction_bounds():
    never, always = jchk.Schedule(0), jchk.Schedule(1)
    assert not any(never.decide(0) for _ in range(100))
    assert all(always.decide(0) for _ in range(100))
    assert jchk.Schedule(3).p == 1.0 and jchk.Schedule(-1).p == 0.0


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_float_poison_is_a_random_non_canonical_nan(dtype):
    rng = random.SystemRandom()
    seen = set()
    for _ in range(500):
        hx = jchk.poison_value(dtype, rng).hex()
        seen.add(hx)
        t = jio.from_bytes(bytes.fromhex(hx), dtype, [1])
        assert torch.isnan(t.to(torch.float32) if dtype != "float64" else t).all()
        bits = int.from_bytes(bytes.fromhex(hx), "little")
        canon = {"float32": 0x7FC00000, "float16": 0x7E00, "bfloat16": 0x7FC0,
                 "float64": 0x7FF8000000000000}[dtype]
        sign = 1 << (8 * len(hx) // 2 - 1)
        assert bits & ~sign != canon
        if dtype == "float64":
            assert hx[:8] == hx[8:]		# the device fills 32-bit words
    # Not one fixed pattern: a kernel cannot recognise the trials' value.
    assert len(seen) > 100 if dtype != "bfloat16" else len(seen) > 50


@pytest.mark.parametrize("dtype,bits", [("int8", 8), ("uint8", 8), ("int16", 16), ("int32", 32),
                                        ("int64", 64)])
def test_integer_poison_is_never_small(dtype, bits):
    rng = random.SystemRandom()
    for _ in range(500):
        b = jchk.poison_value(dtype, rng)
        assert len(b) == bits // 8
        v = int.from_bytes(b, "little", signed=True)
        if bits == 8:
            assert v not in (0, 1, -1, 127, -128, -2) and (dtype != "uint8" or b[0] != 0xFE)
        else:
            assert abs(v) >= 1 << (bits // 2 if bits < 64 else 16)
        if bits == 64:
            assert b[:4] == b[4:]


def test_bool_poison_is_not_a_bool():
    rng = random.SystemRandom()
    assert all(jchk.poison_value("bool", rng)[0] >= 2 for _ in range(500))


def test_a_trials_two_runs_differ():
    specs = [{"dtype": d} for d in ("bool", "int8", "float16", "float32")]
    rng = random.SystemRandom()
    for _ in range(200):
        a = jchk.draw_poison(specs, rng)
        b = jchk.draw_poison(specs, rng, a)
        assert len(a) == len(b) == 4 and all(x != y for x, y in zip(a, b))


class _Worker:
    """Answers time and dump requests with right outputs, holding each
    set's inputs as the judge perturbs them; records the requests."""

    def __init__(self, scratch, model, args):
        self.scratch, self.model = scratch, model
        self.args = {k: [t.clone() for t in a] for k, a in args.items()}
        self.reqs, self.walls, self.marks = [], [], []

    def request(self, req, timeout=None):
        self.reqs.append(req)
        self.walls.append(0.0)
        if req["cmd"] == "prepare":
            return {"ok": True, "overhead_ms": 0.0}
        if req["cmd"] == "time":
            for k, run in zip(req["sets"], req["perturb"]):
                for j, pos, vals in run:
                    # Packed, as the judge sends them: int64 positions, values.
                    a = self.args[k][j]
                    p = jio.from_bytes(bytes.fromhex(pos), "int64", [len(pos) // 16])
                    a.view(-1)[p] = jio.from_bytes(bytes.fromhex(vals), jio.dtype_name(a),
                                                   [len(pos) // 16])
            n = len(req["sets"])
            return {"ok": True, "rc": 0, "ev_ms": [0.1] * n, "host_ms": [0.1] * n,
                    "overhead_ms": 0.0}
        args = self.args[req["set"]]
        out = self.model(*args).reshape(-1)
        if "sample" in req:
            a, b, m = req["sample"]
            n = out.numel()
            if m < n:
                out = out[[(a % n + j * (b % n)) % n for j in range(m)]]
        path = os.path.join(self.scratch, "o.bin")
        jio.write_set(path, [("o", out)])
        files = []
        for j, t in enumerate(args[:req.get("inputs", 0)]):
            files.append(os.path.join(self.scratch, "i%d.bin" % j))
            jio.write_set(files[-1], [("i", t.reshape(-1))])
        return {"ok": True, "files": [path], "unwritten": [0], "in_files": files}


def test_timed_round_checks_runs_of_every_set(tmp_path):
    from kbh import judge_perturb as jpert
    from kbh import judge_run as jr
    model = torch.tanh
    sets = []
    for _ in range(3):
        x = torch.randn(64)
        sets.append({"expected": [model(x)], "specs": jio.out_specs([model(x)]), "args": [x],
                     "out_bytes": 256,
                     "in_specs": [{"name": "x", "dtype": "float32", "shape": [64], "nbytes": 256}]})
    ctx = types.SimpleNamespace(workdir=str(tmp_path), problem_flags=[], atol=None, rtol=None,
                                staging=None, model=model, timing_sets=[0, 1, 2], sets=sets,
                                backend="cpu", timeout_s=10.0, overhead_ref_ms=lambda s, shared=False: 0.0,
                                echo_ms=lambda: 0.05, snapshot_ref_ms=lambda k, shared=False: 0.0,
                                refresh_ref_ms=lambda sizes, masked=(): 0.0)
    _with_reference(ctx, model)
    run = jr.CandidateRun(ctx, {"id": 0})
    run.pert, run.rtt = jpert.Perturber(ctx), 0.0
    run.sched = jchk.Schedule(0.8)
    w = _Worker(run.scratch, model, {k: s["args"] for k, s in enumerate(sets)})
    for r in range(10):
        assert len(run.timed_round(w, [(r + i) % 3 for i in range(10)], r, [], [])) == 10
    times = [q for q in w.reqs if q["cmd"] == "time"]
    preps = [q for q in w.reqs if q["cmd"] == "prepare"]
    # One timed run per request, prepared by the request before it with
    # its own poison; a dump only ever right after the time request of
    # its set (decided after it).
    assert len(times) == 100 and all(len(q["sets"]) == 1 and q["prepared"] is True for q in times)
    assert all(w.reqs[i - 1]["cmd"] == "prepare" and w.reqs[i - 1]["set"] == q["sets"][0]
               for i, q in enumerate(w.reqs) if q["cmd"] == "time")
    assert len(preps) == 100 and all(len(q["poison"]) == 1 for q in preps)
    assert len({q["poison"][0][0] for q in preps}) > 90
    for i, q in enumerate(w.reqs):
        if q["cmd"] == "dump":
            assert w.reqs[i - 1]["cmd"] == "time" and w.reqs[i - 1]["sets"] == [q["set"]]
            assert q["inputs"] == 1		# perturbed: the inputs are compared too
    info = run.sched.info()
    assert info["runs"] == 100 and 50 < info["checked"] < 100
    assert all(c > 0 for c, n in info["by_set"].values()) and len(info["by_set"]) == 3
    assert run.spot_n["full"] + run.spot_n["sampled"] == info["checked"]
    assert run.pert.moved == run.pert.spots == info["checked"]


def test_timed_round_catches_a_skipped_run(tmp_path):
    # The same, with a kernel wrong on every timed run of set 2 only: one
    # set's checks, whichever the rotation, are enough to see it.
    from kbh import judge_perturb as jpert
    from kbh import judge_run as jr
    model = torch.tanh
    sets = []
    for _ in range(3):
        x = torch.randn(64)
        sets.append({"expected": [model(x)], "specs": jio.out_specs([model(x)]), "args": [x],
                     "out_bytes": 256,
                     "in_specs": [{"name": "x", "dtype": "float32", "shape": [64], "nbytes": 256}]})
    ctx = types.SimpleNamespace(workdir=str(tmp_path), problem_flags=[], atol=None, rtol=None,
                                staging=None, model=model, timing_sets=[0, 1, 2], sets=sets,
                                backend="cpu", timeout_s=10.0, overhead_ref_ms=lambda s, shared=False: 0.0,
                                echo_ms=lambda: 0.05, snapshot_ref_ms=lambda k, shared=False: 0.0,
                                refresh_ref_ms=lambda sizes, masked=(): 0.0)
    _with_reference(ctx, model)
    run = jr.CandidateRun(ctx, {"id": 0})
    run.pert, run.rtt = jpert.Perturber(ctx), 0.0
    run.sched = jchk.Schedule(0.8)
    w = _Worker(run.scratch, model, {k: s["args"] for k, s in enumerate(sets)})
    real = w.request

    def wrong_on_set2(req, timeout=None):
        if req["cmd"] == "dump" and req["set"] == 2:
            w.model = lambda x: torch.tanh(x) * 0
            try:
                return real(req, timeout)
            finally:
                w.model = model
        return real(req, timeout)
    w.request = wrong_on_set2
    # About 33 runs of set 2, each checked with p = 0.8: missed with
    # probability 0.2^33.
    with pytest.raises(jr.Failed, match="did not match its inputs"):
        for r in range(10):
            run.timed_round(w, [(r + i) % 3 for i in range(10)], r, [], [])


def _memfd(data, seal=True):
    import fcntl
    fd = os.memfd_create("t", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def _sealed_run(tmp_path, data, seal=True, poison="0100807f"):
    from kbh import judge_perturb as jpert
    from kbh import judge_run as jr
    x = torch.randn(64)
    exp = [torch.tanh(x)]
    sets = [{"expected": exp, "specs": jio.out_specs(exp), "args": [x], "out_bytes": 256,
             "in_specs": [{"name": "x", "dtype": "float32", "shape": [64], "nbytes": 256}]}]
    ctx = types.SimpleNamespace(workdir=str(tmp_path), problem_flags=[], atol=None, rtol=None,
                                staging=None, model=torch.tanh, timing_sets=[0], sets=sets,
                                perturb=False)
    run = jr.CandidateRun(ctx, {"id": 0})
    run.pert = jpert.Perturber(ctx)
    # The worker's dump files hold something else: a sealed snapshot wins.
    w = _Worker(run.scratch, lambda t: t * 0, {0: [x]})
    run.snap[0] = _memfd(data(exp[0]), seal)
    run.last_poison[0] = [poison]
    return run, w


def test_checks_read_the_sealed_snapshot(tmp_path):
    run, w = _sealed_run(tmp_path, lambda e: jio.to_bytes(e))
    run.spot_check(w, 0, 1, full=True)
    assert run.spot_n == {"full": 1, "sampled": 0, "sealed": 1}
    run.close_snap(0)


def test_an_unsealed_snapshot_is_refused(tmp_path):
    from kbh import judge_run as jr
    run, w = _sealed_run(tmp_path, lambda e: jio.to_bytes(e), seal=False)
    with pytest.raises(jr.Failed, match="not sealed"):
        run.spot_check(w, 0, 1, full=True)
    run.close_snap(0)


def test_the_judge_counts_the_poison_in_the_snapshot(tmp_path):
    from kbh import judge_run as jr

    def half(e):
        b = bytearray(jio.to_bytes(e))
        b[:128] = bytes.fromhex("0100807f") * 32
        return bytes(b)
    run, w = _sealed_run(tmp_path, half)
    with pytest.raises(jr.Failed, match="32 elements of out0 were not written"):
        run.spot_check(w, 0, 1, full=True)
    run.close_snap(0)


def test_a_set_timed_twice_keeps_its_last_snapshot(tmp_path):
    run, w = _sealed_run(tmp_path, lambda e: jio.to_bytes(e))
    run.close_snap(0)
    fds = [_memfd(b"a" * 256), _memfd(b"b" * 256)]
    w.take_fds = lambda: list(fds)
    real = w.request

    def sealed(req, timeout=None):
        r = real(req, timeout)
        r["sealed"] = len(req.get("sets", []))
        return r
    w.request = sealed
    run.rtt = 0.0
    run.timed(w, [0, 0])
    assert run.snap[0] == fds[1] and os.pread(fds[1], 1, 0) == b"b"
    with pytest.raises(OSError):
        os.fstat(fds[0])			# closed once, by the judge
    assert run.last_poison[0] == w.reqs[-1]["poison"][1]
    run.close_snap(0)
