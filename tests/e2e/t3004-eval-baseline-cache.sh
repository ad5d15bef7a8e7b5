#!/bin/sh
# t3004: the baseline cache through `kernelbot eval` (docs/evaluation.md,
# "Baseline cache"): a first evaluation measures the baselines and stores
# their timings; a second reuses them (eager still timed, fewer runs) and
# says so with the entry's age; a changed problem misses; a corrupt entry
# is ignored and replaced; --fresh-baselines measures afresh; the entry
# holds timings only, never outputs.
. "$(dirname "$0")/eval-lib.sh"
export KERNELBOT_CACHE="$tmp/cache"
# This host's CPUs are shared: the drift check compares eager timings of
# two moments, so it is loosened here (the default is 10%).
export KERNELBOT_BASELINE_DRIFT=50
P="$ROOT/tests/fixtures/eval/scale_bias.py"
C="$ROOT/tests/fixtures/exploits/cpu/correct.c"
FAST="--backend cpu --trials 2 --rounds 3 --reps 6 --warmup 1 --timeout 20"

ev() {
	"$KERNELBOT" eval "$1" "$C" $FAST --json $3 >"$tmp/$2.json" 2>"$tmp/$2.err"
	st=$?
	[ "$st" -eq 0 ] || bad "$2: exit $st: $(tail -3 "$tmp/$2.err")"
}
entries() { find "$KERNELBOT_CACHE/baselines" -name '*.json' 2>/dev/null | wc -l; }

ev "$P" first
expect "$tmp/first.json" correct.c 'r["status"] == "correct"' "first evaluation correct"
expect "$tmp/first.json" correct.c 'r["baselines"]["cached"] is False and r["baselines"]["lookup"] == "miss"' "first evaluation: a miss"
expect "$tmp/first.json" correct.c 'r["timings_ms"]["eager"]["runs"] == 18' "eager timed in full (3 rounds x 6)"
[ "$(entries)" -eq 1 ] && ok "one cache entry written" || bad "cache entries: $(entries)"

ev "$P" second
expect "$tmp/second.json" correct.c 'r["status"] == "correct"' "second evaluation correct"
expect "$tmp/second.json" correct.c 'r["baselines"]["cached"] is True and r["baselines"]["lookup"] == "hit"' "second evaluation: a hit"
expect "$tmp/second.json" correct.c '0 <= r["baselines"]["age_s"] < 3600' "the entry's age reported"
expect "$tmp/second.json" correct.c 'r["timings_ms"]["eager"]["runs"] == 6 and r["baselines"]["eager_runs_per_round"] == 2' "eager still timed, a third of the runs (drift check)"
expect "$tmp/second.json" correct.c 'r["baselines"]["drift"] > 0 and r["speedup"]["eager"] > 0' "drift and the eager speedup reported"
expect "$tmp/second.json" correct.c 'r["timing_breakdown_s"]["judge_shared"].get("compile_baseline_build") is None' "no baseline build on a hit"
expect "$tmp/second.json" correct.c 'r["seed"] != '"$(field "$tmp/first.json" correct.c 'r["seed"]')" "fresh seeds on a hit"

# The entry: timings only, every sample a timing round of the first run.
f=$(find "$KERNELBOT_CACHE/baselines" -name '*.json' | head -1)
"$PY" - "$f" <<'PYEOF' && ok "the entry holds timings only (rounds x reps samples, no outputs)" || bad "entry content: $(head -c 400 "$f")"
import json, sys
e = json.load(open(sys.argv[1]))
assert set(e) == {"version", "key", "fields", "created", "eager_rounds", "compile_rounds",
                  "compile_note", "bandwidth_gbs"}, sorted(e)
assert len(e["eager_rounds"]) == 3 and all(len(r) == 6 for r in e["eager_rounds"])
assert all(isinstance(x, float) and 0 < x < 1000 for r in e["eager_rounds"] for x in r)
assert "expected" not in json.dumps(e) and "seed" not in json.dumps(e)
PYEOF

# torch.compile's timings from the cache (this host's PyTorch has none, so
# the entry is given some): the speedup over it comes from them, with an
# interval, and the result says where they came from.
"$PY" - "$f" <<'PYEOF'
import json, sys
e = json.load(open(sys.argv[1]))
e["compile_rounds"] = [[x * 0.5 for x in r] for r in e["eager_rounds"]]
json.dump(e, open(sys.argv[1], "w"))
PYEOF
ev "$P" compile
expect "$tmp/compile.json" correct.c 'r["baselines"]["cached"] is True and r["baselines"]["compile"] == "cache" and r["timings_ms"]["compile"]["runs"] == 18' "torch.compile's timings taken from the cache"
expect "$tmp/compile.json" correct.c 'r["speedup"]["compile"] > 0 and r["speedup"]["compile_ci95"][0] <= r["speedup"]["compile"] <= r["speedup"]["compile_ci95"][1]' "a speedup over cached torch.compile inside its interval"

# A changed problem (one more line) is another key: a miss.
cp "$P" "$tmp/scale_bias_edited.py"
printf '\n# edited\n' >>"$tmp/scale_bias_edited.py"
ev "$tmp/scale_bias_edited.py" edited
expect "$tmp/edited.json" correct.c 'r["baselines"]["cached"] is False and r["baselines"]["lookup"] == "miss"' "a changed problem misses"
[ "$(entries)" -eq 2 ] && ok "a second entry for the changed problem" || bad "cache entries: $(entries)"

# A corrupt entry is ignored (the evaluation measures) and replaced.
printf '{"version": 1, "eager_rounds": [[' >"$f"
ev "$P" corrupt
expect "$tmp/corrupt.json" correct.c 'r["status"] == "correct" and r["baselines"]["lookup"] == "corrupt" and r["baselines"]["cached"] is False' "a corrupt entry is ignored"
"$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" && ok "the corrupt entry was rewritten" || bad "still corrupt: $(head -c 100 "$f")"
ev "$P" after
expect "$tmp/after.json" correct.c 'r["baselines"]["cached"] is True' "a hit again after the rewrite"

# --fresh-baselines measures in full whatever the cache holds.
ev "$P" fresh --fresh-baselines
expect "$tmp/fresh.json" correct.c 'r["baselines"]["cached"] is False and r["baselines"]["lookup"] == "fresh requested" and r["timings_ms"]["eager"]["runs"] == 18' "--fresh-baselines measures in full"

done_tests t3004-eval-baseline-cache
