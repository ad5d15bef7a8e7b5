"""The bandwidth floor and the re-time: the floor counts only bytes no
cache can hold, uses the copy bandwidth measured next to the candidate's
rounds (never the judge's start-up figure), has its margin, and a flag
stands only when a re-time trips it again; a flag never changes the
status."""
import os
import sys
import types

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_run as jr  # noqa: E402
from kbh import judge_timing as jt  # noqa: E402

MB = 1 << 20


def _sysfs(tmp_path, caches):
    for i, (level, size) in enumerate(caches):
        d = tmp_path / ("index%d" % i)
        d.mkdir()
        (d / "level").write_text("%d\n" % level)
        (d / "size").write_text(size + "\n")
    return str(tmp_path)


def test_sysfs_llc_level3_else_largest(tmp_path):
    (tmp_path / "a").mkdir()
    root = _sysfs(tmp_path / "a", [(1, "48K"), (2, "2048K"), (3, "32768K")])
    assert jt.sysfs_llc_bytes(root) == 32 * MB
    (tmp_path / "b").mkdir()
    root = _sysfs(tmp_path / "b", [(1, "32K"), (2, "1024K")])
    assert jt.sysfs_llc_bytes(root) == MB
    assert jt.sysfs_llc_bytes(str(tmp_path / "none")) == 0


def test_floor_only_for_bytes_that_must_move_and_margin():
    # Fits in the cache: nothing must move, no floor at any bandwidth.
    assert jt.floor_ms(8 * MB, 32 * MB, 0.001) is None
    assert jt.floor_ms(32 * MB, 32 * MB, 5.0) is None
    # Past it: only the part the cache cannot hold counts, at the margin.
    fl = jt.floor_ms(132 * MB, 32 * MB, 10.0)
    assert fl == pytest.approx(jt.FLOOR_MARGIN * 100 * MB / 10e9 * 1e3)
    assert 0 < jt.FLOOR_MARGIN < 1
    assert jt.floor_ms(132 * MB, 32 * MB, None) is None


def test_copy_probe_measures_per_round():
    p = jt.CopyProbe(torch.device("cpu"), 2 * MB)
    assert p.gbs() is None and p.n == 2 * MB
    for _ in range(3):
        p.round()
    assert len(p.rounds) == 3 and p.gbs() > 0
    p.fresh()
    assert p.gbs() is None
    p.close()


class _Probe:
    """A copy bandwidth per phase: the main rounds', then the re-time's."""

    def __init__(self, main, again):
        self.phases = [main, again]
        self.rounds = []
        self.n_rounds = 0

    def round(self):
        self.n_rounds += 1
        self.rounds.append(self.phases[0])

    def fresh(self):
        self.rounds = []
        self.phases = self.phases[1:] or self.phases

    def gbs(self):
        return sorted(self.rounds)[len(self.rounds) // 2] if self.rounds else None

    def close(self):
        pass


def _run(tmp_path, working_set, llc, rounds=4, reps=3):
    ctx = types.SimpleNamespace(
        workdir=str(tmp_path), problem_flags=[], timing_sets=[0], cached=None, reps=reps,
        warmup=0, rounds=rounds, max_rounds=rounds, adaptive=False, precision=None, seed=7,
        eager_fn=None, compile_fn=None, cache_info={}, eager_all=[], compile_all=[],
        eager_rounds_all=[], compile_rounds_all=[], backend="cpu", device=torch.device("cpu"),
        perturb=False, llc_bytes=llc, baselines_ready=lambda: None, clock_ref=lambda: None,
        # The judge's start-up figure: absurdly low, so using it would flag
        # every candidate. The floor must not look at it.
        bw=1e-6,
        # One trial: no spare draw, so no fresh process (kbh/judge_fresh.py).
        trials=1,
        sets=[{"bytes": working_set, "args": [], "specs": [], "expected": [], "variant": 0}])
    run = jr.CandidateRun(ctx, {"id": 0})
    run.spot_check = lambda *a, **k: None
    return run


def _timed(run, ms_main, ms_again, main_rounds):
    """Candidate times: ms_main for the main rounds, ms_again after."""
    calls = {"n": 0}

    def timed_round(w, sets, rnd, side, untimed, clock_runs=None):
        calls["n"] += 1
        return [ms_main if calls["n"] <= main_rounds else ms_again] * len(sets)
    # A round of the candidate (one request per run, each maybe checked).
    run.timed_round = timed_round
    return calls


def test_fits_in_cache_no_floor_no_probe(tmp_path):
    run = _run(tmp_path, 4 * MB, 32 * MB)
    _timed(run, 1e-6, 1e-6, 4)	# absurdly fast: still no floor
    run.timing(None)
    chk = [c for c in run.res["checks"] if c["name"] == "bandwidth_floor"][0]
    assert chk["passed"] and "fits in the" in chk["detail"] and "does not apply" in chk["detail"]
    assert "below_bandwidth_floor" not in run.res["flags"]
    assert "retime" not in run.res["timing"]


def _with_probe(monkeypatch, main, again):
    made = []

    def probe(device, ws):
        made.append(_Probe(main, again))
        return made[-1]
    monkeypatch.setattr(jt, "CopyProbe", probe)
    return made


def test_interleaved_bandwidth_one_copy_per_round(tmp_path, monkeypatch):
    # 100 MB must move at 10 GB/s: floor 0.5 * 100 MB / 10 GB/s = 5.2 ms.
    made = _with_probe(monkeypatch, 10.0, 10.0)
    run = _run(tmp_path, 132 * MB, 32 * MB, rounds=4)
    _timed(run, 8.0, 8.0, 4)
    run.timing(None)
    assert len(made) == 1 and made[0].n_rounds == 4	# one copy per round, no re-time
    chk = [c for c in run.res["checks"] if c["name"] == "bandwidth_floor"][0]
    assert chk["passed"] and "10.0 GB/s" in chk["detail"] and "measured next to" in chk["detail"]
    assert "vs 13.84 ms to move all %d bytes" % (132 * MB) in chk["detail"]	# the roofline
    # The stub changes no input (perturb off): only stale_inputs.
    assert run.res["flags"] == ["stale_inputs"] and "retime" not in run.res["timing"]


def test_margin_decides(tmp_path, monkeypatch):
    # Floor 5.24 ms: 6 ms is above it although below bytes/bandwidth (10.5 ms).
    _with_probe(monkeypatch, 10.0, 10.0)
    run = _run(tmp_path, 132 * MB, 32 * MB)
    _timed(run, 6.0, 6.0, 4)
    run.timing(None)
    assert "below_bandwidth_floor" not in run.res["flags"]


def test_retime_clears_a_transient_trip(tmp_path, monkeypatch):
    # The main rounds saw a starved copy (1 GB/s: floor 52 ms) and a 8 ms
    # candidate; the re-time measures 10 GB/s next to it: cleared.
    made = _with_probe(monkeypatch, 1.0, 10.0)
    run = _run(tmp_path, 132 * MB, 32 * MB, rounds=4)
    calls = _timed(run, 8.0, 8.0, 4)
    run.timing(None)
    assert calls["n"] == 4 + jr.RETIME_ROUNDS and made[0].n_rounds == 4 + jr.RETIME_ROUNDS
    rt = run.res["timing"]["retime"]
    assert rt["tripped"] == ["below_bandwidth_floor"] and rt["still"] == []
    assert rt["bandwidth_gbs"] == 10.0
    assert "below_bandwidth_floor" not in run.res["flags"]
    chk = [c for c in run.res["checks"] if c["name"] == "bandwidth_floor"][0]
    assert chk["passed"] and "re-timed" in chk["detail"]


def test_retime_of_a_slower_kernel_keeps_the_flag(tmp_path, monkeypatch):
    # The same starved copy, but the candidate was 1 ms in the main rounds
    # and is 8 ms once re-timed (it counts its calls): the re-time clears
    # nothing, whatever the fresh copy says.
    _with_probe(monkeypatch, 1.0, 10.0)
    run = _run(tmp_path, 132 * MB, 32 * MB, rounds=4)
    _timed(run, 1.0, 8.0, 4)
    run.timing(None)
    rt = run.res["timing"]["retime"]
    assert rt["agrees"] is False and rt["still"] == rt["tripped"] == ["below_bandwidth_floor"]
    assert "below_bandwidth_floor" in run.res["flags"]
    chk = [c for c in run.res["checks"] if c["name"] == "timing_repeatable"][0]
    assert not chk["passed"]

def test_persistent_trip_flags_but_stays_correct(tmp_path, monkeypatch):
    _with_probe(monkeypatch, 10.0, 10.0)
    run = _run(tmp_path, 132 * MB, 32 * MB)
    run.trials = lambda w: None
    run.start = lambda **kw: _FakeWorker()
    run.lockdown_check = lambda hello: None
    run.sandbox_checks = lambda: None
    run.ctx.timeout_s, run.ctx.build_timeout_s = 10, 10
    run.ctx.sanitize = run.ctx.profile = False
    _timed(run, 1.0, 1.0, 4)	# 1 ms for 100 MB at 10 GB/s: not possible
    res = run.run()
    assert res["status"] == "correct" and res["correct"] is True
    assert "below_bandwidth_floor" in res["flags"] and res["needs_review"] is True
    assert res["timing"]["retime"]["still"] == ["below_bandwidth_floor"]
    chk = [c for c in res["checks"] if c["name"] == "bandwidth_floor"][0]
    assert not chk["passed"]


class _FakeWorker:
    def __init__(self):
        self.walls, self.marks = [], []

    def read_reply(self, what, timeout):
        return {}

    def request(self, req):
        self.walls.append(0.001)
        return {"ok": True}

    def close(self):
        pass


def test_review_flags_match_the_pipelines():
    # The flags the evolve search bars and the report keeps out of
    # headlines all ask for review here.
    for f in ("below_bandwidth_floor", "suspicious_speedup", "side_stream", "untimed_work",
              "stale_inputs"):
        assert f in jr.REVIEW_FLAGS


def _noted(run, main_rounds, main_note, again_note, ms_main=1.0, ms_again=1.0):
    """Candidate rounds that leave an untimed_work note (main_note) in the
    main rounds and again_note in the re-check's: a loaded host's stretch
    (True, False), or a kernel that works outside its calls (True, True)."""
    calls = {"n": 0}

    def timed_round(w, sets, rnd, side, untimed, clock_runs=None):
        calls["n"] += 1
        main = calls["n"] <= main_rounds
        if main_note if main else again_note:
            untimed.append("the judge observed too much")
        return [ms_main if main else ms_again] * len(sets)
    run.timed_round = timed_round
    return calls


def test_integrity_trip_of_a_loaded_stretch_is_cleared(tmp_path):
    run = _run(tmp_path, 1 * MB, 32 * MB, rounds=4)
    calls = _noted(run, 4, True, False)
    run.timing(None)
    assert calls["n"] == 4 + jr.RETIME_ROUNDS
    rc = run.res["timing"]["recheck"]
    assert rc["tripped"] == ["untimed_work"] and rc["still"] == [] and rc["agrees"]
    assert "untimed_work" not in run.res["flags"]
    chk = [c for c in run.res["checks"] if c["name"] == "no_untimed_work"][0]
    assert chk["passed"] and "more rounds did not" in chk["detail"]


def test_integrity_trip_that_repeats_flags(tmp_path):
    run = _run(tmp_path, 1 * MB, 32 * MB, rounds=4)
    _noted(run, 4, True, True)
    run.timing(None)
    assert run.res["timing"]["recheck"]["still"] == ["untimed_work"]
    assert "untimed_work" in run.res["flags"]
    chk = [c for c in run.res["checks"] if c["name"] == "no_untimed_work"][0]
    assert not chk["passed"]


def test_integrity_recheck_of_a_slower_kernel_keeps_the_flag(tmp_path):
    # Clean in the re-check, but 8 times slower there than in the rounds
    # its speedup comes from: it stopped its trick, the flag stays.
    run = _run(tmp_path, 1 * MB, 32 * MB, rounds=4)
    _noted(run, 4, True, False, ms_main=1.0, ms_again=8.0)
    run.timing(None)
    rc = run.res["timing"]["recheck"]
    assert rc["agrees"] is False and rc["still"] == ["untimed_work"]
    assert "untimed_work" in run.res["flags"]


def test_no_trip_no_recheck(tmp_path):
    run = _run(tmp_path, 1 * MB, 32 * MB, rounds=4)
    calls = _noted(run, 4, False, False)
    run.timing(None)
    assert calls["n"] == 4 and "recheck" not in run.res["timing"]
    assert run.res["flags"] == ["stale_inputs"]	# the stub changes no input
