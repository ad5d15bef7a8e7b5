#!/bin/sh
# t3013: the model's state and integer inputs change between timed runs
# too. gain_memo.c keeps a costly function of the weight for the weight's
# buffer; phase_memo.c keeps one of integer positions beside a float
# activation while the buffer and four probed positions look the same.
# With only the floating arguments changed, the weight and the positions
# never changed in timing: both replayed, correct, at many times their
# honest twins' speed. Now the weight is refreshed and changed as an
# argument is (the reference computes the outputs of the changed state):
# gain_memo's kept gain is stale and its timed runs mismatch. The
# positions are permuted whole, with their own values, before every run:
# phase_memo recomputes every time and gains nothing. The honest twins
# stay correct. The Python worker (KernelBench's ModelNew) takes the
# changed state too, copied into the ModelNew's weight before the call:
# a ModelNew that keeps the gain per weight storage mismatches.
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/params"

mkdir -p "$tmp/c"
cp "$F/gain.c" "$F/gain_memo.c" "$F/phase.c" "$F/phase_memo.c" "$tmp/c/"
cd "$tmp/c"
for p in gain phase; do
	eval_cpu $p "$F/$p.py" $p.c ${p}_memo.c
done
"$KERNELBOT" eval "$F/gain.py" "$F/kb_gain.py" "$F/kb_gain_memo.py" \
	--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
	>"$tmp/kb.json" 2>"$tmp/kb.err"
st=$?
[ "$st" -le 1 ] && [ -s "$tmp/kb.json" ] && ok "kb: exit $st, results" ||
	bad "kb: exit $st: $(tail -5 "$tmp/kb.err")"
cd "$ROOT"

expect "$tmp/kb.json" kb_gain.py 'r["status"] == "correct" and any(c["name"] == "timing_inputs_fresh" and c["passed"] and "inputs 1 to 1 the model" in c["detail"] for c in r["checks"])' "the ModelNew: correct, its weight changed every run"
expect "$tmp/kb.json" kb_gain_memo.py 'r["status"] == "mismatch" and "timed run" in str(r.get("errors"))' "the ModelNew's memo: a timed run's output mismatched"

for p in gain phase; do
	expect "$tmp/$p.json" $p.c 'r["status"] == "correct" and not r["needs_review"]' "$p.c (honest): correct"
	expect "$tmp/$p.json" $p.c 'all(c["passed"] for c in r["checks"] if c["name"] in ("spot_checks", "timing_inputs_fresh"))' "$p.c: spot checks and fresh inputs pass"
done
expect "$tmp/gain.json" gain_memo.c 'r["status"] == "mismatch" and "timed run" in str(r.get("errors"))' "the weight's memo: a timed run's output mismatched"
expect "$tmp/gain.json" gain.c 'any(c["name"] == "timing_inputs_fresh" and "every element of each input permuted" in c["detail"] and "inputs 1 to 1 the model" in c["detail"] for c in r["checks"])' "the weight (input 1) refreshed before every run"
# The positions' memo: correct, for it recomputed in every timed run; no
# gain over the honest kernel (it replayed at a tenth of its time).
got=$("$PY" - "$tmp/phase.json" <<'PYEOF'
import json, sys
rs = {r["candidate"].rsplit("/", 1)[-1]: r for r in json.load(open(sys.argv[1]))}
m, h = rs["phase_memo.c"], rs["phase.c"]
med = lambda r: (r.get("timings_ms") or {}).get("candidate", {}).get("median")
if m["status"] != "correct":
    print(m["status"] == "mismatch")
else:
    print(med(m) is not None and med(h) is not None and med(m) > 0.4 * med(h))
PYEOF
)
[ "$got" = True ] && ok "the positions' memo: no unearned speedup" ||
	bad "the positions' memo: no unearned speedup (got $got)"

done_tests t3013-eval-fresh-state
