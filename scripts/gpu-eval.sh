#!/bin/sh
# One device call for the evaluator: the sandbox around CUDA, then
# make test-gpu's suite. Run from the repo root after `make device-bundle`.
set -u
KB=device-bundle/run
s=$(mktemp -d); chmod 755 "$s"
echo "== sandbox-check --cuda"
$KB sandbox-exec --profile candidate --gpu 0 --verbose --scratch "$s" -- "$PWD/device-bundle/kernelbot" __sandbox-check --cuda 2>&1 | tail -n 25
echo "== test-gpu"
sh tests/gpu/eval-gpu.sh
