#!/bin/sh
# make test-gpu: the LLM proposer on CUDA, against the fake LLM server
# (tests/fakes/fakellm.py, stdlib Python only), on a GPU host.
#
#   make device-bundle                       (on a build host)
#   sh tests/gpu/llm-gpu.sh                  (on the GPU host; uses device-bundle/run
#                                             when present, else build/default/kernelbot)
#
# 1. --proposer llm: a kernel.cu that nvcc refuses, then (the fix prompt
#    carrying nvcc's error) a correct one, which ends as best/kernel.cu.
# 2. --proposer both: the graph compiler's CUDA kernels seed the LLM; its
#    rewrite prompt names the GPU and holds the compiler's kernel.
# Exits 1 when a check fails.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
P="$ROOT/tests/fixtures/eval/scale_bias_gpu.py"
P2="$ROOT/tests/fixtures/eval/scale_bias_gpu_fixed.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-llm-gpu.XXXXXX")
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
json_get() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
prompts() { $PY -c 'import json,sys; p=[json.loads(l)["prompt"] for l in open(sys.argv[1])]; print(eval(sys.argv[2]))' "$1" "$2"; }

need_gpu llm-gpu
echo "llm-gpu: $("$KERNELBOT" --version) on $(nvidia-smi -L | head -n 1)"

# The answers: a kernel nvcc refuses, and the evaluator's correct CUDA kernel.
{ echo 'Here it is.'; echo '```cuda'
  sed 's/return cudaGetLastError() != cudaSuccess;/return kb_undeclared_status;/' \
	"$ROOT/tests/fixtures/exploits/cuda/correct.cu"
  echo '```'; } >"$tmp/broken.md"
{ echo 'Fixed.'; echo '```cuda'; echo '/* fixed by the model */'
  cat "$ROOT/tests/fixtures/exploits/cuda/correct.cu"; echo '```'; } >"$tmp/fixed.md"
{ echo '```cuda'; echo '/* rewritten by the model */'
  cat "$ROOT/tests/fixtures/exploits/cuda/correct.cu"; echo '```'; } >"$tmp/rewrite.md"
grep -q kb_undeclared_status "$tmp/broken.md" || { bad "the broken fixture differs from correct.cu"; exit 1; }
cat >"$tmp/script.json" <<EOF
[{"match": "# Task: write kernel.cu", "reply_file": "$tmp/broken.md", "usage": [1000, 500]},
 {"match": "# Task: fix kernel.cu.*kb_undeclared_status", "reply_file": "$tmp/fixed.md", "usage": [1000, 500]},
 {"match": "# Task: a faster kernel.cu", "reply_file": "$tmp/rewrite.md", "usage": [1000, 500]}]
EOF
$PY "$ROOT/tests/fakes/fakellm.py" --port-file "$tmp/port" --log "$tmp/llm.log" \
	--script "$tmp/script.json" 2>"$tmp/fake.err" &
fake_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/port" ] || { bad "the fake LLM did not start: $(cat "$tmp/fake.err")"; exit 1; }
cat >"$tmp/kb.yml" <<EOF
data_dir: $tmp/data
llm:
  proposals: 1
  summarize_over: 0
  models:
    - provider: openai
      base_url: http://127.0.0.1:$(cat "$tmp/port")/v1
      model: fake-gpt
EOF
FAST="--backend cuda --trials 2 --confirm-trials 2 --timeout 60 --seed 3"

# 1. the error-feedback loop on CUDA
"$KERNELBOT" optimize "$P" --proposer llm --config "$tmp/kb.yml" --budget 2 $FAST \
	--out "$tmp/o1" >"$tmp/o1.out" 2>"$tmp/o1.err"
check_eq "1: exit 0 (a verified kernel)" "$?" 0
check_eq "1: nvcc refused the first, the fix is correct" \
	"$(json_get "$tmp/o1/history.json" '[(c["op"], c["status"]) for c in d["candidates"]]')" \
	"[('seed', 'compile_error'), ('fix', 'correct')]"
check_eq "1: the fix is best/kernel.cu" "$(head -n 1 "$tmp/o1/best/kernel.cu")" "/* fixed by the model */"
check_eq "1: the fix prompt quotes nvcc's error" \
	"$(prompts "$tmp/llm.log" '"kb_undeclared_status" in p[1].split("What the judge reported")[1] and "error" in p[1]')" True
check_eq "1: the translate prompt has the CUDA ABI" \
	"$(prompts "$tmp/llm.log" '"cudaStream_t" in p[0] and "```cuda" in p[0]')" True
if command -v sqlite3 >/dev/null 2>&1; then
	check_eq "1: two calls in llm_calls" \
		"$(sqlite3 "$tmp/data/kernelbot.db" 'SELECT count(*) FROM llm_calls')" 2
fi

# 2. both: the compiler's kernels seed the LLM
n0=$(wc -l <"$tmp/llm.log")
# (a problem without shape variants: the graph compiler specializes on the traced shapes)
"$KERNELBOT" optimize "$P2" --proposer both --config "$tmp/kb.yml" --per-generation 2 \
	--generations 2 $FAST --out "$tmp/o2" >"$tmp/o2.out" 2>"$tmp/o2.err"
check_eq "2: generation 0 is the compiler's alone" \
	"$(json_get "$tmp/o2/history.json" 'sorted(set(c["proposer"] for c in d["candidates"] if c["generation"] == 0))')" \
	"['compiler']"
check_eq "2: then an LLM rewrite of a compiler kernel" \
	"$(json_get "$tmp/o2/history.json" '[(c["op"], d["candidates"][c["parents"][0]]["proposer"]) for c in d["candidates"] if c["proposer"] == "llm"][:1]')" \
	"[('rewrite', 'compiler')]"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
check_eq "2: the rewrite prompt names the GPU ($gpu) and holds the compiler's kernel" \
	"$($PY -c 'import json,sys; p=[json.loads(l)["prompt"] for l in open(sys.argv[1])][int(sys.argv[2])]; print("## The GPU" in p and sys.argv[3] in p and "graph compiler" in p)' "$tmp/llm.log" "$n0" "$gpu")" True

[ "$T_FAILED" -eq 0 ] || for f in "$tmp"/o1.err "$tmp"/o2.err; do echo "--- $f:"; tail -n 15 "$f"; done
t_summary llm-gpu
