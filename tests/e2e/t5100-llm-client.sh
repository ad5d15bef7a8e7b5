#!/bin/sh
# t5100: the LLM client (pipeline/llm/client.c) against the fake LLM server
# (tests/fakes/fakellm.py), through tests/helpers/llm_drive: OpenAI and
# Anthropic wire formats, a 429 retried only after its Retry-After, a
# timeout retried, a 2xx without text counted malformed, a 401 not retried,
# tokens and dollars of every attempt in the store's llm_calls, and the keys
# sent in the auth header only: never in a body, a log line or the store.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t5100
PY=/usr/bin/python3
DRIVE=${KB_BUILD:-$KB_ROOT/build/default}/tests/helpers/llm_drive
[ -x "$DRIVE" ] || { fail "tests/helpers/llm_drive is built" "missing $DRIVE"; t_done; }

OKEY="sk-openai-SECRET-5000-$$"
AKEY="ant-SECRET-5000-$$"
printf '%s\n' "$OKEY" >"$TMP/okey"
cat >"$TMP/script.json" <<'EOF'
[{"match": "rate me", "provider": "openai", "times": 1, "status": 429,
  "headers": {"Retry-After": "2"}},
 {"match": "rate me", "provider": "openai", "reply": "after the wait", "usage": [1000, 500]},
 {"match": "slow me", "times": 1, "delay_s": 4, "reply": "too late", "usage": [1, 1]},
 {"match": "slow me", "reply": "in time", "usage": [10, 20]},
 {"match": "empty me", "raw": "{\"choices\": []}"},
 {"match": "deny me", "status": 401},
 {"match": "", "provider": "anthropic", "reply": "from claude", "usage": [300, 100]},
 {"match": "", "provider": "openai", "reply": "generic", "usage": [5, 5]}]
EOF
rm -f "$TMP/port"
$PY "$KB_ROOT/tests/fakes/fakellm.py" --port-file "$TMP/port" --log "$TMP/llm.log" \
	--script "$TMP/script.json" 2>"$TMP/fake.err" &
t_bg $!
wait_for 10 test -s "$TMP/port" || { fail "fake LLM started" "$(cat "$TMP/fake.err")"; t_done; }
P=$(cat "$TMP/port")

cat >"$TMP/kb.yml" <<EOF
llm:
  backoff_ms: 100
  max_attempts: 3
  models:
    - provider: openai
      base_url: http://127.0.0.1:$P/v1/
      model: fake-gpt
      api_key_file: $TMP/okey
      price_in: 2
      price_out: 10
      timeout_s: 2
    - provider: anthropic
      base_url: http://127.0.0.1:$P
      model: fake-claude
      api_key_env: T5100_ANTHROPIC_KEY
      price_in: 3
      price_out: 15
EOF
mkdir "$TMP/db"
run() { T5100_ANTHROPIC_KEY=$AKEY "$DRIVE" chat "$TMP/kb.yml" "$TMP/db" "$@"; }
field() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# 1. A 429 with Retry-After: 2 on the OpenAI model; the Anthropic one in
# parallel answers at once.
run translate "please rate me" 2 >"$TMP/r1.json" 2>"$TMP/r1.err"
check_eq "both requests answered" "$(field "$TMP/r1.json" '[r["status"] for r in d]')" "['ok', 'ok']"
check_eq "the openai answer came after a retry" \
	"$(field "$TMP/r1.json" '(d[0]["text"], d[0]["attempts"], d[0]["http_status"])')" \
	"('after the wait', 2, 200)"
check_eq "the anthropic answer's text parts" "$(field "$TMP/r1.json" 'd[1]["text"]')" "from claude"
gap=$($PY - "$TMP/llm.log" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if '"openai"' in l]
print("%.1f" % (r[1]["t"] - r[0]["t"]))
EOF
)
check "the retry waited for Retry-After (2 s; got ${gap}s)" $PY -c "import sys; sys.exit(not float('$gap') >= 1.9)"
check_eq "cost: 1000 in at \$2/M + 500 out at \$10/M" "$(field "$TMP/r1.json" '"%.6f" % d[0]["cost"]')" "0.007000"
check_eq "cost: 300 in at \$3/M + 100 out at \$15/M" "$(field "$TMP/r1.json" '"%.6f" % d[1]["cost"]')" "0.002400"

# 2. The wire formats and the keys, as the server saw them.
$PY - "$TMP/llm.log" "$OKEY" "$AKEY" >"$TMP/wire.out" <<'EOF'
import json, sys
log, okey, akey = sys.argv[1:]
rows = [json.loads(l) for l in open(log)]
o = [r for r in rows if r["provider"] == "openai"][0]
a = [r for r in rows if r["provider"] == "anthropic"][0]
print("violations", sum(len(r["violations"]) for r in rows))
print("openai", o["path"], o["auth"] == "Bearer " + okey, o["x_api_key"],
      [m["role"] for m in o["body"]["messages"]])
print("anthropic", a["path"], a["x_api_key"] == akey, a["auth"],
      [m["role"] for m in a["body"]["messages"]], "system" in a["body"])
print("keys in bodies", any(k in r["raw_body"] for r in rows for k in (okey, akey)))
EOF
check_eq "requests follow both APIs" "$(sed -n 1p "$TMP/wire.out")" "violations 0"
check_eq "openai: /v1/chat/completions, Bearer key, system + user messages" \
	"$(sed -n 2p "$TMP/wire.out")" "openai /v1/chat/completions True None ['system', 'user']"
check_eq "anthropic: /v1/messages, x-api-key, top-level system" \
	"$(sed -n 3p "$TMP/wire.out")" "anthropic /v1/messages True None ['user'] True"
check_eq "no key in any request body" "$(sed -n 4p "$TMP/wire.out")" "keys in bodies False"

# 3. A timeout (timeout_s: 2, the server sleeps 4) is retried.
run translate "slow me" 1 >"$TMP/r3.json" 2>"$TMP/r3.err"
check_eq "a timed-out request is retried and answered" \
	"$(field "$TMP/r3.json" '(d[0]["status"], d[0]["text"], d[0]["attempts"])')" "('ok', 'in time', 2)"
check_match "the timeout is recorded" "$(grep 'slow' "$TMP/r3.err"; grep -c 'status=timeout' "$TMP/r3.err")" '^1$'

# 4. A 2xx without text is malformed (not retried); a 401 is not retried.
run translate "empty me" 1 >"$TMP/r4.json" 2>/dev/null
check_eq "a reply without choices is malformed" \
	"$(field "$TMP/r4.json" '(d[0]["status"], d[0]["attempts"])')" "('malformed', 1)"
run translate "deny me" 1 >"$TMP/r5.json" 2>/dev/null
check_eq "a 401 is an http_error, tried once" \
	"$(field "$TMP/r5.json" '(d[0]["status"], d[0]["http_status"], d[0]["attempts"])')" "('http_error', 401, 1)"

# 5. A missing key: nothing sent, a clear error naming the variable.
n_before=$(wc -l <"$TMP/llm.log")
"$DRIVE" chat "$TMP/kb.yml" "$TMP/db" translate "anything" 2 >"$TMP/r6.json" 2>/dev/null
check_eq "no key, no request" \
	"$(field "$TMP/r6.json" '(d[1]["status"], d[1]["error"])')" "('no_key', 'api_key_env T5100_ANTHROPIC_KEY is not set')"
check_eq "only the model with a key was asked" "$(($(wc -l <"$TMP/llm.log") - n_before))" 1

# 6. The store has every attempt, with tokens and costs that add up.
DB="$TMP/db/kernelbot.db"
check_eq "llm_calls has one row per attempt" "$(sqlite3 "$DB" 'SELECT count(*) FROM llm_calls')" \
	"$(wc -l <"$TMP/llm.log")"
check_eq "the 429 attempt and its retry" \
	"$(sqlite3 "$DB" "SELECT group_concat(status || '/' || http_status || '/' || attempt, ' ') FROM llm_calls WHERE model = 'fake-gpt' AND id <= 3")" \
	"http_error/429/1 ok/200/2"
check_eq "costs in the store" "$(sqlite3 "$DB" "SELECT group_concat(printf('%.6f', cost), ' ') FROM llm_calls WHERE id <= 3")" \
	"0.000000 0.002400 0.007000"
check_eq "prompt hashes, not prompts" "$(sqlite3 "$DB" "SELECT count(*) FROM llm_calls WHERE length(prompt_sha) = 64")" \
	"$(sqlite3 "$DB" 'SELECT count(*) FROM llm_calls')"

# 7. Keys appear nowhere but the auth headers.
check "no key in the driver's logs" sh -c "! grep -q -e '$OKEY' -e '$AKEY' '$TMP'/r*.err"
check "no key in the store" sh -c "! sqlite3 '$DB' .dump | grep -q -e '$OKEY' -e '$AKEY'"
check "no key in the replies" sh -c "! grep -q -e '$OKEY' -e '$AKEY' '$TMP'/r*.json"

# 8. Config errors name the line.
cat >"$TMP/bad.yml" <<'EOF'
llm:
  models:
    - provider: openai
      model: m
      price_inn: 2
EOF
"$DRIVE" chat "$TMP/bad.yml" "$TMP/db" translate x 1 >/dev/null 2>"$TMP/bad.err"
check_match "an unknown model key is refused with its line" "$(cat "$TMP/bad.err")" \
	'bad.yml:5: llm.models\[0\].price_inn: unknown key'
printf 'budgets:\n  dollars: -1\n' >"$TMP/bad2.yml"
"$DRIVE" chat "$TMP/bad2.yml" "$TMP/db" translate x 1 >/dev/null 2>"$TMP/bad2.err"
check_match "a negative budget is refused with its line" "$(cat "$TMP/bad2.err")" \
	'bad2.yml:2: budgets.dollars: must be a number from 0'
t_done
