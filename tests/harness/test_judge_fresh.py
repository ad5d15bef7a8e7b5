"""A fresh process (kbh/judge_fresh.py): the candidate's first calls on
the timing sets in a worker of its own, warmed up on spare draws, set
against the rounds; flagged only when every fresh process it times
(FRESH_TRIES) agrees."""
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_fresh as jf  # noqa: E402
from kbh import judge_run as jr  # noqa: E402


def _run(tmp_path, fresh_ms, trials=5):
    sets = [{"variant": 0, "trial": t} for t in range(trials)]
    ctx = types.SimpleNamespace(workdir=str(tmp_path), problem_flags=[], timing_sets=[0, 1, 2][:trials],
                                sets=sets, trials=trials)
    run = jr.CandidateRun(ctx, {"id": 0})
    run.res["timing"] = {}
    seen = []

    def fresh_once(i, spare):
        seen.append(list(spare))
        # The last figure stands for the processes past the list's end.
        m = fresh_ms[min(i, len(fresh_ms) - 1)]
        return m if isinstance(m, tuple) else (m, 1.0)
    run.fresh_once = fresh_once
    return run, seen


def _check(run):
    return [c for c in run.res["checks"] if c["name"] == "no_state_across_calls"][0]


ROUNDS = [[1.0, 1.1, 0.9]] * 5 + [[1.4, 1.5, 1.3]] * 3


def test_honest_one_process_passes(tmp_path):
    run, seen = _run(tmp_path, [1.3, 9.0])
    run.fresh_process(ROUNDS)
    assert seen == [[3, 4]]	# warmed up on the draws past the timing sets
    assert _check(run)["passed"] and "state_across_calls" not in run.res["flags"]
    assert run.res["timing"]["fresh"]["processes"] == 1


def test_kept_state_flagged_when_all_agree(tmp_path):
    run, _ = _run(tmp_path, [12.0, 11.0])
    run.fresh_process(ROUNDS)
    assert not _check(run)["passed"] and "state_across_calls" in run.res["flags"]
    assert "the least 12 ms, 11 ms, 11 ms, 11 ms" in _check(run)["detail"]
    assert run.res["timing"]["fresh"]["tripped"] is True
    assert run.res["timing"]["fresh"]["processes"] == jf.FRESH_TRIES == 4


def test_one_slow_process_is_not_enough(tmp_path):
    # A loaded host slowed the first fresh process; the second was not.
    run, _ = _run(tmp_path, [12.0, 1.2])
    run.fresh_process(ROUNDS)
    assert _check(run)["passed"] and "state_across_calls" not in run.res["flags"]
    assert run.res["timing"]["fresh"]["processes"] == 2


def test_slow_processes_short_of_all_are_not_enough(tmp_path):
    # A 2-vCPU guest slowed every first call of three fresh processes in a
    # row for an honest 2-thread kernel; the fourth was not.
    run, _ = _run(tmp_path, [12.0, 9.0, 8.0, 1.2])
    run.fresh_process(ROUNDS)
    assert _check(run)["passed"] and "state_across_calls" not in run.res["flags"]
    assert run.res["timing"]["fresh"]["processes"] == 4
    assert run.res["timing"]["fresh"]["tripped"] is False


def test_figure_is_the_median_of_all_runs(tmp_path):
    # Slow rounds (3 of 8 at 1.4 ms) do not lift the figure past the
    # median of all runs (1.1): an outside attack's kernel made a third
    # of its calls slow to raise the 75th percentile its fresh calls were
    # set against.
    run, _ = _run(tmp_path, [2.5, 2.5])
    run.fresh_process(ROUNDS)
    assert not _check(run)["passed"] and "state_across_calls" in run.res["flags"]
    assert run.res["timing"]["fresh"]["rounds_ms"] == 1.1


def test_slow_majority_of_rounds_is_not_the_figure(tmp_path):
    # Another made 6 of 10 calls slow in 2 of every 3 rounds' worth: most
    # rounds' medians slow (5 ms), its runs' median a lookup's (0.5 ms),
    # the median its speedup is reported from.
    rounds = [[5.0] * 6 + [0.5] * 4] * 2 + [[0.5] * 10]
    rounds = rounds * 3
    run, _ = _run(tmp_path, [5.2, 5.1])
    run.fresh_process(rounds)
    assert "state_across_calls" in run.res["flags"]
    assert run.res["timing"]["fresh"]["rounds_ms"] == 0.5


def test_slow_first_calls_in_the_warm_up_are_not_the_figure(tmp_path):
    # The first process's first calls on the timing sets are the
    # candidate's own untimed calls: slow there on purpose, they raised
    # the figure (the same attack); reported only.
    run, _ = _run(tmp_path, [6.0, 6.0])
    run.warm_first = 18.0
    run.fresh_process(ROUNDS)
    assert "state_across_calls" in run.res["flags"]
    assert run.res["timing"]["fresh"]["warm_first_ms"] == 18.0
    assert run.res["timing"]["fresh"]["rounds_ms"] == 1.1


def test_no_spare_draw_no_fresh_process(tmp_path):
    run, seen = _run(tmp_path, [12.0, 12.0], trials=3)
    run.fresh_process(ROUNDS)
    assert seen == [] and _check(run)["passed"] and "not run" in _check(run)["detail"]


def test_the_judges_clock_is_set_against_its_own_in_the_rounds(tmp_path):
    # The worker reports fast first calls, the judge's clock saw them
    # slow (a clock rewritten in the fresh process only): flagged, where
    # the rounds' requests took 1.2 ms on the same clock.
    clock = [(1.2, 1.0, 0.05, 0.1)] * 40
    run, _ = _run(tmp_path, [(1.1, 30.0), (1.0, 31.0)])
    run.fresh_process(ROUNDS, clock)
    assert "state_across_calls" in run.res["flags"]
    assert "30 ms, 31 ms" in _check(run)["detail"]
    assert run.res["timing"]["fresh"]["rounds_clock_ms"] == 1.2
    # A first request's own costs (its buffers faulted in) stay within
    # the slack.
    run, _ = _run(tmp_path, [(1.1, 7.0), (1.0, 7.0)])
    run.fresh_process(ROUNDS, clock)
    assert "state_across_calls" not in run.res["flags"]
