#!/bin/sh
# t3010: the worker's clock runs in the candidate's process, the judge's
# does not. A kernel that rewrites the worker's start time (it reports a
# tenth of its call) is flagged untimed_work by the judge's clock around
# each timed request, and the honest kernel of the same arithmetic in the
# same batch is not: the comparison reads the runs the host disturbed
# least, so it holds on a loaded machine too. Check that the forgery
# landed (runs the judge's floor lifted: a CPU run counts at least the
# judge's clock around it less the allowance), else the flag would prove
# nothing. forged_partial.c forges 3 calls of 4 at random, so the runs the
# flag reads are honest (an outside attack passed so at 5x): the floor
# keeps its reported median near the honest one. A kernel whose source
# reaches for its caller's frame is flagged timer_tampering by the static
# check and asks for review.
. "$(dirname "$0")/eval-lib.sh"
X="$ROOT/tests/fixtures/exploits/cpu"
# scale_bias.py at 1024 x 2048: 8 MiB inputs, a CPU call of tens of
# milliseconds and a refresh of the inputs before it of about as long,
# which an allowance for the whole request would let a forgery hide (an
# outside attack hid 1.5 to 15x so): the floor reads the judge's clock
# from the worker's mark just before the call.
P="$tmp/scale_bias_wide.py"
sed -e 's/^rows = 64$/rows = 1024/' -e 's/^features = 256$/features = 2048/' \
	"$ROOT/tests/fixtures/eval/scale_bias.py" >"$P"
grep -q '^rows = 1024$' "$P" && grep -q '^features = 2048$' "$P" || bad "the wide problem was not made"

mkdir -p "$tmp/c"
cp "$X/correct.c" "$X/forged_clock.c" "$X/forged_partial.c" "$tmp/c/"
# The honest arithmetic beside a reach for the caller's frame (how a
# forgery finds the worker's start time without naming a clock): the
# static check's timer_tampering asks for review.
{ cat "$X/correct.c"; printf 'void *kb_frame(void);\nvoid *kb_frame(void) { return __builtin_frame_address(0); }\n'; } >"$tmp/c/frame.c"
cd "$tmp/c"
"$KERNELBOT" eval "$P" correct.c forged_clock.c forged_partial.c frame.c --backend cpu --json --trials 2 --rounds 5 --reps 6 \
	--warmup 2 --timeout 30 >"$tmp/out.json" 2>"$tmp/err"
st=$?
cd "$ROOT"
[ "$st" -eq 0 ] && ok "exit 0: both correct in value" || bad "exit $st: $(tail -5 "$tmp/err")"

expect "$tmp/out.json" correct.c 'r["status"] == "correct" and "untimed_work" not in r["flags"]' "the honest kernel: correct, not flagged"
expect "$tmp/out.json" correct.c 'any(c["name"] == "no_untimed_work" and c["passed"] and "the judge" in c["detail"] for c in r["checks"])' "its no_untimed_work check passed, the judge's clock included"
"$PY" - "$tmp/out.json" <<'PYEOF' && ok "the forgeries landed (runs floored), and gained little: reported medians over 0.6 of the honest one" || bad "floor: $(cat "$tmp/out.json" | head -c 400)"
import json, sys
by = {r["candidate"].rsplit("/", 1)[-1]: r for r in json.load(open(sys.argv[1]))}
h = by["correct.c"]["timings_ms"]["candidate"]["median"]
ok = True
for n in ("forged_clock.c", "forged_partial.c"):
    r = by[n]
    floored, f = r["timing"].get("clock_floored", 0), r["timings_ms"]["candidate"]["median"]
    print("# %s: %d runs floored, median %.4g ms against the honest %.4g ms" % (n, floored, f, h))
    ok = ok and floored >= r["timing"]["rounds"] and f > 0.6 * h
sys.exit(0 if ok else 1)
PYEOF
expect "$tmp/out.json" forged_clock.c '"untimed_work" in r["flags"]' "the forged clock: flagged untimed_work"
expect "$tmp/out.json" forged_clock.c 'any(c["name"] == "no_untimed_work" and not c["passed"] and "the judge'"'"'s clock" in c["detail"] for c in r["checks"])' "no_untimed_work failed, naming the judge's clock"
expect "$tmp/out.json" frame.c 'r["status"] == "correct" and "timer_tampering" in r["flags"] and r["needs_review"]' "a frame walk: correct, timer_tampering, needs review"
expect "$tmp/out.json" correct.c 'not r["needs_review"]' "the honest kernel: no review"
expect "$tmp/out.json" correct.c 'r["timing"]["clock_ref_ms"]["0"] > 0' "the null worker's reference was measured"
done_tests t3010-eval-forged-clock
