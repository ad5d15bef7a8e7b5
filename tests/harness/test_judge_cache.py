"""The baseline cache (kbh/judge_cache.py) and the statistics it relies on:
a hit, a miss when the problem or the machine changes, corrupt and stale
entries ignored, and nothing but timings stored."""
import json
import os
import sys
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_cache as cache  # noqa: E402
from kbh import judge_problem as jp  # noqa: E402
from kbh import judge_stats as stats  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "eval")
EAGER = [[0.5, 0.52, 0.51], [0.49, 0.5, 0.53]]
COMPILE = [[0.3, 0.31, 0.3], [0.29, 0.3, 0.32]]


def fake_ctx(path=os.path.join(FIX, "scale_bias.py"), rounds=10):
    p = jp.Problem(path)
    model = p.build(1, torch.device("cpu"))
    req = {"class": "Model", "device_id": {}}
    return types.SimpleNamespace(problem=p, state=jp.state_tensors(model), req=req, backend="cpu",
                                 device=torch.device("cpu"), rounds=rounds, reps=10, warmup=3,
                                 baselines=["eager", "compile"]), p.draw(1, torch.device("cpu"))[0]


def stored(tmp_path, ctx=None, args=None):
    if ctx is None:
        ctx, args = fake_ctx()
    fields = cache.key_fields(ctx, [args], 1 << 20)
    key = cache.key_of(fields)
    assert cache.store(str(tmp_path), key, fields, EAGER, COMPILE, None, 12.5) is None
    return key, fields


def test_hit_returns_the_stored_timings(tmp_path):
    key, fields = stored(tmp_path)
    e, why = cache.load(str(tmp_path), key, fields)
    assert why is None
    assert e["eager_rounds"] == EAGER and e["compile_rounds"] == COMPILE
    assert e["bandwidth_gbs"] == 12.5 and e["compile_note"] is None


def test_miss_when_the_problem_changes(tmp_path):
    stored(tmp_path)
    changed = tmp_path / "scale_bias_changed.py"
    with open(os.path.join(FIX, "scale_bias.py")) as f:
        changed.write_text(f.read() + "\n# edited\n")
    ctx, args = fake_ctx(str(changed))
    fields = cache.key_fields(ctx, [args], 1 << 20)
    assert cache.load(str(tmp_path), cache.key_of(fields), fields) == (None, "miss")


def test_miss_when_shapes_device_or_timing_parameters_change(tmp_path):
    ctx, args = fake_ctx()
    key, fields = stored(tmp_path, ctx, args)
    other = [cache.key_fields(ctx, [[args[0][:7]]], 1 << 20),	# another input shape
             cache.key_fields(ctx, [args], 2 << 20)]		# another flush size
    ctx.req["device_id"] = {"driver": "99.0"}
    other.append(cache.key_fields(ctx, [args], 1 << 20))
    ctx.req["device_id"] = {}
    ctx.rounds = 20
    other.append(cache.key_fields(ctx, [args], 1 << 20))
    keys = {cache.key_of(f) for f in other}
    assert key not in keys and len(keys) == len(other)


def test_corrupt_entries_are_ignored(tmp_path):
    key, fields = stored(tmp_path)
    p = cache.path_of(str(tmp_path), key)
    good = json.load(open(p))
    bad_versions = [
        "not json at all {",
        json.dumps([1, 2, 3]),
        json.dumps(dict(good, eager_rounds=[["x"]])),
        json.dumps(dict(good, eager_rounds=[[-1.0]])),
        json.dumps(dict(good, compile_rounds="fast")),
        json.dumps(dict(good, bandwidth_gbs=-3)),
        # Anything beyond timings (an "expected" output, say) is not ours.
        json.dumps(dict(good, expected=[[0.1, 0.2]])),
    ]
    for text in bad_versions:
        with open(p, "w") as f:
            f.write(text)
        assert cache.load(str(tmp_path), key, fields) == (None, "corrupt"), text[:60]
    with open(p, "w") as f:
        json.dump(dict(good, fields=dict(fields, torch="0.0")), f)
    assert cache.load(str(tmp_path), key, fields) == (None, "mismatch")


def test_stale_entries_are_ignored(tmp_path):
    key, fields = stored(tmp_path)
    e, _ = cache.load(str(tmp_path), key, fields)
    later = e["created"] + cache.MAX_AGE_S + 1
    assert cache.load(str(tmp_path), key, fields, now=later) == (None, "stale")
    assert cache.load(str(tmp_path), key, fields, now=e["created"] - 3600) == (None, "stale")


def test_only_timings_are_stored(tmp_path):
    key, _ = stored(tmp_path)
    e = json.load(open(cache.path_of(str(tmp_path), key)))
    assert set(e) == cache.ENTRY_KEYS
    # Numbers appear only as timing samples, the bandwidth, the creation
    # time and the key's parameters (shapes, rounds, sizes): no tensor data.
    assert set(e["fields"]) == {"version", "problem_sha256", "class", "entry", "module_path", "scalars",
                                "inputs", "state", "backend",
                                "device", "torch", "python", "rounds", "reps", "warmup",
                                "flush_bytes", "baselines"}
    assert os.path.getsize(cache.path_of(str(tmp_path), key)) < 4096


def test_store_failure_is_reported_not_raised(tmp_path):
    ro = tmp_path / "file"
    ro.write_text("a file where a directory should be")
    ctx, args = fake_ctx()
    fields = cache.key_fields(ctx, [args], 1)
    err = cache.store(str(ro), cache.key_of(fields), fields, EAGER, None, None, None)
    assert err and "cannot write" in err


def test_drift_and_unpaired_speedup():
    assert abs(stats.drift([1.0, 1.1, 1.05], [[1.0, 1.0], [1.0]]) - 1.05) < 1e-9
    assert stats.drift([], EAGER) is None and stats.drift([1.0], None) is None
    cand = [[0.1, 0.11, 0.1], [0.1, 0.1, 0.12]]
    point, ci = stats.speedup_unpaired(COMPILE, cand, 3)
    assert 2.9 < point < 3.1 and ci[0] <= point <= ci[1]
    assert stats.speedup_unpaired(None, cand, 3) == (None, None)


def test_median_precision():
    steady = [[1.0, 1.001, 0.999, 1.0] for _ in range(10)]
    noisy = [[1.0 + 0.1 * i] * 4 for i in range(10)]	# each round at its own level
    assert stats.median_precision(steady, 1) < 0.005
    assert stats.median_precision(noisy, 1) > 0.05
    assert stats.median_precision(steady[:1], 1) is None
