#!/bin/sh
# t3002: KernelBench-format solutions (ModelNew) on the slow path, here in
# pure PyTorch on the CPU backend: a correct one passes, one returning
# torch.empty it never writes (the allocator-reuse exploit) and one with a
# wrong shape do not.
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
F="$ROOT/tests/fixtures/eval"

"$KERNELBOT" eval "$P" "$F/kb_correct.py" "$F/kb_empty.py" "$F/kb_wrong_shape.py" \
	--backend cpu --json --trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 20 \
	>"$tmp/out.json" 2>"$tmp/err"
st=$?
[ "$st" -eq 1 ] && ok "exit 1" || bad "exit $st: $(tail -5 "$tmp/err")"
expect "$tmp/out.json" kb_correct.py 'r["status"] == "correct" and r["timings_ms"]["candidate"]["runs"] == 6' "a correct ModelNew passes and is timed"
expect "$tmp/out.json" kb_correct.py 'any(c["name"] == "spot_checks" and "read from the run" in c["detail"] and "; 0 read from" not in c["detail"] for c in r["checks"])' "its timed runs' checks read sealed snapshots"
expect "$tmp/out.json" kb_correct.py '"build_s" in r' "its build time is reported"
expect "$tmp/out.json" kb_empty.py 'r["status"] == "mismatch"' "torch.empty never written: mismatch"
expect "$tmp/out.json" kb_wrong_shape.py 'r["status"] == "mismatch" and "expected" in r["errors"][0]' "wrong output shape: mismatch"
expect "$tmp/out.json" kb_correct.py 'any(c["name"] == "lockdown" and not c["passed"] for c in r["checks"])' "the missing exec lockdown of the slow path is reported"

done_tests t3002-eval-kernelbench
