#!/bin/sh
# kernelbot optimize over the 16 development problems on a GPU host: the
# figures of issue #6's "Shows" (correct, faster than eager, geometric
# means over eager and torch.compile, faster than torch.compile with the
# interval above 1), within a candidate budget and a wall-clock limit per
# problem. Prints a markdown table for docs/BENCHMARKS.md last.
#
#   sh bench/optimize_gpu.sh [PROBLEM.py ...]
#
# KERNELBOT: the kernelbot to run (default: device-bundle/run, else
# build/default/kernelbot); PROBLEMS: default /work/shared/problems or
# shared/problems; BUDGET (64 candidates); WALL_MINUTES (10); OUT (a
# temporary folder): each problem's --out folder is OUT/NN_name/;
# OPTIMIZE_ARGS: more flags for every run (e.g. "--per-generation 16").
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
KB=${KERNELBOT:-}
if [ -z "$KB" ]; then
	if [ -x "$here/device-bundle/run" ]; then KB="$here/device-bundle/run"; else KB="$here/build/default/kernelbot"; fi
fi
PY=${PYTHON:-python3}
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-$PY}
dir=${PROBLEMS:-}
[ -n "$dir" ] || for d in /work/shared/problems "$here/shared/problems" "$here/../shared/problems"; do
	[ -d "$d" ] && { dir=$d; break; }
done
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
if [ $# -gt 0 ]; then problems="$*"; else problems=$(ls "$dir"/[0-9]*.py); fi
for p in $problems; do
	n=$(basename "$p" .py)
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$KB" optimize "$p" --backend cuda --budget "${BUDGET:-64}" --wall-minutes "${WALL_MINUTES:-10}" \
		--out "$out/$n" ${OPTIMIZE_ARGS:-} >"$out/$n.log" 2>&1
	echo "$n: exit $? in $(($(date +%s) - start)) s: $(grep -v '^optimize:' "$out/$n.log" | head -n 1)"
done
echo "runs in $out"
exec "$PY" "$here/bench/optimize_table.py" "$out"
