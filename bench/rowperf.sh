#!/bin/sh
# The graph compiler's row reductions and scan under each schedule choice
# that changes them (issue #6: memory-bound problems at >= 85% of the
# roofline), in one GPU call. Per problem, every distinct kernel (the
# default's and each variant's; a variant whose code is an earlier one's
# is not evaluated again) goes to ONE `kernelbot eval` (parallel builds, one
# judge, eager timed once), then one table: problem x schedule -> kernel
# median ms and % of the memory roofline (the evaluator's floor: bytes of
# all inputs and outputs at its measured copy bandwidth, over the median),
# "wrong" for a kernel not judged correct.
#
#   sh bench/rowperf.sh [NAME ...]
#       (default: 02_softmax_rows 03_layernorm 04_rmsnorm_residual
#        10_logsumexp_rows 13_cross_entropy 14_cumsum)
#
# About 60 evaluations in all (4 to 6 minutes on the H200); name fewer
# problems to split it over calls.
#
# Env: KERNELBOT (default device-bundle/run, else build/default/kernelbot),
# KERNELBOT_PROBLEMS (the problems' folder, as tests/gpu/compiler-gpu.sh),
# OUT (keep kernels, JSON and logs there; default a new folder under /tmp),
# EVAL_ARGS (default "--baselines eager --rounds 5"), SCHEDULES (a file of
# "LABEL JSON" lines instead of the list below), PYTHON.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
dir=${KERNELBOT_PROBLEMS:-}
[ -n "$dir" ] || for d in "$ROOT/../shared/problems" "$ROOT/shared/problems" /work/shared/problems; do
	[ -d "$d" ] && { dir=$d; break; }
done
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kb-rowperf.XXXXXX")}
mkdir -p "$out" || exit 1
names=${*:-02_softmax_rows 03_layernorm 04_rmsnorm_residual 10_logsumexp_rows 13_cross_entropy 14_cumsum}

# label and schedule, one a line; every label in the table's columns
sched="$out/schedules"
if [ -n "${SCHEDULES:-}" ]; then
	cp "$SCHEDULES" "$sched" || exit 1
else
	cat >"$sched" <<'EOF'
default {}
regs2 {"row_regs": 2}
mb2 {"min_blocks": 2}
mb4 {"min_blocks": 4}
split2 {"row_split": 2}
split4 {"row_split": 4}
stream {"stream": 1}
rcp {"rcp": 1}
mb2+stream {"min_blocks": 2, "stream": 1}
mb2+rcp+stream {"min_blocks": 2, "rcp": 1, "stream": 1}
split4+stream {"row_split": 4, "stream": 1}
split4+rcp+stream {"row_split": 4, "rcp": 1, "stream": 1}
split2+mb4+stream {"row_split": 2, "min_blocks": 4, "stream": 1}
block1024 {"block": 1024}
scan {"scan": 1}
scan+stream {"scan": 1, "stream": 1}
scan+b128 {"scan": 1, "block": 128}
EOF
fi
echo "rowperf: kernels and results in $out"
command -v nvidia-smi >/dev/null 2>&1 && echo "rowperf: $(nvidia-smi -L | head -n 1)"
for n in $names; do
	p="$dir/$n.py"
	src="$ROOT/bench/ir/$n.json"
	[ -f "$src" ] || src=$p
	d="$out/$n"
	mkdir -p "$d"
	: >"$d/map"
	: >"$d/cands"
	set --
	while read -r label json; do
		[ -n "$label" ] || continue
		if ! "$KERNELBOT" compile "$src" --backend cuda --schedule "$json" -o "$d/$label.cu" </dev/null \
		    2>"$d/$label.compile.log"; then
			echo "$label -" >>"$d/map"
			echo "$n $label: compile failed: $(tail -n 1 "$d/$label.compile.log")"
			continue
		fi
		# the code without its header comment (which names the schedule)
		sed '1,/\*\//d' "$d/$label.cu" >"$d/$label.code"
		same=""
		while read -r c; do
			if cmp -s "$d/$c.code" "$d/$label.code"; then same=$c; break; fi
		done <"$d/cands"
		if [ -n "$same" ]; then
			echo "$label $same" >>"$d/map"
		else
			echo "$label $label" >>"$d/map"
			echo "$label" >>"$d/cands"
			set -- "$@" "$d/$label.cu"
		fi
	done <"$sched"
	echo "$n: $# distinct kernels"
	[ $# -gt 0 ] || continue
	# shellcheck disable=SC2086
	"$KERNELBOT" eval "$p" "$@" --backend cuda --json ${EVAL_ARGS:---baselines eager --rounds 5} \
	    >"$d/eval.json" 2>"$d/eval.log"
	echo "$n: eval exit $? ($(wc -c <"$d/eval.json") bytes of JSON)"
done
"$PY" "$ROOT/bench/rowperf_table.py" "$out" $names
