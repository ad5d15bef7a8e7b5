# Sourced by the gitops e2e tests (t40xx): a private temporary directory
# removed on exit, git isolated from the user's configuration, and the
# ok/no/check counters behind the "tNNNN: N passed, N failed" line.
: "${KERNELBOT:?run from tests/run.sh}"
T=$(mktemp -d)
trap 'lib_cleanup' EXIT
pass=0 fail=0
PY=/usr/bin/python3
export HOME="$T" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=dev \
	GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev \
	GIT_COMMITTER_EMAIL=dev@example.com

# Processes a test started (fake servers) are stopped by pid, then $T goes.
lib_pids=""
lib_cleanup() {
	for p in $lib_pids; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}

ok() { pass=$((pass + 1)); echo "ok: $1"; }
no() { fail=$((fail + 1)); echo "FAIL: $1"; }
# check NAME SHELL-CONDITION
check() { if eval "$2"; then ok "$1"; else no "$1"; return 1; fi; }

# done_tests NAME: the summary line and the exit status.
done_tests() {
	echo "$1: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
