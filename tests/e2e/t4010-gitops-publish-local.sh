#!/bin/sh
# kernelbot publish on the local forge: one branch, one PR, one comment per
# module, updated in place; the same result twice changes nothing; a human's
# commit on the branch is never overwritten; the PR files read as a PR.
set -u
. "$KB_ROOT/tests/e2e/lib-gitops.sh"

git init -q -b main "$T/w"
mkdir -p "$T/w/models"
printf 'class Model(nn.Module):\n    pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n' >"$T/w/models/mlp.py"
git -C "$T/w" add -A && git -C "$T/w" commit -q -m init
base=$(git -C "$T/w" rev-parse HEAD)
cat >"$T/kb.yml" <<YML
forges:
  dry:
    driver: local
    out_dir: $T/out
    bare_repo: $T/bare.git
    permissions: {alice: write, root: admin}
YML
mkdir -p "$T/res/kernels/models-mlp"
printf 'int kernelbot_forward(void) { return 0; }\n' >"$T/res/kernels/models-mlp/kernel.c"
printf '# REPORT\n' >"$T/res/kernels/models-mlp/REPORT.md"
printf '## Speedup\n\n| shape | eager | kernel |\n|---|---|---|\n| 8x8 | 1.0 | 2.0x |\n' >"$T/body.md"
printf 'results v1\n' >"$T/comment.md"

publish() {
	"$KERNELBOT" publish --config "$T/kb.yml" --forge dry --repo acme/models \
		--git-dir "$T/w" --base "$base" --base-branch main \
		--module models/mlp.py --files "$T/res" \
		--title "kernelbot: 2.0x faster models/mlp.py" --body-file "$T/body.md" \
		--comment-file "$T/comment.md" --label performance --reviewer alice \
		--status success --context kernelbot/models-mlp --description "2.0x" \
		--json "$@" >"$T/out.json" 2>"$T/err"
}
field() { $PY -c "import json,sys; d=json.load(open('$T/out.json')); print($1)"; }

publish; st=$?
check "first publish succeeds" '[ $st -eq 0 ]' || cat "$T/err"
check "branch created" '[ "$(field "d[\"outcome\"]")" = created ]'
check "PR created" '[ "$(field "d[\"pr\"][\"result\"]")" = created ]'
check "comment created" '[ "$(field "d[\"comment\"][\"result\"]")" = created ]'
c1=$(field 'd["commit"]')
check "branch pushed to the bare repository" \
	'[ "$(git -C "$T/bare.git" rev-parse kernelbot/models-mlp)" = "$c1" ]'
check "one commit on the base" \
	'[ "$(git -C "$T/bare.git" rev-parse kernelbot/models-mlp^)" = "$base" ]'
check "bot identity and trailer" \
	'git -C "$T/bare.git" log -1 --format="%cn <%ce>%n%B" kernelbot/models-mlp | grep -q "^Kernelbot-Module: models-mlp$"'
check "PR record and page written" '[ -f "$T/out/prs/models-mlp.json" ] && [ -f "$T/out/prs/models-mlp.md" ]'
if $PY - "$T/out/prs/models-mlp.json" "$base" "$c1" <<'PY'
import json, sys
pr = json.load(open(sys.argv[1]))
assert pr["number"] == 1 and pr["state"] == "open", pr
assert pr["head"] == "kernelbot/models-mlp" and pr["base"] == "main"
assert pr["head_sha"] == sys.argv[3] and pr["base_sha"] == sys.argv[2]
assert pr["title"].startswith("kernelbot: 2.0x")
assert "| 8x8 |" in pr["body"]
paths = sorted(f["path"] for f in pr["files"])
assert paths == ["kernels/models-mlp/REPORT.md", "kernels/models-mlp/kernel.c"], paths
assert pr["files"][1]["content"].startswith("int kernelbot_forward") or pr["files"][0]["content"].startswith("int kernelbot_forward")
assert pr["labels"] == ["performance"] and pr["reviewers"] == ["alice"]
assert len(pr["comments"]) == 1
assert pr["comments"][0]["body"].startswith("<!-- kernelbot:results:models-mlp -->\n")
st = pr["statuses"]
assert len(st) == 1 and st[0]["state"] == "success" and st[0]["sha"] == sys.argv[2], st
PY
then ok "PR record: title, body, files, labels, status, comment"; else no "PR record"; cat "$T/out/prs/models-mlp.json"; fi
check "PR page reads as a PR" 'grep -q "^# kernelbot: 2.0x faster" "$T/out/prs/models-mlp.md" && grep -q "kernels/models-mlp/kernel.c" "$T/out/prs/models-mlp.md" && grep -q "success" "$T/out/prs/models-mlp.md"'

# The same result again: nothing changes anywhere.
cp "$T/out/prs/models-mlp.json" "$T/before.json"
publish; st=$?
check "republish succeeds" '[ $st -eq 0 ]' || cat "$T/err"
check "same result: branch unchanged" '[ "$(field "d[\"outcome\"]")" = unchanged ] && [ "$(field "d[\"commit\"]")" = "$c1" ]'
check "same result: PR unchanged" '[ "$(field "d[\"pr\"][\"result\"]")" = unchanged ]'
check "same result: comment unchanged" '[ "$(field "d[\"comment\"][\"result\"]")" = unchanged ]'

# A new result: the same branch, PR and comment, updated.
printf 'int kernelbot_forward(void) { return 1; }\n' >"$T/res/kernels/models-mlp/kernel.c"
printf 'results v2\n' >"$T/comment.md"
sed 's/2.0x/3.0x/' "$T/body.md" >"$T/b2" && mv "$T/b2" "$T/body.md"
publish; st=$?
check "new result succeeds" '[ $st -eq 0 ]' || cat "$T/err"
check "new result: branch updated" '[ "$(field "d[\"outcome\"]")" = updated ]'
check "new result: PR updated, same number" '[ "$(field "d[\"pr\"][\"result\"]")" = updated ] && [ "$(field "d[\"pr\"][\"number\"]")" = 1 ]'
check "new result: comment updated, same id" '[ "$(field "d[\"comment\"][\"result\"]")" = updated ] && [ "$(field "d[\"comment\"][\"id\"]")" = 1001 ]'
c2=$(field 'd["commit"]')
check "still one commit on the base" \
	'[ "$(git -C "$T/bare.git" rev-parse kernelbot/models-mlp^)" = "$base" ] && [ "$c2" != "$c1" ]'
check "still one PR, one comment" '[ "$(ls "$T/out/prs" | wc -l)" -eq 2 ] && [ "$($PY -c "import json; print(len(json.load(open(\"$T/out/prs/models-mlp.json\"))[\"comments\"]))")" = 1 ]'
check "new content in the PR" 'grep -q "results v2" "$T/out/prs/models-mlp.md" && grep -q "return 1" "$T/out/prs/models-mlp.json"'

# A human pushes to the bot's branch: the bot must not overwrite it.
git clone -q "$T/bare.git" "$T/h" 2>/dev/null
git -C "$T/h" checkout -q kernelbot/models-mlp
printf '// tuned by hand\n' >>"$T/h/kernels/models-mlp/kernel.c"
git -C "$T/h" commit -q -am "hand-tune the kernel"
git -C "$T/h" push -q origin kernelbot/models-mlp 2>/dev/null
human=$(git -C "$T/h" rev-parse HEAD)
printf 'results v3\n' >"$T/comment.md"
printf 'int kernelbot_forward(void) { return 3; }\n' >"$T/res/kernels/models-mlp/kernel.c"
publish; st=$?
check "moved branch: exit 0, outcome moved" '[ $st -eq 0 ] && [ "$(field "d[\"outcome\"]")" = moved ]' || cat "$T/err"
check "moved branch: the human's commit stays" '[ "$(git -C "$T/bare.git" rev-parse kernelbot/models-mlp)" = "$human" ]'
check "moved branch: said so on stderr" 'grep -q "was not updated: its tip is by dev <dev@example.com>" "$T/err"'
check "moved branch: said so in the PR comment, with the results" \
	'grep -q "kernelbot did not update" "$T/out/prs/models-mlp.md" && grep -q "results v3" "$T/out/prs/models-mlp.md" && grep -q "hand-tune the kernel" "$T/out/prs/models-mlp.md"'

# A second module gets its own branch and PR number.
mkdir -p "$T/res2/kernels/models-attn"
printf 'x\n' >"$T/res2/kernels/models-attn/kernel.c"
"$KERNELBOT" publish --config "$T/kb.yml" --forge dry --repo acme/models \
	--git-dir "$T/w" --base "$base" --base-branch main --module models/attn.py \
	--files "$T/res2" --title t --body-file "$T/body.md" --prefix bots/kb- >"$T/o2" 2>"$T/err"
check "second module: own branch and PR #2" 'grep -q "^created bots/kb-models-attn .* pr #2 created" "$T/o2"' || cat "$T/o2" "$T/err"

# The single forge calls.
check "permission from the config" '[ "$("$KERNELBOT" forge --config "$T/kb.yml" --forge dry --repo acme/models permission alice)" = write ]'
check "unknown user has none" '[ "$("$KERNELBOT" forge --config "$T/kb.yml" --forge dry --repo acme/models permission mallory)" = none ]'
"$KERNELBOT" forge --config "$T/kb.yml" --forge dry --repo acme/models react 1 1001 eyes
"$KERNELBOT" forge --config "$T/kb.yml" --forge dry --repo acme/models react 1 1001 eyes
check "reaction recorded once" '$PY -c "import json,sys; sys.exit(json.load(open(\"$T/out/prs/models-mlp.json\"))[\"comments\"][0][\"reactions\"] != [\"eyes\"])"'
"$KERNELBOT" forge --config "$T/kb.yml" --forge dry --repo acme/models react 1 999 eyes 2>"$T/err"
check "react on a missing comment fails" '[ $? -eq 1 ] && grep -q "no comment 999" "$T/err"'

# Bad input.
"$KERNELBOT" publish --config "$T/kb.yml" --forge nope --repo acme/models \
	--git-dir "$T/w" --base "$base" --base-branch main --module m.py \
	--files "$T/res" --title t --body-file "$T/body.md" 2>"$T/err"
check "unknown forge name" '[ $? -eq 1 ] && grep -q "no forges.nope mapping" "$T/err"'
printf 'forges:\n  dry:\n    driver: local\n    bare_repo: %s/b2.git\n' "$T" >"$T/bad.yml"
"$KERNELBOT" forge --config "$T/bad.yml" --forge dry --repo acme/models permission x 2>"$T/err"
check "missing out_dir" '[ $? -eq 1 ] && grep -q "forges.local.out_dir: required" "$T/err"'
"$KERNELBOT" publish --config "$T/kb.yml" --forge dry --repo acme/models \
	--git-dir "$T/w" --base "$base" --base-branch main --module models/mlp.py \
	--files "$T/res" --title t --body-file "$T/body.md" --status maybe --context c 2>"$T/err"
check "bad status state is a usage error" '[ $? -eq 2 ]'

done_tests t4010
