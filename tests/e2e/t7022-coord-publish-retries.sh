#!/bin/sh
# t7022: forge calls that keep failing end the job (issue 23). The fake
# GitHub answers every "create a pull request" with 502: each publish
# is the forge client's own retries, then the coordinator's
# runners.retries more with backoff, then the job ends `failed` with
# the reason (never `done`, which would read as delivered).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7022
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
cat >"$TMP/script.json" <<'EOS'
[{"method": "POST", "path": "^/repos/acme/models/pulls$", "status": 502, "times": 1000,
  "body": {"message": "Server Error"}}]
EOS
fake_github --script "$TMP/script.json" --git-dir "$TMP/origin.git" || { echo "fake GitHub did not start"; t_done; }
coord_config "$TMP/kb.yml" "$(github_forge)" "  retries: 2
  retry_base_ms: 500
  retry_max_ms: 1000"
kb_serve_start "$TMP/kb.yml" || t_done

gh_push 0000000000000000000000000000000000000000 "$SHA0"
check_eq "the push is accepted" "$HTTP_CODE" 202
check "the job ends failed" wait_sql 60 "SELECT state FROM jobs WHERE id = 1" failed
check_match "with the reason" "$(db 'SELECT error FROM jobs WHERE id = 1')" \
    '^publishing models-fast gave up after 3 tries: .*502'
# max_retries (4) of the forge client per try: 5 requests, 3 tries
check_eq "every try was the forge client's retries" "$(ghq "n('POST', '$R/pulls')")" 15
check_eq "two coordinator retries, logged" \
    "$(grep -c 'msg="publishing will be retried" job=1 ' "$TMP/serve.log")" 2
check_match "the module that shipped nothing still got its status" \
    "$(ghq "[x['body']['state'] for x in r if x['method'] == 'POST' and '/statuses/' in x['path'] and x['body']['context'] == 'kernelbot/models-same'][-1]")" failure
check_match "the commit's kernelbot status says why" \
    "$(ghq "[x['body']['state'] + ' ' + x['body']['description'] for x in r if x['method'] == 'POST' and '/statuses/' in x['path'] and x['body']['context'] == 'kernelbot'][-1]")" \
    '^error job 1 failed: publishing models-fast gave up after 3 tries'
check_match "kernelbot jobs shows it" "$("$KERNELBOT" jobs --config "$TMP/kb.yml" 2>&1)" \
    'error: publishing models-fast gave up after 3 tries'
kb_serve_stop TERM
t_done
