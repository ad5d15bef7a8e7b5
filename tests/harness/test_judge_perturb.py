"""The timing inputs' perturbations (judge_perturb.py) and the untimed-work
rule (judge_run.untimed_work): pure parts, on the CPU."""
import os
import sys
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_io as jio  # noqa: E402
from kbh import judge_perturb as jpert  # noqa: E402
from kbh import judge_run as jr  # noqa: E402


def ctx_of(*sets):
    return types.SimpleNamespace(sets=[{"args": list(a)} for a in sets],
                                 timing_sets=list(range(len(sets))))


def apply(req, k, args):
    """What a worker does with a time request's perturb entries for set k."""
    for j, e, hx in req:
        args[j].view(-1)[e] = jio.from_bytes(bytes.fromhex(hx), jio.dtype_name(args[j]), [1])[0]


def test_one_change_per_floating_input_and_run_never_the_same_position():
    x, y = torch.randn(64, 64), torch.rand(300)
    ctx = ctx_of([x, y, torch.arange(10)])
    p = jpert.Perturber(ctx)
    seen = {0: set(), 1: set()}
    for _ in range(200):
        (run,) = p.request([0])
        assert sorted(e[0] for e in run) == [0, 1]	# floats only: the ints stay
        for j, e, hx in run:
            assert len(hx) == 8 and e not in seen[j]
            seen[j].add(e)
    assert p.runs == 200 and p.fresh == 200 and p.plain == 0


def test_state_after_changes_is_what_the_worker_holds():
    x = torch.randn(32, 16)
    ctx = ctx_of([x.clone()], [torch.randn(32, 16)])
    p = jpert.Perturber(ctx)
    worker = [[t.clone() for t in s["args"]] for s in ctx.sets]
    states = []
    for _ in range(20):
        for k, run in zip([0, 1, 0], p.request([0, 1, 0])):
            apply(run, k, worker[k])
            if k == 0:
                states.append(worker[0][0].clone())
    assert torch.equal(p.args(0)[0], worker[0][0]) and torch.equal(p.args(1)[0], worker[1][0])
    assert torch.equal(ctx.sets[0]["args"][0], x)	# the batch's copy is untouched
    # Every run of set 0 saw inputs it had not seen before.
    for i in range(1, len(states)):
        assert all(not torch.equal(states[i], s) for s in states[:i])


def test_values_come_from_the_input_and_differ():
    x = torch.rand(1000) + 5	# in [5, 6): a value from elsewhere stays there
    p = jpert.Perturber(ctx_of([x]))
    for _ in range(100):
        (run,) = p.request([0])
        j, e, hx = run[0]
        v = float(jio.from_bytes(bytes.fromhex(hx), "float32", [1])[0])
        assert 5 <= v < 6 and v != float(x[e])


def test_integer_inputs_only_without_floating_ones_and_within_range():
    t = torch.randint(0, 10, (500,))
    p = jpert.Perturber(ctx_of([t]))
    for _ in range(50):
        (run,) = p.request([0])
        j, e, hx = run[0]
        v = int(jio.from_bytes(bytes.fromhex(hx), "int64", [1])[0])
        assert 0 <= v < 10 and v != int(t[e])


def test_constant_float_input_still_changes():
    p = jpert.Perturber(ctx_of([torch.ones(50)]))
    (run,) = p.request([0])
    assert run and float(jio.from_bytes(bytes.fromhex(run[0][2]), "float32", [1])[0]) != 1.0


def test_nothing_to_change_is_counted():
    p = jpert.Perturber(ctx_of([torch.zeros(1, dtype=torch.int64)]))
    assert p.request([0, 0]) == [[], []]
    assert p.plain == 2 and p.runs == 0 and not p.changed(0)


def test_switched_off():
    ctx = ctx_of([torch.randn(10)])
    ctx.perturb = False
    p = jpert.Perturber(ctx)
    assert p.request([0, 0]) == [[], []] and "KERNELBOT_PERTURB=0" in p.summary()


def test_untimed_work_rule():
    # Honest: the wall clock is the runs plus the overhead plus noise.
    assert jr.untimed_work(12.0, [1.0] * 10, 0.5) is None
    # Ten runs of 1 ms whose request took 200 ms: work outside the calls.
    why = jr.untimed_work(200.0, [1.0] * 10, 0.5)
    assert why and "outside the timed calls" in why
    # Tiny runs: the per-run slack absorbs scheduling noise.
    assert jr.untimed_work(15.0, [0.01] * 10, 0.05) is None


def test_sample_specs_matches_the_worker_rule():
    t = torch.arange(10, dtype=torch.float32)
    idx, specs = jr.sample_specs([t, torch.zeros(3)], [{"nbytes": 40}, {"nbytes": 12}], 7, 3, 4)
    assert idx[0].tolist() == [7, 0, 3, 6] and idx[1] is None
    assert specs[0]["shape"] == [4] and specs[0]["nbytes"] == 16 and specs[1]["nbytes"] == 12
