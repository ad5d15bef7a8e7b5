# Sourced by the GPU tests (tests/gpu/*-gpu.sh) and the GPU benches, after
# they set ROOT to the project's root: the kernelbot they run, and a clean
# skip on a host without a GPU.
#
# The checks and the summary line are tests/lib.sh's (bad is its fail).
. "$ROOT/tests/lib.sh"
bad() { fail "$@"; }

# KERNELBOT: the environment's, else the carried device-bundle/run (a GPU
# host without the build dependencies), else this checkout's build.
if [ -z "${KERNELBOT:-}" ]; then
	if [ -x "$ROOT/device-bundle/run" ]; then KERNELBOT="$ROOT/device-bundle/run"
	else KERNELBOT="$ROOT/build/default/kernelbot"; fi
fi

# need_gpu NAME: exit 0 with "NAME: SKIP" where no NVIDIA GPU answers.
need_gpu() {
	if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
		echo "$1: SKIP: no NVIDIA GPU on this host"
		exit 0
	fi
}
