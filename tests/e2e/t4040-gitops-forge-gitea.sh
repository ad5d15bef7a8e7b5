#!/bin/sh
# The gitea driver against a fake Gitea v1 API that checks and records every
# request: one PR (found by paging open pulls) and one comment per module,
# labels by id, updated in place; status, permission, reactions; retries,
# rate limits and clear errors.
set -u
. "$KB_ROOT/tests/e2e/lib-gitops.sh"
setup_repo
printf 'gitea-secret\n' >"$T/token"
start_fake gitea --log "$T/gt.log" --token gitea-secret --page-size 2 \
	--users '{"alice": "write", "root": "owner", "rita": "read"}' ||
	{ echo "fake gitea did not start"; exit 1; }
cat >"$T/kb.yml" <<YML
forges:
  codeberg:
    driver: gitea
    api_url: http://127.0.0.1:$PORT/api/v1
    token_file: $T/token
    write_interval_ms: 0
    backoff_ms: 10
    backoff_max_ms: 50
YML
L=$T/gt.log
R=/api/v1/repos/acme/models

# Two other open PRs first, so ours is found on the second page.
for b in feature-a feature-b; do
	curl -s -o /dev/null -H "Authorization: token gitea-secret" -H "Content-Type: application/json" \
		-d "{\"head\": \"$b\", \"base\": \"main\", \"title\": \"$b\"}" "http://127.0.0.1:$PORT$R/pulls"
done

publish_to "$T/kb.yml" codeberg; st=$?
check "first publish" '[ $st -eq 0 ] && [ "$(results)" = created/created/created ]' || cat "$T/err"
check "PR create body" 'q "$L" "last(\"POST\", \"$R/pulls\")[\"body\"] == {\"head\": \"kernelbot/models-mlp\", \"base\": \"main\", \"title\": \"kernelbot: models/mlp.py\", \"body\": \"Speedup 2.0x\\n\"}"'
check "labels mapped to ids" 'q "$L" "n(\"GET\", \"$R/labels\") == 1 and last(\"POST\", \"$R/issues/3/labels\")[\"body\"] == {\"labels\": [11]}"'
check "reviewer requested" 'q "$L" "last(\"POST\", \"$R/pulls/3/requested_reviewers\")[\"body\"] == {\"reviewers\": [\"alice\"]}"'
check "status with context" 'q "$L" "last(\"POST\", \"$R/statuses/$base\")[\"body\"] == {\"state\": \"success\", \"context\": \"kernelbot/models-mlp\", \"description\": \"2.0x\"}"'

n0=$(q "$L" "len(writes())")
publish_to "$T/kb.yml" codeberg; st=$?
check "same result: unchanged" '[ $st -eq 0 ] && [ "$(results)" = unchanged/unchanged/unchanged ]' || cat "$T/err"
check "same result: PR found on page 2 via Link" 'q "$L" "any(x[\"path\"] == \"$R/pulls\" and x[\"query\"].get(\"page\") == \"2\" for x in r)"'
check "same result: only the status is written" 'q "$L" "[x[\"path\"] for x in writes()[$n0:]] == [\"$R/statuses/$base\"]"'

printf 'int k2;\n' >"$T/res/kernels/models-mlp/kernel.c"
printf 'results v2\n' >"$T/comment.md"
TITLE="kernelbot: 3.0x faster models/mlp.py"
publish_to "$T/kb.yml" codeberg; st=$?
check "new result: updated" '[ $st -eq 0 ] && [ "$(results)" = updated/updated/updated ]' || cat "$T/err"
check "PATCH sends only the title" 'q "$L" "last(\"PATCH\", \"$R/pulls/3\")[\"body\"] == {\"title\": \"kernelbot: 3.0x faster models/mlp.py\"}"'
check "comment edited, one PR created in all" 'q "$L" "n(\"PATCH\", \"$R/issues/comments/[0-9]+\") == 1 and n(\"POST\", \"$R/issues/3/comments\") == 1"'

perm() { "$KERNELBOT" forge --config "$T/kb.yml" --forge codeberg --repo acme/models permission "$1"; }
check "permissions (owner is admin)" '[ "$(perm alice) $(perm root) $(perm rita) $(perm nobody)" = "write admin read none" ]'
cid=$($PY -c "import json; print(json.load(open('$T/out.json'))['comment']['id'])")
check "react eyes" '"$KERNELBOT" forge --config "$T/kb.yml" --forge codeberg --repo acme/models react 3 "$cid" eyes'
check "reaction request" 'q "$L" "last(\"POST\", \"$R/issues/comments/$cid/reactions\")[\"body\"] == {\"content\": \"eyes\"}"'
prq() { "$KERNELBOT" forge --config "$T/kb.yml" --forge codeberg --repo acme/models pr "$1"; }
check "a pull request looked up: not a fork" '[ "$(prq 3 | $PY -c "import json,sys; d=json.load(sys.stdin); print(d[\"number\"], d[\"head_ref\"], d[\"base_ref\"], d[\"fork\"])")" = "3 kernelbot/models-mlp main False" ]'
check "a missing pull request: an error" '! prq 99 2>/dev/null'
check "every kernelbot request followed the API" 'no_violations "$L"'

S1=1111111111111111111111111111111111111111
S2=2222222222222222222222222222222222222222
S3=3333333333333333333333333333333333333333
cat >"$T/script.json" <<JSON
[
 {"method": "POST", "path": "/statuses/$S1", "status": 503, "times": 2},
 {"method": "POST", "path": "/statuses/$S2", "status": 429, "headers": {"Retry-After": "1"}},
 {"method": "POST", "path": "/statuses/$S3", "status": 403, "body": {"message": "token does not have at least one of required scope(s): [write:repository]"}}
]
JSON
start_fake gitea --log "$T/e.log" --token gitea-secret --script "$T/script.json"
sed "s|127.0.0.1:[0-9]*|127.0.0.1:$PORT|" "$T/kb.yml" >"$T/kb2.yml"
st() { "$KERNELBOT" forge --config "$T/kb2.yml" --forge codeberg --repo acme/models status "$1" failure c d 2>"$T/serr"; }
st $S1; check "503 twice, retried" '[ $? -eq 0 ] && q "$T/e.log" "n(\"POST\", \".*/$S1\") == 3"'
st $S2; check "429 Retry-After waited out" '[ $? -eq 0 ] && q "$T/e.log" "n(\"POST\", \".*/$S2\") == 2"'
st $S3; check "403 is a clear error" '[ $? -eq 1 ] && grep -q "403 not allowed: token does not have" "$T/serr"' || cat "$T/serr"
printf 'forges:\n  g:\n    driver: gitea\n    token_file: %s/token\n' "$T" >"$T/noapi.yml"
"$KERNELBOT" forge --config "$T/noapi.yml" --forge g --repo acme/models permission x 2>"$T/serr"
check "api_url is required for gitea" '[ $? -eq 1 ] && grep -q "forges.gitea.api_url: required" "$T/serr"'

done_tests t4040
