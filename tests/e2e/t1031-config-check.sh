#!/bin/sh
# kernelbot config check [FILE]: serve's check before it listens, as a
# command. The README's example config (its /etc and /var/log paths moved to $TMP)
# passes and is printed with its defaults filled in and no secret's
# value; the printed configuration checks again to itself. A bad file
# gets serve's FILE:LINE: KEY: message and exit 2.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1031

mkdir -p "$TMP/etc" "$TMP/log"
sed -e "s|/etc/kernelbot/|$TMP/etc/|g" -e "s|/var/log/kernelbot/|$TMP/log/|g" \
    "$KB_ROOT/kernelbot.example.yml" >"$TMP/example.yml"
n=0
for f in github-webhook.secret gitlab-webhook.token github.token gitlab.token gitea.token; do
	n=$((n + 1))
	printf 'file-secret-%s-%s\n' "$n" "0123456789abcdef" >"$TMP/etc/$f"
done
export KERNELBOT_GITEA_WEBHOOK_SECRET="env-secret-gitea-0123456789"
export ANTHROPIC_API_KEY="env-secret-anthropic-key"

"$KERNELBOT" config check "$TMP/example.yml" >"$TMP/out" 2>"$TMP/err"
check_eq "the example passes" "$?" 0
check_eq "nothing on stderr" "$(cat "$TMP/err")" ""
out=$(cat "$TMP/out")
check "no secret file's content is printed" sh -c "! grep -q file-secret '$TMP/out'"
check "no secret variable's value is printed" sh -c "! grep -q env-secret '$TMP/out'"
check_match "a secret file is named and masked" "$out" \
    "^    webhook_secret_file: \"$TMP/etc/github-webhook.secret\"  # secret: \*+$"
check_match "a secret variable is named and masked" "$out" \
    "^    webhook_secret_env: \"KERNELBOT_GITEA_WEBHOOK_SECRET\"  # secret: \*+$"
check_match "an LLM key variable is masked" "$out" \
    "^      api_key_env: \"ANTHROPIC_API_KEY\"  # secret: \*+$"
check_eq "every secret key is masked" "$(grep -c '# secret: \*' "$TMP/out")" 7
# What the file gives, and the defaults it does not.
check_match "the file's values" "$out" "^  lease_s: 60$"
check_match "allow_repos as given" "$out" "^allow_repos: \[\"acme/\*\", \"!acme/secret-\*\", \"solo/model\"\]$"
check_match "a default filled in: runners.poll_ms" "$out" "^  poll_ms: 1000$"
check_match "a default filled in: a model's temperature" "$out" "^      temperature: 0.7$"
check_match "a default filled in: an Anthropic base_url" "$out" "^      base_url: \"https://api.anthropic.com\"$"
check_match "a default filled in: budgets.wall_seconds" "$out" "^  wall_seconds: 0.0$"
check_match "the schedule as a list" "$out" "^schedule: \[\"0 3 \* \* 0\"\]$"

# The printed configuration is a configuration, and the same one.
grep -v '^#' "$TMP/out" >"$TMP/effective.yml"
"$KERNELBOT" config check "$TMP/effective.yml" >"$TMP/out2" 2>&1
check_eq "the printed configuration checks" "$?" 0
check "and prints the same" sh -c "grep -v '^#' '$TMP/out2' | cmp -s - '$TMP/effective.yml'"

# Mistakes: serve's message, exit 2, stdout empty.
printf 'llm:\n  models:\n    - provider: openai\n      model: m\nbudgets:\n  dollars: -5\n' >"$TMP/bad.yml"
"$KERNELBOT" config check "$TMP/bad.yml" >"$TMP/out" 2>"$TMP/err"
check_eq "a bad file: exit 2" "$?" 2
check_match "a bad file: FILE:LINE: KEY: message" "$(cat "$TMP/err")" \
    "^kernelbot config check: $TMP/bad.yml:6: budgets.dollars: must be a number from 0"
check_eq "a bad file: nothing printed" "$(cat "$TMP/out")" ""
unset ANTHROPIC_API_KEY
"$KERNELBOT" config check "$TMP/example.yml" >"$TMP/out" 2>"$TMP/err"
check_eq "an unset key variable: exit 2" "$?" 2
check_match "an unset key variable: named" "$(cat "$TMP/err")" \
    "example.yml:[0-9]+: llm.models\[0\]\.api_key_env: ANTHROPIC_API_KEY is not set"
export ANTHROPIC_API_KEY=x
rm "$TMP/etc/gitea.token"
mkfifo "$TMP/etc/gitea.token"
timeout 10 "$KERNELBOT" config check "$TMP/example.yml" >"$TMP/out" 2>"$TMP/err"
check_eq "a FIFO token: exit 2, not a hang" "$?" 2
check_match "a FIFO token: named" "$(cat "$TMP/err")" \
    "example.yml:[0-9]+: forges.gitea.token_file: .*gitea.token: not a regular file"
"$KERNELBOT" config check "$TMP/missing.yml" >"$TMP/out" 2>"$TMP/err"
check_eq "a missing file: exit 2" "$?" 2
"$KERNELBOT" config check "$TMP/a.yml" "$TMP/b.yml" >"$TMP/out" 2>"$TMP/err"
check_eq "two files: usage, exit 2" "$?" 2
"$KERNELBOT" config >"$TMP/out" 2>"$TMP/err"
check_eq "no subcommand: usage, exit 2" "$?" 2
check_match "and says how" "$(cat "$TMP/err")" "usage: kernelbot config check"

# The fourth outside attack's F4, F5, F6: what passed the check and then
# hung serve (a FIFO log_file), lost its log (/dev/full) or failed it
# (a log in a missing directory, a data_dir that is a file), a port the
# kernel picks, patterns and a prompts directory that can work for
# nothing. Each is refused by both, FILE:LINE: KEY: why, exit 2, and
# serve never listens.
mkfifo "$TMP/fifo"
mkdir -p "$TMP/sdir"
echo x >"$TMP/afile"
printf 'githubsecret-0123456789abcdef\n' >"$TMP/gh.secret"
port=$(free_port)
refused() {	# NAME YAML WANT: config check and serve both exit 2 with WANT
	printf '%b' "$2" >"$TMP/r.yml"
	timeout 10 "$KERNELBOT" config check "$TMP/r.yml" >/dev/null 2>"$TMP/r.err"
	check_eq "$1: config check exits 2" "$?" 2
	check_match "$1: config check says why" "$(cat "$TMP/r.err")" "$3"
	timeout 10 "$KERNELBOT" serve --config "$TMP/r.yml" >"$TMP/r.out" 2>&1
	check_eq "$1: serve exits 2 at once" "$?" 2
	check_match "$1: serve says why" "$(cat "$TMP/r.out")" "$3"
	check "$1: serve never listened" sh -c "! grep -q listening '$TMP/r.out'"
}
base="listen: 127.0.0.1:$port\ndata_dir: $TMP/d\n"
refused "a FIFO log_file" "${base}log_file: $TMP/fifo\n" \
    "r.yml:3: log_file: '$TMP/fifo' is a FIFO: the log must be a regular file"
refused "/dev/full as log_file" "${base}log_file: /dev/full\n" \
    "r.yml:3: log_file: '/dev/full' is a character device"
refused "a log_file in a missing directory" "${base}log_file: $TMP/nodir/k.log\n" \
    "r.yml:3: log_file: the directory of '$TMP/nodir/k.log': No such file or directory"
refused "a data_dir that is a file" "listen: 127.0.0.1:$port\ndata_dir: $TMP/afile\n" \
    "r.yml:2: data_dir: '$TMP/afile' is a file, not a directory"
refused "listen on port 0" "listen: 127.0.0.1:0\ndata_dir: $TMP/d\n" \
    "r.yml:1: listen: '127.0.0.1:0': port 0 listens on whatever port the kernel picks"
fbase="${base}runners: {local: none, coordinator: false}\nforges:\n  github: {webhook_secret_file: $TMP/gh.secret}\n"
for p in 'acme/../*' 'acme/./x' 'acme/*/' 'acme//x' '/acme/x'; do
	refused "allow_repos '$p'" "${fbase}allow_repos: ['$p']\n" \
	    "r.yml:6: allow_repos: '.+' has (an empty segment|a segment '\\.' or '\\.\\.')"
done
refused "a missing llm.prompts_dir" \
    "${fbase}llm: {prompts_dir: $TMP/nop, models: [{provider: openai, model: x, api_key_file: $TMP/gh.secret}]}\n" \
    "r.yml:6: llm.prompts_dir: '$TMP/nop': No such file or directory"
refused "a FIFO llm.prompts_dir" \
    "${fbase}llm: {prompts_dir: $TMP/fifo, models: [{provider: openai, model: x, api_key_file: $TMP/gh.secret}]}\n" \
    "r.yml:6: llm.prompts_dir: '$TMP/fifo' is a FIFO, not a directory of prompt templates"
timeout 10 "$KERNELBOT" config check "$TMP/sdir" >/dev/null 2>"$TMP/r.err"
check_eq "a directory as the file: exit 2, as a FIFO" "$?" 2
check_match "and says so" "$(cat "$TMP/r.err")" "$TMP/sdir: a directory, not a configuration file"
timeout 10 "$KERNELBOT" config check "$TMP/fifo" >/dev/null 2>"$TMP/r.err"
check_eq "a FIFO as the file: exit 2" "$?" 2
printf "${base}log_file: $TMP/sdir/new.log\n" >"$TMP/ok.yml"
"$KERNELBOT" config check "$TMP/ok.yml" >/dev/null 2>"$TMP/r.err"
check_eq "a new log file in a directory passes" "$?" 0

# An empty file is all defaults.
: >"$TMP/empty.yml"
"$KERNELBOT" config check "$TMP/empty.yml" >"$TMP/out" 2>&1
check_eq "an empty file passes" "$?" 0
check_match "with the default listen" "$(cat "$TMP/out")" '^listen: "127.0.0.1:8080"$'
t_done
