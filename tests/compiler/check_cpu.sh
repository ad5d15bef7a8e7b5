#!/bin/sh
# Compile IR fixtures with the CPU backend and check every kernel against
# its problem with the trusted driver (run_kernel.py, one process for all).
# Usage: tests/compiler/check_cpu.sh [NAME...]   (default: every fixture)
set -u
KB=${KERNELBOT:-build/default/kernelbot}
PY=${KERNELBOT_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pairs=""
names=${*:-$(ls tests/fixtures/ir | sed 's/\.json$//')}
for n in $names; do
	prob=tests/fixtures/compiler/problems/$n.py
	[ -f "$prob" ] || prob=tests/fixtures/ops/$n.py
	if ! "$KB" compile "tests/fixtures/ir/$n.json" -o "$tmp/$n.c" 2>"$tmp/err"; then
		echo "FAIL $n: compile: $(cat "$tmp/err")"
		fail=$((fail + 1))
		continue
	fi
	pairs="$pairs $prob $tmp/$n.c"
done
# shellcheck disable=SC2086
OMP_NUM_THREADS=2 "$PY" tests/compiler/run_kernel.py $pairs > "$tmp/out" 2>&1
set -- $pairs
while [ $# -ge 2 ]; do
	IFS= read -r line || line="(no result)"
	echo "$(basename "$1" .py): $line"
	case $line in ok*) ;; *) fail=$((fail + 1)) ;; esac
	shift 2
done < "$tmp/out"
echo "compiler-cpu: $fail failed"
[ "$fail" -eq 0 ]
