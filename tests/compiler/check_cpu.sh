#!/bin/sh
# Compile IR fixtures with the CPU backend, under the default schedule and
# with every fusion boundary cut, and verify both kernels against their
# problem through `kernelbot eval` (the real evaluator: sandboxed workers,
# poisoned outputs, fresh inputs; one batch per problem, no baselines).
# Usage: tests/compiler/check_cpu.sh [NAME...]   (default: every fixture)
#
# About 5 to 20 s per problem, so `make test` does not run it over all 90
# fixtures: tests/unit/test_compiler.c checks them all with the faster
# trusted ctypes driver (run_kernel.py), and tests/e2e/t5000 and t5001 put
# compiled kernels through the evaluator.
set -u
KB=${KERNELBOT:-build/default/kernelbot}
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
EVAL="--backend cpu --trials 2 --baselines none --rounds 1 --reps 1 --warmup 0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${KB_ROOT:-.}/tests/lib.sh"
names=${*:-$(ls tests/fixtures/ir | sed 's/\.json$//')}
for n in $names; do
	prob=tests/fixtures/compiler/problems/$n.py
	[ -f "$prob" ] || prob=tests/fixtures/ops/$n.py
	if ! "$KB" compile "tests/fixtures/ir/$n.json" -o "$tmp/$n.c" 2>"$tmp/err" ||
	    ! "$KB" compile "tests/fixtures/ir/$n.json" --schedule '{"cuts":"ffffffffffffffff"}' \
		-o "$tmp/$n-cuts.c" 2>>"$tmp/err"; then
		fail "$n: compile" "$(cat "$tmp/err")"
		continue
	fi
	# shellcheck disable=SC2086
	if OMP_NUM_THREADS=2 "$KB" eval "$prob" "$tmp/$n.c" "$tmp/$n-cuts.c" $EVAL >"$tmp/out" 2>&1; then
		ok "$n (default and every cut)"
	else
		fail "$n" "$(head -20 "$tmp/out")"
	fi
done
t_summary compiler-cpu
