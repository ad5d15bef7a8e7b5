#!/bin/sh
# t3016: a square input whose diagonal get_inputs() placed by a rule (a
# diagonally dominant matrix) keeps it under the judge's changes: an
# honest Jacobi solve (it converges only on a diagonally dominant matrix)
# is correct and its timed runs checked on changed inputs, not lost to a
# refresh that scattered the diagonal (#22, the fifth outside attack's F4:
# mismatch before).
. "$(dirname "$0")/eval-lib.sh"

mkdir -p "$tmp/c"
cp "$ROOT/tests/fixtures/diagdom/jacobi.c" "$tmp/c/"
cd "$tmp/c"
eval_cpu jacobi "$ROOT/tests/fixtures/diagdom/solve.py" jacobi.c
cd "$ROOT"
expect "$tmp/jacobi.json" jacobi.c 'r["status"] == "correct" and "stale_inputs" not in r["flags"]' "Jacobi on a diagonally dominant matrix: correct"
expect "$tmp/jacobi.json" jacobi.c 'all(c["passed"] for c in r["checks"] if c["name"] in ("timing_inputs_fresh", "timing_outputs_checked"))' "its timed runs checked on changed inputs"

done_tests t3016-eval-diagonal
