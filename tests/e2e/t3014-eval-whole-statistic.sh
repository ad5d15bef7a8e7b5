#!/bin/sh
# t3014: a statistic of the whole input moves from one timed run to the
# next. lse_memo.c keeps the logsumexp of each input buffer (a global
# log_softmax), norm_memo.c its norm, and skip the reduction while the
# buffer is the same one. A refresh that only permuted an input's values
# left every function of their multiset the same in every run: both
# passed, correct, at several times their honest twins' speed. Now each
# run's input is rebuilt from windows of a source laid out once per set
# (kbh/judge_skew.py): its extremes dropped, a share of band values in
# place of middle ones, so the kept statistic is stale at a spot check.
# The honest twins stay correct.
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/wholestat"

mkdir -p "$tmp/c"
cp "$F/lse.c" "$F/lse_memo.c" "$F/norm.c" "$F/norm_memo.c" "$tmp/c/"
cd "$tmp/c"
for p in lse norm; do
	eval_cpu $p "$F/$p.py" $p.c ${p}_memo.c
done
cd "$ROOT"

for p in lse norm; do
	expect "$tmp/$p.json" $p.c 'r["status"] == "correct"' "$p.c (honest): correct"
	expect "$tmp/$p.json" $p.c 'all(c["passed"] for c in r["checks"] if c["name"] in ("spot_checks", "timing_inputs_fresh"))' "$p.c: spot checks and fresh inputs pass"
	expect "$tmp/$p.json" ${p}_memo.c 'r["status"] == "mismatch" and "timed run" in str(r.get("errors"))' "${p}_memo.c: a timed run's output mismatched"
done

done_tests t3014-eval-whole-statistic
