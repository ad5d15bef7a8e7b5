#!/bin/sh
# t3012: inputs the judge cannot change between timed runs. Float-carried
# 4-bit codes hold 16 values, all of them a pattern: nothing get_inputs()
# could give is left to change, so a kernel that keeps each input's output
# and replays it passes every spot check. Such a result is correct but its
# speedup waits for a person: timing_inputs_fresh fails and stale_inputs
# asks for review, for the replay and the honest kernel alike. A one-hot
# product's only free value is 1.0: the judge leaves it be rather than
# write a value get_inputs() never gives, so an honest kernel that gathers
# the selected row (what the problem promises) is correct.
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/stale"

mkdir -p "$tmp/c"
cp "$F/codes.c" "$F/codes_replay.c" "$F/onehot_gather.c" "$tmp/c/"
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
cd "$ROOT"

for k in codes.c codes_replay.c; do
	expect "$tmp/codes.json" $k 'r["status"] == "correct" and r["correct"]' "correct"
	expect "$tmp/codes.json" $k '"stale_inputs" in r["flags"] and r["needs_review"]' "flagged stale_inputs: needs review"
	expect "$tmp/codes.json" $k 'any(c["name"] == "timing_inputs_fresh" and not c["passed"] and "all pattern, never changed" in c["detail"] and "a replayed output would pass" in c["detail"] for c in r["checks"])' "timing_inputs_fresh failed, saying why"
done
expect "$tmp/onehot.json" onehot_gather.c 'r["status"] == "correct"' "the one-hot gather: correct (no value get_inputs() never gives)"
expect "$tmp/onehot.json" onehot_gather.c '"mismatch" not in str(r.get("errors", ""))' "no replay suspicion"

done_tests t3012-eval-stale-inputs
