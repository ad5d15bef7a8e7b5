#!/bin/sh
# kernelbot serve: configuration errors name the key and line and exit 2;
# command-line overrides win over the file.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1000

# serve_fails WANT_STATUS WANT_PATTERN ARGS...: serve must exit at once.
serve_fails() {
	want=$1 pat=$2
	shift 2
	timeout 10 "$KERNELBOT" serve "$@" >"$TMP/out" 2>&1
	st=$?
	check_eq "exit $want: $pat" "$st" "$want"
	check_match "message: $pat" "$(cat "$TMP/out")" "$pat"
}

kb_config "$TMP/kb.yml"

printf 'listen: 127.0.0.1:1\ndata_dir: %s\nlistn: 127.0.0.1:2\n' "$TMP/d" >"$TMP/typo.yml"
serve_fails 2 "typo.yml:3: listn: unknown key" --config "$TMP/typo.yml"
printf 'listen: localhost\n' >"$TMP/listen.yml"
serve_fails 2 "listen.yml:1: listen: 'localhost' is not ADDR:PORT" --config "$TMP/listen.yml"
printf 'forges:\n  github:\n    webhook_secret_file: %s/nope\n' "$TMP" >"$TMP/nosecret.yml"
serve_fails 2 "nosecret.yml:3: forges.github.webhook_secret_file: cannot read" --config "$TMP/nosecret.yml"
printf 'allow_repos: acme\n' >"$TMP/allow.yml"
serve_fails 2 "allow.yml:1: allow_repos: must be a list" --config "$TMP/allow.yml"
printf 'forges:\n  github:\n    webhook_secret_file: [\n' >"$TMP/syntax.yml"
serve_fails 2 "syntax.yml:[0-9]+:[0-9]+: " --config "$TMP/syntax.yml"
printf 'http:\n  max_body_bytes: 10\n' >"$TMP/http.yml"
serve_fails 2 "http.yml:2: http.max_body_bytes: must be an integer from 1024" --config "$TMP/http.yml"
serve_fails 2 "missing.yml: No such file" --config "$TMP/missing.yml"
serve_fails 2 "not ADDR:PORT" --config "$TMP/kb.yml" --listen nope
serve_fails 2 "unexpected argument" --config "$TMP/kb.yml" extra
serve_fails 2 "usage: kernelbot serve" --bogus

timeout 10 "$KERNELBOT" serve --help >"$TMP/out" 2>&1
check_eq "serve --help exits 0" "$?" 0

# A secret that never reaches the log or the error output.
printf 'tiny-s3cr3t\n' >"$TMP/short.secret"
printf 'forges:\n  gitea:\n    webhook_secret_file: %s/short.secret\n' "$TMP" >"$TMP/short.yml"
serve_fails 2 "short.yml:3: forges.gitea.webhook_secret_file: the secret is too short" --config "$TMP/short.yml"
check "the secret's value is not printed" sh -c "! grep -q tiny-s3cr3t '$TMP/out'"

# Overrides: --listen and --data-dir beat the file.
PORT2=$(free_port)
"$KERNELBOT" serve --config "$TMP/kb.yml" --listen "127.0.0.1:$PORT2" --data-dir "$TMP/other" \
    >"$TMP/serve.log" 2>&1 &
KB_PID=$!
t_bg "$KB_PID"
check "--listen override answers" wait_port "$PORT2" 10
http GET "http://127.0.0.1:$PORT2/healthz"
check_eq "healthz on the overridden port" "$HTTP_CODE" 200
check "--data-dir override holds the store" test -f "$TMP/other/kernelbot.db"
check "the file's data_dir was not used" test ! -e "$TMP/data"

# The port is taken: exit 1 with a message, not a hang.
timeout 10 "$KERNELBOT" serve --config "$TMP/kb.yml" --listen "127.0.0.1:$PORT2" \
    --data-dir "$TMP/third" >"$TMP/out" 2>&1
check_eq "port in use: exit 1" "$?" 1
check_match "port in use: says so" "$(cat "$TMP/out")" "cannot listen on 127.0.0.1:$PORT2"
kb_serve_stop TERM
check_eq "stopped cleanly" "$KB_STATUS" 0

# An unwritable data dir is a clear error (skipped as root, who can write anywhere).
if [ "$(id -u)" -ne 0 ]; then
	mkdir -p "$TMP/ro" && chmod 500 "$TMP/ro"
	timeout 10 "$KERNELBOT" serve --config "$TMP/kb.yml" --data-dir "$TMP/ro/x" >"$TMP/out" 2>&1
	check_eq "unwritable data dir: exit 1" "$?" 1
fi
: >"$TMP/notadir"
timeout 10 "$KERNELBOT" serve --config "$TMP/kb.yml" --data-dir "$TMP/notadir" >"$TMP/out" 2>&1
check_eq "data dir that is a file: exit 2, refused at start" "$?" 2
check_match "and says so" "$(cat "$TMP/out")" \
    "^kernelbot serve: --data-dir: '$TMP/notadir' is a file, not a directory$"
t_done
