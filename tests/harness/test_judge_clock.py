"""The judge's clock (kbh/judge_run.py clock_bound): a worker whose call
times were rewritten is told apart from an honest one on a loaded host
by the runs the host disturbed least; the echo process measures this
host's scheduling from a process of the judge's own."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_run as jr  # noqa: E402
from kbh import judge_timed as jtd  # noqa: E402
from kbh import judge_timing as jt  # noqa: E402


def _runs(call_ms, hidden_ms, over_ms, disturbed, n=100, seed=1):
    """n runs of a call_ms call whose worker reports call_ms - hidden_ms;
    each request takes over_ms beyond the call, and the host adds 2 to
    8 ms to a share `disturbed` of them."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        extra = rng.uniform(2.0, 8.0) if rng.random() < disturbed else rng.uniform(0.0, 0.1)
        out.append((call_ms + over_ms + extra, call_ms - hidden_ms, 0.08, 0.06))
    return out


def test_honest_passes_idle_and_loaded():
    assert jr.clock_bound(_runs(1.3, 0.0, 0.35, 0.0)) is None
    # Most runs preempted before their reply: the median is ms off, the
    # least disturbed tenth is not.
    assert jr.clock_bound(_runs(1.3, 0.0, 0.35, 0.8)) is None
    # A long call: the allowance grows with it (0.1 x the call).
    assert jr.clock_bound(_runs(40.0, 0.0, 0.35, 0.5)) is None


def test_rewritten_clock_flagged():
    why = jr.clock_bound(_runs(1.3, 1.17, 0.35, 0.0))
    assert why and why.startswith("the judge's clock")
    assert jr.clock_bound(_runs(1.3, 1.17, 0.35, 0.8))
    # Hiding 2 ms of a 40 ms call (5%) is within the allowance; 8 ms is not.
    assert jr.clock_bound(_runs(40.0, 2.0, 0.35, 0.0)) is None
    assert jr.clock_bound(_runs(40.0, 8.0, 0.35, 0.0))


def test_a_few_runs_hidden_gain_only_there():
    # Hiding on 5 runs of 100 stays below the 10th percentile: not
    # flagged, and those 5 runs move the median call by nothing.
    runs = _runs(1.3, 0.0, 0.35, 0.0)
    for i in range(5):
        j, h, e, s = runs[i]
        runs[i] = (j, 0.1, e, s)
    assert jr.clock_bound(runs) is None
    runs = [(j, 0.1, e, s) for j, h, e, s in runs]
    assert jr.clock_bound(runs)


def test_no_runs_no_verdict():
    assert jr.clock_bound([]) is None


def test_echo_round_trip():
    e = jt.Echo()
    try:
        got = [e.rtt_ms() for _ in range(20)]
    finally:
        e.close()
    # A working echo: every round trip answered (a loaded host may stall one).
    assert len(got) == 20 and all(x > 0 for x in got)
    assert e.p.poll() is not None


def test_the_verdict_names_both_accounts():
    # The worker's own account of the rest, where the runs carry it, is
    # named beside the judge's references (reported, not believed).
    runs = [r + (0.3,) for r in _runs(1.3, 1.17, 0.35, 0.0)]
    why = jr.clock_bound(runs)
    assert "echo 0.08 ms" in why and "reference for the rest 0.06 ms" in why
    assert "the worker's account beside the call 0.3 ms" in why
    assert "worker's account" not in jr.clock_bound(_runs(1.3, 1.17, 0.35, 0.0))


def _floor_run():
    import types
    ctx = types.SimpleNamespace(workdir="/nonexistent", problem_flags=[])
    run = jr.CandidateRun.__new__(jr.CandidateRun)
    run.ctx, run.res = ctx, {"timing": {"rounds": 1}}
    return run


def test_the_floor_reads_the_clock_from_the_mark():
    # A 110 ms call on 8 MiB inputs reported as 10 ms: the request took
    # 140 ms, 30 of them the refresh and the changes before the mark,
    # whose allowance on the judge's references (3 x (echo + 30 ms)) left
    # the forgery 60 ms. From the mark: the call and a 1.2 ms snapshot,
    # against a null worker's 1.0 ms there.
    run = _floor_run()
    got = run.clock_floor(10.0, 140.0, 0.1, 30.0, 111.2, 1.0)
    assert got == 111.2 - (jtd.CLOCK_NULL_FACTOR * 1.0 + 0.1 + jtd.CLOCK_SLACK_MS)
    assert got > 0.97 * 110 and run.clock_floored == 1 and run.res["timing"]["clock_floored"] == 1
    # No null worker (it could not run), or no mark: the whole request's
    # reading alone, as before.
    whole = 140.0 - (3 * 30.1 + 0.5)
    assert _floor_run().clock_floor(10.0, 140.0, 0.1, 30.0, 111.2, None) == whole
    assert _floor_run().clock_floor(10.0, 140.0, 0.1, 30.0, None, 1.0) == whole
    # A relay that held the mark back until late gains nothing over the
    # whole request's reading: the larger floor stands.
    assert _floor_run().clock_floor(10.0, 140.0, 0.1, 30.0, 5.0, 1.0) == whole
    # The mark's reading alone (a fresh process's first requests).
    assert _floor_run().clock_floor(10.0, None, 0.1, 30.0, 111.2, 1.0) == got
    assert _floor_run().clock_floor(10.0, None, 0.1, 30.0, None, 1.0) == 10.0


def test_an_honest_run_keeps_its_time():
    # The worker's time stands where the judge's clock allows it.
    run = _floor_run()
    assert run.clock_floor(110.0, 140.0, 0.1, 30.0, 111.2, 1.0) == 110.0
    assert getattr(run, "clock_floored", 0) == 0
