#!/bin/sh
# t7020: replays (issue 23). A captured, correctly signed push body sent
# again under new delivery ids is the same push: each replay is answered
# 200 {"status":"duplicate"} and no job is made, sequentially, twenty at
# once, and after a restart. A captured /kernelbot comment replayed the
# same way is obeyed once: one answer, one reaction, one job. A replay
# adds no row to the store: it is counted on the delivery it repeats.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7020
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
fake_github --git-dir "$TMP/origin.git" || { echo "fake GitHub did not start"; t_done; }
coord_config "$TMP/kb.yml" "$(github_forge)"
kb_serve_start "$TMP/kb.yml" || t_done
URL="http://127.0.0.1:$KB_PORT/webhooks/github"

# replay EVENT FILE ID: FILE, signed as captured, under delivery id ID.
replay() {
	http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: $1" \
	    -H "X-GitHub-Delivery: $3" \
	    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$2")" \
	    --data-binary "@$2"
}

# replays EVENT FILE PREFIX N: N replays in a row; prints how many were
# answered 200 {"status":"duplicate"}.
replays() {
	k=0 i=0
	while [ "$i" -lt "$4" ]; do
		i=$((i + 1))
		replay "$1" "$2" "$3-$i"
		[ "$HTTP_CODE $HTTP_BODY" = '200 {"status":"duplicate"}' ] && k=$((k + 1))
	done
	echo "$k"
}

gh_push 0000000000000000000000000000000000000000 "$SHA0"
check_eq "the push is accepted" "$HTTP_CODE $HTTP_BODY" '202 {"status":"accepted","job":1}'
cp "$TMP/push.json" "$TMP/captured-push.json"
check_eq "20 replays under new ids: each 200 duplicate" \
    "$(replays push "$TMP/captured-push.json" replay 20)" 20

# twenty more at once, racing each other and the first job's claim
SIG=$(sig_github "$GH_SECRET" "$TMP/captured-push.json")
i=0
while [ "$i" -lt 20 ]; do
	i=$((i + 1))
	curl -sS --max-time 10 -o "$TMP/burst-body.$i" -w '%{http_code}\n' -X POST \
	    -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	    -H "X-GitHub-Delivery: burst-$i" -H "X-Hub-Signature-256: $SIG" \
	    --data-binary "@$TMP/captured-push.json" "$URL" >"$TMP/burst-code.$i" &
	t_bg $!
done
wait_for 20 sh -c "[ \$(cat '$TMP'/burst-code.* 2>/dev/null | grep -c '^200$') -ge 20 ]"
check_eq "20 concurrent replays: each 200" "$(cat "$TMP"/burst-code.* | grep -c '^200$')" 20
check_eq "20 concurrent replays: each a duplicate" \
    "$(cat "$TMP"/burst-body.* | grep -c '^{"status":"duplicate"}$')" 20

check_eq "one job for the push" "$(db 'SELECT count(*) FROM jobs')" 1
check_eq "no row per replay: one delivery" "$(db 'SELECT count(*) FROM deliveries')" 1
check_eq "every replay counted on the push it repeats" \
    "$(db 'SELECT duplicates FROM deliveries WHERE id = 1')" 40
check "the job runs to the end" wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "one PR" "$(ghq "n('POST', '$R/pulls')")" 1
check_eq "one queued status per module, not one per replay" \
    "$(ghq "sum(1 for x in r if x['method'] == 'POST' and '/statuses/' in x['path'] and x['body']['description'].startswith('queued'))")" 2
check_match "the log says duplicate, with the replay's id" \
    "$(grep 'delivery=replay-1 ' "$TMP/serve.log")" 'status=200 outcome=duplicate'

# the same after a restart: the keys are in the store
kb_serve_stop TERM
kb_serve_start "$TMP/kb.yml" || t_done
check_eq "after a restart, a replay is still a duplicate" \
    "$(replays push "$TMP/captured-push.json" restarted 1)" 1
check_eq "still one job" "$(db 'SELECT count(*) FROM jobs')" 1
# a new commit on the branch is no replay
module "$TMP/w/models/fast.py" "# v2"
coord_commit "v2"
gh_push "$SHA0" "$SHA"
check_eq "a push of another commit is accepted" "$HTTP_CODE $HTTP_BODY" '202 {"status":"accepted","job":2}'
check "its job runs to the end" wait_sql 60 "SELECT state FROM jobs WHERE id = 2" done

# --- a comment command replayed: obeyed once ---
comment alice "/kernelbot retry"
check_eq "the command is accepted" "$HTTP_CODE" 202
cp "$TMP/comment.json" "$TMP/captured-comment.json"
check_eq "10 replays of the comment: each 200 duplicate" \
    "$(replays issue_comment "$TMP/captured-comment.json" creplay 10)" 10
a=$(answer "$CID")
check_match "the command is answered" "$a" "kernelbot:reply:$CID "
check "its job runs to the end" wait_sql 60 "SELECT count(*) FROM jobs WHERE trigger = 'retry' AND state = 'done'" 1
check_eq "one command recorded for the comment" \
    "$(db "SELECT count(*) FROM commands WHERE comment_id = $CID")" 1
check_eq "one job made by it" "$(db "SELECT count(*) FROM jobs WHERE trigger = 'retry'")" 1
check_eq "one reaction" "$(reactions "$CID")" 1
check_eq "one answer" \
    "$(ghq "sum(1 for x in r if x['method'] == 'POST' and 'kernelbot:reply:$CID ' in (x['body'] or {}).get('body', ''))")" 1
kb_serve_stop TERM
t_done
