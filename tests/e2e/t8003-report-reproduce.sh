#!/bin/sh
# t8003: a PR's reproduce command reproduces. A CPU kernel is confirmed as
# the bot does it on a small machine (OMP_NUM_THREADS=1, as `kernelbot
# demo` sets there; the bot's fixed timing flags), the PR is built from that
# result (`kernelbot report`), and the command printed under "Reproduce" is
# taken from the body and REPORT.md and run as printed, from the
# repository root, in an environment without OMP_NUM_THREADS: only the
# command's own assignments set it. The recorded fields must be the same
# exactly (seed, thread settings, torch's thread count, CPU, compiler and
# flags, Python, PyTorch, eval flags), and the speedup must lie within the
# reported 95% interval widened by a factor of TOL either way: the kernel
# (the graph compiler's fused RMSNorm) is about 5x faster than eager, so a
# busy host moves it by far less than that, while a wrong thread count or
# a command that does not run gives 0.01x or nothing. A control run
# without the assignment must be told apart by the recorded threads.
# KB_REPRO_BACKEND=cuda runs the same on a GPU (tests/gpu/repro-gpu.sh).
. "$(dirname "$0")/lib.sh"
t_init t8003
PY=${KERNELBOT_PYTHON:-/usr/bin/python3}
TOL=3
B=${KB_REPRO_BACKEND:-cpu}
EXT=c
[ "$B" = cuda ] && EXT=cu
export KERNELBOT_PYTHON="$PY" KERNELBOT_CACHE="$TMP/cache" KERNELBOT_JUDGE_IDLE_S=60 OMP_NUM_THREADS=1
REPO="$TMP/repo"
OPT="$TMP/opt"
cp -r "$KB_ROOT/examples/repo" "$REPO"
mkdir -p "$OPT/best" "$TMP/bin"
cp "$REPO/models/rmsnorm.py" "$OPT/problem.py"
# `kernelbot` as the command names it (a wrapper: device-bundle/run finds
# its libraries beside itself, so it cannot be a link)
printf '#!/bin/sh\nexec "%s" "$@"\n' "$KERNELBOT" >"$TMP/bin/kernelbot"
chmod +x "$TMP/bin/kernelbot"

check "trace the example module" sh -c "'$KERNELBOT' trace '$REPO/models/rmsnorm.py' --json >'$OPT/ir.json'"
check "compile it for $B" "$KERNELBOT" compile "$OPT/ir.json" --backend "$B" -o "$OPT/best/kernel.$EXT"
# The confirmation, with flags a reproduction must repeat (fixed rounds).
(cd "$REPO" && "$KERNELBOT" eval models/rmsnorm.py "$OPT/best/kernel.$EXT" --backend "$B" --trials 3 \
	--rounds 10 --reps 5 --warmup 1 --json >"$TMP/eval.json" 2>"$TMP/eval.err")
check_eq "the kernel is correct (the bot's confirmation)" "$?" 0
SEED=$("$PY" - "$TMP/eval.json" "$OPT" "$B" "$EXT" <<'PYEOF'
import json, sys, hashlib
r = json.load(open(sys.argv[1]))
opt, b, ext = sys.argv[2], sys.argv[3], sys.argv[4]
json.dump(r, open(opt + "/best/result.json", "w"))
sha = hashlib.sha256(open(opt + "/best/kernel." + ext, "rb").read()).hexdigest()
# summary.json as optimize writes it: best carries the seed and environment
json.dump({"problem": "models/rmsnorm.py", "status": "improved", "backend": b,
           "best": {"path": "best/kernel." + ext, "speedup": r["speedup"], "seed": r["seed"],
                    "environment": r["environment"]},
           "candidates_evaluated": 1, "generations": 1, "stop_reason": "budget:candidates",
           "spent": {"candidates": 1, "generations": 1, "wall_s": r.get("wall_s", 0)}},
          open(opt + "/summary.json", "w"))
json.dump({"problem": "models/rmsnorm.py", "backend": b, "device": r["device_info"],
           "generations": [{"generation": 0, "evaluated": 1, "correct": 1,
                            "best_ms": r["timings_ms"]["candidate"]["median"]}],
           "candidates": [{"id": 0, "generation": 0, "proposer": "graph-compiler", "source_sha": sha,
                           "file": "candidates/0000." + ext, "status": "correct", "correct": True}]},
          open(opt + "/history.json", "w"))
print(r["environment"]["seed_str"])
PYEOF
)
check_match "the result records a fresh seed" "$SEED" '^[0-9]+$'

"$KERNELBOT" report "$OPT" --module models/rmsnorm.py --repo acme/models --commit 0123abcd \
	--out "$REPO" >"$TMP/report.out" 2>&1
check_eq "kernelbot report exits 0" "$?" 0
K="$REPO/kernels/models-rmsnorm"

# The first line of the code block under "### Reproduce".
repro_line() {
	awk '/^### Reproduce/ { r = 1 } r && /^```sh$/ { getline; print; exit }' "$1"
}
CMD=$(repro_line "$REPO/pr.md")
WANT="OMP_NUM_THREADS=1 kernelbot eval models/rmsnorm.py kernels/models-rmsnorm/kernel.$EXT --backend $B --seed $SEED --trials 3 --rounds 10 --reps 5 --warmup 1"
check_eq "the PR body's reproduce command: the thread setting, seed and flags" "$CMD" "$WANT"
check_eq "REPORT.md prints the same command" "$(repro_line "$K/REPORT.md")" "$WANT"
check_eq "the manifest holds it too" \
	"$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["reproduce"])' "$K/manifest.json")" \
	"$WANT"
check "the body says what the measurement ran with" grep -q \
	"^- $B measured with OMP_NUM_THREADS=1, OMP_PROC_BIND unset, OMP_PLACES unset, MKL_NUM_THREADS unset, torch threads 1, CPU " \
	"$REPO/pr.md"

# Run it as printed, from the repository root; nothing else sets the threads.
(cd "$REPO" && env -u OMP_NUM_THREADS PATH="$TMP/bin:$PATH" sh -c "$CMD --json" \
	>"$TMP/repro.json" 2>"$TMP/repro.err")
check_eq "the reproduce command runs and the kernel is correct" "$?" 0

# Same recorded fields exactly, and the speedup in the widened interval.
cat >"$TMP/compare.py" <<'PYEOF'
import json, sys
orig = json.load(open(sys.argv[1]))
new = json.load(open(sys.argv[2]))
tol = float(sys.argv[3])
bad = []
eo, en = orig["environment"], new["environment"]
for k in ("seed", "seed_str", "threads", "torch_threads", "cpu_model", "logical_cpus", "cpus_allowed",
          "gpu", "compiler", "compiler_version", "compile_flags", "python", "torch", "eval_args"):
    if eo.get(k) != en.get(k):
        bad.append("%s: %r, reproduced %r" % (k, eo.get(k), en.get(k)))
if orig["seed"] != new["seed"]:
    bad.append("seed: %r, reproduced %r" % (orig["seed"], new["seed"]))
if en.get("seed_given") is not True or eo.get("seed_given") is not False:
    bad.append("seed_given: %r then %r" % (eo.get("seed_given"), en.get("seed_given")))
lo, hi = orig["speedup"]["eager_ci95"]
s = new["speedup"]["eager"] if new.get("correct") else None
if s is None or not (lo / tol <= s <= hi * tol):
    bad.append("speedup %r outside [%.3g, %.3g] (the reported [%.3g, %.3g] widened %gx)"
               % (s, lo / tol, hi * tol, lo, hi, tol))
print("; ".join(bad) if bad else "same: seed %s, threads %s, speedup %.3g in [%.3g, %.3g] (reported %.3g)"
      % (en["seed_str"], en["threads"], s, lo, hi, orig["speedup"]["eager"]))
sys.exit(1 if bad else 0)
PYEOF
out=$("$PY" "$TMP/compare.py" "$TMP/eval.json" "$TMP/repro.json" "$TOL")
st=$?
check_eq "the reproduction matches: recorded fields exact, speedup within the interval (x$TOL)" "$st" 0
[ "$st" -eq 0 ] || echo "     $out"
echo "# $out"

# Control: the same command without its assignment records other threads,
# and the comparison says so (so the test above can fail).
CTRL=$(printf '%s\n' "$CMD" | sed 's/^OMP_NUM_THREADS=1 //; s/--rounds 10 --reps 5/--rounds 2 --reps 2/')
(cd "$REPO" && env -u OMP_NUM_THREADS PATH="$TMP/bin:$PATH" sh -c "$CTRL --json" \
	>"$TMP/ctrl.json" 2>"$TMP/ctrl.err")
check_eq "the control runs" "$?" 0
out=$("$PY" "$TMP/compare.py" "$TMP/eval.json" "$TMP/ctrl.json" "$TOL")
check "without OMP_NUM_THREADS=1 the comparison fails" test $? -ne 0
check_match "on the recorded threads" "$out" "threads: \{'OMP_NUM_THREADS': '1'.*reproduced \{'OMP_NUM_THREADS': None"
t_done
