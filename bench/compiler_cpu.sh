#!/bin/sh
# The graph compiler's CPU backend against eager PyTorch on this host: for
# each problem, `kernelbot compile --backend cpu`, then `kernelbot eval
# --backend cpu --json --baselines eager` (median times of the paired
# rounds, speedup with its 95% bootstrap interval). Prints a markdown table
# (the one in docs/BENCHMARKS.md, "CPU backend").
#
#   sh bench/compiler_cpu.sh [shrunk|medium|all]   (default all)
#
# shrunk: the 16 development problems as tests/fixtures/compiler/problems
# has them (tiny: fork/call overhead dominates); medium: the same problems
# with the size constants below (a few MiB to tens of MiB per tensor), plus
# bench/problems_cpu/*.py. KERNELBOT (default build/default/kernelbot);
# ROUNDS (5), REPS (5): timing; SCHEDULE: a schedule JSON for every
# problem; OUT: keep the kernels and JSON there (default a temporary dir).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
KB=${KERNELBOT:-$here/build/default/kernelbot}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-5}
which=${1:-all}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/compiler_cpu.XXXXXX")}
mkdir -p "$out"

# medium sizes: "NAME var=value ..." (module-level constants of the problem)
medium='01_scale_gelu_bias rows=1024 features=4096
02_softmax_rows rows=1024 cols=4096
03_layernorm tokens=2048 hidden=1024
04_rmsnorm_residual tokens=2048 hidden=1024
05_linear_gelu batch=256 in_features=512 out_features=512
06_linear_relu_scale_residual batch=256 features=512
07_conv2d_relu_bias batch=4 cin=16 cout=32 size=64
08_conv2d_batchnorm_silu batch=4 cin=32 cout=32 size=32
09_mean_tanh batch=16 length=512 features=256
10_logsumexp_rows rows=1024 cols=4096
11_causal_attention batch=2 heads=4 seq=256 dim=64
12_mlp_block tokens=256 hidden=256 expand=4
13_cross_entropy batch=2048 classes=1024
14_cumsum rows=1024 cols=1024
15_linear_groupnorm_swish batch=512 in_features=256 out_features=512 groups=32
16_maxpool_relu_scale batch=4 channels=16 size=128'

# one row: problem file, label
bench_one() {
	p=$1 label=$2
	k="$out/$label.c"
	if ! "$KB" compile "$p" --backend cpu ${SCHEDULE:+--schedule "$SCHEDULE"} -o "$k" 2>"$out/$label.compile.log"; then
		echo "| $label | compile failed: $(head -c 80 "$out/$label.compile.log" | tr '\n|' '  ') | | | |"
		return
	fi
	"$KB" eval "$p" "$k" --backend cpu --json --baselines eager --trials 1 \
	    --rounds "$ROUNDS" --reps "$REPS" --warmup 2 >"$out/$label.json" 2>"$out/$label.eval.log"
	jq -r --arg l "$label" 'if .status == "correct" then
	    "| \($l) | \(.timings_ms.candidate.median * 1000 | round / 1000) | \(.timings_ms.eager.median * 1000 | round / 1000) | \(.speedup.eager * 100 | round / 100) | [\(.speedup.eager_ci95[0] * 100 | round / 100), \(.speedup.eager_ci95[1] * 100 | round / 100)] |"
	    else "| \($l) | \(.status) | | | |" end' "$out/$label.json" 2>/dev/null ||
	    echo "| $label | eval failed: $(tail -c 80 "$out/$label.eval.log" | tr '\n|' '  ') | | | |"
}

echo "| problem | kernel ms | eager ms | speedup | 95% interval |"
echo "| --- | ---: | ---: | ---: | --- |"
if [ "$which" != medium ]; then
	for p in "$here"/tests/fixtures/compiler/problems/[0-9]*.py; do
		bench_one "$p" "$(basename "$p" .py)"
	done
fi
if [ "$which" != shrunk ]; then
	echo "$medium" | while read -r name sizes; do
		p="$out/$name.medium.py"
		cp "$here/tests/fixtures/compiler/problems/$name.py" "$p"
		for kv in $sizes; do
			sed -i "s/^${kv%%=*} = .*/${kv%%=*} = ${kv#*=}/" "$p"
		done
		bench_one "$p" "$name.medium"
	done
	for p in "$here"/bench/problems_cpu/*.py; do
		bench_one "$p" "$(basename "$p" .py)"
	done
fi
echo "(kernels and JSON in $out)" >&2
