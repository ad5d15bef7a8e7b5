#!/bin/sh
# The gitlab driver against a fake GitLab v4 API that checks and records
# every request: one MR and one note per module, updated in place; status,
# members, award emoji; retries, rate limits and clear errors.
set -u
. "$KB_ROOT/tests/e2e/lib-gitops.sh"
setup_repo
printf 'glpat-secret\n' >"$T/token"
start_fake gitlab --log "$T/gl.log" --token glpat-secret --page-size 2 \
	--users '{"alice": "write", "root": "maintainer", "rita": "read"}' ||
	{ echo "fake gitlab did not start"; exit 1; }
cat >"$T/kb.yml" <<YML
forges:
  gitlab:
    api_url: http://127.0.0.1:$PORT/api/v4
    token_file: $T/token
    write_interval_ms: 0
    backoff_ms: 10
    backoff_max_ms: 50
YML
L=$T/gl.log
MR=/api/v4/projects/acme%2Fmodels/merge_requests
NOTES=$MR/1/notes

publish_to "$T/kb.yml" gitlab; st=$?
check "first publish" '[ $st -eq 0 ] && [ "$(results)" = created/created/created ]' || cat "$T/err"
check "MR looked up by source branch, opened state" 'q "$L" "r[0][\"query\"] == {\"state\": \"opened\", \"source_branch\": \"kernelbot/models-mlp\", \"per_page\": \"100\"}"'
check "MR create body" 'q "$L" "last(\"POST\", \"$MR\")[\"body\"] == {\"source_branch\": \"kernelbot/models-mlp\", \"target_branch\": \"main\", \"title\": \"kernelbot: models/mlp.py\", \"description\": \"Speedup 2.0x\\n\", \"labels\": \"performance\", \"reviewer_ids\": [1]}"'
check "note with the marker" 'q "$L" "last(\"POST\", \"$NOTES\")[\"body\"] == {\"body\": \"<!-- kernelbot:results:models-mlp -->\\nresults v1\\n\"}"'
check "status: name and running/success states" 'q "$L" "last(\"POST\", \"/api/v4/projects/acme%2Fmodels/statuses/$base\")[\"body\"] == {\"state\": \"success\", \"name\": \"kernelbot/models-mlp\", \"description\": \"2.0x\"}"'

# Other notes push ours to page 2 of the listing.
printf 'hi\n' >"$T/c.md"
"$KERNELBOT" forge --config "$T/kb.yml" --forge gitlab --repo acme/models comment 1 "<!-- a -->" "$T/c.md" >/dev/null
"$KERNELBOT" forge --config "$T/kb.yml" --forge gitlab --repo acme/models comment 1 "<!-- b -->" "$T/c.md" >/dev/null
n0=$(q "$L" "len(writes())")
publish_to "$T/kb.yml" gitlab; st=$?
check "same result: unchanged" '[ $st -eq 0 ] && [ "$(results)" = unchanged/unchanged/unchanged ]' || cat "$T/err"
check "same result: only the status is written, and GitLab's 'same state' 400 is fine" 'q "$L" "[(x[\"path\"], x[\"status\"]) for x in writes()[$n0:]] == [(\"/api/v4/projects/acme%2Fmodels/statuses/$base\", 400)]"'

printf 'int k2;\n' >"$T/res/kernels/models-mlp/kernel.c"
printf 'Speedup 3.0x\n' >"$T/body.md"
printf 'results v2\n' >"$T/comment.md"
publish_to "$T/kb.yml" gitlab; st=$?
check "new result: updated" '[ $st -eq 0 ] && [ "$(results)" = updated/updated/updated ]' || cat "$T/err"
check "PUT sends only the description" 'q "$L" "last(\"PUT\", \"$MR/1\")[\"body\"] == {\"description\": \"Speedup 3.0x\\n\"}"'
check "the note is edited, no second MR or note" 'q "$L" "n(\"PUT\", \"$NOTES/[0-9]+\") == 1 and n(\"POST\", \"$MR\") == 1 and sum(1 for x in r if x[\"method\"] == \"POST\" and x[\"path\"] == \"$NOTES\" and \"kernelbot:results\" in x[\"body\"][\"body\"]) == 1"'

perm() { "$KERNELBOT" forge --config "$T/kb.yml" --forge gitlab --repo acme/models permission "$1"; }
check "permissions from access levels" '[ "$(perm alice) $(perm root) $(perm rita) $(perm nobody)" = "write admin read none" ]'
nid=$($PY -c "import json; print(json.load(open('$T/out.json'))['comment']['id'])")
check "award emoji, twice is fine" '"$KERNELBOT" forge --config "$T/kb.yml" --forge gitlab --repo acme/models react 1 "$nid" +1 && "$KERNELBOT" forge --config "$T/kb.yml" --forge gitlab --repo acme/models react 1 "$nid" +1'
check "award emoji request" 'q "$L" "last(\"POST\", \"$NOTES/$nid/award_emoji\")[\"body\"] == {\"name\": \"thumbsup\"}"'
check "award twice: one request each, no retries" 'q "$L" "n(\"POST\", \"$NOTES/[0-9]+/award_emoji\") == 2"'
prq() { "$KERNELBOT" forge --config "$T/kb.yml" --forge gitlab --repo acme/models pr "$1"; }
check "a merge request looked up: same project, not a fork" '[ "$(prq 1 | $PY -c "import json,sys; d=json.load(sys.stdin); print(d[\"number\"], d[\"head_ref\"], d[\"base_ref\"], d[\"state\"], d[\"fork\"])")" = "1 kernelbot/models-mlp main open False" ]'
check "a missing merge request: an error" '! prq 99 2>/dev/null'
check "every request followed the API" 'no_violations "$L"'

S1=1111111111111111111111111111111111111111
S2=2222222222222222222222222222222222222222
S3=3333333333333333333333333333333333333333
cat >"$T/script.json" <<JSON
[
 {"method": "POST", "path": "/statuses/$S1", "status": 500, "times": 1},
 {"method": "POST", "path": "/statuses/$S2", "status": 429, "headers": {"RateLimit-Reset": "$(($(date +%s) + 1))"}},
 {"method": "POST", "path": "/statuses/$S3", "status": 401, "body": {"message": "401 Unauthorized"}}
]
JSON
start_fake gitlab --log "$T/e.log" --token glpat-secret --script "$T/script.json"
sed "s|127.0.0.1:[0-9]*|127.0.0.1:$PORT|" "$T/kb.yml" >"$T/kb2.yml"
st() { "$KERNELBOT" forge --config "$T/kb2.yml" --forge gitlab --repo acme/models status "$1" pending c d 2>"$T/serr"; }
st $S1; check "500 retried" '[ $? -eq 0 ] && q "$T/e.log" "n(\"POST\", \".*/$S1\") == 2"'
st $S2; check "429 with RateLimit-Reset waited out" '[ $? -eq 0 ] && q "$T/e.log" "n(\"POST\", \".*/$S2\") == 2"'
st $S3; check "401 is a clear error" '[ $? -eq 1 ] && grep -q "401 the gitlab credentials were refused" "$T/serr"' || cat "$T/serr"
printf 'wrong\n' >"$T/token"
st $S1; check "a wrong token is refused by the fake" '[ $? -eq 1 ] && grep -q "401" "$T/serr"'

done_tests t4030
