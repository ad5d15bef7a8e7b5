#!/bin/sh
# kernelbot serve checks every section of its configuration before it
# listens: a mistake in llm, budgets, profile, sandbox, runners, schedule,
# a forge's client or its credentials, allow_repos or a number too large
# exits 2 with FILE:LINE: KEY: message, and no port is ever bound. A FIFO
# as a secret is refused at once, not waited on. optimize --config says
# the same about the same file. A valid file still serves.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1030

PORT=$(free_port)
SECRET="0123456789abcdef-webhook"
printf '%s\n' "$SECRET" >"$TMP/gh.secret"
printf 'ghp_test_token_0123456789\n' >"$TMP/gh.token"
mkfifo "$TMP/fifo"

# cfg NAME YAML: $TMP/NAME.yml, a config on $PORT with YAML appended; the
# intake has a GitHub secret; the coordinator is on with no local runner.
cfg() {
	cat >"$TMP/$1.yml" <<EOC
listen: 127.0.0.1:$PORT
data_dir: $TMP/data
log_level: debug
allow_repos: [acme/*]
$2
EOC
}

# refused NAME PATTERN: serve on $TMP/NAME.yml exits 2 within 10 s with
# PATTERN, never binding $PORT nor logging "listening".
refused() {
	timeout 10 "$KERNELBOT" serve --config "$TMP/$1.yml" >"$TMP/$1.out" 2>&1 &
	pid=$!
	t_bg "$pid"
	bound=no
	while kill -0 "$pid" 2>/dev/null; do
		port_open "$PORT" 2>/dev/null && bound=yes
		sleep 0.05
	done
	wait "$pid"
	st=$?
	check_eq "$1: exit 2" "$st" 2
	check_eq "$1: the port was never bound" "$bound" no
	check "$1: no listening line" sh -c "! grep -q listening '$TMP/$1.out'"
	check_match "$1: $2" "$(cat "$TMP/$1.out")" "$2"
}

GH="forges:
  github:
    webhook_secret_file: $TMP/gh.secret
    token_file: $TMP/gh.token
    api_url: http://127.0.0.1:9
runners:
  local: none"

cfg provider "$GH
llm:
  models:
    - provider: foo
      model: m"
refused provider "provider.yml:14: llm.models\[0\]\.provider: must be openai or anthropic"

cfg dollars "$GH
budgets:
  candidates: 8
  dollars: -5"
refused dollars "dollars.yml:14: budgets.dollars: must be a number from 0"

cfg llmkey "$GH
llm:
  modles: []"
refused llmkey "llmkey.yml:13: llm.modles: unknown key"

cfg profile "$GH
profile: always"
refused profile "profile.yml:12: profile: must be auto, ncu or off"

cfg sandbox "$GH
sandbox:
  memory_mb: 512"
refused sandbox "sandbox.yml:13: sandbox.memory_mb: unknown key"

cfg runners "$GH
  lease_s: 0"
refused runners "runners.yml:12: runners.lease_s: must be a whole number from 1"

cfg schedule "$GH
schedule: '0 25 * * *'"
refused schedule "schedule.yml:12: schedule: hour"

# A GitHub forge whose client has no credentials: every job would fail.
cfg notoken "forges:
  github:
    webhook_secret_file: $TMP/gh.secret
runners:
  local: none"
refused notoken "notoken.yml:6: forges.github: needs token_file"

cfg missingtoken "forges:
  github:
    webhook_secret_file: $TMP/gh.secret
    token_file: $TMP/nope.token
runners:
  local: none"
refused missingtoken "missingtoken.yml:8: forges.github.token_file: .*nope.token: No such file"

# FIFOs: refused at once (refused() would time out with 124 on a hang).
cfg fifosecret "forges:
  github:
    webhook_secret_file: $TMP/fifo"
refused fifosecret "fifosecret.yml:7: forges.github.webhook_secret_file: cannot read .*: not a regular file"

cfg fifotoken "forges:
  github:
    webhook_secret_file: $TMP/gh.secret
    token_file: $TMP/fifo
runners:
  local: none"
refused fifotoken "fifotoken.yml:8: forges.github.token_file: .*fifo: not a regular file"

cfg fifokey "$GH
llm:
  models:
    - provider: openai
      model: m
      api_key_file: $TMP/fifo"
refused fifokey "fifokey.yml:16: llm.models\[0\]\.api_key_file: .*fifo: not a regular file"

cfg nokeyenv "$GH
llm:
  models:
    - provider: openai
      model: m
      api_key_env: KB_T1030_UNSET_KEY"
refused nokeyenv "nokeyenv.yml:16: llm.models\[0\]\.api_key_env: KB_T1030_UNSET_KEY is not set"

cfg range "$GH
http:
  threads: 1e400"
refused range "range.yml:13: http.threads: 1e400 is out of range"

cfg allow "$GH
allow_repos: [acme]"
sed -i '4d' "$TMP/allow.yml"
refused allow "allow.yml:11: allow_repos: 'acme' never matches"

# Without the coordinator a forge is only a webhook secret: no token needed.
cfg intake "forges:
  github:
    webhook_secret_file: $TMP/gh.secret
runners:
  local: none
  coordinator: false"

# optimize --config applies the same rules to the same file.
timeout 20 "$KERNELBOT" optimize "$TMP/none.py" --config "$TMP/provider.yml" >"$TMP/opt.out" 2>&1
check_eq "optimize: exit 2 on the same file" "$?" 2
check_match "optimize: the same message" "$(cat "$TMP/opt.out")" \
    "provider.yml:14: llm.models\[0\]\.provider: must be openai or anthropic"
timeout 20 "$KERNELBOT" optimize "$TMP/none.py" --config "$TMP/runners.yml" >"$TMP/opt.out" 2>&1
check_eq "optimize: exit 2 on a runners mistake too" "$?" 2
check_match "optimize: names it" "$(cat "$TMP/opt.out")" "runners.yml:12: runners.lease_s:"

# Valid files still serve: the full one (coordinator, forge client, LLM
# with its key set) and the intake-only one.
cfg valid "$GH
llm:
  models:
    - provider: openai
      model: m
      api_key_env: KB_T1030_KEY
budgets:
  dollars: 5
profile: off
schedule: '0 3 * * 0'"
for name in valid intake; do
	KB_T1030_KEY=sk-test "$KERNELBOT" serve --config "$TMP/$name.yml" >"$TMP/$name.out" 2>&1 &
	KB_PID=$!
	t_bg "$KB_PID"
	check "$name: serves" wait_port "$PORT" 10
	http GET "http://127.0.0.1:$PORT/healthz"
	check_eq "$name: healthz" "$HTTP_CODE" 200
	kb_serve_stop TERM
	check_eq "$name: stops cleanly" "$KB_STATUS" 0
	check "$name: logged listening" grep -q listening "$TMP/$name.out"
	check "$name: the secret is not in the log" sh -c "! grep -q '$SECRET' '$TMP/$name.out'"
done
t_done
