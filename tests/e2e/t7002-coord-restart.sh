#!/bin/sh
# t7002: `kill -9` of serve in the middle of a job, then a restart: the
# job resumes from the store and ends with exactly one PR per module.
# The kill comes after one module's PR is out and while the runner works
# on the other: the published task is neither run nor published again,
# the interrupted one is run again, and no task or PR is duplicated.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7002
. "$KB_ROOT/tests/e2e/lib-coord.sh"
LEASE_S=2
coord_repo
module "$TMP/w/models/slow.py" "# standin: sleep 5"
coord_commit "a slow module"
coord_config "$TMP/kb.yml" "$(local_forge)"
kb_serve_start "$TMP/kb.yml" || t_done

gh_push 0000000000000000000000000000000000000000 "$SHA"
check_eq "push accepted" "$HTTP_CODE" 202
check "the fast module's PR is out" wait_for 60 test -s "$TMP/forge/prs/models-fast.json"
check "the slow module is running" wait_sql 30 \
    "SELECT state FROM tasks WHERE module = 'models/slow.py'" running
check "its status says it is being optimized, and where" wait_for 10 grep -q 'optimizing on [^ ]*-cpu' "$TMP/forge/statuses/$SHA.json"
check_eq "the job is not done yet" "$(db 'SELECT state, step FROM jobs')" "running|tasks"
check "the stand-in started on it" wait_for 20 grep -q '^models/slow.py' "$STANDIN_LOG"
kb_serve_stop KILL
check_eq "serve was killed" "$KB_STATUS" 137
check_eq "three tasks before the restart" "$(db 'SELECT count(*) FROM tasks')" 3

kb_serve_start "$TMP/kb.yml" || t_done
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "the job is done after the restart" "$(db 'SELECT state, step FROM jobs')" "done|done"
check_eq "still three tasks" "$(db 'SELECT count(*) FROM tasks')" 3
check_eq "the published task was not run again" \
    "$(db "SELECT attempts, published FROM tasks WHERE module = 'models/fast.py'")" "1|1"
check_eq "the interrupted task ran again" \
    "$(db "SELECT state, attempts, published FROM tasks WHERE module = 'models/slow.py'")" "done|2|1"
check_eq "the stand-in ran fast once and slow twice" \
    "$(awk '{print $1}' "$STANDIN_LOG" | sort | uniq -c | awk '{print $2 ":" $1}' | tr '\n' ' ')" \
    "models/fast.py:1 models/same.py:1 models/slow.py:2 "
check_eq "one PR per improved module, none updated" \
    "$($PY -c "
import json
for s in ('models-fast', 'models-slow'):
    d = json.load(open('$TMP/forge/prs/%s.json' % s)); print(d['number'], d['updates'])" | sort | tr '\n' ' ')" \
    "1 0 2 0 "
check_eq "exactly two PRs" "$(ls "$TMP/forge/prs/" | grep -c '\.json$')" 2
check_eq "the job had a second lease" "$(db 'SELECT attempts FROM jobs')" 2
kb_serve_stop
t_done
