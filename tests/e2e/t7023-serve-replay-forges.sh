#!/bin/sh
# t7023: replays on each forge (issue 23). A push is the same push
# whatever its delivery id or encoding: its repository, ref and `after`
# commit; a command is the same command when its comment id is (GitHub
# and Gitea comment.id, GitLab object_attributes.id). Each replay is
# answered 200 {"status":"duplicate"} and counted on the delivery it
# repeats (no row of its own); one job per push and one command per
# comment are stored. What differs (another commit, another comment,
# another forge) is new.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7023
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
BASE="http://127.0.0.1:$KB_PORT/webhooks"
DUP='200 {"status":"duplicate"}'

db() {
	sqlite3 -cmd ".timeout 5000" "$TMP/data/kernelbot.db" "$1"
}

# gh EVENT FILE DELIVERY [CONTENT_TYPE]
gh() {
	http POST "$BASE/github" -H "Content-Type: ${4:-application/json}" \
	    -H "X-GitHub-Event: $1" -H "X-GitHub-Delivery: $3" \
	    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$2")" --data-binary "@$2"
}
# gl EVENT FILE [UUID]
gl() {
	if [ -n "${3:-}" ]; then
		http POST "$BASE/gitlab" -H "Content-Type: application/json" -H "X-Gitlab-Event: $1" \
		    -H "X-Gitlab-Token: $GL_TOKEN" -H "X-Gitlab-Event-UUID: $3" --data-binary "@$2"
	else
		http POST "$BASE/gitlab" -H "Content-Type: application/json" -H "X-Gitlab-Event: $1" \
		    -H "X-Gitlab-Token: $GL_TOKEN" --data-binary "@$2"
	fi
}
# gt EVENT FILE DELIVERY
gt() {
	http POST "$BASE/gitea" -H "Content-Type: application/json" -H "X-Gitea-Event: $1" \
	    -H "X-Gitea-Delivery: $3" -H "X-Gitea-Signature: $(hmac_hex "$GT_SECRET" "$2")" \
	    --data-binary "@$2"
}

# --- GitHub: the same push as JSON, then form-encoded, under new ids ---
gh push "$FX/github-push.json" gh-1
check_eq "github push: 202" "$HTTP_CODE" 202
gh push "$FX/github-push.json" gh-2
check_eq "github push under a new id: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
/usr/bin/python3 -c 'import sys,urllib.parse; sys.stdout.write("payload="+urllib.parse.quote_plus(open(sys.argv[1]).read()))' \
    "$FX/github-push.json" >"$TMP/form.txt"
gh push "$TMP/form.txt" gh-3 application/x-www-form-urlencoded
check_eq "github push form-encoded under a new id: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
sed 's/"ref": "refs\/heads\/main"/"ref":  "refs\/heads\/main"/' "$FX/github-push.json" >"$TMP/spaced.json"
gh push "$TMP/spaced.json" gh-4
check_eq "github push with other bytes, same push: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
gh issue_comment "$FX/github-issue-comment.json" gh-5
check_eq "github command: 202" "$HTTP_CODE" 202
gh issue_comment "$FX/github-issue-comment.json" gh-6
check_eq "github command under a new id: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
sed 's/"id": 1593822101/"id": 1593822102/' "$FX/github-issue-comment.json" >"$TMP/gh-comment2.json"
gh issue_comment "$TMP/gh-comment2.json" gh-7
check_eq "github: another comment is a new command" "$HTTP_CODE" 202

# --- GitLab: a push with a new UUID, without one, and a note ---
gl "Push Hook" "$FX/gitlab-push.json" 11111111-0000-0000-0000-000000000001
check_eq "gitlab push: 202" "$HTTP_CODE" 202
gl "Push Hook" "$FX/gitlab-push.json" 11111111-0000-0000-0000-000000000002
check_eq "gitlab push under a new UUID: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
gl "Note Hook" "$FX/gitlab-note.json" 11111111-0000-0000-0000-000000000003
check_eq "gitlab note command: 202" "$HTTP_CODE" 202
gl "Note Hook" "$FX/gitlab-note.json" 11111111-0000-0000-0000-000000000004
check_eq "gitlab note under a new UUID: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
gl "Note Hook" "$FX/gitlab-note.json"
check_eq "gitlab note without a UUID: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"

# --- Gitea: a push and a comment under new ids ---
gt push "$FX/gitea-push.json" gt-1
check_eq "gitea push: 202" "$HTTP_CODE" 202
gt push "$FX/gitea-push.json" gt-2
check_eq "gitea push under a new id: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"
gt issue_comment "$FX/gitea-issue-comment.json" gt-3
check_eq "gitea command: 202" "$HTTP_CODE" 202
gt issue_comment "$FX/gitea-issue-comment.json" gt-4
check_eq "gitea command under a new id: duplicate" "$HTTP_CODE $HTTP_BODY" "$DUP"

# --- the store ---
check_eq "one job per push" "$(db 'SELECT provider, count(*) FROM jobs GROUP BY provider ORDER BY provider')" \
    "gitea|1
github|1
gitlab|1"
check_eq "one command per comment" \
    "$(db 'SELECT provider, count(*) FROM commands GROUP BY provider ORDER BY provider')" \
    "gitea|1
github|2
gitlab|1"
check_eq "every replay counted, on the delivery it repeats" \
    "$(db "SELECT sum(duplicates) FROM deliveries")" 9
check_eq "no replay has a row of its own" \
    "$(db "SELECT count(*) FROM deliveries WHERE outcome = 'duplicate' OR delivery_id IN ('gh-2', 'gh-3', 'gh-4', 'gh-6', 'gt-2', 'gt-4')")" 0
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_match "metrics count them" "$HTTP_BODY" 'provider="github",event="push",outcome="duplicate"\} 3$'
kb_serve_stop TERM
t_done
