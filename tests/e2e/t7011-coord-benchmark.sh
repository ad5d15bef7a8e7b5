#!/bin/sh
# t7011: `/kernelbot benchmark` re-evaluates the PR's own kernel
# (kernels/SLUG/kernel.c on the CPU runner) with `kernelbot eval` against
# the module at the PR's head, with no search, and answers with a comment
# holding the fresh speedup table and the device. The stand-in optimize
# writes a real kernel for the stand-in module (x * 2), so the evaluator
# verifies and times it for real.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7011
. "$KB_ROOT/tests/e2e/lib-coord.sh"
export KERNELBOT_PYTHON="$PY" KERNELBOT_CACHE="$TMP/cache" OMP_NUM_THREADS=1
coord_repo
fake_github --git-dir "$TMP/origin.git" || { echo "fake GitHub did not start"; t_done; }
coord_config "$TMP/kb.yml" "$(github_forge)"
kb_serve_start "$TMP/kb.yml" || t_done

gh_push 0000000000000000000000000000000000000000 "$SHA0"
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "the push made PR 1" "$(ghq "n('POST', '$R/pulls')")" 1
HEAD1=$(git --git-dir "$TMP/origin.git" rev-parse kernelbot/models-fast)
runs=$(wc -l <"$STANDIN_LOG" | tr -d ' ')

comment alice "/kernelbot benchmark"
a=$(answer "$CID")
check_match "the benchmark is queued, no search" "$a" "Queued job 2: benchmarking this pull request's kernel of .models/fast.py. at $(printf %.12s "$HEAD1") with .kernelbot eval. \(no search\)"
check "job 2 ends" wait_sql 120 "SELECT state FROM jobs WHERE id = 2" done
check_eq "one benchmark task, done" "$(db "SELECT kind, state, arch FROM tasks WHERE job = 2")" "benchmark|done|cpu"
check_eq "at the PR's head commit" "$(db "SELECT sha FROM jobs WHERE id = 2")" "$HEAD1"
check_eq "no optimize ran (no search)" "$(wc -l <"$STANDIN_LOG" | tr -d ' ')" "$runs"
check_eq "the evaluator timed the PR's kernel" \
    "$(db "SELECT summary FROM tasks WHERE job = 2" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["kernel"], d["result"]["status"], d["result"]["speedup"]["eager"] > 0)')" \
    "kernels/models-fast/kernel.c correct True"
check "its result is stored" test -s "$(db "SELECT out_dir FROM tasks WHERE job = 2")/result.json"
b=$(bot_comment "kernelbot:benchmark:2:models-fast:cpu ")
check_match "the answer has the speedup table" "$b" "\| backend, device \| input shape \| eager ms \| torch.compile ms \| kernel ms \| speedup vs eager \[95% CI\]"
check_match "a row for the CPU with a speedup and its interval" "$b" "\| cpu, cpu \(cpu\) \|.*\| \*\*[0-9.]+x\*\* \[[0-9.]+, [0-9.]+\] \|"
check_match "the verification" "$b" "Verification\*\*: correct"
check_match "the device" "$b" "Device\*\*: cpu, cpu"
check_match "how to reproduce: the thread setting, the seed, the flags" "$b" \
	"OMP_NUM_THREADS=1 kernelbot eval models/fast.py kernels/models-fast/kernel.c --backend cpu --seed [0-9]+ --json"
check_eq "... the seed the evaluation drew" \
	"$(printf '%s\n' "$b" | grep -o -- '--seed [0-9]*' | cut -d' ' -f2)" \
	"$(db "SELECT summary FROM tasks WHERE job = 2" | $PY -c 'import json,sys; print(json.load(sys.stdin)["result"]["seed"])')"
check_eq "no second PR" "$(ghq "n('POST', '$R/pulls')")" 1
check_eq "the PR's branch is unchanged" "$(git --git-dir "$TMP/origin.git" rev-parse kernelbot/models-fast)" "$HEAD1"

# --- a PR whose kernel is gone at its head: the answer says so ---
git -C "$TMP/w" fetch -q origin kernelbot/models-fast
git -C "$TMP/w" checkout -q -b nokernel FETCH_HEAD
git -C "$TMP/w" rm -q -r kernels/models-fast
git -C "$TMP/w" commit -q -m "drop the kernel"
git -C "$TMP/w" push -q -f origin nokernel:kernelbot/models-fast
comment alice "/kernelbot benchmark"
a=$(answer "$CID")
check_match "queued as job 3" "$a" "Queued job 3"
check "job 3 ends" wait_sql 60 "SELECT state FROM jobs WHERE id = 3" done
b=$(bot_comment "kernelbot:benchmark:3:models-fast:cpu ")
check_match "the answer says there is no kernel to time" "$b" "failed: no kernel to benchmark: kernels/models-fast/ has none for cpu"
kb_serve_stop
t_done
