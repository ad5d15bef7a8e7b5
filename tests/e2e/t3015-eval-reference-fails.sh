#!/bin/sh
# t3015: the problem's reference raises on inputs the judge changed
# (rows of probabilities whose sums the changes move: the reference
# checks them and raises; a property the structure tests do not see).
# That is no fault of the candidate's: its trials passed, its timed runs
# go unchecked from then on, and the result is correct and
# waits for review (stale_inputs) with the reason, not runtime_error.
# The reference process outlives its failed request (the eager baseline
# is timed after it).
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/refail"

mkdir -p "$tmp/c"
cp "$F/simplex.c" "$tmp/c/"
cd "$tmp/c"
eval_cpu simplex "$F/simplex.py" simplex.c
cd "$ROOT"
expect "$tmp/simplex.json" simplex.c 'r["status"] == "correct" and r["needs_review"] and "stale_inputs" in r["flags"]' "correct, waiting for review"
expect "$tmp/simplex.json" simplex.c 'any(c["name"] == "timing_inputs_fresh" and not c["passed"] and "reference failed on the inputs the judge changed" in c["detail"] and "each row must sum to 1" in c["detail"] for c in r["checks"])' "the reason named in timing_inputs_fresh"
expect "$tmp/simplex.json" simplex.c '(r.get("speedup") or {}).get("eager") is not None' "the eager baseline timed after the failed reference"

done_tests t3015-eval-reference-fails
