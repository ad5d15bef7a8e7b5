#!/bin/sh
# t8000: `kernelbot demo` end to end on the embedded defaults: a sample
# repository from examples/, serve with the local forge and a local CPU
# runner, a signed push webhook for the commit that changes two modules
# and adds a third (--problem: a small copy of development problem 01).
# Asserts on the local forge: a pull request per changed module that got a
# faster kernel (at least one), none for the unchanged module, each PR's
# branch holding the kernel, drop-in module, test, manifest and report, the
# PR's own pytest passing against the original module on its branch, the
# body holding the speedup table, and a status for each changed module.
# Needs the coordinator and `kernelbot runner` (branch coord): skipped,
# saying so, in a build without them.
. "$(dirname "$0")/lib.sh"
t_init t8000
PY=${KERNELBOT_PYTHON:-/usr/bin/python3}
export KERNELBOT_PYTHON="$PY" KERNELBOT_CACHE="$TMP/cache"
# One OpenMP thread: on a CI machine whose 2 cores are shared, a parallel
# region waits milliseconds for a descheduled thread, and the CPU kernels
# (and eager PyTorch) measure 100x slower than they are.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
if ! "$KERNELBOT" runner --help >/dev/null 2>&1; then
	echo "t8000: skipped: this kernelbot has no runner command (the coordinator is not merged yet)"
	exit 0
fi
D="$TMP/demo"
start=$(date +%s)
"$KERNELBOT" demo --dir "$D" --examples "$KB_ROOT/examples" --timeout 600 \
	--problem "$KB_ROOT/tests/fixtures/demo/01_scale_gelu_bias.py" >"$TMP/out" 2>"$TMP/err"
st=$?
check_eq "kernelbot demo exits 0" "$st" 0
if [ "$st" -ne 0 ]; then
	cat "$TMP/out" "$TMP/err"
	tail -n 40 "$D/serve.log"
fi
# The time is printed, not asserted (speed belongs to bench/); the
# --timeout above only bounds a hang.
echo "t8000: the demo took $(( $(date +%s) - start )) s"
out=$(cat "$TMP/out")
check_match "it prints where the PRs are" "$out" "Pull request: $D/forge/prs/models-(rmsnorm|softmax)\.md"
check_match "and a speedup table" "$out" '^\| cpu, .* \| .* \| \*\*[0-9.]+x\*\*'
check "no PR for the module the push did not change" test ! -e "$D/forge/prs/models-mlp.json"

n=0
for rec in "$D"/forge/prs/*.json; do
	[ -e "$rec" ] || continue
	n=$((n + 1))
	slug=$(basename "$rec" .json)
	eval "$("$PY" - "$rec" <<'PYEOF'
import json, shlex, sys
r = json.load(open(sys.argv[1]))
print("head=%s" % shlex.quote(r["head"]))
print("has_table=%d" % ("| backend, device | input shape | eager ms | torch.compile ms | kernel ms |" in r["body"]))
print("files=%s" % shlex.quote(" ".join(f["path"] for f in r["files"])))
PYEOF
)"
	check_eq "$slug: the branch is kernelbot/$slug" "$head" "kernelbot/$slug"
	check_eq "$slug: the body has the speedup table" "$has_table" 1
	for f in __init__.py test_kernel.py manifest.json REPORT.md; do
		check_match "$slug: the PR adds $f" "$files" "kernels/$slug/$f"
	done
	check_match "$slug: the PR adds the CPU kernel" "$files" "kernels/$slug/kernel\.c"
	rm -rf "$TMP/co"
	check "$slug: its branch clones" git clone -q -b "kernelbot/$slug" "$D/forge.git" "$TMP/co"
	(cd "$TMP/co" && "$PY" -m pytest -q -p no:cacheprovider "kernels/$slug/test_kernel.py") >"$TMP/pytest-$slug.out" 2>&1
	st=$?
	check_eq "$slug: the PR's own pytest passes against the original module" "$st" 0
	[ "$st" -eq 0 ] || tail -n 30 "$TMP/pytest-$slug.out"
done
check "at least one pull request" test "$n" -ge 1
after=$(git -C "$D/repo" rev-parse HEAD)
check "statuses for the pushed commit" test -s "$D/forge/statuses/$after.json"
check_match "one per changed module" "$(cat "$D/forge/statuses/$after.json" 2>/dev/null)" "rmsnorm"
check_match "one per changed module" "$(cat "$D/forge/statuses/$after.json" 2>/dev/null)" "softmax"
check "--problem: the pushed commit adds models/scale_gelu_bias.py" \
	sh -c "git -C '$D/repo' show --stat HEAD | grep -q 'models/scale_gelu_bias.py'"
check "--problem: .kernelbot.yml lists it" grep -q '^  - path: models/scale_gelu_bias.py$' "$D/repo/.kernelbot.yml"
check_match "--problem: the job optimized it (a status)" "$(cat "$D/forge/statuses/$after.json" 2>/dev/null)" "models-scale-gelu-bias"
t_done
