#!/bin/sh
# t8001: a module's PR files from an optimize directory (`kernelbot report`)
# hold Python that works: the drop-in module builds the real CPU kernel of
# the graph compiler with cc, the PR's own pytest passes against the
# original module, fails for a kernel that computes nothing, and skips
# cleanly where there is no C compiler. The optimize directory is made
# here from a real trace, compile and `kernelbot eval` confirmation; only
# summary.json's status is set by the test, since what is tested is the
# report's files, not the search (the CPU kernel's speed on a loaded
# 2-core CI machine is not what this test is about).
. "$(dirname "$0")/lib.sh"
t_init t8001
PY=${KERNELBOT_PYTHON:-/usr/bin/python3}
export KERNELBOT_PYTHON="$PY" KERNELBOT_CACHE="$TMP/cache" OMP_NUM_THREADS=1
REPO="$TMP/repo"
OPT="$TMP/opt"
cp -r "$KB_ROOT/examples/repo" "$REPO"
mkdir -p "$OPT/best"
cp "$REPO/models/rmsnorm.py" "$OPT/problem.py"

check "trace the example module" sh -c "'$KERNELBOT' trace '$REPO/models/rmsnorm.py' --json >'$OPT/ir.json'"
check "compile it for the CPU" "$KERNELBOT" compile "$OPT/ir.json" --backend cpu -o "$OPT/best/kernel.c"
"$KERNELBOT" eval "$REPO/models/rmsnorm.py" "$OPT/best/kernel.c" --backend cpu --trials 2 --rounds 3 \
	--reps 3 --warmup 1 --json >"$TMP/eval.json" 2>"$TMP/eval.err"
check_eq "the kernel is correct (kernelbot eval)" "$?" 0
"$PY" - "$TMP/eval.json" "$OPT" <<'PYEOF'
import json, sys, hashlib
r = json.load(open(sys.argv[1]))
r = r[0] if isinstance(r, list) else r
opt = sys.argv[2]
json.dump(r, open(opt + "/best/result.json", "w"))
sha = hashlib.sha256(open(opt + "/best/kernel.c", "rb").read()).hexdigest()
json.dump({"problem": "models/rmsnorm.py", "status": "improved", "backend": "cpu",
           "best": {"path": "best/kernel.c", "speedup": r["speedup"]},
           "candidates_evaluated": 1, "generations": 1, "stop_reason": "budget:candidates",
           "spent": {"candidates": 1, "generations": 1, "wall_s": r.get("wall_s", 0)}},
          open(opt + "/summary.json", "w"))
json.dump({"problem": "models/rmsnorm.py", "backend": "cpu", "device": {"name": "cpu"},
           "generations": [{"generation": 0, "evaluated": 1, "correct": 1,
                            "best_ms": r["timings_ms"]["candidate"]["median"]}],
           "candidates": [{"id": 0, "generation": 0, "proposer": "graph-compiler", "source_sha": sha,
                           "file": "candidates/0000.c", "status": "correct", "correct": True}]},
          open(opt + "/history.json", "w"))
PYEOF

out=$("$KERNELBOT" report "$OPT" --module models/rmsnorm.py --repo acme/models --commit 0123abcd \
	--out "$REPO" 2>&1)
check_eq "kernelbot report exits 0" "$?" 0
K="$REPO/kernels/models-rmsnorm"
for f in kernel.c __init__.py test_kernel.py manifest.json REPORT.md; do
	check "PR file $f" test -s "$K/$f"
done
check_match "the title names the module" "$out" "models/rmsnorm.py"
check "the body has the speedup table" grep -q '| backend, device | input shape | eager ms | torch.compile ms | kernel ms |' "$REPO/pr.md"
check "the manifest records the proposer" grep -q '"proposer": "graph-compiler"' "$K/manifest.json"
check "the generated Python compiles" "$PY" -m py_compile "$K/__init__.py" "$K/test_kernel.py"

cd "$REPO" || exit 1
"$PY" -m pytest -q -p no:cacheprovider "kernels/models-rmsnorm/test_kernel.py" >"$TMP/pytest.out" 2>&1
st=$?
check_eq "the PR's pytest passes against the original module" "$st" 0
[ "$st" -eq 0 ] || tail -30 "$TMP/pytest.out"
check "the kernel was built into the cache" sh -c "ls '$KERNELBOT_CACHE'/*/*.so >/dev/null"

# The usage the body shows, from the repository root.
"$PY" - >"$TMP/use.out" 2>&1 <<'PYEOF'
import importlib, sys, torch
sys.path.insert(0, ".")
sys.path.insert(0, "models")
import rmsnorm
model = rmsnorm.Model(*rmsnorm.get_init_inputs()).eval()
fast = importlib.import_module("kernels.models-rmsnorm").load(model)
x, r = rmsnorm.get_inputs()
with torch.no_grad():
    y = fast(x, r)
    assert fast.fallback_reason is None, fast.fallback_reason
    assert torch.allclose(y, model(x, r), atol=1e-4, rtol=1e-4)
    y = fast(x[:5], r[:5])     # a shape it was not verified for
    assert fast.fallback_reason and "shapes" in fast.fallback_reason, fast.fallback_reason
    assert torch.equal(y, model(x[:5], r[:5]))
y = fast(x, r)                 # autograd recording: the module's own graph
assert fast.fallback_reason and "autograd" in fast.fallback_reason, fast.fallback_reason
assert y.requires_grad
print("used", fast.kernel_calls)
PYEOF
check_eq "load(model) runs the kernel and falls back on another shape" "$(tail -n 1 "$TMP/use.out")" "used 1"

# A kernel that writes nothing: the PR's test must fail.
cat >"$K/kernel.c" <<'CEOF'
#include <dlpack/dlpack.h>
int kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{ (void)in; (void)n_in; (void)out; (void)n_out; (void)stream; return 0; }
CEOF
"$PY" -m pytest -q -p no:cacheprovider "kernels/models-rmsnorm/test_kernel.py" >"$TMP/pytest-bad.out" 2>&1
check "the PR's pytest fails for a kernel that computes nothing" test $? -ne 0
check "and says it fell back" grep -q "differs from the original module" "$TMP/pytest-bad.out"

# No C compiler on PATH: the tests skip, saying why.
mkdir -p "$TMP/bin"
ln -s "$(command -v "$PY")" "$TMP/bin/python3"
PATH="$TMP/bin" CC=cc KERNELBOT_CACHE="$TMP/cache2" "$TMP/bin/python3" -m pytest -q -rs -p no:cacheprovider \
	"kernels/models-rmsnorm/test_kernel.py" >"$TMP/pytest-nocc.out" 2>&1
st=$?
check_eq "without cc the PR's pytest does not fail" "$st" 0
check "it skips, saying why" grep -q "no C compiler here" "$TMP/pytest-nocc.out"
t_done
