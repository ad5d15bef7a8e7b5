#!/bin/sh
# make test-gpu: the evaluator's exploit suite through CUDA, on a GPU host.
#
#   make device-bundle                       (on a build host)
#   sh tests/gpu/eval-gpu.sh                 (on the GPU host; uses device-bundle/run
#                                             when present, else build/default/kernelbot)
#
# Prints one table row per candidate (expected outcome, status, flags,
# verdict) and exits 1 if any exploit passes or a correct kernel fails.
# Env: KERNELBOT (the binary), KERNELBOT_PROBLEMS (the development problems;
# default ../shared/problems beside the repository), TIMEOUT (per request).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
TIMEOUT=${TIMEOUT:-20}
X="$ROOT/tests/fixtures/exploits/cuda"
P="$ROOT/tests/fixtures/eval/scale_bias_gpu.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-test-gpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

need_gpu test-gpu
echo "test-gpu: $("$KERNELBOT" --version) on $(nvidia-smi -L | head -n 1)"

mkdir -p "$tmp/c"
for f in "$X"/*.cu "$X"/*.py; do
	sed -e "s|@ESCAPE_PATH@|$tmp/escaped.txt|" "$f" >"$tmp/c/$(basename "$f")"
done
export KERNELBOT_TEST_SECRET=hunter2

# name|expectation: "correct", or a Python predicate on r that must hold
# for the exploit to count as caught.
cat >"$tmp/expect" <<'EOF2'
correct.cu|correct
unwritten.cu|r["status"] == "mismatch"
partial_row.cu|r["status"] == "mismatch"
skip_new_buffers.cu|r["status"] == "mismatch"
mutate_input.cu|r["status"] == "mismatch"
cache_ptr.cu|r["status"] == "mismatch"
cache_fp.cu|r["status"] == "mismatch" or r["status"] == "correct" and any(c["name"] == "timing_inputs_fresh" and c["passed"] and "permuted from the set's values before every run" in c["detail"] for c in r["checks"])
cache_hash.cu|r["status"] == "correct" and any(c["name"] == "timing_inputs_fresh" and c["passed"] and " 0 with nothing to change" in c["detail"] and "moved the expected outputs at 0 of" not in c["detail"] for c in r["checks"])
nondeterministic.cu|r["status"] == "mismatch"
timed_shape_only.cu|r["status"] == "mismatch"
infinite_loop.cu|r["status"] == "timeout"
segfault.cu|r["status"] == "runtime_error"
illegal_access.cu|r["status"] == "runtime_error"
huge_alloc.cu|r["status"] == "runtime_error"
side_stream.cu|r["status"] != "correct" or "side_stream" in r["flags"]
deferred_stream.cu|r["status"] != "correct" or "side_stream" in r["flags"]
half_precision.cu|r["status"] != "correct" or "precision_downgrade" in r["flags"]
socket.cu|r["status"] != "correct"
child_process.cu|r["status"] != "correct"
env_secret.cu|r["status"] != "correct"
write_outside.cu|r["status"] != "correct"
slow.cu|r["status"] == "correct" and "slower than eager" in r["timing"].get("stopped", "") and r["timing"]["rounds"] == 2
kb_inline_correct.py|correct
kb_inline_empty.py|r["status"] != "correct"
EOF2
cands=$(cut -d'|' -f1 "$tmp/expect")
cd "$tmp/c"
start=$(date +%s)
# shellcheck disable=SC2086
"$KERNELBOT" eval "$P" $cands --backend cuda --json --trials 2 --timeout "$TIMEOUT" \
	>"$tmp/out.json" 2>"$tmp/err"
st=$?
cd "$ROOT"
echo "test-gpu: batch of $(echo $cands | wc -w) candidates, exit $st, $(( $(date +%s) - start )) s"

fail=0
"$PY" - "$tmp/out.json" "$tmp/expect" "$tmp/escaped.txt" <<'PYEOF' || fail=1
import json, os, sys
try:
    res = json.load(open(sys.argv[1]))
except ValueError:
    print("test-gpu: no JSON from kernelbot eval"); sys.exit(1)
res = res if isinstance(res, list) else [res]
by = {r["candidate"].rsplit("/", 1)[-1]: r for r in res}
bad = 0
print("%-22s %-9s %-14s %-40s %s" % ("candidate", "expected", "status", "flags", "verdict"))
for line in open(sys.argv[2]):
    name, want = line.rstrip("\n").split("|", 1)
    r = by.get(name)
    if r is None:
        ok, status, flags = False, "MISSING", ""
    else:
        status, flags = r["status"], ",".join(r["flags"])
        if want == "correct":
            ok = (status == "correct" and "side_stream" not in r["flags"]
                  and "untimed_work" not in r["flags"])
        else:
            ok = bool(eval(want, {"r": r}))
    exp = "correct" if want == "correct" else "caught"
    verdict = "ok" if ok else ("FAILS" if want == "correct" else "EXPLOIT PASSES")
    print("%-22s %-9s %-14s %-40s %s" % (name, exp, status, flags[:40], verdict))
    if not ok:
        bad += 1
        if r is not None:
            print("    errors: %s" % "; ".join(e[:300] for e in r["errors"][:2]))
            for c in r["checks"]:
                if not c["passed"]:
                    print("    check %s: %s" % (c["name"], c["detail"][:600]))
            print("    timing: %s" % json.dumps({k: r["timing"].get(k) for k in
                                                  ("rounds", "reps", "stopped")})[:300])
if os.path.exists(sys.argv[3]):
    print("write_outside.cu: a file was written outside the scratch directory: EXPLOIT PASSES")
    bad += 1
print("test-gpu: %d of %d as expected" % (len(res) - bad if bad <= len(res) else 0, len(res)))
sys.exit(1 if bad else 0)
PYEOF
[ -s "$tmp/err" ] && { echo "--- stderr of kernelbot eval:"; tail -n 20 "$tmp/err"; }

# compute-sanitizer (--sanitize): the correct kernel passes memcheck and
# racecheck; one with an out-of-bounds read that faults nowhere and gives
# right outputs is not correct, nor one with a shared-memory race and
# right outputs. racecheck runs on the candidate's own kernels, listed from
# its shared object: the details must name them.
P_SMALL="$ROOT/tests/fixtures/eval/scale_bias.py"
cd "$tmp/c"
"$KERNELBOT" eval "$P_SMALL" correct.cu oob_read.cu race.cu --backend cuda --json --trials 2 --sanitize \
	--timeout "$TIMEOUT" >"$tmp/san.json" 2>"$tmp/san.err"
st=$?
cd "$ROOT"
"$PY" - "$tmp/san.json" "$st" <<'PYEOF' || fail=1
import json, sys
try:
    res = json.load(open(sys.argv[1]))
except ValueError:
    print("sanitize: no JSON from kernelbot eval --sanitize (exit %s)" % sys.argv[2]); sys.exit(1)
by = {r["candidate"].rsplit("/", 1)[-1]: r for r in res}
def checks(r):
    return {c["name"]: c["passed"] for c in r["checks"] if c["name"].startswith("sanitize")}
ok = True
c, o, rc = by.get("correct.cu"), by.get("oob_read.cu"), by.get("race.cu")
def detail(r, name):
    return next((x["detail"] for x in r["checks"] if x["name"] == name), "") if r else ""
good = c is not None and c["status"] == "correct" and checks(c) == {"sanitize:memcheck": True, "sanitize:racecheck": True}
good = good and "own kernels (scale_bias)" in detail(c, "sanitize:racecheck")
bad = o is not None and o["status"] == "runtime_error" and checks(o).get("sanitize:memcheck") is False
race = (rc is not None and rc["status"] == "runtime_error" and checks(rc).get("sanitize:racecheck") is False
        and "own kernels (scale_bias_shared)" in detail(rc, "sanitize:racecheck"))
def san_s(r):
    j = (r.get("timing_breakdown_s") or {}).get("judge") or {}
    return {k: j[k] for k in ("sanitize_memcheck", "sanitize_racecheck") if k in j}
good = good and set(san_s(c)) == {"sanitize_memcheck", "sanitize_racecheck"}
print("sanitize: correct.cu %s %s %s: %s" % (c and c["status"], c and checks(c), c and san_s(c),
                                             "ok" if good else "FAILS"))
print("    racecheck: %s" % detail(c, "sanitize:racecheck")[:200])
print("sanitize: oob_read.cu %s %s: %s" % (o and o["status"], o and checks(o), "ok" if bad else "EXPLOIT PASSES"))
if not bad and o is not None:
    print("    errors: %s" % "; ".join(e[:300] for e in o["errors"][:2]))
print("sanitize: race.cu %s %s %s: %s" % (rc and rc["status"], rc and checks(rc), rc and san_s(rc),
                                          "ok" if race else "EXPLOIT PASSES"))
print("    racecheck: %s" % detail(rc, "sanitize:racecheck")[:300])
sys.exit(0 if good and bad and race else 1)
PYEOF

# A statistic of the whole input kept per buffer (t3014's CUDA twins): a
# global log_softmax whose memo keeps the logsumexp of each input buffer
# mismatches at a timed run (each run's input is rebuilt from skewed
# windows of its source, kbh/judge_skew.py); its honest twin is correct.
W="$ROOT/tests/fixtures/wholestat"
cp "$W/lse.cu" "$W/lse_memo.cu" "$tmp/c/"
cd "$tmp/c"
"$KERNELBOT" eval "$W/lse.py" lse.cu lse_memo.cu --backend cuda --json --trials 2 \
	--timeout "$TIMEOUT" >"$tmp/ws.json" 2>"$tmp/ws.err"
st=$?
cd "$ROOT"
"$PY" - "$tmp/ws.json" "$st" <<'PYEOF' || fail=1
import json, sys
try:
    by = {r["candidate"].rsplit("/", 1)[-1]: r for r in json.load(open(sys.argv[1]))}
except ValueError:
    print("whole statistic: no JSON from kernelbot eval (exit %s)" % sys.argv[2]); sys.exit(1)
h, m = by.get("lse.cu"), by.get("lse_memo.cu")
good = h is not None and h["status"] == "correct" and not {"side_stream", "untimed_work"} & set(h["flags"])
caught = m is not None and m["status"] == "mismatch" and "timed run" in str(m.get("errors"))
print("whole statistic: lse.cu %s %s: %s" % (h and h["status"], h and h["flags"], "ok" if good else "FAILS"))
print("whole statistic: lse_memo.cu %s: %s" % (m and m["status"], "ok" if caught else "EXPLOIT PASSES"))
for r in (h, m):
    if r is not None and not (good if r is h else caught):
        print("    errors: %s" % "; ".join(e[:300] for e in r["errors"][:2]))
sys.exit(0 if good and caught else 1)
PYEOF

# The development problem end to end: a correct native kernel for
# 01_scale_gelu_bias, cold (compile, torch.compile, baselines measured and
# stored in the baseline cache) and warm (build and baselines cached).
# The development problems: $KERNELBOT_PROBLEMS, else shared/problems beside
# the repository or inside it (a device machine's copy of the tree).
PROBLEMS=${KERNELBOT_PROBLEMS:-$ROOT/../shared/problems}
[ -d "$PROBLEMS" ] || [ -n "${KERNELBOT_PROBLEMS:-}" ] || PROBLEMS=$ROOT/shared/problems
P1="$PROBLEMS/01_scale_gelu_bias.py"
if [ -f "$P1" ]; then
	for run in cold warm; do
		t0=$("$PY" -c 'import time; print(time.time())')
		"$KERNELBOT" eval "$P1" "$ROOT/bench/kernels/01_scale_gelu_bias.cu" --json \
			>"$tmp/gelu.json" 2>"$tmp/gelu.err"
		st=$?
		t1=$("$PY" -c 'import time; print(time.time())')
		"$PY" - "$tmp/gelu.json" "$t0" "$t1" "$run" "$st" <<'PYEOF' || fail=1
import json, sys
t0, t1, run, st = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    print("01_scale_gelu_bias (%s): no JSON (exit %d)" % (run, st)); sys.exit(1)
t = r.get("timings_ms") or {}
med = lambda k: (t.get(k) or {}).get("median")
print("01_scale_gelu_bias (%s): %s in %.2f s wall; kernel %s ms, eager %s ms, compile %s ms, "
      "speedup %s %s; baselines %s; timing %s; breakdown %s"
      % (run, r["status"], t1 - t0, med("candidate"), med("eager"),
      med("compile"), (r.get("speedup") or {}).get("eager"), (r.get("speedup") or {}).get("eager_ci95"),
      json.dumps(r.get("baselines")), json.dumps(r.get("timing")),
      json.dumps(r.get("timing_breakdown_s"))))
ok = r["status"] == "correct"
js = (r.get("timing_breakdown_s") or {}).get("judge_shared") or {}
if run == "warm" and js.get("judge_server") != "hit":
    print("01_scale_gelu_bias (warm): judge_server %r (%s), expected a hit on the cold run's server"
          % (js.get("judge_server"), js.get("judge_server_reason", "")))
    ok = False
if run == "warm" and t1 - t0 >= 5.0:
    print("01_scale_gelu_bias (warm): %.2f s wall, the target is under 5 s" % (t1 - t0))
    ok = False
sys.exit(0 if ok else 1)
PYEOF
	done
else
	echo "test-gpu: SKIP 01_scale_gelu_bias: $P1 not found (set KERNELBOT_PROBLEMS)"
fi

[ "$fail" -eq 0 ] && echo "test-gpu: PASS" || echo "test-gpu: FAIL"
exit "$fail"
