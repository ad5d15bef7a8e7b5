#!/bin/sh
# t5103: stage 1 of kernelbot optimize against the fake LLM server. A
# module torch.fx cannot trace (a Python loop over a tensor's value) goes
# to a model with the functionalize prompt; a correct rewrite is checked
# (traces, equivalent to the original) and its IR drives the compiler
# proposer (--proposer both; at this tiny size its kernels are correct but
# may be excluded as implausibly fast, so the test asserts on the verdict); a wrong rewrite (a changed constant) is
# rejected by the equivalence check and the error goes back in the next
# prompt; a run whose rewrites all fail proceeds without IR.
. "$KB_ROOT/tests/e2e/lib.sh"
. "$KB_ROOT/tests/e2e/lib-llm.sh"
t_init t5103
PY=/usr/bin/python3
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
F="$KB_ROOT/tests/fixtures/stage1"
P="$F/loop.py"
FAST="--backend cpu --trials 2 --confirm-trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 60 --seed 5"
export T5103_KEY="sk-SECRET-5103-$$"

config() {
	f=$1
	shift
	llm_config "$f" "$LLM_PORT" T5103_KEY "  proposals: 1" "  summarize_over: 0" "$@"
	echo "data_dir: $TMP/data" >>"$f"
}

check "0: the fixture does not trace" sh -c "! '$KERNELBOT' trace '$P' >/dev/null 2>&1"

# ---- 1. a correct rewrite: the compiler gets its IR ----
cat >"$TMP/one.json" <<END
[{"match": "# Task: a traceable functional version", "reply_file": "$F/rewrite_good.md", "usage": [500, 200]}]
END
fakellm one "$TMP/one.json"
config "$TMP/one.yml"
OUT="$TMP/out1"
"$KERNELBOT" optimize "$P" --proposer both --config "$TMP/one.yml" --per-generation 2 --generations 1 \
	$FAST --out "$OUT" --json >"$TMP/one.out" 2>"$TMP/one.err"
S="$OUT/summary.json"
check_eq "1: the rewrite was accepted after one attempt" \
	"$(json_get "$S" '(d["functionalized"]["accepted"], d["functionalized"]["attempts"], d["functionalized"]["model"], d["functionalized"]["file"])')" \
	"(True, 1, 'fake-gpt', 'functional.py')"
check "1: DIR/functional.py is the rewrite" cmp "$OUT/functional.py" "$F/rewrite_good.py"
check_eq "1: the compiler proposed kernels from its IR, judged correct against the original" \
	"$(json_get "$OUT/history.json" '(d["problem"].endswith("stage1/loop.py"), sorted(set((c["proposer"], c["status"]) for c in d["candidates"])))')" \
	"(True, [('compiler', 'correct')])"
check_eq "1: DIR/ir.json is the rewrite's IR, naming both files" \
	"$(json_get "$OUT/ir.json" '(d["problem"] == sys.argv[1].replace("ir.json", "functional.py"), d["functionalized_from"].endswith("stage1/loop.py"))')" \
	"(True, True)"
check "1: REPORT.md says where the IR came from" grep -q "gave the graph IR: functional.py (fake-gpt, 1 attempt)" "$OUT/REPORT.md"
check_eq "1: stage 1's tokens count in spent" "$(json_get "$S" 'd["spent"]["tokens"]')" 700
check_eq "1: the prompt quotes the module and the trace error" \
	"$(prompts "$TMP/one.log" '[("for _ in range(int(self.steps))" in x, "ConcreteProxy" in x, "was rejected" in x) for x in p]')" \
	"[(True, True, False)]"
check_eq "1: the call is in llm_calls" \
	"$(sqlite3 "$TMP/data/kernelbot.db" "SELECT group_concat(stage || ':' || status, ' ') FROM llm_calls")" \
	"functionalize:ok"

# ---- 2. a wrong rewrite is rejected, the error fed back, the fix accepted ----
cat >"$TMP/two.json" <<END
[{"match": "was rejected.*seed 1: output 0 differs from the original: max abs error 0.5", "reply_file": "$F/rewrite_good.md", "usage": [10, 10]},
 {"match": "# Task: a traceable functional version", "reply_file": "$F/rewrite_wrong.md", "usage": [10, 10]}]
END
fakellm two "$TMP/two.json"
config "$TMP/two.yml" "  fix_rounds: 2"
mkdir "$TMP/td"
TMPDIR="$TMP/td" "$KERNELBOT" optimize "$P" --proposer both --config "$TMP/two.yml" --per-generation 2 --generations 1 \
	$FAST --out "$TMP/out2" >/dev/null 2>"$TMP/two.err"
check_eq "2: two attempts, the second accepted" \
	"$(json_get "$TMP/out2/summary.json" '(d["functionalized"]["accepted"], d["functionalized"]["attempts"])')" \
	"(True, 2)"
check_eq "2: the wrong answer first, then the fix; the second prompt carries the rejected rewrite and the mismatch" \
	"$(prompts "$TMP/two.log" '[json.loads(l)["rule"] for l in open(sys.argv[1])] + [("+ 1.5" in p[1].split("was rejected")[1], "not equivalent to the original" in p[1])]')" \
	"[1, 0, (True, True)]"
check "2: functional.py is the accepted one" cmp "$TMP/out2/functional.py" "$F/rewrite_good.py"
check_eq "2: stage 1's temporary folder is gone" "$(ls -A "$TMP/td")" ""

# ---- 3. only wrong rewrites: no IR, the run goes on as before ----
cat >"$TMP/three.json" <<END
[{"match": "# Task: a traceable functional version", "reply_file": "$F/rewrite_wrong.md", "usage": [10, 10]},
 {"match": "# Task: write kernel.c", "reply": "no kernel here", "usage": [10, 10]}]
END
fakellm three "$TMP/three.json"
config "$TMP/three.yml" "  fix_rounds: 1"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/three.yml" --budget 1 \
	$FAST --out "$TMP/out3" >/dev/null 2>"$TMP/three.err"
check_eq "3: rejected after 1 + fix_rounds attempts, with the reason; no functional.py" \
	"$(json_get "$TMP/out3/summary.json" '(d["functionalized"]["accepted"], d["functionalized"]["attempts"], "max abs error 0.5" in d["functionalized"]["error"], __import__("os").path.exists(sys.argv[1].replace("summary.json", "functional.py")))')" \
	"(False, 2, True, False)"
check_eq "3: then stage 2 ran without IR" \
	"$(prompts "$TMP/three.log" '[("# Task: write kernel.c" in x) for x in p][:3]')" \
	"[False, False, True]"

# ---- 4. stage 1 spends the token budget: no more attempts, no search ----
config "$TMP/four.yml" "  fix_rounds: 3"
printf 'budgets:\n  tokens: 15\n' >>"$TMP/four.yml"
: >"$TMP/three.log"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/four.yml" \
	$FAST --out "$TMP/out4" >/dev/null 2>"$TMP/four.err"
check_eq "4: one attempt, then the budget's stop before any candidate" \
	"$(json_get "$TMP/out4/summary.json" '(d["functionalized"]["attempts"], d["stop_reason"], d["candidates_evaluated"], d["spent"]["tokens"])')" \
	"(1, 'budget:tokens', 0, 20)"
check_eq "4: one request" "$(wc -l <"$TMP/three.log" | tr -d ' ')" 1

# ---- 5. a rewrite that attacks at import: its trace and its equivalence
# check run sandboxed, so it is judged like any other and copies nothing ----
# File modes are not the defense (under root the sandbox is nobody): the
# secret is world-readable, the drop folder world-writable.
chmod 0755 "$TMP"
mkdir -m 1777 "$TMP/drop"
printf 'whsec-t5103-%s\n' "$$" >"$TMP/secret"
chmod 0644 "$TMP/secret"
LEAK="$TMP/drop/leak"
{
	echo "An equivalent rewrite:"
	echo '```python'
	echo "import os"
	sed -n '/^SECRET = /,/^    pass$/p' "$KB_ROOT/tests/fixtures/untrusted/leak_at_import.py" |
		sed -e "s|@SECRET@|$TMP/secret|" -e "s|@LEAK@|$LEAK|"
	cat "$F/rewrite_good.py"
	echo '```'
} >"$TMP/rewrite_leak.md"
sed -n '/^```python$/,/^```$/p' "$TMP/rewrite_leak.md" | sed '1d;$d' >"$TMP/rewrite_leak.py"
$PY -c 'import os; exec(open(os.sys.argv[1]).read())' "$TMP/rewrite_leak.py" >/dev/null 2>&1
check "5: bare, the rewrite copies the secret (else this proves nothing)" cmp -s "$TMP/secret" "$LEAK"
rm -f "$LEAK" "$LEAK.sh"
cat >"$TMP/five.json" <<END
[{"match": "# Task: a traceable functional version", "reply_file": "$TMP/rewrite_leak.md", "usage": [10, 10]},
 {"match": "# Task: write kernel.c", "reply": "no kernel here", "usage": [10, 10]}]
END
fakellm five "$TMP/five.json"
config "$TMP/five.yml"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/five.yml" --budget 1 \
	$FAST --out "$TMP/out5" >/dev/null 2>"$TMP/five.err"
check_eq "5: the attacking rewrite traced and passed the equivalence check in the sandbox" \
	"$(json_get "$TMP/out5/summary.json" '(d["functionalized"]["accepted"], d["functionalized"]["attempts"])')" \
	"(True, 1)"
check "5: nothing copied by open()" sh -c "! test -s '$LEAK'"
check "5: nothing copied by the shell" sh -c "! test -s '$LEAK.sh'"
t_done
