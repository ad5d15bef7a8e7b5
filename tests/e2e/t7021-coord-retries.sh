#!/bin/sh
# t7021: a job that cannot progress fails (issue 23). A push whose clone
# URL never resolves is fetched again runners.retries times, waiting
# retry_base_ms, doubled, at most retry_max_ms, then the job ends
# `failed` with the reason: in `kernelbot jobs`, in the log, and in the
# commit's "kernelbot" status on the forge (which is reachable). A push
# of another repository sent after it, and a command, go through while
# it retries: nothing else stalls. The count of tries is in the store, so
# a serve killed in the middle goes on from it after the restart.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7021
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
fake_github --git-dir "$TMP/origin.git" || { echo "fake GitHub did not start"; t_done; }
# 4 retries after 1, 2, 2, 2 s: about 7 s of waiting, then failed
coord_config "$TMP/kb.yml" "$(github_forge)" "  retries: 4
  retry_base_ms: 1000
  retry_max_ms: 2000"
kb_serve_start "$TMP/kb.yml" || t_done

# the push of acme/lost, cloned from a host that does not exist
LOST=https://kernelbot-t7021.invalid/acme/lost.git
$PY - "$SHA0" "$LOST" >"$TMP/lost.json" <<'PYEOF'
import json, sys
print(json.dumps({"ref": "refs/heads/main", "before": "0" * 40, "after": sys.argv[1],
    "repository": {"full_name": "acme/lost", "clone_url": sys.argv[2],
                   "default_branch": "main"},
    "pusher": {"name": "dev"}}))
PYEOF
start=$(date +%s)
gh_send push "$TMP/lost.json"
check_eq "the lost push is accepted" "$HTTP_CODE $HTTP_BODY" '202 {"status":"accepted","job":1}'
gh_push 0000000000000000000000000000000000000000 "$SHA0"
check_eq "a push of another repository is accepted" "$HTTP_CODE $HTTP_BODY" '202 {"status":"accepted","job":2}'

check "while it retries, kernelbot jobs says why" wait_sql 20 \
    "SELECT state || ' ' || (error LIKE 'try _ of 5 failed, next in %kernelbot-t7021.invalid%') FROM jobs WHERE id = 1" "running 1"
check "the other job runs to the end meanwhile" wait_sql 60 "SELECT state FROM jobs WHERE id = 2" done
check "the lost job ends failed" wait_sql 60 "SELECT state FROM jobs WHERE id = 1" failed
took=$(( $(date +%s) - start ))
check "within a bounded time ($took s)" test "$took" -le 40
check_match "the reason is recorded" "$(db 'SELECT error FROM jobs WHERE id = 1')" \
    '^gave up after 5 tries: .*kernelbot-t7021\.invalid'
check_eq "the other job was not held up by it" \
    "$(db "SELECT (SELECT updated FROM jobs WHERE id = 2) <= (SELECT updated FROM jobs WHERE id = 1)")" 1

OUT=$("$KERNELBOT" jobs --config "$TMP/kb.yml" 2>&1)
check_match "kernelbot jobs shows it failed" "$(printf '%s\n' "$OUT" | grep '^1 ')" 'acme/lost.* failed'
check_match "kernelbot jobs shows the reason" "$OUT" 'gave up after 5 tries: .*kernelbot-t7021\.invalid'
"$KERNELBOT" jobs --config "$TMP/kb.yml" --json >"$TMP/jobs.json"
check_match "and so does its JSON" \
    "$($PY -c 'import json,sys; j=[x for x in json.load(open(sys.argv[1])) if x["id"] == 1][0]; print(j["state"], j["retries"], j["error"])' "$TMP/jobs.json")" \
    '^failed 4 gave up after 5 tries: '
check_eq "the log has each retry" "$(grep -c 'msg="job step failed; will retry" job=1 ' "$TMP/serve.log")" 4
check_match "the retries waited longer each time, capped" \
    "$(grep 'msg="job step failed; will retry" job=1 ' "$TMP/serve.log" | sed 's/.* in_ms=\([0-9]*\).*/\1/' | tr '\n' ' ')" \
    '^1000 2000 2000 2000 $'
check_match "the log says the job failed, and why" \
    "$(grep 'msg="job failed" job=1 ' "$TMP/serve.log")" 'gave up after 5 tries: .*kernelbot-t7021\.invalid'
check_eq "the commit's kernelbot status is an error" \
    "$(ghq "[x['body']['state'] for x in r if x['method'] == 'POST' and x['path'] == '/repos/acme/lost/statuses/$SHA0' and x['body']['context'] == 'kernelbot'][-1]")" error
check_match "with the reason" \
    "$(ghq "[x['body']['description'] for x in r if x['method'] == 'POST' and x['path'] == '/repos/acme/lost/statuses/$SHA0'][-1]")" \
    '^job 1 failed: gave up after 5 tries: '

# a command is still obeyed
comment alice "/kernelbot help"
check_match "a command is answered" "$(answer "$CID")" 'takes these commands'

# the count is in the store: a serve killed while a fetch is retried
# goes on from where it was, not from the first try
sed "s/lost.git/lost2.git/; s#acme/lost#acme/lost2#" "$TMP/lost.json" >"$TMP/lost2.json"
gh_send push "$TMP/lost2.json"
check_eq "a second lost push is accepted" "$HTTP_CODE $HTTP_BODY" '202 {"status":"accepted","job":3}'
check "it is retried twice" wait_sql 20 "SELECT retries FROM jobs WHERE id = 3" 2
kill -9 "$KB_PID"
wait "$KB_PID" 2>/dev/null
check_eq "the count survives kill -9" "$(db 'SELECT retries FROM jobs WHERE id = 3')" 2
: >"$TMP/serve.log"
kb_serve_start "$TMP/kb.yml" || t_done
check "after the restart it ends failed" wait_sql 60 "SELECT state FROM jobs WHERE id = 3" failed
check_eq "after the restart: tries 3 and 4, then the last" \
    "$(grep 'msg="job step failed; will retry" job=3 ' "$TMP/serve.log" | sed 's/.* try=\([0-9]*\) of=\([0-9]*\).*/\1\/\2/' | tr '\n' ' ')" '3/5 4/5 '
check_match "and the reason" "$(db 'SELECT error FROM jobs WHERE id = 3')" '^gave up after 5 tries: .*kernelbot-t7021\.invalid'
check_eq "the first failed job stays failed" "$(db 'SELECT state FROM jobs WHERE id = 1')" failed
kb_serve_stop TERM

t_done
