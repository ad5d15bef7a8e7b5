#!/bin/sh
# Compile every IR fixture with the CPU backend and check the kernel
# against its problem with the trusted driver (run_kernel.py). Prints one
# line per problem and "compiler-cpu: N passed, N failed".
# Usage: tests/compiler/check_cpu.sh [NAME...]   (default: all fixtures)
set -u
KB=${KERNELBOT:-build/default/kernelbot}
PY=${KERNELBOT_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
names=${*:-$(ls tests/fixtures/ir | sed 's/\.json$//')}
for n in $names; do
	prob=tests/fixtures/compiler/problems/$n.py
	[ -f "$prob" ] || prob=tests/fixtures/compiler/ops/$n.py
	if ! "$KB" compile "tests/fixtures/ir/$n.json" -o "$tmp/$n.c" 2>"$tmp/err"; then
		echo "FAIL $n: compile: $(cat "$tmp/err")"
		fail=$((fail + 1))
		continue
	fi
	if res=$(OMP_NUM_THREADS=2 "$PY" tests/compiler/run_kernel.py "$prob" "$tmp/$n.c" 2>&1); then
		echo "ok   $n: $res"
		pass=$((pass + 1))
	else
		echo "FAIL $n: $res" | head -c 3000
		echo
		fail=$((fail + 1))
	fi
done
echo "compiler-cpu: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
