#!/bin/sh
# t3007: every timed run can be checked, and a kernel cannot tell which.
# Kernels that are right in the trials and wrong on some timed runs (on
# buffers the trials never used, on a random share of the calls, when
# the poison says "timing", or finished by a thread after the call
# returned) come out "mismatch" at the default check fraction and the
# default 10 rounds of 10 timed runs; an honest kernel in the same batch
# stays correct, with every timing set checked.
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
X="$ROOT/tests/fixtures/exploits/cpu"

mkdir -p "$tmp/c"
for f in correct.c skip_new_buffers.c poison_tell.c skip_random.c skip_random5.c \
	finish_after_return.c; do
	cp "$X/$f" "$tmp/c/$f"
done

# --trials 3: the fixtures count 9 sets x 2 trial runs (and 3 warm-ups)
# before they start skipping. --rounds 10 --reps 10 --warmup 3 are the
# defaults (without --rounds timing is adaptive: 100 runs or more).
cd "$tmp/c"
"$KERNELBOT" eval "$P" correct.c skip_new_buffers.c poison_tell.c skip_random.c \
	skip_random5.c finish_after_return.c \
	--backend cpu --json --trials 3 --rounds 10 --reps 10 --warmup 3 --timeout 20 \
	>"$tmp/out.json" 2>"$tmp/err"
st=$?
cd "$ROOT"
[ "$st" -eq 1 ] && ok "exit 1: evaluated, not all correct" || bad "exit $st: $(tail -5 "$tmp/err")"

expect "$tmp/out.json" correct.c 'r["status"] == "correct"' "the honest kernel in the same batch stays correct"
expect "$tmp/out.json" correct.c 'all(c["passed"] for c in r["checks"] if c["name"] == "spot_checks")' "its spot checks pass"
# p = 0.8 over 100 timed runs: each of the 3 sets' 33 or so runs is
# checked about 27 times; a set never checked is (0.2)^33 away.
expect "$tmp/out.json" correct.c 'len(r["timing"]["checks"]["by_set"]) == 3 and all(c > 0 for c, n in r["timing"]["checks"]["by_set"].values())' "every timing set checked"
expect "$tmp/out.json" correct.c 'r["timing"]["checks"]["runs"] == 100 and r["timing"]["checks"]["fraction"] == 0.8 and 50 <= r["timing"]["checks"]["checked"] <= 100' "100 timed runs, about 80 checked at p = 0.8"
expect "$tmp/out.json" correct.c 'any(c["name"] == "spot_checks" and "escapes with probability" in c["detail"] for c in r["checks"])' "the spot_checks detail states the escape bound"
expect "$tmp/out.json" correct.c '("; %d read from the run" % (r["timing"]["checks"]["checked"] + r["timing"]["checks"]["extra"])) in str(r["checks"])' "every check read the run's sealed snapshot"
expect "$tmp/out.json" skip_new_buffers.c 'r["status"] == "mismatch" and "timing round" in r["errors"][0]' "full work on the trials' two buffers, a quarter elsewhere: mismatch in timing"
expect "$tmp/out.json" poison_tell.c 'r["status"] == "mismatch"' "telling trials from timing by the poison: mismatch"
expect "$tmp/out.json" skip_random.c 'r["status"] == "mismatch" and "timing round" in r["errors"][0]' "a quarter of the rows on 50% of the timed runs: mismatch"
# Exactly 5 of the 100 timed runs skip (one in each 20 calls): each is
# checked with p = 0.8, so this escapes with probability 0.2^5 = 0.032%
# (the test's only chance failure).
expect "$tmp/out.json" skip_random5.c 'r["status"] == "mismatch" and "timing round" in r["errors"][0]' "a quarter of the rows on 5% of the timed runs: mismatch"
expect "$tmp/out.json" finish_after_return.c 'r["status"] == "mismatch" and "timing round" in r["errors"][0]' "outputs finished by a thread after return: mismatch (the snapshot)"

done_tests t3007-eval-checks
