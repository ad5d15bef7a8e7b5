#!/bin/sh
# Wall time of `kernelbot trace` on each development problem at its real
# size: the whole command (Python start, torch import, module build,
# get_inputs(), trace, verification), median of RUNS runs each.
# Usage: bench/trace_times.sh [RUNS]   (needs ../shared/problems or
# KERNELBOT_PROBLEMS; KERNELBOT defaults to build/default/kernelbot)
set -u
RUNS=${1:-3}
KB=${KERNELBOT:-build/default/kernelbot}
P=${KERNELBOT_PROBLEMS:-../shared/problems}
[ -d "$P" ] || { echo "no problems at $P" >&2; exit 1; }
printf '%-36s %s\n' problem "median s (of $RUNS)"
for p in "$P"/[0-9]*.py; do
	times=""
	for i in $(seq "$RUNS"); do
		s=$(date +%s.%N)
		"$KB" trace --json "$p" >/dev/null 2>&1 || { echo "$(basename "$p"): trace failed" >&2; exit 1; }
		times="$times $(awk "BEGIN{print $(date +%s.%N) - $s}")"
	done
	med=$(printf '%s\n' $times | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	printf '%-36s %6.1f\n' "$(basename "$p")" "$med"
done
