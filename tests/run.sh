#!/bin/sh
# The test driver behind `make test`: runs every suite, prints each
# failure's output, recaps the failed checks, and ends with one line
# "tests: N passed, N failed".
# Usage: tests/run.sh [unit] [harness] [fuzz] [e2e]   (default: all)
set -u
BUILD=${BUILD:-build/default}
export KERNELBOT="${KERNELBOT:-$PWD/$BUILD/kernelbot}"
export KB_BUILD="$PWD/$BUILD"
export KB_ROOT="$PWD"
PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
suites=${*:-unit harness fuzz e2e}
passed=0
failed=0
log=$(mktemp)
fails=$(mktemp)
# One cache for the whole run, never the user's: judge servers, baselines
# and kernels of the tests live and end here.
KERNELBOT_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/kb-tests-cache.XXXXXX") || exit 1
export KERNELBOT_CACHE
trap '"$KERNELBOT" judge stop >/dev/null 2>&1; rm -rf "$log" "$fails" "$KERNELBOT_CACHE"' EXIT

# Count "NAME: N passed, N failed" from a suite's last such line.
tally() {
	name=$1 status=$2
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	p=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
	f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
	p=${p:-0} f=${f:-0}
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1	# it died before reporting
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		echo "--- $name failed:"
		cat "$log"
		# For the recap at the end: its failed checks and their details
		# (a CI log may keep only its tail).
		{
			echo "$name:"
			grep -E -A4 '^(FAIL|not ok)|FAILED|Error' "$log" | head -n 40 | sed 's/^/  /'
		} >>"$fails"
	else
		printf '%-40s %s passed\n' "$name" "$p"
	fi
}

for s in $suites; do
	case $s in
	unit)
		for t in "$BUILD"/tests/test_*; do
			[ -x "$t" ] || continue
			"$t" >"$log" 2>&1
			tally "unit/$(basename "$t")" $?
		done
		;;
	harness)
		if [ -d tests/harness ] && ls tests/harness/test_*.py >/dev/null 2>&1; then
			"$PYTHON" -m pytest -q -p no:cacheprovider tests/harness >"$log" 2>&1
			st=$?
			# pytest: "12 passed, 1 skipped in 3.2s" or "1 failed, 11 passed ..."
			p=$(grep -oE '[0-9]+ passed' "$log" | tail -n 1 | cut -d' ' -f1)
			f=$(grep -oE '[0-9]+ (failed|error|errors)' "$log" | awk '{s+=$1} END {print s+0}')
			echo "harness: ${p:-0} passed, ${f:-0} failed" >>"$log"
			[ "$st" -eq 5 ] && st=0	# no tests collected is not a failure here
			tally harness/pytest "$st"
		fi
		;;
	fuzz)
		for t in "$BUILD"/tests/fuzz_*; do
			[ -x "$t" ] || continue
			name=$(basename "$t")
			"$t" "tests/fuzz/corpus/${name#fuzz_}" >"$log" 2>&1
			tally "fuzz/$name" $?
		done
		;;
	e2e)
		for t in tests/e2e/t[0-9]*.sh; do
			[ -f "$t" ] || continue
			sh "$t" >"$log" 2>&1
			tally "e2e/$(basename "$t" .sh)" $?
		done
		;;
	*)
		echo "tests/run.sh: unknown suite '$s'" >&2
		exit 2
		;;
	esac
done

if [ -s "$fails" ]; then
	echo "--- the failures again:"
	cat "$fails"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
