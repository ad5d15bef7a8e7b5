#!/bin/sh
# t3012: inputs of few values. Float-carried 4-bit codes hold 16 values,
# all of them a pattern, placed at random: the judge permutes the whole
# input before every run (its values stay the draw's) and changes the
# model's scale, so a kernel that keeps each input's output and replays
# it when the input's bytes repeat never replays: both it and the honest
# kernel are correct, timing_inputs_fresh passes, nothing waits for
# review. A causal mask's zeros and ones are placed by a rule (a
# permutation would break the triangle an honest kernel may rely on) and
# its model holds no state: nothing is left to change, so the speedup
# waits for a person (stale_inputs). A one-hot product's only free value
# is 1.0: the judge leaves the one-hot be rather than write a value
# get_inputs() never gives, so an honest kernel that gathers the
# selected row (what the problem promises) is correct. Sorted bin edges
# are kept as given, never changed: their kernel waits for review too.
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/stale"

mkdir -p "$tmp/c"
cp "$F/codes.c" "$F/codes_replay.c" "$F/onehot_gather.c" "$F/steps.c" "$F/edges.c" "$tmp/c/"
cd "$tmp/c"
"$KERNELBOT" eval "$F/codes.py" codes.c codes_replay.c \
	--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
	>"$tmp/codes.json" 2>"$tmp/codes.err"
st=$?
[ "$st" -eq 0 ] && ok "codes: exit 0" || bad "codes: exit $st: $(tail -5 "$tmp/codes.err")"
"$KERNELBOT" eval "$F/onehot.py" onehot_gather.c \
	--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
	>"$tmp/onehot.json" 2>"$tmp/onehot.err"
st=$?
[ "$st" -eq 0 ] && ok "onehot: exit 0" || bad "onehot: exit $st: $(tail -5 "$tmp/onehot.err")"
"$KERNELBOT" eval "$F/steps.py" steps.c \
	--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
	>"$tmp/steps.json" 2>"$tmp/steps.err"
st=$?
[ "$st" -eq 0 ] && ok "steps: exit 0" || bad "steps: exit $st: $(tail -5 "$tmp/steps.err")"
# Sorted bin edges: kept as given, never changed, so a kernel could keep
# a function of them (their sum here) across calls: even the honest one
# waits for a person.
"$KERNELBOT" eval "$F/edges.py" edges.c \
	--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
	>"$tmp/edges.json" 2>"$tmp/edges.err"
st=$?
[ "$st" -eq 0 ] && ok "edges: exit 0" || bad "edges: exit $st: $(tail -5 "$tmp/edges.err")"
cd "$ROOT"

expect "$tmp/edges.json" edges.c 'r["status"] == "correct" and "stale_inputs" in r["flags"] and r["needs_review"]' "sorted edges never changed: correct, stale_inputs, needs review"
expect "$tmp/edges.json" edges.c 'any(c["name"] == "timing_inputs_fresh" and not c["passed"] and c["detail"].startswith("input 1 never changed (all pattern or sorted)") for c in r["checks"])' "timing_inputs_fresh names the sorted input"
for k in codes.c codes_replay.c; do
	expect "$tmp/codes.json" $k 'r["status"] == "correct" and r["correct"]' "correct"
	expect "$tmp/codes.json" $k '"stale_inputs" not in r["flags"]' "not flagged stale_inputs"
	expect "$tmp/codes.json" $k 'any(c["name"] == "timing_inputs_fresh" and c["passed"] and "every element of each input permuted" in c["detail"] and "kept the structure" not in c["detail"] for c in r["checks"])' "the codes permuted whole before every run"
done
expect "$tmp/steps.json" steps.c 'r["status"] == "correct" and r["correct"]' "correct"
expect "$tmp/steps.json" steps.c '"stale_inputs" in r["flags"] and r["needs_review"]' "flagged stale_inputs: needs review"
expect "$tmp/steps.json" steps.c 'any(c["name"] == "timing_inputs_fresh" and not c["passed"] and "never changed: 0" in c["detail"] and "a replayed output would pass" in c["detail"] for c in r["checks"])' "timing_inputs_fresh failed, saying why"
expect "$tmp/onehot.json" onehot_gather.c 'r["status"] == "correct"' "the one-hot gather: correct (no value get_inputs() never gives)"
expect "$tmp/onehot.json" onehot_gather.c '"mismatch" not in str(r.get("errors", ""))' "no replay suspicion"

done_tests t3012-eval-stale-inputs
