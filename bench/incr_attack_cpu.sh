#!/bin/sh
# bench/incr_attack_cpu.sh [kernelbot [harness.py]]: the incremental-
# recomputation attack against the judge's input changes (issue 22,
# docs/evaluation.md *Fresh inputs in every timed run*). One batch, on
# bench/incr/matmul.py (y = x @ w, 128 x 256 x 256, CPU): the honest
# kernel, incr_rows.c (recomputes the rows of y whose row of x changed)
# and incr_delta.c (adds (new - old) * w[p][:] per changed element), the
# same loop for every row they compute; three batches. Prints each
# kernel's status, median, speedup over eager and over the honest kernel
# of the same batch, and the elements the judge changed. With arguments:
# another build (an older commit's kernelbot and gpu/harness/harness.py)
# for a before/after (docs/BENCHMARKS.md).
cd "$(dirname "$0")/.." || exit 2
K=${1:-$PWD/build/default/kernelbot}
[ -n "$2" ] && export KERNELBOT_HARNESS="$2"
export KERNELBOT_PYTHON="${KERNELBOT_PYTHON:-/usr/bin/python3}" KERNELBOT_JUDGE_SERVER=0
P=$PWD/bench/incr/matmul.py
d=$(mktemp -d "${TMPDIR:-/tmp}/kb-incr.XXXXXX") || exit 2
trap 'rm -rf "$d"' EXIT
cp bench/incr/honest.c bench/incr/incr_rows.c bench/incr/incr_delta.c "$d"/
for i in 1 2 3; do
  (cd "$d" && KERNELBOT_CACHE="$d/cache" "$K" eval "$P" honest.c incr_rows.c incr_delta.c \
    --backend cpu --json --rounds 10 >"$d/out$i.json" 2>"$d/err$i")
  python3 - "$d/out$i.json" "$i" <<'PYEOF' || { tail -5 "$d/err$i"; exit 1; }
import json, re, sys
r = json.load(open(sys.argv[1]))
r = r if isinstance(r, list) else [r]
honest = next(c for c in r if c["candidate"].endswith("honest.c"))["timings_ms"]["candidate"]["median"]
for c in r:
    t = c.get("timings_ms") or {}
    med = (t.get("candidate") or {}).get("median")
    fresh = next((x["detail"] for x in c["checks"] if x["name"] == "timing_inputs_fresh"), "")
    m = re.search(r"(\d+) elements changed, at most (\d+) in a run", fresh)
    print("batch %s %-13s %-8s median %s ms  vs eager %s  vs honest %s  changed/run %s  flags %s"
          % (sys.argv[2], c["candidate"].split("/")[-1], c["status"],
             "%.4f" % med if med else "-", (c.get("speedup") or {}).get("eager"),
             "%.2fx" % (honest / med) if med else "-", m.group(2) if m else "1 per input",
             ",".join(c.get("flags") or []) or "-"))
PYEOF
done
