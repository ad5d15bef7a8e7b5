#!/bin/sh
# One device call for the foundation: doctor, and the harness under the GPU
# machine's PyTorch (trace of every development problem at real size, and
# the harness's pytest suite when pytest is there). Run from the repo root
# after `make device-bundle`; writes logs under $OUT when set.
set -u
OUT=${OUT:-/tmp}
KB=device-bundle/run
$KB doctor
$KB doctor --json >"$OUT/doctor.json"
P=${KERNELBOT_PROBLEMS:-.gpu-problems}
[ -d "$P" ] || P=../shared/problems
for p in "$P"/[0-9]*.py; do
	s=$(date +%s.%N)
	if $KB trace --json "$p" >"$OUT/ir-$(basename "$p" .py).json" 2>"$OUT/err.txt"; then
		r=ok
	else
		r="FAIL: $(tail -c 300 "$OUT/err.txt")"
	fi
	printf '%-36s %6.1fs %s\n' "$(basename "$p")" "$(awk "BEGIN{print $(date +%s.%N) - $s}")" "$r"
done
if python3 -c 'import pytest' 2>/dev/null; then
	KERNELBOT_PROBLEMS=$P python3 -m pytest -q -p no:cacheprovider tests/harness 2>&1 | tail -n 15
else
	echo "pytest: not installed on this machine"
fi
