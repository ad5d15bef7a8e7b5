# Helpers for the eval end-to-end tests (sourced; not a test itself): a
# temporary directory, the sandbox's presence, and a candidate's result
# read by a Python expression. The checks and the summary line are
# tests/lib.sh's (bad is its fail, done_tests its t_summary).
PY=${KERNELBOT_PYTHON_TEST:-/usr/bin/python3}
# The Debian interpreter, named: probing a pyenv shim for torch costs seconds per call.
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
KERNELBOT=${KERNELBOT:-$PWD/build/default/kernelbot}
ROOT=${KB_ROOT:-$PWD}
. "$ROOT/tests/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-e2e-eval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# With `kernelbot sandbox-exec` built in, everything runs sandboxed; until
# then the developer fallback runs and the sandbox-only checks are skipped.
if "$KERNELBOT" sandbox-exec --help >/dev/null 2>&1; then
	SANDBOX=1
else
	SANDBOX=0
	export KERNELBOT_EVAL_UNSANDBOXED=1
fi

bad() { fail "$@"; }
skipped() { skip "$@"; }

# field FILE CANDIDATE_BASENAME EXPR: evaluate a Python expression on the
# result object `r` of the candidate whose path ends in the basename.
field() {
	"$PY" - "$1" "$2" "$3" <<'PYEOF'
import json, sys
data = json.load(open(sys.argv[1]))
data = data if isinstance(data, list) else [data]
for r in data:
    if r["candidate"].endswith("/" + sys.argv[2]) or r["candidate"] == sys.argv[2]:
        print(eval(sys.argv[3], {"r": r}))
        break
else:
    print("MISSING")
PYEOF
}

# expect FILE CAND EXPR WHAT: check EXPR is True for CAND's result.
expect() {
	got=$(field "$1" "$2" "$3")
	if [ "$got" = True ]; then
		ok "$2: $4"
	else
		bad "$2: $4 (got: $(field "$1" "$2" '(r["status"], r["flags"], r["errors"][:2])'))"
	fi
}

# eval_cpu NAME PROBLEM CANDIDATE...: one short CPU batch (3 rounds of
# 10 runs, 1 warm-up), its results in $tmp/NAME.json; checks that it gave
# results and exited 0 or 1 (1: a candidate is not correct).
eval_cpu() {
	name=$1 prob=$2
	shift 2
	"$KERNELBOT" eval "$prob" "$@" --backend cpu --json --rounds 3 --reps 10 --warmup 1 \
		--timeout 30 >"$tmp/$name.json" 2>"$tmp/$name.err"
	st=$?
	[ "$st" -le 1 ] && [ -s "$tmp/$name.json" ] && ok "$name: exit $st, results" ||
		bad "$name: exit $st: $(tail -5 "$tmp/$name.err")"
}

done_tests() {
	t_summary "$1"
}
