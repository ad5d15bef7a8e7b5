#!/bin/sh
# t5006: a repository's module as its upstream file is written: in a src/
# layout, importing its own package (`from tinynet.config import ...`),
# its constructor taking a config object (a dataclass) that a factory in
# another file of the repository builds (`init: "configs:block_args"`).
# .kernelbot.yml's python_path (default ".", "src") puts the repository's
# root and src/ first on the module's sys.path, shown read-only to the
# sandboxes that load it; trace and eval take the same as --path. Before,
# the loaders showed the sandbox the file alone: "No module named
# 'tinynet'".
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t5006
FIX="$KB_ROOT/tests/fixtures/repo_pkg"
R="$TMP/repo"
mkdir -p "$R"
cp -r "$FIX/src" "$FIX/configs.py" "$R/"
cp "$FIX/kernelbot.yml" "$R/.kernelbot.yml"
M="$R/src/tinynet/model.py"
ENTRY="--class Block --init configs:block_args --inputs [[8,32]]"
FAST="--trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 60"

# shellcheck disable=SC2086
"$KERNELBOT" trace "$M" $ENTRY --json >/dev/null 2>"$TMP/err"
check_eq "trace without the path: exit 1" "$?" 1
check_match "the import named" "$(cat "$TMP/err")" "No module named 'tinynet'"

# shellcheck disable=SC2086
"$KERNELBOT" trace "$M" $ENTRY --path "$R" --path "$R/src" --json >"$TMP/ir.json" 2>"$TMP/err"
check_eq "trace with --path: exit 0" "$?" 0
check_eq "the config object's sizes" \
    "$(json_get "$TMP/ir.json" '[(i["name"], i["shape"]) for i in d["inputs"]]')" \
    "[('x', [8, 32]), ('proj.weight', [32, 32]), ('proj.bias', [32])]"

"$KERNELBOT" trace "$M" --path "$R/nothing" >/dev/null 2>"$TMP/err"
check_eq "--path of no folder: exit 2" "$?" 2
check_match "named" "$(cat "$TMP/err")" "--path .*/nothing: No such file or directory"

"$KERNELBOT" optimize "$R" --budget 2 $FAST --out "$TMP/out" --json >"$TMP/o.json" 2>"$TMP/err"
check_eq "optimize the repository: exit 0" "$?" 0
check_eq "its module and class, a correct kernel" \
    "$(json_get "$TMP/o.json" '[(s["module"], s["status"] in ("improved", "not_faster", "needs_review")) for s in d]')" \
    "[('src/tinynet/model.py', True)]"
K=$(ls "$TMP"/out/*/best/kernel.c 2>/dev/null | head -1)
check "the kernel was written" test -s "$K"

# shellcheck disable=SC2086
"$KERNELBOT" eval "$M" "$K" $ENTRY --path "$R" --path "$R/src" --backend cpu $FAST --json \
    >"$TMP/e.json" 2>"$TMP/err"
check_eq "eval with --path: correct" "$(json_get "$TMP/e.json" 'd["status"]')" "correct"

# The sandbox shows the path's folders, not their parent.
echo "secret" >"$TMP/outside.txt"
cat >"$R/configs.py" <<PY
def block_args():
    open("$TMP/outside.txt").read()
PY
# shellcheck disable=SC2086
"$KERNELBOT" trace "$M" $ENTRY --path "$R" --path "$R/src" >/dev/null 2>"$TMP/err"
check_eq "a factory reading outside the path: exit 1" "$?" 1
check_match "it could not" "$(cat "$TMP/err")" "No such file or directory|Permission denied"

# python_path outside the repository: refused, before anything runs.
ln -s "$TMP" "$R/up"
{ cat "$FIX/kernelbot.yml"; echo 'python_path: [src, up]'; } >"$R/.kernelbot.yml"
"$KERNELBOT" optimize "$R" --budget 1 $FAST --out "$TMP/out2" >/dev/null 2>"$TMP/err"
check_eq "python_path through a link out of the repository: exit 2" "$?" 2
check_match "named" "$(cat "$TMP/err")" "python_path up is not a folder of the repository"
printf 'version: 1\npython_path: [../x]\n' >"$R/.kernelbot.yml"
"$KERNELBOT" optimize "$R" --budget 1 $FAST --out "$TMP/out2" >/dev/null 2>"$TMP/err"
check_match "a '..' entry: a configuration error" "$(cat "$TMP/err")" \
    "\\.kernelbot\\.yml:2: python_path: entry 0 must be a folder relative to the repository"

# examples/gpt: a GPT's layers as nanoGPT writes them, built by the
# repository's kernelbot_entry.py; each class traces as its README says.
G="$KB_ROOT/examples/gpt"
for c in MLP CausalSelfAttention LayerNorm Block; do
	init=kernelbot_entry:config_args
	[ "$c" = LayerNorm ] && init=kernelbot_entry:layer_norm_args
	"$KERNELBOT" trace "$G/gpt/model.py" --class "$c" --init "$init" --inputs '[[4, 64, 128]]' \
	    --path "$G" --json >"$TMP/g.json" 2>"$TMP/err"
	check_eq "examples/gpt: $c traces" "$? $(json_get "$TMP/g.json" 'd["inputs"][0]["shape"]')" \
	    "0 [4, 64, 128]"
done
t_done
