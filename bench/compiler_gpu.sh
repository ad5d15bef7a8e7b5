#!/bin/sh
# The graph compiler on a GPU host, in one call: generate CUDA kernels for
# the 16 development problems, build them with nvcc, check and time them
# against eager PyTorch and torch.compile (bench/compiler_gpu.py; switches
# to `kernelbot eval` once it exists). The table is printed last.
#
#   sh bench/compiler_gpu.sh [PROBLEM.py ...]
#
# KERNELBOT: the kernelbot to run (default: device-bundle/run, else
# build/default/kernelbot); PROBLEMS: default /work/shared/problems or
# shared/problems; SCHEDULE: a schedule JSON for every problem;
# BENCH_RUNS (50); NO_COMPILE=1 skips torch.compile (it takes minutes).
# bench/ir/NN.json (full-size IR of each problem, from
# tests/compiler/trace_batch.py) is compiled when present, else the .py
# is traced through the harness.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
KB=${KERNELBOT:-}
if [ -z "$KB" ]; then
	if [ -x "$here/device-bundle/run" ]; then KB="$here/device-bundle/run"; else KB="$here/build/default/kernelbot"; fi
fi
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
PY=${PYTHON:-python3}
dir=${PROBLEMS:-}
[ -n "$dir" ] || for d in /work/shared/problems "$here/shared/problems" "$here/../shared/problems"; do
	[ -d "$d" ] && { dir=$d; break; }
done
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
if [ $# -gt 0 ]; then problems="$*"; else problems=$(ls "$dir"/[0-9]*.py); fi
pairs=""
# the DLPack header: the system's, else the one device-bundle carries
inc=-I/usr/include
[ -d "$here/device-bundle/include/dlpack" ] && inc="$inc -I$here/device-bundle/include"
for p in $problems; do
	n=$(basename "$p" .py)
	# the traced IR of the 16 problems ships in bench/ir/, so no harness is needed here
	src=$p
	[ -f "$here/bench/ir/$n.json" ] && src="$here/bench/ir/$n.json"
	if ! "$KB" compile "$src" --backend cuda ${SCHEDULE:+--schedule "$SCHEDULE"} -o "$out/$n.cu" 2>"$out/$n.compile.log"; then
		echo "$n: compile: $(tail -n 3 "$out/$n.compile.log")"
		continue
	fi
	libs=""
	grep -q cublas_v2.h "$out/$n.cu" && libs="$libs -lcublas"
	grep -q cudnn.h "$out/$n.cu" && libs="$libs -lcudnn"
	if ! "$NVCC" -O3 -arch=sm_90 --shared -Xcompiler -fPIC $inc -o "$out/$n.so" "$out/$n.cu" $libs \
	    >"$out/$n.nvcc.log" 2>&1; then
		echo "$n: nvcc: $(head -c 2000 "$out/$n.nvcc.log")"
		continue
	fi
	pairs="$pairs $p $out/$n.so"
done
echo "kernels in $out"
[ -n "$pairs" ] || exit 1
# shellcheck disable=SC2086
exec "$PY" "$here/bench/compiler_gpu.py" --runs "${BENCH_RUNS:-50}" ${NO_COMPILE:+--no-compile} $pairs
