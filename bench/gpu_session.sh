#!/bin/sh
# One GPU call, several steps: runs the named GPU tests and benchmarks one
# after another inside a wall-clock limit, keeps every step's output, and
# packs the logs into one archive (a device call brings back few files).
#
#   make device-bundle                                  (on the build host)
#   STEPS="eval compiler opt" LIMIT=560 sh bench/gpu_session.sh   (GPU host)
#
# Steps: eval repro compiler scratch coord report llm profile (tests/gpu/*-gpu.sh),
# opt (bench/optimize_gpu.sh over $OPT, names like 01_scale_gelu_bias;
# default all), rowperf (bench/rowperf.sh $ROWPERF), repeat
# (bench/eval_throughput.sh repeat), throughput (bench/eval_throughput.sh
# all), ce13 (bench/ce13/run.sh: 13_cross_entropy's kernel variants),
# gemmemu (bench/gemm_emu.sh: cuBLAS's FP32 emulation against FP32), demo
# (kernelbot demo --problem $DEMO_PROBLEM). CG names the
# problems for compiler (default all). Each step gets what is left of LIMIT
# seconds (default 560) less 15 for packing; one that would start with
# under 30 s left is skipped and says so.
#
# Output: OUT (the device tool's folder, else a new one under /tmp) gets
# summary.txt (each step's last lines and exit status) and logs.tgz (every
# step's full log and the folders the steps kept). Env as the scripts it
# runs: KERNELBOT_PROBLEMS (default .gpu-problems, then ../shared/problems).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$(mktemp -d /tmp/kb-gpu-session.XXXXXX)}
LIMIT=${LIMIT:-560}
logs=/tmp/kb-gpu-logs
rm -rf "$logs"
mkdir -p "$logs" "$OUT"
if [ -z "${KERNELBOT_PROBLEMS:-}" ]; then
	for d in "$ROOT/.gpu-problems" "$ROOT/../shared/problems"; do
		[ -d "$d" ] && { KERNELBOT_PROBLEMS=$d; break; }
	done
fi
export KERNELBOT_PROBLEMS="${KERNELBOT_PROBLEMS:-}"
export PROBLEMS="$KERNELBOT_PROBLEMS" PYTHONUNBUFFERED=1
deadline=$(($(date +%s) + LIMIT - 15))
summary="$OUT/summary.txt"
: >"$summary"

paths() {	# problem names -> files under KERNELBOT_PROBLEMS
	for n in "$@"; do printf '%s ' "$KERNELBOT_PROBLEMS/$n.py"; done
}

# CG and OPT are lists of names, split on purpose
# shellcheck disable=SC2086
step_cmd() {
	case $1 in
	eval|coord|report|llm|profile|scratch|repro) echo "sh tests/gpu/$1-gpu.sh" ;;
	compiler) echo "env COMPILER_GPU_OUT=$logs/cg sh tests/gpu/compiler-gpu.sh ${CG:+$(paths $CG)}" ;;
	opt) echo "env OUT=$logs/opt sh bench/optimize_gpu.sh ${OPT:+$(paths $OPT)}" ;;
	rowperf) echo "env OUT=$logs/rowperf sh bench/rowperf.sh ${ROWPERF:-}" ;;
	repeat) echo "env OUT=$logs/repeat sh bench/eval_throughput.sh repeat" ;;
	ce13) echo "env OUT=$logs/ce13 sh bench/ce13/run.sh" ;;
	gemmemu) echo "sh bench/gemm_emu.sh" ;;
	throughput) echo "env OUT=$logs/throughput sh bench/eval_throughput.sh all" ;;
	demo) echo "device-bundle/run demo --problem $KERNELBOT_PROBLEMS/${DEMO_PROBLEM:-01_scale_gelu_bias}.py" ;;
	*) return 1 ;;
	esac
}

# the bundle's commit (make device-bundle writes it): the tree's git, if
# the copy has one, need not be what the binary was built from
echo "gpu-session: bundle $(cat device-bundle/COMMIT 2>/dev/null || echo '?') $(date -u +%FT%TZ)" \
	"$(nvidia-smi -L 2>/dev/null | head -n 1)" | tee -a "$summary"
for s in ${STEPS:-eval repro compiler scratch coord report llm profile}; do
	left=$((deadline - $(date +%s)))
	if ! cmd=$(step_cmd "$s"); then
		echo "== $s: unknown step" | tee -a "$summary"
		continue
	fi
	if [ "$left" -lt 30 ]; then
		echo "== $s: skipped, ${left} s left" | tee -a "$summary"
		continue
	fi
	start=$(date +%s)
	# shellcheck disable=SC2086
	timeout -k 5 "$left" $cmd >"$logs/$s.log" 2>&1
	rc=$?
	{
		echo "== $s: exit $rc in $(($(date +%s) - start)) s: $cmd"
		tail -n "${TAIL_LINES:-40}" "$logs/$s.log"
	} | tee -a "$summary"
done
tar -C "$(dirname "$logs")" -czf "$OUT/logs.tgz" "$(basename "$logs")" 2>/dev/null
echo "gpu-session: logs in $OUT/logs.tgz" | tee -a "$summary"
