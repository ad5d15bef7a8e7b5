#!/bin/sh
# kernelbot serve: GitLab (X-Gitlab-Token) and Gitea (X-Gitea-Signature)
# deliveries end to end, including GitLab dedup by body hash.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1002
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
GL="http://127.0.0.1:$KB_PORT/webhooks/gitlab"
GT="http://127.0.0.1:$KB_PORT/webhooks/gitea"

db() {
	sqlite3 "$TMP/data/kernelbot.db" "$1"
}

# gl EVENT FILE TOKEN [UUID]
gl() {
	if [ -n "${4:-}" ]; then
		http POST "$GL" -H "Content-Type: application/json" -H "X-Gitlab-Event: $1" \
		    -H "X-Gitlab-Token: $3" -H "X-Gitlab-Event-UUID: $4" --data-binary "@$2"
	else
		http POST "$GL" -H "Content-Type: application/json" -H "X-Gitlab-Event: $1" \
		    -H "X-Gitlab-Token: $3" --data-binary "@$2"
	fi
}

# gt EVENT FILE SECRET DELIVERY
gt() {
	http POST "$GT" -H "Content-Type: application/json" -H "X-Gitea-Event: $1" \
	    -H "X-Gitea-Delivery: $4" -H "X-Gitea-Signature: $(hmac_hex "$3" "$2")" \
	    --data-binary "@$2"
}

# --- GitLab ---
gl "Push Hook" "$FX/gitlab-push.json" "$GL_TOKEN" "8b5a9f3e-1c2d-4e5f-9a0b-1c2d3e4f5a6b"
check_eq "gitlab push: 202" "$HTTP_CODE" 202
check_eq "gitlab job stored with the subgroup path" \
    "$(db "SELECT provider, repo, sha, clone_url FROM jobs")" \
    "gitlab|acme/ml/model|da1560886d4f094c3e6c9ef40349f7d38b5d27d7|https://gitlab.example.com/acme/ml/model.git"
gl "Push Hook" "$FX/gitlab-push.json" "$GL_TOKEN" "8b5a9f3e-1c2d-4e5f-9a0b-1c2d3e4f5a6b"
check_eq "gitlab redelivery by UUID: duplicate" "$HTTP_BODY" '{"status":"duplicate"}'
gl "Push Hook" "$FX/gitlab-push.json" "wrong-token-0123456789" "u-2"
check_eq "gitlab wrong token: 401" "$HTTP_CODE" 401
gl "Push Hook" "$FX/gitlab-push.json" "" "u-3"
check_eq "gitlab missing token: 401" "$HTTP_CODE" 401
sed 's/da1560886d4f094c3e6c9ef40349f7d38b5d27d7/da1560886d4f094c3e6c9ef40349f7d38b5d27d8/g' \
    "$FX/gitlab-push.json" >"$TMP/gl-push2.json"
gl "Push Hook" "$TMP/gl-push2.json" "$GL_TOKEN"
check_eq "gitlab push without UUID: 202" "$HTTP_CODE" 202
gl "Push Hook" "$TMP/gl-push2.json" "$GL_TOKEN"
check_eq "same body without UUID: duplicate by body hash" "$HTTP_BODY" '{"status":"duplicate"}'
check_match "body-hash delivery id recorded" \
    "$(db "SELECT delivery_id FROM deliveries WHERE provider = 'gitlab' ORDER BY id DESC LIMIT 1")" '^sha256:[0-9a-f]{64}$'
gl "Push Hook" "$TMP/gl-push2.json" "$GL_TOKEN" "sha256:0123"
check_eq "a UUID in kernelbot's own sha256: form: 400" "$HTTP_CODE" 400
gl "Note Hook" "$FX/gitlab-note.json" "$GL_TOKEN" "u-4"
check_eq "gitlab MR note command: 202" "$HTTP_CODE" 202
check_eq "gitlab command stored" "$(db "SELECT repo, pr, command, actor FROM commands")" "acme/ml/model|1|benchmark|root"
sed 's/"source_project_id": 15/"source_project_id": 99/' "$FX/gitlab-note.json" >"$TMP/gl-fork-note.json"
gl "Note Hook" "$TMP/gl-fork-note.json" "$GL_TOKEN" "u-5"
check_match "gitlab fork MR note ignored" "$HTTP_CODE $HTTP_BODY" '^200 .*fork'
gl "Merge Request Hook" "$FX/gitlab-merge-request.json" "$GL_TOKEN" "u-6"
check_eq "gitlab MR merged: 202" "$HTTP_CODE" 202
check_eq "gitlab cleanup stored" "$(db "SELECT repo, pr, head_ref, merged FROM cleanups")" "acme/ml/model|1|kernelbot/norm|1"
gl "Pipeline Hook" "$FX/gitlab-merge-request.json" "$GL_TOKEN" "u-7"
check_match "gitlab unknown event ignored" "$HTTP_CODE $HTTP_BODY" '^200 .*ignored'
http POST "$GL" -H "Content-Type: application/x-www-form-urlencoded" -H "X-Gitlab-Event: Push Hook" \
    -H "X-Gitlab-Token: $GL_TOKEN" --data-binary "payload=x"
check_eq "gitlab form body: 415" "$HTTP_CODE" 415

# --- Gitea ---
gt push "$FX/gitea-push.json" "$GT_SECRET" "a1b2c3d4-0001"
check_eq "gitea push: 202" "$HTTP_CODE" 202
check_eq "gitea job stored" "$(db "SELECT repo, sha FROM jobs WHERE provider = 'gitea'")" \
    "acme/model|bffeb74224043ba2feb48d137756c8a9331c449a"
gt push "$FX/gitea-push.json" "$GT_SECRET" "a1b2c3d4-0001"
check_eq "gitea replay: duplicate" "$HTTP_BODY" '{"status":"duplicate"}'
gt push "$FX/gitea-push.json" "gitea-wrong-secret-012345" "a1b2c3d4-0002"
check_eq "gitea forged: 401" "$HTTP_CODE" 401
http POST "$GT" -H "Content-Type: application/json" -H "X-Gitea-Event: push" \
    -H "X-Gitea-Delivery: a1b2c3d4-0003" --data-binary "@$FX/gitea-push.json"
check_eq "gitea missing signature: 401" "$HTTP_CODE" 401
gt issue_comment "$FX/gitea-issue-comment.json" "$GT_SECRET" "a1b2c3d4-0004"
check_eq "gitea PR comment: 202" "$HTTP_CODE" 202
gt pull_request "$FX/gitea-pull-request-closed.json" "$GT_SECRET" "a1b2c3d4-0005"
check_eq "gitea PR closed: 202" "$HTTP_CODE" 202
check_eq "gitea cleanup not merged" "$(db "SELECT merged FROM cleanups WHERE provider = 'gitea'")" 0
# the same delivery id under another provider is not a duplicate
http POST "http://127.0.0.1:$KB_PORT/webhooks/github" -H "Content-Type: application/json" \
    -H "X-GitHub-Event: push" -H "X-GitHub-Delivery: a1b2c3d4-0001" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "same id, other provider: accepted" "$HTTP_CODE" 202

http GET "http://127.0.0.1:$KB_PORT/metrics"
check_match "metrics: gitlab accepted pushes" "$HTTP_BODY" 'provider="gitlab",event="Push Hook",outcome="accepted"\} 2$'
check_match "metrics: gitea rejected" "$HTTP_BODY" 'provider="gitea",event="push",outcome="rejected"\} 2$'
check_eq "four jobs in all" "$(db 'SELECT count(*) FROM jobs')" 4
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
