#!/bin/sh
# t3018: Python numbers among forward's arguments. The trace bakes them
# into the graph, so the kernel gets the tensors only; the judge passes
# them to the reference (and to a KernelBench solution's ModelNew) as
# drawn. The compiled kernel is correct, one that ignores them is not,
# and a problem whose number changes between draws is refused with the
# position and both values (a baked-in kernel could not be right).
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/eval"
P="$F/scalar_args.py"
FAST="--backend cpu --trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 30"

"$KERNELBOT" compile "$P" -o "$tmp/compiled.c" 2>"$tmp/cerr" && ok "the graph compiler takes it" ||
	bad "compile: $(tail -3 "$tmp/cerr")"
"$KERNELBOT" eval "$P" "$tmp/compiled.c" "$F/scalar_ignored.c" "$F/kb_scalar_args.py" $FAST --json \
	>"$tmp/out.json" 2>"$tmp/err"
st=$?
[ "$st" -eq 1 ] && ok "exit 1 (one candidate wrong)" || bad "exit $st: $(tail -5 "$tmp/err")"
expect "$tmp/out.json" compiled.c 'r["status"] == "correct" and "4 input sets (2 trials x 2 shapes)" in str(r["checks"])' "the compiled kernel: correct on every draw and the variant"
expect "$tmp/out.json" scalar_ignored.c 'r["status"] == "mismatch"' "a kernel without the numbers: mismatch"
expect "$tmp/out.json" kb_scalar_args.py 'r["status"] == "correct"' "a ModelNew taking the numbers: correct"

# A number drawn afresh each time cannot be baked in: refused, exit 2.
sed -e 's/^def get_inputs():$/import random\n\n\ndef get_inputs():/' \
	-e 's/return \[torch.randn(rows, features), 0.5, 3, True, 1.5\]/return [torch.randn(rows, features), random.random(), 3, True, 1.5]/' \
	"$P" >"$tmp/drawn.py"
grep -q 'random.random()' "$tmp/drawn.py" || bad "the drawn problem was not made"
"$KERNELBOT" eval "$tmp/drawn.py" "$tmp/compiled.c" $FAST --json >"$tmp/drawn.json" 2>"$tmp/drawn.err"
st=$?
[ "$st" -eq 2 ] && ok "a number that changes between draws: exit 2" || bad "exit $st: $(tail -3 "$tmp/drawn.err")"
grep -q 'get_input[a-z_]*()\[1\] is .* here and .* in another draw' "$tmp/drawn.err" &&
	ok "the message names the position and both values" || bad "message: $(tail -3 "$tmp/drawn.err")"

done_tests t3018-eval-scalar-inputs
