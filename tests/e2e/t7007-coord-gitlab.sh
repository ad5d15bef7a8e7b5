#!/bin/sh
# t7007: the same loop on GitLab (the fake GitLab API): a push hook makes a
# merge request for the improved module; a note "/kernelbot retry" from a
# developer is obeyed (membership asked of GitLab, an award emoji on the
# note, which needs the MR, and one answer note); from a reporter it is
# refused. Every request matches GitLab's documented API.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7007
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
rm -f "$TMP/gl.port"
$PY "$KB_ROOT/tests/fakes/gitlab.py" --port-file "$TMP/gl.port" --log "$TMP/gitlab.log" \
    --token secret-token --git-dir "$TMP/origin.git" --users '{"alice": "write", "rita": "read"}' 2>>"$TMP/gitlab.stderr" &
t_bg $!
wait_for 10 test -s "$TMP/gl.port" || { echo "fake GitLab did not start"; t_done; }
GL_API="http://127.0.0.1:$(cat "$TMP/gl.port")/api/v4"
printf 'secret-token\n' >"$TMP/gl.token"
GL_TOKEN="gitlab-token-0123456789abcdef"
printf '%s\n' "$GL_TOKEN" >"$TMP/gitlab.secret"
coord_config "$TMP/kb.yml" "    token_file: $TMP/gh.token"
# GitHub is not used here (a forge without its client is refused while
# the coordinator runs); the gitlab forge gets its webhook token and client.
$PY - "$TMP/kb.yml" "$TMP" "$GL_API" <<'PYEOF'
import sys
p, tmp, api = sys.argv[1:4]
s = open(p).read().replace("  github:\n    webhook_secret_file: %s/github.secret\n"
    "    token_file: %s/gh.token\n" % (tmp, tmp),
    "  gitlab:\n    webhook_token_file: %s/gitlab.secret\n    api_url: %s\n"
    "    token_file: %s/gl.token\n    write_interval_ms: 0\n    backoff_ms: 10\n" % (tmp, api, tmp))
open(p, "w").write(s)
PYEOF
kb_serve_start "$TMP/kb.yml" || t_done
GN=0
gl_send() {
	GN=$((GN + 1))
	http POST "http://127.0.0.1:$KB_PORT/webhooks/gitlab" -H "Content-Type: application/json" \
	    -H "X-Gitlab-Event: $1" -H "X-Gitlab-Event-UUID: gl-$GN-$$" -H "X-Gitlab-Token: $GL_TOKEN" \
	    --data-binary "@$2"
}
glq() {
	$PY - "$TMP/gitlab.log" "$1" <<'PYEOF'
import json, re, sys
r = [json.loads(l) for l in open(sys.argv[1])]
def n(method, rx):
    return sum(1 for x in r if x["method"] == method and re.fullmatch(rx, x["path"]))
print(eval(sys.argv[2]))
PYEOF
}
P='/api/v4/projects/acme%2Fmodels'

$PY -c "
import json
print(json.dumps({'object_kind': 'push', 'ref': 'refs/heads/main', 'before': '0' * 40,
    'after': '$SHA0', 'user_username': 'dev',
    'project': {'path_with_namespace': 'acme/models', 'git_http_url': 'file://$TMP/origin.git',
                'default_branch': 'main'}}))" >"$TMP/push.json"
gl_send "Push Hook" "$TMP/push.json"
check_eq "push hook accepted" "$HTTP_CODE" 202
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "the job is done" "$(db 'SELECT provider, state FROM jobs WHERE id = 1')" "gitlab|done"
check_eq "one merge request created" "$(glq "n('POST', '$P/merge_requests')")" 1

# note USER BODY: USER's note on MR 1, made on the fake, then the Note Hook.
note() {
	NID=$(curl -sS -H 'PRIVATE-TOKEN: secret-token' -H 'Content-Type: application/json' \
	    -d "$($PY -c 'import json,sys; print(json.dumps({"body": sys.argv[1]}))' "$2")" \
	    "$GL_API/projects/acme%2Fmodels/merge_requests/1/notes" | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	$PY -c "
import json, sys
print(json.dumps({'object_kind': 'note', 'user': {'username': '$1'},
    'project': {'path_with_namespace': 'acme/models'},
    'object_attributes': {'id': $NID, 'note': sys.argv[1], 'noteable_type': 'MergeRequest', 'action': 'create'},
    'merge_request': {'iid': 1, 'source_project_id': 7, 'target_project_id': 7}}))" "$2" >"$TMP/note.json"
	gl_send "Note Hook" "$TMP/note.json"
}
answered() {
	glq "[x for x in r if x['method'] in ('POST', 'PUT') and '/notes' in x['path'] and 'kernelbot:reply:$1 ' in (x['body'] or {}).get('body', '')]" | grep -q body
}

note rita "/kernelbot retry"
check_eq "note hook accepted" "$HTTP_CODE" 202
check "the reporter is answered" wait_for 20 answered "$NID"
check_eq "and refused" "$(db "SELECT state FROM commands WHERE actor = 'rita'")" refused
check_eq "nothing queued" "$(db 'SELECT count(*) FROM jobs')" 1

note alice "/kernelbot retry"
check "the developer is answered" wait_for 20 answered "$NID"
check_eq "with an award emoji on her note" "$(glq "n('POST', '$P/merge_requests/1/notes/$NID/award_emoji')")" 1
check_eq "the command is done" "$(db "SELECT state FROM commands WHERE actor = 'alice'")" done
wait_sql 60 "SELECT state FROM jobs WHERE id = 2" done
check_eq "the retry job ran the MR's module" "$(db 'SELECT trigger, provider FROM jobs WHERE id = 2')" "retry|gitlab"
check_eq "still one merge request" "$(glq "n('POST', '$P/merge_requests')")" 1
check "every request followed GitLab's API" sh -c "$PY -c \"
import json, sys
bad = [x for x in map(json.loads, open('$TMP/gitlab.log')) if x['violations']]
[print(x['method'], x['path'], x['violations']) for x in bad]
sys.exit(1 if bad else 0)\""
kb_serve_stop
t_done
