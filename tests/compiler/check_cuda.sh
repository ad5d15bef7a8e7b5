#!/bin/sh
# Compile every IR fixture with the CUDA backend and build it with nvcc
# (compile only; no GPU needed). Prints failures and a summary line.
# Usage: tests/compiler/check_cuda.sh [NAME...]   (default: every fixture)
# SCHEDULE: a schedule JSON for every fixture (default: the default one).
# IRDIR: where the IR files are (default tests/fixtures/ir; bench/ir for the
# full-size development problems). NVFLAGS: nvcc's flags (default -c -O1;
# the build's own are "-O3 --shared").
set -u
IRDIR=${IRDIR:-tests/fixtures/ir}
NVFLAGS=${NVFLAGS:--c -O1}
KB=${KERNELBOT:-build/default/kernelbot}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${KB_ROOT:-.}/tests/lib.sh"
for n in ${*:-$(ls "$IRDIR" | sed 's/\.json$//')}; do
	if ! "$KB" compile "$IRDIR/$n.json" --backend cuda ${SCHEDULE:+--schedule "$SCHEDULE"} \
	    -o "$tmp/$n.cu" 2>"$tmp/err"; then
		fail "$n" "$(cat "$tmp/err")"
	elif ! "$NVCC" $NVFLAGS -arch=sm_90 -Xcompiler -fPIC -I/usr/include -o "$tmp/$n.o" "$tmp/$n.cu" >"$tmp/log" 2>&1; then
		fail "$n: nvcc" "$(head -c 1500 "$tmp/log")"
	else
		ok "$n"
	fi
done
t_summary compiler-cuda
