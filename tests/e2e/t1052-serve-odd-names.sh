#!/bin/sh
# t1052: signed deliveries naming what no forge sends are refused (attack
# F7): a repository that is not OWNER/NAME of letters, digits, '.', '_',
# '-' (a "." or ".." segment, a control character, a leading '-'), and a
# push whose clone URL is not https, http, ssh or git (file://, ext::):
# 400 with the field and the reason in JSON, nothing stored, no job.
# allow_repos' '*' does not cross '/': acme/* takes acme/x, not a GitLab
# subgroup's acme/ml/model (acme/** does). A forge with local_clone_urls
# takes file:// clone URLs. A name ending in '.' or '.git', a ref git
# refuses: 400; the same push under ACME/Model or an upper-case commit id:
# a duplicate.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1052
PY=/usr/bin/python3
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
# acme/* only; gitea's pushes may name local clone URLs
sed -i -e 's|^  - acme/\*\*$|  - acme/*|' \
    -e "s|^    webhook_secret_file: $TMP/gitea.secret\$|&\n    local_clone_urls: true|" "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
BASE="http://127.0.0.1:$KB_PORT/webhooks"

db() {
	sqlite3 -cmd ".timeout 5000" "$TMP/data/kernelbot.db" "$1"
}

# push FILE REPO CLONE_URL: a push body like github-push.json with the
# repository's full name and clone URL replaced (JSON escapes in REPO).
push() {
	$PY - "$FX/github-push.json" "$2" "$3" >"$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["repository"]["full_name"] = json.loads('"%s"' % sys.argv[2])
d["repository"]["clone_url"] = sys.argv[3]
print(json.dumps(d))
PYEOF
}
N=0
# gh EVENT FILE
gh() {
	N=$((N + 1))
	http POST "$BASE/github" -H "Content-Type: application/json" -H "X-GitHub-Event: $1" \
	    -H "X-GitHub-Delivery: odd-$N" -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$2")" \
	    --data-binary "@$2"
}
gt() {
	N=$((N + 1))
	http POST "$BASE/gitea" -H "Content-Type: application/json" -H "X-Gitea-Event: $1" \
	    -H "X-Gitea-Delivery: odd-$N" -H "X-Gitea-Signature: $(hmac_hex "$GT_SECRET" "$2")" \
	    --data-binary "@$2"
}
gl() {
	N=$((N + 1))
	http POST "$BASE/gitlab" -H "Content-Type: application/json" -H "X-Gitlab-Event: $1" \
	    -H "X-Gitlab-Token: $GL_TOKEN" -H "X-Gitlab-Event-UUID: odd-$N" --data-binary "@$2"
}

# refused NAME REPO CLONE_URL PATTERN: a signed GitHub push of them: 400, PATTERN.
refused() {
	push "$TMP/$1.json" "$2" "$3"
	gh push "$TMP/$1.json"
	check_eq "$1: 400" "$HTTP_CODE" 400
	check_match "$1: the reason" "$HTTP_BODY" "$4"
}

refused dotdot 'acme/../../etc' https://github.com/acme/model.git \
    '^\{"error":"repository.full_name: .acme/../../etc. is not OWNER/NAME of letters, digits'
refused control 'acme/x\nlevel=error msg=forged' https://github.com/acme/x.git \
    '^\{"error":"repository.full_name: .acme/x\\nlevel=error msg=forged. is not OWNER/NAME'
refused dash 'acme/-x' https://github.com/acme/x.git 'is not OWNER/NAME'
refused dot 'acme/.' https://github.com/acme/x.git 'is not OWNER/NAME'
refused deep 'acme/ml/model' https://github.com/acme/x.git 'is not OWNER/NAME'
# the fourth outside attack's F3: other spellings of acme/model, and a ref git refuses
refused trailingdot 'acme/model.' https://github.com/acme/model.git 'is not OWNER/NAME'
refused dotgit 'acme/model.git' https://github.com/acme/model.git 'is not OWNER/NAME'
sed -e 's|"ref": "refs/heads/main"|"ref": "refs/heads/main/"|' \
    -e 's|"default_branch": "main"|"default_branch": "main/"|' "$FX/github-push.json" >"$TMP/slash.json"
gh push "$TMP/slash.json"
check_eq "refs/heads/main/: 400" "$HTTP_CODE $HTTP_BODY" \
    "400 {\"error\":\"ref: 'refs/heads/main/' is not a ref name git allows\"}"
refused file 'acme/model' 'file:///etc/' \
    '^\{"error":"repository.clone_url: .file:///etc/. is not an https, http, ssh or git URL of a host"\}$'
refused ext 'acme/model' 'ext::sh -c touch% /tmp/pwned' 'repository.clone_url: .* is not an https'
refused path 'acme/model' '/srv/git/model.git' 'repository.clone_url: .* is not an https'
refused nohost 'acme/model' 'https:///etc' 'repository.clone_url: .* is not an https'

# a comment command under an odd name
$PY - "$FX/github-issue-comment.json" >"$TMP/comment.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["repository"]["full_name"] = "acme/../x"
print(json.dumps(d))
PYEOF
gh issue_comment "$TMP/comment.json"
check_eq "a command under acme/../x: 400" "$HTTP_CODE" 400

check_eq "nothing stored for any of them" "$(db 'SELECT count(*) FROM deliveries')" 0
check_eq "no job" "$(db 'SELECT count(*) FROM jobs')" 0
check_match "the log line quotes the name" "$(cat "$TMP/serve.log")" \
    'repo="acme/x\\nlevel=error msg=forged" status=400 outcome=malformed'

# what forges send still passes
push "$TMP/ok.json" 'acme/model_2.x' 'https://github.com/acme/model_2.x.git'
gh push "$TMP/ok.json"
check_eq "acme/model_2.x over https: 202" "$HTTP_CODE" 202
push "$TMP/ssh.json" 'acme/other' 'ssh://git@github.com/acme/other.git'
gh push "$TMP/ssh.json"
check_eq "an ssh clone URL: 202" "$HTTP_CODE" 202

# '*' does not cross '/': acme/* is not a GitLab subgroup's project
gl "Push Hook" "$FX/gitlab-push.json"
check_eq "acme/ml/model under acme/*: 403" "$HTTP_CODE $HTTP_BODY" \
    '403 {"error":"repository not in allow_repos"}'
sed 's|"path_with_namespace": "acme/ml/model"|"path_with_namespace": "acme/ml/../x"|' \
    "$FX/gitlab-push.json" >"$TMP/gl-dotdot.json"
gl "Push Hook" "$TMP/gl-dotdot.json"
check_match "GitLab acme/ml/../x: 400" "$HTTP_CODE $HTTP_BODY" \
    '^400 \{"error":"project.path_with_namespace: .acme/ml/../x. is not GROUP/NAME'

# local_clone_urls: gitea's pushes may name file:// URLs, GitHub's may not
$PY - "$FX/gitea-push.json" "file://$TMP/origin.git" >"$TMP/gt-file.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["repository"]["clone_url"] = sys.argv[2]
print(json.dumps(d))
PYEOF
gt push "$TMP/gt-file.json"
check_eq "gitea with local_clone_urls: file:// accepted" "$HTTP_CODE" 202
# F3: one commit is one job however a delivery spells the repository's
# name (the forges, and allow_repos, take it in any case) or the commit id
gh push "$FX/github-push.json"
check_eq "acme/model's push: 202" "$HTTP_CODE" 202
push "$TMP/case.json" 'ACME/Model' 'https://github.com/ACME/Model.git'
gh push "$TMP/case.json"
check_eq "acme/model's commit as ACME/Model: a duplicate" "$HTTP_CODE $HTTP_BODY" \
    '200 {"status":"duplicate"}'
sed 's|"after": "76ae82c7b1a177c8d03f9e96e0adf2466113728f"|"after": "76AE82C7B1A177C8D03F9E96E0ADF2466113728F"|' \
    "$FX/github-push.json" >"$TMP/upper.json"
gh push "$TMP/upper.json"
check_eq "its commit id in upper hex: a duplicate" "$HTTP_CODE $HTTP_BODY" \
    '200 {"status":"duplicate"}'
check_eq "four jobs in all" "$(db 'SELECT count(*) FROM jobs')" 4
kb_serve_stop TERM
check_eq "serve stops cleanly" "$KB_STATUS" 0
t_done
