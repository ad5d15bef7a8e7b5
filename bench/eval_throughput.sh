#!/bin/sh
# bench/eval_throughput.sh [native|inline|repeat|all]: the evaluator's
# throughput and repeatability on a GPU host (docs/BENCHMARKS.md).
#
#   native  N_NATIVE correct variants of each of two development problems
#           (01_scale_gelu_bias, 02_softmax_rows) as native ABI kernels,
#           one `kernelbot eval` batch per problem: candidates per hour and
#           the cost of each step (compile, worker start, trials, timing)
#   inline  the same kernels as KernelBench-format load_inline solutions
#           (N_INLINE of them per problem: each builds for tens of seconds,
#           so the rate is measured on fewer and reported per hour)
#   repeat  one candidate evaluated REPEAT times: the spread of its median, and
#           the wall time of each evaluation (the first measures the
#           baselines, the others reuse them from the baseline cache)
#
# `all` runs, per problem, native then inline (then their ratio), with
# repeat after native 01: every summary is printed as soon as it is
# known, and a section that would start after BUDGET_S seconds is skipped
# (so that one 600 s device call brings back what was measured).
#
# Results: one JSON per run and summary.txt under $OUT (the device tool's
# output folder) or bench/results/. Env: KERNELBOT, KERNELBOT_PROBLEMS,
# ONLY (problem names to run, default both),
# N_NATIVE (16), N_INLINE (2), REPEAT (5), BUDGET_S (480), BACKEND (cuda;
# cpu is a dry run of this script on a host without a GPU: the
# bench/kernels/*.c twins on copies of the problems shrunk to a few
# hundred KiB, not a benchmark). The defaults take about 8 minutes on an
# H200.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
# The development problems: $KERNELBOT_PROBLEMS, else shared/problems beside
# the repository or inside it (a device machine's copy of the tree).
PROBLEMS=${KERNELBOT_PROBLEMS:-$ROOT/../shared/problems}
[ -d "$PROBLEMS" ] || [ -n "${KERNELBOT_PROBLEMS:-}" ] || PROBLEMS=$ROOT/shared/problems
BACKEND=${BACKEND:-cuda}
case $BACKEND in
cuda) EXT=cu ;;
cpu) EXT=c ;;
*) echo "bench: BACKEND is cuda or cpu"; exit 2 ;;
esac
N_NATIVE=${N_NATIVE:-16}
N_INLINE=${N_INLINE:-2}
REPEAT=${REPEAT:-5}
BUDGET_S=${BUDGET_S:-480}
RES=${OUT:-$ROOT/bench/results}
what=${1:-all}
mkdir -p "$RES"
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A fresh compile cache: every variant pays its build, as a new candidate would.
export KERNELBOT_CACHE="$work/cache"

for p in 01_scale_gelu_bias 02_softmax_rows; do
	[ -f "$PROBLEMS/$p.py" ] || { echo "bench: $PROBLEMS/$p.py not found (set KERNELBOT_PROBLEMS)"; exit 2; }
done
if [ "$BACKEND" = cpu ]; then
	# The dry run: the same problems at a size a CPU evaluates in seconds.
	mkdir -p "$work/problems"
	for p in 01_scale_gelu_bias 02_softmax_rows; do
		sed -e 's/^rows = .*/rows = 64/' -e 's/^features = .*/features = 256/' \
			-e 's/^cols = .*/cols = 512/' "$PROBLEMS/$p.py" >"$work/problems/$p.py"
	done
	PROBLEMS=$work/problems
fi
echo "bench: backend $BACKEND, problems $PROBLEMS, $(date -u +%FT%TZ)" | tee -a "$RES/summary.txt"

now() { date +%s.%N; }
T_BENCH=$(now)
# in_budget SECTION: whether there is time left to start it (else say so).
in_budget() {
	if awk -v a="$T_BENCH" -v b="$(now)" -v m="$BUDGET_S" 'BEGIN { exit !(b - a < m) }'; then
		return 0
	fi
	echo "bench: $1 skipped: ${BUDGET_S} s budget spent (BUDGET_S)" | tee -a "$RES/summary.txt"
	return 1
}

# run_batch NAME PROBLEM FILES...: one eval call, timed; JSON to $RES/NAME.json
run_batch() {
	name=$1 problem=$2
	shift 2
	t0=$(now)
	"$KERNELBOT" eval "$problem" "$@" --backend "$BACKEND" --json >"$RES/$name.json" 2>"$RES/$name.err"
	st=$?
	t1=$(now)
	"$PY" - "$RES/$name.json" "$name" "$t0" "$t1" "$st" "$#" <<'PYEOF' | tee -a "$RES/summary.txt"
import json, statistics, sys
path, name, t0, t1, st, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
try:
    res = json.load(open(path))
except ValueError:
    print("%s: no JSON (exit %d); see %s.err" % (name, st, name)); sys.exit(0)
res = res if isinstance(res, list) else [res]
wall = t1 - t0
ok = sum(r["correct"] for r in res)
def mean(key, where="judge"):
    v = [r["timing_breakdown_s"][where].get(key) for r in res
         if isinstance(r.get("timing_breakdown_s", {}).get(where), dict)]
    v = [x for x in v if x is not None]
    return statistics.mean(v) if v else 0.0
comp = [r.get("compile_s") or 0 for r in res]
build = [r.get("build_s") or 0 for r in res]
shared = next((r["timing_breakdown_s"].get("judge_shared") for r in res
               if r.get("timing_breakdown_s", {}).get("judge_shared")), {}) or {}
command = next((r["timing_breakdown_s"].get("command") for r in res
                if r.get("timing_breakdown_s", {}).get("command")), {}) or {}
print("%s: %d candidates, %d correct, %.1f s wall -> %.0f candidates/hour" % (name, n, ok, wall, n / wall * 3600))
print("  per candidate (mean s): compile %.3f (sum %.1f, run in parallel), load_inline build %.2f, "
      "worker start %.3f, trials %.3f (worker %.3f, judge read+compare %.3f), timing %.3f "
      "(candidate %.3f, eager %.3f, torch.compile %.3f, spot checks %.3f, warm-up %.3f), judge total %.3f"
      % (statistics.mean(comp), sum(comp), statistics.mean(build), mean("worker_start"), mean("trials"),
         mean("trials_worker"), mean("trials_judge"), mean("timing"), mean("timing_candidate"),
         mean("timing_eager"), mean("timing_compile"), mean("spot_checks"), mean("timing_warmup"),
         mean("total")))
print("  the worker's trials (mean s): load %.3f, device %.3f, copies off the device %.3f, checks %.3f, "
      "output files %.3f; spot checks' worker %.3f"
      % (mean("trials_worker_load"), mean("trials_worker_device"), mean("trials_worker_d2h"),
         mean("trials_worker_check"), mean("trials_worker_write"),
         sum(mean("spot_checks_worker_" + k) for k in ("d2h", "check", "write"))))
def rounded(d):  # figures rounded; words (judge_server: hit, spawned...) as they are
    return json.dumps({k: round(v, 3) if isinstance(v, (int, float)) else v for k, v in d.items()})
print("  once per batch (s): %s" % rounded(shared))
print("  the command (s): %s; baselines: %s" % (rounded(command),
      json.dumps(next((r.get("baselines") for r in res if r.get("baselines")), None))))
bad = [(r["candidate"].rsplit("/", 1)[-1], r["status"], r["errors"][:1]) for r in res if not r["correct"]]
if bad:
    print("  NOT CORRECT: %s" % bad[:4])
json.dump({"name": name, "n": n, "correct": ok, "wall_s": wall, "per_hour": n / wall * 3600},
          open(path.replace(".json", ".rate"), "w"))
PYEOF
}

native() {
	p=$1
	in_budget "native $p" || return 0
	"$PY" "$ROOT/bench/gen_variants.py" "$ROOT/bench/kernels/$p.$EXT" "$N_NATIVE" "$work/native_$p"
	run_batch "native_$p" "$PROBLEMS/$p.py" "$work/native_$p"/*."$EXT"
}

inline() {
	p=$1 m=$2
	in_budget "inline $p" || return 0
	"$PY" "$ROOT/bench/gen_variants.py" "$ROOT/bench/kernels/$p.$EXT" "$N_INLINE" \
		"$work/inline_$p" --inline --model "$m"
	run_batch "inline_$p" "$PROBLEMS/$p.py" "$work/inline_$p"/*.py
}

# ratio PROBLEM: native vs load_inline candidates per hour, once both ran.
ratio() {
	[ -f "$RES/native_$1.rate" ] && [ -f "$RES/inline_$1.rate" ] || return 0
	"$PY" - "$RES" "$1" <<'PYEOF' | tee -a "$RES/summary.txt"
import json, sys
for p in sys.argv[2:]:
    try:
        a = json.load(open("%s/native_%s.rate" % (sys.argv[1], p)))
        b = json.load(open("%s/inline_%s.rate" % (sys.argv[1], p)))
        print("%s: native %.0f/h vs load_inline %.0f/h: %.1fx (goal >= 20x)"
              % (p, a["per_hour"], b["per_hour"], a["per_hour"] / b["per_hour"]))
    except (OSError, ValueError, KeyError, ZeroDivisionError):
        pass
PYEOF
}

repeat() {
	in_budget repeat || return 0
	"$PY" "$ROOT/bench/gen_variants.py" "$ROOT/bench/kernels/01_scale_gelu_bias.$EXT" 1 "$work/rep"
	i=0
	while [ "$i" -lt "$REPEAT" ]; do
		t0=$(now)
		"$KERNELBOT" eval "$PROBLEMS/01_scale_gelu_bias.py" "$work/rep"/*."$EXT" --backend "$BACKEND" --json \
			>"$RES/repeat_$i.json" 2>>"$RES/repeat.err"
		echo "$t0 $(now)" >"$RES/repeat_$i.wall"
		i=$((i + 1))
	done
	"$PY" - "$RES" "$REPEAT" <<'PYEOF' | tee -a "$RES/summary.txt"
import json, statistics, sys
meds, eag, walls, hits = [], [], [], []
for i in range(int(sys.argv[2])):
    try:
        r = json.load(open("%s/repeat_%d.json" % (sys.argv[1], i)))
        r = r[0] if isinstance(r, list) else r
        t0, t1 = map(float, open("%s/repeat_%d.wall" % (sys.argv[1], i)).read().split())
        meds.append(r["timings_ms"]["candidate"]["median"])
        eag.append(r["timings_ms"]["eager"]["median"])
        cached = bool((r.get("baselines") or {}).get("cached"))
        walls.append(t1 - t0)
        hits.append(cached)
        bd = r["timing_breakdown_s"]
        print("repeat %d: %.2f s wall, baselines %s, candidate median %.5f ms; judge start %.2f, "
              "setup %.2f, baseline warm-up %.2f, worker start %.2f, trials %.2f, timing %.2f, "
              "harness %.2f of the command's %.2f"
              % (i, t1 - t0, "cached" if cached else "measured", meds[-1],
                 bd["judge_shared"].get("judge_start", 0), bd["judge_shared"].get("judge_setup", 0),
                 bd["judge_shared"].get("baseline_warmup", 0), bd["judge"].get("worker_start", 0),
                 bd["judge"].get("trials", 0), bd["judge"].get("timing", 0),
                 bd.get("command", {}).get("harness", 0), r.get("wall_s", 0)))
    except (ValueError, KeyError, TypeError, OSError, IndexError):
        print("repeat %d: no result" % i)
if len(meds) < 2:
    print("repeat: fewer than 2 successful evaluations"); sys.exit(0)
mean = statistics.mean(meds)
hit_walls = [w for w, h in zip(walls, hits) if h]
print("repeat: 01_scale_gelu_bias native, %d evaluations: candidate median ms min %.5f max %.5f "
      "mean %.5f -> spread (max-min)/mean %.2f%% (goal < 1%%), stdev/mean %.2f%%; eager median spread %.2f%%"
      % (len(meds), min(meds), max(meds), mean, 100 * (max(meds) - min(meds)) / mean,
         100 * statistics.stdev(meds) / mean, 100 * (max(eag) - min(eag)) / statistics.mean(eag)))
print("repeat: wall per evaluation, baselines cached: %s (median %s s; goal < 5 s); measured: %s"
      % (["%.2f" % w for w in hit_walls], "%.2f" % statistics.median(hit_walls) if hit_walls else "-",
         ["%.2f" % w for w, h in zip(walls, hits) if not h]))
PYEOF
}

for spec in 01_scale_gelu_bias:gelu 02_softmax_rows:softmax; do
	p=${spec%%:*} m=${spec#*:}
	# ONLY=02_softmax_rows: one problem's half of the benchmark; the
	# repeat (it evaluates 01) runs whatever ONLY names
	case " ${ONLY:-$p} " in *" $p "*) only=1 ;; *) only=0 ;; esac
	if [ "$only" = 1 ]; then
		case $what in native|all) native "$p" ;; esac
	fi
	# Right after native 01, whose batch stored the baselines it reuses
	# (without it, the first evaluation measures them).
	if [ "$p" = 01_scale_gelu_bias ] && { [ "$what" = repeat ] || [ "$what" = all ]; }; then
		repeat
	fi
	if [ "$only" = 1 ]; then
		case $what in inline|all) inline "$p" "$m" ;; esac
		ratio "$p"
	fi
done
