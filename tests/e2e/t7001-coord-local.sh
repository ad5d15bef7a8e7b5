#!/bin/sh
# t7001: a push becomes pull requests through the real daemon: serve's
# coordinator fetches, finds the two changed modules, creates a task per
# module, its local CPU runner runs (the optimize stand-in) on them, and
# the local forge gets one PR for the improved module and only a status
# for the other. A second push of the same module updates that PR; a
# module whose optimize crashes gets a failure status; one whose only
# kernel is flagged gets a PR for review and a neutral status.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7001
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
coord_config "$TMP/kb.yml" "$(local_forge)"
kb_serve_start "$TMP/kb.yml" || t_done

gh_push 0000000000000000000000000000000000000000 "$SHA0"
check_eq "push accepted" "$HTTP_CODE" 202
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "the job is done" "$(db 'SELECT state, step FROM jobs WHERE id = 1')" "done|done"
check_eq "one task per changed module, both done and published" \
    "$(db "SELECT module, state, published FROM tasks WHERE job = 1 ORDER BY module" | tr '\n' ' ')" \
    "models/fast.py|done|1 models/same.py|done|1 "
check_eq "the runner registered as a CPU runner" \
    "$(db 'SELECT backend, arch FROM runners')" "cpu|cpu"
check "the improved module has a PR" test -s "$TMP/forge/prs/models-fast.md"
check "the not-faster module has none" test ! -e "$TMP/forge/prs/models-same.md"
check "the PR's branch was pushed" sh -c "git -C '$TMP/origin.git' rev-parse -q --verify refs/heads/kernelbot/models-fast >/dev/null"
check "the PR holds the kernel" sh -c "git -C '$TMP/origin.git' ls-tree -r --name-only kernelbot/models-fast | grep -q '^kernels/models-fast/kernel.c$'"
check "the PR body has the speedup table" grep -q 'eager ms' "$TMP/forge/prs/models-fast.md"
st=$(cat "$TMP/forge/statuses/$SHA0.json" 2>/dev/null)
check_match "status: the PR's module succeeded" "$st" '"kernelbot/models-fast"'
check_match "status: the other says nothing faster" "$st" '"kernelbot/models-same"'
check_eq "states: success for the PR, neutral (never success) for nothing shipped" \
    "$(printf '%s' "$st" | $PY -c "import json, sys
print(' '.join(sorted(s['context'] + ':' + s['state'] for s in json.load(sys.stdin))))")" \
    "kernelbot/models-fast:success kernelbot/models-same:neutral"
check_eq "the module is remembered as delivered with its PR" \
    "$(db "SELECT slug, arch, pr FROM delivered")" "models-fast|cpu|1"
check_eq "the runner archived the verified kernel, with its provenance" \
    "$(db "SELECT module, arch, job FROM archive")" "models/fast.py|cpu|1"
check "the finished job's checkout is removed" test ! -e "$TMP/data/work/job-1/src"
check "its results are stored (the PR is rebuilt from them)" test -s "$TMP/data/results/job-1/task-1-1/models-fast/summary.json"
check_eq "the task's out_dir names them" "$(db 'SELECT out_dir FROM tasks WHERE id = 1')" "$TMP/data/results/job-1/task-1-1"
out=$("$KERNELBOT" jobs --data-dir "$TMP/data")
check_match "kernelbot jobs shows the job's tasks" "$out" 'models/fast.py.*done'

# --- serve starts its runner again when it dies ---
RP=$(db 'SELECT pid FROM runners')
kill -9 "$RP"
check "the local runner is started again" wait_for 15 sh -c "[ \"\$(sqlite3 '$TMP/data/kernelbot.db' 'SELECT pid FROM runners')\" != '$RP' ]"

# --- a second push changing the improved module updates its PR ---
module "$TMP/w/models/fast.py" "# v2"
module "$TMP/w/models/broken.py" "# standin: crash"
module "$TMP/w/models/review.py" "# standin: needs_review"
coord_commit "v2"
gh_push "$SHA0" "$SHA"
wait_sql 60 "SELECT state FROM jobs WHERE id = 2" done
check_eq "job 2: the changed module and the new one" \
    "$(db "SELECT module, state FROM tasks WHERE job = 2 ORDER BY module" | tr '\n' ' ')" \
    "models/broken.py|failed models/fast.py|done models/review.py|done "
check_eq "still one PR for the module, updated" \
    "$($PY -c "import json; d=json.load(open('$TMP/forge/prs/models-fast.json')); print(d['number'], d['updates'], d['head_sha'] != '')")" "1 1 True"
check "no PR for the crashed module" test ! -e "$TMP/forge/prs/models-broken.md"
check_match "the crashed module's status says it failed" \
    "$(cat "$TMP/forge/statuses/$SHA.json")" 'optimization failed'
check_eq "the failure is recorded" \
    "$(db "SELECT error LIKE '%without a summary.json%standin: crashing%' FROM tasks WHERE module = 'models/broken.py'")" 1
check_eq "the stand-in ran once per task" "$(wc -l <"$STANDIN_LOG" | tr -d ' ')" 5
check_eq "each run was given its task's class" "$(awk '$4 != "Model"' "$STANDIN_LOG")" ""
# Its only kernel is correct but flagged: a PR for review, no headline,
# and a neutral status, never success.
check_match "the flagged module gets a PR marked for review" \
    "$($PY -c "import json; print(json.load(open('$TMP/forge/prs/models-review.json'))['title'])" 2>&1)" \
    'flagged for review \(below_bandwidth_floor\)'
check_eq "its status is neutral; the verified PR's success" \
    "$(cat "$TMP/forge/statuses/$SHA.json" | $PY -c "import json, sys
print(' '.join(sorted(s['context'] + ':' + s['state'] for s in json.load(sys.stdin)
                      if s['context'] != 'kernelbot/models-broken')))")" \
    "kernelbot/models-fast:success kernelbot/models-review:neutral"

# --- a push that changes no module: a job with no tasks, done ---
prev=$SHA
printf 'docs\n' >"$TMP/w/README.md"
coord_commit "docs only"
gh_push "$prev" "$SHA"
wait_sql 30 "SELECT state FROM jobs WHERE id = 3" done
check_eq "no module changed: done without tasks" \
    "$(db 'SELECT count(*) FROM tasks WHERE job = 3')" 0

# --- a bad .kernelbot.yml: the job fails and the commit says why ---
prev=$SHA
printf 'version: 1\nmodules:\n  - path: models/fast.py\n    dtype: half\n' >"$TMP/w/.kernelbot.yml"
coord_commit "a bad config"
gh_push "$prev" "$SHA"
wait_sql 30 "SELECT state FROM jobs WHERE id = 4" failed
check_match "the job failed with the file's error" \
    "$(db 'SELECT error FROM jobs WHERE id = 4')" '^\.kernelbot\.yml:4: modules\[0\]\.dtype'
check_match "the commit's status says it too" \
    "$(cat "$TMP/forge/statuses/$SHA.json")" 'kernelbot\.yml:4'

kb_serve_stop
check_eq "serve stops cleanly with its runner" "$KB_STATUS" 0
t_done
