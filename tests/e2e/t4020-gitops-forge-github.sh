#!/bin/sh
# The github driver against a fake GitHub that checks every request against
# the REST API and records it: one PR and one comment per module, updated in
# place; statuses, check runs for an App, permissions, reactions; and every
# error path: 5xx, rate limits (Retry-After, x-ratelimit-reset, secondary),
# just-created 404s, 401, 403, 422, bodies over the limit.
set -u
. "$KB_ROOT/tests/e2e/lib-gitops.sh"

setup_repo
printf 'secret-token\n' >"$T/token"
USERS='{"alice": "write", "root": "admin", "reader": "read"}'

start_fake github --log "$T/gh.log" --users "$USERS" --page-size 2 ||
	{ echo "fake github did not start"; cat "$T/github.stderr"; exit 1; }
cat >"$T/kb.yml" <<YML
forges:
  github:
    api_url: http://127.0.0.1:$PORT
    token_file: $T/token
    write_interval_ms: 0
    backoff_ms: 10
    backoff_max_ms: 50
    max_retries: 3
YML

publish() {
	"$KERNELBOT" --log-level debug publish --config "$T/kb.yml" --forge github \
		--repo acme/models --git-dir "$T/w" --base "$base" --base-branch main \
		--module models/mlp.py --files "$T/res" --title "$TITLE" \
		--body-file "$T/body.md" --label performance --reviewer alice \
		--status success --context kernelbot/models-mlp --description "2.0x" \
		--json "$@" >"$T/out.json" 2>"$T/err"
}
field() { $PY -c "import json; d=json.load(open('$T/out.json')); print($1)"; }
L=$T/gh.log
P='/repos/acme/models/pulls'
C='/repos/acme/models/issues/1/comments'

# 1. First publish, without the results comment: a PR, labels, reviewer, status.
TITLE="kernelbot: 2.0x faster models/mlp.py"
publish; st=$?
check "first publish" '[ $st -eq 0 ] && [ "$(field "d[\"pr\"][\"result\"]")" = created ]' || cat "$T/err"
check "PR found by head, then created" 'q "$L" "n(\"GET\", \"$P\") == 1 and n(\"POST\", \"$P\") == 1 and last(\"GET\", \"$P\")[\"query\"][\"head\"] == \"acme:kernelbot/models-mlp\""'
check "PR create body" 'q "$L" "last(\"POST\", \"$P\")[\"body\"] == {\"title\": \"$TITLE\", \"head\": \"kernelbot/models-mlp\", \"base\": \"main\", \"body\": \"Speedup 2.0x\\n\", \"maintainer_can_modify\": False}"'
check "labels and reviewer requested" 'q "$L" "last(\"POST\", \"/repos/acme/models/issues/1/labels\")[\"body\"] == {\"labels\": [\"performance\"]} and last(\"POST\", \"$P/1/requested_reviewers\")[\"body\"] == {\"reviewers\": [\"alice\"]}"'
check "status on the base commit" 'q "$L" "last(\"POST\", \"/repos/acme/models/statuses/$base\")[\"body\"] == {\"state\": \"success\", \"context\": \"kernelbot/models-mlp\", \"description\": \"2.0x\"}"'
check "the token is never logged" '! grep -q secret-token "$T/err"'

# 2. Other people comment (two, so the results comment lands on page 2).
printf 'nice\n' >"$T/c.md"
"$KERNELBOT" forge --config "$T/kb.yml" --forge github --repo acme/models comment 1 "<!-- human 1 -->" "$T/c.md" >/dev/null
"$KERNELBOT" forge --config "$T/kb.yml" --forge github --repo acme/models comment 1 "<!-- human 2 -->" "$T/c.md" >/dev/null
publish --comment-file "$T/comment.md"; st=$?
check "results comment created" '[ $st -eq 0 ] && [ "$(field "d[\"comment\"][\"result\"]")" = created ] && [ "$(field "d[\"pr\"][\"result\"]")" = unchanged ]' || cat "$T/err"
cid=$(field 'd["comment"]["id"]')
check "comment starts with the hidden marker" 'q "$L" "last(\"POST\", \"$C\")[\"body\"][\"body\"] == \"<!-- kernelbot:results:models-mlp -->\\nresults v1\\n\""'

# 3. The same result again: no write to the PR or the comments.
before=$(q "$L" "len(writes())")
publish --comment-file "$T/comment.md"; st=$?
check "same result: all unchanged" '[ $st -eq 0 ] && [ "$(field "d[\"outcome\"]")/$(field "d[\"pr\"][\"result\"]")/$(field "d[\"comment\"][\"result\"]")" = unchanged/unchanged/unchanged ]' || cat "$T/err"
check "same result: only the status was written" 'q "$L" "[x[\"path\"] for x in writes()[$before:]] == [\"/repos/acme/models/statuses/$base\"]"'
check "the marker was found on page 2 (Link)" 'q "$L" "r[-2][\"path\"] == \"$C\" and r[-2][\"query\"].get(\"page\") == \"2\""'

# 4. A new result: PATCH the PR (only what changed) and the comment.
printf 'int k2;\n' >"$T/res/kernels/models-mlp/kernel.c"
printf 'Speedup 3.0x\n' >"$T/body.md"
printf 'results v2\n' >"$T/comment.md"
publish --comment-file "$T/comment.md"; st=$?
check "new result: updated everywhere" '[ $st -eq 0 ] && [ "$(field "d[\"outcome\"]")/$(field "d[\"pr\"][\"result\"]")/$(field "d[\"comment\"][\"result\"]")" = updated/updated/updated ]' || cat "$T/err"
check "PATCH sends only the body" 'q "$L" "last(\"PATCH\", \"$P/1\")[\"body\"] == {\"body\": \"Speedup 3.0x\\n\"}"'
check "comment edited in place" 'q "$L" "last(\"PATCH\", \"/repos/acme/models/issues/comments/$cid\")[\"body\"][\"body\"].endswith(\"results v2\\n\")"'
check "one PR and one results comment in all" 'q "$L" "n(\"POST\", \"$P\") == 1 and sum(1 for x in r if x[\"method\"] == \"POST\" and x[\"path\"] == \"$C\" and \"kernelbot:results\" in x[\"body\"][\"body\"]) == 1"'
check "branch rebuilt on the base" '[ "$(git -C "$T/r.git" rev-parse kernelbot/models-mlp^)" = "$base" ]'

# 5. Permissions and reactions.
perm() { "$KERNELBOT" forge --config "$T/kb.yml" --forge github --repo acme/models permission "$1"; }
check "permissions" '[ "$(perm alice) $(perm root) $(perm reader) $(perm mallory)" = "write admin read none" ]'
check "react +1 (twice is fine)" '"$KERNELBOT" forge --config "$T/kb.yml" --forge github --repo acme/models react 1 "$cid" +1 && "$KERNELBOT" forge --config "$T/kb.yml" --forge github --repo acme/models react 1 "$cid" +1'
check "reaction request" 'q "$L" "last(\"POST\", \"/repos/acme/models/issues/comments/$cid/reactions\")[\"body\"] == {\"content\": \"+1\"}"'
prq() { "$KERNELBOT" forge --config "$T/kb.yml" --forge github --repo acme/models pr "$1"; }
check "a pull request looked up: not a fork" '[ "$(prq 1 | $PY -c "import json,sys; d=json.load(sys.stdin); print(d[\"number\"], d[\"head_ref\"], d[\"base_ref\"], d[\"fork\"])")" = "1 kernelbot/models-mlp main False" ]'

# 6. A body over GitHub's limit is cut, with a notice.
$PY -c "print('x' * 70000)" >"$T/body.md"
TITLE="big"
publish; st=$?
check "long body accepted" '[ $st -eq 0 ]' || cat "$T/err"
check "long body cut under 65536 with a notice" 'q "$L" "len(last(\"PATCH\", \"$P/1\")[\"body\"][\"body\"]) <= 65536 and \"was cut at the forge\" in last(\"PATCH\", \"$P/1\")[\"body\"][\"body\"]"'
check "no request broke the documented API" 'no_violations "$L"'

# 7. Error paths, scripted on a second fake.
S1=1111111111111111111111111111111111111111
S2=2222222222222222222222222222222222222222
S3=3333333333333333333333333333333333333333
S4=4444444444444444444444444444444444444444
S5=5555555555555555555555555555555555555555
S6=6666666666666666666666666666666666666666
S7=7777777777777777777777777777777777777777
S8=8888888888888888888888888888888888888888
S9=9999999999999999999999999999999999999999
reset=$(($(date +%s) + 2))
cat >"$T/script.json" <<JSON
[
 {"method": "POST", "path": "/statuses/$S1", "status": 502, "times": 2, "body": {"message": "Bad Gateway"}},
 {"method": "POST", "path": "/statuses/$S2", "status": 429, "headers": {"Retry-After": "1"}, "body": {"message": "slow down"}},
 {"method": "POST", "path": "/statuses/$S3", "status": 403, "headers": {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "$reset"}, "body": {"message": "API rate limit exceeded"}},
 {"method": "POST", "path": "/statuses/$S4", "status": 403, "body": {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}},
 {"method": "POST", "path": "/statuses/$S5", "status": 401, "body": {"message": "Bad credentials"}},
 {"method": "POST", "path": "/statuses/$S6", "status": 403, "body": {"message": "Resource not accessible by integration"}},
 {"method": "POST", "path": "/statuses/$S7", "status": 422, "body": {"message": "Validation Failed", "errors": [{"field": "state", "code": "invalid"}]}},
 {"method": "POST", "path": "/statuses/$S8", "status": 429, "headers": {"Retry-After": "5000"}},
 {"method": "POST", "path": "/statuses/$S9", "status": 503, "times": 10},
 {"method": "POST", "path": "/issues/1/comments", "status": 404, "times": 1, "body": {"message": "Not Found"}}
]
JSON
start_fake github --log "$T/err.log" --script "$T/script.json" --users "$USERS" ||
	{ echo "second fake did not start"; exit 1; }
sed "s|127.0.0.1:[0-9]*|127.0.0.1:$PORT|" "$T/kb.yml" >"$T/kb2.yml"
E=$T/err.log
status() {
	"$KERNELBOT" forge --config "$T/kb2.yml" --forge github --repo acme/models \
		status "$1" success kernelbot/x "d" 2>"$T/serr"
}
status $S1; check "502 twice, then success" '[ $? -eq 0 ] && q "$E" "n(\"POST\", \".*/$S1\") == 3"'
t0=$(date +%s.%N); status $S2; st=$?; t1=$(date +%s.%N)
check "429 Retry-After: 1 is waited out" '[ $st -eq 0 ] && q "$E" "n(\"POST\", \".*/$S2\") == 2" && $PY -c "import sys; sys.exit(not $t1 - $t0 >= 0.95)"'
status $S3; check "x-ratelimit-reset is waited for" '[ $? -eq 0 ] && q "$E" "last(\"POST\", \".*/$S3\")[\"t\"] - [x for x in r if x[\"path\"].endswith(\"$S3\")][0][\"t\"] >= 1.0"'
status $S4; check "secondary rate limit backs off and retries" '[ $? -eq 0 ] && q "$E" "n(\"POST\", \".*/$S4\") == 2"'
status $S5; check "401: clear error" '[ $? -eq 1 ] && grep -q "401 the github credentials were refused: Bad credentials" "$T/serr"' || cat "$T/serr"
status $S6; check "403: clear error" '[ $? -eq 1 ] && grep -q "403 not allowed: Resource not accessible by integration" "$T/serr"' || cat "$T/serr"
status $S7; check "422: the forge's reason" '[ $? -eq 1 ] && grep -q "422 refused: Validation Failed (state: invalid)" "$T/serr"' || cat "$T/serr"
status $S8; check "Retry-After over max_wait_s: give up at once" '[ $? -eq 1 ] && grep -q "rate limited for 5000 s, over max_wait_s" "$T/serr" && q "$E" "n(\"POST\", \".*/$S8\") == 1"' || cat "$T/serr"
status $S9; check "5xx retries are bounded" '[ $? -eq 1 ] && grep -q "503.*retries exhausted" "$T/serr" && q "$E" "n(\"POST\", \".*/$S9\") == 4"' || cat "$T/serr"
mkdir -p "$T/res"
printf 'r\n' >"$T/comment.md"
printf 'b\n' >"$T/body.md"
"$KERNELBOT" publish --config "$T/kb2.yml" --forge github --repo acme/models \
	--git-dir "$T/w" --base "$base" --base-branch main --module models/mlp.py \
	--files "$T/res" --title t --body-file "$T/body.md" --comment-file "$T/comment.md" \
	--json >"$T/out.json" 2>"$T/err"
check "a just-created PR's 404 on commenting is retried" '[ $? -eq 0 ] && q "$E" "n(\"POST\", \"/repos/acme/models/issues/1/comments\") == 2 and r[-1][\"status\"] == 201"' || cat "$T/err"

# 8. Write requests are spaced by write_interval_ms.
start_fake github --log "$T/slow.log" --users "$USERS"
sed -e "s|127.0.0.1:[0-9]*|127.0.0.1:$PORT|" -e 's/write_interval_ms: 0/write_interval_ms: 400/' "$T/kb.yml" >"$T/kb3.yml"
"$KERNELBOT" publish --config "$T/kb3.yml" --forge github --repo acme/models \
	--git-dir "$T/w" --base "$base" --base-branch main --module models/other.py \
	--files "$T/res" --title t --body-file "$T/body.md" --label performance \
	--comment-file "$T/comment.md" --status pending --context c >"$T/o" 2>"$T/err"
check "writes at least write_interval_ms apart" 'q "$T/slow.log" "len(writes()) == 4 and all(b[\"t\"] - a[\"t\"] >= 0.38 for a, b in zip(writes(), writes()[1:]))"' || cat "$T/err"

# 9. GitHub App: JWT -> installation token (cached), check runs.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/app.pem" 2>/dev/null
openssl pkey -in "$T/app.pem" -pubout -out "$T/app.pub" 2>/dev/null
start_fake github --log "$T/app.log" --users "$USERS" --public-key "$T/app.pub"
cat >"$T/app.yml" <<YML
forges:
  github:
    api_url: http://127.0.0.1:$PORT
    app_id: 4242
    private_key_file: $T/app.pem
    write_interval_ms: 0
    backoff_ms: 10
YML
printf 'int k3;\n' >"$T/res/kernels/models-mlp/kernel.c"
"$KERNELBOT" publish --config "$T/app.yml" --forge github --repo acme/models \
	--git-dir "$T/w" --base "$base" --base-branch main --module models/mlp.py \
	--files "$T/res" --title t --body-file "$T/body.md" --comment-file "$T/comment.md" \
	--status pending --context kernelbot/models-mlp --description running >"$T/o" 2>"$T/err"
check "App publish" '[ $? -eq 0 ]' || cat "$T/err"
check "installation looked up and token minted once" 'q "$T/app.log" "n(\"GET\", \"/repos/acme/models/installation\") == 1 and n(\"POST\", \"/app/installations/77/access_tokens\") == 1"'
check "API calls use the installation token" 'q "$T/app.log" "all(x[\"auth\"] in (\"jwt\", \"installation\") for x in r) and last(\"POST\", \"/repos/acme/models/pulls\")[\"auth\"] == \"installation\""'
check "status is a check run, in progress" 'q "$T/app.log" "last(\"POST\", \"/repos/acme/models/check-runs\")[\"body\"] == {\"name\": \"kernelbot/models-mlp\", \"head_sha\": \"$base\", \"status\": \"in_progress\", \"output\": {\"title\": \"kernelbot/models-mlp\", \"summary\": \"running\"}}"'
"$KERNELBOT" forge --config "$T/app.yml" --forge github --repo acme/models status "$base" success kernelbot/models-mlp "2.0x faster" https://ci.test/1
check "the same check run is completed in place" 'q "$T/app.log" "n(\"POST\", \"/repos/acme/models/check-runs\") == 1 and last(\"PATCH\", \"/repos/acme/models/check-runs/[0-9]+\")[\"body\"][\"conclusion\"] == \"success\" and last(\"PATCH\", \"/repos/acme/models/check-runs/[0-9]+\")[\"body\"][\"details_url\"] == \"https://ci.test/1\""'
check "App requests follow the API" 'no_violations "$T/app.log"'
printf 'not a key\n' >"$T/bad.pem"
sed "s|$T/app.pem|$T/bad.pem|" "$T/app.yml" >"$T/bad.yml"
"$KERNELBOT" forge --config "$T/bad.yml" --forge github --repo acme/models permission alice 2>"$T/serr"
check "a bad App key fails at open, clearly" '[ $? -eq 1 ] && grep -q "forges.github.private_key_file: private key" "$T/serr"' || cat "$T/serr"
printf 'forges:\n  github:\n    api_url: http://127.0.0.1:1\n' >"$T/none.yml"
"$KERNELBOT" forge --config "$T/none.yml" --forge github --repo acme/models permission alice 2>"$T/serr"
check "no credentials configured" '[ $? -eq 1 ] && grep -q "needs token_file" "$T/serr"'

# 10. Git over HTTPS with the forge's token: the push authenticates through
# libgit2's credential callback (Basic x-access-token:TOKEN), never a URL.
start_fake githttp --root "$T" --log "$T/git.log" --password secret-token ||
	{ echo "git http server did not start"; exit 1; }
GITPORT=$PORT
git clone -q "$T/w" "$T/w2" 2>/dev/null
git -C "$T/w2" remote set-url origin "http://127.0.0.1:$GITPORT/r.git"
"$KERNELBOT" publish --config "$T/kb.yml" --forge github --repo acme/models \
	--git-dir "$T/w2" --base "$base" --base-branch main --module models/conv.py \
	--files "$T/res" --title t --body-file "$T/body.md" >"$T/o" 2>"$T/err"
check "push over HTTP with the token" '[ $? -eq 0 ] && [ "$(git -C "$T/r.git" rev-parse kernelbot/models-conv^)" = "$base" ]' || cat "$T/err"
check "the git server saw the challenge, then the credentials" 'q "$T/git.log" "r[0][\"auth\"] == \"none\" and r[0][\"status\"] == 401 and any(x[\"auth\"] == \"ok\" and x[\"service\"] == \"git-receive-pack\" for x in r)"'
check "the token is not in the remote URL" '! git -C "$T/w2" config remote.origin.url | grep -q secret'

# 11. The lease: someone pushes to the branch between kernelbot's look at it
# and its push. The server refuses kernelbot's stale update; nothing is lost.
start_fake githttp --root "$T" --log "$T/race.log" --password secret-token \
	--race refs/heads/kernelbot/models-conv || { echo "no race server"; exit 1; }
git -C "$T/w2" remote set-url origin "http://127.0.0.1:$PORT/r.git"
printf 'int k9;\n' >"$T/res/kernels/models-mlp/kernel.c"
"$KERNELBOT" publish --config "$T/kb.yml" --forge github --repo acme/models \
	--git-dir "$T/w2" --base "$base" --base-branch main --module models/conv.py \
	--files "$T/res" --title t --body-file "$T/body.md" --json >"$T/out.json" 2>"$T/err"
st=$?
human=$(q "$T/race.log" "[x for x in r if x.get('raced')][0]['raced']")
check "raced push: outcome moved, exit 0" '[ $st -eq 0 ] && [ "$($PY -c "import json; print(json.load(open(\"$T/out.json\"))[\"outcome\"])")" = moved ]' || cat "$T/err"
check "raced push: the other commit stays on the branch" '[ "$(git -C "$T/r.git" rev-parse kernelbot/models-conv)" = "$human" ]'
check "raced push: said so, naming the other pusher" 'grep -q "was not updated: its tip is by Hu Man <hu@example.com>" "$T/err"' || cat "$T/err"
git -C "$T/w2" remote set-url origin "http://127.0.0.1:$GITPORT/r.git"
printf 'wrong-token\n' >"$T/token"
"$KERNELBOT" publish --config "$T/kb.yml" --forge github --repo acme/models \
	--git-dir "$T/w2" --base "$base" --base-branch main --module models/pool.py \
	--files "$T/res" --title t --body-file "$T/body.md" >"$T/o" 2>"$T/err"
check "a refused token is a clear push error, tried once" '[ $? -eq 1 ] && grep -q "push: connect for push: the remote refused the credentials" "$T/err" && q "$T/git.log" "sum(1 for x in r if x[\"auth\"] == \"bad\") == 1"' || cat "$T/err"

done_tests t4020
