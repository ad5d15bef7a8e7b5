#!/bin/sh
# kernelbot sandbox-exec, the judge's launcher, through the real binary:
# exit statuses, stdio pass-through, the environment, the report file,
# the deadline, and what a program inside can and cannot touch.
set -u
KERNELBOT=${KERNELBOT:-build/default/kernelbot}
HELPERS=${KB_BUILD:-build/default}/tests/helpers
. "${KB_ROOT:-.}/tests/lib.sh"
dir=$(mktemp -d /tmp/kb-t2000-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/scratch" "$dir/inputs"
chmod 755 "$dir/inputs"
echo data >"$dir/inputs/x.txt"
echo TOPSECRET >"$dir/secret"
chmod 600 "$dir/secret"

# expect NAME WANT GOT; on a failure, the launcher's stderr too
expect() {
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "want: $2" "got:  $3" "$(cat "$dir/err" 2>/dev/null)"; fi
}

sx() {
	"$KERNELBOT" sandbox-exec --scratch "$dir/scratch" --ro "$HELPERS" --ro "$dir/inputs" "$@" 2>"$dir/err"
}

sx -- /bin/sh -c 'exit 7'
expect "the program's exit status" 7 $?

out=$(sx -- /bin/echo hello)
expect "stdout passes through" hello "$out"

out=$(echo from-stdin | sx -- /bin/cat)
expect "stdin passes through" from-stdin "$out"

sx -- /bin/sh -c 'echo to-stderr >&2'
expect "stderr passes through" to-stderr "$(cat "$dir/err")"

sx -- /bin/sh -c 'kill -SEGV $$'
expect "a death by signal gives 128+signal" 139 $?

out=$(KB_TEST_SECRET=hunter2 sx -- /usr/bin/env)
case $out in *KB_TEST_SECRET*) fail "the parent's secret stays out of the environment" ;; *) ok "the parent's secret stays out of the environment" ;; esac
case $out in *HOME="$dir/scratch"*) ok "HOME is the scratch directory" ;; *) fail "HOME is the scratch directory" "$out" ;; esac
out=$(LD_LIBRARY_PATH=/opt/x sx -- /usr/bin/env)
case $out in *LD_LIBRARY_PATH*) fail "LD_LIBRARY_PATH is not passed to another program" ;; *) ok "LD_LIBRARY_PATH is not passed to another program" ;; esac
out=$(sx --env FOO=bar -- /usr/bin/env)
case $out in *FOO=bar*) ok "--env adds a variable" ;; *) fail "--env adds a variable" ;; esac

out=$(sx -- /bin/cat "$dir/inputs/x.txt")
expect "an --ro file is readable" data "$out"
sx -- /bin/cat "$dir/secret" >/dev/null
check "a file beside the scratch directory is not readable" test $? -ne 0
sx -- /bin/sh -c "echo pwned > '$dir/inputs/new'"
st=$?
check "an --ro directory is not writable (status $st)" sh -c "[ $st -ne 0 ] && [ ! -e '$dir/inputs/new' ]"
sx -- /bin/sh -c "echo built > '$dir/scratch/out'"
expect "scratch is writable" built "$(cat "$dir/scratch/out" 2>/dev/null)"

start=$(date +%s)
sx --timeout 1 -- /bin/sh -c 'while :; do :; done'
st=$?
end=$(date +%s)
check "the deadline kills (status $st)" sh -c "[ $st -eq 143 ] || [ $st -eq 137 ]"
check "the deadline is kept ($((end - start)) s)" test $((end - start)) -le 4
check "the deadline is reported on stderr" grep -q deadline "$dir/err"

# A judge that kills its launcher kills the worker with it.
"$KERNELBOT" sandbox-exec --scratch "$dir/scratch" -- \
	/bin/sh -c 'sleep 1; echo alive > "$HOME/marker"' 2>"$dir/err" &
launcher=$!
sleep 0.3
kill -9 "$launcher"
wait "$launcher" 2>/dev/null
sleep 1.2
check "the worker dies with its killed launcher" test ! -e "$dir/scratch/marker"

sx --report "$dir/report.json" -- /bin/true
expect "a run with a report" 0 $?
check "the report lists the checks" grep -q '"name": "seccomp"' "$dir/report.json"

sx --profile candidate -- "$HELPERS/sbx_exploit" lockdown >/dev/null
expect "a candidate worker locks itself down" 0 $?

"$KERNELBOT" sandbox-exec --scratch "$dir/no-such-dir" --report "$dir/bad.json" -- /bin/true 2>"$dir/err"
expect "an unusable scratch gives 125" 125 $?
"$KERNELBOT" sandbox-exec --scratch "$dir/scratch" -- /no/such/program 2>"$dir/err"
expect "a missing program gives 125" 125 $?
check "a missing program is named" grep -q "No such file" "$dir/err"
"$KERNELBOT" sandbox-exec --scratch "$dir/scratch" 2>"$dir/err"
expect "no program is a usage error" 2 $?
KERNELBOT_SANDBOX_PRETEND_MISSING=seccomp sx -- /bin/true
expect "a missing feature refuses to run" 125 $?
check "the missing feature is named" grep -q "MISSING seccomp" "$dir/err"
KERNELBOT_SANDBOX_PRETEND_MISSING=seccomp sx --allow-degraded -- /bin/true
expect "--allow-degraded runs anyway" 0 $?
check "--allow-degraded still reports it" grep -q "MISSING seccomp" "$dir/err"

# The self-test: everything holds inside, and (the control) not outside.
sx --profile candidate -- "$KERNELBOT" __sandbox-check >"$dir/check.json"
expect "__sandbox-check passes inside the sandbox" 0 $?
check "__sandbox-check reports JSON" grep -q '"passed": true' "$dir/check.json"
check "__sandbox-check fails outside the sandbox" sh -c '! "$1" __sandbox-check >/dev/null 2>&1' sh "$KERNELBOT"

t_summary t2000-sandbox-exec
