#!/bin/sh
# The graph compiler on a GPU host, in one call: CUDA kernels for the 16
# development problems (or the PROBLEM.py files named), each judged and
# timed by the real evaluator (`kernelbot eval --json`: correctness trials,
# eager and torch.compile baselines, speedups with 95% intervals), with the
# table printed last. The same run as tests/gpu/compiler-gpu.sh, keeping
# the kernels and the evaluator's JSON in OUT (default: a new folder under
# /tmp, printed) for docs/BENCHMARKS.md.
#
#   sh bench/compiler_gpu.sh [PROBLEM.py ...]
#
# Env: as tests/gpu/compiler-gpu.sh (KERNELBOT, KERNELBOT_PROBLEMS or
# PROBLEMS, SCHEDULE, EVAL_ARGS), plus OUT.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kb-bench-compiler.XXXXXX")}
echo "kernels and results in $out"
COMPILER_GPU_OUT=$out KERNELBOT_PROBLEMS=${KERNELBOT_PROBLEMS:-${PROBLEMS:-}} \
    exec sh "$here/tests/gpu/compiler-gpu.sh" "$@"
