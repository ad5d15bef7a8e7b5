#!/bin/sh
# t3009: the judge's input changes, end to end, with kernels that keep
# state between calls. On bench/incr/matmul.py (y = x @ w, x 128 x 256)
# every timed run permutes all of x and of the weight from the set's
# values (the refresh) and then changes 256 elements of each, one in
# every row and every column; the worker applies both, the judge's copy of each set and the
# reference's recomputation agree with the worker's buffers bit for bit,
# and kernels that diff their inputs against a kept copy (recompute the
# changed rows, or update by linearity) get right answers from them.
# Correctness only: what the attacks gain is a benchmark
# (bench/incr_attack_cpu.sh), never asserted here.
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/bench/incr/matmul.py"

mkdir -p "$tmp/c"
cp "$ROOT/bench/incr/honest.c" "$ROOT/bench/incr/incr_rows.c" "$ROOT/bench/incr/incr_delta.c" "$tmp/c/"
cd "$tmp/c"
"$KERNELBOT" eval "$P" honest.c incr_rows.c incr_delta.c \
	--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
	>"$tmp/out.json" 2>"$tmp/err"
st=$?
cd "$ROOT"
[ "$st" -eq 0 ] && ok "exit 0: all three correct" || bad "exit $st: $(tail -5 "$tmp/err")"

for k in honest.c incr_rows.c incr_delta.c; do
	expect "$tmp/out.json" $k 'r["status"] == "correct"' "correct on the changed inputs"
	expect "$tmp/out.json" $k 'all(c["passed"] for c in r["checks"] if c["name"] in ("spot_checks", "timing_inputs_fresh"))' "spot checks and fresh inputs pass"
	# 1 warm-up + 2 x 10 timed runs, each with 256 changes of x and
	# of the weight (their longest axis), none without; but for the
	# few of x's that drew a value its source holds (dropped: a tie).
	expect "$tmp/out.json" $k 'any(c["name"] == "timing_inputs_fresh" and c["detail"].startswith("21 timed runs on inputs changed") and 10600 <= int(__import__("re").search(r"(\d+) elements changed, at most 512 in a run", c["detail"]).group(1)) <= 10752 and " 0 with nothing to change" in c["detail"] for c in r["checks"])' "256 changes of each input in every timed run"
	# ... each after a refresh of all 32768 elements of x and 65536 of
	# the weight (input 1, the model's state), masked.
	expect "$tmp/out.json" $k 'any(c["name"] == "timing_inputs_fresh" and "permuted from the set'"'"'s values before every run (2064384 elements in all, 2064384 of them with a mask" in c["detail"] and "inputs 1 to 1 the model" in c["detail"] for c in r["checks"])' "all of x and the weight refreshed before every timed run"
	# Every check saw expected outputs the changes had moved.
	expect "$tmp/out.json" $k 'any(c["name"] == "timing_inputs_fresh" and __import__("re").search(r"moved the expected outputs at (\d+) of \1 spot checks", c["detail"]) and "at 0 of" not in c["detail"] for c in r["checks"])' "the changes moved the expected outputs at every check"
done

done_tests t3009-eval-incremental
