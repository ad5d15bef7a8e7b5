#!/bin/sh
# kernelbot trace through the binary: the IR of fixtures and of every
# development problem (shrunk for the CPU), exit codes, and clear errors for
# bad problem files.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t0100
PY=/usr/bin/python3
FIX="$KB_ROOT/tests/fixtures"

# json_get FILE EXPR: evaluate a Python expression over the document `d`.

"$KERNELBOT" trace --json "$FIX/trace/norm_linear.py" >"$TMP/ir.json" 2>"$TMP/err"
check_eq "trace --json exits 0" "$?" 0
check_eq "inputs in ABI order: forward args, parameters, buffers" \
	"$(json_get "$TMP/ir.json" '[(i["name"], i["role"]) for i in d["inputs"]]')" \
	"[('x', 'input'), ('r', 'input'), ('fc.weight', 'parameter'), ('fc.bias', 'parameter'), ('bn.weight', 'parameter'), ('bn.bias', 'parameter'), ('bn.running_mean', 'buffer'), ('bn.running_var', 'buffer'), ('bn.num_batches_tracked', 'buffer')]"
check_eq "modules become functional ops" \
	"$(json_get "$TMP/ir.json" '[n["op"] for n in d["nodes"]]')" "['batch_norm', 'linear', 'gelu', 'add']"
check_eq "shapes are propagated" "$(json_get "$TMP/ir.json" 'd["outputs"][0]["shape"]')" "[8, 16]"
check_match "the IR names the source hash" \
	"$(json_get "$TMP/ir.json" 'd["source_sha256"]')" '^[0-9a-f]{64}$'

"$KERNELBOT" trace "$FIX/trace/norm_linear.py" >"$TMP/human" 2>&1
check_eq "human output exits 0" "$?" 0
check_match "human output lists the node" "$(cat "$TMP/human")" 'linear +=.*linear\(batch_norm, fc.weight, fc.bias\)'

# Op fixtures declare the ops they must trace to. tests/harness covers all
# of them in one process; here a sample goes through the binary (each call
# starts Python and imports torch: seconds).
bad_ops=""
n_ops=0
for name in relu gelu softmax layer_norm conv2d cross_entropy max_min_dim slice; do
	f="$FIX/ops/$name.py"
	want=$($PY -c 'import ast,sys
t=ast.parse(open(sys.argv[1]).read())
for n in t.body:
    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "EXPECT_OPS":
        print(" ".join(ast.literal_eval(n.value)))' "$f")
	[ -n "$want" ] || continue
	n_ops=$((n_ops + 1))
	if ! "$KERNELBOT" trace --json --verify none "$f" >"$TMP/op.json" 2>"$TMP/op.err"; then
		bad_ops="$bad_ops $(basename "$f"):exit"
		continue
	fi
	got=$(json_get "$TMP/op.json" '" ".join(n["op"] for n in d["nodes"])')
	[ "$got" = "$want" ] || bad_ops="$bad_ops $(basename "$f"):[$got]!=[$want]"
done
check_eq "op fixtures found" "$n_ops" 8
check_eq "every op fixture traces to its canonical ops" "$bad_ops" ""

# Bad problems: exit 1 and a message naming what failed.
expect_fail() {
	file=$1 pattern=$2
	"$KERNELBOT" trace "$FIX/bad/$file" >"$TMP/out" 2>"$TMP/err"
	st=$?
	check_eq "$file exits 1" "$st" 1
	check_match "$file: clear message" "$(cat "$TMP/err")" "$pattern"
}
expect_fail syntax_error.py 'syntax_error.py:[0-9]+'
expect_fail missing_get_inputs.py 'get_inputs'
expect_fail missing_model.py 'Model'
expect_fail data_dependent.py 'control flow.*data_dependent.py:[0-9]+'
expect_fail init_raises.py 'init failed'

"$KERNELBOT" trace "$TMP/does-not-exist.py" >/dev/null 2>"$TMP/err"
check_eq "a missing file exits 1" "$?" 1
"$KERNELBOT" trace >/dev/null 2>&1
check_eq "no problem is a usage error" "$?" 2
"$KERNELBOT" trace --verify sometimes "$FIX/trace/norm_linear.py" >/dev/null 2>&1
check_eq "a bad --verify is a usage error" "$?" 2

# The development problems, shrunk for the CPU: every module-level integer
# capped at 64 (the problems read their sizes from those globals).
PROBLEMS=${KERNELBOT_PROBLEMS:-$KB_ROOT/../shared/problems}
if [ -d "$PROBLEMS" ]; then
	mkdir -p "$TMP/small"
	for p in "$PROBLEMS"/[0-9]*.py; do
		$PY - "$p" "$TMP/small/$(basename "$p")" <<'PYEOF'
import ast, sys
src = open(sys.argv[1]).read()
tree = ast.parse(src)
lines = src.splitlines(True)
for n in tree.body:
    if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Constant) and type(n.value.value) is int and n.value.value > 64):
        lines[n.lineno - 1] = "%s = 64\n" % n.targets[0].id
open(sys.argv[2], "w").write("".join(lines))
PYEOF
	done
	failed=""
	for p in "$TMP"/small/*.py; do
		"$KERNELBOT" trace --json "$p" >"$TMP/p.json" 2>"$TMP/p.err" ||
			failed="$failed $(basename "$p")"
	done
	check_eq "all 16 development problems trace (shrunk)" "$failed" ""
	"$KERNELBOT" trace --json "$TMP/small/05_linear_gelu.py" >"$TMP/p5.json"
	check_eq "05_linear_gelu: linear then gelu" \
		"$(json_get "$TMP/p5.json" '[n["op"] for n in d["nodes"]]')" "['linear', 'gelu']"
	"$KERNELBOT" trace --json "$TMP/small/11_causal_attention.py" >"$TMP/p11.json"
	check_eq "11_causal_attention: size arithmetic folded to a constant" \
		"$(json_get "$TMP/p11.json" '[n["op"] for n in d["nodes"]]')" \
		"['transpose', 'matmul', 'div', 'add', 'softmax', 'matmul']"
	check_eq "11_causal_attention: the divisor is sqrt(64)" \
		"$(json_get "$TMP/p11.json" '[n["args"][1] for n in d["nodes"] if n["op"] == "div"]')" "[8.0]"
else
	echo "skip: no development problems at $PROBLEMS"
fi
t_done
