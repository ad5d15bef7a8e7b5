#!/bin/sh
# make test-gpu, part 2: a pull request's CUDA drop-in module on a GPU host.
#
#   make device-bundle                       (on a build host)
#   sh tests/gpu/report-gpu.sh               (on the GPU host; uses device-bundle/run
#                                             when present, else build/default/kernelbot)
#
# For two example modules: trace, compile with the CUDA backend, confirm
# with `kernelbot eval --backend cuda`, lay out the optimize directory
# (only summary.json's status is set here: the search is not under test),
# `kernelbot report` it into a copy of examples/repo, and run the PR's own
# pytest on the GPU: the drop-in module must build the kernel with nvcc,
# run it on the current stream and match the module. Then the same module
# with two architectures (this GPU's and sm_80): sm_XX.cu per architecture,
# and the loader must pick this GPU's. Exit 1 on any failure.
# Env: KERNELBOT (the binary), PYTHON (with torch and pytest).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-report-gpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export KERNELBOT_CACHE="$tmp/cache" KERNELBOT_PYTHON="$PY"

need_gpu report-gpu
if ! "$PY" -c 'import pytest, torch; assert torch.cuda.is_available()' 2>/dev/null; then
	echo "report-gpu: FAIL: $PY lacks pytest or a CUDA PyTorch"
	exit 1
fi
cc=$("$PY" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
arch="sm_$(echo "$cc" | tr -d .)"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
echo "report-gpu: $gpu, $arch"
REPO="$tmp/repo"
cp -r "$ROOT/examples/repo" "$REPO"

# optimize_dir NAME MODULE CC: a confirmed CUDA kernel for MODULE in $tmp/NAME
optimize_dir() {
	o="$tmp/$1"
	mkdir -p "$o/best"
	"$KERNELBOT" trace "$REPO/$2" --json >"$o/ir.json" 2>"$o/err" || { bad "$2: trace: $(cat "$o/err")"; return 1; }
	"$KERNELBOT" compile "$o/ir.json" --backend cuda -o "$o/best/kernel.cu" 2>"$o/err" ||
		{ bad "$2: compile: $(cat "$o/err")"; return 1; }
	"$KERNELBOT" eval "$REPO/$2" "$o/best/kernel.cu" --backend cuda --trials 3 --json \
		>"$o/eval.json" 2>"$o/err" || { bad "$2: eval: $(cat "$o/err" "$o/eval.json" | tail -c 2000)"; return 1; }
	"$PY" - "$o" "$2" "$3" "$gpu" <<'PYEOF'
import hashlib, json, sys
o, module, cc, gpu = sys.argv[1:]
r = json.load(open(o + "/eval.json"))
r = r[0] if isinstance(r, list) else r
json.dump(r, open(o + "/best/result.json", "w"))
sha = hashlib.sha256(open(o + "/best/kernel.cu", "rb").read()).hexdigest()
json.dump({"problem": module, "status": "improved", "backend": "cuda",
           "best": {"path": "best/kernel.cu", "speedup": r["speedup"]},
           "candidates_evaluated": 1, "generations": 1, "stop_reason": "budget:candidates",
           "spent": {"candidates": 1, "generations": 1}}, open(o + "/summary.json", "w"))
name, driver = [s.strip() for s in gpu.split(",")]
json.dump({"problem": module, "backend": "cuda",
           "device": {"name": name, "compute_capability": cc, "driver": driver},
           "generations": [{"generation": 0, "evaluated": 1, "correct": 1,
                            "best_ms": r["timings_ms"]["candidate"]["median"]}],
           "candidates": [{"id": 0, "proposer": "graph-compiler", "source_sha": sha}]},
          open(o + "/history.json", "w"))
PYEOF
	ok "$2: a confirmed CUDA kernel ($(grep -o '"status": *"[a-z_]*"' "$o/eval.json" | head -n 1))"
}

pytest_pr() {	# SLUG WHAT
	(cd "$REPO" && "$PY" -m pytest -q -rs -p no:cacheprovider "kernels/$1/test_kernel.py") >"$tmp/pytest-$1.out" 2>&1
	st=$?
	if [ "$st" -eq 0 ] && ! grep -q skipped "$tmp/pytest-$1.out"; then
		ok "$1: $2: $(tail -n 1 "$tmp/pytest-$1.out")"
	else
		bad "$1: $2 (exit $st)"
		tail -n 30 "$tmp/pytest-$1.out"
	fi
}

for m in rmsnorm softmax; do
	optimize_dir "$m" "models/$m.py" "$cc" || continue
	if "$KERNELBOT" report "$tmp/$m" --module "models/$m.py" --out "$REPO" >"$tmp/report.out" 2>&1; then
		ok "models-$m: report"
	else
		bad "models-$m: report: $(cat "$tmp/report.out")"
		continue
	fi
	test -s "$REPO/kernels/models-$m/kernel.cu" && ok "models-$m: kernel.cu" || bad "models-$m: no kernel.cu"
	pytest_pr "models-$m" "the PR's pytest passes on the GPU"
done

# Two architectures: this GPU's and sm_80 (the same source; what differs is the name).
if [ -d "$tmp/rmsnorm/best" ]; then
	cp -r "$tmp/rmsnorm" "$tmp/rmsnorm80"
	sed -i "s/\"compute_capability\": \"$cc\"/\"compute_capability\": \"8.0\"/" "$tmp/rmsnorm80/history.json"
	printf '// built for sm_80\n' >>"$tmp/rmsnorm80/best/kernel.cu"
	rm -rf "$REPO/kernels/models-rmsnorm"
	"$KERNELBOT" report "$tmp/rmsnorm" "$tmp/rmsnorm80" --module models/rmsnorm.py --out "$REPO" >"$tmp/report.out" 2>&1 ||
		bad "two architectures: report: $(cat "$tmp/report.out")"
	if [ "$arch" != sm_80 ]; then
		test -s "$REPO/kernels/models-rmsnorm/$arch.cu" && test -s "$REPO/kernels/models-rmsnorm/sm_80.cu" &&
			ok "two architectures: $arch.cu and sm_80.cu" || bad "two architectures: $(ls "$REPO/kernels/models-rmsnorm")"
	fi
	pytest_pr models-rmsnorm "two architectures: the PR's pytest passes"
	picked=$(cd "$REPO" && "$PY" -c '
import importlib, torch
m = importlib.import_module("kernels.models-rmsnorm")
cc = "sm_%d%d" % torch.cuda.get_device_capability()
print(m._pick("cuda", cc)["file"])' 2>&1)
	[ "$picked" = "$arch.cu" ] && ok "the loader picks $picked on $arch" || bad "the loader picked $picked on $arch"
fi
t_summary report-gpu
