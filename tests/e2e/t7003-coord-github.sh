#!/bin/sh
# t7003: the push-to-PR flow through the fake GitHub API (the recorded
# requests are the assertions): one PR created for the improved module, a
# results comment, statuses; a second push updates the same PR (PATCH),
# never a second POST /pulls; every request matches GitHub's documented API.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7003
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
fake_github || { echo "fake GitHub did not start"; t_done; }
coord_config "$TMP/kb.yml" "$(github_forge)"
kb_serve_start "$TMP/kb.yml" || t_done

gh_push 0000000000000000000000000000000000000000 "$SHA0"
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "job 1 done" "$(db 'SELECT state FROM jobs WHERE id = 1')" done
R='/repos/acme/models'
check_eq "one PR created" "$(ghq "n('POST', '$R/pulls')")" 1
check_eq "its head is the module's branch" "$(ghq "last('POST', '$R/pulls')['body']['head']")" "kernelbot/models-fast"
check_eq "its base is the default branch" "$(ghq "last('POST', '$R/pulls')['body']['base']")" "main"
check_eq "one results comment" "$(ghq "n('POST', '$R/issues/1/comments')")" 1
ST="[x['body'] for x in r if x['method'] == 'POST' and '/statuses/' in x['path']]"
check_eq "each module's first status: pending, queued" \
    "$(ghq "' '.join(sorted(b['context'] + ':' + b['state'] + ':' + b['description'][:6] for b in $ST if b['description'].startswith('queued')))")" \
    "kernelbot/models-fast:pending:queued kernelbot/models-same:pending:queued"
# A commit status has no neutral state: nothing shipped is a failure
# with the reason, never a success.
check_eq "each module's last status: success for the PR, failure for nothing shipped" \
    "$(ghq "' '.join(sorted(set(c + ':' + [b for b in $ST if b['context'] == c][-1]['state'] for c in set(b['context'] for b in $ST))))")" \
    "kernelbot/models-fast:success kernelbot/models-same:failure"
check_match "the failure says why" \
    "$(ghq "[b for b in $ST if b['context'] == 'kernelbot/models-same'][-1]['description']")" 'no faster kernel'

check_eq "the first statuses came before any result" \
    "$(ghq "[b['state'] for b in $ST][:2]")" "['pending', 'pending']"
check "the branch was pushed" sh -c "git -C '$TMP/origin.git' rev-parse -q --verify refs/heads/kernelbot/models-fast >/dev/null"

module "$TMP/w/models/fast.py" "# v2"
coord_commit "v2"
gh_push "$SHA0" "$SHA"
wait_sql 60 "SELECT state FROM jobs WHERE id = 2" done
check_eq "job 2 done" "$(db 'SELECT state FROM jobs WHERE id = 2')" done
check_eq "still one PR created in all" "$(ghq "n('POST', '$R/pulls')")" 1
check_eq "the PR was updated in place" "$(ghq "n('PATCH', '$R/pulls/1')")" 1
check_eq "its comment edited, not a second one" \
    "$(ghq "str(n('POST', '$R/issues/1/comments')) + ' ' + str(n('PATCH', '$R/issues/comments/[0-9]+'))")" "1 1"
check_eq "the new commit got its status" \
    "$(ghq "last('POST', '$R/statuses/[0-9a-f]+')['path'].rsplit('/', 1)[1]")" "$SHA"
check "no request broke the API's rules" sh -c "$PY -c \"
import json, sys
bad = [x for x in map(json.loads, open('$TMP/github.log')) if x['violations']]
[print(x['method'], x['path'], x['violations']) for x in bad]
sys.exit(1 if bad else 0)\""
# --- the PR is merged: the module keeps its kernels, loses its PR number ---
$PY -c "
import json
r = {'full_name': 'acme/models'}
print(json.dumps({'action': 'closed', 'number': 1, 'repository': r,
    'pull_request': {'merged': True, 'head': {'ref': 'kernelbot/models-fast', 'repo': r},
                     'base': {'ref': 'main', 'repo': r}}}))" >"$TMP/closed.json"
gh_send pull_request "$TMP/closed.json"
check_eq "the closed PR is recorded" "$HTTP_CODE" 202
check "the coordinator takes it" wait_sql 15 "SELECT state, result FROM cleanups WHERE kind = 'pr'" "done|merged"
check_eq "the module forgets its PR, keeps its kernels" \
    "$(db "SELECT slug, arch, coalesce(pr, 0) FROM delivered")" "models-fast|cpu|0"
kb_serve_stop
t_done
