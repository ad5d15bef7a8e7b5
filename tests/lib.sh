# shellcheck shell=sh
# tests/lib.sh: the checks and the summary line of every shell test (POSIX
# sh): end-to-end (tests/e2e/lib.sh sources it), the compiler's
# (tests/compiler/) and the GPU scripts (tests/gpu/lib.sh). Source it, then
#
#   check "what it shows" test "$a" = "$b"     # passes when the command does
#   check_sh "what it shows" '[ -s "$f" ]'     # passes when the shell text does
#   check_eq "what it shows" "$got" "$want"
#   check_match "what it shows" "$text" 'an ERE'
#   ok "what held"; fail "what did not" [DETAIL...]; skip "what was not run, why"
#   t_summary NAME                             # the last line; 0 when none failed
#
# One format: "ok - WHAT", "FAIL - WHAT" with its details indented below,
# "skip - WHAT", and last "NAME: N passed, N failed" (", N skipped" when
# any were), the line tests/run.sh counts.
T_PASSED=0
T_FAILED=0
T_SKIPPED=0

ok() {
	T_PASSED=$((T_PASSED + 1))
	echo "ok - $*"
}

# fail WHAT [DETAIL...]: each DETAIL on a line of its own, indented.
fail() {
	T_FAILED=$((T_FAILED + 1))
	echo "FAIL - $1"
	shift
	[ $# -gt 0 ] && printf '     %s\n' "$@"
	return 0
}

skip() {
	T_SKIPPED=$((T_SKIPPED + 1))
	echo "skip - $*"
}

# check DESC CMD [ARGS...]: passes when CMD exits 0.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else fail "$desc" "command: $*"; fi
}

# check_sh DESC SHELL-TEXT: passes when SHELL-TEXT, run by eval, exits 0
# (its stdout discarded); returns its status.
check_sh() {
	if eval "$2" >/dev/null; then ok "$1"; else fail "$1" "condition: $2"; return 1; fi
}

# check_eq DESC GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "got:  $2" "want: $3"; fi
}

# check_match DESC TEXT PATTERN (grep -E)
check_match() {
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then ok "$1"; else fail "$1" "text: $2" "want: /$3/"; fi
}

# t_summary NAME: the summary line; 0 when nothing failed and something passed.
t_summary() {
	if [ "$T_SKIPPED" -gt 0 ]; then
		echo "$1: $T_PASSED passed, $T_FAILED failed, $T_SKIPPED skipped"
	else
		echo "$1: $T_PASSED passed, $T_FAILED failed"
	fi
	[ "$T_FAILED" -eq 0 ] && [ "$T_PASSED" -gt 0 ]
}
