#!/bin/sh
# kernelbot changes: the modules a push changed, on real repositories pushed
# to a bare file:// remote, for every kind of push the webhook can report.
set -u
. "$KB_ROOT/tests/e2e/lib-gitops.sh"
Z=0000000000000000000000000000000000000000


# expect NAME BEFORE AFTER EXPECTED-TEXT: the plain output, exactly.
expect() {
	name=$1 before=$2 after=$3 want=$4
	got=$("$KERNELBOT" changes "$T/r.git" "$before" "$after" 2>"$T/err")
	st=$?
	if [ $st -eq 0 ] && [ "$got" = "$want" ]; then
		ok "$name"
	else
		no "$name (exit $st)"
		printf 'want:\n%s\ngot:\n%s\n' "$want" "$got"
		cat "$T/err"
	fi
}

# expect_fail NAME BEFORE AFTER PATTERN: exit 1, PATTERN (grep) on stderr.
expect_fail() {
	"$KERNELBOT" changes "$T/r.git" "$2" "$3" >"$T/out" 2>"$T/err"
	st=$?
	if [ $st -eq 1 ] && grep -q "$4" "$T/err"; then
		ok "$1"
	else
		no "$1 (exit $st)"
		cat "$T/err"
	fi
}

module() {	# module FILE [CLASS] [INPUTS-FUNCTION]
	mkdir -p "$(dirname "$1")"
	cat >"$1" <<PY
import torch
import torch.nn as nn


class ${2:-Model}(nn.Module):
    """A docstring that mentions class Other( is not a definition."""
    def forward(self, x):
        return torch.relu(x) * ${RANDOM_FACTOR:-2}


def ${3:-get_inputs}():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
PY
}

# Commit everything and push it (forced: step 6 rewrites history).
commit() {
	git -C "$T/w" add -A && git -C "$T/w" commit -q -m "$1" &&
	git -C "$T/w" push -q -f origin main 2>/dev/null &&
	git -C "$T/w" rev-parse HEAD
}

git init -q --bare "$T/r.git"
git init -q -b main "$T/w"
git -C "$T/w" remote add origin "file://$T/r.git"
cd "$T/w" || exit 1

# 1. A new branch: before is the zero id, every module is added; README and
#    a Python file that is not a module are not reported.
module models/mlp.py
module models/attn/block.py
mkdir tools
printf 'print("hi")\n' >tools/x.py
printf '# readme\n' >README.md
c1=$(commit "initial")
expect "new branch: all modules added" $Z "$c1" \
"added    models/attn/block.py Model models-attn-block
added    models/mlp.py Model models-mlp"

# 2. Modify one module, touch a non-module file.
RANDOM_FACTOR=3 module models/mlp.py
printf 'print("bye")\n' >tools/x.py
c2=$(commit "modify mlp")
expect "modify: one module modified, non-module ignored" "$c1" "$c2" \
"modified models/mlp.py Model models-mlp"

# 3. Add a module, delete another.
module models/conv.py
git rm -q models/attn/block.py
c3=$(commit "add conv, drop block")
expect "add and delete" "$c2" "$c3" \
"removed  models/attn/block.py Model models-attn-block
added    models/conv.py Model models-conv"

# 4. Rename: the old slug retires, the new one is added, with old_path.
git mv models/conv.py models/convolution.py
c4=$(commit "rename conv")
expect "rename" "$c3" "$c4" \
"removed  models/conv.py Model models-conv
added    models/convolution.py Model models-convolution"
"$KERNELBOT" changes --json "$T/r.git" "$c3" "$c4" >"$T/j" 2>&1
if /usr/bin/python3 - "$T/j" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
add = [m for m in a if m["reason"] == "added"][0]
assert add["old_path"] == "models/conv.py", add
assert add["init"] == "get_init_inputs" and add["inputs"] == "get_inputs", add
assert add["variants"] is None and add["dtype"] is None, add
PY
then ok "rename --json has old_path and the spec"; else no "rename --json"; cat "$T/j"; fi

# 5. A file that stops being a module is removed; one that becomes one is added.
printf 'import torch\n\ndef helper():\n    pass\n' >models/mlp.py
printf 'class Model(object):\n    pass\n\n' >>tools/x.py
printf 'def get_inputs():\n    return []\n\ndef get_init_inputs():\n    return []\n' >>tools/x.py
c5=$(commit "mlp is no module now, tools/x.py is")
expect "stops being / becomes a module" "$c4" "$c5" \
"removed  models/mlp.py Model models-mlp
added    tools/x.py Model tools-x"

# 6. Force push: before is a commit no branch reaches any more.
git reset -q --hard "$c4"
module models/extra.py
c6=$(commit "rewritten history")
expect "force push" "$c5" "$c6" \
"added    models/extra.py Model models-extra
added    models/mlp.py Model models-mlp
removed  tools/x.py Model tools-x"

# 7. .kernelbot.yml names a module the convention would not find (its own
#    class and inputs function): reason config, the file is unchanged. The
#    convention modules not named stop being modules.
module src/layers/attention.py Attention make_inputs
c7a=$(commit "attention layer, not a KernelBench module")
expect "a non-convention file is not a module" "$c6" "$c7a" ""
cat >.kernelbot.yml <<'YML'
version: 1
modules:
  - path: src/layers/attention.py
    class: Attention
    inputs: make_inputs
    dtype: fp16
    atol: 0.01
  - glob: "models/**/*.py"
labels: [performance]
YML
c7=$(commit "configure kernelbot")
expect "module named only in .kernelbot.yml" "$c7a" "$c7" \
"config   src/layers/attention.py Attention src-layers-attention-attention"
"$KERNELBOT" changes --json "$T/r.git" "$c7a" "$c7" >"$T/j" 2>&1
if /usr/bin/python3 - "$T/j" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1, a
m = a[0]
assert m["dtype"] == "float16" and m["atol"] == 0.01 and m["rtol"] is None, m
assert m["inputs"] == "make_inputs" and m["class"] == "Attention", m
PY
then ok "config spec in --json"; else no "config spec in --json"; cat "$T/j"; fi

# 8. Changing only a module's spec in the config is reason config.
sed 's/atol: 0.01/atol: 0.02/' .kernelbot.yml >y && mv y .kernelbot.yml
c8=$(commit "loosen tolerance")
expect "spec change is config" "$c7" "$c8" \
"config   src/layers/attention.py Attention src-layers-attention-attention"

# 9. Narrowing the glob retires the modules it no longer covers.
sed 's|models/\*\*/\*.py|models/extra.py|' .kernelbot.yml >y && mv y .kernelbot.yml
c9=$(commit "only extra")
expect "unnamed by config is removed" "$c8" "$c9" \
"removed  models/convolution.py Model models-convolution
removed  models/mlp.py Model models-mlp"

# 10. A malformed .kernelbot.yml: exit 1, the message names file, line, key.
printf 'version: 1\nmodules:\n  - path: models/extra.py\n    dtype: half\n' >.kernelbot.yml
c10=$(commit "bad dtype")
expect_fail "bad dtype: exit 1, file:line: key" "$c9" "$c10" "\.kernelbot\.yml:4: modules\[0\]\.dtype: 'half' is not one of"
printf 'version: 1\nmodules:\n  - path: models/extra.py\n    clas: Model\n' >.kernelbot.yml
c11=$(commit "typo")
expect_fail "unknown key: exit 1" "$c9" "$c11" "\.kernelbot\.yml:4: modules\[0\]\.clas: unknown key"
printf 'version: 1\nmodules:\n  - path: models/missing.py\n' >.kernelbot.yml
c12=$(commit "missing file")
expect_fail "a named file that does not exist: exit 1" "$c9" "$c12" "\.kernelbot\.yml:3: modules\[0\]\.path: models/missing.py: no such file"
printf 'version: 1\nmodules: [\n' >.kernelbot.yml
c13=$(commit "broken yaml")
expect_fail "broken YAML: exit 1 with the file name" "$c9" "$c13" "^kernelbot changes: \.kernelbot\.yml:"
# ... and fixing it is not blocked by the broken config at before.
git rm -q .kernelbot.yml
c14=$(commit "drop config")
"$KERNELBOT" changes "$T/r.git" "$c13" "$c14" >"$T/out" 2>"$T/err"
if [ $? -eq 0 ]; then ok "a broken config at before does not block"; else no "broken before"; cat "$T/err"; fi

# 11. Bad arguments.
"$KERNELBOT" changes "$T/r.git" "$c1" >/dev/null 2>&1
[ $? -eq 2 ] && ok "missing argument: usage error" || no "missing argument"
"$KERNELBOT" changes "$T/r.git" "$c1" deadbeefdeadbeefdeadbeefdeadbeefdeadbeef >/dev/null 2>"$T/err"
[ $? -eq 1 ] && grep -q "no such commit" "$T/err" && ok "unknown commit" || { no "unknown commit"; cat "$T/err"; }
"$KERNELBOT" changes "$T/nowhere" "$c1" "$c2" >/dev/null 2>"$T/err"
[ $? -eq 1 ] && grep -q "not a git repository" "$T/err" && ok "not a repository" || { no "not a repository"; cat "$T/err"; }

done_tests t4000
