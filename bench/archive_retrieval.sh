#!/bin/sh
# Archive import and retrieval at size: N synthetic kernels (variants of the
# 16 development problems' fixtures, spread over sm_80, sm_90 and the CPU)
# are written as an export, imported, then `archive similar` (a new softmax
# variant, with its IR) and `archive search` are timed, median of RUNS.
# Usage: bench/archive_retrieval.sh [N] [RUNS]   (KERNELBOT defaults to
# build/default/kernelbot; run from the source tree)
set -u
N=${1:-5000}
RUNS=${2:-5}
KB=${KERNELBOT:-build/default/kernelbot}
PY=/usr/bin/python3
TMP=$(mktemp -d "${TMPDIR:-/tmp}/archive-bench.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

$PY - "$N" "$TMP/big.jsonl" <<'EOPY' || exit 1
import glob, hashlib, json, os, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(1)
probs = []
for ir_path in sorted(glob.glob("tests/fixtures/ir/[01]*.json")):
    name = os.path.basename(ir_path)[:-5]
    ir = json.load(open(ir_path))
    src = open("tests/fixtures/compiler/problems/%s.py" % name).read()
    ops = " ".join(sorted(nd["op"] for nd in ir["nodes"] if nd["op"] != "getitem"))
    probs.append((name, src, ir, ops))
kernels = [open(p).read() for p in sorted(glob.glob("tests/fixtures/archive/kernels/*.cu"))]
words = "tile warp shuffle vectorized float4 shared smem unroll fused epilogue row col block grid".split()
sha = lambda t: hashlib.sha256(t.encode()).hexdigest()
with open(out, "w") as f:
    for i in range(n):
        name, src, ir, ops = probs[i % len(probs)]
        src = src + "# variant %d: %s\n" % (i // len(probs), " ".join(rng.sample(words, 4)))
        k = rng.choice(kernels) + "// %s %d\n" % (" ".join(rng.sample(words, 5)), i)
        arch = rng.choice(["sm_80", "sm_90", "cpu"])
        ms = rng.uniform(0.01, 1.0)
        f.write(json.dumps({"created": 1700000000 + i, "problem": "%s_v%d" % (name, i),
            "problem_source": src, "problem_sha": sha(src), "ops": ops,
            "shape_class": "", "ir": ir, "backend": "cpu" if arch == "cpu" else "cuda",
            "arch": arch, "device": None, "kernel": k, "kernel_sha": sha(k), "ms": ms,
            "eager_ms": ms * 2, "speedup_eager": 2.0, "proposer": "llm", "model": "bench"}) + "\n")
EOPY

med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }

s=$(now)
"$KB" archive import "$TMP/big.jsonl" --data-dir "$TMP/data" >/dev/null || exit 1
imp=$(awk "BEGIN{print $(now) - $s}")
times=""
for i in $(seq "$RUNS"); do
	s=$(now)
	"$KB" archive similar tests/fixtures/archive/softmax_scaled.py \
		--ir tests/fixtures/archive/softmax_scaled.ir.json --arch sm_90 -k 5 \
		--data-dir "$TMP/data" >/dev/null || exit 1
	times="$times $(awk "BEGIN{print $(now) - $s}")"
done
sim=$(printf '%s\n' $times | med)
times=""
for i in $(seq "$RUNS"); do
	s=$(now)
	"$KB" archive search softmax rows --data-dir "$TMP/data" >/dev/null || exit 1
	times="$times $(awk "BEGIN{print $(now) - $s}")"
done
sea=$(printf '%s\n' $times | med)
printf 'kernels %d: import %.2f s; similar (k=5, whole command) %.3f s; search %.3f s (median of %d)\n' \
	"$N" "$imp" "$sim" "$sea" "$RUNS"
