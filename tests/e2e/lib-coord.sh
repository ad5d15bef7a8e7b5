# lib-coord.sh: what the coordinator's end-to-end tests (t70NN) share, on
# top of lib.sh: a model repository pushed to a bare "forge" repository,
# a serve configuration whose local runner runs the optimize stand-in
# (tests/fixtures/coord/optimize-standin.py), signed GitHub deliveries,
# and waits on the store. Source lib.sh and call t_init first.
PY=/usr/bin/python3
STANDIN="$KB_ROOT/tests/fixtures/coord/optimize-standin.py"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com \
	GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
export STANDIN_LOG="$TMP/standin.log"

# coord_repo: $TMP/w (work tree, branch main) pushed to $TMP/origin.git,
# with models/fast.py (improved by the stand-in) and models/same.py
# (not faster). Sets SHA0 (the empty-tree parent is the zero id).
coord_repo() {
	git init -q --bare "$TMP/origin.git"
	git init -q -b main "$TMP/w"
	mkdir -p "$TMP/w/models"
	module "$TMP/w/models/fast.py" ""
	module "$TMP/w/models/same.py" "# standin: not_faster"
	git -C "$TMP/w" add -A && git -C "$TMP/w" commit -q -m "two modules"
	git -C "$TMP/w" remote add origin "file://$TMP/origin.git"
	git -C "$TMP/w" push -q origin main
	SHA0=$(git -C "$TMP/w" rev-parse HEAD)
}

# module FILE EXTRA: a KernelBench-style module file with a line EXTRA.
module() {
	printf 'import torch\nfrom torch import nn\n%s\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\ndef get_inputs():\n    return [torch.randn(4, 4)]\ndef get_init_inputs():\n    return []\n' "$2" >"$1"
}

# coord_commit MSG: commit everything in $TMP/w, push; sets SHA.
coord_commit() {
	git -C "$TMP/w" add -A && git -C "$TMP/w" commit -q -m "$1"
	git -C "$TMP/w" push -q origin main
	SHA=$(git -C "$TMP/w" rev-parse HEAD)
}

# coord_config FILE FORGE_YAML [MORE_YAML]: serve on $KB_PORT, data in
# $TMP/data, GitHub webhooks with $GH_SECRET, forges.github as given (an
# indented block; its pushes may name file:// clone URLs), one local CPU runner running the stand-in (the real
# `kernelbot optimize` when STANDIN is empty), short leases. MORE_YAML
# follows the runners: keys (indent it to add to them).
coord_config() {
	: "${KB_PORT:=$(free_port)}"
	GH_SECRET="It's a Secret to Everybody"
	printf '%s\n' "$GH_SECRET" >"$TMP/github.secret"
	cat >"$1" <<EOC
listen: 127.0.0.1:$KB_PORT
data_dir: $TMP/data
log_level: debug
allow_repos: [acme/*]
forges:
  github:
    webhook_secret_file: $TMP/github.secret
$2
    local_clone_urls: true
runners:
  local: ${LOCAL_RUNNERS:-1}
  lease_s: ${LEASE_S:-3}
  poll_ms: 100
$([ -n "$STANDIN" ] && printf '  command: [%s, %s]' "$PY" "$STANDIN")
${3:-}
EOC
}

# local_forge: the forges.github block for the local forge in $TMP/forge,
# pushing to $TMP/origin.git; alice may write, bob only read.
local_forge() {
	printf '    driver: local\n    out_dir: %s\n    bare_repo: %s\n    permissions: {alice: write, bob: read}\n' \
		"$TMP/forge" "$TMP/origin.git"
}

# gh_send EVENT FILE: a signed GitHub delivery with a fresh id.
GH_N=0
gh_send() {
	GH_N=$((GH_N + 1))
	http POST "http://127.0.0.1:$KB_PORT/webhooks/github" \
	    -H "Content-Type: application/json" -H "X-GitHub-Event: $1" \
	    -H "X-GitHub-Delivery: coord-$GH_N-$$" \
	    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$2")" \
	    --data-binary "@$2"
}

# gh_push BEFORE AFTER: a push of main from BEFORE to AFTER.
gh_push() {
	$PY - "$1" "$2" "file://$TMP/origin.git" >"$TMP/push.json" <<'PYEOF'
import json, sys
print(json.dumps({"ref": "refs/heads/main", "before": sys.argv[1], "after": sys.argv[2],
    "repository": {"full_name": "acme/models", "clone_url": sys.argv[3],
                   "default_branch": "main"},
    "pusher": {"name": "dev"}}))
PYEOF
	gh_send push "$TMP/push.json"
}

# gh_comment PR ACTOR COMMENT_ID BODY: a new comment on pull request PR.
gh_comment() {
	$PY - "$@" >"$TMP/comment.json" <<'PYEOF'
import json, sys
pr, actor, cid, body = sys.argv[1:5]
print(json.dumps({"action": "created",
    "issue": {"number": int(pr), "pull_request": {"url": "x"}},
    "comment": {"id": int(cid), "body": body, "user": {"login": actor},
                "author_association": "OWNER"},
    "repository": {"full_name": "acme/models"}}))
PYEOF
	gh_send issue_comment "$TMP/comment.json"
}

# db SQL: the store, waiting out the daemon's write locks (busy timeout).
db() {
	sqlite3 -cmd ".timeout 10000" "$TMP/data/kernelbot.db" "$1"
}

# wait_sql TIMEOUT_S SQL WANT: until SQL prints WANT.
sql_is() {
	[ "$(db "$1" 2>/dev/null)" = "$2" ]
}
wait_sql() {
	wait_for "$1" sql_is "$2" "$3"
}

# fake_github: tests/fakes/github.py on a free port, logging to
# $TMP/github.log; alice may write, bob may read. Sets GH_API.
fake_github() {
	rm -f "$TMP/gh.port"
	$PY "$KB_ROOT/tests/fakes/github.py" --port-file "$TMP/gh.port" \
	    --log "$TMP/github.log" --token secret-token \
	    --users '{"alice": "write", "bob": "read"}' "$@" 2>>"$TMP/github.stderr" &
	t_bg $!
	wait_for 10 test -s "$TMP/gh.port" || return 1
	GH_API="http://127.0.0.1:$(cat "$TMP/gh.port")"
	printf 'secret-token\n' >"$TMP/gh.token"
}

# github_forge: the forges.github block for the fake GitHub.
github_forge() {
	printf '    api_url: %s\n    token_file: %s\n    write_interval_ms: 0\n    backoff_ms: 10\n' \
		"$GH_API" "$TMP/gh.token"
}

# ghq PYTHON-EXPR: evaluate EXPR over the fake's log (r: the requests;
# n(method, path_regex) counts; last(method, path_regex)); prints it.
ghq() {
	$PY - "$TMP/github.log" "$1" <<'PYEOF'
import json, re, sys
r = [json.loads(l) for l in open(sys.argv[1])]
def m(x, method, rx):
    return x["method"] == method and re.fullmatch(rx, x["path"])
def n(method, rx):
    return sum(1 for x in r if m(x, method, rx))
def last(method, rx):
    return [x for x in r if m(x, method, rx)][-1]
print(eval(sys.argv[2]))
PYEOF
}

# The fake GitHub's repository path.
R='/repos/acme/models'

# comment USER BODY: the user's comment on PR 1, made on the fake GitHub
# (so it can be reacted to), then delivered as a webhook. Sets CID.
comment() {
	CID=$(curl -sS -H 'Authorization: Bearer secret-token' -H 'Accept: application/vnd.github+json' \
	    -H 'X-GitHub-Api-Version: 2022-11-28' -H 'Content-Type: application/json' \
	    -d "$($PY -c 'import json,sys; print(json.dumps({"body": sys.argv[1]}))' "$2")" \
	    "$GH_API$R/issues/1/comments" | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	gh_comment 1 "$1" "$CID" "$2"
}

# bot_comment MARKER: the last body of the bot's comments holding MARKER
# (waiting up to 60 s for one), e.g. "kernelbot:reply:CID ".
bot_comment_is_there() {
	ghq "[x for x in r if x['method'] in ('POST', 'PATCH') and 'comments' in x['path'] and '$1' in (x['body'] or {}).get('body', '')]" | grep -q body
}
bot_comment() {
	wait_for 60 bot_comment_is_there "$1"
	ghq "[x['body']['body'] for x in r if x['method'] in ('POST', 'PATCH') and 'comments' in x['path'] and '$1' in (x['body'] or {}).get('body', '')][-1]"
}

# answer CID: the bot's answer to comment CID, once it is there.
answer() {
	bot_comment "kernelbot:reply:$1 "
}

# reactions CID: how many reactions the bot made to comment CID.
reactions() {
	ghq "n('POST', '$R/issues/comments/$1/reactions')"
}
