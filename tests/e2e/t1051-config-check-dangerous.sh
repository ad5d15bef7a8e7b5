#!/bin/sh
# t1051: configurations that work but are dangerous are refused (attacks
# F5, F6), by `kernelbot config check FILE` and by `serve` before it
# listens, each with FILE:LINE: KEY: message and exit 2: one secret on two
# forges (compared by content: two files, or a file and a variable), a
# trusted proxy network as wide as 0.0.0.0/0 or ::/0 (or any IPv4 wider
# than /8, IPv6 wider than /8), allow_repos '*' or '*/*', a secret file on
# /proc or /sys, max_connections_per_ip over max_connections, secrets
# HMAC takes for one key, more connections than open files. The narrowest
# that is right still passes.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1051

PORT=$(free_port)
printf 'github-secret-0123456789\n' >"$TMP/gh.secret"
printf 'github-secret-0123456789' >"$TMP/same.secret"
printf 'gitea-secret-0123456789\n' >"$TMP/gt.secret"

# cfg NAME YAML: $TMP/NAME.yml, intake only, with YAML appended.
cfg() {
	cat >"$TMP/$1.yml" <<EOC
listen: 127.0.0.1:$PORT
data_dir: $TMP/data
runners:
  local: none
  coordinator: false
$2
EOC
}

# refused NAME PATTERN: config check and serve both exit 2 with PATTERN
# on stderr; serve never binds the port.
refused() {
	"$KERNELBOT" config check "$TMP/$1.yml" >"$TMP/$1.check" 2>&1
	check_eq "$1: config check exits 2" "$?" 2
	check_match "$1: config check says $2" "$(cat "$TMP/$1.check")" "$2"
	timeout 10 "$KERNELBOT" serve --config "$TMP/$1.yml" >"$TMP/$1.serve" 2>&1
	check_eq "$1: serve exits 2" "$?" 2
	check "$1: serve never listened" sh -c "! grep -q listening '$TMP/$1.serve'"
	check_match "$1: serve says $2" "$(cat "$TMP/$1.serve")" "$2"
}

# F5: one secret, two forges
cfg same-files "allow_repos: [acme/*]
forges:
  github:
    webhook_secret_file: $TMP/gh.secret
  gitea:
    webhook_secret_file: $TMP/same.secret"
refused same-files "same-files.yml:11: forges.gitea.webhook_secret_file: the same secret as forges.github.webhook_secret_file: give each forge its own"
export KB_T1051_SECRET=github-secret-0123456789
cfg same-env "allow_repos: [acme/*]
forges:
  github:
    webhook_secret_file: $TMP/gh.secret
  gitlab:
    webhook_token_env: KB_T1051_SECRET"
refused same-env "same-env.yml:11: forges.gitlab.webhook_token_env: the same secret as forges.github.webhook_secret_file"
# ... or two secrets HMAC-SHA256 takes for one key (N3): a key is padded
# with zeros to 64 bytes, and one longer than 64 is replaced by its
# SHA-256.
printf 'github-secret-0123456789\000' >"$TMP/nul.secret"
cfg same-nul "allow_repos: [acme/*]
forges:
  github:
    webhook_secret_file: $TMP/gh.secret
  gitea:
    webhook_secret_file: $TMP/nul.secret"
refused same-nul "same-nul.yml:11: forges.gitea.webhook_secret_file: the same secret as forges.github.webhook_secret_file"
/usr/bin/python3 - "$TMP/long.secret" "$TMP/hashed.secret" <<'PYEOF'
import hashlib, sys
for i in range(1000):
    key = b"long-secret-%04d-" % i + b"x" * 80
    h = hashlib.sha256(key).digest()
    if h[-1:] not in b" \t\r\n\v\f" and h[:1] not in b" \t\r\n\v\f":
        break
open(sys.argv[1], "wb").write(key)
open(sys.argv[2], "wb").write(h)
PYEOF
cfg same-hash "allow_repos: [acme/*]
forges:
  github:
    webhook_secret_file: $TMP/long.secret
  gitea:
    webhook_secret_file: $TMP/hashed.secret"
refused same-hash "same-hash.yml:11: forges.gitea.webhook_secret_file: the same secret as forges.github.webhook_secret_file"

# N4: more connections than the process may open files for, with no
# room to raise its limit: refused with the key, not a spinning accept.
cfg fds "allow_repos: [acme/*]
http:
  max_connections: 2000
forges:
  github:
    webhook_secret_file: $TMP/gh.secret"
(ulimit -n 256 && exec "$KERNELBOT" config check "$TMP/fds.yml") >"$TMP/fds.check" 2>&1
check_eq "fds: config check exits 2 under ulimit -n 256" "$?" 2
check_match "fds: and names the key and the limit" "$(cat "$TMP/fds.check")" \
	"fds.yml:8: http.max_connections: 2000 connections need about [0-9]+ open files, and this process may open at most 256"
(ulimit -n 256 && exec timeout 10 "$KERNELBOT" serve --config "$TMP/fds.yml") >"$TMP/fds.serve" 2>&1
check_eq "fds: serve exits 2 under ulimit -n 256" "$?" 2
check "fds: serve never listened" sh -c "! grep -q listening '$TMP/fds.serve'"
hard=$(ulimit -H -n)
if [ "$hard" = unlimited ] || [ "$hard" -ge 4096 ]; then
	(ulimit -S -n 256 && exec "$KERNELBOT" config check "$TMP/fds.yml") >"$TMP/fds2.check" 2>&1
	check_eq "fds: a soft limit the hard one lets it raise passes" "$?" 0
	# serve raises it at start-up, before it listens
	(ulimit -S -n 256 && exec "$KERNELBOT" serve --config "$TMP/fds.yml" \
		--listen 127.0.0.1:0 --data-dir "$TMP/fds-data") >"$TMP/fds3.serve" 2>&1 &
	spid=$!
	n=0
	while ! grep -q listening "$TMP/fds3.serve" && kill -0 "$spid" 2>/dev/null && [ $n -lt 300 ]; do
		sleep 0.1; n=$((n + 1))
	done
	soft=$(awk '/^Max open files/ { print $4 }' "/proc/$spid/limits" 2>/dev/null)
	kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
	check "fds: serve raised its soft limit from 256 to $soft (2000 connections)" \
		sh -c "[ '$soft' = unlimited ] || [ '${soft:-0}' -ge 2500 ]"
else
	echo "# skip: fds: the hard open-file limit here ($hard) is too low to raise to"
fi

# F6: trusted proxies too wide
GH="forges:
  github:
    webhook_secret_file: $TMP/gh.secret"
cfg proxy4 "allow_repos: [acme/*]
$GH
http:
  trusted_proxies: [10.1.2.3, 0.0.0.0/0]"
refused proxy4 "proxy4.yml:11: http.trusted_proxies: '0.0.0.0/0' is too wide"
cfg proxy6 "allow_repos: [acme/*]
$GH
http:
  trusted_proxies: ['::/0']"
refused proxy6 "proxy6.yml:11: http.trusted_proxies: '::/0' is too wide"
cfg proxy7 "allow_repos: [acme/*]
$GH
http:
  trusted_proxies: [10.0.0.0/7]"
refused proxy7 "proxy7.yml:11: http.trusted_proxies: '10.0.0.0/7' is too wide"

# F6: allow_repos that takes every repository
cfg star "allow_repos: ['*']
$GH"
refused star "star.yml:6: allow_repos: '\*' matches every owner's repositories"
cfg starstar "allow_repos:
  - acme/*
  - '*/*'
$GH"
refused starstar "starstar.yml:8: allow_repos: '\*/\*' matches every owner's repositories"

# F6: a kernel file as a secret. secret_cfg NAME FILE: github's secret is FILE.
secret_cfg() {
	cfg "$1" "allow_repos: [acme/*]
forges:
  github:
    webhook_secret_file: $2"
}
secret_cfg proc /proc/self/environ
refused proc "proc.yml:9: forges.github.webhook_secret_file: cannot read '/proc/self/environ': a kernel file \(/proc, /sys\), not a secret"
ln -s /proc/self/status "$TMP/link.secret"
secret_cfg proclink "$TMP/link.secret"
refused proclink "proclink.yml:9: forges.github.webhook_secret_file: .*not a secret"
secret_cfg sys /sys/kernel/uevent_seqnum
refused sys "sys.yml:9: forges.github.webhook_secret_file: .*not a secret"

# F6: one client allowed more connections than all
cfg perip "allow_repos: [acme/*]
$GH
http:
  max_connections: 16
  max_connections_per_ip: 32"
refused perip "perip.yml:12: http.max_connections_per_ip: must be at most http.max_connections \(16\)"

# the narrowest right answers pass, and serve with them
cfg fine "allow_repos: [acme/*, 'acme/**']
forges:
  github:
    webhook_secret_file: $TMP/gh.secret
  gitea:
    webhook_secret_file: $TMP/gt.secret
http:
  trusted_proxies: [10.0.0.0/8, 'fd00::/8']
  max_connections: 16"
"$KERNELBOT" config check "$TMP/fine.yml" >"$TMP/fine.out" 2>&1
check_eq "the fine config passes" "$?" 0
check_match "per-ip connections capped at max_connections when unset" \
    "$(cat "$TMP/fine.out")" "max_connections_per_ip: 16$"
KB_PORT=$PORT
kb_serve_start "$TMP/fine.yml" || t_done
check "serve listens with it" port_open "$PORT"
kb_serve_stop TERM
check_eq "and stops cleanly" "$KB_STATUS" 0
t_done
