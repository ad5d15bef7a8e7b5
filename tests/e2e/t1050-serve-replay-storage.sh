#!/bin/sh
# t1050: replays do not grow the store (attack F8). A captured signed
# push replayed under 300 fresh delivery ids, the same id sent again, and
# a comment command replayed: every one is answered 200 duplicate and
# none adds a row to `deliveries`; each is counted on the delivery it
# repeats (deliveries.duplicates, last_duplicate), and the database file
# does not grow with them, nor the log (at most 10 duplicate lines a
# second, the rest counted). A new commit and a new comment are still new.
# The sixth intake attack's F2: a signed ping (ignored) replayed under
# new ids is one row, under any number of event names kernelbot does not
# know one more,
# and a signed push for a repository not allowed (403), replayed, is
# logged at most 10 lines a second.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1050
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
URL="http://127.0.0.1:$KB_PORT/webhooks/github"
DB="$TMP/data/kernelbot.db"

db() {
	sqlite3 -cmd ".timeout 5000" "$DB" "$1"
}

# send EVENT FILE DELIVERY
send() {
	http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: $1" \
	    -H "X-GitHub-Delivery: $3" -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$2")" \
	    --data-binary "@$2"
}

# replays EVENT FILE PREFIX N: N replays under new ids, 8 at a time;
# prints how many were answered 200 and how many {"status":"duplicate"}.
replays() {
	sig=$(sig_github "$GH_SECRET" "$2")
	seq 1 "$4" | xargs -P 8 -I{} curl -sS --max-time 10 -o - -w 'code=%{http_code}\n' \
	    -X POST -H "Content-Type: application/json" -H "X-GitHub-Event: $1" \
	    -H "X-GitHub-Delivery: $3-{}" -H "X-Hub-Signature-256: $sig" \
	    --data-binary "@$2" "$URL" >"$TMP/replies"
	echo "$(grep -c '^code=200$' "$TMP/replies") $(grep -c '^{"status":"duplicate"}$' "$TMP/replies")"
}

send push "$FX/github-push.json" orig-push
check_eq "the push is accepted" "$HTTP_CODE" 202
send issue_comment "$FX/github-issue-comment.json" orig-comment
check_eq "the command is accepted" "$HTTP_CODE" 202
rows0=$(db 'SELECT count(*) FROM deliveries')
db 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
pages0=$(db 'PRAGMA page_count')

check_eq "300 push replays under new ids: each 200 duplicate" \
    "$(replays push "$FX/github-push.json" r 300)" "300 300"
check_eq "100 comment replays under new ids: each 200 duplicate" \
    "$(replays issue_comment "$FX/github-issue-comment.json" c 100)" "100 100"
sleep 1	# a new second for the log's budget
send push "$FX/github-push.json" orig-push
check_eq "the same id again: duplicate" "$HTTP_CODE $HTTP_BODY" '200 {"status":"duplicate"}'
# the most duplicate lines in one second of the log (ts=YYYY-MM-DDTHH:MM:SS)
most=$(grep 'outcome=duplicate id=' "$TMP/serve.log" | cut -c4-22 | sort | uniq -c |
    sort -rn | awk 'NR == 1 { print $1 }')
check "nor does the log: at most 10 duplicate lines a second (most: $most)" \
    test "${most:-0}" -le 10
check "fewer lines than replays" test "$(grep -c 'outcome=duplicate id=' "$TMP/serve.log")" -lt 401
check_match "the rest are counted" "$(cat "$TMP/serve.log")" \
    'msg="webhook log lines suppressed" count=[0-9]+ outcome=duplicate'

check_eq "no row added by any replay" "$(db 'SELECT count(*) FROM deliveries')" "$rows0"
check_eq "the push's replays counted on it" \
    "$(db "SELECT duplicates FROM deliveries WHERE delivery_id = 'orig-push'")" 301
check_eq "the comment's replays counted on it" \
    "$(db "SELECT duplicates FROM deliveries WHERE delivery_id = 'orig-comment'")" 100
check_eq "with the time of the last" \
    "$(db "SELECT last_duplicate >= received FROM deliveries WHERE delivery_id = 'orig-push'")" 1
send ping "$FX/github-ping.json" orig-ping
check_eq "the ping is ignored" "$HTTP_CODE" 200
check_eq "200 ping replays under new ids: each 200 duplicate" \
    "$(replays ping "$FX/github-ping.json" p 200)" "200 200"
u=0
for ev in no_such_event watch star; do
	u=$((u + 1))
	set -- $(replays $ev "$FX/github-ping.json" u$u 50)
	check_eq "50 under an event kernelbot does not know ($ev): 200 each" "$1" 50
done
check_eq "the ping and its replays under new ids and names: two rows" \
    "$(db 'SELECT count(*) FROM deliveries')" "$((rows0 + 2))"
check_eq "the ping's replays counted on it" \
    "$(db "SELECT duplicates FROM deliveries WHERE delivery_id = 'orig-ping'")" 200
check_eq "the other names' on the first of them" \
    "$(db "SELECT event, duplicates FROM deliveries WHERE delivery_id LIKE 'u1-%'")" \
    "no_such_event|149"
sleep 1
replays push "$FX/github-push-disallowed.json" f 200 >/dev/null
check_eq "a push for a repository not allowed: 403, each time" \
    "$(grep -c '^code=403$' "$TMP/replies")" 200
most=$(grep 'status=403 ' "$TMP/serve.log" | cut -c4-22 | sort | uniq -c |
    sort -rn | awk 'NR == 1 { print $1 }')
check "logged at most 10 lines a second (most: $most)" test "${most:-0}" -le 10
check_match "the rest counted" "$(cat "$TMP/serve.log")" \
    'msg="webhook log lines suppressed" count=[0-9]+$'
check_eq "one job, one command" "$(db 'SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM commands)')" "1|1"
db 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
check_eq "the database did not grow" "$(db 'PRAGMA page_count')" "$pages0"

# what is new is still new, and gets its row
sed 's/"id": 1593822101/"id": 1593822102/' "$FX/github-issue-comment.json" >"$TMP/c2.json"
send issue_comment "$TMP/c2.json" new-comment
check_eq "another comment: 202" "$HTTP_CODE" 202
check_eq "its delivery has a row" "$(db "SELECT count(*), max(duplicates) FROM deliveries WHERE delivery_id = 'new-comment'")" "1|0"
kb_serve_stop TERM
check_eq "serve stops cleanly" "$KB_STATUS" 0
t_done
