#!/bin/sh
# repro-gpu: tests/e2e/t8003 on CUDA: a PR's reproduce command, run as
# printed on the GPU host that confirmed the kernel, gives the same
# recorded environment (GPU, driver, nvcc and its flags, thread settings,
# seed) and a speedup within the reported interval widened 3x.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
need_gpu repro-gpu
KB_REPRO_BACKEND=cuda KERNELBOT="$KERNELBOT" KB_ROOT="$ROOT" KERNELBOT_PYTHON="${PYTHON:-python3}" \
	sh "$ROOT/tests/e2e/t8003-report-reproduce.sh"
