#!/bin/sh
# kernelbot serve: GitHub deliveries end to end against the real daemon:
# signature checks, each event kind, dedup, the allowlist, and the store.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1001
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
URL="http://127.0.0.1:$KB_PORT/webhooks/github"
N=0

# gh EVENT FILE [CURL ARGS...]: a correctly signed delivery with a fresh
# id, sent as $CT (default application/json).
gh() {
	ev=$1 f=$2
	shift 2
	N=$((N + 1))
	DELIVERY="e2e-$N-$$"
	http POST "$URL" -H "Content-Type: ${CT:-application/json}" \
	    -H "X-GitHub-Event: $ev" -H "X-GitHub-Delivery: $DELIVERY" \
	    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$f")" \
	    --data-binary "@$f" "$@"
}

db() {
	sqlite3 "$TMP/data/kernelbot.db" "$1"
}

# --- a valid push to the default branch becomes a job ---
gh push "$FX/github-push.json"
check_eq "valid push answers 202" "$HTTP_CODE" 202
check_match "202 names the job" "$HTTP_BODY" '^\{"status":"accepted","job":[0-9]+\}$'
JOB=$(printf '%s' "$HTTP_BODY" | sed -nE 's/.*"job":([0-9]+).*/\1/p')
FIRST=$DELIVERY
check_eq "job row has repo, sha, before, clone url, state" \
    "$(db "SELECT provider, repo, sha, before, clone_url, trigger, state FROM jobs WHERE id = $JOB")" \
    "github|acme/model|76ae82c7b1a177c8d03f9e96e0adf2466113728f|6113728f27ae82c7b1a177c8d03f9e96e0adf246|https://github.com/acme/model.git|push|queued"
check_eq "delivery recorded as accepted" \
    "$(db "SELECT event, outcome FROM deliveries WHERE delivery_id = '$FIRST'")" "push|accepted"

# --- a replay of the same delivery id creates nothing ---
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: $FIRST" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "replayed delivery answers 200" "$HTTP_CODE" 200
check_eq "replayed delivery says duplicate" "$HTTP_BODY" '{"status":"duplicate"}'
check_eq "replay created no job" "$(db 'SELECT count(*) FROM jobs')" 1

# --- signatures ---
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: forged-1" \
    -H "X-Hub-Signature-256: $(sig_github "not the secret" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "forged signature: 401" "$HTTP_CODE" 401
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: forged-2" --data-binary "@$FX/github-push.json"
check_eq "missing signature: 401" "$HTTP_CODE" 401
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: forged-3" \
    -H "X-Hub-Signature: sha1=$(openssl dgst -sha1 -hmac "$GH_SECRET" -hex <"$FX/github-push.json" | sed 's/^.*= *//')" \
    --data-binary "@$FX/github-push.json"
check_eq "SHA-1 signature alone is not accepted: 401" "$HTTP_CODE" 401
head -c 300 "$FX/github-push.json" >"$TMP/truncated.json"
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: trunc-1" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$TMP/truncated.json"
check_eq "truncated body under the full body's signature: 401" "$HTTP_CODE" 401
check_eq "rejected deliveries stored nothing" "$(db "SELECT count(*) FROM deliveries WHERE delivery_id LIKE 'forged-%' OR delivery_id LIKE 'trunc-%'")" 0
gh push "$TMP/truncated.json"
check_eq "signed but truncated JSON: 400" "$HTTP_CODE" 400
check_match "400 says why" "$HTTP_BODY" 'not JSON'
printf '{"ref":"refs/heads/main","repository":{"full_name":"acme/model"}}' >"$TMP/missing.json"
gh push "$TMP/missing.json"
check_eq "push without required fields: 400" "$HTTP_CODE" 400
check_match "400 names the missing field" "$HTTP_BODY" 'repository.clone_url: missing'

# --- content types ---
CT=text/plain gh push "$FX/github-push.json"
check_eq "wrong content type: 415" "$HTTP_CODE" 415
# GitHub's form encoding: payload=<urlencoded JSON>, signed as sent.
/usr/bin/python3 -c 'import sys,urllib.parse; sys.stdout.write("payload="+urllib.parse.quote_plus(open(sys.argv[1]).read().replace("76ae82c7","76ae82c8")))' \
    "$FX/github-push.json" >"$TMP/form.txt"
CT=application/x-www-form-urlencoded gh push "$TMP/form.txt"
check_eq "form-encoded push accepted: 202" "$HTTP_CODE" 202

# --- events that create nothing ---
gh watch "$FX/github-ping.json"
check_eq "unknown event: 200" "$HTTP_CODE" 200
check_match "unknown event ignored" "$HTTP_BODY" '"status":"ignored"'
gh ping "$FX/github-ping.json"
check_eq "ping: 200 ignored" "$HTTP_CODE:$(printf '%s' "$HTTP_BODY" | grep -c ignored)" "200:1"
gh push "$FX/github-push-branch.json"
check_eq "push to another branch: 200" "$HTTP_CODE" 200
check_match "non-default branch ignored" "$HTTP_BODY" 'not a push to the default branch'
gh pull_request "$FX/github-pull-request-fork.json"
check_eq "fork PR closed: 200" "$HTTP_CODE" 200
check_match "fork PR ignored" "$HTTP_BODY" 'fork'
check_eq "still two jobs (push + form push)" "$(db 'SELECT count(*) FROM jobs')" 2
check_eq "no cleanup from the fork" "$(db 'SELECT count(*) FROM cleanups')" 0

# --- allowlist ---
gh push "$FX/github-push-disallowed.json"
check_eq "disallowed repository: 403" "$HTTP_CODE" 403
sed 's#"full_name": "acme/model"#"full_name": "acme/secret"#' "$FX/github-push.json" >"$TMP/excluded.json"
gh push "$TMP/excluded.json"
check_eq "excluded by !pattern: 403" "$HTTP_CODE" 403
check_eq "forbidden deliveries stored nothing" "$(db "SELECT count(*) FROM deliveries WHERE repo IN ('evil/model', 'acme/secret')")" 0

# --- commands and cleanups ---
gh issue_comment "$FX/github-issue-comment.json"
check_eq "PR comment command: 202" "$HTTP_CODE" 202
check_match "command id answered" "$HTTP_BODY" '"command":[0-9]+'
check_eq "command request stored" \
    "$(db 'SELECT repo, pr, command, args, actor, author_association, comment_id FROM commands')" \
    "acme/model|7|optimize|models/mlp.py --budget 20|alice|MEMBER|1593822101"
sed 's#/kernelbot optimize#thanks, /kernelbot optimize#' "$FX/github-issue-comment.json" >"$TMP/chatter.json"
gh issue_comment "$TMP/chatter.json"
check_match "comment not starting with /kernelbot ignored" "$HTTP_CODE $HTTP_BODY" '^200 .*ignored'
gh pull_request "$FX/github-pull-request-closed.json"
check_eq "PR closed: 202" "$HTTP_CODE" 202
check_eq "cleanup request stored" "$(db 'SELECT repo, pr, head_ref, merged FROM cleanups')" "acme/model|12|kernelbot/mlp|1"

# --- other paths and methods ---
http GET "$URL"
check_eq "GET on a webhook: 405" "$HTTP_CODE" 405
http POST "http://127.0.0.1:$KB_PORT/webhooks/bitbucket" -d '{}'
check_eq "unknown webhook path: 404" "$HTTP_CODE" 404
http GET "http://127.0.0.1:$KB_PORT/nothing"
check_eq "unknown path: 404" "$HTTP_CODE" 404
http DELETE "http://127.0.0.1:$KB_PORT/healthz"
check_eq "DELETE /healthz: 405" "$HTTP_CODE" 405
http POST "http://127.0.0.1:$KB_PORT/healthz" -H "Content-Type: application/json" --data-binary "@$FX/github-push.json"
check_eq "POST with a body to /healthz: 405" "$HTTP_CODE" 405
http POST "http://127.0.0.1:$KB_PORT/elsewhere" --data-binary "@$FX/github-push.json"
check_eq "POST with a body to an unknown path: 404" "$HTTP_CODE" 404
http GET "http://127.0.0.1:$KB_PORT/healthz"
check_eq "healthz: 200" "$HTTP_CODE $HTTP_BODY" '200 {"status":"ok"}'

# --- metrics ---
http GET "http://127.0.0.1:$KB_PORT/metrics"
M=$HTTP_BODY
check_match "metrics: accepted pushes" "$M" '^kernelbot_webhook_deliveries_total\{provider="github",event="push",outcome="accepted"\} 2$'
check_match "metrics: rejected pushes" "$M" '^kernelbot_webhook_deliveries_total\{provider="github",event="push",outcome="rejected"\} 4$'
check_match "metrics: duplicates" "$M" 'outcome="duplicate"\} 1$'
check_match "metrics: unknown events are labelled other" "$M" 'event="other",outcome="ignored"\} 1$'
check_match "metrics: forbidden" "$M" 'event="push",outcome="forbidden"\} 2$'
check_match "metrics: jobs by state" "$M" '^kernelbot_jobs\{state="queued"\} 2$'
check_match "metrics: latency histogram" "$M" '^kernelbot_http_request_duration_seconds_count\{handler="webhook"\} [1-9][0-9]*$'
check_match "metrics: histogram +Inf bucket" "$M" 'kernelbot_http_request_duration_seconds_bucket\{handler="webhook",le="\+Inf"\} [1-9]'

# --- kernelbot jobs ---
OUT=$("$KERNELBOT" jobs --data-dir "$TMP/data" --json)
check_eq "jobs --json: newest first, the listed keys" \
    "$(printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j), j[0]["id"] > j[1]["id"], sorted(j[0].keys()), j[1]["sha"])')" \
    "2 True ['created', 'error', 'id', 'provider', 'repo', 'retries', 'sha', 'state', 'step', 'tasks', 'trigger'] 76ae82c7b1a177c8d03f9e96e0adf2466113728f"
OUT=$("$KERNELBOT" jobs --config "$TMP/kb.yml")
check_match "jobs table through --config" "$OUT" "^$JOB +github +acme/model +76ae82c7b1a1 +push +queued "
"$KERNELBOT" jobs --data-dir "$TMP/nowhere" >/dev/null 2>"$TMP/err"
check_eq "jobs on a missing store fails" "$?" 1
check_match "and says so" "$(cat "$TMP/err")" 'no kernelbot.db'
"$KERNELBOT" jobs --data-dir a --config b >/dev/null 2>&1
check_eq "jobs with both sources is a usage error" "$?" 2

# --- a push's id taken first by the same body under an event ignored ---
# Neither the id nor the event header is signed: a replay of a captured
# push under its id as "ping" (or "push " with a space) took the id, and
# the forge's own delivery, or its redelivery, came back a duplicate.
sed 's/76ae82c7b1a177c8/76ae82c7b1a177c9/' "$FX/github-push.json" >"$TMP/squat.json"
squat() {
	http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: $1" \
	    -H "X-GitHub-Delivery: squat-$2" \
	    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$TMP/squat.json")" \
	    --data-binary "@$TMP/squat.json"
}
squat ping 1
check_eq "the push body as ping: 200 ignored" "$HTTP_CODE:$(printf '%s' "$HTTP_BODY" | grep -c ignored)" "200:1"
squat push 1
check_eq "then the push under that id: 202" "$HTTP_CODE" 202
check_eq "its row is the push's" "$(db "SELECT event, outcome FROM deliveries WHERE delivery_id = 'squat-1'")" \
    "push|accepted"
squat push 1
check_eq "redelivered: duplicate" "$HTTP_CODE:$HTTP_BODY" '200:{"status":"duplicate"}'
sed 's/76ae82c7b1a177c8/76ae82c7b1a177ca/' "$FX/github-push.json" >"$TMP/squat.json"
squat 'push ' 2
check_eq "an event with whitespace after it is that event: 202" "$HTTP_CODE" 202
check_eq "stored as push" "$(db "SELECT event FROM deliveries WHERE delivery_id = 'squat-2'")" push
check_eq "four jobs" "$(db 'SELECT count(*) FROM jobs')" 4
# Another captured push (one kernelbot had not recorded), sent first under
# the genuine delivery's id: each is its own work.
sed 's/76ae82c7b1a177c8/76ae82c7b1a177cb/' "$FX/github-push.json" >"$TMP/squat.json"
squat push 3
check_eq "a captured push under the genuine one's id: 202" "$HTTP_CODE" 202
sed 's/76ae82c7b1a177c8/76ae82c7b1a177cc/' "$FX/github-push.json" >"$TMP/squat.json"
squat push 3
check_eq "the genuine push under its own id: 202, not a duplicate" "$HTTP_CODE" 202
squat push 3
check_eq "and its redelivery: duplicate" "$HTTP_CODE:$HTTP_BODY" '200:{"status":"duplicate"}'
check_eq "six jobs" "$(db 'SELECT count(*) FROM jobs')" 6

kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
check "log never shows the secret" sh -c "! grep -q \"Secret to Everybody\" '$TMP/serve.log'"
t_done
