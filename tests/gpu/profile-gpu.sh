#!/bin/sh
# make test-gpu: profile feedback from the real Nsight Compute (docs/profile.md)
# on a GPU host.
#
#   make device-bundle                       (on a build host)
#   sh tests/gpu/profile-gpu.sh              (on the GPU host; uses device-bundle/run
#                                             when present, else build/default/kernelbot)
#
# 1. kernelbot profile scale_bias_gpu.py correct.cu --json: the candidate's
#    kernel only (no torch kernel), with plausible figures: time and
#    bandwidth > 0, occupancy in (0, 100], registers, block size 256, the SM
#    count, stall shares; the paragraph names the kernel. SKIP with ncu's
#    reason when ncu is missing or has no counter permission.
# 2. The same without the sandbox (KERNELBOT_EVAL_UNSANDBOXED=1), to tell
#    the sandbox apart from ncu when 1 fails.
# 3. kernelbot optimize --proposer llm --backend cuda (profile: auto) against
#    the fake LLM: the rewrite prompt carries ncu's paragraph, history.json
#    says profile_source ncu.
# Exits 1 when a check fails.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
PY=${PYTHON:-python3}
P="$ROOT/tests/fixtures/eval/scale_bias_gpu.py"
K="$ROOT/tests/fixtures/exploits/cuda/correct.cu"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-profile-gpu.XXXXXX")
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
json_get() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
prompts() { $PY -c 'import json,sys; p=[json.loads(l)["prompt"] for l in open(sys.argv[1])]; print(eval(sys.argv[2]))' "$1" "$2"; }

need_gpu profile-gpu
echo "profile-gpu: $("$KERNELBOT" --version) on $(nvidia-smi -L | head -n 1)"

# plausible FILE WHAT: the checks of one `kernelbot profile --json` output
plausible() {
	check_eq "$2: status ok" "$(json_get "$1" 'd["status"]')" ok
	check_eq "$2: one kernel, the candidate's (scale_bias), launched once" \
		"$(json_get "$1" '[(k["name"], k["launches"]) for k in d["kernels"]]')" "[('scale_bias', 1)]"
	check_eq "$2: time and DRAM bandwidth > 0" \
		"$(json_get "$1" 'd["kernels"][0]["time_ns"] > 0 and d["kernels"][0]["dram_gbs"] > 0')" True
	check_eq "$2: bandwidth below 1.5x the measured copy bandwidth" \
		"$(json_get "$1" 'd["kernels"][0]["dram_gbs"] < 1.5 * d["bandwidth_gbs"]')" True
	check_eq "$2: occupancy achieved and theoretical in (0, 100]" \
		"$(json_get "$1" '[0 < d["kernels"][0][x] <= 100 for x in ("occupancy_achieved_pct", "occupancy_theoretical_pct")]')" \
		"[True, True]"
	check_eq "$2: registers > 0, block 256, SMs > 0, SM clock in (0.5, 3) GHz" \
		"$(json_get "$1" '(lambda k: (k["registers_per_thread"] > 0, k["block_size"], k["sm_count"] > 0, 0.5e9 < k["sm_hz"] < 3e9))(d["kernels"][0])')" \
		"(True, 256, True, True)"
	check_eq "$2: FP32 work counted (scale and bias: an FFMA or FMUL+FADD per element)" \
		"$(json_get "$1" 'd["kernels"][0]["fp32_flop"] > 0 and d["kernels"][0]["fp32_flops"] < d["kernels"][0]["fp32_peak_flops"]')" True
	check_eq "$2: stall figures present" \
		"$(json_get "$1" 'sum(v for v in d["kernels"][0]["stalls"].values() if v) > 0')" True
	check_eq "$2: the paragraph names the kernel and its occupancy" \
		"$(json_get "$1" '"`scale_bias`" in d["summary"] and "occupancy" in d["summary"] and len(d["summary"]) < 900')" True
	echo "     $(json_get "$1" 'd["summary"]')"
}

# 1. sandboxed, as the evaluator runs it
"$KERNELBOT" profile "$P" "$K" --backend cuda --json >"$tmp/p1.json" 2>"$tmp/p1.err"
rc=$?
if [ ! -s "$tmp/p1.json" ]; then
	bad "1: kernelbot profile printed no JSON (exit $rc): $(tail -c 1500 "$tmp/p1.err")"
elif [ "$(json_get "$tmp/p1.json" 'd["status"]')" != ok ]; then
	reason=$(json_get "$tmp/p1.json" 'd["reason"]')
	case $reason in
	*ERR_NVGPUCTRPERM*|*"not on PATH"*)
		echo "profile-gpu: SKIP 1: $reason" ;;
	*)
		bad "1: no profile: $reason" ;;
	esac
else
	plausible "$tmp/p1.json" 1
fi

# 2. the developer fallback, no sandbox
KERNELBOT_EVAL_UNSANDBOXED=1 "$KERNELBOT" profile "$P" "$K" --backend cuda --json >"$tmp/p2.json" 2>"$tmp/p2.err"
if [ ! -s "$tmp/p2.json" ]; then
	bad "2: kernelbot profile printed no JSON: $(tail -c 1500 "$tmp/p2.err")"
elif [ "$(json_get "$tmp/p2.json" 'd["status"]')" != ok ]; then
	reason=$(json_get "$tmp/p2.json" 'd["reason"]')
	case $reason in
	*ERR_NVGPUCTRPERM*|*"not on PATH"*) echo "profile-gpu: SKIP 2: $reason" ;;
	*) bad "2: no profile (unsandboxed): $reason"
		json_get "$tmp/p2.json" '"\n".join(e[:600] for e in ((lambda e: e[0] if isinstance(e, list) and e else e)(d.get("eval") or {}).get("errors") or [])[:2])' ;;
	esac
else
	plausible "$tmp/p2.json" 2
fi

# 3. the optimize prompt carries the paragraph
if [ "$(json_get "$tmp/p1.json" 'd["status"]' 2>/dev/null)" = ok ]; then
	{ echo '```cuda'; echo '/* written by the model */'; cat "$K"; echo '```'; } >"$tmp/first.md"
	{ echo '```cuda'; echo '/* rewritten by the model */'; cat "$K"; echo '```'; } >"$tmp/rewrite.md"
	cat >"$tmp/script.json" <<EOF
[{"match": "# Task: write kernel.cu", "reply_file": "$tmp/first.md", "usage": [100, 100]},
 {"match": "# Task: a faster kernel.cu", "reply_file": "$tmp/rewrite.md", "usage": [100, 100]}]
EOF
	$PY "$ROOT/tests/fakes/fakellm.py" --port-file "$tmp/port" --log "$tmp/llm.log" \
		--script "$tmp/script.json" 2>"$tmp/fake.err" &
	fake_pid=$!
	i=0
	while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	cat >"$tmp/kb.yml" <<EOF
data_dir: $tmp/data
profile: auto
llm:
  proposals: 1
  summarize_over: 0
  models:
    - provider: openai
      base_url: http://127.0.0.1:$(cat "$tmp/port")/v1
      model: fake-gpt
EOF
	"$KERNELBOT" optimize "$P" --proposer llm --config "$tmp/kb.yml" --generations 2 \
		--backend cuda --trials 2 --confirm-trials 2 --timeout 60 --seed 3 \
		--out "$tmp/o3" >"$tmp/o3.out" 2>"$tmp/o3.err"
	check_eq "3: the rewrite prompt carries ncu's paragraph" \
		"$(prompts "$tmp/llm.log" '[("Profile of the fastest: ncu, one call" in x) for x in p if "# Task: a faster" in x][:1]')" "[True]"
	check_eq "3: history.json: the first kernel's profile came from ncu" \
		"$(json_get "$tmp/o3/history.json" 'd["candidates"][0].get("profile_source")')" ncu
else
	echo "profile-gpu: SKIP 3: no profile in 1"
fi

t_summary profile-gpu
