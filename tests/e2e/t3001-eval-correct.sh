#!/bin/sh
# t3001: a correct CPU kernel passes every check through `kernelbot eval`,
# in JSON and in the human summary, with exit status 0; usage and problem
# errors exit 2.
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
C="$ROOT/tests/fixtures/exploits/cpu/correct.c"
FAST="--backend cpu --trials 3 --rounds 3 --reps 5 --warmup 1 --timeout 20"

"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/one.json" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && ok "exit 0 for a correct kernel" || bad "exit $st for a correct kernel: $(cat "$tmp/err")"
expect "$tmp/one.json" correct.c 'r["status"] == "correct" and r["correct"] is True' "status correct"
expect "$tmp/one.json" correct.c 'r["timings_ms"]["candidate"]["runs"] == 15' "15 timed runs (3 rounds x 5)"
expect "$tmp/one.json" correct.c 'r["timings_ms"]["eager"]["median"] > 0' "eager baseline timed"
expect "$tmp/one.json" correct.c 'r["speedup"]["eager_ci95"][0] <= r["speedup"]["eager"] <= r["speedup"]["eager_ci95"][1]' "speedup inside its interval"
expect "$tmp/one.json" correct.c 'all(c["passed"] for c in r["checks"] if c["name"] in ("outputs_match","outputs_fully_written","inputs_unchanged","no_work_after_return","deterministic","spot_checks"))' "protocol checks pass"
expect "$tmp/one.json" correct.c '"3 input sets" not in str(r["checks"]) and "9 input sets (3 trials x 3 shapes)" in str(r["checks"])' "every trial checks all 3 declared shapes"
expect "$tmp/one.json" correct.c 'r["flags"] == [] or r["flags"] == ["nondeterministic"]' "no flags"
expect "$tmp/one.json" correct.c 'set(["compile","judge"]) <= set(r["timing_breakdown_s"]) and r["compile_s"] > 0' "per-step times reported"
expect "$tmp/one.json" correct.c 'r["errors"] == []' "no errors"

# What the measurement depended on: a fresh seed, and the flags that repeat it.
expect "$tmp/one.json" correct.c '(e := r["environment"])["seed"] == r["seed"] and e["seed_str"] == str(r["seed"]) and e["seed_given"] is False' "environment: the fresh seed, not given"
expect "$tmp/one.json" correct.c 'r["environment"]["eval_args"] == ["--backend", "cpu", "--seed", str(r["seed"]), "--trials", "3", "--rounds", "3", "--reps", "5", "--warmup", "1"]' "environment: the eval flags that repeat it"
expect "$tmp/one.json" correct.c '(e := r["environment"])["compile_flags"].startswith("-O3 -march=native -fopenmp") and e["compiler_version"] and e["cpu_model"] and e["logical_cpus"] >= 1 and e["gpu"] is None and e["python"] and e["torch"] and sorted(e["threads"]) == ["MKL_NUM_THREADS", "OMP_NUM_THREADS", "OMP_PLACES", "OMP_PROC_BIND"]' "environment: CPU, compiler and flags, Python, PyTorch, thread settings"

# --seed: the judge uses the given seed (its reply says which it used);
# the thread settings reach the judge and are recorded as set (3 threads:
# no host's default here, where torch counts physical cores).
OMP_NUM_THREADS=3 OMP_PROC_BIND=close "$KERNELBOT" eval "$P" "$C" $FAST --seed 9223372036854775807 --json \
	>"$tmp/seed.json" 2>"$tmp/err" || bad "--seed run failed: $(cat "$tmp/err")"
expect "$tmp/seed.json" correct.c 'r["seed"] == 9223372036854775807 and r["environment"]["seed_given"] is True and r["environment"]["eval_args"][2:4] == ["--seed", "9223372036854775807"]' "--seed: the judge used the given 63-bit seed"
expect "$tmp/seed.json" correct.c 'r["environment"]["threads"] == {"OMP_NUM_THREADS": "3", "OMP_PROC_BIND": "close", "OMP_PLACES": None, "MKL_NUM_THREADS": None} and r["environment"]["torch_threads"] == 3' "thread settings recorded; torch in the judge runs the 3 threads"
for s in -1 9223372036854775808 12x ""; do
	"$KERNELBOT" eval "$P" "$C" --backend cpu --seed "$s" >/dev/null 2>"$tmp/err"; st=$?
	[ "$st" -eq 2 ] && grep -q -- "--seed" "$tmp/err" && ok "--seed '$s': exit 2" || bad "--seed '$s': exit $st"
done

# Without --rounds, timing is adaptive: at least 10 rounds, at most 60,
# stopping once the median is within +-0.25%; with --rounds, exactly that.
"$KERNELBOT" eval "$P" "$C" --backend cpu --trials 1 --reps 2 --warmup 1 --timeout 20 --json \
	>"$tmp/adaptive.json" 2>"$tmp/err" || bad "adaptive run failed: $(cat "$tmp/err")"
expect "$tmp/adaptive.json" correct.c 'r["timing"]["adaptive"] is True and 10 <= r["timing"]["rounds"] <= 60 and r["timings_ms"]["candidate"]["runs"] == 2 * r["timing"]["rounds"]' "adaptive timing: 10 to 60 rounds, all reported"
expect "$tmp/one.json" correct.c 'r["timing"] == dict(r["timing"], rounds=3, reps=5, adaptive=False, max_rounds=3)' "--rounds 3: fixed, not adaptive"

# A correct kernel far slower than eager (the same work 200 times) is timed
# for two rounds, not --rounds 3 or the adaptive ten, and still judged
# correct with its last spot check in full.
sed -e 's|for (int64_t r = 0; r < rows; r++)|for (volatile int k = 0; k < 200; k++) for (int64_t r = 0; r < rows; r++)|' \
	"$C" >"$tmp/slow.c"
"$KERNELBOT" eval "$P" "$tmp/slow.c" $FAST --json >"$tmp/slow.json" 2>"$tmp/err" ||
	bad "slow kernel: not judged correct: $(cat "$tmp/err")"
expect "$tmp/slow.json" slow.c 'r["status"] == "correct" and r["timing"]["rounds"] == 2 and r["timings_ms"]["candidate"]["runs"] == 10 and "slower than eager after 2 rounds" in r["timing"]["stopped"]' "a kernel over 10x slower than eager stops after 2 rounds, saying so"
expect "$tmp/slow.json" slow.c '" in full" in str(r["checks"]) and "compared: 0 in full" not in str(r["checks"]) and r["speedup"]["eager"] < 0.1' "... with a full spot check and its speedup"
expect "$tmp/one.json" correct.c '"stopped" not in r["timing"]' "a kernel near eager's time is timed in full"

# Spot checks before the last on a sample, through the real worker (the
# sample made smaller than this problem's outputs), and the judge started
# the plain way, after the compiles.
KERNELBOT_SPOT_SAMPLE=16 KERNELBOT_JUDGE_EARLY=0 "$KERNELBOT" eval "$P" "$C" $FAST --json \
	>"$tmp/smp.json" 2>"$tmp/err" || bad "sampled run failed: $(cat "$tmp/err")"
# 15 timed runs, each checked with p = 0.8: none checked has probability
# 0.2^15 (3e-11).
expect "$tmp/smp.json" correct.c 'r["status"] == "correct" and r["timing"]["checks"]["checked"] > 0 and ("1 in full, %d on 16 elements" % r["timing"]["checks"]["checked"]) in str(r["checks"])' "spot checks: the drawn ones on 16 sampled elements, the last run in full"
expect "$tmp/smp.json" correct.c '"judge_wait" not in r["timing_breakdown_s"]["judge_shared"]' "KERNELBOT_JUDGE_EARLY=0: the judge starts after the compiles"
expect "$tmp/one.json" correct.c '"judge_wait" in r["timing_breakdown_s"]["judge_shared"] and ("%d in full, 0 on 65536" % (r["timing"]["checks"]["checked"] + r["timing"]["checks"]["extra"])) in str(r["checks"])' "by default the judge starts before the compiles; outputs under the sample size are checked in full"

# A batch: an array in order; a compile error carries the compiler's
# message; a missing entry point is rejected; one bad candidate makes exit 1.
printf 'int kernelbot_forward(void) { return undeclared_thing; }\n' >"$tmp/broken.c"
printf 'int something_else(void) { return 0; }\n' >"$tmp/noentry.c"
"$KERNELBOT" eval "$P" "$C" "$ROOT/tests/fixtures/exploits/cpu/unwritten.c" "$tmp/broken.c" \
	"$tmp/noentry.c" $FAST --json >"$tmp/batch.json"
st=$?
[ "$st" -eq 1 ] && ok "exit 1 when some of a batch are not correct" || bad "batch exit $st"
n=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print([r["candidate"].rsplit("/",1)[-1] for r in d] if isinstance(d, list) else -1)' "$tmp/batch.json")
[ "$n" = "['correct.c', 'unwritten.c', 'broken.c', 'noentry.c']" ] && ok "an array of four results, in order" || bad "expected four results in order, got $n"
expect "$tmp/batch.json" correct.c 'r["status"] == "correct"' "the correct one is correct in a batch"
expect "$tmp/batch.json" broken.c 'r["status"] == "compile_error" and "undeclared_thing" in r["errors"][0]' "compile_error with the compiler output"
expect "$tmp/batch.json" noentry.c 'r["status"] == "rejected" and "kernelbot_forward" in r["errors"][0]' "missing kernelbot_forward is rejected"

# Human summary.
"$KERNELBOT" eval "$P" "$C" "$tmp/broken.c" $FAST >"$tmp/human" 2>&1
grep -q "correct.c: correct" "$tmp/human" && grep -q "broken.c: compile_error" "$tmp/human" &&
	ok "human summary names each status" || bad "summary: $(cat "$tmp/human")"

# Usage and problem errors: exit 2 with a message.
"$KERNELBOT" eval "$P" >/dev/null 2>&1; st=$?
[ "$st" -eq 2 ] && ok "no candidate: exit 2" || bad "no candidate: exit $st"
"$KERNELBOT" eval "$tmp/nope.py" "$C" --backend cpu >/dev/null 2>"$tmp/err"; st=$?
[ "$st" -eq 2 ] && ok "missing problem: exit 2" || bad "missing problem: exit $st"
printf 'import torch\nclass Model(torch.nn.Module):\n    pass\n' >"$tmp/bad_problem.py"
"$KERNELBOT" eval "$tmp/bad_problem.py" "$C" --backend cpu >/dev/null 2>"$tmp/err"; st=$?
[ "$st" -eq 2 ] && grep -q "get_init_inputs" "$tmp/err" && ok "broken problem: exit 2 naming what is missing" ||
	bad "broken problem: exit $st: $(cat "$tmp/err")"
# More tensors in a set than the worker takes: the problem's error, not
# the candidate's (a runtime_error would blame every kernel).
cat >"$tmp/many.py" <<'PYEOF'
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(4)) for _ in range(300)])
    def forward(self, x):
        return x + self.p[0]
def get_inputs():
    return [torch.randn(8, 4)]
def get_init_inputs():
    return []
PYEOF
"$KERNELBOT" eval "$tmp/many.py" "$C" --backend cpu >/dev/null 2>"$tmp/err"; st=$?
[ "$st" -eq 2 ] && grep -q "301 inputs.*at most 256" "$tmp/err" && ok "301 tensors in a set: exit 2 naming the limit" ||
	bad "too many tensors: exit $st: $(cat "$tmp/err")"
"$KERNELBOT" eval "$P" "$C" --trials 0 >/dev/null 2>&1; st=$?
[ "$st" -eq 2 ] && ok "--trials 0: exit 2" || bad "--trials 0: exit $st"
"$KERNELBOT" eval "$P" "$ROOT/tests/fixtures/exploits/cpu/correct.c" --backend cuda >/dev/null 2>"$tmp/err"; st=$?
[ "$st" -ne 0 ] && ok "cuda backend without a GPU (or a .c on cuda) is not a success" || bad "cuda on CPU host exit 0"

done_tests t3001-eval-correct
