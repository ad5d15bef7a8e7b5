#!/bin/sh
# make test-gpu: the scratch the compiler's kernels keep from call to call
# (kb_scratch_at) is safe under several streams, more streams than it
# keeps buffers for, and CUDA graph capture. 13_cross_entropy at full
# size (its row losses are scratch between two kernels), under the
# default schedule and with pdl, is run by tests/gpu/scratch_streams.cu;
# then a control whose buffers ignore the stream must fail the
# two-stream check, or the check proves nothing.
#
#   sh tests/gpu/scratch-gpu.sh
#
# Env: KERNELBOT (default device-bundle/run, else build/default/kernelbot),
# NVCC (default nvcc on PATH, else /usr/local/cuda/bin/nvcc).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
need_gpu scratch-gpu
INC=$ROOT/device-bundle/include
[ -d "$INC/dlpack" ] || INC=/usr/include
out=$(mktemp -d "${TMPDIR:-/tmp}/kb-scratch-gpu.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
IR=$ROOT/bench/ir/13_cross_entropy.json
fail=0

"$NVCC" -O2 -arch=sm_90 -I"$INC" -o "$out/drv" "$ROOT/tests/gpu/scratch_streams.cu" -ldl || exit 1
for s in 'default:{}' 'pdl:{"pdl": true}'; do
	"$KERNELBOT" compile "$IR" --backend cuda --schedule "${s#*:}" -o "$out/${s%%:*}.cu" || exit 1
done
# the control: one buffer per site for every stream
sed 's/kb_slots\[i\]\.stream == sid/1/' "$out/default.cu" >"$out/shared.cu"
if cmp -s "$out/default.cu" "$out/shared.cu"; then
	echo "scratch-gpu: FAIL: the control's edit no longer applies (kb_scratch_at changed)"
	exit 1
fi
for n in default pdl shared; do
	"$NVCC" -O3 -arch=sm_90 --shared -Xcompiler -fPIC -I"$INC" -o "$out/$n.so" "$out/$n.cu" \
	    >"$out/$n.nvcc.log" 2>&1 &
done
wait
for n in default pdl shared; do
	[ -f "$out/$n.so" ] || { echo "scratch-gpu: FAIL: nvcc $n: $(tail -n 5 "$out/$n.nvcc.log")"; exit 1; }
done
for n in default pdl; do
	echo "== $n"
	"$out/drv" "$out/$n.so" 16384 4096 || fail=$((fail + 1))
done
echo "== control (one buffer for every stream)"
"$out/drv" "$out/shared.so" 16384 4096 >"$out/control.log" 2>&1
rc=$?
cat "$out/control.log"
if [ "$rc" -ne 1 ] || ! grep -q '^FAIL two streams' "$out/control.log"; then
	echo "scratch-gpu: FAIL: the control was not caught (exit $rc): the two-stream check cannot tell"
	fail=$((fail + 1))
fi
if [ "$fail" -eq 0 ]; then
	echo "scratch-gpu: ok"
else
	echo "scratch-gpu: FAIL ($fail)"
fi
[ "$fail" -eq 0 ]
