#!/bin/sh
# t7004: PR-comment commands through serve and the fake GitHub. A user
# without write permission is refused (a polite comment saying why,
# nothing queued, no reaction); a command on a PR from a fork is refused;
# a writer's help, retry, optimize PATH and stop are obeyed, each with a
# +1 reaction and one answer; retry and optimize PATH work on the PR's
# head commit, not the target branch's tip; stop kills the running work.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7004
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
# The first look at PR 1 says it comes from a fork.
cat >"$TMP/script.json" <<'EOS'
[{"method": "GET", "path": "/pulls/1$", "status": 200, "times": 1,
  "body": {"number": 1, "state": "open",
           "head": {"ref": "feature", "sha": "0000000000000000000000000000000000000001",
                    "repo": {"full_name": "mallory/models"}},
           "base": {"ref": "main", "repo": {"full_name": "acme/models"}}}}]
EOS
fake_github --script "$TMP/script.json" --git-dir "$TMP/origin.git" || { echo "fake GitHub did not start"; t_done; }
coord_config "$TMP/kb.yml" "$(github_forge)"
kb_serve_start "$TMP/kb.yml" || t_done

gh_push 0000000000000000000000000000000000000000 "$SHA0"
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "the push made PR 1" "$(ghq "n('POST', '$R/pulls')")" 1

# --- a reader is refused ---
comment bob "/kernelbot retry"
check_eq "the command is recorded" "$HTTP_CODE" 202
a=$(answer "$CID")
check_match "bob is told he lacks write access" "$a" "Sorry @bob.*write access.*yours is read.*Nothing was queued"
check_eq "nothing was queued for bob" "$(db 'SELECT count(*) FROM jobs')" 1
check_eq "no reaction for a refused command" "$(reactions "$CID")" 0
check_eq "bob's command is recorded as refused" "$(db "SELECT state FROM commands WHERE actor = 'bob'")" refused

# --- a fork PR is refused, even for a writer ---
comment alice "/kernelbot retry"
a=$(answer "$CID")
check_match "a fork PR is refused" "$a" "does not run on pull requests from forks"
check_eq "nothing was queued for the fork" "$(db 'SELECT count(*) FROM jobs')" 1

# --- help ---
comment alice "/kernelbot help"
a=$(answer "$CID")
check_match "help lists optimize" "$a" "/kernelbot optimize PATH"
check_match "help lists stop" "$a" "/kernelbot stop"
check_eq "help acknowledged with a reaction" "$(reactions "$CID")" 1
check_eq "the +1 reaction" "$(ghq "last('POST', '$R/issues/comments/$CID/reactions')['body']['content']")" "+1"

# --- retry: the PR's module again, at the PR's head ---
# main moves on without the bot hearing of it: the PR head is what counts.
printf '# later\n' >>"$TMP/w/models/same.py"
coord_commit "main moves on"
SHA1=$SHA
HEAD1=$(git --git-dir "$TMP/origin.git" rev-parse kernelbot/models-fast)
comment alice "/kernelbot retry"
a=$(answer "$CID")
check_match "retry is queued" "$a" "Queued job 2: optimizing again .models/fast.py."
wait_sql 60 "SELECT state FROM jobs WHERE id = 2" done
check_eq "job 2 retried the PR's module" "$(db "SELECT j.trigger, t.module, t.arch FROM jobs j JOIN tasks t ON t.job = j.id WHERE j.id = 2")" "retry|models/fast.py|cpu"
check_eq "no second PR" "$(ghq "n('POST', '$R/pulls')")" 1
check_eq "retry ran at the PR's head commit" "$(db "SELECT sha FROM jobs WHERE id = 2")" "$HEAD1"
check_match "the answer names the PR's head" "$a" "at $(printf %.12s "$HEAD1")"

# --- optimize PATH ---
HEAD1=$(git --git-dir "$TMP/origin.git" rev-parse kernelbot/models-fast)
comment alice "/kernelbot optimize models/same.py"
a=$(answer "$CID")
check_match "optimize PATH is queued" "$a" "Queued job 3: optimizing .models/same.py."
wait_sql 60 "SELECT state FROM jobs WHERE id = 3" done
check_eq "job 3 optimized that module" "$(db "SELECT module FROM tasks WHERE job = 3")" "models/same.py"
check_eq "optimize PATH ran at the PR's head commit" "$(db "SELECT sha FROM jobs WHERE id = 3")" "$HEAD1"
comment alice "/kernelbot optimize ../etc/passwd"
a=$(answer "$CID")
check_match "a bad path is refused with the usage" "$a" "needs the path of a module file"
comment alice "/kernelbot frobnicate"
a=$(answer "$CID")
check_match "an unknown command is answered" "$a" "does not know the command .frobnicate."
comment alice "/kernelbot optimize models/$(printf '%01100d' 0).py"
a=$(answer "$CID")
check_match "arguments past 1024 bytes are refused, not cut" "$a" "longer than 1024 bytes"

# --- stop kills the running work ---
module "$TMP/w/models/fast.py" "# standin: sleep 30"
coord_commit "slow now"
gh_push "$SHA1" "$SHA"
check "the slow task runs" wait_sql 30 "SELECT state FROM tasks WHERE job = 4" running
comment alice "/kernelbot stop"
a=$(answer "$CID")
check_match "stop says what it stopped" "$a" "Stopped 1 task"
check "the job ends well before the 30 s the work would take" wait_sql 15 "SELECT state FROM jobs WHERE id = 4" done
check_eq "the task is cancelled" "$(db 'SELECT state FROM tasks WHERE job = 4')" cancelled
check_eq "its status says it was stopped" \
    "$(ghq "last('POST', '$R/statuses/$SHA')['body']['description'][:7]")" "stopped"
check_eq "every command answered once" \
    "$(ghq "len([x for x in r if x['method'] == 'POST' and x['path'] == '$R/issues/1/comments' and 'kernelbot:reply:' in x['body']['body']])")" 9
kb_serve_stop
t_done
