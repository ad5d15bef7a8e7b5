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
fail=0 pass=0
for n in ${*:-$(ls "$IRDIR" | sed 's/\.json$//')}; do
	if ! "$KB" compile "$IRDIR/$n.json" --backend cuda ${SCHEDULE:+--schedule "$SCHEDULE"} \
	    -o "$tmp/$n.cu" 2>"$tmp/err"; then
		echo "FAIL $n: $(cat "$tmp/err")"
		fail=$((fail + 1))
	elif ! "$NVCC" $NVFLAGS -arch=sm_90 -Xcompiler -fPIC -I/usr/include -o "$tmp/$n.o" "$tmp/$n.cu" >"$tmp/log" 2>&1; then
		echo "FAIL $n: nvcc: $(head -c 1500 "$tmp/log")"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
echo "compiler-cuda: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
