#!/bin/sh
# make test-gpu (second part): the graph compiler's CUDA backend on the 16
# development problems at full size, on a GPU host. Each problem is
# compiled with `kernelbot compile --backend cuda` (from the full-size IR in
# bench/ir/ when it is there, so no tracing is needed) and judged by the
# real evaluator, `kernelbot eval --json`. Prints one table (problem,
# status, kernel/eager/torch.compile ms, speedups with 95% intervals, % of
# the measured memory roofline for the memory-bound ones) and exits 1 when
# any problem does not compile or is not judged correct.
#
#   sh tests/gpu/compiler-gpu.sh [PROBLEM.py ...]    (default: all 16)
#
# Env: KERNELBOT (the binary; default device-bundle/run, else
# build/default/kernelbot), KERNELBOT_PROBLEMS (the problems' folder;
# default ../shared/problems beside the repository, else shared/problems),
# SCHEDULE (a schedule JSON or @FILE for every problem), EVAL_ARGS (extra
# `kernelbot eval` flags, e.g. "--rounds 5 --baselines eager" for a quicker
# run), COMPILER_GPU_OUT (keep kernels and results there),
# COMPILER_GPU_EXPERIMENTAL=1 (afterwards, the problems that the schedule's
# off-by-default paths change, 02 03 04 10 11 13 15, again with
# {"row_cache": true, "row_regs": false, "attn": true}: a second table that
# reports and never fails the run; row_regs is off there because it wins
# over row_cache where both apply, so the table is the shared-memory path).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
dir=${KERNELBOT_PROBLEMS:-}
[ -n "$dir" ] || for d in "$ROOT/../shared/problems" "$ROOT/shared/problems" /work/shared/problems; do
	[ -d "$d" ] && { dir=$d; break; }
done
need_gpu compiler-gpu
if [ $# -gt 0 ]; then problems="$*"; else problems=$(ls "$dir"/[0-9]*.py 2>/dev/null); fi
if [ -z "$problems" ]; then
	echo "compiler-gpu: no problems (set KERNELBOT_PROBLEMS)" >&2
	exit 1
fi
if [ -n "${COMPILER_GPU_OUT:-}" ]; then
	out=$COMPILER_GPU_OUT
	mkdir -p "$out" || exit 1
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/kb-compiler-gpu.XXXXXX") || exit 1
	trap 'rm -rf "$out"' EXIT
fi
echo "compiler-gpu: $("$KERNELBOT" --version) on $(nvidia-smi -L | head -n 1)"
for p in $problems; do
	n=$(basename "$p" .py)
	src=$p
	[ -f "$ROOT/bench/ir/$n.json" ] && src="$ROOT/bench/ir/$n.json"
	rm -f "$out/$n.json"
	if ! "$KERNELBOT" compile "$src" --backend cuda ${SCHEDULE:+--schedule "$SCHEDULE"} \
	    -o "$out/$n.cu" 2>"$out/$n.compile.log"; then
		echo "$n: compile failed: $(tail -n 3 "$out/$n.compile.log")"
		continue
	fi
	# shellcheck disable=SC2086
	"$KERNELBOT" eval "$p" "$out/$n.cu" --backend cuda --json ${EVAL_ARGS:-} \
	    >"$out/$n.json" 2>"$out/$n.eval.log"
	echo "$n: eval exit $? ($(wc -c <"$out/$n.json") bytes of JSON)"
done
# shellcheck disable=SC2086
"$PY" "$ROOT/tests/gpu/compiler_table.py" "$out" $problems
rc=$?
if [ -n "${COMPILER_GPU_EXPERIMENTAL:-}" ]; then
	exp="$out/experimental"
	mkdir -p "$exp"
	sel=""
	for p in $problems; do
		case $(basename "$p") in
		02_*|03_*|04_*|10_*|11_*|13_*|15_*) sel="$sel $p" ;;
		esac
	done
	echo
	echo "compiler-gpu: experimental paths (row_cache, attn), reported only"
	for p in $sel; do
		n=$(basename "$p" .py)
		src=$p
		[ -f "$ROOT/bench/ir/$n.json" ] && src="$ROOT/bench/ir/$n.json"
		if "$KERNELBOT" compile "$src" --backend cuda --schedule '{"row_cache": true, "row_regs": false, "attn": true}' \
		    -o "$exp/$n.cu" 2>"$exp/$n.compile.log"; then
			# shellcheck disable=SC2086
			"$KERNELBOT" eval "$p" "$exp/$n.cu" --backend cuda --json ${EVAL_ARGS:-} \
			    >"$exp/$n.json" 2>"$exp/$n.eval.log"
		fi
	done
	# shellcheck disable=SC2086
	[ -n "$sel" ] && "$PY" "$ROOT/tests/gpu/compiler_table.py" "$exp" $sel
fi
exit $rc
