#!/bin/sh
# t5005: a repository's module as written (no KernelBench functions), its
# constructor arguments, inputs and shape variants given as literals in
# .kernelbot.yml: optimize reads them there and gets a correct kernel, and
# trace and eval take the same as --init, --inputs and --variants (a
# LayerNorm given `init: [256, true]` failed before: the loaders called
# get_init_inputs whatever .kernelbot.yml said).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t5005
FIX="$KB_ROOT/tests/fixtures/repo_entry"
mkdir -p "$TMP/repo/models"
cp "$FIX/models/norm.py" "$TMP/repo/models/norm.py"
cp "$FIX/kernelbot.yml" "$TMP/repo/.kernelbot.yml"
FAST="--trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 60"

"$KERNELBOT" trace "$TMP/repo/models/norm.py" --class RowNorm --init '[64, true]' \
    --inputs '[[16, 64], 2.0]' --variants '[[[5, 64], 2.0]]' --json >"$TMP/ir.json" 2>"$TMP/err"
check_eq "trace with literal entry points: exit 0" "$?" 0
check_eq "the inputs as the literals say" \
    "$(json_get "$TMP/ir.json" '[(i["name"], i["shape"]) for i in d["inputs"]], len(d["variants"])')" \
    "([('x', [16, 64]), ('weight', [64]), ('bias', [64])], 1)"

"$KERNELBOT" trace "$TMP/repo/models/norm.py" --class RowNorm --init '[64, true]' \
    --inputs '[[16, -64]]' --json >/dev/null 2>"$TMP/err"
check_eq "a bad literal: exit 1" "$?" 1
check_match "named to its element" "$(cat "$TMP/err")" "inputs\\[0\\]: a shape is a list of non-negative integers"

"$KERNELBOT" optimize "$TMP/repo" --budget 2 $FAST --out "$TMP/out" --json >"$TMP/o.json" 2>"$TMP/err"
check_eq "optimize the repository: exit 0" "$?" 0
check_eq "one module, its class, a correct kernel" \
    "$(json_get "$TMP/o.json" '[(s["module"], s["slug"], s["status"] in ("improved", "not_faster", "needs_review")) for s in d]')" \
    "[('models/norm.py', 'models-norm-rownorm', True)]"
check "the kernel was written" test -s "$TMP/out/models-norm-rownorm/best/kernel.c"

"$KERNELBOT" eval "$TMP/repo/models/norm.py" "$TMP/out/models-norm-rownorm/best/kernel.c" \
    --class RowNorm --init '[64, true]' --inputs '[[16, 64], 2.0]' --variants '[[[5, 64], 2.0]]' \
    --backend cpu $FAST --json >"$TMP/e.json" 2>"$TMP/err"
check_eq "eval with the same entry points: exit 0" "$?" 0
check_eq "correct on the inputs and the variant" \
    "$(json_get "$TMP/e.json" 'd["status"], "4 input sets (2 trials x 2 shapes)" in str(d["checks"])')" \
    "('correct', True)"
"$KERNELBOT" eval "$TMP/repo/models/norm.py" "$TMP/out/models-norm-rownorm/best/kernel.c" \
    --class RowNorm --init '[64, false]' --inputs '[[16, 64], 2.0]' --backend cpu $FAST --json \
    >"$TMP/e2.json" 2>"$TMP/err"
check_eq "another init (no bias): the kernel built for the bias does not pass" \
    "$(json_get "$TMP/e2.json" 'd["status"] != "correct"')" "True"
t_done
