#!/bin/sh
# t3011: inputs whose get_inputs() states a structure keep it through the
# judge's input changes, end to end. Upper triangular A and B (a kernel
# that sums only over i <= k <= j) and symmetric A and B (a kernel that
# reads B by rows) are honest kernels that exploit what the problem
# promises: the refresh and the spread changes, applied to those inputs
# as to any other, left them "mismatch"; with the structure kept (no
# refresh, changes only outside the zero pattern, mirrored for the
# symmetric ones) they are correct, and every timed run still changed
# their inputs.
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/structured"

mkdir -p "$tmp/c"
cp "$F/triu_matmul.c" "$F/sym_matmul.c" "$tmp/c/"
cd "$tmp/c"
for p in triu sym; do
	"$KERNELBOT" eval "$F/${p}_matmul.py" ${p}_matmul.c \
		--backend cpu --json --rounds 2 --reps 10 --warmup 1 --timeout 30 \
		>"$tmp/$p.json" 2>"$tmp/$p.err"
	st=$?
	[ "$st" -eq 0 ] && ok "$p: exit 0" || bad "$p: exit $st: $(tail -5 "$tmp/$p.err")"
done
cd "$ROOT"

for p in triu sym; do
	expect "$tmp/$p.json" ${p}_matmul.c 'r["status"] == "correct"' "correct on the changed inputs"
	expect "$tmp/$p.json" ${p}_matmul.c 'all(c["passed"] for c in r["checks"] if c["name"] in ("spot_checks", "timing_inputs_fresh"))' "spot checks and fresh inputs pass"
	# 1 warm-up + 2 x 10 timed runs, every one changed, none refreshed.
	expect "$tmp/$p.json" ${p}_matmul.c 'any(c["name"] == "timing_inputs_fresh" and c["detail"].startswith("21 timed runs on inputs changed") and "inputs 0, 1 kept the structure get_inputs() gave them" in c["detail"] and "permuted" not in c["detail"] and " 0 with nothing to change" in c["detail"] for c in r["checks"])' "both inputs kept their structure, every timed run changed"
	expect "$tmp/$p.json" ${p}_matmul.c 'any(c["name"] == "timing_inputs_fresh" and __import__("re").search(r"moved the expected outputs at (\d+) of \1 spot checks", c["detail"]) and "at 0 of" not in c["detail"] for c in r["checks"])' "the changes moved the expected outputs at every check"
done

done_tests t3011-eval-structured
